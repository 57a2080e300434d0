"""SimHash, the second sketch kind, in the core: the sketcher's fingerprints (golden properties and values, the
compiled loops equal to reference.simhash under every shingle weighting, old stores' unweighted sketcher version),
the threshold ↔ distance rule, the compiled popcount kernel equal to reference.dedup_simhash on random
fingerprints, and the permutation-table index values and candidates."""
from __future__ import annotations

import array
import math
import random
import statistics
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import textgen
from neardup.core import _shingle, candidates, kernel, reference, vocabulary
from neardup.core.vocabulary import BOTTOMK, GROUPINGS, HAMMING, LOG_TF, SIMHASH, TF, UNIT, WEIGHTINGS
from neardup.core.candidates import Postings
from neardup.core.sketch_config import SketchConfig, SKETCHER_VERSION, stoplist_digest
from neardup.core.sketcher import ShingleCounts, Sketcher
from neardup.core.encoding import check_sketch, encode_sketch, validate_simhash
from neardup.core.errors import ConfigMismatch, InvalidArgument
from neardup.store import create_store
from test_sketch_golden import TEXTS

SIMHASH_CONFIG = SketchConfig(kind=SIMHASH)
#: A simhash store made before shingle weights: sketcher version 2, every distinct shingle weighing 1.
UNWEIGHTED_CONFIG = SketchConfig(kind=SIMHASH, sketcher_version=2)


def fingerprint(sketch: bytes) -> int | None:
    return int.from_bytes(sketch, "little") if sketch else None


def encode(value: int | None) -> bytes | None:
    return None if value is None else value.to_bytes(8, "little")


def article(seed: int, sentences: int = 14) -> str:
    return textgen.text(textgen.article(seed, sentences))


def edited(text: str, seed: int, words: int = 1) -> str:
    """The text with `words` of its words replaced by a word of no article."""
    rng = random.Random(seed)
    tokens = text.split()
    for position in rng.sample(range(len(tokens)), words):
        tokens[position] = f"edited{rng.randrange(10**6)}"
    return " ".join(tokens)


# ---- the sketcher ----------------------------------------------------------------------------------------------

def test_a_simhash_sketch_is_8_little_endian_bytes_and_identical_texts_have_identical_ones():
    sketcher = Sketcher(SIMHASH_CONFIG)
    sketch = sketcher.sketch(article(1))
    assert len(sketch) == 8
    assert Sketcher(SIMHASH_CONFIG).sketch(article(1)) == sketch
    assert sketcher.sketch(article(1).upper().replace(".", " !")) == sketch  # same normalised shingles


def test_an_edited_copy_is_near_and_unrelated_texts_are_far():
    sketcher = Sketcher(SIMHASH_CONFIG)
    one_word, five_words, unrelated = [], [], []
    for seed in range(40):
        original = fingerprint(sketcher.sketch(article(seed, 30)))
        one_word.append(reference.hamming(original, fingerprint(sketcher.sketch(edited(article(seed, 30), seed)))))
        five_words.append(reference.hamming(original, fingerprint(sketcher.sketch(
            edited(article(seed, 30), seed, 5)))))
        unrelated.append(reference.hamming(original, fingerprint(sketcher.sketch(article(1000 + seed, 30)))))
    # ~400 word 3-grams: one word changes 3 of them (cosine ~0.99, ~3 % of the bits expected to differ)
    assert statistics.mean(one_word) < 3 and sum(d <= 3 for d in one_word) >= 30
    assert statistics.mean(one_word) < statistics.mean(five_words) < 12
    assert 24 < statistics.mean(unrelated) < 40 and min(unrelated) > 12


def shingle_crcs(sketcher: Sketcher, text: str, lang: str | None = None) -> list[int]:
    """The text's shingle hashes in text order, repeats included, hashed apart from the sketcher (zlib)."""
    return [zlib.crc32(shingle.encode()) for shingle in sketcher.shingles(text, lang)]


def repetitive(seed: int) -> str:
    """An article whose sentences repeat unevenly (a chorus, a repeated dateline): shingles with counts 1 to 9."""
    sentences = textgen.article(seed, 12)
    rng = random.Random(seed)
    return textgen.text([s for s in sentences for _ in range(rng.choice([1, 1, 1, 2, 3, 9]))])


@pytest.mark.parametrize("unit", ["word:3", "word:1", "sentence", "para-sentence"])
@pytest.mark.parametrize("config", [SIMHASH_CONFIG, UNWEIGHTED_CONFIG], ids=["current", "version-2"])
def test_the_fingerprint_is_reference_simhash_of_the_texts_shingles(unit, config):
    """Generated and real texts (several languages), with and without repeats: the sketcher's fingerprint is the
    slow reference's of the shingle hashes (repeats included) under the configuration's weighting."""
    sketcher = Sketcher(SketchConfig(unit=unit, kind=SIMHASH, sketcher_version=config.sketcher_version))
    texts = [(article(seed), None) for seed in range(3)] + [(repetitive(seed), None) for seed in range(3)]
    texts += [(text, lang) for lang, text in TEXTS.items()]
    for text, lang in texts:
        expected = reference.simhash(shingle_crcs(sketcher, text, lang), weighting=config.weighting)
        assert fingerprint(sketcher.sketch(text, lang)) == expected


def test_the_current_weighting_is_log_tf_and_version_2_is_unweighted():
    assert (SIMHASH_CONFIG.sketcher_version, SIMHASH_CONFIG.weighting) == (3, LOG_TF)
    assert (UNWEIGHTED_CONFIG.sketcher_version, UNWEIGHTED_CONFIG.weighting) == (2, UNIT)
    assert SketchConfig().weighting is None and SketchConfig().sketcher_version == SKETCHER_VERSION == 2


def test_a_repeated_sentence_moves_the_weighted_fingerprint_but_not_the_unweighted_one():
    sentences = textgen.article(5, 20)
    base = textgen.text(sentences)
    repeated = textgen.text(sentences[:4] + [sentences[3]] * 4 + sentences[4:])  # sentence 3 five times in a row
    # sentence shingles: both texts have the same distinct shingles, only one count differs
    new, old = (SketchConfig(unit="sentence", kind=SIMHASH, sketcher_version=v) for v in (3, 2))
    assert Sketcher(new).hashes(repeated) == Sketcher(new).hashes(base)
    assert Sketcher(old).sketch(repeated) == Sketcher(old).sketch(base)
    assert Sketcher(new).sketch(repeated) != Sketcher(new).sketch(base)
    # word 3-grams: the repeats' counts move tf and log-tf fingerprints; weight 1 sees only the distinct shingles
    sketcher = Sketcher(SIMHASH_CONFIG)
    counts = sketcher.hash_counts(repeated)
    once = ShingleCounts(counts.hashes, array.array("I", [1] * (len(counts.counts) // 4)).tobytes())
    assert max(count for _, count in counts.items()) == 5
    assert sketcher.sketch_counts(counts, UNIT) == sketcher.sketch_counts(once, UNIT) == \
        Sketcher(UNWEIGHTED_CONFIG).sketch(repeated)
    for weighting in (TF, LOG_TF):
        assert sketcher.sketch_counts(counts, weighting) != sketcher.sketch_counts(once, weighting)
    assert sketcher.sketch(repeated) == sketcher.sketch_counts(counts, LOG_TF)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 2**32 - 1), max_size=300), st.sets(st.integers(0, 2**32 - 1), max_size=30))
def test_compiled_simhash_equals_the_reference(values, stoplist):
    values |= set(list(stoplist)[: len(stoplist) // 2])  # some stop-listed values are in the document
    got = _shingle.simhash(values, frozenset(stoplist))
    for weighting in WEIGHTINGS:  # each value once: every weighting gives the same fingerprint
        assert fingerprint(got) == reference.simhash(values, stoplist, weighting=weighting)
    assert got == _shingle.simhash(list(values) * 2, frozenset(stoplist))  # repeats weigh nothing
    assert len(got) in (0, 8)


def stop_array(stoplist) -> bytes:
    return array.array("I", sorted(stoplist)).tobytes()


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**32 - 1), max_size=200), st.data())
def test_compiled_weighted_simhash_equals_the_reference(distinct, data):
    """Random hashes with random repeats (counts up to 2**32 - 1) and a stop-list, under every weighting."""
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    shingles = [value for value in distinct for _ in range(rng.choice([1, 1, 1, 2, 3, 7, 40]))]
    stoplist = set(rng.sample(distinct, min(len(distinct), rng.randrange(4)))) | {rng.getrandbits(32)}
    counts = ShingleCounts.of(shingles)
    assert dict(counts.items()) == {value: shingles.count(value) for value in set(shingles)}
    for code, weighting in enumerate(WEIGHTINGS):
        got = _shingle.simhash_counts(counts.hashes, counts.counts, stop_array(stoplist), code)
        assert fingerprint(got) == reference.simhash(shingles, stoplist, weighting=weighting)
        assert len(got) in (0, 8)
    if distinct:  # huge counts: weights without overflow, the same as the reference's
        huge = array.array("I", [rng.choice([1, 2**31, 2**32 - 1, rng.getrandbits(32) or 1])
                                 for _ in counts.items()])
        pairs = dict(zip(array.array("I", counts.hashes), huge))
        for code, weighting in enumerate(WEIGHTINGS):
            votes = [0] * 64
            for value, count in pairs.items():
                spread, weight = reference.splitmix64(value), reference.shingle_weight(count, weighting)
                for bit in range(64):
                    votes[bit] += weight if spread >> bit & 1 else -weight
            expected = sum(1 << bit for bit in range(64) if votes[bit] > 0)
            assert fingerprint(_shingle.simhash_counts(counts.hashes, huge.tobytes(), b"", code)) == expected


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 7, 10, 99, 1000, 65535, 2**20 + 1, 2**31, 2**32 - 1])
def test_the_log_tf_weight_is_1_plus_ln_count_in_16_bit_fixed_point(count):
    weight = reference.shingle_weight(count, LOG_TF)
    assert abs(weight / reference.WEIGHT_ONE - (1 + math.log(count))) < 2**-14
    assert reference.shingle_weight(count, TF) == count and reference.shingle_weight(count, UNIT) == 1


def test_log_tf_weights_grow_with_the_count():
    weights = [reference.shingle_weight(count, LOG_TF) for count in range(1, 5000)]
    assert weights[0] == reference.WEIGHT_ONE and all(a < b for a, b in zip(weights, weights[1:]))


def test_the_compiled_weighted_simhash_refuses_malformed_input():
    counts = ShingleCounts.of([5, 6, 6])
    with pytest.raises(ValueError, match="strictly ascending"):
        _shingle.simhash_counts(counts.hashes[::-1], counts.counts, b"", 0)
    with pytest.raises(ValueError, match="counts at least 1"):
        _shingle.simhash_counts(counts.hashes, bytes(len(counts.counts)), b"", 0)
    with pytest.raises(ValueError, match="one per hash"):
        _shingle.simhash_counts(counts.hashes, counts.counts[:4], b"", 0)
    with pytest.raises(ValueError, match="weighting must be"):
        _shingle.simhash_counts(counts.hashes, counts.counts, b"", 3)
    assert _shingle.simhash_counts(b"", b"", b"", 2) == b""


def test_the_stop_list_is_respected():
    sketcher = Sketcher(SIMHASH_CONFIG)
    document = sketcher.hashes(article(3))
    boilerplate = sketcher.hashes(article(4, 30))
    stoplist = frozenset(boilerplate)
    with_stoplist = Sketcher(SketchConfig(kind=SIMHASH, stoplist_digest=stoplist_digest(stoplist)), stoplist)
    # stop-listed shingles weigh 0: the fingerprint is that of the document's own shingles
    assert with_stoplist.sketch_hashes(document | boilerplate) == sketcher.sketch_hashes(document)
    assert sketcher.sketch_hashes(document | boilerplate) != sketcher.sketch_hashes(document)
    assert with_stoplist.sketch_hashes(boilerplate) == b""  # nothing left: no fingerprint
    # and weighted, from the text: a repeated boilerplate paragraph weighs nothing either
    text, footer = repetitive(3), article(4, 30)
    assert with_stoplist.sketch(text + " " + footer + " " + footer) == \
        with_stoplist.sketch_counts(ShingleCounts.of(v for v in shingle_crcs(sketcher, text + " " + footer)
                                                     if v not in stoplist))
    assert with_stoplist.sketch(footer) == b""


def test_a_text_without_shingles_has_an_empty_sketch():
    sketcher = Sketcher(SIMHASH_CONFIG)
    assert sketcher.sketch("") == sketcher.sketch("... !!! ---") == b""
    assert len(sketcher.sketch("one")) == 8


def test_a_value_over_32_bits_is_refused():
    with pytest.raises(OverflowError):
        _shingle.simhash({2**32}, frozenset())


#: Fingerprints of fixed texts: a change of the SimHash rules (hash spreading, votes, weights, byte order) fails
#: here, as test_sketch_golden.py fails for bottom-K values; a simhash store made by other rules would compare
#: wrongly. Version 2 (unweighted) is what simhash stores made before weights hold: it must never change.
GOLDEN = {
    (2, "word:3", 1): "7e9c0e3057d3a9e6",
    (2, "word:3", 2): "6786dd7a211d4ed4",
    (2, "sentence", 1): "b2836067ef125700",
    (2, "word:1", 1): "5e378454bf00ee6f",
    (3, "word:3", 1): "7e9c0e3057d3a9e6",  # no 3-gram of this text repeats: the same as version 2
    (3, "word:1", 1): "5c378c549f00ee6f",
    (3, "word:3", "repetitive"): "788e8eb057d36de6",
    (3, "sentence", "repetitive"): "bbe373f7ffb6d758",
}


@pytest.mark.parametrize("version, unit, seed", list(GOLDEN))
def test_golden_fingerprints(version, unit, seed):
    text = repetitive(1) if seed == "repetitive" else article(seed)
    config = SketchConfig(unit=unit, kind=SIMHASH, sketcher_version=version)
    assert Sketcher(config).sketch(text).hex() == GOLDEN[version, unit, seed]


def test_splitmix64_is_the_published_function():
    """splitmix64 seeded with 0 (the state before the first increment) yields 0xE220A8397B1DCDAF first."""
    assert reference.splitmix64(0) == 0xE220A8397B1DCDAF


# ---- configuration and sketch checks -----------------------------------------------------------------------------

def test_the_sketcher_version_decides_the_weighting_and_is_part_of_the_configuration(tmp_path):
    saved = UNWEIGHTED_CONFIG.to_dict()
    assert saved["sketcher_version"] == 2 and SketchConfig.from_dict(saved) == UNWEIGHTED_CONFIG
    assert SketchConfig.from_dict(SIMHASH_CONFIG.to_dict()).weighting == LOG_TF
    with pytest.raises(ConfigMismatch, match=r"sketcher_version=3 \(store: 2\)"):
        UNWEIGHTED_CONFIG.require_equal(SIMHASH_CONFIG, "the request's sketch")
    for unknown in (SketchConfig(kind=SIMHASH, sketcher_version=4), SketchConfig(sketcher_version=3)):
        with pytest.raises(ConfigMismatch, match=f"sketches by the rules of version.*, not of version "
                                                 f"{unknown.sketcher_version}$"):
            Sketcher(unknown)
    with pytest.raises(ConfigMismatch, match="this neardup makes simhash sketches with versions 2 and 3"):
        create_store(tmp_path / "s", SketchConfig(kind=SIMHASH, sketcher_version=1), [])


def test_the_kind_is_part_of_the_configuration():
    assert SketchConfig().kind == BOTTOMK
    saved = {key: value for key, value in SketchConfig().to_dict().items() if key != "kind"}
    assert SketchConfig.from_dict(saved) == SketchConfig()  # a store made before kinds existed: bottom-K
    assert SketchConfig.from_dict(SIMHASH_CONFIG.to_dict()) == SIMHASH_CONFIG
    with pytest.raises(ConfigMismatch, match=r"kind='simhash' \(store: 'bottomk'\)"):
        SketchConfig().require_equal(SIMHASH_CONFIG)
    with pytest.raises(InvalidArgument, match="unknown sketch kind 'minhash'; use 'bottomk' or 'simhash'"):
        SketchConfig(kind="minhash")
    with pytest.raises(InvalidArgument, match="a simhash sketch is one 64-bit fingerprint: leave k at its default"):
        SketchConfig(kind=SIMHASH, k=64)


def test_sketch_bytes_are_checked_per_kind():
    assert check_sketch(bytes(8), SIMHASH_CONFIG) == bytes(8)
    assert check_sketch(b"", SIMHASH_CONFIG) == b""
    for bad in (bytes(4), bytes(7), bytes(16)):
        with pytest.raises(InvalidArgument, match=f"a simhash sketch is 8 bytes .* got {len(bad)} bytes"):
            validate_simhash(bad)
    assert check_sketch(encode_sketch([1, 2]), SketchConfig()) == encode_sketch([1, 2])
    with pytest.raises(InvalidArgument, match="strictly ascending"):
        check_sketch(encode_sketch([2, 1]), SketchConfig())


# ---- threshold ↔ distance -------------------------------------------------------------------------------------

@pytest.mark.parametrize("threshold, distance", [
    (61 / 64, 3), (0.95, 3), (0.953125, 3), (0.9532, 2), (60 / 64, 4), (1.0, 0), (0.99, 0), (0.0, 64), (-1.0, 64),
    (1e-300, 63), (1.01, -1), (0.5, 32)])
def test_max_distance(threshold, distance):
    assert reference.max_distance(threshold) == distance


@given(st.floats(-0.5, 1.5))
def test_max_distance_is_the_largest_distance_whose_similarity_reaches_the_threshold(threshold):
    most = reference.max_distance(threshold)
    for d in range(65):
        assert ((64 - d) / 64 >= threshold) == (d <= most)


# ---- the kernel against the reference -------------------------------------------------------------------------

@st.composite
def fingerprint_sets(draw):
    """Ranked sets of fingerprints: copies of a few bases with a few bits flipped, unrelated ones, and results
    without a fingerprint (None, or an empty sketch)."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    n = draw(st.integers(0, 150))
    bases = [rng.getrandbits(64) for _ in range(draw(st.integers(1, 6)))]
    fingerprints: list[int | None] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.08:
            fingerprints.append(None)
        elif roll < 0.2:
            fingerprints.append(rng.getrandbits(64))
        else:
            value = rng.choice(bases)
            for bit in rng.sample(range(64), rng.choice([0, 1, 2, 3, 3, 4, 5, 8, 20])):
                value ^= 1 << bit
            fingerprints.append(value)
    return fingerprints


thresholds = st.one_of(st.sampled_from([-0.5, 0.0, 0.5, 0.8, 0.9, 60 / 64, 61 / 64, 0.95, 62 / 64, 1.0, 1.5]),
                       st.floats(0.0, 1.0))


def assert_same(fingerprints, threshold, grouping):
    expected = reference.dedup_simhash(fingerprints, threshold, grouping)
    sketches = [encode(f) if f is not None or position % 2 else b"" for position, f in enumerate(fingerprints)]
    got = kernel.dedup_simhash(sketches, threshold, grouping)
    assert got == expected
    assert all(type(value) is float for value in got.similarity)
    return got


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=300, deadline=None)
@given(fingerprint_sets(), thresholds, st.sampled_from(GROUPINGS))
def test_kernel_equals_reference_on_random_fingerprints(fingerprints, threshold, grouping):
    assert_same(fingerprints, threshold, grouping)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("grouping", GROUPINGS)
def test_two_thousand_results_cross_many_matrix_words(grouping):
    rng = random.Random(7)
    bases = [rng.getrandbits(64) for _ in range(300)]
    fingerprints = [rng.choice(bases) ^ (1 << rng.randrange(64)) if rng.random() < 0.7 else rng.getrandbits(64)
                    for _ in range(2000)]
    got = assert_same(fingerprints, 61 / 64, grouping)
    assert sum(d >= 0 for d in got.duplicate_of) > 500


def test_similarity_is_one_minus_distance_over_64():
    a = 0
    got = kernel.dedup_simhash([encode(a), encode(0b111), encode(0b1111), encode(2**64 - 1)], 0.0, "greedy")
    assert got.duplicate_of == [-1, 0, 0, 0]
    assert got.similarity == [0.0, 61 / 64, 60 / 64, 0.0]
    assert kernel.dedup_simhash([encode(a), encode(0b1111)], 61 / 64, "greedy").duplicate_of == [-1, -1]


def test_the_groupings_differ_on_a_chain():
    """A ~ B (3 bits), B ~ C (3 bits), A ≁ C (6 bits): greedy keeps C (B is dropped), components chains all
    three, complete keeps C in a group of its own."""
    a, b, c = 0, 0b111, 0b111111
    sketches = [encode(a), encode(b), encode(c)]
    assert kernel.dedup_simhash(sketches, 61 / 64, "greedy").duplicate_of == [-1, 0, -1]
    assert kernel.dedup_simhash(sketches, 61 / 64, "components").duplicate_of == [-1, 0, 0]
    assert kernel.dedup_simhash(sketches, 61 / 64, "complete").duplicate_of == [-1, 0, -1]


def test_results_without_a_fingerprint_are_never_duplicates():
    got = kernel.dedup_simhash([None, b"", encode(5), b"", encode(5), None], 0.0, "components")
    assert got.duplicate_of == [-1, -1, -1, -1, 2, -1]


@pytest.mark.parametrize("bad, error, message", [
    ([bytes(4)], ValueError, "sketch 0 is 4 bytes long; a SimHash sketch is 8"),
    ([encode(1), "x"], TypeError, "sketch 1 must be bytes or None"),
])
def test_malformed_sketches_are_refused(bad, error, message):
    with pytest.raises(error, match=message):
        kernel.dedup_simhash(bad, 0.9, "greedy")


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="finite"):
        kernel.dedup_simhash([], math.nan, "greedy")
    with pytest.raises(ValueError, match="unknown grouping 'best'"):
        kernel.dedup_simhash([], 0.9, "best")
    with pytest.raises(ValueError, match="max_distance must be in -1..64"):
        kernel._kernel.dedup_simhash([], 65, 0)


def test_similar_simhash_equals_a_scan():
    rng = random.Random(3)
    query = rng.getrandbits(64)
    others = [query ^ sum(1 << bit for bit in rng.sample(range(64), rng.randrange(12))) for _ in range(300)]
    sketches = [encode(value) for value in others] + [b""]
    for threshold in (0.0, 0.8, 61 / 64, 1.0, 1.5):
        expected = [(position, reference.hamming_similarity(query, value)) for position, value in enumerate(others)
                    if reference.hamming(query, value) <= reference.max_distance(threshold)]
        assert kernel.similar_simhash(encode(query), sketches, threshold) == expected
    assert kernel.similar_simhash(b"", sketches, 0.0) == []


# ---- permutation tables ----------------------------------------------------------------------------------------

def test_index_values_per_kind():
    bottom = candidates.index_values([encode_sketch([1, 5, 9]), b"", encode_sketch(range(20))], BOTTOMK)
    assert bottom.values.tolist() == [1, 5, 9, *range(20)]
    assert bottom.lengths.tolist() == [3, 0, 20] and bottom.length_class.tolist() == [3, 0, 0]
    value = 0x1234_5678_9ABC_DEF0
    keys = candidates.index_values([encode(value), b"", encode(0)], SIMHASH)
    assert keys.values.tolist() == [0xDEF0, 1 << 16 | 0x9ABC, 2 << 16 | 0x5678, 3 << 16 | 0x1234, 0, 1 << 16,
                                    2 << 16, 3 << 16]
    assert keys.lengths.tolist() == [4, 0, 4] and not keys.length_class.any()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**64 - 1), st.lists(st.integers(0, 63), max_size=3, unique=True))
def test_fingerprints_within_3_bits_share_an_index_value(value, bits):
    other = value ^ sum(1 << bit for bit in bits)
    keys = candidates.index_values([encode(value), encode(other)], SIMHASH).values
    assert set(keys[:4].tolist()) & set(keys[4:].tolist())


def postings_of(query: int, stored: list[int]) -> Postings:
    """The postings a store would read for query, over stored fingerprints numbered 0.. (exhaustively)."""
    keys = candidates.index_values([encode(value) for value in stored], SIMHASH).values.reshape(-1, 4)
    query_keys = candidates.index_values([encode(query)], SIMHASH).values
    value_index, docno = np.nonzero(keys.T == query_keys[:, None])
    return Postings(value_index, docno.astype(np.uint32), np.zeros(len(docno), np.uint8))


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_simhash_candidates_hold_every_article_within_3_bits_and_say_when_they_cannot():
    rng = random.Random(5)
    query = rng.getrandbits(64)
    stored = [query ^ sum(1 << bit for bit in rng.sample(range(64), rng.randrange(10))) for _ in range(2000)]
    postings = postings_of(query, stored)
    for threshold, exact in ((61 / 64, True), (62 / 64, True), (1.0, True), (60 / 64, False), (0.5, False)):
        found = candidates.simhash_candidates(postings, threshold)
        within = {docno for docno, value in enumerate(stored)
                  if reference.hamming(query, value) <= reference.max_distance(threshold)}
        assert found.exact == exact
        if exact:
            assert within <= set(found.docnos.tolist())
        # an article agreeing on c blocks differs in at least 4 - c bits: the bound drops nothing it should keep
        assert {d for d in within if d in set(postings.docno.tolist())} <= set(found.docnos.tolist())
    found = candidates.simhash_candidates(postings, 61 / 64, max_candidates=10)
    assert not found.exact and len(found.docnos) == 10
    assert candidates.simhash_candidates(postings, 61 / 64, exclude=int(found.docnos[0])).docnos.tolist().count(
        int(found.docnos[0])) == 0
    assert (candidates.simhash_candidates(postings, 61 / 64, above=1000).docnos > 1000).all()


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**64 - 1), st.lists(st.tuples(st.integers(0, 5000), st.integers(0, 64)), max_size=80,
                                           unique_by=lambda article: article[0]),
       st.sampled_from([0.0, 0.5, 46 / 64, 0.9, 61 / 64, 1.0, 1.5]), st.integers(-1, 5000), st.integers(-1, 5000))
def test_simhash_scan_finds_every_article_within_the_distance(query, articles, threshold, exclude, above):
    """The exact scan against a brute force over every stored fingerprint (some empty: no shingles), with the
    query's own docno left out and the pairs' `above`."""
    rng = random.Random(query)
    stored = {docno: query ^ sum(1 << bit for bit in rng.sample(range(64), bits)) for docno, bits in articles}
    empty = {docno for docno in stored if docno % 7 == 0}
    fingerprints = candidates.Fingerprints.of((docno, b"" if docno in empty else encode(stored[docno]))
                                           for docno in sorted(stored))
    found = candidates.simhash_scan(fingerprints, encode(query), threshold, exclude=exclude, above=above)
    expected = sorted((reference.hamming(query, value), docno) for docno, value in stored.items()
                      if docno not in empty and docno != exclude and docno > above
                      and reference.hamming(query, value) <= reference.max_distance(threshold))
    assert found.exact and found.docnos.tolist() == [docno for _, docno in expected]
    nearest = candidates.simhash_scan(fingerprints, encode(query), threshold, exclude=exclude, above=above,
                                   max_candidates=3)
    assert nearest.docnos.tolist() == [docno for _, docno in expected[:3]] and nearest.exact == (len(expected) <= 3)
    assert candidates.simhash_scan(fingerprints, b"", threshold).docnos.tolist() == []


def test_simhash_scan_refuses_what_is_no_fingerprint():
    fingerprints = candidates.Fingerprints.of([(0, encode(5))])
    with pytest.raises(ValueError, match="SimHash sketch is 8"):
        candidates.simhash_scan(fingerprints, b"123", 0.5)
    with pytest.raises(ValueError, match="not a multiple of 8"):
        candidates._kernel.scan_simhash(b"1234567", encode(5), 3)
    assert candidates.simhash_tables_suffice(61 / 64) and not candidates.simhash_tables_suffice(60 / 64)


def test_hamming_is_a_metric_of_simhash_stores_only():
    assert vocabulary.KIND_METRICS == {BOTTOMK: ("containment", "jaccard", "mutual"), SIMHASH: (HAMMING,),
                                      vocabulary.ITEMS: (vocabulary.FIELDS,)}
    assert set(vocabulary.METRICS) == {"containment", "jaccard", "mutual", HAMMING, vocabulary.FIELDS}
