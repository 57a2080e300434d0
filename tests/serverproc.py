"""Real neardup processes for tests, started the way a user starts them (`neardup index`, `neardup serve`), and
stores to run them on. Fixtures shared by the test modules are in conftest.py."""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from neardup.core.sketch import SketchConfig
from neardup.store import create_store

NEARDUP = [sys.executable, "-m", "neardup.cli"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def run_neardup(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*NEARDUP, *args], input=input, capture_output=True, text=True, timeout=timeout)


def index(corpus: Path, store: Path, *args: str) -> subprocess.CompletedProcess:
    done = run_neardup("index", str(corpus), "--store", str(store), *args)
    assert done.returncode == 0, done.stderr
    return done


def sketch_store(path: Path, sketches: dict[str, bytes], config: SketchConfig | None = None) -> Path:
    """A new store at path holding these sketches, of the default configuration unless config says."""
    with create_store(path, config or SketchConfig(), []) as store:
        if sketches:
            store.put_many(list(sketches.items()))
    return path


class Server:
    """`neardup serve` in its own process group; stop() sends SIGTERM and returns the exit code."""

    def __init__(self, store: Path, *args: str, workers: int = 1, port: int | None = None,
                 command: list[str] = NEARDUP):
        self.port = port or free_port()
        self.target = f"127.0.0.1:{self.port}"
        self.log_path = store.parent / f"serve-{self.port}.log"
        self._log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [*command, "serve", "--store", str(store), "--port", str(self.port), "--workers", str(workers), *args],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        self.workers = workers

    def wait_ready(self, timeout: float = 30.0) -> "Server":
        """Until every worker logged that it listens and the health service says SERVING."""
        deadline = time.monotonic() + timeout
        with grpc.insecure_channel(self.target) as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise RuntimeError(f"server exited with {self.process.returncode}: {self.log()}")
                if self.log().count("listening on") >= self.workers:
                    try:
                        status = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=1).status
                        if status == health_pb2.HealthCheckResponse.SERVING:
                            return self
                    except grpc.RpcError:
                        pass
                time.sleep(0.05)
        raise RuntimeError(f"server not ready after {timeout}s: {self.log()}")

    def log(self) -> str:
        return self.log_path.read_text()

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            raise
        finally:
            self._log.close()

    def __enter__(self) -> "Server":
        return self.wait_ready()

    def __exit__(self, *exc) -> None:
        if self.process.poll() is None:
            self.stop()


@contextlib.contextmanager
def serving(store: Path, *args: str, **kwargs) -> Iterator[Server]:
    """A ready `neardup serve` on store; on leaving, SIGTERM, and it must have stopped cleanly: exit code 0 and no
    internal error in its log."""
    with Server(store, *args, **kwargs) as running:
        yield running
    assert running.process.returncode == 0, running.log()
    assert "internal error" not in running.log()
