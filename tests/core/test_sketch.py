"""The sketcher: text → sorted, unique uint32 CRC32 values of the shingles, the K smallest.

CRC32 is checked against zlib's (an independent implementation of the same polynomial), determinism against
a process with another hash seed, and the normalization (case, reflow, stemming) on the languages the seeds
carry.
"""
from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import textwrap
import zlib
from collections import Counter
from unittest.mock import patch

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core import nltk_text, sketcher as sketch_module
from neardup.core import stoplist
from neardup.core.sketch_config import SketchConfig, stoplist_digest
from neardup.core.sketcher import Sketcher
from neardup.core.encoding import decode_sketch, encode_sketch, validate_sketch
from neardup.core.errors import ConfigMismatch, InvalidArgument
from textgen import article, text

UNITS = ["sentence", "para-sentence", "word:1", "word:3", "word:5"]

RUSSIAN = ("Министр финансов представил новый бюджет на заседании правительства. Депутаты обсуждали расходы на "
           "транспорт и образование. Оппозиция потребовала снизить налоги для малого бизнеса. Голосование "
           "назначено на следующую неделю.")


def values(text_: str, **config) -> list[int]:
    return decode_sketch(Sketcher(SketchConfig(**config)).sketch(text_))


def assert_well_formed(sketch: bytes, k: int) -> None:
    assert len(sketch) % 4 == 0
    decoded = decode_sketch(sketch)
    assert len(decoded) <= k
    assert decoded == sorted(set(decoded))
    assert validate_sketch(sketch, k) == sketch


def test_crcmod_uses_its_c_extension():
    assert sketch_module.CRC32_IS_COMPILED


@pytest.mark.parametrize("unit", UNITS)
@settings(max_examples=60, deadline=None)
@given(body=st.text(max_size=400), k=st.integers(1, 80))
def test_any_text_gives_a_sorted_unique_sketch_of_at_most_k(unit, body, k):
    assert_well_formed(Sketcher(SketchConfig(unit=unit, k=k)).sketch(body), k)


@pytest.mark.parametrize("unit", UNITS)
def test_sketch_is_the_k_smallest_zlib_crc32_of_the_shingles(unit):
    sketcher = Sketcher(SketchConfig(unit=unit, k=16))
    body = text(article(7, sentences=30))
    shingles = sketcher.shingles(body)
    expected = sorted({zlib.crc32(s.encode()) for s in shingles})[:16]
    assert len(set(shingles)) > 16  # the cut matters
    assert decode_sketch(sketcher.sketch(body)) == expected


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("unit", ["word:1", "word:3", "word:4"])
@settings(max_examples=150, deadline=None)
@given(body=st.text(max_size=300), lang=st.sampled_from(["english", "russian", "german", "none"]))
def test_compiled_ngram_hashes_equal_the_crc32_of_each_shingle(unit, body, lang):
    """hashes() runs one compiled loop over one UTF-8 encoding of the text; it must equal hashing each shingle."""
    sketcher = Sketcher(SketchConfig(unit=unit))
    assert sketcher.hashes(body, lang) == {zlib.crc32(s.encode()) for s in sketcher.shingles(body, lang)}


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("unit", ["word:1", "word:3", "sentence"])
@settings(max_examples=150, deadline=None)
@given(body=st.text(max_size=300), repeats=st.integers(1, 30), lang=st.sampled_from(["english", "russian", "none"]))
def test_hash_counts_are_each_shingles_crc32_counted(unit, body, repeats, lang):
    """hash_counts() (word n-grams: counted in the compiled loop, sorted by radix past 48 shingles) equals counting
    each shingle's CRC-32; its hashes are hashes()."""
    sketcher = Sketcher(SketchConfig(unit=unit))
    text_ = " ".join([body] * repeats)
    counts = sketcher.hash_counts(text_, lang)
    expected = Counter(zlib.crc32(s.encode()) for s in sketcher.shingles(text_, lang))
    assert counts.items() == sorted(expected.items())
    assert {value for value, _ in counts.items()} == sketcher.hashes(text_, lang)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, deadline=None)
@given(hashes=st.sets(st.integers(0, 2**32 - 1), max_size=300), k=st.integers(1, 64), data=st.data())
def test_sketch_hashes_keep_the_k_smallest_outside_the_stoplist(hashes, k, data):
    stoplist = frozenset(data.draw(st.sets(st.sampled_from(sorted(hashes)))) if hashes else ())
    config = SketchConfig(k=k, stoplist_digest=stoplist_digest(stoplist))
    expected = encode_sketch(sorted(hashes - stoplist)[:k])
    sketcher = Sketcher(config, stoplist)
    assert sketcher.sketch_hashes(hashes) == sketcher.sketch_hashes(list(hashes) * 2) == expected


@pytest.mark.parametrize("bad, error", [([-1], OverflowError), ([2**32], OverflowError), (["1"], TypeError)])
def test_sketch_hashes_refuse_values_outside_uint32(bad, error):
    with pytest.raises(error):
        Sketcher().sketch_hashes(bad)


def test_word_ngrams_slide_one_word_at_a_time():
    sketcher = Sketcher(SketchConfig(unit="word:3", min_word_len=1, lang="none"))
    assert sketcher.shingles("Alpha beta, gamma delta!") == ["alpha beta gamma", "beta gamma delta"]
    assert sketcher.shingles("Alpha beta") == ["alpha beta"]  # shorter than N: one shingle
    assert Sketcher(SketchConfig(unit="word:2", min_word_len=3, lang="none")).shingles(
        "an old map of the bay") == ["old map", "map the", "the bay"]


@pytest.mark.slow
def test_deterministic_across_processes_with_another_hash_seed():
    texts = [text(article(seed)) for seed in range(5)] + [RUSSIAN]
    script = ("import json, sys\nfrom neardup.core.sketch_config import SketchConfig\nfrom neardup.core.sketcher import Sketcher\n"
              "texts = json.load(sys.stdin)\n"
              "print(json.dumps([[Sketcher(SketchConfig(unit=u)).sketch(t).hex() for t in texts] "
              f"for u in {UNITS!r}]))")
    ours = [[Sketcher(SketchConfig(unit=unit)).sketch(t).hex() for t in texts] for unit in UNITS]
    for seed in ("0", "12345"):
        done = subprocess.run([sys.executable, "-c", script], input=json.dumps(texts), capture_output=True,
                              text=True, env={**os.environ, "PYTHONHASHSEED": seed}, timeout=60)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == ours


@pytest.mark.parametrize("unit", ["sentence", "para-sentence", "word:5"])
def test_invariant_to_case_and_whitespace_reflow(unit):
    """Sentences here end in words: after a number or an initial, Punkt lets the next word's case decide
    whether a sentence ends there ("at 5. the next day"), so such texts are case-invariant only per sentence."""
    paragraphs = [re.sub(r" \d+\.", ".", text(article(seed, sentences=5))) for seed in (11, 12, 13)]
    original = "\n\n".join(paragraphs)
    reflowed = "\n\n".join(textwrap.fill(p, width=37) for p in paragraphs).replace(" ", "  \t")
    expected = values(original, unit=unit)
    assert len(expected) >= 15
    for variant in (original.upper(), original.lower(), original.swapcase(), reflowed):
        assert values(variant, unit=unit) == expected


@pytest.mark.parametrize("unit", ["sentence", "para-sentence", "word:3", "word:5"])
def test_unrelated_texts_share_nothing(unit):
    first, second = values(text(article(101)), unit=unit), values(text(article(202)), unit=unit)
    assert first and second
    assert not set(first) & set(second)


def test_a_copy_with_a_new_header_keeps_most_of_the_sketch():
    body = text(article(5, sentences=20))
    original, copy = set(values(body)), set(values("BREAKING NEWS from our wire desk. " + body))
    # six new words add at most eight word 3-grams (two across the join), each pushing one value out of the K
    assert len(original & copy) >= len(original) - 8


@pytest.mark.parametrize("lang, inflected, base", [
    ("en", "The ministers negotiated new contracts with the farmers.",
     "The minister negotiates new contract with the farmer."),
    ("nl", "Nieuwe contracten voor de boeren.", "Nieuw contract voor de boer."),
    ("ru", "Министры обсуждали новые контракты с фермерами.", "Министр обсуждает новый контракт с фермером."),
    ("de", "Neue Verträge mit den Bauern.", "Neuer Vertrag mit den Bauern."),
])
def test_stemming_makes_inflected_forms_match(lang, inflected, base):
    assert values(inflected, lang=lang) == values(base, lang=lang) != []
    assert values(inflected, lang="none") != values(base, lang="none")  # it is the stemmer that matches them


def test_russian_text_and_its_copy_match_and_per_document_lang_overrides_the_default():
    russian = Sketcher(SketchConfig(unit="sentence", lang="ru"))
    assert russian.sketch(RUSSIAN) == russian.sketch(RUSSIAN.replace(". ", ".\n")) != b""
    assert len(decode_sketch(russian.sketch(RUSSIAN))) == 4
    assert Sketcher(SketchConfig(unit="sentence", lang="english")).sketch(RUSSIAN, "ru") == russian.sketch(RUSSIAN)


@pytest.mark.parametrize("junk", ["", "   \n\t ", "!!! ... ??? --- ,,, ;;; «» — …", "\x00\x01\x02\x7f"])
@pytest.mark.parametrize("unit", UNITS)
def test_empty_and_punctuation_only_texts_give_an_empty_sketch(junk, unit):
    assert Sketcher(SketchConfig(unit=unit)).sketch(junk) == b""


@pytest.mark.parametrize("unit", UNITS)
def test_binary_junk_gives_a_well_formed_sketch(unit):
    junk = random.Random(3).randbytes(20_000)
    for decoded in (junk.decode("latin-1"), junk.decode("utf-8", "replace"), junk.decode("utf-8", "surrogateescape")):
        assert_well_formed(Sketcher(SketchConfig(unit=unit)).sketch(decoded), SketchConfig().k)


def ten_megabytes() -> str:
    paragraphs, size, seed = [], 0, 0
    while size < 10 * 2**20:
        paragraphs.append(text(article(seed)))
        size += len(paragraphs[-1]) + 2
        seed += 1
    return "\n\n".join(paragraphs)


@pytest.mark.slow
def test_a_10_mb_document_is_sketched_as_sentences():
    """Sentence splitting is the costly step: the whole text must go through it, however long.
    (Word n-grams need no splitter; test_index_cli covers the default end to end.)"""
    assert_well_formed(Sketcher(SketchConfig(unit="sentence")).sketch(ten_megabytes()), SketchConfig().k)


@pytest.mark.parametrize("config", [dict(unit="paragraph"), dict(unit="word:0"), dict(unit="word:x"),
                                    dict(lang="klingon"), dict(k=0), dict(k=5000), dict(min_word_len=-1),
                                    dict(hash="md5")])
def test_bad_configuration_is_refused(config):
    with pytest.raises(InvalidArgument):
        SketchConfig(**config)


def test_bad_per_document_input_is_refused():
    sketcher = Sketcher()
    with pytest.raises(InvalidArgument, match="unknown language"):
        sketcher.sketch("Some text.", "xx")
    with pytest.raises(InvalidArgument, match="text must be a string"):
        sketcher.sketch(b"bytes are not text")


def test_language_codes_name_the_same_configuration():
    assert SketchConfig(lang="RU") == SketchConfig(lang="russian")
    assert SketchConfig(lang="nl").lang == "dutch"


def test_config_round_trips_through_json():
    config = SketchConfig(unit="word:4", k=32, min_word_len=2, lang="de", stoplist_digest="abc")
    assert SketchConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config
    with pytest.raises(InvalidArgument, match="unknown sketch configuration fields"):
        SketchConfig.from_dict({**config.to_dict(), "window": 3})


def test_another_configuration_is_a_mismatch_that_names_the_difference():
    store = SketchConfig()
    store.require_equal(SketchConfig())
    with pytest.raises(ConfigMismatch, match=rf"k=32 \(store: {SketchConfig().k}\)"):
        store.require_equal(SketchConfig(k=32))
    with pytest.raises(ConfigMismatch):
        validate_sketch(encode_sketch(range(65)), 64)


def test_stoplist_is_removed_before_the_k_cut_and_must_match_the_digest():
    body = text(article(9, sentences=30))
    full = decode_sketch(Sketcher(SketchConfig(k=4096)).sketch(body))
    stoplist = frozenset(full[:3])
    config = SketchConfig(k=8, stoplist_digest=stoplist_digest(stoplist))
    assert decode_sketch(Sketcher(config, stoplist).sketch(body)) == full[3:11]
    with pytest.raises(ConfigMismatch):
        Sketcher(SketchConfig(k=8), stoplist)
    assert stoplist_digest([3, 1, 2, 2]) == stoplist_digest([1, 2, 3]) != stoplist_digest([1, 2])


@pytest.mark.parametrize("bad", [b"\x01\x02\x03", encode_sketch([5, 3]), encode_sketch([3, 3])])
def test_malformed_sketch_bytes_are_invalid(bad):
    with pytest.raises(InvalidArgument):
        validate_sketch(bad, 64)


# Pieces of text that exercise every branch of Punkt's decision: abbreviations of each language's list, initials,
# ordinals and numbers, ellipses, ? and !, closing quotes and brackets (realignment), curly quotes, guillemets,
# hyphenated words, commas and colons after a stop, lower- and upper-case next words, several kinds of whitespace.
_PUNKT_PIECES = (
    ["said", "The", "economy", "I", "a", "J", "U.S", "e.g", "i.e", "etc", "Dr", "dr", "Mr", "vs", "Inc", "St",
     "no", "Jan", "bijv", "z.B", "г", "т.е", "Москва", "Über", "élan", "co-op", "ex-Gov", "3", "1994", "3.5",
     "2nd", "x", "foo_bar", "I/O", "f()", "...", "…", "--"]
    + [".", ". ", "? ", "! ", "?!", "..", ". . .", ",", ";", ":", "\"", "'", ")", "(", "]", "[", "}", "*",
       "\u201c", "\u201d", "\u2018", "\u2019", "\xab", "\xbb", "-"]
    + [" ", " ", " ", "  ", "\n", "\n\n", "\t", "\r\n", "\x0b", "\xa0"])


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=1500, deadline=None)
@given(pieces=st.lists(st.sampled_from(_PUNKT_PIECES), max_size=40),
       lang=st.sampled_from(["english", "dutch", "german", "russian", "french", "none"]))
def test_sentence_splits_are_nltk_punkts_exactly(pieces, lang):
    """The sketcher's fast Punkt answers what NLTK's PunktSentenceTokenizer answers, with the same parameters."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    fast = nltk_text.sentence_splitter(lang)
    text_ = "".join(pieces)
    assert fast.tokenize(text_) == PunktSentenceTokenizer(fast._params).tokenize(text_)


def test_sentence_splits_are_nltk_punkts_on_prose_in_four_languages():
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    samples = [(text(article(seed)), "english") for seed in range(30)] + [(RUSSIAN, "russian")] + [
        ("Dhr. Jansen sprak o.a. over de begroting. De minister, bijv. Dr. de Vries, was er niet! Waarom? "
         "Dat is onduidelijk (zie p. 3.) en \"Ik weet het niet.\" Einde.", "dutch"),
        ("Dr. Müller, z.B. aus Berlin, sagte: \u201eDas ist gut.\u201c Die 3. Runde beginnt am 4. Mai. Ende...",
         "german")]
    for body, lang in samples:
        fast = nltk_text.sentence_splitter(lang)
        assert fast.tokenize(body) == PunktSentenceTokenizer(fast._params).tokenize(body)


# --- the stop-list's document frequencies: exact over any split of a corpus ---------------------------------------

@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(st.integers(0, 2**32 - 1) | st.integers(0, 40), max_size=30), max_size=60),
       st.integers(1, 8), st.integers(1, 5), st.integers(2, 12))
def test_frequencies_summed_over_parts_and_shards_learn_the_stoplist_of_the_whole(docs, part_size, shards, min_docs):
    """What --engine dask does (counts per partition, split by value into shards, each shard summed and cut) gives
    the counts and the stop-list of counting every document at once, which are Counter's."""
    counted = Counter(value for doc in docs for value in doc)
    whole = stoplist.document_frequencies(docs)
    assert dict(zip(whole.values.tolist(), whole.counts.tolist())) == counted
    assert whole.values.tolist() == sorted(counted)
    with patch.object(stoplist, "_CHUNK_VALUES", 7):  # counted a few documents at a time, then summed
        assert [array.tolist() for array in stoplist.document_frequencies(docs)] == \
            [array.tolist() for array in whole]
    parts = [stoplist.split(stoplist.document_frequencies(docs[at:at + part_size]), shards)
             for at in range(0, len(docs), part_size)]
    cut = stoplist.stoplist_cut(len(docs), min_docs, 0.0)
    reduced = stoplist.summed(stoplist.frequent(stoplist.summed(part[shard] for part in parts), cut)
                              for shard in range(shards))
    expected = {value: count for value, count in counted.items() if count >= min_docs}
    assert dict(zip(reduced.values.tolist(), reduced.counts.tolist())) == expected


def _brute_force_stoplist(docs: list[set[int]], min_docs: int, sample_size: int, own_share: float) -> set[int]:
    """The diversity rule written out: per shingle in at least the cut of documents, its holders in key order, the
    first sample_size of them; a holder with at least own_share of its values under the cut is a distinct text;
    df x distinct / sampled reaches the cut."""
    cut = stoplist.stoplist_cut(len(docs), min_docs, 0.0)
    df = Counter(value for doc in docs for value in doc)
    keyed = sorted((stoplist.document_key(np.array(sorted(doc), np.uint32)), doc) for doc in docs)
    stopped = set()
    for value, count in df.items():
        if count < cut:
            continue
        holders = [doc for _, doc in keyed if value in doc][:sample_size]
        distinct = [sum(df[held] < cut for held in doc) >= own_share * len(doc) for doc in holders]
        if count * sum(distinct) / len(holders) >= cut:
            stopped.add(value)
    return stopped


_FEW_VALUES = st.integers(0, 2**32 - 1) | st.integers(0, 60)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sets(_FEW_VALUES, max_size=40), max_size=50), st.data(), st.integers(1, 20), st.integers(2, 10),
       st.integers(1, 6), st.sampled_from([0.0, 0.3, 0.5, 1.0]))
def test_samples_merged_over_parts_learn_the_diversity_stoplist_of_the_whole(docs, data, part_size, min_docs,
                                                                            sample_size, own_share):
    """Parts of a corpus sampled apart and merged (what --engine dask does) give the sample of the whole, and the
    stop-list is the rule written out by brute force."""
    copies = data.draw(st.integers(0, 12))
    if docs and copies:  # copies of one text, each missing at most one of its values
        story = sorted(docs[0])
        docs = docs + [set(story) - {story[index % len(story)]} if story else set() for index in range(copies)]
    arrays = [np.array(sorted(doc), np.uint32) for doc in docs]
    cut = stoplist.stoplist_cut(len(docs), min_docs, 0.0)
    candidates = stoplist.frequent(stoplist.document_frequencies(arrays), cut)
    whole = stoplist.document_sample(arrays, candidates.values, sample_size)
    with patch.object(stoplist, "_CHUNK_VALUES", 9):  # a few documents at a time
        assert_samples_equal(stoplist.document_sample(arrays, candidates.values, sample_size), whole)
    parts = stoplist.merged([stoplist.document_sample(arrays[at:at + part_size], candidates.values, sample_size)
                             for at in range(0, len(arrays), part_size)], sample_size)
    assert_samples_equal(parts, whole)
    learned = stoplist.learn_stoplist(docs, min_docs, 0.0, sample_size, own_share)
    assert learned == frozenset(stoplist.boilerplate(candidates, parts, cut, own_share).values.tolist())
    assert learned == _brute_force_stoplist(docs, min_docs, sample_size, own_share)


def assert_samples_equal(got: stoplist.Sample, expected: stoplist.Sample) -> None:
    assert got.candidate.tolist() == expected.candidate.tolist()
    assert got.key.tolist() == expected.key.tolist()
    for name in ("documents", "own", "total"):
        assert getattr(got, name).tolist() == getattr(expected, name).tolist()


def test_a_story_republished_hundreds_of_times_is_never_boilerplate_and_a_shared_footer_is():
    """Documents of 40 distinct values each: 300 copies of one story (each with 2 values edited) and 400 distinct
    articles, every one of which, copies included, ends in the same 20-value footer; cut 50."""
    rng = random.Random(5)
    footer = set(range(20))  # a third of each document
    story = set(rng.sample(range(1000, 2**32), 40))
    copies = [(story - set(rng.sample(sorted(story), 2))) | set(rng.sample(range(1000, 2**32), 2)) | footer
              for _ in range(300)]
    articles = [set(rng.sample(range(1000, 2**32), 40)) | footer for _ in range(400)]
    learned = stoplist.learn_stoplist(copies + articles, min_docs=50, fraction=0.0)
    assert learned == frozenset(footer)
    # counted by documents alone (every sampled holder a distinct text), the story would be stop-listed too
    assert story & stoplist.learn_stoplist(copies + articles, min_docs=50, fraction=0.0, own_share=0.0)
