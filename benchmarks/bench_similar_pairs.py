"""`neardup pairs`' rate at 100K and 1M generated articles (lib/similar_corpus.py): SimilarSearch.similar_pairs over
a range of 2,000 article numbers in the middle of the store, at the default metric and threshold; articles/s, the
pairs found, and what a whole store takes in one process at that rate.

    python -m benchmarks.bench_similar_pairs [--quick] [--sizes 100000 1000000] [--out DIR] [--dir DIR]

Writes bench_similar_pairs.json and .md in --out (also printed).
"""
from __future__ import annotations

import time
from pathlib import Path

from benchmarks.lib import similar_run
from benchmarks.lib.report import table
from neardup.core.vocabulary import DEFAULT_METRIC
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch

PAIRS_SAMPLE = 2_000           # articles of the similar_pairs range


def pairs_rate(engine: SimilarSearch, threshold: float, metric: str) -> dict:
    limit = engine.docno_limit()
    start = max(0, limit // 2 - PAIRS_SAMPLE // 2)
    stop = min(limit, start + PAIRS_SAMPLE)
    began = time.perf_counter()
    articles = pairs = 0
    for _, outcome in engine.similar_pairs(threshold, metric, start, stop):
        articles += 1
        pairs += len(outcome.matches)
    seconds = time.perf_counter() - began
    return {"start": start, "stop": stop, "articles": articles, "pairs": pairs, "seconds": seconds,
            "articles_per_s": articles / seconds, "store_seconds_one_process": limit / (articles / seconds)}


def measured(plan: similar_run.Plan, work: Path) -> dict:
    rows = []
    for size, state in similar_run.corpus_sizes(plan, work):
        row = {"articles": size}
        phase = similar_run.phase_timer(row, size)
        began = time.perf_counter()
        row["pairs"] = pairs_rate(SimilarSearch(ServedStore(state.store)), plan.threshold, DEFAULT_METRIC)
        phase("similar_pairs", began)
        rows.append(row)
    return {"sizes": sorted(set(plan.sizes)), "rows": rows, "phases": state.phases, "corpus": state.corpus_summary()}


def markdown(results: dict) -> str:
    f = similar_run.cell
    lines = similar_run.header(results, "Corpus search: the rate of neardup pairs")
    lines += ["", "### SimilarSearch.similar_pairs over a range of articles", ""]
    lines += table(["articles", "range", "articles searched", "pairs", "articles/s", "whole store, one process s"],
                   [[f"{row['articles']:,}", f"{row['pairs']['start']:,}–{row['pairs']['stop']:,}",
                     f"{row['pairs']['articles']:,}", f"{row['pairs']['pairs']:,}",
                     f(row["pairs"]["articles_per_s"], 0), f(row["pairs"]["store_seconds_one_process"], 0)]
                    for row in results["rows"]])
    lines += similar_run.phases_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    similar_run.main("bench_similar_pairs", __doc__, measured, markdown, argv)


if __name__ == "__main__":
    main()
