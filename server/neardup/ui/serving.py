"""`neardup ui`'s lifecycle: what the page opens (the --corpus records, the --store's clusters and labelling
session), its HTTP server (app.UiServer) served from a thread of its own until SIGTERM or Ctrl-C, and everything
closed after. cli/ui.py parses the options and prints; this does the rest."""
from __future__ import annotations

import logging
import signal
import threading
from typing import Callable

import grpc
from neardup_client import NearDupClient, NearDupClientError, unreachable

from ..core.errors import NearDupError
from .app import UiServer
from .clusters import StoreClusters
from .corpus import Corpus
from .labels import StoreLabels, writable

log = logging.getLogger("neardup.ui")
#: How often the waiting thread wakes to let Python run a signal handler.
_SIGNAL_CHECK_SECONDS = 0.5


class CannotStart(NearDupError):
    """The page cannot start: its port, its --store, --labels or --corpus (the message says which)."""


class ServedPage:
    """The page and what it opened: the client, the store's clusters and labels, the corpus. open() opens them all
    (or none), serve() serves until a signal, close() closes them."""

    def __init__(self, server: UiServer, client: NearDupClient, target: str, clusters: StoreClusters | None,
                 labels: StoreLabels | None, corpus: Corpus | None, store: str | None, labels_path: str | None,
                 corpus_path: str | None):
        self.server, self.client, self.target = server, client, target
        self.clusters, self.labels, self.corpus = clusters, labels, corpus
        self._store, self._labels_path, self._corpus_path = store, labels_path, corpus_path

    @classmethod
    def open(cls, host: str, port: int, connect: Callable[[], NearDupClient], target: str, store: str | None = None,
             labels: str | None = None, corpus: str | None = None) -> "ServedPage":
        """The corpus read, the store opened read-only (its clusters, and the labelling session with `labels`), the
        client connected (`connect`), the port listened on; CannotStart, StoreUnavailable or the corpus's error
        when one cannot be, with what was opened closed again."""
        opened_corpus = _open_corpus(corpus) if corpus is not None else None
        try:
            clusters, session = _open_store(store, labels, opened_corpus) if store is not None else (None, None)
        except BaseException:
            if opened_corpus is not None:
                opened_corpus.close()
            raise
        client = connect()
        try:
            server = UiServer(host, port, client, clusters, session, opened_corpus)
        except OSError as error:
            client.close()
            for opened in (clusters, opened_corpus):
                if opened is not None:
                    opened.close()
            raise CannotStart(f"cannot listen on {host}:{port}: {error.strerror} (is the port in use?)") from None
        return cls(server, client, target, clusters, session, opened_corpus, store, labels, corpus)

    @property
    def url(self) -> str:
        return self.server.url

    def describe(self) -> str:
        """`http://127.0.0.1:8080/ (server HOST:PORT; clusters of STORE; labels in PAIRS; N records of CORPUS)`"""
        opened = f"; clusters of {self._store}" if self.clusters is not None else ""
        if self.labels is not None:
            opened += (f"; labels in {self._labels_path}" if self.labels.session is not None
                       else "; no labels (see above)")
        if self.corpus is not None:
            opened += f"; {len(self.corpus):,} records of {self._corpus_path}"
        return f"{self.url} (server {self.target}{opened})"

    def server_problem(self, connect_timeout: float) -> str | None:
        """Why the server the page calls does not answer (asked once, when the page starts), or None when it does."""
        try:
            self.client.wait_until_ready(connect_timeout)
            self.client.info()
        except NearDupClientError as error:
            return unreachable(error, self.target) if error.code == grpc.StatusCode.UNAVAILABLE else str(error)
        return None

    def serve(self) -> None:
        """Serves from a thread of its own until SIGTERM or Ctrl-C, then stops and closes everything. This thread
        only waits: a signal handler that raised into serve_forever could land inside a request's start, which
        socketserver catches."""
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda _signum, _frame: stop.set())
        serving = threading.Thread(target=self.server.serve_forever, name="neardup-ui")
        serving.start()
        try:
            while not stop.wait(_SIGNAL_CHECK_SECONDS):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            self.server.shutdown()
            serving.join()
            self.close()

    def close(self) -> None:
        self.server.server_close()
        self.client.close()
        for opened in (self.clusters, self.corpus):
            if opened is not None:
                opened.close()


def _open_corpus(path: str) -> Corpus:
    """The --corpus records, scanned once (corpus.py); one that cannot be read is the command's error."""
    corpus = Corpus(path)
    log.info("corpus: %s records in %s", f"{len(corpus):,}", path)
    return corpus


def _open_store(location: str, labels: str | None,
                corpus: Corpus | None) -> tuple[StoreClusters, StoreLabels | None]:
    """The store's clusters, and with `labels` the labelling session, both read once now from the store opened
    once; a store that cannot be opened, an answers file that cannot be read or written, or a --corpus that cannot
    be read is the command's one-line error (exit code 1) before the page starts."""
    from ..store import open_store

    if labels is not None and (problem := writable(labels)):
        raise CannotStart(problem)
    store = open_store(location, readonly=True)
    try:
        clusters = StoreClusters(store)
        session = StoreLabels(store, labels, corpus) if labels is not None else None
    except BaseException:
        store.close()
        raise
    return clusters, session
