"""`neardup index` throughput: the local path (1 and 2 processes) against --engine dask on a LocalCluster of 1 and 2
worker processes, in the same run, on the same corpus; every store checked equal to the local one (digest).

The corpus is the development corpus (devcorpus.py) --copies times, each copy's edits from its own seed, under new
ids, so it is big enough for many partitions. Each configuration runs `neardup index` as a user does (a new
process, a new store) and the figure is its summary's docs/s (the whole command after argument parsing: reading,
sketching, learning the stop-list, writing the LMDB store with postings from the client) with the seconds of each
phase; configurations take
turns round by round and each keeps its best round. A cluster's workers are started and warmed (their first task
imports NLTK) before the timing, as long-lived workers of a real cluster would be. On a 2-core machine 2 workers
can at best double one.

Into the default LMDB store (one writer: the client writes what the workers sketched, so its writes bound what
workers can gain), or with --store redis into a Redis store on a redis-server started here (Debian's, on a free
port): there the dask workers write their partitions' batches themselves, in parallel. With --store cluster, every
configuration runs both into one Redis and into a Redis Cluster of 3 primaries with a replica each
(tests/server_process.RedisClusterServers, the store's default 16 shards), in turns in the same run: the workers'
batches then split by shard over the primaries, and the figure to read is each primary's CPU beside one Redis'.

    python -m benchmarks.bench_index_dask [--quick] [--store lmdb|redis|cluster] [--copies N] [--rounds N]
        [--partition-bytes N]

writes benchmarks/out/index_dask.json (index_dask_redis.json, index_dask_cluster.json) and prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import redis
from distributed import Client, LocalCluster

from benchmarks.lib import devcorpus
from benchmarks.lib.paths import OUT as OUT_DIR, ROOT
from benchmarks.lib.report import table
from tests.server_process import NEARDUP, RedisClusterServers, RedisServer
from neardup.store import open_store

OUT = OUT_DIR / "index_dask.json"


def write_corpus(path: Path, copies: int, size: int) -> tuple[int, int]:
    """The development corpus `copies` times, each copy edited with its own seed, ids made distinct; returns
    (documents, bytes)."""
    documents = 0
    with path.open("w", encoding="utf-8") as out:
        for copy in range(copies):
            for doc in devcorpus.generate(devcorpus.DEFAULT_SPLIT, size, seed=copy + 1):
                documents += 1
                out.write(json.dumps({"id": f"{copy}-{doc.id}", "text": doc.text, "lang": doc.lang},
                                     ensure_ascii=False) + "\n")
    return documents, path.stat().st_size


def run_index(corpus: Path, store: Path, *args: str) -> dict:
    """docs/s of one `neardup index` run and the seconds of its phases, from its summary."""
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(store), *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"neardup index {' '.join(args)} failed:\n{done.stderr}")
    found = re.search(r"\(([\d,]+) docs/s; reading and sketching ([\d.]+) s, stop-list ([\d.]+) s, writing ([\d.]+) s",
                      done.stdout)
    return {"docs_per_s": float(found.group(1).replace(",", "")), "sketching_s": float(found.group(2)),
            "stoplist_s": float(found.group(3)), "writing_s": float(found.group(4))}


CLUSTER_PRIMARIES = 3


def redis_cpu(port: int) -> float:
    """CPU seconds a redis-server process has used (INFO cpu: its main thread's and its helpers')."""
    with redis.Redis(port=port) as client:
        cpu = client.info("cpu")
    return cpu["used_cpu_sys"] + cpu["used_cpu_user"]


class StoreKind:
    """Where one kind of store lives for the run: a directory (lmdb), a redis-server or a Redis Cluster started
    here; each run's store under a name of its own, and the CPU seconds of the Redis processes holding it (per
    primary, for a cluster)."""

    def __init__(self, kind: str, root: Path, stack: ExitStack):
        self.kind, self.root = kind, root
        self.server = stack.enter_context(RedisServer(root / "redis")) if kind == "redis" else None
        self.cluster = stack.enter_context(RedisClusterServers(root / "cluster", CLUSTER_PRIMARIES)) \
            if kind == "cluster" else None
        self.ports = [self.server.port] if self.server else \
            self.cluster.primary_ports() if self.cluster else []

    def location(self, name: str) -> Path | str:
        if self.server:
            return self.server.url(name)
        return self.cluster.url(name) if self.cluster else self.root / name

    def cpu(self) -> list[float]:
        return [redis_cpu(port) for port in self.ports]


def digest(store: Path | str) -> str:
    with open_store(store, readonly=True) as opened:
        return opened.digest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 copies of 1,000 documents, 1 round")
    parser.add_argument("--copies", type=int, default=6, help="copies of the development corpus (default 6)")
    parser.add_argument("--size", type=int, default=devcorpus.DEFAULT_SIZE,
                        help=f"documents of the development corpus (default {devcorpus.DEFAULT_SIZE})")
    parser.add_argument("--rounds", type=int, default=2, help="turns per configuration; the best counts (default 2)")
    parser.add_argument("--partition-bytes", type=int, default=2**20,
                        help="--partition-bytes of the dask runs (default 1 MiB: tens of partitions here; 0: "
                             "neardup's own, about 4 a worker)")
    parser.add_argument("--store", choices=("lmdb", "redis", "cluster"), default="lmdb",
                        help="the store every configuration writes (default lmdb); cluster: a Redis Cluster of "
                        f"{CLUSTER_PRIMARIES} primaries and one Redis, in turns")
    args = parser.parse_args(argv)
    copies, size, rounds = (2, 1000, 1) if args.quick else (args.copies, args.size, args.rounds)
    out = OUT if args.store == "lmdb" else OUT.with_name(f"index_dask_{args.store}.json")
    kinds = ["redis", "cluster"] if args.store == "cluster" else [args.store]

    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-index-dask-") as scratch, ExitStack() as stack:
        root = Path(scratch)
        stores = {kind: StoreKind(kind, root, stack) for kind in kinds}
        documents, corpus_bytes = write_corpus(root / "corpus.jsonl", copies, size)
        clusters = {workers: LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                          dashboard_address=":0") for workers in (1, 2)}
        try:
            for cluster in clusters.values():
                with Client(cluster, set_as_default=False) as client:
                    client.run(lambda: __import__("neardup.core.nltk_text").core.nltk_text.load_nltk())
            dask = ["--engine", "dask", *(["--partition-bytes", str(args.partition_bytes)] if args.partition_bytes
                                          else [])]
            options = {
                "local, 1 process": [],
                "local, --workers 2": ["--workers", "2"],
                "dask, 1 worker": [*dask, "--scheduler", clusters[1].scheduler_address],
                "dask, 2 workers": [*dask, "--scheduler", clusters[2].scheduler_address],
            }
            configurations = {(f"{kind}: " if len(kinds) > 1 else "") + name: (kind, arguments)
                              for name, arguments in options.items() for kind in kinds}
            best = {name: {"docs_per_s": 0.0} for name in configurations}
            digests = {}
            for turn in range(rounds):
                for number, (name, (kind, arguments)) in enumerate(configurations.items()):
                    store = stores[kind].location(f"store-{turn}-{number}")
                    before = stores[kind].cpu()
                    run = run_index(root / "corpus.jsonl", store, *arguments)
                    if before:  # the seconds Redis' command threads spent on the run (each primary's)
                        spent = [after - was for after, was in zip(stores[kind].cpu(), before)]
                        run["redis_cpu_s"], run["redis_cpu_s_busiest"] = sum(spent), max(spent)
                    best[name] = max(best[name], run, key=lambda run: run["docs_per_s"])
                    digests.setdefault(name, set()).add(digest(store))
        finally:
            for cluster in clusters.values():
                cluster.close()
    load.append(os.getloadavg()[0])
    equal = len(set.union(*digests.values())) == 1
    baseline = best[next(iter(configurations))]["docs_per_s"]
    rows = [{"configuration": name, "store": configurations[name][0], **run,
             "ratio_to_local": run["docs_per_s"] / baseline} for name, run in best.items()]
    scaling = {}
    for kind in kinds:
        named = {name.removeprefix(f"{kind}: "): run for name, run in best.items() if configurations[name][0] == kind}
        prefix = f"{kind}_" if len(kinds) > 1 else ""
        scaling[f"{prefix}dask_2_to_1"] = named["dask, 2 workers"]["docs_per_s"] / named["dask, 1 worker"]["docs_per_s"]
        if kind != "lmdb":  # what one Redis (a cluster's busiest primary) can take: documents per second of its CPU
            cpu = [run["redis_cpu_s_busiest"] for run in named.values()]
            scaling[f"{prefix}redis_docs_per_cpu_s"] = documents / (sum(cpu) / len(cpu))
    if len(kinds) > 1:
        for name in options:
            scaling[f"cluster_to_redis[{name}]"] = \
                best[f"cluster: {name}"]["docs_per_s"] / best[f"redis: {name}"]["docs_per_s"]
    report = {"command": "python -m benchmarks.bench_index_dask" + (" --quick" if args.quick else "")
              + (f" --store {args.store}" if args.store != "lmdb" else "")
              + (f" --partition-bytes {args.partition_bytes}" if args.partition_bytes != 2**20 else ""),
              "store": args.store,
              "documents": documents, "bytes": corpus_bytes, "partition_bytes": args.partition_bytes,
              "rounds": rounds, "cores": os.cpu_count(), "load_average_1min": {"before": load[0], "after": load[1]},
              "stores_equal": equal, "scaling": scaling,
              "python": platform.python_version(), "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{documents:,} documents ({corpus_bytes / 1e6:.1f} MB), {os.cpu_count()} cores, best of {rounds} "
          f"round(s); dask partitions of {args.partition_bytes:,} bytes; load average (1 min) {load[0]:.1f} before, "
          f"{load[1]:.1f} after; every store's digest equal: {equal}\n")
    redis_columns = ["Redis CPU s", "busiest primary's CPU s"] if args.store != "lmdb" else []
    print("\n".join(table(["configuration", "docs/s", f"x {rows[0]['configuration']}", "reading + sketching s",
                           "stop-list s", "writing s", *redis_columns],
                          [[row["configuration"], f"{row['docs_per_s']:,.0f}", f"{row['ratio_to_local']:.2f}",
                            f"{row['sketching_s']:.1f}", f"{row['stoplist_s']:.1f}", f"{row['writing_s']:.1f}",
                            *([f"{row['redis_cpu_s']:.1f}", f"{row['redis_cpu_s_busiest']:.1f}"]
                              if redis_columns else [])]
                           for row in rows])))
    print("\n" + "; ".join(f"{name}: {value:,.2f}" for name, value in scaling.items()))
    print(f"\nwrote {out.relative_to(ROOT)}")
    if not equal:
        raise SystemExit("the stores differ")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"{time.monotonic() - started:.0f} s")
