"""What tests read from outside a running piece: the modules a command imports, a process's children, a server's
Prometheus metrics, the commands Redis counted, how many articles a store holds."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import grpc
from prometheus_client.parser import text_string_to_metric_families

from neardup.core.errors import StoreUnavailable
from neardup.store import is_redis, open_store

if TYPE_CHECKING:  # the redis extra: imported by the tests that use a Redis store
    import redis

#: The gRPC service whose calls the metrics count.
NEARDUP = "neardup.v1.NearDup"

#: What a command that prints help or calls a server has no use for: NLTK (which pulls in scipy), tqdm, and the
#: gRPC server with its health, reflection and metrics services.
HEAVY = ("nltk", "scipy", "tqdm", "neardup.jobs.index", "neardup.service.server", "neardup.service.servicer",
         "neardup.runtime.deduplicator", "neardup.runtime.served_store", "grpc_health.v1.health",
         "grpc_reflection.v1alpha.reflection", "prometheus_client")


def imported_by(tmp_path: Path, *argv: str) -> tuple[int, set[str]]:
    """`neardup ARGV` through main() in a fresh interpreter: its exit code and the modules it imported."""
    report = tmp_path / "modules.json"
    code = textwrap.dedent(f"""
        import json, sys
        from neardup.cli.main import main
        try:
            code = main({list(argv)!r})
        except SystemExit as exit_:
            code = exit_.code
        with open({str(report)!r}, "w") as out:
            json.dump([code, sorted(sys.modules)], out)
    """)
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120, check=True)
    code, modules = json.loads(report.read_text())
    return code, set(modules)


def children(pid: int) -> list[int]:
    """The processes whose parent is pid, oldest first (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == pid:
            found.append((int(fields[19]), int(stat.parent.name)))  # start time, pid
    return [child for _, child in sorted(found)]


def new_connection(target: str) -> grpc.Channel:
    """A channel with a TCP connection of its own (gRPC shares connections between equal channels otherwise), so
    that SO_REUSEPORT hands it to either worker."""
    return grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])


def scrape(port: int) -> dict[tuple[str, tuple], float]:
    """Every sample the metrics endpoint serves, keyed by (name, sorted labels)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        body = response.read().decode("utf-8")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(body) for sample in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def rpc_counts(samples: dict, service: str = NEARDUP) -> dict[tuple[str, str], float]:
    """(method, code) -> calls, from the latency histogram's _count."""
    return {(labels["method"], labels["code"]): count for (name, key), count in samples.items()
            for labels in [dict(key)] if name == "neardup_rpc_duration_seconds_count" and labels["service"] == service}


def commands_sent(client: redis.Redis, during) -> dict[str, int]:
    """Calls per command Redis counted while `during` ran (INFO commandstats before and after, on one connection:
    the second INFO counts itself)."""
    def calls() -> dict[str, int]:
        return {name.removeprefix("cmdstat_"): stats["calls"] for name, stats in client.info("commandstats").items()}

    before = calls()
    during()
    after = calls()
    return {name: after[name] - before.get(name, 0) for name in after if after[name] != before.get(name, 0)}


def stored_count(store_path: Path) -> int:
    """How many articles the store holds; 0 while there is no store yet."""
    try:
        with open_store(store_path, readonly=True) as store:
            return store.count()
    except StoreUnavailable:
        return 0


def building(store_path: Path) -> list[Path]:
    """The directories in which a new LMDB store at store_path is being built (LmdbStore.create); none for Redis."""
    if is_redis(store_path):
        return []
    return sorted(store_path.parent.glob(f".{store_path.name}.creating-*"))


def written_count(store_path: Path) -> int:
    """How many articles are written so far: the store's, or while a new LMDB store is being built, the
    building directory's."""
    return max([stored_count(store_path), *map(stored_count, building(store_path))])
