"""Follows the store's writes for one process, so per-process caches stay exact even when another process
(a second server worker, `neardup index`) writes: one generation read per request, the change log when it moved."""
from __future__ import annotations

import threading
from typing import Callable

from ..store.base import SketchStore

#: Told the new generation and the ids changed since the previous one (None: unknown, drop everything).
Subscriber = Callable[[int, "set[str] | None"], None]


class ChangeFeed:
    def __init__(self, store: SketchStore):
        self._store = store
        self._lock = threading.Lock()
        self._subscribers: list[Subscriber] = []
        self.seen = store.generation()

    def subscribe(self, subscriber: Subscriber) -> None:
        self._subscribers.append(subscriber)

    def refresh(self, now: int | None = None) -> int:
        """Catches up with the store (at generation `now` if the caller just read it); returns the generation that
        whatever is read next is at least as new as."""
        if now is None:
            now = self._store.generation()
        if now != self.seen:
            with self._lock:
                if now > self.seen:
                    changed = self._store.changed_since(self.seen)
                    for subscriber in self._subscribers:
                        subscriber(now, changed)
                    self.seen = now
                elif now < self.seen and (now := self._store.generation()) < self.seen:
                    # Gone back, read again under the lock (not merely a thread that read before another's
                    # refresh): a Redis replica promoted without the last writes, a store restored from a backup.
                    # What was read since is unknown: drop everything.
                    for subscriber in self._subscribers:
                        subscriber(now, None)
                    self.seen = now
        return now
