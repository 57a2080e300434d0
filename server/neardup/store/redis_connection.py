"""The Redis stores' connections: the store URL (redis://HOST:PORT/DB[?prefix=NAME], rediss:// for TLS; a Redis
Cluster's redis+cluster://HOST:PORT[,HOST:PORT...][?prefix=NAME&shards=N]) read into clients and the store's key
names, the password and CA from the environment, and Redis errors reported as StoreUnavailable."""
from __future__ import annotations

import functools
import os
import threading
from typing import Iterable, NamedTuple, Sequence
from urllib.parse import parse_qs, urlsplit

import hiredis
import redis
from redis._parsers import BaseParser
from redis.backoff import ExponentialBackoff
from redis.cluster import REDIS_CLUSTER_HASH_SLOTS, ClusterNode, RedisCluster
from redis.crc import key_slot
from redis.retry import Retry

from ..core.errors import InvalidArgument, StoreUnavailable

PASSWORD_ENV, CA_ENV = "NEARDUP_REDIS_PASSWORD", "NEARDUP_REDIS_CA"
#: Seconds a request-path read may take, and a write batch (its EXEC runs every write of the batch, one
#: postings bucket after another; Redis serves no other client meanwhile), before the store counts as unavailable.
TIMEOUT, WRITE_TIMEOUT = 5.0, 120.0


def redis_errors(method):
    """Redis down, unreachable or refusing (no auth, out of memory): StoreUnavailable, naming the store."""
    @functools.wraps(method)
    def reported(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except redis.RedisError as error:
            raise StoreUnavailable(f"store {self.location}: Redis failed ({type(error).__name__}: {error})") \
                from None
    return reported


class Numbering(NamedTuple):
    """The article numbers a key space gives: every one in a store of its own; in a store of `shards` key spaces
    (store/redis_cluster.py), those of remainder `shard`, so the shards' numbers never meet and a number names
    its shard."""
    shard: int = 0
    shards: int = 1

    def of(self, first: int, stop: int) -> range:
        """The numbers of the key space's counts first ≤ n < stop (its next_docno)."""
        return range(first * self.shards + self.shard, stop * self.shards + self.shard, self.shards)

    def limit(self, counted: int) -> int:
        """One more than the largest number given once `counted` were."""
        return (counted - 1) * self.shards + self.shard + 1 if counted else 0

    def within(self, start: int, stop: int) -> range:
        """The key space's numbers in start ≤ n < stop."""
        return range(start + (self.shard - start) % self.shards, stop, self.shards)


class Keys:
    def __init__(self, prefix: str):
        self.tag = tag = "{" + prefix + "}:"
        self.meta, self.generation, self.log = tag + "meta", tag + "generation", tag + "log"
        self.sketches, self.docnos, self.ids = tag + "sketches", tag + "docnos", tag + "ids"
        self.clusters = tag + "clusters"
        self.turn = tag + "turn"  # a writer's, while it holds the others back (RedisStore._write)
        self._bucket = (tag + "postings:").encode()
        self.all = (self.meta, self.generation, self.log, self.sketches, self.docnos, self.ids, self.clusters)

    def buckets(self, keys: Iterable[bytes]) -> list[bytes]:
        """The Redis keys of these postings buckets (store/buckets.py's keys)."""
        return [self._bucket + key for key in keys]


def delete_key_space(client: redis.Redis, keys: Keys) -> None:
    """Deletes every key of a key space (all share its hash tag, matched literally), its metadata first."""
    client.delete(keys.meta)
    pattern = "".join("\\" + char if char in "*?[]\\" else char for char in keys.tag) + "*"
    found = []
    for key in client.scan_iter(match=pattern, count=1000):
        found.append(key)
        if len(found) == 1000:
            client.delete(*found)
            found = []
    if found:
        client.delete(*found)


def connect(url: str) -> tuple[redis.Redis, Keys, str]:
    """A client for the store at url, its keys, and the url as messages show it."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.password is not None:
        raise InvalidArgument(f"a password in the store URL is visible to every user of the host: put it in "
                              f"${PASSWORD_ENV} instead")
    if set(query) - {"prefix"} or len(query.get("prefix", [""])) != 1:
        raise InvalidArgument(f"a redis store URL takes one option, ?prefix=NAME; got {parts.query!r}")
    prefix = query.get("prefix", ["neardup"])[0]
    try:
        db = int(parts.path.strip("/") or 0)
        port = parts.port or 6379
    except ValueError:
        raise InvalidArgument(f"a redis store URL is redis://HOST:PORT/DB (DB a number); got {url!r}") from None
    if not parts.hostname or not prefix or any(char in prefix for char in "{}"):
        raise InvalidArgument(f"a redis store URL is redis://HOST:PORT/DB[?prefix=NAME] (NAME without braces); "
                              f"got {url!r}")
    client = redis.Redis(host=parts.hostname, port=port, db=db,
                         **client_options(parts.scheme == "rediss", parts.username))
    shown = f"{parts.scheme}://{parts.hostname}:{port}/{db}" + (f"?prefix={prefix}" if "prefix" in query else "")
    return client, Keys(prefix), shown


def client_options(tls: bool, username: str | None) -> dict:
    """What every client of a store's Redis is made with: the password and CA from the environment, the
    timeouts."""
    return dict(username=username, password=os.environ.get(PASSWORD_ENV),
                ssl=tls, ssl_ca_certs=os.environ.get(CA_ENV) if tls else None,
                socket_timeout=WRITE_TIMEOUT, socket_connect_timeout=TIMEOUT,
                # a read after a Redis restart finds its pooled connection closed: a reconnect or two, quickly
                retry=Retry(ExponentialBackoff(cap=0.1, base=0.02), 2))


#: Bytes a reply read asks the socket for at once (redis-py's own read size), into a buffer of each thread's.
_READ_SIZE = 65536
_received = threading.local()

CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")
#: Replicas a committed batch waits for without ?wait=: none, as Redis itself acknowledges a write (docs/OPERATING.md,
#: "Redis Cluster failures": what a failover may lose, and what ?wait=1 costs).
DEFAULT_WAIT = 0
#: The most shards a cluster store may have: past a few per primary, more shards only cost more commands per
#: request (each reads every shard's generation).
MAX_SHARDS = 1024


class ClusterLocation(NamedTuple):
    """A cluster store's URL read: the nodes to ask for the slot map, the prefix, the shards asked for (None: the
    default, or the store's own), how messages show it."""
    nodes: list[tuple[str, int]]
    tls: bool
    username: str | None
    prefix: str
    shards: int | None
    wait: int
    shown: str


def cluster_location(url: str) -> ClusterLocation:
    """redis+cluster://[USER@]HOST:PORT[,HOST:PORT...][?prefix=NAME&shards=N&wait=R] (rediss+cluster:// for TLS);
    wait: the replicas each committed batch waits for (RedisStore._confirm), DEFAULT_WAIT without it."""
    usage = "a Redis Cluster store URL is redis+cluster://HOST:PORT[,HOST:PORT...][?prefix=NAME&shards=N&wait=R]"
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    username, _, hosts = parts.netloc.rpartition("@")
    if ":" in username:
        raise InvalidArgument(f"a password in the store URL is visible to every user of the host: put it in "
                              f"${PASSWORD_ENV} instead")
    if set(query) - {"prefix", "shards", "wait"} or any(len(values) != 1 for values in query.values()):
        raise InvalidArgument(f"{usage}; got options {parts.query!r}")
    prefix = query.get("prefix", ["neardup"])[0]
    nodes = []
    try:
        for node in hosts.split(","):
            host, _, port = node.rpartition(":")
            nodes.append((host.strip("[]"), int(port)))
        shards = int(query["shards"][0]) if "shards" in query else None
        wait = int(query.get("wait", [DEFAULT_WAIT])[0])
    except ValueError:
        raise InvalidArgument(f"{usage} (PORT, N and R numbers); got {url!r}") from None
    if parts.scheme not in CLUSTER_SCHEMES or parts.path.strip("/") or not prefix or \
            any(char in prefix for char in "{}") or not all(host for host, _ in nodes):
        raise InvalidArgument(f"{usage} (NAME without braces, no /DB); got {url!r}")
    if shards is not None and not 1 <= shards <= MAX_SHARDS:
        raise InvalidArgument(f"a Redis Cluster store has 1 to {MAX_SHARDS} shards; got {shards}")
    if wait < 0:
        raise InvalidArgument(f"?wait= is a number of replicas, 0 or more; got {wait}")
    shown = f"{parts.scheme}://{hosts}" + (f"?prefix={prefix}" if "prefix" in query else "")
    return ClusterLocation(nodes, parts.scheme == "rediss+cluster", username or None, prefix, shards, wait, shown)


class NodeClients:
    """A plain client for the primary that serves each hash tag, from the cluster's slot map: a shard's keys all
    share one tag, so its commands (MULTI/EXEC, WATCH, scripts) go to one node as on a single Redis, and the
    single Redis store's code serves a shard unchanged."""

    def __init__(self, location: ClusterLocation):
        self._options = client_options(location.tls, location.username)
        self._clients: dict[tuple[str, int], redis.Redis] = {}
        self._startup = list(location.nodes)
        self.refresh()

    def refresh(self) -> bool:
        """Reads the slot map again (a slot moved, a replica promoted), asking the URL's nodes and every primary
        known so far (the URL's may be the ones down); whether a slot is served by another primary now."""
        before = [(node.host, node.port) for node in getattr(self, "_primaries", [])]
        known = self._startup + [address for address in self._clients if address not in self._startup]
        cluster = RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in known],
                               **{key: value for key, value in self._options.items() if key != "retry"})
        try:
            nodes = cluster.nodes_manager
            self._primaries = [nodes.get_node_from_slot(slot) for slot in range(REDIS_CLUSTER_HASH_SLOTS)]
        finally:
            cluster.close()
        return before != [(node.host, node.port) for node in self._primaries]

    def for_key(self, key: str) -> tuple[redis.Redis, tuple[str, int]]:
        """The client of the primary holding `key`'s slot (its hash tag's), and the primary's address."""
        node = self._primaries[key_slot(key.encode())]
        address = (node.host, node.port)
        if address not in self._clients:
            self._clients[address] = redis.Redis(host=node.host, port=node.port, **self._options)
        return self._clients[address], address

    def close(self) -> None:
        for client in self._clients.values():
            client.close()


class Reads(NamedTuple):
    """Read commands in Redis' wire format, and how many replies they get."""
    packed: bytes
    count: int


def joined(parts: Sequence[Reads]) -> Reads:
    """The commands of parts, in order, as one exchange."""
    return parts[0] if len(parts) == 1 else Reads(b"".join([part.packed for part in parts]),
                                                  sum(part.count for part in parts))


def reads(commands: Iterable[tuple]) -> Reads:
    """Commands packed by hiredis itself: redis-py's packer costs several times more per command on the request path
    (a cluster store sends a few dozen commands a request). An argument that is neither text nor bytes: DataError, as
    redis-py's."""
    try:
        packed = [hiredis.pack_command(command) for command in commands]
    except TypeError as error:
        raise redis.DataError(str(error)) from None
    return Reads(b"".join(packed), len(packed))


def read_replies(connection, count: int) -> list:
    """`count` replies from a connection whose commands were sent: one hiredis reader fed from its socket, each
    reply parsed as redis-py parses it (an error reply raised as its exception), at a fraction of the cost of
    redis-py's read_response per reply (a cluster store reads a few dozen a request). Whole exchanges only: the
    connection is disconnected where one fails, so no reply is ever left in a reader."""
    reader = hiredis.Reader(replyError=BaseParser.parse_error)
    buffer = getattr(_received, "buffer", None)
    if buffer is None:
        buffer = _received.buffer = memoryview(bytearray(_READ_SIZE))
    replies = []
    try:
        while len(replies) < count:
            reply = reader.gets()
            if reply is False:  # not enough data yet (RESP2 has no false reply)
                size = connection._sock.recv_into(buffer)
                if not size:
                    raise redis.ConnectionError(f"{connection.host}:{connection.port} closed the connection")
                reader.feed(buffer, 0, size)
            elif isinstance(reply, redis.RedisError):
                raise reply
            else:
                replies.append(reply)
    except TimeoutError:
        raise redis.TimeoutError(f"no reply from {connection.host}:{connection.port} in time") from None
    except OSError as error:
        raise redis.ConnectionError(f"reading from {connection.host}:{connection.port}: {error}") from None
    return replies


class ThreadConnections:
    """Each thread's own connections to one store's server: a plain connection for the request path's reads (sent
    together, the replies read in order, the send and the read apart so that a cluster store overlaps its
    primaries' round trips), and a client of one connection for write batches (a WAIT counts one connection's
    writes). Made anew after a fork, or once the client changes (a cluster shard served by another primary now)."""

    def __init__(self):
        self._own = threading.local()
        self._made: list = []  # connections and pools, for close()
        self._lock = threading.Lock()

    def _made_one(self, made):
        with self._lock:
            self._made.append(made)
        return made

    def reader(self, client: redis.Redis, timeout: float = TIMEOUT):
        """This thread's connection for reads that may take `timeout` seconds: TIMEOUT on the request path,
        WRITE_TIMEOUT for a snapshot's (it may wait behind a write batch's EXEC, as an offline job's read does)."""
        own = self._own
        if getattr(own, "readers_pid", None) != os.getpid() or own.readers_of is not client:
            own.readers, own.readers_pid, own.readers_of = {}, os.getpid(), client
        if timeout not in own.readers:
            pool = client.connection_pool
            own.readers[timeout] = self._made_one(pool.connection_class(**{**pool.connection_kwargs,
                                                                          "socket_timeout": timeout}))
        return own.readers[timeout]

    def writer(self, client: redis.Redis) -> redis.Redis:
        own = self._own
        if getattr(own, "writer", None) is None or own.writer_pid != os.getpid() or own.writer_of is not client:
            pool = client.connection_pool
            own.writer = redis.Redis(connection_pool=self._made_one(redis.ConnectionPool(
                connection_class=pool.connection_class, max_connections=1, **pool.connection_kwargs)))
            own.writer_pid, own.writer_of = os.getpid(), client
        return own.writer

    def sent(self, client: redis.Redis, commands: Reads, location: str, timeout: float = TIMEOUT):
        """Sends read commands on this thread's reader, their replies left to replies(); None where sending failed
        on the connection (replies() then makes a second exchange)."""
        connection = self.reader(client, timeout)
        try:
            connection.send_packed_command((commands.packed,))
            return connection
        except (redis.ConnectionError, redis.TimeoutError):
            connection.disconnect()
            return None
        except BaseException as error:
            connection.disconnect()
            if isinstance(error, redis.RedisError):
                raise StoreUnavailable(f"cannot read store {location}: {type(error).__name__}: {error}") from None
            raise

    def replies(self, client: redis.Redis, connection, commands: Reads, location: str,
                timeout: float = TIMEOUT) -> list:
        """The replies to commands sent() on connection, in order; where the connection failed (sending or now),
        the whole exchange once more on a new one."""
        try:
            if connection is not None:
                try:
                    return read_replies(connection, commands.count)
                except (redis.ConnectionError, redis.TimeoutError):
                    connection.disconnect()
                except BaseException:
                    connection.disconnect()  # replies may be left unread: the next command must not read them
                    raise
            connection = self.reader(client, timeout)
            try:
                connection.send_packed_command((commands.packed,))
                return read_replies(connection, commands.count)
            except BaseException:
                connection.disconnect()
                raise
        except redis.RedisError as error:
            raise StoreUnavailable(f"cannot read store {location}: {type(error).__name__}: {error}") from None

    def close(self) -> None:
        with self._lock:
            for made in self._made:
                made.disconnect()
            self._made.clear()
