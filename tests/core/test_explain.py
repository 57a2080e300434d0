"""Explain's pure core: where in a text each shingle was made from (Sketcher.located_shingles), whose hashes must be
exactly the sketcher's (Sketcher.hashes), and the merged spans of a pair (core/explain.py)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core import explain, reference
from neardup.core.encoding import decode_sketch
from neardup.core.sketch_config import SketchConfig, stoplist_digest
from neardup.core.sketcher import Sketcher
from neardup.core.vocabulary import BOTTOMK, ITEMS, SIMHASH
from textgen import article, text

WORD_UNITS = ["word:1", "word:2", "word:3", "word:5"]
SENTENCE_UNITS = ["sentence", "para-sentence"]
LANGS = ["english", "german", "russian", "none"]

# Pieces that reach every branch of the word and sentence rules: words of several scripts, stop-words of the
# stemmers, characters whose lowercase is longer (İ) or depends on context (Σ), letters beyond U+FFFF, digits,
# underscores (no word character here), abbreviations and initials, sentence ends with closing quotes and brackets
# (Punkt's realignment), and white space of every kind, blank lines (para-sentence) among them.
_PIECES = (
    ["said", "The", "economy", "I", "a", "U.S", "e.g", "Dr", "Mr", "no", "Jan", "z.B", "Москва", "ΣΟΦΟΣ", "Über",
     "İstanbul", "élan", "co-op", "3", "1994", "3.5", "foo_bar", "𝔘𝔫𝔦", "😀", "straße", "ǅ", "…", "--"]
    + [".", ". ", "? ", "! ", "..", ",", ";", ":", "\"", "'", ")", "(", "]", "\u201c", "\u201d", "\xab", "\xbb"]
    + [" ", " ", " ", "  ", "\n", "\n\n", " \n \n", "\t", "\r\n", "\xa0"])
texts = st.one_of(st.text(max_size=300), st.lists(st.sampled_from(_PIECES), max_size=60).map("".join))


def sketcher(unit: str, min_word_len: int = 1, lang: str = "english", stoplist=frozenset(), **config) -> Sketcher:
    return Sketcher(SketchConfig(unit=unit, min_word_len=min_word_len, lang=lang,
                                 stoplist_digest=stoplist_digest(stoplist), **config), stoplist)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("unit", WORD_UNITS)
@settings(max_examples=300, deadline=None)
@given(body=texts, min_word_len=st.sampled_from([0, 1, 3]), lang=st.sampled_from(LANGS))
def test_located_word_ngrams_hash_to_the_sketchers_hashes(unit, body, min_word_len, lang):
    """The property Explain rests on: the shingles it locates are the ones the text's sketch was made of."""
    located = sketcher(unit, min_word_len, lang).located_shingles(body)
    assert {shingle.hash for shingle in located} == sketcher(unit, min_word_len, lang).hashes(body)
    assert all(0 <= shingle.start < shingle.end <= len(body) for shingle in located)
    assert [shingle.start for shingle in located] == sorted(shingle.start for shingle in located)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("unit", SENTENCE_UNITS)
@settings(max_examples=300, deadline=None)
@given(body=texts, min_word_len=st.sampled_from([1, 3]), lang=st.sampled_from(LANGS))
def test_located_sentences_hash_to_the_sketchers_hashes(unit, body, min_word_len, lang):
    located = sketcher(unit, min_word_len, lang).located_shingles(body)
    assert {shingle.hash for shingle in located} == sketcher(unit, min_word_len, lang).hashes(body)
    # a sentence's span is the sentence without the white space around it, sentences in order without overlap
    for shingle in located:
        assert 0 <= shingle.start < shingle.end <= len(body)
        assert not body[shingle.start].isspace() and not body[shingle.end - 1].isspace()
    assert all(first.end <= second.start for first, second in zip(located, located[1:]))


@pytest.mark.parametrize("unit", SENTENCE_UNITS + WORD_UNITS)
def test_located_shingles_of_articles_hash_to_the_sketchers_hashes(unit):
    tool = sketcher(unit)
    for seed in range(20):
        body = "\n\n".join(text(article(seed * 3 + part)) for part in range(3))
        assert {shingle.hash for shingle in tool.located_shingles(body)} == tool.hashes(body)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, deadline=None)
@given(words=st.lists(st.sampled_from(["river", "Bridge", "council", "votes", "a", "of", "market", "İzmir"]),
                      max_size=30),
       separators=st.lists(st.sampled_from([" ", ", ", ". ", "\n", " -- ", "\n\n"]), min_size=30, max_size=30),
       n=st.integers(1, 4))
def test_a_word_ngrams_span_holds_exactly_its_words(words, separators, n):
    """Cut out of the text, each located n-gram's span sketches to that one shingle."""
    body = "".join(word + separator for word, separator in zip(words, separators))
    tool = sketcher(f"word:{n}")
    for shingle in tool.located_shingles(body):
        assert tool.hashes(body[shingle.start:shingle.end]) == {shingle.hash}


def test_spans_count_code_points_of_the_text_as_sent():
    body = "😀 İstanbul köprüsü: the bridge over the strait. 𝔘𝔫𝔦 council votes today."
    tool = sketcher("word:2")
    spans = [body[s.start:s.end] for s in tool.located_shingles(body)]
    assert spans[:3] == ["İstanbul", "stanbul köprüsü", "köprüsü: the"]  # İ lowers to i + a combining dot
    assert spans[-2:] == ["council votes", "votes today"]
    sentences = [body[s.start:s.end] for s in sketcher("sentence").located_shingles(body)]
    assert sentences == ["😀 İstanbul köprüsü: the bridge over the strait.", "𝔘𝔫𝔦 council votes today."]


def test_a_text_without_words_has_no_shingles():
    for unit in SENTENCE_UNITS + WORD_UNITS:
        assert sketcher(unit).located_shingles(" ... \n\n --") == []
    short = "Two words"
    (only,) = sketcher("word:3").located_shingles(short)  # at most N words: one shingle of the whole text
    assert (only.start, only.end) == (0, len(short))


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(1, 20)), max_size=30))
def test_merged_spans_cover_the_same_characters_sorted_and_apart(pairs):
    spans = [(start, start + length) for start, length in pairs]
    merged = explain.merge_spans(spans)
    covered = {i for start, end in spans for i in range(start, end)}
    assert {i for start, end in merged for i in range(start, end)} == covered
    assert all(start < end for start, end in merged)
    assert all(first[1] < second[0] for first, second in zip(merged, merged[1:]))  # touching ones are joined


def test_merging_joins_overlapping_and_touching_spans():
    assert explain.merge_spans([(5, 9), (0, 3), (3, 4), (8, 12), (20, 21)]) == [(0, 4), (5, 12), (20, 21)]
    assert explain.merge_spans([]) == []


# --- a pair -------------------------------------------------------------------------------------------------------

FOOTER = "Subscribe to our newsletter for more stories like this one."
SENTENCES = article(7)
STORY = text(SENTENCES)
COPY = "From the wire 😀: " + text(SENTENCES[:9]) + " " + FOOTER  # a republished excerpt with the site's footer


def _pair(tool: Sketcher, a: str | None, b: str | None, sketch_a: bytes | None = None, sketch_b: bytes | None = None):
    sides = [explain.Side(None if body is None else tool.located_shingles(body),
                          sketch if sketch is not None else tool.sketch(body))
             for body, sketch in ((a, sketch_a), (b, sketch_b))]
    return explain.explain(tool.config.kind, tool.config.k, tool.stoplist, *sides)


def _covered(spans) -> set[int]:
    return {i for start, end in spans for i in range(start, end)}


@pytest.mark.parametrize("unit", ["word:3", "sentence"])
def test_a_pairs_spans_and_counts(unit):
    stop = sketcher(unit).hashes(FOOTER)
    tool = sketcher(unit, stoplist=frozenset(stop), k=32)
    pair = _pair(tool, STORY + " " + FOOTER, COPY)
    a_text, b_text = STORY + " " + FOOTER, COPY
    hashes_a, hashes_b = tool.hashes(a_text), tool.hashes(b_text)
    assert pair.shared_shingles == len((hashes_a & hashes_b) - tool.stoplist)
    values_a, values_b = (decode_sketch(tool.sketch(body)) for body in (a_text, b_text))
    assert pair.shared_sketch_values == len(set(values_a) & set(values_b))
    assert (pair.a.sketch_values, pair.b.sketch_values) == (len(values_a), len(values_b))
    assert (pair.a.compared_values, pair.b.compared_values) == reference.compared_lengths(values_a, values_b, 32)[:2]
    assert pair.note == ""
    for side, body in ((pair.a, a_text), (pair.b, b_text)):
        assert side.has_text and side.shingles == len(tool.hashes(body))
        assert side.stoplisted_shingles == len(tool.hashes(body) & tool.stoplist)
        # the footer is boilerplate, and nothing else is; what decided the similarity is among the shared passages
        assert [body[start:end] for start, end in side.boilerplate] == [FOOTER if unit == "sentence" else FOOTER[:-1]]
        assert side.sketch_shared and _covered(side.sketch_shared) <= _covered(side.shared)
        assert all(body[start:end] in STORY for start, end in side.shared)
    assert "wire" not in _covered_text(b_text, pair.b.shared)


def _covered_text(body: str, spans) -> str:
    return " ".join(body[start:end] for start, end in spans)


def test_each_span_list_is_exactly_the_merged_spans_of_its_shingles():
    tool = sketcher("word:3", k=16)
    pair = _pair(tool, STORY, COPY)
    located = tool.located_shingles(COPY)
    shared = (tool.hashes(STORY) & tool.hashes(COPY)) - tool.stoplist
    in_sketches = set(decode_sketch(tool.sketch(STORY))) & set(decode_sketch(tool.sketch(COPY)))
    assert pair.b.shared == explain.merge_spans((s.start, s.end) for s in located if s.hash in shared)
    assert pair.b.sketch_shared == explain.merge_spans((s.start, s.end) for s in located if s.hash in in_sketches)
    assert len(pair.b.sketch_shared) > 1  # K = 16 samples a few passages, not the whole text


def test_without_a_text_the_counts_of_the_sketches_and_a_note():
    tool = sketcher("word:3")
    pair = _pair(tool, None, COPY, sketch_a=tool.sketch(STORY))
    assert not pair.a.has_text and pair.a.shared == pair.a.sketch_shared == pair.a.boilerplate == []
    assert pair.a.sketch_values == len(decode_sketch(tool.sketch(STORY))) and pair.shared_shingles == 0
    assert pair.b.has_text and pair.b.shared == [] and pair.b.sketch_shared  # its text against the other's sketch
    assert "spans need both texts" in pair.note and "a came without text" in pair.note
    both = _pair(tool, None, None, tool.sketch(STORY), tool.sketch(COPY))
    assert "a and b came without text" in both.note and both.shared_sketch_values == pair.shared_sketch_values


def test_a_simhash_pair_shares_shingles_but_no_sketch_values():
    stop = frozenset(sketcher("word:3").hashes(FOOTER))
    tool = sketcher("word:3", stoplist=stop, kind=SIMHASH)
    pair = _pair(tool, STORY + " " + FOOTER, COPY)
    assert pair.a.shared and pair.a.boilerplate and pair.a.sketch_shared == []
    assert pair.shared_sketch_values == 0 and pair.a.sketch_values == 0
    assert "simhash" in pair.note


def test_an_items_store_has_no_text_spans():
    with pytest.raises(ValueError, match="items"):
        explain.explain(ITEMS, 128, frozenset(), explain.Side(None, b""), explain.Side(None, b""))
    assert BOTTOMK in explain.explain.__doc__
