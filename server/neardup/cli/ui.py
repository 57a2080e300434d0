"""`neardup ui`: the web page (neardup/ui) for a running server, until SIGTERM or Ctrl-C (then exit code 0)."""
from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

import grpc
from neardup_client import NearDupClientError
from neardup_client.cli import add_connection_arguments, connect, unreachable
from neardup_client.cli_framework import CommandFailed, UsageError

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
    from ..ui.app import UiServer

    if args.labels is not None and args.store is None:
        raise UsageError("--labels needs --store: the server's store, whose pairs it proposes")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    corpus = _open_corpus(args.corpus) if args.corpus is not None else None
    try:
        clusters, labels = _open_store(args, corpus) if args.store is not None else (None, None)
    except BaseException:
        if corpus is not None:
            corpus.close()
        raise
    client = connect(args)
    try:
        server = UiServer(args.host, args.port, client, clusters, labels, corpus)
    except OSError as error:
        client.close()
        for opened in (clusters, corpus):
            if opened is not None:
                opened.close()
        raise CommandFailed(f"cannot listen on {args.host}:{args.port}: {error.strerror} (is the port in use?)") \
            from None
    store = f"; clusters of {args.store}" if clusters is not None else ""
    if labels is not None:
        store += f"; labels in {args.labels}" if labels.session is not None else "; no labels (see above)"
    if corpus is not None:
        store += f"; {len(corpus):,} records of {args.corpus}"
    print(f"neardup ui: {server.url} (server {args.target}{store})", file=sys.stderr, flush=True)
    if (problem := _server_problem(client, args)) is not None:  # said now; the page keeps serving, and says it too
        print(f"neardup ui: warning: {problem}", file=sys.stderr, flush=True)
    # the page serves from a thread of its own; this one waits for SIGTERM or Ctrl-C, then stops it (a signal
    # handler that raised into serve_forever could land inside a request's start, which socketserver catches)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
    serving = threading.Thread(target=server.serve_forever, name="neardup-ui")
    serving.start()
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        serving.join()
        server.server_close()
        client.close()
        for opened in (clusters, corpus):
            if opened is not None:
                opened.close()
    return 0


def _open_corpus(path: str):
    """The --corpus records, scanned once (ui/corpus.py); one that cannot be read is the command's error."""
    from ..ui.corpus import Corpus

    corpus = Corpus(path)
    logging.getLogger("neardup.ui").info("corpus: %s records in %s", f"{len(corpus):,}", path)
    return corpus


def _server_problem(client, args) -> str | None:
    """Why the server the page calls does not answer (asked once, when the page starts), or None when it does."""
    try:
        client.wait_until_ready(args.connect_timeout)
        client.info()
    except NearDupClientError as error:
        return unreachable(error, args.target) if error.code == grpc.StatusCode.UNAVAILABLE else str(error)
    return None


def _open_store(args, corpus):
    """The store's clusters, and with --labels the labelling session, both read once now from the store opened
    once; a store that cannot be opened, an answers file that cannot be read or written, or a --corpus that cannot
    be read is the command's one-line error (exit code 1) before the page starts."""
    from ..store import open_store
    from ..ui.clusters import StoreClusters
    from ..ui.labels import StoreLabels, writable

    if args.labels is not None and (problem := writable(args.labels)):
        raise CommandFailed(problem)
    store = open_store(args.store, readonly=True)
    try:
        clusters = StoreClusters(store)
        labels = StoreLabels(store, args.labels, corpus) if args.labels is not None else None
    except BaseException:
        store.close()
        raise
    return clusters, labels
