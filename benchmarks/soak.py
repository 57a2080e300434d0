"""Sustained load (outside CI): hours of traffic in minutes, looking for what short benchmarks cannot see.

Soak mode: `neardup serve --workers 2` on loopback, the development corpus (benchmarks/devcorpus.py, fixed seed)
indexed by the real CLI, and Dedup of one result set of 100 stored ids offered open loop by h2load at a fixed
rate (benchmarks/load.py's runner and error count, as the harness uses them). The session cache is off unless
--cache, so every request takes the whole path: decode, sketch gather, kernel, encode. The resident memory of
each worker (VmRSS and RssAnon from /proc/PID/status) is sampled all along; its growth after the warm-up is the
leak figure.
Passes with 0 failed RPCs, growth under 5 %, a clean exit on SIGTERM and no internal error logged.

SIGTERM mode (--sigterm): the same load, plus a probe of NearDupClient calls (asyncio, open loop) whose every
outcome is kept; SIGTERM reaches the server halfway. Passes when every probe call sent before the signal
succeeded (in-flight calls finish within --grace); calls sent after it are refused (the server is going away),
and how is reported. With --drain the server keeps serving that long with health NOT_SERVING, and the probe,
like a load balancer, stops sending when it sees that: then every probe call must succeed.

    python benchmarks/soak.py [--quick] [--seconds 300] [--rate 2000] [--cache] [--out benchmarks/out]
    python benchmarks/soak.py --sigterm [--seconds 20] [--drain 2]

writes soak.json, soak_sigterm.json or soak_sigterm_drain.json (--out) and prints the summary.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import grpc  # noqa: E402
import load  # noqa: E402  (puts tests/ on sys.path: serverproc)
import measure  # noqa: E402
from grpc_health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from neardup.service.server import DEFAULT_THREADS  # noqa: E402
from neardup_client import AsyncNearDupClient, NearDupClientError  # noqa: E402
from serverproc import Server, free_port  # noqa: E402

GROWTH_LIMIT = 0.05


def memory_kb(pid: int) -> dict[str, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return {name: int(fields[name].split()[0]) for name in ("VmRSS", "RssAnon")}


def sample_memory(pids: list[int], until: threading.Event, every: float) -> list[dict]:
    """One sample per `every` seconds until the event is set: seconds since start and kB per worker."""
    samples, started = [], time.monotonic()
    while True:
        samples.append({"t": round(time.monotonic() - started, 1), **{str(pid): memory_kb(pid) for pid in pids}})
        if until.wait(every):
            return samples


def growth(samples: list[dict], pids: list[int], warmup: float) -> dict:
    """Per worker: the median of the first three samples after the warm-up against the median of the last three."""
    after = [s for s in samples if s["t"] >= warmup]
    if len(after) < 6:
        raise SystemExit(f"only {len(after)} memory samples after the warm-up: run longer or sample more often")
    rows = {}
    for pid in map(str, pids):
        for field in ("VmRSS", "RssAnon"):
            start = statistics.median(s[pid][field] for s in after[:3])
            end = statistics.median(s[pid][field] for s in after[-3:])
            rows.setdefault(pid, {})[field] = {"after_warmup_kb": start, "end_kb": end,
                                                "growth": (end - start) / start,
                                                "peak_kb": max(s[pid][field] for s in samples)}
    return rows


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


async def watch_health(target: str, not_serving: asyncio.Event) -> None:
    """What a load balancer does: poll the health service and stop routing once it says NOT_SERVING."""
    async with grpc.aio.insecure_channel(target) as channel:
        check = health_pb2_grpc.HealthStub(channel).Check
        while True:
            try:
                status = (await check(health_pb2.HealthCheckRequest(), timeout=1)).status
            except grpc.RpcError:
                status = None
            if status != health_pb2.HealthCheckResponse.SERVING:
                not_serving.set()
                return
            await asyncio.sleep(0.02)


async def probe(target: str, ids: list[str], rate: int, seconds: float, term_at: float, terminate,
                follow_health: bool) -> tuple[list[tuple[float, str, str]], float, float | None]:
    """Open-loop NearDupClient calls; terminate() runs at term_at. With follow_health, no call is sent once the
    health service stops saying SERVING. Returns (sent time, code, details) per call, the time the signal was
    sent and the time sending stopped, all on one monotonic clock."""
    outcomes: list[tuple[float, str, str]] = []
    not_serving, stopped_sending = asyncio.Event(), None
    watcher = asyncio.create_task(watch_health(target, not_serving)) if follow_health else None
    async with AsyncNearDupClient(target, timeout=30) as client:
        async def call() -> None:
            sent = time.monotonic()
            try:
                await client.dedup(ids)
                outcomes.append((sent, "OK", ""))
            except NearDupClientError as error:
                outcomes.append((sent, error.code.name, error.details))

        started, termed, calls = time.monotonic(), None, []
        for number in range(int(rate * seconds)):
            due = started + number / rate
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            if termed is None and due - started >= term_at:
                termed = time.monotonic()
                terminate()
            if not_serving.is_set():
                stopped_sending = stopped_sending or time.monotonic()
                continue
            calls.append(asyncio.create_task(call()))
        await asyncio.gather(*calls, *([watcher] if watcher else []))
    return outcomes, termed, stopped_sending


def sigterm_verdict(outcomes: list[tuple[float, str, str]], termed: float, stopped_sending: float | None,
                    drain: float) -> dict:
    """Every call sent before the signal must succeed; with a drain, every call the health-following probe sent."""
    before = [o for o in outcomes if o[0] < termed]
    after = [o for o in outcomes if o[0] >= termed]
    in_flight_failures = [{"code": code, "details": details, "sent_ms_before_sigterm": round((termed - sent) * 1e3, 2)}
                          for sent, code, details in before if code != "OK"]
    after_codes = collections.Counter(code for _, code, _ in after)
    refusals = collections.Counter(details.split(";")[0] for _, code, details in after if code != "OK")
    return {"sent_before_sigterm": len(before), "ok_before_sigterm": len(before) - len(in_flight_failures),
            "in_flight_failures": in_flight_failures, "sent_after_sigterm": len(after),
            "after_sigterm_codes": dict(after_codes), "after_sigterm_refusals": dict(refusals.most_common(5)),
            "stopped_sending_s_after_sigterm": round(stopped_sending - termed, 3) if stopped_sending else None,
            "passed": not in_flight_failures and (not drain or set(after_codes) <= {"OK"})}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 s instead of 5 minutes")
    parser.add_argument("--sigterm", action="store_true", help="SIGTERM halfway; check the in-flight calls")
    parser.add_argument("--seconds", type=float, help="length of the run (default 300, 20 with --quick or --sigterm)")
    parser.add_argument("--warmup", type=float, help="seconds before the memory baseline (default: a fifth)")
    parser.add_argument("--rate", type=int, default=2000, help="requests/s offered by h2load")
    parser.add_argument("--probe-rate", type=int, default=200, help="NearDupClient calls/s in --sigterm mode")
    parser.add_argument("--drain", type=float, default=0.0,
                        help="serve --drain; the probe then stops sending once health says NOT_SERVING")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=DEFAULT_THREADS, help="RPC threads per worker (serve --threads)")
    parser.add_argument("--cache", action="store_true", help="keep the session cache on (then it answers)")
    parser.add_argument("--sample", type=float, default=2.0, help="seconds between memory samples")
    parser.add_argument("--out", type=Path, default=HERE / "out")
    args = parser.parse_args(argv)
    if shutil.which("h2load") is None:
        raise SystemExit("h2load not found: apt-get install nghttp2-client")
    seconds = args.seconds or (20.0 if args.quick or args.sigterm else 300.0)
    warmup = args.warmup if args.warmup is not None else seconds / 5
    command = (f"python benchmarks/soak.py{' --sigterm' if args.sigterm else ''} --seconds {seconds:g} "
               f"--warmup {warmup:g} --rate {args.rate} --workers {args.workers} --threads {args.threads}"
               + (f" --probe-rate {args.probe_rate} --drain {args.drain:g}" if args.sigterm else "")
               + (" --cache" if args.cache else ""))
    report = {"command": command, "machine": measure.machine(), "seconds": seconds, "warmup": warmup,
              "offered_rps": args.rate, "workers": args.workers, "threads": args.threads, "cache": args.cache}
    with tempfile.TemporaryDirectory(prefix="neardup-soak-") as scratch:
        work = Path(scratch)
        docs, store, report["index"] = load.build_store(work)
        id_sets, bodies = load.dedup_bodies(docs, 1)
        server = Server(store, *(() if args.cache else load.CACHE_OFF), "--grace", "30", "--threads",
                        str(args.threads), "--drain", str(args.drain), workers=args.workers, port=free_port())
        try:
            server.wait_ready(60)
            endpoint = load.endpoints(server.target, work, bodies[0])["dedup"]
            pids = measure.worker_pids(server.process.pid)
            generator, figures = load_in_background(server, endpoint, work, int(seconds - warmup), int(warmup),
                                                    args.rate)
            if args.sigterm:
                outcomes, termed, stopped_sending = asyncio.run(probe(
                    server.target, id_sets[0], args.probe_rate, seconds, seconds / 2,
                    lambda: os.kill(server.process.pid, signal.SIGTERM), follow_health=args.drain > 0))
                report["probe"] = {"rate": args.probe_rate, "drain": args.drain,
                                   **sigterm_verdict(outcomes, termed, stopped_sending, args.drain)}
                generator.join()
            else:
                done = threading.Event()
                sampler = threading.Thread(target=lambda: report.update(samples=sample_memory(pids, done, args.sample)))
                sampler.start()
                generator.join()
                done.set()
                sampler.join()
                report["memory"] = growth(report["samples"], pids, warmup)
            report["load"] = figures
        finally:
            report["server"] = load.stop_server(server)
    report["passed"] = passed(report, args.sigterm)
    name = ("soak_sigterm_drain" if args.drain else "soak_sigterm") if args.sigterm else "soak"
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{name}.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(summary(report, args.sigterm))
    print(f"wrote {args.out / (name + '.json')}")
    return 0 if report["passed"] else 1


def passed(report: dict, sigterm: bool) -> bool:
    server_clean = report["server"]["exit_code"] == 0 and report["server"]["internal_errors_logged"] == 0
    if sigterm:
        return server_clean and report["probe"]["passed"]
    memory_ok = all(row["VmRSS"]["growth"] < GROWTH_LIMIT for row in report["memory"].values())
    return server_clean and memory_ok and report["load"].get("errors") == 0


def summary(report: dict, sigterm: bool) -> str:
    run = report["load"]
    lines = [f"`{report['command']}`: {report['workers']} workers x {report['threads']} threads, "
             f"cache {'on' if report['cache'] else 'off'}, "
             f"{report['offered_rps']} rps offered for {report['seconds']:.0f} s ({report['warmup']:.0f} s warm-up)"]
    if "gave_up" in run:
        lines.append(f"h2load: {run['gave_up']}")
    else:
        latency = run["latency_ms"]
        lines.append(f"h2load: {run['requests']:,} requests, {run['achieved_rps']:.0f} rps achieved after warm-up, "
                     f"{run['errors']} failed (HTTP {run['http_errors']}, gRPC {run['grpc_errors']}, "
                     f"h2load failed/errored/timeout {run['failed']}/{run['errored']}/{run['timeouts']}); "
                     f"latency p50 {latency['p50']:.2f} ms, p99 {latency['p99']:.2f} ms, "
                     f"p99.9 {latency['p99.9']:.2f} ms, "
                     f"max {latency['max']:.2f} ms; server CPU {run['server_cpu_us_per_request']:.0f} µs/request, "
                     f"other load on the machine {run['other_load_cores']:.2f} cores")
    if sigterm:
        probe_ = report["probe"]
        lines.append(f"probe ({probe_['rate']} calls/s): {probe_['ok_before_sigterm']}/{probe_['sent_before_sigterm']} "
                     f"calls sent before SIGTERM succeeded, {len(probe_['in_flight_failures'])} in-flight failures; "
                     f"after SIGTERM {probe_['sent_after_sigterm']} calls: {probe_['after_sigterm_codes']} "
                     f"{probe_['after_sigterm_refusals']}"
                     + (f"; with --drain {probe_['drain']:g} the probe stopped sending "
                        f"{probe_['stopped_sending_s_after_sigterm']} s after SIGTERM" if probe_["drain"] else ""))
    else:
        for pid, row in report["memory"].items():
            rss, anon = row["VmRSS"], row["RssAnon"]
            lines.append(f"worker {pid}: VmRSS {rss['after_warmup_kb'] / 1024:.1f} -> {rss['end_kb'] / 1024:.1f} MiB "
                         f"({rss['growth']:+.2%}, peak {rss['peak_kb'] / 1024:.1f}); RssAnon "
                         f"{anon['after_warmup_kb'] / 1024:.1f} -> {anon['end_kb'] / 1024:.1f} MiB "
                         f"({anon['growth']:+.2%})")
    server = report["server"]
    lines.append(f"server exit {server['exit_code']}, {server['internal_errors_logged']} internal errors logged: "
                 f"{'PASSED' if report['passed'] else 'FAILED'}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
