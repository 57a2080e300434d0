"""Server bootstrap: one gRPC server per worker process, all sharing the port (SO_REUSEPORT).

One Python process uses one core, so `--workers N` forks N processes before any gRPC object exists
(gRPC is not fork-safe once started); the kernel balances connections across them. The parent only
supervises: it forwards SIGTERM/SIGINT and restarts a worker that died, unless it keeps dying at start.
Certificates and the token are read and checked by the parent, so a mistake is one error line at start.
With --metrics-port the parent also serves the Prometheus metrics of all workers (see metrics.py).
"""
from __future__ import annotations

import faulthandler
import gc
import ipaddress
import logging
import os
import signal
import socket
import ssl
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field, replace
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ..core.errors import InvalidArgument, NearDupError
from ..core.language import load_identifier
from ..core.nltk_text import load_nltk
from ..runtime.cache import DEFAULT_MAXSIZE, DEFAULT_TTL
from ..runtime.documents import identifies_queries
from ..runtime.params import DEFAULT_MAX_RESULT_SET, Limits
from ..runtime.search import base_file, memory
from ..runtime.served_store import ServedStore
from ..store import open_store
from . import metrics
from .auth import TokenInterceptor
from .servicer import DEFAULT_MAX_STREAMS, SERVICE_NAME, UNARY_METHODS, NearDupServicer, add_to_server

log = logging.getLogger("neardup.serve")

DEFAULT_PORT = 50051
#: RPC threads per worker. Handlers hold the GIL for most of their time, so more threads add only hand-offs: a
#: few threads serve more Dedup/s than many, at less CPU per call (benchmarks/grpc_ceiling.py); 4 leaves room for
#: a slow call (a large inline text) without stalling the others.
DEFAULT_THREADS = 4
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
#: Where FindSimilar searches (--search-index): the store's postings, or a copy in each worker's memory.
SEARCH_INDEXES = ("store", "memory", "shared")
_QUICK_DEATH_SECONDS = 5.0
#: How long past --drain + --grace a stopping worker may take before it is ended with its threads' tracebacks.
_STUCK_MARGIN_SECONDS = 5.0
_SIGNAL_CHECK_SECONDS = 0.2
_QUICK_DEATHS_BEFORE_GIVING_UP = 3
#: Container objects a worker allocates (net) before Python's cyclic collector runs on the young ones; Python's
#: default is 700. A call allocates a few hundred (gRPC's call state, the handler's lists), so at 700 the objects
#: of calls still in flight were collected and promoted again and again, and the full collections they set off
#: walked the whole heap, a large share of a busy worker's CPU and of the closed-loop p99 (benchmarks/gc_settle.py).
YOUNG_COLLECTION_THRESHOLD = 20_000


def _check_pem(what: str, expected: str, load) -> None:
    try:
        load()
    except ssl.SSLError as error:
        raise InvalidArgument(f"{what}: not {expected} ({error.reason or error})") from None
    except OSError as error:
        raise InvalidArgument(f"cannot read {what}: {error.strerror}") from None


@dataclass(frozen=True)
class TlsConfig:
    """PEM bytes of the server's certificate chain and key, and of the CA that signs client certificates
    (mutual TLS: a client without such a certificate cannot connect)."""

    cert: bytes
    key: bytes = field(repr=False)
    client_ca: bytes | None = None

    @classmethod
    def load(cls, cert_file: str | None, key_file: str | None, client_ca_file: str | None) -> "TlsConfig | None":
        """None when no TLS option is given. Python's ssl module checks the files first: gRPC refuses bad ones
        only as "Failed to bind to address", which reads like a busy port, and only in the workers."""
        if not (cert_file or key_file or client_ca_file):
            return None
        if not (cert_file and key_file):
            raise InvalidArgument("TLS needs both --tls-cert and --tls-key; --tls-client-ca only adds client "
                                  "certificates to them")
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _check_pem(f"--tls-cert {cert_file} with --tls-key {key_file}",
                   "a PEM certificate chain with its unencrypted private key",
                   lambda: context.load_cert_chain(cert_file, key_file, password=b""))  # never prompts
        if client_ca_file:
            _check_pem(f"--tls-client-ca {client_ca_file}", "PEM CA certificates",
                       lambda: context.load_verify_locations(cafile=client_ca_file))
        return cls(Path(cert_file).read_bytes(), Path(key_file).read_bytes(),
                   Path(client_ca_file).read_bytes() if client_ca_file else None)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials([(self.key, self.cert)], root_certificates=self.client_ca,
                                           require_client_auth=self.client_ca is not None)


@dataclass(frozen=True)
class ServeOptions:
    store: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 1
    threads: int = DEFAULT_THREADS
    max_streams: int = DEFAULT_MAX_STREAMS  # open DedupStreams per worker, each with a thread of its own
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_result_set: int = DEFAULT_MAX_RESULT_SET
    cache_size: int = DEFAULT_MAXSIZE
    cache_ttl: float = DEFAULT_TTL
    grace: float = 10.0
    drain: float = 0.0
    tls: TlsConfig | None = None
    token: str | None = field(default=None, repr=False)  # every RPC but health checks must carry it
    metrics_port: int | None = None  # Prometheus metrics over HTTP on host:metrics_port; None: off
    search_index: str = SEARCH_INDEXES[0]
    #: --search-index shared: the search index file every worker maps (None: the LMDB store's own,
    #: base_file.FILE_NAME)
    search_index_file: str | None = None
    #: Worker i (from 0) also listens on worker_ports + i, its own: a client given every worker's address spreads
    #: its calls over them (round robin), where the shared port hands each connection to one worker. None: off.
    worker_ports: int | None = None

    def __post_init__(self) -> None:
        if self.workers < 1 or self.threads < 1:
            raise InvalidArgument("--workers and --threads must be at least 1")
        if self.max_streams < 0:
            raise InvalidArgument("--max-streams must be >= 0 (0: no DedupStream)")
        if self.workers > 1 and self.port == 0:
            raise InvalidArgument("--workers > 1 needs a fixed --port (the workers share it)")
        if not 0 <= self.port <= 65535:
            raise InvalidArgument(f"--port must be in 0..65535, got {self.port}")
        if self.max_message_bytes < 1024 or self.max_result_set < 1:
            raise InvalidArgument("--max-message-bytes must be >= 1024 and --max-result-set >= 1")
        if min(self.cache_size, self.cache_ttl, self.grace, self.drain) < 0:
            raise InvalidArgument("--cache-size, --cache-ttl, --grace and --drain must be >= 0")
        if self.search_index not in SEARCH_INDEXES:
            raise InvalidArgument(f"--search-index must be one of {', '.join(SEARCH_INDEXES)}, got "
                                  f"{self.search_index!r}")
        if self.worker_ports is not None:
            if not 1 <= self.worker_ports <= 65536 - self.workers:
                raise InvalidArgument(f"--worker-ports must be in 1..{65536 - self.workers} (worker i listens on "
                                      f"it + i), got {self.worker_ports}")
            if self.worker_ports <= self.port < self.worker_ports + self.workers or (
                    self.metrics_port is not None
                    and self.worker_ports <= self.metrics_port < self.worker_ports + self.workers):
                raise InvalidArgument(f"--worker-ports {self.worker_ports}..{self.worker_ports + self.workers - 1} "
                                      "must not hold --port or --metrics-port")
        if self.metrics_port is not None:
            if not 0 <= self.metrics_port <= 65535:
                raise InvalidArgument(f"--metrics-port must be in 0..65535, got {self.metrics_port}")
            if self.metrics_port == self.port != 0:
                raise InvalidArgument("--metrics-port must differ from --port")

    @property
    def address(self) -> str:
        return self.address_of(self.port)

    def address_of(self, port: int) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{port}"

    def worker_address(self, worker: int) -> str | None:
        """The address worker `worker` listens on alone (--worker-ports), or None."""
        return None if self.worker_ports is None else self.address_of(self.worker_ports + worker)

    def describe_security(self) -> str:
        transport = ("TLS, client certificates required" if self.tls and self.tls.client_ca
                     else "TLS" if self.tls else "plaintext")
        return f"{transport}, {'bearer token required' if self.token else 'no token'}"

    def on_loopback(self) -> bool:
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return self.host == "localhost"


#: The unary RPCs the metrics time: the NearDup methods and the health Check (Watch and reflection stream).
MEASURED_METHODS = tuple(f"/{SERVICE_NAME}/{name}" for name in UNARY_METHODS) + (
    f"/{health_pb2.DESCRIPTOR.services_by_name['Health'].full_name}/Check",)


def _build_server(options: ServeOptions, store, worker: int = 0) -> tuple[grpc.Server, health.HealthServicer, int]:
    measured = metrics.ServiceMetrics() if options.metrics_port is not None else None
    interceptors = [measured.interceptor(MEASURED_METHODS)] if measured else []  # first: refused calls count too
    if options.token:
        interceptors.append(TokenInterceptor(options.token))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=options.threads + options.max_streams),
        interceptors=interceptors or None,
        options=[
            ("grpc.max_receive_message_length", options.max_message_bytes),
            ("grpc.max_send_message_length", options.max_message_bytes),
            # alone, a second server on the same port must fail to bind instead of silently sharing it
            ("grpc.so_reuseport", 1 if options.workers > 1 else 0),
        ],
    )
    servicer = NearDupServicer.for_store(store, Limits(max_result_set=options.max_result_set),
                                         options.cache_size, options.cache_ttl, options.max_streams,
                                         search_index=options.search_index if options.search_index != "store"
                                         else False, search_index_file=options.search_index_file)
    if measured:
        measured.instrument(servicer, SERVICE_NAME)
    add_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server)
    port = _listen(server, options, options.address)
    own = options.worker_address(worker)
    if own is not None:
        _listen(server, options, own)
    return server, health_servicer, port


def _listen(server: grpc.Server, options: ServeOptions, address: str) -> int:
    try:
        port = (server.add_secure_port(address, options.tls.credentials()) if options.tls
                else server.add_insecure_port(address))
    except RuntimeError as error:
        raise NearDupError(f"cannot listen on {address}: {error} (is the port in use?)") from None
    if port == 0:
        raise NearDupError(f"cannot listen on {address} (is the port in use?)")
    return port


#: Set by SIGTERM/SIGINT from the moment `neardup serve` starts (stop_on_signals), so a stop asked for while the
#: server is still starting (loading NLTK, opening the store) ends it as cleanly as one asked for while it serves.
_STOP = threading.Event()


def stop_on_signals() -> None:
    """SIGTERM and SIGINT ask the server to stop (exit code 0) instead of killing it; the first thing `serve` does."""
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: _STOP.set())


def run_worker(options: ServeOptions, worker: int = 0) -> int:
    """Serves until SIGTERM/SIGINT; then health says NOT_SERVING while calls are still served for --drain s
    (a balancer watching health moves traffic away), then it stops taking calls and lets in-flight ones finish
    (up to --grace s). gRPC cancels calls that reached the process but not yet Python when it stops taking calls,
    so without a drain a busy server fails the calls of its last few milliseconds. Asked to stop before it
    listens, it returns at once."""
    stop = _STOP
    stop_on_signals()
    if stop.is_set():
        return 0
    store = open_store(options.store)
    try:
        server, health_servicer, port = _build_server(options, store, worker)
        settle_heap()
        server.start()
        for name in ("", SERVICE_NAME):
            health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        own = options.worker_address(worker)
        log.info("neardup serve: worker %d/%d pid %d listening on %s:%d%s (%s), store %s (%d articles)",
                 worker + 1, options.workers, os.getpid(), options.host, port, f" and {own}" if own else "",
                 options.describe_security(), options.store, store.count())
        # Woken now and then: the kernel may deliver SIGTERM to one of gRPC's threads, and Python runs the handler
        # only when the main thread runs, which a wait without a timeout never lets it do.
        while not stop.wait(_SIGNAL_CHECK_SECONDS):
            pass
        _end_if_stuck(options.drain + options.grace + _STUCK_MARGIN_SECONDS, worker, options.workers)
        health_servicer.enter_graceful_shutdown()
        if options.drain:
            log.info("neardup serve: worker %d/%d pid %d draining for %g s", worker + 1, options.workers,
                     os.getpid(), options.drain)
            time.sleep(options.drain)
        server.stop(options.grace).wait()
        log.info("neardup serve: worker %d/%d pid %d stopped", worker + 1, options.workers, os.getpid())
    finally:
        store.close()
    return 0


def settle_heap() -> None:
    """Takes what the worker built at start (modules, descriptors, the view, the search index) out of the cyclic
    collector's passes (gc.freeze: it lives as long as the worker) and lets young objects die before a pass."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD)


def _end_if_stuck(seconds: float, worker: int, workers: int) -> None:
    """A call still running past the grace period (a handler blocked in the store, say) keeps its thread, and
    Python's exit waits for the threads of the call pool: the worker would never exit. So once it was told to
    stop, it has `seconds`: past them faulthandler writes every thread's traceback to the log (where it hung)
    and ends the process with exit code 1. Committed writes are safe: LMDB commits are atomic and durable."""
    log.info("neardup serve: worker %d/%d pid %d stopping; if it has not stopped in %g s, the threads' tracebacks "
             "follow a 'Timeout' line and it exits with 1", worker + 1, workers, os.getpid(), seconds)
    faulthandler.dump_traceback_later(seconds, exit=True, file=sys.stderr)


def _check_address(options: ServeOptions) -> None:
    """Binds the address once in the parent, so a busy port is one clear line (gRPC would log its own error in
    every worker). Without SO_REUSEPORT: otherwise a second `serve --workers N` on the port of a running one would
    silently share it; with SO_REUSEADDR, as gRPC binds, so connections in TIME_WAIT do not count."""
    ports = [] if options.port == 0 else [options.port]
    if options.worker_ports is not None:
        ports += range(options.worker_ports, options.worker_ports + options.workers)
    for port in ports:
        try:
            addresses = socket.getaddrinfo(options.host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
            for family, kind, protocol, _, address in addresses:
                with socket.socket(family, kind, protocol) as probe:
                    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                    probe.bind(address)
        except OSError as error:
            raise NearDupError(f"cannot listen on {options.address_of(port)}: {error.strerror}") from None


def serve(options: ServeOptions) -> int:
    """Checks the store (an items store's pair model too, and whether --search-index memory can serve it) and the
    address once (a clear error now rather than a crash loop), then runs the worker(s)."""
    with open_store(options.store, readonly=True) as store:
        # refuses a damaged pair model, or one trained for another configuration
        identifies = identifies_queries(ServedStore(store))
        if options.search_index == "memory":
            memory.check_store(store)
        if options.search_index == "shared":
            options = prepare_search_index_file(options, store)
    _check_address(options)
    if not options.on_loopback() and not options.tls:
        log.warning("neardup serve: listening on %s without TLS: requests%s travel in clear text",
                    options.host, " and the token" if options.token else "")
    exporter = None
    if options.metrics_port is not None:
        exporter = metrics.Exporter.start(options.host, options.metrics_port)  # before any worker: they inherit it
        log.info("neardup serve: pid %d serving Prometheus metrics of %d worker(s) on %s (plain HTTP, no token; "
                 "multiprocess files in %s)", os.getpid(), options.workers, exporter.url, exporter.directory)
    log.info("neardup serve: pid %d starting (store %s)", os.getpid(), options.store)
    try:
        load_nltk()  # before the workers fork, rather than in each at the first text a request sends
        if identifies:  # likewise the language identifier, where query texts are identified
            load_identifier()
        if options.workers == 1:
            return run_worker(options)
        return _supervise(options, exporter)
    finally:
        if exporter is not None:
            exporter.close()


def prepare_search_index_file(options: ServeOptions, store) -> ServeOptions:
    """--search-index shared, once before the workers start: the file checked whole (its version, checksum, counts
    and configuration: a clear error now rather than a worker dying at every start), or built from the store when
    there is none yet. Returns the options with the file's path."""
    base_file.check_store(store)
    path = base_file.resolve_path(options.store, options.search_index_file)
    if path.exists():
        header = base_file.open_mapped(path, store).header
        log.info("neardup serve: search index file %s: %s articles at generation %s (%.0f MB)", path,
                 f"{header['articles']:,}", f"{header['generation']:,}", header["file_bytes"] / 1e6)
    else:
        log.info("neardup serve: no search index file %s yet: building it from the store", path)
        built = base_file.build_store_file(store, path, lambda step, count: log.info(
            "neardup serve: search index: %s: %s", step, f"{count:,} articles"))
        log.info("neardup serve: search index file %s built in %.1f s (%.0f MB)", path, built.seconds,
                 built.header["file_bytes"] / 1e6)
    return replace(options, search_index_file=str(path))


def _supervise(options: ServeOptions, exporter: "metrics.Exporter | None" = None) -> int:
    children: dict[int, tuple[int, float]] = {}  # pid -> (worker index, start time)
    stopping = False

    def spawn(worker: int) -> None:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                if exporter is not None:
                    exporter.close_in_child()
                code = run_worker(options, worker)
            except NearDupError as error:
                log.error("neardup serve: worker %d: %s", worker + 1, error)
            except BaseException:
                log.exception("neardup serve: worker %d crashed", worker + 1)
            finally:
                os._exit(code)
        children[pid] = (worker, time.monotonic())

    def forward(signum, _frame) -> None:
        nonlocal stopping
        stopping = True
        for pid in list(children):
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    if _STOP.is_set():  # asked to stop while starting: no worker to start
        return 0
    for worker in range(options.workers):
        spawn(worker)
    quick_deaths = 0
    status = 0
    while children:
        pid, wait_status = os.wait()
        if pid not in children:
            continue
        worker, started = children.pop(pid)
        code = os.waitstatus_to_exitcode(wait_status)
        if exporter is not None:
            exporter.process_dead(pid)
        if stopping:
            status = status or (code if code > 0 else 0)
            continue
        quick_deaths = quick_deaths + 1 if time.monotonic() - started < _QUICK_DEATH_SECONDS else 0
        if quick_deaths >= _QUICK_DEATHS_BEFORE_GIVING_UP:
            log.error("neardup serve: workers keep dying at start (last exit %d); stopping", code)
            forward(signal.SIGTERM, None)
            status = 1
            continue
        log.warning("neardup serve: worker %d (pid %d) exited with %d; restarting it", worker + 1, pid, code)
        spawn(worker)
    return status
