"""`neardup configure` and the --threshold option `neardup index` shares with it; the rule is jobs/threshold.py."""
from __future__ import annotations

import argparse

from neardup_client.cli_framework import at_least, fraction

from ..core import calibration
from ..core.errors import InvalidArgument
from ..jobs.threshold import FIXED, LEARN, SAMPLE_DOCUMENTS, Choice, record
from ..store import STORE_HELP, default_store_path, open_store


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Set a store's default threshold, which Dedup, FindSimilar, pairs and cluster apply unless "
                          "told otherwise (a server reads it when it starts; `neardup info` shows it).")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    add_threshold_argument(parser, required=True)
    parser.add_argument("--sample", type=at_least(calibration.MIN_SAMPLE), default=SAMPLE_DOCUMENTS,
                        help="articles --threshold learn searches (more: a steadier threshold, a longer run)")
    parser.set_defaults(func=_run)


def add_threshold_argument(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """--threshold, as `neardup index` and `neardup configure` take it."""
    parser.add_argument("--threshold", type=parse_choice, required=required, metavar="T|learn|default",
                        help="the store's default threshold: a number in [0, 1] (set by hand), learn (from "
                             f"{SAMPLE_DOCUMENTS:,} of its articles' best matches; bottom-K and items stores with "
                             "postings) or "
                             "default (the sketch kind's fixed default)" +
                             ("" if required else " (default: a new bottom-K or items store with postings learns it, "
                                                  "an existing store keeps its own)"))


def _run(args: argparse.Namespace) -> int:
    with open_store(args.store) as store:
        recorded = record(store, args.threshold, created=False, sample=args.sample)
    print(f"default threshold of {args.store}: {recorded.format()}")
    return 0


def parse_choice(text: str) -> Choice:
    """An argparse type for --threshold: a number in [0, 1], `learn` or `default`."""
    if text in (LEARN, FIXED):
        return text
    try:
        value = float(text)
        fraction(value)
    except (ValueError, InvalidArgument):
        raise argparse.ArgumentTypeError(f"give a number in [0, 1], {LEARN} or {FIXED}, not {text!r}") from None
    return value
