"""Prints what each issue-25 development family holds: documents, groups, result sets, and their families,
sources, languages and lengths (benchmarks.lib.families builds them; its docstring says what they are).

    python -m benchmarks.families [--split tune|test] [--family NAME ...]
"""
from __future__ import annotations

import argparse
from collections import Counter

from benchmarks.lib import devcorpus, families
from benchmarks.lib.sources import SourceMissing


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="tune")
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(families.FAMILIES))
    args = parser.parse_args(argv)
    for family in args.family:
        try:
            corpus = families.build(family, args.split)
        except SourceMissing as missing:
            parser.exit(2, f"families: {missing}\n")
        docs = corpus.docs
        print(f"{family} ({args.split}): {len(docs)} documents in {len({d.group for d in docs})} groups; result "
              "sets: " + ", ".join(f"{scope} {len(sets)}" for scope, sets in corpus.result_sets.items()))
        for name in ("family", "source", "lang", "length"):
            print(f"  {name}: " + ", ".join(f"{k} {n}" for k, n in sorted(Counter(getattr(d, name)
                                                                                     for d in docs).items())))


if __name__ == "__main__":
    main()
