"""Detection quality on the issue-25 families (lib/families.py), through the product's own path.

For each family and split the corpus is written as JSON Lines, indexed with neardup.jobs.index.index_corpus into a
temporary LMDB store (with the --index-arg options), and each result set of ~100 ids is grouped as the server groups
it: the store opened, neardup.runtime.deduplicator.Deduplicator.dedup_ids with the store's own defaults
(ServedStore.defaults, so a threshold the store learned applies by itself), or --threshold. neardup is also run
at every threshold of quality_counts.THRESHOLDS (same store, same call) for its best threshold per family (an
oracle). The baselines of evaluate.py (lib/quality_methods.py: MinHash 128 word 5-gram over 8 hash seeds, exact
word 5-gram Jaccard and containment, SimHash char 4-gram) group each set with the same greedy rule at each family's
own best threshold (a per-family oracle).
Pairwise precision, recall and F1 are micro-averaged over the sets: per family, per scope within a family (popular:
copies per story; shared: licences, manual pages, sites; short: rewrite rate; multilingual: language; template:
the pages' package; derived: licence versions; length of the original), and over all families (each baseline at
its one best threshold over all of them).

    python -m benchmarks.evaluate_families [--split tune test] [--family NAME ...] [--threshold T]
        [--index-arg NAME=VALUE ...] [--label TEXT]
writes benchmarks/out/families-SPLIT[-LABEL].json and .md (also printed).
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks.lib import devcorpus, families, report
from benchmarks.lib.answers import answer_and_train
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import THRESHOLDS, Counts, ResultSet, add_grouping, greedy_groups
from benchmarks.lib.quality_methods import MINHASH_SCORED, Method, exact_method, minhash_method, simhash_method
from benchmarks.lib.sources import SourceMissing
from neardup.core import kernel, vocabulary
from neardup.runtime.deduplicator import Deduplicator
from neardup.runtime.params import DedupParams
from neardup.runtime.served_store import ServedStore
from neardup.core.errors import NearDupError
from neardup.jobs.index import IndexOptions, index_corpus
from neardup.jobs.train import OTHER_STOPLISTS
from neardup.store import open_store

#: A user's answers after which the store is trained and served again (lib/answers.py).
ANSWER_CHECKPOINTS = (30, 60)

def index_options(pairs: list[str]) -> dict:
    """NAME=VALUE pairs as index_corpus options (fields of IndexOptions): VALUE a Python literal (False, 0.002,
    'word:3') or else a string; ValueError names a pair that is malformed or an option IndexOptions does not hold."""
    accepted = [field.name for field in dataclasses.fields(IndexOptions)]
    options = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--index-arg {pair!r} is not NAME=VALUE")
        if name not in accepted:
            raise ValueError(f"--index-arg {name!r} is no option of index_corpus (IndexOptions); use one of "
                             f"{', '.join(accepted)}")
        try:
            options[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            options[name] = value
    return options


class StoreRun:
    """One family's corpus indexed into a store, its result sets grouped by the store's Deduplicator."""

    def __init__(self, corpus: families.Corpus, workdir: Path, options: dict):
        self.corpus = corpus.write_jsonl(workdir / f"{corpus.family}-{corpus.split}.jsonl")
        self.path = workdir / f"{corpus.family}-{corpus.split}.store"
        self.options = options
        self.summary = index_corpus(str(self.corpus), str(self.path), IndexOptions(**options))
        self.ids = [doc.id for doc in corpus.docs]
        self.open()

    def open(self) -> None:
        """The store as it is now (its defaults too: what a user's answers trained since)."""
        self.store = open_store(self.path, readonly=True)
        self.deduplicator = Deduplicator(ServedStore(self.store))

    def groups(self, indexes: list[int], params: list[DedupParams]) -> np.ndarray:
        """groups[p, position]: the position standing for each result's group under params[p], as Dedup
        answers (kernel.unpack of the packed grouping)."""
        ids = [self.ids[i] for i in indexes]
        return np.array([kernel.unpack(self.deduplicator.dedup_ids(ids, p).packed_grouping).group for p in params])

    def close(self) -> None:
        self.store.close()

    def reindexed(self, stoplist: str, options: dict) -> Path:
        """The corpus indexed again into a new store with another stop-list (jobs.train.OTHER_STOPLISTS), with the
        options train's advice names (`options`: IndexOptions fields), as a user does when train advises it; its
        path."""
        path = self.path.with_name(f"{self.path.stem}-{stoplist.replace(' ', '-')}.store")
        shutil.rmtree(path, ignore_errors=True)  # made for an earlier advice: indexed anew, untrained
        index_corpus(str(self.corpus), str(path), IndexOptions(**{**self.options, **options}))
        return path


def counts_by_scope(sets: dict[str, list[ResultSet]], group: Callable[[list[int]], np.ndarray],
                    size: int) -> dict[str, Counts]:
    """Pair counts per scope, each result set grouped by `group` (one row per threshold)."""
    result = {}
    for scope, scope_sets in sets.items():
        counts = Counts.empty(size)
        for result_set in scope_sets:
            add_grouping(counts, result_set, group(result_set.indexes))
        result[scope] = counts
    return result


def merged(all_counts: list[Counts]) -> Counts:
    """Pair counts summed over families (micro-averaging over all their result sets)."""
    total = Counts.empty(len(all_counts[0].tp))
    for counts in all_counts:
        total.tp, total.fp, total.fn = total.tp + counts.tp, total.fp + counts.fp, total.fn + counts.fn
        for kind in total.negatives:
            total.negatives[kind] += counts.negatives[kind]
            total.negatives_grouped[kind] = total.negatives_grouped[kind] + counts.negatives_grouped[kind]
    return total


def figures(counts: Counts, index: int) -> dict:
    return {"precision": float(counts.precision()[index]), "recall": float(counts.recall()[index]),
            "f1": float(counts.f1()[index]),
            "site_grouped": float(counts.negatives_grouped["site"][index] / max(1, counts.negatives["site"])),
            "topic_grouped": float(counts.negatives_grouped["topic"][index] / max(1, counts.negatives["topic"]))}


def evaluate_family(corpus: families.Corpus, workdir: Path, options: dict, threshold: float | None,
                    checkpoints: tuple[int, ...] = ANSWER_CHECKPOINTS) -> dict:
    """Per scope: neardup at the store's default (or `threshold`) and at its best threshold; after a user's answers
    (lib/answers.py: `neardup label`'s proposals answered from the truth, `neardup train` at each checkpoint), at
    the store's defaults then; each baseline at its best threshold. Also the store's facts (stop-list, default
    threshold, what each training chose) and the curves' counts."""
    docs = corpus.docs
    sets = {scope: [ResultSet.label(docs, indexes) for indexes in drawn] for scope, drawn in corpus.result_sets.items()}
    run = StoreRun(corpus, workdir, options)
    served_counts, trained = {}, {}

    def served(name: str, params: DedupParams) -> None:
        served_counts[name] = counts_by_scope(sets, lambda indexes: run.groups(indexes, [params]), 1)

    try:
        defaults = run.deduplicator.served.defaults
        if threshold is not None:
            defaults = dataclasses.replace(defaults, threshold=threshold)
        sweep = [dataclasses.replace(defaults, threshold=float(t)) for t in THRESHOLDS]
        served("neardup default", defaults)
        sweep_counts = counts_by_scope(sets, lambda indexes: run.groups(indexes, sweep), len(THRESHOLDS))
        store_facts = {"documents": run.summary.documents, "stoplist_size": run.summary.stoplist_size,
                       "stoplisted_occurrences": run.summary.stoplisted_occurrences,
                       "served": dataclasses.asdict(defaults), "index_seconds": round(run.summary.elapsed, 2)}
    finally:
        run.close()

    def after_answers(count: int, report: dict, store: Path) -> None:
        run.path = store
        run.open()
        try:
            served(f"neardup {count} answers", run.deduplicator.served.defaults)
            trained[str(count)] = {**report, "served": dataclasses.asdict(run.deduplicator.served.defaults)}
        finally:
            run.close()

    if checkpoints:
        group_of = {doc.id: doc.group for doc in docs}
        answer_and_train(run.path, group_of, workdir / f"{corpus.family}-{corpus.split}.answers.jsonl", checkpoints,
                         after_answers, run.corpus, run.reindexed)
    store_facts["answers"] = trained
    baselines = {method.name: counts_by_scope(sets, lambda indexes, m=method: greedy_groups(
        m.pair_matrix(indexes), THRESHOLDS), len(THRESHOLDS)) for method in baseline_methods(docs)}
    return {"store": store_facts, "documents": len(docs), "result_sets": {s: len(v) for s, v in sets.items()},
            "counts": {**served_counts, "neardup sweep": sweep_counts, **baselines}}


def baseline_methods(docs) -> list[Method]:
    return [minhash_method(docs), exact_method(docs, vocabulary.JACCARD), exact_method(docs, vocabulary.CONTAINMENT),
            simhash_method(docs)]


def scope_rows(counts: dict[str, dict[str, Counts]]) -> dict[str, dict]:
    """Per scope: neardup at its default, neardup and each baseline at that scope's best threshold."""
    rows = {}
    for scope in counts["neardup default"]:
        row = {}
        for name, by_scope in counts.items():
            if len(by_scope[scope].tp) == 1:  # served at one setting: the store's defaults
                row[name] = figures(by_scope[scope], 0)
                continue
            best = int(np.argmax(by_scope[scope].f1()))
            row[name] = {"threshold": float(THRESHOLDS[best]), **figures(by_scope[scope], best)}
        rows[scope] = row
    return rows


def _answered(figures_after: dict, trained: dict) -> str:
    """F1 after a user's answers, and what the store then served (or why training left it unchanged)."""
    served = trained["served"]
    setting = "unchanged" if trained["refused"] else f"{served['metric']} {served['threshold']:g}"
    if trained.get("reindexed"):
        setting += f", store re-indexed {OTHER_STOPLISTS[trained['reindexed']].sketched}"
    return f"{figures_after['f1']:.3f} ({setting})"


def best_peer(row: dict) -> tuple[str, dict]:
    """The baseline of the best F1 in a scope's row, and its figures."""
    name = max((n for n in row if not n.startswith("neardup")), key=lambda n: row[n]["f1"])
    return name, row[name]


def markdown(results: dict, command: str, note: str) -> str:
    lines = [f"Measured with `{command}` ({note}).", "",
             "neardup as served: the store made by `index_corpus`, result sets grouped by `Deduplicator.dedup_ids` "
             "at the store's defaults (threshold in the last column); *best threshold*: the same store and call at "
             "the family's best threshold (an oracle); peers (MinHash, exact 5-gram Jaccard and containment, "
             f"SimHash) at each family's own best threshold ({MINHASH_SCORED}). F1 (precision / recall); *site "
             "grouped*: share of pairs of distinct texts that share a site, package, disclaimer, template or licence "
             "lineage put in one group.", ""]
    checkpoints = results["answer_checkpoints"]
    header = ["family", "neardup default", "neardup best threshold", "best peer, best threshold", "margin",
              *(f"after {count} answers" for count in checkpoints), "site grouped", "stop-list", "served threshold"]
    rows = []
    for family, result in results["families"].items():
        row = result["scopes"]["overall"]
        default, best = row["neardup default"], row["neardup sweep"]
        name, peer = best_peer(row)
        store = result["store"]
        rows.append([family, f"**{default['f1']:.3f}** ({default['precision']:.2f} / {default['recall']:.2f})",
                     f"{best['f1']:.3f} at {best['threshold']:.2f}",
                     f"{peer['f1']:.3f} ({name}, {peer['threshold']:.2f})", f"{default['f1'] - peer['f1']:+.3f}",
                     *(_answered(row[f"neardup {count} answers"], store["answers"][str(count)])
                       for count in checkpoints),
                     f"{default['site_grouped']:.1%}", f"{store['stoplist_size']:,}",
                     f"{store['served']['threshold']:g}"])
    overall = results["overall"]
    name, peer = best_peer(overall)
    rows.append(["**all families**", f"**{overall['neardup default']['f1']:.3f}** "
                 f"({overall['neardup default']['precision']:.2f} / {overall['neardup default']['recall']:.2f})",
                 f"{overall['neardup sweep']['f1']:.3f} at {overall['neardup sweep']['threshold']:.2f}",
                 f"{peer['f1']:.3f} ({name}, {peer['threshold']:.2f})",
                 f"{overall['neardup default']['f1'] - peer['f1']:+.3f}",
                 *(f"{overall[f'neardup {count} answers']['f1']:.3f}" for count in checkpoints),
                 f"{overall['neardup default']['site_grouped']:.1%}", "", ""])
    mean = results["family_mean"]
    name = max((n for n in mean if not n.startswith("neardup")), key=mean.get)
    rows.append(["**mean of families**", f"**{mean['neardup default']:.3f}**", f"{mean['neardup sweep']:.3f}",
                 f"{mean[name]:.3f} ({name})", f"{mean['neardup default'] - mean[name]:+.3f}",
                 *(f"{mean[f'neardup {count} answers']:.3f}" for count in checkpoints), "", "", ""])
    lines += report.table(header, rows)
    lines += ["", "*All families*: pairs summed over every family's result sets (a set of 100 copies of one story "
              "holds 4,950 pairs, so `popular` weighs most), neardup at its one best threshold over all, each peer "
              "at its one best threshold over all. *Mean of families*: the families' F1 averaged, each method at each "
              "family's own best threshold (neardup default: as served). *After N answers*: `neardup label`'s own "
              "proposals on the family's store answered from the truth (same group or not), `neardup train "
              "--corpus` run on them, and the store served at what it then holds (metric and threshold; *unchanged* "
              "where train refused); where train advised re-indexing with another stop-list (none, or one that "
              "counts copies of one text each), the user did, trained the new store on the same answers and "
              "labelled on there (*store re-indexed ...*), as again where train advised the other one later; "
              "the same answers file goes on from 30 to 60 (benchmarks/lib/answers.py)."]
    lines += ["", "**Per scope** (F1; neardup at its default, the others at the scope's own best threshold).", ""]
    scope_header = ["family", "scope", "sets", "neardup default", "neardup best", "best peer", "margin"]
    scope_lines = []
    for family, result in results["families"].items():
        for scope, row in result["scopes"].items():
            if scope == "overall":
                continue
            name, peer = best_peer(row)
            default = row["neardup default"]
            scope_lines.append([family, scope, str(result["result_sets"][scope]),
                                f"{default['f1']:.3f} ({default['precision']:.2f} / {default['recall']:.2f})",
                                f"{row['neardup sweep']['f1']:.3f}@{row['neardup sweep']['threshold']:.2f}",
                                f"{peer['f1']:.3f}@{peer['threshold']:.2f} {name}",
                                f"{default['f1'] - peer['f1']:+.3f}"])
    lines += report.table(scope_header, scope_lines)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, nargs="+", default=["tune", "test"])
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(families.FAMILIES))
    parser.add_argument("--threshold", type=float, help="serve at this threshold instead of the store's default")
    parser.add_argument("--index-arg", action="append", default=[], metavar="NAME=VALUE",
                        help="an option of neardup.jobs.index.index_corpus, a field of its IndexOptions (repeatable), "
                             "e.g. learn=False")
    parser.add_argument("--answers", type=int, nargs="*", default=list(ANSWER_CHECKPOINTS), metavar="COUNT",
                        help="train on a user's simulated answers after each COUNT and serve again (default: "
                             f"{' '.join(map(str, ANSWER_CHECKPOINTS))}; none: skip)")
    parser.add_argument("--seed", type=int, help="draw the copies and result sets with this seed instead of the "
                        "split's own (the split's source texts all the same): how much a figure owes to one draw")
    parser.add_argument("--label", default="", help="added to the output files' names (e.g. no-stoplist)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.threshold is not None and not 0.0 <= args.threshold <= 1.0:
        parser.error("--threshold must be in [0, 1]")
    try:
        options = index_options(args.index_arg)
    except ValueError as error:
        parser.error(str(error))
    command = "python -m benchmarks.evaluate_families" + " ".join(
        [""] + [f"--split {' '.join(args.split)}"]
        + ([f"--family {' '.join(args.family)}"] if args.family != list(families.FAMILIES) else [])
        + [f"--index-arg {a}" for a in args.index_arg]
        + ([f"--threshold {args.threshold:g}"] if args.threshold is not None else [])
        + ([f"--seed {args.seed}"] if args.seed is not None else [])
        + ([f"--answers {' '.join(map(str, args.answers))}"] if sorted(args.answers) != list(ANSWER_CHECKPOINTS)
           else []))
    for split in args.split:
        started = time.perf_counter()
        results: dict = {"command": command, "split": split, "index_options": {k: repr(v) for k, v in options.items()},
                         "answer_checkpoints": sorted(args.answers), "families": {}}
        all_counts: dict[str, list[Counts]] = {}
        with tempfile.TemporaryDirectory(prefix="neardup-families-") as workdir:
            for family in args.family:
                try:
                    corpus = families.build(family, split, args.seed)
                except SourceMissing as missing:
                    parser.exit(2, f"evaluate_families: {missing}\n")
                try:
                    result = evaluate_family(corpus, Path(workdir), options, args.threshold,
                                             tuple(sorted(args.answers)))
                except NearDupError as error:  # an index option's value the indexer refuses
                    parser.exit(2, f"evaluate_families: {error}\n")
                for name, by_scope in result.pop("counts").items():
                    all_counts.setdefault(name, []).append(by_scope["overall"])
                    result.setdefault("by_method", {})[name] = by_scope
                result["scopes"] = scope_rows(result.pop("by_method"))
                results["families"][family] = result
                print(f"  {split} {family}: {result['documents']} documents, neardup default F1 "
                      f"{result['scopes']['overall']['neardup default']['f1']:.3f} "
                      f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
        results["overall"] = scope_rows({name: {"overall": merged(c)} for name, c in all_counts.items()})["overall"]
        results["family_mean"] = {name: float(np.mean([r["scopes"]["overall"][name]["f1"]
                                                       for r in results["families"].values()]))
                                  for name in all_counts}
        note = (f"{split} split, seed {families.SPLIT_SEEDS[split] if args.seed is None else args.seed}, "
                f"{sum(sum(r['result_sets'].values()) for r in results['families'].values())} result sets of ~100, "
                f"{time.perf_counter() - started:.0f} s, Python {sys.version.split()[0]}")
        text = markdown(results, command, note)
        stem = f"families-{split}" + (f"-{args.label}" if args.label else "")
        report.save(args.out, stem, results, text)
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
