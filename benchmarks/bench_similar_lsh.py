"""datasketch MinHashLSH against FindSimilar metric=jaccard on the same generated corpus (lib/similar_corpus.py), in
process: MinHashLSH (in memory, num_perm 128, the same threshold, Jaccard) grown with the corpus up to the largest size
the machine's memory allows (--lsh-max), its build time and memory (the process's anonymous RSS grown while inserting),
LSH.query latency in turns with FindSimilar metric=jaccard over the store and from the in-memory search index, and
the recall and precision of each against the truth: the exact Jaccard of the full sets >= the threshold (known
without a scan; on --quick checked against a full scan). MinHash signatures are datasketch's, computed with numpy and
checked against MinHash.update_batch.

    python -m benchmarks.bench_similar_lsh [--quick] [--sizes 100000 1000000] [--lsh-queries 500] [--lsh-max N]
        [--out DIR] [--dir DIR]

Writes bench_similar_lsh.json and .md in --out (also printed). Issue 11's goal, reported, never asserted:
FindSimilar faster than MinHashLSH.query at equal or better recall.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from datasketch import LeanMinHash

from benchmarks.lib import measure, similar_run
from benchmarks.lib.report import table
from benchmarks.lib.similar_queries import Corpus, Query, check_truth, jaccard_truth
from benchmarks.lib.similar_run import JACCARD_TOP_K
from neardup.core.vocabulary import JACCARD
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch

MEMORY_JACCARD = "FindSimilar jaccard (memory index, in process)"
PATHS = (("store", "FindSimilar jaccard (engine, in process)", "findsimilar"),
         ("memory", MEMORY_JACCARD, "findsimilar_memory"))


def lsh_comparison(lsh: similar_run.Lsh, engine: SimilarSearch, in_memory, corpus: Corpus, sig: np.ndarray, size: int,
                   queries: list[Query], threshold: float, rounds: int) -> dict:
    """MinHashLSH.query and FindSimilar metric=jaccard (over the store, and from the memory index: in_memory(doc_id,
    params)) on the same queries: latency in turns, recall against the exact Jaccard of the full sets."""
    lengths, groups, hot = corpus.arrays()
    number = {doc_id: n for n, doc_id in enumerate(corpus.ids[:size])}
    params = SimilarParams(JACCARD_TOP_K, threshold, JACCARD)
    minhashes = [LeanMinHash(seed=1, hashvalues=sig[q.article], scheme="affine32") for q in queries]
    ids = [corpus.ids[q.article] for q in queries]

    def verified(position: int) -> list[int]:
        """LSH candidates kept when their MinHash Jaccard estimate reaches the threshold (what a caller does)."""
        found = [number[c] for c in lsh.lsh.query(minhashes[position])]
        found = np.array([c for c in found if c != queries[position].article], np.int64)
        if not len(found):
            return []
        estimate = (sig[found] == sig[queries[position].article]).mean(axis=1)
        return found[estimate >= threshold].tolist()

    timings = measure.interleaved_us({
        "MinHashLSH.query": (lambda i: lsh.lsh.query(minhashes[i]), [(i,) for i in range(len(queries))]),
        "MinHashLSH.query + MinHash verification": (verified, [(i,) for i in range(len(queries))]),
        "FindSimilar jaccard (engine, in process)": (lambda doc_id: engine.find_similar(doc_id, params),
                                                     [(doc_id,) for doc_id in ids]),
        MEMORY_JACCARD: (lambda doc_id: in_memory(doc_id, params), [(doc_id,) for doc_id in ids]),
    }, rounds)
    tallies = {name: {"found": 0, "returned": 0}
               for name in ("lsh_candidates", "lsh_verified", "findsimilar", "findsimilar_memory")}
    relevant = 0
    for position, query in enumerate(queries):
        truth = jaccard_truth(query, size, lengths, groups, hot, threshold)
        relevant += len(truth)
        answers = {
            "lsh_candidates": {number[c] for c in lsh.lsh.query(minhashes[position])} - {query.article},
            "lsh_verified": set(verified(position)),
            "findsimilar": {number[m.id] for m in engine.find_similar(ids[position], params).matches},
            "findsimilar_memory": {number[m.id] for m in in_memory(ids[position], params).matches},
        }
        for name, answer in answers.items():
            tallies[name]["found"] += len(answer & truth)
            tallies[name]["returned"] += len(answer)
    quality = {name: {"recall": t["found"] / relevant if relevant else 1.0,
                      "precision": t["found"] / t["returned"] if t["returned"] else 1.0, **t}
               for name, t in tallies.items()}
    return {"threshold": threshold, "articles": lsh.count, "bands": lsh.lsh.b, "rows": lsh.lsh.r,
            "build_seconds": lsh.seconds, "build_articles_per_s": lsh.count / lsh.seconds,
            "memory_bytes": lsh.memory, "memory_bytes_per_article": lsh.memory / lsh.count,
            "relevant": relevant, "latency_us": timings, "quality": quality}


def measured(plan: similar_run.Plan, quick: bool, work: Path) -> dict:
    rows = []
    threshold = plan.threshold
    for size, state in similar_run.corpus_sizes(plan, work, lsh=True, keep_chunks=quick):
        queries = state.lsh_queries[size]
        row = {"articles": size, "lsh_queries_per_kind": similar_run.queries_per_kind(queries)}
        phase = similar_run.phase_timer(row, size)
        if state.lsh is None:
            row["lsh"] = {"skipped": state.lsh_skipped.get(size, "not run at this size")}
            rows.append(row)
            continue
        lengths, groups, hot_bits = state.corpus.arrays()
        if quick:
            began = time.perf_counter()
            checked = check_truth(state.chunks, queries, lengths, groups, hot_bits, threshold)
            print(f"  Jaccard truth equals a full scan for {checked} queries ({time.perf_counter() - began:.1f} s)")
        similar_run.settle()
        engine = SimilarSearch(ServedStore(state.store))
        similar_run.warm(engine, state.corpus, state.queries[size], threshold)
        began = time.perf_counter()
        view, _ = similar_run.memory_index(state.store, size)
        phase("memory index build", began)

        def from_memory(doc_id, params):
            return engine.find_similar(doc_id, params, view.read())

        began = time.perf_counter()
        row["lsh"] = lsh_comparison(state.lsh, engine, from_memory, state.corpus, state.sig, size, queries,
                                    threshold, 3)
        phase("MinHashLSH comparison (queries and truth)", began)
        view = None
        row["data_mdb_bytes"] = (state.store_path / "data.mdb").stat().st_size
        rows.append(row)
    return {"sizes": sorted(set(plan.sizes)), "rows": rows, "phases": state.phases, "corpus": state.corpus_summary(),
            "lsh_size": state.lsh_size, "lsh_skipped": state.lsh_skipped, "goals": goals(rows)}


def goals(rows: list[dict]) -> list[dict]:
    found = []
    for row in rows:
        lsh = row["lsh"]
        if "quality" not in lsh:
            continue
        for path, name, quality_key in PATHS:
            ours, theirs = lsh["latency_us"][name], lsh["latency_us"]["MinHashLSH.query"]
            recall_ours = lsh["quality"][quality_key]["recall"]
            recall_theirs = lsh["quality"]["lsh_candidates"]["recall"]
            found.append({"goal": f"{row['articles']:,}: FindSimilar (jaccard, in process, {path}) faster than "
                                  "MinHashLSH.query at equal or better recall",
                          "measured": f"median {ours['median_us']:.0f} vs {theirs['median_us']:.0f} µs, p99 "
                                      f"{ours['p99_us']:.0f} vs {theirs['p99_us']:.0f} µs; recall "
                                      f"{recall_ours:.4f} vs {recall_theirs:.4f}",
                          "met": ours["median_us"] < theirs["median_us"] and ours["p99_us"] < theirs["p99_us"]
                          and recall_ours >= recall_theirs})
    return found


def markdown(results: dict) -> str:
    f = similar_run.cell
    lines = similar_run.header(results, "Corpus search: FindSimilar against datasketch MinHashLSH")
    lines += ["", "### datasketch MinHashLSH on the same corpus (in process, Jaccard)", ""]
    rows = []
    for row in results["rows"]:
        lsh = row["lsh"]
        if "quality" not in lsh:
            rows.append([f"{row['articles']:,}", f"skipped: {lsh['skipped']}", "", "", "", "", ""])
            continue
        for name, label in (("MinHashLSH.query", "lsh_candidates"),
                            ("MinHashLSH.query + MinHash verification", "lsh_verified"),
                            ("FindSimilar jaccard (engine, in process)", "findsimilar"),
                            (MEMORY_JACCARD, "findsimilar_memory")):
            lat, quality = lsh["latency_us"][name], lsh["quality"][label]
            rows.append([f"{row['articles']:,}", name, f(lat["median_us"], 0), f(lat["p99_us"], 0),
                         f(quality["recall"], 4), f(quality["precision"], 4), str(lsh["relevant"])])
    lines += table(["articles", "query", "median µs", "p99 µs", "recall", "precision", "true pairs"], rows)
    for row in results["rows"]:
        lsh = row["lsh"]
        if "quality" in lsh:
            lines += ["", f"MinHashLSH at {row['articles']:,}: b = {lsh['bands']} bands of r = {lsh['rows']}; built "
                          f"in {lsh['build_seconds']:.0f} s ({lsh['build_articles_per_s']:,.0f} articles/s, "
                          "signatures given), "
                          f"{lsh['memory_bytes'] / 1e9:.2f} GB ({lsh['memory_bytes_per_article']:,.0f} bytes/article)"
                          f"; neardup's store: {row['data_mdb_bytes'] / 1e9:.2f} GB on disk."]
    lines += similar_run.phases_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = similar_run.parser(__doc__)
    parser.add_argument("--lsh-queries", type=int,
                        help="queries per kind of the MinHashLSH comparison (default 500, 100 with --quick)")
    parser.add_argument("--lsh-max", type=int, default=1_000_000, help="largest size MinHashLSH is built at")
    args = parser.parse_args(argv)
    plan = similar_run.plan_of(args, parser, lsh_queries=args.lsh_queries, lsh_max=args.lsh_max)
    similar_run.run("bench_similar_lsh", args, lambda work: measured(plan, args.quick, work),
                    markdown)


if __name__ == "__main__":
    main()
