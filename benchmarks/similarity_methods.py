"""Which similarity of two stored sketches tells template pages and licence versions from copies, and does the
stop-list help or hurt it? (issue 38: a rarity-weighted containment as a metric, a small pair model over a few
pair features, the default if either wins on the tune split.)

For each family (lib/families.py) and split, the family's corpus is indexed by `index_corpus` (the store as served:
its stop-list, its sketches; --index-arg changes how, e.g. learn=False for no stop-list). Two sketches are compared
over the values plain containment compares (reference.compared_lengths: below the smaller cap), by:

  containment             shared / the smaller sketch (the store's metric, with its evidence floor);
  jaccard                 shared / the union;
  mutual                  shared / the larger sketch (the metric mutual: low when one text holds much the other
                          lacks);
  rarity containment      each value weighed by log(N / df), N stored articles, df those whose sketch holds it
                          (what the store's postings count): weight shared / the smaller sketch's weight;
  rarity jaccard          weight shared / weight of the union;
  pair model              a logistic regression (jobs/learners.py, as `neardup train` fits) on containment,
                          mutual, jaccard and |log| of the two texts' estimated sizes' ratio
                          (a capped sketch of K values estimates (K - 1) / cap shingles), fitted on the family's
                          tune-split pairs and scored on both splits (in-sample on tune, held out on test).

Each result set is grouped by the service's greedy rule at every threshold of quality_counts.THRESHOLDS, and each
method is read at the family's best threshold (an oracle, as the peers of evaluate_families are): a method that
does not win there cannot win at a learned threshold either.

    python -m benchmarks.similarity_methods [--split tune test] [--family NAME ...] [--index-arg NAME=VALUE ...]
        [--label TEXT]
writes benchmarks/out/similarity_methods[-LABEL].json and .md (also printed).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from benchmarks.evaluate_families import StoreRun, counts_by_scope, index_options
from benchmarks.lib import devcorpus, families, report
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS, ResultSet, greedy_groups
from neardup.core import reference, vocabulary
from neardup.core.encoding import decode_sketch
from neardup.jobs import learners

#: What similarities() gives per pair, in this order; the methods read are these but the size ratio (a model input
#: only), and the pair model.
FEATURES = ("containment", "jaccard", "mutual", "rarity containment", "rarity jaccard", "size ratio")
METHODS = (*FEATURES[:-1], "pair model")
#: The pair model's inputs, among FEATURES.
MODEL_INPUTS = [FEATURES.index(name) for name in ("containment", "mutual", "jaccard", "size ratio")]


class WeightedSketches:
    """A store's sketches (decoded, ascending) and each value's rarity weight log(N / df)."""

    def __init__(self, sketches: dict[str, list[int]], k: int, dropped: frozenset[int] = frozenset()):
        self.k = k
        #: values left out of every comparison (a stop-list applied at compare time; --stoplist-at-compare)
        self.dropped = np.array(sorted(dropped), np.uint64)
        self.values = {doc_id: np.array(sketch, np.uint64) for doc_id, sketch in sketches.items()}
        df = Counter(value for sketch in sketches.values() for value in sketch)
        held = len(sketches)
        self.weights = {doc_id: np.array([np.log(held / df[value]) for value in sketch])
                        for doc_id, sketch in sketches.items()}

    def size(self, values: np.ndarray) -> float:
        """The text's shingle count: exact for a complete sketch, (K - 1) / cap for a full one."""
        return float(len(values)) if len(values) < self.k else (self.k - 1) / ((float(values[-1]) + 1) / 2 ** 32)

    def similarities(self, a: str, b: str) -> tuple[float, ...]:
        """FEATURES for one pair (all 0 when either has no sketch or they share no value)."""
        values_a, values_b = self.values.get(a), self.values.get(b)
        if values_a is None or values_b is None or not len(values_a) or not len(values_b):
            return (0.0,) * len(FEATURES)
        len_a, len_b, floor = reference.compared_lengths(values_a.tolist(), values_b.tolist(), self.k)
        compared_a, weights_a = self._kept(values_a[:len_a], self.weights[a][:len_a])
        compared_b, weights_b = self._kept(values_b[:len_b], self.weights[b][:len_b])
        len_a, len_b = len(compared_a), len(compared_b)
        floor = min(floor, len_a, len_b)
        shared, at_a, _ = np.intersect1d(compared_a, compared_b, assume_unique=True, return_indices=True)
        if not len(shared):
            return (0.0,) * len(FEATURES)
        plain = len(shared)
        weight_shared = float(weights_a[at_a].sum())
        weight_a, weight_b = float(weights_a.sum()), float(weights_b.sum())
        return (plain / max(min(len_a, len_b), floor), plain / (len_a + len_b - plain), plain / max(len_a, len_b),
                weight_shared / max(min(weight_a, weight_b), 1e-12),
                weight_shared / max(weight_a + weight_b - weight_shared, 1e-12),
                abs(np.log(self.size(values_a) / self.size(values_b))))


    def _kept(self, values: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The compared values and their weights but the dropped ones: below the caps, the values of a bottom-K
        sketch that are not dropped are a bottom-K sample of the text's shingles that are not."""
        if not len(self.dropped):
            return values, weights
        kept = ~np.isin(values, self.dropped)
        return values[kept], weights[kept]


class FamilyPairs:
    """One family's labelled result sets of one split and FEATURES for every pair of each (scores[set][f, i, j])."""

    def __init__(self, corpus: families.Corpus, workdir: Path, options: dict, stoplist_at_compare: bool = False):
        dropped: frozenset[int] = frozenset()
        if stoplist_at_compare:
            # the stop-list the store would learn, then sketches of every shingle (learn=False), to drop it from
            (workdir / "stoplist").mkdir(exist_ok=True)
            run = StoreRun(corpus, workdir / "stoplist", options)
            dropped = run.store.stoplist
            run.close()
            options = {**options, "learn": False}
        run = StoreRun(corpus, workdir, options)
        try:
            ids = [doc.id for doc in corpus.docs]
            stored = dict(zip(ids, run.store.get_many(ids)))
            weighted = WeightedSketches({doc_id: decode_sketch(sketch) for doc_id, sketch in stored.items() if sketch},
                                        run.store.config.k, dropped)
        finally:
            run.close()
        self.sets = {scope: [ResultSet.label(corpus.docs, indexes) for indexes in drawn]
                     for scope, drawn in corpus.result_sets.items()}
        self.scores: dict[tuple[int, ...], np.ndarray] = {}
        for result_set in self.sets["overall"]:
            n = len(result_set.indexes)
            scores = np.zeros((len(FEATURES), n, n))
            for i in range(n):
                for j in range(i + 1, n):
                    scores[:, i, j] = scores[:, j, i] = weighted.similarities(ids[result_set.indexes[i]],
                                                                                ids[result_set.indexes[j]])
            self.scores[tuple(result_set.indexes)] = scores

    def model_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The pair model's inputs and labels: every scored pair of the overall sets that shares a value."""
        rows, labels = [], []
        for result_set in self.sets["overall"]:
            scores = self.scores[tuple(result_set.indexes)]
            upper = np.triu_indices(len(result_set.indexes), 1)
            pairs = scores[:, upper[0], upper[1]].T
            chosen = result_set.scored & (pairs[:, 0] > 0)
            rows.append(pairs[chosen][:, MODEL_INPUTS])
            labels.append(result_set.duplicate[chosen])
        return np.concatenate(rows), np.concatenate(labels)

    def best(self, model: learners.Logistic) -> dict[str, dict]:
        """Per method, its F1 at its best threshold over the overall sets, and that threshold."""

        def scored(indexes: list[int], method: int) -> np.ndarray:
            scores = self.scores[tuple(indexes)]
            if METHODS[method] != "pair model":
                return scores[method]
            inputs = np.moveaxis(scores[MODEL_INPUTS], 0, -1)
            return np.where(scores[0] > 0, model.probability(inputs.reshape(-1, len(MODEL_INPUTS))).reshape(
                scores.shape[1:]), 0.0)

        best = {}
        for m, method in enumerate(METHODS):
            counts = counts_by_scope({"overall": self.sets["overall"]},
                                     lambda indexes, m=m: greedy_groups(scored(indexes, m), THRESHOLDS),
                                     len(THRESHOLDS))["overall"]
            at = int(np.argmax(counts.f1()))
            best[method] = {"f1": float(counts.f1()[at]), "threshold": float(THRESHOLDS[at])}
        return best


def markdown(results: dict, command: str) -> str:
    lines = [f"Measured with `{command}` ({results['seconds']:.0f} s); stores indexed with "
             f"{results['index_options'] or 'the defaults'}"
             f"{', every shingle sketched and the stop-list left out at compare time' if results['stoplist_at_compare'] else ''}. F1 at each method's best threshold per family (the "
             "threshold after @); the same stores and sketches for all; the pair model fitted on the tune split "
             "(held out on test).", ""]
    header = ["split", "family", *METHODS]
    rows = []
    for split, by_family in results["splits"].items():
        for family, best in by_family.items():
            top = max(best[m]["f1"] for m in METHODS)
            rows.append([split, family, *((lambda cell: f"**{cell}**" if best[m]["f1"] == top else cell)(
                f"{best[m]['f1']:.3f}@{best[m]['threshold']:.2f}") for m in METHODS)])
    return "\n".join(lines + report.table(header, rows)) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, nargs="+", default=list(devcorpus.SPLITS))
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(families.FAMILIES))
    parser.add_argument("--index-arg", action="append", default=[], metavar="NAME=VALUE",
                        help="an option of neardup.jobs.index.index_corpus, a field of its IndexOptions (repeatable), "
                             "e.g. learn=False")
    parser.add_argument("--stoplist-at-compare", action="store_true",
                        help="sketch every shingle (learn=False) and leave the stop-list the store would learn out of "
                             "each comparison instead")
    parser.add_argument("--label", default="", help="added to the output files' names (e.g. no-stoplist)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    try:
        options = index_options(args.index_arg)
    except ValueError as error:
        parser.error(str(error))
    started = time.perf_counter()
    results: dict = {"metric_default": vocabulary.DEFAULT_METRIC, "index_options": options,
                     "stoplist_at_compare": args.stoplist_at_compare, "splits": {}}
    with tempfile.TemporaryDirectory(prefix="neardup-methods-") as workdir:
        for family in args.family:
            pairs = {split: FamilyPairs(families.build(family, split), Path(workdir), options,
                                        args.stoplist_at_compare)
                     for split in devcorpus.SPLITS}
            model = learners.fit_logistic(*pairs["tune"].model_rows())
            for split in args.split:
                best = pairs[split].best(model)
                results["splits"].setdefault(split, {})[family] = best
                print(f"  {split} {family}: " + ", ".join(f"{m} {b['f1']:.3f}" for m, b in best.items()),
                      file=sys.stderr)
    results["seconds"] = time.perf_counter() - started
    command = " ".join(["python -m benchmarks.similarity_methods --split", *args.split,
                        *(["--family", *args.family] if args.family != list(families.FAMILIES) else []),
                        *(f"--index-arg {pair}" for pair in args.index_arg),
                        *(["--stoplist-at-compare"] if args.stoplist_at_compare else []),
                        *([f"--label {args.label}"] if args.label else [])])
    text = markdown(results, command)
    report.save(args.out, "similarity_methods" + (f"-{args.label}" if args.label else ""), results, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
