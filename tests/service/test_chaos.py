"""Faults under load, every acknowledged write checked (benchmarks/lib/chaos.py; `python -m benchmarks.chaos` runs
the same for minutes): a worker of `serve --workers 2 --search-index memory` on LMDB killed with SIGKILL, Redis under
two servers killed and started again, and a `neardup index` batch into the served store, while client threads send
Dedup, DedupStream, FindSimilar, Upsert and Delete at 70 % of the capacity measured first. No stale answer, no lost
acknowledged write, failures only inside the outages and each a status of an outage (never UNKNOWN or INTERNAL),
clean stops."""
from __future__ import annotations

import shutil
import threading
import time

import pytest

from benchmarks.lib import chaos

SETTINGS = chaos.Settings(seconds=16, capacity_seconds=3, processes=1, threads=4, corpus=200, index_batch=150,
                          faults=2, redis_down=1.5)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["lmdb", pytest.param("redis", marks=pytest.mark.redis)])
def test_faults_under_load_leave_no_stale_answer_and_lose_no_acknowledged_write(backend, tmp_path):
    if backend == "redis" and shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: apt-get install redis-server (as .ci/run does)")
    scenario = chaos.run_scenario(backend, tmp_path, SETTINGS, say=lambda line: None)
    run, capacity = scenario["run"], scenario["capacity"]
    # the load ran, wrote, deleted and was checked, in both phases
    for phase in (capacity, run):
        assert phase["calls_by_method"].keys() >= {"Dedup", "DedupStream", "FindSimilar", "Upsert", "Delete",
                                                  "check Dedup", "check FindSimilar"}, phase
    # both faults happened, and the service came back from the outage
    kinds = [window["kind"] for window in scenario["windows"]]
    assert kinds == [("worker killed (SIGKILL)" if backend == "lmdb" else "Redis killed and restarted"),
                     "neardup index batch"]
    assert scenario["index_batches_acknowledged"] == 1 and not scenario["index_failures"]
    if backend == "lmdb":
        assert scenario["servers"][0]["workers_restarted"] == 1
    # what a caller must be able to count on
    assert run["stale_answers"] == capacity["stale_answers"] == 0, run["stale_examples"] + capacity["stale_examples"]
    # a Delete that counts fewer ids than were stored: only one sent again after a fault (its first attempt committed)
    assert run["short_deletes_outside_windows"] == capacity["short_deletes"] == 0, run["short_delete_examples"]
    assert scenario["lost_acknowledged_writes"] == 0, scenario["lost"]
    assert scenario["verified_ids"] > SETTINGS.index_batch  # the batch and the threads' own ids
    assert capacity["failures"] == 0 and run["failures_outside_windows"] == 0, run["failures_outside_examples"]
    assert set(run["failures_inside_by_code"]) <= chaos.OUTAGE_CODES, run["failures_inside_examples"]
    assert all(server["exit_code"] == 0 and server["internal_errors_logged"] == server["tracebacks_logged"] == 0
               for server in scenario["servers"]), scenario["servers"]
    assert chaos.passed(scenario)


CLUSTER_SETTINGS = chaos.Settings(seconds=24, capacity_seconds=3, processes=1, threads=4, corpus=200, index_batch=100,
                                  faults=6)


@pytest.mark.slow
@pytest.mark.redis
def test_cluster_faults_under_load_answer_unavailable_and_lose_no_acknowledged_write(tmp_path):
    """A cluster store (?wait=1) on a cluster of its own: a primary killed (its replica promoted, the node started
    again), a shard's slot moved by MIGRATE, a planned CLUSTER FAILOVER, alternating with `neardup index` batches;
    the servers follow each without a restart."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed: apt-get install redis-server (as .ci/run does)")
    scenario = chaos.run_scenario("redis-cluster", tmp_path, CLUSTER_SETTINGS, say=lambda line: None)
    run, capacity = scenario["run"], scenario["capacity"]
    assert run["calls_by_method"].keys() >= {"Dedup", "DedupStream", "FindSimilar", "Upsert", "Delete",
                                             "check Dedup", "check FindSimilar"}, run
    kinds = [window["kind"] for window in scenario["windows"]]
    assert kinds == [kind for outage in chaos.CLUSTER_OUTAGES for kind in (outage, "neardup index batch")]
    assert scenario["index_batches_acknowledged"] == 3 and not scenario["index_failures"]
    assert run["short_deletes_outside_windows"] == capacity["short_deletes"] == 0, run["short_delete_examples"]
    assert run["stale_answers"] == capacity["stale_answers"] == 0, run["stale_examples"] + capacity["stale_examples"]
    assert scenario["lost_acknowledged_writes"] == 0, scenario["lost"]
    assert scenario["verified_ids"] > 3 * CLUSTER_SETTINGS.index_batch
    assert capacity["failures"] == 0 and run["failures_outside_windows"] == 0, run["failures_outside_examples"]
    assert set(run["failures_inside_by_code"]) <= chaos.OUTAGE_CODES, run["failures_inside_examples"]
    assert all(server["exit_code"] == 0 and server["internal_errors_logged"] == server["tracebacks_logged"] == 0
               for server in scenario["servers"]), scenario["servers"]
    assert chaos.passed(scenario)


def test_a_client_thread_stuck_in_a_call_is_a_failure_not_a_run_that_never_ends(monkeypatch):
    """A call that outlives its timeout (seen once: a DedupStream past its deadline) must fail the run, named, and
    not hang it: client_process stops waiting for a thread STUCK_AFTER seconds after its phase and its timeouts."""
    released = threading.Event()
    monkeypatch.setattr(chaos, "STUCK_AFTER", 0.5)
    monkeypatch.setattr(chaos._Thread, "run", lambda thread: released.wait(60))  # a call that never returns
    job = chaos.Job(targets=["127.0.0.1:1"], corpus_ids=["a"], prefix="stuck-", threads=2,
                    start_at=time.monotonic(), seconds=0.1, rate=None, timeout=0.1, seed=1)
    try:
        outcome = chaos.client_process(job)
    finally:
        released.set()
    stuck = [record for record in outcome["records"] if record[3] == "client stuck"]
    assert len(stuck) == 2 and all(record[0] == "client thread" for record in stuck)
    assert chaos._summary({"started": job.start_at, "records": outcome["records"], "steps": 0, "checks": 0,
                           "stale": [], "uncertain": [], "short_deletes": []}, [])["unknown_or_internal"] == 2
