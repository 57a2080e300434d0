"""The in-memory search index of one serving process (`neardup serve --search-index memory`): built from the
store at start, kept current by the change feed the view follows, so a FindSimilar answered from it is at least as
fresh as the store's generation when the call began, as a search of the store is.

Each changed id is read again from the store (its docno and sketch, or its absence; a batch's ids in one read, one
round trip on Redis) and put or deleted; a feed that lost track (None: the change log no longer reaches back, the
store went back) drops the index and rebuilds it. The work that takes seconds at a million articles, that rebuild
and the fold of the delta into a new base (MemoryIndex.compact), runs in a background thread: the feed's
subscriber, called on a request's thread under the feed's lock, never waits for it, so no request of the worker
stalls. Meanwhile searches return None and the engine searches the store (exact, slower), and the ids changed
meanwhile are kept and applied before the index answers again. Every read of the store is one committed state,
read through store.read_consistently (on Redis, again when a write spans it), as a search of the store is.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ..core.errors import ConfigMismatch
from ..core.memory_index import Found, MemoryIndex
from ..core.vocabulary import BOTTOMK
from ..store.base import SketchStore, Snapshot, read_consistently
from .changefeed import ChangeFeed

log = logging.getLogger("neardup.serve")
#: Articles between two progress lines of a build.
PROGRESS_EVERY = 200_000


def check_store(store: SketchStore) -> None:
    """Refuses a store the memory index cannot serve, naming the fix."""
    store.require_postings()
    if store.config.kind != BOTTOMK:
        raise ConfigMismatch(f"--search-index memory serves stores of bottom-K sketches; store {store.location} "
                             f"holds {store.config.kind} sketches: use --search-index store")


class LiveIndex:
    def __init__(self, store: SketchStore, feed: ChangeFeed, progress: Callable[[str], None] = log.info):
        """Builds the index from the store now (subscribed to the feed first: nothing written meanwhile is lost)."""
        check_store(store)
        self._store = store
        self._progress = progress
        self._lock = threading.Lock()  # guards the fields below; held for a search or an update, never for seconds
        self._index: MemoryIndex | None = None  # None: being rebuilt, or a background step failed (see the log)
        self._busy = False  # a background rebuild or compaction owns the index
        self._changed: set[str] = set()  # while busy: the ids changed meanwhile
        self._lost = False  # while busy: the feed lost track meanwhile (rebuild)
        self.build_seconds = 0.0
        feed.subscribe(self._follow)
        self._index = self._build()

    @property
    def busy(self) -> bool:
        """Whether a rebuild or a compaction runs in the background (searches go to the store meanwhile)."""
        with self._lock:
            return self._busy

    def _build(self) -> MemoryIndex:
        began = time.perf_counter()
        index = read_consistently(self._store, self._scan)
        index.build()
        stats = index.stats()
        self.build_seconds = time.perf_counter() - began
        self._progress(f"search index: {len(index):,} articles, {stats['base_entries']:,} postings, "
                       f"{stats['bytes'] / 1e6:,.0f} MB of arrays, built in {self.build_seconds:.1f} s")
        return index

    def _scan(self, snapshot: Snapshot) -> MemoryIndex:
        began = time.perf_counter()
        index = MemoryIndex(self._store.config.k)
        for count, (docno, doc_id, sketch) in enumerate(snapshot.scan(), 1):
            index.put(doc_id, docno, sketch)
            if count % PROGRESS_EVERY == 0:
                self._progress(f"search index: {count:,} articles read ({time.perf_counter() - began:.1f} s)")
        return index

    def _read(self, ids: set[str]) -> list[tuple[str, tuple[int, bytes] | None]]:
        """(id, (docno, sketch) or None) of each id as the store holds it now: one round trip on Redis."""
        ids = list(ids)
        return read_consistently(self._store, lambda snapshot: list(zip(ids, snapshot.sketches(ids))))

    def _follow(self, _now: int, changed: set[str] | None) -> None:
        # The feed calls this once at a time, so no background step starts between the two locked blocks.
        with self._lock:
            if self._busy:  # the background step applies them when it is done
                self._lost |= changed is None
                self._changed |= changed or set()
                return
            if self._index is None:  # a background step failed: the store answers from now on
                return
            if changed is None:
                self._index = None  # may answer with what is no longer stored; freed before the rebuild
                self._start(rebuild=True)
                return
        current = self._read(changed)  # outside the lock: searches go on meanwhile
        with self._lock:
            _put_or_delete(self._index, current)
            if self._index.compaction_due():
                self._start(rebuild=False)

    def _start(self, rebuild: bool) -> None:
        """Hands the index to a background rebuild or compaction (the lock held)."""
        self._busy, self._changed, self._lost = True, set(), False
        threading.Thread(target=self._background, args=(rebuild,), name="search-index", daemon=True).start()

    def _background(self, rebuild: bool) -> None:
        index = None if rebuild else self._index
        try:
            while True:
                if index is None:
                    index = self._build()
                else:
                    began = time.perf_counter()
                    index.compact()
                    self._progress(f"search index: delta folded into a new base in "
                                   f"{time.perf_counter() - began:.1f} s")
                while True:  # catch up with what changed meanwhile, then answer again
                    with self._lock:
                        changed, lost = self._changed, self._lost
                        self._changed, self._lost = set(), False
                        if not changed and not lost:
                            self._index, self._busy = index, False
                            return
                    if lost:
                        index = None
                        break
                    _put_or_delete(index, self._read(changed))
                    if index.compaction_due():
                        break
        except Exception:  # noqa: BLE001 (a thread's failure is logged; the store answers from now on)
            log.exception("search index: the background %s failed; FindSimilar searches the store until a restart",
                          "rebuild" if rebuild else "compaction")
            with self._lock:
                self._index, self._busy = None, False

    def search(self, doc_id: str | None, sketch: bytes | None, threshold: float, metric: str,
               max_candidates: int) -> "tuple[bool, Found] | None":
        """The articles reaching the threshold with article doc_id (with its stored sketch when sketch is None;
        else with sketch, never doc_id itself), and whether doc_id is stored; (False, no matches) for a doc_id
        not stored and no sketch. None while the index is rebuilt or compacted: search the store."""
        with self._lock:
            if self._busy or self._index is None:
                return None
            stored = self._index.stored(doc_id) if doc_id else None
            if sketch is None:
                if stored is None:
                    return False, Found([], True)
                sketch = stored[1]
            return stored is not None, self._index.search(sketch, threshold, metric, stored[0] if stored else -1,
                                                          max_candidates=max_candidates)

    def stats(self) -> dict | None:
        """MemoryIndex.stats and the seconds of the last build; None while busy or after a failure."""
        with self._lock:
            if self._busy or self._index is None:
                return None
            return {**self._index.stats(), "build_seconds": self.build_seconds}


def _put_or_delete(index: MemoryIndex, current: list[tuple[str, tuple[int, bytes] | None]]) -> None:
    """Each (id, (docno, sketch) or None) read from the store, put into the index or deleted from it."""
    for doc_id, stored in current:
        if stored is None:
            index.delete(doc_id)
        else:
            index.put(doc_id, *stored)

