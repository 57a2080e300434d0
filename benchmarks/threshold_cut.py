"""Where in an empty stretch the learned threshold should cut (docs/threshold.md, rule 3), family by family.

    python -m benchmarks.threshold_cut [--split tune test] [--family NAME ...] [--out benchmarks/out]

Where the nearest-neighbour similarities of a store's sample leave an empty stretch between the chance mode and the
near-duplicate mode, every valley in it separates the sample equally well (calibration.equal_valleys) and the rule
takes the middle one: the sample cannot say where in the stretch the pairs of the result sets divide. This
measures what each position would give. Per family (lib/families.py), its store is made and its result sets grouped
as evaluate_families.py does (F1 at every threshold of quality_counts.THRESHOLDS, which holds every valley centre);
the store's sample is searched as `neardup index` searches it (SimilarSearch.sample_similarities); reported: F1
at the lowest, the middle (the rule), three quarters up and the highest of the equal valleys, beside the family's
best threshold, and each position's mean over the families. Writes threshold_cut.json and .md.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.evaluate_families import evaluate_family
from benchmarks.lib import devcorpus, families
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS
from benchmarks.lib.report import save, table
from neardup.core import calibration
from neardup.jobs.threshold import SAMPLE_DOCUMENTS
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.store import open_store

#: Positions in the equal valleys, ascending: (name, index of n).
POSITIONS = (("lowest", lambda n: 0), ("middle (the rule)", lambda n: n // 2), ("three quarters", lambda n: 3 * n // 4),
             ("highest", lambda n: n - 1))


def family_cuts(name: str, split: str, work: Path) -> dict:
    """The family's F1 at each position of its equal valleys (none where the rule learns otherwise), and at best."""
    corpus = families.build(name, split)
    result = evaluate_family(corpus, work, {}, None, checkpoints=())
    f1 = result["counts"]["neardup sweep"]["overall"].f1()
    with open_store(work / f"{name}-{split}.store", readonly=True) as store:
        nearest, _ = SimilarSearch(ServedStore(store)).sample_similarities(SAMPLE_DOCUMENTS)
        valleys = calibration.equal_valleys(nearest)
    served = result["store"]["served"]["threshold"]

    def at(threshold: float) -> dict:
        return {"threshold": round(float(threshold), 4), "f1": float(f1[np.argmin(np.abs(THRESHOLDS - threshold))])}

    cuts = {position: at(valleys[index(len(valleys))]) if len(valleys) else at(served)
            for position, index in POSITIONS}
    best = int(np.argmax(f1))
    return {"valleys": [round(float(v), 4) for v in valleys], "served": served, "cuts": cuts,
            "best": {"threshold": float(THRESHOLDS[best]), "f1": float(f1[best])}}


def report_lines(results: dict) -> list[str]:
    lines = []
    for split, by_family in results.items():
        rows = [[name, f"{row['valleys'][0]:.4g}–{row['valleys'][-1]:.4g}" if row["valleys"] else "—",
                 *(f"{row['cuts'][p]['f1']:.3f} at {row['cuts'][p]['threshold']:.4g}" for p, _ in POSITIONS),
                 f"{row['best']['f1']:.3f} at {row['best']['threshold']:.2f}"] for name, row in by_family.items()]
        rows.append(["**mean**", "", *(f"{np.mean([row['cuts'][p]['f1'] for row in by_family.values()]):.4f}"
                                       for p, _ in POSITIONS), ""])
        lines += [f"**{split} split**", "", *table(["family", "equal valleys", *(p for p, _ in POSITIONS), "best"], rows),
                  ""]
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, nargs="+", default=["tune", "test"])
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(families.FAMILIES))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results = {}
    for split in args.split:
        results[split] = {}
        for name in args.family:
            print(f"threshold_cut: {name} ({split})", flush=True)
            with tempfile.TemporaryDirectory(prefix="threshold-cut-") as work:
                results[split][name] = family_cuts(name, split, Path(work))
    command = " ".join(["python -m benchmarks.threshold_cut --split", *args.split,
                        *(["--family", *args.family] if args.family != list(families.FAMILIES) else [])])
    text = "\n".join([f"`{command}`: F1 of each family's result sets with the learned threshold at each position "
                      "of the equal valleys of its store's sample (— where the rule learns by another step: every "
                      "column is the learned threshold).", "", *report_lines(results)])
    save(args.out, "threshold_cut", {"command": command, "splits": results,
                                     "seconds": round(time.perf_counter() - started, 1)}, text)
    print(text)
    return results


if __name__ == "__main__":
    main()
