"""Writes the labelled job-ad set of issue 13 (items.jsonl and pairs.jsonl) and prints how much text each kind of
pair shares (benchmarks.lib.jobads generates it; its docstring and benchmarks/jobads.md say what it holds).

    python -m benchmarks.jobads --split tune|test [--size N] [--seed N] [--out DIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.lib.devcorpus import SPLITS
from benchmarks.lib.jobads import DEFAULT_SIZE, DEFAULT_SPLIT, generate, report, write
from benchmarks.lib.paths import OUT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, default=DEFAULT_SPLIT)
    parser.add_argument("--seed", type=int, help="the split's seed unless given")
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="items (half English, half Dutch)")
    parser.add_argument("--out", type=Path, help="directory for items.jsonl and pairs.jsonl "
                        "(default benchmarks/out/jobads-SPLIT)")
    args = parser.parse_args(argv)
    if args.size < 20:
        parser.error("--size must be at least 20")
    out = args.out or OUT / f"jobads-{args.split}"
    data = generate(args.split, args.size, args.seed)
    write(data, out)
    print(report(data, args.split))


if __name__ == "__main__":
    main()
