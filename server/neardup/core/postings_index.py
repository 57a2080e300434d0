"""The postings index every search index is made of: a copy of a bottom-K store's sketches and postings
(_search.Index), searched in one compiled call with the store path's rule (core/candidates.py), so it answers
exactly what a search of the store answers (tests compare the two). Pure: it is told what was written or deleted
(runtime/search/ follows the store); over a search index file it reads the base in place and keeps the delta.
How it is laid out and kept current: docs/design.md ("Corpus search in memory", "One search index per host").
"""
from __future__ import annotations

from typing import Iterator, NamedTuple

from . import _search, candidates
from .kernel import metric_code

#: The delta (postings written since the base was built) is folded into a new base once it holds this share of
#: the base's entries: each search reads the delta's chains of its values too, and a fold takes seconds at 1M
#: (runtime/search/memory.py runs it in the background).
DELTA_SHARE = 0.25
#: ... and at least this many entries (a small index is rebuilt as soon as it is cheap anyway).
DELTA_MIN = 1 << 16
#: A mapped index's delta is each worker's own memory, where the base is shared: a new file is written once the
#: delta holds this share of the base's entries (runtime/search/shared.py).
SHARED_DELTA_SHARE = 0.02


class Found(NamedTuple):
    matches: list[tuple[str, float]]  # (id, similarity) of each article reaching the threshold, in no given order
    exact: bool                       # as candidates.Candidates.exact


class PostingsIndex:
    """Articles by id and docno (the store's numbers), their sketches and postings in memory; or, built over an
    search index file's buffer (`file`), the file's base read in place with what was written since in memory."""

    def __init__(self, k: int, hot_postings: int | None = None, file=None):
        """`hot_postings`: candidates.HOT_POSTINGS unless given (the store path's hot limit; a file's own
        otherwise). `file`: a buffer holding a search index file (runtime/search/base_file.py maps it); ValueError
        when it is damaged."""
        hot = candidates.HOT_POSTINGS if hot_postings is None else hot_postings
        self._mapped = file is not None
        self._index = _search.Index(k, hot, file) if self._mapped else _search.Index(k, hot)
        # Memory: every article's id by docno, and its docno by id. Mapped: only what was written since the file
        # (docno -> id, None once forgotten; id -> docno, None once deleted); the file answers for the others.
        self._ids: "list[str | None] | dict[int, str | None]" = {} if self._mapped else []
        self._docnos: dict[str, int | None] = {}

    @property
    def mapped(self) -> bool:
        return self._mapped

    def _docno_of(self, doc_id: str) -> int | None:
        if doc_id in self._docnos:
            return self._docnos[doc_id]
        return self._index.base_docno(doc_id.encode()) if self._mapped else None

    def _id_of(self, docno: int) -> str | None:
        """The id of a stored docno."""
        if not self._mapped:
            return self._ids[docno]
        if docno in self._ids:
            return self._ids[docno]
        base = self._index.base_id(docno)
        return None if base is None else base.decode()

    def put(self, doc_id: str, docno: int, sketch: bytes) -> None:
        """Stores (or replaces) an article; searchable at once once the index is built."""
        previous = self._docno_of(doc_id)
        if previous is not None and previous != docno:
            self._forget(previous)
        if self._mapped:  # another id the file gave this docno (a file of another store) is no longer stored
            holder = self._id_of(docno)
            if holder is not None and holder != doc_id and self._docno_of(holder) == docno:
                self._docnos[holder] = None
        self._index.put(docno, sketch)
        if not self._mapped and docno >= len(self._ids):
            self._ids.extend([None] * (docno + 1 - len(self._ids)))
        self._ids[docno] = doc_id
        self._docnos[doc_id] = docno

    def delete(self, doc_id: str) -> None:
        docno = self._docno_of(doc_id)
        if self._mapped:
            self._docnos[doc_id] = None
        else:
            self._docnos.pop(doc_id, None)
        if docno is not None:
            self._forget(docno)

    def _forget(self, docno: int) -> None:
        self._index.remove(docno)
        self._ids[docno] = None

    def build(self) -> None:
        """Builds the postings of everything put so far (once, before the first search)."""
        self.compact()

    def compaction_due(self, share: float | None = None, minimum: int | None = None) -> bool:
        """Whether the delta grew past `share` (DELTA_SHARE) of the base and `minimum` (DELTA_MIN) entries: time to
        compact() (or, for a mapped index, to write a new file)."""
        share = DELTA_SHARE if share is None else share
        minimum = DELTA_MIN if minimum is None else minimum
        stats = self._index.stats()
        return stats["delta_entries"] > max(minimum, share * stats["base_entries"])

    def compact(self) -> None:
        """Folds the delta into a new base, without the GIL (seconds at a million articles); the caller keeps
        every other call on this index out meanwhile (they would raise RuntimeError). Not for a mapped index."""
        self._index.compact()

    def stored(self, doc_id: str) -> tuple[int, bytes] | None:
        """(docno, sketch) of a stored article, or None."""
        docno = self._docno_of(doc_id)
        if docno is None:
            return None
        sketch = self._index.sketch(docno)
        return None if sketch is None else (docno, sketch)

    def article(self, docno: int) -> tuple[str, bytes] | None:
        """(id, sketch) of the article numbered docno, or None."""
        sketch = self._index.sketch(docno)
        return None if sketch is None else (self._id_of(docno), sketch)

    def articles(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bytes]]:
        """(docno, id, sketch) of the stored articles numbered start <= docno < stop, in docno order."""
        limit = self._index.stats()["docno_limit"]
        for docno in range(start, limit if stop is None else min(stop, limit)):
            sketch = self._index.sketch(docno)
            if sketch is not None:
                yield docno, self._id_of(docno), sketch

    def search(self, sketch: bytes, threshold: float, metric: str, exclude: int = -1, above: int = -1,
               max_candidates: int = candidates.DEFAULT_MAX_CANDIDATES) -> Found:
        """The stored articles reaching the threshold with the sketch, never docno `exclude`, only docnos over
        `above` when given."""
        found, exact = self._index.search(sketch, threshold, metric_code(metric), exclude, above, max_candidates)
        if self._mapped:
            return Found([(self._id_of(docno), similarity) for docno, similarity in found], exact)
        ids = self._ids
        return Found([(ids[docno], similarity) for docno, similarity in found], exact)

    def export(self):
        """A copy of the stored articles as they are now (_search.Export), for a new index file; the index may
        change meanwhile."""
        if self._mapped:
            ids = {docno: doc_id.encode() for docno, doc_id in self._ids.items() if doc_id is not None}
        else:
            ids = {docno: doc_id.encode() for docno, doc_id in enumerate(self._ids) if doc_id is not None}
        return self._index.export(ids)

    def __len__(self) -> int:
        return self._index.stats()["articles"] if self._mapped else len(self._docnos)

    def stats(self) -> dict:
        """What the compiled part holds (articles, base and delta entries, hot runs, bytes of its own memory;
        mapped, file_bytes)."""
        return self._index.stats()
