"""The default store: one embedded LMDB environment (a directory holding data.mdb and lock.mdb).

Why LMDB: reads are a B-tree lookup in a memory map with no server and no copy until Python's bytes, many
processes read at once without locks, a write batch is one transaction (copy-on-write pages, so a process
killed at any moment leaves the last committed state), and opening is O(1) whatever the size.

Sub-databases: `sketches` (id → sketch bytes), `meta` (format version, configuration, stop-list, created-at,
generation, the change log's floor and size, whether postings are kept, the next article number) and
`changes` (generation → ids it wrote or deleted). An indexed store (the default) also keeps, written in the same
transaction as the sketches, `docnos` (id → article number), `ids` (number → id) and `postings`, and
`clusters` (id → cluster id, written by `neardup cluster` and for each new article once the store is clustered).

Postings: value → the articles indexed under it, grouped in buckets by the value's low BUCKET_BITS bits.
One LMDB entry per (value, article) would cost ~18 bytes of node overhead for 4 bytes of article number, since
most values of a corpus are held by one article; a bucket entry is 6 bytes: a tag (uint16: the value's other 12
bits, then 4 bits of the article's length when it is short, core.similar's bound needs it) and the article
number (uint32). Buckets average ~120 entries at a million articles of 128 values. A write appends to a bucket
and decodes it only to drop entries (a replaced or deleted article), so a batch costs what it adds, not what
the buckets hold; a search decodes small buckets together and picks a hot value's entries out of its own.
What an article is indexed under is core.similar.index_values' rule: a bottom-K sketch's own values; for a
simhash store the four permutation-table keys of its fingerprint (each below 2**18, so a bucket is one key):
4 entries, 24 bytes, per article.
"""
from __future__ import annotations

import datetime
import json
import mmap
import os
import shutil
import struct
import sys
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import lmdb

import numpy as np

from ..core import similar
from ..core.similar import Postings, index_values
from ..core.sketch import SketchConfig, decode_sketch, encode_sketch, stoplist_digest
from ..errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from .base import SketchStore, Snapshot, encode_id

#: 2 added docnos, ids and postings (version 1 stores are read and written as stores without postings).
FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
#: Address space reserved for the map, not disk: the file grows only as data is written. Growing the map later
#: is unsafe while other threads of the process read, so the default is large enough never to be reached.
DEFAULT_MAP_SIZE = (1 << 40) if sys.maxsize > 2**32 else (1 << 30)
#: Ids kept in the change log; a cache asking about older writes is told to drop everything.
CHANGE_LOG_IDS = 100_000
_MAX_READERS = 1024  # reader slots across all processes: server workers × threads, plus tools

_FORMAT_VERSION, _CONFIG, _STOPLIST, _CREATED_AT = b"format_version", b"config", b"stoplist", b"created_at"
_GENERATION, _LOG_FLOOR, _LOG_IDS = b"generation", b"log_floor", b"log_ids"
_INDEXED, _NEXT_DOCNO, _CLUSTERING = b"indexed", b"next_docno", b"clustering"
BUCKET_BITS = 20
_BUCKET_MASK = (1 << BUCKET_BITS) - 1
_ENTRY = np.dtype([("tag", "<u2"), ("docno", "<u4")])  # packed: 6 bytes
_LENGTH_BITS = 4  # the low bits of a tag: a short article's length (< MIN_EVIDENCE = 16), 0 for a long one
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1


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
        self._commits = _CommitId.attach(env, path)
        self._seen = (-1, -1)  # (LMDB transaction id, generation) of the last generation read
        self._large_buckets: dict[bytes, _LargeBucket] = {}  # decoded once per committed state (LmdbSnapshot)
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
               map_size: int = DEFAULT_MAP_SIZE, indexed: bool = True) -> "LmdbStore":
        """Builds the store in a sibling directory and renames it into place, so a process killed while
        creating leaves either no store or a complete, empty one. `indexed`: keep postings too."""
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
                for name in (b"sketches", b"changes") + ((b"docnos", b"ids", b"postings", b"clusters") if indexed else ()):
                    env.open_db(name, txn=txn)
                meta = env.open_db(b"meta", txn=txn)
                txn.put(_FORMAT_VERSION, str(FORMAT_VERSION).encode(), db=meta)
                txn.put(_CONFIG, json.dumps(config.to_dict(), sort_keys=True).encode(), db=meta)
                txn.put(_STOPLIST, encode_sketch(stoplist), db=meta)
                txn.put(_CREATED_AT, datetime.datetime.now(datetime.timezone.utc).isoformat().encode(), db=meta)
                for key in (_GENERATION, _LOG_FLOOR, _LOG_IDS, _NEXT_DOCNO):
                    txn.put(key, _int(0), db=meta)
                txn.put(_INDEXED, b"1" if indexed else b"0", db=meta)
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

    def snapshot(self) -> "LmdbSnapshot":
        if not self.indexed:
            raise ConfigMismatch(f"store {self._path} keeps no postings (made without them, or by an older "
                                 "neardup): re-index the corpus into a new store to search it")
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

    def set_clusters(self, assignments: Sequence[tuple[str, int]], clustering: dict | None = None) -> int:
        self.snapshot().close()  # refuses a store without postings, saying why
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
        kind = self.config.kind
        old_values, old_docnos, _ = _flatten(old, kind)
        new_values, new_docnos, length_class = _flatten(new, kind)
        added = np.empty(len(new_values), _ENTRY)
        added["tag"] = _tags(new_values, length_class)
        added["docno"] = new_docnos
        new_buckets = new_values & _BUCKET_MASK
        order = np.argsort(new_buckets, kind="stable")
        new_buckets, added = new_buckets[order], added[order].tobytes()
        touched = _distinct(np.concatenate([old_values & _BUCKET_MASK, new_buckets]))
        ends = (np.searchsorted(new_buckets, touched, side="right") * _ENTRY.itemsize).tolist()
        starts = [0] + ends[:-1]
        raw_keys = touched.astype(">u4").tobytes()
        keys = [raw_keys[at:at + 4] for at in range(0, len(raw_keys), 4)]
        stored = dict(txn.cursor(db=self._postings).getmulti(keys))
        # an old article's entries leave every bucket of its old values: only those buckets are decoded
        dropping = {}
        for bucket, docnos in _grouped(old_values & _BUCKET_MASK, old_docnos):
            key = struct.pack(">I", bucket)
            entries = np.frombuffer(stored.get(key, b""), _ENTRY)
            dropping[key] = entries[~np.isin(entries["docno"], docnos)].tobytes()
        writes, deletes = [], []
        for key, start, end in zip(keys, starts, ends):
            value = dropping[key] if key in dropping else stored.get(key, b"")
            value += added[start:end]
            if value:
                writes.append((key, value))
            elif key in stored:
                deletes.append(key)
        for key in deletes:
            txn.delete(key, db=self._postings)
        txn.cursor(db=self._postings).putmulti(writes)

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

    def _remember_large(self, key: bytes, bucket: "_LargeBucket") -> "_LargeBucket":
        if len(self._large_buckets) >= _MAX_LARGE_BUCKETS:
            self._large_buckets.clear()
        self._large_buckets[key] = bucket
        return bucket

    def close(self) -> None:
        if self._commits is not None:
            self._commits.close()
        self._env.close()


class _CommitId:
    """LMDB's id of the last committed transaction, read from the lock file's shared memory (lock.mdb, where
    LMDB itself keeps it for readers to pick the newest snapshot): no transaction and no system call.

    Why: a read transaction gives up the GIL twice, and in a busy server each give-up is a thread hand-off; a
    generation read per request cost DedupStream 40 % of its messages per second (benchmarks/request_cost.py,
    measured with the read removed). Every commit of any process changes the id before a new reader can see the
    commit, so an unchanged id is an unchanged store. The layout (magic, format, the id after the reader-table
    mutex) is checked against the environment at open; where it differs (another platform or LMDB build, no lock
    file) attach() answers None and every generation read is a transaction, as before."""

    _MAGIC = 0xBEEFC0DE
    _OFFSET = 48  # 2 × uint32, then pthread_mutex_t (40 bytes on 64-bit Linux glibc)

    def __init__(self, memory: mmap.mmap):
        self._memory = memory

    @classmethod
    def attach(cls, env: lmdb.Environment, path: Path) -> "_CommitId | None":
        if sys.byteorder != "little" or struct.calcsize("P") != 8 or not env.flags()["lock"]:
            return None
        try:
            with open(path / "lock.mdb", "rb") as lock_file:
                memory = mmap.mmap(lock_file.fileno(), 4096, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            return None
        commits = cls(memory)
        for _ in range(3):  # a commit between the two reads makes them differ: try again
            before = commits.last()
            if struct.unpack_from("<I", memory, 0)[0] == cls._MAGIC and before == env.info()["last_txnid"] \
                    and before == commits.last():
                return commits
        memory.close()
        return None

    def last(self) -> int:
        return struct.unpack_from("<Q", self._memory, self._OFFSET)[0]

    def close(self) -> None:
        self._memory.close()


class _LargeBucket:
    """A postings bucket of over similar.HOT_POSTINGS entries (a hot value's, at 1M articles 10K-100K of them),
    decoded once and grouped by value: reading and scanning it per query was most of a search's time (~300 KB a
    query at 1M). Valid only for the committed state it was read at (LMDB's transaction id): a snapshot of
    another one reads the bucket again."""

    __slots__ = ("txnid", "_by_value")

    def __init__(self, txnid: int, bucket: bytes):
        self.txnid = txnid
        words = np.frombuffer(bucket, "<u2").reshape(-1, 3)  # an entry is 3 words: tag, docno low, docno high
        high, length = words[:, 0] >> _LENGTH_BITS, (words[:, 0] & _LENGTH_MASK).astype(np.uint8)
        docnos = words[:, 1].astype(np.uint32) | words[:, 2].astype(np.uint32) << np.uint32(16)
        order = np.lexsort((length == 0, high))  # by value, short articles first, in bucket order within
        high, length, docnos = high[order], length[order], docnos[order]
        starts = np.flatnonzero(np.diff(high, prepend=-1)).tolist() + [len(high)]
        self._by_value: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        for start, stop in zip(starts, starts[1:]):
            split = start + int(np.count_nonzero(length[start:stop]))
            self._by_value[int(high[start])] = (docnos[start:split], length[start:split], docnos[split:stop])

    def entries(self, value_high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(short articles' docnos, their lengths, long articles' docnos) of the value with these high bits."""
        return self._by_value.get(value_high, _NO_ENTRIES)


_NO_ENTRIES = (np.empty(0, np.uint32), np.empty(0, np.uint8), np.empty(0, np.uint32))
#: The most decoded large buckets a store keeps (a few hundred at 1M articles).
_MAX_LARGE_BUCKETS = 4096


class LmdbSnapshot(Snapshot):
    """One read transaction: the query, its postings and its candidates come from the same generation."""

    def __init__(self, store: LmdbStore):
        self._store = store
        self._txn = store._env.begin()
        self._held: tuple[bytes, dict[bytes, _LargeBucket]] = (b"", {})  # the latest query's, for unread_postings

    def sketch(self, doc_id: str) -> tuple[int, bytes] | None:
        key = encode_id(doc_id)
        sketch = self._txn.get(key, db=self._store._sketches)
        if sketch is None:
            return None
        return struct.unpack("<I", self._txn.get(key, db=self._store._docnos))[0], sketch

    def postings(self, query: bytes) -> Postings:
        """The query values' entries: small buckets decoded together; a large one (over similar.HOT_POSTINGS
        entries) from its decoded form, which the store keeps per committed state (_LargeBucket), where a value
        holding more than similar.HOT_POSTINGS long articles leaves them out (Postings.unread) until asked."""
        values = index_values([query], self._store.config.kind).values
        raw_keys = (values & _BUCKET_MASK).astype(">u4").tobytes()
        keys = [raw_keys[at:at + 4] for at in range(0, len(raw_keys), 4)]
        large = self._large(keys)
        wanted = [key for key in keys if key not in large]
        found = dict(self._txn.cursor(db=self._store._postings).getmulti(wanted)) if wanted else {}
        for key, bucket in found.items():
            if len(bucket) > similar.HOT_POSTINGS * _ENTRY.itemsize:
                large[key] = self._store._remember_large(key, _LargeBucket(self._txn.id(), bucket))
        held = [b"" if key in large else found.get(key, b"") for key in keys]
        sizes = np.fromiter(map(len, held), np.int64, len(held)) // _ENTRY.itemsize
        small = np.flatnonzero(sizes)
        entries = np.frombuffer(b"".join([held[i] for i in small.tolist()]), _ENTRY)
        value_index = np.repeat(small, sizes[small])
        tags = entries["tag"]
        match = (tags >> _LENGTH_BITS) == (values >> BUCKET_BITS)[value_index]
        parts = [(value_index[match], entries["docno"][match], (tags[match] & _LENGTH_MASK).astype(np.uint8))]
        unread, unread_lengths = [], []
        self._held = (query, large)
        for index, key in enumerate(keys):
            if key not in large:
                continue
            short, short_lengths, long = large[key].entries(int(values[index]) >> BUCKET_BITS)
            if len(long) > similar.HOT_POSTINGS:  # only the short articles' entries are taken
                unread.append(index)
                unread_lengths.append(len(long))
                parts.append((np.full(len(short), index), short, short_lengths))
            else:
                parts.append((np.full(len(short) + len(long), index), np.concatenate([short, long]),
                              np.concatenate([short_lengths, np.zeros(len(long), np.uint8)])))
        return Postings(*(np.concatenate(column) for column in zip(*parts)), np.array(unread, np.intp),
                        np.array(unread_lengths, np.int64))

    def _large(self, keys: list[bytes]) -> dict[bytes, "_LargeBucket"]:
        """The large buckets among keys that the store decoded at this snapshot's committed state."""
        memo, txnid = self._store._large_buckets, self._txn.id()
        found = {}
        for key in keys:
            bucket = memo.get(key)
            if bucket is not None and bucket.txnid == txnid:
                found[key] = bucket
        return found

    def unread_postings(self, query: bytes, value_indices: np.ndarray) -> Postings:
        """The long articles' entries that postings(query) left out for these query values (Postings.unread)."""
        values = index_values([query], self._store.config.kind).values
        large = self._held[1] if self._held[0] == query else {}
        parts = [(np.empty(0, np.intp), np.empty(0, np.uint32), np.empty(0, np.uint8))]
        for index in np.asarray(value_indices).tolist():
            key = struct.pack(">I", int(values[index]) & _BUCKET_MASK)
            bucket = large.get(key) or _LargeBucket(self._txn.id(), self._txn.get(key, b"", db=self._store._postings))
            long = bucket.entries(int(values[index]) >> BUCKET_BITS)[2]
            parts.append((np.full(len(long), index), long, np.zeros(len(long), np.uint8)))
        return Postings(*(np.concatenate(column) for column in zip(*parts)))

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


def _flatten(sketches: list[tuple[bytes, int]], kind: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The index values of (sketch, docno) pairs (core.similar.index_values), and the docno and length class of
    each value."""
    indexed = index_values([sketch for sketch, _ in sketches], kind)
    docnos = np.repeat(np.array([docno for _, docno in sketches], np.uint64), indexed.lengths)
    return indexed.values, docnos, np.repeat(indexed.length_class, indexed.lengths)


def _tags(values: np.ndarray, length_class: np.ndarray) -> np.ndarray:
    """An entry's tag: the value's bits above the bucket's, then the article's length class."""
    return ((values >> BUCKET_BITS).astype(np.uint16) << _LENGTH_BITS) | length_class.astype(np.uint16)


def _grouped(buckets: np.ndarray, docnos: np.ndarray):
    """(bucket, the docnos of its entries) per distinct bucket."""
    order = np.argsort(buckets, kind="stable")
    buckets, docnos = buckets[order], docnos[order]
    cuts = np.flatnonzero(np.diff(buckets)) + 1
    return zip(buckets[np.concatenate([[0], cuts])].tolist() if len(buckets) else [], np.split(docnos, cuts))


def _distinct(values: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort and a compare: faster than np.unique's hashing here)."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def _pages(stat: dict) -> int:
    return stat["branch_pages"] + stat["leaf_pages"] + stat["overflow_pages"]


def _damaged(path: Path, why: object) -> StoreUnavailable:
    return StoreUnavailable(f"store {path} is damaged ({why}): restore it from a backup or re-index the corpus "
                            "into a new store")


def _open_env(path: Path, readonly: bool, map_size: int, create: bool) -> lmdb.Environment:
    try:
        env = lmdb.open(str(path), map_size=map_size, readonly=readonly, create=create, max_dbs=7,
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
