"""What the worker's heap settling (server.settle_heap) buys under load: the same server with and without it.

    python -m benchmarks.gc_settle [--rounds 3] [--seconds 6] [--out benchmarks/out]

Before it serves, each `neardup serve` worker freezes its start-up heap and raises the young generation's
collection threshold (server.YOUNG_COLLECTION_THRESHOLD). Here one worker (session cache off, the development
corpus, a result set of 100 stored ids) is started as shipped ("settled") and with settle_heap replaced by a no-op
("default": Python's collector as it comes), in turns for --rounds rounds; each serves h2load's closed loop
(16 connections x 8 streams) on the empty health Check and on Dedup. Per mode the medians over the rounds of
calls/s, p99 and server CPU per call; per round settled/default of each rate, and the median of those ratios.
Nothing is asserted.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.lib import load, report
from benchmarks.lib.paths import OUT
from tests.server_process import Server, free_port

MODES = ("settled", "default")
ENDPOINTS = ("health", "dedup")


def serve(mode: str, argv: list[str]) -> int:
    """`neardup serve`, its heap settled as shipped or left to Python's defaults (run in the server's process)."""
    from neardup.cli.main import main as neardup_main
    from neardup.service import server

    if mode == "default":
        server.settle_heap = lambda: None
    return neardup_main(argv)


def run_mode(store: Path, mode: str, body: bytes, work: Path, seconds: int) -> dict:
    server = Server(store, *load.CACHE_OFF, port=free_port(),
                    command=[sys.executable, "-m", "benchmarks.gc_settle", "--serve", mode])
    try:
        server.wait_ready(60)
        endpoints = load.endpoints(server.target, work, body)
        return {name: load.h2load(server, endpoints[name], work, seconds=seconds, warmup=1, attempts=2,
                                  connections=load.CLOSED_CONNECTIONS, streams=load.CLOSED_STREAMS)
                for name in ENDPOINTS}
    finally:
        load.stop_server(server)


def summary(rounds: list[dict]) -> dict:
    def median(mode: str, endpoint: str, pick) -> float:
        return statistics.median(pick(r[mode][endpoint]) for r in rounds)

    modes = {mode: {endpoint: {"calls_per_s": median(mode, endpoint, lambda run: run["achieved_rps"]),
                               "p99_ms": median(mode, endpoint, lambda run: run["latency_ms"]["p99"]),
                               "cpu_us_per_call": median(mode, endpoint,
                                                         lambda run: run["server_cpu_us_per_request"])}
                    for endpoint in ENDPOINTS} for mode in MODES}
    gain = {endpoint: statistics.median(r["settled"][endpoint]["achieved_rps"] / r["default"][endpoint]["achieved_rps"]
                                        for r in rounds) for endpoint in ENDPOINTS}
    return {"modes": modes, "settled_over_default_rate": gain}


def markdown(result: dict, rounds: int, elapsed: float) -> str:
    rows = [[mode, endpoint, f"{row['calls_per_s']:,.0f}", f"{row['p99_ms']:.1f}", f"{row['cpu_us_per_call']:.0f}"]
            for mode, endpoints in result["modes"].items() for endpoint, row in endpoints.items()]
    lines = report.table(["heap", "call", "calls/s", "p99 ms", "server CPU µs/call"], rows)
    gain = result["settled_over_default_rate"]
    lines += ["", f"settled / default, median of the per-round ratios: Check/s {gain['health']:.2f}x, "
                  f"Dedup/s {gain['dedup']:.2f}x; medians of {rounds} rounds, {elapsed:.0f} s"]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of both modes, in turns")
    parser.add_argument("--seconds", type=int, default=6, help="h2load's measured seconds per run")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as work:
        docs, store, _ = load.build_store(Path(work))
        _, bodies = load.dedup_bodies(docs, 1)
        rounds = [{mode: run_mode(store, mode, bodies[0], Path(work), args.seconds) for mode in MODES}
                  for _ in range(args.rounds)]
    result = {"rounds": rounds, **summary(rounds)}
    text = markdown(result, args.rounds, time.perf_counter() - started)
    print(text)
    report.save(args.out, "gc_settle", result, text)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        sys.exit(serve(sys.argv[2], sys.argv[3:]))
    main()
