"""Corpus search: which stored articles can reach a threshold with a query sketch, decided from the postings of
the query's values (value → articles whose sketch holds it) before any sketch is read, and exactly.

Two bounds do the work, both from reference.py's definitions:
  * jaccard: every compared value of the query is in the union sample, so jaccard <= shared / |query|;
  * containment: an article of at least MIN_EVIDENCE values is divided by at least min(MIN_EVIDENCE, |query|)
    values (the floor), so containment <= shared / that floor. A short article (fewer values) has no such
    bound: it is always verified.
Hence (1) the postings of hot values (shared by more than HOT_POSTINGS articles) may be left unread as long as
an article sharing only those values stays below the threshold; their short articles are still taken, and
(2) an article whose shared values, plus every skipped value, stay below the threshold is dropped unread.
What is left is verified by the compiled kernel's early-terminating merge. The answer is exact unless more
than max_candidates articles pass, a bound on the tail latency the caller chooses.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .reference import JACCARD, MIN_EVIDENCE

#: A posting longer than this is hot: left unread whenever that provably loses no match. Measured
#: (benchmarks/bench_similar.py): reading and counting a posting costs ~10 ns an entry, verifying an article
#: ~1 µs; a posting of a few thousand articles is cheap, one of a tenth of the corpus is not.
HOT_POSTINGS = 2_048
DEFAULT_TOP_K = 10
#: The most candidates one search verifies; past it the best-sharing ones are verified and the answer is
#: marked inexact.
DEFAULT_MAX_CANDIDATES = 20_000


class Postings(NamedTuple):
    """The postings of a query's values, flattened: entry i says article `docno[i]` holds query value
    `value_index[i]`; `short[i]` says that article has fewer than MIN_EVIDENCE values."""

    value_index: np.ndarray  # intp
    docno: np.ndarray        # uint32
    short: np.ndarray        # bool


class Candidates(NamedTuple):
    docnos: np.ndarray  # articles to verify, the most shared values first
    exact: bool         # every article that can reach the threshold is among them
    skipped: int        # hot query values whose postings were left out


def bound_divisor(query_length: int, metric: str) -> int:
    """What a long article's similarity with the query is at least divided by (see the module docstring)."""
    return query_length if metric == JACCARD else min(MIN_EVIDENCE, query_length)


def candidates(query_length: int, postings: Postings, threshold: float, metric: str, *,
               exclude: int = -1, above: int = -1, max_candidates: int = DEFAULT_MAX_CANDIDATES) -> Candidates:
    """The articles that may reach the threshold with a query of query_length values, given its postings.
    `exclude` is the query's own docno; with `above`, only articles of a larger docno are considered."""
    if query_length == 0 or len(postings.docno) == 0:
        return Candidates(np.empty(0, np.uint32), True, 0)
    divisor = bound_divisor(query_length, metric)
    lengths = np.bincount(postings.value_index, minlength=query_length)
    hottest = np.argsort(-lengths, kind="stable")
    skipped = 0
    while skipped < query_length and lengths[hottest[skipped]] > HOT_POSTINGS \
            and (skipped + 1) / divisor < threshold:
        skipped += 1
    keep = np.ones(len(postings.docno), bool)
    if skipped:
        keep = ~np.isin(postings.value_index, hottest[:skipped])
        if metric != JACCARD:
            keep |= postings.short
    if exclude >= 0:
        keep &= postings.docno != exclude
    if above >= 0:
        keep &= postings.docno > above
    docnos, first, shared = np.unique(postings.docno[keep], return_index=True, return_counts=True)
    # an article sharing `shared` read values and at most every skipped one stays below: dropped unread
    possible = (shared + skipped) / divisor >= threshold
    if metric != JACCARD:
        possible |= postings.short[keep][first]
    docnos, shared = docnos[possible], shared[possible]
    order = np.argsort(-shared, kind="stable")
    exact = len(order) <= max_candidates
    return Candidates(docnos[order[:max_candidates]], exact, skipped)
