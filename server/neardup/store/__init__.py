"""Sketch storage: one interface (base.SketchStore), an embedded LMDB store on disk as the default, a Redis store
(redis:// or rediss:// URLs) for a fleet of servers, one sharded over a Redis Cluster (redis+cluster://). A
store's location picks its backend."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable, Sequence

from ..core.errors import StoreUnavailable, install_line
from ..core.sketch_config import SketchConfig
from .base import MAX_ID_BYTES, READ_ATTEMPTS, SketchStore, Snapshot, check_ids, encode_id, read_consistently
from .lmdb import DEFAULT_MAP_SIZE, LmdbStore

__all__ = ["MAX_ID_BYTES", "READ_ATTEMPTS", "SketchStore", "Snapshot", "check_ids", "encode_id", "read_consistently",
           "open_store", "create_store", "store_backend", "store_exists", "default_store_path", "LOCATION_HELP",
           "STORE_HELP"]

#: Where commands look for the store when --store is not given: $NEARDUP_STORE, else ./neardup-store.
STORE_ENV, DEFAULT_STORE_DIR = "NEARDUP_STORE", "neardup-store"
_REDIS_SCHEMES = ("redis://", "rediss://")
_CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
#: What a store's location may be, and the help of every command's --store option.
LOCATION_HELP = ("an LMDB directory, a Redis store redis://HOST:PORT/DB[?prefix=NAME] (rediss:// for TLS), or one "
                 "sharded over a Redis Cluster redis+cluster://HOST:PORT[,HOST:PORT...][?prefix=NAME&shards=N] "
                 "(rediss+cluster:// for TLS; N shards, 16 unless given at creation); password in "
                 "$NEARDUP_REDIS_PASSWORD, never in the URL")
STORE_HELP = f"the store: {LOCATION_HELP}; $NEARDUP_STORE overrides the default (default: %(default)s)"


def default_store_path() -> str:
    return os.environ.get(STORE_ENV) or DEFAULT_STORE_DIR


def _redis_store(location: str | os.PathLike):
    """The Redis backend's class for a redis:// or redis+cluster:// location, imported only for one (redis-py is
    the `redis` extra)."""
    try:
        if str(location).startswith(_CLUSTER_SCHEMES):
            from .redis_cluster import RedisClusterStore
            return RedisClusterStore
        from .redis import RedisStore
    except ImportError as error:
        raise StoreUnavailable(f"a redis:// store needs redis-py ({error}): {install_line('redis')}") from None
    return RedisStore


def is_redis(location: str | os.PathLike) -> bool:
    return str(location).startswith(_REDIS_SCHEMES + _CLUSTER_SCHEMES)


def store_backend(location: str | os.PathLike) -> type[SketchStore]:
    """The backend a location names (the class: what it allows is known before a store is opened or made)."""
    return _redis_store(location) if is_redis(location) else LmdbStore


def open_store(location: str | os.PathLike, readonly: bool = False, map_size: int = DEFAULT_MAP_SIZE) -> SketchStore:
    """An existing store; StoreUnavailable (saying what to do) when there is none or it cannot be read.
    `map_size`: an LMDB store's."""
    if is_redis(location):
        return _redis_store(location).open(str(location), readonly=readonly)
    return LmdbStore.open(location, readonly=readonly, map_size=map_size)


def create_store(location: str | os.PathLike, config: SketchConfig, stoplist: Iterable[int],
                 map_size: int = DEFAULT_MAP_SIZE, indexed: bool = True,
                 articles: Iterable[Sequence[tuple[str, bytes]]] | None = None,
                 postings_done: Callable[[int, int], None] | None = None) -> SketchStore:
    """A new store for sketches of `config` minus `stoplist` (whose digest the config must carry);
    `indexed`: keep postings for corpus search (FindSimilar, `neardup pairs`), at about 1.5× the sketches' bytes.
    `articles`: batches of (id, sketch) it holds from the start. An LMDB store writes them before it appears,
    each postings bucket once (`postings_done(part, parts)` after each part), where put_many's batches would
    rewrite every bucket they touch, a cost growing with the store; a Redis store appends them batch by batch."""
    if is_redis(location):
        store = _redis_store(location).create(str(location), config, stoplist, indexed=indexed)
        for batch in articles or ():
            store.put_many(batch)
        return store
    return LmdbStore.create(location, config, stoplist, map_size=map_size, indexed=indexed, articles=articles,
                            postings_done=postings_done)


def store_exists(location: str | os.PathLike) -> bool:
    """Whether location holds something to open as a store; False where one is to be created (no such path, an
    empty directory, a Redis database without the store's keys). What is there and no store, open_store
    refuses."""
    if is_redis(location):
        return _redis_store(location).exists(str(location))
    path = Path(location)
    return path.exists() and not (path.is_dir() and not any(path.iterdir()))
