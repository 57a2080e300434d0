"""`neardup COMMAND`: dispatches to the command's module and turns its outcome into an exit code (the table is in
neardup_client.cli_framework, which both command lines share).

A command's module is imported only when that command runs, and so are NLTK (only sketching text needs it), tqdm
and the gRPC server: `neardup --help`, `dedup` and `info` start in a fraction of a second."""
from __future__ import annotations

import importlib
import sys

from neardup_client import cli as client_cli
from neardup_client.cli_framework import OneLineParser, add_command, run

from .. import __version__
from ..core.errors import NearDupError

#: name → (one-line help, add_arguments: a function, or "module:function" imported when the command runs).
COMMANDS: dict[str, tuple[str, object]] = {
    "index": ("sketch a JSON Lines (or Parquet) corpus into a store", "neardup.cli.index:add_arguments"),
    "serve": ("serve the Dedup gRPC service from a store", "neardup.cli.serve:add_arguments"),
    "pairs": ("write every near-duplicate pair of a store as JSON Lines", "neardup.cli.pairs:add_arguments"),
    "cluster": ("give every stored article a stable cluster id from its near-duplicate pairs",
                "neardup.cli.cluster:add_cluster_arguments"),
    "clusters": ("export every stored article's cluster id as JSON Lines", "neardup.cli.cluster:add_clusters_arguments"),
    "search-index": ("build (or check) the search index file that serve --search-index shared, pairs and "
                     "cluster map", "neardup.cli.search_index:add_arguments"),
    "migrate": ("copy a store to another location or backend (LMDB, Redis), checked by count and digest",
                "neardup.cli.migrate:add_arguments"),
    "configure": ("set a store's default threshold (a number, learned from its articles, or the fixed default)",
                  "neardup.cli.configure:add_arguments"),
    "label": ("label the pairs a store is least sure of (texts side by side, or items field by field), for train",
              "neardup.cli.label:add_arguments"),
    "train": ("train a store from labelled pairs: a text store's metric and threshold, an items store's pair "
              "classifier", "neardup.cli.train:add_arguments"),
    "ui": ("serve a web page for a running server: groups, shared passages, store, search",
           "neardup.cli.ui:add_arguments"),
    **client_cli.COMMANDS,
}


def _chosen(argv: list[str]) -> str | None:
    """The command named in argv: its first word that is no option (`neardup` itself has only -h and --version)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: list[str]) -> OneLineParser:
    """The parser for argv: every command is listed, only the chosen one has its options."""
    parser = OneLineParser(prog="neardup", description="Near-duplicate detection for ranked result sets.")
    parser.add_argument("--version", action="version", version=f"neardup {__version__}")
    subparsers = parser.add_subparsers(metavar="COMMAND", required=True)
    chosen = _chosen(argv)
    for name, (summary, add_arguments) in COMMANDS.items():
        if name != chosen:
            add_arguments = None
        elif isinstance(add_arguments, str):
            module, function = add_arguments.split(":")
            add_arguments = getattr(importlib.import_module(module), function)
        add_command(subparsers, name, summary, add_arguments)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    return run(build_parser(argv), argv, failures=(NearDupError,))


if __name__ == "__main__":
    sys.exit(main())
