"""neardup items against dedupe 3.0.3 on record sets with true entities (lib/record_sets: FEBRL persons, Fodor's and
Zagat's restaurants), with the same label budget.

Per record set of the split, each clustering scored pairwise against the true entities (lib/record_runs):
  (a) neardup defaults   `neardup index --fields SCHEMA`, then `neardup cluster` at the store's defaults: no labels
  (b) neardup + STRATEGY  the indexed store copied, at most --budget pairs chosen by a labelling strategy and
                          answered from the truth (lib/record_labels; `random`: half true duplicates, half random
                          distinct pairs, as issue's user labelled; `label`: `neardup label`'s session), `neardup
                          train` on them (a model it refuses leaves the rules), `neardup cluster`
  (c) dedupe, same labels dedupe 3.0.3 given the random strategy's pairs (mark_pairs), trained, partition()
  (d) dedupe, active      dedupe's own active learner (uncertain_pairs) answered from the truth, at most --budget
                          answers, trained, partition()
Times are wall seconds of the whole run as a user does it: neardup's commands (index, choosing, train, cluster,
export), dedupe's preparation, labelling, training and partition. dedupe runs in a process of its own (its peak
memory is that process's). dedupe comes with the `records-bench` extra; without it (c) and (d) are skipped.

    python -m benchmarks.records [--split test] [--entities N] [--budget 120] [--strategy random --strategy label]
                                 [--no-dedupe]

writes out/records-SPLIT.json and .md (`--entities N`: the first N entities of each set by a hash of their key,
all records of each, written to records-SPLIT-eN.*). The test split takes about ten minutes on 2 shared cores.
"""
from __future__ import annotations

import argparse
import importlib.util
import multiprocessing
import shutil
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from benchmarks.lib import record_labels, record_runs, record_sets
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from benchmarks.lib.sources import SourceMissing

DEFAULT_BUDGET = 120


def _in_child(function, *args):
    """dedupe in a spawned process of its own: its memory is its own, and so is its peak."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(_child, function, *args).result()


def _child(function, *args):
    try:
        return function(*args)
    finally:
        # dedupe's classifier search (GridSearchCV, n_jobs=-1) leaves joblib's worker processes idling for 300 s,
        # which the child would wait for at its exit
        from joblib.externals.loky import get_reusable_executor
        get_reusable_executor().shutdown(wait=True, kill_workers=True)


def run_set(record_set: record_sets.RecordSet, work: Path, budget: int, strategies: list[str],
            with_dedupe: bool) -> dict:
    say = lambda text: print(f"  {record_set.name}: {text}", file=sys.stderr, flush=True)  # noqa: E731
    result = {**record_set.summary(), "runs": {}}
    indexed = record_runs.index(record_set, work / record_set.name)
    say(f"indexed {len(record_set.records):,} records in {indexed['index_seconds']:.1f} s")
    runs = result["runs"]
    runs["neardup_defaults"] = record_runs.neardup_defaults(record_set, indexed)
    say(f"(a) neardup defaults F1 {runs['neardup_defaults']['f1']:.3f}")
    random_labels = record_labels.random_labels(indexed["store"], record_labels.TruthOracle(record_set), budget)
    for name in strategies:
        chosen = random_labels if name == "random" else None
        try:
            runs[f"neardup_{name}"] = record_runs.neardup_trained(record_set, indexed, name,
                                                                  record_labels.strategy(name), budget, chosen)
        except record_runs.RunFailed as failed:  # e.g. too few duplicates among a strategy's labels to train on
            runs[f"neardup_{name}"] = {"error": str(failed)}
            say(f"(b) neardup + {name} labels failed: {failed}")
            continue
        say(f"(b) neardup + {name} labels F1 {runs[f'neardup_{name}']['f1']:.3f}")
    if with_dedupe:
        runs["dedupe_random"] = _in_child(record_runs.dedupe_marked, record_set, random_labels)
        say(f"(c) dedupe + random labels F1 {runs['dedupe_random']['f1']:.3f}")
        runs["dedupe_active"] = _in_child(record_runs.dedupe_active, record_set, budget)
        say(f"(d) dedupe active F1 {runs['dedupe_active']['f1']:.3f}")
    result["random_labels"] = random_labels
    result["checks"] = checks(runs, strategies)
    return result


def checks(runs: dict, strategies: list[str]) -> dict:
    """The issue's conditions, as this run measured them (None where a run is missing)."""
    defaults = runs["neardup_defaults"]["f1"]
    strategies = [name for name in strategies if "error" not in runs[f"neardup_{name}"]]
    found = {f"{name}_labels_not_below_defaults": runs[f"neardup_{name}"]["f1"] >= defaults for name in strategies}
    if "dedupe_active" in runs:
        dedupe = runs["dedupe_active"]
        found["defaults_over_dedupe_active"] = defaults / dedupe["f1"] if dedupe["f1"] else None
        for name in strategies:
            run = runs[f"neardup_{name}"]
            found[f"{name}_reaches_dedupe_active"] = run["f1"] >= dedupe["f1"]
            found[f"{name}_faster_than_dedupe_active"] = run["seconds"] < dedupe["seconds"]
    if "dedupe_random" in runs and runs["dedupe_random"]["f1"]:
        found["defaults_over_dedupe_random"] = defaults / runs["dedupe_random"]["f1"]
    return found


# --- report --------------------------------------------------------------------------------------------------------

LABELS = {"neardup_defaults": "(a) neardup defaults, no labels", "dedupe_random": "(c) dedupe, same random labels",
          "dedupe_active": "(d) dedupe, its active learner"}


def _label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    if key == "neardup_label":
        return "(e) neardup, `neardup label` then `neardup train`"
    return f"(b) neardup + `neardup train`, {key.removeprefix('neardup_')} labels"


def _seconds(run: dict) -> str:
    if "cluster_seconds" in run:
        parts = [f"cluster {run['cluster_seconds'] + run['export_seconds']:.1f}"]
        if "train_seconds" in run:
            parts.insert(0, f"train {run['train_seconds']:.1f}")
        if run.get("choose_seconds", 0) >= 0.05:
            parts.insert(0, f"choosing {run['choose_seconds']:.1f}")
        return f"{run['seconds']:.1f} ({', '.join(parts)})"
    return f"{run['seconds']:.1f} (train {run['train_seconds']:.1f}, partition {run['partition_seconds']:.1f})"


def markdown(report: dict) -> str:
    lines = [f"Measured with `{report['command']}` ({report['when']}, Python {report['python']}, dedupe "
             f"{report['dedupe'] or 'not installed'}).", "",
             "Pairwise over every pair of a set's records: a pair is predicted a duplicate when both records got "
             "one cluster, and is one when both are of one true entity. Labels: pairs answered from the truth "
             f"(at most {report['budget']}); seconds: the whole run (neardup: index, train, cluster and export "
             "commands; dedupe: preparation, labelling, training, partition).", ""]
    for result in report["sets"]:
        lines += [f"**{result['name']}** ({', '.join(result['sources'])}): {result['records']:,} records, "
                  f"{result['entities']:,} entities ({result['entities_with_duplicates']:,} with more than one "
                  f"record, largest {result['largest_entity']}), {result['true_pairs']:,} true pairs.", ""]
        rows, failed = [], []
        for key, run in result["runs"].items():
            if "error" in run:
                failed.append(f"{_label(key)} failed: {run['error'].strip()}")
                continue
            labels = "—" if "labels" not in run else f"{run['labels']} ({run['labelled_duplicates']} dup.)"
            if run.get("model_refused"):
                labels += ", model refused"
            rows.append([_label(key), labels, f"{run['precision']:.3f}", f"{run['recall']:.3f}",
                         f"**{run['f1']:.3f}**", f"{run['clusters']:,}", _seconds(run)])
        lines += table(["run", "labels", "precision", "recall", "F1", "clusters", "seconds"], rows)
        lines += ["", f"(a)'s default threshold, as `neardup index` reported it: "
                      f"{result['runs']['neardup_defaults'].get('threshold') or 'not reported'}."]
        checks = result["checks"]
        notes = [f"{key.replace('_', ' ')}: {value:.2f}" if isinstance(value, float) else
                 f"{key.replace('_', ' ')}: {'yes' if value else 'no'}" for key, value in checks.items()]
        lines += ["", *failed, "Checks: " + "; ".join(notes) + ".", ""]
    lines += [f"Total {report['seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=record_sets.SPLITS, default="test",
                        help="test (the report; never tuned on), tune (where defaults are tuned) or dev")
    parser.add_argument("--kind", choices=record_sets.KINDS, action="append",
                        help="only the record sets of this kind (repeatable) (default: every set of the split)")
    parser.add_argument("--entities", type=int, metavar="N",
                        help="only N entities of each set (a deterministic share, all records of each) "
                             "(default: all)")
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET, help="labelled pairs per strategy")
    parser.add_argument("--strategy", action="append", metavar="NAME",
                        help="a labelling strategy for (b): " + ", ".join(record_labels.STRATEGIES)
                             + ", or module:function (repeatable) (default: all of those)")
    parser.add_argument("--no-dedupe", dest="dedupe", action="store_false",
                        help="leave out (c) and (d) (default: run them when dedupe is installed)")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="write the documents, schemas, labels and stores into DIR and keep them")
    args = parser.parse_args(argv)
    strategies = args.strategy or list(record_labels.STRATEGIES)
    for name in strategies:
        record_labels.strategy(name)  # an unknown one fails now, not after the first set
    dedupe_version = None
    if importlib.util.find_spec("dedupe") is not None:
        from importlib.metadata import version
        dedupe_version = version("dedupe")
    with_dedupe = args.dedupe and dedupe_version is not None
    if args.dedupe and not with_dedupe:
        print(f"records: dedupe is not installed ({record_sets.INSTALL}): (c) and (d) left out", file=sys.stderr)
    started = time.perf_counter()
    try:
        sets = [s for s in record_sets.split(args.split) if not args.kind or s.kind in args.kind]
    except SourceMissing as missing:
        parser.exit(2, f"records: {missing}\n")
    if args.entities:
        sets = [record_sets.subset(s, args.entities) for s in sets]
    work = Path(tempfile.mkdtemp(prefix="neardup-records-")) if args.keep is None else args.keep
    try:
        results = [run_set(s, work, args.budget, strategies, with_dedupe) for s in sets]
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    command = "python -m benchmarks.records" + "".join(f" {a}" for a in (argv if argv is not None else sys.argv[1:]))
    report = {"command": command, "when": time.strftime("%Y-%m-%d"), "python": sys.version.split()[0],
              "dedupe": dedupe_version if with_dedupe else None, "split": args.split, "budget": args.budget,
              "strategies": strategies, "dedupe_sample": record_runs.DEDUPE_SAMPLE, "sets": results,
              "seconds": time.perf_counter() - started}
    stem = f"records-{args.split}" + (f"-e{args.entities}" if args.entities else "") \
        + "".join(f"-{kind}" for kind in args.kind or ())
    text = markdown(report)
    save(args.out, stem, report, text)
    print(text)


if __name__ == "__main__":
    main()
