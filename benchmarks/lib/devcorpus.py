"""Development corpus for detection quality: real texts, republished the ways the world republishes them, and
hard negatives that a naive detector takes for duplicates. Two splits: defaults are chosen on `tune`, quality is
reported on `test`, built from other source texts (and some collections and languages `tune` never sees) and
another seed.

Base texts are real (sources.py): ABC news stories, sections of English and Bulgarian Wikipedia
articles, manual pages in nine languages as `man` renders them, Debian's licence texts, Python's documentation.
A quarter of the news and encyclopedia texts are cut to their first 1–6 sentences, as short posts and answers
are. Base texts that already share much text (word 5-gram containment above DISTINCT_CONTAINMENT = 1/3, e.g. one
manual page including another, two pages of one tool family) are dropped, so no unlabelled near-duplicate
hides among them.

Copies (edits.EDIT_FAMILIES), each from one original, with the edits spread over the whole text:
  edit          word substitutions, insertions and deletions at a rate of 1, 2, 5 or 10 % of the words;
  reword        most sentences get one edit (a light rewording), and some sentences are merged or split;
  format        punctuation, quotes, dashes, numbers and letter case changed;
  headline      a new or rewritten headline, with a dateline and a byline;
  unpunctuated  hard-wrapped plain text or a bullet list with the sentence punctuation gone;
  truncate      a shortened ending (55–90 % of the words kept);
  excerpt       the first 25–60 % and a link to the rest;
  boilerplate   a site's header, dateline and footer around the text;
  combined      a site's or a headline's wrapping, word edits at one of the rates, and one more change.
Hard negatives (NEGATIVE_FAMILIES): `shared_boilerplate` (a distinct text on a site whose header and footer
many other pages carry), `template` (one text with a city, date or job title changed: near-duplicates *as
text*, whose separation needs fields; the quality figures leave their pairs out of F1 and report them apart), and
different sections of one Wikipedia article (same `topic`, different groups), and `quoting` (a distinct text
that quotes one to three sentences, at most a third, of another, as a story quotes a press release).

Each document: id, text, lang, group (same group = near-duplicates), family, source (collection), length
(bucket of the original: short < 120 words ≤ medium < 500 ≤ long), rate (share of words edited, 0 when
none), site, template, topic, quotes. The hard negatives' templates are in benchmarks/data/devcorpus.json; the result
sets drawn from the corpus are in devcorpus_sets.py.
"""
from __future__ import annotations

import functools
import json
import random
import sys
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from benchmarks.lib import sources
from benchmarks.lib.data import load_json
from benchmarks.lib.edits import (EDIT_FAMILIES, SITE_NAMES, WORD_CORE, Site, news_sites, quoting, republish,
                                  split_sentences, with_boilerplate)
from benchmarks.lib.sources import Source, SourceMissing, stable_hash, words

SPLITS = ("tune", "test")
DEFAULT_SPLIT = "tune"
#: Each split has its own seed, so no edit of the test split was ever drawn while tuning.
SPLIT_SEEDS = {"tune": 7, "test": 1009}
DEFAULT_SIZE = 3000
NEGATIVE_FAMILIES = ("shared_boilerplate", "template", "quoting")
LENGTHS = ("short", "medium", "long")
#: Collections, languages and manual-page languages only the test split has.
TEST_ONLY_COLLECTIONS = {"bgwiki"}
TEST_ONLY_MAN_LANGUAGES = {"pl", "it", "es", "uk"}
TUNE_ONLY_COLLECTIONS = {"pydoc"}


@dataclass
class Doc:
    id: str
    text: str
    lang: str
    group: str
    family: str
    source: str = ""
    length: str = ""
    rate: float = 0.0
    site: str = ""
    template: str = ""
    topic: str = ""
    quotes: str = ""  # the group of the text this one quotes a passage of (a `quoting` negative)


def length_bucket(text: str) -> str:
    n = words(text)
    return "short" if n < 120 else "medium" if n < 500 else "long"


#: Hard negatives: (lang, text, keys): one text, one key slot filled with different values. {key} recurs, as cities
#: do in ads.
TEMPLATES: list[tuple[str, str, list[str]]] = [
    (template["lang"], template["text"], template["keys"]) for template in load_json("devcorpus.json")["templates"]]


# --- the corpus ------------------------------------------------------------------------------------------

def in_split(source: Source, split: str) -> bool:
    """Which split a real text belongs to: by a stable hash of its topic or key, so the splits share no text
    (sections of one article stay together); some collections and languages belong to one split only."""
    if source.collection in TEST_ONLY_COLLECTIONS or (
            source.collection == "manpages" and source.key.split("/")[0] in TEST_ONLY_MAN_LANGUAGES):
        return split == "test"
    if source.collection in TUNE_ONLY_COLLECTIONS:
        return split == "tune"
    return ("tune", "test")[stable_hash(source.topic or source.key) % 2] == split


@functools.lru_cache(maxsize=None)
def _collection(name: str) -> tuple[Source, ...]:
    """A collection's texts, read once per process: both splits, and every corpus a test or benchmark builds,
    come from the same files (reading the wiki dumps' markup takes seconds)."""
    return tuple(sources.COLLECTIONS[name]())


def load_sources(split: str, required: bool = True, collections: Sequence[str] | None = None) -> list[Source]:
    """The split's real texts from every collection (or only those named); with required=False a missing
    collection is skipped with a note on stderr, otherwise SourceMissing says what to install. A text that repeats an
    earlier one under another key (the Lee corpus holds a few stories twice; some manual pages are links by
    another name) is dropped before the split, so no text is on both sides."""
    texts, seen = [], set()
    for name in sources.COLLECTIONS:
        if collections is not None and name not in collections:
            continue
        try:
            for source in _collection(name):
                if source.text not in seen:
                    seen.add(source.text)
                    texts += [source] if in_split(source, split) else []
        except SourceMissing as missing:
            if required:
                raise
            print(f"devcorpus: {name} skipped: {missing}", file=sys.stderr)
    return texts


def _shortened(source: Source, rng: random.Random) -> Source:
    """The first 1–6 sentences of a text, as a short post or answer is (at least 20 words)."""
    sentences = split_sentences(source.text)
    keep = rng.randint(1, 6)
    while keep < len(sentences) and words(" ".join(sentences[:keep])) < 20:
        keep += 1
    return Source(source.collection, source.key, source.lang, " ".join(sentences[:keep]), source.topic)


def _shingles(text: str) -> set[str]:
    tokens = WORD_CORE.findall(text.lower())
    return {" ".join(tokens[i:i + 5]) for i in range(max(1, len(tokens) - 4))}


#: Base texts sharing more of their word 5-grams than this are not distinct: the most a `quoting` negative takes
#: of its source. Between that and a near-duplicate lies no label the corpus could defend (two manual pages of
#: one tool family sharing 45 % of their text are neither), so such pairs are left out rather than guessed.
DISTINCT_CONTAINMENT = 1 / 3


def distinct(texts: list[Source], limit: float = DISTINCT_CONTAINMENT,
             against: Sequence[Source] = ()) -> list[Source]:
    """Drops every text that shares more than `limit` of its word 5-grams with an earlier one or one of `against`
    (texts labelled already, which are not returned): a page that includes another, a section repeated in two
    articles, so no unlabelled duplicate stays among the originals."""
    kept, index = [], {}
    for number, source in enumerate([*against, *texts]):
        shingles = _shingles(source.text)
        counts = Counter(j for s in shingles for j in index.get(s, ()))
        if number >= len(against) and any(count > limit * min(len(shingles), kept_size) for j, count in counts.items()
               for kept_size in [len(kept[j][1])]):
            continue
        for s in shingles:
            index.setdefault(s, []).append(len(kept))
        kept.append((source, shingles))
    return [source for source, _ in kept[len(against):]]


def generate(split: str = DEFAULT_SPLIT, size: int = DEFAULT_SIZE, seed: int | None = None,
             required: bool = True, collections: Sequence[str] | None = None) -> list[Doc]:
    """The labelled corpus of a split: at most `size` documents, from every collection of real texts or only
    those named (what else the machine holds, its manual pages say, then changes nothing)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; use one of {', '.join(SPLITS)}")
    rng = random.Random(SPLIT_SEEDS[split] if seed is None else seed)
    bases = load_sources(split, required, collections)
    bases = [_shortened(s, rng) if s.collection in ("news", "encyclopedia", "bgwiki") and rng.random() < 0.25
             else s for s in bases]
    bases = distinct(bases)
    rng.shuffle(bases)
    sites = news_sites(rng)
    sites_by_lang = {lang: [s for s in sites if s.lang == lang] for lang in SITE_NAMES}
    docs: list[Doc] = []

    def add(text: str, base: Source | None, group: str, family: str, lang: str, length: str, rate: float = 0.0,
            site: Site | None = None, template: str = "") -> None:
        docs.append(Doc(f"{split[:2]}{len(docs):06d}", text, lang, group, family,
                        base.collection if base else "templates", length, round(rate, 4),
                        site.name if site else "", template, base.topic if base else ""))

    def add_copies(text: str, base: Source | None, lang: str, group: str, length: str, home: Site | None,
                   count: int, template: str = "") -> None:
        candidates = sites_by_lang.get(lang) or sites_by_lang["en"]
        for _ in range(count):
            family = rng.choice(EDIT_FAMILIES)
            site = rng.choice([s for s in candidates if s != home] or candidates)
            copy, rate = republish(text, lang, family, site, rng)
            add(copy, base, group, family, lang, length, rate,
                site if family in ("boilerplate", "combined", "excerpt") else None, template)

    for t, (lang, template, keys) in enumerate(TEMPLATES):
        for v, key in enumerate(keys):
            text = template.format(key=key)
            add(text, None, f"{split}-t{t}v{v}", "template", lang, length_bucket(text), template=f"t{t}")
            if rng.random() < 0.25:
                add_copies(text, None, lang, f"{split}-t{t}v{v}", length_bucket(text), None, rng.randint(1, 2),
                           f"t{t}")
    for b, base in enumerate(bases):
        if len(docs) >= size:
            break
        group, length = f"{split}-g{b:05d}", length_bucket(base.text)
        site_langs = sites_by_lang.get(base.lang)
        if site_langs and base.collection in ("news", "encyclopedia") and rng.random() < 0.15:
            site = rng.choice(site_langs)
            add(with_boilerplate(base.text, site, rng), base, group, "shared_boilerplate", base.lang, length,
                site=site)
            continue
        quoted = [d for d in docs[-200:] if d.family == "original" and d.lang == base.lang and d.site == ""
                  and len(split_sentences(d.text)) >= 6]
        if quoted and rng.random() < 0.08:
            source = rng.choice(quoted)
            add(quoting(base.text, source.text, rng), base, group, "quoting", base.lang, length)
            docs[-1].quotes = source.group
            continue
        home = rng.choice(site_langs) if site_langs and base.collection == "news" and rng.random() < 0.6 else None
        add(with_boilerplate(base.text, home, rng) if home else base.text, base, group, "original", base.lang,
            length, site=home)
        # a few stories are syndicated widely: the stop-list must not take them for boilerplate
        count = rng.randint(10, 20) if rng.random() < 0.02 else rng.choice([0, 1, 1, 2, 2, 3, 4, 5])
        add_copies(base.text, base, base.lang, group, length, home, count)
    return docs[:size]


def write_jsonl(docs: list[Doc], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for doc in docs:
            out.write(json.dumps(asdict(doc), ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[Doc]:
    with path.open(encoding="utf-8") as lines:
        return [Doc(**json.loads(line)) for line in lines]
