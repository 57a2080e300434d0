"""`neardup train`'s options and report; the work is jobs/train.py."""
from __future__ import annotations

import argparse

from neardup_client.cli_framework import EXIT_OK, CommandFailed, at_least

from ..jobs.train import DEFAULT_FOLDS, OTHER_STOPLISTS, train
from ..store import STORE_HELP, default_store_path
from .options import add_progress_argument, reporting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Train a store from labelled pairs (JSON Lines: {\"a\": id, \"b\": id, \"duplicate\": true|false}, ids "
        "stored; `neardup label` writes them). A store of texts: its metric (containment, jaccard or mutual), the "
        "one whose threshold cross-validates best on the pairs, and that threshold, the one of the best expected F1 "
        "over the store's candidate pairs (each pair's chance of being a duplicate fitted on the labelled pairs' "
        "similarities), stored as the store's default (source \"trained\"), unless the pairs hold fewer than "
        "--folds duplicates or others, do not separate by similarity, or do better at the store's current metric "
        "and threshold (then exit 1, the store unchanged). An items store: a pair classifier, logistic regression against gradient boosting, the better "
        "by cross-validated F1 on the labelled pairs that share a super token and score at least half the rules' "
        "threshold; stored in the store (as JSON numbers only) for Dedup and FindSimilar to decide by its "
        "calibrated probability, unless it does worse than the rules alone or decides candidates otherwise than "
        "the rules where too few labels show it right (then exit 1, the store unchanged). Restart `neardup serve` "
        "to use either.")
    parser.add_argument("pairs", metavar="PAIRS", help="labelled pairs, JSON Lines")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--folds", type=at_least(2), default=DEFAULT_FOLDS, help="cross-validation folds")
    parser.add_argument("--corpus", metavar="CORPUS", help="a store of texts: the JSON Lines corpus it was indexed "
                        "from; the answered pairs (and the store's candidate pairs) are then also sketched without "
                        "the store's stop-list and with one that counts copies of one text each, and train says when "
                        "the answers separate better one of those ways (re-index with --no-stoplist or "
                        "--stop-own-share 0)")
    parser.add_argument("--dry-run", dest="write", action="store_false",
                        help="report the cross-validated figures without storing the threshold or model (default: "
                             "store it)")
    add_progress_argument(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    # --corpus: its texts sketched once more, which takes a while on a large one; a summary line closes a run
    # that is not refused, and a refusal is its one line
    with reporting(args, "train"):
        return _trained(args, train(args.pairs, args.store, args.folds, args.write, args.corpus))


def _trained(args: argparse.Namespace, report: dict) -> int:
    """train's report printed, a refusal raised."""
    if report.get("texts"):
        return _threshold_report(args, report)
    rules = report["rules"]
    print(f"{'rules alone':18s} cross-validated F1 {rules['cv']['f1']:.3f}  precision {rules['cv']['precision']:.3f}  "
          f"recall {rules['cv']['recall']:.3f}  (similarity >= {rules['threshold']:g})")
    for kind, figures in report["models"].items():
        cv = figures["cv"]
        refused = f"; may not be stored: {figures['refused']}" if figures.get("refused") else ""
        print(f"{kind:18s} cross-validated F1 {cv['f1']:.3f}  precision {cv['precision']:.3f}  recall "
              f"{cv['recall']:.3f}  (probability >= {figures['threshold']:.4f}{refused})")
    print(f"figures over the {report['judged']:,} labelled pairs scoring at least {report['judged_floor']:.3g}, where "
          f"the rules and a model can disagree ({report['candidates_sampled']:,} candidate pairs sampled); "
          f"{report['scored']:,} of {report['pairs']:,} labelled pairs share a super token; of the others, "
          f"{report['duplicates_never_scored']:,} duplicates are missed by any model and "
          f"{report['others_never_scored']:,} non-duplicates are never compared (not learned from)"
          f"{_replaced(report)}")
    if report["refused"]:
        raise CommandFailed(report["refused"])
    print(f"chosen: {report['chosen']}; " + ("stored in " + args.store if args.write else "not stored (--dry-run)")
          + f"; {report['elapsed']:.1f} s")
    return EXIT_OK


def _replaced(report: dict) -> str:
    """What the report's pair counts left out of the answers file: the earlier answers of pairs answered again."""
    replaced = report["replaced"]
    return f"; {replaced:,} earlier answers of a pair answered again left out (the last counts)" if replaced else ""


def _threshold_report(args: argparse.Namespace, report: dict) -> int:
    """A store of texts' trained threshold against its current one, on the same answers."""
    before, cv = report["before"], report["cv"]
    print(f"{'store threshold':18s} expected F1 {before['expected']:.3f}  F1 on the answers {before['f1']['f1']:.3f}  "
          f"precision {before['f1']['precision']:.3f}  recall {before['f1']['recall']:.3f}  ({before['metric']} >= "
          f"{before['threshold']:g}, {before['source']})")
    print(f"{'trained threshold':18s} expected F1 {report['expected']:.3f}  cross-validated F1 {cv['f1']:.3f}  "
          f"precision {cv['precision']:.3f}  recall {cv['recall']:.3f}  ({report['metric']} >= "
          f"{report['threshold']:g}; cross-validated F1 per metric: "
          + ", ".join(f"{metric} {f1:.3f}" for metric, f1 in report["metrics"].items()) + ")")
    for name, other in report.get("stoplists", {}).items():
        figures = other["cv"]
        print(f"{OTHER_STOPLISTS[name].label:18s} expected F1 {other['expected']:.3f}  cross-validated F1 "
              f"{figures['f1']:.3f}  precision {figures['precision']:.3f}  recall {figures['recall']:.3f}  "
              f"({other['metric']} >= {other['threshold']:g}, the texts sketched {OTHER_STOPLISTS[name].sketched}: "
              f"{other['stoplist_size']:,} shingles stop-listed, `neardup index {other['index_options']}`)")
    if args.corpus and not report.get("stoplists"):
        print(f"{'other stop-lists':18s} the store's stop-list is what every other would be: --corpus changes nothing")
    elif not args.corpus:
        print(f"{'other stop-lists':18s} not weighed: give --corpus, the JSON Lines the store was indexed from, "
              "to weigh its texts without the stop-list (also in sketches of twice the size) and with copies counted "
              "too")
    print(f"{report['pairs']:,} answered pairs: {report['duplicates']:,} duplicates, {report['others']:,} others; "
          f"{report['folds']}-fold cross-validation; {report['among_candidates']:,} of them among the store's "
          f"{report['candidates']:,} candidate pairs, where they count as answered{_replaced(report)}")
    if report.get("advice"):
        print(f"advice: {report['advice']}")
    if report["refused"]:
        raise CommandFailed(report["refused"])
    print(f"chosen: {report['metric']} >= {report['threshold']:g}; " + (
        f"stored in {args.store} (source trained)" if args.write else "not stored (--dry-run)")
          + f"; {report['elapsed']:.1f} s")
    return EXIT_OK
