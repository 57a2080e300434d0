"""Cluster quality of `neardup cluster` (components | complete | communities) on the development corpus, run the
way a user runs it.

The split's corpus (devcorpus.generate) is written as JSON Lines and indexed into a fresh store with
`neardup index`; then, per threshold and method, `neardup cluster --method M --threshold T` clusters the store
and `neardup clusters --export -` reads the ids back (each a subprocess of this Python: `python -m neardup.cli`).

Scoring is pairwise over ALL pairs of the corpus (not per result set as evaluate.py): a pair is predicted a
duplicate when both articles got one cluster id, and is one when both have one devcorpus `group`. Pairs of two
variants of one template (near-duplicates as text, separable only by fields) are left out of precision, recall
and F1, as evaluate.py leaves them out; the share of each kind of hard-negative pair put in one cluster is
reported apart: pages of one site, sections of one article (topic), a text and one quoting a passage of it,
and the template variants. The hard-negative kinds are evaluate.py's (quality_counts.ResultSet.label),
computed here over every pair at once.

    python -m benchmarks.evaluate_clusters [--split test|tune] [--quick] [--thresholds 0.4,0.52,...]
writes benchmarks/out/clusters-SPLIT.md (also printed) and clusters-SPLIT.json. `--quick`: a smoke run on the
first 600 documents of the split, at the default threshold only (about 30 s; written to clusters-SPLIT-quick.*).
`--keep DIR` keeps the corpus and the store there. Needs the `bench` extra (devcorpus's texts) and the `cluster`
extra (scipy, igraph). The full run takes 1–2 minutes on 2 shared cores (the corpus ~12 s, indexing ~6 s, each
`neardup cluster` 2–5 s, each export ~0.6 s). Committed figures: benchmarks/QUALITY.md, "Clustering".
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.lib import devcorpus
from benchmarks.lib.paths import OUT
from tests.server_process import NEARDUP
from benchmarks.lib.sources import SourceMissing
from neardup.core import linkage as clusters, vocabulary

METHODS = clusters.METHODS  # components (the baseline that chains), complete, communities
THRESHOLDS = sorted({0.4, 0.45, vocabulary.DEFAULT_THRESHOLD, 0.6, 0.7})
QUICK_SIZE = 600
NEGATIVE_KINDS = ("site", "topic", "quote", "template")  # template: left out of F1, reported apart
IGNORED_KINDS = ("template",)
_SUMMARY = re.compile(r"cluster: ([\d,]+) articles, ([\d,]+) pairs → ([\d,]+) clusters .*?; ([\d,]+) singletons, "
                      r"largest ([\d,]+)\).*; ([\d.]+) s$", re.M)


#: `neardup cluster`'s exit code when some article had more candidates than --max-candidates: the clusters are
#: stored, but pairs may be missing (never on corpora of this size; marked in the table if it happens).
EXIT_PARTIAL = 3


def neardup(*args: str, accept: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess:
    done = subprocess.run([*NEARDUP, *args], capture_output=True, text=True)
    if done.returncode not in accept:
        raise SystemExit(f"evaluate_clusters: `neardup {' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
    return done


# --- labels: every pair of the corpus -------------------------------------------------------------------------

def _codes(values: list[str]) -> np.ndarray:
    """Each distinct value a number; the empty string -1 (no value: never equal to anything)."""
    numbers: dict[str, int] = {}
    return np.array([-1 if v == "" else numbers.setdefault(v, len(numbers)) for v in values], np.int64)


class PairLabels:
    """The gold labels of every pair (i < j) of the corpus, as boolean arrays over np.triu_indices(n, 1)."""

    def __init__(self, docs: list[devcorpus.Doc]):
        n = len(docs)
        self.i, self.j = (index.astype(np.int32) for index in np.triu_indices(n, 1))
        groups = {d.group: g for g, d in reversed(list(enumerate(docs)))}  # a group's code: its first article
        group = np.array([groups[d.group] for d in docs], np.int64)
        same_group = group[self.i] == group[self.j]
        self.duplicate = same_group
        self.negative: dict[str, np.ndarray] = {}
        for kind in ("site", "topic", "template"):
            code = _codes([getattr(d, kind) for d in docs])
            self.negative[kind] = ~same_group & (code[self.i] >= 0) & (code[self.i] == code[self.j])
        quotes = np.array([groups.get(d.quotes, -2) if d.quotes else -2 for d in docs], np.int64)
        self.negative["quote"] = (quotes[self.i] == group[self.j]) | (quotes[self.j] == group[self.i])
        ignored = np.zeros(len(self.i), bool)
        for kind in IGNORED_KINDS:
            ignored |= self.negative[kind]
        self.scored = ~ignored
        self.negatives = {kind: int(pairs.sum()) for kind, pairs in self.negative.items()}
        self.duplicates = int((self.duplicate & self.scored).sum())

    def score(self, labels: np.ndarray) -> dict:
        predicted = labels[self.i] == labels[self.j]
        tp = int((predicted & self.duplicate & self.scored).sum())
        fp = int((predicted & ~self.duplicate & self.scored).sum())
        fn = int((~predicted & self.duplicate & self.scored).sum())
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        sizes = np.unique(labels, return_counts=True)[1]
        return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": fp, "fn": fn,
                "clusters": int(len(sizes)), "singletons": int((sizes == 1).sum()), "largest": int(sizes.max()),
                "negatives_grouped": {kind: int((predicted & pairs).sum()) for kind, pairs in self.negative.items()},
                "negatives_share": {kind: float((predicted & pairs).sum() / max(1, self.negatives[kind]))
                                    for kind, pairs in self.negative.items()}}


def gold_score(docs: list[devcorpus.Doc], labels: PairLabels) -> dict:
    """The gold clustering itself (its groups), for the cluster count and largest cluster to compare with."""
    return labels.score(_codes([d.group for d in docs]))


# --- runs -------------------------------------------------------------------------------------------------------

def index(corpus: Path, store: Path) -> float:
    started = time.perf_counter()
    neardup("index", str(corpus), "--store", str(store))
    return time.perf_counter() - started


def cluster(store: Path, method: str, threshold: float, ids: list[str]) -> tuple[np.ndarray, dict]:
    """`neardup cluster` then `neardup clusters --export -`: the cluster id of each document, and the run's
    figures (wall seconds of each command, the summary line's pairs and its own seconds)."""
    started = time.perf_counter()
    done = neardup("cluster", "--store", str(store), "--method", method, "--threshold", f"{threshold:g}",
                   accept=(0, EXIT_PARTIAL))
    seconds = time.perf_counter() - started
    summary = _SUMMARY.search(done.stderr)
    if summary is None:
        raise SystemExit(f"evaluate_clusters: no summary line in `neardup cluster`'s stderr:\n{done.stderr}")
    started = time.perf_counter()
    exported = neardup("clusters", "--store", str(store), "--export", "-")
    export_seconds = time.perf_counter() - started
    of = {}
    for line in exported.stdout.splitlines():
        record = json.loads(line)
        of[record["id"]] = record["cluster"]
    missing = [doc_id for doc_id in ids if of.get(doc_id, -1) < 0]
    if missing:
        raise SystemExit(f"evaluate_clusters: {len(missing)} documents without a cluster id, e.g. {missing[0]}")
    labels = np.array([of[doc_id] for doc_id in ids], np.int64)
    number = lambda k: int(summary.group(k).replace(",", ""))  # noqa: E731
    return labels, {"cluster_seconds": seconds, "export_seconds": export_seconds, "pairs": number(2),
                    "reported_clusters": number(3), "reported_seconds": float(summary.group(6)),
                    "summary": summary.group(0), "inexact": done.returncode == EXIT_PARTIAL}


# --- report -----------------------------------------------------------------------------------------------------

def _row(threshold: float, method: str, run: dict) -> str:
    share = run["negatives_share"]
    method += " (inexact pairs)" if run["inexact"] else ""
    return (f"| {threshold:.2f} | {method} | {run['pairs']:,} | {run['clusters']:,} | {run['singletons']:,} | "
            f"{run['largest']:,} | {run['precision']:.3f} | {run['recall']:.3f} | **{run['f1']:.3f}** | "
            f"{share['site']:.1%} | {share['topic']:.1%} | {share['quote']:.1%} | {share['template']:.1%} | "
            f"{run['cluster_seconds']:.1f} |")


HEADER = ["| threshold | method | pairs | clusters | singletons | largest | precision | recall | F1 | "
          "grouped: site | topic | quote | template (left out) | seconds |",
          "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]


def verdict(runs: list[dict], threshold: float) -> str:
    at = {r["method"]: r for r in runs if r["threshold"] == threshold}
    base = at[clusters.COMPONENTS]["f1"]
    parts = [f"{m} {at[m]['f1']:.4f} ({at[m]['f1'] - base:+.4f})" for m in METHODS if m != clusters.COMPONENTS]
    beaten = [m for m in METHODS if m != clusters.COMPONENTS and at[m]["f1"] > base]
    return (f"At threshold {threshold:.2f}, F1 of components {base:.4f}; " + ", ".join(parts) + ": "
            + ("both beat components." if len(beaten) == 2 else
               f"only {beaten[0]} beats components." if beaten else "neither beats components."))


def markdown(result: dict) -> str:
    runs, default = result["runs"], result["headline_threshold"]
    gold, timing = result["gold"], result["timing"]
    lines = [f"Measured with `{result['command']}` ({result['corpus']}).", "",
             "Pairwise over every pair of the corpus: a pair is predicted a duplicate when `neardup cluster` put "
             "both in one cluster, and is one when devcorpus gave both one group. Template-variant pairs are left "
             "out of precision, recall and F1 (as in evaluate.py). *Grouped*: the share of hard-negative pairs "
             "put in one cluster — pages of one site, sections of one article (topic), a text and one quoting a "
             "passage of it, template variants. *Pairs*: near-duplicate pairs `neardup cluster` found at the "
             "threshold; *seconds*: wall time of the `neardup cluster` command (pairs, clustering, storing ids).",
             "", f"**At the default threshold ({default:.2f})**" if default == vocabulary.DEFAULT_THRESHOLD else
             f"**At threshold {default:.2f}** (the default, {vocabulary.DEFAULT_THRESHOLD:.2f}, was not run)", "",
             *HEADER]
    lines += [_row(r["threshold"], r["method"], r) for r in runs if r["threshold"] == default]
    lines += ["", verdict(runs, default)]
    if len(result["thresholds"]) > 1:
        lines += ["", "**Over thresholds**", "", *HEADER]
        lines += [_row(r["threshold"], r["method"], r) for r in runs]
    lines += ["", f"Gold: {gold['clusters']:,} groups ({gold['singletons']:,} singletons, largest "
              f"{gold['largest']:,}); {result['pair_counts']['duplicates']:,} duplicate pairs scored of "
              f"{result['pair_counts']['pairs']:,}; hard-negative pairs: "
              + ", ".join(f"{kind} {count:,}" for kind, count in result["pair_counts"]["negatives"].items()) + ".",
              "", f"Time: corpus {timing['corpus_seconds']:.1f} s, `neardup index` {timing['index_seconds']:.1f} s, "
              f"{len(runs)} `neardup cluster` runs {sum(r['cluster_seconds'] for r in runs):.1f} s, "
              f"exports {sum(r['export_seconds'] for r in runs):.1f} s; total {timing['total_seconds']:.0f} s."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="test",
                        help="test (the report; never tuned on) or tune (where defaults are chosen)")
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: the first {QUICK_SIZE} documents, the default threshold only")
    parser.add_argument("--thresholds", type=lambda s: sorted({float(t) for t in s.split(",")}),
                        help="comma-separated (default: " + ",".join(f"{t:g}" for t in THRESHOLDS) + ")")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="write the corpus and the store into DIR and keep them (default: a temporary directory)")
    args = parser.parse_args(argv)
    thresholds = args.thresholds or ([vocabulary.DEFAULT_THRESHOLD] if args.quick else THRESHOLDS)
    started = time.perf_counter()
    try:
        docs = devcorpus.generate(args.split, QUICK_SIZE if args.quick else devcorpus.DEFAULT_SIZE)
    except SourceMissing as missing:
        parser.exit(2, f"evaluate_clusters: {missing}\n")
    corpus_seconds = time.perf_counter() - started
    labels = PairLabels(docs)
    ids = [d.id for d in docs]
    work = Path(tempfile.mkdtemp(prefix="neardup-clusters-")) if args.keep is None else args.keep
    runs = []
    try:
        work.mkdir(parents=True, exist_ok=True)
        corpus, store = work / f"{args.split}.jsonl", work / "store"
        if store.exists():
            shutil.rmtree(store)
        devcorpus.write_jsonl(docs, corpus)
        index_seconds = index(corpus, store)
        print(f"  indexed {len(docs)} documents in {index_seconds:.1f} s", file=sys.stderr)
        for threshold in thresholds:
            for method in METHODS:
                predicted, run = cluster(store, method, threshold, ids)
                runs.append({"threshold": threshold, "method": method, **run, **labels.score(predicted)})
                print(f"  {threshold:.2f} {method}: F1 {runs[-1]['f1']:.4f}, {runs[-1]['clusters']} clusters, "
                      f"{run['cluster_seconds']:.1f} s", file=sys.stderr)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    command = f"python -m benchmarks.evaluate_clusters --split {args.split}" + (" --quick" if args.quick else "") \
        + (" --thresholds " + ",".join(f"{t:g}" for t in thresholds) if args.thresholds else "")
    corpus_note = (f"{args.split} split, seed {devcorpus.SPLIT_SEEDS[args.split]}: {len(docs):,} documents in "
                   f"{len({d.group for d in docs}):,} groups, Python {sys.version.split()[0]}")
    result = {"command": command, "corpus": corpus_note, "default_threshold": vocabulary.DEFAULT_THRESHOLD,
              # the headline table's: the default when it was run, else the first threshold run
              "headline_threshold": vocabulary.DEFAULT_THRESHOLD if vocabulary.DEFAULT_THRESHOLD in thresholds
              else thresholds[0],
              "metric": vocabulary.DEFAULT_METRIC, "thresholds": thresholds,
              "pair_counts": {"pairs": len(labels.i), "duplicates": labels.duplicates, "negatives": labels.negatives},
              "gold": gold_score(docs, labels), "runs": runs,
              "timing": {"corpus_seconds": corpus_seconds, "index_seconds": index_seconds,
                         "total_seconds": time.perf_counter() - started}}
    table = markdown(result)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"clusters-{args.split}" + ("-quick" if args.quick else "")
    (args.out / f"{stem}.md").write_text(table, encoding="utf-8")
    (args.out / f"{stem}.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(table)


if __name__ == "__main__":
    main()
