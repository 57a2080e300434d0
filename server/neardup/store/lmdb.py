"""The default store: one embedded LMDB environment (a directory holding data.mdb and lock.mdb).

Why LMDB: lock-free reads from a memory map shared by every process, a write batch is one copy-on-write
transaction (a process killed at any moment leaves the last committed state), opening is O(1) whatever the size.
The sub-databases and why LMDB: docs/design.md ("Why LMDB"); postings: store/buckets.py.
"""
from __future__ import annotations

import datetime
import json
import os
import shutil
import struct
import sys
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import lmdb

from ..core.encoding import decode_sketch, encode_sketch
from ..core.errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from ..core.sketch_config import SketchConfig, stoplist_digest
from . import buckets
from .base import SketchStore, decode_languages, encode_id, encode_languages
from .buckets import BucketSnapshot, LargeBuckets
from .lmdb_commit_id import CommitId

_READABLE_VERSIONS = (1, 2)  # LmdbStore.FORMAT_VERSION, and 1 (read and written as stores without postings)
#: Address space reserved for the map, not disk: the file grows only as data is written. Growing the map later
#: is unsafe while other threads of the process read, so the default is large enough never to be reached.
DEFAULT_MAP_SIZE = (1 << 40) if sys.maxsize > 2**32 else (1 << 30)
#: Ids kept in the change log; a cache asking about older writes is told to drop everything.
CHANGE_LOG_IDS = 100_000
_MAX_READERS = 1024  # reader slots across all processes: server workers × threads, plus tools

_FORMAT_VERSION, _CONFIG, _STOPLIST, _CREATED_AT = b"format_version", b"config", b"stoplist", b"created_at"
_GENERATION, _LOG_FLOOR, _LOG_IDS = b"generation", b"log_floor", b"log_ids"
_INDEXED, _NEXT_DOCNO, _CLUSTERING, _MODEL = b"indexed", b"next_docno", b"clustering", b"pair_model"
_THRESHOLD, _LANGUAGES = b"threshold", b"languages"


def _int(value: int) -> bytes:
    """Big-endian, so the change log's keys sort by generation."""
    return struct.pack(">Q", value)


def _read_int(value: bytes | None) -> int:
    return struct.unpack(">Q", value)[0] if value else 0


def _fix(path: Path) -> str:
    return f"create it with `neardup index CORPUS --store {path}`"


class LmdbStore(SketchStore):
    backend = "lmdb"
    #: 2 added docnos, ids and postings (version 1 stores are read and written as stores without postings).
    FORMAT_VERSION = 2
    keeps_older_states = True  # a read transaction keeps its state's pages

    def __init__(self, env: lmdb.Environment, path: Path):
        """Reads the store's metadata; anything unreadable is StoreUnavailable, saying what to do."""
        self._env = env
        self._path = path
        self._commits = CommitId.attach(env, path)
        self._seen = (-1, -1)  # (LMDB transaction id, generation) of the last generation read
        self._large_buckets = LargeBuckets()  # decoded once per committed state (LmdbSnapshot)
        try:
            self._meta = env.open_db(b"meta", create=False)
            with env.begin(db=self._meta) as txn:
                version = txn.get(_FORMAT_VERSION)
                if version is None:
                    raise StoreUnavailable(f"{path} is an LMDB database but not a neardup store; {_fix(path)}")
                if int(version) not in _READABLE_VERSIONS:
                    raise StoreUnavailable(f"store {path} has format version {int(version)}, this neardup reads "
                                           f"versions {_READABLE_VERSIONS}: re-index the corpus into a new store")
                config = SketchConfig.from_dict(json.loads(txn.get(_CONFIG)))
                stoplist = frozenset(decode_sketch(txn.get(_STOPLIST)))
                indexed = txn.get(_INDEXED) == b"1"
            self._sketches = env.open_db(b"sketches", create=False)
            self._changes = env.open_db(b"changes", create=False)
            if indexed:
                self._docnos = env.open_db(b"docnos", create=False)
                self._ids = env.open_db(b"ids", create=False)
                self._postings = env.open_db(b"postings", create=False)
                self._clusters = _open_clusters(env)
        except lmdb.NotFoundError:
            raise StoreUnavailable(f"{path} is an LMDB database but not a neardup store; {_fix(path)}") from None
        except (lmdb.Error, ValueError, TypeError, InvalidArgument) as error:
            raise StoreUnavailable(f"cannot read store {path} ({error}): restore it from a backup or re-index "
                                   "the corpus into a new store") from None
        super().__init__(config, stoplist, int(version), str(path), indexed)

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
               map_size: int = DEFAULT_MAP_SIZE, indexed: bool = True,
               articles: Iterable[Sequence[tuple[str, bytes]]] | None = None,
               postings_done: Callable[[int, int], None] | None = None) -> "LmdbStore":
        """Builds the store in a sibling directory and renames it into place, so a process killed while
        creating leaves either no store or a complete one. `indexed`: keep postings too. `articles`: batches of
        (id, sketch) the new store holds from the start (_load: each postings bucket written once);
        `postings_done(part, parts)` after each part of the postings."""
        path = Path(path)
        cls.check_new(config)
        stoplist = sorted(set(stoplist))
        if stoplist_digest(stoplist) != config.stoplist_digest:
            raise ConfigMismatch("the stop-list does not match the configuration's stoplist_digest")
        _remove_abandoned(path)
        building = path.with_name(f".{path.name}.creating-{os.getpid()}")
        try:
            building.mkdir(parents=True)
            with _open_env(building, readonly=False, map_size=map_size, create=True) as env, \
                    env.begin(write=True) as txn:
                for name in (b"sketches", b"changes") + ((b"docnos", b"ids", b"postings", b"clusters") if indexed else ()):
                    env.open_db(name, txn=txn)
                meta = env.open_db(b"meta", txn=txn)
                txn.put(_FORMAT_VERSION, str(cls.FORMAT_VERSION).encode(), db=meta)
                txn.put(_CONFIG, json.dumps(config.to_dict(), sort_keys=True).encode(), db=meta)
                txn.put(_STOPLIST, encode_sketch(stoplist), db=meta)
                txn.put(_CREATED_AT, datetime.datetime.now(datetime.timezone.utc).isoformat().encode(), db=meta)
                for key in (_GENERATION, _LOG_FLOOR, _LOG_IDS, _NEXT_DOCNO):
                    txn.put(key, _int(0), db=meta)
                txn.put(_INDEXED, b"1" if indexed else b"0", db=meta)
            if articles is not None:
                # nothing reads the building store: its commits are not flushed one by one, but all at the end
                with cls(_open_env(building, readonly=False, map_size=map_size, create=False, sync=False),
                         building) as store:
                    store._load(articles, postings_done or (lambda done, parts: None))
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
        """Read once per request (view.LiveView): from memory while no transaction committed since the last read."""
        seen_id, generation = self._seen
        if self._commits is not None and self._commits.last() == seen_id:
            return generation
        with self._env.begin(db=self._meta) as txn:
            generation = _read_int(txn.get(_GENERATION))
            self._seen = (txn.id(), generation)
        return generation

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

    def items(self) -> Iterator[tuple[str, bytes]]:
        """In one read transaction: a consistent read, in LMDB's key order (the ids' bytes)."""
        with self._env.begin(db=self._sketches) as txn:
            for key, sketch in txn.cursor():
                yield key.decode(), sketch

    def snapshot(self) -> "LmdbSnapshot":
        self.require_postings()
        return LmdbSnapshot(self)

    def clusters(self, ids: Sequence[str]) -> list[int]:
        if not self.indexed or self._clusters is None:
            return [-1] * len(ids)
        with self._env.begin(db=self._clusters) as txn:
            return [struct.unpack("<q", found)[0] if found else -1 for found in map(txn.get, map(str.encode, ids))]

    def clustering(self) -> dict | None:
        with self._env.begin(db=self._meta) as txn:
            found = txn.get(_CLUSTERING)
        return json.loads(found) if found else None

    def model(self) -> bytes | None:
        with self._env.begin(db=self._meta) as txn:
            return txn.get(_MODEL)

    def set_model(self, model: bytes | None) -> None:
        def change(txn):
            if model is None:
                txn.delete(_MODEL, db=self._meta)
            else:
                txn.put(_MODEL, bytes(model), db=self._meta)

        self._write(change, [])

    def threshold(self) -> dict | None:
        with self._env.begin(db=self._meta) as txn:
            found = txn.get(_THRESHOLD)
        return json.loads(found) if found else None

    def set_threshold(self, setting: dict | None) -> None:
        def change(txn):
            if setting is None:
                txn.delete(_THRESHOLD, db=self._meta)
            else:
                txn.put(_THRESHOLD, json.dumps(setting, sort_keys=True).encode(), db=self._meta)

        self._write(change, [])

    def languages(self) -> frozenset[str]:
        with self._env.begin(db=self._meta) as txn:
            return decode_languages(txn.get(_LANGUAGES))

    def add_languages(self, languages: Iterable[str]) -> bool:
        languages = frozenset(languages)
        if languages <= self.languages():
            return False

        def change(txn):
            stored = txn.get(_LANGUAGES, db=self._meta)
            txn.put(_LANGUAGES, encode_languages(stored, languages).encode(), db=self._meta)

        self._write(change, [])
        return True

    def set_clusters(self, assignments: Sequence[tuple[str, int]], clustering: dict | None = None) -> int:
        self.require_postings()
        keys = [(encode_id(doc_id), cluster) for doc_id, cluster in assignments]

        def change(txn):
            described = clustering or json.loads(txn.get(_CLUSTERING, db=self._meta) or b"{}")
            next_id = described.get("next_id", 0)
            fresh: dict[int, int] = {}  # each negative number given: one new id
            stored = []
            for key, cluster in keys:
                if txn.get(key, db=self._docnos) is not None:
                    if cluster < 0:
                        if cluster not in fresh:
                            fresh[cluster], next_id = next_id, next_id + 1
                        cluster = fresh[cluster]
                    stored.append((key, struct.pack("<q", cluster)))
            txn.cursor(db=self._clusters).putmulti(stored)
            txn.put(_CLUSTERING, json.dumps({**described, "next_id": next_id}, sort_keys=True).encode(),
                    db=self._meta)

        return self._write(change, [doc_id for doc_id, _ in assignments])[1]

    def disk_usage(self) -> dict[str, int]:
        """Bytes of pages per part: sketches, index (docnos, ids, postings), clusters, other (meta, change log)."""
        parts = {"sketches": (self._sketches,), "other": (self._meta, self._changes),
                 "index": (self._docnos, self._ids, self._postings) if self.indexed else (),
                 "clusters": (self._clusters,) if self.indexed and self._clusters is not None else ()}
        with self._env.begin() as txn:
            return {part: sum(_pages(txn.stat(db)) for db in dbs) * self._env.stat()["psize"]
                    for part, dbs in parts.items()}

    # --- writes: one write transaction per batch ----------------------------------------------------------------

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> int:
        checked = self.checked_items(items)
        if not checked:
            return self.generation()

        def change(txn):
            if self.indexed:
                self._reindex(txn, dict(checked))
            txn.cursor(db=self._sketches).putmulti(checked)

        return self._write(change, [doc_id for doc_id, _ in items])[1]

    def delete_many(self, ids: Sequence[str]) -> tuple[int, int]:
        keys = [encode_id(doc_id) for doc_id in ids]
        if not keys:
            return 0, self.generation()

        def change(txn):
            if self.indexed:
                self._reindex(txn, dict.fromkeys(keys))
            return sum(txn.delete(key, db=self._sketches) for key in keys)

        return self._write(change, list(ids))

    def _load(self, batches: Iterable[Sequence[tuple[str, bytes]]], postings_done: Callable[[int, int], None]) -> None:
        """A new store's first articles: their sketches, numbers and ids batch by batch, their postings spilled
        (BucketBuilder) and written once per bucket at the end, so the cost grows with the articles, not with
        articles × buckets as put_many's batches do. An id given again is written after, by put_many (the
        later sketch wins, as in put_many). Generation 1 and nothing in the change log: no reader knew the store
        before."""
        builder = buckets.BucketBuilder(self.config.kind, self._path) if self.indexed else None
        docno, again = 0, []
        try:
            for batch in batches:
                numbered = []
                with self._env.begin(write=True) as txn:
                    for item, (key, sketch) in zip(batch, self.checked_items(batch)):
                        if not txn.put(key, sketch, db=self._sketches, overwrite=False):
                            again.append(item)
                            continue
                        if builder is not None:
                            txn.put(key, struct.pack("<I", docno), db=self._docnos)
                            txn.put(_docno_key(docno), key, db=self._ids, append=True)
                            numbered.append((sketch, docno))
                        docno += 1
                if builder is not None:
                    builder.add(numbered)
            with self._env.begin(write=True, db=self._meta) as txn:
                txn.put(_NEXT_DOCNO, _int(docno if builder is not None else 0))
                txn.put(_GENERATION, _int(1))
                txn.put(_LOG_FLOOR, _int(1))
            for part in range(builder.parts() if builder is not None else 0):
                with self._env.begin(write=True) as txn:
                    txn.cursor(db=self._postings).putmulti(builder.buckets(part), append=True)
                postings_done(part + 1, builder.parts())
            if again:
                self.put_many(again)
            self._env.sync(True)  # its commits were not flushed one by one (create)
        except lmdb.MapFullError:
            raise StoreUnavailable(f"store {self._path} reached its map size of {self._env.info()['map_size']} "
                                   "bytes; create it with a larger map_size") from None
        except lmdb.Error as error:
            raise StoreUnavailable(f"cannot write store {self._path}: {error}") from None
        finally:
            if builder is not None:
                builder.discard()

    def _reindex(self, txn: lmdb.Transaction, changes: dict[bytes, bytes | None]) -> None:
        """Moves the postings of each changed article (key → its new sketch, None when deleted), numbering new
        articles. Runs before the sketches are written: the old sketch says which postings to drop."""
        next_docno = _read_int(txn.get(_NEXT_DOCNO, db=self._meta))
        old, new = [], []
        for key, sketch in changes.items():
            number = txn.get(key, db=self._docnos)
            if number is not None:
                docno = struct.unpack("<I", number)[0]
                old.append((txn.get(key, db=self._sketches), docno))
                if sketch is None:
                    txn.delete(key, db=self._docnos)
                    txn.delete(_docno_key(docno), db=self._ids)
                    if self._clusters is not None:
                        txn.delete(key, db=self._clusters)
            elif sketch is not None:
                if next_docno > 0xFFFFFFFF:
                    raise StoreUnavailable(f"store {self._path} has numbered 2**32 articles: re-index it")
                docno, next_docno = next_docno, next_docno + 1
                txn.put(key, struct.pack("<I", docno), db=self._docnos)
                txn.put(_docno_key(docno), key, db=self._ids)
            if sketch is not None:
                new.append((sketch, docno))
        txn.put(_NEXT_DOCNO, _int(next_docno), db=self._meta)
        writes = buckets.rewrite(old, new, self.config.kind,
                                 lambda keys: dict(txn.cursor(db=self._postings).getmulti(keys)))
        for key in writes.deletes:
            txn.delete(key, db=self._postings)
        txn.cursor(db=self._postings).putmulti(writes.values)

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
        self._env.close()  # first: closing the lock file while the environment is open drops its locks (CommitId)
        if self._commits is not None:
            self._commits.close()

    def drop(self) -> None:
        self.close()
        try:
            os.remove(Path(self._path) / "data.mdb")
            shutil.rmtree(self._path)
        except OSError as error:
            raise StoreUnavailable(f"cannot remove store {self._path}: {error.strerror}") from None


class LmdbSnapshot(BucketSnapshot):
    """One read transaction: every read comes from the state committed when it began, whatever commits meanwhile
    (LMDB keeps that state's pages until the transaction ends), so it never raises StoreChanged."""

    def __init__(self, store: LmdbStore):
        super().__init__(store.config.kind, store._large_buckets)
        self._store = store
        self._txn = store._env.begin()

    @property
    def _state(self) -> int:
        return self._txn.id()

    def _buckets(self, keys: list[bytes]) -> dict[bytes, bytes]:
        return dict(self._txn.cursor(db=self._store._postings).getmulti(keys))

    def sketch(self, doc_id: str) -> tuple[int, bytes] | None:
        key = encode_id(doc_id)
        sketch = self._txn.get(key, db=self._store._sketches)
        if sketch is None:
            return None
        return struct.unpack("<I", self._txn.get(key, db=self._store._docnos))[0], sketch

    def articles(self, docnos: Sequence[int]) -> list[tuple[str, bytes]]:
        get, ids, sketches = self._txn.get, self._store._ids, self._store._sketches
        keys = [get(_docno_key(docno), db=ids) for docno in docnos]
        return [(key.decode(), get(key, db=sketches)) for key in keys]

    def scan(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bytes]]:
        cursor = self._txn.cursor(db=self._store._ids)
        if not cursor.set_range(_docno_key(start)):
            return
        get, sketches = self._txn.get, self._store._sketches
        for number, key in cursor:
            docno = struct.unpack(">I", number)[0]
            if stop is not None and docno >= stop:
                return
            yield docno, key.decode(), get(key, db=sketches)

    def id_keys(self) -> Iterator[bytes]:
        return self._txn.cursor(db=self._store._ids).iternext(keys=False, values=True)

    def docno_limit(self) -> int:
        return _read_int(self._txn.get(_NEXT_DOCNO, db=self._store._meta))

    def close(self) -> None:
        self._txn.abort()


def _open_clusters(env: lmdb.Environment):
    """The clusters database; a store made before it existed gets it at its first writable open."""
    try:
        return env.open_db(b"clusters", create=False)
    except lmdb.NotFoundError:
        if env.flags()["readonly"]:
            return None
        return env.open_db(b"clusters")


def _docno_key(docno: int) -> bytes:
    """Big-endian, so the ids database iterates in docno order."""
    return struct.pack(">I", docno)


def _pages(stat: dict) -> int:
    return stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]


def _damaged(path: Path, why: object) -> StoreUnavailable:
    return StoreUnavailable(f"store {path} is damaged ({why}): restore it from a backup or re-index the corpus "
                            "into a new store")


def _open_env(path: Path, readonly: bool, map_size: int, create: bool, sync: bool = True) -> lmdb.Environment:
    """`sync`: each commit reaches the disk before it returns (False only where nothing reads the store yet)."""
    try:
        env = lmdb.open(str(path), map_size=map_size, readonly=readonly, create=create, max_dbs=7,
                        max_readers=_MAX_READERS, readahead=False, meminit=False, sync=sync)
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


def _remove_abandoned(path: Path) -> None:
    """What creating the store at path left behind in a process that was killed (its sibling directory
    .NAME.creating-PID, whose process is gone): a killed build of a large store leaves gigabytes there."""
    prefix = f".{path.name}.creating-"
    try:
        siblings = [sibling for sibling in path.parent.iterdir() if sibling.name.startswith(prefix)]
    except OSError:
        return
    for sibling in siblings:
        pid = sibling.name[len(prefix):]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(sibling, ignore_errors=True)
        except OSError:
            pass  # another user's process: alive


def _sync_directory(path: Path) -> None:
    """Makes a rename in path durable across a power cut, not only a killed process."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
