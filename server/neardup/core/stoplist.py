"""Boilerplate filter: shingles that occur in too many documents ("Share this article", copyright lines) are
shared by different articles, so they say nothing about duplication. The offline stage learns them once.

Document frequencies are arrays (distinct values, counts), so that frequencies counted over parts of a corpus (a
chunk in one process, a partition on a worker of a cluster) add up exactly to those of the whole: summed(), split()
into shards by value, and frequent() on each shard learn the same stop-list as on the corpus at once.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple

import numpy as np

DEFAULT_MIN_DOCS = 50
DEFAULT_FRACTION = 0.01
_CHUNK_VALUES = 1 << 25  # hashes counted at once (128 MB): bounds the memory beyond the documents' own


class Frequencies(NamedTuple):
    """Distinct shingle hashes (ascending uint32) and in how many documents each occurs (int64)."""

    values: np.ndarray
    counts: np.ndarray


def _counted(values: np.ndarray, counts: np.ndarray | None = None) -> Frequencies:
    """The distinct values and the sum of the counts of each (each value once when counts is None). numpy's sort of
    uint32 is ~15x faster than an argsort, so the unweighted case, a corpus's count, takes only the sort."""
    if counts is None:
        values = np.sort(values)
    else:
        order = np.argsort(values)
        values, counts = values[order], counts[order]
    if not len(values):
        return Frequencies(values.astype(np.uint32), np.empty(0, np.int64))
    starts = np.flatnonzero(np.concatenate([[True], values[1:] != values[:-1]]))
    if counts is None:
        counted = np.diff(np.append(starts, len(values)))
    else:
        counted = np.add.reduceat(counts.astype(np.int64), starts)
    return Frequencies(values[starts].astype(np.uint32), counted.astype(np.int64))


def document_frequencies(hash_sets: Iterable[Iterable[int] | np.ndarray]) -> Frequencies:
    """In how many documents each shingle hash occurs; each document's hashes must be distinct (a set, or the
    uint32 array of one), so each is counted once per document."""
    parts, chunk, held = [], [], 0
    for hashes in hash_sets:
        array = hashes if isinstance(hashes, np.ndarray) else np.fromiter(hashes, np.uint32)
        chunk.append(array)
        held += len(array)
        if held >= _CHUNK_VALUES:
            parts.append(_counted(np.concatenate(chunk)))
            chunk, held = [], 0
    if chunk or not parts:
        values = np.concatenate(chunk) if chunk else np.empty(0, np.uint32)
        parts.append(_counted(values))
    return parts[0] if len(parts) == 1 else summed(parts)


def summed(parts: Iterable[Frequencies]) -> Frequencies:
    """The frequencies of the documents of all parts together."""
    parts = list(parts)
    return _counted(np.concatenate([part.values for part in parts]) if parts else np.empty(0, np.uint32),
                    np.concatenate([part.counts for part in parts]) if parts else np.empty(0, np.int64))


def split(df: Frequencies, shards: int) -> list[Frequencies]:
    """df in `shards` parts by value (value mod shards): a value's counts from every part of a corpus meet in one."""
    shard = df.values % shards
    return [Frequencies(df.values[shard == index], df.counts[shard == index]) for index in range(shards)]


def stoplist_cut(n_docs: int, min_docs: int = DEFAULT_MIN_DOCS, fraction: float = DEFAULT_FRACTION) -> float:
    """How many documents a hash must occur in to be stop-listed: max(min_docs, fraction × n_docs). Both cuts must
    hold, so a small corpus, where a fraction means a handful of documents, does not stop-list a republished story."""
    return max(min_docs, fraction * n_docs)


def frequent(df: Frequencies, cut: float) -> Frequencies:
    """The hashes of df found in at least `cut` documents, with their counts."""
    keep = df.counts >= cut
    return Frequencies(df.values[keep], df.counts[keep])


def learn_stoplist(df: Frequencies, n_docs: int, min_docs: int = DEFAULT_MIN_DOCS,
                   fraction: float = DEFAULT_FRACTION) -> frozenset[int]:
    """Hashes found in at least stoplist_cut(n_docs, min_docs, fraction) documents."""
    return frozenset(frequent(df, stoplist_cut(n_docs, min_docs, fraction)).values.tolist())
