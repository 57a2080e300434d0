"""Option types of the server's commands: the shared ones (neardup_client.cli_framework), with checks that raise the
core's InvalidArgument (a SketchConfig refusing a value) refused as usage errors (exit code 2) too; and the option
blocks two commands share."""
from __future__ import annotations

import argparse

from neardup_client import cli_framework

from ..core.errors import InvalidArgument


def checked(convert, check):
    """cli_framework.checked, refusing what the core refuses as well as ValueError."""
    return cli_framework.checked(convert, check, refused=(ValueError, InvalidArgument))


def add_search_index_arguments(parser: argparse.ArgumentParser) -> None:
    """--search-index and --search-index-file, as `neardup pairs` and `neardup cluster` take them."""
    parser.add_argument("--search-index", choices=("auto", "store", "shared"), default="auto",
                        help="where the pairs are searched: shared, the search index file (`neardup search-index`) "
                             "mapped and caught up with the store; store, the store's postings; auto, the file when "
                             "there is one (default: %(default)s)")
    parser.add_argument("--search-index-file", metavar="PATH",
                        help="the search index file (default: search-index in an LMDB store's directory)")


def add_progress_argument(parser: argparse.ArgumentParser) -> None:
    """--progress / --no-progress, as every command that shows progress takes it (jobs/progress.py: the rule)."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="progress on stderr: --progress draws bars, redrawn in place; --no-progress draws "
                             "none, and one summary line at the end says what was done (default: bars where stderr "
                             "is a terminal, else the summary line)")


def reporting(args: argparse.Namespace, command: str, summary: bool = True):
    """The progress of this run of `command` as its --progress flag says (jobs/progress.reporting; summary=False:
    the command writes its own summary line on stderr)."""
    from ..jobs import progress

    return progress.reporting(f"neardup {command}", args.progress, summary)
