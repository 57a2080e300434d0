"""Prometheus metrics of `neardup serve --metrics-port`: real multi-worker servers, real calls over gRPC, real scrapes
over HTTP. The figures must add up over the workers: each counts in its own files, the parent merges them."""
from __future__ import annotations

import collections
import contextlib
import os
import signal
import socket
import threading
import time
import urllib.error
import urllib.request

import grpc
import pytest

from neardup_client.cli_framework import EXIT_FAILED, EXIT_USAGE
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from observe import children, new_connection, rpc_counts, scrape, value
from server_process import Server, free_port, run_neardup
from textgen import article, text

MAX_RESULT_SET = 50
ARTICLES = {f"story-{i}": text(article(100 + i)) for i in range(12)}
ARTICLES["story-0-copy"] = "From the wire: " + ARTICLES["story-0"]
ARTICLES["story-1-copy"] = ARTICLES["story-1"] + " Share this story."
RESULT_SET = ["story-0", "story-1", "story-0-copy", "story-2", "story-1-copy", "story-3"]


def corpus() -> dict[str, str]:
    """The texts of the module's store (conftest.py's `store`)."""
    return ARTICLES


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """TMPDIR of the servers started by the test, so their multiprocess directory can be found (and missed)."""
    directory = tmp_path / "tmp"
    directory.mkdir()
    monkeypatch.setenv("TMPDIR", str(directory))
    return directory


def code_of(call) -> str:
    try:
        call()
    except grpc.RpcError as error:
        return error.code().name
    return "OK"


def test_two_workers_count_together_per_method_and_status_code(store, private_tmp):
    metrics_port = free_port()
    server = Server(store, "--metrics-port", str(metrics_port), "--max-result-set", str(MAX_RESULT_SET),
                    workers=2, port=free_port()).wait_ready()
    try:
        (directory,) = private_tmp.glob("neardup-metrics-*")  # the private PROMETHEUS_MULTIPROC_DIR
        calls: collections.Counter[tuple[str, str]] = collections.Counter()
        hits, computed_sizes, stubs, one_per_worker = 0, [], [], []
        repeated = pb.DedupRequest(ids=RESULT_SET, threshold=0.5)
        with contextlib.ExitStack() as connections:
            # New connections until both workers have answered the same result set from their own, empty cache.
            while len(one_per_worker) < 2 and len(stubs) < 64:
                stubs.append(neardup_pb2_grpc.NearDupStub(connections.enter_context(new_connection(server.target))))
                answer = stubs[-1].Dedup(repeated, timeout=10)
                assert answer.duplicate_of == [-1, -1, 0, -1, 1, -1]
                calls["Dedup", "OK"] += 1
                if answer.cached:
                    hits += 1
                else:
                    one_per_worker.append(stubs[-1])
                    computed_sizes.append(len(RESULT_SET))
            assert len(one_per_worker) == 2, "every connection went to the same worker"

            for n, stub in enumerate(stubs):
                fresh = RESULT_SET[n % 6:] + RESULT_SET[:n % 6] + [f"not-stored-{n}"]  # never asked before
                assert not stub.Dedup(pb.DedupRequest(ids=fresh), timeout=10).cached
                calls["Dedup", "OK"] += 1
                computed_sizes.append(len(fresh))
                inline = pb.DedupRequest(documents=[pb.Document(id=f"new-{n}", text=ARTICLES["story-2"]),
                                                    pb.Document(id="story-2")])
                assert stub.Dedup(inline, timeout=10).duplicate_of == [-1, 0]
                calls["Dedup", "OK"] += 1
                computed_sizes.append(2)
                bad = pb.DedupRequest(ids=RESULT_SET, threshold=2.0)
                calls["Dedup", code_of(lambda: stub.Dedup(bad, timeout=10))] += 1
                too_many = pb.DedupRequest(ids=[f"id-{i}" for i in range(MAX_RESULT_SET + 1)])
                calls["Dedup", code_of(lambda: stub.Dedup(too_many, timeout=10))] += 1
                calls["Info", code_of(lambda: stub.Info(pb.InfoRequest(), timeout=10))] += 1
            info = stubs[0].Info(pb.InfoRequest(), timeout=10)
            calls["Info", "OK"] += 1

            assert set(calls) == {("Dedup", "OK"), ("Dedup", "INVALID_ARGUMENT"), ("Dedup", "RESOURCE_EXHAUSTED"),
                                  ("Info", "OK")}
            samples = scrape(metrics_port)
            assert rpc_counts(samples) == calls
            dedup_calls = sum(n for (method, _), n in calls.items() if method == "Dedup")
            assert value(samples, "neardup_session_cache_hits_total") == hits == len(stubs) - 2
            assert value(samples, "neardup_session_cache_misses_total") == dedup_calls - hits  # failed calls too
            assert value(samples, "neardup_dedup_results_count") == len(computed_sizes)
            assert value(samples, "neardup_dedup_results_sum") == sum(computed_sizes)
            assert value(samples, "neardup_dedup_results_bucket", le="5.0") == computed_sizes.count(2)
            assert value(samples, "neardup_rpc_in_flight") == 0
            assert value(samples, "neardup_store_articles") == info.articles == len(ARTICLES)
            assert value(samples, "neardup_store_generation") == info.generation
            # wait_ready's health checks are timed too
            assert value(samples, "neardup_rpc_duration_seconds_count", service="grpc.health.v1.Health",
                         method="Check", code="OK") >= 1

            # A write moves the store gauges at once, in the worker that made it: an Upsert on one worker, then a
            # Delete on the other. The newest count wins, not the largest.
            late = pb.Document(id="late", text=ARTICLES["story-5"])
            upserted = one_per_worker[0].Upsert(pb.UpsertRequest(documents=[late]), timeout=10)
            samples = scrape(metrics_port)
            assert value(samples, "neardup_store_articles") == len(ARTICLES) + 1
            assert value(samples, "neardup_store_generation") == upserted.generation
            deleted = one_per_worker[1].Delete(pb.DeleteRequest(ids=["late"]), timeout=10)
            assert deleted.deleted == 1
            samples = scrape(metrics_port)
            assert value(samples, "neardup_store_articles") == len(ARTICLES)
            assert value(samples, "neardup_store_generation") == deleted.generation > upserted.generation
            assert rpc_counts(samples) == calls + collections.Counter({("Upsert", "OK"): 1, ("Delete", "OK"): 1})
        assert directory.is_dir() and any(directory.iterdir())
    finally:
        assert server.stop() == 0
    assert not directory.exists(), "the multiprocess directory outlived the server"
    with pytest.raises(urllib.error.URLError):
        scrape(metrics_port)


def test_killed_workers_keep_their_counts_and_leave_nothing_in_flight(store, private_tmp):
    """SIGKILL both workers while one handles a long call: the parent marks them dead, so the call they never
    finished leaves the in-flight gauge; the calls they answered stay counted; the restarted workers add to them."""
    metrics_port = free_port()
    server = Server(store, "--metrics-port", str(metrics_port), workers=2, port=free_port()).wait_ready()
    try:
        workers = children(server.process.pid)
        assert len(workers) == 2
        with new_connection(server.target) as channel:
            stub = neardup_pb2_grpc.NearDupStub(channel)
            for _ in range(3):
                stub.Dedup(pb.DedupRequest(ids=RESULT_SET), timeout=10)
        # ~8 MiB of text: sketching it keeps a handler busy for a while (about a second on the development VM)
        long_text = " ".join(text(article(seed, 40)) for seed in range(2200))
        long_call = pb.DedupRequest(documents=[pb.Document(id="long", text=long_text), pb.Document(id="story-0")])
        outcome = {}
        with new_connection(server.target) as channel:
            caller = threading.Thread(target=lambda: outcome.setdefault(
                "code", code_of(lambda: neardup_pb2_grpc.NearDupStub(channel).Dedup(long_call, timeout=60))))
            caller.start()
            deadline = time.monotonic() + 30
            while value(scrape(metrics_port), "neardup_rpc_in_flight") < 1 and caller.is_alive():
                assert time.monotonic() < deadline, "the long call never showed in flight"
                time.sleep(0.01)
            for pid in workers:
                os.kill(pid, signal.SIGKILL)
            caller.join(60)
        assert outcome["code"] == "UNAVAILABLE", "the long call finished before its worker was killed"

        deadline = time.monotonic() + 30
        while server.log().count("listening on") < 4:  # two started, two restarted
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.05)
        server.wait_ready()
        samples = scrape(metrics_port)
        assert value(samples, "neardup_rpc_in_flight") == 0
        assert rpc_counts(samples) == {("Dedup", "OK"): 3}  # the killed call never finished
        assert value(samples, "neardup_store_articles") == len(ARTICLES)  # set again by the new workers
        with new_connection(server.target) as channel:
            neardup_pb2_grpc.NearDupStub(channel).Dedup(pb.DedupRequest(ids=RESULT_SET), timeout=10)
        assert rpc_counts(scrape(metrics_port)) == {("Dedup", "OK"): 4}
    finally:
        assert server.stop() == 0
    assert not list(private_tmp.glob("neardup-metrics-*"))


def test_calls_the_token_refuses_are_counted_as_unauthenticated(store, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("metrics-test-token\n")
    metrics_port = free_port()
    with Server(store, "--metrics-port", str(metrics_port), "--token-file", str(token_file)) as server, \
            new_connection(server.target) as channel:
        stub = neardup_pb2_grpc.NearDupStub(channel)
        request = pb.DedupRequest(ids=RESULT_SET)
        assert code_of(lambda: stub.Dedup(request, timeout=10)) == "UNAUTHENTICATED"
        assert code_of(lambda: stub.Dedup(request, timeout=10,
                                          metadata=[("authorization", "Bearer metrics-test-token")])) == "OK"
        samples = scrape(metrics_port)
    assert rpc_counts(samples) == {("Dedup", "UNAUTHENTICATED"): 1, ("Dedup", "OK"): 1}
    assert value(samples, "neardup_session_cache_misses_total") == 1  # the refused call never reached the cache


@pytest.mark.parametrize("workers", [1, 2])
def test_a_busy_metrics_port_is_one_line_and_a_failure(store, private_tmp, workers):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = run_neardup("serve", "--store", str(store), "--port", str(free_port()), "--workers", str(workers),
                           "--metrics-port", str(port), timeout=60)
    assert done.returncode == EXIT_FAILED, done.stderr
    assert done.stderr == f"neardup: error: cannot listen on 127.0.0.1:{port} (--metrics-port): " \
                          f"Address already in use\n"
    assert not list(private_tmp.glob("neardup-metrics-*"))


@pytest.mark.parametrize("metrics_port, message", [
    ("same", "--metrics-port must differ from --port"),
    ("70000", "--metrics-port must be in 0..65535, got 70000"),
])
def test_a_wrong_metrics_port_is_one_line_and_a_usage_error(store, metrics_port, message):
    port = free_port()
    done = run_neardup("serve", "--store", str(store), "--port", str(port), "--workers", "2",
                       "--metrics-port", str(port) if metrics_port == "same" else metrics_port, timeout=60)
    assert done.returncode == EXIT_USAGE, done.stderr
    assert done.stderr == f"neardup: error: {message} (see `neardup serve --help`)\n"
