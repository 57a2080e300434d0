"""Faults under load, with every acknowledged write checked: what benchmarks/chaos.py runs for minutes and
tests/service/test_chaos.py for seconds.

A scenario is real processes on loopback: a corpus indexed by `neardup index`, then either `neardup serve --workers
2 --search-index memory` on an LMDB store ("lmdb"), or two `neardup serve` on one Redis store, Debian's
redis-server with an append-only file fsynced at every write ("redis"). Client processes (spawned, several threads
each) send a mix of Dedup, DedupStream, FindSimilar, Upsert and Delete: first as fast as they can (the capacity),
then paced at a fraction of it for the run, while the scenario's faults come one after another: a worker killed
with SIGKILL (the server starts another) or Redis killed and started again on its port, alternating with a batch
of `neardup index` into the same store. "redis-cluster" (when asked) is two `neardup serve` on a sharded store
(?wait=1) on a Redis Cluster of 3 primaries with a replica each, its outages CLUSTER_OUTAGES in turn.

The checks, each through a connection of its own made for it (so on another worker or server than the write's):
after an acknowledged Upsert, Dedup of the id beside its text must find it stored with that text (similarity 1) and
FindSimilar must find it; after an acknowledged Delete, Dedup must call it missing and FindSimilar must not find
it. A read-load Dedup carries a few of the thread's own ids too, stored or deleted, and must say which. An answer
that does not is stale. Once the load is over and the servers stopped, the store is read directly: every id whose
last write was acknowledged must hold exactly the sketch of its last text (and be in the postings of its values),
or be absent after a Delete; one that is not is a lost acknowledged write. An id one of whose writes failed (the
outcome of a failed write is unknown: it may have committed) is not written again and counts as uncertain. A Delete
the client's retry policy sent again after UNAVAILABLE may count fewer ids than were stored: its first attempt
committed, whole (a worker killed before it answered) or in some shards (a cluster store's batch commits whole per
shard only). It is counted apart (short_deletes), must overlap an outage window as a failure must, and its ids are
checked gone as any other's.

Failures are counted per gRPC status code, inside an outage window (from the fault to when the service answers
again: the new worker listening, a call through every server succeeding after Redis is back) or outside.
"""
from __future__ import annotations

import collections
import concurrent.futures
import dataclasses
import multiprocessing
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Callable

from benchmarks.lib.measure import worker_pids
from tests.server_process import RedisClusterServers, RedisServer, Server, run_neardup, write_jsonl

#: What a thread does per step, and how often (the writes are each followed by their checks).
MIX = {"Dedup": 0.35, "DedupStream": 0.10, "FindSimilar": 0.20, "Upsert": 0.25, "Delete": 0.10}
#: The codes a call failed by an outage may end with: statuses that tell the caller to ask again. Any other
#: (UNKNOWN and INTERNAL are bugs; NOT_FOUND for an article that is stored is a stale answer) fails the run.
OUTAGE_CODES = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED"}
CHECK_THRESHOLD = 0.99  # texts of different versions share nothing: the stored text is found at 1.0 or not at all
_SYLLABLES = [c + v for c in "bdfghklmnprstvz" for v in "aeiou"]


@dataclasses.dataclass
class Settings:
    seconds: float = 300.0          # the paced run of a scenario
    capacity_seconds: float = 20.0  # the flat-out run measuring capacity
    fraction: float = 0.7           # of capacity, offered during the run
    processes: int = 2              # client processes
    threads: int = 4                # threads per client process
    corpus: int = 5000              # articles indexed before serving
    index_batch: int = 1000         # articles per `neardup index` batch during the run
    faults: int = 6                 # events during the run: outages and index batches, alternating
    redis_down: float = 2.0         # seconds Redis stays down
    timeout: float = 10.0           # client deadline per call
    seed: int = 1
    cluster_shards: int = 6         # of the redis-cluster store
    node_timeout_ms: int = 1000     # the cluster's: how long a primary is unreachable before its replica takes over


#: The redis-cluster scenario's outages, in turn (_Scenario.cluster_outage).
CLUSTER_OUTAGES = ("primary killed (SIGKILL), its replica promoted, the node restarted",
                   "a shard's slot moved to another primary (MIGRATE)", "planned failover (CLUSTER FAILOVER)")


# --- texts --------------------------------------------------------------------------------------------------------

def text(rng: random.Random, words: int = 60) -> str:
    """Pseudo-words no other text shares a 3-gram with (at this length, in practice)."""
    return " ".join("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))) for _ in range(words))


def corpus(seed: int, size: int, prefix: str = "c") -> list[dict]:
    """size articles; every fifth an edited copy of an earlier one, so Dedup has groups to find."""
    rng = random.Random(seed)
    records = []
    for number in range(size):
        if number % 5 == 4:
            words = records[rng.randrange(len(records))]["text"].split()
            words[rng.randrange(len(words))] = "edited"
            body = " ".join(words)
        else:
            body = text(rng)
        records.append({"id": f"{prefix}{number}", "text": body})
    return records


# --- the client side: spawned processes of threads ------------------------------------------------------------------

#: Seconds a client thread may outlast its phase and three of its calls' timeouts before it counts as stuck.
STUCK_AFTER = 30.0


@dataclasses.dataclass
class Job:
    targets: list[str]
    corpus_ids: list[str]
    prefix: str
    threads: int
    start_at: float          # time.monotonic() (the system's clock: the same in every process)
    seconds: float
    rate: float | None       # steps per second per thread; None: as fast as it can
    timeout: float
    seed: int


def client_process(job: Job) -> dict:
    """Runs job.threads threads for job.seconds; what they saw (records, stale answers, the ids' final states)."""
    threads = [_Thread(job, number) for number in range(job.threads)]
    running = [threading.Thread(target=thread.run, daemon=True) for thread in threads]
    for thread in running:
        thread.start()
    # A thread's last call ends within its timeout (retries included); one still running well after that is a
    # stuck call: a failure to report, not a run that never ends.
    ends = job.start_at + job.seconds + 3 * job.timeout + STUCK_AFTER
    for thread, state in zip(running, threads):
        thread.join(max(0.0, ends - time.monotonic()))
        if thread.is_alive():
            state.records.append(("client thread", job.start_at + job.seconds, time.monotonic(), "client stuck",
                                  f"still in a call {STUCK_AFTER:g} s after the phase and its timeouts ended"))
    return {"steps": sum(t.steps for t in threads), "records": [r for t in threads for r in t.records],
            "stale": [s for t in threads for s in t.stale],
            "final": {doc_id: body for t in threads for doc_id, body in t.final().items()},
            "uncertain": sorted(doc_id for t in threads for doc_id in t.uncertain),
            "short_deletes": [s for t in threads for s in t.short_deletes], "checks": sum(t.checks for t in threads)}


class _Thread:
    def __init__(self, job: Job, number: int):
        from neardup_client import NearDupClient  # in the spawned process only

        self.job = job
        self.rng = random.Random(job.seed * 1000 + number)
        self.prefix = f"{job.prefix}t{number}-"
        self.client = NearDupClient(self.rng.choice(job.targets), timeout=job.timeout)
        self.records: list[tuple[str, float, float, str, str]] = []  # (method, start, end, code, details)
        self.stale: list[dict] = []
        self.live: dict[str, str] = {}   # id → its text: last write an acknowledged Upsert
        self.gone: set[str] = set()      # last write an acknowledged Delete
        self.uncertain: set[str] = set()  # a write failed: never written or checked again
        self.short_deletes: list[dict] = []  # acknowledged Deletes counting fewer ids than were stored (see delete)
        self.next_id = 0
        self.steps = self.checks = 0

    def final(self) -> dict[str, str | None]:
        return {**self.live, **dict.fromkeys(self.gone)}

    def run(self) -> None:
        from neardup_client import NearDupClientError  # noqa: F401 (imported before the clock starts)

        steps = {"Dedup": self.dedup, "DedupStream": self.dedup_stream, "FindSimilar": self.find_similar,
                 "Upsert": self.upsert, "Delete": self.delete}
        names, weights = list(MIX), list(MIX.values())
        time.sleep(max(0.0, self.job.start_at - time.monotonic()))
        end = self.job.start_at + self.job.seconds
        due = time.monotonic()
        try:
            while time.monotonic() < end:
                if self.job.rate:
                    due = max(due + 1 / self.job.rate, time.monotonic() - 1.0)  # no burst after a stall
                    time.sleep(max(0.0, due - time.monotonic()))
                    if time.monotonic() >= end:
                        break
                name = self.rng.choices(names, weights)[0]
                if name == "Delete" and not self.live:
                    name = "Upsert"
                steps[name]()
                self.steps += 1
        finally:
            self.client.close()

    # --- calls ---

    def call(self, method: str, function: Callable, expected: str = "OK"):
        """function(), recorded with its outcome: (code, answer or None). An `expected` code (NOT_FOUND for a
        deleted id) is the right answer, recorded as OK."""
        from neardup_client import NearDupClientError

        started = time.monotonic()
        details = ""
        try:
            answer, code = function(), "OK"
        except NearDupClientError as error:
            answer, code, details = None, error.code.name, error.details
        except Exception as error:  # noqa: BLE001 (a client-side surprise is a failure to count, not a crash)
            answer, code, details = None, f"client {type(error).__name__}", str(error)
        recorded = "OK" if code == expected else code
        self.records.append((method, started, time.monotonic(), recorded, details[:300] if recorded != "OK" else ""))
        return code, answer

    def flag(self, kind: str, doc_id: str, detail: str) -> None:
        self.stale.append({"kind": kind, "id": doc_id, "at": time.monotonic(), "detail": detail[:300]})

    def result_set(self) -> tuple[list[str], set[str], set[str]]:
        """30 corpus ids (never deleted), 2 of this thread's stored ids and 1 deleted one, shuffled."""
        live = self.rng.sample(sorted(self.live), min(2, len(self.live)))
        gone = self.rng.sample(sorted(self.gone), min(1, len(self.gone)))
        ids = self.rng.sample(self.job.corpus_ids, 30) + live + gone
        self.rng.shuffle(ids)
        return ids, set(live), set(gone)

    def judge(self, kind: str, answer, live: set[str], gone: set[str]) -> None:
        missing = set(answer.missing)
        for doc_id in answer.ids:
            if doc_id in gone and doc_id not in missing:
                self.flag(kind, doc_id, "deleted, answered as stored")
            elif doc_id not in gone and doc_id in missing:
                self.flag(kind, doc_id, "stored, answered as missing")

    def dedup(self) -> None:
        ids, live, gone = self.result_set()
        code, answer = self.call("Dedup", lambda: self.client.dedup(ids))
        if code == "OK":
            self.judge("Dedup", answer, live, gone)

    def dedup_stream(self) -> None:
        sets = [self.result_set() for _ in range(4)]
        code, answers = self.call("DedupStream", lambda: list(self.client.dedup_stream(
            [ids for ids, _, _ in sets], timeout=self.job.timeout)))
        if code != "OK":
            return
        from neardup_client import NearDupClientError

        for (_, live, gone), answer in zip(sets, answers):
            if isinstance(answer, NearDupClientError):  # one result set refused: a failure of its own
                self.records.append(("DedupStream set", *self.records[-1][1:3], answer.code.name,
                                     answer.details[:300]))
            else:
                self.judge("DedupStream", answer, live, gone)

    def find_similar(self) -> None:
        doc_id = self.rng.choice(self.job.corpus_ids)
        code, _ = self.call("FindSimilar", lambda: self.client.find_similar(doc_id, top_k=10))
        if code == "NOT_FOUND":
            self.flag("FindSimilar", doc_id, "a corpus article, never deleted, answered NOT_FOUND")

    def upsert(self) -> None:
        from neardup_client import Document

        batch = {}
        for _ in range(self.rng.randint(1, 3)):
            if self.live and self.rng.random() < 0.4:
                doc_id = self.rng.choice(sorted(self.live))
            else:
                doc_id, self.next_id = f"{self.prefix}{self.next_id}", self.next_id + 1
            batch[doc_id] = text(self.rng)
        code, _ = self.call("Upsert", lambda: self.client.upsert(
            [Document(doc_id, text=body) for doc_id, body in batch.items()]))
        if code != "OK":
            self.retire(batch)
            return
        self.live.update(batch)
        self.check_stored(batch)

    def delete(self) -> None:
        ids = self.rng.sample(sorted(self.live), min(len(self.live), self.rng.randint(1, 2)))
        texts = {doc_id: self.live[doc_id] for doc_id in ids}
        code, deleted = self.call("Delete", lambda: self.client.delete(ids))
        if code != "OK":
            self.retire(ids)
            return
        for doc_id in ids:
            del self.live[doc_id]
            self.gone.add(doc_id)
        if deleted != len(ids):
            detail = f"{len(ids)} stored ids deleted, the server found {deleted}"
            if deleted < len(ids):
                # the client sent it again after UNAVAILABLE, and the first attempt had committed (whole, or in
                # some shards): those ids were no longer there to count (check_gone still checks them all)
                _, started, ended, _, _ = self.records[-1]
                self.short_deletes.append({"id": ",".join(ids), "start": started, "at": ended, "detail": detail})
            else:
                self.flag("Delete", ",".join(ids), detail)
        self.check_gone(texts)

    def retire(self, ids) -> None:
        for doc_id in ids:
            self.live.pop(doc_id, None)
            self.gone.discard(doc_id)
            self.uncertain.add(doc_id)

    # --- checks through a fresh connection ---

    def fresh(self):
        from neardup_client import NearDupClient

        self.checks += 1
        return NearDupClient(self.rng.choice(self.job.targets), timeout=self.job.timeout)

    def check_stored(self, batch: dict[str, str]) -> None:
        """Each id found stored with its new text by Dedup (its text beside it is a duplicate at 1.0), and found
        by FindSimilar, by id and by text."""
        from neardup_client import Document

        results = []
        for doc_id, body in batch.items():
            results += [doc_id, Document("probe", text=body)]
        with self.fresh() as client:
            code, answer = self.call("check Dedup", lambda: client.dedup(results, threshold=CHECK_THRESHOLD))
            if code == "OK":
                for position, doc_id in zip(range(0, len(results), 2), batch):
                    if position in answer.missing_positions:
                        self.flag("check Dedup", doc_id, "acknowledged Upsert, answered as missing")
                    elif answer.duplicate_of[position + 1] != position or answer.similarity[position + 1] < 1.0:
                        self.flag("check Dedup", doc_id, "acknowledged Upsert, answered with an older text "
                                  f"(similarity {answer.similarity[position + 1]})")
            for doc_id, body in batch.items():
                code, _ = self.call("check FindSimilar", lambda: client.find_similar(doc_id, top_k=1))
                if code == "NOT_FOUND":
                    self.flag("check FindSimilar", doc_id, "acknowledged Upsert, answered NOT_FOUND")
                code, found = self.call("check FindSimilar", lambda: client.find_similar(
                    document=Document("", text=body), threshold=CHECK_THRESHOLD, top_k=5))
                if code == "OK" and doc_id not in {match.id for match in found.matches}:
                    self.flag("check FindSimilar", doc_id, "acknowledged Upsert, not found by its text")

    def check_gone(self, texts: dict[str, str]) -> None:
        """Each id missing for Dedup, NOT_FOUND for FindSimilar by id, and not found by its last text."""
        from neardup_client import Document

        ids = list(texts)
        with self.fresh() as client:
            code, answer = self.call("check Dedup", lambda: client.dedup(ids))
            if code == "OK":
                for doc_id in set(ids) - set(answer.missing):
                    self.flag("check Dedup", doc_id, "acknowledged Delete, answered as stored")
            for doc_id, body in texts.items():
                code, _ = self.call("check FindSimilar", lambda: client.find_similar(doc_id, top_k=1),
                                    expected="NOT_FOUND")
                if code == "OK":
                    self.flag("check FindSimilar", doc_id, "acknowledged Delete, found by id")
                code, found = self.call("check FindSimilar", lambda: client.find_similar(
                    document=Document("", text=body), threshold=CHECK_THRESHOLD, top_k=5))
                if code == "OK" and doc_id in {match.id for match in found.matches}:
                    self.flag("check FindSimilar", doc_id, "acknowledged Delete, found by its text")


# --- the orchestrator ----------------------------------------------------------------------------------------------

class _Scenario:
    """The store, the servers and the faults of one backend."""

    def __init__(self, backend: str, work: Path, settings: Settings, say: Callable[[str], None]):
        self.backend, self.work, self.settings, self.say = backend, work, settings, say
        self.redis: RedisServer | None = None
        self.cluster: RedisClusterServers | None = None
        self.servers: list[Server] = []
        self.windows: list[dict] = []
        self.indexed: dict[str, str] = {}  # id → text of every acknowledged `neardup index` batch
        self.index_failures: list[str] = []
        self.faults = 0

    def start(self) -> None:
        work, settings = self.work, self.settings
        work.mkdir(parents=True, exist_ok=True)
        if self.backend == "redis":
            self.redis = RedisServer(work / "redis", durable=True).start()
            self.location = self.redis.url()
        elif self.backend == "redis-cluster":
            self.cluster = RedisClusterServers(work / "cluster", node_timeout_ms=settings.node_timeout_ms).start()
            self.location = self.cluster.url("chaos", settings.cluster_shards) + "&wait=1"
        else:
            self.location = str(work / "store")
        records = corpus(settings.seed, settings.corpus)
        done = run_neardup("index", str(write_jsonl(work / "corpus.jsonl", records)), "--store", self.location,
                           timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"neardup index failed: {done.stderr}")
        self.corpus_ids = [record["id"] for record in records]
        if self.backend in ("redis", "redis-cluster"):
            self.servers = [Server(self.location, log_dir=work, workers=1) for _ in range(2)]
        else:
            self.servers = [Server(self.location, "--search-index", "memory", workers=2)]
        for server in self.servers:
            server.wait_ready(120)

    @property
    def targets(self) -> list[str]:
        return [server.target for server in self.servers]

    def outage(self) -> None:
        """A worker killed (lmdb) or Redis killed and started again (redis); the window lasts until the service
        answers again."""
        started = time.monotonic()
        if self.backend == "redis":
            self.redis.stop(signal.SIGKILL)
            time.sleep(self.settings.redis_down)
            self.redis.start()
            self._until_every_server_answers()
            kind = "Redis killed and restarted"
        elif self.backend == "redis-cluster":
            kind = self.cluster_outage()
        else:
            server = self.servers[0]
            listening = server.log().count("listening on")
            os.kill(random.Random(self.faults).choice(worker_pids(server.process.pid)), signal.SIGKILL)
            _wait(lambda: server.log().count("listening on") > listening, 120, "no worker started again")
            kind = "worker killed (SIGKILL)"
        self.windows.append({"kind": kind, "outage": True, "start": started, "end": time.monotonic()})

    def cluster_outage(self) -> str:
        """The next of CLUSTER_OUTAGES, on the primary serving a shard of the store (a shard's keys share one
        slot); over once the cluster settled (every node up, replicas in sync: before, a write waiting for a
        replica fails) and every server answers. Its kind."""
        from redis.crc import key_slot

        cluster = self.cluster
        kind = CLUSTER_OUTAGES[self.faults // 2 % len(CLUSTER_OUTAGES)]
        slot = key_slot(f"{{chaos:shard{self.faults % self.settings.cluster_shards}}}:meta".encode())
        primary = cluster.primary_of(slot)
        if kind == CLUSTER_OUTAGES[0]:
            replica = cluster.replica_of(primary)
            primary.stop(signal.SIGKILL)
            _wait(lambda: cluster.primary_of(slot) is replica, 60, "the replica was not promoted")
            primary.start()  # nothing saved: it joins as the new primary's replica and copies its data
        elif kind == CLUSTER_OUTAGES[1]:
            cluster.move_slot(slot)
        else:
            replica = cluster.replica_of(primary)
            cluster.cli(replica, "cluster", "failover")
            _wait(lambda: cluster.primary_of(slot) is replica, 60, "the planned failover did not happen")
        _wait(cluster.settled, 120, "the cluster did not settle")
        self._until_every_server_answers()
        return kind

    def _until_every_server_answers(self) -> None:
        from neardup_client import NearDupClient, NearDupClientError

        for target in self.targets:
            with NearDupClient(target, timeout=5) as client:
                def answers() -> bool:
                    try:
                        client.dedup(self.corpus_ids[:2])
                        return True
                    except NearDupClientError:
                        return False
                _wait(answers, 120, f"{target} did not answer again")

    def index_batch(self) -> None:
        """`neardup index` of new articles into the served store; acknowledged by its exit code 0."""
        records = corpus(self.settings.seed * 7919 + self.faults, self.settings.index_batch,
                         prefix=f"ix{self.faults}-")
        path = write_jsonl(self.work / f"batch-{self.faults}.jsonl", records)
        started = time.monotonic()
        done = run_neardup("index", str(path), "--store", self.location, timeout=600)
        self.windows.append({"kind": "neardup index batch", "outage": False, "start": started,
                             "end": time.monotonic()})
        if done.returncode == 0:
            self.indexed.update((record["id"], record["text"]) for record in records)
        else:
            self.index_failures.append(done.stderr.strip()[-300:])

    def fault(self) -> None:
        (self.outage if self.faults % 2 == 0 else self.index_batch)()
        self.faults += 1

    def stop(self) -> list[dict]:
        stopped = []
        for server in self.servers:
            code = server.stop(timeout=60) if server.process.poll() is None else server.process.returncode
            log = server.log()
            stopped.append({"exit_code": code, "internal_errors_logged": log.count("internal error"),
                            "tracebacks_logged": log.count("Traceback"),
                            "workers_restarted": log.count("restarting it")})
        return stopped

    def close(self) -> None:
        for server in self.servers:
            if server.process.poll() is None:
                os.killpg(server.process.pid, signal.SIGKILL)
                server.process.wait()
        if self.redis is not None:
            self.redis.stop()
        if self.cluster is not None:
            self.cluster.stop()


SETUPS = {"lmdb": "`neardup serve --workers 2 --search-index memory` on an LMDB store",
          "redis": "two `neardup serve` on one Redis store (appendonly yes, appendfsync always)",
          "redis-cluster": "two `neardup serve` on a sharded store on a Redis Cluster of 3 primaries with a replica "
                           "each (?wait=1, nothing saved)"}


def run_scenario(backend: str, work: Path, settings: Settings, say: Callable[[str], None] = print) -> dict:
    """One backend's run: capacity, then the paced run with its faults, then the store verified. Its figures."""
    scenario = _Scenario(backend, work, settings, say)
    context = multiprocessing.get_context("spawn")  # no fork of a process holding gRPC's threads
    try:
        scenario.start()
        say(f"{backend}: serving {len(scenario.corpus_ids)} articles on {', '.join(scenario.targets)}")
        with concurrent.futures.ProcessPoolExecutor(settings.processes, mp_context=context) as pool:
            for ready in [pool.submit(_warm) for _ in range(settings.processes)]:
                ready.result()  # the processes started and the client imported before any clock starts
            capacity = _phase(pool, scenario, "cap", settings.capacity_seconds, None)
            steps_per_s = capacity["steps"] / settings.capacity_seconds
            rate = settings.fraction * steps_per_s / (settings.processes * settings.threads)
            say(f"{backend}: capacity {steps_per_s:.0f} steps/s; running at {settings.fraction:.0%} for "
                f"{settings.seconds:g} s with {settings.faults} faults")
            run = _phase(pool, scenario, "run", settings.seconds, rate, faults=True)
        servers = scenario.stop()
        lost, verified = _verify(scenario.location, {**capacity["final"], **run["final"]}, scenario.indexed)
    finally:
        scenario.close()
    windows = [{**window, "start": window["start"] - run["started"], "end": window["end"] - run["started"],
                "seconds": window["end"] - window["start"]} for window in scenario.windows]
    return {
        "backend": backend,
        "setup": SETUPS[backend],
        "capacity_steps_per_s": steps_per_s, "offered_steps_per_s": rate * settings.processes * settings.threads,
        "capacity": _summary(capacity, []), "run": _summary(run, scenario.windows),
        "windows": windows, "outages": sum(w["outage"] for w in windows),
        "longest_outage_s": max((w["seconds"] for w in windows if w["outage"]), default=0.0),
        "index_batches_acknowledged": len(scenario.indexed) // max(1, settings.index_batch),
        "index_failures": scenario.index_failures, "lost": lost, "lost_acknowledged_writes": len(lost),
        "verified_ids": verified, "servers": servers,
    }


def _warm() -> None:
    import neardup_client  # noqa: F401


def _phase(pool, scenario: _Scenario, name: str, seconds: float, rate: float | None, faults: bool = False) -> dict:
    settings = scenario.settings
    start_at = time.monotonic() + 1.0
    jobs = [Job(scenario.targets, scenario.corpus_ids, f"{name}-p{number}", settings.threads, start_at, seconds,
                rate, settings.timeout, settings.seed * 100 + number + (50 if faults else 0))
            for number in range(settings.processes)]
    futures = [pool.submit(client_process, job) for job in jobs]
    if faults:
        for number in range(settings.faults):
            due = start_at + seconds * (number + 1) / (settings.faults + 1)
            time.sleep(max(0.0, due - time.monotonic()))
            scenario.fault()
            window = scenario.windows[-1]
            scenario.say(f"{scenario.backend}: {window['kind']}: {window['end'] - window['start']:.1f} s")
    outcomes = [future.result() for future in futures]
    merged = {"started": start_at, "steps": sum(o["steps"] for o in outcomes),
              "records": [r for o in outcomes for r in o["records"]], "stale": [s for o in outcomes for s in o["stale"]],
              "final": {k: v for o in outcomes for k, v in o["final"].items()},
              "uncertain": [u for o in outcomes for u in o["uncertain"]], "checks": sum(o["checks"] for o in outcomes),
              "short_deletes": [s for o in outcomes for s in o["short_deletes"]]}
    return merged


def _summary(phase: dict, windows: list[dict]) -> dict:
    """Calls, failures by code inside and outside the outage windows, stale answers."""
    outages = [(w["start"], w["end"]) for w in windows if w["outage"]]
    calls = collections.Counter(record[0] for record in phase["records"])
    inside, outside = collections.Counter(), collections.Counter()
    examples: dict[str, list] = {"inside": [], "outside": []}
    def overlaps(start: float, end: float) -> bool:
        return any(start <= window_end and end >= window_start for window_start, window_end in outages)

    for method, start, end, code, details in phase["records"]:
        if code == "OK":
            continue
        where = "inside" if overlaps(start, end) else "outside"
        (inside if where == "inside" else outside)[code] += 1
        examples[where].append({"method": method, "at": round(start - phase["started"], 3), "code": code,
                                "details": details})
    failures = inside + outside
    return {
        "steps": phase["steps"], "calls": sum(calls.values()), "calls_by_method": dict(calls),
        "checks": phase["checks"], "failures": sum(failures.values()),
        "failures_inside_windows": sum(inside.values()), "failures_inside_by_code": dict(inside),
        "failures_inside_text": codes_text(inside),
        "failures_outside_windows": sum(outside.values()), "failures_outside_by_code": dict(outside),
        "failures_outside_text": codes_text(outside),
        "failures_inside_examples": _examples(examples["inside"]),
        "failures_outside_examples": _examples(examples["outside"]),
        "failures_by_code": dict(failures),
        "unknown_or_internal": sum(n for code, n in failures.items()
                                   if code in ("UNKNOWN", "INTERNAL") or code.startswith("client ")),
        "failures_of_other_codes": sum(n for code, n in failures.items() if code not in OUTAGE_CODES),
        "stale_answers": len(phase["stale"]), "stale_examples": [
            {**s, "at": s["at"] - phase["started"]} for s in phase["stale"][:20]],
        "uncertain_ids": len(phase["uncertain"]),
        "short_deletes": len(phase["short_deletes"]), "short_delete_examples": [
            {**s, "start": s["start"] - phase["started"], "at": s["at"] - phase["started"]}
            for s in phase["short_deletes"][:20]],
        "short_deletes_outside_windows": sum(not overlaps(s["start"], s["at"]) for s in phase["short_deletes"]),
    }


def codes_text(by_code: dict[str, int]) -> str:
    """"12 UNAVAILABLE, 1 DEADLINE_EXCEEDED", most first; "none"."""
    return ", ".join(f"{n:,} {code}" for code, n in sorted(by_code.items(), key=lambda item: -item[1])) or "none"


def _examples(failures: list[dict], per_code: int = 5) -> list[dict]:
    """The first few failures of each code and method."""
    shown: collections.Counter = collections.Counter()
    kept = []
    for failure in failures:
        key = (failure["code"], failure["method"])
        if shown[key] < per_code:
            shown[key] += 1
            kept.append(failure)
    return kept


def _verify(location: str, final: dict[str, str | None], indexed: dict[str, str]) -> tuple[list[dict], int]:
    """Every id whose last write was acknowledged, read from the store itself: the sketch of its last text, in the
    postings of its values; or absent after a Delete. Returns (what is not, how many ids were verified)."""
    from neardup.core.sketcher import Sketcher
    from neardup.store import open_store, read_consistently

    expected = {**final, **indexed}
    lost = []
    with open_store(location, readonly=True) as store:
        sketcher = Sketcher(store.config, store.stoplist)
        ids = sorted(expected)

        def read(snapshot) -> list[dict]:
            wrong = []
            for doc_id, stored in zip(ids, snapshot.sketches(ids)):
                body = expected[doc_id]
                if body is None:
                    if stored is not None:
                        wrong.append({"id": doc_id, "why": "acknowledged Delete, still stored"})
                    continue
                if stored is None:
                    wrong.append({"id": doc_id, "why": "acknowledged write, not stored"})
                elif stored[1] != sketcher.sketch(body):
                    wrong.append({"id": doc_id, "why": "acknowledged write, another sketch stored"})
                elif stored[1] and stored[0] not in set(snapshot.postings(stored[1]).docno.tolist()):
                    wrong.append({"id": doc_id, "why": "stored, missing from the postings of its values"})
            return wrong

        lost = read_consistently(store, read)
    return lost, len(expected)


def _wait(condition: Callable[[], bool], seconds: float, failure: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(failure)
        time.sleep(0.05)


def passed(scenario: dict) -> bool:
    """0 stale answers, 0 lost acknowledged writes, failures and short Deletes only inside outage windows (failures
    each of OUTAGE_CODES),
    every index batch acknowledged, the servers stopped cleanly with no internal error or traceback logged."""
    run, capacity = scenario["run"], scenario["capacity"]
    return (run["stale_answers"] == capacity["stale_answers"] == 0 and scenario["lost_acknowledged_writes"] == 0
            and run["failures_outside_windows"] == capacity["failures"] == 0
            and run["short_deletes_outside_windows"] == capacity["short_deletes"] == 0
            and run["failures_of_other_codes"] == 0 and not scenario["index_failures"]
            and all(s["exit_code"] == 0 and s["internal_errors_logged"] == s["tracebacks_logged"] == 0
                    for s in scenario["servers"]))
