"""Sketch storage: one interface (base.SketchStore), an embedded LMDB store on disk as the default."""
from __future__ import annotations

import os
from typing import Iterable

from ..core.sketch import SketchConfig
from .base import MAX_ID_BYTES, SketchStore, check_ids, encode_id
from .lmdb import DEFAULT_MAP_SIZE, FORMAT_VERSION, LmdbStore

__all__ = ["MAX_ID_BYTES", "FORMAT_VERSION", "SketchStore", "check_ids", "encode_id", "open_store", "create_store",
           "default_store_path"]

#: Where commands look for the store when --store is not given: $NEARDUP_STORE, else ./neardup-store.
STORE_ENV, DEFAULT_STORE_DIR = "NEARDUP_STORE", "neardup-store"


def default_store_path() -> str:
    return os.environ.get(STORE_ENV) or DEFAULT_STORE_DIR


def open_store(path: str | os.PathLike, readonly: bool = False, map_size: int = DEFAULT_MAP_SIZE) -> SketchStore:
    """An existing store; StoreUnavailable (saying what to do) when there is none or it cannot be read."""
    return LmdbStore.open(path, readonly=readonly, map_size=map_size)


def create_store(path: str | os.PathLike, config: SketchConfig, stoplist: Iterable[int],
                 map_size: int = DEFAULT_MAP_SIZE, indexed: bool = True) -> SketchStore:
    """A new, empty store for sketches of `config` minus `stoplist` (whose digest the config must carry);
    `indexed`: keep postings for corpus search (FindSimilar, `neardup pairs`), at about 1.5× the sketches' bytes."""
    return LmdbStore.create(path, config, stoplist, map_size=map_size, indexed=indexed)
