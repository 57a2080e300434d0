"""Server bootstrap: one gRPC server per worker process, all sharing the port (SO_REUSEPORT).

One Python process uses one core, so `--workers N` forks N processes before any gRPC object exists
(gRPC is not fork-safe once started); the kernel balances connections across them. The parent only
supervises: it forwards SIGTERM/SIGINT and restarts a worker that died, unless it keeps dying at start.
"""
from __future__ import annotations

import logging
import os
import signal
import threading
import time
from concurrent import futures
from dataclasses import dataclass

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from ..cache import DEFAULT_MAXSIZE, DEFAULT_TTL
from ..engine import DEFAULT_MAX_RESULT_SET, Limits
from ..errors import InvalidArgument, NearDupError
from ..store import open_store
from .servicer import SERVICE_NAME, NearDupServicer, add_to_server

log = logging.getLogger("neardup.serve")

DEFAULT_PORT = 50051
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
_QUICK_DEATH_SECONDS = 5.0
_QUICK_DEATHS_BEFORE_GIVING_UP = 3


@dataclass(frozen=True)
class ServeOptions:
    store: str
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 1
    threads: int = 8
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_result_set: int = DEFAULT_MAX_RESULT_SET
    cache_size: int = DEFAULT_MAXSIZE
    cache_ttl: float = DEFAULT_TTL
    grace: float = 10.0

    def __post_init__(self) -> None:
        if self.workers < 1 or self.threads < 1:
            raise InvalidArgument("--workers and --threads must be at least 1")
        if self.workers > 1 and self.port == 0:
            raise InvalidArgument("--workers > 1 needs a fixed --port (the workers share it)")
        if not 0 <= self.port <= 65535:
            raise InvalidArgument(f"--port must be in 0..65535, got {self.port}")
        if self.max_message_bytes < 1024 or self.max_result_set < 1:
            raise InvalidArgument("--max-message-bytes must be >= 1024 and --max-result-set >= 1")
        if self.cache_size < 0 or self.cache_ttl < 0 or self.grace < 0:
            raise InvalidArgument("--cache-size, --cache-ttl and --grace must be >= 0")

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _build_server(options: ServeOptions, store) -> tuple[grpc.Server, health.HealthServicer, int]:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=options.threads),
        options=[
            ("grpc.max_receive_message_length", options.max_message_bytes),
            ("grpc.max_send_message_length", options.max_message_bytes),
            # alone, a second server on the same port must fail to bind instead of silently sharing it
            ("grpc.so_reuseport", 1 if options.workers > 1 else 0),
        ],
    )
    servicer = NearDupServicer.for_store(store, Limits(max_result_set=options.max_result_set),
                                         options.cache_size, options.cache_ttl)
    add_to_server(servicer, server)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        (SERVICE_NAME, health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server)
    try:
        port = server.add_insecure_port(options.address)
    except RuntimeError as error:
        raise NearDupError(f"cannot listen on {options.address}: {error} (is the port in use?)") from None
    if port == 0:
        raise NearDupError(f"cannot listen on {options.address} (is the port in use?)")
    return server, health_servicer, port


def run_worker(options: ServeOptions, worker: int = 0) -> int:
    """Serves until SIGTERM/SIGINT, then stops taking calls and lets in-flight ones finish (up to --grace s)."""
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    store = open_store(options.store)
    try:
        server, health_servicer, port = _build_server(options, store)
        server.start()
        for name in ("", SERVICE_NAME):
            health_servicer.set(name, health_pb2.HealthCheckResponse.SERVING)
        log.info("neardup serve: worker %d/%d pid %d listening on %s:%d, store %s (%d articles)",
                 worker + 1, options.workers, os.getpid(), options.host, port, options.store, store.count())
        stop.wait()
        health_servicer.enter_graceful_shutdown()
        server.stop(options.grace).wait()
        log.info("neardup serve: worker %d/%d pid %d stopped", worker + 1, options.workers, os.getpid())
    finally:
        store.close()
    return 0


def serve(options: ServeOptions) -> int:
    """Checks the store once (a clear error now rather than a crash loop), then runs the worker(s)."""
    open_store(options.store, readonly=True).close()
    if options.workers == 1:
        return run_worker(options)
    return _supervise(options)


def _supervise(options: ServeOptions) -> int:
    children: dict[int, tuple[int, float]] = {}  # pid -> (worker index, start time)
    stopping = False

    def spawn(worker: int) -> None:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
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
