"""Writes the sample corpora a newcomer indexes (README's first command): the same files on every machine.

    python -m benchmarks.sample --out sample.jsonl            # the shipped samples (benchmarks/data/sample*.jsonl.gz)
    python -m benchmarks.sample --rebuild                      # makes the shipped files again (needs gensim)

Three files: the text sample at --out, and beside it the items sample and its schema (`sample-items.jsonl`,
`sample-items-schema.json` for --out sample.jsonl), to try `neardup index --fields`, `neardup label` and
`neardup train` on an items store (docs/fields.md).

The text sample is the development corpus's tune split (benchmarks.lib.devcorpus) cut to its news stories,
encyclopedia sections and job-ad templates, with their republished copies: ids are `story-N` in file order, and its
first 100 lines are one search result set of `news` stories in which about a third are copies of a story ranked
above them, as a search frontend sees (benchmarks.lib.sample says how it is cut). The items sample is 600 job ads
of the labelled job-ad set (benchmarks.lib.jobads), ids `ad-N`, each {"id", "lang", "fields": {title, body,
organisation, phone, email, url, reference, category, location}} as far as its site gives them, reposts of one
vacancy on other sites among them; the schema is the job-ad set's (benchmarks/data/jobads/schema.json).
"""
from __future__ import annotations

import argparse
import gzip
import shutil
import sys
from pathlib import Path

from benchmarks.lib.paths import DATA

SHIPPED = DATA / "sample.jsonl.gz"
SHIPPED_ITEMS = DATA / "sample-items.jsonl.gz"
ITEMS_SCHEMA = DATA / "jobads" / "schema.json"


def items_paths(out: Path) -> tuple[Path, Path]:
    """Where the items sample and its schema go beside the text sample at `out`."""
    return out.with_name(f"{out.stem}-items.jsonl"), out.with_name(f"{out.stem}-items-schema.json")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("sample.jsonl"),
                        help="where the text sample goes; the items sample and its schema go beside it, named "
                             "after it (sample-items.jsonl, sample-items-schema.json) (default: sample.jsonl)")
    parser.add_argument("--rebuild", action="store_true",
                        help=f"make {SHIPPED.name} and {SHIPPED_ITEMS.name} again from the corpus builders (the "
                             "text sample needs gensim's test data)")
    args = parser.parse_args(argv)
    if args.rebuild:
        from benchmarks.lib.sample import build, build_items, write  # the builders: only to make the files again

        records = build()
        write(records, SHIPPED)
        items, _ = build_items()
        write(items, SHIPPED_ITEMS)
        print(f"{len(records)} records → {SHIPPED}\n{len(items)} items → {SHIPPED_ITEMS}")
        return 0
    items, schema = items_paths(args.out)
    for source, target in ((SHIPPED, args.out), (SHIPPED_ITEMS, items)):
        with gzip.open(source, "rb") as shipped, open(target, "wb") as out:
            shutil.copyfileobj(shipped, out)
    shutil.copyfile(ITEMS_SCHEMA, schema)
    print(f"sample corpus → {args.out}\nitems sample → {items} (its schema: {schema})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
