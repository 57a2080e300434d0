"""Corpus search in memory: a serving process's copy of the store's bottom-K sketches and their postings
(_search.Index), searched in one compiled call with the store path's rule (core/candidates.py) and the kernel's
merge, so it answers exactly what a search of the store answers (tests compare the two).

Pure: it is told which article (id, docno, sketch) was written or deleted; what follows the store is the
caller's business (live_index.LiveIndex).
"""
from __future__ import annotations

from typing import NamedTuple

from . import _search, candidates as similar
from .kernel import metric_code

#: The delta (postings written since the base was built) is folded into a new base once it holds this share of
#: the base's entries: each search reads the delta's chains of its values too, and a fold takes seconds at 1M
#: (live_index.LiveIndex runs it in the background).
DELTA_SHARE = 0.25
#: ... and at least this many entries (a small index is rebuilt as soon as it is cheap anyway).
DELTA_MIN = 1 << 16


class Found(NamedTuple):
    matches: list[tuple[str, float]]  # (id, similarity) of each article reaching the threshold, in no given order
    exact: bool                       # as similar.Candidates.exact


class MemoryIndex:
    """Articles by id and docno (the store's numbers), their sketches and postings in memory."""

    def __init__(self, k: int, hot_postings: int | None = None):
        """`hot_postings`: similar.HOT_POSTINGS unless given (the store path's hot limit)."""
        self._index = _search.Index(k, similar.HOT_POSTINGS if hot_postings is None else hot_postings)
        self._ids: list[str | None] = []  # by docno
        self._docnos: dict[str, int] = {}

    def put(self, doc_id: str, docno: int, sketch: bytes) -> None:
        """Stores (or replaces) an article; searchable at once once the index is built."""
        previous = self._docnos.get(doc_id)
        if previous is not None and previous != docno:
            self._forget(previous)
        self._index.put(docno, sketch)
        if docno >= len(self._ids):
            self._ids.extend([None] * (docno + 1 - len(self._ids)))
        self._ids[docno] = doc_id
        self._docnos[doc_id] = docno

    def delete(self, doc_id: str) -> None:
        docno = self._docnos.pop(doc_id, None)
        if docno is not None:
            self._forget(docno)

    def _forget(self, docno: int) -> None:
        self._index.remove(docno)
        self._ids[docno] = None

    def build(self) -> None:
        """Builds the postings of everything put so far (once, before the first search)."""
        self.compact()

    def compaction_due(self) -> bool:
        """Whether the delta grew past DELTA_SHARE of the base: time to compact()."""
        stats = self._index.stats()
        return stats["delta_entries"] > max(DELTA_MIN, DELTA_SHARE * stats["base_entries"])

    def compact(self) -> None:
        """Folds the delta into a new base, without the GIL (seconds at a million articles); the caller keeps
        every other call on this index out meanwhile (they would raise RuntimeError)."""
        self._index.compact()

    def stored(self, doc_id: str) -> tuple[int, bytes] | None:
        """(docno, sketch) of a stored article, or None."""
        docno = self._docnos.get(doc_id)
        return None if docno is None else (docno, self._index.sketch(docno))

    def search(self, sketch: bytes, threshold: float, metric: str, exclude: int = -1, above: int = -1,
               max_candidates: int = similar.DEFAULT_MAX_CANDIDATES) -> Found:
        """The stored articles reaching the threshold with the sketch, never docno `exclude`, only docnos over
        `above` when given."""
        found, exact = self._index.search(sketch, threshold, metric_code(metric), exclude, above, max_candidates)
        ids = self._ids
        return Found([(ids[docno], similarity) for docno, similarity in found], exact)

    def __len__(self) -> int:
        return len(self._docnos)

    def stats(self) -> dict:
        """What the compiled part holds (articles, base and delta entries, hot runs, bytes)."""
        return self._index.stats()
