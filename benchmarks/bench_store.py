"""The embedded store on the request path: get_many latency for 100 random ids, open time, write throughput.

Stores of 100K and 1M articles are filled with random sketches shaped like real ones (10..64 values, ids like
article URLs; lib/store_content.py) in batches of 10,000, which measures put throughput on the way. get_many asks
for 100 ids drawn at random from the whole store, 10 % of them missing, after a warm-up pass over the store's pages
(a serving process keeps them in the page cache); every call opens a fresh read transaction, as the server does. The
machine may be noisy: medians and p99 over many calls, and the same lookups in a Python dict as a same-run yardstick
of the machine's speed (and of what an in-memory view costs), and in SQLite, the other embedded candidate, with one
prepared IN query per result set.
Goals (issue 2): get_many median <= 50 µs; open <= 1 s at 1M articles.

    python -m benchmarks.bench_store [--quick] [--sizes 100000 1000000] [--dir DIR]

writes benchmarks/out/store.json and prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import platform
import random
import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks.lib.measure import latency_us
from benchmarks.lib.paths import OUT as OUT_DIR, ROOT
from benchmarks.lib.store_content import MISSING_SHARE, RESULT_SET, SEED, article_id, batches, result_sets
from neardup.core.sketch_config import SketchConfig
from neardup.store import create_store, open_store

OUT = OUT_DIR / "store.json"
GOAL_GET_MANY_US, GOAL_OPEN_S = 50.0, 1.0


def fill(store, size: int) -> dict:
    seconds = 0.0
    stored_bytes = 0
    for batch in batches(size):
        stored_bytes += sum(len(sketch) for _, sketch in batch)
        began = time.perf_counter()
        store.put_many(batch)
        seconds += time.perf_counter() - began
    return {"articles": size, "put_seconds": seconds, "put_docs_per_s": size / seconds,
            "sketch_bytes_per_article": stored_bytes / size}


def sqlite_baseline(path: Path, size: int, sets: list[list[str]]) -> dict:
    """The same content in SQLite (the other embedded candidate), read the cheapest way: one prepared
    `WHERE id IN (...)` query per result set, on a read-only connection kept open, as a server would."""
    with sqlite3.connect(path) as writer:
        writer.execute("CREATE TABLE sketches (id TEXT PRIMARY KEY, sketch BLOB NOT NULL) WITHOUT ROWID")
        for batch in batches(size):
            writer.executemany("INSERT INTO sketches VALUES (?, ?)", batch)
    began = time.perf_counter()
    reader = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
    open_ms = (time.perf_counter() - began) * 1000
    query = f"SELECT id, sketch FROM sketches WHERE id IN ({', '.join('?' * RESULT_SET)})"

    def get_many(ids: list[str]) -> list[bytes | None]:
        found = dict(reader.execute(query, ids))
        return [found.get(doc_id) for doc_id in ids]

    for start in range(0, size, 1000):  # the same warm-up as the LMDB store's
        reader.execute(f"SELECT count(sketch) FROM sketches WHERE id IN ({', '.join('?' * 1000)})",
                       [article_id(n) for n in range(start, start + 1000)]).fetchall()
    try:
        return {"open_ms": open_ms, "get_many_100": latency_us(get_many, [(ids,) for ids in sets])}
    finally:
        reader.close()


def measure(directory: Path, size: int, calls: int) -> dict:
    path = directory / f"store-{size}"
    began = time.perf_counter()
    with create_store(path, SketchConfig(), []) as store:
        row = fill(store, size)
    row["build_seconds"] = time.perf_counter() - began

    began = time.perf_counter()
    store = open_store(path, readonly=True)
    row["open_ms"] = (time.perf_counter() - began) * 1000
    with store:
        rng = random.Random(SEED)
        began = time.perf_counter()
        store.get_many([article_id(n) for n in rng.sample(range(size), RESULT_SET)])
        row["first_get_many_ms"] = (time.perf_counter() - began) * 1000
        for start in range(0, size, 1000):  # warm-up: every page once, as a serving process would have them
            store.get_many([article_id(n) for n in range(start, min(size, start + 1000))])
        sets = result_sets(size, calls, rng)
        row["get_many_100"] = latency_us(store.get_many, [(ids,) for ids in sets])
        # the same lookups in a dict (what an in-memory view costs): calibrates this machine's speed
        in_memory = {doc_id: sketch for ids in sets for doc_id, sketch in zip(ids, store.get_many(ids))}
        row["dict_100"] = latency_us(lambda ids: list(map(in_memory.get, ids)), [(ids,) for ids in sets])
        row["generation"] = latency_us(store.generation, [()] * calls)
        found = sum(sketch is not None for sketch in store.get_many(sets[0]))
        assert found == RESULT_SET - int(RESULT_SET * MISSING_SHARE), found
    row["disk_bytes_per_article"] = (path / "data.mdb").stat().st_size / size
    row["sqlite"] = sqlite_baseline(directory / f"store-{size}.sqlite", size, sets)
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100K articles only, 2,000 calls")
    parser.add_argument("--sizes", type=int, nargs="+", help="articles per store (default 100000 1000000)")
    parser.add_argument("--calls", type=int, help="get_many calls measured per store (default 20000)")
    parser.add_argument("--dir", type=Path, help="where the stores are built (default: a temporary directory)")
    args = parser.parse_args(argv)
    sizes = args.sizes or ([100_000] if args.quick else [100_000, 1_000_000])
    calls = args.calls or (2_000 if args.quick else 20_000)
    with tempfile.TemporaryDirectory(prefix="neardup-bench-store-", dir=args.dir) as scratch:
        rows = [measure(Path(scratch), size, calls) for size in sizes]
    report = {"command": "python -m benchmarks.bench_store" + (" --quick" if args.quick else ""),
              "backend": "lmdb", "result_set": RESULT_SET, "missing_share": MISSING_SHARE, "seed": SEED,
              "python": platform.python_version(), "machine": platform.machine(),
              "goals": {"get_many_median_us": GOAL_GET_MANY_US, "open_s_at_1M": GOAL_OPEN_S}, "rows": rows}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")

    print(f"LMDB store, get_many of {RESULT_SET} random ids ({MISSING_SHARE:.0%} missing), {calls:,} calls per "
          f"store after warm-up; goals: median <= {GOAL_GET_MANY_US:.0f} µs, open <= {GOAL_OPEN_S:.0f} s at 1M\n")
    print("| articles | get_many median µs | p99 µs | dict, same ids µs | SQLite, same ids µs | generation() µs "
          "| open ms | SQLite open ms | first get_many ms | put docs/s | disk bytes/article |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['articles']:,} | {row['get_many_100']['median_us']:.1f} | {row['get_many_100']['p99_us']:.1f} "
              f"| {row['dict_100']['median_us']:.1f} | {row['sqlite']['get_many_100']['median_us']:.1f} "
              f"| {row['generation']['median_us']:.1f} | {row['open_ms']:.1f} | {row['sqlite']['open_ms']:.1f} "
              f"| {row['first_get_many_ms']:.2f} | {row['put_docs_per_s']:,.0f} "
              f"| {row['disk_bytes_per_article']:.0f} |")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
