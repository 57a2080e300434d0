"""Boilerplate filter: the shingles many distinct texts share ("Share this article", a licence's warranty clause, a
site's navigation) say nothing about duplication; the offline stage learns them once.

A shingle is stop-listed by the diversity of the documents holding it, not by their count, so the sentences of a
popular story are never stop-listed. Every statistic merges exactly over parts of a corpus (summed(), split(),
merged()), so a cluster learns the stop-list one process learns, bit for bit.
The rule and its memory: docs/boilerplate.md.
"""
from __future__ import annotations

import hashlib
from typing import Iterable, NamedTuple, Sequence

import numpy as np

DEFAULT_MIN_DOCS = 10
DEFAULT_FRACTION = 0.002
#: Documents sampled per candidate shingle to tell copies of one text from unlike documents.
DEFAULT_SAMPLE_SIZE = 32
#: A document holding a candidate is a distinct text when at least this share of its shingles are its own.
DEFAULT_OWN_SHARE = 0.3
_PREFILTER_BITS = 22  # a 4 MB bitmap
_CHUNK_VALUES = 1 << 25  # hashes counted at once (128 MB): bounds the memory beyond the documents' own


class Frequencies(NamedTuple):
    """Distinct shingle hashes (ascending uint32) and in how many documents each occurs (int64)."""

    values: np.ndarray
    counts: np.ndarray


def _counted(values: np.ndarray, counts: np.ndarray | None = None) -> Frequencies:
    """The distinct values and the sum of the counts of each (each value once when counts is None). numpy's sort of
    uint32 is many times faster than an argsort, so the unweighted case, a corpus's count, takes only the sort."""
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
    """How many distinct texts must hold a hash for it to be stop-listed: max(min_docs, fraction × n_docs), so that
    in a large corpus only what a share of it holds is boilerplate, and in a small one a few texts are not enough."""
    return max(min_docs, fraction * n_docs)


def frequent(df: Frequencies, cut: float) -> Frequencies:
    """The hashes of df found in at least `cut` documents, with their counts."""
    keep = df.counts >= cut
    return Frequencies(df.values[keep], df.counts[keep])


class Sample(NamedTuple):
    """For candidate shingles, documents that hold them: entry i says candidate `candidate[i]` (an index into the
    candidates' values) is held by the document of key `key[i]`; entries are sorted by candidate, then key. For
    each sampled document (`documents`, ascending keys), how many of its shingles are no candidate (`own`) of how
    many (`total`)."""

    candidate: np.ndarray
    key: np.ndarray
    documents: np.ndarray
    own: np.ndarray
    total: np.ndarray


def document_key(hashes: np.ndarray) -> int:
    """A document's place in every sample: a hash of its distinct shingle hashes, so any process finds the same
    (documents with equal shingles are equal in a sample too, whichever of them it holds)."""
    return int.from_bytes(hashlib.blake2b(np.ascontiguousarray(hashes, "<u4").tobytes(), digest_size=8).digest(),
                          "little")


def _ranks(ordered: np.ndarray) -> np.ndarray:
    """Each entry's place in its run of equal values of `ordered` (sorted): 0, 1, ... from each run's start."""
    if not len(ordered):
        return np.empty(0, np.int64)
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    return np.arange(len(ordered)) - np.repeat(starts, np.diff(np.append(starts, len(ordered))))


def _kept_first(candidate: np.ndarray, key: np.ndarray, size: int) -> np.ndarray:
    """Positions of the entries to keep, sorted by (candidate, key): the `size` smallest keys of each candidate."""
    order = np.lexsort((key, candidate))
    return order[_ranks(candidate[order]) < size]


def document_sample(hash_sets: Sequence[np.ndarray], candidates: np.ndarray, size: int = DEFAULT_SAMPLE_SIZE
                    ) -> Sample:
    """The sample of one part of a corpus: for each candidate (ascending uint32 values), the `size` documents of
    hash_sets (each a document's distinct hashes) that hold it with the smallest keys."""
    keys = np.fromiter((document_key(hashes) for hashes in hash_sets), np.uint64, len(hash_sets))
    order = np.argsort(keys, kind="stable")
    # a bitmap of the candidates' high bits: the few values it passes are looked up exactly
    maybe = np.zeros(1 << _PREFILTER_BITS, bool)
    maybe[candidates >> (32 - _PREFILTER_BITS)] = True
    filled = np.zeros(len(candidates), np.int64)
    found_candidates, found_documents, sampled_documents, own_counts = [], [], [], []
    start = 0
    while start < len(order) and len(candidates):
        stop, held = start, 0  # documents in key order, a chunk of about _CHUNK_VALUES hashes at a time
        while stop < len(order) and (held < _CHUNK_VALUES or stop == start):
            held += len(hash_sets[order[stop]])
            stop += 1
        chunk = order[start:stop]
        start = stop
        lengths = np.array([len(hash_sets[document]) for document in chunk.tolist()], np.int64)
        values = np.concatenate([hash_sets[document] for document in chunk.tolist()])
        passed = np.flatnonzero(maybe[values >> (32 - _PREFILTER_BITS)])
        at = np.minimum(np.searchsorted(candidates, values[passed]), len(candidates) - 1)
        held_here = candidates[at] == values[passed]
        position = np.repeat(np.arange(len(chunk)), lengths)[passed[held_here]]
        candidates_held = np.bincount(position, minlength=len(chunk))
        # the chunk holds its documents in key order: a stable sort by candidate puts each one's smallest first
        # (a radix sort, on the narrowest integers that hold the candidates' indices)
        candidate = at[held_here]
        by_candidate = np.argsort(candidate.astype(np.uint16 if len(candidates) <= 1 << 16 else np.uint32),
                                  kind="stable")
        candidate, document = candidate[by_candidate], chunk[position[by_candidate]]
        room = _ranks(candidate) + filled[candidate] < size
        candidate, document = candidate[room], document[room]
        filled += np.bincount(candidate, minlength=len(candidates))
        found_candidates.append(candidate)
        found_documents.append(document)
        sampled = np.isin(chunk, document)
        sampled_documents.append(chunk[sampled])
        own_counts.append(np.stack([lengths[sampled] - candidates_held[sampled], lengths[sampled]]))
        if filled.min() >= size:
            break
    candidate = np.concatenate(found_candidates) if found_candidates else np.empty(0, np.int64)
    key = keys[np.concatenate(found_documents)] if found_documents else np.empty(0, np.uint64)
    # one chunk's entries are in order already; several chunks' are sorted together
    kept = _kept_first(candidate, key, size) if len(found_candidates) > 1 else slice(None)
    documents = np.concatenate(sampled_documents) if sampled_documents else np.empty(0, np.int64)
    counts = np.concatenate(own_counts, axis=1) if own_counts else np.empty((2, 0), np.int64)
    return _sample(candidate[kept].astype(np.int64), key[kept], keys[documents], counts[0], counts[1])


def _sample(candidate: np.ndarray, key: np.ndarray, documents: np.ndarray, own: np.ndarray, total: np.ndarray
            ) -> Sample:
    """A Sample of these entries, each sampled document once (ascending keys) among those the entries name."""
    documents, first = np.unique(documents, return_index=True)
    wanted = np.zeros(len(documents), bool)
    wanted[np.searchsorted(documents, key)] = True
    return Sample(candidate, key, documents[wanted], own[first][wanted].astype(np.int64),
                  total[first][wanted].astype(np.int64))


def merged(parts: Iterable[Sample], size: int = DEFAULT_SAMPLE_SIZE) -> Sample:
    """The sample of all parts together (the same candidates): each candidate's `size` smallest keys of all."""
    parts = list(parts)
    candidate = np.concatenate([part.candidate for part in parts]) if parts else np.empty(0, np.int64)
    key = np.concatenate([part.key for part in parts]) if parts else np.empty(0, np.uint64)
    kept = _kept_first(candidate, key, size)
    # a key twice in one candidate: the same shingles in two parts; both stay, as they would in one process
    stacked = [np.concatenate([getattr(part, name) for part in parts]) if parts else np.empty(0, np.int64)
               for name in ("documents", "own", "total")]
    return _sample(candidate[kept], key[kept], *stacked)


def distinct_texts(candidates: Frequencies, sample: Sample, own_share: float = DEFAULT_OWN_SHARE) -> np.ndarray:
    """Per candidate, the estimated number of distinct texts among the documents that hold it: its document count
    times the share of its sampled documents with at least own_share of their shingles their own."""
    document = np.searchsorted(sample.documents, sample.key)
    distinct = (sample.own >= own_share * sample.total)[document].astype(np.float64)
    sampled = np.bincount(sample.candidate, minlength=len(candidates.values))
    found = np.bincount(sample.candidate, weights=distinct, minlength=len(candidates.values))
    return candidates.counts * np.divide(found, sampled, out=np.ones(len(sampled)), where=sampled > 0)


def boilerplate(candidates: Frequencies, sample: Sample, cut: float, own_share: float = DEFAULT_OWN_SHARE
                ) -> Frequencies:
    """The candidates whose documents hold at least `cut` distinct texts (distinct_texts): the stop-list."""
    keep = distinct_texts(candidates, sample, own_share) >= cut
    return Frequencies(candidates.values[keep], candidates.counts[keep])


def learn_stoplist(documents: Sequence[Iterable[int] | np.ndarray], min_docs: int = DEFAULT_MIN_DOCS,
                   fraction: float = DEFAULT_FRACTION, sample_size: int = DEFAULT_SAMPLE_SIZE,
                   own_share: float = DEFAULT_OWN_SHARE) -> frozenset[int]:
    """The stop-list of a corpus held at once (each document's distinct hashes): the rule every engine follows."""
    hash_sets = [hashes if isinstance(hashes, np.ndarray) else np.array(sorted(hashes), np.uint32)
                 for hashes in documents]
    cut = stoplist_cut(len(hash_sets), min_docs, fraction)
    candidates = frequent(document_frequencies(hash_sets), cut)
    sample = document_sample(hash_sets, candidates.values, sample_size)
    return frozenset(boilerplate(candidates, sample, cut, own_share).values.tolist())
