"""Per-set latency of the compiled kernel against the card's pure-Python algorithm (reference.dedup).

Result sets look like search results: 100 documents of 30..400 shingles (so most sketches are full K=64
samples, a few short ones complete), 20-40 % of them near-duplicates of an earlier one (edited copies and
excerpts). The machine may be noisy, so the baseline runs in the same process and the ratios are the figure
to trust. The same documents as 64-bit SimHash fingerprints (a simhash store's sketch, 8 bytes) go through the
kernel's popcount path, timed in turns with the bottom-K kernel on the same sets (measure.interleaved_us), and
against reference.dedup_simhash (lib/kernel_sets.py makes the sets). `python -m benchmarks.bench_kernel_real`
compares the installed kernel with an earlier commit's on the development corpus.

    python -m benchmarks.bench_kernel [--quick]

writes benchmarks/out/kernel.json.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import statistics

from benchmarks.lib.kernel_sets import K, RESULTS, SEED, THRESHOLD, result_documents
from benchmarks.lib.measure import interleaved_us, summary_us, time_calls
from benchmarks.lib.paths import OUT as OUT_DIR, ROOT
from neardup.core import _shingle, kernel, reference, vocabulary
from neardup.core.encoding import encode_sketch

SIMHASH_THRESHOLD = 61 / 64  # at most 3 differing bits (a simhash store's Dedup default allows 18: core/defaults.py)
OUT = OUT_DIR / "kernel.json"


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sets and rounds (a smoke run)")
    args = parser.parse_args(argv)
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
