"""`neardup index --engine dask` on a real Dask cluster: a LocalCluster of 2 worker processes, started once for the
module in this process, the way `dask scheduler` and `dask worker` would run on a cluster's hosts.

The reference for every store is the local path (`neardup index` without --engine) on the same corpus: the same
configuration, stop-list and sketches, under the same article numbers (so the same postings). Corpora are cut into
many small partitions, with repeated ids and malformed lines in different partitions than their neighbours."""
from __future__ import annotations

import importlib.util
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from neardup.cli.main import main
from neardup.jobs.dask_engine import byte_ranges, partition_bytes_for, partition_lines
from neardup.jobs.index import MAX_PARTITION_BYTES, MIN_PARTITION_BYTES
from neardup_client.cli_framework import EXIT_FAILED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from neardup.store import open_store
from server_process import NEARDUP, free_port, write_jsonl
from brute import assert_index_matches_sketches
from observe import written_count
from textgen import ITEMS, SCHEMA, article, corpus_records, malformed_corpus, text

PARTITION = "4000"  # bytes: a dozen or more partitions per corpus here
#: The dask extra (dask, distributed, and fsspec, which reads a partition's lines): without it, what needs it skips.
DASK_REASON = "the dask extra is not installed: pip install './client' '.[dask]'"
needs_dask = pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason=DASK_REASON)


class TwoWorkers:
    """A LocalCluster of two worker processes for the module's tests, made anew for a test where an earlier one
    left fewer: after a worker is killed, Dask's nanny does not always bring one back on a loaded machine."""

    def __init__(self, distributed):
        self._distributed = distributed
        self._local = self._client = None

    def running(self) -> tuple[str, object]:
        """(the scheduler's address, a client), with two workers."""
        deadline = time.monotonic() + 30
        while self._client is not None and len(self._client.nthreads()) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._client is None or len(self._client.nthreads()) < 2:
            self.close()
            self._local = self._distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                                         dashboard_address=":0")
            self._client = self._distributed.Client(self._local, set_as_default=False)
            self._client.wait_for_workers(2, timeout=180)
        return self._local.scheduler_address, self._client

    def close(self) -> None:
        for opened in (self._client, self._local):
            if opened is not None:
                opened.close()
        self._local = self._client = None


@pytest.fixture(scope="module")
def two_workers():
    workers = TwoWorkers(pytest.importorskip("distributed", reason=DASK_REASON))
    yield workers
    workers.close()


@pytest.fixture
def cluster(two_workers):
    return two_workers.running()


def contents(store_path: Path | str) -> tuple:
    """Everything a store's users see: configuration, stop-list, count, (article number, id, sketch) in number
    order, and the store's digest (SketchStore.digest: equal iff the stores hold the same, whatever the backend)."""
    with open_store(store_path, readonly=True) as store, store.snapshot() as snapshot:
        return (store.config, store.stoplist, store.count(), list(snapshot.scan(0, snapshot.docno_limit())),
                store.digest())


def index(neardup, corpus_path: Path, store_path: Path, *args: str, scheduler: str | None = None):
    engine = ("--engine", "dask", "--scheduler", scheduler, "--partition-bytes", PARTITION) if scheduler else ()
    return neardup("index", corpus_path, "--store", store_path, *engine, *args)


def with_repeats(records: list[dict]) -> list[dict]:
    """Ids that come again later, some in another partition: the last record of an id is the one written."""
    return records + [{"id": "doc-3", "text": records[40]["text"] + " A later edit."},
                      {"id": "doc-60", "text": "A replacement in a later partition."},
                      {"id": "doc-61", "text": records[61]["text"]}]


@pytest.mark.parametrize("options", [("--stop-min-docs", "20"), ("--sketch", "simhash", "--stop-min-docs", "20")],
                         ids=["bottomk", "simhash"])
def test_the_store_equals_the_local_paths_bit_for_bit(tmp_path, cluster, neardup, options):
    scheduler, _ = cluster
    # a story republished 40 times, spread over the partitions: its sentences are kept, counted once
    story = text(article(4242, sentences=6))
    records = [*corpus_records(300, boilerplate_every=3, sentences=5),
               *({"id": f"copy-{number}", "text": f"{story} Edition {number}."} for number in range(40))]
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl", with_repeats(random.Random(3).sample(records, len(records))))
    local = index(neardup, corpus_path, tmp_path / "local", *options)
    dask = index(neardup, corpus_path, tmp_path / "dask", *options, scheduler=scheduler)
    assert local.returncode == dask.returncode == EXIT_OK, dask.stderr
    assert "duplicate ids:        3" in dask.stdout and "engine:               dask at " in dask.stdout
    assert "partitions)" in dask.stdout and int(dask.stdout.split("workers, ")[1].split()[0]) >= 12
    learned = [line for line in local.stdout.splitlines() if "stop-listed" in line]
    assert learned and "learned" in learned[0] and not learned[0].startswith("  stop-listed shingles: 0 ")
    assert learned == [line for line in dask.stdout.splitlines() if "stop-listed" in line]
    assert " kept 0 " not in learned[0]
    thresholds = [[line.split(" s)")[0].rsplit(",", 1)[0] for line in run.stdout.splitlines()
                   if "default threshold:" in line] for run in (local, dask)]
    assert thresholds[0] and thresholds[0] == thresholds[1]  # the same store learns the same default
    expected = contents(tmp_path / "local")
    assert expected[1] and expected[2] == 340
    assert contents(tmp_path / "dask") == expected

    # into the existing stores: their stop-list is known, so pass 1 makes the final sketches on the workers
    more = write_jsonl(tmp_path / "more.jsonl", corpus_records(80, start=1000, boilerplate_every=2, sentences=4))
    assert index(neardup, more, tmp_path / "local").returncode == EXIT_OK
    assert index(neardup, more, tmp_path / "dask", scheduler=scheduler).returncode == EXIT_OK
    assert contents(tmp_path / "dask") == contents(tmp_path / "local")


def test_an_items_store_equals_the_local_paths(tmp_path, cluster, neardup):
    """Records with fields, sketched on the workers by the store's schema (no stop-list is learned)."""
    scheduler, _ = cluster
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    records = [{"id": f"{doc_id}-{copy}", "lang": "en",
                "fields": {**fields, "title": f"{fields['title']} {copy}", "body": f"{fields['body']} {copy}."}}
               for copy in range(30) for doc_id, fields in ITEMS.items()]
    corpus_path = write_jsonl(tmp_path / "items.jsonl", records)
    assert index(neardup, corpus_path, tmp_path / "local", "--fields", schema).returncode == EXIT_OK
    done = index(neardup, corpus_path, tmp_path / "dask", "--fields", schema, scheduler=scheduler)
    assert done.returncode == EXIT_OK, done.stderr
    local = contents(tmp_path / "local")
    assert local[0].kind == "items" and local[2] == len(records)
    assert contents(tmp_path / "dask") == local


def test_a_parquet_corpus_gives_the_store_its_json_lines_give(tmp_path, cluster, neardup):
    """A row group a task; rows are numbered as lines are, and a malformed row is reported and skipped the same."""
    import pyarrow.parquet  # the parquet extra

    scheduler, _ = cluster
    records = with_repeats(corpus_records(150, boilerplate_every=2, sentences=4))
    records[7] = {"id": "no-text", "text": None}
    records[60] = {"id": "klingon", "text": "Qapla.", "lang": "tlh"}
    table = pyarrow.table({name: [record.get(name) for record in records] for name in ("id", "text", "lang")},
                          schema=pyarrow.schema([(name, pyarrow.string()) for name in ("id", "text", "lang")]))
    pyarrow.parquet.write_table(table, tmp_path / "corpus.parquet", row_group_size=20)
    lines = write_jsonl(tmp_path / "corpus.jsonl", [{key: value for key, value in record.items() if value is not None}
                                                     for record in records])
    runs = {"jsonl": index(neardup, lines, tmp_path / "jsonl", "--stop-min-docs", "20"),
            "local": index(neardup, tmp_path / "corpus.parquet", tmp_path / "local", "--stop-min-docs", "20"),
            "dask": index(neardup, tmp_path / "corpus.parquet", tmp_path / "dask", "--stop-min-docs", "20",
                          scheduler=scheduler)}
    assert {name: done.returncode for name, done in runs.items()} == dict.fromkeys(runs, EXIT_PARTIAL)
    assert "(2 workers, 8 partitions)" in runs["dask"].stdout
    for name, noun in (("jsonl", "line"), ("local", "row"), ("dask", "row")):
        warnings = [line for line in runs[name].stderr.splitlines() if line.startswith("neardup: ")]
        assert len(warnings) == 2 and warnings[0] == f"neardup: {noun} 8: missing text; skipped"
        assert warnings[1].startswith(f"neardup: {noun} 61: unknown language 'tlh'; use one of ")
    expected = contents(tmp_path / "jsonl")
    assert expected[1] and expected[2] == 149
    assert contents(tmp_path / "local") == contents(tmp_path / "dask") == expected

    pyarrow.parquet.write_table(pyarrow.table({"id": ["a"], "body": ["text"]}), tmp_path / "body.parquet")
    for engine in ((), ("--engine", "dask", "--scheduler", scheduler)):
        done = neardup("index", tmp_path / "body.parquet", "--store", tmp_path / "none", *engine)
        assert done.returncode == EXIT_FAILED and done.stderr.count("\n") == 1
        assert "has no column text: give string columns id and text" in done.stderr
    assert not (tmp_path / "none").exists()


@pytest.mark.redis
@pytest.mark.parametrize("backend", ["redis", "redis-cluster"])
def test_into_a_redis_store_as_the_local_path_writes_an_lmdb_one(tmp_path, cluster, neardup, backend, request):
    """A fleet's offline stage: sketched on the cluster from a URL, written to the Redis store its servers share
    (the workers at once; into a Redis Cluster store, each batch's shards)."""
    redis_url = request.getfixturevalue("redis_url" if backend == "redis" else "redis_cluster_url")
    scheduler, _ = cluster
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl",
                              with_repeats(corpus_records(100, boilerplate_every=2, sentences=4)))
    assert index(neardup, corpus_path, tmp_path / "local", "--stop-min-docs", "20").returncode == EXIT_OK
    # the workers open the corpus by URL through fsspec, as they would s3://...
    done = index(neardup, corpus_path.as_uri(), redis_url, "--stop-min-docs", "20", scheduler=scheduler)
    assert done.returncode == EXIT_OK, done.stderr
    assert "the workers wrote the store" in done.stdout
    local, redis = contents(tmp_path / "local"), contents(redis_url)
    # the same sketches and digest; the workers wrote at once, so the article numbers are another order's
    assert local[1] and redis[:3] == local[:3] and redis[4] == local[4]
    assert sorted(doc[1:] for doc in redis[3]) == sorted(doc[1:] for doc in local[3])
    assert_index_matches_sketches(redis_url)


@pytest.mark.redis
def test_rule_8_writes_the_store_again_from_the_workers_pass_1(tmp_path, cluster, neardup, redis_url):
    """Licence versions up to their copies (rule 8 of docs/threshold.md): the workers write the Redis store, the
    threshold is learned, and they write it again without the stop-list from the pass 1 they still hold: the same
    articles, sketches and threshold as the local path's store."""
    from benchmarks.lib import families

    scheduler, _ = cluster
    corpus_path = write_jsonl(tmp_path / "licences.jsonl", list(families.build("derived", "test").records()))
    assert index(neardup, corpus_path, tmp_path / "local").returncode == EXIT_OK
    done = index(neardup, corpus_path, redis_url, scheduler=scheduler)
    assert done.returncode == EXIT_OK, done.stderr
    assert "the workers wrote the store" in done.stdout and "so stored without the stop-list" in done.stdout
    local, redis = contents(tmp_path / "local"), contents(redis_url)
    assert local[1] == redis[1] == frozenset() and redis[:3] == local[:3] and redis[4] == local[4]
    with open_store(tmp_path / "local", readonly=True) as one, open_store(redis_url, readonly=True) as other:
        assert one.threshold() == other.threshold() and one.threshold()["metric"] == "mutual"


@pytest.mark.redis
def test_rule_8_tried_and_given_up_writes_the_store_a_third_time_from_the_workers(tmp_path, cluster, redis_url,
                                                                                    monkeypatch):
    """A template's pages, with rule 8's line lowered below their cut so that it is tried (as
    tests/jobs/test_threshold.py tries it on LMDB): its own cut falls short of the copies, and the workers write the
    Redis store a third time from the pass 1 they hold, with the stop-list: the local path's store, bit for bit."""
    from benchmarks.lib import families
    from neardup.core import calibration
    from neardup.jobs.dask_engine import DaskEngine
    from neardup.jobs.index import IndexOptions, index_corpus

    scheduler, _ = cluster
    corpus_path = write_jsonl(tmp_path / "pages.jsonl", list(families.build("template", "test").records()))
    found = index_corpus(str(corpus_path), str(tmp_path / "local"), IndexOptions()).threshold.found
    monkeypatch.setattr(calibration, "LOOK_ALIKES_REACH", found.threshold - calibration.BIN_WIDTH)
    assert found.up_to_the_copies
    summary = index_corpus(str(corpus_path), redis_url, IndexOptions(),
                           engine=DaskEngine(scheduler, int(PARTITION)))
    assert summary.stoplist_dropped == 0 and summary.stoplist_size > 0
    local, redis = contents(tmp_path / "local"), contents(redis_url)
    assert redis[1] == local[1] and redis[:3] == local[:3] and redis[4] == local[4]
    with open_store(tmp_path / "local", readonly=True) as one, open_store(redis_url, readonly=True) as other:
        assert one.threshold() == other.threshold() and "metric" not in other.threshold()


def test_malformed_lines_are_reported_as_the_local_path_reports_them(tmp_path, cluster, neardup):
    """Line numbers count across partitions; --strict stops at the first bad line and writes nothing."""
    scheduler, _ = cluster
    problems = malformed_corpus(tmp_path / "bad.jsonl")
    good = "".join(json.dumps(record) + "\n" for record in corpus_records(40, start=100))
    corpus_path = tmp_path / "corpus.jsonl"
    corpus_path.write_bytes(good.encode() + (tmp_path / "bad.jsonl").read_bytes())
    local = index(neardup, corpus_path, tmp_path / "local")
    dask = index(neardup, corpus_path, tmp_path / "dask", "--partition-bytes", "700", scheduler=scheduler)
    assert local.returncode == dask.returncode == EXIT_PARTIAL
    warnings = [line for line in dask.stderr.splitlines() if line.startswith("neardup: line ")]
    assert warnings == [line for line in local.stderr.splitlines() if line.startswith("neardup: line ")]
    assert len(warnings) == len(problems) and warnings[0].startswith("neardup: line 42: bad JSON")
    assert contents(tmp_path / "dask") == contents(tmp_path / "local")

    strict = index(neardup, corpus_path, tmp_path / "new", "--strict", scheduler=scheduler)
    assert strict.returncode == EXIT_FAILED
    assert strict.stderr.splitlines()[-1] == ("neardup: error: line 42: bad JSON at column 2: a key is not in double "
                                              "quotes (or a comma is left over); nothing was written (--strict)")
    assert not (tmp_path / "new").exists()


@needs_dask
def test_an_unreachable_scheduler_is_one_line_and_leaves_the_store_untouched(tmp_path, neardup):
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(5))
    assert index(neardup, corpus_path, tmp_path / "store").returncode == EXIT_OK
    before = contents(tmp_path / "store")
    address = f"tcp://127.0.0.1:{free_port()}"
    for store in ("store", "new"):
        started = time.monotonic()
        done = neardup("index", corpus_path, "--store", tmp_path / store, "--engine", "dask", "--scheduler", address,
                       "--connect-timeout", "2")
        assert time.monotonic() - started < 10
        assert done.returncode == EXIT_FAILED
        assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"neardup: error: cannot reach the Dask "
                                                                       f"scheduler at {address} (")
        assert done.stderr.endswith(f"is a Dask scheduler running at {address}?\n")
    assert contents(tmp_path / "store") == before
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("args, message", [
    (["--engine", "dask"], "--engine dask needs --scheduler ADDRESS"),
    (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler is for --engine dask"),
    (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--workers", "2"], "a Dask cluster has its own"),
    (["--engine", "dask", "--scheduler", "tcp://127.0.0.1:8786", "--connect-timeout", "0"], "more than 0"),
    (["--engine", "spark"], "invalid choice"),
])
def test_options_that_do_not_go_together_are_usage_errors(tmp_path, neardup, args, message):
    corpus_path = write_jsonl(tmp_path / "c.jsonl", corpus_records(1))
    done = neardup("index", corpus_path, "--store", tmp_path / "s", *args)
    assert done.returncode == EXIT_USAGE
    assert done.stderr.count("\n") == 1 and message in done.stderr
    stdin = neardup("index", "-", "--store", tmp_path / "s", "--engine", "dask", "--scheduler", "tcp://h:1")
    assert stdin.returncode == EXIT_USAGE and "not - (stdin)" in stdin.stderr
    assert not (tmp_path / "s").exists()


@needs_dask
@pytest.mark.parametrize("ending", [b"\n", b""], ids=["newline", "no-final-newline"])
def test_byte_ranges_give_every_line_to_exactly_one_partition(tmp_path, ending):
    """Whatever the partition size, a line starting exactly at a range's start, one shorter or longer than a range,
    and blank lines included."""
    lines = [b"a\n", b"\n", b"bb\n", b"c" * 9 + b"\n", b"\n", b"\n", b"dd\n", b"e" * 20 + b"\n", b"f\n", b"gg" + ending]
    path = tmp_path / "lines.jsonl"
    path.write_bytes(b"".join(lines))
    size = path.stat().st_size
    for partition_bytes in (*range(1, 25), size, size + 1):
        read = [line for start, end in byte_ranges(size, partition_bytes)
                for line in partition_lines(str(path), start, end)]
        assert read == lines, partition_bytes
    assert byte_ranges(0, 10) == [(0, 0)] and list(partition_lines(str(tmp_path / "lines.jsonl"), 0, 0)) == []


# --- a worker killed during `neardup index` -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A corpus that takes the cluster several seconds, and the store the local path makes of it."""
    root = tmp_path_factory.mktemp("big")
    corpus_path = write_jsonl(root / "corpus.jsonl", corpus_records(3000, boilerplate_every=4, sentences=8))
    assert main(["index", str(corpus_path), "--store", str(root / "local"), "--stop-min-docs", "100"]) == EXIT_OK
    return corpus_path, contents(root / "local")


def worker_pids(client) -> dict[str, int]:
    return client.run(os.getpid)


@pytest.mark.parametrize("when", ["sketching", "writing", "writing into redis"])
def test_a_worker_killed_during_index_is_replaced_and_the_store_ends_complete_and_equal(tmp_path, cluster, big,
                                                                                         when, request):
    """Killed while it sketches a partition (pass 1), or once batches are being written: into LMDB the client
    writes, and the worker held pass-2 sketches not written yet; into Redis the worker writes its partition's
    batches itself. What is lost is made again (a partition's batches written again hold the same sketches), and
    each batch is atomic, so nothing half-written can come of it."""
    scheduler, client = cluster
    corpus_path, expected = big
    store = request.getfixturevalue("redis_url") if when == "writing into redis" else tmp_path / "store"
    process = subprocess.Popen([*NEARDUP, "index", str(corpus_path), "--store", str(store), "--stop-min-docs", "100",
                                "--engine", "dask", "--scheduler", scheduler, "--partition-bytes", "40000",
                                "--batch-size", "50"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        pids = worker_pids(client)
        deadline = time.monotonic() + 180  # a bound on waiting, not a figure: a loaded machine sketches slowly
        victim = None
        while victim is None:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            if when != "sketching" and written_count(store) < 50:
                time.sleep(0.005)
                continue
            # a worker running a partition's pass 1 or writing its batches, or holding pass-2 sketches not written
            tasks = client.has_what() if when == "writing" else client.processing()
            task = {"sketching": "sketch_partition-", "writing": "_final_sketches-",
                    "writing into redis": "_write_partition-"}[when]
            victim = next((worker for worker, keys in sorted(tasks.items())
                           if any(str(key).startswith(task) for key in keys)), None)
            time.sleep(0.005)
        if when != "sketching":
            assert written_count(store) < len(expected[3]), "the ingest finished before a worker was killed"
        os.kill(pids[victim], signal.SIGKILL)
        out, err = process.communicate(timeout=180)
    finally:
        process.kill()
    assert process.returncode == EXIT_OK, err
    found = contents(store)
    if when == "writing into redis":  # the article numbers are in the order the workers wrote
        assert found[:3] == expected[:3] and found[4] == expected[4]
        assert_index_matches_sketches(store)
    else:
        assert found == expected
    assert pids[victim] not in worker_pids(client).values()  # the next test gets two workers (TwoWorkers)


def test_a_small_corpus_is_cut_so_every_worker_has_partitions():
    for size, workers in ((100_000, 2), (3 * 2**20, 4), (10**9, 8), (0, 3)):
        partitions = len(byte_ranges(size, partition_bytes_for(size, workers)))
        assert partitions >= min(workers, max(1, size // MIN_PARTITION_BYTES)), (size, workers)
        assert partition_bytes_for(size, workers) <= MAX_PARTITION_BYTES
    assert len(byte_ranges(10**9, partition_bytes_for(10**9, 8))) == 32  # PARTITIONS_PER_WORKER a worker
