"""One client process against `neardup serve --workers 1` and `--workers 2`: Dedup calls per second from one
NearDupClient shared by several threads, with the session cache off so every call does the work. With 2 workers,
once through the shared port (one connection: one worker) and once through every worker's own port
(`--worker-ports`, the client's round robin); which worker answered is counted by Info.

    python -m benchmarks.worker_spread [--seconds 10] [--threads 8] [--out DIR]

The store is the shipped sample (benchmarks/data/sample.jsonl.gz), each call the Dedup of its first 100 ids.
Writes worker_spread.json and .md in --out (default benchmarks/out; also printed). On a machine with few cores
the client process competes with the workers for them: read the ratios with the machine's cores in mind.
"""
from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import threading
import time
from pathlib import Path

from benchmarks.lib import measure
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from tests.server_process import free_ports, index, serving
from neardup_client import NearDupClient

SAMPLE = Path(__file__).parent / "data" / "sample.jsonl.gz"


def rate(target: str, ids: list[str], seconds: float, threads: int) -> dict:
    """Dedup calls/s of one client shared by `threads` threads, and the workers Info reached."""
    calls = [0] * threads
    with NearDupClient(target, timeout=30) as client:
        client.wait_until_ready(10)
        workers = {client.info().worker for _ in range(40)}
        stop = time.monotonic() + seconds

        def run(slot: int) -> None:
            while time.monotonic() < stop:
                client.dedup(ids)
                calls[slot] += 1

        pool = [threading.Thread(target=run, args=(slot,)) for slot in range(threads)]
        began = time.monotonic()
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        elapsed = time.monotonic() - began
    return {"calls_per_s": sum(calls) / elapsed, "workers_reached": len(workers)}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        corpus = Path(work) / "sample.jsonl"
        corpus.write_bytes(gzip.decompress(SAMPLE.read_bytes()))
        ids = [json.loads(line)["id"] for line in corpus.read_text().splitlines()[:100]]
        store = Path(work) / "store"
        assert index(corpus, store).returncode == 0
        rows = {}
        with serving(store, "--cache-size", "0", workers=1) as one:
            rows["1 worker"] = rate(one.target, ids, args.seconds, args.threads)
        first = free_ports(2)
        with serving(store, "--cache-size", "0", "--worker-ports", str(first), workers=2) as two:
            rows["2 workers, shared port"] = rate(two.target, ids, args.seconds, args.threads)
            rows["2 workers, worker ports"] = rate(f"127.0.0.1:{first},127.0.0.1:{first + 1}", ids, args.seconds,
                                                   args.threads)
    base = rows["1 worker"]["calls_per_s"]
    for row in rows.values():
        row["vs_1_worker"] = row["calls_per_s"] / base
    text = "\n".join(["# One client process against 1 and 2 workers", "",
                      f"Dedup of 100 ids, cache off, {args.threads} threads sharing one client, {args.seconds:g} s "
                      "each, in one run.", "",
                      *table(["server, client target", "calls/s", "× 1 worker", "workers reached"],
                             [[name, f"{row['calls_per_s']:,.0f}", f"{row['vs_1_worker']:.2f}",
                               str(row["workers_reached"])] for name, row in rows.items()]), ""])
    save(args.out, "worker_spread", {"machine": measure.machine(), "threads": args.threads,
                                     "seconds": args.seconds, "rows": rows}, text)
    print(text)


if __name__ == "__main__":
    main()
