"""`neardup pairs`'s options and output file (written whole or not at all) and its exit code; the work is
jobs/pairs.py."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import BinaryIO

from neardup_client.cli_framework import EXIT_OK, EXIT_PARTIAL, CommandFailed, at_least, fraction
from neardup_client.enums import METRIC_HELP, described

from ..core.candidates import DEFAULT_MAX_CANDIDATES
from ..core.reference import max_distance
from ..core.vocabulary import DEFAULT_THRESHOLD, METRICS, SIMHASH_THRESHOLD
from ..jobs.pairs import find_pairs
from ..store import STORE_HELP, default_store_path
from .options import add_progress_argument, add_search_index_arguments, checked, reporting


def _open_output(path: str | None) -> tuple[BinaryIO, Path | None]:
    """stdout, or a temporary file beside `path` that is renamed into place once every pair is written."""
    if path is None or path == "-":
        return sys.stdout.buffer, None
    target = Path(path)
    if target.is_dir():
        raise CommandFailed(f"cannot write --output {path}: it is a directory")
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        return open(partial, "xb"), partial
    except OSError as error:
        raise CommandFailed(f"cannot write --output {path}: {error.strerror}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Write every near-duplicate pair of the store as JSON Lines: {\"a\": id, \"b\": id, \"similarity\": x}, "
        "each pair once, a being the article stored first. Needs a store with postings (the default of `neardup "
        "index`). A summary goes to stderr. Exit code 3 when some article had more candidates than "
        "--max-candidates: pairs may be missing.")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--threshold", type=checked(float, fraction),
                        help=f"a pair's similarity must reach this, in [0, 1] (default: the store's, `neardup info`: "
                             f"learned or set, else {DEFAULT_THRESHOLD:g}, or {SIMHASH_THRESHOLD:g}, a Hamming distance of "
                             f"{max_distance(SIMHASH_THRESHOLD)} bits, for a simhash store)")
    parser.add_argument("--metric", choices=METRICS,
                        help=f"{described(METRIC_HELP)} (default: the store's)")
    parser.add_argument("--workers", type=at_least(1), default=1,
                        help="search processes, each over a contiguous range of the store's articles")
    parser.add_argument("--output", metavar="FILE",
                        help="write the pairs to FILE instead of stdout: whole or not at all (a temporary file "
                             "beside it is renamed into place at the end)")
    add_progress_argument(parser)
    parser.add_argument("--max-candidates", type=at_least(1), default=DEFAULT_MAX_CANDIDATES,
                        help="the most candidates verified per article; past it the search of that article is "
                             "inexact, counted on stderr, and the exit code is 3")
    add_search_index_arguments(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    out, partial = _open_output(args.output)
    try:
        with reporting(args, "pairs", summary=False):
            summary = find_pairs(args.store, out, threshold=args.threshold, metric=args.metric,
                                 workers=args.workers, max_candidates=args.max_candidates,
                                 search_file=args.search_index_file, search_index=args.search_index)
        if partial is not None:
            out.close()
            os.replace(partial, args.output)
            partial = None
    finally:
        if partial is not None:
            out.close()
            partial.unlink(missing_ok=True)
    print(summary.format(), file=sys.stderr)
    if summary.inexact:
        print(summary.inexact_warning(), file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK
