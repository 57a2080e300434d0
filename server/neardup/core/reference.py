"""The card's algorithm, literally and slowly: pairwise merges of sorted sketches with early termination, and SimHash.

The specification the compiled kernel must equal (tests compare them on random and adversarial sets) and the
benchmarks' pure-Python baseline. Never called on the request path, but a few of its rules are: MIN_EVIDENCE,
max_distance (the SimHash threshold rule) and the Grouping answer type. Its names are core/vocabulary.py's.
The similarity, exactly (tau, the containment floor): docs/design.md; the fingerprint: docs/simhash.md.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from typing import Callable, Iterable, NamedTuple, Sequence

from .vocabulary import COMPLETE, COMPONENTS, CONTAINMENT, GREEDY, LOG_TF, MUTUAL, TF, UNIT

_UNCAPPED = 1 << 32
#: The fewest compared values a containment estimate is divided by (see above). 16 values give a standard
#: error of at most 0.125; at K = 128 the floor only acts on texts under ~1/8 the length of the other.
#: Chosen on the tune split (benchmarks/evaluate.py).
MIN_EVIDENCE = 16


class Grouping(NamedTuple):
    """Per input position: kept (duplicate_of = -1) or the position it duplicates, the similarity to that
    position, and the position that stands for its group."""

    duplicate_of: list[int]
    similarity: list[float]
    group: list[int]


def _cap(sketch: Sequence[int], k: int) -> int:
    return sketch[-1] if len(sketch) >= k else _UNCAPPED


def compared_lengths(a: Sequence[int], b: Sequence[int], k: int) -> tuple[int, int, int]:
    """|a'|, |b'| and the containment floor min(MIN_EVIDENCE, |a|, |b|)."""
    tau = min(_cap(a, k), _cap(b, k))
    return bisect_right(a, tau), bisect_right(b, tau), min(MIN_EVIDENCE, len(a), len(b))


def _score(shared: int, len_a: int, len_b: int, floor: int, metric: str) -> float:
    if shared == 0:
        return 0.0
    if metric == CONTAINMENT:
        return shared / max(min(len_a, len_b), floor)
    if metric == MUTUAL:
        return shared / max(len_a, len_b)
    return shared / (len_a + len_b - shared)


def similarity(a: Sequence[int], b: Sequence[int], k: int, metric: str) -> float:
    len_a, len_b, floor = compared_lengths(a, b, k)
    shared = len(set(a[:len_a]) & set(b[:len_b]))
    return _score(shared, len_a, len_b, floor, metric)


def min_shared(len_a: int, len_b: int, floor: int, metric: str, threshold: float) -> int:
    """The fewest shared values that reach the threshold (at least 1); more than min(len_a, len_b) if none can."""
    most = min(len_a, len_b)
    if metric == CONTAINMENT:
        guess = int(threshold * max(most, floor))
    elif metric == MUTUAL:
        guess = int(threshold * max(len_a, len_b))
    else:
        guess = int(threshold * (len_a + len_b) / (1.0 + threshold))
    shared = max(1, guess - 1)
    while shared > 1 and _score(shared - 1, len_a, len_b, floor, metric) >= threshold:
        shared -= 1
    while shared <= most and _score(shared, len_a, len_b, floor, metric) < threshold:
        shared += 1
    return shared


def is_duplicate(a: Sequence[int], b: Sequence[int], k: int, metric: str, threshold: float) -> bool:
    """Merges a and b, stopping as soon as the threshold is reached or can no longer be reached."""
    len_a, len_b, floor = compared_lengths(a, b, k)
    needed = min_shared(len_a, len_b, floor, metric, threshold)
    i = j = shared = 0
    while True:
        if shared >= needed:
            return True
        if shared + min(len_a - i, len_b - j) < needed:
            return False
        if a[i] == b[j]:
            shared += 1
            i += 1
            j += 1
        elif a[i] < b[j]:
            i += 1
        else:
            j += 1


def dedup(sketches: Sequence[Sequence[int] | None], k: int, threshold: float,
          metric: str = CONTAINMENT, grouping: str = GREEDY) -> Grouping:
    """Groups a result set given in rank order; None stands for a result without a sketch (never a duplicate)."""
    def dup(i: int, j: int) -> bool:
        a, b = sketches[i], sketches[j]
        return a is not None and b is not None and is_duplicate(a, b, k, metric, threshold)

    return _group(len(sketches), dup, lambda i, j: similarity(sketches[i], sketches[j], k, metric), grouping)


def _group(n: int, dup: Callable[[int, int], bool], score: Callable[[int, int], float], grouping: str) -> Grouping:
    """The three groupings over positions 0..n-1, given which pairs (i < j) are duplicates and their similarity."""
    duplicate_of = [-1] * n
    scores = [0.0] * n
    if grouping == GREEDY:
        kept: list[int] = []
        for j in range(n):
            for i in kept:
                if dup(i, j):
                    duplicate_of[j] = i
                    break
            else:
                kept.append(j)
        group = [j if d < 0 else d for j, d in enumerate(duplicate_of)]
    elif grouping == COMPONENTS:
        parent = list(range(n))

        def root(x: int) -> int:
            while parent[x] != x:
                x = parent[x]
            return x

        for j in range(n):
            for i in range(j):
                if dup(i, j):
                    ri, rj = root(i), root(j)
                    parent[max(ri, rj)] = min(ri, rj)
        group = [root(j) for j in range(n)]
        duplicate_of = [-1 if g == j else g for j, g in enumerate(group)]
    elif grouping == COMPLETE:
        members: dict[int, list[int]] = {}  # kept result → its group, in rank order
        for j in range(n):
            for head, group_members in members.items():
                if all(dup(m, j) for m in group_members):
                    duplicate_of[j] = head
                    group_members.append(j)
                    break
            else:
                members[j] = [j]
        group = [j if d < 0 else d for j, d in enumerate(duplicate_of)]
    else:
        raise ValueError(f"unknown grouping {grouping!r}")
    for j, i in enumerate(duplicate_of):
        if i >= 0:
            scores[j] = score(i, j)
    return Grouping(duplicate_of, scores, group)


# ---- SimHash ----

SIMHASH_BITS = 64
_MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """splitmix64's output function (Steele, Lea and Flood 2014): a shingle's CRC-32 spread over 64 bits."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


#: 1.0 in the fixed point of LOG_TF weights (16 fractional bits), and ln 2 in 32 fractional bits (rounded).
WEIGHT_ONE = 1 << 16
_LN2_Q32 = 2977044472


def _log2_q16(count: int) -> int:
    """log2(count) in 16-bit fixed point by integers only: the integer part is the bit length less 1; each
    fractional bit comes from squaring the mantissa (31 fractional bits, truncated) and halving it past 2."""
    whole = count.bit_length() - 1
    mantissa = count >> (whole - 31) if whole > 31 else count << (31 - whole)  # in [2^31, 2^32)
    result = whole << 16
    for bit in range(15, -1, -1):
        mantissa = mantissa * mantissa >> 31
        if mantissa >= 1 << 32:
            mantissa >>= 1
            result |= 1 << bit
    return result


def shingle_weight(count: int, weighting: str) -> int:
    """The integer vote of a shingle that occurs `count` (>= 1) times in its document: UNIT 1, TF count, LOG_TF
    1 + ln count in 16-bit fixed point (WEIGHT_ONE + log2(count) · ln 2, both fixed point, truncated: within
    2^-14 of WEIGHT_ONE · (1 + ln count))."""
    if weighting == UNIT:
        return 1
    if weighting == TF:
        return count
    if weighting == LOG_TF:
        return WEIGHT_ONE + (_log2_q16(count) * _LN2_Q32 >> 32)
    raise ValueError(f"unknown weighting {weighting!r}")


def simhash(shingles: Iterable[int], stoplist: Iterable[int] = (), *, weighting: str) -> int | None:
    """The 64-bit fingerprint of a document given its shingle hashes, repeats included (in any order: each
    distinct hash outside the stop-list votes once, with the weight of its count); None when none is left."""
    stopped = set(stoplist)
    counts = Counter(value for value in shingles if value not in stopped)
    if not counts:
        return None
    votes = [0] * SIMHASH_BITS
    for value, count in counts.items():
        weight = shingle_weight(count, weighting)
        spread = splitmix64(value)
        for bit in range(SIMHASH_BITS):
            votes[bit] += weight if spread >> bit & 1 else -weight
    return sum(1 << bit for bit in range(SIMHASH_BITS) if votes[bit] > 0)


def hamming(a: int, b: int) -> int:
    return bin(a ^ b).count("1")


def hamming_similarity(a: int, b: int) -> float:
    """1 - hamming(a, b) / 64, as (64 - distance) / 64 (exact in a double)."""
    return (SIMHASH_BITS - hamming(a, b)) / SIMHASH_BITS


def max_distance(threshold: float) -> int:
    """The largest Hamming distance d whose similarity (64 - d) / 64 reaches the threshold: 64 at or below 0
    (every pair), -1 above 1 (none). 64 * threshold is exact in a double, so this is exact too."""
    if threshold > 1.0:
        return -1
    if threshold <= 0.0:
        return SIMHASH_BITS
    return SIMHASH_BITS - math.ceil(SIMHASH_BITS * threshold)


def dedup_simhash(fingerprints: Sequence[int | None], threshold: float, grouping: str = GREEDY) -> Grouping:
    """dedup for SimHash fingerprints: a pair is a duplicate when both are present and within
    max_distance(threshold); its similarity is hamming_similarity."""
    most = max_distance(threshold)

    def dup(i: int, j: int) -> bool:
        a, b = fingerprints[i], fingerprints[j]
        return a is not None and b is not None and hamming(a, b) <= most

    return _group(len(fingerprints), dup, lambda i, j: hamming_similarity(fingerprints[i], fingerprints[j]),
                  grouping)
