"""The per-process caches of the request path (sketch view, session cache) never serve what another process
has since changed in the store: they follow the store's generation and change log through one ChangeFeed."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from neardup.runtime.cache import SessionCache
from neardup.runtime.changefeed import ChangeFeed
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.store import create_store, open_store
from neardup.runtime.view import LiveView
from observe import commands_sent
from server_process import sketch_store


def write_from_another_process(store_path, puts: dict[str, list[int]], deletes: list[str] = ()) -> None:
    """A second process writes, as a second server worker or `neardup index` would."""
    code = textwrap.dedent(f"""
        from neardup.core.encoding import encode_sketch
        from neardup.store import open_store
        with open_store({str(store_path)!r}) as store:
            if {puts!r}:
                store.put_many([(i, encode_sketch(v)) for i, v in {puts!r}.items()])
            if {list(deletes)!r}:
                store.delete_many({list(deletes)!r})
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def store(tmp_path):
    with open_store(sketch_store(tmp_path / "store", {"a": encode_sketch([1, 2, 3]), "b": encode_sketch([4, 5])})) \
            as opened:
        yield opened


def test_view_answers_like_the_store_and_follows_other_processes(store, tmp_path):
    view = LiveView(store)
    ids = ["a", "b", "c"]
    assert view.read().get_many(ids) == store.get_many(ids) == [encode_sketch([1, 2, 3]), encode_sketch([4, 5]), None]
    reading = view.read()
    assert reading.get_many(ids) == store.get_many(ids)  # now from memory
    write_from_another_process(tmp_path / "store", {"a": [7, 8], "c": [9]}, deletes=["b"])
    assert reading.get_many(ids) == [encode_sketch([1, 2, 3]), encode_sketch([4, 5]), None]  # read before the write
    assert view.read().get_many(ids) == [encode_sketch([7, 8]), None, encode_sketch([9])]


def test_answers_are_remembered_until_an_id_they_read_changes(store, tmp_path):
    view = LiveView(store, cache_size=10, cache_ttl=0)
    reading = view.read()
    reading.remember(b"set-ab", "answer ab", frozenset({"a", "b"}))
    reading.remember(b"set-c", "answer c", frozenset({"c"}))
    assert view.read().cached(b"set-ab") == "answer ab"
    write_from_another_process(tmp_path / "store", {"b": [6]})
    assert view.read().cached(b"set-ab") is None
    assert view.read().cached(b"set-c") == "answer c"


def test_view_is_dropped_when_the_change_log_cannot_tell(store, tmp_path):
    view = LiveView(store)
    view.read().get_many(["a"])
    store.put_many([("a", encode_sketch([11]))])
    view._sketches._invalidate(view.read().generation, None)  # what a subscriber hears when the log cannot tell
    assert view.read().get_many(["a"]) == [encode_sketch([11])]


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_session_cache_drops_only_answers_that_read_a_changed_id(store, tmp_path):
    feed = ChangeFeed(store)
    cache = SessionCache(feed, maxsize=10, ttl=0)
    now = feed.refresh()
    cache.put("set-ab", "answer-ab", frozenset({"a", "b"}), now)
    cache.put("set-c", "answer-c", frozenset({"c"}), now)
    assert cache.get("set-ab", now) == "answer-ab"
    write_from_another_process(tmp_path / "store", {"c": [42]})
    now = feed.refresh()
    assert cache.get("set-c", now) is None          # "c" was missing, now it is stored
    assert cache.get("set-ab", now) == "answer-ab"  # untouched by that write
    write_from_another_process(tmp_path / "store", {}, deletes=["a"])
    now = feed.refresh()
    assert cache.get("set-ab", now) is None


def test_answer_computed_before_a_write_is_not_served_after_it(store, tmp_path):
    """An answer stored with the generation read before its sketches is checked against later writes."""
    feed = ChangeFeed(store)
    cache = SessionCache(feed, maxsize=10, ttl=0)
    before = feed.refresh()
    write_from_another_process(tmp_path / "store", {"a": [99]})
    cache.put("set-a", "stale?", frozenset({"a"}), before)
    assert cache.get("set-a", feed.refresh()) is None


def test_disabled_cache_stores_nothing(store):
    feed = ChangeFeed(store)
    cache = SessionCache(feed, maxsize=0)
    cache.put("k", "v", frozenset(), feed.refresh())
    assert cache.get("k", feed.refresh()) is None and len(cache) == 0


def set_clusters_from_another_process(store_path, assignments: dict[str, int], clustering: dict | None) -> None:
    """A second process clusters, as `neardup cluster` would."""
    code = textwrap.dedent(f"""
        from neardup.store import open_store
        with open_store({str(store_path)!r}) as store:
            store.set_clusters(list({assignments!r}.items()), {clustering!r})
    """)
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cluster_ids_come_from_memory_and_follow_each_clustering_run(store, tmp_path):
    loads = []
    store_clusters = store.clusters
    store.clusters = lambda ids: loads.append(list(ids)) or store_clusters(ids)  # counts the view's store reads
    view = LiveView(store)
    assert view.read().clusters(["a", "b"]) is None  # not clustered: answers carry no cluster ids
    clustering = {"method": "components", "threshold": 0.5, "metric": "containment"}
    set_clusters_from_another_process(tmp_path / "store", {"a": 5, "b": 5}, clustering)
    reading = view.read()
    assert reading.clusters(["a", "b", "c"]) == [5, 5, -1]
    assert view.read().clusters(["b", "a"]) == [5, 5]
    assert loads == [["a", "b", "c"]]  # the second read came from memory
    set_clusters_from_another_process(tmp_path / "store", {"b": -2}, None)  # b gets a new cluster
    assert view.read().clusters(["a", "b"]) == [5, store_clusters(["b"])[0]] != [5, 5]
    assert loads[1:] == [["b"]]  # only the id the run changed is read again


def test_the_generation_is_read_from_lmdbs_commit_id_and_follows_every_commit(store, tmp_path):
    """LmdbStore.generation() skips its transaction while LMDB's last commit id (lock.mdb) is unchanged: on this
    platform the id must be found, agree with LMDB's own, and move with every commit of any process."""
    commits = store._commits
    assert commits is not None and commits.last() == store._env.info()["last_txnid"]
    before = store.generation()
    assert store.generation() == before and store._seen == (commits.last(), before)
    write_from_another_process(tmp_path / "store", {"d": [10]})
    assert commits.last() == store._env.info()["last_txnid"] == store._seen[0] + 1
    assert store.generation() == before + 1
    store.put_many([("e", encode_sketch([11]))])  # this process's own commit too
    assert store.generation() == before + 2


@pytest.fixture
def any_store_location(store_location) -> str:
    """A store holding a and b, in an LMDB directory or on the session's redis-server."""
    return str(sketch_store(store_location, {"a": encode_sketch([1, 2, 3]), "b": encode_sketch([4, 5])}))


def test_a_reading_given_its_ids_holds_their_sketches_and_follows_other_processes(any_store_location):
    """read(ids), the request path's read: the sketches the view lacks come with the generation, are exact, and
    a write by another process is seen by the next read, sketches read with the generation included."""
    ids = ["a", "b", "c"]
    with open_store(any_store_location) as store:
        view = LiveView(store)
        reading = view.read(ids)
        assert reading.get_many(ids) == [encode_sketch([1, 2, 3]), encode_sketch([4, 5]), None]
        write_from_another_process(any_store_location, {"a": [7, 8], "c": [9]}, deletes=["b"])
        assert reading.get_many(ids) == [encode_sketch([1, 2, 3]), encode_sketch([4, 5]), None]  # read before it
        assert view.read(ids).get_many(ids) == [encode_sketch([7, 8]), None, encode_sketch([9])]
        assert view.read(["a", "d"]).get_many(["d", "a"]) == [None, encode_sketch([7, 8])]


def test_a_cold_reading_of_a_redis_store_reads_generation_and_sketches_together_and_once(redis_url):
    """A request whose sketches the view lacks sends GET and HMGET together (one round trip, pipelined) and
    nothing else; its sketches then come from memory; a warm one sends only the GET."""
    import redis  # the redis extra, as every test on a Redis store

    with create_store(redis_url, SketchConfig(), []) as store, redis.Redis.from_url(redis_url.split("?")[0]) as client:
        store.put_many([(f"d{i}", encode_sketch([i, i + 1])) for i in range(100)])
        ids = [f"d{i}" for i in range(0, 100, 2)] + ["missing"]
        view = LiveView(store)
        answers = []
        assert commands_sent(client, lambda: answers.append(view.read(ids).get_many(ids))) \
            == {"get": 1, "hmget": 1, "info": 1}
        assert answers[0] == store.get_many(ids) and answers[0][-1] is None
        assert commands_sent(client, lambda: answers.append(view.read(ids).get_many(ids))) == {"get": 1, "info": 1}
        assert answers[1] == answers[0]


def test_a_sketch_read_before_an_invalidation_is_not_kept(store, tmp_path):
    """The memo keeps a value read from the store only if no refresh dropped anything since the read began:
    otherwise it may be older than the write the refresh followed (two request threads racing)."""
    view = LiveView(store)
    memo = view._sketches
    epoch = memo.epoch
    stale = store.get_many(["a"])
    write_from_another_process(tmp_path / "store", {"a": [7, 8]})
    view.read()  # another thread's request catches up with the write meanwhile
    memo.offer(["a"], stale, epoch)
    assert view.read(["a"]).get_many(["a"]) == [encode_sketch([7, 8])]
