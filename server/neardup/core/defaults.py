"""Service defaults, chosen by measured F1 on the tune split of the development corpus (benchmarks/devcorpus.py:
real news, encyclopedia, manual-page, legal and documentation texts, copies edited over the whole text) and
reported on its test split, which was never tuned on (benchmarks/QUALITY.md; `python benchmarks/evaluate.py`).

With the default sketch (word 3-grams, K = 128, min_word_len 1, stop-list learned by `neardup index`),
containment reaches its best F1 on the tune split at 0.51–0.54 (0.998–0.999) and stays above 0.995 from 0.45 to
0.60; below, texts that quote a passage of another start to group, above, copies edited at 5–10 % of their words
fall out. 0.52 sits inside that plateau, just clear of the 1/2 step that short texts produce.

A simhash store (`neardup index --sketch simhash`) answers only metric hamming, by default at 61/64 = 0.953125:
a Hamming distance of at most 3 bits of 64, the largest distance its corpus search (four permutation tables,
Manku, Jain and Das Sarma, WWW 2007) finds exactly. Lower thresholds are accepted (more distance: Dedup is exact
at any, a corpus search is marked inexact). On the test split SimHash's F1 is 0.320 at 61/64 (precision 1.000)
and best, 0.908, at 0.71 (18 bits), where its corpus search is no longer exact (benchmarks/QUALITY.md).
"""
from __future__ import annotations

from typing import NamedTuple

from .reference import BOTTOMK, CONTAINMENT, GREEDY, HAMMING, SIMHASH

DEFAULT_THRESHOLD: float = 0.52
DEFAULT_METRIC: str = CONTAINMENT
DEFAULT_GROUPING: str = GREEDY
#: 61/64: a SimHash distance of at most 3 bits.
SIMHASH_THRESHOLD: float = 61 / 64


class Defaults(NamedTuple):
    threshold: float
    metric: str
    grouping: str


#: The defaults of a store, by its sketch kind (SketchConfig.kind).
DEFAULTS = {
    BOTTOMK: Defaults(DEFAULT_THRESHOLD, DEFAULT_METRIC, DEFAULT_GROUPING),
    SIMHASH: Defaults(SIMHASH_THRESHOLD, HAMMING, DEFAULT_GROUPING),
}


def for_kind(kind: str) -> Defaults:
    """The threshold, metric and grouping a store of this sketch kind is served with unless a request says."""
    return DEFAULTS[kind]
