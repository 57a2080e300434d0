"""Dedup, FindSimilar and Upsert over the Redis stores (one Redis; a Redis Cluster of 3 primaries) against the LMDB
store in the same run, and what an article costs in Redis' memory.

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

Each Dedup is followed by an empty call (the health Check) on the same server, timed apart: the floor each Dedup is
also given as a ratio to. FindSimilar of stored ids likewise (no search index: the store's postings are read, on the
cluster from every shard). Each kind of call also gives the CPU its Redis processes spent per call (INFO cpu; the
cluster: over its primaries, and its busiest one's), what sizes the primaries for a rate of calls. Then Upsert: new
articles with their sketches (so the store's write is what is timed,
not sketching), one caller, in batches of 1 and of 100 documents, the servers in alternating blocks; the rate is
the documents written over the seconds the calls took (on the cluster a batch of 100 splits into a batch per shard).

In process, without gRPC: get_many of 100 ids on each store, in turns. Memory: Redis' used_memory before and
after the fill over N, and MEMORY USAGE of each key of the store (the cluster: used_memory over its primaries); then
N more articles written into each Redis store, and their growth over N (the marginal bytes per article, once the
postings' bucket keys exist: the figure that scales). Writes redis_store.json and redis_store.md
(also printed). Goals, reported, never asserted: Dedup p50 over Redis at most 1.3x LMDB's (issue 14), over the
cluster at most 1.3x one Redis' (issue 41).
"""
from __future__ import annotations

import argparse
import json
import math
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
from benchmarks.lib.store_content import BATCH, article_id, batches, sketches as content_sketches
from neardup.core.sketch_config import SketchConfig
from neardup.store import create_store, open_store
from neardup.store.buckets import BUCKET_MASK
from neardup.store.redis import connect
from neardup.store.redis_cluster import DEFAULT_SHARDS
from neardup_client.v1 import neardup_pb2 as pb

RESULT_SET = 100
BLOCK = 50
#: Documents each server takes per Upsert batch size
UPSERT_DOCUMENTS, UPSERT_BATCHES = 2_000, (1, 100)
#: FindSimilar calls per server
SIMILAR_CALLS = 300
#: Cluster stores' shards whose generation read is timed
SHARD_COUNTS = (16, 64, 256)
#: Sizing (sizing()): the stores sized, Redis' memory over the data (jemalloc's fragmentation), and what one primary
#: should hold (room left on its host for a fork's copy-on-write and a replica's full sync)
SATURATED_BUCKETS = 4096
ARTICLE_COUNTS, FRAGMENTATION, PRIMARY_BYTES = (100_000_000, 1_000_000_000), 1.2, 25 * 10**9
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
    """Redis' used_memory less its replicas' output buffers (writes on their way to a replica: they drain)."""
    return sum((lambda memory: memory["used_memory"] - memory.get("mem_clients_slaves", 0))(client.info("memory"))
               for client in clients)


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


def calls_against_empty(servers: dict[str, Server], path: str, bodies: list[bytes]) -> dict:
    """Each request (serialized, of the method at `path`) once per server, each call followed by an empty one,
    servers alternating in blocks of BLOCK calls; answers compared."""
    channels = {name: grpc.insecure_channel(server.target) for name, server in servers.items()}
    calls = {name: (channel.unary_unary(path), channel.unary_unary(load.HEALTH_PATH))
             for name, channel in channels.items()}
    samples = {name: ([], []) for name in servers}
    try:
        for start in range(0, len(bodies), BLOCK):
            answers = {}
            for name, (dedup, empty) in calls.items():
                answers[name] = []
                for body in bodies[start:start + BLOCK]:
                    began = time.perf_counter_ns()
                    answers[name].append(dedup(body))
                    between = time.perf_counter_ns()
                    empty(load.HEALTH_REQUEST)
                    samples[name][0].append((between - began) / 1000)
                    samples[name][1].append((time.perf_counter_ns() - between) / 1000)
            first, *others = answers.values()
            for other in others:
                assert other == first, "the stores answered differently"
    finally:
        for channel in channels.values():
            channel.close()
    found = {}
    for name, (timed, empties) in samples.items():
        latency, empty = measure.percentiles_ms(np.array(timed)), measure.percentiles_ms(np.array(empties))
        found[name] = {"latency_ms": latency, "empty_call_ms": empty, "calls": len(timed),
                       "to_empty_call": {q: latency[q] / empty[q] for q in ("p50", "p99")}}
    return found


def redis_cpu(clients: dict[str, list[redis.Redis]]) -> dict[str, list[float]]:
    """CPU seconds each Redis process of each store has used (INFO cpu), per store."""
    return {name: [(lambda cpu: cpu["used_cpu_sys"] + cpu["used_cpu_user"])(client.info("cpu")) for client in found]
            for name, found in clients.items()}


def with_redis_cpu(clients: dict[str, list[redis.Redis]], work) -> dict:
    """What work() measured per store, with the CPU microseconds per call each Redis store spent on it (over all
    its primaries, and the busiest one's)."""
    before = redis_cpu(clients)
    found = work()
    for name, after in redis_cpu(clients).items():
        spent = [(now - was) * 1e6 / found[name]["calls"] for now, was in zip(after, before[name])]
        found[name]["redis_cpu_us_per_call"] = {"all": sum(spent), "busiest": max(spent)}
    return found


def upsert_rates(servers: dict[str, Server], first_number: int, batch_sizes=UPSERT_BATCHES) -> dict:
    """Documents per second one caller writes through each server with Upsert, per batch size: new articles (ids
    after the stored ones), the same on every server, the servers alternating in blocks of calls."""
    rng = np.random.default_rng(41)
    channels = {name: grpc.insecure_channel(server.target) for name, server in servers.items()}
    calls = {name: channel.unary_unary(load.UPSERT_PATH) for name, channel in channels.items()}
    rates: dict = {}
    number = first_number
    try:
        for size in batch_sizes:
            bodies = []
            for _ in range(UPSERT_DOCUMENTS // size):
                ids = [article_id(n) for n in range(number, number + size)]
                number += size
                documents = [pb.Document(id=doc_id, sketch=sketch)
                             for doc_id, sketch in zip(ids, content_sketches(rng, size))]
                bodies.append(pb.UpsertRequest(documents=documents).SerializeToString())
            seconds = dict.fromkeys(servers, 0.0)
            block = max(1, BLOCK // size)
            for start in range(0, len(bodies), block):
                for name, call in calls.items():
                    began = time.perf_counter()
                    for body in bodies[start:start + block]:
                        assert pb.UpsertResponse.FromString(call(body)).upserted == size
                    seconds[name] += time.perf_counter() - began
            rates[f"batch_{size}"] = {name: {"documents_per_s": UPSERT_DOCUMENTS // size * size / spent,
                                             "calls": len(bodies)} for name, spent in seconds.items()}
    finally:
        for channel in channels.values():
            channel.close()
    return rates


def full_sketches(rng: np.random.Generator, count: int, k: int = SketchConfig().k) -> list[bytes]:
    """Sketches of K values each, as a long article's (the synthetic store's hold 10..64), whose values fall in
    only SATURATED_BUCKETS of the postings' buckets (their low BUCKET_BITS): those buckets all exist after the first
    articles, as every bucket of every shard does in a store of many millions."""
    sketches = []
    for _ in range(count):
        values = rng.integers(0, 2**32, 2 * k, dtype=np.uint32) & ~np.uint32(BUCKET_MASK) | \
            rng.integers(0, SATURATED_BUCKETS, 2 * k, dtype=np.uint32)
        sketches.append(np.unique(values)[:k].astype("<u4").tobytes())
    return sketches


def marginal_memory(urls: dict[str, str], clients: dict[str, list[redis.Redis]], first: int, more: int) -> dict:
    """Redis memory per article of full sketches (K values) once every postings bucket they touch exists: `more`
    such articles written past the first `first`, then `more` again, each store the same ones; the growth over the
    second `more` is what an article costs a large store (where all 2^BUCKET_BITS buckets of every shard exist),
    the figure sizing() scales."""
    found: dict = {"articles_added": more, "sketch_values": SketchConfig().k, "buckets": SATURATED_BUCKETS}
    for name, url in urls.items():
        rng = np.random.default_rng(7)
        with open_store(url) as store:
            passes = [used_memory(clients[name])]
            for begin in (first, first + more):
                for start in range(begin, begin + more, BATCH):
                    numbers = range(start, min(begin + more, start + BATCH))
                    store.put_many(list(zip(map(article_id, numbers), full_sketches(rng, len(numbers)))))
                passes.append(used_memory(clients[name]))
        found[f"{name}_bytes_per_article"] = (passes[2] - passes[1]) / more
    return found


def generation_costs(cluster: RedisClusterServers, redis_url: str, shard_counts=SHARD_COUNTS) -> dict:
    """What reading the generation (every request's one read) costs in process: one Redis against cluster stores of
    each number of shards, in turns; the cost a store's ?shards= (fixed at creation) puts on every request."""
    stores = {"redis": open_store(redis_url, readonly=True)}
    for shards in shard_counts:
        url = cluster.url(f"shards{shards}", shards=shards)
        create_store(url, SketchConfig(), []).close()
        stores[f"cluster, {shards} shards"] = open_store(url, readonly=True)
    try:
        return measure.interleaved_us({name: (store.generation, [()] * 200) for name, store in stores.items()},
                                      rounds=5)
    finally:
        for store in stores.values():
            store.close()


def sized(articles: int, per_article: float) -> dict:
    """A store of `articles`: its bytes, the primaries that holds, and the shards to create it with: a power of two,
    at least the store's default and one per primary, as a shard is never split over primaries."""
    primaries = max(1, math.ceil(articles * per_article / PRIMARY_BYTES))
    return {"articles": articles, "bytes": articles * per_article, "gigabytes": articles * per_article / 1e9,
            "primaries": primaries, "shards": max(DEFAULT_SHARDS, 1 << (primaries - 1).bit_length())}


def sizing(results: dict) -> dict:
    """Primaries for ARTICLE_COUNTS articles from the marginal bytes per article on the cluster (FRAGMENTATION
    added, PRIMARY_BYTES each), the shards that many primaries need, and what one primary's CPU core takes of each
    kind of call (its busiest primary's CPU per call here)."""
    per_article = results["memory"]["marginal"]["cluster_bytes_per_article"] * FRAGMENTATION
    calls = {"dedup_cold": results["dedup"]["cold"], "dedup_warm": results["dedup"]["warm"],
             "find_similar": results["find_similar"]}
    return {"assumed": {"fragmentation": FRAGMENTATION, "primary_bytes": PRIMARY_BYTES,
                        "primary_gigabytes": PRIMARY_BYTES / 1e9},
            "bytes_per_article": per_article,
            "stores": [sized(count, per_article) for count in ARTICLE_COUNTS],
            "calls_per_primary_cpu_s": {name: 1e6 / figures["cluster"]["redis_cpu_us_per_call"]["busiest"]
                                        for name, figures in calls.items()}}


def similar_bodies(ids: list[str], count: int) -> list[bytes]:
    """FindSimilar of stored ids (their stored sketches searched over the store's postings: a fan-out over every
    shard on the cluster)."""
    return [pb.FindSimilarRequest(id=doc_id).SerializeToString() for doc_id in ids[:count]]


def _primaries(cluster: RedisClusterServers) -> list[redis.Redis]:
    return [redis.Redis(port=port) for port in cluster.primary_ports()]


def run(work: Path, articles: int) -> dict:
    lmdb_path = work / "lmdb-store"
    with RedisServer(work / "redis") as single, RedisClusterServers(work / "cluster", CLUSTER_PRIMARIES) as cluster:
        urls = {"redis": single.url(), "cluster": cluster.url()}
        clients = {"redis": [connect(urls["redis"])[0]], "cluster": _primaries(cluster)}
        before = {name: used_memory(found) for name, found in clients.items()}
        fill_seconds = {"lmdb": fill(lmdb_path, articles), **{name: fill(url, articles) for name, url in urls.items()}}
        memory = redis_memory(urls["redis"], before["redis"], articles)
        memory["cluster_bytes_per_article"] = (used_memory(clients["cluster"]) - before["cluster"]) / articles
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
        generation_by_shards = generation_costs(cluster, urls["redis"])
        servers = {name: Server(location, *load.CACHE_OFF, port=free_port(), log_dir=work)
                   for name, location in locations.items()}
        try:
            for server in servers.values():
                server.wait_ready(60)
            bodies = [pb.DedupRequest(ids=ids).SerializeToString() for ids in id_sets]
            cold = with_redis_cpu(clients, lambda: calls_against_empty(servers, load.DEDUP_PATH, bodies))
            warm = with_redis_cpu(clients, lambda: calls_against_empty(servers, load.DEDUP_PATH, bodies))
            similar = with_redis_cpu(clients, lambda: calls_against_empty(servers, load.SIMILAR_PATH,
                                                                          similar_bodies(ids, SIMILAR_CALLS)))
            upsert = upsert_rates(servers, articles)
        finally:
            for server in servers.values():
                server.stop()
        memory["marginal"] = marginal_memory(urls, clients, articles + UPSERT_DOCUMENTS * len(UPSERT_BATCHES),
                                             articles // 2)
        for found in clients.values():
            for client in found:
                client.close()
    return {"articles": articles, "result_set": RESULT_SET, "cluster_primaries": CLUSTER_PRIMARIES,
            "fill_seconds": fill_seconds, "memory": memory, "get_many_in_process_us": in_process,
            "generation_in_process_us": generation_by_shards,
            "dedup": {"cold": cold, "warm": warm}, "find_similar": similar, "upsert": upsert,
            "machine": measure.machine()}


def markdown(results: dict) -> str:
    lines = [f"Redis stores against the LMDB store: {results['articles']:,} synthetic articles, result sets of "
             f"{results['result_set']} stored ids, one server each, session cache off, same run; the cluster: "
             f"{results['cluster_primaries']} primaries with a replica each", ""]
    rows = []
    calls = {**{f"Dedup {phase}": figures for phase, figures in results["dedup"].items()},
             "FindSimilar": results["find_similar"]}
    for call, figures in calls.items():
        for name in figures:
            latency, empty = figures[name]["latency_ms"], figures[name]["to_empty_call"]
            cpu = figures[name].get("redis_cpu_us_per_call")
            rows.append([f"{call}, {name}", *latency_cells(latency, ("p50", "p99")),
                         f"{empty['p50']:.2f}× / {empty['p99']:.2f}×",
                         f"{cpu['all']:.0f} / {cpu['busiest']:.0f}" if cpu else "", f"{figures[name]['calls']:,}"])
        for over, under in (("redis", "lmdb"), ("cluster", "redis")):
            ratio = {q: figures[over]["latency_ms"][q] / figures[under]["latency_ms"][q] for q in ("p50", "p99")}
            rows.append([f"{call}, {over} / {under}", f"{ratio['p50']:.2f}×", f"{ratio['p99']:.2f}×", "", "", ""])
    lines += table(["", "p50 ms", "p99 ms", "p50 / p99 over the empty call",
                    "Redis CPU µs a call: all / busiest primary", "calls"], rows) + [""]
    upsert = results["upsert"]
    lines += table(["Upsert, one caller", *[f"{name} documents/s" for name in next(iter(upsert.values()))],
                    "cluster / redis"],
                   [[f"batches of {size.removeprefix('batch_')}",
                     *[f"{figures['documents_per_s']:,.0f}" for figures in rates.values()],
                     f"{rates['cluster']['documents_per_s'] / rates['redis']['documents_per_s']:.2f}×"]
                    for size, rates in upsert.items()]) + [""]
    in_process = results["get_many_in_process_us"]
    lines += table(["get_many of 100 ids, in process", "median µs", "p99 µs"],
                   [[name, f"{figures['median_us']:.0f}", f"{figures['p99_us']:.0f}"]
                    for name, figures in in_process.items()]) + [""]
    memory = results["memory"]
    lines.append(f"Redis memory: {memory['bytes_per_article']:.0f} bytes per article (used_memory); by key: " +
                 ", ".join(f"{name} {size:.0f}" for name, size in memory["keys_bytes_per_article"].items()
                           if size >= 1) + f" (postings: {memory['bucket_keys']:,} bucket keys). The cluster: "
                 f"{memory['cluster_bytes_per_article']:.0f} bytes per article over its primaries.")
    marginal = memory["marginal"]
    lines.append(f"An article of {marginal['sketch_values']} sketch values once its postings buckets exist "
                 f"({marginal['articles_added']:,} articles written twice over {marginal['buckets']:,} buckets, the "
                 "second time measured): one Redis "
                 f"{marginal['redis_bytes_per_article']:.0f} bytes, the cluster "
                 f"{marginal['cluster_bytes_per_article']:.0f} "
                 "bytes over its primaries.")
    lines.append("The generation read (every request's), in process, median µs: " +
                 ", ".join(f"{name} {figures['median_us']:.0f}"
                           for name, figures in results["generation_in_process_us"].items()) + ".")
    if "sizing" in results:
        size = results["sizing"]
        lines.append(f"Sizing at {size['bytes_per_article']:,.0f} bytes per article (the cluster's marginal bytes, "
                     f"{size['assumed']['fragmentation']}× for fragmentation; "
                     f"{size['assumed']['primary_gigabytes']:.0f} GB a primary): " +
                     "; ".join(f"{store['articles']:,} articles {store['gigabytes']:,.0f} GB, "
                               f"{store['primaries']} primaries, {store['shards']} shards" for store in size["stores"]) +
                     ". Calls a primary's CPU second takes: " +
                     ", ".join(f"{name} {rate:,.0f}" for name, rate in size["calls_per_primary_cpu_s"].items()) + ".")
    lines.append("Fill (put_many, batches of 10,000): " +
                 ", ".join(f"{name} {seconds:.1f} s" for name, seconds in results["fill_seconds"].items()) + ".")
    for over, under, issue, phases in (("redis", "lmdb", 14, ("cold",)), ("cluster", "redis", 41, ("cold", "warm"))):
        for phase in phases:
            figures = results["dedup"][phase]
            goal = figures[over]["latency_ms"]["p50"] / figures[under]["latency_ms"]["p50"]
            lines.append(f"Goal (issue {issue}): {phase} Dedup p50 over {over} ≤ {GOAL_P50}× {under}'s: "
                         f"{goal:.2f}× "
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
    results["sizing"] = sizing(results)
    (args.out / "redis_store.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    (args.out / "redis_store.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
