"""Latency, throughput and cost of the neardup service, each next to a baseline measured in the same run.

The machine may be shared and noisy, so the ratios are the figures to compare across runs:
  * Dedup against the gRPC floor: the standard health Check on the same server (a trivial handler);
  * the compiled kernel against the pure-Python reference merge and datasketch MinHash pairwise Jaccard;
  * one server process against two (`--workers 2`);
  * neardup's default Sketcher against datasketch MinHash (128 permutations over word 5-grams).

The service runs as a user runs it: the development corpus (lib/devcorpus.py, fixed seed) is indexed with
`python -m neardup.cli index` and served by `python -m neardup.cli serve`. Load comes from h2load (Debian's
nghttp2-client) posting a prebuilt gRPC frame, open loop at fixed rates and closed loop to saturation. h2load
sees HTTP status only, so gRPC answers are counted by their bytes (see lib/load.check_answers). One h2load run posts one
body, so uncached runs use a server started with the session cache off; cached runs are reported apart. The
sequential client sends a stream of result sets in which a chosen share repeat a recent one (`--cache-hits`,
default 0: the cache is off and every call is computed).

    python -m benchmarks.harness [--quick] [--cache-hits SHARE] [--out benchmarks/out]

writes harness.json, harness.md (also printed) and harness_latency.png; benchmarks/README.md explains them. The
comparisons in process are in lib/harness_inprocess.py, the profile in lib/gil_profile.py, the report in
lib/harness_report.py.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import random
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import grpc

from benchmarks.lib import load, measure
from benchmarks.lib.gil_profile import profile
from benchmarks.lib.harness_inprocess import kernel_comparison, sketching
from benchmarks.lib.harness_report import floor_of, markdown, plot
from benchmarks.lib.paths import OUT
from benchmarks.lib.request_path import representative, request_path
from tests.server_process import Server, free_port
from neardup.store import open_store
from neardup_client import NearDupClient
from neardup_client.v1 import neardup_pb2 as pb

# Goals of issue 4, reported against, never asserted.
GOAL_SEQUENTIAL_P50_MS, GOAL_SEQUENTIAL_P99_MS = 0.8, 1.5
GOAL_OPEN_RATES, GOAL_FLOOR_RATIO = (1000, 4000), 1.5
GOAL_CLOSED_RPS, GOAL_KERNEL_US = 6000, 100


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
            floor = floor_of(run, results["open_loop"])
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer rates, shorter runs (under a minute)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
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
    results = {"command": "python -m benchmarks.harness" + (" --quick" if args.quick else "")
               + (f" --cache-hits {args.cache_hits:g}" if args.cache_hits else ""),
               "machine": measure.machine(), "plan": dataclasses.asdict(plan)}
    with tempfile.TemporaryDirectory(prefix="neardup-harness-") as scratch:
        work = Path(scratch)
        docs, store_path, results["index"] = load.build_store(work)
        id_sets, bodies = load.dedup_bodies(docs, plan.result_sets)
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
