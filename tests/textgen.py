"""Deterministic texts for tests: article-like sentences from a fixed vocabulary and a seed, the corpora several
test modules share (stories with republications, corpus records with and without bad lines), and job ads with
fields for items stores."""
from __future__ import annotations

import json
import random
from pathlib import Path

_VOCABULARY = (
    "market council river station budget harbour festival minister railway hospital election contract "
    "factory village museum airport engineer teacher farmer shipment weather storm bridge tunnel energy "
    "climate report inquiry treaty court school garden library concert tournament stadium vaccine "
    "research satellite harvest drought pension salary housing transport license permit airline museum "
    "merchant archive castle mountain forest lake coast island valley desert glacier canyon volcano"
).split()
_GLUE = "the a of and to in on for with from by about after before during".split()


def sentence(rng: random.Random, words: int = 12) -> str:
    tokens = [rng.choice(_VOCABULARY) if i % 2 == 0 else rng.choice(_GLUE + _VOCABULARY) for i in range(words)]
    tokens.append(str(rng.randrange(10, 10_000)))  # numbers make sentences distinct across articles
    return tokens[0].capitalize() + " " + " ".join(tokens[1:]) + "."


def article(seed: int, sentences: int = 14) -> list[str]:
    rng = random.Random(seed)
    return [sentence(rng, rng.randrange(9, 16)) for _ in range(sentences)]


def text(sentences: list[str]) -> str:
    return " ".join(sentences)


# --- corpora ------------------------------------------------------------------------------------------------------

STORIES_THRESHOLD = 0.5


def stories() -> dict[str, str]:
    """Three stories with republications, and unrelated articles: at STORIES_THRESHOLD the republications (and
    only they) are duplicates."""
    a, b = article(1), article(2)
    edited = list(b)
    edited[3] = edited[3].replace(edited[3].split()[2], "harbourmaster", 1)
    return {
        "a": text(a),
        "a-republished": "BREAKING from the wire. " + text(a) + " Share this story with friends today.",
        "a-truncated": text(a[:9]),
        "b": text(b),
        "b-edited": text(edited),
        "c": text(article(3)),
        "d": text(article(4)),
        "e": text(article(5)),
    }


BOILERPLATE = "Share this article with your friends and follow us for more local news."


def corpus_records(count: int, start: int = 0, boilerplate_every: int = 0, sentences: int = 14) -> list[dict]:
    """Corpus records ({"id": "doc-SEED", "text": ...}) of count articles from seed start on, every
    boilerplate_every-th of them ending in BOILERPLATE."""
    made = []
    for seed in range(start, start + count):
        body = text(article(seed, sentences))
        if boilerplate_every and seed % boilerplate_every == 0:
            body = f"{body}\n\n{BOILERPLATE}"
        made.append({"id": f"doc-{seed}", "text": body})
    return made


def malformed_corpus(path: Path) -> dict[int, str]:
    """Good records with bad lines in between; returns line number → what the report must say."""
    good = corpus_records(6)
    lines = [json.dumps(good[0]).encode(),
             b"{not json",
             json.dumps({"text": "no id here."}).encode(),
             json.dumps(good[1]).encode(),
             json.dumps({"id": "", "text": "empty id."}).encode(),
             json.dumps({"id": 7, "text": "numeric id."}).encode(),
             b"",
             json.dumps({"id": "no-text"}).encode(),
             json.dumps({"id": "list-text", "text": ["a"]}).encode(),
             b'{"id": "latin1", "text": "caf\xe9"}',
             json.dumps({"id": "klingon", "text": "Qapla.", "lang": "tlh"}).encode(),
             json.dumps(["id", "text"]).encode(),
             json.dumps({"id": "x" * 600, "text": "long id."}).encode(),
             b'{"id": "tab", "text": "a\tb"}',
             *(json.dumps(record).encode() for record in good[2:])]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return {2: "bad JSON", 3: "missing id", 5: "non-empty string", 6: "non-empty string", 8: "missing text",
            9: "text must be a string", 10: "invalid UTF-8", 11: "unknown language", 12: "not a JSON object",
            13: "longer than 511", 14: "bad JSON at column 25: a string holds a raw tab or line break"}


# --- items with fields (job ads) ------------------------------------------------------------------------------

#: The fields of an items store (`neardup index --fields`) and the rules that make a pair duplicate.
SCHEMA = {
    "fields": [
        {"name": "title", "unit": "word:1", "k": 16, "metric": "jaccard", "rule_tokens": 3, "weight": 2},
        {"name": "body", "k": 64, "rule_tokens": 8, "weight": 1},
        {"name": "phone", "kind": "exact", "normalize": "digits", "weight": 1},
        {"name": "url", "kind": "exact", "normalize": "url", "weight": 4},
        {"name": "location", "kind": "location", "precision": 5, "weight": 4},
    ],
    "rules": [["title", "body"], ["title", "location"], ["url"]],
}
BODY = ("We are looking for an experienced forklift driver to join our busy warehouse team. You will load and "
        "unload lorries, move stock safely around the site and keep accurate records of every pallet. ")
LEEDS, NEAR_LEEDS, MANCHESTER = {"lat": 53.8008, "lon": -1.5491}, {"lat": 53.8100, "lon": -1.5300}, \
    {"lat": 53.4808, "lon": -2.2426}
ITEMS = {
    "ad-1": {"title": "Forklift Driver (Leeds)", "body": BODY + "Apply today from Leeds.", "phone": "+44 113 496 0123",
             "url": "https://careers.acme.co.uk/vacancy/1234?src=board", "location": LEEDS},
    # the same opening reposted elsewhere: other format, shortened body, same URL and place
    "ad-1-repost": {"title": "FORKLIFT DRIVER - Leeds", "body": BODY, "phone": "0113 4960123",
                    "url": "http://www.careers.acme.co.uk/vacancy/1234/", "location": NEAR_LEEDS},
    # the same template for another city: nearly the same body, another place, reference and URL
    "ad-2-manchester": {"title": "Forklift Driver (Manchester)", "body": BODY + "Apply today from Manchester.",
                        "phone": "+44 113 496 0123", "url": "https://careers.acme.co.uk/vacancy/5678",
                        "location": MANCHESTER},
    "other": {"title": "Primary School Teacher", "body": "Plan and teach engaging lessons to children aged four "
              "to eleven in our friendly school.", "location": {"lat": 51.45, "lon": -2.59}},
}


def records_with_typos() -> tuple[list[dict], set[frozenset]]:
    """Person records as data entry makes them (this module's word pools): 150 people, 120 of them entered again
    with a typo in a name, a missing or other address word, or the postcode left out; and the true pairs."""
    rng = random.Random(28)

    def typo(word: str) -> str:
        at = rng.randrange(len(word))
        return word[:at] + rng.choice("aeiounrst") + word[at + 1:]

    records, true = [], set()
    for person in range(150):
        name = [rng.choice(_VOCABULARY).title() for _ in range(2)]
        address = [str(rng.randrange(1, 300)), *(rng.choice(_VOCABULARY) for _ in range(3))]
        fields = {"name": " ".join(name), "address": " ".join(address), "postcode": str(rng.randrange(2000, 2999))}
        records.append({"id": f"p{person}", "fields": fields})
        if person < 120:
            again = dict(fields, name=" ".join([typo(name[0]), name[1]] if rng.random() < 0.5 else name))
            again["address"] = " ".join(address[:-1] + ([rng.choice(_VOCABULARY)] if rng.random() < 0.5 else []))
            if rng.random() < 0.3:
                del again["postcode"]
            records.append({"id": f"p{person}-again", "fields": again})
            true.add(frozenset((f"p{person}", f"p{person}-again")))
    return records, true


RECORD_SCHEMA = {"fields": [{"name": "name", "unit": "word:1", "k": 16, "metric": "jaccard"},
                            {"name": "address", "unit": "word:1", "k": 16, "metric": "jaccard"},
                            {"name": "postcode", "kind": "exact"}],
                 "rules": [["name"], ["address"], ["postcode"]]}


def look_alike_corpus(stories: int = 60, copies: int = 12, digests: int = 20, families: int = 3, pages: int = 5
                      ) -> tuple[list[dict], dict[str, str]]:
    """Texts for labelling a store of texts ({"id", "text"} records) and each id's story: unrelated stories;
    `copies` of them republished with a header and a few edited words (the same story: duplicates); and
    `digests` texts that open with 2 to 11 sentences of another story (not copies of it);
    `families` templates of `pages` pages each, one text with the page's own name and details in every other
    sentence (reference pages made from one template: look-alikes most users call distinct, story "FAMILY/PAGE").
    """
    records, story_of = [], {}
    for n in range(stories):
        records.append({"id": f"story-{n}", "text": text(article(1000 + n))})
        story_of[f"story-{n}"] = f"story-{n}"
    for n in range(copies):
        rng = random.Random(5000 + n)
        edited = [sentence.replace(sentence.split()[2], rng.choice(_VOCABULARY), 1) if i % 5 == 0 else sentence
                  for i, sentence in enumerate(article(1000 + n))]
        records.append({"id": f"copy-{n}", "text": f"Republished from the wire service {n}. " + text(edited)})
        story_of[f"copy-{n}"] = f"story-{n}"
    for n in range(digests):  # a story's first sentences before others: pairs in every band of similarity
        shared = 2 + n % 10
        records.append({"id": f"digest-{n}", "text": text(article(1000 + copies + n)[:shared]
                                                          + article(9000 + n)[:16 - shared])})
        story_of[f"digest-{n}"] = f"digest-{n}"
    for family in range(families):
        template = article(7000 + family, sentences=16)
        for page in range(pages):
            own = article(8000 + 100 * family + page, sentences=16)
            sentences = [own[i] if i % 3 == 1 else template[i] for i in range(16)]
            records.append({"id": f"template-{family}-{page}", "text": text(sentences)})
            story_of[f"template-{family}-{page}"] = f"template-{family}-{page}"
    return records, story_of


def licence_versions(versions: int = 12) -> list[dict]:
    """Versions of one licence ("v0", ...: its text and a clause of their own), each republished once under a
    header of its own with a word changed in every other sentence ("v0-copy", ...): versions look alike more than
    a version and its copy, until the licence's text is stop-listed (texts derived from one another, issue 38)."""
    def edited(sentences: list[str]) -> list[str]:
        return [" ".join("revised" if at == 3 else word for at, word in enumerate(sentence.split())) if n % 2 == 0
                else sentence for n, sentence in enumerate(sentences)]

    licence = article(600, sentences=15)
    texts = {f"v{n}": licence + article(700 + n, sentences=1) for n in range(versions)}
    records = [{"id": doc_id, "text": text(sentences)} for doc_id, sentences in texts.items()]
    return records + [{"id": f"{doc_id}-copy", "text": text(article(800 + n, sentences=1) + edited(sentences))}
                      for n, (doc_id, sentences) in enumerate(texts.items())]
