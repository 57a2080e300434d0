"""SIGTERM under sustained load (outside CI): every call sent before the signal must succeed.

The soak run of soak.py (lib/soak.py: `neardup serve --workers 2`, the development corpus, Dedup of one result set
of 100 stored ids offered open loop by h2load), plus a probe of NearDupClient calls (asyncio, open loop) whose every
outcome is kept; SIGTERM reaches the server halfway. Passes when every probe call sent before the signal succeeded
(in-flight calls finish within serve's --grace) and the server exits cleanly; calls sent after it are refused (the
server is going away), and how is reported. With --drain the server keeps serving that long with health
NOT_SERVING, and the probe, like a load balancer, stops sending when it sees that: then every probe call must
succeed.

    python -m benchmarks.soak_sigterm [--seconds 20] [--drain 2] [--probe-rate 200] [--out benchmarks/out]

writes soak_sigterm.json, or soak_sigterm_drain.json with --drain (--out), and prints the summary.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import signal
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from benchmarks.lib import measure, soak
from neardup_client import AsyncNearDupClient, NearDupClientError


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
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the run (default 20)")
    parser.add_argument("--probe-rate", type=int, default=200, help="NearDupClient calls/s of the probe")
    parser.add_argument("--drain", type=float, default=0.0,
                        help="serve --drain; the probe then stops sending once health says NOT_SERVING")
    soak.add_arguments(parser)
    args = parser.parse_args(argv)
    if shutil.which("h2load") is None:
        raise SystemExit("h2load not found: apt-get install nghttp2-client")
    seconds = args.seconds
    warmup = args.warmup if args.warmup is not None else seconds / 5
    command = (f"python -m benchmarks.soak_sigterm --seconds {seconds:g} --warmup {warmup:g} --rate {args.rate} "
               f"--workers {args.workers} --threads {args.threads} --probe-rate {args.probe_rate} "
               f"--drain {args.drain:g}" + (" --cache" if args.cache else ""))
    report = {"command": command, "machine": measure.machine(), "seconds": seconds, "warmup": warmup,
              "offered_rps": args.rate, "workers": args.workers, "threads": args.threads, "cache": args.cache}

    def during(server, ids, pids, generator) -> None:
        outcomes, termed, stopped_sending = asyncio.run(probe(
            server.target, ids, args.probe_rate, seconds, seconds / 2,
            lambda: os.kill(server.process.pid, signal.SIGTERM), follow_health=args.drain > 0))
        report["probe"] = {"rate": args.probe_rate, "drain": args.drain,
                           **sigterm_verdict(outcomes, termed, stopped_sending, args.drain)}
        generator.join()

    soak.run(args, report, seconds, warmup, args.drain, during)
    report["passed"] = soak.server_clean(report) and report["probe"]["passed"]
    probe_ = report["probe"]
    lines = soak.load_lines(report)
    lines.append(f"probe ({probe_['rate']} calls/s): {probe_['ok_before_sigterm']}/{probe_['sent_before_sigterm']} "
                 f"calls sent before SIGTERM succeeded, {len(probe_['in_flight_failures'])} in-flight failures; "
                 f"after SIGTERM {probe_['sent_after_sigterm']} calls: {probe_['after_sigterm_codes']} "
                 f"{probe_['after_sigterm_refusals']}"
                 + (f"; with --drain {probe_['drain']:g} the probe stopped sending "
                    f"{probe_['stopped_sending_s_after_sigterm']} s after SIGTERM" if probe_["drain"] else ""))
    lines.append(soak.server_line(report))
    return soak.write(report, args.out, "soak_sigterm_drain" if args.drain else "soak_sigterm", "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
