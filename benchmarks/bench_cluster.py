"""`neardup cluster` at scale, as a user runs it: time, peak memory and the stability of cluster ids.

    python -m benchmarks.bench_cluster [--articles 1000000] [--workers 2] [--method complete] [--dir DIR]

Builds a store of the corpus-search benchmarks' generated corpus (lib/similar_corpus.py: groups of edited copies,
singletons, short texts, hot values), then runs the real commands under /usr/bin/time -v:
  1. `neardup pairs --workers N --output pairs.jsonl`;
  2. `neardup cluster --method M --pairs pairs.jsonl`, twice: the second run must change no id;
  3. 1 % new articles through Writer.upsert (each gets a cluster at once);
  4. `neardup cluster --method M --workers N` (pairs found again), and the share of old articles keeping their id.
Prints one line per step (exit code, seconds, the command's summary, peak RSS).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.lib import similar_corpus
from tests.server_process import NEARDUP
from neardup.core.sketch_config import SketchConfig
from neardup.runtime.documents import RequestDocument
from neardup.runtime.served_store import ServedStore
from neardup.runtime.writer import Writer
from neardup.store import create_store, open_store



def timed(step: str, *args: str) -> None:
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v", *NEARDUP, *args], capture_output=True, text=True)
    peak = next((line.split(":")[1].strip() for line in done.stderr.splitlines() if "Maximum resident" in line), "?")
    summary = next((line for line in done.stderr.splitlines() if line.startswith(("pairs:", "cluster:"))), "")
    print(f"{step}: exit {done.returncode}, {time.perf_counter() - started:.0f} s, peak RSS {int(peak) / 1e6:.2f} GB"
          f"\n    {summary}", flush=True)
    if done.returncode not in (0, 3):
        raise SystemExit(done.stderr[-2000:])


def exported(store: Path) -> dict[str, int]:
    out = subprocess.run([*NEARDUP, "clusters", "--store", str(store), "--export", "-"], capture_output=True,
                         text=True, check=True).stdout
    return {record["id"]: record["cluster"] for record in map(json.loads, out.splitlines())}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=1_000_000, help="a multiple of 50,000")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--method", default="complete", choices=("components", "complete", "communities"))
    parser.add_argument("--dir", type=Path, help="where the store is built (default: a temporary directory)")
    args = parser.parse_args(argv)
    hot = similar_corpus.hot_values()
    with tempfile.TemporaryDirectory(prefix="neardup-bench-cluster-", dir=args.dir) as scratch:
        store, pairs = Path(scratch) / "store", Path(scratch) / "pairs.jsonl"
        started = time.perf_counter()
        with create_store(store, SketchConfig(), []) as opened:
            for chunk in range(args.articles // similar_corpus.CHUNK):
                sketches = similar_corpus.bottom_k(similar_corpus.generate_chunk(similar_corpus.SEED, chunk,
                                                                                 similar_corpus.CHUNK, hot))
                opened.put_many([(f"c{chunk}-{n}", sketch) for n, sketch in enumerate(sketches)])
        print(f"store of {args.articles:,} articles built in {time.perf_counter() - started:.0f} s", flush=True)
        timed("pairs", "pairs", "--store", str(store), "--workers", str(args.workers), "--output", str(pairs))
        timed("cluster", "cluster", "--store", str(store), "--method", args.method, "--pairs", str(pairs))
        first = exported(store)
        timed("cluster again", "cluster", "--store", str(store), "--method", args.method, "--pairs", str(pairs))
        second = exported(store)
        print(f"    ids changed by the second run: {sum(first[k] != second[k] for k in first):,}", flush=True)
        new = similar_corpus.bottom_k(similar_corpus.generate_chunk(similar_corpus.SEED, 10_000, similar_corpus.CHUNK,
                                                                    hot))[:args.articles // 100]
        started = time.perf_counter()
        with open_store(store) as opened:
            engine = Writer(ServedStore(opened))
            for at in range(0, len(new), 1000):
                engine.upsert([RequestDocument(f"new-{at + n}", sketch=s) for n, s in enumerate(new[at:at + 1000])])
            unclustered = opened.clusters([f"new-{n}" for n in range(len(new))]).count(-1)
        print(f"upsert of {len(new):,} new articles: {time.perf_counter() - started:.0f} s, "
              f"{unclustered} without a cluster", flush=True)
        timed("cluster after 1 % new", "cluster", "--store", str(store), "--method", args.method, "--workers",
              str(args.workers))
        third = exported(store)
        kept = sum(third[k] == v for k, v in second.items())
        print(f"    old articles keeping their id: {kept:,} of {len(second):,} ({kept / len(second):.4f})")


if __name__ == "__main__":
    main()
