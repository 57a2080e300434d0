"""Where a Dedup's time over the empty call goes inside a real server: the same server with its Dedup handler cut
down, each against its own empty health Check in the same run.

    python -m benchmarks.server_split [--calls 3000] [--out benchmarks/out]

request_cost.py times the handler in process (~70 µs uncached) and the whole call over gRPC; the gap between
them is what a server adds around the handler (gRPC, thread hand-offs, cold caches). Here one `neardup serve`
worker (session cache off, the development corpus, result sets of 100 stored ids) runs in three modes, one
after the other, each timed by a sequential caller that alternates Dedup and Check in blocks:
  * floor:  Dedup answers each request with its bytes computed once (gRPC with Dedup's payloads, no work);
  * kernel: as floor, but runs the kernel on the request's sketches (gathered once) before answering;
  * full:   the real handler (wire reader, view, checks, kernel, encoder).
Per mode: p50 of Dedup and Check, their ratio, and the server's CPU per call of each. Nothing is asserted.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.lib import load, measure, report
from benchmarks.lib.paths import OUT
from tests.server_process import Server

MODES = ("floor", "kernel", "full")
BLOCK = 100


def serve(mode: str, argv: list[str]) -> int:
    """`neardup serve` with Dedup cut down to `mode` (run in the server's process)."""
    from neardup.cli.main import main as neardup_main
    from neardup.core import kernel
    from neardup.service import converters
    from neardup.service.servicer import NearDupServicer

    handler, memo = NearDupServicer.Dedup, {}

    def cut_down(self, request_bytes: bytes, context) -> bytes:
        known = memo.get(request_bytes)
        if known is None:
            sketches = self.view.read().get_many(converters.plain_dedup_request(request_bytes)[0])
            known = memo[request_bytes] = (sketches, handler(self, request_bytes, context))
        if mode == "kernel":
            params = self.defaults
            kernel.dedup(known[0], self.served.config.k, params.threshold, params.metric, params.grouping,
                         packed=True)
        return known[1]

    if mode != "full":
        NearDupServicer.Dedup = cut_down
    return neardup_main(argv)


def run_mode(store: Path, mode: str, bodies: list[bytes], calls: int) -> dict:
    import grpc
    server = Server(store, "--cache-size", "0",
                    command=[sys.executable, "-m", "benchmarks.server_split", "--serve", mode]).wait_ready()
    try:
        with grpc.insecure_channel(server.target) as channel:
            kinds = {"Check": (channel.unary_unary("/grpc.health.v1.Health/Check"), [b""]),
                     "Dedup": (channel.unary_unary("/neardup.v1.NearDup/Dedup"), bodies)}
            for call, inputs in kinds.values():  # warm: every body once (floor and kernel memoize them)
                for message in inputs:
                    call(message)
            samples = {name: [] for name in kinds}
            cpu = dict.fromkeys(kinds, 0.0)
            for start in range(0, calls, BLOCK):
                for name, (call, inputs) in kinds.items():
                    before = measure.tree_cpu_seconds(server.process.pid)
                    for i in range(start, start + BLOCK):
                        began = time.perf_counter_ns()
                        call(inputs[i % len(inputs)])
                        samples[name].append((time.perf_counter_ns() - began) / 1e6)
                    cpu[name] += measure.tree_cpu_seconds(server.process.pid) - before
    finally:
        load.stop_server(server)
    p50 = {name: statistics.median(times) for name, times in samples.items()}
    return {"dedup_p50_ms": p50["Dedup"], "check_p50_ms": p50["Check"], "ratio": p50["Dedup"] / p50["Check"],
            "dedup_cpu_us": cpu["Dedup"] / len(samples["Dedup"]) * 1e6,
            "check_cpu_us": cpu["Check"] / len(samples["Check"]) * 1e6}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000, help="timed calls of each kind per mode")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        docs, store, _ = load.build_store(Path(work))
        _, bodies = load.dedup_bodies(docs, 200)
        results = {mode: run_mode(store, mode, bodies, args.calls) for mode in MODES}
    rows = [[mode, f"{r['dedup_p50_ms']:.3f}", f"{r['check_p50_ms']:.3f}", f"{r['ratio']:.2f}",
             f"{r['dedup_cpu_us']:.0f}", f"{r['check_cpu_us']:.0f}",
             f"{r['dedup_p50_ms'] - r['check_p50_ms']:+.3f}"] for mode, r in results.items()]
    text = "\n".join(report.table(["Dedup handler", "Dedup p50 ms", "Check p50 ms", "ratio", "Dedup CPU µs/call",
                  "Check CPU µs/call", "p50 over Check ms"], rows))
    text += f"\n\n{args.calls} sequential calls of each kind per mode, {time.perf_counter() - started:.0f} s\n"
    print(text)
    report.save(args.out, "server_split", results, text)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        sys.exit(serve(sys.argv[2], sys.argv[3:]))
    main()
