"""`neardup ui`: the web page (neardup/ui) for a running server, until SIGTERM or Ctrl-C (then exit code 0): its
options and what it prints; the page's lifecycle is ui/serving.py."""
from __future__ import annotations

import argparse
import logging
import sys

from neardup_client.cli import add_connection_arguments, connect
from neardup_client.cli_framework import UsageError

DEFAULT_PORT = 8080


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve a web page for a running `neardup serve`: a result set's groups with a threshold slider, the "
        "passages two documents share (Explain), the store's configuration (Info) and a search (FindSimilar). "
        "With --store, the Store view also lists the store's largest clusters and finds the cluster of an id; "
        "with --store and --labels, the Label pairs view is `neardup label`'s session in the page; with --corpus, "
        "ids carry titles and a pair of stored ids its texts or records. A server that does not answer at the start "
        "is a warning on stderr; the page keeps serving. "
        "It calls the server with the token and TLS options given here, and has no login of its own: keep it on "
        "loopback (the default) unless everyone who can reach --host may use the server.")
    add_connection_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address the page listens on; 0.0.0.0 or :: for all")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port the page listens on; 0 picks a free one")
    parser.add_argument("--store", metavar="LOCATION", default=None,
                        help="the server's store, opened read-only (never written), for the Store view's clusters, "
                             "which the gRPC API does not list, and the candidate pairs --labels proposes: an LMDB "
                             "directory or a redis:// URL")
    parser.add_argument("--labels", metavar="PAIRS", default=None,
                        help="with --store (a store of texts or an items store): the Label pairs view proposes the "
                             "pairs the store is least sure of, as `neardup label` does, and appends each answer to "
                             "PAIRS at once (JSON Lines as `neardup train` reads them; created if missing, resumed "
                             "if not)")
    parser.add_argument("--corpus", metavar="JSONL", default=None,
                        help="the corpus indexed into the store ({\"id\": ..., \"text\": ...} a line for texts, "
                             "{\"id\": ..., \"fields\": {...}} for items), which the store does not keep: a title "
                             "beside each id (a text's first line, an item's title or name), a pair's texts side by "
                             "side with the passages they share, or the records' values field by field, in every "
                             "view (default: ids and similarities only)")
    parser.set_defaults(func=_run, timeout=10.0)  # an Explain of long texts takes longer than a Dedup


def _run(args) -> int:
    from ..ui.serving import ServedPage

    if args.labels is not None and args.store is None:
        raise UsageError("--labels needs --store: the server's store, whose pairs it proposes")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    page = ServedPage.open(args.host, args.port, lambda: connect(args), args.target, args.store, args.labels,
                           args.corpus)
    print(f"neardup ui: {page.describe()}", file=sys.stderr, flush=True)
    if (problem := page.server_problem(args.connect_timeout)) is not None:  # the page keeps serving, and says it too
        print(f"neardup ui: warning: {problem}", file=sys.stderr, flush=True)
    page.serve()
    return 0
