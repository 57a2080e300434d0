"""The run the corpus-search benchmarks (bench_similar_*.py) share: the generated corpus written chunk by chunk into a
store with postings (and, for the Upsert measurement, one without), the queries drawn on the way, MinHash signatures
and a MinHashLSH grown with the corpus when a script asks, and at each size measured the store as it then is; plus
their common options, process memory, the in-memory search index and the report's header.

Queries are drawn for the FindSimilar measurements and for the MinHashLSH comparison in every script, as the one run
that made all six measurements before they were split drew them (MinHashLSH's share of the draws depends on its
size, LSH_BYTES_PER_ARTICLE and the memory available), so each script measures on the same queries as before."""
from __future__ import annotations

import argparse
import gc
import math
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from benchmarks.lib import measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from benchmarks.lib.similar_corpus import (CHUNK, COUNTER_BITS, GROUPED, HOT_COUNTERS, K, NUM_PERM, SEED, SHORT,
                                           SINGLE, Chunk, bottom_k, check_signatures, generate_chunk, hot_values,
                                           signatures)
from benchmarks.lib.similar_queries import KINDS, Corpus, Query, pick_queries
from neardup.core.vocabulary import DEFAULT_METRIC, DEFAULT_THRESHOLD
from neardup.core.sketch_config import SketchConfig
from neardup.runtime.params import SimilarParams
from neardup.runtime.similar_search import SimilarSearch
from neardup.store import create_store
from neardup.runtime.view import LiveView

TOP = 10
JACCARD_TOP_K = 1_000          # FindSimilar's top_k when its whole answer is compared with the Jaccard truth
LSH_BYTES_PER_ARTICLE = 10_000  # what MinHashLSH needs (measured ~8 KB): skipped when the machine lacks it


@dataclass
class Plan:
    """What a run generates and draws: its sizes (multiples of CHUNK), queries per kind of the FindSimilar
    measurements and of the MinHashLSH comparison, the largest size MinHashLSH is built at, how many articles also
    go to a store without postings (0: none)."""

    sizes: list[int]
    queries: int
    lsh_queries: int
    lsh_max: int = 1_000_000
    plain: int = 0
    threshold: float = DEFAULT_THRESHOLD


def lsh_sizes(sizes: list[int], lsh_max: int) -> tuple[int, dict[int, str]]:
    """The largest size MinHashLSH is built at (0: none) and, per larger size, why it is not."""
    available = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                         if line.startswith("MemAvailable:"))) * 1024
    lsh_size = max([s for s in sizes if s <= lsh_max and s * LSH_BYTES_PER_ARTICLE < 0.7 * available], default=0)
    skipped = {s: (f"MinHashLSH needs ~{s * LSH_BYTES_PER_ARTICLE / 1e9:.0f} GB; "
                   f"{available / 1e9:.0f} GB available" if s <= lsh_max else "--lsh-max")
               for s in sizes if s > lsh_size}
    return lsh_size, skipped


def rss_anon() -> int:
    """Bytes of this process's anonymous resident memory (heap, not mapped files)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) * 1024
    return 0


class Lsh:
    """datasketch MinHashLSH grown with the corpus: build time and memory summed over the inserts."""

    def __init__(self, threshold: float):
        from datasketch import MinHashLSH

        self.lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
        self.count = 0
        self.seconds = 0.0
        self.memory = 0

    def insert(self, ids: list[str], sig: np.ndarray) -> None:
        from datasketch import LeanMinHash

        gc.collect()
        before = rss_anon()
        began = time.perf_counter()
        with self.lsh.insertion_session() as session:
            for doc_id, values in zip(ids, sig):
                session.insert(doc_id, LeanMinHash(seed=1, hashvalues=values, scheme="affine32"),
                               check_duplication=False)
        self.seconds += time.perf_counter() - began
        self.memory += rss_anon() - before
        self.count += len(ids)


@dataclass
class Built:
    """The corpus as far as it is written: the store (open, with postings), what is kept of every article, the
    queries per size, and what writing it took."""

    store: object
    store_path: Path
    corpus: Corpus = field(default_factory=Corpus)
    queries: dict[int, list[Query]] = field(default_factory=dict)
    lsh_queries: dict[int, list[Query]] = field(default_factory=dict)
    lsh_size: int = 0
    lsh_skipped: dict[int, str] = field(default_factory=dict)
    sig: np.ndarray | None = None
    lsh: Lsh | None = None
    writes: list[dict] = field(default_factory=list)
    plain_writes: list[dict] = field(default_factory=list)
    plain_usage: dict | None = None
    phases: dict[str, float] = field(default_factory=lambda: {"generate": 0.0, "sketch": 0.0, "minhash": 0.0,
                                                              "lsh_insert": 0.0})
    chunks: list[Chunk] = field(default_factory=list)

    def corpus_summary(self) -> dict:
        """Articles by kind, mean set and sketch sizes, hot values per article, groups."""
        all_kinds = np.concatenate(self.corpus.kinds)
        kinds = {name: int((all_kinds == code).sum())
                 for name, code in (("grouped", GROUPED), ("singleton", SINGLE), ("short", SHORT))}
        lengths, groups, hot_bits = self.corpus.arrays()
        articles = len(self.corpus.sketches)
        return {"articles": articles, "by_kind": kinds, "mean_set_size": float(lengths.mean()),
                "mean_sketch_values": sum(map(len, self.corpus.sketches)) / 4 / articles,
                "mean_hot_values_per_article": float(np.bitwise_count(hot_bits).mean()),
                "groups": int(len(np.unique(groups)))}


def corpus_sizes(plan: Plan, work: Path, *, lsh: bool = False, keep_chunks: bool = False) -> Iterator[tuple[int,
                                                                                                            Built]]:
    """Writes the corpus chunk by chunk into a store in `work` and yields (size, state) when it holds each size of
    the plan, to be measured then. With lsh, MinHash signatures are computed and a MinHashLSH grown up to its size
    (freed once measured there); with keep_chunks, the generated chunks are kept (a full scan checks the truth)."""
    sizes = sorted(set(plan.sizes))
    largest = sizes[-1]
    chunks = math.ceil(largest / CHUNK)
    if chunks > (HOT_COUNTERS >> COUNTER_BITS):
        raise SystemExit(f"at most {(HOT_COUNTERS >> COUNTER_BITS) * CHUNK:,} articles")
    hot = hot_values()
    lsh_size, lsh_skipped = lsh_sizes(sizes, plan.lsh_max)
    plain_size = min(largest, plan.plain)
    indexed_path, plain_path = work / "store", work / "store-plain"
    state = Built(create_store(indexed_path, SketchConfig(), [], indexed=True), indexed_path,
                  queries={size: [] for size in sizes}, lsh_queries={size: [] for size in sizes},
                  lsh_size=lsh_size, lsh_skipped=lsh_skipped)
    plain = create_store(plain_path, SketchConfig(), [], indexed=False) if plain_size else None
    permutations = None
    if lsh and lsh_size:
        from datasketch import MinHash

        permutations = MinHash(num_perm=NUM_PERM, seed=1).permutations
        state.sig = np.empty((lsh_size, NUM_PERM), np.uint32)
        state.lsh = Lsh(plan.threshold)
    qrng = np.random.default_rng([SEED, 1])
    corpus, phases = state.corpus, state.phases
    try:
        for index in range(chunks):
            first = index * CHUNK
            count = min(CHUNK, largest - first)
            began = time.perf_counter()
            chunk = generate_chunk(SEED, index, count, hot)
            phases["generate"] += time.perf_counter() - began
            began = time.perf_counter()
            sketches = bottom_k(chunk)
            phases["sketch"] += time.perf_counter() - began
            corpus.add(chunk, sketches)
            items = list(zip(corpus.ids[first:first + count], sketches))
            began = time.perf_counter()
            state.store.put_many(items)
            seconds = time.perf_counter() - began
            state.writes.append({"before": first, "articles": count, "seconds": seconds,
                                 "articles_per_s": count / seconds})
            if plain is not None and first < plain_size:
                began = time.perf_counter()
                plain.put_many(items)
                seconds = time.perf_counter() - began
                state.plain_writes.append({"before": first, "articles": count, "seconds": seconds,
                                           "articles_per_s": count / seconds})
                if first + count >= plain_size:
                    state.plain_usage = plain.disk_usage()
                    plain.close()
                    plain = None
                    shutil.rmtree(plain_path)
            if state.lsh is not None and first < lsh_size:
                began = time.perf_counter()
                state.sig[first:first + count] = signatures(chunk, permutations)
                if index == 0:
                    check_signatures(chunk, state.sig[:count], permutations)
                phases["minhash"] += time.perf_counter() - began
                began = time.perf_counter()
                state.lsh.insert(corpus.ids[first:first + count], state.sig[first:first + count])
                phases["lsh_insert"] += time.perf_counter() - began
            for size in sizes:  # queries spread over the chunks of the size
                if first < size:
                    state.queries[size] += pick_queries(chunk, first, max(1, round(plan.queries * CHUNK / size)),
                                                        qrng)
                    if size <= lsh_size:
                        state.lsh_queries[size] += pick_queries(
                            chunk, first, max(1, round(plan.lsh_queries * CHUNK / size)), qrng)
            if keep_chunks:
                state.chunks.append(chunk)
            del chunk, items
            print(f"chunk {index + 1}/{chunks}: {first + count:,} articles; put_many "
                  f"{state.writes[-1]['seconds']:.1f} s", flush=True)
            done = first + count
            if done in sizes:
                yield done, state
            if state.lsh is not None and done >= lsh_size:
                state.lsh = None
                gc.collect()
    finally:
        state.store.close()
        if plain is not None:
            plain.close()


# --- measuring at a size -------------------------------------------------------------------------------------------

def settle() -> None:
    """The corpus and MinHashLSH's millions of objects: no collector pass over them while timing."""
    gc.collect()
    gc.freeze()


def phase_timer(row: dict, size: int) -> Callable[[str, float], None]:
    """phase(name, began): the seconds since `began` recorded in row["phases"] and printed."""
    row.setdefault("phases", {})

    def phase(name: str, began: float) -> None:
        row["phases"][name] = time.perf_counter() - began
        print(f"  {size:,}: {name} {row['phases'][name]:.1f} s", flush=True)
    return phase


def warm(engine: SimilarSearch, corpus: Corpus, queries: list[Query], threshold: float) -> None:
    """Every query's pages once, as a serving process would have them."""
    for q in queries:
        engine.find_similar(corpus.ids[q.article], SimilarParams(TOP, threshold, DEFAULT_METRIC))


def memory_index(store, size: int) -> tuple[LiveView, dict]:
    """The in-memory search index, built as a `--search-index memory` worker builds it: the view, and its
    statistics with the anonymous memory this process grew by (also per article)."""
    gc.collect()
    before = rss_anon()
    view = LiveView(store, cache_size=0, search_index=True)
    stats = {**view.search_index.stats(), "rss_anon_bytes": rss_anon() - before}
    stats["rss_anon_bytes_per_article"] = stats["rss_anon_bytes"] / size
    return view, stats


def percentiles_us(samples: list[float]) -> dict:
    ordered = sorted(samples)
    return {"p50_us": float(np.percentile(ordered, 50, method="higher")),
            "p99_us": float(np.percentile(ordered, 99, method="higher")), "calls": len(ordered)}


def queries_per_kind(queries: list[Query]) -> dict[str, int]:
    return {k: sum(q.kind == k for q in queries) for k in KINDS}


# --- the command line and the report -----------------------------------------------------------------------------

def parser(doc: str) -> argparse.ArgumentParser:
    """The options every corpus-search script takes; a script adds its own."""
    found = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    found.add_argument("--quick", action="store_true", help="a smoke run: 100,000 articles, 25 queries per kind")
    found.add_argument("--sizes", type=int, nargs="+", help="stored articles to measure at, multiples of "
                       f"{CHUNK:,} (default 100000 1000000)")
    found.add_argument("--queries", type=int, help="queries per kind (grouped, singleton, short, hot; default 100)")
    found.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD, help="for both metrics")
    found.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    found.add_argument("--dir", type=Path, help="where the stores are built (default: a temporary directory)")
    return found


def plan_of(args: argparse.Namespace, found: argparse.ArgumentParser, lsh_queries: int | None = None,
            lsh_max: int = 1_000_000, plain: int = 0) -> Plan:
    """The run's plan from the common options (their defaults filled in)."""
    args.sizes = args.sizes or ([100_000] if args.quick else [100_000, 1_000_000])
    if any(size % CHUNK for size in args.sizes):
        found.error(f"sizes must be multiples of {CHUNK:,}")
    args.queries = args.queries or (25 if args.quick else 100)
    return Plan(args.sizes, args.queries, lsh_queries or (100 if args.quick else 500), lsh_max, plain,
                args.threshold)


def main(script: str, doc: str, measured: Callable[[Plan, Path], dict], markdown: Callable[[dict], str],
         argv: list[str] | None = None) -> dict:
    """The whole `main` of a script without options of its own: parse, plan, run."""
    found = parser(doc)
    args = found.parse_args(argv)
    plan = plan_of(args, found)
    return run(script, args, lambda work: measured(plan, work), markdown)


def run(script: str, args: argparse.Namespace, measured: Callable[[Path], dict],
        markdown: Callable[[dict], str]) -> dict:
    """One script's run: `measured(work)` in a scratch directory gives the rows and the script's own figures; with
    the command, the machine and the seconds they are written as out/SCRIPT.json and .md (also printed)."""
    stem = script
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    command = f"python -m benchmarks.{script}" + (" --quick" if args.quick else "")
    if sorted(args.sizes) != ([100_000] if args.quick else [100_000, 1_000_000]):
        command += " --sizes " + " ".join(map(str, sorted(args.sizes)))
    started = time.perf_counter()
    results = {"command": command, "machine": measure.machine(), "seed": SEED, "threshold": args.threshold,
               "chunk": CHUNK, "k": K}
    with tempfile.TemporaryDirectory(prefix=f"neardup-{stem.replace('_', '-')}-", dir=args.dir) as scratch:
        results.update(measured(Path(scratch)))
    results["seconds"] = time.perf_counter() - started
    text = markdown(results)
    save(args.out, stem, results, text)
    print(text)
    print(f"wrote {args.out / (stem + '.json')}, {stem}.md ({results['seconds']:.0f} s)")
    return results


def header(results: dict, title: str) -> list[str]:
    """The report's title line, the machine and the corpus; then the goals' table when the script has goals."""
    m = results["machine"]
    corpus = results["corpus"]
    lines = [f"## {title} ({m['date']}, commit {m['commit']})", "",
             f"`{results['command']}`: {m['nproc']} × {m['cpu']}, Python {m['python']}, grpcio {m['grpcio']}; "
             f"{results['seconds']:.0f} s. Generated corpus (seed {results['seed']}): "
             f"{corpus['by_kind']['grouped']:,} grouped, {corpus['by_kind']['singleton']:,} singleton and "
             f"{corpus['by_kind']['short']:,} short articles in {corpus['groups']:,} groups; sets of "
             f"{corpus['mean_set_size']:.0f} values on average, sketches of {corpus['mean_sketch_values']:.1f}, "
             f"{corpus['mean_hot_values_per_article']:.2f} hot values per article. Threshold "
             f"{results['threshold']}, written in batches of {CHUNK:,}."]
    if results.get("goals"):
        lines += ["", *table(["goal", "measured", "met"],
                             [[g["goal"], g["measured"], "yes" if g["met"] else "**no**"] for g in results["goals"]])]
    return lines


def phases_table(results: dict) -> list[str]:
    """Seconds of the run's phases: generating and writing the corpus, then each size's measurements."""
    phases = [[name, f"{seconds:.1f}"] for name, seconds in results["phases"].items()]
    for row in results["rows"]:
        phases += [[f"{row['articles']:,}: {name}", f"{seconds:.1f}"]
                   for name, seconds in row.get("phases", {}).items()]
    return ["", "### Phases (seconds)", "", *table(["phase", "seconds"], phases)]


def cell(value, digits=2) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"
