"""`neardup cluster` and `neardup clusters`: their options, output and exit codes; the work is jobs/cluster.py."""
from __future__ import annotations

import argparse
import importlib.util
import sys

from neardup_client.cli_framework import EXIT_OK, EXIT_PARTIAL, CommandFailed, at_least, fraction
from neardup_client.enums import METRIC_HELP, described

from ..core.candidates import DEFAULT_MAX_CANDIDATES
from ..core.errors import install_line
from ..core.reference import max_distance
from ..core.vocabulary import CLUSTER_METHODS, DEFAULT_THRESHOLD, METRICS, SIMHASH_THRESHOLD
from ..jobs.cluster import DEFAULT_METHOD, cluster_store, export_clusters
from ..store import STORE_HELP, default_store_path
from .options import add_progress_argument, add_search_index_arguments, checked, reporting


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Give every stored article a cluster id from its near-duplicate pairs and store it; clusters that persist "
        "keep their ids, and from then on each new article gets a cluster when it is written. Needs a store "
        "with postings and the `cluster` extra (scipy, igraph), which the README's set-up installs.")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--method", choices=CLUSTER_METHODS, default=DEFAULT_METHOD,
                        help="components: connected components (chains); complete: complete linkage, every two "
                             "members near-duplicates; communities: Leiden, splits weakly linked groups")
    parser.add_argument("--threshold", type=checked(float, fraction),
                        help=f"a pair's similarity must reach this, in [0, 1] (default: the store's, `neardup info`: "
                             f"learned or set, else {DEFAULT_THRESHOLD:g}, or {SIMHASH_THRESHOLD:g} ({max_distance(SIMHASH_THRESHOLD)} "
                             "bits) for a simhash store, whose pair search is exact only from 0.953125 = 61/64)")
    parser.add_argument("--metric", choices=METRICS,
                        help=f"{described(METRIC_HELP)} (default: the store's)")
    parser.add_argument("--workers", type=at_least(1), default=1, help="processes finding the pairs")
    parser.add_argument("--pairs", metavar="FILE",
                        help="read the pairs from `neardup pairs` output instead of finding them (pairs below "
                             "--threshold are left out)")
    parser.add_argument("--max-candidates", type=at_least(1), default=DEFAULT_MAX_CANDIDATES,
                        help="the most candidates verified per article when finding the pairs; past it the pairs "
                             "of that article may be incomplete: counted on stderr, exit code 3")
    add_progress_argument(parser)
    add_search_index_arguments(parser)
    parser.set_defaults(func=_run_cluster)


def _run_cluster(args: argparse.Namespace) -> int:
    for module in ("scipy", "igraph"):
        if importlib.util.find_spec(module) is None:
            raise CommandFailed(f"neardup cluster needs {module}: {install_line('cluster')}")
    with reporting(args, "cluster", summary=False):
        summary = cluster_store(args.store, method=args.method, threshold=args.threshold, metric=args.metric,
                                workers=args.workers, pairs_file=args.pairs, max_candidates=args.max_candidates,
                                search_file=args.search_index_file, search_index=args.search_index)
    print(summary.format(), file=sys.stderr)
    if summary.inexact:
        print(summary.inexact, file=sys.stderr)
        return EXIT_PARTIAL
    return EXIT_OK


def add_clusters_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Export every stored article's cluster id as JSON Lines {\"id\": ..., \"cluster\": ...} "
                          "(-1: not clustered yet), for a search engine to collapse results by.")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    parser.add_argument("--export", metavar="FILE", default="-", help="where to write them; - for stdout")
    add_progress_argument(parser)
    parser.set_defaults(func=_run_clusters)


def _run_clusters(args: argparse.Namespace) -> int:
    if args.export == "-":
        with reporting(args, "clusters"):
            export_clusters(args.store, sys.stdout.buffer)
        return EXIT_OK
    try:
        with open(args.export, "wb") as out, reporting(args, "clusters"):
            export_clusters(args.store, out)
    except OSError as error:
        raise CommandFailed(f"cannot write --export {args.export}: {error.strerror}") from None
    return EXIT_OK
