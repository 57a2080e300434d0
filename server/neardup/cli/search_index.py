"""`neardup search-index`: builds (or checks) the search index file that `neardup serve --search-index shared`,
`neardup pairs` and `neardup cluster` map; the work is runtime/search/base_file.py (build_store_file, which
`neardup index --search-index` and `neardup serve --search-index shared` run too)."""
from __future__ import annotations

import argparse

from ..runtime.search import base_file
from ..store import STORE_HELP, default_store_path, open_store
from .options import add_progress_argument, reporting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Build the search index file of a bottom-K store with postings: its postings, sketches and ids in one file "
        "that every process of a host maps read-only (`neardup serve --search-index shared`, `neardup pairs`, "
        "`neardup cluster`). Written beside the old one and renamed over it: servers running on the old one map "
        "the new one within a second. The file records the store's generation; whoever maps it catches up with "
        "the writes since. --check verifies an existing file instead (its checksum and structure) and says how "
        "far behind the store it is.")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--file", metavar="PATH",
                        help="the index file (default: search-index in an LMDB store's directory; a Redis store "
                             "needs one)")
    parser.add_argument("--check", action="store_true", help="verify the file and report, write nothing")
    add_progress_argument(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.check:
        with open_store(args.store, readonly=True) as store:
            checked = base_file.check_store_file(store, args.file)
        header = checked.header
        behind = ("the store's change log no longer reaches back to it: a server compares every article when it "
                  "maps it; rebuild it" if checked.changed is None else f"{len(checked.changed):,} ids written since")
        print(f"search index {checked.path}: {header['articles']:,} articles at generation {header['generation']:,} "
              f"(the store is at {checked.store_generation:,}; {behind}), {header['file_bytes']:,} bytes, checksum "
              "verified")
        return 0
    build(args, args.store, args.file)
    return 0


def build(args: argparse.Namespace, location: str, given: str | None) -> None:
    """Builds the search index file of the store at `location` (at `given`, else its default place) under the
    progress rule of `neardup search-index` (jobs/progress.py), and prints what was built: `neardup search-index`
    and `neardup index --search-index`."""
    from ..jobs.progress import counted_steps

    with open_store(location, readonly=True) as store:
        with reporting(args, "search-index"), counted_steps() as report:
            built = base_file.build_store_file(store, given, report)
    print(built.summary())
