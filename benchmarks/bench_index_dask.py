"""`neardup index` throughput: the local path (1 and 2 processes) against --engine dask on a LocalCluster of 1 and 2
worker processes, in the same run, on the same corpus; every store checked equal to the local one (digest).

The corpus is the development corpus (devcorpus.py) --copies times, each copy's edits from its own seed, under new
ids, so it is big enough for many partitions. Each configuration runs `neardup index` as a user does (a new
process, a new store) and the figure is its summary's docs/s (the whole command after argument parsing: reading,
sketching, learning the stop-list, writing the LMDB store with postings from the client) with the seconds of each
phase (the writes are the client's alone on every engine, so they bound what workers can gain); configurations take
turns round by round and each keeps its best round. A cluster's workers are started and warmed (their first task
imports NLTK) before the timing, as long-lived workers of a real cluster would be. On a 2-core machine 2 workers
can at best double one.

    python -m benchmarks.bench_index_dask [--quick] [--copies N] [--rounds N] [--partition-bytes N]

writes benchmarks/out/index_dask.json and prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import tempfile
import time
from pathlib import Path

from distributed import Client, LocalCluster

from benchmarks.lib import devcorpus
from benchmarks.lib.paths import OUT as OUT_DIR, ROOT
from benchmarks.lib.report import table
from benchmarks.lib.server_process import NEARDUP
from neardup.store import open_store

OUT = OUT_DIR / "index_dask.json"


def write_corpus(path: Path, copies: int, size: int) -> tuple[int, int]:
    """The development corpus `copies` times, each copy edited with its own seed, ids made distinct; returns
    (documents, bytes)."""
    documents = 0
    with path.open("w", encoding="utf-8") as out:
        for copy in range(copies):
            for doc in devcorpus.generate(devcorpus.DEFAULT_SPLIT, size, seed=copy + 1):
                documents += 1
                out.write(json.dumps({"id": f"{copy}-{doc.id}", "text": doc.text, "lang": doc.lang},
                                     ensure_ascii=False) + "\n")
    return documents, path.stat().st_size


def run_index(corpus: Path, store: Path, *args: str) -> dict:
    """docs/s of one `neardup index` run and the seconds of its phases, from its summary."""
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(store), *args], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"neardup index {' '.join(args)} failed:\n{done.stderr}")
    found = re.search(r"\(([\d,]+) docs/s; reading and sketching ([\d.]+) s, stop-list ([\d.]+) s, writing ([\d.]+) s",
                      done.stdout)
    return {"docs_per_s": float(found.group(1).replace(",", "")), "sketching_s": float(found.group(2)),
            "stoplist_s": float(found.group(3)), "writing_s": float(found.group(4))}


def digest(store: Path) -> str:
    with open_store(store, readonly=True) as opened:
        return opened.digest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 copies of 1,000 documents, 1 round")
    parser.add_argument("--copies", type=int, default=6, help="copies of the development corpus (default 6)")
    parser.add_argument("--size", type=int, default=devcorpus.DEFAULT_SIZE,
                        help=f"documents of the development corpus (default {devcorpus.DEFAULT_SIZE})")
    parser.add_argument("--rounds", type=int, default=2, help="turns per configuration; the best counts (default 2)")
    parser.add_argument("--partition-bytes", type=int, default=2**20,
                        help="--partition-bytes of the dask runs (default 1 MiB: tens of partitions here)")
    args = parser.parse_args(argv)
    copies, size, rounds = (2, 1000, 1) if args.quick else (args.copies, args.size, args.rounds)

    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="bench-index-dask-") as scratch:
        root = Path(scratch)
        documents, corpus_bytes = write_corpus(root / "corpus.jsonl", copies, size)
        clusters = {workers: LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                          dashboard_address=":0") for workers in (1, 2)}
        try:
            for cluster in clusters.values():
                with Client(cluster, set_as_default=False) as client:
                    client.run(lambda: __import__("neardup.core.nltk_text").core.nltk_text.load_nltk())
            dask = ["--engine", "dask", "--partition-bytes", str(args.partition_bytes)]
            configurations = {
                "local, 1 process": [],
                "local, --workers 2": ["--workers", "2"],
                "dask, 1 worker": [*dask, "--scheduler", clusters[1].scheduler_address],
                "dask, 2 workers": [*dask, "--scheduler", clusters[2].scheduler_address],
            }
            best = {name: {"docs_per_s": 0.0} for name in configurations}
            digests = {}
            for turn in range(rounds):
                for number, (name, options) in enumerate(configurations.items()):
                    store = root / f"store-{turn}-{number}"
                    best[name] = max(best[name], run_index(root / "corpus.jsonl", store, *options),
                                     key=lambda run: run["docs_per_s"])
                    digests.setdefault(name, set()).add(digest(store))
        finally:
            for cluster in clusters.values():
                cluster.close()
    load.append(os.getloadavg()[0])
    equal = len(set.union(*digests.values())) == 1
    baseline = best["local, 1 process"]["docs_per_s"]
    rows = [{"configuration": name, **run, "ratio_to_local": run["docs_per_s"] / baseline}
            for name, run in best.items()]
    report = {"command": "python -m benchmarks.bench_index_dask" + (" --quick" if args.quick else ""),
              "documents": documents, "bytes": corpus_bytes, "partition_bytes": args.partition_bytes,
              "rounds": rounds, "cores": os.cpu_count(), "load_average_1min": {"before": load[0], "after": load[1]},
              "stores_equal": equal,
              "python": platform.python_version(), "rows": rows}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{documents:,} documents ({corpus_bytes / 1e6:.1f} MB), {os.cpu_count()} cores, best of {rounds} "
          f"round(s); dask partitions of {args.partition_bytes:,} bytes; load average (1 min) {load[0]:.1f} before, "
          f"{load[1]:.1f} after; every store's digest equal: {equal}\n")
    print("\n".join(table(["configuration", "docs/s", "x local, 1 process", "reading + sketching s", "stop-list s",
                           "writing s"],
                          [[row["configuration"], f"{row['docs_per_s']:,.0f}", f"{row['ratio_to_local']:.2f}",
                            f"{row['sketching_s']:.1f}", f"{row['stoplist_s']:.1f}", f"{row['writing_s']:.1f}"]
                           for row in rows])))
    print(f"\nwrote {OUT.relative_to(ROOT)}")
    if not equal:
        raise SystemExit("the stores differ")


if __name__ == "__main__":
    started = time.monotonic()
    main()
    print(f"{time.monotonic() - started:.0f} s")
