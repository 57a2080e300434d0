"""What a Dedup costs over an empty call: the request path against the health Check on the same server, one run.

    python -m benchmarks.request_cost [--quick] [--out benchmarks/out]

One `neardup serve` worker, session cache off, the development corpus (real text: news, manual pages, job ads;
lib/devcorpus.py) indexed by the CLI, result sets of 100 stored ids with 20-40 % near-duplicates. In the
same run, against the same server:
  * sequential: one caller, one call at a time (NearDupClient.dedup; the generated stub with the request built per
    call and built once; pre-serialized Dedup bytes; the empty health Check), p50 and p99;
  * closed loop (h2load): Check/s and Dedup/s (16 connections x 8 streams), and Dedup messages/s over DedupStream
    (4 x 2 concurrent streams, each h2load request one stream carrying STREAM_MESSAGES requests answered in order);
  * open loop at 1,000 requests/s offered: Dedup's p99 against Check's;
  * in process, without gRPC: the Dedup handler stage by stage, built as `serve` builds it (lib/request_path.py).
Writes request_cost.json and request_cost.md (also printed). The goals are issue 10's, reported, never asserted.
"""
from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

import grpc

from benchmarks.lib import load, measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from benchmarks.lib.request_path import representative, request_path
from benchmarks.lib.server_process import Server, free_port
from neardup_client import NearDupClient
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc

STREAM_MESSAGES = 32
# Closed loop as h2load connections x concurrent streams: unary calls as the harness runs them; DedupStreams
# within the server's default --max-streams (8), each carrying STREAM_MESSAGES requests.
CLOSED_SHAPES = {"health": {"connections": load.CLOSED_CONNECTIONS, "streams": load.CLOSED_STREAMS},
                 "dedup": {"connections": load.CLOSED_CONNECTIONS, "streams": load.CLOSED_STREAMS},
                 "stream": {"connections": 4, "streams": 2}}
OPEN_RATE = 1000
# Issue 10's goals: ratios to the empty health Check measured in the same run.
GOAL_SEQUENTIAL_P50 = 1.2      # Dedup p50 at most this times Check's
GOAL_CLOSED_RATE = 0.8         # Dedup/s at least this times Check/s
GOAL_OPEN_P99 = 1.5            # Dedup p99 at 1,000 rps at most this times Check's
GOAL_STREAM_RATE = 2.0         # DedupStream messages/s at least this times Check/s


def sequential(server: Server, id_sets: list[list[str]], bodies: list[bytes], calls: int) -> dict:
    """Dedup through the Python client, through the generated stub (the request built per call, or once), and as
    pre-serialized bytes, and the empty Check, in turns: the steps between them are the client's own cost."""
    requests = [pb.DedupRequest.FromString(body) for body in bodies]
    with NearDupClient(server.target) as client, grpc.insecure_channel(server.target) as channel:
        raw_dedup, check = channel.unary_unary(load.DEDUP_PATH), channel.unary_unary(load.HEALTH_PATH)
        stub = neardup_pb2_grpc.NearDupStub(channel)
        kinds = {
            "Dedup, NearDupClient": lambda i: client.dedup(id_sets[i % len(id_sets)]).cached,
            "Dedup, generated stub, request built per call": lambda i: stub.Dedup(
                pb.DedupRequest(ids=id_sets[i % len(id_sets)])).cached,
            "Dedup, generated stub, request built once": lambda i: stub.Dedup(requests[i % len(requests)]).cached,
            "Dedup, pre-serialized bytes": lambda i: pb.DedupResponse.FromString(
                raw_dedup(bodies[i % len(bodies)])).cached,
            "health Check (empty call)": lambda i: check(load.HEALTH_REQUEST) and False,
        }
        return load.sequential(server, kinds, calls)


def run(store_path: Path, id_sets: list[list[str]], bodies: list[bytes], work: Path, quick: bool) -> dict:
    shape = {"seconds": 2 if quick else 6, "warmup": 1, "attempts": 1 if quick else 2}
    chosen = representative(store_path, bodies)
    server = Server(store_path, *load.CACHE_OFF, workers=1, port=free_port())
    try:
        server.wait_ready(60)
        endpoints = load.endpoints(server.target, work, bodies[chosen])
        tagged = [pb.DedupRequest(ids=id_sets[(chosen + m) % len(id_sets)], tag=m + 1).SerializeToString()
                  for m in range(STREAM_MESSAGES)]
        endpoints["stream"] = load.stream_endpoint(server.target, work, "stream", tagged)
        closed = {name: load.h2load(server, endpoint, work, **CLOSED_SHAPES[name], **shape)
                  for name, endpoint in endpoints.items()}
        closed["stream"]["messages_per_s"] = closed["stream"]["achieved_rps"] * STREAM_MESSAGES
        opened = {name: load.h2load(server, endpoints[name], work, rate=OPEN_RATE, **shape)
                  for name in ("health", "dedup")}
        seq = sequential(server, id_sets, bodies, 300 if quick else 2000)
    finally:
        stopped = load.stop_server(server)
    return {"h2load_body": {"result_set": chosen, "request_bytes": len(bodies[chosen])}, "closed_loop": closed,
            "open_loop": opened, "sequential": seq, "server": stopped}


def goals(results: dict) -> list[dict]:
    seq = results["sequential"]["kinds"]
    floor = seq["health Check (empty call)"]["latency_ms"]["p50"]
    closed, opened = results["closed_loop"], results["open_loop"]
    check_rate = closed["health"]["achieved_rps"]
    rows = []
    for name in ("Dedup, NearDupClient", "Dedup, pre-serialized bytes"):
        ratio = seq[name]["latency_ms"]["p50"] / floor
        rows.append({"goal": f"sequential {name} p50 <= {GOAL_SEQUENTIAL_P50} x Check p50", "ratio": ratio,
                     "met": ratio <= GOAL_SEQUENTIAL_P50})
    ratio = closed["dedup"]["achieved_rps"] / check_rate
    rows.append({"goal": f"closed-loop Dedup/s >= {GOAL_CLOSED_RATE} x Check/s", "ratio": ratio,
                 "met": ratio >= GOAL_CLOSED_RATE})
    ratio = opened["dedup"]["latency_ms"]["p99"] / opened["health"]["latency_ms"]["p99"]
    rows.append({"goal": f"p99 at {OPEN_RATE} rps offered: Dedup <= {GOAL_OPEN_P99} x Check", "ratio": ratio,
                 "met": ratio <= GOAL_OPEN_P99})
    ratio = closed["stream"]["messages_per_s"] / check_rate
    rows.append({"goal": f"closed-loop Dedup messages/s over DedupStream >= {GOAL_STREAM_RATE} x unary Check/s",
                 "ratio": ratio, "met": ratio >= GOAL_STREAM_RATE})
    return rows


def markdown(results: dict) -> str:
    closed, opened, seq = results["closed_loop"], results["open_loop"], results["sequential"]
    lines = [f"## Request cost: Dedup against the empty health Check ({results['machine']['date']}, "
             f"commit {results['machine']['commit']})", "",
             f"`{results['command']}`: one worker, session cache off, result sets of 100 ids "
             f"({results['h2load_body']['request_bytes']} request bytes for h2load).", ""]
    lines += table(["goal", "ratio", "met"],
                   [[g["goal"], f"{g['ratio']:.2f}", "yes" if g["met"] else "**no**"] for g in results["goals"]])
    lines += ["", f"### Sequential client (other load {seq['other_load_cores']:.2f} cores)", ""]
    lines += table(["call", "p50 ms", "p99 ms", "calls", "errors"],
                   [[name, f"{row['latency_ms']['p50']:.3f}", f"{row['latency_ms']['p99']:.3f}", str(row["calls"]),
                     str(row["errors"])] for name, row in seq["kinds"].items()])
    lines += ["", "### h2load", ""]
    rows = [[f"closed loop {CLOSED_SHAPES[name]['connections']}x{CLOSED_SHAPES[name]['streams']}", name, f"{run['achieved_rps']:,.0f}",
             f"{run.get('messages_per_s', run['achieved_rps']):,.0f}", f"{run['latency_ms']['p50']:.2f}",
             f"{run['latency_ms']['p99']:.2f}", f"{run['server_cpu_us_per_request']:.0f}", str(run["errors"]),
             f"{run['other_load_cores']:.2f}"] for name, run in closed.items()]
    rows += [[f"open loop {OPEN_RATE} rps", name, f"{run['achieved_rps']:,.0f}", f"{run['achieved_rps']:,.0f}",
              f"{run['latency_ms']['p50']:.2f}", f"{run['latency_ms']['p99']:.2f}",
              f"{run['server_cpu_us_per_request']:.0f}", str(run["errors"]), f"{run['other_load_cores']:.2f}"]
             for name, run in opened.items()]
    lines += table(["mode", "endpoint", "requests/s", "Dedup messages/s", "p50 ms", "p99 ms", "server CPU µs/req",
                    "errors", "other load"], rows)
    lines += ["", f"stream: each request one DedupStream of {STREAM_MESSAGES} Dedup messages; its latency is the "
                  "whole stream's.", "", "### Dedup handler in process, without gRPC (µs)", ""]
    lines += table(["stage", "median", "p99"], [[name, f"{row['median_us']:.1f}", f"{row['p99_us']:.1f}"]
                                                for name, row in results["request_path"]["stages"].items()])
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (about a minute)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if shutil.which("h2load") is None:
        raise SystemExit("h2load not found: apt-get install nghttp2-client")
    started = time.perf_counter()
    results = {"command": "python -m benchmarks.request_cost" + (" --quick" if args.quick else ""),
               "machine": measure.machine()}
    with tempfile.TemporaryDirectory(prefix="neardup-cost-") as scratch:
        work = Path(scratch)
        docs, store_path, results["index"] = load.build_store(work)
        id_sets, bodies = load.dedup_bodies(docs, 40 if args.quick else 200)
        results["request_path"] = request_path(store_path, bodies, 5 if args.quick else 20)
        results.update(run(store_path, id_sets, bodies, work, args.quick))
    results["goals"] = goals(results)
    results["seconds"] = time.perf_counter() - started
    text = markdown(results)
    save(args.out, "request_cost", results, text)
    print(text)
    print(f"wrote {args.out / 'request_cost.json'}, request_cost.md ({results['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
