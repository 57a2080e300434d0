"""Writes the sample corpus a newcomer indexes (README's first command): the same file on every machine.

    python -m benchmarks.sample --out sample.jsonl            # the shipped sample (benchmarks/data/sample.jsonl.gz)
    python -m benchmarks.sample --rebuild                      # makes the shipped file again (needs gensim)

The sample is the development corpus's tune split (benchmarks.lib.devcorpus) cut to its news stories, encyclopedia
sections and job-ad templates, with their republished copies: ids are `story-N` in file order, and its first 100
lines are one search result set of `news` stories in which about a third are copies of a story ranked above them,
as a search frontend sees (benchmarks.lib.sample says how it is cut).
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import sys
from pathlib import Path

from benchmarks.lib.paths import DATA

SHIPPED = DATA / "sample.jsonl.gz"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("sample.jsonl"), help="where the sample goes")
    parser.add_argument("--rebuild", action="store_true",
                        help=f"make {SHIPPED.name} again from the development corpus (needs gensim's test data)")
    args = parser.parse_args(argv)
    if args.rebuild:
        from benchmarks.lib.sample import build, write  # the corpus builder: only to make the shipped file again

        records = build()
        write(records, SHIPPED)
        print(f"{len(records)} records → {SHIPPED}")
        return 0
    with gzip.open(SHIPPED, "rb") as shipped, open(args.out, "wb") as out:
        shutil.copyfileobj(shipped, out)
    print(f"sample corpus → {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
