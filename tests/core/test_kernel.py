"""The compiled kernel must answer exactly what reference.dedup (the card's algorithm) answers.

Property tests build result sets the way real ones look (edited copies and excerpts of a few documents, so
that real duplicates occur), adversarial tests the shapes that break candidate generation and grouping,
and direct tests pin down a few hand-computed similarities.
"""
from __future__ import annotations

import math
import random
import struct
import sys
import threading
import time

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from neardup.core import _kernel, kernel, reference
from neardup.core.vocabulary import BOTTOMK_METRICS as METRICS
from neardup.core.vocabulary import COMPLETE, COMPONENTS, CONTAINMENT, GREEDY, GROUPINGS, JACCARD, MUTUAL
from neardup.core.reference import Grouping
from sketches import random_values

ALL_WAYS = [(metric, grouping) for metric in METRICS for grouping in GROUPINGS]


def encode(values):
    return struct.pack(f"<{len(values)}I", *values)


def assert_same(sketches, k, threshold, metric, grouping):
    """Runs both implementations on the same set (None kept as None) and compares every field exactly."""
    expected = reference.dedup(sketches, k, threshold, metric, grouping)
    got = kernel.dedup([None if s is None else encode(s) for s in sketches], k, threshold, metric, grouping)
    assert isinstance(got, Grouping)
    assert got == expected
    assert all(type(value) is float for value in got.similarity)
    return got


# ---- property tests against the reference ----

@st.composite
def result_sets(draw):
    """A ranked result set: sketches of a few base documents, each copy edited, cut to an excerpt, or new."""
    rng = random.Random(draw(st.integers(0, 2**32)))  # fast; hypothesis shrinks the sizes below
    k = draw(st.integers(1, 128))
    n = draw(st.integers(0, 120))
    # A small universe makes unrelated documents share values (candidates that are not duplicates).
    universe = draw(st.sampled_from([3 * k, 20 * k, 1 << 32]))
    bases = [{rng.randrange(universe) for _ in range(rng.randint(0, 3 * k))} for _ in range(draw(st.integers(1, 5)))]
    sketches = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.05:
            sketches.append(None)
            continue
        base = sorted(rng.choice(bases))
        if roll < 0.15:
            document = {rng.randrange(universe) for _ in range(rng.randint(0, 2 * k))}
        elif roll < 0.3:
            document = set(rng.sample(base, rng.randint(0, len(base))))
        else:
            edits = rng.randint(0, max(1, len(base) // 5))
            kept = rng.sample(base, max(0, len(base) - rng.randint(0, edits)))
            document = set(kept) | {rng.randrange(universe) for _ in range(rng.randint(0, edits))}
        sketches.append(sorted(document)[:k])
    return sketches, k


thresholds = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0.8]), st.floats(0.0, 1.0))


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_sets(), thresholds, st.sampled_from(METRICS), st.sampled_from(GROUPINGS))
def test_equals_reference_on_random_sets(case, threshold, metric, grouping):
    sketches, k = case
    got = assert_same(sketches, k, threshold, metric, grouping)
    event(f"duplicates: {'none' if max(got.duplicate_of, default=-1) < 0 else 'some'}")
    event(f"results: {'over 64' if len(sketches) > 64 else 'up to 64'}")


@settings(max_examples=100, derandomize=True, deadline=None)
@given(result_sets(), st.sampled_from(METRICS))
def test_similarity_equals_reference(case, metric):
    sketches, k = case
    present = [s for s in sketches if s is not None]
    for a, b in zip(present, present[1:]):
        assert kernel.similarity(encode(a), encode(b), k, metric) == reference.similarity(a, b, k, metric)


@settings(max_examples=100, derandomize=True, deadline=None)
@given(result_sets(), thresholds, st.sampled_from(METRICS))
def test_the_references_merge_decides_what_its_similarity_says(case, threshold, metric):
    """reference.is_duplicate's early-terminating merge keeps exactly the pairs whose similarity reaches the
    threshold and that share a value (what tests/brute.py's exhaustive scans keep, from the similarity alone)."""
    sketches, k = case
    present = [s for s in sketches if s is not None]
    for a, b in zip(present, present[1:]):
        score = reference.similarity(a, b, k, metric)
        assert reference.is_duplicate(a, b, k, metric, threshold) == (score > 0 and score >= threshold)


# ---- adversarial sets ----

def _adversarial_sets():
    rng = random.Random(7)
    k = 16
    one = random_values(rng, k)
    long_one = random_values(rng, 400)
    return {
        "no results": ([], k),
        "one result": ([one], k),
        "one None": ([None], k),
        "all None": ([None] * 5, k),
        "all empty": ([[]] * 5, k),
        "all identical": ([one] * 70, k),
        "all disjoint": ([random_values(rng, k) for _ in range(70)], k),
        "k = 1": ([[v] for v in (5, 5, 7, 5, 9, 7)] + [[]], 1),
        "uneven lengths": ([one[:3], one, one[:1], one[5:], one[:k - 1], [], one[::2], None, one], k),
        "one shared boilerplate value": ([sorted({1} | set(random_values(rng, k - 1))) for _ in range(150)], k),
        "two rank words": ([one if i % 37 == 0 else random_values(rng, k) for i in range(130)], k),
        # more shared values than a pair's count byte holds: those pairs are merged
        "counts past 254": ([long_one, long_one[:260], long_one[30:], random_values(rng, 400), long_one[::2]], 400),
    }


ADVERSARIAL = _adversarial_sets()


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("name", ADVERSARIAL)
@pytest.mark.parametrize("metric, grouping", ALL_WAYS)
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.9, 1.0])
def test_adversarial_sets(name, metric, grouping, threshold):
    sketches, k = ADVERSARIAL[name]
    assert_same(sketches, k, threshold, metric, grouping)


@pytest.mark.parametrize("grouping", GROUPINGS)
def test_thresholds_outside_0_1(grouping):
    """Above 1 nothing is a duplicate; at or below 0 any shared value is enough (containment as the reference)."""
    rng = random.Random(3)
    sketches = [random_values(rng, 8) for _ in range(5)] * 2
    blobs = [encode(s) for s in sketches]
    for metric in METRICS:
        assert kernel.dedup(blobs, 8, 1.5, metric, grouping).duplicate_of == [-1] * 10
    assert_same(sketches, 8, -0.5, CONTAINMENT, grouping)


@pytest.fixture(scope="module")
def ten_thousand_disjoint():
    rng = random.Random(11)
    return [encode(sorted(rng.getrandbits(32) for _ in range(64))) for _ in range(10_000)]


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("metric, grouping", [way for way in ALL_WAYS if way[1] != COMPLETE or way[0] == CONTAINMENT])
def test_ten_thousand_results(metric, grouping, ten_thousand_disjoint):
    """Complete linkage compares each result with every member of its group, the same loop whatever the metric
    (each metric's comparisons are held to the reference above): at this size, with one metric only."""
    identical = kernel.dedup([ten_thousand_disjoint[0]] * 10_000, 64, 0.9, metric, grouping)
    assert identical.duplicate_of == [-1] + [0] * 9_999
    assert identical.group == [0] * 10_000
    assert identical.similarity == [0.0] + [1.0] * 9_999
    disjoint = kernel.dedup(ten_thousand_disjoint, 64, 0.9, metric, grouping)
    assert disjoint.duplicate_of == [-1] * 10_000
    assert disjoint.group == list(range(10_000))


def test_sets_too_large_to_count_are_merged():
    """Past COUNTED_MAX_RESULTS the kernel merges every candidate pair; Nones in front shift positions only."""
    rng = random.Random(5)
    base = random_values(rng, 32)
    tail = [base, base[:20], random_values(rng, 32), sorted(set(base[:28]) | {1, 2, 3}), base[5:], None, base]
    padding = _kernel.COUNTED_MAX_RESULTS + 1 - len(tail)
    for metric, grouping in ALL_WAYS:
        expected = reference.dedup(tail, 32, 0.5, metric, grouping)
        got = kernel.dedup([None] * padding + [None if s is None else encode(s) for s in tail], 32, 0.5,
                           metric, grouping)
        assert got.duplicate_of[padding:] == [-1 if d < 0 else d + padding for d in expected.duplicate_of]
        assert got.group[padding:] == [g + padding for g in expected.group]
        assert got.similarity[padding:] == expected.similarity
        assert max(got.duplicate_of) > 0


# ---- hand-checked expectations ----

def test_excerpt_is_contained_but_not_similar():
    """A full sketch (cap 64) and a short complete excerpt of it: every excerpt value lies below the cap."""
    article = list(range(1, 65))
    excerpt = [2, 4, 6, 8, 10]
    assert kernel.similarity(encode(article), encode(excerpt), 64, CONTAINMENT) == 1.0
    assert kernel.similarity(encode(article), encode(excerpt), 64, JACCARD) == 5 / 64
    sketches = [encode(article), encode(excerpt)]
    assert kernel.dedup(sketches, 64, 0.8, CONTAINMENT) == Grouping([-1, 0], [0.0, 1.0], [0, 0])
    assert kernel.dedup(sketches, 64, 0.8, JACCARD) == Grouping([-1, -1], [0.0, 0.0], [0, 1])


def test_mutual_is_the_smaller_containment():
    """A text and a version that adds a clause: the text is all in the version (containment 1), the version only
    three quarters in the text; jaccard counts the shared values over the union instead."""
    text, version = encode(range(1, 49)), encode(range(1, 65))
    assert kernel.similarity(text, version, 128, CONTAINMENT) == 1.0
    assert kernel.similarity(text, version, 128, MUTUAL) == 0.75
    assert kernel.similarity(version, text, 128, MUTUAL) == 0.75
    # the version with one value edited: against the text, mutual 47 / 64, jaccard 47 / 65
    edited = encode([*range(2, 65), 99])
    assert kernel.similarity(text, edited, 128, MUTUAL) == 47 / 64
    assert kernel.similarity(text, edited, 128, JACCARD) == 47 / 65
    sketches = [text, version, edited]
    assert kernel.dedup(sketches, 128, 0.73, MUTUAL) == Grouping([-1, 0, 0], [0.0, 0.75, 47 / 64], [0, 0, 0])
    assert kernel.dedup(sketches, 128, 0.76, MUTUAL) == Grouping([-1, -1, 1], [0.0, 0.0, 63 / 64], [0, 1, 1])


def test_short_sketch_is_complete():
    """[1, 2, 3] under K=4 holds all of its document, so only the full sketch is cut (at its cap, 4)."""
    assert kernel.similarity(encode([1, 2, 3]), encode([1, 2, 3, 4]), 4, JACCARD) == 0.75
    # Under K=3 both are samples cut at 3: they agree on everything compared.
    assert kernel.similarity(encode([1, 2, 3]), encode([1, 2, 3]), 3, JACCARD) == 1.0


def test_values_above_the_smaller_cap_are_not_compared():
    # tau = min(13, 30) = 13: a' = [1, 5, 9, 13], b' = [1, 5], two shared values; containment divides by the
    # floor min(MIN_EVIDENCE, 4, 4) = 4 rather than by |b'| = 2.
    a, b = encode([1, 5, 9, 13]), encode([1, 5, 20, 30])
    assert kernel.similarity(a, b, 4, CONTAINMENT) == 0.5
    assert kernel.similarity(a, b, 4, JACCARD) == 0.5


def test_a_thin_sample_does_not_claim_containment():
    """A long text's full sketch (K=64, cap 640) and a short complete one of 40 values: only the short one's
    values below 640 are compared. Two of two shared read 2 / MIN_EVIDENCE, not 1.0; MIN_EVIDENCE of them
    shared is full containment again."""
    assert reference.MIN_EVIDENCE == 16
    article = encode([10 * i for i in range(1, 65)])
    thin = encode([10, 20] + [1000 + i for i in range(38)])
    enough = encode([10 * i for i in range(1, 17)] + [1000 + i for i in range(24)])
    assert kernel.similarity(article, thin, 64, CONTAINMENT) == 2 / 16
    assert kernel.similarity(article, enough, 64, CONTAINMENT) == 1.0
    assert kernel.dedup([article, thin, enough], 64, 0.5, CONTAINMENT) == Grouping([-1, -1, 0], [0.0, 0.0, 1.0],
                                                                                 [0, 1, 0])


def test_greedy_and_components_differ_on_a_chain():
    """A ~ B and B ~ C (7 of 10 shared), A and C share 4: greedy keeps C, components joins it to A's group."""
    a, b, c = encode(list(range(0, 10))), encode(list(range(3, 13))), encode(list(range(6, 16)))
    assert kernel.dedup([a, b, c], 16, 0.7, CONTAINMENT, GREEDY) == Grouping([-1, 0, -1], [0.0, 0.7, 0.0], [0, 0, 2])
    assert kernel.dedup([a, b, c], 16, 0.7, CONTAINMENT, COMPONENTS) == Grouping([-1, 0, 0], [0.0, 0.7, 0.4], [0, 0, 0])


def test_none_is_never_a_duplicate():
    x = encode([3, 1000, 70000])
    assert kernel.dedup([None, x, None, x], 8, 0.5) == Grouping([-1, -1, -1, 1], [0.0, 0.0, 0.0, 1.0], [0, 1, 2, 1])


def test_accepts_any_sequence_and_holds_its_items():
    x, y = encode([1, 2, 3]), encode([9, 10])
    expected = kernel.dedup([x, y, x], 4, 0.5)
    assert kernel.dedup((x, y, x), 4, 0.5) == expected
    assert kernel.dedup(iter([x, y, x]), 4, 0.5) == expected


def test_threads_share_the_kernel():
    rng = random.Random(5)
    sketches = [encode(random_values(rng, 64)) for _ in range(50)] * 2
    expected = kernel.dedup(sketches, 64, 0.8)
    results = []

    def work():
        results.extend(kernel.dedup(sketches, 64, 0.8) == expected for _ in range(50))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 200


# ---- bad input ----

@pytest.mark.parametrize("bad", [b"\x00\x01\x02", b"\x00" * 5])
def test_bytes_of_odd_length(bad):
    with pytest.raises(ValueError, match="multiple of 4"):
        kernel.dedup([encode([1]), bad], 4, 0.5)
    with pytest.raises(ValueError, match="multiple of 4"):
        kernel.similarity(bad, encode([1]), 4)


def test_more_than_k_values():
    with pytest.raises(ValueError, match="more than K=2"):
        kernel.dedup([encode([1, 2, 3])], 2, 0.5)
    with pytest.raises(ValueError, match="more than K=2"):
        kernel.similarity(encode([1]), encode([1, 2, 3]), 2)


@pytest.mark.parametrize("bad", [[1, 2], "abcd", 7, bytearray(b"\x00" * 4), memoryview(b"\x00" * 4)])
def test_non_bytes(bad):
    with pytest.raises(TypeError, match="bytes or None"):
        kernel.dedup([encode([1]), bad], 4, 0.5)


def test_not_a_sequence():
    with pytest.raises(TypeError):
        kernel.dedup(None, 4, 0.5)


@pytest.mark.parametrize("name, value", [("metric", "cosine"), ("grouping", "transitive"), ("metric", None),
                                         ("grouping", ["greedy"])])
def test_unknown_metric_or_grouping(name, value):
    with pytest.raises(ValueError, match=f"unknown {name}"):
        kernel.dedup([encode([1])], 4, 0.5, **{name: value})


@pytest.mark.parametrize("threshold", [math.nan, math.inf, -math.inf])
def test_threshold_not_finite(threshold):
    with pytest.raises(ValueError, match="finite"):
        kernel.dedup([encode([1])], 4, threshold)


def test_too_many_results():
    with pytest.raises(ValueError, match="more than"):
        kernel.dedup([None] * ((1 << 20) + 1), 4, 0.5)


@pytest.mark.parametrize("k", [0, -3])
def test_k_below_1(k):
    with pytest.raises(ValueError, match="at least 1"):
        kernel.dedup([], k, 0.5)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=100, derandomize=True, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=12), max_size=40), st.integers(12, 14),
       thresholds, st.sampled_from(METRICS), st.sampled_from(GROUPINGS))
def test_unsorted_values_do_not_crash(sketches, k, threshold, metric, grouping):
    """Unsorted or repeated values break the contract; any answer will do, but a well-formed one."""
    got = kernel.dedup([encode(s) for s in sketches], k, threshold, metric, grouping)
    n = len(sketches)
    assert len(got.duplicate_of) == len(got.similarity) == len(got.group) == n
    assert all(-1 <= d < n and 0 <= g < n for d, g in zip(got.duplicate_of, got.group))


def test_complete_grouping_keeps_only_groups_whose_members_all_duplicate_each_other():
    """B and C both copy half of A, each a different half: greedy and components put C with A and B, complete
    keeps C apart because C is no near-duplicate of B."""
    a = list(range(0, 40))
    b = list(range(0, 24)) + [100, 101]
    c = list(range(16, 40)) + [200, 201]
    sketches = [a, b, c]
    for grouping, expected in (("greedy", [-1, 0, 0]), ("components", [-1, 0, 0]), ("complete", [-1, 0, -1])):
        got = assert_same(sketches, 64, 0.52, CONTAINMENT, grouping)
        assert got.duplicate_of == expected, grouping


# ---- the compiled kernel's own paths: table widths, count modes, the arena ----

def _copies(rng, k, bases, copies, edit):
    """Sketches of `bases` random documents, each followed by `copies` edited copies (shuffled in rank order)."""
    sketches = []
    for _ in range(bases):
        base = random_values(rng, k)
        sketches.append(base)
        for _ in range(copies):
            kept = rng.sample(base, k - edit)
            sketches.append(sorted(set(kept) | set(random_values(rng, edit)))[:k])
    rng.shuffle(sketches)
    return sketches


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_sets(), thresholds, st.sampled_from(METRICS), st.sampled_from(GROUPINGS))
def test_four_byte_table_equals_reference(case, threshold, metric, grouping):
    """Sets of 65,535 values and more use four-byte slots; wide=True makes a small set use them too."""
    sketches, k = case
    expected = reference.dedup(sketches, k, threshold, metric, grouping)
    blobs = [None if s is None else encode(s) for s in sketches]
    got = _kernel.dedup(blobs, k, threshold, kernel._METRIC_CODES[metric], kernel._GROUPING_CODES[grouping], True)
    assert Grouping(*got) == expected


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_sets(), thresholds, st.sampled_from(METRICS), st.sampled_from(GROUPINGS), st.integers(1, 6),
       st.booleans())
def test_chains_of_many_values_equal_reference(case, threshold, metric, grouping, table_bits, wide):
    """The value table chains occurrences by home slot, and a sparse table holds mostly one value per chain;
    a table of 2..64 slots (table_bits) chains many values together, and chains of hundreds that outgrow the
    pairwise counts: the same answers."""
    sketches, k = case
    expected = reference.dedup(sketches, k, threshold, metric, grouping)
    blobs = [None if s is None else encode(s) for s in sketches]
    got = _kernel.dedup(blobs, k, threshold, kernel._METRIC_CODES[metric], kernel._GROUPING_CODES[grouping], wide,
                        False, table_bits)
    assert Grouping(*got) == expected


@pytest.mark.parametrize("table_bits", [-1, 21])
def test_table_bits_out_of_range(table_bits):
    with pytest.raises(ValueError, match="table_bits"):
        _kernel.dedup([encode([1])], 4, 0.5, 0, 0, False, False, table_bits)


def test_a_set_past_the_two_byte_table():
    """70,000 values (four-byte slots, chosen by size): groups of copies among disjoint sketches, answers known."""
    rng = random.Random(17)
    k = 128
    bases = [random_values(rng, k) for _ in range(300)]
    order = [i % 300 for i in range(547)]  # 300 documents, 247 of them twice
    blobs = [encode(bases[i]) for i in order]
    assert sum(len(b) for b in blobs) // 4 >= 65_535
    for metric, grouping in ALL_WAYS:
        got = kernel.dedup(blobs, k, 0.9, metric, grouping)
        assert got.duplicate_of == [-1] * 300 + [i for i in order[300:]]
        assert got.similarity == [0.0] * 300 + [1.0] * 247


@pytest.mark.parametrize("metric, grouping", ALL_WAYS)
@pytest.mark.parametrize("k", [254, 255])
def test_counts_at_the_saturation_boundary(k, metric, grouping):
    """K <= 254 counts by plain byte increments (no pair can share more), K >= 255 by saturating ones (a pair
    sharing 255 values is merged): both equal the reference at the boundary."""
    rng = random.Random(k)
    full = random_values(rng, k)
    sketches = [full, full, full[:-1], full[1:], sorted(set(full[: k // 2]) | set(random_values(rng, k - k // 2))),
                random_values(rng, k), full[::3]]
    for threshold in (0.5, 0.99, 1.0):
        assert_same(sketches, k, threshold, metric, grouping)


@pytest.mark.parametrize("metric, grouping", ALL_WAYS)
def test_many_sketches_on_one_value_among_copies(metric, grouping):
    """A value held by more sketches than are counted pairwise (a long chain, merged) on pairs that also share
    many counted values: the two paths meet on the same pairs."""
    rng = random.Random(23)
    k = 32
    sketches = [sorted({0} | set(s[1:])) for s in _copies(rng, k, 12, 4, 6)]
    for threshold in (0.3, 0.7, 0.95):
        assert_same(sketches, k, threshold, metric, grouping)


def test_cap_ties_and_uncapped_pairs():
    """Equal caps, one sketch complete, both complete: the compared lengths as the reference cuts them."""
    rng = random.Random(29)
    k = 16
    a = random_values(rng, k)
    same_cap = sorted(set(a[:8]) | set(rng.sample(range(a[-1]), 7)) | {a[-1]})[:k]
    complete = sorted(set(a[:5]) | set(random_values(rng, 6)))
    sketches = [a, same_cap, complete, complete[:4], a[:k - 1], [a[-1]], []]
    for metric in METRICS:
        for x in sketches:
            for y in sketches:
                assert kernel.similarity(encode(x), encode(y), k, metric) == reference.similarity(x, y, k, metric)
        for grouping in GROUPINGS:
            for threshold in (0.2, 0.5, 0.8):
                assert_same(sketches, k, threshold, metric, grouping)


def test_arena_reuse_across_sizes():
    """Each call works in a block kept from earlier calls (bigger, smaller, four-byte table, SimHash): nothing of
    an earlier call's table, counts or matrix may leak into the next answer."""
    rng = random.Random(31)
    small = _copies(rng, 16, 3, 2, 3)
    medium = _copies(rng, 64, 20, 3, 10)
    large = _copies(rng, 128, 60, 2, 20)
    cases = [(small, 16), (medium, 64), (large, 128), (small, 16), (medium, 64), (small, 16)]
    expected = [reference.dedup(s, k, 0.6, CONTAINMENT, GREEDY) for s, k in cases[:3]]
    expected += [expected[0], expected[1], expected[0]]
    fingerprints = [encode([rng.getrandbits(32), rng.getrandbits(32)]) for _ in range(40)] * 2
    simhash_expected = kernel.dedup_simhash(fingerprints, 61 / 64)
    for round_ in range(3):
        for (sketches, k), want in zip(cases, expected):
            blobs = [encode(s) for s in sketches]
            assert kernel.dedup(blobs, k, 0.6) == want
            assert Grouping(*_kernel.dedup(blobs, k, 0.6, 0, 0, round_ % 2 == 1)) == want
            assert kernel.dedup_simhash(fingerprints, 61 / 64) == simhash_expected


def _large(rng, k):
    """Edited copies of random documents, more values in all than the kernel works on with the GIL held."""
    bases = _kernel.HOLD_GIL_MAX_WORK // (3 * k) + 1
    return _copies(rng, k, bases, 2, k // 10)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_threads_of_different_sizes_share_the_kernel():
    """Threads run the kernel at once (large sets release the GIL), each on sets of other sizes and table widths:
    each call must work in a block of its own. Small sets, which keep the GIL, go between them."""
    rng = random.Random(37)
    small = [(_copies(rng, 16, 4, 2, 3), 16), (_copies(rng, 64, 15, 3, 8), 64)]
    large = [(_large(rng, 64), 64), (_large(rng, 128), 128), (_large(rng, 200), 200)]
    jobs = []
    for sketches, k in small + large:
        blobs = [encode(s) for s in sketches]
        for metric, grouping in ALL_WAYS:
            # the reference is too slow for the large sets: what the kernel answers alone, checked against the
            # reference on the small ones
            want = kernel.dedup(blobs, k, 0.6, metric, grouping)
            if len(sketches) * k < _kernel.HOLD_GIL_MAX_WORK:
                assert want == reference.dedup(sketches, k, 0.6, metric, grouping)
            jobs.append((blobs, k, metric, grouping, want))
    failures = []

    def work(offset):
        for step in range(30):
            blobs, k, metric, grouping, want = jobs[(offset + step) % len(jobs)]
            if kernel.dedup(blobs, k, 0.6, metric, grouping) != want:
                failures.append((offset, step))
            wide = Grouping(*_kernel.dedup(blobs, k, 0.6, kernel._METRIC_CODES[metric],
                                           kernel._GROUPING_CODES[grouping], True))
            if wide != want:
                failures.append((offset, step, "wide"))

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def _steps_of_another_thread_during(call) -> int:
    """How many steps a spinning thread takes while `call` runs up to 50 times on this one. The switch interval
    is made long, so this thread keeps the GIL through the calls unless a call gives it up (and the spinner, woken
    then, may take a while to run on a busy machine: hence many calls)."""
    steps = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            steps[0] += 1

    interval = sys.getswitchinterval()
    sys.setswitchinterval(0.25)
    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        while steps[0] == 0:
            time.sleep(0.001)
        before = steps[0]
        for _ in range(50):
            call()
            if steps[0] != before:
                break  # the spinner ran (this thread then waited a switch interval for the GIL)
        return steps[0] - before
    finally:
        stop.set()
        spinner.join()
        sys.setswitchinterval(interval)


def test_only_large_sets_give_the_gil_up():
    """A small set is grouped with the GIL held (giving it up and taking it back costs a busy server more than
    the work); a large one lets other threads run meanwhile. Both kinds of set, bottom-K and SimHash."""
    rng = random.Random(41)
    small = [encode(s) for s in _copies(rng, 64, 20, 3, 6)]
    large = [encode(s) for s in _large(rng, 64)]
    assert sum(len(b) for b in small) // 4 < _kernel.HOLD_GIL_MAX_WORK <= sum(len(b) for b in large) // 4
    assert _steps_of_another_thread_during(lambda: kernel.dedup(small, 64, 0.6)) == 0
    assert _steps_of_another_thread_during(lambda: kernel.dedup(large, 64, 0.6)) > 0
    # SimHash: the work is the pairs of fingerprints
    pairs_held = int(math.sqrt(2 * _kernel.HOLD_GIL_MAX_WORK)) - 1
    few, many = ([encode([rng.getrandbits(32), rng.getrandbits(32)]) for _ in range(n)]
                 for n in (pairs_held, 4 * pairs_held))
    assert _steps_of_another_thread_during(lambda: kernel.dedup_simhash(few, 61 / 64)) == 0
    assert _steps_of_another_thread_during(lambda: kernel.dedup_simhash(many, 61 / 64)) > 0


@settings(max_examples=60, derandomize=True, deadline=None)
@given(st.lists(st.lists(st.integers(0, 40), max_size=12), max_size=40), st.sampled_from([12, 300]),
       thresholds, st.sampled_from(METRICS), st.sampled_from(GROUPINGS), st.booleans())
def test_unsorted_values_do_not_crash_any_path(sketches, k, threshold, metric, grouping, wide):
    """Unsorted or repeated values, through both table widths and both count modes (K=300 saturates)."""
    got = _kernel.dedup([encode(s) for s in sketches], k, threshold, kernel._METRIC_CODES[metric],
                        kernel._GROUPING_CODES[grouping], wide)
    n = len(sketches)
    assert len(got[0]) == len(got[1]) == len(got[2]) == n
    assert all(-1 <= d < n and 0 <= g < n for d, g in zip(got[0], got[2]))


@given(st.lists(st.one_of(st.none(), st.binary(max_size=8), st.just(b"")), max_size=40))
def test_missing_lists_exactly_the_positions_without_a_sketch(sketches):
    assert kernel.missing(sketches) == [p for p, sketch in enumerate(sketches) if sketch is None]
    assert kernel.missing(tuple(sketches)) == kernel.missing(sketches)


def test_missing_refuses_what_is_not_a_sequence():
    with pytest.raises(TypeError, match="sketches must be a sequence"):
        kernel.missing(42)
