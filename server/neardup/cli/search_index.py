"""`neardup search-index`: builds (or checks) the search index file that `neardup serve --search-index shared`,
`neardup pairs` and `neardup cluster` map; the work is runtime/index_file.py."""
from __future__ import annotations

import argparse

from ..runtime import index_file
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
    with open_store(args.store, readonly=args.check) as store:
        path = index_file.resolve_path(args.store, args.file)
        if args.check:
            mapped = index_file.open_mapped(path, store)
            header = mapped.header
            changed = store.changed_since(header["generation"])
            behind = ("the store's change log no longer reaches back to it: a server compares every article when "
                      "it maps it; rebuild it" if changed is None else f"{len(changed):,} ids written since")
            print(f"search index {path}: {header['articles']:,} articles at generation {header['generation']:,} "
                  f"(the store is at {store.generation():,}; {behind}), {header['file_bytes']:,} bytes, checksum "
                  "verified")
            return 0
        built = build(args, store, path)
    header = built.header
    print(f"search index {path}: {header['articles']:,} articles, {header['pool_values']:,} postings at generation "
          f"{header['generation']:,}, {header['file_bytes']:,} bytes, built in {built.seconds:.1f} s")
    return 0


def build(args: argparse.Namespace, store, path) -> index_file.Built:
    """The file built under the progress rule of `neardup search-index` (and `neardup index --search-index`)."""
    from ..jobs.progress import counted_steps

    with reporting(args, "search-index"), counted_steps() as report:
        return index_file.build(store, path, report)
