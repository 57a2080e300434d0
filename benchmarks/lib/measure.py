"""Timing and CPU accounting shared by the benchmark scripts.

The machines these run on are small and shared, so every figure is taken next to what else was going on:
in-process calls are timed in turns (interleaved_us), and a load run reads the CPU time of the server's
processes, of the load generator and of the whole machine over the same stretch (CpuMeter).
"""
from __future__ import annotations

import datetime
import os
import platform
import resource
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable

import grpc
import numpy as np

import neardup
from benchmarks.lib.paths import ROOT

PERCENTILES = {"p50": 50, "p90": 90, "p99": 99, "p99.9": 99.9}


# --- in process -------------------------------------------------------------------------------------------------

def time_calls(call: Callable, inputs: list[tuple], rounds: int) -> list[list[float]]:
    """Microseconds per call, per input: call(*args) for every input once per round."""
    samples: list[list[float]] = [[] for _ in inputs]
    for _ in range(rounds):
        for args, times in zip(inputs, samples):
            start = time.perf_counter_ns()
            call(*args)
            times.append((time.perf_counter_ns() - start) / 1000)
    return samples


def summary_us(samples: list[list[float]]) -> dict:
    """Median and p99 µs over all samples of time_calls, and how many calls they are."""
    ordered = sorted(t for times in samples for t in times)
    return {"median_us": statistics.median(ordered),
            "p99_us": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], "calls": len(ordered)}


def latency_us(call: Callable, inputs: list[tuple], rounds: int = 1) -> dict:
    """summary_us of time_calls: one function's median and p99 µs per call over the inputs."""
    return summary_us(time_calls(call, inputs, rounds))


def interleaved_us(calls: dict[str, tuple[Callable, list[tuple]]], rounds: int) -> dict[str, dict]:
    """summary_us of each name → (function, inputs). The functions take turns round by round, so a noisy stretch
    of a shared machine touches all of them alike."""
    samples = {name: [[] for _ in inputs] for name, (_, inputs) in calls.items()}
    for _ in range(rounds):
        for name, (call, inputs) in calls.items():
            for times, new in zip(samples[name], time_calls(call, inputs, 1)):
                times += new
    return {name: summary_us(times) for name, times in samples.items()}


def percentiles_ms(durations_us: np.ndarray) -> dict:
    """p50, p90, p99, p99.9 (each an observed value: numpy's "higher"), mean and max, in ms; None when empty."""
    if not len(durations_us):
        return {name: None for name in [*PERCENTILES, "mean", "max"]}
    figures = {name: float(np.percentile(durations_us, q, method="higher")) / 1000 for name, q in PERCENTILES.items()}
    return {**figures, "mean": float(durations_us.mean()) / 1000, "max": float(durations_us.max()) / 1000}


# --- processes and the machine ------------------------------------------------------------------------------------

def children(pid: int) -> list[int]:
    """The child processes of pid (/proc), none when it is gone."""
    try:
        return [int(child) for task in Path(f"/proc/{pid}/task").iterdir()
                for child in (task / "children").read_text().split()]
    except FileNotFoundError:
        return []


def worker_pids(pid: int) -> list[int]:
    """The processes serving: the children of `serve --workers N`, else the serve process itself."""
    return children(pid) or [pid]


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its children (the workers of `serve --workers N`)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") + sum(map(tree_cpu_seconds, children(pid)))


def connections_per_worker(pid: int, port: int) -> list[int]:
    """Established connections each worker holds on the port: SO_REUSEPORT spreads connections, not requests."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":
                established.add(fields[9])
    counts = []
    for worker in worker_pids(pid):
        sockets = set()
        for fd in Path(f"/proc/{worker}/fd").iterdir():
            try:
                sockets.add(os.readlink(fd).removeprefix("socket:[").removesuffix("]"))
            except FileNotFoundError:
                pass
        counts.append(len(sockets & established))
    return counts


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine spent busy so far (/proc/stat: all but idle and iowait)."""
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, Path("/proc/stat").read_text().split()[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def _rusage_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


class CpuMeter:
    """CPU seconds spent during a `with` block by the server's process tree, by the load generator and by the
    whole machine: what is left is other load (other users of a shared machine), which says whether a figure was
    disturbed. The load generator is this process (resource.RUSAGE_SELF: a client in Python) or the children it
    reaped meanwhile (resource.RUSAGE_CHILDREN: h2load)."""

    def __init__(self, server_pid: int, load: int = resource.RUSAGE_SELF):
        self.server_pid, self.load = server_pid, load

    def _now(self) -> tuple[float, float, float, float]:
        return (time.perf_counter(), machine_busy_seconds(), tree_cpu_seconds(self.server_pid),
                _rusage_seconds(self.load))

    def __enter__(self) -> "CpuMeter":
        self._start = self._now()
        return self

    def __exit__(self, *_) -> None:
        self.wall, self.busy, self.server_seconds, self.load_seconds = \
            (after - before for before, after in zip(self._start, self._now()))

    def other_load_cores(self, wall: float | None = None) -> float:
        """Cores busy with anything but the server and the load generator, over `wall` seconds (default: the
        block's)."""
        return max(0.0, self.busy - self.load_seconds - self.server_seconds) / (wall or self.wall)


def machine() -> dict:
    """What a figure was measured on: date, cores, CPU, Python, grpcio, neardup, h2load, commit."""
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    h2load = shutil.which("h2load")
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "nproc": os.cpu_count(), "cpu": cpu, "python": platform.python_version(), "grpcio": grpc.__version__,
        "neardup": neardup.__version__,
        "h2load": subprocess.run([h2load, "--version"], capture_output=True, text=True).stdout.strip()
        if h2load else None,
        "commit": subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True).stdout.strip() or None,
    }
