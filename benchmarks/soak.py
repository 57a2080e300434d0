"""Sustained load (outside CI): hours of traffic in minutes, looking for what short benchmarks cannot see.

`neardup serve --workers 2` on loopback, the development corpus (lib/devcorpus.py, fixed seed) indexed by the real
CLI, and Dedup of one result set of 100 stored ids offered open loop by h2load at a fixed rate (lib/load.py's runner
and error count, as the harness uses them; lib/soak.py runs it). The session cache is off unless --cache, so every
request takes the whole path: decode, sketch gather, kernel, encode. The resident memory of each worker (VmRSS and
RssAnon from /proc/PID/status) is sampled all along; its growth after the warm-up is the leak figure.
Passes with 0 failed RPCs, growth under 5 %, a clean exit on SIGTERM and no internal error logged.
SIGTERM under load is soak_sigterm.py's.

    python -m benchmarks.soak [--quick] [--seconds 300] [--rate 2000] [--cache] [--out benchmarks/out]

writes soak.json (--out) and prints the summary.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path

from benchmarks.lib import measure, soak

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="20 s instead of 5 minutes")
    parser.add_argument("--seconds", type=float, help="length of the run (default 300, 20 with --quick)")
    parser.add_argument("--sample", type=float, default=2.0, help="seconds between memory samples")
    soak.add_arguments(parser)
    args = parser.parse_args(argv)
    if shutil.which("h2load") is None:
        raise SystemExit("h2load not found: apt-get install nghttp2-client")
    seconds = args.seconds or (20.0 if args.quick else 300.0)
    warmup = args.warmup if args.warmup is not None else seconds / 5
    command = (f"python -m benchmarks.soak --seconds {seconds:g} --warmup {warmup:g} --rate {args.rate} "
               f"--workers {args.workers} --threads {args.threads}" + (" --cache" if args.cache else ""))
    report = {"command": command, "machine": measure.machine(), "seconds": seconds, "warmup": warmup,
              "offered_rps": args.rate, "workers": args.workers, "threads": args.threads, "cache": args.cache}

    def during(server, ids, pids, generator) -> None:
        done = threading.Event()
        sampler = threading.Thread(target=lambda: report.update(samples=sample_memory(pids, done, args.sample)))
        sampler.start()
        generator.join()
        done.set()
        sampler.join()
        report["memory"] = growth(report["samples"], pids, warmup)

    soak.run(args, report, seconds, warmup, 0.0, during)
    memory_ok = all(row["VmRSS"]["growth"] < GROWTH_LIMIT for row in report["memory"].values())
    report["passed"] = soak.server_clean(report) and memory_ok and report["load"].get("errors") == 0
    lines = soak.load_lines(report)
    for pid, row in report["memory"].items():
        rss, anon = row["VmRSS"], row["RssAnon"]
        lines.append(f"worker {pid}: VmRSS {rss['after_warmup_kb'] / 1024:.1f} -> {rss['end_kb'] / 1024:.1f} MiB "
                     f"({rss['growth']:+.2%}, peak {rss['peak_kb'] / 1024:.1f}); RssAnon "
                     f"{anon['after_warmup_kb'] / 1024:.1f} -> {anon['end_kb'] / 1024:.1f} MiB "
                     f"({anon['growth']:+.2%})")
    lines.append(soak.server_line(report))
    return soak.write(report, args.out, "soak", "\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
