"""Where a saturated worker's time goes: one `neardup serve` worker under an h2load closed loop of Dedup, sampled by
py-spy while a thread holds the GIL (the one worker's bottleneck: its Python runs one thread at a time).

    python -m benchmarks.request_profile [--seconds 15] [--out benchmarks/out]

The development corpus indexed by the CLI, session cache off, result sets of 100 stored ids, 16 connections x 8
streams (request_cost.py's closed loop). Each sample's stack is put in the first bucket it reaches from its
innermost frame: the Dedup handler's parts (kernel, the view's sketch gather, the request's checks and glue, the
wire reader, the encoder), then gRPC's Python runtime. Writes request_profile.json and request_profile.md, with the
collapsed stacks beside them (request_profile.txt, for a flame graph).
"""
from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.lib import load, measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from benchmarks.lib.request_path import representative
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


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=15, help="seconds sampled (default 15)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
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
        server = Server(store, *load.CACHE_OFF, workers=1, port=free_port()).wait_ready(60)
        try:
            dedup = load.endpoints(server.target, work, bodies[representative(store, bodies)])["dedup"]
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
    results.update(summarize(collapsed))
    lines = [f"## Where a saturated worker's GIL time goes ({results['machine']['date']})", "",
             f"`{results['command']}`: one worker, Dedup of 100 stored ids in a closed loop (h2load "
             f"{load.CLOSED_CONNECTIONS}x{load.CLOSED_STREAMS}), py-spy `--gil` for {args.seconds} s "
             f"({results['samples']:,} samples).", ""]
    lines += table(["where", "share of samples"], [[name, f"{row['share']:.1%}"]
                                                   for name, row in results["buckets"].items()])
    save(args.out, "request_profile", results, "\n".join(lines) + "\n")
    (args.out / "request_profile.txt").write_text(collapsed)
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
