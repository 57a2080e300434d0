"""Faults under load with consistency checks (outside CI; tests/service/test_chaos.py runs it for seconds).

Two scenarios (lib/chaos.py): `neardup serve --workers 2 --search-index memory` on an LMDB store, whose workers are
killed with SIGKILL in turn; and two `neardup serve` on one Redis store (appendonly yes, appendfsync always), Redis
killed and started again on its port. In both, batches of `neardup index` go into the served store between the
outages. Client processes measure the capacity of a mix of Dedup, DedupStream, FindSimilar, Upsert and Delete,
then run at --fraction of it; every acknowledged write is checked through a fresh connection, and at the end the
store itself is read for lost writes. Passes with 0 stale answers, 0 lost acknowledged writes, failures only
inside the outage windows and each a status of an outage (UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED; never UNKNOWN
or INTERNAL), and the servers stopping cleanly with no internal error.

    python -m benchmarks.chaos [--seconds 600] [--fraction 0.7] [--backends lmdb,redis,redis-cluster] [--out benchmarks/out]

writes chaos.json and chaos.md (--out) and prints the summary; exit code 0 when it passed.
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from benchmarks.lib import chaos, measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table

BACKENDS = ("lmdb", "redis")  # the default; redis-cluster when asked (CLUSTER_OUTAGES in turn)
CHOICES = (*BACKENDS, "redis-cluster")


def report_text(report: dict) -> str:
    settings = report["settings"]
    lines = [f"# Chaos under load: {'PASSED' if report['passed'] else 'FAILED'}", "",
             f"`{report['command']}` on {report['machine']['nproc']} cores ({report['machine']['cpu']}), commit "
             f"{report['machine']['commit']}: {settings['processes']} client processes × {settings['threads']} "
             f"threads, the mix {', '.join(f'{name} {share:.0%}' for name, share in chaos.MIX.items())} "
             f"at {settings['fraction']:.0%} of the capacity measured first, for {settings['seconds']:g} s per "
             f"scenario, with {settings['faults']} faults each (outages and `neardup index` batches of "
             f"{settings['index_batch']:,} articles, alternating).", ""]
    rows = []
    for name, scenario in report["scenarios"].items():
        run = scenario["run"]
        rows.append([f"{name}: {scenario['setup']}", f"{scenario['capacity_steps_per_s']:,.0f}",
                     f"{scenario['offered_steps_per_s']:,.0f}", f"{run['calls']:,}", f"{run['checks']:,}",
                     f"{scenario['outages']} ({scenario['longest_outage_s']:.1f})",
                     run["failures_inside_text"], run["failures_outside_text"],
                     f"{run['stale_answers']:,}", f"{scenario['lost_acknowledged_writes']:,}",
                     f"{scenario['verified_ids']:,}", f"{run['uncertain_ids']:,}"])
    lines += table(["scenario", "capacity (steps/s)", "offered (steps/s)", "calls", "writes checked",
                    "outages (longest, s)", "failures inside outages", "failures outside", "stale answers",
                    "lost acknowledged writes", "ids verified in the store", "ids of failed writes"], rows)
    lines += ["", "A step is one call of the mix; an acknowledged write adds its checks (Dedup and FindSimilar "
              "through a fresh connection). Ids of failed writes are not written again: their outcome is unknown."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    defaults = chaos.Settings()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=600.0,
                        help="the paced run, all scenarios together (default 600: 5 minutes each)")
    parser.add_argument("--capacity-seconds", type=float, default=defaults.capacity_seconds)
    parser.add_argument("--fraction", type=float, default=defaults.fraction, help="of capacity, offered")
    parser.add_argument("--processes", type=int, default=defaults.processes, help="client processes")
    parser.add_argument("--threads", type=int, default=defaults.threads, help="threads per client process")
    parser.add_argument("--corpus", type=int, default=defaults.corpus, help="articles indexed before serving")
    parser.add_argument("--index-batch", type=int, default=defaults.index_batch)
    parser.add_argument("--faults", type=int, default=defaults.faults, help="per scenario")
    parser.add_argument("--backends", default=",".join(BACKENDS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the servers and Redis are stopped too
    backends = [name for name in args.backends.split(",") if name]
    if set(backends) - set(CHOICES):
        parser.error(f"--backends: one or more of {', '.join(CHOICES)}")
    if {"redis", "redis-cluster"} & set(backends) and shutil.which("redis-server") is None:
        raise SystemExit("redis-server not found: apt-get install redis-server")
    settings = chaos.Settings(seconds=args.seconds / len(backends), capacity_seconds=args.capacity_seconds,
                              fraction=args.fraction, processes=args.processes, threads=args.threads,
                              corpus=args.corpus, index_batch=args.index_batch, faults=args.faults)
    command = (f"python -m benchmarks.chaos --seconds {args.seconds:g} --fraction {args.fraction:g} "
               f"--processes {args.processes} --threads {args.threads} --corpus {args.corpus} "
               f"--index-batch {args.index_batch} --faults {args.faults} --backends {','.join(backends)}")
    report = {"command": command, "machine": measure.machine(), "settings": dataclasses.asdict(settings),
              "scenarios": {}}
    with tempfile.TemporaryDirectory(prefix="neardup-chaos-") as scratch:
        for backend in backends:
            report["scenarios"][backend] = chaos.run_scenario(backend, Path(scratch) / backend, settings)
    scenarios = report["scenarios"].values()
    report["totals"] = {
        "calls": sum(s["run"]["calls"] + s["capacity"]["calls"] for s in scenarios),
        "failures_inside_windows": sum(s["run"]["failures_inside_windows"] for s in scenarios),
        "failures_outside_windows": sum(s["run"]["failures_outside_windows"] + s["capacity"]["failures"]
                                        for s in scenarios),
        "unknown_or_internal": sum(s["run"]["unknown_or_internal"] + s["capacity"]["unknown_or_internal"]
                                   for s in scenarios),
        "failures_of_other_codes": sum(s["run"]["failures_of_other_codes"] + s["capacity"]["failures_of_other_codes"]
                                       for s in scenarios),
        "stale_answers": sum(s["run"]["stale_answers"] + s["capacity"]["stale_answers"] for s in scenarios),
        "lost_acknowledged_writes": sum(s["lost_acknowledged_writes"] for s in scenarios),
        "outages": sum(1 for s in scenarios for w in s["windows"] if w["outage"]),
    }
    report["passed"] = all(chaos.passed(s) for s in scenarios)
    text = report_text(report)
    save(args.out, "chaos", report, text)
    print(text)
    print(f"wrote {args.out / 'chaos.json'} and chaos.md")
    return 0 if report["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
