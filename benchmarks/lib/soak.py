"""A server under sustained load, as the soak scripts run it (soak.py: memory growth; soak_sigterm.py: SIGTERM
under load): the development corpus indexed by the real CLI, `neardup serve` started on it, Dedup of one result set
of 100 stored ids offered open loop by h2load in a background thread (load.py's runner and error count), and the
lines of a run's summary both scripts print."""
from __future__ import annotations

import argparse
import json
import tempfile
import threading
from pathlib import Path
from typing import Callable

from benchmarks.lib import load, measure
from benchmarks.lib.paths import OUT
from tests.server_process import Server, free_port
from neardup.service.server import DEFAULT_THREADS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options both soak scripts take: the load, the server, where the report goes."""
    parser.add_argument("--warmup", type=float, help="seconds before the memory baseline (default: a fifth)")
    parser.add_argument("--rate", type=int, default=2000, help="requests/s offered by h2load")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="RPC threads per worker (serve --threads)")
    parser.add_argument("--cache", action="store_true", help="keep the session cache on (then it answers)")
    parser.add_argument("--out", type=Path, default=OUT)


def load_in_background(server: Server, endpoint: load.Endpoint, work: Path, seconds: int, warmup: int,
                       rate: int) -> tuple[threading.Thread, dict]:
    """One open-loop h2load run in a thread (never repeated: a soak is one long run); its figures, or the reason
    it gave up, land in the returned dict."""
    result: dict = {}

    def run() -> None:
        try:
            result.update(load.h2load_once(server, endpoint, work, seconds=seconds, warmup=warmup, rate=rate))
        except SystemExit as error:  # h2load failed, e.g. because the server went away under it
            result["gave_up"] = str(error).splitlines()[0]

    thread = threading.Thread(target=run)
    thread.start()
    return thread, result


def run(args: argparse.Namespace, report: dict, seconds: float, warmup: float, drain: float,
        during: Callable[[Server, list[str], list[int], threading.Thread], None]) -> None:
    """The store built, the server started (`--grace 30`, `--drain drain`) and h2load started on it; then
    during(server, ids of the result set, worker pids, h2load's thread) runs the script's own part and waits for
    h2load. The index's figures, h2load's and the server's stop land in `report`."""
    with tempfile.TemporaryDirectory(prefix="neardup-soak-") as scratch:
        work = Path(scratch)
        docs, store, report["index"] = load.build_store(work)
        id_sets, bodies = load.dedup_bodies(docs, 1)
        server = Server(store, *(() if args.cache else load.CACHE_OFF), "--grace", "30", "--threads",
                        str(args.threads), "--drain", str(drain), workers=args.workers, port=free_port())
        try:
            server.wait_ready(60)
            endpoint = load.endpoints(server.target, work, bodies[0])["dedup"]
            pids = measure.worker_pids(server.process.pid)
            generator, figures = load_in_background(server, endpoint, work, int(seconds - warmup), int(warmup),
                                                    args.rate)
            during(server, id_sets[0], pids, generator)
            report["load"] = figures
        finally:
            report["server"] = load.stop_server(server)


def server_clean(report: dict) -> bool:
    return report["server"]["exit_code"] == 0 and report["server"]["internal_errors_logged"] == 0


def load_lines(report: dict) -> list[str]:
    """The summary's first lines: the command and the run's shape, then h2load's figures."""
    run_ = report["load"]
    lines = [f"`{report['command']}`: {report['workers']} workers x {report['threads']} threads, "
             f"cache {'on' if report['cache'] else 'off'}, "
             f"{report['offered_rps']} rps offered for {report['seconds']:.0f} s ({report['warmup']:.0f} s warm-up)"]
    if "gave_up" in run_:
        lines.append(f"h2load: {run_['gave_up']}")
    else:
        latency = run_["latency_ms"]
        lines.append(f"h2load: {run_['requests']:,} requests, {run_['achieved_rps']:.0f} rps achieved after warm-up, "
                     f"{run_['errors']} failed (HTTP {run_['http_errors']}, gRPC {run_['grpc_errors']}, "
                     f"h2load failed/errored/timeout {run_['failed']}/{run_['errored']}/{run_['timeouts']}); "
                     f"latency p50 {latency['p50']:.2f} ms, p99 {latency['p99']:.2f} ms, "
                     f"p99.9 {latency['p99.9']:.2f} ms, "
                     f"max {latency['max']:.2f} ms; server CPU {run_['server_cpu_us_per_request']:.0f} µs/request, "
                     f"other load on the machine {run_['other_load_cores']:.2f} cores")
    return lines


def server_line(report: dict) -> str:
    server = report["server"]
    return (f"server exit {server['exit_code']}, {server['internal_errors_logged']} internal errors logged: "
            f"{'PASSED' if report['passed'] else 'FAILED'}")


def write(report: dict, out: Path, name: str, summary: str) -> int:
    """out/NAME.json written, the summary printed; the exit code: 0 when the run passed."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(summary)
    print(f"wrote {out / (name + '.json')}")
    return 0 if report["passed"] else 1
