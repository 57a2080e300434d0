"""Would weighing each shared sketch value by how few stored articles hold it tell template pages and licence
versions from copies better than plain containment? (issue 38 proposed such a rarity-weighted containment as a
metric, the default if it wins on the tune split.)

For each family (lib/families.py) and split, the family's corpus is indexed by `index_corpus` (the store as served:
its stop-list, its sketches). A value's weight is log(N / df): N stored articles, df of them whose sketch holds
the value (what the store's postings count). Two sketches are compared over the values plain containment compares
(reference.compared_lengths: below the smaller cap):

  rarity containment = weight of the shared values / the smaller of the two sketches' weights;
  rarity jaccard     = weight of the shared values / weight of their union.

Each result set is grouped by the service's greedy rule at every threshold of quality_counts.THRESHOLDS, for
these two and for plain containment and jaccard of the same sketches; each method is read at the family's best
threshold (an oracle, as the peers of evaluate_families are). A rarity weighting that wins there could be learned;
one that does not cannot win at a learned threshold either.

    python -m benchmarks.rarity_weighting [--split tune test] [--family NAME ...]
writes benchmarks/out/rarity_weighting.json and .md (also printed).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.evaluate_families import StoreRun, counts_by_scope
from benchmarks.lib import devcorpus, families, report
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS, ResultSet, greedy_groups
from neardup.core import reference, vocabulary
from neardup.core.encoding import decode_sketch

METHODS = ("containment", "jaccard", "rarity containment", "rarity jaccard")


class WeightedSketches:
    """A store's sketches (decoded, ascending) and each value's rarity weight log(N / df)."""

    def __init__(self, sketches: dict[str, list[int]], k: int):
        self.k = k
        self.values = {doc_id: np.array(sketch, np.uint64) for doc_id, sketch in sketches.items()}
        df = Counter(value for sketch in sketches.values() for value in sketch)
        held = len(sketches)
        self.weights = {doc_id: np.array([np.log(held / df[value]) for value in sketch])
                        for doc_id, sketch in sketches.items()}

    def similarities(self, a: str, b: str) -> tuple[float, ...]:
        """The four METHODS for one pair (0 when either has no sketch)."""
        values_a, values_b = self.values.get(a), self.values.get(b)
        if values_a is None or values_b is None or not len(values_a) or not len(values_b):
            return (0.0,) * len(METHODS)
        len_a, len_b, floor = reference.compared_lengths(values_a.tolist(), values_b.tolist(), self.k)
        shared, at_a, _ = np.intersect1d(values_a[:len_a], values_b[:len_b], assume_unique=True, return_indices=True)
        if not len(shared):
            return (0.0,) * len(METHODS)
        plain = len(shared)
        weight_shared = float(self.weights[a][at_a].sum())
        weight_a, weight_b = float(self.weights[a][:len_a].sum()), float(self.weights[b][:len_b].sum())
        return (plain / max(min(len_a, len_b), floor), plain / (len_a + len_b - plain),
                weight_shared / max(min(weight_a, weight_b), 1e-12),
                weight_shared / max(weight_a + weight_b - weight_shared, 1e-12))


def family_counts(corpus: families.Corpus, workdir: Path) -> dict[str, dict]:
    """Per method, the pair counts over the family's result sets at every threshold (counts_by_scope)."""
    run = StoreRun(corpus, workdir, {})
    try:
        ids = [doc.id for doc in corpus.docs]
        stored = dict(zip(ids, run.store.get_many(ids)))
        weighted = WeightedSketches({doc_id: decode_sketch(sketch) for doc_id, sketch in stored.items() if sketch},
                                    run.store.config.k)
    finally:
        run.close()
    sets = {scope: [ResultSet.label(corpus.docs, indexes) for indexes in drawn]
            for scope, drawn in corpus.result_sets.items()}
    matrices: dict[tuple[int, ...], np.ndarray] = {}

    def matrix(indexes: list[int]) -> np.ndarray:
        key = tuple(indexes)
        if key not in matrices:
            n = len(indexes)
            scores = np.zeros((len(METHODS), n, n))
            for i in range(n):
                for j in range(i + 1, n):
                    scores[:, i, j] = scores[:, j, i] = weighted.similarities(ids[indexes[i]], ids[indexes[j]])
            matrices[key] = scores
        return matrices[key]

    return {method: counts_by_scope(sets, lambda indexes, m=m: greedy_groups(matrix(indexes)[m], THRESHOLDS),
                                    len(THRESHOLDS))["overall"] for m, method in enumerate(METHODS)}


def markdown(results: dict, command: str) -> str:
    lines = [f"Measured with `{command}` ({results['seconds']:.0f} s). F1 at each method's best threshold per "
             "family (the threshold after @); the same stores and sketches for all four.", ""]
    header = ["split", "family", *METHODS, "rarity − plain (containment)"]
    rows = []
    for split, by_family in results["splits"].items():
        for family, best in by_family.items():
            rows.append([split, family, *(f"{best[m]['f1']:.3f}@{best[m]['threshold']:.2f}" for m in METHODS),
                         f"{best['rarity containment']['f1'] - best['containment']['f1']:+.3f}"])
    return "\n".join(lines + report.table(header, rows)) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, nargs="+", default=list(devcorpus.SPLITS))
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(families.FAMILIES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict = {"metric_default": vocabulary.DEFAULT_METRIC, "splits": {}}
    with tempfile.TemporaryDirectory(prefix="neardup-rarity-") as workdir:
        for split in args.split:
            for family in args.family:
                counts = family_counts(families.build(family, split), Path(workdir))
                best = {}
                for method, by_threshold in counts.items():
                    at = int(np.argmax(by_threshold.f1()))
                    best[method] = {"f1": float(by_threshold.f1()[at]), "threshold": float(THRESHOLDS[at])}
                results["splits"].setdefault(split, {})[family] = best
                print(f"  {split} {family}: " + ", ".join(f"{m} {b['f1']:.3f}" for m, b in best.items()),
                      file=sys.stderr)
    results["seconds"] = time.perf_counter() - started
    command = ("python -m benchmarks.rarity_weighting --split " + " ".join(args.split)
               + (f" --family {' '.join(args.family)}" if args.family != list(families.FAMILIES) else ""))
    text = markdown(results, command)
    report.save(args.out, "rarity_weighting", results, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
