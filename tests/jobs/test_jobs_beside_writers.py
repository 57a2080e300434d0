"""`neardup pairs` and `neardup cluster` (real processes) while a writer thread rewrites, adds and deletes articles
one at a time, on each store kind: they exit 0 and answer for one state of the store.

Each write is of one article, so on a Redis or cluster store it bumps the generation (a cluster store's: the sum
of its shards') by exactly one: the writer's log rebuilds the state at the generation the summary line names, and the
printed pairs must be that state's exhaustive pairs. An LMDB store is read in its own snapshot, named by no
generation: there the pairs of the articles the writer never touches must be theirs exactly.
"""
from __future__ import annotations

import json
import random
import re
import threading
import time
from pathlib import Path

import pytest

from neardup.core import reference
from neardup.core.encoding import decode_sketch, encode_sketch
from neardup.core.errors import StoreChanged
from neardup.jobs.view import CATCH_UP_ATTEMPTS, COPY_ATTEMPTS, read_view
from neardup.core.sketch_config import SketchConfig
from neardup.store import create_store, open_store
from neardup_client.cli_framework import EXIT_OK
from server_process import run_neardup

K = SketchConfig().k
METRIC, THRESHOLD = "jaccard", 0.5


def family_sketches(rng: random.Random, name: str, copies: int) -> dict[str, bytes]:
    """An article and `copies` edits of it (a share of its values replaced): similarities on both sides of the
    threshold."""
    base = [rng.getrandbits(32) for _ in range(K)]
    found = {name: encode_sketch(sorted(base))}
    for copy in range(copies):
        replaced = rng.randrange(K // 2)
        values = rng.sample(base, K - replaced) + [rng.getrandbits(32) for _ in range(replaced)]
        found[f"{name}-copy{copy}"] = encode_sketch(sorted(set(values)))
    return found


def exhaustive(state: dict[str, bytes]) -> dict[frozenset, float]:
    """Every pair of the state reaching the threshold, unordered → similarity."""
    decoded = [(doc_id, decode_sketch(sketch)) for doc_id, sketch in state.items()]
    pairs = {}
    for i, (a, values_a) in enumerate(decoded):
        for b, values_b in decoded[i + 1:]:
            if reference.is_duplicate(values_a, values_b, K, METRIC, THRESHOLD):
                pairs[frozenset((a, b))] = reference.similarity(values_a, values_b, K, METRIC)
    return pairs


class Writer(threading.Thread):
    """Rewrites the `churn` articles (each time as an edit of another stable article, so they pair with the
    stable ones), adds new ones and deletes them again, one article per batch, until stopped; logs each write with
    the generation it committed at."""

    def __init__(self, location: str, stable: dict[str, bytes], pause: float):
        super().__init__(daemon=True)
        self.location, self.pause = location, pause
        self.stable = list(stable.values())
        self.log: list[tuple[int, str, bytes | None]] = []  # (generation, id, sketch; None: deleted)
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def edit(self, rng: random.Random) -> bytes:
        values = decode_sketch(rng.choice(self.stable))
        replaced = rng.randrange(len(values) // 2 + 1)
        return encode_sketch(sorted(set(rng.sample(values, len(values) - replaced)
                                        + [rng.getrandbits(32) for _ in range(replaced)])))

    def run(self) -> None:
        rng = random.Random(7)
        added: list[str] = []
        try:
            with open_store(self.location) as store:
                while not self.stop.is_set():
                    roll = rng.random()
                    if roll < 0.2 and added:
                        doc_id = added.pop(rng.randrange(len(added)))
                        _, generation = store.delete_many([doc_id])
                        self.log.append((generation, doc_id, None))
                    else:
                        doc_id = f"churn-{rng.randrange(20)}" if roll < 0.6 else f"new-{len(self.log)}"
                        sketch = self.edit(rng)
                        self.log.append((store.put_many([(doc_id, sketch)]), doc_id, sketch))
                        if doc_id.startswith("new-"):
                            added.append(doc_id)
                    time.sleep(self.pause)
        except BaseException as error:  # noqa: BLE001 - the test fails with it
            self.error = error

    def state_at(self, start: dict[str, bytes], generation: int) -> dict[str, bytes]:
        state = dict(start)
        for committed, doc_id, sketch in self.log:
            if committed <= generation:
                if sketch is None:
                    state.pop(doc_id)
                else:
                    state[doc_id] = sketch
        return state

    def touched(self) -> set[str]:
        return {doc_id for _, doc_id, _ in self.log}


def location_of(kind: str, tmp_path: Path, request) -> str:
    if kind == "lmdb":
        return str(tmp_path / "store")
    return request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")


def store_beside_writer(location: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """A store of stable families and the churn articles' first sketches: (stable, everything stored)."""
    rng = random.Random(3)
    stable: dict[str, bytes] = {}
    for family in range(60):
        stable.update(family_sketches(rng, f"family-{family}", rng.randrange(4)))
    churn = {f"churn-{number}": encode_sketch(sorted(rng.getrandbits(32) for _ in range(K)))
             for number in range(20)}
    items = list({**stable, **churn}.items())
    with create_store(location, SketchConfig(), []) as store:
        for start in range(0, len(items), 100):
            store.put_many(items[start:start + 100])
    return stable, {**stable, **churn}


def run_beside(writer: Writer, *args: str):
    writer.start()
    while len(writer.log) < 5 and writer.is_alive():  # the writer is writing before the command starts
        time.sleep(0.01)
    done = run_neardup(*args, timeout=300)
    written_during = len(writer.log)
    writer.stop.set()
    writer.join()
    assert writer.error is None, writer.error
    assert written_during > 10, "the writer did not write during the run"
    return done


def view_generation(summary: str) -> int | None:
    found = re.search(r"a copy of the store at generation ([\d,]+)", summary)
    return int(found.group(1).replace(",", "")) if found else None


def start_generation(location: str) -> int:
    with open_store(location, readonly=True) as store:
        return store.generation()


KINDS = [pytest.param("lmdb", id="lmdb"), pytest.param("redis", id="redis", marks=pytest.mark.redis),
         pytest.param("cluster", id="cluster", marks=pytest.mark.redis)]
#: Seconds the writer waits between its writes: a few milliseconds, so that it writes all through a run.
PAUSE = 0.002


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("workers", [1, 2])
def test_pairs_beside_a_writer_are_those_of_one_state(kind, workers, tmp_path, request):
    location = location_of(kind, tmp_path, request)
    stable, start = store_beside_writer(location)
    first = start_generation(location)
    writer = Writer(location, stable, PAUSE)
    done = run_beside(writer, "pairs", "--store", location, "--workers", str(workers), "--metric", METRIC,
                      "--threshold", str(THRESHOLD))
    assert done.returncode == EXIT_OK, done.stderr
    printed = {}
    for line in map(json.loads, done.stdout.splitlines()):
        pair = frozenset((line["a"], line["b"]))
        assert pair not in printed, f"{sorted(pair)} printed twice"
        printed[pair] = line["similarity"]
    generation = view_generation(done.stderr)
    if kind == "lmdb":
        assert generation is None, done.stderr
        untouched = {doc_id: sketch for doc_id, sketch in start.items() if doc_id not in writer.touched()}
        expected = exhaustive(untouched)
        assert {pair: similarity for pair, similarity in printed.items() if pair <= set(untouched)} == expected
    else:
        assert generation is not None and generation >= first, done.stderr
        state = writer.state_at(start, generation)
        assert len(state) > len(stable)
        expected = exhaustive(state)
        assert printed == expected
    assert len(expected) >= 40
    assert any(not pair <= set(stable) for pair in printed), "no pair of an article the writer wrote"


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_cluster_beside_a_writer_stores_the_ids_of_one_state(kind, tmp_path, request):
    """Components: the two articles of every pair of the state read share a cluster id where neither was written
    since; articles first written after the read get none."""
    location = location_of(kind, tmp_path, request)
    stable, start = store_beside_writer(location)
    writer = Writer(location, stable, PAUSE)
    done = run_beside(writer, "cluster", "--store", location, "--method", "components", "--metric", METRIC,
                      "--threshold", str(THRESHOLD))
    assert done.returncode == EXIT_OK, done.stderr
    with open_store(location, readonly=True) as store:
        final = dict(store.items())
        clusters = dict(zip(final, store.clusters(list(final))))
    generation = view_generation(done.stderr)
    if kind == "lmdb":
        assert generation is None, done.stderr
        read = {doc_id: sketch for doc_id, sketch in start.items() if doc_id not in writer.touched()}
        unchanged = set(read)
    else:
        read = writer.state_at(start, generation)
        unchanged = {doc_id for doc_id in read if all(committed <= generation for committed, written, _ in writer.log
                                                        if written == doc_id)}
        for doc_id in set(final) - set(read):  # first written after the read
            assert clusters[doc_id] == -1, doc_id
    assert all(clusters[doc_id] >= 0 for doc_id in unchanged if doc_id in final)
    pairs = [pair for pair in exhaustive(read) if pair <= unchanged]
    assert len(pairs) >= 40
    for a, b in map(sorted, pairs):
        assert clusters[a] == clusters[b], (a, b)


def written_while_read(url: str, during_scan: int, during_catch_up: int):
    """The Redis store at url, written to at the moments the test chooses: a batch of `during_scan` new articles
    once the first snapshot of it began (the copy's read of every article), one more article at each of the first
    `during_catch_up` reads of its change log (the copy's reads of what was written since)."""
    from neardup.store.redis import RedisStore

    class WrittenWhileRead(RedisStore):
        scan_writes, catch_ups, past_log = during_scan, during_catch_up, 0

        def snapshot(self):
            begun = super().snapshot()
            if self.scan_writes:
                self.put_many([(f"scan-{n}", encode_sketch([n])) for n in range(self.scan_writes)])
                self.scan_writes = 0
            return begun

        def changed_since(self, generation):
            found = super().changed_since(generation)
            self.past_log += found is None
            if self.catch_ups:
                self.catch_ups -= 1
                self.put_many([(f"catch-up-{self.catch_ups}", encode_sketch([self.catch_ups]))])
            return found

    return WrittenWhileRead.open(url)


def copied(store, url: str) -> int:
    """The generation of the copy read_view makes; the copy must hold the store's articles now, in its order."""
    with read_view(store, url) as view:
        assert view.generation == store.generation()
        with open_store(view.location, readonly=True) as copy, copy.snapshot() as in_copy, \
                store.snapshot() as in_store:
            assert [article for _, *article in in_copy.scan()] == [article for _, *article in in_store.scan()]
    assert not Path(view.location).exists()  # the copy is gone with the view
    return view.generation


@pytest.mark.redis
def test_the_copy_is_the_store_at_the_generation_it_names_after_writes_during_each_step(redis_url):
    """A batch written during the read of every article, an article during each of the first reads of what was
    written since: those reads start again, the read of every article does not."""
    stable, start = store_beside_writer(redis_url)
    with written_while_read(redis_url, 5, CATCH_UP_ATTEMPTS - 1) as store:
        copied(store, redis_url)
        assert store.catch_ups == 0 and store.past_log == 0
        assert store.count() == len(start) + 5 + CATCH_UP_ATTEMPTS - 1


@pytest.mark.redis
def test_a_batch_past_the_change_log_during_the_read_reads_the_store_again(redis_url):
    from neardup.store.redis import LOG_ENTRY_IDS

    store_beside_writer(redis_url)
    with written_while_read(redis_url, LOG_ENTRY_IDS + 1, 0) as store:
        copied(store, redis_url)
        assert store.past_log == 1


@pytest.mark.redis
def test_a_store_written_during_every_read_fails_in_one_clear_error(redis_url):
    store_beside_writer(redis_url)
    with written_while_read(redis_url, 0, COPY_ATTEMPTS * CATCH_UP_ATTEMPTS) as store:
        with pytest.raises(StoreChanged, match="was written during each read of what was written since the copy "
                                               "began .* writes come faster than it can be read"):
            with read_view(store, redis_url):
                pass
        assert store.catch_ups == 0
