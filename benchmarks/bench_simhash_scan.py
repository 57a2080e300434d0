"""A simhash store's corpus search in process (SimilarSearch.find_similar on an LMDB store, no gRPC): from its
permutation tables at 61/64 (3 bits, what the tables guarantee) against the exact fingerprint scan at the
store's default, 46/64 (18 bits), timed in turns on the same queries; and the first search after a write, which
reads every fingerprint of the new state again.

    python -m benchmarks.bench_simhash_scan [--sizes 100000 1000000] [--queries 200] [--out DIR]

Fingerprints are generated: groups of near copies (a few bits flipped) among random ones. Writes
bench_simhash_scan.json and .md in --out (default benchmarks/out; also printed).
"""
from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from benchmarks.lib import measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from neardup.core.sketch_config import SketchConfig
from neardup.core.vocabulary import HAMMING, SIMHASH, SIMHASH_THRESHOLD
from neardup.runtime.documents import RequestDocument
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.runtime.writer import Writer
from neardup.store import create_store

TABLES_THRESHOLD = 61 / 64
BATCH = 20_000


def fingerprints(size: int, seed: int = 7) -> list[int]:
    """A fifth of the articles are near copies (1–20 bits flipped) of one of the others."""
    rng = random.Random(seed)
    values = [rng.getrandbits(64) for _ in range(size)]
    for i in range(0, size, 5):
        values[i] = values[rng.randrange(size)] ^ sum(1 << bit for bit in rng.sample(range(64), rng.randint(1, 20)))
    return values


def build(path: Path, values: list[int]):
    config = SketchConfig(kind=SIMHASH)
    store = create_store(path, config, [])
    for start in range(0, len(values), BATCH):
        store.put_many([(f"d{i}", value.to_bytes(8, "little")) for i, value in enumerate(values[start:start + BATCH],
                                                                                         start)])
    return store


def measured(size: int, queries: int) -> dict:
    with tempfile.TemporaryDirectory() as work:
        began = time.perf_counter()
        values = fingerprints(size)
        store = build(Path(work) / "store", values)
        row = {"articles": size, "build_s": time.perf_counter() - began}
        served = ServedStore(store)
        engine, writer = SimilarSearch(served), Writer(served)
        ids = [(f"d{i}",) for i in random.Random(1).sample(range(size), queries)]
        params = {name: SimilarParams(top_k=10, threshold=threshold, metric=HAMMING)
                  for name, threshold in (("tables", TABLES_THRESHOLD), ("scan", SIMHASH_THRESHOLD))}
        began = time.perf_counter()
        engine.find_similar(ids[0][0], params["scan"])  # reads the fingerprints of this state
        row["first_scan_ms"] = (time.perf_counter() - began) * 1000
        row["latency"] = measure.interleaved_us(
            {name: (lambda doc_id, p=p: engine.find_similar(doc_id, p), ids) for name, p in params.items()}, 3)
        after_write = []
        for round_ in range(5):
            fingerprint = random.Random(round_).getrandbits(64).to_bytes(8, "little")
            writer.upsert([RequestDocument(f"new{round_}", sketch=fingerprint)])
            began = time.perf_counter()
            engine.find_similar(ids[round_][0], params["scan"])
            after_write.append((time.perf_counter() - began) * 1000)
        row["after_write_ms"] = sorted(after_write)[len(after_write) // 2]
        row["scan_over_tables"] = row["latency"]["scan"]["median_us"] / row["latency"]["tables"]["median_us"]
        store.close()
    return row


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    rows = [measured(size, args.queries) for size in args.sizes]
    text = "\n".join(["# SimHash corpus search: permutation tables against the exact scan", "",
                      f"In process, top 10, {args.queries} stored articles as queries, 3 rounds taken in turns; the "
                      "scan at the default 46/64 (18 bits), the tables at 61/64 (3 bits).", "",
                      *table(["articles", "tables median µs", "scan median µs", "scan p99 µs", "scan ÷ tables",
                              "first scan of a state ms", "search after a write ms (median of 5)"],
                             [[f"{r['articles']:,}", f"{r['latency']['tables']['median_us']:.0f}",
                               f"{r['latency']['scan']['median_us']:.0f}", f"{r['latency']['scan']['p99_us']:.0f}",
                               f"{r['scan_over_tables']:.2f}", f"{r['first_scan_ms']:.0f}",
                               f"{r['after_write_ms']:.0f}"] for r in rows]), ""])
    save(args.out, "bench_simhash_scan", {"machine": measure.machine(), "rows": rows}, text)
    print(text)


if __name__ == "__main__":
    main()
