"""The card's algorithm, literally and slowly: pairwise merges of sorted sketches with early termination.

This is the specification the compiled kernel must equal (tests compare them on random and adversarial sets)
and the pure-Python baseline of the benchmarks. Its functions are never called on the request path (kernel.py
answers there), but its names are: the metric and grouping names, MIN_EVIDENCE and the Grouping answer type are
the kernel's and the engine's.

Similarity of two bottom-K sketches a, b (sorted uint32 lists, at most K values each):
  * a sketch with fewer than K values holds every shingle of its document (it is complete); a full one is a
    sample of the document's shingles up to its largest value, its cap;
  * below tau = min(cap(a), cap(b)) both sketches are complete samples, so only values <= tau are compared
    (conditional random sampling, Li & Church 2007): a' = a[<= tau], b' = b[<= tau], c = |a ∩ b|
    (every shared value is <= tau already);
  * containment = c / max(min(|a'|, |b'|), min(MIN_EVIDENCE, |a|, |b|)), jaccard = c / (|a'| + |b'| - c),
    0 when c = 0.
A pair is a near-duplicate when c >= 1 and similarity >= threshold.

The containment floor: when a short text meets a long one, tau is the long sketch's cap and may leave only a
few of the short sketch's values in the comparison (a text 1/40 the length of the other keeps ~3 of them at
K = 128); 2 shared of 3 would read 0.67. Dividing by at least MIN_EVIDENCE values (never more than a sketch
holds, so small complete sketches still compare exactly) keeps such a thin sample from claiming a whole text is
contained: below MIN_EVIDENCE compared values the estimate is that of every missing value unshared.
"""
from __future__ import annotations

from bisect import bisect_right
from typing import NamedTuple, Sequence

CONTAINMENT = "containment"
JACCARD = "jaccard"
METRICS = (CONTAINMENT, JACCARD)
GREEDY = "greedy"
COMPONENTS = "components"
COMPLETE = "complete"
GROUPINGS = (GREEDY, COMPONENTS, COMPLETE)

_UNCAPPED = 1 << 32
#: The fewest compared values a containment estimate is divided by (see above). 16 values give a standard
#: error of at most 0.125; at K = 128 the floor only acts on texts under ~1/8 the length of the other.
#: Chosen on the tune split (benchmarks/evaluate.py): F1 rises from 1 to 16 to 32 and falls at 48.
MIN_EVIDENCE = 16


class Grouping(NamedTuple):
    """Per input position: kept (duplicate_of = -1) or the position it duplicates, the similarity to that
    position, and the position that stands for its group."""

    duplicate_of: list[int]
    similarity: list[float]
    group: list[int]


def _cap(sketch: Sequence[int], k: int) -> int:
    return sketch[-1] if len(sketch) >= k else _UNCAPPED


def _compared_lengths(a: Sequence[int], b: Sequence[int], k: int) -> tuple[int, int, int]:
    """|a'|, |b'| and the containment floor min(MIN_EVIDENCE, |a|, |b|)."""
    tau = min(_cap(a, k), _cap(b, k))
    return bisect_right(a, tau), bisect_right(b, tau), min(MIN_EVIDENCE, len(a), len(b))


def _score(shared: int, len_a: int, len_b: int, floor: int, metric: str) -> float:
    if shared == 0:
        return 0.0
    if metric == CONTAINMENT:
        return shared / max(min(len_a, len_b), floor)
    return shared / (len_a + len_b - shared)


def similarity(a: Sequence[int], b: Sequence[int], k: int, metric: str) -> float:
    len_a, len_b, floor = _compared_lengths(a, b, k)
    shared = len(set(a[:len_a]) & set(b[:len_b]))
    return _score(shared, len_a, len_b, floor, metric)


def min_shared(len_a: int, len_b: int, floor: int, metric: str, threshold: float) -> int:
    """The fewest shared values that reach the threshold (at least 1); more than min(len_a, len_b) if none can."""
    most = min(len_a, len_b)
    if metric == CONTAINMENT:
        guess = int(threshold * max(most, floor))
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
    len_a, len_b, floor = _compared_lengths(a, b, k)
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
    n = len(sketches)
    duplicate_of = [-1] * n
    score = [0.0] * n

    def dup(i: int, j: int) -> bool:
        a, b = sketches[i], sketches[j]
        return a is not None and b is not None and is_duplicate(a, b, k, metric, threshold)

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
            score[j] = similarity(sketches[i], sketches[j], k, metric)
    return Grouping(duplicate_of, score, group)
