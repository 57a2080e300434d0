"""A fleet on one Redis store: `neardup serve` processes on different ports (as on different hosts) see each other's
writes at once, cached answers included; and Redis crashing and restarting under a load of writes."""
from __future__ import annotations

import random
import signal
import threading
import time

import grpc
import pytest

from neardup.store import open_store
from neardup_client import Document, NearDupClient, NearDupClientError
from brute import assert_index_matches_sketches
from server_process import RedisServer, run_neardup, serving, sketch_store, write_jsonl
from sketches import sketch_with_shared_values
from textgen import STORIES_THRESHOLD as THRESHOLD, stories as corpus


def test_a_write_through_one_server_is_seen_by_the_next_dedup_through_another(redis_url, tmp_path):
    texts = corpus()
    records = [{"id": doc_id, "text": text} for doc_id, text in texts.items()]
    done = run_neardup("index", str(write_jsonl(tmp_path / "corpus.jsonl", records)), "--store", redis_url)
    assert done.returncode == 0, done.stderr
    assert f"indexed into {redis_url}" in done.stdout
    ids = ["c", "e", "a"]
    with serving(redis_url, log_dir=tmp_path) as one, serving(redis_url, log_dir=tmp_path, workers=2) as two, \
            NearDupClient(one.target, timeout=10) as first, NearDupClient(two.target, timeout=10) as second:
        for client in (first, second):  # each server caches the answer
            assert client.dedup(ids, threshold=THRESHOLD).keep == ids
            assert client.dedup(ids, threshold=THRESHOLD).cached
        assert first.upsert([Document("e", text=texts["c"])]) == 1  # "e" becomes a copy of "c"
        answer = second.dedup(ids, threshold=THRESHOLD)
        assert (answer.keep, answer.cached) == (["c", "a"], False)
        assert second.dedup(ids, threshold=THRESHOLD).cached
        assert [match.id for match in second.find_similar("c", threshold=THRESHOLD).matches] == ["e"]
        assert second.delete(["e"]) == 1
        answer = first.dedup(ids, threshold=THRESHOLD)
        assert (answer.keep, answer.missing, answer.cached) == (["c", "e", "a"], ["e"], False)
        info = [client.info() for client in (first, second)]
        assert info[0].articles == info[1].articles == len(texts) - 1
        assert info[0].store == info[1].store == "redis"


@pytest.mark.redis
def test_redis_restarted_under_writes_is_unavailable_then_served_and_keeps_every_acknowledged_batch(tmp_path):
    """Redis killed (its append-only file fsynced at every write) and started again while four clients upsert:
    they see UNAVAILABLE, never another error, their writes succeed again once Redis is back, and every batch a
    client was told succeeded is stored whole."""
    redis = RedisServer(tmp_path / "redis", durable=True).start()
    url = redis.url()
    sketch_store(url, {})
    acked: list[dict[str, bytes]] = []
    failures: list[grpc.StatusCode] = []
    stop = threading.Event()
    try:
        with serving(url, log_dir=tmp_path) as server:
            def write(writer: int) -> None:
                rng = random.Random(writer)
                with NearDupClient(server.target, timeout=5) as client:
                    for number in range(100_000):
                        if stop.is_set():
                            return
                        batch = {f"w{writer}-{number}-{i}": sketch_with_shared_values(rng) for i in range(8)}
                        try:
                            client.upsert([Document(doc_id, sketch=sketch) for doc_id, sketch in batch.items()])
                        except NearDupClientError as error:
                            failures.append(error.code)
                            time.sleep(0.05)
                            continue
                        acked.append(batch)

            writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
            for thread in writers:
                thread.start()
            _wait_for(lambda: len(acked) >= 40)
            redis.stop(signal.SIGKILL)
            _wait_for(lambda: len(failures) >= 4)
            before_restart = len(acked)
            redis.start()
            _wait_for(lambda: len(acked) >= before_restart + 40)
            stop.set()
            for thread in writers:
                thread.join(30)
            with NearDupClient(server.target, timeout=5) as client:
                some = list(acked[-1])
                assert client.dedup(some).missing == []
        assert set(failures) == {grpc.StatusCode.UNAVAILABLE}
        with open_store(url, readonly=True) as store:
            for batch in acked:
                assert store.get_many(list(batch)) == list(batch.values())
        assert_index_matches_sketches(url)
    finally:
        stop.set()
        redis.stop()


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
