"""The installed pair kernel against an earlier commit's, on the development corpus's real result sets.

The baseline is an earlier commit's _kernel.c (--baseline REV, by default the kernel before the arena and the
two-byte table) built into a temporary module (lib/kernel_baseline.py); calls of both alternate on the same inputs,
on real result sets: the development corpus indexed by the real CLI (load.build_store), result sets of 100 stored
ids with 20-40 % near-duplicates (load.dedup_bodies), their sketches read as the server reads them (LiveView), at
the service's defaults (K=128, threshold 0.52, containment, greedy) and the other metric/grouping pairs, the
defaults once more with cold caches (8 MB written before each call, as a server's gRPC work between two requests
leaves the caches); on the synthetic sets of bench_kernel.py; and kernel.similarity, kernel.similar (FindSimilar's
verify) and dedup_simhash on inputs from the same sets. Every answer is checked equal to the baseline's. Then each
kernel alone in a fresh process.

    python -m benchmarks.bench_kernel_real [--quick] [--baseline REV]

writes benchmarks/out/kernel_real.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import tempfile
from pathlib import Path

from benchmarks.lib import load
from benchmarks.lib.kernel_baseline import BASELINE_REV, alone, alternating_us, build_baseline
from benchmarks.lib.kernel_sets import K, SEED, THRESHOLD, result_set
from benchmarks.lib.paths import OUT, ROOT
from neardup.core import vocabulary
from neardup.core.encoding import encode_sketch
from neardup.store import open_store
from neardup.runtime.view import LiveView

REAL_OUT = OUT / "kernel_real.json"


def real_sets(work: Path, count: int) -> tuple[int, list[list[bytes | None]]]:
    """K and the sketches of `count` result sets of 100 stored ids, as the server's view hands them over."""
    docs, store_path, _ = load.build_store(work)
    id_sets, _ = load.dedup_bodies(docs, count)
    with open_store(store_path, readonly=True) as store:
        reading = LiveView(store).read()
        return store.config.k, [list(reading.get_many(ids)) for ids in id_sets]


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


def run(quick: bool, rev: str) -> None:
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sets and rounds (a smoke run)")
    parser.add_argument("--baseline", default=BASELINE_REV, metavar="REV",
                        help="the commit whose _kernel.c to compare against (default: %(default).10s, the kernel "
                             "before the arena and the two-byte table)")
    args = parser.parse_args(argv)
    run(args.quick, args.baseline)


if __name__ == "__main__":
    main()
