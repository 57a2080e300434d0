"""Faults a real deployment meets: the server killed with SIGKILL in the middle of writes, a damaged store at
start, a server restarted under a connected client.

kill -9 of `neardup index` mid-run is tested in test_index_cli.py
(test_kill_9_mid_ingest_keeps_every_committed_batch_and_the_store_writable), not here.
"""
from __future__ import annotations

import ctypes
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from neardup.core.encoding import encode_sketch
from neardup.store import open_store
from neardup_client import Document, NearDupClient, NearDupClientError
from neardup_client.cli_framework import EXIT_FAILED
from server_process import Server, free_port, run_neardup, sketch_store
from sketches import random_sketch

BATCH, WRITERS, ACKED_BEFORE_KILL = 8, 4, 60


def test_kill_9_during_upserts_keeps_every_acknowledged_batch_and_half_writes_none(tmp_path):
    store_path = sketch_store(tmp_path / "store", {})
    server = Server(store_path, workers=2, port=free_port()).wait_ready()
    sent: list[dict[str, bytes]] = []
    acked: list[dict[str, bytes]] = []
    failures: list[grpc.StatusCode] = []

    def write(writer: int) -> None:
        rng = random.Random(writer)
        with NearDupClient(server.target, timeout=5) as client:
            for number in range(100_000):
                batch = {f"w{writer}-{number}-{i}": random_sketch(rng, smallest=1) for i in range(BATCH)}
                sent.append(batch)
                try:
                    client.upsert([Document(doc_id, sketch=sketch) for doc_id, sketch in batch.items()])
                except NearDupClientError as error:
                    failures.append(error.code)
                    return
                acked.append(batch)

    writers = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in writers:
        thread.start()
    deadline = time.monotonic() + 60
    while len(acked) < ACKED_BEFORE_KILL and time.monotonic() < deadline:
        time.sleep(0.005)
    os.killpg(server.process.pid, signal.SIGKILL)  # the parent and both workers, mid-stream
    for thread in writers:
        thread.join()
    assert server.stop() == -signal.SIGKILL
    assert len(acked) >= ACKED_BEFORE_KILL and len(failures) == WRITERS  # every writer was cut off

    acked_ids = {doc_id for batch in acked for doc_id in batch}
    with open_store(store_path, readonly=True) as store:
        present = 0
        for batch in sent:
            found = store.get_many(list(batch))
            if acked_ids.isdisjoint(batch) and found == [None] * len(batch):
                continue  # sent but never committed: allowed, as long as it is all absent ...
            assert found == list(batch.values())  # ... or all there, byte for byte
            present += len(batch)
        assert store.count() == present >= len(acked_ids)

    with Server(store_path, workers=2, port=free_port()) as restarted, \
            NearDupClient(restarted.target, timeout=10) as client:
        assert client.info().articles == present
        doc_id, sketch = next(iter(acked[-1].items()))
        answer = client.dedup([Document("probe", sketch=sketch), doc_id])
        assert answer.duplicate_of == (-1, 0) and answer.similarity[1] == 1.0
        assert client.upsert([Document("after-restart", sketch=sketch)]) == 1


def garbage(data: Path) -> None:
    data.write_bytes(random.Random(0).randbytes(data.stat().st_size))


def truncated(data: Path) -> None:
    """Only the two meta pages left: they point at pages past the end of the file (a cut copy, a full disk)."""
    data.write_bytes(data.read_bytes()[:2 * 4096])


def emptied(data: Path) -> None:
    data.write_bytes(b"")


@pytest.mark.parametrize("damage, workers", [(garbage, 1), (garbage, 2), (truncated, 2), (emptied, 1)])
def test_a_damaged_store_is_one_line_at_start_not_a_crash_loop(tmp_path, damage, workers):
    rng = random.Random(1)
    store_path = sketch_store(tmp_path / "store",
                              {f"doc-{i}": random_sketch(rng, smallest=1) for i in range(300)})
    damage(store_path / "data.mdb")
    done = run_neardup("serve", "--store", str(store_path), "--port", str(free_port()), "--workers", str(workers),
                       timeout=60)
    assert done.returncode == EXIT_FAILED, done.stderr
    assert done.stderr.startswith("neardup: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert str(store_path) in done.stderr


def test_a_client_rides_over_a_server_restart_on_the_same_port(tmp_path, neardup):
    sketch = random_sketch(random.Random(2), smallest=1)
    store_path = sketch_store(tmp_path / "store", {"a": sketch, "a-copy": sketch})
    port = free_port()
    with NearDupClient(f"127.0.0.1:{port}", timeout=10) as client:
        with Server(store_path, workers=2, port=port):
            assert client.dedup(["a", "a-copy"]).keep == ["a"]
            # SO_REUSEPORT lets the workers of one server share the port; it must not let another server join them
            refused = neardup("serve", "--store", store_path, "--port", port, "--workers", "2")
            assert refused.returncode == EXIT_FAILED
            assert refused.stderr == f"neardup: error: cannot listen on 127.0.0.1:{port}: Address already in use\n"
        with Server(store_path, port=port):  # nothing was called in between: the next call just reconnects
            for _ in range(10):
                assert client.dedup(["a", "a-copy"]).keep == ["a"]
        # called while the server is down: refused quickly, then served again once it is back
        with pytest.raises(NearDupClientError) as raised:
            client.dedup(["a", "a-copy"])
        assert raised.value.code == grpc.StatusCode.UNAVAILABLE
        with Server(store_path, port=port):
            assert served_within(client, seconds=30)


def served_within(client: NearDupClient, seconds: float) -> bool:
    """Calls until one succeeds: how soon depends on the channel's reconnect backoff, so only a bound is checked."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return client.dedup(["a", "a-copy"]).keep == ["a"]
        except NearDupClientError as error:
            assert error.code == grpc.StatusCode.UNAVAILABLE
            time.sleep(0.05)
    return False


def test_drain_keeps_serving_while_health_says_not_serving(tmp_path):
    """--drain: after SIGTERM a balancer watching health has time to move traffic away; calls still succeed."""
    sketch = random_sketch(random.Random(3), smallest=1)
    server = Server(sketch_store(tmp_path / "store", {"a": sketch, "a-copy": sketch}), "--drain", "5").wait_ready()
    with NearDupClient(server.target, timeout=10) as client, grpc.insecure_channel(server.target) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        server.process.send_signal(signal.SIGTERM)
        status = health_pb2.HealthCheckResponse.SERVING
        while status == health_pb2.HealthCheckResponse.SERVING:
            status = health.Check(health_pb2.HealthCheckRequest(service="neardup.v1.NearDup"), timeout=10).status
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING
        assert client.dedup(["a", "a-copy"]).keep == ["a"]
    assert server.stop() == 0
    assert "draining for 5 s" in server.log()


def _blocks(pid: int, thread: int, signum: int) -> bool:
    """Whether the thread blocks the signal: a library's helper thread may block them all (jemalloc's, which pyarrow
    brings when NLTK imports pandas), and the kernel never hands a signal to such a thread."""
    status = open(f"/proc/{pid}/task/{thread}/status").read()
    mask = int(status.split("SigBlk:")[1].split()[0], 16)
    return bool(mask >> (signum - 1) & 1)


def test_a_sigterm_that_reaches_a_grpc_thread_still_stops_the_server(tmp_path):
    """The kernel hands a process's SIGTERM to any thread that does not block it, often one of gRPC's; Python
    runs the handler only in the main thread, which must therefore wake up to notice. (With --workers N each
    worker runs this same code; the supervising parent has no other thread.)"""
    server = Server(sketch_store(tmp_path / "store", {"a": random_sketch(random.Random(4), smallest=1)})).wait_ready()
    pid = server.process.pid
    thread = next(int(tid) for tid in sorted(os.listdir(f"/proc/{pid}/task"))
                  if int(tid) != pid and not _blocks(pid, int(tid), signal.SIGTERM))
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        assert libc.tgkill(pid, thread, signal.SIGTERM) == 0, os.strerror(ctypes.get_errno())
        assert server.process.wait(timeout=20) == 0
    finally:
        if server.process.poll() is None:
            os.killpg(pid, signal.SIGKILL)
    assert "stopped" in server.log()


def test_a_worker_whose_call_is_stuck_still_exits_after_grace_and_logs_where_it_hung(tmp_path):
    """A handler blocked past --grace (here: an Upsert waiting for the store's write lock, which another process
    holds) must not keep the worker alive: it exits within drain + grace + a margin, with every thread's
    traceback in its log, and the store keeps every committed write."""
    store_path = sketch_store(tmp_path / "store", {"a": random_sketch(random.Random(5), smallest=1)})
    server = Server(store_path, "--grace", "1").wait_ready()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, lmdb
        env = lmdb.open({str(store_path)!r}, max_dbs=7)
        with env.begin(write=True):
            print("holding", flush=True)
            sys.stdin.read()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        with NearDupClient(server.target, timeout=60) as client:
            stuck = threading.Thread(target=lambda: pytest.raises(NearDupClientError, client.upsert,
                                                                  [Document("b", sketch=encode_sketch([1, 2]))]))
            stuck.start()
            time.sleep(1)  # the Upsert is now waiting for the write lock
            started = time.monotonic()
            code = server.stop(timeout=40)
            stuck.join(10)
        assert code != 0 and time.monotonic() - started < 20
        log = server.log()
        assert "Timeout" in log and "Thread 0x" in log and "put_many" in log, log  # faulthandler's tracebacks
    finally:
        holder.communicate("", timeout=10)
    with open_store(store_path, readonly=True) as store:
        assert store.get_many(["a", "b"])[0] is not None and store.count() == 1
