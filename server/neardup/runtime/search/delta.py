"""What a search index holds beyond its base: the store's writes since, each changed id read again from the store
(its docno and sketch, or its absence) and put into the index or deleted from it. Both serving indexes follow the
change feed this way (memory.MemorySearchIndex, shared.SharedSearchIndex), and whoever maps a search index file
catches up from the file's generation (catch_up; `neardup pairs` and `cluster` too). Every read of the store is one
committed state, read through store.read_consistently (on Redis, again when a write spans it).
"""
from __future__ import annotations

import threading
import time
from typing import Callable, Iterable

from ...core.errors import ConfigMismatch
from ...core.postings_index import Found, PostingsIndex
from ...core.vocabulary import BOTTOMK
from ...store.base import SketchStore, Snapshot, read_consistently

#: Articles between two progress lines of a build, a rebuild or a reconcile.
PROGRESS_EVERY = 200_000
#: Ids read from the store in one read while catching up (one round trip each on Redis).
READ_CHUNK = 10_000

Progress = Callable[[str], None]


def check_servable(store: SketchStore, index: str) -> None:
    """Refuses a store that `index` (which search index, as the message names it) cannot serve, naming the fix:
    the search indexes hold bottom-K postings."""
    store.require_postings()
    if store.config.kind != BOTTOMK:
        raise ConfigMismatch(f"{index} serves stores of bottom-K sketches; store {store.location} "
                             f"holds {store.config.kind} sketches: use --search-index store")


def read_current(store: SketchStore, ids: Iterable[str]) -> "list[tuple[str, tuple[int, bytes] | None]]":
    """(id, (docno, sketch) or None) of each id as the store holds it now, READ_CHUNK ids a read."""
    ids = list(ids)
    current = []
    for first in range(0, len(ids), READ_CHUNK):
        chunk = ids[first:first + READ_CHUNK]
        current += read_consistently(store, lambda snapshot: list(zip(chunk, snapshot.sketches(chunk))))
    return current


def put_or_delete(index: PostingsIndex, current: "list[tuple[str, tuple[int, bytes] | None]]") -> None:
    """Each (id, (docno, sketch) or None) read from the store, put into the index or deleted from it."""
    for doc_id, stored in current:
        if stored is None:
            index.delete(doc_id)
        else:
            index.put(doc_id, *stored)


def catch_up(index: PostingsIndex, store: SketchStore, generation: int, progress: Progress) -> int:
    """Brings an index at `generation` up to the store's state now; returns a generation it is at least as new as.
    The change log's ids since `generation`, read again; else (the log no longer reaches back, or the store went
    back) every article compared (reconcile)."""
    now = store.generation()
    changed = store.changed_since(generation)
    if changed is None:
        why = "is older than" if now < generation else "no longer reaches back to"
        progress(f"search index: the store (generation {now:,}) {why} the file's generation {generation:,}: "
                 "comparing every article")
        return reconcile(index, store, progress)
    put_or_delete(index, read_current(store, changed))
    return now


def reconcile(index: PostingsIndex, store: SketchStore, progress: Progress) -> int:
    """Every article of the store compared with the index's (by docno: id and sketch); what differs is put, what the
    store no longer holds deleted. Returns the generation read before the scan."""
    began = time.perf_counter()

    def scan(snapshot: Snapshot, now: int) -> int:
        seen = bytearray(max(snapshot.docno_limit(), index.stats()["docno_limit"]))
        for count, (docno, doc_id, sketch) in enumerate(snapshot.scan(), 1):
            seen[docno] = 1
            if index.article(docno) != (doc_id, sketch):
                index.put(doc_id, docno, sketch)
            if count % PROGRESS_EVERY == 0:
                progress(f"search index: {count:,} articles compared ({time.perf_counter() - began:.1f} s)")
        gone = [doc_id for docno, doc_id, _ in index.articles() if docno >= len(seen) or not seen[docno]]
        for doc_id in gone:
            index.delete(doc_id)
        return now

    now = read_consistently(store, scan, with_generation=True)
    progress(f"search index: compared with the store in {time.perf_counter() - began:.1f} s "
             f"({index.stats()['delta_entries']:,} postings in the delta)")
    return now


class FollowingSearchIndex:
    """What the two serving indexes share: a PostingsIndex under a lock (held for a search or an update, never for
    seconds), which answers while _answering() gives it; the subclass follows the store."""

    _lock: threading.Lock
    _index: PostingsIndex | None

    def _answering(self) -> PostingsIndex | None:
        """The index that answers now (the lock held), or None: search the store."""
        return self._index

    def search(self, doc_id: str | None, sketch: bytes | None, threshold: float, metric: str,
               max_candidates: int) -> "tuple[bool, Found] | None":
        """The articles reaching the threshold with article doc_id (with its stored sketch when sketch is None;
        else with sketch, never doc_id itself), and whether doc_id is stored; (False, no matches) for a doc_id
        not stored and no sketch. None while the index cannot answer (being rebuilt, compacted or mapped anew, or
        after a failure): search the store."""
        with self._lock:
            index = self._answering()
            if index is None:
                return None
            stored = index.stored(doc_id) if doc_id else None
            if sketch is None:
                if stored is None:
                    return False, Found([], True)
                sketch = stored[1]
            return stored is not None, index.search(sketch, threshold, metric, stored[0] if stored else -1,
                                                    max_candidates=max_candidates)

    def stats(self) -> dict | None:
        """PostingsIndex.stats and the subclass's own (_own_stats); None while the index cannot answer."""
        with self._lock:
            index = self._answering()
            return None if index is None else {**index.stats(), **self._own_stats()}

    def _own_stats(self) -> dict:
        return {}
