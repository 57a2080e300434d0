"""The in-memory search index of one serving process (`neardup serve --search-index memory`): built from the
store at start, kept current by the change feed the view follows, so a FindSimilar answered from it is at least as
fresh as the store's generation when the call began, as a search of the store is.

Each changed id is read again from the store (its docno and sketch, or its absence) and put or deleted; a feed that
lost track (None: the change log no longer reaches back, the store went back) rebuilds the whole index. Searches
and updates take one lock, so a search never sees half an update. A read that a write spans on a store without
older states (Redis: StoreChanged) is read again, as a search of the store is.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from .changefeed import ChangeFeed
from .core.memory_index import Found, MemoryIndex
from .core.reference import BOTTOMK
from .errors import ConfigMismatch, StoreChanged
from .store.base import SketchStore

log = logging.getLogger("neardup.serve")
#: Articles between two progress lines of a build.
PROGRESS_EVERY = 200_000
#: Reads of the store a write may span (Redis) before the StoreChanged is the caller's.
_READ_ATTEMPTS = 3


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
        self._lock = threading.Lock()
        feed.subscribe(self._follow)
        self._index = self._build()

    def _build(self) -> MemoryIndex:
        began = time.perf_counter()
        index = _read_again(self._scan)
        index.build()
        stats = index.stats()
        self.build_seconds = time.perf_counter() - began
        self._progress(f"search index: {len(index):,} articles, {stats['base_entries']:,} postings, "
                       f"{stats['bytes'] / 1e6:,.0f} MB of arrays, built in {self.build_seconds:.1f} s")
        return index

    def _scan(self) -> MemoryIndex:
        began = time.perf_counter()
        index = MemoryIndex(self._store.config.k)
        with self._store.snapshot() as snapshot:
            for count, (docno, doc_id, sketch) in enumerate(snapshot.scan(), 1):
                index.put(doc_id, docno, sketch)
                if count % PROGRESS_EVERY == 0:
                    self._progress(f"search index: {count:,} articles read ({time.perf_counter() - began:.1f} s)")
        return index

    def _read(self, ids: set[str]) -> list[tuple[str, tuple[int, bytes] | None]]:
        with self._store.snapshot() as snapshot:
            return [(doc_id, snapshot.sketch(doc_id)) for doc_id in ids]

    def _follow(self, _now: int, changed: set[str] | None) -> None:
        if changed is None:
            with self._lock:  # searches wait: the old index may answer with what is no longer stored
                self._index = None  # freed before the new one is built
                self._index = self._build()
            return
        current = _read_again(lambda: self._read(changed))
        with self._lock:
            for doc_id, stored in current:
                if stored is None:
                    self._index.delete(doc_id)
                else:
                    self._index.put(doc_id, *stored)
            self._index.compact_if_due()

    def stored(self, doc_id: str) -> tuple[int, bytes] | None:
        """(docno, sketch) of a stored article, or None."""
        with self._lock:
            return self._index.stored(doc_id)

    def search(self, sketch: bytes, threshold: float, metric: str, exclude: int, max_candidates: int) -> Found:
        """MemoryIndex.search, never during an update."""
        with self._lock:
            return self._index.search(sketch, threshold, metric, exclude, max_candidates=max_candidates)

    def stats(self) -> dict:
        """MemoryIndex.stats and the seconds of the last build."""
        with self._lock:
            return {**self._index.stats(), "build_seconds": self.build_seconds}


def _read_again(read):
    """read(), again when a write spanned it (StoreChanged), up to _READ_ATTEMPTS times."""
    for attempt in range(_READ_ATTEMPTS):
        try:
            return read()
        except StoreChanged:
            if attempt == _READ_ATTEMPTS - 1:
                raise
