"""The request path's pair kernel: reference.dedup's exact answers from the compiled _kernel, on bytes sketches.

_kernel.c finds the pairs that share a value through a hash table over the set's values, counting the shared
values per pair on the way (which decides most pairs without a merge), merges the rest with early termination,
and runs with the GIL released when the set is large (for a small one, giving the GIL up and taking it back would
cost a busy server more than the work). Names are checked here, everything else in C. SimHash sketches (8-byte
fingerprints) go through dedup_simhash and similar_simhash: the same candidate matrix and groupings, each pair
decided by one popcount; the threshold becomes a maximum Hamming distance here (reference.max_distance).
"""
from __future__ import annotations

import math
import struct
from typing import Sequence

from . import _kernel
from .reference import MIN_EVIDENCE, Grouping, max_distance
from .vocabulary import COMPLETE, COMPONENTS, CONTAINMENT, GREEDY, JACCARD, MUTUAL

if _kernel.MIN_EVIDENCE != MIN_EVIDENCE:
    raise ImportError(f"the compiled kernel divides containment by at least {_kernel.MIN_EVIDENCE} values, "
                      f"reference.py by {MIN_EVIDENCE}: rebuild the package")

_METRIC_CODES = {CONTAINMENT: _kernel.CONTAINMENT, JACCARD: _kernel.JACCARD, MUTUAL: _kernel.MUTUAL}
_GROUPING_CODES = {GREEDY: _kernel.GREEDY, COMPONENTS: _kernel.COMPONENTS, COMPLETE: _kernel.COMPLETE}


def _code(codes: dict, name: str, what: str) -> int:
    try:
        return codes[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown {what} {name!r}; use one of {', '.join(codes)}") from None


def metric_code(metric: str) -> int:
    """The compiled code of a bottom-K metric (ValueError naming the choices for another)."""
    return _code(_METRIC_CODES, metric, "metric")


def dedup(sketches: Sequence[bytes | None], k: int, threshold: float, metric: str = CONTAINMENT,
          grouping: str = GREEDY, packed: bool = False) -> Grouping | bytes:
    """Groups a result set given in rank order; None stands for a result without a sketch (never a duplicate).
    With packed, the Grouping comes as one bytes object (unpack reads it): what the request path encodes.

    Raises TypeError for a sketch that is not bytes, ValueError for bytes that are not whole uint32 values
    or hold more than k of them, for k < 1, a threshold that is not finite, or an unknown metric/grouping.
    A threshold above 1 finds nothing, one at or below 0 takes any shared value. Ascending order is not
    checked here (sketch.validate_sketch does it on the way in): unsorted values get an answer, not a crash.
    """
    answer = _kernel.dedup(sketches, k, threshold, metric_code(metric),
                           _code(_GROUPING_CODES, grouping, "grouping"), False, packed)
    return answer if packed else Grouping(*answer)


def missing(sketches: Sequence[bytes | None]) -> list[int]:
    """The positions of the results without a sketch (None), found by identity: `None in sketches` compares each
    bytes object with None through its rich comparison, which cost as much as the rest of the handler's glue."""
    return _kernel.missing(sketches)


def unpack(packed: bytes) -> Grouping:
    """The Grouping a packed answer holds: native int32 duplicate_of[n], int32 group[n], float64 similarity[n]."""
    n = len(packed) // 16
    duplicate_of, group, similarity = (struct.unpack_from(f"={n}{code}", packed, offset)
                                       for code, offset in (("i", 0), ("i", 4 * n), ("d", 8 * n)))
    return Grouping(list(duplicate_of), list(similarity), list(group))


def similarity(a: bytes, b: bytes, k: int, metric: str = CONTAINMENT) -> float:
    """reference.similarity of two bytes sketches, for reporting a single pair."""
    return _kernel.similarity(a, b, k, metric_code(metric))


def similar(query: bytes, sketches: Sequence[bytes], k: int, threshold: float,
            metric: str = CONTAINMENT) -> list[tuple[int, float]]:
    """(position, similarity) of each sketch that reaches the threshold with the query, in input order: one
    call for a search's candidates, each merge stopping once the threshold can no longer be reached."""
    return _kernel.similar(query, sketches, k, threshold, metric_code(metric))


def _max_distance(threshold: float) -> int:
    if not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ValueError("threshold must be a finite number")
    return max_distance(threshold)


def dedup_simhash(sketches: Sequence[bytes | None], threshold: float, grouping: str = GREEDY,
                  packed: bool = False) -> Grouping | bytes:
    """reference.dedup_simhash on 8-byte SimHash sketches; None or b"" stands for a result without a
    fingerprint (never a duplicate). A pair is a duplicate when its Hamming distance is at most
    reference.max_distance(threshold): 3 at 61/64, every pair at 0, none above 1.

    Raises TypeError for a sketch that is not bytes or None, ValueError for bytes of another length than 8 or 0,
    a threshold that is not finite, or an unknown grouping. packed as for dedup.
    """
    answer = _kernel.dedup_simhash(sketches, _max_distance(threshold), _code(_GROUPING_CODES, grouping, "grouping"),
                                   packed)
    return answer if packed else Grouping(*answer)


def similar_simhash(query: bytes, sketches: Sequence[bytes], threshold: float) -> list[tuple[int, float]]:
    """(position, similarity) of each SimHash sketch within the threshold's distance of the query, in input
    order; an empty query or sketch matches nothing."""
    return _kernel.similar_simhash(query, sketches, _max_distance(threshold))


def group_scores(scores, n: int, threshold: float, grouping: str = GREEDY, packed: bool = False) -> Grouping | bytes:
    """The groupings of n results from given pair scores (a float64 array or buffer of the pairs i < j at
    j * (j - 1) / 2 + i, NaN for a pair that is no candidate): a pair is a duplicate when its score reaches the
    threshold. Items with fields score their pairs in core/item_scoring.py and group here, as texts do."""
    answer = _kernel.group_scores(memoryview(scores).cast("B"), n, threshold,
                                  _code(_GROUPING_CODES, grouping, "grouping"), packed)
    return answer if packed else Grouping(*answer)
