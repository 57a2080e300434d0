"""Corpus search: which stored articles can reach a threshold with a query sketch, decided exactly from the postings
of the query's values (value → articles whose sketch holds it) before any sketch is read: bounds from reference.py's
definitions drop most articles, hot values are left unread where that provably loses no match, and what is left is
verified by the kernel's merge. The rule itself is compiled (_search_index.c), one copy for both search paths;
SimHash stores search permutation-table blocks up to 3 bits and scan every fingerprint past that.
The bounds and why: docs/design.md ("Corpus search"); SimHash: docs/simhash.md.
"""
from __future__ import annotations

from typing import Callable, NamedTuple, Sequence

import numpy as np

from . import _kernel, _search
from .fields import item_super_tokens
from .kernel import metric_code
from .reference import MIN_EVIDENCE, max_distance
from .vocabulary import ITEMS, SIMHASH

#: A posting longer than this is hot: left unread whenever that provably loses no match. Reading and counting a
#: posting entry costs a small fraction of verifying an article (benchmarks/bench_similar_engine.py): a posting of a few
#: thousand articles is cheap, one of a tenth of the corpus is not.
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
    `value_index[i]`; `length[i]` is that article's number of values when it is short (under MIN_EVIDENCE), 0
    for a long one. The long articles' entries of the query values in `unread` were left out by the store (their
    postings are hot: `unread_lengths` entries each); read_unread fetches them when a search needs them."""

    value_index: np.ndarray  # intp
    docno: np.ndarray        # uint32
    length: np.ndarray       # uint8
    unread: np.ndarray = np.empty(0, np.intp)
    unread_lengths: np.ndarray = np.empty(0, np.int64)

    def joined(self, other: "Postings") -> "Postings":
        return Postings(*(np.concatenate([mine, theirs]) for mine, theirs in zip(self[:3], other[:3])))


#: The long articles' entries of some query values (by index), which Postings.unread left out.
ReadUnread = Callable[[np.ndarray], Postings]


class Candidates(NamedTuple):
    docnos: np.ndarray  # articles to verify, the most shared values first
    exact: bool         # every article that can reach the threshold is among them
    skipped: int        # hot query values whose postings were left out


def candidates(query_length: int, postings: Postings, threshold: float, metric: str, *,
               read_unread: ReadUnread | None = None, exclude: int = -1, above: int = -1,
               max_candidates: int = DEFAULT_MAX_CANDIDATES, whole_ties: bool = False) -> Candidates:
    """The articles that may reach the threshold with a query of query_length values, given its postings
    (read_unread fetches what they left out). `exclude` is the query's own docno; with `above`, only articles
    of a larger docno are considered; `whole_ties`: see _best_sharing."""
    if query_length == 0:
        return Candidates(np.empty(0, np.uint32), True, 0)
    code = metric_code(metric)
    hottest = postings.unread[np.argsort(-postings.unread_lengths, kind="stable")]
    skipped = _search.hot_skipped(len(hottest), query_length, threshold, code)
    if skipped < len(hottest):  # the bound cannot spare these: their long articles are read after all
        postings = postings.joined(_read(read_unread, hottest[skipped:]))
    keep = np.ones(len(postings.docno), bool)
    if exclude >= 0:
        keep &= postings.docno != exclude
    if above >= 0:
        keep &= postings.docno > above
    docnos, first, shared = np.unique(postings.docno[keep], return_index=True, return_counts=True)
    length = np.ascontiguousarray(postings.length[keep][first], np.uint8)
    # each article's bound, every skipped value counted as shared by a long one: below it, dropped unread
    possible = np.empty(len(docnos), bool)
    _search.may_reach(shared.astype(np.int64), length, possible, skipped, query_length, threshold, code)
    docnos, shared = docnos[possible], shared[possible]
    return _best_sharing(docnos, shared, max_candidates, whole_ties, skipped)


def _best_sharing(docnos: np.ndarray, shared: np.ndarray, max_candidates: int, whole_ties: bool,
                  skipped: int = 0) -> Candidates:
    """The max_candidates articles sharing the most values, ties in article-number order; `whole_ties`: and every
    article sharing as many as the last of them, so which articles are verified depends on what they share, never
    on how they are numbered (a learned threshold's sample: the same articles learn the same threshold however
    they are stored)."""
    order = np.argsort(-shared, kind="stable")
    cut = max_candidates
    if whole_ties and len(order) > max_candidates:
        cut = int(np.count_nonzero(shared >= shared[order[max_candidates - 1]]))
    return Candidates(docnos[order[:cut]], len(order) <= cut, skipped)


def _read(read_unread: ReadUnread | None, value_indices: np.ndarray) -> Postings:
    if read_unread is None:
        raise ValueError("the postings left hot values unread and no read_unread was given")
    return read_unread(value_indices)


class IndexValues(NamedTuple):
    """What articles are indexed under in the postings: `values` of every article, concatenated (uint32);
    `lengths[i]` of them are article i's; `length_class[i]`: article i's number of sketch values when under
    MIN_EVIDENCE, else 0 (the containment bound of a short article needs it; 0 for every SimHash article)."""

    values: np.ndarray        # uint32
    lengths: np.ndarray       # int64
    length_class: np.ndarray  # uint8


def index_values(sketches: Sequence[bytes], kind: str) -> IndexValues:
    """The one rule of what an article is indexed under, by sketch kind: a bottom-K sketch under its own values,
    a SimHash fingerprint under SIMHASH_BLOCKS values (block number << 16) | block bits (none for an empty
    sketch), an item under its super tokens (core/fields.py; long, as no bound reads lengths there). The store
    calls it for the articles it writes and for a query's postings."""
    if kind == ITEMS:
        tokens = [item_super_tokens(sketch) if sketch else b"" for sketch in sketches]
        return IndexValues(np.frombuffer(b"".join(tokens), "<u4"),
                           np.array([len(t) // 4 for t in tokens], np.int64), np.zeros(len(sketches), np.uint8))
    if kind == SIMHASH:
        present = [sketch for sketch in sketches if sketch]
        fingerprints = np.frombuffer(b"".join(present), "<u8")
        shifts = np.arange(SIMHASH_BLOCKS, dtype=np.uint64) * np.uint64(SIMHASH_BLOCK_BITS)
        blocks = (fingerprints[:, None] >> shifts) & np.uint64((1 << SIMHASH_BLOCK_BITS) - 1)
        values = (np.arange(SIMHASH_BLOCKS, dtype=np.uint64) << np.uint64(SIMHASH_BLOCK_BITS)) | blocks
        lengths = np.array([SIMHASH_BLOCKS if sketch else 0 for sketch in sketches], np.int64)
        return IndexValues(values.astype(np.uint32).ravel(), lengths, np.zeros(len(sketches), np.uint8))
    lengths = np.array([len(sketch) // 4 for sketch in sketches], np.int64)
    return IndexValues(np.frombuffer(b"".join(sketches), "<u4"), lengths,
                       np.where(lengths < MIN_EVIDENCE, lengths, 0).astype(np.uint8))


def _every_docno(postings: Postings, read_unread: ReadUnread | None, exclude: int, above: int) -> np.ndarray:
    """The article number of every posting, the hot values' left-out ones read too, less `exclude` and those not
    `above` (as for candidates)."""
    if len(postings.unread):
        postings = postings.joined(_read(read_unread, postings.unread))
    keep = np.ones(len(postings.docno), bool)
    if exclude >= 0:
        keep &= postings.docno != exclude
    if above >= 0:
        keep &= postings.docno > above
    return postings.docno[keep]


def simhash_tables_suffice(threshold: float) -> bool:
    """Whether the permutation tables find every match at the threshold (else the search is simhash_scan's)."""
    return max_distance(threshold) <= SIMHASH_EXACT_DISTANCE


def simhash_candidates(postings: Postings, threshold: float, *, read_unread: ReadUnread | None = None,
                       exclude: int = -1, above: int = -1, max_candidates: int = DEFAULT_MAX_CANDIDATES
                       ) -> Candidates:
    """The articles that may be within the threshold's distance of a SimHash query, given the postings of its
    index_values: those agreeing on enough blocks (one differing bit per disagreeing block at least), the most
    agreeing blocks first. Exact when the distance is at most SIMHASH_EXACT_DISTANCE and no more than
    max_candidates pass (a larger distance is simhash_scan's); `exclude` and `above` as for candidates."""
    distance = max_distance(threshold)
    # every table is needed for the guarantee: hot blocks are read too
    docnos, agreeing = np.unique(_every_docno(postings, read_unread, exclude, above), return_counts=True)
    possible = SIMHASH_BLOCKS - agreeing <= distance
    docnos, agreeing = docnos[possible], agreeing[possible]
    order = np.argsort(-agreeing, kind="stable")
    exact = distance <= SIMHASH_EXACT_DISTANCE and len(order) <= max_candidates
    return Candidates(docnos[order[:max_candidates]], exact, 0)


class Fingerprints(NamedTuple):
    """Every stored SimHash fingerprint of one committed state, for simhash_scan: article numbers ascending."""

    docnos: np.ndarray        # uint32
    fingerprints: np.ndarray  # little-endian uint64, fingerprints[i] of docnos[i]

    @classmethod
    def of(cls, articles) -> "Fingerprints":
        """From (docno, sketch) pairs in docno order (Snapshot.scan's); an article without a fingerprint (an
        empty sketch: a text without shingles) matches nothing and is left out."""
        docnos, sketches = [], []
        for docno, sketch in articles:
            if sketch:
                docnos.append(docno)
                sketches.append(sketch)
        return cls(np.array(docnos, np.uint32), np.frombuffer(b"".join(sketches), "<u8"))


def simhash_scan(fingerprints: Fingerprints, query: bytes, threshold: float, *, exclude: int = -1, above: int = -1,
                 max_candidates: int = DEFAULT_MAX_CANDIDATES) -> Candidates:
    """Every article within the threshold's distance of a SimHash query, found by comparing it with each stored
    fingerprint: exact at any threshold (unless more than max_candidates match: then the nearest ones), the
    nearest first; `exclude` and `above` as for candidates."""
    first = int(np.searchsorted(fingerprints.docnos, above, side="right")) if above >= 0 else 0
    positions, distances = _kernel.scan_simhash(fingerprints.fingerprints[first:], query, max_distance(threshold))
    docnos = fingerprints.docnos[first:][np.frombuffer(positions, np.uint32)]
    distances = np.frombuffer(distances, np.uint8)
    if exclude >= 0:
        keep = docnos != exclude
        docnos, distances = docnos[keep], distances[keep]
    order = np.argsort(distances, kind="stable")
    return Candidates(docnos[order[:max_candidates]], len(order) <= max_candidates, 0)


def item_candidates(postings: Postings, *, read_unread: ReadUnread | None = None, exclude: int = -1,
                    above: int = -1, max_candidates: int = DEFAULT_MAX_CANDIDATES,
                    whole_ties: bool = False) -> Candidates:
    """The items that share a super token with the query (core/fields.py): no other can satisfy a rule. Every
    posting is read (a hot one too), the most shared tokens first; exact unless more than max_candidates pass;
    `exclude`, `above` and `whole_ties` as for candidates."""
    docnos, shared = np.unique(_every_docno(postings, read_unread, exclude, above), return_counts=True)
    return _best_sharing(docnos, shared, max_candidates, whole_ties)
