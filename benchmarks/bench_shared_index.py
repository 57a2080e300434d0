# Whole on purpose: one benchmark, one script; its steps (store, file, serve, measure, report) share the per-size rows.
"""One search index per host against one per worker: `neardup serve --workers 2 --search-index shared` (every
worker maps one search index file, runtime/search/base_file.py) beside `--search-index memory` (each worker builds
its own copy), on a store of generated bottom-K sketches (lib/similar_corpus.py).

Per size: the store created with its articles in batches of 50,000 (create_store, articles/s); `neardup search-index` building the file
(seconds, bytes); then per mode a real server of 2 workers: seconds until both serve; each worker's memory from
/proc/PID/smaps_rollup (Rss, Pss, Shared_Clean, Private, Anonymous) and, for the shared mode, the index file's own
mapping in /proc/PID/smaps; FindSimilar (stored id, top 10, default metric and threshold) through NearDupClient
against the same server's empty health Check, one call at a time in alternating blocks (p50, p99, their ratios);
top-10 recall against an exhaustive scan (kernel.similar over every stored sketch); Upserts and Deletes through the
server (articles/s) after which each worker's answers are compared with the store path's (SimilarSearch over the
store, in this process) and a deleted article must be NOT_FOUND and in no answer; a worker killed with SIGKILL and
the seconds until its replacement answers again on its own port. The shared mode also: the seconds a worker takes
to write a new file from its mapped base and delta (the background rebuild), in this process.

Sizes up to 1,000,000 are the generator's chunks; beyond, the corpus is the first 1,000,000 articles repeated
with every value but the hot ones re-hashed per copy (fmix32 of the value XOR a per-copy salt, each sketch sorted
again), so that a copy's near-duplicate groups stay groups of their own while the hot values stay shared by all,
and generating 10,000,000 articles takes minutes, not hours. The base chunks' sketches and queries are cached in
--dir (generating them takes longest), the stores too (a store of the right size is reused).

    python -m benchmarks.bench_shared_index [--sizes 1000000 10000000] [--memory-max 1000000] [--calls 2000]
        [--queries 40] [--recall-queries N] [--file-only-above N [--reuse-file]] [--dir DIR] [--out DIR]

Sizes above --file-only-above (default 10,000,000) are measured as the index file alone, built from the
generated sketches and mapped by two processes (no store, no server).

Writes bench_shared_index.json and .md in --out (also printed). The issue's goals, reported, never asserted: at
10M, the two workers together use at most 1.2x the memory of one copy of the index; a killed worker serves again
within 5 s; FindSimilar p99 <= 3x the Check's p99; top-10 recall 1.0; writes answered exactly.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

from benchmarks.lib import load, measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from tests.server_process import NEARDUP, Server, free_port, free_ports
from benchmarks.lib.similar_corpus import CHUNK, K, SEED, bottom_k, fmix32, generate_chunk, hot_values
from benchmarks.lib.similar_queries import KINDS, pick_queries
from benchmarks.lib.store_content import article_id
from neardup.core import kernel
from neardup.core.sketch_config import SketchConfig
from neardup.core.vocabulary import DEFAULT_METRIC, DEFAULT_THRESHOLD
from neardup.runtime.search import base_file, delta
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.store import create_store, open_store
from neardup_client import Document, NearDupClient, NearDupClientError

BASE = 1_000_000  # generated articles; larger sizes repeat them re-hashed
TOP = 10
GOALS = {"memory_ratio": 1.2, "restart_seconds": 5.0, "p99_ratio": 3.0, "recall": 1.0}
WRITES, BATCH = 2_000, 100
SMAPS_FIELDS = ("Rss", "Pss", "Shared_Clean", "Shared_Dirty", "Private_Clean", "Private_Dirty", "Anonymous")


# --- the corpus ---------------------------------------------------------------------------------------------------

def base_chunks(cache: Path, per_kind: int, size: int) -> tuple[list[Path], list[dict]]:
    """The generator's first min(size, BASE) articles as sketch chunks (values and lengths) and the queries drawn
    from them (per_kind per kind over BASE articles, spread over the chunks), each chunk cached in `cache`."""
    cache.mkdir(parents=True, exist_ok=True)
    hot = hot_values()
    paths, queries = [], []
    for index in range(min(size, BASE) // CHUNK):
        path = cache / f"chunk-{index:03d}-{per_kind}.npz"
        if not path.exists():
            began = time.perf_counter()
            chunk = generate_chunk(SEED, index, CHUNK, hot)
            sketches = bottom_k(chunk)
            picked = pick_queries(chunk, index * CHUNK, max(1, per_kind * CHUNK // BASE),
                                  np.random.default_rng([SEED, 7, index]))
            np.savez(path, values=np.frombuffer(b"".join(sketches), "<u4"),
                     lengths=np.array([len(s) // 4 for s in sketches], np.int32),
                     queries=np.array([q.article for q in picked], np.int64),
                     kinds=np.array([KINDS.index(q.kind) for q in picked], np.int8))
            print(f"generated chunk {index + 1} in {time.perf_counter() - began:.1f} s", flush=True)
        data = np.load(path)
        queries += [{"article": int(a), "kind": KINDS[k]} for a, k in zip(data["queries"], data["kinds"])]
        paths.append(path)
    return paths, queries


def chunk_sketches(paths: list[Path], index: int, hot: np.ndarray) -> list[bytes]:
    """Chunk `index` of the corpus: a base chunk, or its copy index // len(paths) re-hashed (hot values kept)."""
    data = np.load(paths[index % len(paths)])
    values, lengths = data["values"], data["lengths"]
    copy = index // len(paths)
    if copy:
        salt = fmix32(np.array([copy * 0x9E3779B9 & 0xFFFFFFFF], np.uint64))[0]
        keep = np.isin(values, hot)
        values = np.where(keep, values, fmix32(values ^ salt))
        article = np.repeat(np.arange(len(lengths)), lengths)
        values = values[np.lexsort((values, article))]
    data = values.astype("<u4").tobytes()
    bounds = np.concatenate([[0], np.cumsum(lengths) * 4]).tolist()
    return [data[bounds[i]:bounds[i + 1]] for i in range(len(lengths))]


def write_store(path: Path, size: int, paths: list[Path]) -> dict:
    """The store of `size` articles (reused when one of that size is there), created with its articles in batches
    of CHUNK (create_store: each postings bucket written once): its rate, the corpus generation's time left out."""
    if path.exists():
        with open_store(path, readonly=True) as store:
            if store.count() == size:
                return {"reused": True}
        raise SystemExit(f"{path} holds another store: remove it")
    hot = hot_values()
    generating = []

    def batches():
        for index in range(size // CHUNK):
            began = time.perf_counter()
            sketches = chunk_sketches(paths, index, hot)
            items = [(article_id(index * CHUNK + n), sketch) for n, sketch in enumerate(sketches)]
            generating.append(time.perf_counter() - began)
            yield items
            print(f"store {size:,}: {(index + 1) * CHUNK:,} articles written", flush=True)

    def postings_done(part: int, parts: int) -> None:
        if part % 8 == 0:
            print(f"store {size:,}: postings {part}/{parts}", flush=True)

    began = time.perf_counter()
    create_store(path, SketchConfig(), [], indexed=True, articles=batches(), postings_done=postings_done).close()
    seconds = time.perf_counter() - began - sum(generating)
    return {"reused": False, "build_seconds": seconds, "build_articles_per_s": size / seconds,
            "generating_seconds": sum(generating)}


def truth(store_path: Path, queries: list[dict], sketches: dict[int, bytes], threshold: float) -> dict[int, list]:
    """Each query's top 10 by an exhaustive scan: kernel.similar over every stored sketch, chunk by chunk."""
    best: dict[int, list[tuple[float, str]]] = {q["article"]: [] for q in queries}
    with open_store(store_path, readonly=True) as store, store.snapshot() as snapshot:
        batch_ids, batch = [], []
        for _, doc_id, sketch in snapshot.scan():
            batch_ids.append(doc_id)
            batch.append(sketch)
            if len(batch) == CHUNK:
                _scan_batch(best, sketches, batch_ids, batch, threshold)
                batch_ids, batch = [], []
        _scan_batch(best, sketches, batch_ids, batch, threshold)
    return {article: [doc_id for _, doc_id in sorted(found)[:TOP]] for article, found in best.items()}


def _scan_batch(best, sketches, ids, batch, threshold) -> None:
    for article, found in best.items():
        own = article_id(article)
        found += [(-similarity, ids[i]) for i, similarity in
                  kernel.similar(sketches[article], batch, K, threshold, DEFAULT_METRIC) if ids[i] != own]
        found.sort()
        del found[TOP:]


# --- a server -----------------------------------------------------------------------------------------------------

def smaps(pid: int, mapped: Path | None) -> dict:
    """/proc/PID/smaps_rollup's figures (bytes), and those of the mappings of file `mapped`."""
    rollup = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in SMAPS_FIELDS:
            rollup[name] = int(value.split()[0]) * 1024
    if mapped is not None:
        own = dict.fromkeys(("Rss", "Pss", "Shared_Clean", "Private_Clean"), 0)
        inside = False
        for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
                inside = len(head) >= 6 and head[5] == str(mapped)
            elif inside and head and head[0].rstrip(":") in own:
                own[head[0].rstrip(":")] += int(head[1]) * 1024
        rollup["index_file"] = own
    return rollup


def answers_of(client: NearDupClient, doc_id: str, threshold: float) -> list[tuple[str, float]] | str:
    try:
        return [(m.id, m.similarity) for m in client.find_similar(doc_id, top_k=TOP, threshold=threshold,
                                                                  metric=DEFAULT_METRIC).matches]
    except NearDupClientError as error:
        return error.code.name


def serve_and_measure(store_path: Path, mode: str, queries: list[dict], truth_top: dict, calls: int,
                      threshold: float, writes_from: list[bytes], mapped: Path | None) -> dict:
    port, first = free_port(), free_ports(2)
    began = time.perf_counter()
    server = Server(store_path, *load.CACHE_OFF, "--search-index", mode, "--worker-ports", str(first), workers=2,
                    port=port)
    row: dict = {"mode": mode}
    try:
        server.wait_ready(3600)
        row["ready_seconds"] = time.perf_counter() - began
        pids = measure.worker_pids(server.process.pid)
        row["memory_ready"] = {str(pid): smaps(pid, mapped) for pid in pids}
        if mode == "store":  # the workers' own memory, without any index: what the others' figures stand on
            return row
        ids = [article_id(q["article"]) for q in queries]
        targets = [f"127.0.0.1:{first}", f"127.0.0.1:{first + 1}"]
        with NearDupClient(server.target, timeout=30) as client, grpc.insecure_channel(server.target) as channel, \
                NearDupClient(targets[0], timeout=30) as one, NearDupClient(targets[1], timeout=30) as two:
            for worker in (one, two):  # every query once on each worker: its pages are warm
                for doc_id in ids:
                    worker.find_similar(doc_id, top_k=TOP, threshold=threshold, metric=DEFAULT_METRIC)
            row["memory"] = {str(pid): smaps(pid, mapped) for pid in pids}
            check = channel.unary_unary(load.HEALTH_PATH)
            kinds = {"FindSimilar (stored id, top 10)":
                     lambda i: bool(client.find_similar(ids[i % len(ids)], top_k=TOP, threshold=threshold,
                                                        metric=DEFAULT_METRIC)) and False,
                     "health Check (empty call)": lambda i: check(load.HEALTH_REQUEST) and False}
            row["latency"] = load.sequential(server, kinds, calls)
            floor = row["latency"]["kinds"]["health Check (empty call)"]["latency_ms"]
            for values in row["latency"]["kinds"].values():
                values["p50_ratio"] = values["latency_ms"]["p50"] / floor["p50"]
                values["p99_ratio"] = values["latency_ms"]["p99"] / floor["p99"]
            found = relevant = inexact = 0
            for query in queries:
                outcome = client.find_similar(article_id(query["article"]), top_k=TOP, threshold=threshold,
                                              metric=DEFAULT_METRIC)
                expected = truth_top[query["article"]]
                found += len({m.id for m in outcome.matches} & set(expected))
                relevant += len(expected)
                inexact += not outcome.exact
            row["recall"] = {"recall": found / relevant if relevant else 1.0, "relevant": relevant,
                             "queries": len(queries), "inexact": inexact}
            row["writes"] = write_and_compare(store_path, client, (one, two), queries, writes_from, threshold)
            pid = int(server.log().split("worker 2/2 pid ")[1].split()[0])
            row["restart"] = kill_and_return(server, pid, targets[1])
            row["memory_after"] = {str(pid): smaps(pid, mapped) for pid in measure.worker_pids(server.process.pid)}
    finally:
        row["server"] = load.stop_server(server)
    return row


def write_and_compare(store_path: Path, client: NearDupClient, workers, queries: list[dict],
                      writes_from: list[bytes], threshold: float) -> dict:
    """Upserts (new articles: query sketches with a value changed, so each has near-duplicates), replacements of
    query articles, deletes of others; then each worker's top 10 for the written, replaced and query articles
    against the store path's, and the deleted ones NOT_FOUND and in no answer. Then the query articles are written
    back as they were (the next server's recall is measured on the generated corpus) and the new ones deleted."""
    stamp = time.time_ns()
    rng = np.random.default_rng(stamp & 0xFFFF)
    new = []
    for n in range(WRITES):
        values = np.frombuffer(writes_from[n % len(writes_from)], "<u4").copy()
        values[rng.integers(len(values))] = rng.integers(1 << 32, dtype=np.uint64)
        new.append(Document(f"w{stamp}-{n}", sketch=np.unique(values).astype("<u4").tobytes()))
    query_ids = [article_id(q["article"]) for q in queries]
    quarter = max(1, len(query_ids) // 4)
    replaced_ids, deleted_ids = query_ids[:quarter], query_ids[-quarter:]
    replaced = [Document(doc_id, sketch=writes_from[(i + 7) % len(writes_from)])
                for i, doc_id in enumerate(replaced_ids)]
    began = time.perf_counter()
    for at in range(0, len(new), BATCH):
        client.upsert(new[at:at + BATCH])
    upsert_seconds = time.perf_counter() - began
    client.upsert(replaced)
    client.delete(deleted_ids)
    gone = set(deleted_ids)
    probes = [doc_id for doc_id in [doc.id for doc in new[::20]] + query_ids if doc_id not in gone]
    mismatches = in_answers = not_found = 0
    with open_store(store_path, readonly=True) as store:
        engine = SimilarSearch(ServedStore(store))
        for doc_id in probes:
            want = [(m.id, m.similarity) for m in engine.find_similar(
                doc_id, SimilarParams(TOP, threshold, DEFAULT_METRIC)).matches]
            for worker in workers:
                got = answers_of(worker, doc_id, threshold)
                mismatches += got != want
                in_answers += isinstance(got, list) and any(match in gone for match, _ in got)
        for doc_id in gone:
            for worker in workers:
                not_found += answers_of(worker, doc_id, threshold) == "NOT_FOUND"
    originals = dict(zip(query_ids, writes_from))
    client.upsert([Document(doc_id, sketch=originals[doc_id]) for doc_id in replaced_ids + deleted_ids])
    for at in range(0, len(new), BATCH):
        client.delete([doc.id for doc in new[at:at + BATCH]])
    return {"upserted": len(new), "upsert_batch": BATCH, "upsert_articles_per_s": len(new) / upsert_seconds,
            "replaced": len(replaced), "deleted": len(gone), "probes": len(probes), "workers": len(workers),
            "mismatches": mismatches, "deleted_in_answers": in_answers,
            "deleted_not_found": not_found, "deleted_checked": len(gone) * len(workers)}


def kill_and_return(server: Server, pid: int, target: str) -> dict:
    """SIGKILL worker 2; the seconds until its replacement (the parent restarts it; it maps or builds its index
    and catches up before it reports SERVING) says SERVING on the worker's own port."""
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    os.kill(pid, signal.SIGKILL)
    began = time.perf_counter()
    while time.perf_counter() < began + 1800:
        try:
            with grpc.insecure_channel(target) as channel:
                status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=0.5)
            if status.status == health_pb2.HealthCheckResponse.SERVING and pid not in measure.worker_pids(
                    server.process.pid):
                return {"seconds": time.perf_counter() - began, "killed": pid}
        except grpc.RpcError:
            pass
        time.sleep(0.02)
    return {"seconds": None, "killed": pid}


def rebuild_in_process(store_path: Path, path: Path) -> dict:
    """What a worker's background rebuild does: map the file, catch up, export, write a new file (elsewhere)."""
    with open_store(store_path, readonly=True) as store:
        began = time.perf_counter()
        mapped = base_file.open_mapped(path, store)
        delta.catch_up(mapped.index, store, mapped.header["generation"], lambda _: None)
        mapped_seconds = time.perf_counter() - began
        began = time.perf_counter()
        target = path.with_name(path.name + ".rebuilt")
        header = base_file.write_file(target, mapped.index.export(), store.generation(), store)
        seconds = time.perf_counter() - began
        target.unlink()
    return {"map_and_catch_up_seconds": mapped_seconds, "write_seconds": seconds, "bytes": header["file_bytes"]}


# --- a size beyond what a store can be kept at here: the file alone ----------------------------------------------

def measure_file_only(size: int, args, paths: list[Path], queries: list[dict]) -> dict:
    """The index file built straight from the generated sketches (no store: one of this size would not fit this
    machine's disk beside the file), then 2 processes mapping it (each as a worker does: checksum, checks, per-article
    states) and searching it in process: seconds to map, FindSimilar's p50 and p99 in µs, top-10 recall against an
    exhaustive scan, and their memory (smaps) while both hold it."""
    row: dict = {"articles": size, "file_only": True, "phases": {}}
    hot = hot_values()
    directory = args.dir / f"file-{size}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "search-index"
    work = directory / "queries.json"
    sketches = {}
    for query in queries:
        sketches[query["article"]] = chunk_sketches(paths, query["article"] // CHUNK, hot)[query["article"] % CHUNK]
    if args.reuse_file and path.exists() and work.exists() and \
            [q[0] for q in json.loads(work.read_text())] == [article_id(q["article"]) for q in queries]:
        row["file"] = json.loads((directory / "file.json").read_text())
        row["file"]["reused"] = True
        return _map_twice(row, args, path, work)
    path.unlink(missing_ok=True)

    def articles():
        for index in range(size // CHUNK):
            for n, sketch in enumerate(chunk_sketches(paths, index, hot)):
                yield index * CHUNK + n, article_id(index * CHUNK + n), sketch
            if index % 20 == 19:
                print(f"file {size:,}: {(index + 1) * CHUNK:,} articles written", flush=True)

    began = time.perf_counter()
    header = base_file.write_articles(path, articles(), size, K, SketchConfig().digest(), 0)
    row["file"] = {"build_seconds": time.perf_counter() - began, "bytes": path.stat().st_size,
                   "postings": header["pool_values"]}
    (directory / "file.json").write_text(json.dumps(row["file"]))
    row["phases"]["file from generated sketches"] = row["file"]["build_seconds"]
    print(f"{size:,}: file of {row['file']['bytes']:,} bytes in {row['file']['build_seconds']:.0f} s", flush=True)
    began = time.perf_counter()
    best: dict[int, list] = {q["article"]: [] for q in queries}
    for index in range(size // CHUNK):
        batch = chunk_sketches(paths, index, hot)
        _scan_batch(best, sketches, [article_id(index * CHUNK + n) for n in range(len(batch))], batch,
                    args.threshold)
    top = {article: [doc_id for _, doc_id in found] for article, found in best.items()}
    row["phases"]["exhaustive scan"] = time.perf_counter() - began
    work.write_text(json.dumps([[article_id(q["article"]), sketches[q["article"]].hex(), top[q["article"]]]
                                for q in queries]))
    return _map_twice(row, args, path, work)


def _map_twice(row: dict, args, path: Path, work: Path) -> dict:
    """2 processes map the file one after the other (a worker's restart beside one that serves), search it, and
    hold it while their memory is read."""
    began = time.perf_counter()
    mappers, reports = [], []
    for _ in range(2):
        mappers.append(subprocess.Popen([sys.executable, "-m", "benchmarks.bench_shared_index", "--mapper",
                                         str(path), str(work), str(args.threshold), str(args.calls)],
                                        stdout=subprocess.PIPE, text=True))
        reports.append(json.loads(mappers[-1].stdout.readline()))  # it has mapped and searched
    row["memory"] = {str(mapper.pid): smaps(mapper.pid, path) for mapper in mappers}
    for mapper in mappers:
        mapper.stdin = None
        mapper.send_signal(signal.SIGTERM)
        mapper.wait(60)
    row["mappers"] = reports
    row["phases"]["2 processes mapping and searching"] = time.perf_counter() - began
    return row


def mapper(path: str, queries_path: str, threshold: float, calls: int) -> None:
    """One process mapping the file as a worker does and searching it: a JSON line of what it measured, then it
    holds the mapping until SIGTERM (its memory is read meanwhile)."""
    from neardup.core.postings_index import PostingsIndex

    began = time.perf_counter()
    mapped, _ = base_file.map_file(Path(path))  # as a worker maps it
    index = PostingsIndex(K, file=mapped)
    map_seconds = time.perf_counter() - began
    queries = json.loads(Path(queries_path).read_text())
    found = relevant = 0
    for doc_id, sketch_hex, expected in queries:
        docno, sketch = index.stored(doc_id)
        assert sketch.hex() == sketch_hex
        matches = sorted(index.search(sketch, threshold, DEFAULT_METRIC, exclude=docno).matches,
                         key=lambda m: (-m[1], m[0]))[:TOP]
        found += len({m for m, _ in matches} & set(expected))
        relevant += len(expected)
    times = []
    for i in range(calls):
        doc_id = queries[i % len(queries)][0]
        started = time.perf_counter_ns()
        docno, sketch = index.stored(doc_id)
        index.search(sketch, threshold, DEFAULT_METRIC, exclude=docno)
        times.append((time.perf_counter_ns() - started) / 1000)
    print(json.dumps({"map_seconds": map_seconds, "recall": found / relevant if relevant else 1.0,
                      "relevant": relevant, "queries": len(queries),
                      "p50_us": float(np.percentile(times, 50)), "p99_us": float(np.percentile(times, 99)),
                      "calls": calls}), flush=True)
    time.sleep(3600)


# --- the run ------------------------------------------------------------------------------------------------------

def measure_size(size: int, args, paths: list[Path], queries: list[dict]) -> dict:
    row: dict = {"articles": size, "phases": {}}
    store_path = args.dir / f"store-{size}"
    began = time.perf_counter()
    row["store"] = write_store(store_path, size, paths)
    row["phases"]["store"] = time.perf_counter() - began
    row["store_bytes"] = (store_path / "data.mdb").stat().st_size
    hot = hot_values()
    sketches = {}
    for query in queries:
        index = query["article"] // CHUNK
        sketches[query["article"]] = chunk_sketches(paths, index, hot)[query["article"] % CHUNK]
    began = time.perf_counter()
    top = truth(store_path, queries, sketches, args.threshold)
    row["phases"]["exhaustive scan"] = time.perf_counter() - began
    print(f"{size:,}: exhaustive scan {row['phases']['exhaustive scan']:.0f} s", flush=True)
    path = base_file.default_path(store_path)
    path.unlink(missing_ok=True)
    began = time.perf_counter()
    done = subprocess.run([*NEARDUP, "search-index", "--store", str(store_path)], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(done.stderr)
    row["file"] = {"build_seconds": time.perf_counter() - began, "bytes": path.stat().st_size}
    print(f"{size:,}: {done.stdout.strip()}", flush=True)
    writes_from = [sketches[q["article"]] for q in queries]
    row["servers"] = {}
    for mode in ("store", "shared", "memory"):
        if mode == "memory" and size > args.memory_max:
            row["servers"][mode] = {"skipped": f"--memory-max {args.memory_max:,}"}
            continue
        began = time.perf_counter()
        row["servers"][mode] = serve_and_measure(store_path, mode, queries, top, args.calls, args.threshold,
                                                 writes_from, path if mode == "shared" else None)
        row["phases"][f"server ({mode})"] = time.perf_counter() - began
        print(f"{size:,}: {mode} server measured", flush=True)
    began = time.perf_counter()
    row["rebuild"] = rebuild_in_process(store_path, path)
    row["phases"]["rebuild in process"] = time.perf_counter() - began
    return row


def totals(row: dict, mode: str, key: str = "memory") -> dict:
    server = row["servers"][mode]
    memory = server[key].values()
    out = {name: sum(m[name] for m in memory) for name in ("Rss", "Pss", "Anonymous", "Shared_Clean")}
    out["index_file_rss"] = [m["index_file"]["Rss"] for m in memory] if "index_file" in next(iter(memory)) \
        else None
    return out


def summarize(row: dict) -> dict:
    """The figures the docs quote, per mode: both workers' (or processes') Rss, Pss and Anonymous summed, and
    Pss over the file's bytes."""
    summary = {}
    if row.get("file_only"):
        memory = row["memory"].values()
        summary["file"] = {name.lower(): sum(m[name] for m in memory) for name in ("Rss", "Pss", "Anonymous")}
    for mode, server in row.get("servers", {}).items():
        if "skipped" not in server:
            summary[mode] = {name.lower(): value for name, value in
                             totals(row, mode, "memory_ready" if mode == "store" else "memory").items()
                             if name != "index_file_rss"}
    for figures in summary.values():
        figures["pss_per_file_byte"] = figures["pss"] / row["file"]["bytes"]
    row["summary"] = summary
    return row


def goals(rows: list[dict]) -> list[dict]:
    found = []
    for row in rows:
        if row.get("file_only"):
            n = f"{row['articles']:,}"
            pss = sum(m["Pss"] for m in row["memory"].values())
            found.append({"goal": f"{n} (file alone): 2 processes mapping it, Pss <= {GOALS['memory_ratio']} x "
                                  "the index file",
                          "measured": f"{pss / 1e9:.2f} vs {row['file']['bytes'] / 1e9:.2f} GB = "
                                      f"{pss / row['file']['bytes']:.2f} x",
                          "met": pss <= GOALS["memory_ratio"] * row["file"]["bytes"]})
            slowest = max(m["map_seconds"] for m in row["mappers"])
            found.append({"goal": f"{n} (file alone): a process maps and checks it within "
                                  f"{GOALS['restart_seconds']:g} s",
                          "measured": f"{slowest:.1f} s", "met": slowest <= GOALS["restart_seconds"]})
            recall = min(m["recall"] for m in row["mappers"])
            found.append({"goal": f"{n} (file alone): top-10 recall {GOALS['recall']} against the exhaustive scan",
                          "measured": f"{recall:.4f}", "met": recall >= GOALS["recall"]})
            continue
        shared = row["servers"].get("shared", {})
        if "memory" not in shared:
            continue
        n = f"{row['articles']:,}"
        pss = totals(row, "shared")["Pss"]
        base = totals(row, "store", "memory_ready")["Pss"] if "memory_ready" in row["servers"].get("store", {}) \
            else 0
        found.append({"goal": f"{n}: 2 shared workers' Pss <= {GOALS['memory_ratio']} x the index file",
                      "measured": f"{pss / 1e9:.2f} vs {row['file']['bytes'] / 1e9:.2f} GB = "
                                  f"{pss / row['file']['bytes']:.2f} x",
                      "met": pss <= GOALS["memory_ratio"] * row["file"]["bytes"]})
        found.append({"goal": f"{n}: the same, less what 2 workers with no index take (--search-index store, at "
                              f"ready), <= {GOALS['memory_ratio']} x the index file",
                      "measured": f"{(pss - base) / 1e9:.2f} vs {row['file']['bytes'] / 1e9:.2f} GB = "
                                  f"{(pss - base) / row['file']['bytes']:.2f} x",
                      "met": pss - base <= GOALS["memory_ratio"] * row["file"]["bytes"]})
        restart = shared["restart"]["seconds"]
        found.append({"goal": f"{n}: a killed worker serves again within {GOALS['restart_seconds']:g} s",
                      "measured": "never" if restart is None else f"{restart:.1f} s",
                      "met": restart is not None and restart <= GOALS["restart_seconds"]})
        kinds = shared["latency"]["kinds"]
        ratio = kinds["FindSimilar (stored id, top 10)"]["p99_ratio"]
        found.append({"goal": f"{n}: FindSimilar p99 <= {GOALS['p99_ratio']:g} x the Check's p99",
                      "measured": f"{kinds['FindSimilar (stored id, top 10)']['latency_ms']['p99']:.2f} vs "
                                  f"{kinds['health Check (empty call)']['latency_ms']['p99']:.2f} ms = {ratio:.2f} x",
                      "met": ratio <= GOALS["p99_ratio"]})
        found.append({"goal": f"{n}: top-10 recall {GOALS['recall']} against the exhaustive scan",
                      "measured": f"{shared['recall']['recall']:.4f}",
                      "met": shared["recall"]["recall"] >= GOALS["recall"]})
        writes = shared["writes"]
        exact = (writes["mismatches"] == 0 and writes["deleted_in_answers"] == 0
                 and writes["deleted_not_found"] == writes["deleted_checked"])
        found.append({"goal": f"{n}: writes during the run answered exactly",
                      "measured": f"{writes['mismatches']} of {writes['probes'] * writes['workers']} answers differ "
                                  f"from the store path's; {writes['deleted_in_answers']} answers hold a deleted "
                                  "article",
                      "met": exact})
    return found


def markdown(results: dict) -> str:
    m = results["machine"]
    lines = [f"## One search index per host: --search-index shared against memory ({m['date']}, commit "
             f"{m['commit']})", "",
             f"`{results['command']}`: {m['nproc']} × {m['cpu']}, Python {m['python']}; {results['seconds']:.0f} s. "
             f"Generated bottom-K sketches (K = {K}, seed {SEED}), {results['queries']} queries drawn alike from "
             f"grouped, singleton, short and hot-value articles; threshold {results['threshold']}, "
             f"{DEFAULT_METRIC}; 2 workers, session cache off.", "",
             *table(["goal", "measured", "met"],
                    [[g["goal"], g["measured"], "yes" if g["met"] else "**no**"] for g in results["goals"]]),
             "", "### Build and size", ""]
    rows = []
    for row in results["rows"]:
        if row.get("file_only"):
            rows.append([f"{row['articles']:,}", "— (no store)", "—", f"{row['file']['build_seconds']:.1f}",
                         f"{row['file']['bytes'] / 1e9:.2f}", f"{row['file']['bytes'] / row['articles']:,.0f}", "—"])
            continue
        store = row["store"]
        rows.append([f"{row['articles']:,}", f"{store['build_articles_per_s']:,.0f}"
                     if "build_articles_per_s" in store else "reused", f"{row['store_bytes'] / 1e9:.2f}",
                     f"{row['file']['build_seconds']:.1f}", f"{row['file']['bytes'] / 1e9:.2f}",
                     f"{row['file']['bytes'] / row['articles']:,.0f}",
                     f"{row['rebuild']['write_seconds']:.1f}"])
    lines += table(["articles", "store build articles/s (create_store, batches of 50,000)", "store GB", "search-index build s",
                    "index file GB", "file bytes/article", "rebuild from a worker s"], rows)
    alone = [row for row in results["rows"] if row.get("file_only")]
    if alone:
        lines += ["", "### The file alone: 2 processes mapping it and searching in process (no store, no server)", "",
                  *table(["articles", "map and check s", "Rss GB (both)", "Pss GB (both)", "Anonymous GB (both)",
                          "index file Rss GB per process", "FindSimilar p50 µs", "p99 µs", "top-10 recall"],
                         [[f"{row['articles']:,}",
                           " / ".join(f"{m['map_seconds']:.1f}" for m in row["mappers"]),
                           f"{sum(m['Rss'] for m in row['memory'].values()) / 1e9:.2f}",
                           f"{sum(m['Pss'] for m in row['memory'].values()) / 1e9:.2f}",
                           f"{sum(m['Anonymous'] for m in row['memory'].values()) / 1e9:.2f}",
                           " / ".join(f"{m['index_file']['Rss'] / 1e9:.2f}" for m in row["memory"].values()),
                           " / ".join(f"{m['p50_us']:.0f}" for m in row["mappers"]),
                           " / ".join(f"{m['p99_us']:.0f}" for m in row["mappers"]),
                           f"{min(m['recall'] for m in row['mappers']):.4f}"] for row in alone])]
    lines += [] if not any(row.get("servers") for row in results["rows"]) else ["", "### Two workers (Rss, Pss and Shared_Clean of /proc/PID/smaps_rollup, summed over both; the index "
                  "file's own mapping per worker)", ""]
    rows = []
    for row in results["rows"]:
        for mode, server in row.get("servers", {}).items():
            if "skipped" in server:
                rows.append([f"{row['articles']:,}", mode, *["—"] * 8, server["skipped"]])
                continue
            if mode == "store":
                sums = totals(row, mode, "memory_ready")
                rows.append([f"{row['articles']:,}", mode, f"{server['ready_seconds']:.1f}",
                             f"{sums['Rss'] / 1e9:.2f}", f"{sums['Pss'] / 1e9:.2f}",
                             f"{sums['Anonymous'] / 1e9:.2f}", f"{sums['Shared_Clean'] / 1e9:.2f}", "—", "—", "—",
                             "at ready, no call made: the workers without any index"])
                continue
            sums = totals(row, mode)
            kinds = server["latency"]["kinds"]
            find, floor = kinds["FindSimilar (stored id, top 10)"], kinds["health Check (empty call)"]
            rows.append([f"{row['articles']:,}", mode, f"{server['ready_seconds']:.1f}",
                         f"{sums['Rss'] / 1e9:.2f}", f"{sums['Pss'] / 1e9:.2f}", f"{sums['Anonymous'] / 1e9:.2f}",
                         f"{sums['Shared_Clean'] / 1e9:.2f}",
                         " / ".join(f"{b / 1e9:.2f}" for b in sums["index_file_rss"]) if sums["index_file_rss"]
                         else "—",
                         f"{server['restart']['seconds']:.1f}" if server["restart"]["seconds"] is not None
                         else "never", f"{server['writes']['upsert_articles_per_s']:,.0f}", ""])
    served = any(row.get("servers") for row in results["rows"])
    lines += [] if not served else table(["articles", "--search-index", "ready s", "Rss GB", "Pss GB", "Anonymous GB", "Shared_Clean GB",
                    "index file Rss GB per worker", "killed worker back s", "Upsert articles/s (batches of 100)",
                    "note"], rows)
    lines += [] if not served else ["", "### FindSimilar against the empty Check (same server, same run), recall, "
                                               "writes", ""]
    rows = []
    for row in results["rows"]:
        for mode, server in row.get("servers", {}).items():
            if "skipped" in server or mode == "store":
                continue
            kinds = server["latency"]["kinds"]
            find, floor = kinds["FindSimilar (stored id, top 10)"], kinds["health Check (empty call)"]
            writes = server["writes"]
            rows.append([f"{row['articles']:,}", mode, f"{find['latency_ms']['p50']:.2f}",
                         f"{find['latency_ms']['p99']:.2f}", f"{floor['latency_ms']['p50']:.2f}",
                         f"{floor['latency_ms']['p99']:.2f}", f"{find['p50_ratio']:.2f}", f"{find['p99_ratio']:.2f}",
                         f"{find['calls']:,}", f"{server['recall']['recall']:.4f}",
                         f"{writes['mismatches']} / {writes['probes'] * writes['workers']}",
                         f"{writes['deleted_not_found']} / {writes['deleted_checked']}"])
    lines += [] if not served else table(["articles", "--search-index", "FindSimilar p50 ms", "p99 ms", "Check p50 ms", "Check p99 ms",
                    "p50 / Check", "p99 / Check", "calls", "top-10 recall", "answers differing after writes",
                    "deleted: NOT_FOUND"], rows)
    lines += ["", "### Phases (seconds)", "",
              *table(["phase", "seconds"], [[f"{row['articles']:,}: {name}", f"{seconds:.0f}"]
                                            for row in results["rows"] for name, seconds in row["phases"].items()])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    found = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    found.add_argument("--sizes", type=int, nargs="+", default=[BASE])
    found.add_argument("--memory-max", type=int, default=BASE,
                       help="the largest size --search-index memory is measured at (its 2 copies must fit)")
    found.add_argument("--calls", type=int, default=2000)
    found.add_argument("--queries", type=int, default=40, help="queries per kind")
    found.add_argument("--recall-queries", type=int,
                       help="at most this many of the queries (spread over them) for recall, whose exhaustive scan "
                            "costs queries x articles (default: all)")
    found.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD)
    found.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "neardup-bench-shared-index",
                       help="where the generated chunks, the stores and the files are kept between runs")
    found.add_argument("--out", type=Path, default=OUT)
    found.add_argument("--reuse-file", action="store_true",
                       help="beyond --file-only-above, map the file (and the exhaustive scan's answers) a previous "
                            "run left in --dir instead of building them again")
    found.add_argument("--file-only-above", type=int, default=10 * BASE,
                       help="sizes above this are measured as the index file alone (no store, no server)")
    found.add_argument("--mapper", nargs=4, metavar=("FILE", "QUERIES", "THRESHOLD", "CALLS"),
                       help=argparse.SUPPRESS)
    args = found.parse_args(argv)
    if args.mapper:
        mapper(args.mapper[0], args.mapper[1], float(args.mapper[2]), int(args.mapper[3]))
        return {}
    if any(size % CHUNK for size in args.sizes):
        found.error(f"sizes must be multiples of {CHUNK:,}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    started = time.perf_counter()
    args.dir.mkdir(parents=True, exist_ok=True)
    paths, queries = base_chunks(args.dir / "chunks", args.queries, max(args.sizes))
    if args.recall_queries and args.recall_queries < len(queries):
        queries = queries[::-(-len(queries) // args.recall_queries)]
    results = {"command": "python -m benchmarks.bench_shared_index --sizes " + " ".join(map(str, args.sizes))
               + (f" --recall-queries {args.recall_queries}" if args.recall_queries else "")
               + (f" --file-only-above {args.file_only_above}" if args.file_only_above != 10 * BASE else "")
               + (" --reuse-file" if args.reuse_file else ""),
               "machine": measure.machine(), "threshold": args.threshold, "queries": len(queries),
               "queries_per_kind": {kind: sum(q["kind"] == kind for q in queries) for kind in KINDS},
               "rows": []}
    for size in sorted(args.sizes):
        measured = measure_file_only if size > args.file_only_above else measure_size
        results["rows"].append(summarize(measured(size, args, paths, queries)))
        results["goals"] = goals(results["rows"])
        results["seconds"] = time.perf_counter() - started
        save(args.out, "bench_shared_index", results, markdown(results))  # each size as soon as it is measured
    text = markdown(results)
    print(text)
    return results


if __name__ == "__main__":
    main()
