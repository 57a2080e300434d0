"""Latency, throughput and cost of the neardup service, each next to a baseline measured in the same run.

The machine may be shared and noisy, so the ratios are the figures to compare across runs:
  * Dedup against the gRPC floor: the standard health Check on the same server (a trivial handler);
  * the compiled kernel against the pure-Python reference merge and datasketch MinHash pairwise Jaccard;
  * one server process against two (`--workers 2`);
  * neardup's default Sketcher against datasketch MinHash (128 permutations over word 5-grams).

The service runs as a user runs it: the development corpus (benchmarks/devcorpus.py, fixed seed) is indexed with
`python -m neardup.cli index` and served by `python -m neardup.cli serve`. Load comes from h2load (Debian's
nghttp2-client) posting a prebuilt gRPC frame, open loop at fixed rates and closed loop to saturation. h2load
sees HTTP status only, so gRPC answers are counted by their bytes (see load.check_answers). One h2load run posts one
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
import json
import linecache
import random
import re
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
sys.path.insert(0, str(HERE))

import bench_kernel  # noqa: E402
import bench_sketch  # noqa: E402
import devcorpus  # noqa: E402
import evaluate  # noqa: E402
import load  # noqa: E402  (puts tests/ on sys.path: serverproc)
import measure  # noqa: E402
import request_cost  # noqa: E402
import neardup  # noqa: E402
from neardup.core import kernel, reference, vocabulary  # noqa: E402
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import decode_sketch, encode_sketch
from neardup.store import open_store  # noqa: E402
from neardup_client import NearDupClient  # noqa: E402
from neardup_client.v1 import neardup_pb2 as pb  # noqa: E402
from report import latency_cells, table  # noqa: E402
from serverproc import Server, free_port  # noqa: E402

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


# --- in process ---------------------------------------------------------------------------------------------------

def kernel_comparison(store, docs: list[devcorpus.Doc], id_sets: list[list[str]], plan: Plan) -> list[dict]:
    """The request path's kernel against the pure-Python merge and datasketch MinHash on the same result sets.

    The dev-corpus sets are what the server sees (short documents: most sketches hold fewer than K values);
    bench_kernel's synthetic sets hold full K = 64 sketches, the budget's case. MinHash needs texts, so it runs
    on the dev sets only: signatures made beforehand, as a store would hold them, then the same greedy rule
    either pair by pair with MinHash.jaccard or as one numpy all-pairs matrix (evaluate.py's way)."""
    from datasketch import MinHash

    k, threshold = store.config.k, vocabulary.DEFAULT_THRESHOLD
    by_id = {doc.id: doc for doc in docs}
    dev_blobs = [store.get_many(ids) for ids in id_sets[:plan.kernel_sets]]
    rng = random.Random(bench_kernel.SEED)
    synthetic = [bench_kernel.result_set(rng) for _ in range(plan.kernel_sets)]
    cases = {
        "dev corpus": (dev_blobs, [[None if b is None else decode_sketch(b) for b in blobs] for blobs in dev_blobs]),
        "synthetic full-K (bench_kernel)": ([[encode_sketch(s) for s in sketches] for sketches in synthetic],
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
        compiled = measure.interleaved_us({"kernel": (kernel.dedup, [(b, k, threshold) for b in blobs])},
                                  plan.kernel_rounds)["kernel"]
        baselines = {"kernel": (kernel.dedup, [(b, k, threshold) for b in blobs[:plan.reference_sets]]),
                     "reference": (reference.dedup, [(s, k, threshold) for s in lists[:plan.reference_sets]])}
        if name == "dev corpus":
            baselines["minhash_pairwise"] = (minhash_pairwise, [(m,) for m in minhashes])
            baselines["minhash_numpy"] = (minhash_numpy, [(m,) for m in minhashes])
        timed = measure.interleaved_us(baselines, plan.baseline_rounds)
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


# --- the sequential client ---------------------------------------------------------------------------------------

def session_stream(id_sets: list[list[str]], calls: int, hit_share: float, stream: int) -> list[list[str]]:
    """The result sets a frontend sends, in order: with probability hit_share one of the last few again (a page
    reloaded or paged back: a session-cache hit), otherwise one never sent before. A new one is a drawn set in
    a ranking of its own (rotated), so streams 0 and 1 share none and neither repeats before its hits do."""
    rng, recent, sent = random.Random(load.SEED + stream), collections.deque(maxlen=10), []
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
    """One client, one call at a time (load.sequential): NearDupClient.dedup, the same kind of requests
    pre-serialized through a bare channel (no client-side conversion), and the health Check. With hit_share 0
    (the default) the server's cache is off; otherwise it is on and that share of the Dedup calls repeat a recent
    result set (session_stream)."""
    warmup = 50
    client_sets = session_stream(id_sets, warmup + calls, hit_share, stream=0)
    raw_bodies = [pb.DedupRequest(ids=ids).SerializeToString()
                  for ids in session_stream(id_sets, warmup + calls, hit_share, stream=1)]
    with NearDupClient(server.target) as client, grpc.insecure_channel(server.target) as channel:
        raw_dedup, check = channel.unary_unary(load.DEDUP_PATH), channel.unary_unary(load.HEALTH_PATH)
        kinds = {  # each returns whether the session cache answered
            "Dedup, NearDupClient": lambda i: client.dedup(client_sets[i]).cached,
            "Dedup, pre-serialized bytes": lambda i: pb.DedupResponse.FromString(raw_dedup(raw_bodies[i])).cached,
            "health Check (floor)": lambda i: check(load.HEALTH_REQUEST) and False,
        }
        run = load.sequential(server, kinds, calls, warmup=warmup)
    floor = run["kinds"]["health Check (floor)"]["latency_ms"]
    for row in run["kinds"].values():
        row["p50_over_floor"] = row["latency_ms"]["p50"] / floor["p50"]
        row["p99_over_floor"] = row["latency_ms"]["p99"] / floor["p99"]
    return {"result_sets": len(id_sets), "calls_per_kind": calls, "hit_share": hit_share, **run}


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
    if path.endswith("deduplicator.py"):
        return "engine checks (ids, missing, read set)"
    return "servicer (other)"


def profile(server: Server, endpoint: load.Endpoint, plan: Plan, out: Path) -> dict:
    """py-spy samples of the GIL-holding thread of one worker under closed-loop Dedup load.

    Only the GIL holder runs Python, so the samples say where Python time goes; their count against the
    sampling rate says how much of the wall time anything held the GIL at all. py-spy pauses the process for
    each sample (consistent stacks; --nonblocking tears them), which costs the server a little throughput."""
    py_spy = shutil.which("py-spy") or shutil.which("py-spy", path=str(Path(sys.executable).parent))
    if py_spy is None:
        return {"skipped": "py-spy not installed (pip install py-spy)"}
    rate_hz, raw = 200, out / "harness_profile.txt"
    generator = subprocess.Popen(
        load.h2load_command(server.target, endpoint, plan.profile_seconds + 2, load.CLOSED_CONNECTIONS,
                            load.CLOSED_STREAMS), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(1)
        cpu_before = measure.tree_cpu_seconds(server.process.pid)
        recorded = subprocess.run(
            [py_spy, "record", "--pid", str(server.process.pid), "--duration", str(plan.profile_seconds),
             "--rate", str(rate_hz), "--gil", "--format", "raw", "--output", str(raw)],
            capture_output=True, text=True, timeout=plan.profile_seconds + 60)
        cpu = measure.tree_cpu_seconds(server.process.pid) - cpu_before
    finally:
        load_output = generator.communicate(timeout=plan.profile_seconds + 60)[0]
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
        "load": f"h2load closed loop, {load.CLOSED_CONNECTIONS} connections x {load.CLOSED_STREAMS} streams, "
                "Dedup uncached",
        "rps": float(finished.group(2)) if finished else None,
        "samples": samples, "gil_held_share": samples / (rate_hz * plan.profile_seconds),
        "process_cpu_cores": cpu / plan.profile_seconds,
        "categories": {name: count / samples for name, count in sorted(shares.items(), key=lambda kv: -kv[1])},
        "raw": raw.name,
    }


# --- the run ------------------------------------------------------------------------------------------------------

def load_runs(store: Path, dedup_body: bytes, plan: Plan, work: Path, id_sets: list[list[str]], out: Path,
              hit_share: float) -> dict:
    """Every server-backed figure; each server is stopped however the measurement ends."""
    results = {"open_loop": [], "closed_loop": [], "servers": []}
    for workers in (1, 2):
        with_cache = workers in plan.open_workers or (workers == 1 and hit_share > 0)
        for cache in (False, True) if with_cache else (False,):
            label = {"workers": workers, "cache": cache}
            server = Server(store, *(() if cache else load.CACHE_OFF), workers=workers, port=free_port())
            try:
                server.wait_ready(60)
                found = load.endpoints(server.target, work, dedup_body)
                if cache:
                    found = {"dedup cached": dataclasses.replace(found["dedup"], name="dedup cached")}
                rates = (plan.rates if not cache else GOAL_OPEN_RATES) if workers in plan.open_workers else ()
                shape = {"seconds": plan.seconds, "warmup": plan.warmup, "attempts": plan.attempts}
                for rate in rates:
                    for endpoint in found.values():
                        results["open_loop"].append({**label, **load.h2load(server, endpoint, work, rate=rate,
                                                                            **shape)})
                for endpoint in found.values():
                    results["closed_loop"].append({**label, **load.h2load(
                        server, endpoint, work, connections=load.CLOSED_CONNECTIONS, streams=load.CLOSED_STREAMS,
                        **shape)})
                if workers == 1 and cache == (hit_share > 0):
                    results["sequential"] = sequential(server, id_sets, plan.sequential_calls, hit_share)
                if workers == 1 and not cache:
                    results["profile"] = profile(server, found["dedup"], plan, out)
            finally:
                results["servers"].append({**label, **load.stop_server(server)})
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
        f"Dev corpus seed {load.SEED}: {results['index']['documents']} documents; result sets of 100 ids "
        f"with 20–40 % near-duplicates. Latencies in ms; every h2load run measures {plan['seconds']} s after "
        f"{plan['warmup']} s of warm-up. *other load*: cores busy with anything but the server and h2load.", "",
        "## Goals (issue 4)", "",
        *table(["goal", "measured", "met"],
                [[g["goal"], g["measured"], "yes" if g["met"] else "**no**"] for g in results["goals"]]),
        "", f"## Sequential client (1 worker, {_cache_label(results['sequential']['hit_share'])}, one channel; "
        f"other load {results['sequential']['other_load_cores']:.2f} cores)", "",
        *table(["call", "p50", "p90", "p99", "p99.9", "p50 / floor", "p99 / floor", "cache hits", "errors"],
                [[name, *latency_cells(row["latency_ms"]), f"{row['p50_over_floor']:.2f}",
                  f"{row['p99_over_floor']:.2f}", f"{row['cache_hits'] / max(1, row['calls']):.0%}",
                  str(row["errors"])]
                 for name, row in results["sequential"]["kinds"].items()]),
        "", f"## Open loop (h2load --rps, {load.OPEN_CONNECTIONS} connections × {load.OPEN_STREAMS} streams)", "",
    ]
    open_runs = results["open_loop"]
    lines += table(
        ["workers", "offered rps", "endpoint", "achieved rps", "p50", "p90", "p99", "p99.9", "p99 / health p99",
         "errors", "server CPU µs/req", "h2load CPU", "other load", "runs", "conns per worker"],
        [[str(run["workers"]), str(run["offered_rps"]), run["endpoint"], f"{run['achieved_rps']:.0f}",
          *latency_cells(run["latency_ms"]),
          f"{run['latency_ms']['p99'] / floor['latency_ms']['p99']:.2f}" if floor else "—",
          str(run["errors"]), f"{run['server_cpu_us_per_request']:.0f}", f"{run['h2load_cpu_share']:.0%}",
          *_run_cells(run)] for run in open_runs for floor in [_floor_of(run, open_runs)]])
    closed_runs = results["closed_loop"]
    lines += ["", f"## Closed loop ({load.CLOSED_CONNECTIONS} connections × {load.CLOSED_STREAMS} streams)", ""]
    lines += table(
        ["workers", "endpoint", "rps", "vs 1 worker", "p50", "p99", "errors", "server CPU µs/req", "server cores",
         "h2load CPU", "other load", "runs", "conns per worker"],
        [[str(run["workers"]), run["endpoint"], f"{run['achieved_rps']:.0f}",
          f"{run['achieved_rps'] / one['achieved_rps']:.2f} ×" if one else "—",
          *latency_cells(run["latency_ms"], ("p50", "p99")), str(run["errors"]),
          f"{run['server_cpu_us_per_request']:.0f}", f"{run['server_cpu_cores']:.2f}",
          f"{run['h2load_cpu_share']:.0%}", *_run_cells(run)]
         for run in closed_runs
         for one in [next((r for r in closed_runs if r["endpoint"] == run["endpoint"] and r["workers"] == 1), None)]])
    lines += ["", f"## Kernel in process (µs per result set of 100, threshold {vocabulary.DEFAULT_THRESHOLD}, greedy; "
              "× = baseline / kernel on the baseline's sets)", ""]
    lines += table(
        ["sets", "dups/set", "kernel median", "kernel p99", "pure-Python reference", "×",
         "datasketch MinHash pairwise", "×", "MinHash numpy all-pairs", "×"],
        [[row["sets"], f"{row['duplicates_per_set']:.1f}", f"{row['kernel']['median_us']:.1f}",
          f"{row['kernel']['p99_us']:.1f}", f"{row['reference']['median_us']:,.0f}", f"{row['reference_ratio']:,.0f}",
          *([f"{row['minhash_pairwise']['median_us']:,.0f}", f"{row['minhash_pairwise_ratio']:,.0f}",
             f"{row['minhash_numpy']['median_us']:,.0f}", f"{row['minhash_numpy_ratio']:,.0f}"]
            if "minhash_pairwise" in row else ["—"] * 4)] for row in results["kernel"]])
    lines += ["", "## Dedup handler in process, without gRPC (µs, dev-corpus result sets)", ""]
    lines += table(["stage", "median", "p99"], [[name, f"{row['median_us']:.1f}", f"{row['p99_us']:.1f}"]
                                                 for name, row in results["request_path"]["stages"].items()])
    sketch = results["sketching"]
    lines += ["", f"## Sketching throughput ({sketch['documents']} dev corpus texts, best of {sketch['rounds']})", ""]
    lines += table(["sketcher", "docs/s", "× MinHash"],
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
        lines += table(["where", "share"], [[name, f"{share:.0%}"] for name, share in prof["categories"].items()])
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
               "machine": measure.machine(), "plan": dataclasses.asdict(plan)}
    with tempfile.TemporaryDirectory(prefix="neardup-harness-") as scratch:
        work = Path(scratch)
        docs, store_path, results["index"] = load.build_store(work)
        id_sets, bodies = load.dedup_bodies(docs, plan.result_sets)
        with open_store(store_path, readonly=True) as store:
            results["kernel"] = kernel_comparison(store, docs, id_sets, plan)
        results["sketching"] = sketching(docs, plan)
        results["request_path"] = request_cost.request_path(store_path, bodies, plan.stage_rounds)
        chosen = request_cost.representative(store_path, bodies)
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
