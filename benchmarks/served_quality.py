"""What a user gets without answering anything, against another revision: each family's corpus indexed and served
by each build's own command line, one Dedup per result set at the server's defaults (issue 38: the served default
no worse than the previous release's on any kind of text).

    python -m benchmarks.served_quality --against REV [--split test] [--family NAME ...] [--out benchmarks/out]

Side A is this checkout (this environment's neardup, checked to be the checkout's), side B is REV, installed into
an environment of its own by lib/ab.py (as request_cost.py's). For each family of the split (lib/families.py; the
test split by default, which no default was chosen on), the corpus is written once as JSON Lines; each side indexes
it with its own `neardup index` into a store of its own (its own stop-list and learned threshold, or its fixed
default) and serves it with its own `neardup serve` (one worker); every result set of the family's overall scope
goes to that server as one Dedup of stored ids, and the groups it answers are scored against the truth: pairwise
precision, recall and F1 over all the family's sets (micro-averaged, as evaluate_families.py counts them), with
the threshold and metric the server applied. Writes served_quality-SPLIT.json and .md.
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

from benchmarks.lib import ab, devcorpus, families
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import Counts, ResultSet, add_grouping
from benchmarks.lib.report import save, table
from benchmarks.lib.sources import SourceMissing
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc as pb_grpc
from tests.server_process import Server, free_port

#: The scope whose result sets are scored: every family's sets of all its kinds.
SCOPE = "overall"


def served(neardup: list[str], source: Path, corpus: families.Corpus, store: Path) -> dict:
    """`source` indexed by `neardup index` into `store`, served by `neardup serve`, every result set of the
    corpus's overall scope grouped by one Dedup at the server's defaults: the pairwise figures over them all, and
    the threshold and metric the server applied."""
    done = subprocess.run([*neardup, "index", str(source), "--store", str(store)], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"served_quality: `neardup index` of {corpus.family} failed:\n{done.stderr[-2000:]}")
    sets = [ResultSet.label(corpus.docs, indexes) for indexes in corpus.result_sets[SCOPE]]
    counts, applied = Counts.empty(1), set()
    with Server(store, command=neardup, workers=1, port=free_port()) as server, \
            grpc.insecure_channel(server.target) as channel:
        dedup = pb_grpc.NearDupStub(channel).Dedup
        for result_set in sets:
            answer = dedup(pb.DedupRequest(ids=[corpus.docs[i].id for i in result_set.indexes]), timeout=60)
            applied.add((round(answer.threshold, 6), pb.Metric.Name(answer.metric)))
            add_grouping(counts, result_set, np.array([list(answer.group)]))
    (threshold, metric), = applied  # one store, one default
    return {"f1": float(counts.f1()[0]), "precision": float(counts.precision()[0]),
            "recall": float(counts.recall()[0]), "threshold": threshold,
            "metric": metric.removeprefix("METRIC_").lower(), "result_sets": len(sets)}


def compare(sides: list[ab.Side], split: str, names: list[str], work: Path, seed: int | None = None,
            say=print) -> dict:
    """Per family, each side's served figures (served())."""
    results = {}
    for name in names:
        corpus = families.build(name, split, seed)
        source = corpus.write_jsonl(work / f"{name}-{split}.jsonl")
        results[name] = {}
        for number, side in enumerate(sides):
            say(f"served_quality: {name} ({split}), {side.describe()}")
            results[name][side.label] = served(side.neardup, source, corpus, work / f"{name}-{split}-{number}.store")
    return results


def report_lines(results: dict, sides: list[ab.Side], split: str, command: str) -> list[str]:
    a, b = (side.label for side in sides)

    def cell(figures: dict) -> str:
        return (f"{figures['f1']:.3f} ({figures['precision']:.2f} / {figures['recall']:.2f}) at "
                f"{figures['metric']} {figures['threshold']:.4g}")

    rows = [[name, cell(by_side[a]), cell(by_side[b]), f"{by_side[a]['f1'] - by_side[b]['f1']:+.3f}"]
            for name, by_side in results.items()]
    worse = [name for name, by_side in results.items() if by_side[a]["f1"] < by_side[b]["f1"]]
    return [f"`{command}` ({split} split; A: {sides[0].describe()}, B: {sides[1].describe()}).", "",
            "Each side indexed every family's corpus with its own `neardup index` and served it with its own "
            "`neardup serve`; one Dedup per result set of the family at the server's defaults. F1 (precision / "
            "recall) at the threshold the server applied.", "",
            *table(["family", f"A: {a}", f"B: {b}", "A − B"], rows), "",
            f"A is below B on: {', '.join(worse)}." if worse else "A is no worse than B on any family."]


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", metavar="REV", required=True,
                        help="side B: a revision (commit, branch, tag), installed into an environment of its own")
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="test")
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(families.FAMILIES))
    parser.add_argument("--seed", type=int, help="draw the families' copies and result sets with this seed")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict:
    args = parse_arguments(argv)
    started = time.perf_counter()
    try:
        sides = [ab.this_environment(), ab.install(args.against)]
    except ab.RevisionError as error:
        raise SystemExit(f"served_quality: {error}")
    command = " ".join(["python -m benchmarks.served_quality --against", args.against, "--split", args.split,
                        *(["--family", *args.family] if args.family != list(families.FAMILIES) else []),
                        *(["--seed", str(args.seed)] if args.seed is not None else [])])
    with tempfile.TemporaryDirectory(prefix="served-quality-") as work:
        try:
            results = compare(sides, args.split, args.family, Path(work), args.seed)
        except SourceMissing as missing:
            raise SystemExit(f"served_quality: {missing}")
    output = {"command": command, "split": args.split, "seed": args.seed,
              "sides": {side.label: {"commit": side.commit, "described": side.describe()} for side in sides},
              "families": results, "seconds": round(time.perf_counter() - started, 1)}
    stem = f"served_quality-{args.split}"
    text = "\n".join(report_lines(results, sides, args.split, command)) + "\n"
    save(args.out, stem, output, text)
    print(text + f"\nwrote {args.out / stem}.json, {stem}.md ({output['seconds']:.0f} s)")
    return output


if __name__ == "__main__":
    main()
