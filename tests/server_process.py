"""Real neardup processes, started the way a user starts them (`neardup index`, `neardup serve`, Debian's
redis-server), and stores to run them on. The tests own it (`from server_process import serving`, tests/README.md);
the benchmark scripts start their servers with it too (`from tests.server_process import Server`), so it imports
nothing of either. The tests' fixtures are in tests/conftest.py."""
from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from neardup.core.sketch_config import SketchConfig
from neardup.store import create_store

NEARDUP = [sys.executable, "-m", "neardup.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def free_ports(count: int) -> int:
    """The first of `count` consecutive free ports on loopback (`serve --worker-ports`)."""
    return _free_below_ephemeral(range(count))


def free_cluster_port() -> int:
    """A free loopback port whose cluster bus port (10000 more) is free too."""
    return _free_below_ephemeral((0, CLUSTER_BUS_OFFSET))


CLUSTER_BUS_OFFSET = 10000


def _free_below_ephemeral(offsets) -> int:
    """A port P such that P + offset is free on loopback for every offset, all drawn below the range the kernel
    hands out for port 0 (above it when there is no room below): no outgoing connection, and no later free_port() of
    this process or another test worker, can take one of them before the server that was given them binds it."""
    low, high = _ephemeral_range()
    span = max(offsets) + 1
    start, end = (10000, low - span) if low - span > 10000 else (high + 1, 65536 - span)
    for _ in range(100):
        first = random.randrange(start, end)
        sockets = []
        try:
            for offset in offsets:
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", first + offset))
            return first
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no free ports at offsets {list(offsets)} of one another")


def _ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out for port 0, lowest and highest (Linux's default when it cannot be read)."""
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def run_neardup(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*NEARDUP, *args], input=input, capture_output=True, text=True, timeout=timeout)


def index(corpus: Path, store: Path, *args: str) -> subprocess.CompletedProcess:
    done = run_neardup("index", str(corpus), "--store", str(store), *args)
    assert done.returncode == 0, done.stderr
    return done


def sketch_store(path: Path, sketches: dict[str, bytes], config: SketchConfig | None = None) -> Path:
    """A new store at path holding these sketches, of the default configuration unless config says."""
    with create_store(path, config or SketchConfig(), []) as store:
        if sketches:
            store.put_many(list(sketches.items()))
    return path


class RedisServer:
    """Debian's redis-server on a free loopback port, in a directory of its own; `durable`: an append-only file
    fsynced at every write (what a test of a restart needs), else nothing is saved."""

    def __init__(self, directory: Path, durable: bool = False, password: str | None = None,
                 tls: Path | None = None, options: tuple[str, ...] = (), port: int | None = None):
        """`tls`: a directory holding server.pem, server.key and ca.pem; then it listens with TLS only. `options`:
        more of redis-server's (--maxmemory 2mb). `port`: a free one, else any."""
        self.directory = directory
        self.port = port or free_port()
        self.durable = durable
        self.password = password
        self.tls = tls
        self.options = options
        self.process: subprocess.Popen | None = None

    def url(self, prefix: str | None = None) -> str:
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}://127.0.0.1:{self.port}/0" + (f"?prefix={prefix}" if prefix else "")

    def start(self) -> "RedisServer":
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.durable else \
            ["--appendonly", "no"]
        listen = ["--port", str(self.port)]
        if self.tls:
            listen = ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.tls / "server.pem"),
                      "--tls-key-file", str(self.tls / "server.key"), "--tls-ca-cert-file", str(self.tls / "ca.pem"),
                      "--tls-auth-clients", "no"]
        if self.password:
            listen += ["--requirepass", self.password]
        self.directory.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["redis-server", *listen, "--bind", "127.0.0.1", "--save", "", "--dir", str(self.directory),
             *persistence, *self.options, "--logfile", str(self.log_path)], stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self.process.poll() is None, \
                f"redis-server on port {self.port} exited with {self.process.returncode}: {self.log()[-1500:]}"
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                    if self.tls:  # listening is what there is to wait for
                        return self
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith((b"+PONG", b"-NOAUTH")):
                        return self
            except OSError:
                pass
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer PING within 10 s: {self.log()[-1500:]}")

    @property
    def log_path(self) -> Path:
        return self.directory / "redis.log"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """SIGTERM: Redis finishes its append-only file and exits; SIGKILL: a crash."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(30)

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class Server:
    """`neardup serve` in its own process group; stop() sends SIGTERM and returns the exit code. Its log goes
    beside an LMDB store, or into log_dir (a Redis store has no directory)."""

    def __init__(self, store: Path | str, *args: str, workers: int = 1, port: int | None = None,
                 command: list[str] = NEARDUP, log_dir: Path | None = None):
        self.port = port or free_port()
        self.target = f"127.0.0.1:{self.port}"
        self.log_path = (log_dir or Path(store).parent) / f"serve-{self.port}.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [*command, "serve", "--store", str(store), "--port", str(self.port), "--workers", str(workers), *args],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        self.workers = workers

    def wait_ready(self, timeout: float = 30.0) -> "Server":
        """Until every worker logged that it listens and the health service says SERVING."""
        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited with {self.process.returncode}: {self.log()}")
                if self.log().count("listening on") >= self.workers:
                    try:
                        status = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1).status
                        if status == health_pb2.HealthCheckResponse.SERVING:
                            return self
                    except grpc.RpcError:
                        pass
                time.sleep(0.05)
        raise RuntimeError(f"server not ready after {timeout}s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise
        finally:
            self._log.close()

    def __enter__(self) -> "Server":
        return self.wait_ready()

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.stop()


@contextlib.contextmanager
def serving(store: Path | str, *args: str, **kwargs) -> Iterator[Server]:
    """A ready `neardup serve` on store; on leaving, SIGTERM, and it must have stopped cleanly: exit code 0 and no
    internal error in its log."""
    with Server(store, *args, **kwargs) as running:
        yield running
    assert running.process.returncode == 0, running.log()
    assert "internal error" not in running.log()


class RedisClusterServers:
    """A Redis Cluster of Debian's redis-server: `primaries` primaries with a replica each, on free loopback
    ports, in a directory of its own; nothing saved. `password`: every node asks for it (replicas give it);
    `tls`: as RedisServer's, and the nodes speak TLS to each other (server.pem then serves and connects)."""

    def __init__(self, directory: Path, primaries: int = 3, password: str | None = None, tls: Path | None = None,
                 node_timeout_ms: int = 5000):
        """`node_timeout_ms`: how long a primary is unreachable before its replica is promoted (a little more)."""
        self.password, self.tls = password, tls
        options = ("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout",
                   str(node_timeout_ms)) + ("--masterauth", password) * bool(password) + \
            ("--tls-cluster", "yes", "--tls-replication", "yes") * bool(tls)
        self.servers = [RedisServer(directory / f"node{number}", password=password, tls=tls, options=options,
                                    port=port) for number, port in enumerate(self._ports(2 * primaries))]

    @staticmethod
    def _ports(count: int) -> list[int]:
        """`count` ports, none of them another's cluster bus port."""
        ports: set[int] = set()
        while len(ports) < count:
            port = free_cluster_port()
            taken = ports | {other + CLUSTER_BUS_OFFSET for other in ports}
            if not {port, port + CLUSTER_BUS_OFFSET} & taken:
                ports.add(port)
        return sorted(ports)

    def url(self, prefix: str | None = None, shards: int | None = None) -> str:
        options = [f"prefix={prefix}"] * bool(prefix) + [f"shards={shards}"] * bool(shards)
        nodes = ",".join(f"127.0.0.1:{server.port}" for server in self.servers[:2])
        return f"{'rediss' if self.tls else 'redis'}+cluster://{nodes}" + ("?" + "&".join(options) if options else "")

    def cli(self, server: RedisServer, *args: str) -> str:
        secure = ["--tls", "--cacert", str(self.tls / "ca.pem")] if self.tls else []
        done = subprocess.run(["redis-cli", "-p", str(server.port), *secure, *args], capture_output=True, text=True,
                              timeout=60, env={**os.environ, **({"REDISCLI_AUTH": self.password} if self.password else {})})
        assert done.returncode == 0, done.stderr
        return done.stdout

    def running(self) -> list[RedisServer]:
        return [server for server in self.servers if server.process is not None and server.process.poll() is None]

    def nodes(self) -> dict[int, dict]:
        """The nodes as a running one sees them, by port: id, role ("master" or "slave"), failed (flagged fail),
        its primary's id, the slots it serves."""
        found = {}
        for line in self.cli(self.running()[0], "cluster", "nodes").splitlines():
            node_id, address, flags, primary, *_, link = line.split()[:8]
            slots = set()
            for part in line.split()[8:]:
                if not part.startswith("["):  # a slot being moved: still served by this node
                    first, _, last = part.partition("-")
                    slots.update(range(int(first), int(last or first) + 1))
            found[int(address.split("@")[0].rpartition(":")[2])] = {
                "id": node_id, "role": "master" if "master" in flags else "slave",
                "failed": "fail" in flags.split(","), "primary": primary, "slots": slots}
        return found

    def server(self, port: int) -> RedisServer:
        return next(server for server in self.servers if server.port == port)

    def primary_ports(self) -> list[int]:
        """The ports of the nodes serving slots: the primaries (a node just made a replica may still be flagged
        master for a moment, but serves no slot)."""
        return [port for port, node in self.nodes().items() if node["slots"]]

    def primary_of(self, slot: int) -> RedisServer:
        """The node serving slot now."""
        return self.server(next(port for port, node in self.nodes().items()
                                if node["role"] == "master" and slot in node["slots"]))

    def replica_of(self, primary: RedisServer) -> RedisServer:
        nodes = self.nodes()
        return self.server(next(port for port, node in nodes.items() if node["primary"] == nodes[primary.port]["id"]))

    def move_slot(self, slot: int, keys_per_step: int = 20) -> RedisServer:
        """Moves slot to another primary while it serves, as `redis-cli --cluster reshard` does: the keys
        `keys_per_step` at a time by MIGRATE, then the slot given to the new primary. The new primary."""
        import redis  # the redis extra, which a cluster needs anyway

        source = self.primary_of(slot)
        nodes = self.nodes()
        target = next(server for server in self.servers
                      if server is not source and nodes[server.port]["role"] == "master")
        source_id, target_id = nodes[source.port]["id"], nodes[target.port]["id"]
        self.cli(target, "cluster", "setslot", str(slot), "importing", source_id)
        self.cli(source, "cluster", "setslot", str(slot), "migrating", target_id)
        with redis.Redis(port=source.port, password=self.password) as client:  # keys of bytes, which redis-cli mangles
            while keys := client.execute_command("CLUSTER", "GETKEYSINSLOT", slot, keys_per_step):
                client.execute_command("MIGRATE", "127.0.0.1", target.port, "", 0, 5000, "KEYS", *keys,
                                       *(["AUTH", self.password] if self.password else []))
        for server in [target, source] + [server for server in self.servers if server not in (target, source)]:
            if nodes[server.port]["role"] == "master":
                self.cli(server, "cluster", "setslot", str(slot), "node", target_id)
        return target

    def settled(self) -> bool:
        """Every node running, every one saying cluster_state:ok and none flagged failed; each node serving slots
        a primary by its own account with a replica online, each other node a replica by its own account in sync
        with its primary. A restarted node's own account counts: for a moment it may still call itself a primary,
        and a write waiting for a replica (?wait=1) would then time out."""
        if len(self.running()) != len(self.servers):
            return False
        if not all("cluster_state:ok" in self.cli(server, "cluster", "info") for server in self.servers):
            return False
        nodes = self.nodes()
        if any(node["failed"] for node in nodes.values()):
            return False
        for port, node in nodes.items():
            replication = self.cli(self.server(port), "info", "replication")
            expected = ("role:master", "state=online") if node["slots"] else ("role:slave", "master_link_status:up")
            if not all(part in replication for part in expected):
                return False
        return True

    def start(self) -> "RedisClusterServers":
        try:
            for server in self.servers:
                server.start()
            self.cli(self.servers[0], "--cluster", "create",
                     *(f"127.0.0.1:{server.port}" for server in self.servers), "--cluster-replicas", "1",
                     "--cluster-yes")
            deadline = time.monotonic() + 30
            while not self.settled():  # replicas in sync too: a write waiting for one (?wait=1) is answered
                if time.monotonic() > deadline:
                    raise RuntimeError("the Redis Cluster did not reach cluster_state:ok with its replicas in "
                                       "sync within 30 s")
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        for server in self.servers:
            server.stop()

    def __enter__(self) -> "RedisClusterServers":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

