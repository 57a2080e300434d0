"""An in-memory view of the store's sketches for the request path: a dict lookup per id instead of a B-tree
walk (measured: ~5 µs instead of ~85 µs for 100 ids). Filled on demand, kept exact by the change feed."""
from __future__ import annotations

import threading
from typing import Sequence

from .changefeed import ChangeFeed
from .store.base import SketchStore

DEFAULT_MAX_ENTRIES = 1_000_000


class SketchView:
    def __init__(self, store: SketchStore, feed: ChangeFeed, max_entries: int = DEFAULT_MAX_ENTRIES):
        self._store = store
        self._feed = feed
        self._max_entries = max_entries
        self._sketches: dict[str, bytes | None] = {}  # None: known not to be stored
        self._lock = threading.Lock()
        feed.subscribe(self._invalidate)

    def _invalidate(self, now: int, changed: set[str] | None) -> None:
        with self._lock:
            if changed is None or len(changed) > len(self._sketches):
                self._sketches.clear()
            else:
                for doc_id in changed:
                    self._sketches.pop(doc_id, None)

    def get_many(self, ids: Sequence[str]) -> list[bytes | None]:
        """Like SketchStore.get_many; call after feed.refresh() so the view has seen every earlier write."""
        try:
            return list(map(self._sketches.__getitem__, ids))
        except KeyError:
            return self._fill(ids)

    def _fill(self, ids: Sequence[str]) -> list[bytes | None]:
        seen = self._feed.seen
        sketches = [self._sketches.get(doc_id, _UNKNOWN) for doc_id in ids]
        positions = [p for p, sketch in enumerate(sketches) if sketch is _UNKNOWN]
        loaded = self._store.get_many([ids[p] for p in positions])
        for position, sketch in zip(positions, loaded):
            sketches[position] = sketch
        with self._lock:
            # a refresh since `seen` may have dropped ids whose older values we hold: keep nothing then
            if self._feed.seen == seen:
                if len(self._sketches) + len(positions) > self._max_entries:
                    self._sketches.clear()
                self._sketches.update((ids[p], sketches[p]) for p in positions)
        return sketches


_UNKNOWN = object()
