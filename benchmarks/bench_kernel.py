"""Per-set latency of the compiled kernel against the card's pure-Python algorithm (reference.dedup).

Result sets look like search results: 100 documents of 30..400 shingles (so most sketches are full K=64
samples, a few short ones complete), 20-40 % of them near-duplicates of an earlier one (edited copies and
excerpts). The machine may be noisy, so the baseline runs in the same process and the ratios are the figure
to trust. The same documents as 64-bit SimHash fingerprints (a simhash store's sketch, 8 bytes) go through the
kernel's popcount path, timed in turns with the bottom-K kernel on the same sets (measure.interleaved_us), and
against reference.dedup_simhash. Usage: python benchmarks/bench_kernel.py [--quick]; writes
benchmarks/out/kernel.json.

`--real` times the installed kernel against a baseline build of an earlier commit's _kernel.c (--baseline REV,
by default the kernel before the arena and the two-byte table), alternating calls on the same inputs, on real
result sets: the development corpus indexed by the real CLI (load.build_store), result sets of 100 stored ids
with 20-40 % near-duplicates (load.dedup_bodies), their sketches read as the server reads them (LiveView), at
the service's defaults (K=128, threshold 0.52, containment, greedy) and the other metric/grouping pairs, the
defaults once more with cold caches (8 MB written before each call, as a server's gRPC work between two
requests leaves the caches); and kernel.similarity, kernel.similar (FindSimilar's verify) and dedup_simhash on
inputs from the same sets. Every answer is checked equal to the baseline's. Writes
benchmarks/out/kernel_real.json.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from measure import interleaved_us, summary_us, time_calls  # noqa: E402
from neardup.core import _shingle, kernel, reference, vocabulary  # noqa: E402
from neardup.core.encoding import encode_sketch

K = 64
RESULTS = 100
THRESHOLD = 0.7
SIMHASH_THRESHOLD = 61 / 64  # at most 3 differing bits (a simhash store's Dedup default allows 18: core/vocabulary.py)
SEED = 20240601
OUT = ROOT / "benchmarks" / "out" / "kernel.json"
REAL_OUT = ROOT / "benchmarks" / "out" / "kernel_real.json"
#: The last commit of the kernel before the per-call arena, the two-byte value table and the branch-free insert.
BASELINE_REV = "0dba9abc18f457455812355c55bef2efd630842a"
KERNEL_SOURCE = "server/neardup/core/_kernel.c"
#: Written before each call of a cold row: more than the L2 cache holds, so the kernel's buffers, its code and
#: its inputs start out of it.
COLD_BYTES = 8 << 20


def _document(rng: random.Random) -> set[int]:
    return {rng.getrandbits(32) for _ in range(rng.randint(30, 400))}


def _near_duplicate(rng: random.Random, original: set[int]) -> set[int]:
    """An edited copy (a few shingles changed) or an excerpt (a contiguous part of the text)."""
    shingles = sorted(original, key=lambda _: rng.random())
    if rng.random() < 0.3:
        return set(shingles[: max(1, int(len(shingles) * rng.uniform(0.4, 0.8)))])
    edits = int(len(shingles) * rng.uniform(0.02, 0.15))
    return set(shingles[edits:]) | {rng.getrandbits(32) for _ in range(edits)}


def result_documents(rng: random.Random) -> list[set[int]]:
    """One ranked result set as documents (their shingle hashes); each near-duplicate copies an earlier one."""
    share = rng.uniform(0.2, 0.4)
    documents: list[set[int]] = []
    for _ in range(RESULTS):
        if documents and rng.random() < share:
            documents.append(_near_duplicate(rng, rng.choice(documents)))
        else:
            documents.append(_document(rng))
    return documents


def result_set(rng: random.Random) -> list[list[int]]:
    """One ranked result set as decoded bottom-K sketches."""
    return [sorted(doc)[:K] for doc in result_documents(rng)]


def simhash_rows(documents: list[list[set[int]]], quick: bool) -> list[dict]:
    """SimHash Dedup of the same result sets, per grouping, in turns with bottom-K (containment, THRESHOLD) on the
    same sets; and against reference.dedup_simhash."""
    fingerprints = [[_shingle.simhash(doc, frozenset()) for doc in docs] for docs in documents]
    sketches = [[encode_sketch(sorted(doc)[:K]) for doc in docs] for docs in documents]
    baseline_sets = fingerprints[: 3 if quick else 10]
    rows = []
    for grouping in vocabulary.GROUPINGS:
        for blobs in baseline_sets:
            assert kernel.dedup_simhash(blobs, SIMHASH_THRESHOLD, grouping) == reference.dedup_simhash(
                [int.from_bytes(b, "little") for b in blobs], SIMHASH_THRESHOLD, grouping)
        timed = interleaved_us({
            "simhash": (kernel.dedup_simhash, [(f, SIMHASH_THRESHOLD, grouping) for f in fingerprints]),
            "bottomk": (kernel.dedup, [(b, K, THRESHOLD, vocabulary.CONTAINMENT, grouping) for b in sketches]),
        }, 20 if quick else 200)
        baseline = summary_us(time_calls(
            reference.dedup_simhash,
            [([int.from_bytes(b, "little") for b in f], SIMHASH_THRESHOLD, grouping) for f in baseline_sets], 1))
        compiled_on_baseline_sets = summary_us(time_calls(
            kernel.dedup_simhash, [(f, SIMHASH_THRESHOLD, grouping) for f in baseline_sets], 20 if quick else 200))
        rows.append({
            "grouping": grouping, "threshold": SIMHASH_THRESHOLD,
            "duplicates_per_set": statistics.mean(
                sum(d >= 0 for d in kernel.dedup_simhash(f, SIMHASH_THRESHOLD, grouping).duplicate_of)
                for f in fingerprints),
            "bottomk_duplicates_per_set": statistics.mean(
                sum(d >= 0 for d in kernel.dedup(b, K, THRESHOLD, vocabulary.CONTAINMENT, grouping).duplicate_of)
                for b in sketches),
            "kernel": timed["simhash"], "bottomk_kernel_same_rounds": timed["bottomk"], "reference": baseline,
            "speedup_median": baseline["median_us"] / compiled_on_baseline_sets["median_us"],
            "bytes_per_article": statistics.mean(len(b) for f in fingerprints for b in f),
            "bottomk_bytes_per_article": statistics.mean(len(b) for s in sketches for b in s)})
    return rows


# ---- --real: the installed kernel against an earlier commit's, on the development corpus ----

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


def real_sets(work: Path, count: int) -> tuple[int, list[list[bytes | None]]]:
    """K and the sketches of `count` result sets of 100 stored ids, as the server's view hands them over."""
    import load  # noqa: E402  (puts tests/ on sys.path; only --real needs it)
    from neardup.store import open_store
    from neardup.runtime.view import LiveView
    docs, store_path, _ = load.build_store(work)
    id_sets, _ = load.dedup_bodies(docs, count)
    with open_store(store_path, readonly=True) as store:
        reading = LiveView(store).read()
        return store.config.k, [list(reading.get_many(ids)) for ids in id_sets]


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


def real_rows(baseline, k: int, sets: list[list[bytes | None]], quick: bool) -> list[dict]:
    from neardup.core import _kernel
    from neardup.core.vocabulary import DEFAULT_THRESHOLD
    rounds = 5 if quick else 15
    metric_codes = {vocabulary.CONTAINMENT: _kernel.CONTAINMENT, vocabulary.JACCARD: _kernel.JACCARD}
    grouping_codes = {vocabulary.GREEDY: _kernel.GREEDY, vocabulary.COMPONENTS: _kernel.COMPONENTS,
                      vocabulary.COMPLETE: _kernel.COMPLETE}
    ways = [(vocabulary.CONTAINMENT, vocabulary.GREEDY)]
    if not quick:
        ways += [(m, g) for m in vocabulary.BOTTOMK_METRICS for g in vocabulary.GROUPINGS if (m, g) != ways[0]]
    rows = []
    for metric, grouping in ways:
        args = [(s, k, DEFAULT_THRESHOLD, metric_codes[metric], grouping_codes[grouping]) for s in sets]
        for a in args:
            assert _kernel.dedup(*a) == baseline.dedup(*a), "the kernels disagree"
        duplicates = statistics.mean(sum(d >= 0 for d in _kernel.dedup(*a)[0]) for a in args)
        rows.append({"call": f"dedup {metric} {grouping}", "duplicates_per_set": duplicates,
                     **alternating_us(baseline.dedup, _kernel.dedup, args, rounds)})
        if (metric, grouping) == ways[0]:
            rows.append({"call": f"dedup {metric} {grouping}, cold caches", "duplicates_per_set": duplicates,
                         **alternating_us(baseline.dedup, _kernel.dedup, args, rounds, cold=True)})
    # the default mode's synthetic sets (K=64 full sketches, threshold 0.7), in turns the same way
    rng = random.Random(SEED)
    synthetic = [[encode_sketch(sk) for sk in result_set(rng)] for _ in range(20 if quick else 100)]
    for metric, grouping in ways:
        args = [(s, K, THRESHOLD, metric_codes[metric], grouping_codes[grouping]) for s in synthetic]
        for a in args:
            assert _kernel.dedup(*a) == baseline.dedup(*a), "the kernels disagree"
        duplicates = statistics.mean(sum(d >= 0 for d in _kernel.dedup(*a)[0]) for a in args)
        rows.append({"call": f"dedup {metric} {grouping}, synthetic K={K} at {THRESHOLD}",
                     "duplicates_per_set": duplicates, **alternating_us(baseline.dedup, _kernel.dedup, args,
                                                                        4 * rounds)})
    present = [[b for b in s if b] for s in sets]
    pairs = [(a, b, k, _kernel.CONTAINMENT) for p in present for a, b in zip(p[::2], p[1::2])]
    for a in pairs:
        assert _kernel.similarity(*a) == baseline.similarity(*a)
    rows.append({"call": "similarity (pairs of a set's sketches)", "duplicates_per_set": None,
                 **alternating_us(baseline.similarity, _kernel.similarity, pairs, rounds)})
    queries = [(p[0], p[1:], k, DEFAULT_THRESHOLD, _kernel.CONTAINMENT) for p in present]
    for a in queries:
        assert _kernel.similar(*a) == baseline.similar(*a)
    rows.append({"call": "similar (a set's first sketch against the rest)", "duplicates_per_set": None,
                 **alternating_us(baseline.similar, _kernel.similar, queries, rounds)})
    # 8-byte fingerprints from the same sets: copies that keep their two smallest values keep their fingerprint
    fingerprints = [[b[:8] if b and len(b) >= 8 else None for b in s] for s in sets]
    simhash = [(f, 3, _kernel.GREEDY) for f in fingerprints]
    for a in simhash:
        assert _kernel.dedup_simhash(*a) == baseline.dedup_simhash(*a)
    rows.append({"call": "dedup_simhash (greedy, 3 bits)", "duplicates_per_set": None,
                 **alternating_us(baseline.dedup_simhash, _kernel.dedup_simhash, simhash, rounds)})
    return rows


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
    import pickle
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


def real_main(quick: bool, rev: str) -> None:
    with tempfile.TemporaryDirectory(prefix="neardup-kernel-") as scratch:
        work = Path(scratch)
        baseline = build_baseline(rev, work)
        k, sets = real_sets(work, 40 if quick else 200)
        rows = real_rows(baseline, k, sets, quick)
        alone_runs = alone(baseline, k, sets, work, 3 if quick else 10)
    values = [sum(len(b) // 4 for b in s if b) for s in sets]
    report = {"baseline": rev, "k": k, "sets": len(sets), "results_per_set": statistics.mean(map(len, sets)),
              "values_per_set": statistics.mean(values), "quick": quick, "python": platform.python_version(),
              "machine": platform.machine(), "rows": rows, "alone": alone_runs}
    REAL_OUT.parent.mkdir(parents=True, exist_ok=True)
    REAL_OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{len(sets)} real result sets of {report['results_per_set']:.0f} stored ids "
          f"(~{report['values_per_set']:,.0f} values, K={k}); installed kernel (new) against {rev[:10]} (old), "
          f"alternating calls; µs per call{' (quick)' if quick else ''}\n")
    print("| call | dups/set | old median | new median | old p99 | new p99 | new/old (medians) | new/old (paired) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        dups = "" if row["duplicates_per_set"] is None else f"{row['duplicates_per_set']:.1f}"
        print(f"| {row['call']} | {dups} | {row['old']['median_us']:.1f} | {row['new']['median_us']:.1f} "
              f"| {row['old']['p99_us']:.1f} | {row['new']['p99_us']:.1f} | {row['ratio_of_medians']:.2f} "
              f"| {row['median_paired_ratio']:.2f} |")
    print("\nEach kernel alone in a fresh process's main thread (containment greedy), two runs each: median µs, "
          "page faults per call")
    for name in ("old", "new"):
        print(f"  {name}: " + ", ".join(f"{run['median_us']:.1f} µs, {run['page_faults_per_call']:.1f} faults"
                                        for run in alone_runs[name]))
    print(f"\nwrote {REAL_OUT.relative_to(ROOT)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sets and rounds (a smoke run)")
    parser.add_argument("--real", action="store_true",
                        help="the installed kernel against --baseline's on the development corpus's result sets")
    parser.add_argument("--baseline", default=BASELINE_REV, metavar="REV",
                        help="the commit whose _kernel.c --real compares against (default: %(default).10s, the "
                             "kernel before the arena and the two-byte table)")
    args = parser.parse_args()
    if args.real:
        real_main(args.quick, args.baseline)
        return
    quick = args.quick
    rng = random.Random(SEED)
    documents = [result_documents(rng) for _ in range(20 if quick else 100)]
    sets = [[sorted(doc)[:K] for doc in docs] for docs in documents]
    encoded = [[encode_sketch(s) for s in sketches] for sketches in sets]
    baseline_sets = sets[: 3 if quick else 10]

    rows = []
    for metric in vocabulary.BOTTOMK_METRICS:
        for grouping in vocabulary.GROUPINGS:
            for sketches, blobs in zip(baseline_sets, encoded):
                assert kernel.dedup(blobs, K, THRESHOLD, metric, grouping) == \
                    reference.dedup(sketches, K, THRESHOLD, metric, grouping)
            duplicates = statistics.mean(
                sum(d >= 0 for d in kernel.dedup(blobs, K, THRESHOLD, metric, grouping).duplicate_of)
                for blobs in encoded)
            baseline = summary_us(time_calls(reference.dedup,
                                             [(s, K, THRESHOLD, metric, grouping) for s in baseline_sets], 1))
            compiled_samples = time_calls(kernel.dedup, [(b, K, THRESHOLD, metric, grouping) for b in encoded],
                                          20 if quick else 200)
            compiled = summary_us(compiled_samples)
            # The ratio compares both on the very sets the baseline ran.
            compiled_on_baseline_sets = summary_us(compiled_samples[: len(baseline_sets)])
            rows.append({"metric": metric, "grouping": grouping, "duplicates_per_set": duplicates,
                         "kernel": compiled, "reference": baseline,
                         "kernel_on_reference_sets": compiled_on_baseline_sets,
                         "speedup_median": baseline["median_us"] / compiled_on_baseline_sets["median_us"]})

    simhash = simhash_rows(documents, quick)
    report = {"results_per_set": RESULTS, "k": K, "threshold": THRESHOLD, "seed": SEED, "quick": quick,
              "sets": len(sets), "reference_sets": len(baseline_sets), "python": platform.python_version(),
              "machine": platform.machine(), "rows": rows, "simhash_rows": simhash}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{RESULTS} sketches x K={K} per set, threshold {THRESHOLD}; µs per set; kernel on {len(sets)} sets, "
          f"reference (and the speedup) on the first {len(baseline_sets)}{' (quick)' if quick else ''}\n")
    print("| metric | grouping | dups/set | kernel median | kernel p99 | reference median | speedup (medians) |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['metric']} | {row['grouping']} | {row['duplicates_per_set']:.1f} "
              f"| {row['kernel']['median_us']:.1f} | {row['kernel']['p99_us']:.1f} "
              f"| {row['reference']['median_us']:.0f} | {row['speedup_median']:.0f}x |")
    print(f"\nThe same documents as SimHash fingerprints, hamming {SIMHASH_THRESHOLD} (at most 3 bits), timed in "
          f"turns with bottom-K (K={K}, containment {THRESHOLD}) on the same sets; µs per set\n")
    print("| grouping | bytes/article (bottom-K) | dups/set (bottom-K) | SimHash median | SimHash p99 "
          "| bottom-K median, same rounds | bottom-K / SimHash | reference median | speedup (medians) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in simhash:
        print(f"| {row['grouping']} | {row['bytes_per_article']:.0f} ({row['bottomk_bytes_per_article']:.0f}) "
              f"| {row['duplicates_per_set']:.1f} ({row['bottomk_duplicates_per_set']:.1f}) "
              f"| {row['kernel']['median_us']:.1f} | {row['kernel']['p99_us']:.1f} "
              f"| {row['bottomk_kernel_same_rounds']['median_us']:.1f} "
              f"| {row['bottomk_kernel_same_rounds']['median_us'] / row['kernel']['median_us']:.1f}x "
              f"| {row['reference']['median_us']:.0f} | {row['speedup_median']:.0f}x |")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
