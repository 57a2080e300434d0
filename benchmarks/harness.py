"""Latency, throughput and cost of the neardup service, each next to a baseline measured in the same run.

The machine may be shared and noisy, so the ratios are the figures to compare across runs:
  * Dedup against the gRPC floor: the standard health Check on the same server (a trivial handler);
  * the compiled kernel against the pure-Python reference merge and datasketch MinHash pairwise Jaccard;
  * one server process against two (`--workers 2`);
  * neardup's default Sketcher against datasketch MinHash (128 permutations over word 5-grams).

The service runs as a user runs it: the development corpus (benchmarks/devcorpus.py, fixed seed) is indexed with
`python -m neardup.cli index` and served by `python -m neardup.cli serve`. Load comes from h2load (Debian's
nghttp2-client) posting a prebuilt gRPC frame, open loop at fixed rates and closed loop to saturation. h2load
sees HTTP status only, so gRPC answers are counted by their bytes (see check_answers). One h2load run posts one
body, so uncached runs use a server started with the session cache off; cached runs are reported apart. The
sequential client sends a stream of result sets in which a chosen share repeat a recent one (`--cache-hits`,
default 0: the cache is off and every call is computed).

    python benchmarks/harness.py [--quick] [--cache-hits SHARE] [--out benchmarks/out]

writes harness.json, harness.md (also printed) and harness_latency.png; benchmarks/README.md explains them.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import datetime
import json
import linecache
import os
import platform
import random
import re
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "tests"))

import bench_kernel  # noqa: E402
import bench_sketch  # noqa: E402
import devcorpus  # noqa: E402
import evaluate  # noqa: E402
import neardup  # noqa: E402
from grpc_health.v1 import health_pb2  # noqa: E402
from neardup.cache import DEFAULT_MAXSIZE, DEFAULT_TTL  # noqa: E402
from neardup.changefeed import ChangeFeed  # noqa: E402
from neardup.core import defaults, kernel, reference  # noqa: E402
from neardup.core.sketch import SketchConfig, decode_sketch  # noqa: E402
from neardup.engine import DedupParams, Limits  # noqa: E402
from neardup.service import converters  # noqa: E402
from neardup.service.servicer import NearDupServicer  # noqa: E402
from neardup.store import open_store  # noqa: E402
from neardup.view import SketchView  # noqa: E402
from neardup_client import NearDupClient  # noqa: E402
from neardup_client.v1 import neardup_pb2 as pb  # noqa: E402
from serverproc import NEARDUP, Server, free_port  # noqa: E402

SEED = devcorpus.SPLIT_SEEDS[devcorpus.DEFAULT_SPLIT]
DEDUP_PATH = "/neardup.v1.NearDup/Dedup"
HEALTH_PATH = "/grpc.health.v1.Health/Check"
GRPC_HEADERS = ("content-type: application/grpc", "te: trailers")
HEALTH_REQUEST = health_pb2.HealthCheckRequest().SerializeToString()
CACHE_OFF = ("--cache-size", "0")
PERCENTILES = {"p50": 50, "p90": 90, "p99": 99, "p99.9": 99.9}
# Goals of issue 4, reported against, never asserted.
GOAL_SEQUENTIAL_P50_MS, GOAL_SEQUENTIAL_P99_MS = 0.8, 1.5
GOAL_OPEN_RATES, GOAL_FLOOR_RATIO = (1000, 4000), 1.5
GOAL_CLOSED_RPS, GOAL_KERNEL_US = 6000, 100
MINHASH_PERMUTATIONS = bench_sketch.MINHASH_PERMUTATIONS


@dataclasses.dataclass(frozen=True)
class Plan:
    """How much of everything a run measures."""

    rates: tuple[int, ...]          # offered open-loop rates, requests/s over all connections
    open_workers: tuple[int, ...]   # server processes the open-loop sweep runs against
    seconds: int                    # measured seconds per h2load run
    warmup: int                     # seconds before that, dropped from the percentiles
    result_sets: int                # distinct result sets (in-process figures, sequential client)
    sequential_calls: int           # per kind of call
    stage_rounds: int               # in-process handler stages
    kernel_sets: int
    kernel_rounds: int
    reference_sets: int             # the pure-Python baselines are slow: fewer sets and rounds
    baseline_rounds: int
    sketch_docs: int | None         # None: every document of the corpus
    sketch_rounds: int
    profile_seconds: int
    attempts: int                   # an h2load run disturbed by other load is repeated, up to this many times


QUICK = Plan(rates=GOAL_OPEN_RATES, open_workers=(2,), seconds=1, warmup=1, result_sets=40, sequential_calls=300,
             stage_rounds=5, kernel_sets=20, kernel_rounds=20, reference_sets=3, baseline_rounds=1, sketch_docs=300,
             sketch_rounds=1, profile_seconds=3, attempts=1)
FULL = Plan(rates=(250, 500, 1000, 2000, 4000), open_workers=(1, 2), seconds=8, warmup=1, result_sets=200,
            sequential_calls=3000, stage_rounds=20, kernel_sets=100, kernel_rounds=100, reference_sets=10,
            baseline_rounds=3, sketch_docs=None, sketch_rounds=3, profile_seconds=10, attempts=2)
# Open loop: the issue's floor measurements used 8 connections; enough streams that a late answer does not hold
# back the next request. Closed loop: more connections, so SO_REUSEPORT spreads them over the workers.
OPEN_CONNECTIONS, OPEN_STREAMS = 8, 16
CLOSED_CONNECTIONS, CLOSED_STREAMS = 16, 8
# Cores busy with something else during a run above which the run is repeated (a shared machine).
DISTURBED_CORES = 0.25


# --- small helpers ----------------------------------------------------------------------------------------------

def percentiles_ms(durations_us: np.ndarray) -> dict:
    if not len(durations_us):
        return {name: None for name in [*PERCENTILES, "mean", "max"]}
    figures = {name: float(np.percentile(durations_us, q, method="higher")) / 1000 for name, q in PERCENTILES.items()}
    return {**figures, "mean": float(durations_us.mean()) / 1000, "max": float(durations_us.max()) / 1000}


def grpc_frame(message: bytes) -> bytes:
    """One length-prefixed gRPC message: no compression flag, 4-byte big-endian length, the message."""
    return b"\0" + len(message).to_bytes(4, "big") + message


def children(pid: int) -> list[int]:
    try:
        return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                for child in (task / "children").read_text().split()]
    except FileNotFoundError:
        return []


def worker_pids(pid: int) -> list[int]:
    """The processes serving: the children of `serve --workers N`, else the serve process itself."""
    return children(pid) or [pid]


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its children (the workers of `serve --workers N`)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(map(tree_cpu_seconds, children(pid)))


def connections_per_worker(pid: int, port: int) -> list[int]:
    """Established connections each worker holds on the port: SO_REUSEPORT spreads connections, not requests."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                established.add(fields[9])
    counts = []
    for worker in worker_pids(pid):
        sockets = set()
        for fd in Path(f"/proc/{worker}/fd").iterdir():
            try:
                sockets.add(os.readlink(fd).removeprefix("socket:[").removesuffix("]"))
            except FileNotFoundError:
                pass
        counts.append(len(sockets & established))
    return counts


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (/proc/stat: all but idle and iowait)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def interleaved_us(calls: dict[str, tuple], rounds: int) -> dict[str, dict]:
    """Median and p99 µs per call of each (function, inputs), timed by bench_kernel. The functions take turns
    round by round, so a noisy stretch of a shared machine touches all of them alike."""
    samples = {name: [[] for _ in inputs] for name, (_, inputs) in calls.items()}
    for _ in range(rounds):
        for name, (call, inputs) in calls.items():
            for times, new in zip(samples[name], bench_kernel._time(call, inputs, 1)):
                times += new
    return {name: bench_kernel._summary(times) for name, times in samples.items()}


def machine() -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    h2load = shutil.which("h2load")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "grpcio": grpc.__version__,
        "neardup": neardup.__version__,
        "h2load": subprocess.run([h2load, "--version"], capture_output=True, text=True).stdout.strip()
        if h2load else None,
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip() or None,
    }


# --- corpus, index, requests ------------------------------------------------------------------------------------

def build_store(work: Path) -> tuple[list[devcorpus.Doc], Path, dict]:
    """The seeded development corpus, indexed by the real CLI into a new store."""
    docs = devcorpus.generate(devcorpus.DEFAULT_SPLIT)
    corpus = work / "devcorpus.jsonl"
    devcorpus.write_jsonl(docs, corpus)
    store = work / "store"
    started = time.perf_counter()
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(store)], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"neardup index failed:\n{done.stderr}")
    return docs, store, {"documents": len(docs), "seconds": seconds, "docs_per_s": len(docs) / seconds,
                         "command": "python -m neardup.cli index CORPUS --store STORE"}


def dedup_bodies(docs: list[devcorpus.Doc], count: int) -> tuple[list[list[str]], list[bytes]]:
    """Result sets of 100 stored ids, 20-40 % near-duplicates (devcorpus.draw_result_sets), and their requests."""
    id_sets = [[docs[i].id for i in indexes] for indexes in devcorpus.draw_result_sets(docs, count, SEED)]
    return id_sets, [pb.DedupRequest(ids=ids).SerializeToString() for ids in id_sets]


# --- in process ---------------------------------------------------------------------------------------------------

def kernel_comparison(store, docs: list[devcorpus.Doc], id_sets: list[list[str]], plan: Plan) -> list[dict]:
    """The request path's kernel against the pure-Python merge and datasketch MinHash on the same result sets.

    The dev-corpus sets are what the server sees (short documents: most sketches hold fewer than K values);
    bench_kernel's synthetic sets hold full K = 64 sketches, the budget's case. MinHash needs texts, so it runs
    on the dev sets only: signatures made beforehand, as a store would hold them, then the same greedy rule
    either pair by pair with MinHash.jaccard or as one numpy all-pairs matrix (evaluate.py's way)."""
    from datasketch import MinHash

    k, threshold = store.config.k, defaults.DEFAULT_THRESHOLD
    by_id = {doc.id: doc for doc in docs}
    dev_blobs = [store.get_many(ids) for ids in id_sets[:plan.kernel_sets]]
    rng = random.Random(bench_kernel.SEED)
    synthetic = [bench_kernel.result_set(rng) for _ in range(plan.kernel_sets)]
    cases = {
        "dev corpus": (dev_blobs, [[None if b is None else decode_sketch(b) for b in blobs] for blobs in dev_blobs]),
        "synthetic full-K (bench_kernel)": ([[bench_kernel._encode(s) for s in sketches] for sketches in synthetic],
                                            synthetic),
    }

    def signature(doc_id: str) -> MinHash:
        minhash = MinHash(num_perm=MINHASH_PERMUTATIONS, seed=1)
        minhash.update_batch([s.encode("utf-8") for s in evaluate.word_ngrams(by_id[doc_id].text)])
        return minhash

    minhashes = [[signature(doc_id) for doc_id in ids] for ids in id_sets[:plan.reference_sets]]
    thresholds = np.array([threshold])

    def minhash_pairwise(signatures: list[MinHash]) -> list[int]:
        kept, duplicate_of = [], []
        for j, b in enumerate(signatures):
            duplicate_of.append(next((i for i in kept if signatures[i].jaccard(b) >= threshold), -1))
            if duplicate_of[-1] < 0:
                kept.append(j)
        return duplicate_of

    def minhash_numpy(signatures: list[MinHash]) -> np.ndarray:
        values = np.stack([m.hashvalues for m in signatures])
        return evaluate.greedy_groups((values[:, None, :] == values[None, :, :]).mean(axis=2), thresholds)

    rows = []
    for name, (blobs, lists) in cases.items():
        compiled = interleaved_us({"kernel": (kernel.dedup, [(b, k, threshold) for b in blobs])},
                                  plan.kernel_rounds)["kernel"]
        baselines = {"kernel": (kernel.dedup, [(b, k, threshold) for b in blobs[:plan.reference_sets]]),
                     "reference": (reference.dedup, [(s, k, threshold) for s in lists[:plan.reference_sets]])}
        if name == "dev corpus":
            baselines["minhash_pairwise"] = (minhash_pairwise, [(m,) for m in minhashes])
            baselines["minhash_numpy"] = (minhash_numpy, [(m,) for m in minhashes])
        timed = interleaved_us(baselines, plan.baseline_rounds)
        row = {"sets": name, "kernel": compiled, "kernel_on_baseline_sets": timed.pop("kernel"),
               "duplicates_per_set": statistics.mean(
                   sum(d >= 0 for d in kernel.dedup(b, k, threshold).duplicate_of) for b in blobs)}
        for baseline, figures in timed.items():
            row[baseline] = figures
            row[f"{baseline}_ratio"] = figures["median_us"] / row["kernel_on_baseline_sets"]["median_us"]
        rows.append(row)
    return rows


def sketching(docs: list[devcorpus.Doc], plan: Plan) -> dict:
    """Documents per second on the dev corpus texts: neardup's default Sketcher against datasketch MinHash,
    interleaved round by round, best round each (bench_sketch.py's sketchers and timing)."""
    everything = bench_sketch.sketchers()
    names = {"neardup": f"neardup {SketchConfig().unit}",
             "minhash": next(name for name in everything if name.startswith("datasketch"))}
    texts = docs[:plan.sketch_docs]
    rates = bench_sketch.throughput({name: everything[name] for name in names.values()}, texts, plan.sketch_rounds)
    return {"documents": len(texts), "rounds": plan.sketch_rounds, "neardup": names["neardup"],
            "minhash": names["minhash"], "neardup_docs_per_s": rates[names["neardup"]],
            "minhash_docs_per_s": rates[names["minhash"]], "ratio": rates[names["neardup"]] / rates[names["minhash"]]}


def request_path(store_path: Path, bodies: list[bytes], rounds: int) -> dict:
    """The server's Dedup handler without gRPC, whole and stage by stage, built as `serve` builds it
    (NearDupServicer.for_store); the in-memory view and the cache are warm, as in a serving worker."""
    with open_store(store_path, readonly=True) as store:
        uncached = NearDupServicer.for_store(store, Limits(), 0, 0)
        cached = NearDupServicer.for_store(store, Limits(), DEFAULT_MAXSIZE, DEFAULT_TTL)
        view = SketchView(store, ChangeFeed(store))
        params = DedupParams()

        def decode(body: bytes) -> tuple[list[str], DedupParams]:
            request = pb.DedupRequest.FromString(body)
            return list(request.ids), converters.dedup_params(request, params)

        ids = [decode(body)[0] for body in bodies]
        sketches = [view.get_many(i) for i in ids]
        outcomes = [uncached.engine.dedup_ids(i, params) for i in ids]
        for body in bodies:
            cached.Dedup(body, None)
        stages = {
            "handler, uncached (servicer.Dedup)": (lambda b: uncached.Dedup(b, None), [(b,) for b in bodies]),
            "handler, cache hit": (lambda b: cached.Dedup(b, None), [(b,) for b in bodies]),
            "change feed check (store.generation)": (uncached.feed.refresh, [()] * len(bodies)),
            "request decode (FromString, ids list, params)": (decode, [(b,) for b in bodies]),
            "sketch gather, in-memory view (warm)": (view.get_many, [(i,) for i in ids]),
            "sketch gather, store.get_many (LMDB: a view miss)": (store.get_many, [(i,) for i in ids]),
            "kernel.dedup": (lambda s: kernel.dedup(s, store.config.k, params.threshold), [(s,) for s in sketches]),
            "engine.dedup_ids (checks, gather, kernel)": (lambda i: uncached.engine.dedup_ids(i, params),
                                                          [(i,) for i in ids]),
            "response encode (message, SerializeToString)":
                (lambda o: converters.dedup_response(o, params).SerializeToString(), [(o,) for o in outcomes]),
        }
        return {"stages": interleaved_us(stages, rounds)}


def representative(store_path: Path, bodies: list[bytes]) -> int:
    """The result set whose in-process handler cost is the median: h2load posts one body per run."""
    with open_store(store_path, readonly=True) as store:
        servicer = NearDupServicer.for_store(store, Limits(), 0, 0)
        samples = bench_kernel._time(lambda b: servicer.Dedup(b, None), [(b,) for b in bodies], 9)
    costs = [statistics.median(times) for times in samples]
    return sorted(range(len(bodies)), key=costs.__getitem__)[len(bodies) // 2]


# --- load ---------------------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Endpoint:
    """What h2load posts: one framed request body, and the length of the message an OK answer carries."""

    name: str
    path: str
    body: Path
    answer_bytes: int


def answer_of(target: str, path: str, message: bytes) -> bytes:
    """The answer h2load will get, through Python gRPC, or SystemExit with the status if it is not OK. Asked
    twice on one connection (one worker): on a caching server the second answer is the cached one."""
    with grpc.insecure_channel(target) as channel:
        try:
            return [channel.unary_unary(path)(message, timeout=10) for _ in range(2)][-1]
        except grpc.RpcError as error:
            raise SystemExit(f"{path} on {target} failed: {error.code().name}: {error.details()}") from None


def check_answers(data_bytes: int, succeeded: int, answer_bytes: int) -> int:
    """gRPC errors among HTTP-successful requests. An OK unary answer is exactly one framed message of known
    length; an error is a trailers-only response without DATA. So the DATA byte count says how many were OK."""
    return max(0, succeeded - round(data_bytes / (answer_bytes + 5)))


_H2LOAD_REQUESTS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, "
                              r"(\d+) errored, (\d+) timeout")
_H2LOAD_DATA = re.compile(r"traffic: .*\((\d+)\) data")


def h2load(server: Server, endpoint: Endpoint, plan: Plan, work: Path, *, rate: int | None = None,
           connections: int = OPEN_CONNECTIONS, streams: int = OPEN_STREAMS) -> dict:
    """An h2load run (see h2load_once), repeated while other load on the machine disturbs it: the least
    disturbed of up to plan.attempts runs is kept."""
    runs = []
    while len(runs) < plan.attempts and (not runs or runs[-1]["other_load_cores"] > DISTURBED_CORES):
        runs.append(h2load_once(server, endpoint, plan, work, rate, connections, streams))
    return {**min(runs, key=lambda run: run["other_load_cores"]), "attempts": len(runs)}


def h2load_once(server: Server, endpoint: Endpoint, plan: Plan, work: Path, rate: int | None, connections: int,
                streams: int) -> dict:
    """One h2load run: open loop at `rate` requests/s over all connections, else closed loop.

    No --warm-up-time: h2load's DATA byte count then covers every request, so check_answers sees them all;
    the warm-up is dropped from the latency log instead."""
    log = work / "h2load.tsv"
    wall = plan.seconds + plan.warmup
    command = ["h2load", f"--duration={wall}", f"--clients={connections}", f"--max-concurrent-streams={streams}",
               "--threads=1", f"--data={endpoint.body}", f"--log-file={log}",
               *(f"--header={header}" for header in GRPC_HEADERS)]
    if rate:
        command.append(f"--rps={rate / connections:g}")
    command.append(f"http://{server.target}{endpoint.path}")
    pid = server.process.pid
    cpu_before, server_before = resource.getrusage(resource.RUSAGE_CHILDREN), tree_cpu_seconds(pid)
    busy_before = machine_busy_seconds()
    load = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(plan.warmup)
        split = connections_per_worker(pid, server.port)
    finally:
        stdout, stderr = load.communicate(timeout=wall + 60)
    busy_after = machine_busy_seconds()
    cpu_after, server_after = resource.getrusage(resource.RUSAGE_CHILDREN), tree_cpu_seconds(pid)
    h2load_cpu = cpu_after.ru_utime + cpu_after.ru_stime - cpu_before.ru_utime - cpu_before.ru_stime
    server_cpu = server_after - server_before
    requests, data = _H2LOAD_REQUESTS.search(stdout), _H2LOAD_DATA.search(stdout)
    if load.returncode != 0 or requests is None or data is None:
        raise SystemExit(f"h2load failed ({load.returncode}): {' '.join(command)}\n{stdout}\n{stderr}")
    total, _, finished, succeeded, failed, errored, timeouts = map(int, requests.groups())
    grpc_errors = check_answers(int(data.group(1)), succeeded, endpoint.answer_bytes)
    rows = [line.split("\t") for line in log.read_text().splitlines() if line]
    log.unlink()
    starts = np.array([int(r[0]) for r in rows], dtype=np.int64)
    measured = starts >= starts.min() + plan.warmup * 1_000_000 if len(rows) else np.zeros(0, dtype=bool)
    durations = np.array([int(r[2]) for r in rows], dtype=np.int64)[measured]
    http_errors = sum(r[1] != "200" for r in rows)
    return {
        "endpoint": endpoint.name, "mode": "open" if rate else "closed", "offered_rps": rate,
        "connections": connections, "streams_per_connection": streams, "connections_per_worker": split,
        "achieved_rps": len(durations) / plan.seconds, "measured_requests": len(durations),
        "latency_ms": percentiles_ms(durations),
        "requests": total, "done": finished, "failed": failed, "errored": errored, "timeouts": timeouts,
        "http_errors": http_errors, "grpc_errors": grpc_errors,
        "errors": failed + errored + timeouts + http_errors + grpc_errors,
        "h2load_cpu_share": h2load_cpu / wall,
        "server_cpu_us_per_request": server_cpu * 1e6 / max(1, finished),
        "server_cpu_cores": server_cpu / wall,
        # whatever else ran on the machine meanwhile (other users of a shared machine), in cores
        "other_load_cores": max(0.0, busy_after - busy_before - h2load_cpu - server_cpu) / wall,
    }


def endpoints(target: str, work: Path, dedup_body: bytes) -> dict[str, Endpoint]:
    """The health Check (the floor) and Dedup, each verified once through Python gRPC before any load."""
    found = {}
    for name, path, message in (("health", HEALTH_PATH, HEALTH_REQUEST), ("dedup", DEDUP_PATH, dedup_body)):
        body = work / f"{name}.grpc"
        body.write_bytes(grpc_frame(message))
        found[name] = Endpoint(name, path, body, len(answer_of(target, path, message)))
    return found


def session_stream(id_sets: list[list[str]], calls: int, hit_share: float, stream: int) -> list[list[str]]:
    """The result sets a frontend sends, in order: with probability hit_share one of the last few again (a page
    reloaded or paged back: a session-cache hit), otherwise one never sent before. A new one is a drawn set in
    a ranking of its own (rotated), so streams 0 and 1 share none and neither repeats before its hits do."""
    rng, recent, sent = random.Random(SEED + stream), collections.deque(maxlen=10), []
    for n in range(calls):
        if recent and rng.random() < hit_share:
            sent.append(rng.choice(recent))
            continue
        ids = id_sets[n % len(id_sets)]
        turn = (2 * (n // len(id_sets)) + stream) % len(ids)
        sent.append(ids[turn:] + ids[:turn])
        recent.append(sent[-1])
    return sent


def sequential(server: Server, id_sets: list[list[str]], calls: int, hit_share: float) -> dict:
    """One client, one call at a time: NearDupClient.dedup, the same kind of requests pre-serialized through a
    bare channel (no client-side conversion), and the health Check. Kinds alternate in blocks, so drift in the
    machine's load touches all of them alike. With hit_share 0 (the default) the server's cache is off; otherwise
    it is on and that share of the Dedup calls repeat a recent result set (session_stream)."""
    block, warmup = 50, 50
    target, pid = server.target, server.process.pid
    client_sets = session_stream(id_sets, warmup + calls, hit_share, stream=0)
    raw_bodies = [pb.DedupRequest(ids=ids).SerializeToString()
                  for ids in session_stream(id_sets, warmup + calls, hit_share, stream=1)]
    started, busy_before, server_before = time.perf_counter(), machine_busy_seconds(), tree_cpu_seconds(pid)
    own_before = resource.getrusage(resource.RUSAGE_SELF)
    with NearDupClient(target) as client, grpc.insecure_channel(target) as channel:
        raw_dedup, check = channel.unary_unary(DEDUP_PATH), channel.unary_unary(HEALTH_PATH)
        kinds = {  # each returns whether the session cache answered
            "Dedup, NearDupClient": lambda i: client.dedup(client_sets[i]).cached,
            "Dedup, pre-serialized bytes": lambda i: pb.DedupResponse.FromString(raw_dedup(raw_bodies[i])).cached,
            "health Check (floor)": lambda i: check(HEALTH_REQUEST) and False,
        }
        samples: dict[str, list[float]] = {name: [] for name in kinds}
        errors, hits = dict.fromkeys(kinds, 0), dict.fromkeys(kinds, 0)
        for call in kinds.values():
            for i in range(warmup):
                call(i)
        for start in range(warmup, warmup + calls, block):
            for name, call in kinds.items():
                for i in range(start, min(warmup + calls, start + block)):
                    began = time.perf_counter_ns()
                    try:
                        cached = call(i)
                    except Exception:  # counted, not fatal: the figure says how many failed
                        errors[name] += 1
                        continue
                    samples[name].append((time.perf_counter_ns() - began) / 1000)
                    hits[name] += cached
    own_after = resource.getrusage(resource.RUSAGE_SELF)
    own = own_after.ru_utime + own_after.ru_stime - own_before.ru_utime - own_before.ru_stime
    server_cpu = tree_cpu_seconds(pid) - server_before
    other_load = (machine_busy_seconds() - busy_before - own - server_cpu) / (time.perf_counter() - started)
    figures = {name: {"latency_ms": percentiles_ms(np.array(times)), "calls": len(times), "errors": errors[name],
                      "cache_hits": hits[name]} for name, times in samples.items()}
    floor = figures["health Check (floor)"]["latency_ms"]
    for name, row in figures.items():
        row["p50_over_floor"] = row["latency_ms"]["p50"] / floor["p50"]
        row["p99_over_floor"] = row["latency_ms"]["p99"] / floor["p99"]
    return {"result_sets": len(id_sets), "calls_per_kind": calls, "hit_share": hit_share,
            "other_load_cores": max(0.0, other_load), "kinds": figures}


# --- profile ------------------------------------------------------------------------------------------------------

_NEARDUP_DIR = Path(neardup.__file__).resolve().parent


def _frame_category(frame: str) -> str | None:
    """The request-path stage a py-spy frame "function (path:line)" belongs to; None outside neardup.
    A servicer frame that is the innermost neardup frame runs C code on its line: its source says which."""
    match = re.match(r"(.*) \((.*):(\d+)\)$", frame)
    if match is None or not match.group(2).startswith("neardup/"):
        return None
    function, path, line = match.group(1), match.group(2), int(match.group(3))
    source = linecache.getline(str(_NEARDUP_DIR.parent / path), line)
    if path.endswith("core/kernel.py"):
        return "kernel"
    if path.endswith("view.py") or "/store/" in path:
        return "sketch gather (view, LMDB)"
    if path.endswith(("cache.py", "changefeed.py")) or "self.cache." in source or "self.feed." in source:
        return "change feed + session cache"
    if function in ("_decode", "dedup_params") or "FromString" in source or "request.ids" in source:
        return "request decode (message, ids to str)"
    if function == "dedup_response" or "SerializeToString" in source:
        return "response encode"
    if path.endswith("engine.py"):
        return "engine checks (ids, missing, read set)"
    return "servicer (other)"


def profile(server: Server, endpoint: Endpoint, plan: Plan, out: Path) -> dict:
    """py-spy samples of the GIL-holding thread of one worker under closed-loop Dedup load.

    Only the GIL holder runs Python, so the samples say where Python time goes; their count against the
    sampling rate says how much of the wall time anything held the GIL at all. py-spy pauses the process for
    each sample (consistent stacks; --nonblocking tears them), which costs the server a little throughput."""
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if py_spy is None:
        return {"skipped": "py-spy not installed (pip install py-spy)"}
    rate_hz, raw = 200, out / "harness_profile.txt"
    load = subprocess.Popen(
        ["h2load", f"--duration={plan.profile_seconds + 2}", f"--clients={CLOSED_CONNECTIONS}",
         f"--max-concurrent-streams={CLOSED_STREAMS}", f"--data={endpoint.body}",
         *(f"--header={header}" for header in GRPC_HEADERS), f"http://{server.target}{endpoint.path}"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1)
        cpu_before = tree_cpu_seconds(server.process.pid)
        recorded = subprocess.run(
            [py_spy, "record", "--pid", str(server.process.pid), "--duration", str(plan.profile_seconds),
             "--rate", str(rate_hz), "--gil", "--format", "raw", "--output", str(raw)],
            capture_output=True, text=True, timeout=plan.profile_seconds + 60)
        cpu = tree_cpu_seconds(server.process.pid) - cpu_before
    finally:
        load_output = load.communicate(timeout=plan.profile_seconds + 60)[0]
    if recorded.returncode != 0 or not raw.exists():
        return {"skipped": f"py-spy failed: {recorded.stderr.strip()[-300:]}"}
    finished = re.search(r"finished in ([\d.]+)s, ([\d.]+) req/s", load_output)
    shares: dict[str, int] = {}
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        category = next((c for c in map(_frame_category, reversed(frames)) if c is not None), None)
        if category is None:
            category = "gRPC server (Python side: call state, thread pool)" \
                if any("grpc/" in f or "concurrent/futures" in f for f in frames) else "other Python"
        shares[category] = shares.get(category, 0) + int(count)
    samples = sum(shares.values())
    return {
        "tool": f"py-spy record --gil --rate {rate_hz}, {plan.profile_seconds} s, 1 worker",
        "load": f"h2load closed loop, {CLOSED_CONNECTIONS} connections x {CLOSED_STREAMS} streams, Dedup uncached",
        "rps": float(finished.group(2)) if finished else None,
        "samples": samples, "gil_held_share": samples / (rate_hz * plan.profile_seconds),
        "process_cpu_cores": cpu / plan.profile_seconds,
        "categories": {name: count / samples for name, count in sorted(shares.items(), key=lambda kv: -kv[1])},
        "raw": raw.name,
    }


# --- the run ------------------------------------------------------------------------------------------------------

def stop(server: Server) -> dict:
    """SIGTERM (then SIGKILL, by serverproc) and what the server logged as internal errors."""
    try:
        code = server.stop(timeout=20)
    finally:
        internal = server.log().count("internal error")
    return {"exit_code": code, "internal_errors_logged": internal}


def load_runs(store: Path, dedup_body: bytes, plan: Plan, work: Path, id_sets: list[list[str]], out: Path,
              hit_share: float) -> dict:
    """Every server-backed figure; each server is stopped however the measurement ends."""
    results = {"open_loop": [], "closed_loop": [], "servers": []}
    for workers in (1, 2):
        with_cache = workers in plan.open_workers or (workers == 1 and hit_share > 0)
        for cache in (False, True) if with_cache else (False,):
            server = Server(store, *(() if cache else CACHE_OFF), workers=workers, port=free_port())
            try:
                server.wait_ready(60)
                found = endpoints(server.target, work, dedup_body)
                if cache:
                    found = {"dedup cached": dataclasses.replace(found["dedup"], name="dedup cached")}
                label = {"workers": workers, "cache": cache}
                rates = (plan.rates if not cache else GOAL_OPEN_RATES) if workers in plan.open_workers else ()
                for rate in rates:
                    for endpoint in found.values():
                        results["open_loop"].append({**label, **h2load(server, endpoint, plan, work, rate=rate)})
                for endpoint in found.values():
                    results["closed_loop"].append({**label, **h2load(
                        server, endpoint, plan, work, connections=CLOSED_CONNECTIONS, streams=CLOSED_STREAMS)})
                if workers == 1 and cache == (hit_share > 0):
                    results["sequential"] = sequential(server, id_sets, plan.sequential_calls, hit_share)
                if workers == 1 and not cache:
                    results["profile"] = profile(server, found["dedup"], plan, out)
            finally:
                results["servers"].append({**label, **stop(server)})
    return results


def goals(results: dict) -> list[dict]:
    """Each goal of issue 4 with the figure it is read against; `met` is reported, never asserted."""
    rows = []
    sequential_dedup = results["sequential"]["kinds"]["Dedup, NearDupClient"]["latency_ms"]
    hits = f" ({results['sequential']['hit_share']:.0%} cache hits)" if results["sequential"]["hit_share"] else ""
    rows.append({"goal": f"sequential client Dedup p50 <= {GOAL_SEQUENTIAL_P50_MS} ms",
                 "measured": f"{sequential_dedup['p50']:.3f} ms{hits}", "met": sequential_dedup["p50"]
                 <= GOAL_SEQUENTIAL_P50_MS})
    rows.append({"goal": f"sequential client Dedup p99 <= {GOAL_SEQUENTIAL_P99_MS} ms",
                 "measured": f"{sequential_dedup['p99']:.3f} ms{hits}", "met": sequential_dedup["p99"]
                 <= GOAL_SEQUENTIAL_P99_MS})
    for run in results["open_loop"]:
        if run["endpoint"] == "dedup" and run["offered_rps"] in GOAL_OPEN_RATES:
            floor = _floor_of(run, results["open_loop"])
            ratio = run["latency_ms"]["p99"] / floor["latency_ms"]["p99"]
            rows.append({"goal": f"{run['offered_rps']} rps offered, {run['workers']} worker(s): Dedup p99 <= "
                                 f"{GOAL_FLOOR_RATIO} × health p99",
                         "measured": f"{run['latency_ms']['p99']:.2f} ms vs {floor['latency_ms']['p99']:.2f} ms "
                                     f"= {ratio:.2f} ×", "met": ratio <= GOAL_FLOOR_RATIO})
    best = max((r for r in results["closed_loop"] if r["endpoint"] == "dedup"), key=lambda r: r["achieved_rps"])
    rows.append({"goal": f"closed loop Dedup >= {GOAL_CLOSED_RPS} rps",
                 "measured": f"{best['achieved_rps']:.0f} rps ({best['workers']} worker(s))",
                 "met": best["achieved_rps"] >= GOAL_CLOSED_RPS})
    for row in results["kernel"]:
        rows.append({"goal": f"kernel median <= {GOAL_KERNEL_US} µs ({row['sets']})",
                     "measured": f"{row['kernel']['median_us']:.1f} µs",
                     "met": row["kernel"]["median_us"] <= GOAL_KERNEL_US})
    return rows


# --- report -------------------------------------------------------------------------------------------------------

def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """Markdown lines; columns after the first that hold numbers are right-aligned."""
    numeric = [i > 0 and all(re.match(r"^[\d.,—%× -]+$", row[i]) for row in rows) for i in range(len(header))]
    return ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


def _latency_cells(latency: dict, names=("p50", "p90", "p99", "p99.9")) -> list[str]:
    return [_ms(latency[name]) for name in names]


def _floor_of(run: dict, runs: list[dict]) -> dict | None:
    """The health run at the same rate on the same server: the open-loop run's floor."""
    return next((r for r in runs if r["endpoint"] == "health" and r["workers"] == run["workers"]
                 and r["offered_rps"] == run["offered_rps"]), None)


def _run_cells(run: dict) -> list[str]:
    """Other load (cores), how many runs it took to get one undisturbed enough, the connection split."""
    return [f"{run['other_load_cores']:.2f}", str(run["attempts"]), "/".join(map(str, run["connections_per_worker"]))]


def _cache_label(hit_share: float) -> str:
    return "uncached (cache off)" if not hit_share else f"cache on, {hit_share:.0%} of Dedup calls repeat a result set"


def markdown(results: dict) -> str:
    meta, plan = results["machine"], results["plan"]
    lines = [
        "# neardup benchmark harness", "",
        f"`{results['command']}` — {meta['date']}, {meta['nproc']} × {meta['cpu']}, Python {meta['python']}, "
        f"grpcio {meta['grpcio']}, {meta['h2load'] or 'no h2load'}, commit {meta['commit']}. "
        f"Dev corpus seed {SEED}: {results['index']['documents']} documents; result sets of 100 ids "
        f"with 20–40 % near-duplicates. Latencies in ms; every h2load run measures {plan['seconds']} s after "
        f"{plan['warmup']} s of warm-up. *other load*: cores busy with anything but the server and h2load.", "",
        "## Goals (issue 4)", "",
        *_table(["goal", "measured", "met"],
                [[g["goal"], g["measured"], "yes" if g["met"] else "**no**"] for g in results["goals"]]),
        "", f"## Sequential client (1 worker, {_cache_label(results['sequential']['hit_share'])}, one channel; "
        f"other load {results['sequential']['other_load_cores']:.2f} cores)", "",
        *_table(["call", "p50", "p90", "p99", "p99.9", "p50 / floor", "p99 / floor", "cache hits", "errors"],
                [[name, *_latency_cells(row["latency_ms"]), f"{row['p50_over_floor']:.2f}",
                  f"{row['p99_over_floor']:.2f}", f"{row['cache_hits'] / max(1, row['calls']):.0%}",
                  str(row["errors"])]
                 for name, row in results["sequential"]["kinds"].items()]),
        "", f"## Open loop (h2load --rps, {OPEN_CONNECTIONS} connections × {OPEN_STREAMS} streams)", "",
    ]
    open_runs = results["open_loop"]
    lines += _table(
        ["workers", "offered rps", "endpoint", "achieved rps", "p50", "p90", "p99", "p99.9", "p99 / health p99",
         "errors", "server CPU µs/req", "h2load CPU", "other load", "runs", "conns per worker"],
        [[str(run["workers"]), str(run["offered_rps"]), run["endpoint"], f"{run['achieved_rps']:.0f}",
          *_latency_cells(run["latency_ms"]),
          f"{run['latency_ms']['p99'] / floor['latency_ms']['p99']:.2f}" if floor else "—",
          str(run["errors"]), f"{run['server_cpu_us_per_request']:.0f}", f"{run['h2load_cpu_share']:.0%}",
          *_run_cells(run)] for run in open_runs for floor in [_floor_of(run, open_runs)]])
    closed_runs = results["closed_loop"]
    lines += ["", f"## Closed loop ({CLOSED_CONNECTIONS} connections × {CLOSED_STREAMS} streams)", ""]
    lines += _table(
        ["workers", "endpoint", "rps", "vs 1 worker", "p50", "p99", "errors", "server CPU µs/req", "server cores",
         "h2load CPU", "other load", "runs", "conns per worker"],
        [[str(run["workers"]), run["endpoint"], f"{run['achieved_rps']:.0f}",
          f"{run['achieved_rps'] / one['achieved_rps']:.2f} ×" if one else "—",
          *_latency_cells(run["latency_ms"], ("p50", "p99")), str(run["errors"]),
          f"{run['server_cpu_us_per_request']:.0f}", f"{run['server_cpu_cores']:.2f}",
          f"{run['h2load_cpu_share']:.0%}", *_run_cells(run)]
         for run in closed_runs
         for one in [next((r for r in closed_runs if r["endpoint"] == run["endpoint"] and r["workers"] == 1), None)]])
    lines += ["", f"## Kernel in process (µs per result set of 100, threshold {defaults.DEFAULT_THRESHOLD}, greedy; "
              "× = baseline / kernel on the baseline's sets)", ""]
    lines += _table(
        ["sets", "dups/set", "kernel median", "kernel p99", "pure-Python reference", "×",
         "datasketch MinHash pairwise", "×", "MinHash numpy all-pairs", "×"],
        [[row["sets"], f"{row['duplicates_per_set']:.1f}", f"{row['kernel']['median_us']:.1f}",
          f"{row['kernel']['p99_us']:.1f}", f"{row['reference']['median_us']:,.0f}", f"{row['reference_ratio']:,.0f}",
          *([f"{row['minhash_pairwise']['median_us']:,.0f}", f"{row['minhash_pairwise_ratio']:,.0f}",
             f"{row['minhash_numpy']['median_us']:,.0f}", f"{row['minhash_numpy_ratio']:,.0f}"]
            if "minhash_pairwise" in row else ["—"] * 4)] for row in results["kernel"]])
    lines += ["", "## Dedup handler in process, without gRPC (µs, dev-corpus result sets)", ""]
    lines += _table(["stage", "median", "p99"], [[name, f"{row['median_us']:.1f}", f"{row['p99_us']:.1f}"]
                                                 for name, row in results["request_path"]["stages"].items()])
    sketch = results["sketching"]
    lines += ["", f"## Sketching throughput ({sketch['documents']} dev corpus texts, best of {sketch['rounds']})", ""]
    lines += _table(["sketcher", "docs/s", "× MinHash"],
                    [[f"{sketch['neardup']} (default unit)", f"{sketch['neardup_docs_per_s']:,.0f}",
                      f"{sketch['ratio']:.2f}"],
                     [sketch["minhash"], f"{sketch['minhash_docs_per_s']:,.0f}", "1.00"]])
    lines += ["", f"`neardup index` (CLI, 1 process, start-up included): {results['index']['docs_per_s']:,.0f} "
              f"docs/s over {results['index']['documents']} documents.", "", "## Profile of Dedup at load", ""]
    prof = results["profile"]
    if "skipped" in prof:
        lines.append(f"skipped: {prof['skipped']}")
    else:
        lines += [f"{prof['tool']}; {prof['load']} at {prof['rps'] or 0:.0f} rps. The GIL was held "
                  f"{prof['gil_held_share']:.0%} of the wall time; the worker used {prof['process_cpu_cores']:.2f} "
                  "cores (gRPC's C core runs outside the GIL). Share of GIL-holding samples:", ""]
        lines += _table(["where", "share"], [[name, f"{share:.0%}"] for name, share in prof["categories"].items()])
    lines += ["", "Servers: " + "; ".join(
        f"{s['workers']} worker(s), cache {'on' if s['cache'] else 'off'}: exit {s['exit_code']}, "
        f"{s['internal_errors_logged']} internal errors logged" for s in results["servers"]) + ".", ""]
    return "\n".join(lines)


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullLocator

    workers = sorted({run["workers"] for run in results["open_loop"]})
    figure, axes = plt.subplots(1, len(workers), figsize=(6.5 * len(workers), 4.8), squeeze=False, sharey=True)
    styles = {"p50": ":", "p99": "-", "p99.9": "--"}
    colors = {"health": "tab:gray", "dedup": "tab:blue", "dedup cached": "tab:green"}
    for axis, count in zip(axes[0], workers):
        for endpoint, color in colors.items():
            runs = sorted((r for r in results["open_loop"] if r["workers"] == count and r["endpoint"] == endpoint),
                          key=lambda r: r["offered_rps"])
            if not runs:
                continue
            for name, style in styles.items():
                axis.plot([r["offered_rps"] for r in runs], [r["latency_ms"][name] for r in runs], style,
                          color=color, marker="o", markersize=3, label=f"{endpoint} {name}")
        axis.set_xscale("log")
        axis.set_yscale("log")
        rates = sorted({r["offered_rps"] for r in results["open_loop"] if r["workers"] == count})
        axis.set_xticks(rates, [str(rate) for rate in rates])
        axis.xaxis.set_minor_locator(NullLocator())
        axis.set_title(f"{count} server process{'es' if count > 1 else ''}, open loop (h2load)")
        axis.set_xlabel("offered load, requests/s")
        axis.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("latency, ms")
    axes[0][-1].legend(fontsize=7, ncol=3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rates, shorter runs (under a minute)")
    parser.add_argument("--out", type=Path, default=HERE / "out", help="where the results are written")
    parser.add_argument("--cache-hits", type=float, default=0.0, metavar="SHARE",
                        help="share of the sequential client's Dedup calls that repeat a recent result set, "
                             "answered by the session cache (0..1; default 0: cache off, every call computed). "
                             "The h2load runs always report both ends: uncached, and cached")
    args = parser.parse_args(argv)
    if not 0.0 <= args.cache_hits <= 1.0:
        parser.error(f"--cache-hits must be in 0..1, got {args.cache_hits}")
    # SIGTERM unwinds like Ctrl-C, so every server started is stopped on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if shutil.which("h2load") is None:
        raise SystemExit("h2load not found: apt-get install nghttp2-client")
    plan = QUICK if args.quick else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = {"command": "python benchmarks/harness.py" + (" --quick" if args.quick else "")
               + (f" --cache-hits {args.cache_hits:g}" if args.cache_hits else ""),
               "machine": machine(), "plan": dataclasses.asdict(plan)}
    with tempfile.TemporaryDirectory(prefix="neardup-harness-") as scratch:
        work = Path(scratch)
        docs, store_path, results["index"] = build_store(work)
        id_sets, bodies = dedup_bodies(docs, plan.result_sets)
        with open_store(store_path, readonly=True) as store:
            results["kernel"] = kernel_comparison(store, docs, id_sets, plan)
        results["sketching"] = sketching(docs, plan)
        results["request_path"] = request_path(store_path, bodies, plan.stage_rounds)
        chosen = representative(store_path, bodies)
        results["h2load_body"] = {"result_set": chosen, "request_bytes": len(bodies[chosen])}
        results.update(load_runs(store_path, bodies[chosen], plan, work, id_sets, args.out, args.cache_hits))
    results["goals"] = goals(results)
    results["seconds"] = time.perf_counter() - started
    (args.out / "harness.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    table = markdown(results)
    (args.out / "harness.md").write_text(table, encoding="utf-8")
    plot(results, args.out / "harness_latency.png")
    print(table)
    print(f"wrote {args.out / 'harness.json'}, harness.md, harness_latency.png ({results['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
