"""Boilerplate filter: shingles that occur in too many documents ("Share this article", copyright lines) are
shared by different articles, so they say nothing about duplication. The offline stage learns them once."""
from __future__ import annotations

from collections import Counter
from typing import Iterable

DEFAULT_MIN_DOCS = 50
DEFAULT_FRACTION = 0.01


def document_frequencies(hash_sets: Iterable[Iterable[int]]) -> Counter:
    """In how many documents each shingle hash occurs (each document's hashes counted once)."""
    df: Counter = Counter()
    for hashes in hash_sets:
        df.update(set(hashes))
    return df


def learn_stoplist(df: Counter, n_docs: int, min_docs: int = DEFAULT_MIN_DOCS,
                   fraction: float = DEFAULT_FRACTION) -> frozenset[int]:
    """Hashes found in at least max(min_docs, fraction × n_docs) documents. Both cuts must hold, so a small
    corpus, where a fraction means a handful of documents, does not stop-list a republished story."""
    cut = max(min_docs, fraction * n_docs)
    return frozenset(value for value, count in df.items() if count >= cut)
