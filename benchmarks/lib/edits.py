"""How the development corpora republish a text: the edit families (word edits, rewording, formatting, headlines,
lost punctuation, truncation, excerpts, site boilerplate, combinations), the news sites whose boilerplate they add,
and the text helpers (paragraphs, sentences, wrapping, cutting) the corpus builders share. The word lists (site names
and sections, boilerplate, datelines, bylines, fillers) are in benchmarks/data/devcorpus.json.

Each edit takes a random.Random and draws from it only, so a seed gives the same copy."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass

from benchmarks.lib.data import load_json
from benchmarks.lib.sources import words

EDIT_FAMILIES = ("edit", "reword", "format", "headline", "unpunctuated", "truncate", "excerpt", "boilerplate",
                 "combined")
EDIT_RATES = (0.01, 0.02, 0.05, 0.10)

_DATA = load_json("devcorpus.json")


# --- sites: boilerplate that different articles share ----------------------------------------------------

#: lang → the names of its news sites.
SITE_NAMES: dict[str, list[str]] = _DATA["site_names"]
#: lang → section names a site's navigation lists.
SECTIONS: dict[str, list[str]] = _DATA["sections"]
#: lang → (header lines, footer lines), with {name} and {sections} to fill.
BOILERPLATE: dict[str, tuple[list[str], list[str]]] = {
    lang: (parts["header"], parts["footer"]) for lang, parts in _DATA["boilerplate"].items()}
_DATELINE: dict[str, str] = _DATA["dateline"]
_MONTHS: list[str] = _DATA["months"]
_CAPTION_WHO: list[str] = _DATA["caption_who"]
_AGENCIES: list[str] = _DATA["agencies"]
_EXCERPT_LINK: dict[str, str] = _DATA["excerpt_link"]


@dataclass(frozen=True)
class Site:
    """A news site: its name, language, and the header and footer lines every page of it carries."""

    name: str
    lang: str
    header: tuple[str, ...]
    footer: tuple[str, ...]


def news_sites(rng: random.Random) -> list[Site]:
    """The news sites of every language of SITE_NAMES, each with its own sections in its header and footer."""
    sites = []
    for lang, names in SITE_NAMES.items():
        header, footer = BOILERPLATE[lang]
        for name in names:
            sections = " | ".join(rng.sample(SECTIONS[lang], 5))
            fill = lambda line: line.format(name=name, sections=sections)  # noqa: E731
            sites.append(Site(name, lang, tuple(map(fill, header)), tuple(map(fill, footer))))
    return sites


# --- edits -----------------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+(?=\S)")
TOKEN = re.compile(r"\S+|\s+")
WORD_CORE = re.compile(r"[^\W_]+")
#: Small words an editor inserts, per language; other languages insert words of the text itself.
FILLERS: dict[str, list[str]] = _DATA["fillers"]


def split_paragraphs(text: str) -> list[str]:
    """The text's paragraphs (separated by blank lines), empty ones dropped."""
    return [p for p in re.split(r"\n[^\S\n]*\n", text) if p.strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of each paragraph, whitespace collapsed."""
    return [s for p in split_paragraphs(text) for s in _SENTENCE_END.split(" ".join(p.split()))]


def _typo(word: str, rng: random.Random) -> str:
    if len(word) < 3:
        return word + word[-1]
    i = rng.randrange(len(word) - 1)
    kind = rng.randrange(3)
    if kind == 0:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == 1:
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]


def _inflected(word: str, rng: random.Random) -> str:
    """Another form of the word: a suffix added or removed, as "report" → "reported"."""
    if len(word) > 4 and rng.random() < 0.5:
        return word[:-1]
    return word + rng.choice(["s", "ed", "e", "en", "ing"])


class _Editor:
    """Word-level edits of one text: substitutions (another word of the text, a typo, another form of the
    word), insertions and deletions, at chosen positions, keeping whitespace and punctuation around them."""

    def __init__(self, text: str, lang: str, rng: random.Random):
        self.tokens = TOKEN.findall(text)
        self.rng = rng
        self.word_positions = [i for i, t in enumerate(self.tokens) if WORD_CORE.search(t)]
        vocabulary = sorted({m.group() for t in self.tokens for m in [WORD_CORE.search(t)] if m and len(m.group()) > 2})
        self.vocabulary = vocabulary or ["word"]
        self.fillers = FILLERS.get(lang) or self.vocabulary

    def edit(self, position: int) -> None:
        token = self.tokens[position]
        match = WORD_CORE.search(token)
        if match is None:
            return
        core = match.group()
        kind = self.rng.random()
        if kind < 0.6:
            style = self.rng.random()
            if style < 0.55:
                new = self.rng.choice(self.vocabulary)
            elif style < 0.8:
                new = _typo(core, self.rng)
            else:
                new = _inflected(core, self.rng)
            self.tokens[position] = token[:match.start()] + new + token[match.end():]
        elif kind < 0.8:
            self.tokens[position] = self.rng.choice(self.fillers) + " " + token
        else:
            # the punctuation of a deleted word stays with the text
            self.tokens[position] = token[:match.start()] + token[match.end():]

    def spread(self, rate: float) -> float:
        """Edits round(rate × words) positions drawn over the whole text; returns the share of words edited."""
        count = max(1, round(rate * len(self.word_positions)))
        for position in self.rng.sample(self.word_positions, min(count, len(self.word_positions))):
            self.edit(position)
        return count / max(1, len(self.word_positions))

    def text(self) -> str:
        return re.sub(r"[^\S\n]{2,}", " ", "".join(self.tokens))


def edited(text: str, lang: str, rate: float, rng: random.Random) -> tuple[str, float]:
    """The text with round(rate × words) word edits spread over it, and the share of its words edited."""
    editor = _Editor(text, lang, rng)
    actual = editor.spread(rate)
    return editor.text(), actual


def reworded(text: str, lang: str, rng: random.Random) -> tuple[str, float]:
    """One edit in 80 % of the sentences, then 1–3 sentences merged with the next or split at a comma."""
    out_paragraphs, edits, total = [], 0, 0
    for para in split_paragraphs(text):
        sentences = _SENTENCE_END.split(" ".join(para.split()))
        new = []
        for sentence in sentences:
            editor = _Editor(sentence, lang, rng)
            total += len(editor.word_positions)
            if editor.word_positions and rng.random() < 0.8:
                editor.edit(rng.choice(editor.word_positions))
                edits += 1
            new.append(editor.text())
        out_paragraphs.append(new)
    flat = [(p, s) for p, sentences in enumerate(out_paragraphs) for s in range(len(sentences))]
    for _ in range(rng.randint(1, 3)):
        p, s = rng.choice(flat)
        sentences = out_paragraphs[p]
        if s >= len(sentences):
            continue
        sentence = sentences[s]
        comma = sentence.find(", ", len(sentence) // 3)
        if rng.random() < 0.5 and comma > 0:
            rest = sentence[comma + 2:]
            sentences[s:s + 1] = [sentence[:comma] + ".", rest[:1].upper() + rest[1:]]
        elif s + 1 < len(sentences) and sentence.endswith("."):
            following = sentences[s + 1]
            sentences[s:s + 2] = [sentence[:-1] + f", {_AND.get(lang, '')} ".replace("  ", " ")
                                  + following[:1].lower() + following[1:]]
    return "\n\n".join(" ".join(s) for s in out_paragraphs), edits / max(1, total)


_AND: dict[str, str] = _DATA["and"]
_QUOTES = [("\"", "“", "”"), ("'", "‘", "’")]


def reformatted(text: str, rng: random.Random) -> str:
    """Typography and house style: quotes, dashes, thousands separators, percent signs, letter case, spacing."""
    if rng.random() < 0.7:
        for straight, left, right in _QUOTES:
            if straight in text:
                parts = text.split(straight)
                text = "".join(part + (left if i % 2 == 0 else right) for i, part in enumerate(parts[:-1])) + parts[-1]
            else:
                text = text.replace(left, straight).replace(right, straight)
    text = text.replace(" -- ", " — ") if rng.random() < 0.5 else text.replace(" — ", " - ")
    if rng.random() < 0.6:
        text = re.sub(r"\b(\d{1,3}),(\d{3})\b", r"\1\2", text) if "," in text else \
            re.sub(r"\b(\d)(\d{3})\b", r"\1,\2", text)
    if rng.random() < 0.5:
        text = re.sub(r"(\d) ?per ?cent\b", r"\1%", text) if "per cent" in text else text.replace("%", " percent")
    sentences = split_sentences(text)
    if sentences and rng.random() < 0.6:
        first = sentences[0]
        text = text.replace(first, first.upper() if rng.random() < 0.5 else first.title(), 1)
    if rng.random() < 0.5:
        text = re.sub(r"([.!?]) (?=[A-ZА-Я])", r"\1  ", text)  # two spaces after a full stop
    return text


_HEADLINE_PREFIX: dict[str, list[str]] = _DATA["headline_prefix"]
_BYLINE: list[str] = _DATA["byline"]


def _headline(text: str, lang: str, rng: random.Random) -> str:
    first = split_sentences(text)[:1] or [text]
    head_words = WORD_CORE.findall(first[0])[: rng.randint(4, 9)]
    return (rng.choice(_HEADLINE_PREFIX.get(lang, [""])) + " " + " ".join(head_words).title()).strip()


def with_headline(text: str, lang: str, rng: random.Random) -> str:
    """A new headline, dateline and byline on top; an existing short first line (a title) is replaced."""
    lines = text.split("\n", 1)
    if len(lines) == 2 and words(lines[0]) <= 12 and not lines[0].rstrip().endswith("."):
        text = lines[1].lstrip("\n")
    byline = rng.choice(_BYLINE).format(who=rng.choice(_CAPTION_WHO).title(), agency=rng.choice(_AGENCIES))
    month = rng.randrange(12)
    dateline = _DATELINE.get(lang, _DATELINE["en"]).format(
        day=rng.randint(1, 28), month=_MONTHS[month], mnum=month + 1, hh=f"{rng.randint(6, 22):02d}",
        mm=f"{rng.randint(0, 59):02d}")
    return f"{_headline(text, lang, rng)}\n{byline}\n{dateline}\n\n{text}"


def unpunctuated(text: str, rng: random.Random) -> str:
    """Plain text as tables, listings and old mail carry it: hard-wrapped with the sentence stops removed, or
    one bullet per sentence without its stop."""
    sentences = [re.sub(r"[.!?;:]+([\"')\]]*)$", r"\1", s) for s in split_sentences(text)]
    if rng.random() < 0.5:
        return "\n".join(f"{rng.choice(['-', '*', '•'])} {s}" for s in sentences)
    flat = " ".join(sentences)
    return wrap_text(re.sub(r"[.!?](?=\s)", "", flat), rng.randint(45, 80))


def wrap_text(paragraph: str, width: int) -> str:
    """The paragraph's words hard-wrapped at `width` characters."""
    lines, line = [], ""
    for word in paragraph.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join(lines + [line])


def cut_text(text: str, share: float) -> str:
    """The text up to `share` of its words, ending at the last sentence end before the cut when there is one in
    the last fifth, else mid-sentence (as a length limit cuts)."""
    target = max(8, round(words(text) * share))
    positions = [m.end() for m in re.finditer(r"\S+", text)]
    cut = positions[min(target, len(positions)) - 1]
    ends = [m.start() + 1 for m in _SENTENCE_END.finditer(text, 0, cut)]
    if ends and ends[-1] > cut * 0.8:
        cut = ends[-1]
    return text[:cut].rstrip()


def truncated(text: str, rng: random.Random) -> str:
    return cut_text(text, rng.uniform(0.55, 0.9))


def excerpt(text: str, lang: str, site: "Site", rng: random.Random) -> str:
    return cut_text(text, rng.uniform(0.25, 0.6)) + " …\n\n" + _EXCERPT_LINK.get(lang, _EXCERPT_LINK["en"]).format(
        name=site.name)


def with_boilerplate(text: str, site: "Site", rng: random.Random) -> str:
    """The site's header, a dateline that differs per page, the text, the site's footer."""
    month = rng.randrange(12)
    dateline = _DATELINE[site.lang].format(day=rng.randint(1, 28), month=_MONTHS[month], mnum=month + 1,
                                           hh=f"{rng.randint(6, 22):02d}", mm=f"{rng.randint(0, 59):02d}")
    return "\n".join(site.header) + "\n" + dateline + "\n\n" + text + "\n\n" + "\n".join(site.footer)


def quoting(text: str, quoted: str, rng: random.Random) -> str:
    """A distinct text with one to three consecutive sentences of another (at most a third of it) placed
    between its paragraphs."""
    sentences = split_sentences(quoted)
    count = min(len(sentences) // 3, rng.randint(1, 3))
    start = rng.randrange(len(sentences) - count + 1)
    # a third of the words too: one long sentence of a short page can be most of it
    words_allowed = max(1, len(quoted.split()) // 3)
    passage = "“" + " ".join(" ".join(sentences[start:start + count]).split()[:words_allowed]) + "”"
    paragraphs = split_paragraphs(text)
    paragraphs.insert(rng.randint(0, len(paragraphs)), passage)
    return "\n\n".join(paragraphs)


def republish(text: str, lang: str, family: str, site: "Site", rng: random.Random) -> tuple[str, float]:
    """One copy of text under an edit family, and the share of its words edited."""
    if family == "edit":
        return edited(text, lang, rng.choice(EDIT_RATES), rng)
    if family == "reword":
        return reworded(text, lang, rng)
    if family == "format":
        return reformatted(text, rng), 0.0
    if family == "headline":
        return with_headline(text, lang, rng), 0.0
    if family == "unpunctuated":
        return unpunctuated(text, rng), 0.0
    if family == "truncate":
        return truncated(text, rng), 0.0
    if family == "excerpt":
        return excerpt(text, lang, site, rng), 0.0
    if family == "boilerplate":
        return with_boilerplate(text, site, rng), 0.0
    if family == "combined":
        text, rate = edited(text, lang, rng.choice(EDIT_RATES), rng)
        extra = rng.choice(["format", "unpunctuated", "truncate", "reword"])
        text, more = republish(text, lang, extra, site, rng)
        text = with_boilerplate(text, site, rng) if rng.random() < 0.5 else with_headline(text, lang, rng)
        return text, rate + more
    raise ValueError(f"unknown edit family {family!r}")
