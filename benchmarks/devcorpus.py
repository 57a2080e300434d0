"""Writes the development corpus for detection quality as JSON Lines: real texts, their republished copies and hard
negatives, labelled (benchmarks.lib.devcorpus builds it; its docstring says what it holds).

    python -m benchmarks.devcorpus [--split tune|test] [--seed N] [--size N] [--sample] --out FILE.jsonl

--sample skips the collections whose packages are not installed (a sample to try neardup on, not for figures).
"""
from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from benchmarks.lib.devcorpus import DEFAULT_SIZE, DEFAULT_SPLIT, SPLITS, generate, write_jsonl
from benchmarks.lib.paths import OUT
from benchmarks.lib.sources import SourceMissing


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=SPLITS, default=DEFAULT_SPLIT)
    parser.add_argument("--seed", type=int, help="the edits' seed (default: the split's own)")
    parser.add_argument("--size", type=int, default=DEFAULT_SIZE, help="at most this many documents")
    parser.add_argument("--out", type=Path, default=OUT / "devcorpus.jsonl")
    parser.add_argument("--sample", action="store_true",
                        help="skip collections whose packages are not installed (a sample, not for figures)")
    args = parser.parse_args(argv)
    try:
        docs = generate(args.split, args.size, args.seed, required=not args.sample)
    except SourceMissing as missing:
        parser.exit(2, f"devcorpus: {missing} (or pass --sample to skip that collection)\n")
    write_jsonl(docs, args.out)
    print(f"{len(docs)} documents in {len({d.group for d in docs})} groups ({args.split} split) → {args.out}")
    for field in ("family", "source", "lang", "length"):
        print(f"  {field}: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(getattr(d, field) for d in docs).items())))


if __name__ == "__main__":
    main()
