"""Dedup over the Redis stores (one Redis; a Redis Cluster of 3 primaries) against the LMDB store in the same run,
and what an article costs in Redis' memory.

    python -m benchmarks.redis_store [--quick] [--articles N] [--out benchmarks/out]

One redis-server (Debian's, started here on a free loopback port, no persistence), a Redis Cluster of 3 primaries
with a replica each (tests/server_process.RedisClusterServers, the store's default 16 shards) and one LMDB directory
hold the same N synthetic articles (lib/store_content.py's, as bench_store's: random sketches of 10..64 values,
ids like article URLs, written in batches of 10,000, postings kept as `neardup index` keeps them). Three `neardup
serve` processes, one per store, one worker each, session cache off, take the same result sets of 100 stored ids as
pre-serialized Dedup bytes, one call at a time, the servers in alternating blocks; every answer of one is checked
byte-equal to the others'.

  * cold: each result set's ids are asked for the first time, so the server reads their sketches from the store
    (Redis: the generation GET, then one HMGET of the 100 ids; the cluster: every shard's generation and the
    sketches, one send per primary);
  * warm: the same result sets again, the sketches now in the server's memo (view.LiveView), so a request reads
    only the generation (Redis: one GET).

In process, without gRPC: get_many of 100 ids on each store, in turns. Memory: Redis' used_memory before and
after the fill over N, and MEMORY USAGE of each key of the store (the cluster: used_memory over its primaries). Writes redis_store.json and redis_store.md
(also printed). Goals, reported, never asserted: Dedup p50 over Redis at most 1.3x LMDB's (issue 14), over the
cluster at most 1.3x one Redis' (issue 41).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np
import redis

from benchmarks.lib import load, measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import latency_cells, table
from tests.server_process import RedisClusterServers, RedisServer, Server, free_port
from benchmarks.lib.store_content import batches
from neardup.core.sketch_config import SketchConfig
from neardup.store import create_store, open_store
from neardup.store.redis import connect
from neardup_client.v1 import neardup_pb2 as pb

RESULT_SET = 100
BLOCK = 50
GOAL_P50 = 1.3  # Redis p50 at most this times LMDB's; the cluster's at most this times one Redis'
CLUSTER_PRIMARIES = 3


def fill(location, articles: int) -> float:
    """Writes the articles; returns the seconds it took."""
    began = time.monotonic()
    with create_store(location, SketchConfig(), []) as store:
        for batch in batches(articles):
            store.put_many(batch)
    return time.monotonic() - began


def used_memory(clients) -> int:
    return sum(client.info("memory")["used_memory"] for client in clients)


def redis_memory(url: str, used_before: int, articles: int) -> dict:
    """used_memory's growth per article, and per key: the named ones by MEMORY USAGE, the postings (a key per
    bucket) as the rest."""
    with open_store(url, readonly=True) as store:
        client, keys = store._client, store._keys
        used = client.info("memory")["used_memory"] - used_before
        per_key = {name: client.memory_usage(getattr(keys, name), samples=0) or 0
                   for name in ("sketches", "docnos", "ids", "log", "meta", "generation", "clusters")}
        per_key["postings"] = used - sum(per_key.values())
        buckets = client.dbsize() - sum(1 for name in keys.all if client.exists(name))
    return {"used_memory_bytes": used, "bytes_per_article": used / articles, "bucket_keys": buckets,
            "keys_bytes_per_article": {name: size / articles for name, size in per_key.items()}}


def dedup_calls(servers: dict[str, Server], id_sets: list[list[str]]) -> dict:
    """Each result set once per server, servers alternating in blocks of BLOCK calls; answers compared."""
    bodies = [pb.DedupRequest(ids=ids).SerializeToString() for ids in id_sets]
    channels = {name: grpc.insecure_channel(server.target) for name, server in servers.items()}
    calls = {name: channel.unary_unary(load.DEDUP_PATH) for name, channel in channels.items()}
    samples = {name: [] for name in servers}
    try:
        for start in range(0, len(bodies), BLOCK):
            answers = {}
            for name, call in calls.items():
                answers[name] = []
                for body in bodies[start:start + BLOCK]:
                    began = time.perf_counter_ns()
                    answers[name].append(call(body))
                    samples[name].append((time.perf_counter_ns() - began) / 1000)
            first, *others = answers.values()
            for other in others:
                assert other == first, "the stores answered differently"
    finally:
        for channel in channels.values():
            channel.close()
    return {name: {"latency_ms": measure.percentiles_ms(np.array(times)), "calls": len(times)}
            for name, times in samples.items()}


def _primaries(cluster: RedisClusterServers) -> list[redis.Redis]:
    return [redis.Redis(port=port) for port, node in cluster.nodes().items() if node["role"] == "master"]


def run(work: Path, articles: int) -> dict:
    lmdb_path = work / "lmdb-store"
    with RedisServer(work / "redis") as single, RedisClusterServers(work / "cluster", CLUSTER_PRIMARIES) as cluster:
        urls = {"redis": single.url(), "cluster": cluster.url()}
        client = connect(urls["redis"])[0]
        primaries = _primaries(cluster)
        before = {"redis": used_memory([client]), "cluster": used_memory(primaries)}
        fill_seconds = {"lmdb": fill(lmdb_path, articles), **{name: fill(url, articles) for name, url in urls.items()}}
        memory = redis_memory(urls["redis"], before["redis"], articles)
        memory["cluster_bytes_per_article"] = (used_memory(primaries) - before["cluster"]) / articles
        client.close()
        for primary in primaries:
            primary.close()
        ids = [doc_id for batch in batches(articles) for doc_id, _ in batch]
        random.Random(1).shuffle(ids)
        id_sets = [ids[start:start + RESULT_SET] for start in range(0, len(ids) - RESULT_SET + 1, RESULT_SET)]
        locations = {"lmdb": lmdb_path, **urls}
        stores = {name: open_store(location, readonly=True) for name, location in locations.items()}
        try:
            in_process = measure.interleaved_us({name: (store.get_many, [(s,) for s in id_sets[:200]])
                                                 for name, store in stores.items()}, rounds=5)
        finally:
            for store in stores.values():
                store.close()
        servers = {name: Server(location, *load.CACHE_OFF, port=free_port(), log_dir=work)
                   for name, location in locations.items()}
        try:
            for server in servers.values():
                server.wait_ready(60)
            cold = dedup_calls(servers, id_sets)
            warm = dedup_calls(servers, id_sets)
        finally:
            for server in servers.values():
                server.stop()
    return {"articles": articles, "result_set": RESULT_SET, "cluster_primaries": CLUSTER_PRIMARIES,
            "fill_seconds": fill_seconds, "memory": memory, "get_many_in_process_us": in_process,
            "dedup": {"cold": cold, "warm": warm}, "machine": measure.machine()}


def markdown(results: dict) -> str:
    lines = [f"Redis stores against the LMDB store: {results['articles']:,} synthetic articles, result sets of "
             f"{results['result_set']} stored ids, one server each, session cache off, same run; the cluster: "
             f"{results['cluster_primaries']} primaries with a replica each", ""]
    rows = []
    for phase, figures in results["dedup"].items():
        for name in figures:
            latency = figures[name]["latency_ms"]
            rows.append([f"Dedup {phase}, {name}", *latency_cells(latency, ("p50", "p99")),
                         f"{figures[name]['calls']:,}"])
        for over, under in (("redis", "lmdb"), ("cluster", "redis")):
            ratio = {q: figures[over]["latency_ms"][q] / figures[under]["latency_ms"][q] for q in ("p50", "p99")}
            rows.append([f"Dedup {phase}, {over} / {under}", f"{ratio['p50']:.2f}×", f"{ratio['p99']:.2f}×", ""])
    lines += table(["", "p50 ms", "p99 ms", "calls"], rows) + [""]
    in_process = results["get_many_in_process_us"]
    lines += table(["get_many of 100 ids, in process", "median µs", "p99 µs"],
                   [[name, f"{figures['median_us']:.0f}", f"{figures['p99_us']:.0f}"]
                    for name, figures in in_process.items()]) + [""]
    memory = results["memory"]
    lines.append(f"Redis memory: {memory['bytes_per_article']:.0f} bytes per article (used_memory); by key: " +
                 ", ".join(f"{name} {size:.0f}" for name, size in memory["keys_bytes_per_article"].items()
                           if size >= 1) + f" (postings: {memory['bucket_keys']:,} bucket keys). The cluster: "
                 f"{memory['cluster_bytes_per_article']:.0f} bytes per article over its primaries.")
    lines.append("Fill (put_many, batches of 10,000): " +
                 ", ".join(f"{name} {seconds:.1f} s" for name, seconds in results["fill_seconds"].items()) + ".")
    cold = results["dedup"]["cold"]
    for over, under, issue in (("redis", "lmdb", 14), ("cluster", "redis", 41)):
        goal = cold[over]["latency_ms"]["p50"] / cold[under]["latency_ms"]["p50"]
        lines.append(f"Goal (issue {issue}): cold Dedup p50 over {over} ≤ {GOAL_P50}× {under}'s: {goal:.2f}× "
                     f"({'met' if goal <= GOAL_P50 else 'NOT met'}).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20,000 articles instead of --articles")
    parser.add_argument("--articles", type=int, default=100_000, help="articles in each store (default: 100000)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the JSON and markdown go")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="neardup-redis-bench-") as work:
        results = run(Path(work), 20_000 if args.quick else args.articles)
    (args.out / "redis_store.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    (args.out / "redis_store.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
