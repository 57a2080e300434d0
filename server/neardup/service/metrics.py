"""Prometheus metrics for `neardup serve --metrics-port PORT`, kept apart from the servicer (an interceptor and
thin wrappers around the session cache, the deduplicator and the writer), and served over HTTP by the supervising
process.

prometheus_client decides when it is first imported whether values go to memory-mapped files or to memory, from
PROMETHEUS_MULTIPROC_DIR; so it is imported here only once `Exporter.start` has set the variable (and not at all
without --metrics-port), and the workers forked after that inherit both. Label children are looked up once per
method and status code. Why the parent answers scrapes, and the cost: docs/OPERATING.md ("Metrics").
"""
from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterable

import grpc

from ..core.errors import NearDupError

log = logging.getLogger("neardup.serve")

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
PATH = "/metrics"
#: Server time of one RPC, from 100 µs (a cached Dedup, a health check) to 10 s (a batch of long texts).
DURATION_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                    5.0, 10.0)
#: Results per Dedup, up to the default --max-result-set.
RESULT_BUCKETS = (1, 5, 10, 25, 50, 100, 200, 500, 1000, 2000)


def _prometheus_multiprocess():
    """prometheus_client, checked to be in multiprocess mode (it was first imported after the variable was set)."""
    import prometheus_client
    from prometheus_client import values

    if not getattr(values.ValueClass, "_multiprocess", False) or not os.environ.get(MULTIPROC_ENV):
        raise RuntimeError(f"prometheus_client was imported before {MULTIPROC_ENV} was set: its values would stay "
                           "in each worker's memory")
    return prometheus_client


class ServiceMetrics:
    """One worker's metrics. Created in the worker (after the fork), registered nowhere: the exporter reads the
    files they write."""

    def __init__(self) -> None:
        prom = _prometheus_multiprocess()
        self.rpc_duration = prom.Histogram(
            "neardup_rpc_duration_seconds", "Server time of unary RPCs (handler start to end) and of each "
            "DedupStream message (its receipt to its answer; code: the message's own status)",
            ["service", "method", "code"], buckets=DURATION_BUCKETS, registry=None)
        self.in_flight = prom.Gauge("neardup_rpc_in_flight", "Unary RPCs being handled, all workers",
                                    registry=None, multiprocess_mode="livesum")
        self.dedup_results = prom.Histogram(
            "neardup_dedup_results", "Results (ids or documents) per Dedup answered without the session cache",
            buckets=RESULT_BUCKETS, registry=None)
        self.cache_hits = prom.Counter("neardup_session_cache_hits", "Dedup calls answered by the session cache",
                                       registry=None)
        self.cache_misses = prom.Counter(
            "neardup_session_cache_misses", "Dedup calls the session cache could not answer (no entry, expired, "
            "an id written since, cache off)", registry=None)
        # The newest value any live worker read: articles can go down (Delete), generations only up.
        self.store_articles = prom.Gauge("neardup_store_articles", "Articles in the store",
                                         registry=None, multiprocess_mode="livemostrecent")
        self.store_generation = prom.Gauge("neardup_store_generation", "Write batches committed to the store",
                                           registry=None, multiprocess_mode="livemax")

    def interceptor(self, methods: Iterable[str]) -> "MetricsInterceptor":
        return MetricsInterceptor(self, methods)

    def instrument(self, servicer, service: str):
        """Measures the servicer in place: its deduplicator and writer wrapped, its cache lookups counted, each
        DedupStream message timed, and the store gauges set now and whenever its view or one of its writes moves the
        store's generation."""
        store = servicer.served.store

        def store_changed(generation: int) -> None:
            self.store_generation.set(generation)
            self.store_articles.set(store.count())

        view = servicer.view
        store_changed(view.read().generation)
        view.subscribe(lambda now, _changed: store_changed(now))
        servicer.count_cache_lookup = lambda hit: (self.cache_hits if hit else self.cache_misses).inc()
        servicer.deduplicator = _MeasuredDeduplicator(servicer.deduplicator, self.dedup_results.observe)
        servicer.writer = _MeasuredWriter(servicer.writer, store_changed)
        observers = {}

        def observe_stream_message(code: str, seconds: float) -> None:
            observe = observers.get(code)
            if observe is None:
                observe = observers[code] = self.rpc_duration.labels(service, "DedupStream", code).observe
            observe(seconds)

        servicer.observe_stream_message = observe_stream_message
        return servicer


class _MeasuredDeduplicator:
    """The deduplicator, observing the size of each result set it answers."""

    def __init__(self, deduplicator, observe_results):
        self._deduplicator = deduplicator
        self._observe = observe_results

    def __getattr__(self, name):
        return getattr(self._deduplicator, name)

    # The result set comes first; the rest passes through as given, so the signatures are written once.
    def dedup_ids(self, ids, *args, **kwargs):
        outcome = self._deduplicator.dedup_ids(ids, *args, **kwargs)
        self._observe(len(ids))
        return outcome

    def dedup_documents(self, documents, *args, **kwargs):
        outcome = self._deduplicator.dedup_documents(documents, *args, **kwargs)
        self._observe(len(documents))
        return outcome


class _MeasuredWriter:
    """The writer, telling each write's generation to the store gauges."""

    def __init__(self, writer, store_changed):
        self._writer = writer
        self._store_changed = store_changed

    def __getattr__(self, name):
        return getattr(self._writer, name)

    def upsert(self, documents):
        upserted, generation = self._writer.upsert(documents)
        self._store_changed(generation)
        return upserted, generation

    def delete(self, ids):
        deleted, generation = self._writer.delete(ids)
        self._store_changed(generation)
        return deleted, generation


class MetricsInterceptor(grpc.ServerInterceptor):
    """Times the unary RPCs named in `methods` ('/package.Service/Method') and counts them in flight. Other calls
    (streaming ones, and methods no handler serves) pass unmeasured, so a caller cannot make up label values.

    Put it first among the interceptors, so calls another interceptor refuses (UNAUTHENTICATED) are counted too."""

    def __init__(self, metrics: ServiceMetrics, methods: Iterable[str]):
        self._metrics = metrics
        self._labels = {}
        for path in methods:
            service, _, method = path.lstrip("/").rpartition("/")
            self._labels[path] = (service, method)
        self._wrapped: dict[str, tuple] = {}  # path -> (handler, its measured form); replaced only when it changes

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        path = handler_call_details.method
        labels = self._labels.get(path)
        if handler is None or labels is None or handler.request_streaming or handler.response_streaming:
            return handler
        known = self._wrapped.get(path)
        if known is not None and known[0] is handler:
            return known[1]
        measured = grpc.unary_unary_rpc_method_handler(
            self._measure(handler.unary_unary, *labels), request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer)
        self._wrapped[path] = (handler, measured)
        return measured

    def _measure(self, behavior, service: str, method: str):
        histogram = self._metrics.rpc_duration
        in_flight = self._metrics.in_flight
        observers: dict[tuple, object] = {}  # (code, failed) -> observe of the labelled child
        clock = time.perf_counter

        def observer(code, failed):
            name = code.name if code is not None else "UNKNOWN" if failed else "OK"
            observe = observers[code, failed] = histogram.labels(service, method, name).observe
            return observe

        def handle(request, context):
            in_flight.inc()
            started = clock()
            failed = True
            try:
                response = behavior(request, context)
                failed = False
                return response
            finally:
                elapsed = clock() - started
                code = context.code()
                (observers.get((code, failed)) or observer(code, failed))(elapsed)
                in_flight.dec()

        return handle


class _MetricsHandler(BaseHTTPRequestHandler):
    registry = None  # set on the subclass made per exporter

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        if self.path.split("?", 1)[0] != PATH:
            self.send_error(404, f"metrics are at {PATH}")
            return
        try:
            body = generate_latest(self.registry)
        except Exception:  # a torn file of a worker killed mid-write, a bug: say so, keep serving
            log.exception("neardup serve: cannot collect metrics")
            self.send_error(500, "cannot collect metrics; see the server log")
            return
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE_LATEST)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # noqa: A002 (http.server's signature)
        pass  # a scrape every few seconds is not worth a log line


class Exporter:
    """The multiprocess directory and the HTTP endpoint that merges it, in the serving (parent) process."""

    def __init__(self, directory: str, previous_env: str | None, httpd: ThreadingHTTPServer):
        self.directory = directory
        self._previous_env = previous_env
        self._httpd = httpd
        self.port = httpd.server_address[1]
        self._thread = threading.Thread(target=self._serve, name="neardup-metrics", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # SIGTERM and SIGINT go to the main thread: the supervisor waits for its workers in os.wait(), which a
        # signal delivered to this thread (or to the request threads it starts, which inherit the mask) would not
        # interrupt, so the signal would not be forwarded until a worker exits on its own.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
        self._httpd.serve_forever(poll_interval=0.1)

    @classmethod
    def start(cls, host: str, port: int) -> "Exporter":
        """Makes the directory, points PROMETHEUS_MULTIPROC_DIR at it and listens on host:port; a port that cannot
        be bound is a NearDupError (one line, exit code 1), and then nothing is left behind."""
        directory = tempfile.mkdtemp(prefix="neardup-metrics-")
        previous = os.environ.get(MULTIPROC_ENV)
        os.environ[MULTIPROC_ENV] = directory
        try:
            prom = _prometheus_multiprocess()
            from prometheus_client import multiprocess

            registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry, path=directory)
            handler = type("MetricsHandler", (_MetricsHandler,), {"registry": registry})
            return cls(directory, previous, _listen(host, port, handler))
        except BaseException:
            _restore_env(previous)
            shutil.rmtree(directory, ignore_errors=True)
            raise

    @property
    def url(self) -> str:
        host = self._httpd.server_address[0]
        return f"http://{f'[{host}]' if ':' in host else host}:{self.port}{PATH}"

    def process_dead(self, pid: int) -> None:
        """A worker exited: its live gauges (in flight, store) leave the totals; its counters stay."""
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid, self.directory)

    def close_in_child(self) -> None:
        """In a forked worker: drops the inherited listening socket (the parent's thread serves it, not this one)."""
        self._httpd.socket.close()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
        _restore_env(self._previous_env)
        shutil.rmtree(self.directory, ignore_errors=True)


def _restore_env(previous: str | None) -> None:
    if previous is None:
        os.environ.pop(MULTIPROC_ENV, None)
    else:
        os.environ[MULTIPROC_ENV] = previous


def _listen(host: str, port: int, handler) -> ThreadingHTTPServer:
    shown = f"[{host}]" if ":" in host else host
    try:
        family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]
        server_class = type("MetricsServer", (ThreadingHTTPServer,), {"address_family": family})
        return server_class((host, port), handler)
    except OSError as error:
        raise NearDupError(f"cannot listen on {shown}:{port} (--metrics-port): "
                           f"{error.strerror or error}") from None
