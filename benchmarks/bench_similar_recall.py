"""FindSimilar's top-10 recall against an exhaustive scan, at 100K and 1M generated articles (lib/similar_corpus.py):
for each query, kernel.similar over every stored sketch gives the top 10 by similarity then id at the default metric
and threshold; FindSimilar (SimilarSearch.find_similar in process) answers from the store's postings and from the
in-memory search index. Queries drawn alike from grouped, singleton, short and hot-value articles (each of those
holding at least 3 hot values); recall overall and per kind, the inexact answers and the first misses.

    python -m benchmarks.bench_similar_recall [--quick] [--sizes 100000 1000000] [--out DIR] [--dir DIR]

Writes bench_similar_recall.json and .md in --out (also printed). Issue 11's goal, reported, never asserted: top-10
recall >= 0.99.
"""
from __future__ import annotations

import time
from pathlib import Path

from benchmarks.lib import similar_run
from benchmarks.lib.report import table
from benchmarks.lib.similar_corpus import K
from benchmarks.lib.similar_queries import KINDS, Corpus, Query
from benchmarks.lib.similar_run import TOP
from neardup.core import kernel
from neardup.core.vocabulary import DEFAULT_METRIC
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch

GOAL_RECALL = 0.99
PATHS = (("store", "recall"), ("memory", "recall_memory"))


def top(pairs: list[tuple[str, float]]) -> list[str]:
    return [doc_id for doc_id, _ in sorted(pairs, key=lambda p: (-p[1], p[0]))[:TOP]]


def recall_vs_scan(search, corpus: Corpus, size: int, queries: list[Query], threshold: float, metric: str) -> dict:
    """FindSimilar's top 10 (search(doc_id, params): SimilarSearch.find_similar over the store or the memory index)
    against the top 10 of kernel.similar over every stored sketch, per kind of query."""
    sketches, ids = corpus.sketches[:size], corpus.ids[:size]
    found = relevant = 0
    inexact = 0
    per_kind = {kind: [0, 0] for kind in KINDS}
    misses = []
    began = time.perf_counter()
    for query in queries:
        sketch = corpus.sketches[query.article]
        scanned = kernel.similar(sketch, sketches, K, threshold, metric)
        expected = top([(ids[i], s) for i, s in scanned if i != query.article])
        outcome = search(ids[query.article], SimilarParams(TOP, threshold, metric))
        got = {match.id for match in outcome.matches}
        inexact += not outcome.exact
        hit = len(got & set(expected))
        found, relevant = found + hit, relevant + len(expected)
        per_kind[query.kind][0] += hit
        per_kind[query.kind][1] += len(expected)
        if hit < len(expected):
            misses.append({"article": query.article, "kind": query.kind, "expected": len(expected), "found": hit})
    return {"metric": metric, "threshold": threshold, "queries": len(queries),
            "relevant": relevant,
            "recall": found / relevant if relevant else 1.0,
            "per_kind": {kind: (f / r if r else None) for kind, (f, r) in per_kind.items()},
            "relevant_per_kind": {kind: r for kind, (_, r) in per_kind.items()},
            "inexact_answers": inexact, "misses": misses[:20], "seconds": time.perf_counter() - began}


def measured(plan: similar_run.Plan, work: Path) -> dict:
    rows = []
    threshold = plan.threshold
    for size, state in similar_run.corpus_sizes(plan, work):
        row = {"articles": size, "queries_per_kind": similar_run.queries_per_kind(state.queries[size])}
        phase = similar_run.phase_timer(row, size)
        engine, corpus, queries = SimilarSearch(ServedStore(state.store)), state.corpus, state.queries[size]
        began = time.perf_counter()
        view, _ = similar_run.memory_index(state.store, size)
        phase("memory index build", began)

        def from_store(doc_id, params):
            return engine.find_similar(doc_id, params)

        def from_memory(doc_id, params):
            return engine.find_similar(doc_id, params, view.read())

        began = time.perf_counter()
        row["recall"] = recall_vs_scan(from_store, corpus, size, queries, threshold, DEFAULT_METRIC)
        row["recall_memory"] = recall_vs_scan(from_memory, corpus, size, queries, threshold, DEFAULT_METRIC)
        phase("recall against the exhaustive scan", began)
        view = None
        rows.append(row)
    return {"sizes": sorted(set(plan.sizes)), "rows": rows, "phases": state.phases, "corpus": state.corpus_summary(),
            "goals": goals(rows)}


def goals(rows: list[dict]) -> list[dict]:
    found = []
    for row in rows:
        for path, key in PATHS:
            recall = row[key]["recall"]
            found.append({"goal": f"{row['articles']:,}: top-{TOP} recall >= {GOAL_RECALL} against the exhaustive "
                                  f"scan ({row[key]['metric']} {row[key]['threshold']}; {path})",
                          "measured": f"{recall:.4f}", "met": recall >= GOAL_RECALL})
    return found


def markdown(results: dict) -> str:
    f = similar_run.cell
    lines = similar_run.header(results, "Corpus search: top-10 recall against the exhaustive scan")
    lines += ["", f"### Top-{TOP} recall against the exhaustive scan", ""]
    rows = []
    for row in results["rows"]:
        for path, key in PATHS:
            recall = row[key]
            per_kind = ", ".join(f"{k} {f(v, 3)}" for k, v in recall["per_kind"].items())
            rows.append([f"{row['articles']:,}", path, f"{recall['recall']:.4f}", per_kind, str(recall["relevant"]),
                         str(recall["inexact_answers"]), f"{recall['seconds']:.1f}"])
    lines += table(["articles", "search", "recall", "per kind", "expected", "inexact answers", "seconds"], rows)
    lines += similar_run.phases_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    similar_run.main("bench_similar_recall", __doc__, measured, markdown, argv)


if __name__ == "__main__":
    main()
