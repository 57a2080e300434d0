"""A store in Redis, shared by a fleet: `--store redis://HOST:PORT/DB` (`rediss://` for TLS, `?prefix=PREFIX`).

Why Redis: N stateless `neardup serve` processes on several hosts read one store over the network, each Dedup
reads its sketches in one HMGET, and MULTI/EXEC runs a batch as one step, so readers see whole batches only. All
keys share one hash tag, so a Redis Cluster keeps a store in one slot (a store sharded over a cluster's primaries,
store/redis_cluster.py, is made of such key spaces, one per shard). Writers race by WATCH on the generation;
new articles only commit by one script; a writer that lost TURN_AFTER times takes the turn.
The keys and the write protocol: docs/fleet.md ("Layout"); configuring and failures: docs/OPERATING.md.
"""
from __future__ import annotations

import datetime
import itertools
import json
import os
import struct
import time
from typing import Callable, Iterable, Iterator, NamedTuple, Sequence

import redis

from ..core.encoding import decode_sketch, encode_sketch
from ..core.errors import ConfigMismatch, InvalidArgument, StoreChanged, StoreUnavailable
from ..core.sketch_config import SketchConfig, stoplist_digest
from . import buckets
from .base import SketchStore, decode_languages, encode_id, encode_languages
from .buckets import BucketSnapshot, LargeBuckets
from .redis_connection import (TIMEOUT, WRITE_TIMEOUT, Keys, Numbering, Reads, ThreadConnections, connect,
                               delete_key_space, reads, redis_errors)

#: Losses of the race to other writers after which a writer takes the turn, and how long it may hold it (one attempt
#: of a large batch takes milliseconds; a writer killed while holding it holds the others back that long).
TURN_AFTER, TURN_MS = 3, 5000
#: Seconds between looks at a turn another writer holds: the first, and the longest.
_TURN_WAIT, _TURN_WAIT_MAX = 0.001, 0.02
#: Ends a turn, if it is still this writer's (KEYS[1] the turn, ARGV[1] the writer's token).
_END_TURN = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
#: Change log entries kept, and the most ids one entry lists (a larger batch logs "all": caches drop everything).
LOG_ENTRIES, LOG_ENTRY_IDS = 1000, 1000
_CHUNK = 1000  # ids or article numbers per HMGET where a whole store is read


def _int(value: bytes | None) -> int:
    return int(value) if value else 0


def _read(client: redis.Redis, keys: Keys, queue) -> tuple[int, list]:
    """(the generation, what the commands queue(pipe) queues answer), read in one MULTI/EXEC: one state."""
    with client.pipeline() as pipe:
        generation, *found = queue(pipe.get(keys.generation)).execute()
    return _int(generation), found


#: APPENDs ARGV[i] to KEYS[i], for all i: one command for a batch's new postings entries.
_APPEND_ALL = "for i, key in ipairs(KEYS) do redis.call('APPEND', key, ARGV[i]) end"
#: Commits a batch of new articles as one step, no WATCH needed (RedisStore._insert). KEYS: generation, log, turn,
#: sketches, docnos, ids, then the postings buckets appended to; ARGV: the articles n, whether the store is indexed,
#: the log entry's field and value, the log's length, then n ids, n sketches, n article numbers (LE), n article
#: numbers (BE), then each bucket's new entries. Returns the new generation, or -1 while another writer holds the
#: turn, -2 where an id is stored by now (the batch is then written as any other).
_INSERT = """
if redis.call('EXISTS', KEYS[3]) == 1 then return -1 end
local n, indexed = tonumber(ARGV[1]), ARGV[2] == '1'
if indexed then
  for i = 1, n do if redis.call('HEXISTS', KEYS[5], ARGV[5 + i]) == 1 then return -2 end end
end
for i = 1, n do
  redis.call('HSET', KEYS[4], ARGV[5 + i], ARGV[5 + n + i])
  if indexed then
    redis.call('HSET', KEYS[5], ARGV[5 + i], ARGV[5 + 2 * n + i])
    redis.call('HSET', KEYS[6], ARGV[5 + 3 * n + i], ARGV[5 + i])
  end
end
for j = 7, #KEYS do redis.call('APPEND', KEYS[j], ARGV[5 + 4 * n + j - 6]) end
local generation = redis.call('INCR', KEYS[1])
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[5], '0-' .. generation, ARGV[3], ARGV[4])
return generation
"""


def _log_entry(ids: list[str]) -> tuple[str, str]:
    """A batch's change log entry: the ids it wrote or deleted, or "all" where they are over LOG_ENTRY_IDS."""
    logged = sorted(set(ids))
    return ("ids", json.dumps(logged, ensure_ascii=False)) if len(logged) <= LOG_ENTRY_IDS else ("all", "1")


def _described(stored: bytes | None, clustering: dict | None, count: int) -> tuple[int, str]:
    """The clustering description (`clustering`, else the stored one) with `count` new cluster ids taken from its
    next_id: (the first of them, the description's JSON)."""
    described = clustering or json.loads(stored or b"{}")
    first = described.get("next_id", 0)
    return first, json.dumps({**described, "next_id": first + count}, sort_keys=True)


class _Moved(Exception):
    """A writer's reads found another generation than it WATCHes: another writer committed; start again."""


class RedisStore(SketchStore):
    backend = "redis"
    #: The key layout above; no other version is read.
    FORMAT_VERSION = 1
    keeps_older_states = False  # one state: the current one
    remote_reads = True
    parallel_writers = True

    def __init__(self, client: redis.Redis, keys: Keys, location: str, readonly: bool, replicas: int = 0):
        """`replicas`: each committed batch waits until that many replicas have it (Redis WAIT), else fails."""
        self._keys = keys
        self._readonly = readonly
        self._replicas = replicas
        self._large_buckets = LargeBuckets()
        self._connections = ThreadConnections()
        self.use(client)
        fix = f"create it with `neardup index CORPUS --store {location}`"
        try:
            meta = client.hgetall(keys.meta)
        except redis.RedisError as error:
            client.close()
            raise StoreUnavailable(f"cannot open store {location}: {type(error).__name__}: {error}") from None
        if not meta:
            client.close()
            raise StoreUnavailable(f"no store at {location}: {fix}")
        try:
            version = int(meta[b"format_version"])
            if version != self.FORMAT_VERSION:
                raise StoreUnavailable(f"store {location} has format version {version}, this neardup reads "
                                       f"version {self.FORMAT_VERSION}: re-index the corpus into a new store")
            config = SketchConfig.from_dict(json.loads(meta[b"config"]))
            stoplist = frozenset(decode_sketch(meta[b"stoplist"]))
            indexed = meta[b"indexed"] == b"1"
            self._numbers = Numbering(int(meta.get(b"shard", 0)), int(meta.get(b"shards", 1)))
        except (KeyError, ValueError, TypeError, InvalidArgument) as error:
            client.close()
            raise StoreUnavailable(f"cannot read store {location} ({type(error).__name__}: {error}): restore it "
                                   "from a backup or re-index the corpus into a new store") from None
        super().__init__(config, stoplist, version, location, indexed)

    def use(self, client: redis.Redis) -> None:
        """Send everything to `client` from now on (a cluster store's shard whose slot another primary serves now):
        each thread's own connections are made again to it at their next use."""
        self._client = client
        self._append_all = client.register_script(_APPEND_ALL)
        self._insert_new = client.register_script(_INSERT)
        self._end_turn = client.register_script(_END_TURN)

    @classmethod
    def exists(cls, url: str) -> bool:
        """Whether url holds a store (its metadata), of any version."""
        client, keys, location = connect(url)
        try:
            return bool(client.exists(keys.meta))
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot open store {location}: {type(error).__name__}: {error}") from None
        finally:
            client.close()

    @classmethod
    def open(cls, url: str, readonly: bool = False) -> "RedisStore":
        return cls(*connect(url), readonly)

    @classmethod
    def create(cls, url: str, config: SketchConfig, stoplist: Iterable[int], indexed: bool = True) -> "RedisStore":
        client, keys, location = connect(url)
        try:
            cls.write_metadata(client, keys, location, config, stoplist, indexed)
        finally:
            client.close()
        return cls.open(url)

    @classmethod
    def write_metadata(cls, client: redis.Redis, keys: Keys, location: str, config: SketchConfig,
                       stoplist: Iterable[int], indexed: bool, fields: dict | None = None) -> None:
        """A new key space's metadata (and `fields`: a shard's numbering, a cluster store's shards) in one
        MULTI/EXEC, after checking that none of its keys exists."""
        cls.check_new(config)
        stoplist = sorted(set(stoplist))
        if stoplist_digest(stoplist) != config.stoplist_digest:
            raise ConfigMismatch("the stop-list does not match the configuration's stoplist_digest")
        try:
            with client.pipeline() as pipe:
                pipe.watch(*keys.all)
                if pipe.exists(*keys.all):
                    raise StoreUnavailable(f"{location} already holds a store (or keys of its prefix); open it "
                                           "instead, or choose another DB or ?prefix=")
                pipe.multi()
                pipe.hset(keys.meta, mapping={
                    "format_version": cls.FORMAT_VERSION, "config": json.dumps(config.to_dict(), sort_keys=True),
                    "stoplist": encode_sketch(stoplist), "indexed": "1" if indexed else "0", "next_docno": 0,
                    "created_at": datetime.datetime.now(datetime.timezone.utc).isoformat(), **(fields or {})})
                pipe.set(keys.generation, 0)
                pipe.execute()
        except redis.WatchError:
            raise StoreUnavailable(f"another process created a store at {location} meanwhile") from None
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot create store {location}: {type(error).__name__}: {error}") from None

    # --- reads: each one command or one MULTI/EXEC, so each sees whole batches ----------------------------------

    def _exchange(self, commands: Reads, timeout: float = TIMEOUT) -> list:
        """Read commands sent together on this thread's own connection (one round trip), their replies in order:
        redis-py's client takes a connection from its pool and wraps every call in its retry and metrics machinery,
        which cost more than Redis itself (benchmarks/redis_store.py). A connection found closed (Redis restarted)
        is made again once; a read is safe to send twice."""
        return self._replies(self._sent(commands, timeout), commands, timeout)

    def _sent(self, commands: Reads, timeout: float = TIMEOUT):
        """ThreadConnections.sent on this store's server: a cluster store sends to every primary before it reads."""
        return self._connections.sent(self._client, commands, self.location, timeout)

    def _replies(self, connection, commands: Reads, timeout: float = TIMEOUT) -> list:
        return self._connections.replies(self._client, connection, commands, self.location, timeout)

    def _writer(self) -> redis.Redis:
        """This thread's client for write batches, of one connection: a WAIT (_confirm) counts the replicas that
        have the writes of the connection it is sent on."""
        return self._connections.writer(self._client)

    def _confirm(self, writer: redis.Redis) -> None:
        """With `replicas`: the batch just committed on writer's connection is on that many replicas (WAIT), or
        the write fails: committed on the primary, it may be lost in a failover, so it is not acknowledged."""
        if self._replicas:
            confirmed = writer.wait(self._replicas, int(TIMEOUT * 1000))
            if confirmed < self._replicas:
                raise StoreUnavailable(f"cannot write store {self.location}: {confirmed} of {self._replicas} "
                                       f"replicas confirmed the batch within {TIMEOUT:g} s (?wait=): it may be "
                                       "lost in a failover; write it again once the replicas are back")

    def get_many(self, ids: Sequence[str]) -> list[bytes | None]:
        """One HMGET: the request path's read of sketches."""
        if not ids:
            return []
        try:
            return self._exchange(reads([("HMGET", self._keys.sketches, *ids)]))[0]
        except (redis.DataError, UnicodeEncodeError):
            for doc_id in ids:
                encode_id(doc_id)  # names the bad id
            raise

    def generation(self) -> int:
        """One GET, read once per request (view.LiveView)."""
        return _int(self._exchange(reads([("GET", self._keys.generation)]))[0])

    def generation_and_get_many(self, ids: Sequence[str]) -> tuple[int, list[bytes | None]]:
        """The GET and the HMGET in one round trip: Redis runs one connection's commands in order, so the
        sketches are at least as new as the generation."""
        if not ids:
            return self.generation(), []
        try:
            now, sketches = self._exchange(reads([("GET", self._keys.generation),
                                                  ("HMGET", self._keys.sketches, *ids)]))
        except (redis.DataError, UnicodeEncodeError):
            for doc_id in ids:
                encode_id(doc_id)  # names the bad id
            raise
        return _int(now), sketches

    @redis_errors
    def changed_since(self, generation: int) -> set[str] | None:
        with self._client.pipeline() as pipe:
            now, entries = pipe.get(self._keys.generation).xrange(self._keys.log, f"0-{generation + 1}").execute()
        now = _int(now)
        if generation == now:
            return set()
        if generation > now or not entries or entries[0][0] != f"0-{generation + 1}".encode():
            return None  # a generation this store never had, or the log no longer reaches back to it
        changed: set[str] = set()
        for _, fields in entries:
            if b"ids" not in fields:
                return None
            changed.update(json.loads(fields[b"ids"]))
        return changed

    @redis_errors
    def count(self) -> int:
        return self._client.hlen(self._keys.sketches)

    @redis_errors
    def items(self) -> Iterator[tuple[str, bytes]]:
        """The ids by HSCAN (held in memory, sorted), then their sketches by HMGET, _CHUNK at a time."""
        keys = sorted({key for key, _ in self._client.hscan_iter(self._keys.sketches, count=_CHUNK)})
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            for key, sketch in zip(chunk, self._client.hmget(self._keys.sketches, chunk)):
                if sketch is not None:  # deleted since the scan
                    yield key.decode(), sketch

    @redis_errors
    def clusters(self, ids: Sequence[str]) -> list[int]:
        if not self.indexed or not ids:
            return [-1] * len(ids)
        return [int(found) if found is not None else -1 for found in self._client.hmget(self._keys.clusters, ids)]

    @redis_errors
    def clustering(self) -> dict | None:
        found = self._client.hget(self._keys.meta, "clustering")
        return json.loads(found) if found else None

    @redis_errors
    def model(self) -> bytes | None:
        return self._client.hget(self._keys.meta, "pair_model")

    def set_model(self, model: bytes | None) -> None:
        def change(read):
            if model is None:
                return None, [lambda pipe: pipe.hdel(self._keys.meta, "pair_model")]
            return None, [lambda pipe: pipe.hset(self._keys.meta, "pair_model", bytes(model))]

        self._write(change, [])

    @redis_errors
    def threshold(self) -> dict | None:
        found = self._client.hget(self._keys.meta, "threshold")
        return json.loads(found) if found else None

    def set_threshold(self, setting: dict | None) -> None:
        def change(read):
            if setting is None:
                return None, [lambda pipe: pipe.hdel(self._keys.meta, "threshold")]
            return None, [lambda pipe: pipe.hset(self._keys.meta, "threshold", json.dumps(setting, sort_keys=True))]

        self._write(change, [])

    @redis_errors
    def languages(self) -> frozenset[str]:
        return decode_languages(self._client.hget(self._keys.meta, "languages"))

    def add_languages(self, languages: Iterable[str]) -> bool:
        languages = frozenset(languages)
        if languages <= self.languages():
            return False

        def change(read):
            found, = read(lambda pipe: pipe.hget(self._keys.meta, "languages"))
            return None, [lambda pipe: pipe.hset(self._keys.meta, "languages", encode_languages(found, languages))]

        self._write(change, [])
        return True

    @redis_errors
    def snapshot(self) -> "RedisSnapshot":
        self.require_postings()
        return RedisSnapshot(self)

    # --- writes: one WATCH ... MULTI/EXEC per batch ---------------------------------------------------------------

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> int:
        checked = dict(self.checked_items(items))
        if not checked:
            return self.generation()
        inserted = self._insert(checked, [doc_id for doc_id, _ in items])
        if inserted is not None:
            return inserted

        def change(read):
            writes = self._reindex(read, checked) if self.indexed else []
            writes.append(lambda pipe: pipe.hset(self._keys.sketches, mapping=checked))
            return None, writes

        return self._write(change, [doc_id for doc_id, _ in items])[1]

    def delete_many(self, ids: Sequence[str]) -> tuple[int, int]:
        keys = list(dict.fromkeys(encode_id(doc_id) for doc_id in ids))
        if not keys:
            return 0, self.generation()

        def change(read):
            stored = sum(found is not None for found in read(lambda pipe: pipe.hmget(self._keys.sketches, keys))[0])
            writes = self._reindex(read, dict.fromkeys(keys)) if self.indexed else []
            writes.append(lambda pipe: pipe.hdel(self._keys.sketches, *keys))
            return stored, writes

        return self._write(change, list(ids))

    def set_clusters(self, assignments: Sequence[tuple[str, int]], clustering: dict | None = None,
                     describe: bool = True) -> int:
        """`describe`: keep the clustering description (its next_id) in this key space; a cluster store's shard
        does not: its store numbers new clusters (take_cluster_ids) and gives it no negative id."""
        self.require_postings()
        keys = [(encode_id(doc_id), cluster) for doc_id, cluster in assignments]

        def change(read):
            if keys:
                described, numbers = read(lambda pipe: pipe.hget(self._keys.meta, "clustering").hmget(
                    self._keys.docnos, [key for key, _ in keys]))
            else:
                described, numbers = read(lambda pipe: pipe.hget(self._keys.meta, "clustering"))[0], []
            stored = [(key, cluster) for (key, cluster), number in zip(keys, numbers) if number is not None]
            writes = []
            if describe:  # each negative number given: one new id
                fresh = list(dict.fromkeys(cluster for _, cluster in stored if cluster < 0))
                first, description = _described(described, clustering, len(fresh))
                given = dict(zip(fresh, itertools.count(first)))
                stored = [(key, given.get(cluster, cluster)) for key, cluster in stored]
                writes.append(lambda pipe: pipe.hset(self._keys.meta, "clustering", description))
            if stored:
                writes.append(lambda pipe: pipe.hset(self._keys.clusters, mapping=dict(stored)))
            return None, writes

        return self._write(change, [doc_id for doc_id, _ in assignments])[1]

    def take_cluster_ids(self, count: int, clustering: dict | None = None) -> range:
        """`count` new cluster ids from the clustering description's next_id (`clustering`, a full run's, replacing
        the description), in one batch: a cluster store's new clusters, whichever shards their articles are in."""
        def change(read):
            described, = read(lambda pipe: pipe.hget(self._keys.meta, "clustering"))
            first, description = _described(described, clustering, count)
            return range(first, first + count), [lambda pipe: pipe.hset(self._keys.meta, "clustering", description)]

        return self._write(change, [])[0]

    def _insert(self, checked: dict[bytes, bytes], ids: list[str]) -> int | None:
        """A batch of new articles (or any batch, in a store without postings), committed by one script (_INSERT)
        without the generation's WATCH, so writers adding articles at once never lose the race to each other: its
        article numbers are reserved beforehand (HINCRBY), its postings only appended. The new generation, or None
        where the batch is no such one (an id stored, a writer holding the turn, a read-only store): the caller
        then writes it as any batch."""
        if self._readonly:
            return None
        keys = list(checked)
        bucket_keys, entries, numbers = [], [], ([], [])
        try:
            if self.indexed:
                if any(found is not None for found in self._client.hmget(self._keys.docnos, keys)):
                    return None
                docnos = self._reserve(len(keys))
                appended = buckets.rewrite([], list(zip(checked.values(), docnos)), self.config.kind,
                                           lambda wanted: {}, append=True).appends
                bucket_keys = self._keys.buckets(key for key, _ in appended)
                entries = [added for _, added in appended]
                numbers = ([struct.pack("<I", docno) for docno in docnos],
                           [struct.pack(">I", docno) for docno in docnos])
            writer = self._writer()
            generation = self._insert_new(
                keys=[self._keys.generation, self._keys.log, self._keys.turn, self._keys.sketches,
                      self._keys.docnos, self._keys.ids, *bucket_keys],
                args=[len(keys), "1" if self.indexed else "0", *_log_entry(ids), LOG_ENTRIES, *keys, *checked.values(),
                      *numbers[0], *numbers[1], *entries], client=writer)
            if generation > 0:
                self._confirm(writer)
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot write store {self.location}: {type(error).__name__}: {error}") from None
        return generation if generation > 0 else None

    def _reserve(self, count: int) -> range:
        """`count` new article numbers, reserved whether or not the batch then commits: this key space's own
        (_numbers)."""
        first = self._client.hincrby(self._keys.meta, "next_docno", count) - count
        numbers = self._numbers.of(first, first + count)
        if numbers and numbers[-1] >= 1 << 32:
            raise StoreUnavailable(f"store {self.location} has numbered 2**32 articles: re-index it")
        return numbers

    def _reindex(self, read, changes: dict[bytes, bytes | None]) -> list:
        """Reads what moving the changed articles' postings needs (key → new sketch, None when deleted), numbering
        new articles; returns the writes, to queue after MULTI."""
        keys = list(changes)
        numbers, old_sketches = read(lambda pipe: pipe.hmget(self._keys.docnos, keys).hmget(self._keys.sketches,
                                                                                          keys))
        old_sketches = dict(zip(keys, old_sketches))
        fresh = sum(number is None and changes[key] is not None for key, number in zip(keys, numbers))
        reserved = iter(self._reserve(fresh) if fresh else ())
        old, new, docnos, ids, gone, gone_numbers = [], [], {}, {}, [], []
        for key, number in zip(keys, numbers):
            sketch = changes[key]
            if number is not None:
                docno = struct.unpack("<I", number)[0]
                old.append((old_sketches[key], docno))
                if sketch is None:
                    gone.append(key)
                    gone_numbers.append(struct.pack(">I", docno))
            elif sketch is not None:
                docno = next(reserved)
                docnos[key] = struct.pack("<I", docno)
                ids[struct.pack(">I", docno)] = key
            if sketch is not None:
                new.append((sketch, docno))
        bucket_keys = self._keys.buckets
        moved = buckets.rewrite(
            old, new, self.config.kind,
            lambda wanted: {key: found for key, found in
                            zip(wanted, read(lambda pipe: pipe.mget(bucket_keys(wanted)))[0]) if found is not None},
            append=True)

        def write(pipe):
            keys = self._keys
            if docnos:
                pipe.hset(keys.docnos, mapping=docnos).hset(keys.ids, mapping=ids)
            if gone:
                pipe.hdel(keys.docnos, *gone).hdel(keys.clusters, *gone).hdel(keys.ids, *gone_numbers)
            if moved.values:
                pipe.mset(dict(zip(bucket_keys(key for key, _ in moved.values), (v for _, v in moved.values))))
            if moved.appends:
                self._append_all(keys=bucket_keys(key for key, _ in moved.appends),
                                 args=[entries for _, entries in moved.appends], client=pipe)
            if moved.deletes:
                pipe.delete(*bucket_keys(moved.deletes))

        return [write]

    def _write(self, change, ids: list[str]) -> tuple:
        """change(read) reads while the generation is WATCHed and returns (outcome, writes); the writes, the new
        generation and its log entry then commit in one MULTI/EXEC, computed again when another writer
        committed in between. Each read(queue) is one MULTI/EXEC at the WATCHed generation, so a batch is
        computed from one state. After TURN_AFTER such losses the writer takes the turn (docs/fleet.md).
        Returns (outcome, the new generation)."""

        def read(queue) -> list:
            generation, found = _read(self._client, self._keys, queue)
            if generation != current:
                raise _Moved
            return found

        if self._readonly:
            raise StoreUnavailable(f"store {self.location} is open read-only")
        entry = dict([_log_entry(ids)])
        keys, token = self._keys, os.urandom(16).hex().encode()
        losses, holding, wait = 0, False, _TURN_WAIT
        writer = self._writer()
        try:
            with writer.pipeline() as pipe:
                try:
                    while True:
                        try:
                            pipe.watch(keys.generation, keys.turn)
                            now, turn = pipe.mget(keys.generation, keys.turn)
                            holding = turn == token
                            if turn is not None and not holding:  # another writer's turn: wait for its commit
                                pipe.reset()
                                time.sleep(wait)
                                wait = min(2 * wait, _TURN_WAIT_MAX)
                                continue
                            current = _int(now)
                            generation = current + 1
                            outcome, writes = change(read)
                            pipe.multi()
                            for write in writes:
                                write(pipe)
                            pipe.set(keys.generation, generation)
                            pipe.xadd(keys.log, entry, id=f"0-{generation}", maxlen=LOG_ENTRIES, approximate=False)
                            if holding:
                                pipe.delete(keys.turn)
                            pipe.execute()
                            holding = False
                            self._confirm(writer)
                            return outcome, generation
                        except redis.WatchError as error:
                            if isinstance(error.__context__, (redis.ConnectionError, redis.TimeoutError)):
                                raise error.__context__ from None  # lost on the way: applied or not, not acknowledged
                            # another writer committed first (or took the turn): read again
                        except _Moved:
                            pipe.reset()
                        losses += 1
                        if losses >= TURN_AFTER and not holding:
                            holding = bool(self._client.set(keys.turn, token, nx=True, px=TURN_MS))
                finally:
                    if holding:  # failed while holding the turn: end it now rather than at its expiry
                        self._end_turn(keys=[keys.turn], args=[token])
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot write store {self.location}: {type(error).__name__}: {error}") from None

    def close(self) -> None:
        self._connections.close()
        self._client.close()

    @redis_errors
    def drop(self) -> None:
        delete_key_space(self._client, self._keys)
        self.close()


class SnapshotRead(NamedTuple):
    """Read commands of a snapshot, sent in one MULTI/EXEC after the generation's GET (RedisSnapshot.packed), and
    what makes the answer of their replies: a cluster store sends its shards' reads together (ClusterSnapshot)."""
    commands: list[tuple]
    answer: Callable[[list], object]


class RedisSnapshot(BucketSnapshot):
    """Reads at one generation: each read is one MULTI/EXEC with the generation (every write batch bumps it in
    its own MULTI/EXEC), and a read that finds it moved raises StoreChanged: a write committed meanwhile, and
    Redis keeps no older states (base.read_consistently reads again on a new snapshot). So a long read that
    cannot start again (`neardup pairs`, `neardup cluster`) needs a store nothing writes to meanwhile."""

    def __init__(self, store: RedisStore, opened: list | None = None):
        """`opened`: the replies to opening(store) where the caller sent it (a cluster store, for every shard at
        once); else it is sent here."""
        super().__init__(store.config.kind, store._large_buckets)
        self._store = store
        self._keys = store._keys
        self.location = store.location  # what redis_errors names when Redis fails under a read
        generation, limit = self._executed(store._exchange(self.opening(store), WRITE_TIMEOUT) if opened is None
                                           else opened)
        self._generation = _int(generation)
        self._numbers = store._numbers
        self._limit = self._numbers.limit(_int(limit))

    @staticmethod
    def opening(store: RedisStore) -> Reads:
        """The read a snapshot begins with: the generation it reads at, and the article numbers' limit."""
        return reads([("MULTI",), ("GET", store._keys.generation), ("HGET", store._keys.meta, "next_docno"),
                      ("EXEC",)])

    def _executed(self, replies: list) -> list:
        """The EXEC's replies among a transaction's (OK, QUEUED..., then EXEC's); an error among them is the store
        failing, as redis-py's pipeline raises it."""
        executed = replies[-1]
        failed = next((reply for reply in executed if isinstance(reply, redis.RedisError)), None)
        if failed is not None:
            raise StoreUnavailable(f"store {self.location}: Redis failed ({type(failed).__name__}: {failed})")
        return executed

    def packed(self, read: SnapshotRead) -> Reads:
        return reads([("MULTI",), ("GET", self._keys.generation), *read.commands, ("EXEC",)])

    def answer(self, read: SnapshotRead, replies: list):
        """read's answer from the replies to packed(read), if they are of this snapshot's generation."""
        generation, *found = self._executed(replies)
        if _int(generation) != self._generation:
            raise StoreChanged(f"store {self._store.location} changed during the read (generation "
                               f"{self._generation} → {_int(generation)}): ask again")
        return read.answer(found)

    def _run(self, read: SnapshotRead):
        return self.answer(read, self._store._exchange(self.packed(read), WRITE_TIMEOUT))

    @property
    def _state(self) -> int:
        return self._generation

    def buckets_read(self, keys: list[bytes]) -> SnapshotRead:
        return SnapshotRead([("MGET", *self._keys.buckets(keys))],
                            lambda found: {key: bucket for key, bucket in zip(keys, found[0]) if bucket is not None})

    def _buckets(self, keys: list[bytes]) -> dict[bytes, bytes]:
        return self._run(self.buckets_read(keys))

    def sketch(self, doc_id: str) -> tuple[int, bytes] | None:
        return self.sketches([doc_id])[0]

    def sketches_read(self, keys: list[bytes]) -> SnapshotRead:
        """(article number, sketch) or None of each id's key."""
        return SnapshotRead([("HMGET", self._keys.sketches, *keys), ("HMGET", self._keys.docnos, *keys)],
                            lambda found: [None if sketch is None else (struct.unpack("<I", number)[0], sketch)
                                           for sketch, number in zip(*found)])

    def sketches(self, doc_ids: Sequence[str]) -> list[tuple[int, bytes] | None]:
        keys = [encode_id(doc_id) for doc_id in doc_ids]
        return self._run(self.sketches_read(keys)) if keys else []

    def ids_read(self, docnos: Sequence[int]) -> SnapshotRead:
        """The id's key (or None) of each article number: articles() reads them, then their sketches."""
        return SnapshotRead([("HMGET", self._keys.ids, *[struct.pack(">I", docno) for docno in docnos])],
                            lambda found: found[0])

    def stored_sketches_read(self, keys: list[bytes]) -> SnapshotRead:
        return SnapshotRead([("HMGET", self._keys.sketches, *keys)], lambda found: found[0])

    def articles(self, docnos: Sequence[int]) -> list[tuple[str, bytes]]:
        if not docnos:
            return []
        keys = self._run(self.ids_read(docnos))
        return [(key.decode(), sketch) for key, sketch in zip(keys, self._run(self.stored_sketches_read(keys)))]

    def scan(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bytes]]:
        stop = self._limit if stop is None else min(stop, self._limit)
        within = self._numbers.within(start, stop)
        for first in range(0, len(within), _CHUNK):
            numbers = within[first:first + _CHUNK]
            keys = self._run(self.ids_read(numbers))
            stored = [(docno, key) for docno, key in zip(numbers, keys) if key is not None]
            if not stored:
                continue
            sketches = self._run(self.stored_sketches_read([key for _, key in stored]))
            for (docno, key), sketch in zip(stored, sketches):
                yield docno, key.decode(), sketch

    def docno_limit(self) -> int:
        return self._limit

    def close(self) -> None:
        pass
