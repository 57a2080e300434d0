"""FindSimilar through a real server against its empty health Check, at 100K and 1M generated articles
(lib/similar_corpus.py): one `neardup serve` worker (session cache off) on the store, NearDupClient and the same
server's Check called one at a time in alternating blocks (load.sequential), once with --search-index store and once
with --search-index memory (a server of its own); p50 and p99 and their ratios to the Check's, the time to ready and
the workers' memory.

    python -m benchmarks.bench_similar_server [--quick] [--sizes 100000 1000000] [--calls 2000] [--out DIR] [--dir DIR]

Writes bench_similar_server.json and .md in --out (also printed). Issue 11's goal, reported, never asserted: at 1M,
FindSimilar p99 <= 3x the Check's p99.
"""
from __future__ import annotations

import time
from pathlib import Path

import grpc

from benchmarks.lib import load, measure, similar_run
from benchmarks.lib.report import table
from tests.server_process import Server, free_port
from benchmarks.lib.similar_queries import Corpus, Query
from benchmarks.lib.similar_run import JACCARD_TOP_K, TOP
from neardup.core.vocabulary import DEFAULT_METRIC
from neardup.core.vocabulary import JACCARD
from neardup_client import NearDupClient

GOAL_P99_RATIO = 3.0
PATHS = (("store", "server"), ("memory", "server_memory"))
FIND_SIMILAR = "FindSimilar (stored id), NearDupClient"
CHECK = "health Check (empty call)"


def process_memory(pid: int) -> dict:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "RssAnon", "RssFile"):
            fields[name] = int(value.split()[0]) * 1024
    return fields


def server_latency(store_path: Path, corpus: Corpus, queries: list[Query], calls: int,
                   threshold: float, search_index: str) -> dict:
    """FindSimilar through NearDupClient against the empty health Check, one server (`--search-index
    search_index`), one run, in turns."""
    if not hasattr(NearDupClient, "find_similar"):
        return {"skipped": "this neardup_client has no find_similar (the FindSimilar RPC is not installed)"}
    began = time.perf_counter()
    server = Server(store_path, *load.CACHE_OFF, "--search-index", search_index, workers=1, port=free_port())
    try:
        server.wait_ready(900)
        ready_seconds = time.perf_counter() - began
        ids = [corpus.ids[q.article] for q in queries]
        with NearDupClient(server.target, timeout=10) as client, grpc.insecure_channel(server.target) as channel:
            check = channel.unary_unary(load.HEALTH_PATH)
            for doc_id in ids:  # every query once: the server's pages of them are warm, as the engine's were
                client.find_similar(doc_id, top_k=TOP, metric=DEFAULT_METRIC, threshold=threshold)
            kinds = {
                "FindSimilar (stored id), NearDupClient":
                    lambda i: bool(client.find_similar(ids[i % len(ids)], top_k=TOP, metric=DEFAULT_METRIC,
                                                       threshold=threshold)) and False,
                f"FindSimilar jaccard {threshold}, NearDupClient":
                    lambda i: bool(client.find_similar(ids[i % len(ids)], metric=JACCARD, threshold=threshold,
                                                       top_k=JACCARD_TOP_K)) and False,
                "health Check (empty call)": lambda i: check(load.HEALTH_REQUEST) and False,
            }
            result = load.sequential(server, kinds, calls)
        result["server_memory"] = {str(pid): process_memory(pid) for pid in measure.worker_pids(server.process.pid)}
        result["ready_seconds"] = ready_seconds
        result["search_index"] = search_index
    finally:
        result_stop = load.stop_server(server)
    result["server"] = result_stop
    floor = result["kinds"]["health Check (empty call)"]["latency_ms"]
    for row in result["kinds"].values():
        row["p50_ratio"] = row["latency_ms"]["p50"] / floor["p50"]
        row["p99_ratio"] = row["latency_ms"]["p99"] / floor["p99"]
    return result


def measured(plan: similar_run.Plan, calls: int, work: Path) -> dict:
    rows = []
    for size, state in similar_run.corpus_sizes(plan, work):
        row = {"articles": size, "queries_per_kind": similar_run.queries_per_kind(state.queries[size])}
        phase = similar_run.phase_timer(row, size)
        similar_run.settle()
        for search_index, key in PATHS:
            began = time.perf_counter()
            row[key] = server_latency(state.store_path, state.corpus, state.queries[size], calls, plan.threshold,
                                      search_index)
            phase(f"server (--search-index {search_index}): FindSimilar against the health Check", began)
        rows.append(row)
    return {"sizes": sorted(set(plan.sizes)), "rows": rows, "phases": state.phases, "corpus": state.corpus_summary(),
            "goals": goals(rows)}


def goals(rows: list[dict]) -> list[dict]:
    found = []
    for row in rows:
        for path, key in PATHS:
            server = row[key]
            if "kinds" in server:
                ratio = server["kinds"][FIND_SIMILAR]["p99_ratio"]
                found.append({"goal": f"{row['articles']:,}: FindSimilar p99 <= {GOAL_P99_RATIO:g} x health Check "
                                      f"p99 (sequential, --search-index {path})",
                              "measured": f"{server['kinds'][FIND_SIMILAR]['latency_ms']['p99']:.2f} ms vs "
                                          f"{server['kinds'][CHECK]['latency_ms']['p99']:.2f} ms = {ratio:.2f} x",
                              "met": ratio <= GOAL_P99_RATIO})
    return found


def markdown(results: dict) -> str:
    f = similar_run.cell
    lines = similar_run.header(results, "Corpus search: FindSimilar through the server")
    lines += ["", "### FindSimilar through the server (one worker, sequential NearDupClient, in turns with the "
                  "empty health Check)", ""]
    rows, servers = [], []
    for row in results["rows"]:
        for path, key in PATHS:
            server = row[key]
            if "kinds" not in server:
                rows.append([f"{row['articles']:,}", path, server.get("skipped", "—"), "", "", "", "", "", ""])
                continue
            for name, kind in server["kinds"].items():
                lat = kind["latency_ms"]
                rows.append([f"{row['articles']:,}", path, name, f(lat["p50"]), f(lat["p99"]),
                             f(kind["p50_ratio"]), f(kind["p99_ratio"]), str(kind["calls"]), str(kind["errors"])])
            worker_rss = max((w.get("RssAnon", 0) for w in server["server_memory"].values()), default=0)
            servers.append([f"{row['articles']:,}", path, f"{server['ready_seconds']:.1f}", f(worker_rss / 1e6, 0),
                            str(server["server"]["exit_code"]), str(server["server"]["internal_errors_logged"])])
    lines += table(["articles", "--search-index", "call", "p50 ms", "p99 ms", "p50 / Check", "p99 / Check", "calls",
                    "errors"], rows)
    lines += ["", "The servers:", ""]
    lines += table(["articles", "--search-index", "ready s", "worker RssAnon MB", "exit code",
                    "internal errors logged"], servers)
    lines += similar_run.phases_table(results)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = similar_run.parser(__doc__)
    parser.add_argument("--calls", type=int, help="sequential calls per kind against the server (default 2000)")
    args = parser.parse_args(argv)
    plan = similar_run.plan_of(args, parser)
    calls = args.calls or (400 if args.quick else 2000)
    similar_run.run("bench_similar_server", args, lambda work: measured(plan, calls, work),
                    markdown)


if __name__ == "__main__":
    main()
