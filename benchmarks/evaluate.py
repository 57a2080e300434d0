"""Detection quality as the service delivers it: neardup's one default against the usual baselines, each
baseline at its own best threshold, on the development corpus's test split (benchmarks.lib.devcorpus).

Each method scores every pair of a result set; the service's greedy grouping (reference.dedup's rule) turns the
scores into groups at each threshold; a pair is predicted a duplicate when both land in one group. Pairwise
precision, recall and F1 are micro-averaged over result sets of ~100 (devcorpus_sets.draw_result_sets): overall on
mixed sets, and per scope (edit family, edit rate, length of the original, language) on sets whose duplicates
all come from that scope. Hard negatives are in every set: pages of one site, sections of one article (their
pairs count as false positives when grouped), and template variants (near-duplicates *as text*: their pairs
are left out of F1 and the share grouped is reported apart, as separating them needs fields).

Baselines see the same grouping: datasketch MinHash (128 permutations over word 5-grams, its Jaccard estimate scored
over 8 hash seeds: quality_methods.MINHASH_SEEDS), exact word 5-gram Jaccard and containment, and 64-bit SimHash
(restated in lib/quality_methods.py; PyPI `simhash` breaks under numpy 2). neardup's stop-list is learned over the
whole split with core/stoplist.py, as `neardup index` does. neardup's own SimHash (a store made by `neardup index
--sketch simhash`: the default configuration's word 3-gram shingles and stop-list, one 64-bit fingerprint, each
shingle weighing as a new simhash store weighs it, metric hamming) sits beside them at its best threshold, and is
also reported per Hamming distance, at a simhash store's default (core/defaults.py) and at 3 bits (the most its
corpus search finds exactly).

    python -m benchmarks.evaluate [--split test|tune] [--quick] [--explore]
writes benchmarks/out/quality-SPLIT.md (also printed), quality-SPLIT.json and quality-SPLIT_pr.png.
`--explore` adds the neardup configurations the default was chosen among, and SimHash under each shingle
weighting (vocabulary.WEIGHTINGS; run it on --split tune).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.lib import devcorpus, devcorpus_sets
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS, ResultSet, evaluate
from benchmarks.lib.quality_methods import (DEFAULT_CONFIG, EXPLORED, NeardupMethods, exact_method, minhash_method,
                                            simhash_method)
from benchmarks.lib.quality_report import markdown, plot, summary
from benchmarks.lib.sources import SourceMissing
from neardup.core import vocabulary
from neardup.runtime.served_store import ServedStore
from neardup.jobs.index import index_corpus
from neardup.store import open_store


def result_sets(docs: list[devcorpus.Doc], quick: bool, seed: int) -> dict[str, list[ResultSet]]:
    """Labelled result sets: mixed ones ('overall') and, per scope, sets whose duplicates all come from it."""
    overall, per_scope = (30, 8) if quick else (120, 30)
    scopes = {"overall": None, **devcorpus_sets.scopes(), **devcorpus_sets.language_scopes(docs)}
    sets = {}
    for number, (name, scope) in enumerate(scopes.items()):
        drawn = devcorpus_sets.draw_result_sets(docs, overall if scope is None else per_scope, seed + number,
                                                scope=scope)
        if drawn:
            sets[name] = [ResultSet.label(docs, indexes) for indexes in drawn]
    return sets


def served_threshold(docs: list[devcorpus.Doc]) -> float:
    """The threshold a server of this corpus applies: what `neardup index` learns into a new store of it."""
    with tempfile.TemporaryDirectory() as workdir:
        corpus = Path(workdir) / "corpus.jsonl"
        devcorpus.write_jsonl(docs, corpus)
        index_corpus(str(corpus), str(Path(workdir) / "store"))
        with open_store(Path(workdir) / "store", readonly=True) as store:
            return ServedStore(store).defaults.threshold


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="test",
                        help="test (the report; never tuned on) or tune (where defaults are chosen)")
    parser.add_argument("--quick", action="store_true", help="fewer result sets, no exploration")
    parser.add_argument("--explore", action="store_true", help="also the neardup configurations of EXPLORED")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        docs = devcorpus.generate(args.split)
    except SourceMissing as missing:
        parser.exit(2, f"evaluate: {missing}\n")
    sets = result_sets(docs, args.quick, devcorpus.SPLIT_SEEDS[args.split])
    neardup = NeardupMethods(docs)
    served = served_threshold(docs)
    default = neardup.method(DEFAULT_CONFIG, served)
    default.name = (f"neardup as served ({DEFAULT_CONFIG.label.removeprefix('neardup ')}, the threshold its store "
                    f"learned: {served:g})")
    baselines = [minhash_method(docs), exact_method(docs, vocabulary.JACCARD),
                 exact_method(docs, vocabulary.CONTAINMENT), simhash_method(docs)]
    neardup_simhash = neardup.simhash_method()
    explored = [neardup.method(c) for c in EXPLORED if c != DEFAULT_CONFIG] if args.explore else []
    weightings = [neardup.simhash_method(weighting) for weighting in vocabulary.WEIGHTINGS] if args.explore else []
    rows = {}
    for method in [default, *baselines, neardup_simhash, *weightings, *explored]:
        rows[method.name] = summary(method, evaluate(method, sets))
        print(f"  {method.name}: best F1 {rows[method.name]['best']['f1']:.3f} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    command = f"python -m benchmarks.evaluate --split {args.split}" + (" --quick" if args.quick else "") + \
        (" --explore" if args.explore else "")
    corpus_note = (f"{args.split} split, seed {devcorpus.SPLIT_SEEDS[args.split]}: {len(docs)} documents, "
                   f"{sum(len(s) for s in sets.values())} result sets of ~100, Python {sys.version.split()[0]}")
    table = markdown(rows[default.name], [rows[b.name] for b in baselines],
                     [rows[default.name]] + [rows[m.name] for m in explored] if explored else [],
                     command, corpus_note, rows[neardup_simhash.name], [rows[m.name] for m in weightings])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"quality-{args.split}"
    (args.out / f"{stem}.md").write_text(table, encoding="utf-8")
    (args.out / f"{stem}.json").write_text(json.dumps(
        {"command": command, "corpus": corpus_note, "thresholds": THRESHOLDS.tolist(), "methods": rows},
        indent=1), encoding="utf-8")
    plot([rows[default.name]] + [rows[b.name] for b in baselines] + [rows[neardup_simhash.name]],
         args.out / f"{stem}_pr.png")
    print(table)


if __name__ == "__main__":
    main()
