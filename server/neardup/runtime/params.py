"""What a request applies (DedupParams, SimilarParams) and the limits a serving process bounds requests by."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..core import candidates
from ..core.errors import InvalidArgument
from ..core.vocabulary import DEFAULT_GROUPING, DEFAULT_METRIC, DEFAULT_THRESHOLD, GROUPINGS, METRICS

DEFAULT_MAX_RESULT_SET = 2_000
DEFAULT_MAX_TEXT_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    max_result_set: int = DEFAULT_MAX_RESULT_SET  # also the largest top_k of a search
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    max_candidates: int = candidates.DEFAULT_MAX_CANDIDATES


@dataclass(frozen=True)
class DedupParams:
    """What a Dedup applies; the defaults here are a bottom-K store's (ServedStore.defaults: the store's own)."""

    threshold: float = DEFAULT_THRESHOLD
    metric: str = DEFAULT_METRIC
    grouping: str = DEFAULT_GROUPING

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or math.isnan(self.threshold) \
                or not 0.0 <= self.threshold <= 1.0:
            raise InvalidArgument(f"threshold must be a number in [0, 1], got {self.threshold!r}", "threshold")
        if self.metric not in METRICS:
            raise InvalidArgument(f"unknown metric {self.metric!r}; use one of {', '.join(METRICS)}", "metric")
        if self.grouping not in GROUPINGS:
            raise InvalidArgument(f"unknown grouping {self.grouping!r}; use one of {', '.join(GROUPINGS)}",
                                  "grouping")


@dataclass(frozen=True)
class SimilarParams:
    top_k: int = candidates.DEFAULT_TOP_K
    threshold: float = DEFAULT_THRESHOLD
    metric: str = DEFAULT_METRIC

    def __post_init__(self) -> None:
        DedupParams(self.threshold, self.metric)  # the same rules for both
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise InvalidArgument(f"top_k must be a positive integer, got {self.top_k!r}", "top_k")
