"""Text → sketch: the sorted, unique CRC32 values of a document's shingles, trimmed to the K smallest (bottom-K, a
consistent sample, so two sketches compare by a linear merge), or a simhash store's 64-bit fingerprint of the same
shingle hashes (8 little-endian bytes; none for a text without shingles), weighted as the store's sketcher version
says, so an old store keeps sketching query texts as its stored fingerprints were made. Bytes: core/encoding.py.
How and why: docs/design.md ("Sketching"), docs/simhash.md ("The fingerprint").
"""
from __future__ import annotations

import array
import importlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

import crcmod.predefined

from . import _shingle, fields as item_fields, language
from .encoding import decode_sketch
from .errors import ConfigMismatch, InvalidArgument
from .language import AUTO, canonical_lang
from .nltk_text import bounded_pieces, sentence_splitter, stem_function, stem_memo
from .sketch_config import SKETCHER_VERSIONS, SketchConfig, sketcher_versions_text, stoplist_digest
from .vocabulary import ITEMS, PARA_SENTENCE, SIMHASH, TEXT, WEIGHTINGS

#: crcmod's C implementation is what makes CRC32 per shingle cheap; tests assert it is in use.
CRC32_IS_COMPILED: bool = importlib.import_module("crcmod.crcmod")._usingExtension
_crc32 = crcmod.predefined.mkCrcFun("crc-32")
# The C function and table inside crcmod's CRC-32 (crc = mask ^ update(data, mask ^ 0, table)), called without
# its Python wrapper, which cost as much as the CRC itself; checked against the wrapper at import.
_CRC_MASK = 0xFFFFFFFF
_crc32_update, _CRC_TABLE = _crc32.__defaults__[2], _crc32.__defaults__[1]
if not _CRC_MASK ^ _crc32_update(b"123456789", _CRC_MASK, _CRC_TABLE) == _crc32(b"123456789") == 0xCBF43926:
    raise ImportError("crcmod's CRC-32 is not the standard one")

_WORD = re.compile(r"[^\W_]+")
_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")

def reference_words(text: str, min_word_len: int, stem) -> list[str]:
    """The specification of the words a text is sketched by (the compiled _shingle.stemmed_words makes
    " ".join(reference_words(...)).encode() in one call; tests/core/test_sketch_compiled.py holds them equal): the
    words of text.lower() (runs of letters and digits: _WORD), those of at least min_word_len characters, each
    stemmed."""
    words = _WORD.findall(text.lower())
    if min_word_len > 1:
        words = [w for w in words if len(w) >= min_word_len]
    return list(map(stem, words))


def _crc(data: bytes) -> int:
    """CRC-32 of bytes, as the compiled loop computes it (crcmod's loop and table)."""
    return _CRC_MASK ^ _crc32_update(data, _CRC_MASK, _CRC_TABLE)


def _located_words(text: str, min_word_len: int) -> list[tuple[str, int, int]]:
    """The lowercased words of Sketcher._words before stemming, each with the characters [start, end) of `text`
    it came from. The words are found in text.lower(), as _words finds them; only U+0130 (İ) lowers to two code
    points, so offsets are mapped back through each character's lowercase length when the lengths differ."""
    lowered = text.lower()
    origin = None
    if len(lowered) != len(text):
        origin = [position for position, char in enumerate(text) for _ in char.lower()]
        if len(origin) != len(lowered):  # lowercasing one character at a time must give the same length
            raise AssertionError("lowercasing changed length in context")
        origin.append(len(text))
    located = []
    for match in _WORD.finditer(lowered):
        word = match.group()
        if len(word) < min_word_len:
            continue
        start, end = match.span()
        if origin is not None:
            start, end = origin[start], origin[end - 1] + 1
        located.append((word, start, end))
    return located


class LocatedShingle(NamedTuple):
    """A shingle's hash and the characters [start, end) of the text it was made from (code point offsets)."""

    hash: int
    start: int
    end: int


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
    #: True sketches by the pure-Python reference path (the regex tokenizer, NLTK's own stemmers, shingles joined
    #: in Python, a set of Python ints before the cut): the specification the compiled path is held equal to
    #: (tests/core/test_sketch_compiled.py) and the baseline benchmarks/bench_sketch.py measures it against.
    reference: bool = False

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
        # the unit's N, parsed once (the configuration is frozen) rather than by a regex per text
        self._word_ngram = self.config.word_ngram

    def language(self, text: str, lang: str | None = None) -> str:
        """The stemmer language of a text: its own lang when given, else the store's, or for an auto store the one
        identified from the text."""
        if lang:
            return canonical_lang(lang)
        return language.identify(text) if self.config.lang == AUTO else self.config.lang

    def _words(self, text: str, lang: str) -> list[str]:
        """Lowercased, stemmed words of at least min_word_len characters; punctuation is dropped."""
        return reference_words(text, self.config.min_word_len, stem_function(lang, not self.reference))

    def _stemmed(self, text: str, lang: str) -> bytes:
        """The UTF-8 of " ".join(self._words(text, lang)): the words found, stemmed (through the language's memo) and
        joined in one compiled call."""
        if self.reference:
            return " ".join(self._words(text, lang)).encode("utf-8")
        return _shingle.stemmed_words(text.lower(), self.config.min_word_len, stem_memo(lang))

    def shingles(self, text: str, lang: str | None = None) -> list[str]:
        """The document's shingles as normalized strings, in text order (repeats included)."""
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        lang = self.language(text, lang)
        n = self._word_ngram
        if n is None:
            return [shingle.decode("utf-8") for shingle in self._sentence_shingles(text, lang) if shingle]
        words = self._words(text, lang)
        if len(words) <= n:
            return [" ".join(words)] if words else []
        return [" ".join(words[i:i + n]) for i in range(len(words) - n + 1)]

    def _sentence_shingles(self, text: str, lang: str):
        """The UTF-8 shingles of a sentence unit, one per sentence in text order, empty for a sentence without
        words."""
        splitter = sentence_splitter(lang)
        blocks = _BLANK_LINE.split(text) if self.config.unit == PARA_SENTENCE else (text,)
        return (self._stemmed(sentence, lang) for block in blocks for piece in bounded_pieces(block)
                for sentence in splitter.tokenize(piece))

    def located_shingles(self, text: str, lang: str | None = None) -> list[LocatedShingle]:
        """Every shingle of the text in text order (repeats included), with its hash and the characters of the text
        it was made from: a word n-gram from its first word's first character to its last word's last (the whole
        text's words when it has at most N), a sentence without the white space around it. Offsets are code
        points of `text` (Python string indexes). The set of the hashes is hashes(text, lang): each is the CRC-32
        of the same bytes the compiled loop hashes, one shingle at a time (slower: for explaining a pair, not for
        sketching a corpus; core/explain.py)."""
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        lang = self.language(text, lang)
        n = self._word_ngram
        if n is None:
            return self._located_sentences(text, lang)
        stem = stem_function(lang, not self.reference)
        words, starts, ends = [], [], []
        for word, start, end in _located_words(text, self.config.min_word_len):
            words.append(stem(word).encode("utf-8"))
            starts.append(start)
            ends.append(end)
        if len(words) <= n:
            windows = [(0, len(words))] if words else []
        else:
            windows = [(first, first + n) for first in range(len(words) - n + 1)]
        return [LocatedShingle(_crc(b" ".join(words[first:stop])), starts[first], ends[stop - 1])
                for first, stop in windows]

    def _located_sentences(self, text: str, lang: str) -> list[LocatedShingle]:
        """located_shingles of a sentence unit: shingles() walked with each block's, piece's and sentence's
        offset (Punkt's sentences are slices of their piece, in order, with white space between them)."""
        splitter = sentence_splitter(lang)
        blocks, start = [], 0
        if self.config.unit == PARA_SENTENCE:
            for blank in _BLANK_LINE.finditer(text):  # as _BLANK_LINE.split(text)
                blocks.append((start, text[start:blank.start()]))
                start = blank.end()
        blocks.append((start, text[start:]))
        located = []
        for offset, block in blocks:
            for piece in bounded_pieces(block):
                cursor = 0
                for sentence in splitter.tokenize(piece):
                    at = piece.find(sentence, cursor)
                    if at < 0:
                        raise AssertionError("a sentence Punkt found is no slice of its text")
                    cursor = at + len(sentence)
                    shingle = self._stemmed(sentence, lang)
                    if shingle:
                        lead = len(sentence) - len(sentence.lstrip())
                        located.append(LocatedShingle(_crc(shingle), offset + at + lead,
                                                      offset + at + len(sentence.rstrip())))
                offset += len(piece)
        return located

    def hashes(self, text: str, lang: str | None = None) -> set[int]:
        """Every distinct shingle hash of the text, before the stop-list and the K cut (the offline stage counts
        these): CRC-32 of each shingle's UTF-8 bytes, as {crc32(s.encode()) for s in shingles(text)}."""
        n = self._word_ngram
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        lang = self.language(text, lang)
        if n is None:
            return {_crc(shingle) for shingle in self._sentence_shingles(text, lang) if shingle}
        return _shingle.ngram_hashes(self._stemmed(text, lang), n, _CRC_TABLE, _CRC_MASK)

    def hash_counts(self, text: str, lang: str | None = None) -> ShingleCounts:
        """The text's distinct shingle hashes (those of hashes()), ascending, with their counts in the text, before
        the stop-list: what a weighted SimHash fingerprint is made of (the offline stage keeps these for a simhash
        store). Word n-grams are counted in the same compiled call that hashes them."""
        n = self._word_ngram
        if not isinstance(text, str):
            raise InvalidArgument(f"text must be a string, got {type(text).__name__}")
        lang = self.language(text, lang)
        if n is None:
            return ShingleCounts.of(_crc(shingle) for shingle in self._sentence_shingles(text, lang) if shingle)
        return ShingleCounts(*_shingle.ngram_counts(self._stemmed(text, lang), n, _CRC_TABLE, _CRC_MASK))

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
        n = self._word_ngram
        if n is None or self.reference or not isinstance(text, str):
            return self.sketch_hashes(self.hashes(text, lang))
        # sketch_hashes(hashes(text)) in one compiled call, without a set of Python ints in between
        return _shingle.ngram_bottom_k(self._stemmed(text, self.language(text, lang)), n, _CRC_TABLE, _CRC_MASK,
                                       self._stop_array, self.config.k)


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
                      for spec in config.fields if spec.kind == TEXT}

    def sketch(self, values, lang: str | None = None) -> bytes:
        """InvalidArgument (saying what to fix) for an unknown field, a value of the wrong type, a latitude
        outside [-90, 90] or a longitude outside [-180, 180]."""
        present = item_fields.present_fields(values, self.config.fields)
        sections = []
        for spec in self.config.fields:
            value = present.get(spec.name)
            if value is None:
                sections.append([])
            elif spec.kind == TEXT:
                sections.append(decode_sketch(self._text[spec.name].sketch(spec.with_synonyms(value), lang)))
            else:
                sections.append(item_fields.field_values(spec, value))
        sections.append(item_fields.super_tokens(self.config.fields, self.config.rules, sections))
        return item_fields.encode_item(sections)
