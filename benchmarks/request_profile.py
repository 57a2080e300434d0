"""Where a saturated worker's time goes: one `neardup serve` worker under an h2load closed loop of Dedup, sampled by
py-spy while a thread holds the GIL (the one worker's bottleneck: its Python runs one thread at a time).

    python -m benchmarks.request_profile [--seconds 15] [--out benchmarks/out]

The development corpus indexed by the CLI, session cache off, result sets of 100 stored ids, 16 connections x 8
streams (request_cost.py's closed loop). Each sample's stack is put in the first bucket it reaches from its
innermost frame: the Dedup handler's parts (kernel, the view's sketch gather, the request's checks and glue, the
wire reader, the encoder), then gRPC's Python runtime. Writes request_profile.json and request_profile.md, with the
collapsed stacks beside them (request_profile.txt, for a flame graph).

Then the same closed loop by server CPU per call, in alternating rounds: the empty Check, a Dedup the session cache
answers (the call and its bytes without the work) and a Dedup computed (cache off), beside the handler's cost in
process (lib/request_path.py): what a Dedup costs a worker over an empty call, split into the call and the work
(server_split.py splits it sequentially, with the handler cut down; this, at saturation, with the real one).
"""
from __future__ import annotations

import argparse
import collections
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.lib import load, measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from benchmarks.lib.request_path import representative, request_path
from tests.server_process import Server, free_port

#: (bucket, function names that put a stack in it), innermost first: a stack goes to the first bucket one of whose
#: names it holds, looked for from its innermost frame outwards.
BUCKETS = (
    ("handler: kernel (kernel.dedup, GIL held around the compiled call)", ("dedup", "Deduplicator.group")),
    ("handler: sketch gather (view memo)", ("_Memo.get_many", "Reading.get_many", "_Memo._fill")),
    ("handler: view catch-up (store generation)", ("LiveView.read", "CommitId.last", "ChangeFeed.refresh")),
    ("handler: wire reader", ("plain_dedup_request",)),
    ("handler: response encoder", ("dedup_response",)),
    ("handler: checks and glue", ("Deduplicator.dedup_ids", "NearDupServicer.Dedup", "_unary.<locals>.handle")),
    ("gRPC runtime: call dispatch and status (grpc._server)", ("_call_behavior", "_unary_response_in_pool",
                                                               "_status", "_send_status_from_server",
                                                               "_unary_request.<locals>.unary_request")),
    ("gRPC runtime: polling and hand-off to the pool (grpc._server, concurrent.futures)",
     ("_serve", "_process_event_and_continue", "_handle_call", "ThreadPoolExecutor.submit", "_worker",
      "_WorkItem.run")),
)
OTHER = "other (start-up thread, signal checks, gc)"


def bucket_of(stack: list[str]) -> str:
    names = [frame.split(" (", 1)[0] for frame in stack]
    for name in reversed(names):
        for bucket, members in BUCKETS:
            if name in members:
                return bucket
    return OTHER


def summarize(collapsed: str) -> dict:
    """Samples per bucket from py-spy's raw (collapsed) output: `frame;frame;... count` per line."""
    counts: collections.Counter = collections.Counter()
    for line in collapsed.splitlines():
        if line.strip():
            stack, count = line.rsplit(" ", 1)
            counts[bucket_of(stack.split(";"))] += int(count)
    total = sum(counts.values())
    return {"samples": total, "buckets": {name: {"samples": counts[name], "share": counts[name] / max(1, total)}
                                          for name in [b for b, _ in BUCKETS] + [OTHER]}}


#: The closed loops compared by server CPU per call: the empty call, a Dedup answered by the session cache (the same
#: body again: the call without the work) and a Dedup computed (a server with the cache off).
CHECK, CACHED, COMPUTED = "health Check (empty call)", "Dedup answered by the session cache", "Dedup computed"


def cpu_round(endpoints: dict[str, tuple[Server, load.Endpoint]], work: Path, seconds: int, reverse: bool) -> dict:
    """One closed loop of each kind (in reverse order every other round): calls/s, server CPU µs per call, errors."""
    row = {}
    for kind in (list(endpoints)[::-1] if reverse else list(endpoints)):
        server, endpoint = endpoints[kind]
        measured = load.h2load_once(server, endpoint, work, seconds=seconds, warmup=1,
                                    connections=load.CLOSED_CONNECTIONS, streams=load.CLOSED_STREAMS)
        row[kind] = {"calls_per_s": measured["achieved_rps"], "cpu_us": measured["server_cpu_us_per_request"],
                     "errors": measured["errors"]}
    return row


def cpu_split(rounds: list[dict]) -> dict:
    """Per kind, the medians over the rounds of calls/s and server CPU µs per call, each also over the Check's of
    its round; and what a Dedup's CPU adds to the Check's, split into the call (cached − Check) and the work
    (computed − cached), medians of the rounds' differences."""
    def median(value) -> float:
        return statistics.median(value(row) for row in rounds)

    kinds = {kind: {"calls_per_s": median(lambda row: row[kind]["calls_per_s"]),
                    "cpu_us": median(lambda row: row[kind]["cpu_us"]),
                    "rate_ratio": median(lambda row: row[kind]["calls_per_s"] / row[CHECK]["calls_per_s"]),
                    "cpu_ratio": median(lambda row: row[kind]["cpu_us"] / row[CHECK]["cpu_us"])}
             for kind in rounds[0]}
    return {"kinds": kinds, "call_us": median(lambda row: row[CACHED]["cpu_us"] - row[CHECK]["cpu_us"]),
            "work_us": median(lambda row: row[COMPUTED]["cpu_us"] - row[CACHED]["cpu_us"]),
            "errors": sum(row[kind]["errors"] for row in rounds for kind in row)}


def measure_cpu(store: Path, body: bytes, bodies: list[bytes], work: Path, rounds: int, seconds: int) -> dict:
    """cpu_split of `rounds` rounds on two servers of the store (session cache on, and off), and the handler's
    median cost in process, computed and answered by the cache."""
    cached = Server(store, workers=1, port=free_port()).wait_ready(60)
    computed = Server(store, *load.CACHE_OFF, workers=1, port=free_port()).wait_ready(60)
    try:
        endpoints = {CHECK: (computed, load.endpoints(computed.target, work, body)["health"]),
                     CACHED: (cached, load.endpoints(cached.target, work, body)["dedup"]),
                     COMPUTED: (computed, load.endpoints(computed.target, work, body)["dedup"])}
        measured = [cpu_round(endpoints, work, seconds, reverse=bool(r % 2)) for r in range(rounds)]
    finally:
        load.stop_server(cached)
        load.stop_server(computed)
    stages = request_path(store, bodies, 5)["stages"]
    return {"rounds": measured, **cpu_split(measured),
            "in_process_us": {COMPUTED: stages["handler, uncached (servicer.Dedup)"]["median_us"],
                              CACHED: stages["handler, cache hit"]["median_us"]}}


def cpu_lines(cpu: dict, rounds: int, seconds: int) -> list[str]:
    lines = ["", "### Server CPU per call", "",
             f"The same closed loop, {rounds} rounds of {seconds} s per kind (the order alternating), on a server with "
             "the session cache off and one with it on (the same body again: answered from the cache); medians over "
             "the rounds, each also over the Check's of its round.", ""]
    lines += table(["call", "calls/s", "/ Check's", "server CPU µs per call", "/ Check's", "handler in process, µs"],
                   [[kind, f"{row['calls_per_s']:,.0f}", f"{row['rate_ratio']:.2f}", f"{row['cpu_us']:,.0f}",
                     f"{row['cpu_ratio']:.2f}", f"{cpu['in_process_us'][kind]:.0f}" if kind in cpu['in_process_us']
                     else ""] for kind, row in cpu["kinds"].items()])
    lines += ["", f"A computed Dedup costs the worker {cpu['call_us'] + cpu['work_us']:,.0f} µs of CPU more than the "
              f"empty call: {cpu['call_us']:,.0f} µs for the call and its bytes (answered by the cache) and "
              f"{cpu['work_us']:,.0f} µs for the work (view, kernel, encoding), which in process, alone, costs "
              f"{cpu['in_process_us'][COMPUTED] - cpu['in_process_us'][CACHED]:,.0f} µs; failed calls: "
              f"{cpu['errors']}."]
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=15, help="seconds sampled (default 15)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the CPU comparison (default 5)")
    parser.add_argument("--round-seconds", type=int, default=4, help="seconds per closed loop there (default 4)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.round_seconds < 1 or args.seconds < 1:
        parser.error("--seconds, --rounds and --round-seconds must be at least 1")
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    if not Path(py_spy).exists() or shutil.which("h2load") is None:
        raise SystemExit("request_profile: needs py-spy (pip install py-spy) and h2load (apt-get install "
                         "nghttp2-client)")
    results = {"command": " ".join(["python -m benchmarks.request_profile", *(argv or sys.argv[1:])]),
               "machine": measure.machine(), "seconds": args.seconds}
    with tempfile.TemporaryDirectory(prefix="neardup-profile-") as scratch:
        work = Path(scratch)
        docs, store, _ = load.build_store(work)
        id_sets, bodies = load.dedup_bodies(docs, 40)
        body = bodies[representative(store, bodies)]
        server = Server(store, *load.CACHE_OFF, workers=1, port=free_port()).wait_ready(60)
        try:
            dedup = load.endpoints(server.target, work, body)["dedup"]
            command = load.h2load_command(server.target, dedup, args.seconds + 4, load.CLOSED_CONNECTIONS,
                                          load.CLOSED_STREAMS)
            with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as h2load:
                raw = work / "stacks.txt"
                sampled = subprocess.run([py_spy, "record", "--pid", str(server.process.pid), "--gil", "--rate",
                                          "250", "--duration", str(args.seconds), "--format", "raw", "--output",
                                          str(raw), "--nonblocking"], capture_output=True, text=True)
                h2load.communicate(timeout=args.seconds + 60)
            if sampled.returncode != 0 or not raw.exists():
                raise SystemExit(f"request_profile: py-spy failed: {sampled.stderr[-1000:]}")
            collapsed = raw.read_text()
        finally:
            results["server"] = load.stop_server(server)
        results["cpu"] = measure_cpu(store, body, bodies, work, args.rounds, args.round_seconds)
    results.update(summarize(collapsed))
    lines = [f"## Where a saturated worker's GIL time goes ({results['machine']['date']})", "",
             f"`{results['command']}`: one worker, Dedup of 100 stored ids in a closed loop (h2load "
             f"{load.CLOSED_CONNECTIONS}x{load.CLOSED_STREAMS}), py-spy `--gil` for {args.seconds} s "
             f"({results['samples']:,} samples).", ""]
    lines += table(["where", "share of samples"], [[name, f"{row['share']:.1%}"]
                                                   for name, row in results["buckets"].items()])
    lines += cpu_lines(results["cpu"], args.rounds, args.round_seconds)
    save(args.out, "request_profile", results, "\n".join(lines) + "\n")
    (args.out / "request_profile.txt").write_text(collapsed)
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
