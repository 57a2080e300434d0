"""The in-memory search index of one serving process (`neardup serve --search-index memory`): built from the store
at start, kept current by the change feed the view follows, so its answers are as fresh as a search of the store.
The rebuild and the fold of the delta take seconds at a million articles: they run in a background thread, the
searches meanwhile go to the store (None), and no request of the worker waits.
How it is laid out and kept current: docs/design.md ("Corpus search in memory").
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from ...core.postings_index import PostingsIndex
from ...store.base import SketchStore, Snapshot, read_consistently
from ..changefeed import ChangeFeed
from .delta import PROGRESS_EVERY, FollowingSearchIndex, check_servable, put_or_delete, read_current

log = logging.getLogger("neardup.serve")


def check_store(store: SketchStore) -> None:
    """Refuses a store the memory index cannot serve, naming the fix."""
    check_servable(store, "--search-index memory")


class MemorySearchIndex(FollowingSearchIndex):
    def __init__(self, store: SketchStore, feed: ChangeFeed, progress: Callable[[str], None] = log.info):
        """Builds the index from the store now (subscribed to the feed first: nothing written meanwhile is lost)."""
        check_store(store)
        self._store = store
        self._progress = progress
        self._lock = threading.Lock()  # guards the fields below; held for a search or an update, never for seconds
        self._index: PostingsIndex | None = None  # None: being rebuilt, or a background step failed (see the log)
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

    def _build(self) -> PostingsIndex:
        began = time.perf_counter()
        index = read_consistently(self._store, self._scan)
        index.build()
        stats = index.stats()
        self.build_seconds = time.perf_counter() - began
        self._progress(f"search index: {len(index):,} articles, {stats['base_entries']:,} postings, "
                       f"{stats['bytes'] / 1e6:,.0f} MB of arrays, built in {self.build_seconds:.1f} s")
        return index

    def _scan(self, snapshot: Snapshot) -> PostingsIndex:
        began = time.perf_counter()
        index = PostingsIndex(self._store.config.k)
        for count, (docno, doc_id, sketch) in enumerate(snapshot.scan(), 1):
            index.put(doc_id, docno, sketch)
            if count % PROGRESS_EVERY == 0:
                self._progress(f"search index: {count:,} articles read ({time.perf_counter() - began:.1f} s)")
        return index

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
        current = read_current(self._store, changed)  # outside the lock: searches go on meanwhile
        with self._lock:
            put_or_delete(self._index, current)
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
                    put_or_delete(index, read_current(self._store, changed))
                    if index.compaction_due():
                        break
        except Exception:  # noqa: BLE001 (a thread's failure is logged; the store answers from now on)
            log.exception("search index: the background %s failed; FindSimilar searches the store until a restart",
                          "rebuild" if rebuild else "compaction")
            with self._lock:
                self._index, self._busy = None, False

    def _answering(self) -> PostingsIndex | None:
        return None if self._busy else self._index

    def _own_stats(self) -> dict:
        """The seconds of the last build."""
        return {"build_seconds": self.build_seconds}
