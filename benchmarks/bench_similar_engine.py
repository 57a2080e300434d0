"""FindSimilar in process (SimilarSearch.find_similar, no gRPC) at 100K and 1M generated articles
(lib/similar_corpus.py): per kind of query (grouped, singleton, short, hot-value) and over all, at the default metric
(top 10) and at Jaccard (top 1,000), searching the store's postings and the in-memory search index, built in process
as a `--search-index memory` worker builds it (its build time, arrays and the anonymous memory it took).

    python -m benchmarks.bench_similar_engine [--quick] [--sizes 100000 1000000] [--out DIR] [--dir DIR]

Writes bench_similar_engine.json and .md in --out (also printed).
"""
from __future__ import annotations

import time
from pathlib import Path

from benchmarks.lib import measure, similar_run
from benchmarks.lib.report import table
from benchmarks.lib.similar_queries import KINDS, Corpus, Query
from benchmarks.lib.similar_run import JACCARD_TOP_K, TOP
from neardup.core.vocabulary import DEFAULT_METRIC
from neardup.core.vocabulary import JACCARD
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch

PATHS = (("store", "engine"), ("memory", "engine_memory"))


def engine_latency(search, corpus: Corpus, queries: list[Query], params: SimilarParams, rounds: int) -> dict:
    """search(doc_id, params) in process (no gRPC), per kind of query and over all of them."""
    samples = measure.time_calls(lambda doc_id: search(doc_id, params),
                                 [(corpus.ids[q.article],) for q in queries], rounds)
    rows = {kind: similar_run.percentiles_us([t for q, times in zip(queries, samples) if q.kind == kind for t in times])
            for kind in KINDS if any(q.kind == kind for q in queries)}
    rows["all"] = similar_run.percentiles_us([t for times in samples for t in times])
    return rows


def measured(plan: similar_run.Plan, work: Path) -> dict:
    rows = []
    threshold = plan.threshold
    for size, state in similar_run.corpus_sizes(plan, work):
        row = {"articles": size, "queries_per_kind": similar_run.queries_per_kind(state.queries[size])}
        phase = similar_run.phase_timer(row, size)
        similar_run.settle()
        engine, corpus, queries = SimilarSearch(ServedStore(state.store)), state.corpus, state.queries[size]

        def from_store(doc_id, params):
            return engine.find_similar(doc_id, params)

        began = time.perf_counter()
        similar_run.warm(engine, corpus, queries, threshold)
        row["engine"] = {DEFAULT_METRIC: engine_latency(from_store, corpus, queries,
                                                        SimilarParams(TOP, threshold, DEFAULT_METRIC), 3)}
        row["engine"][JACCARD] = engine_latency(from_store, corpus, queries,
                                                SimilarParams(JACCARD_TOP_K, threshold, JACCARD), 3)
        phase("engine in process", began)

        began = time.perf_counter()
        view, row["memory_index"] = similar_run.memory_index(state.store, size)
        phase("memory index build", began)

        def from_memory(doc_id, params):
            return engine.find_similar(doc_id, params, view.read())

        began = time.perf_counter()
        row["engine_memory"] = {metric: engine_latency(from_memory, corpus, queries,
                                                       SimilarParams(top_k, threshold, metric), 3)
                                for metric, top_k in ((DEFAULT_METRIC, TOP), (JACCARD, JACCARD_TOP_K))}
        phase("memory index in process", began)
        view = None
        rows.append(row)
    return {"sizes": sorted(set(plan.sizes)), "rows": rows, "phases": state.phases, "corpus": state.corpus_summary()}


def markdown(results: dict) -> str:
    f = similar_run.cell
    lines = similar_run.header(results, "Corpus search: FindSimilar in process")
    lines += ["", "### FindSimilar in process (SimilarSearch.find_similar, no gRPC; µs per query kind)", ""]
    rows = []
    for row in results["rows"]:
        for path, key in PATHS:
            for metric, kinds in row[key].items():
                for kind, lat in kinds.items():
                    rows.append([f"{row['articles']:,}", path, metric, kind, f(lat["p50_us"], 0),
                                 f(lat["p99_us"], 0), str(lat["calls"])])
    lines += table(["articles", "search", "metric", "queries", "p50 µs", "p99 µs", "calls"], rows)
    lines += ["", "### The memory index (built in process as a `--search-index memory` worker builds it)", ""]
    lines += table(["articles", "build s (in process)", "postings", "arrays MB", "RssAnon grown MB", "bytes/article"],
                   [[f"{row['articles']:,}", f"{row['memory_index']['build_seconds']:.1f}",
                     f"{row['memory_index']['base_entries']:,}", f(row["memory_index"]["bytes"] / 1e6, 0),
                     f(row["memory_index"]["rss_anon_bytes"] / 1e6, 0),
                     f(row["memory_index"]["rss_anon_bytes_per_article"], 0)] for row in results["rows"]])
    lines += similar_run.phases_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    similar_run.main("bench_similar_engine", __doc__, measured, markdown, argv)


if __name__ == "__main__":
    main()
