"""`neardup migrate`'s options and summary; the work is jobs/migrate.py."""
from __future__ import annotations

import argparse

from neardup_client.cli_framework import EXIT_OK, UsageError, at_least

from ..jobs.migrate import DEFAULT_BATCH_SIZE, migrate
from ..store import LOCATION_HELP
from .options import add_progress_argument, reporting


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Copy a store to another location, of any backend (an LMDB directory, a redis:// URL), "
                          "and check the copy's count and digest against the source's. Stop writes to the source "
                          "first: a write during the copy fails the check (exit code 1).")
    parser.add_argument("source", metavar="SRC", help=f"the store to copy: {LOCATION_HELP}")
    parser.add_argument("target", metavar="DST", help="where to copy it: a new store, or an empty one of the "
                                                      "source's configuration")
    parser.add_argument("--replace", action="store_true",
                        help="DST may hold articles: the source's replace them and the others are deleted, so DST "
                             "becomes a copy (default: DST must be empty)")
    parser.add_argument("--batch-size", type=at_least(1), default=DEFAULT_BATCH_SIZE,
                        help="articles per atomic write batch (default: %(default)s)")
    add_progress_argument(parser)
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.source == args.target:
        raise UsageError("SRC and DST are the same store")
    with reporting(args, "migrate"):
        summary = migrate(args.source, args.target, replace=args.replace, batch_size=args.batch_size)
    print(summary.format())
    return EXIT_OK
