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

SimHash stores search by the permutation-table method of Manku, Jain and Das Sarma (WWW 2007): the 64 bits are
cut into SIMHASH_BLOCKS blocks of 16 bits, and two fingerprints within distance SIMHASH_BLOCKS - 1 = 3 agree
exactly on at least one block (each differing bit spoils one block at most). An article is indexed under one
value per block, (block number << 16) | the block's bits, so the postings of the query's four values hold
every article within distance 3; an article agreeing on c blocks differs in at least 4 - c bits, which drops
some unread (simhash_candidates). What an article is indexed under is index_values' rule, for both kinds: the
store calls it when it writes postings and when it reads a query's. A threshold that allows more than 3 bits
(below 61/64) is answered from the same tables and marked inexact: the tables cannot guarantee it.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .reference import JACCARD, MIN_EVIDENCE, SIMHASH, max_distance

#: A posting longer than this is hot: left unread whenever that provably loses no match. Measured
#: (benchmarks/bench_similar.py): reading and counting a posting costs ~10 ns an entry, verifying an article
#: ~1 µs; a posting of a few thousand articles is cheap, one of a tenth of the corpus is not.
HOT_POSTINGS = 2_048
DEFAULT_TOP_K = 10
#: The most candidates one search verifies; past it the best-sharing ones are verified and the answer is
#: marked inexact.
DEFAULT_MAX_CANDIDATES = 20_000
#: SimHash permutation tables: blocks of SIMHASH_BLOCK_BITS bits; distances up to SIMHASH_BLOCKS - 1 are exact.
SIMHASH_BLOCKS = 4
SIMHASH_BLOCK_BITS = 64 // SIMHASH_BLOCKS
SIMHASH_EXACT_DISTANCE = SIMHASH_BLOCKS - 1


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


class IndexValues(NamedTuple):
    """What articles are indexed under in the postings: `values` of every article, concatenated (uint32);
    `lengths[i]` of them are article i's; `short[i]`: article i has fewer than MIN_EVIDENCE sketch values (a
    bottom-K bound needs it; never for SimHash)."""

    values: np.ndarray   # uint32
    lengths: np.ndarray  # int64
    short: np.ndarray    # bool


def index_values(sketches: Sequence[bytes], kind: str) -> IndexValues:
    """The one rule of what an article is indexed under, by sketch kind: a bottom-K sketch under its own values,
    a SimHash fingerprint under SIMHASH_BLOCKS values (block number << 16) | block bits (none for an empty
    sketch). The store calls it for the articles it writes and for a query's postings."""
    if kind == SIMHASH:
        present = [sketch for sketch in sketches if sketch]
        fingerprints = np.frombuffer(b"".join(present), "<u8")
        shifts = np.arange(SIMHASH_BLOCKS, dtype=np.uint64) * np.uint64(SIMHASH_BLOCK_BITS)
        blocks = (fingerprints[:, None] >> shifts) & np.uint64((1 << SIMHASH_BLOCK_BITS) - 1)
        values = (np.arange(SIMHASH_BLOCKS, dtype=np.uint64) << np.uint64(SIMHASH_BLOCK_BITS)) | blocks
        lengths = np.array([SIMHASH_BLOCKS if sketch else 0 for sketch in sketches], np.int64)
        return IndexValues(values.astype(np.uint32).ravel(), lengths, np.zeros(len(sketches), bool))
    lengths = np.array([len(sketch) // 4 for sketch in sketches], np.int64)
    return IndexValues(np.frombuffer(b"".join(sketches), "<u4"), lengths, lengths < MIN_EVIDENCE)


def simhash_candidates(postings: Postings, threshold: float, *, exclude: int = -1, above: int = -1,
                       max_candidates: int = DEFAULT_MAX_CANDIDATES) -> Candidates:
    """The articles that may be within the threshold's distance of a SimHash query, given the postings of its
    index_values: those agreeing on enough blocks (one differing bit per disagreeing block at least), the most
    agreeing blocks first. Exact when the distance is at most SIMHASH_EXACT_DISTANCE and no more than
    max_candidates pass; `exclude` and `above` as for candidates."""
    distance = max_distance(threshold)
    keep = np.ones(len(postings.docno), bool)
    if exclude >= 0:
        keep &= postings.docno != exclude
    if above >= 0:
        keep &= postings.docno > above
    docnos, agreeing = np.unique(postings.docno[keep], return_counts=True)
    possible = SIMHASH_BLOCKS - agreeing <= distance
    docnos, agreeing = docnos[possible], agreeing[possible]
    order = np.argsort(-agreeing, kind="stable")
    exact = distance <= SIMHASH_EXACT_DISTANCE and len(order) <= max_candidates
    return Candidates(docnos[order[:max_candidates]], exact, 0)
