"""Text → sketch: the sorted, unique CRC32 values of a document's shingles, trimmed to the K smallest.

The K smallest values are a consistent sample (bottom-K): two documents keep the same shingles whenever
both have them below their cut, so two sketches compare by a linear merge (see kernel.py).
A sketch travels and is stored as bytes: little-endian uint32 values, ascending.

A store of the second kind (SketchConfig.kind "simhash") keeps instead the 64-bit SimHash fingerprint of the same
shingle hashes, as 8 little-endian bytes, or no bytes for a text without shingles (reference.simhash): each distinct
shingle outside the stop-list votes with a weight of its count in the text, 1 + ln tf for a store of the current
simhash sketcher version (3), 1 for one made before weights (version 2; SketchConfig.weighting says which), so an
old store keeps sketching query texts as its stored fingerprints were made.
"""
from __future__ import annotations

import array
import functools
import hashlib
import importlib
import json
import operator
import re
import struct
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Iterable, NamedTuple

import crcmod.predefined

from ..errors import ConfigMismatch, InvalidArgument
from . import _shingle, language
from . import fields as item_fields
from .fields import FieldSpec
from .language import AUTO, SNOWBALL_LANGUAGES, canonical_lang, canonical_store_lang
from .reference import BOTTOMK, ITEMS, KINDS, LOG_TF, SIMHASH, UNIT, WEIGHTINGS

#: crcmod's C implementation is what makes CRC32 per shingle cheap; tests assert it is in use.
CRC32_IS_COMPILED: bool = importlib.import_module("crcmod.crcmod")._usingExtension
_crc32 = crcmod.predefined.mkCrcFun("crc-32")
# The C function and table inside crcmod's CRC-32 (crc = mask ^ update(data, mask ^ 0, table)), called without
# its Python wrapper, which cost as much as the CRC itself; checked against the wrapper at import.
_CRC_MASK = 0xFFFFFFFF
_crc32_update, _CRC_TABLE = _crc32.__defaults__[2], _crc32.__defaults__[1]
if not _CRC_MASK ^ _crc32_update(b"123456789", _CRC_MASK, _CRC_TABLE) == _crc32(b"123456789") == 0xCBF43926:
    raise ImportError("crcmod's CRC-32 is not the standard one")

# NLTK (Snowball stemmers, Punkt) takes a second or more to import, for it pulls in scipy; only sketching text
# needs it, so it is imported at its first use (_nltk), not with this module: `neardup --help`, `dedup` and `info`
# never load it, and `neardup serve` loads it before its workers start (load_nltk).


@functools.lru_cache(maxsize=None)
def _nltk():
    """NLTK's classes the sketcher uses, imported on first call: (SnowballStemmer, PunktParameters, _FastPunkt)."""
    from nltk.stem.snowball import SnowballStemmer
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

    if tuple(SnowballStemmer.languages) != SNOWBALL_LANGUAGES:
        raise ImportError(f"this NLTK stems {SnowballStemmer.languages}, not the languages neardup was made with "
                          f"{SNOWBALL_LANGUAGES}; install the NLTK version pyproject.toml pins")
    fast_punkt = type("_FastPunkt", (_FastPunktMixin, PunktSentenceTokenizer), {"__doc__": _FastPunktMixin.__doc__})
    return SnowballStemmer, PunktParameters, fast_punkt


def load_nltk() -> None:
    """Imports NLTK now rather than at the first text sketched (a server does so before taking calls)."""
    _nltk()

# Punkt runs untrained (no download, no model file): these abbreviations keep "Dr. Smith" in one sentence.
_ABBREVIATIONS = {
    "english": "mr mrs ms dr prof sr jr st inc ltd co corp vs etc e.g i.e u.s u.k no jan feb mar apr jun jul aug "
               "sep sept oct nov dec gov sen rep gen col lt mt ave",
    "dutch": "dhr mevr mr dr drs ir prof bijv enz o.a nr blz m.b.t i.p.v t.a.v z.g.a.n ca",
    "german": "dr prof nr z.b bzw usw ca str hr fr d.h u.a evtl ggf inkl",
    "french": "m mme mlle dr prof etc p.ex cf av bd st ste",
    "spanish": "sr sra srta dr dra prof etc pág ud uds av",
    "russian": "г гг т.е т.д т.п ул им проф др с м",
}

_WORD = re.compile(r"[^\W_]+")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")
#: Shingle units: Punkt sentences; sentences also cut at blank lines, so a heading, caption or dateline
#: without a final stop does not fuse with the next sentence; word n-grams.
SENTENCE, PARA_SENTENCE = "sentence", "para-sentence"
_UNIT = re.compile(rf"^({SENTENCE}|{PARA_SENTENCE}|word:([1-9][0-9]?))$")
MAX_K = 4096
DEFAULT_K = 128
#: Bytes of a SimHash sketch: one little-endian uint64.
SIMHASH_BYTES = 8
#: The version of the sketching rules (tokenization, sentence splitting, stemming, normalization, hashing) whose
#: sketches this code makes. Bump it whenever any sketch value for the same text and configuration could change
#: (tests/test_sketch_golden.py fails then): a store records it, and one made by another version is refused.
#: It is the version of bottom-K sketches; SimHash sketches have their own (SIMHASH_WEIGHTING).
SKETCHER_VERSION = 2
#: The sketcher versions of SimHash sketches this code makes, each with how its fingerprints weigh a shingle
#: (reference.shingle_weight): version 2 (the rules of SKETCHER_VERSION 2, every distinct shingle weighing 1) is
#: that of simhash stores made before weights, and is still made for them, so their query texts are sketched as
#: their stored fingerprints were; version 3 weighs a shingle 1 + ln of its count in the text (chosen on the tune
#: split: benchmarks/QUALITY.md) and is what a new simhash store gets. The highest is the current one.
SIMHASH_WEIGHTING = {2: UNIT, 3: LOG_TF}
#: The sketcher versions this code sketches by, per sketch kind; a new configuration gets the last.
SKETCHER_VERSIONS = {BOTTOMK: (SKETCHER_VERSION,), SIMHASH: tuple(sorted(SIMHASH_WEIGHTING)),
                     ITEMS: (SKETCHER_VERSION,)}
_CURRENT_VERSION = object()  # SketchConfig's default sketcher_version: the current one of its kind


def sketcher_versions_text(kind: str) -> str:
    """'version 2', 'versions 2 and 3': the sketcher versions this code makes sketches of the kind by."""
    versions = SKETCHER_VERSIONS[kind]
    if len(versions) == 1:
        return f"version {versions[0]}"
    return "versions " + ", ".join(map(str, versions[:-1])) + f" and {versions[-1]}"


@dataclass(frozen=True)
class SketchConfig:
    """Everything that decides a sketch's values. Saved in the store; sketches compare only under equal configs."""

    # Chosen by measured F1 on the development corpus's tune split (benchmarks/QUALITY.md): word 3-grams survive
    # edits spread over every sentence, texts without sentence punctuation and short texts, where one edited word
    # breaks a whole sentence shingle. The card's recipe stays available: unit="sentence", min_word_len=3.
    unit: str = "word:3"
    #: The bottom-K sketch's size; a simhash configuration keeps the default, which it does not use.
    k: int = DEFAULT_K
    min_word_len: int = 1
    #: The stemmer language of texts sent without their own, or "auto": each such text's identified language
    #: (core/language.py), by the identifier lang_identifier names.
    lang: str = "english"
    hash: str = "crc32"
    stoplist_digest: str = ""
    #: Which sketching rules made the sketches; they compare only under equal versions (see SKETCHER_VERSION and
    #: SIMHASH_WEIGHTING). Left out, the current version of the kind: 2 for bottomk, 3 for simhash.
    sketcher_version: int = _CURRENT_VERSION  # type: ignore[assignment]
    #: "bottomk" (the K smallest shingle hashes) or "simhash" (one 64-bit fingerprint of them); a configuration
    #: saved before kinds existed is bottomk.
    kind: str = BOTTOMK
    #: An items store's schema (core/fields.py): how each field is sketched and weighed; empty for other kinds.
    fields: tuple[FieldSpec, ...] = ()
    #: An items store's rules: each a tuple of field names an item pair must all match on (super tokens).
    rules: tuple[tuple[str, ...], ...] = ()
    #: An auto store's language identifier and its version (language.identifier_name()): texts stemmed by
    #: another identifier's choices would differ, so a sketcher of another one refuses the store. Left out for
    #: lang "auto", the installed one; "" for any other lang.
    lang_identifier: str = _CURRENT_VERSION  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise InvalidArgument(f"unknown sketch kind {self.kind!r}; use {' or '.join(map(repr, KINDS))}")
        object.__setattr__(self, "fields", tuple(self.fields))
        object.__setattr__(self, "rules", tuple(tuple(rule) for rule in self.rules))
        if self.kind == ITEMS:
            item_fields.check_schema(self.fields, self.rules)
        elif self.fields or self.rules:
            raise InvalidArgument(f"fields and rules belong to an items store, not to a {self.kind} one")
        if self.sketcher_version is _CURRENT_VERSION:
            object.__setattr__(self, "sketcher_version", SKETCHER_VERSIONS[self.kind][-1])
        if self.kind == SIMHASH and self.k != DEFAULT_K:
            raise InvalidArgument(f"k sets the size of a bottom-K sketch; a simhash sketch is one 64-bit "
                                  f"fingerprint: leave k at its default ({DEFAULT_K})")
        if not _UNIT.match(self.unit):
            raise InvalidArgument(f"unknown shingle unit {self.unit!r}; use 'sentence', 'para-sentence' or "
                                  "'word:N' (N in 1..99)")
        if not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise InvalidArgument(f"k must be an integer in 1..{MAX_K}, got {self.k!r}")
        if not isinstance(self.min_word_len, int) or not 0 <= self.min_word_len <= 50:
            raise InvalidArgument(f"min_word_len must be an integer in 0..50, got {self.min_word_len!r}")
        if self.hash != "crc32":
            raise InvalidArgument(f"unknown shingle hash {self.hash!r}; only 'crc32' is supported")
        if not isinstance(self.sketcher_version, int) or self.sketcher_version < 1:
            raise InvalidArgument(f"sketcher_version must be an integer >= 1, got {self.sketcher_version!r}")
        object.__setattr__(self, "lang", canonical_store_lang(self.lang))
        if self.lang_identifier is _CURRENT_VERSION:
            object.__setattr__(self, "lang_identifier", language.lang_identifier(self.lang))
        if (self.lang == AUTO) != bool(self.lang_identifier):
            raise InvalidArgument(f"lang_identifier names the language identifier of a store of lang 'auto' and only "
                                  f"of one; got lang {self.lang!r} with lang_identifier {self.lang_identifier!r}")

    @property
    def weighting(self) -> str | None:
        """How a simhash sketch of this configuration weighs a shingle by its count (reference.WEIGHTINGS): the
        rule of its sketcher version (SIMHASH_WEIGHTING); None for bottomk, which keeps distinct values, and for
        a version this code does not sketch by."""
        return SIMHASH_WEIGHTING.get(self.sketcher_version) if self.kind == SIMHASH else None

    @property
    def word_ngram(self) -> int | None:
        """N for the `word:N` unit, None for the sentence units."""
        match = _UNIT.match(self.unit)
        return int(match.group(2)) if match.group(2) else None

    def to_dict(self) -> dict:
        """Its values; fields and rules only for an items store, so other stores save what they always did."""
        values = asdict(self)
        if self.kind != ITEMS:
            del values["fields"], values["rules"]
        if not self.lang_identifier:
            del values["lang_identifier"]  # as stores made before auto saved it (and their models' digests)
        for spec in values.get("fields", ()):
            if not spec["synonyms"]:
                del spec["synonyms"]  # as stores made before synonyms saved it (and their models' digests)
        return values

    def digest(self) -> str:
        """A short name of the whole configuration (a trained model is tied to it)."""
        return hashlib.blake2b(json.dumps(self.to_dict(), sort_keys=True).encode(), digest_size=8).hexdigest()

    @classmethod
    def from_dict(cls, values: dict) -> "SketchConfig":
        """The configuration saved as to_dict() had it. One saved before sketcher versions existed (no
        sketcher_version key) was made by version 1's rules, never by the current version's; one saved before
        sketch kinds existed (no kind key) is bottomk. A simhash one of version 2 weighs every shingle 1."""
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            raise InvalidArgument(f"unknown sketch configuration fields: {', '.join(sorted(unknown))}")
        values = dict(values)
        if "fields" in values:
            values["fields"] = tuple(FieldSpec.from_dict(spec) for spec in values["fields"])
        if "rules" in values:
            values["rules"] = tuple(tuple(rule) for rule in values["rules"])
        return cls(**{"sketcher_version": 1, **values})

    def require_equal(self, other: "SketchConfig", what: str = "sketch") -> None:
        """Refuses to mix sketches made under different configurations."""
        if other != self:
            diff = ", ".join(f"{name}={getattr(other, name)!r} (store: {getattr(self, name)!r})"
                             for name in self.__dataclass_fields__ if getattr(other, name) != getattr(self, name))
            if other.sketcher_version != self.sketcher_version:
                diff += (f"; the sketches were made by another sketcher version and must be re-made by "
                         f"version {self.sketcher_version}")
            raise ConfigMismatch(f"{what} configuration differs from the store's: {diff}")


def stoplist_digest(stoplist: Iterable[int]) -> str:
    """A short, order-independent name for a stop-list, kept in the configuration."""
    values = sorted(set(stoplist))
    if not values:
        return ""
    return hashlib.blake2b(struct.pack(f"<{len(values)}I", *values), digest_size=8).hexdigest()


_BLOCK_CHARS = 20_000
_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


def _bounded(block: str) -> list[str]:
    """Cuts a huge block at sentence ends into pieces of at most ~_BLOCK_CHARS characters. NLTK runs each
    regex under a wall-clock limit (5 s in nltk.redos), which one multi-megabyte paragraph can exceed on a
    busy machine; typical articles are one piece and unchanged."""
    pieces = []
    while len(block) > _BLOCK_CHARS:
        ends = [m.end() for m in _SENTENCE_END.finditer(block, _BLOCK_CHARS // 2, _BLOCK_CHARS)]
        cut = ends[-1] if ends else (block.rfind(" ", 0, _BLOCK_CHARS) + 1 or _BLOCK_CHARS)
        pieces.append(block[:cut])
        block = block[cut:]
    pieces.append(block)
    return pieces


_MEMO_SIZE = 200_000


class _FastPunktMixin:
    """NLTK's Punkt, answering exactly as PunktSentenceTokenizer.tokenize does, several times faster.

    A mixin, so that this module does not import NLTK: _nltk() makes the class _FastPunkt(this,
    PunktSentenceTokenizer) at NLTK's first use.

    Punkt finds candidate ends ('said. The'), asks text_contains_sentbreak whether each breaks a sentence, and
    realigns closing quotes and brackets; tests/test_sketch.py holds this class equal to it on generated and
    real text. What changes is only the cost:
    * the walk over candidates (_match_potential_end_contexts, _slices_from_text, _realign_boundaries) is one
      loop over NLTK's own regexes instead of a chain of generators, which cost more than the decisions;
    * a block with no candidate (a headline, a one-sentence paragraph: a final stop has no next token) is one
      sentence;
    * the commonest candidate is decided without tokenizing its context: a word of letters followed by ? or !,
      or by a period when the word is no abbreviation and longer than an initial, is one token that Punkt's
      first pass marks a break and its second pass, with untrained parameters, leaves one;
    * every other decision is NLTK's, memoized by context string (it depends on nothing else).
    """

    def __init__(self, params):
        super().__init__(params)
        # The second pass looks beyond the word only through learned collocations, sentence starters and
        # orthographic contexts; the plain-word rule holds while there are none.
        self._plain_words_break = not (params.collocations or params.sent_starters or params.ortho_context)
        self._decisions: dict[str, bool] = {}
        # The compiled patterns themselves: nltk.redos wraps them in a per-call time limit, which costs more
        # than the match on the bounded pieces sketching passes in (_bounded)
        self._candidates = _unwrapped(self._lang_vars.period_context_re())
        self._closing = _unwrapped(self._lang_vars.re_boundary_realignment)

    def _breaks(self, text: str, match, word_start: int) -> bool:
        """Whether the candidate `match`, after the word from word_start, ends a sentence."""
        word = text[word_start:match.start()]
        if self._plain_words_break and word.isalpha() and (
                match.group() != "." or (len(word) > 1 and word.lower() not in self._params.abbrev_types)):
            return True
        context = word + match.group() + match.group("after_tok")
        try:
            return self._decisions[context]
        except KeyError:
            if len(self._decisions) >= _MEMO_SIZE:
                self._decisions.clear()
            decision = self._decisions[context] = self.text_contains_sentbreak(context)
            return decision

    def tokenize(self, text: str, realign_boundaries: bool = True) -> list[str]:
        if not realign_boundaries:
            return super().tokenize(text, realign_boundaries)
        # candidates, each with where its previous word starts; one whose word overlaps the next one's is dropped
        candidates = []
        previous, previous_start, previous_stop = None, 0, 0
        for match in self._candidates.finditer(text):
            space = _last_whitespace(text, previous_stop, match.start())
            word_start = space + 1 if space > previous_stop else previous_start
            if previous is not None and previous_stop <= word_start:
                candidates.append((previous, previous_start))
            previous, previous_start, previous_stop = match, word_start, match.start()
        if previous is None:
            end = len(text.rstrip())
            return [text[:end]] if end else []
        candidates.append((previous, previous_start))
        # sentence slices
        bounds, last_break = [], 0
        for match, word_start in candidates:
            if self._breaks(text, match, word_start):
                bounds.append((last_break, match.end()))
                last_break = match.start("next_tok") if match.group("next_tok") else match.end()
        bounds.append((last_break, len(text.rstrip())))
        # closing punctuation after a break joins the sentence before it
        sentences, realign = [], 0
        for (start, stop), following in zip(bounds, bounds[1:] + [None]):
            start += realign
            realign = 0
            if following is not None:
                closing = self._closing.match(text, following[0], following[1])
                if closing:
                    sentences.append(text[start:following[0] + len(closing.group(0).rstrip())])
                    realign = closing.end() - following[0]
                    continue
            if stop > start:
                sentences.append(text[start:stop])
        return sentences


def _unwrapped(pattern):
    """The compiled pattern inside an nltk.redos time-limit wrapper (newer NLTK releases), or the pattern itself."""
    return getattr(pattern, "_rx", pattern)


def _last_whitespace(text: str, start: int, stop: int) -> int:
    """The index of the last whitespace character in text[start:stop] (string.whitespace, as Punkt's
    _get_last_whitespace_index has it), -1 when there is none."""
    rfind = text.rfind
    return max(rfind(" ", start, stop), rfind("\n", start, stop), rfind("\t", start, stop),
               rfind("\r", start, stop), rfind("\x0b", start, stop), rfind("\x0c", start, stop))


@functools.lru_cache(maxsize=None)
def _sentence_splitter(lang: str):
    """The _FastPunkt (a PunktSentenceTokenizer) of a language."""
    _, punkt_parameters, fast_punkt = _nltk()
    params = punkt_parameters()
    params.abbrev_types = set(_ABBREVIATIONS.get(lang, "").split())
    return fast_punkt(params)


class _StemMemo(dict):
    """word → stem, stemmed on first sight. Word frequencies are Zipfian, so most words are looked up, not
    stemmed, and a dict's own lookup (map(memo.__getitem__, words)) costs half an lru_cache call. It starts
    over once it holds _MEMO_SIZE words, so memory stays bounded."""

    def __init__(self, stem):
        super().__init__()
        self.stem = stem

    def __missing__(self, word: str) -> str:
        if len(self) >= _MEMO_SIZE:
            self.clear()
        stem = self[word] = self.stem(word)
        return stem


@functools.lru_cache(maxsize=None)
def _stem_function(lang: str):
    """The memoized stemmer of a language."""
    if lang == "none":
        return lambda word: word
    snowball_stemmer, _, _ = _nltk()
    return _StemMemo(snowball_stemmer(lang).stem).__getitem__


def forget_memos() -> None:
    """Drops the memoized stems and sentence decisions, so a benchmark round measures a cold pass over a corpus."""
    _sentence_splitter.cache_clear()
    _stem_function.cache_clear()


def encode_sketch(values: Iterable[int]) -> bytes:
    values = list(values)
    return struct.pack(f"<{len(values)}I", *values)


def decode_sketch(sketch: bytes) -> list[int]:
    if len(sketch) % 4:
        raise InvalidArgument(f"sketch bytes must be a multiple of 4 long (uint32 values), got {len(sketch)}")
    return list(struct.unpack(f"<{len(sketch) // 4}I", sketch))


def check_sketch(sketch: bytes, config: SketchConfig) -> bytes:
    """The sketch bytes as the store and the kernel take them under config, checked for its kind."""
    if config.kind == SIMHASH:
        return validate_simhash(sketch)
    if config.kind == ITEMS:
        item_fields.decode_item(sketch, config.fields)
        return bytes(sketch)
    return validate_sketch(sketch, config.k)


def validate_simhash(sketch: bytes) -> bytes:
    """A SimHash sketch: 8 bytes (a little-endian uint64 fingerprint), or none for a text without shingles."""
    if len(sketch) not in (0, SIMHASH_BYTES):
        raise InvalidArgument(f"a simhash sketch is {SIMHASH_BYTES} bytes (a little-endian uint64 fingerprint), or "
                              f"empty for a text without shingles; got {len(sketch)} bytes")
    return bytes(sketch)


def validate_sketch(sketch: bytes, k: int) -> bytes:
    """Checks what the kernel relies on: whole uint32 values, strictly ascending, at most K of them."""
    values = decode_sketch(sketch)
    if len(values) > k:
        raise ConfigMismatch(f"sketch has {len(values)} values but the store keeps K={k}; "
                             "it was made with another configuration")
    if not all(map(operator.lt, values, values[1:])):
        raise InvalidArgument("sketch values must be strictly ascending (sorted, no repeats)")
    return bytes(sketch)


def _ngram_hashes(words: list[str], n: int) -> set[int]:
    """CRC-32 of every word n-gram joined by single spaces (the whole text when it has at most n words): one
    compiled call over one UTF-8 encoding of the text, running crcmod's CRC loop on crcmod's table."""
    return _shingle.ngram_hashes(" ".join(words).encode("utf-8"), n, _CRC_TABLE, _CRC_MASK)


#: array.array's code of a 4-byte unsigned integer, the compiled functions' uint32.
_UINT32 = next(code for code in "IL" if array.array(code).itemsize == 4)


class ShingleCounts(NamedTuple):
    """A text's distinct shingle hashes, ascending, and how many times each occurs in it (its term frequency):
    two arrays of native-endian uint32 of one length, as bytes (numpy.frombuffer(..., numpy.uint32) reads them)."""

    hashes: bytes
    counts: bytes

    @classmethod
    def of(cls, shingle_hashes: Iterable[int]) -> "ShingleCounts":
        """From shingle hashes with repeats, in any order."""
        counted = sorted(Counter(shingle_hashes).items())
        return cls(array.array(_UINT32, [value for value, _ in counted]).tobytes(),
                   array.array(_UINT32, [count for _, count in counted]).tobytes())

    def items(self) -> list[tuple[int, int]]:
        """(hash, count) pairs, ascending."""
        return list(zip(array.array(_UINT32, self.hashes), array.array(_UINT32, self.counts)))


@dataclass
class Sketcher:
    """Turns texts into sketches under one configuration, minus the store's stop-list of boilerplate shingles."""

    config: SketchConfig = field(default_factory=SketchConfig)
    stoplist: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        self.stoplist = frozenset(self.stoplist)
        if stoplist_digest(self.stoplist) != self.config.stoplist_digest:
            raise ConfigMismatch("the stop-list does not match the configuration's stoplist_digest")
        kind = self.config.kind
        if self.config.sketcher_version not in SKETCHER_VERSIONS[kind]:
            raise ConfigMismatch(f"this neardup makes {kind} sketches by the rules of {sketcher_versions_text(kind)}, "
                                 f"not of version {self.config.sketcher_version}")
        if self.config.lang == AUTO and self.config.lang_identifier != language.identifier_name():
            raise ConfigMismatch(f"the store's texts were stemmed in the languages {self.config.lang_identifier} "
                                 f"identified; this neardup identifies by {language.identifier_name()}: install "
                                 f"that identifier's version or re-index the store")
        if self.config.lang == AUTO:
            language.load_identifier()
        # the stop-list as the compiled weighted SimHash reads it: ascending uint32
        self._stop_array = array.array(_UINT32, sorted(self.stoplist)).tobytes()

    def language(self, text: str, lang: str | None = None) -> str:
        """The stemmer language of a text: its own lang when given, else the store's, or for an auto store the one
        identified from the text."""
        if lang:
            return canonical_lang(lang)
        return language.identify(text) if self.config.lang == AUTO else self.config.lang

    def _words(self, text: str, lang: str) -> list[str]:
        """Lowercased, stemmed words of at least min_word_len characters; punctuation is dropped."""
        words = _WORD.findall(text.lower())
        min_len = self.config.min_word_len
        if min_len > 1:
            words = [w for w in words if len(w) >= min_len]
        return list(map(_stem_function(lang), words))

    def shingles(self, text: str, lang: str | None = None) -> list[str]:
        """The document's shingles as normalized strings, in text order (repeats included)."""
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        lang = self.language(text, lang)
        n = self.config.word_ngram
        if n is None:
            splitter = _sentence_splitter(lang)
            blocks = _BLANK_LINE.split(text) if self.config.unit == PARA_SENTENCE else (text,)
            normalized = (" ".join(self._words(sentence, lang)) for block in blocks for piece in _bounded(block)
                          for sentence in splitter.tokenize(piece))
            return [shingle for shingle in normalized if shingle]
        words = self._words(text, lang)
        if len(words) <= n:
            return [" ".join(words)] if words else []
        return [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]

    def hashes(self, text: str, lang: str | None = None) -> set[int]:
        """Every distinct shingle hash of the text, before the stop-list and the K cut (the offline stage counts
        these): CRC-32 of each shingle's UTF-8 bytes, as {crc32(s.encode()) for s in shingles(text)}."""
        n = self.config.word_ngram
        if n is None:
            return {_CRC_MASK ^ _crc32_update(s.encode("utf-8"), _CRC_MASK, _CRC_TABLE)
                    for s in self.shingles(text, lang)}
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        return _ngram_hashes(self._words(text, self.language(text, lang)), n)

    def hash_counts(self, text: str, lang: str | None = None) -> ShingleCounts:
        """The text's distinct shingle hashes (those of hashes()), ascending, with their counts in the text, before
        the stop-list: what a weighted SimHash fingerprint is made of (the offline stage keeps these for a simhash
        store). Word n-grams are counted in the same compiled call that hashes them."""
        n = self.config.word_ngram
        if n is None:
            return ShingleCounts.of(_CRC_MASK ^ _crc32_update(s.encode("utf-8"), _CRC_MASK, _CRC_TABLE)
                                    for s in self.shingles(text, lang))
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        words = self._words(text, self.language(text, lang))
        return ShingleCounts(*_shingle.ngram_counts(" ".join(words).encode("utf-8"), n, _CRC_TABLE, _CRC_MASK))

    def sketch_hashes(self, hashes: Iterable[int]) -> bytes:
        """Drops stop-listed values and keeps the K smallest, ascending; for a simhash configuration, the 64-bit
        fingerprint of the distinct values left, each occurring once (so each weighs the same under every
        weighting: reference.simhash), b"" when none is left. sketch_counts weighs values by their counts."""
        if self.config.kind == SIMHASH:
            return _shingle.simhash(hashes, self.stoplist)
        return _shingle.bottom_k(hashes, self.stoplist, self.config.k)

    def sketch_counts(self, counts: ShingleCounts, weighting: str | None = None) -> bytes:
        """The sketch of a text given its hash_counts(): for a simhash configuration, the fingerprint of the
        hashes outside the stop-list, each voting with the weight of its count under the configuration's
        weighting (SketchConfig.weighting; `weighting` overrides it, for benchmarks comparing weightings); for a
        bottom-K one, sketch_hashes of the hashes (counts do not matter)."""
        if self.config.kind != SIMHASH:
            return self.sketch_hashes(array.array(_UINT32, counts.hashes))
        code = WEIGHTINGS.index(weighting or self.config.weighting)
        return _shingle.simhash_counts(counts.hashes, counts.counts, self._stop_array, code)

    def sketch(self, text: str, lang: str | None = None) -> bytes:
        if self.config.kind == ITEMS:
            raise InvalidArgument("this store holds items with fields: send the document's fields, not a text")
        if self.config.kind == SIMHASH:
            return self.sketch_counts(self.hash_counts(text, lang))
        return self.sketch_hashes(self.hashes(text, lang))


class ItemSketcher:
    """Turns an item's field values into its sketch (core/fields.py's layout) under an items configuration: each
    text field by the text rules above with its own unit and K (no stop-list), each exact field as its normalised
    token, a location as its geohash cells; then the super tokens of the rules."""

    def __init__(self, config: SketchConfig):
        if config.kind != ITEMS:
            raise ConfigMismatch(f"a {config.kind} store holds texts, not items with fields")
        self.config = config
        self._text = {spec.name: Sketcher(SketchConfig(unit=spec.unit, k=spec.k, min_word_len=config.min_word_len,
                                                       lang=config.lang, lang_identifier=config.lang_identifier))
                      for spec in config.fields if spec.kind == item_fields.TEXT}

    def sketch(self, values, lang: str | None = None) -> bytes:
        """InvalidArgument (saying what to fix) for an unknown field, a value of the wrong type, a latitude
        outside [-90, 90] or a longitude outside [-180, 180]."""
        present = item_fields.present_fields(values, self.config.fields)
        sections = []
        for spec in self.config.fields:
            value = present.get(spec.name)
            if value is None:
                sections.append([])
            elif spec.kind == item_fields.TEXT:
                sections.append(decode_sketch(self._text[spec.name].sketch(spec.with_synonyms(value), lang)))
            else:
                sections.append(item_fields.field_values(spec, value))
        sections.append(item_fields.super_tokens(self.config.fields, self.config.rules, sections))
        return item_fields.encode_item(sections)
