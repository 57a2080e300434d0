"""Session cache: recent Dedup answers, so a result set asked again (paging back, a reload) costs a lookup.

An answer is served only while none of the ids it read has been written or deleted since it was computed,
including writes made by another server process: the store keeps a generation counter and a change log,
and a stale entry is found lazily, when it is hit.
"""
from __future__ import annotations

import threading
from typing import Hashable, Iterable

from cachetools import LRUCache, TTLCache

from .changefeed import ChangeFeed

DEFAULT_MAXSIZE = 10_000
DEFAULT_TTL = 300.0
_CHANGE_LOG_LIMIT = 1024


class SessionCache:
    """LRU (with an optional TTL) of answers keyed by the whole request, validated against store changes."""

    def __init__(self, feed: ChangeFeed, maxsize: int = DEFAULT_MAXSIZE, ttl: float = DEFAULT_TTL):
        if maxsize < 0 or ttl < 0:
            raise ValueError("cache size and TTL must be >= 0")
        self._answers = None if maxsize == 0 else TTLCache(maxsize, ttl) if ttl > 0 else LRUCache(maxsize)
        self._lock = threading.Lock()
        # (generation, ids changed after the previous entry's generation up to this one), oldest first
        self._changes: list[tuple[int, frozenset[str]]] = []
        self._horizon = feed.seen  # entries older than this cannot be validated any more
        feed.subscribe(self._note_changes)

    def _note_changes(self, now: int, changed: set[str] | None) -> None:
        with self._lock:
            if changed is None:
                self._changes.clear()
                self._horizon = now
                if self._answers is not None:
                    self._answers.clear()
            else:
                self._changes.append((now, frozenset(changed)))
                if len(self._changes) > _CHANGE_LOG_LIMIT:
                    self._horizon = self._changes.pop(0)[0]

    def get(self, key: Hashable, now: int):
        """The cached answer for key if it is still valid at generation `now` (from feed.refresh()), else None."""
        if self._answers is None:
            return None
        with self._lock:
            entry = self._answers.get(key)
            if entry is None:
                return None
            answer, ids, computed_at = entry
            if computed_at != now:
                if computed_at < self._horizon or any(
                        generation > computed_at and not changed.isdisjoint(ids)
                        for generation, changed in self._changes):
                    del self._answers[key]
                    return None
                self._answers[key] = (answer, ids, now)
            return answer

    def put(self, key: Hashable, answer, ids: Iterable[str], computed_at: int) -> None:
        """Stores an answer computed from the store as it was at generation computed_at (read before the sketches)."""
        if self._answers is not None:
            ids = frozenset(ids)  # only a cache that keeps answers pays for the set
            with self._lock:
                self._answers[key] = (answer, ids, computed_at)

    def __len__(self) -> int:
        return len(self._answers) if self._answers is not None else 0
