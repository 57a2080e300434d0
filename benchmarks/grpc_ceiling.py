"""The ceiling of issue 10's ratios on this machine: a bare Python gRPC server, no neardup around the work.

    python -m benchmarks.grpc_ceiling [--sizes 0 25 50 100] [--seconds 4] [--out benchmarks/out]

request_cost.py compares a real Dedup with the empty health Check of the same server. This script asks what any
Python gRPC server reaches when a call does a given amount of work: one process serves the health Check
(grpc_health's servicer, as `neardup serve` does), a unary `Work` and a bidirectional `WorkStream`, whose handler
runs only the compiled kernel (kernel.dedup, packed, the default threshold/metric/grouping) on a real result set
of the development corpus cut to `size` results, and answers 1 KB of constant bytes. No decoding, no view, no
encoder: the handler is the kernel and nothing else, so its cost is the least a Dedup of that many results can
cost. Two servers, one after the other, each built as the real one is for its kind:
  * sync: grpc.server over a ThreadPoolExecutor of 4 RPC threads + 8 stream threads (serve's defaults);
  * aio: grpc.aio.server, the handlers coroutines running the kernel inline.
Per server and size, h2load closed loop in the shapes of request_cost.py, in --rounds turns: Check/s and Work/s
(16 connections x 8 streams), WorkStream messages/s (4 x 2 streams of 32 messages each). Reported: the kernel's
median in process for that size, and the medians over the rounds of each rate, of Work/s / Check/s (issue 10's
goal >= 0.8) and of stream messages/s / Check/s (goal >= 2), each ratio taken within its round. Nothing is
asserted; the figures say which handler cost the goals allow on this machine.
"""
from __future__ import annotations

import argparse
import asyncio
import pickle
import statistics
import sys
import tempfile
import time
from concurrent import futures
from pathlib import Path

import grpc

from benchmarks.lib import load, report
from benchmarks.lib.paths import OUT
from tests.server_process import Server
from neardup.core import kernel
from neardup.core.vocabulary import DEFAULT_GROUPING, DEFAULT_METRIC, DEFAULT_THRESHOLD
from neardup.store import open_store
from neardup.runtime.view import LiveView

SERVICE = "ceiling.Bare"
WORK_PATH, STREAM_PATH = f"/{SERVICE}/Work", f"/{SERVICE}/WorkStream"
ANSWER = bytes(1024)
STREAM_MESSAGES = 32
THREADS, STREAM_THREADS = 4, 8  # serve's --threads and --max-streams defaults
KINDS = ("sync", "aio")


def _work(sketches: list, k: int):
    def run() -> bytes:
        if sketches:
            kernel.dedup(sketches, k, DEFAULT_THRESHOLD, DEFAULT_METRIC, DEFAULT_GROUPING, packed=True)
        return ANSWER
    return run


def serve_sync(port: int, run) -> None:
    from grpc_health.v1 import health, health_pb2_grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=THREADS + STREAM_THREADS))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
        "Work": grpc.unary_unary_rpc_method_handler(lambda request, context: run()),
        "WorkStream": grpc.stream_stream_rpc_method_handler(
            lambda requests, context: (run() for _ in requests)),
    }),))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    print("listening on", port, flush=True)
    server.wait_for_termination()


def serve_aio(port: int, run) -> None:
    from grpc_health.v1 import health, health_pb2_grpc

    async def work(request, context):
        return run()

    async def work_stream(requests, context):
        async for _ in requests:
            yield run()

    async def main():
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
            "Work": grpc.unary_unary_rpc_method_handler(work),
            "WorkStream": grpc.stream_stream_rpc_method_handler(work_stream),
        }),))
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        server.add_insecure_port(f"127.0.0.1:{port}")
        await server.start()
        print("listening on", port, flush=True)
        await server.wait_for_termination()

    asyncio.run(main())


def result_sets(work: Path) -> tuple[list[list], int]:
    """The development corpus's result sets of 100 stored ids, as the kernel gets them."""
    docs, store_path, _ = load.build_store(work)
    id_lists, _ = load.dedup_bodies(docs, 50)
    with open_store(store_path, readonly=True) as store:
        reading = LiveView(store).read()
        return [reading.get_many(ids) for ids in id_lists], store.config.k


def kernel_us(sketches: list, k: int, rounds: int = 400) -> float:
    run, times = _work(sketches, k), []
    for _ in range(rounds):
        began = time.perf_counter_ns()
        run()
        times.append(time.perf_counter_ns() - began)
    return statistics.median(times) / 1000


def measure(kind: str, size: int, sets_file: Path, work: Path, seconds: int, rounds_count: int) -> dict:
    server = Server(work, command=[sys.executable, "-m", "benchmarks.grpc_ceiling", "--serve", kind, str(size),
                                   str(sets_file)], log_dir=work)
    server.wait_ready()
    try:
        endpoints = {"check": load.endpoint(server.target, work, "check", load.HEALTH_PATH, load.HEALTH_REQUEST),
                     "work": load.endpoint(server.target, work, "work", WORK_PATH, b"\0" * 3000)}
        stream = work / "stream.grpc"
        stream.write_bytes(load.grpc_frame(b"\0" * 3000) * STREAM_MESSAGES)
        endpoints["stream"] = load.Endpoint("stream", STREAM_PATH, stream,
                                            (len(ANSWER) + 5) * STREAM_MESSAGES - 5)
        shapes = {"check": (load.CLOSED_CONNECTIONS, load.CLOSED_STREAMS),
                  "work": (load.CLOSED_CONNECTIONS, load.CLOSED_STREAMS), "stream": (4, 2)}
        rounds = []  # Check, Work and WorkStream in turns, so a disturbance of the shared machine hits a round
        for _ in range(rounds_count):
            rates = {}
            for name, endpoint in endpoints.items():
                connections, streams = shapes[name]
                run = load.h2load_once(server, endpoint, work, seconds=seconds, warmup=1, connections=connections,
                                       streams=streams)
                rates[name] = run["achieved_rps"] * (STREAM_MESSAGES if name == "stream" else 1)
            rounds.append(rates)
    finally:
        load.stop_server(server)
    return {"kind": kind, "size": size,
            **{f"{name}_per_s": statistics.median(r[name] for r in rounds) for name in endpoints},
            "work_ratio": statistics.median(r["work"] / r["check"] for r in rounds),
            "stream_ratio": statistics.median(r["stream"] / r["check"] for r in rounds), "rounds": rounds}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 25, 50, 100],
                        help="results per set the handler's kernel groups (0: no work)")
    parser.add_argument("--seconds", type=int, default=4, help="seconds per h2load run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of Check, Work and WorkStream runs in turns")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        sets, k = result_sets(work)
        sets_file = work / "sets.pickle"
        sets_file.write_bytes(pickle.dumps((sets, k)))
        costs = {size: kernel_us(sets[0][:size], k) for size in args.sizes}
        results = [{**measure(kind, size, sets_file, work, args.seconds, args.rounds), "kernel_us": costs[size]}
                   for size in args.sizes for kind in KINDS]
    rows = [[r["kind"], str(r["size"]), f"{r['kernel_us']:.1f}", f"{r['check_per_s']:,.0f}", f"{r['work_per_s']:,.0f}",
             f"{r['stream_per_s']:,.0f}", f"{r['work_ratio']:.2f}", f"{r['stream_ratio']:.2f}"] for r in results]
    text = "\n".join(report.table(["server", "results", "kernel µs (in process)", "Check/s", "Work/s",
                            "WorkStream messages/s", "Work / Check (goal ≥ 0.8)", "stream / Check (goal ≥ 2)"],
                           rows))
    text += f"\n\nbare servers, handler = the kernel only, h2load closed loop, medians of {args.rounds} rounds; {time.perf_counter() - started:.0f} s\n"
    print(text)
    report.save(args.out, "grpc_ceiling", results, text)


if __name__ == "__main__":
    if len(sys.argv) > 4 and sys.argv[1] == "--serve":
        kind, size, sets_file = sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
        port = int(sys.argv[sys.argv.index("--port") + 1])
        all_sets, k = pickle.loads(sets_file.read_bytes())
        (serve_sync if kind == "sync" else serve_aio)(port, _work(all_sets[0][:size], k))
    else:
        main()
