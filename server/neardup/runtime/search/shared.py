"""The search index one host's serving processes share (`neardup serve --search-index shared`): each worker maps the
search index file (base_file.py) and keeps only what was written since in its own memory (delta.py), following the
change feed as memory.MemorySearchIndex does, so its answers are as fresh as a search of the store. Past
SHARED_DELTA_SHARE one worker writes a new file in the background; every worker notices it, maps it and catches up.
How workers share, catch up and swap files: docs/design.md ("One search index per host").
"""
from __future__ import annotations

import fcntl
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable

from ...core.postings_index import DELTA_MIN, SHARED_DELTA_SHARE, PostingsIndex
from ...store.base import SketchStore
from ..changefeed import ChangeFeed
from . import base_file
from .delta import FollowingSearchIndex, catch_up, put_or_delete, read_current, reconcile

log = logging.getLogger("neardup.serve")
#: How often a worker looks whether the file was replaced (by another worker's rebuild, or the command).
WATCH_SECONDS = 1.0


class SharedSearchIndex(FollowingSearchIndex):
    def __init__(self, store: SketchStore, feed: ChangeFeed, path: str | os.PathLike,
                 progress: Callable[[str], None] = log.info, watch_seconds: float | None = None):
        """Maps the file and catches up with the store now (subscribed to the feed first: nothing written meanwhile
        is lost); StoreUnavailable or ConfigMismatch when the file cannot be used."""
        base_file.check_store(store)
        self._store = store
        self._path = Path(path)
        self._progress = progress
        self._lock = threading.Lock()  # guards the fields below; held for a search or an update, never for seconds
        self._index: PostingsIndex | None = None  # None while it cannot answer (searches go to the store)
        self._identity: base_file.Identity | None = None  # the file mapped (or last refused)
        self._generation = 0  # a store generation the index is at least as new as
        self._reloading = False  # a background step maps a file; the ids changed meanwhile are kept:
        self._pending: set[str] = set()
        self._pending_lost = False
        self._writing = False  # a background step writes a new file
        self.files_written = 0
        self.files_mapped = 0
        self._stopped = threading.Event()
        feed.subscribe(self._follow)
        began = time.perf_counter()
        mapped = base_file.open_mapped(self._path, store)
        self._generation = catch_up(mapped.index, store, mapped.header["generation"], progress)
        self._index, self._identity = mapped.index, mapped.identity
        self.files_mapped = 1
        self.start_seconds = time.perf_counter() - began
        self._report(mapped, "mapped", self.start_seconds)
        self._watcher = threading.Thread(target=self._watch, args=(watch_seconds or WATCH_SECONDS,),
                                         name="search-index-watch",
                                         daemon=True)
        self._watcher.start()

    def _report(self, mapped: base_file.Mapped, what: str, seconds: float) -> None:
        stats = mapped.index.stats()
        self._progress(f"search index: {what} {self._path} ({mapped.header['articles']:,} articles at generation "
                       f"{mapped.header['generation']:,}, {stats['file_bytes'] / 1e6:,.0f} MB shared; "
                       f"{stats['delta_entries']:,} postings written since, {stats['bytes'] / 1e6:,.0f} MB of its "
                       f"own) in {seconds:.1f} s")

    @property
    def busy(self) -> bool:
        """Whether a background step maps or writes a file."""
        with self._lock:
            return self._reloading or self._writing

    def close(self) -> None:
        """Stops watching the file (the mapping goes when the index does)."""
        self._stopped.set()

    # --- following the store --------------------------------------------------------------------------------

    def _follow(self, now: int, changed: set[str] | None) -> None:
        with self._lock:
            if self._reloading:
                self._pending_lost |= changed is None
                self._pending |= changed or set()
            if self._index is None:
                return
            if changed is None:  # may answer with what is no longer stored: map and compare again
                self._index = None
                if not self._reloading:
                    self._start(self._reload, answering=False)
                return
        current = read_current(self._store, changed)  # outside the lock: searches go on meanwhile
        with self._lock:
            if self._index is None:
                return
            put_or_delete(self._index, current)
            self._generation = max(self._generation, now)
            if (not self._writing and not self._reloading
                    and self._index.compaction_due(SHARED_DELTA_SHARE, DELTA_MIN)):
                self._start(self._write_file)

    def _start(self, step, **kwargs) -> None:
        """Runs step in a background thread, marked as running (the lock held)."""
        if step == self._write_file:
            self._writing = True
        else:
            self._reloading, self._pending, self._pending_lost = True, set(), False
        threading.Thread(target=step, kwargs=kwargs, name="search-index", daemon=True).start()

    # --- a new file -----------------------------------------------------------------------------------------

    def _write_file(self) -> None:
        """Writes a new file from this worker's base and delta, unless another worker does (the file's lock) or
        did (the file on disk is no longer the one mapped: mapping that one is the cure); then maps it."""
        lock = None
        try:
            lock = _try_lock(self._path)
            if lock is None or base_file.identity(self._path) != self._identity:
                return
            began = time.perf_counter()
            with self._lock:
                if self._index is None:
                    return
                export, generation = self._index.export(), self._generation
            header = base_file.write_file(self._path, export, generation, self._store)
            del export
            self.files_written += 1
            self._progress(f"search index: wrote {self._path} ({header['articles']:,} articles at generation "
                           f"{generation:,}, {header['file_bytes'] / 1e6:,.0f} MB) in "
                           f"{time.perf_counter() - began:.1f} s")
        except Exception:  # noqa: BLE001 (a thread's failure is logged; the index goes on with its delta)
            log.exception("search index: writing a new file failed; the index goes on with its delta")
            return
        finally:
            if lock is not None:
                os.close(lock)
            with self._lock:
                self._writing = False
        with self._lock:
            if self._reloading:
                return
            self._reloading, self._pending, self._pending_lost = True, set(), False
        self._reload(answering=True)

    def _watch(self, seconds: float) -> None:
        while not self._stopped.wait(seconds):
            now = base_file.identity(self._path)
            with self._lock:
                if now is None or now == self._identity or self._reloading or self._index is None:
                    continue
                self._reloading, self._pending, self._pending_lost = True, set(), False
            self._reload(answering=True)

    def _reload(self, answering: bool) -> None:
        """Maps the file (anew), catches up with the store, then swaps it in (self._reloading set by the caller).
        `answering`: the current index answers meanwhile; else the store does."""
        try:
            began = time.perf_counter()
            mapped = base_file.open_mapped(self._path, self._store)
            index = mapped.index
            generation = catch_up(index, self._store, mapped.header["generation"], self._progress)
            while True:  # the ids changed meanwhile, until none is left
                with self._lock:
                    changed, lost = self._pending, self._pending_lost
                    self._pending, self._pending_lost = set(), False
                    if not changed and not lost:
                        self._index, self._identity = index, mapped.identity
                        self._generation = max(self._generation, generation)
                        self._reloading = False
                        self.files_mapped += 1
                        break
                if lost:
                    generation = reconcile(index, self._store, self._progress)
                else:
                    put_or_delete(index, read_current(self._store, changed))
            self._report(mapped, "mapped", time.perf_counter() - began)
        except Exception:  # noqa: BLE001
            log.exception("search index: mapping %s failed; %s", self._path,
                          "the file mapped before answers" if answering else
                          "FindSimilar searches the store until a restart")
            with self._lock:
                self._identity = base_file.identity(self._path)  # not tried again until it changes
                self._reloading = False

    # --- answers --------------------------------------------------------------------------------------------

    def _own_stats(self) -> dict:
        """The seconds the start took, the generation, files written and mapped."""
        return {"start_seconds": self.start_seconds, "generation": self._generation,
                "files_written": self.files_written, "files_mapped": self.files_mapped}


def _try_lock(path: Path) -> int | None:
    """An exclusive lock on the file's lock file (beside it), or None when another process holds it."""
    descriptor = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(descriptor)
        return None
    return descriptor
