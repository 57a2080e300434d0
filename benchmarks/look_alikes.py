"""Why a family's learned default misses its best threshold (issue 38: the learned threshold within 0.02 of each
family's best, or which family cannot be learned without answers and why): what lies between the two cuts.

    python -m benchmarks.look_alikes [--split test tune] [--family template derived] [--seeds 5 6 7 8 9 10]
                                     [--out DIR]

Per draw of a family (the split's own draw, then `--seeds`): its store made and its result sets grouped as
evaluate_families does; F1 at the store's learned default and at its best threshold; and in the band between the
two cuts, the pairs of copies (one group of the truth) and of look-alikes (distinct texts of one template or one
licence lineage), counted twice: among the candidates of the articles the store samples to learn its threshold
(SimilarSearch.sampled_matches, as `neardup index` searches them, under the served metric) and among the result
sets' pairs. The sample carries no labels: where its band holds both copies and look-alikes, a cut moved through it
trades the ones for the others, and how many of each lie there (which way is right) is what the answers say.
Writes look_alikes.json and .md.
"""
from __future__ import annotations

import argparse
import itertools
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.evaluate_families import evaluate_family
from benchmarks.lib import devcorpus, families
from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS
from benchmarks.lib.report import save, table
from neardup.core import calibration, kernel
from neardup.jobs.threshold import SAMPLE_DOCUMENTS
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.store import open_store

DEFAULT_SEEDS = (5, 6, 7, 8, 9, 10)
#: How near the best threshold's F1 the default must be (issue 38, deliver 3).
WITHIN = 0.02
#: Pair kinds, by what the two texts share: one group of the truth, or one template or lineage (the doc's site).
COPIES, LOOK_ALIKES = "copies", "look-alikes"


def pair_kind(a: Doc, b: Doc) -> str:
    """COPIES, LOOK_ALIKES, or "" (texts that share neither)."""
    if a.group == b.group:
        return COPIES
    return LOOK_ALIKES if a.site and a.site == b.site else ""


def in_band(similarities: list[tuple[float, str]], low: float, high: float) -> dict[str, int]:
    """Per pair kind, how many of (similarity, kind) lie in [low, high)."""
    return {kind: sum(low <= s < high and k == kind for s, k in similarities) for kind in (COPIES, LOOK_ALIKES)}


def draw(name: str, split: str, seed: int | None, work: Path) -> dict:
    """One draw's cuts, F1 at each (evaluate_family's store and curves) and what its band holds."""
    corpus = families.build(name, split, seed)
    docs = corpus.docs
    counts = evaluate_family(corpus, work, {}, None, checkpoints=())["counts"]
    served, curve = counts["neardup default"]["overall"].f1()[0], counts["neardup sweep"]["overall"].f1()
    best = int(np.argmax(curve))
    position = {doc.id: i for i, doc in enumerate(docs)}
    with open_store(work / f"{corpus.family}-{corpus.split}.store", readonly=True) as store:
        search = SimilarSearch(ServedStore(store))
        defaults = search.served.defaults
        low, high = sorted((defaults.threshold, float(THRESHOLDS[best])))
        params = SimilarParams(top_k=calibration.CANDIDATES, threshold=calibration.SEARCH_FLOOR,
                               metric=defaults.metric)
        # each candidate pair once, though both of its articles may be sampled
        sampled = {frozenset((doc_id, match.id)): (match.similarity, pair_kind(docs[position[doc_id]],
                                                                               docs[position[match.id]]))
                   for doc_id, matches in search.sampled_matches(SAMPLE_DOCUMENTS, params, calibration.CANDIDATES)
                   for match in matches}
        pairs = sorted({pair for indexes in corpus.result_sets["overall"]
                        for pair in itertools.combinations(sorted(indexes), 2)})
        sketches = dict(zip(position, store.get_many(list(position))))
        in_sets = [(kernel.similarity(sketches[docs[i].id], sketches[docs[j].id], store.config.k, defaults.metric),
                    pair_kind(docs[i], docs[j])) for i, j in pairs]
    return {"seed": seed, "metric": defaults.metric, "threshold": defaults.threshold, "f1": float(served),
            "best": {"threshold": float(THRESHOLDS[best]), "f1": float(curve[best])},
            "sample": in_band(list(sampled.values()), low, high), "result sets": in_band(in_sets, low, high)}


def missed(row: dict) -> bool:
    """Whether the default's F1 lies more than WITHIN below the best threshold's."""
    return row["best"]["f1"] - row["f1"] > WITHIN


def report_lines(results: dict) -> list[str]:
    """Per split and family, a row per draw, and how many draws miss."""
    lines = []
    for split, by_family in results.items():
        for name, draws in by_family.items():
            rows = [["own" if row["seed"] is None else str(row["seed"]), f"{row['metric']} {row['threshold']:.4g}",
                     f"{row['f1']:.3f}", f"{row['best']['f1']:.3f} at {row['best']['threshold']:.4g}",
                     "**yes**" if missed(row) else "no",
                     *(f"{row[where][COPIES]} / {row[where][LOOK_ALIKES]}" for where in ("sample", "result sets"))]
                    for row in draws]
            lines += [f"**{name}, {split} split**: the default more than {WITHIN} below the best threshold in "
                      f"{sum(map(missed, draws))} draws of {len(draws)}", "",
                      *table(["draw", "learned default", "F1", "best threshold", f"missed by > {WITHIN}",
                              "sample: copies / look-alikes between the cuts",
                              "result sets: copies / look-alikes between the cuts"], rows), ""]
    return lines


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, nargs="+", default=["test", "tune"])
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=["template", "derived"])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    results: dict = {}
    for split, name in itertools.product(args.split, args.family):
        for seed in [None, *args.seeds]:
            print(f"look_alikes: {name} ({split}, draw {'own' if seed is None else seed})", flush=True)
            with tempfile.TemporaryDirectory(prefix="look-alikes-") as work:
                results.setdefault(split, {}).setdefault(name, []).append(draw(name, split, seed, Path(work)))
    command = " ".join(["python -m benchmarks.look_alikes --split", *args.split, "--family", *args.family,
                        "--seeds", *map(str, args.seeds)])
    text = "\n".join([
        f"Measured with `{command}` ({time.perf_counter() - started:.0f} s).", "",
        "Per draw: F1 at the store's learned default and at its best threshold (an oracle); between the two cuts, "
        "the pairs of copies and of look-alikes (distinct texts of one template or lineage) among the candidates of "
        "the articles the store samples to learn its threshold (unlabelled: all it learns from), and among the "
        "result sets' pairs.", "", *report_lines(results)])
    save(args.out, "look_alikes", {"command": command, "splits": results,
                                   "seconds": round(time.perf_counter() - started, 1)}, text)
    print(text)
    return results


if __name__ == "__main__":
    main()
