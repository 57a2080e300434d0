"""A store sharded over a Redis Cluster: `--store redis+cluster://HOST:PORT[,HOST:PORT...][?prefix=NAME&shards=N]`.

Why: a single Redis store keeps every key under one hash tag, so one primary holds it all and one Redis thread
runs every write. Here articles go by id to one of a fixed number of shards (chosen at creation, kept in the
metadata), each a single Redis store's key space under its own tag `{NAME:shardN}` (store/redis.py, unchanged:
its batch script, WATCH, generation and change log), on whichever primary serves that tag's slot. A write batch
is atomic per shard; the store-level metadata (config, stop-list, threshold, model, languages, clustering) is a
key space of no articles under the tag `{NAME}`. Layout and operation: docs/fleet.md ("A store on Redis Cluster").
"""
from __future__ import annotations

import functools
import heapq
import itertools
import threading
from typing import Iterable, Iterator, Sequence

import numpy as np
import redis
from redis.exceptions import RedisClusterException

from ..core.candidates import Postings
from ..core.errors import InvalidArgument, StoreUnavailable
from ..core.sketch_config import SketchConfig
from ._shards import positions_by_shard
from .base import READ_ATTEMPTS, SketchStore, Snapshot, encode_ids
from .redis import RedisSnapshot, RedisStore, SnapshotRead
from .redis_connection import TIMEOUT, WRITE_TIMEOUT, ClusterLocation, Keys, NodeClients, Reads, cluster_location, \
    joined, reads

#: Shards of a store made without ?shards=N: room to spread over 16 primaries.
DEFAULT_SHARDS = 16
#: The generations (vectors of the shards') a store remembers by their sum, for changed_since.
_REMEMBERED = 4096


def _rerouted(read: bool):
    """A call that fails as StoreUnavailable (a primary down, a slot moved: MOVED, ASK) has the slot map read again,
    so that later calls go to whichever primary serves each shard now; a `read` is sent once more where the
    routing changed. A write is not: part of it may have committed; its caller is told UNAVAILABLE and writes
    it again. On a ClusterSnapshot the store's routing is what is read again."""
    def wrap(method):
        @functools.wraps(method)
        def call(self, *args, **kwargs):
            store = getattr(self, "_store", self)
            routings = store._routings
            try:
                return method(self, *args, **kwargs)
            except StoreUnavailable:
                store._reroute(routings)
                if not read or store._routings == routings:
                    raise
            return method(self, *args, **kwargs)
        return call
    return wrap


def shard_prefix(prefix: str, shard: int) -> str:
    """The key space prefix of a shard: its keys' hash tag is {PREFIX:shardN}."""
    return f"{prefix}:shard{shard}"


class RedisClusterStore(SketchStore):
    backend = "redis-cluster"
    FORMAT_VERSION = 1
    keeps_older_states = False
    remote_reads = True
    parallel_writers = True

    def __init__(self, nodes: NodeClients, location: ClusterLocation, readonly: bool):
        self._nodes = nodes
        shown = location.shown
        try:
            client, _ = nodes.for_key(Keys(location.prefix).meta)
            self._meta = RedisStore(client, Keys(location.prefix), shown, readonly, location.wait)
            shards = int(self._meta._client.hget(self._meta._keys.meta, "cluster_shards") or 0)
            if location.shards is not None and location.shards != shards:
                raise InvalidArgument(f"store {shown} has {shards} shards, the URL asks for {location.shards}: "
                                      "drop ?shards= (it is read only when a store is created)")
            self._shards = [self._open_shard(location, shard, readonly) for shard in range(shards)]
        except redis.RedisError as error:
            nodes.close()
            raise StoreUnavailable(f"cannot open store {shown}: {type(error).__name__}: {error}") from None
        except BaseException:
            nodes.close()
            raise
        if not self._shards:
            nodes.close()
            raise StoreUnavailable(f"cannot read store {shown}: its metadata names no shards: restore it from a "
                                   "backup or re-index the corpus into a new store")
        for shard in self._shards:
            if shard.config != self._meta.config or shard.indexed != self._meta.indexed:
                nodes.close()
                raise StoreUnavailable(f"store {shown}: {shard.location} is of another configuration than the "
                                       "store's: re-index the corpus into a new store")
        self._route()
        # every request reads every shard's generation: packed once
        self._generation_reads = [reads([("GET", shard._keys.generation)]) for shard in self._shards]
        self._routing_lock = threading.Lock()
        self._routings = 0  # how many times the key spaces were routed again (_rerouted)
        self._latest = (0,) * len(self._shards)  # the shards' generations of the last generation given (_remember)
        self._seen: dict[int, tuple[int, ...]] = {}  # generation given → its vector (changed_since)
        self._seen_lock = threading.Lock()
        super().__init__(self._meta.config, self._meta.stoplist, self.FORMAT_VERSION, shown, self._meta.indexed)

    def _open_shard(self, location: ClusterLocation, shard: int, readonly: bool) -> RedisStore:
        keys = Keys(shard_prefix(location.prefix, shard))
        return RedisStore(self._nodes.for_key(keys.meta)[0], keys, f"{location.shown} shard {shard}", readonly,
                          location.wait)

    def _route(self) -> None:
        """Each key space to the client of the primary serving its slot in the slot map last read, and the shards
        grouped by that primary: a read of many shards (_exchange) sends once to each primary."""
        by_node: dict[tuple[str, int], list[int]] = {}
        for number, key_space in enumerate([*self._shards, self._meta]):
            client, address = self._nodes.for_key(key_space._keys.meta)
            if client is not key_space._client:
                key_space.use(client)
            if number < len(self._shards):
                by_node.setdefault(address, []).append(number)
        self._by_node = by_node

    def _reroute(self, routings: int) -> None:
        """The slot map read again and the key spaces routed by it, unless another thread did since `routings`
        (what self._routings was when its call began): a failover or a moved slot fails many calls at once."""
        with self._routing_lock:
            if self._routings != routings:
                return
            try:
                moved = self._nodes.refresh()
            except (redis.RedisError, RedisClusterException) as error:
                raise StoreUnavailable(f"store {self.location}: cannot read the Redis Cluster's slot map: "
                                       f"{type(error).__name__}: {error}") from None
            if moved:
                self._route()
                self._routings += 1

    @staticmethod
    def _connect(url: str) -> tuple[NodeClients, ClusterLocation]:
        location = cluster_location(url)
        try:
            return NodeClients(location), location
        except (redis.RedisError, RedisClusterException) as error:
            raise StoreUnavailable(f"cannot reach Redis Cluster {location.shown}: {type(error).__name__}: "
                                   f"{error}") from None

    @classmethod
    def exists(cls, url: str) -> bool:
        nodes, location = cls._connect(url)
        try:
            keys = Keys(location.prefix)
            return bool(nodes.for_key(keys.meta)[0].exists(keys.meta))
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot open store {location.shown}: {type(error).__name__}: {error}") from None
        finally:
            nodes.close()

    @classmethod
    def open(cls, url: str, readonly: bool = False) -> "RedisClusterStore":
        return cls(*cls._connect(url), readonly)

    @classmethod
    def create(cls, url: str, config: SketchConfig, stoplist: Iterable[int],
               indexed: bool = True) -> "RedisClusterStore":
        """Each shard's metadata (its numbering), then the store's: a store exists once its metadata does."""
        nodes, location = cls._connect(url)
        shards = location.shards or DEFAULT_SHARDS
        stoplist = sorted(set(stoplist))
        try:
            meta = Keys(location.prefix)
            if nodes.for_key(meta.meta)[0].exists(*meta.all):
                raise StoreUnavailable(f"{location.shown} already holds a store (or keys of its prefix); open it "
                                       "instead, or choose another ?prefix=")
            for shard in range(shards):
                keys = Keys(shard_prefix(location.prefix, shard))
                RedisStore.write_metadata(nodes.for_key(keys.meta)[0], keys, f"{location.shown} shard {shard}",
                                          config, stoplist, indexed, {"shard": shard, "shards": shards})
            RedisStore.write_metadata(nodes.for_key(meta.meta)[0], meta, location.shown, config, stoplist,
                                      indexed, {"cluster_shards": shards})
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot create store {location.shown}: {type(error).__name__}: {error}") \
                from None
        finally:
            nodes.close()
        return cls.open(url)

    # --- which shard holds what ---------------------------------------------------------------------------------

    def shard_of(self, key: bytes) -> int:
        """The shard of an id (its key, encode_id's): the CRC-32 of the key modulo the shards (positions_by_shard),
        fixed by the id alone, whatever else the store holds."""
        return next(iter(positions_by_shard([key], len(self._shards))))

    def _grouped(self, ids: Sequence[str]) -> dict[int, list[int]]:
        """Positions of ids by shard (shard_of), in one compiled pass."""
        return positions_by_shard(encode_ids(ids), len(self._shards))

    def _per_shard(self, ids: Sequence[str], read) -> list:
        """read(shard, its ids) for each shard holding some of ids, the answers put back in the ids' order."""
        found: list = [None] * len(ids)
        for shard, positions in self._grouped(ids).items():
            for position, answer in zip(positions, read(self._shards[shard], [ids[at] for at in positions])):
                found[position] = answer
        return found

    # --- reads ----------------------------------------------------------------------------------------------------

    def _exchange(self, commands: dict[int, Reads], timeout: float = TIMEOUT) -> dict[int, list]:
        """Each shard's read commands, a primary's shards' sent together on one connection, to every primary before
        any reply is read (RedisStore._sent, _replies), so the round trips overlap; the replies by shard."""
        sent: list[tuple[list[int], Reads, object]] = []
        replies: dict[int, list] = {}
        try:
            for numbers in self._by_node.values():
                wanted = [number for number in numbers if number in commands]
                if wanted:
                    packet = joined([commands[number] for number in wanted])
                    sent.append((wanted, packet, self._shards[wanted[0]]._sent(packet, timeout)))
            while sent:
                wanted, packet, connection = sent.pop(0)
                found = self._shards[wanted[0]]._replies(connection, packet, timeout)
                for number in wanted:
                    replies[number], found = found[:commands[number].count], found[commands[number].count:]
        finally:
            for _, _, connection in sent:  # a failure left their replies unread: the next read must not get them
                if connection is not None:
                    connection.disconnect()
        return replies

    def _reads(self, ids: Sequence[str], with_generations: bool) -> tuple[tuple[int, ...] | None, list]:
        """(every shard's generation, or None; the sketches of ids), one round trip per primary: a shard's
        generation is read before its sketches on the same connection, so they are at least as new."""
        by_shard = self._grouped(ids)
        commands = {number: reads([("HMGET", self._shards[number]._keys.sketches, *[ids[at] for at in positions])])
                    for number, positions in by_shard.items()}
        if with_generations:
            commands = {number: joined([generation, *([commands[number]] if number in commands else [])])
                        for number, generation in enumerate(self._generation_reads)}
        replies = self._exchange(commands)
        sketches: list = [None] * len(ids)
        for number, positions in by_shard.items():
            for position, sketch in zip(positions, replies[number][-1]):
                sketches[position] = sketch
        vector = tuple(int(replies[number][0] or 0) for number in range(len(self._shards))) \
            if with_generations else None
        return vector, sketches

    @_rerouted(read=True)
    def get_many(self, ids: Sequence[str]) -> list[bytes | None]:
        return self._reads(ids, False)[1] if ids else []

    @_rerouted(read=True)
    def generation_and_get_many(self, ids: Sequence[str]) -> tuple[int, list[bytes | None]]:
        """Every shard's generation and the sketches, one round trip per primary; read again (READ_ATTEMPTS in
        all) while a shard is older than an earlier read of this store saw it (_remember)."""
        attempt = 1
        while True:
            vector, sketches = self._reads(ids, True)
            now = self._remember(vector, gone_back=attempt == READ_ATTEMPTS)
            if now is not None:
                return now, sketches
            attempt += 1

    def generation(self) -> int:
        return self.generation_and_get_many([])[0]

    def _remember(self, vector: tuple[int, ...], gone_back: bool) -> int | None:
        """The generation of every shard's generation read (vector): their sum. The vectors given out only grow,
        shard by shard, so their sums order them as a single store's generations are ordered (a read whose shard
        generations are newer gives a larger one) and a sum names one vector (changed_since asks each shard from
        its own). None where a shard is older than in the last vector given: another thread read it later than
        this read did; read again. Unless `gone_back`: a shard that is older at every attempt went back (a
        failover to a replica without the last writes, a restore); what was read since is unknown."""
        with self._seen_lock:
            if any(now < before for now, before in zip(vector, self._latest)):
                if not gone_back:
                    return None
                self._seen.clear()
            self._latest = vector
            generation = sum(vector)
            self._seen[generation] = vector
            if len(self._seen) > _REMEMBERED:
                del self._seen[next(iter(self._seen))]
        return generation

    @_rerouted(read=True)
    def changed_since(self, generation: int) -> set[str] | None:
        """None (not known) for a generation this store did not read itself, e.g. one another process read."""
        with self._seen_lock:
            vector = self._seen.get(generation)
        if vector is None:
            return None
        changed: set[str] = set()
        for shard, since in zip(self._shards, vector):
            found = shard.changed_since(since)
            if found is None:
                return None
            changed |= found
        return changed

    @_rerouted(read=True)
    def count(self) -> int:
        return sum(shard.count() for shard in self._shards)

    def items(self) -> Iterator[tuple[str, bytes]]:
        """The shards' items merged in id order."""
        return heapq.merge(*(shard.items() for shard in self._shards))

    @_rerouted(read=True)
    def clusters(self, ids: Sequence[str]) -> list[int]:
        if not self.indexed or not ids:
            return [-1] * len(ids)
        return self._per_shard(ids, lambda shard, chunk: shard.clusters(chunk))

    @_rerouted(read=True)
    def clustering(self) -> dict | None:
        return self._meta.clustering()

    @_rerouted(read=True)
    def model(self) -> bytes | None:
        return self._meta.model()

    @_rerouted(read=False)
    def set_model(self, model: bytes | None) -> None:
        self._meta.set_model(model)

    @_rerouted(read=True)
    def threshold(self) -> dict | None:
        return self._meta.threshold()

    @_rerouted(read=False)
    def set_threshold(self, setting: dict | None) -> None:
        self._meta.set_threshold(setting)

    @_rerouted(read=True)
    def languages(self) -> frozenset[str]:
        return self._meta.languages()

    @_rerouted(read=False)
    def add_languages(self, languages: Iterable[str]) -> bool:
        return self._meta.add_languages(languages)

    @_rerouted(read=True)
    def snapshot(self) -> "ClusterSnapshot":
        self.require_postings()
        return ClusterSnapshot(self)

    # --- writes: each batch split by shard, each shard's part one atomic batch ------------------------------------

    @_rerouted(read=False)
    def put_many(self, items: Sequence[tuple[str, bytes]]) -> int:
        self.checked_items(items)  # a bad item anywhere writes nothing
        for shard, positions in self._grouped([doc_id for doc_id, _ in items]).items():
            self._shards[shard].put_many([items[at] for at in positions])
        return self.generation()

    @_rerouted(read=False)
    def delete_many(self, ids: Sequence[str]) -> tuple[int, int]:
        stored = sum(self._shards[shard].delete_many([ids[at] for at in positions])[0]
                     for shard, positions in self._grouped(ids).items())
        return stored, self.generation()

    @_rerouted(read=False)
    def set_clusters(self, assignments: Sequence[tuple[str, int]], clustering: dict | None = None) -> int:
        """New cluster ids (negative ones asked) are taken from the store's clustering description in one batch of
        the metadata key space, then each shard writes its assignments in one batch: an id given to articles no
        longer stored stays unused."""
        self.require_postings()
        self._grouped([doc_id for doc_id, _ in assignments])  # names a bad id before anything is written
        fresh = list(dict.fromkeys(cluster for _, cluster in assignments if cluster < 0))
        given = dict(zip(fresh, self._meta.take_cluster_ids(len(fresh), clustering)))
        numbered = [(doc_id, given.get(cluster, cluster)) for doc_id, cluster in assignments]
        for shard, positions in self._grouped([doc_id for doc_id, _ in numbered]).items():
            self._shards[shard].set_clusters([numbered[at] for at in positions], describe=False)
        return self.generation()

    def close(self) -> None:
        for shard in self._shards:
            shard.close()
        self._meta.close()
        self._nodes.close()

    def drop(self) -> None:
        try:
            for space in (self._meta, *self._shards):  # the store's metadata first: it no longer opens
                space.drop()
        finally:
            self._nodes.close()


class ClusterSnapshot(Snapshot):
    """Every shard's snapshot (store/redis.py RedisSnapshot), each at its own generation: each read of a shard is
    of the state the snapshot began at, or raises StoreChanged once a write committed on that shard. A batch is
    atomic per shard, so no read sees part of a shard's batch."""

    def __init__(self, store: RedisClusterStore):
        self._store = store
        opened = store._exchange({number: RedisSnapshot.opening(shard) for number, shard in enumerate(store._shards)},
                                 WRITE_TIMEOUT)
        self._shards = [RedisSnapshot(shard, opened[number]) for number, shard in enumerate(store._shards)]
        self._unread: tuple[bytes, list[set[int]]] = (b"", [])  # per shard, the values postings() left out

    def _read(self, reads_by_shard: dict[int, SnapshotRead]) -> dict:
        """Each shard's snapshot read, all in one exchange with the primaries (RedisClusterStore._exchange); the
        answers by shard."""
        replies = self._store._exchange({number: self._shards[number].packed(read)
                                         for number, read in reads_by_shard.items()}, WRITE_TIMEOUT)
        return {number: self._shards[number].answer(read, replies[number]) for number, read in reads_by_shard.items()}

    def _by_shard(self, keys: Sequence, grouped: dict[int, list[int]], read) -> list:
        """read(shard snapshot, its keys) of each shard holding some of keys (`grouped`: their positions by shard),
        in one exchange; the answers put back in the keys' order."""
        answers = self._read({number: read(self._shards[number], [keys[at] for at in positions])
                              for number, positions in grouped.items()})
        found: list = [None] * len(keys)
        for number, positions in grouped.items():
            for position, answer in zip(positions, answers[number]):
                found[position] = answer
        return found

    def sketch(self, doc_id: str) -> tuple[int, bytes] | None:
        return self.sketches([doc_id])[0]

    @_rerouted(read=True)
    def sketches(self, doc_ids: Sequence[str]) -> list[tuple[int, bytes] | None]:
        keys = encode_ids(doc_ids)
        return self._by_shard(keys, positions_by_shard(keys, len(self._shards)), RedisSnapshot.sketches_read)

    @_rerouted(read=True)
    def postings(self, query: bytes) -> Postings:
        """Every shard's postings of the query's values, joined; a value one shard left out (hot there) is
        unread for the store, its length the sum of the shards'."""
        plans = [shard.postings_plan(query) for shard in self._shards]
        found = self._read({number: shard.buckets_read(plan.wanted)
                            for number, (shard, plan) in enumerate(zip(self._shards, plans)) if plan.wanted})
        parts = [shard.postings_of(query, plan, found.get(number, {}))
                 for number, (shard, plan) in enumerate(zip(self._shards, plans))]
        self._unread = (query, [set(part.unread.tolist()) for part in parts])
        lengths: dict[int, int] = {}
        for part in parts:
            for index, length in zip(part.unread.tolist(), part.unread_lengths.tolist()):
                lengths[index] = lengths.get(index, 0) + length
        unread = sorted(lengths)
        return Postings(*(np.concatenate(column) for column in zip(*(part[:3] for part in parts))),
                        np.array(unread, np.intp), np.array([lengths[index] for index in unread], np.int64))

    @_rerouted(read=True)
    def unread_postings(self, query: bytes, value_indices) -> Postings:
        """From each shard, only the values it left out (the others gave theirs whole in postings())."""
        left_out = self._unread[1] if self._unread[0] == query else [None] * len(self._shards)
        wanted = np.asarray(value_indices).tolist()
        parts = [shard.unread_postings(query, [index for index in wanted if unread is None or index in unread])
                 for shard, unread in zip(self._shards, left_out)]
        return Postings(*(np.concatenate(column) for column in zip(*(part[:3] for part in parts))))

    @_rerouted(read=True)
    def articles(self, docnos: Sequence[int]) -> list[tuple[str, bytes]]:
        """The ids of the numbers, then their sketches, each an exchange with every primary holding some."""
        by_shard: dict[int, list[int]] = {}  # a shard's numbers are those of its remainder (redis_connection.Numbering)
        for position, docno in enumerate(docnos):
            by_shard.setdefault(docno % len(self._shards), []).append(position)
        keys = self._by_shard(docnos, by_shard, RedisSnapshot.ids_read)
        sketches = self._by_shard(keys, by_shard, RedisSnapshot.stored_sketches_read)
        return [(key.decode(), sketch) for key, sketch in zip(keys, sketches)]

    def scan(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, str, bytes]]:
        """The shards' scans merged in docno order, each followed across a moved slot (_followed)."""
        return heapq.merge(*(self._followed(shard, start, stop) for shard in self._shards))

    def _followed(self, shard: RedisSnapshot, start: int, stop: int | None) -> Iterator[tuple[int, str, bytes]]:
        """A shard's scan that goes on from where it stopped where a read failed because its slot moved or its
        primary failed over (StoreUnavailable, and the slot map read again routes the shard elsewhere): still at
        the snapshot's generation, so the articles are those of one state (a write since is StoreChanged)."""
        while True:
            routings = self._store._routings
            try:
                for article in shard.scan(start, stop):
                    yield article
                    start = article[0] + 1
                return
            except StoreUnavailable:
                self._store._reroute(routings)
                if self._store._routings == routings:
                    raise

    def id_keys(self) -> Iterator[bytes]:
        return itertools.chain.from_iterable(shard.id_keys() for shard in self._shards)

    def docno_limit(self) -> int:
        return max(shard.docno_limit() for shard in self._shards)

    def close(self) -> None:
        for shard in self._shards:
            shard.close()
