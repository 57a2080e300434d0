"""The default store: one embedded LMDB environment (a directory holding data.mdb and lock.mdb).

Why LMDB: reads are a B-tree lookup in a memory map with no server and no copy until Python's bytes, many
processes read at once without locks, a write batch is one transaction (copy-on-write pages, so a process
killed at any moment leaves the last committed state), and opening is O(1) whatever the size.

Sub-databases: `sketches` (id → sketch bytes), `meta` (format version, configuration, stop-list, created-at,
generation, the change log's floor and size) and `changes` (generation → ids it wrote or deleted).
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import struct
import sys
from pathlib import Path
from typing import Iterable, Sequence

import lmdb

from ..core.sketch import SketchConfig, decode_sketch, encode_sketch, stoplist_digest
from ..errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from .base import SketchStore, encode_id

FORMAT_VERSION = 1
#: Address space reserved for the map, not disk: the file grows only as data is written. Growing the map later
#: is unsafe while other threads of the process read, so the default is large enough never to be reached.
DEFAULT_MAP_SIZE = (1 << 40) if sys.maxsize > 2**32 else (1 << 30)
#: Ids kept in the change log; a cache asking about older writes is told to drop everything.
CHANGE_LOG_IDS = 100_000
_MAX_READERS = 1024  # reader slots across all processes: server workers × threads, plus tools

_FORMAT_VERSION, _CONFIG, _STOPLIST, _CREATED_AT = b"format_version", b"config", b"stoplist", b"created_at"
_GENERATION, _LOG_FLOOR, _LOG_IDS = b"generation", b"log_floor", b"log_ids"


def _int(value: int) -> bytes:
    """Big-endian, so the change log's keys sort by generation."""
    return struct.pack(">Q", value)


def _read_int(value: bytes | None) -> int:
    return struct.unpack(">Q", value)[0] if value else 0


def _fix(path: Path) -> str:
    return f"create it with `neardup index CORPUS --store {path}`"


class LmdbStore(SketchStore):
    backend = "lmdb"

    def __init__(self, env: lmdb.Environment, path: Path):
        """Reads the store's metadata; anything unreadable is StoreUnavailable, saying what to do."""
        self._env = env
        self._path = path
        try:
            self._meta = env.open_db(b"meta", create=False)
            with env.begin(db=self._meta) as txn:
                version = txn.get(_FORMAT_VERSION)
                if version is None:
                    raise StoreUnavailable(f"{path} is an LMDB database but not a neardup store; {_fix(path)}")
                if int(version) != FORMAT_VERSION:
                    raise StoreUnavailable(f"store {path} has format version {int(version)}, this neardup reads "
                                           f"version {FORMAT_VERSION}: re-index the corpus into a new store")
                config = SketchConfig.from_dict(json.loads(txn.get(_CONFIG)))
                stoplist = frozenset(decode_sketch(txn.get(_STOPLIST)))
            self._sketches = env.open_db(b"sketches", create=False)
            self._changes = env.open_db(b"changes", create=False)
        except lmdb.NotFoundError:
            raise StoreUnavailable(f"{path} is an LMDB database but not a neardup store; {_fix(path)}") from None
        except (lmdb.Error, ValueError, TypeError, InvalidArgument) as error:
            raise StoreUnavailable(f"cannot read store {path} ({error}): restore it from a backup or re-index "
                                   "the corpus into a new store") from None
        super().__init__(config, stoplist, int(version), str(path))

    @classmethod
    def open(cls, path: str | os.PathLike, readonly: bool = False, map_size: int = DEFAULT_MAP_SIZE) -> "LmdbStore":
        path = Path(path)
        try:
            if not path.exists():
                raise StoreUnavailable(f"no store at {path}: {_fix(path)}")
            if not (path / "data.mdb").is_file():
                raise StoreUnavailable(f"{path} is not a neardup store (no data.mdb); {_fix(path)}, "
                                       "or point --store at the store's directory")
        except OSError as error:
            raise StoreUnavailable(f"cannot open store {path}: {error.strerror}") from None
        env = _open_env(path, readonly, map_size, create=False)
        try:
            store = cls(env, path)
        except BaseException:
            env.close()
            raise
        if not readonly:
            env.reader_check()  # frees reader slots of killed processes, so old pages can be reused
        return store

    @classmethod
    def create(cls, path: str | os.PathLike, config: SketchConfig, stoplist: Iterable[int],
               map_size: int = DEFAULT_MAP_SIZE) -> "LmdbStore":
        """Builds the store in a sibling directory and renames it into place, so a process killed while
        creating leaves either no store or a complete, empty one."""
        path = Path(path)
        cls.check_new(config)
        stoplist = sorted(set(stoplist))
        if stoplist_digest(stoplist) != config.stoplist_digest:
            raise ConfigMismatch("the stop-list does not match the configuration's stoplist_digest")
        building = path.with_name(f".{path.name}.creating-{os.getpid()}")
        try:
            building.mkdir(parents=True)
            with _open_env(building, readonly=False, map_size=map_size, create=True) as env, \
                    env.begin(write=True) as txn:
                for name in (b"sketches", b"changes"):
                    env.open_db(name, txn=txn)
                meta = env.open_db(b"meta", txn=txn)
                txn.put(_FORMAT_VERSION, str(FORMAT_VERSION).encode(), db=meta)
                txn.put(_CONFIG, json.dumps(config.to_dict(), sort_keys=True).encode(), db=meta)
                txn.put(_STOPLIST, encode_sketch(stoplist), db=meta)
                txn.put(_CREATED_AT, datetime.datetime.now(datetime.timezone.utc).isoformat().encode(), db=meta)
                for key in (_GENERATION, _LOG_FLOOR, _LOG_IDS):
                    txn.put(key, _int(0), db=meta)
            os.rename(building, path)  # replaces an empty directory; fails on anything else
        except OSError as error:
            shutil.rmtree(building, ignore_errors=True)
            if (path / "data.mdb").exists():
                raise StoreUnavailable(f"{path} already holds a store; open it instead, or choose another "
                                       "directory") from None
            raise StoreUnavailable(f"cannot create store {path}: {error.strerror}") from None
        except BaseException:
            shutil.rmtree(building, ignore_errors=True)
            raise
        _sync_directory(path.parent)
        return cls.open(path, map_size=map_size)

    # --- reads: one short read transaction per call, so every call sees the latest committed batch ------------

    def get_many(self, ids: Sequence[str]) -> list[bytes | None]:
        try:
            with self._env.begin(db=self._sketches) as txn:
                return list(map(txn.get, map(str.encode, ids)))
        except (lmdb.BadValsizeError, UnicodeEncodeError, TypeError):
            for doc_id in ids:
                encode_id(doc_id)  # names the bad id
            raise
        except lmdb.Error as error:
            raise StoreUnavailable(f"cannot read store {self._path}: {error}") from None

    def generation(self) -> int:
        with self._env.begin(db=self._meta) as txn:
            return _read_int(txn.get(_GENERATION))

    def changed_since(self, generation: int) -> set[str] | None:
        with self._env.begin(db=self._meta) as txn:
            now = _read_int(txn.get(_GENERATION))
            if generation == now:
                return set()
            if generation > now or generation < _read_int(txn.get(_LOG_FLOOR)):
                return None
            changed: set[str] = set()
            cursor = txn.cursor(db=self._changes)
            if cursor.set_range(_int(generation + 1)):
                for _, ids in cursor:
                    changed.update(json.loads(ids))
            return changed

    def count(self) -> int:
        with self._env.begin() as txn:
            return txn.stat(self._sketches)["entries"]

    # --- writes: one write transaction per batch ----------------------------------------------------------------

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> int:
        checked = self.checked_items(items)
        if not checked:
            return self.generation()
        _, generation = self._write(lambda txn: txn.cursor(db=self._sketches).putmulti(checked),
                                    [doc_id for doc_id, _ in items])
        return generation

    def delete_many(self, ids: Sequence[str]) -> tuple[int, int]:
        keys = [encode_id(doc_id) for doc_id in ids]
        if not keys:
            return 0, self.generation()
        return self._write(lambda txn: sum(txn.delete(key, db=self._sketches) for key in keys), list(ids))

    def _write(self, change, ids: list[str]) -> tuple:
        """Runs change(txn) and logs ids under the next generation, all in one transaction.
        Returns (what change returned, the new generation)."""
        try:
            with self._env.begin(write=True) as txn:
                outcome = change(txn)
                generation = _read_int(txn.get(_GENERATION, db=self._meta)) + 1
                self._log(txn, generation, sorted(set(ids)))
                txn.put(_GENERATION, _int(generation), db=self._meta)
            return outcome, generation
        except lmdb.MapFullError:
            raise StoreUnavailable(f"store {self._path} reached its map size of {self._env.info()['map_size']} "
                                   "bytes; reopen it with a larger map_size") from None
        except lmdb.ReadonlyError:
            raise StoreUnavailable(f"store {self._path} is open read-only") from None
        except lmdb.Error as error:
            raise StoreUnavailable(f"cannot write store {self._path}: {error}") from None

    def _log(self, txn: lmdb.Transaction, generation: int, ids: list[str]) -> None:
        """Appends to the change log and drops its oldest entries beyond CHANGE_LOG_IDS ids."""
        if len(ids) > CHANGE_LOG_IDS:
            txn.drop(self._changes, delete=False)
            txn.put(_LOG_FLOOR, _int(generation), db=self._meta)
            txn.put(_LOG_IDS, _int(0), db=self._meta)
            return
        txn.put(_int(generation), json.dumps(ids, ensure_ascii=False).encode(), db=self._changes)
        logged = _read_int(txn.get(_LOG_IDS, db=self._meta)) + len(ids)
        cursor = txn.cursor(db=self._changes)
        while logged > CHANGE_LOG_IDS and cursor.first():
            oldest, oldest_ids = cursor.item()
            logged -= len(json.loads(oldest_ids))
            txn.put(_LOG_FLOOR, oldest, db=self._meta)
            cursor.delete()
        txn.put(_LOG_IDS, _int(logged), db=self._meta)

    def close(self) -> None:
        self._env.close()


def _damaged(path: Path, why: object) -> StoreUnavailable:
    return StoreUnavailable(f"store {path} is damaged ({why}): restore it from a backup or re-index the corpus "
                            "into a new store")


def _open_env(path: Path, readonly: bool, map_size: int, create: bool) -> lmdb.Environment:
    try:
        env = lmdb.open(str(path), map_size=map_size, readonly=readonly, create=create, max_dbs=3,
                        max_readers=_MAX_READERS, readahead=False, meminit=False)
    except (lmdb.InvalidError, lmdb.CorruptedError, lmdb.VersionMismatchError) as error:
        raise _damaged(path, error) from None
    except lmdb.Error as error:
        raise StoreUnavailable(f"cannot open store {path}: {error}") from None
    _check_length(env, path)
    return env


def _check_length(env: lmdb.Environment, path: Path) -> None:
    """A cut data file (a partial copy, a full disk) has meta pages pointing past its end; touching such a page
    through the memory map kills the process with SIGBUS, so it is refused before any page is read.
    A committed transaction's pages are always written before its meta page, so a sound file is never short."""
    needed = (env.info()["last_pgno"] + 1) * env.stat()["psize"]
    size = (path / "data.mdb").stat().st_size
    if size < needed:
        env.close()
        raise _damaged(path, f"data.mdb is {size} bytes, its last page ends at {needed}")


def _sync_directory(path: Path) -> None:
    """Makes a rename in path durable across a power cut, not only a killed process."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
