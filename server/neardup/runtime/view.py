"""The store as one serving process sees it: sketches and answers it read before, kept exact by the change feed.

LiveView owns the freshness rule: its only way in is read(), which catches up with the store first (one
generation read), so neither a sketch, a cached answer nor the in-memory search index (when the server keeps one)
can be served from before a write that finished earlier, even one made by another process (a second worker,
`neardup index`).
"""
from __future__ import annotations

import threading
from typing import Callable, Sequence

from ..core._id_map import IdMap
from ..store.base import SketchStore
from .cache import DEFAULT_MAXSIZE, DEFAULT_TTL, SessionCache
from .changefeed import ChangeFeed
from .search.memory import MemorySearchIndex
from .search.shared import SharedSearchIndex

DEFAULT_MAX_SKETCHES = 1_000_000


class LiveView:
    def __init__(self, store: SketchStore, cache_size: int = DEFAULT_MAXSIZE, cache_ttl: float = DEFAULT_TTL,
                 max_sketches: int = DEFAULT_MAX_SKETCHES, search_index: bool | str = False,
                 search_index_file: str | None = None):
        """`search_index`: keep the store's sketches and postings in memory for FindSimilar: True or "memory", a
        copy of this process's own (MemorySearchIndex, built now); "shared", the search index file at
        `search_index_file` mapped (SharedSearchIndex, mapped and caught up now)."""
        self.store = store
        self._feed = ChangeFeed(store)
        self._sketches = _Memo(store.get_many, self._feed, max_sketches)
        self._clusters = _Memo(store.clusters, self._feed, max_sketches)
        # Whether the store is clustered changes only with a write (neardup cluster's batches go through the
        # change feed), so it is read again when the generation moves, not per request.
        self.clustered = store.clustered()
        self._feed.subscribe(lambda _now, _changed: setattr(self, "clustered", store.clustered()))
        self.answers = SessionCache(self._feed, cache_size, cache_ttl)
        if search_index == "shared":
            self.search_index: MemorySearchIndex | SharedSearchIndex | None = SharedSearchIndex(
                store, self._feed, search_index_file)
        else:
            self.search_index = MemorySearchIndex(store, self._feed) if search_index else None

    def read(self, ids: Sequence[str] = ()) -> "Reading":
        """What one request reads: everything at least as new as the store's generation now. With the request's
        ids, on a store whose reads are round trips, the sketches the view lacks come with the generation (one
        round trip, not two)."""
        missing = self._sketches.missing(ids) if ids and self.store.remote_reads else []
        if not missing:
            return Reading(self, self._feed.refresh())
        epoch = self._sketches.epoch
        read_at, sketches = self.store.generation_and_get_many(missing)
        now = self._feed.refresh(read_at)
        self._sketches.offer(missing, sketches, epoch)
        return Reading(self, now)

    def subscribe(self, subscriber: Callable[[int, "set[str] | None"], None]) -> None:
        """Told each new generation the view catches up with (and the ids changed), e.g. for metrics."""
        self._feed.subscribe(subscriber)


class Reading:
    """One request's access to a LiveView, at generation `generation` or newer (a served_store.Reader)."""

    __slots__ = ("generation", "get_many", "search_index", "_clusters", "_answers")

    def __init__(self, view: LiveView, generation: int):
        self.generation = generation
        self.search_index = view.search_index
        self.get_many: Callable[[Sequence[str]], list[bytes | None]] = view._sketches.get_many
        self._clusters = view._clusters.get_many if view.clustered else None
        self._answers = view.answers

    def clusters(self, ids: Sequence[str]) -> list[int] | None:
        """Like SketchStore.clusters once the store is clustered; None before."""
        return self._clusters(ids) if self._clusters is not None else None

    def cached(self, key: bytes):
        """The answer remembered for key, if none of the ids it read was written since; else None."""
        return self._answers.get(key, self.generation)

    def remember(self, key: bytes, answer, read_ids: Sequence[str]) -> None:
        self._answers.put(key, answer, read_ids, self.generation)


class _Memo:
    """What `load` answers per id (a sketch, a cluster id), filled on demand: a lookup per id instead of a B-tree
    walk, many times cheaper (benchmarks/request_cost.py), in an IdMap, whose lookups of a whole result set overlap
    their cache misses (a dict's follow one another). Exact only after the feed's refresh, which is why only
    Reading calls it."""

    def __init__(self, load: Callable[[Sequence[str]], list], feed: ChangeFeed, max_entries: int):
        self._load = load
        self._feed = feed
        self._max_entries = max_entries
        self._values = IdMap()  # a sketch's None: known not to be stored
        self._lock = threading.Lock()
        self.epoch = 0  # invalidations so far: a value read before one may be older than what it dropped
        feed.subscribe(self._invalidate)

    def _invalidate(self, now: int, changed: set[str] | None) -> None:
        with self._lock:
            self.epoch += 1
            if changed is None or len(changed) > len(self._values):
                self._values.clear()
            else:
                self._values.discard_many(changed)

    def get_many(self, ids: Sequence[str]) -> list:
        """What load(ids) answers."""
        values, unknown = self._values.get_many(ids, _UNKNOWN)
        return self._fill(ids, values) if unknown else values

    def missing(self, ids: Sequence[str]) -> list[str]:
        """The ids whose value the memo does not hold (as of the last refresh)."""
        values, unknown = self._values.get_many(ids, _UNKNOWN)
        return [doc_id for doc_id, value in zip(ids, values) if value is _UNKNOWN] if unknown else []

    def offer(self, ids: Sequence[str], values: list, epoch: int) -> None:
        """Values read from the store after `epoch` was taken: kept unless an invalidation came since (it may have
        dropped ids whose older values these are). One taken before the read saw every change the read may
        predate: the store's generation only grows."""
        with self._lock:
            if self.epoch == epoch:
                if len(self._values) + len(ids) > self._max_entries:
                    self._values.clear()
                self._values.update(ids, values)

    def _fill(self, ids: Sequence[str], values: list) -> list:
        """values (what the memo held, _UNKNOWN for the rest) completed from the store; the epoch is taken before
        the store is read (offer's rule)."""
        epoch = self.epoch
        positions = [p for p, value in enumerate(values) if value is _UNKNOWN]
        loaded = self._load([ids[p] for p in positions])
        for position, value in zip(positions, loaded):
            values[position] = value
        self.offer([ids[p] for p in positions], [values[p] for p in positions], epoch)
        return values


_UNKNOWN = object()
