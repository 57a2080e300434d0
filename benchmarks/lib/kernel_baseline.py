"""An earlier commit's pair kernel next to the installed one: its _kernel.c built from git into a module of its
own, calls of both alternated on the same inputs, and each alone in a fresh process (bench_kernel_real.py)."""
from __future__ import annotations

import importlib.util
import pickle
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.lib.measure import summary_us
from benchmarks.lib.paths import ROOT

#: The last commit of the kernel before the per-call arena, the two-byte value table and the branch-free insert.
BASELINE_REV = "0dba9abc18f457455812355c55bef2efd630842a"
KERNEL_SOURCE = "server/neardup/core/_kernel.c"
#: Written before each call of a cold row: more than the L2 cache holds, so the kernel's buffers, its code and
#: its inputs start out of it.
COLD_BYTES = 8 << 20


def _source_at(rev: str, path: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{path}"], capture_output=True, text=True,
                          check=True).stdout


def build_baseline(rev: str, work: Path):
    """rev's _kernel.c compiled as module _kernel_baseline (the package's compiler flags), imported; the local
    headers it includes (_pair.h) are taken from rev too."""
    source = _source_at(rev, KERNEL_SOURCE)
    for header in re.findall(r'^#include "([^"]+)"', source, re.MULTILINE):
        (work / header).write_text(_source_at(rev, str(Path(KERNEL_SOURCE).parent / header)))
    name = "_kernel_baseline"
    source = source.replace("PyInit__kernel", f"PyInit_{name}").replace('"neardup.core._kernel"', f'"{name}"')
    (work / f"{name}.c").write_text(source)
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext
    command = build_ext(Distribution({"ext_modules": [
        Extension(name, [str(work / f"{name}.c")], extra_compile_args=["-O3", "-std=c99"])]}))
    command.build_lib, command.build_temp = str(work), str(work / "build")
    command.ensure_finalized()
    command.run()
    spec = importlib.util.spec_from_file_location(name, command.get_ext_fullpath(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def alternating_us(old, new, inputs: list[tuple], rounds: int, cold: bool = False) -> dict:
    """old(*args) and new(*args) called one after the other on each input, their order swapped every round;
    median and p99 µs of each, the ratio of the medians and the median of the per-call ratios new/old. With
    cold, COLD_BYTES of memory are written before each call (not timed)."""
    times = {"old": [], "new": []}
    clock = time.perf_counter_ns
    evict = np.zeros(COLD_BYTES, np.uint8) if cold else None
    for round_ in range(rounds):
        order = (("old", old), ("new", new)) if round_ % 2 == 0 else (("new", new), ("old", old))
        for args in inputs:
            for name, call in order:
                if evict is not None:
                    evict += 1
                start = clock()
                call(*args)
                times[name].append((clock() - start) / 1000)
    summary = {name: summary_us([samples]) for name, samples in times.items()}
    return {**summary, "ratio_of_medians": summary["new"]["median_us"] / summary["old"]["median_us"],
            "median_paired_ratio": statistics.median(n / o for n, o in zip(times["new"], times["old"]))}


ALONE = """
import pickle, resource, statistics, sys, time, importlib.util
path, sets_file, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
if path == "installed":
    from neardup.core import _kernel as module
else:
    spec = importlib.util.spec_from_file_location("_kernel_baseline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
k, sets = pickle.load(open(sets_file, "rb"))
for s in sets:
    module.dedup(s, k, 0.52, 0, 0)
faults, times = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, []
for _ in range(rounds):
    for s in sets:
        start = time.perf_counter_ns()
        module.dedup(s, k, 0.52, 0, 0)
        times.append((time.perf_counter_ns() - start) / 1000)
print(statistics.median(times), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / len(times))
"""


def alone(baseline, k: int, sets: list, work: Path, rounds: int) -> dict:
    """Each kernel alone in a fresh process's main thread (containment greedy at 0.52), one after the other,
    twice: median µs and page faults per call. Alternating calls in one process hide what a kernel's own
    allocations cost (the other kernel's blocks change the heap)."""
    sets_file = work / "sets.pickle"
    sets_file.write_bytes(pickle.dumps((k, sets)))
    runs = {"old": [], "new": []}
    for _ in range(2):
        for name, path in (("old", baseline.__file__), ("new", "installed")):
            done = subprocess.run([sys.executable, "-c", ALONE, path, str(sets_file), str(rounds)],
                                  capture_output=True, text=True, check=True)
            median, faults = map(float, done.stdout.split())
            runs[name].append({"median_us": median, "page_faults_per_call": faults})
    return runs
