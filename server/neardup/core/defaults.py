"""Service defaults: the fixed thresholds a store is served at unless it holds its own (a bottom-K store learns
one from its corpus when `neardup index` creates it: core/calibration.py; one can be set by hand), chosen by
measured F1 on the tune split of the development corpus (benchmarks/devcorpus.py:
real news, encyclopedia, manual-page, legal and documentation texts, copies edited over the whole text) and
reported on its test split, which was never tuned on (benchmarks/QUALITY.md; `python benchmarks/evaluate.py`).

With the default sketch (word 3-grams, K = 128, min_word_len 1, stop-list learned by `neardup index`),
containment reaches its best F1 on the tune split at 0.51–0.54 (0.998–0.999) and stays above 0.995 from 0.45 to
0.60; below, texts that quote a passage of another start to group, above, copies edited at 5–10 % of their words
fall out. 0.52 sits inside that plateau, just clear of the 1/2 step that short texts produce.

A simhash store (`neardup index --sketch simhash`) answers only metric hamming, by default at 46/64 = 0.71875: a
Hamming distance of at most 18 bits of 64, where its Dedup F1 peaks on the tune split (0.925 with shingles weighted
1 + ln tf; 0.917 at 17 bits, 0.905 at 19, 0.851 at 20, where precision falls from 0.97 to 0.81; 0.371 at 3 bits,
the default before it was chosen here). Dedup is exact at any distance. A corpus search (FindSimilar, `neardup
pairs`, `neardup cluster`) at the default is answered from the permutation tables (Manku, Jain and Das Sarma, WWW
2007), which find every pair only up to 3 bits (61/64 = 0.953125): beyond, it is marked inexact (FindSimilar's
`exact` false, pairs and cluster exit 3), and a request for 61/64 or above searches exactly. Test split figures
are in benchmarks/QUALITY.md.
"""
from __future__ import annotations

from typing import NamedTuple

from .reference import BOTTOMK, CONTAINMENT, FIELDS, GREEDY, HAMMING, ITEMS, SIMHASH

DEFAULT_THRESHOLD: float = 0.52
DEFAULT_METRIC: str = CONTAINMENT
DEFAULT_GROUPING: str = GREEDY
#: 46/64: a SimHash distance of at most 18 bits (reference.max_distance); chosen on the tune split (above).
SIMHASH_THRESHOLD: float = 46 / 64
#: An items store without a pair model: the weighted per-field similarity at which a pair (sharing a super token)
#: is a duplicate, chosen on the job-ad tune split (benchmarks/fields_eval.py). With a model, the model's own
#: threshold on its probability applies (chosen by cross-validated F1 when it was trained).
ITEMS_THRESHOLD: float = 0.74


class Defaults(NamedTuple):
    threshold: float
    metric: str
    grouping: str


#: The defaults of a store, by its sketch kind (SketchConfig.kind).
DEFAULTS = {
    BOTTOMK: Defaults(DEFAULT_THRESHOLD, DEFAULT_METRIC, DEFAULT_GROUPING),
    SIMHASH: Defaults(SIMHASH_THRESHOLD, HAMMING, DEFAULT_GROUPING),
    ITEMS: Defaults(ITEMS_THRESHOLD, FIELDS, DEFAULT_GROUPING),
}


def for_kind(kind: str) -> Defaults:
    """The threshold, metric and grouping a store of this sketch kind is served with unless a request says."""
    return DEFAULTS[kind]
