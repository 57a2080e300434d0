"""What only the Redis store has (its contract with the LMDB store is in test_store.py and test_store_postings.py):
its URL, its refusals, its key layout, its bounded change log, concurrent writers, reads that span a write, and
Redis going away and coming back."""
from __future__ import annotations

import ipaddress
import os
import random
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

# every test here uses redis-py, directly or through the Redis store: without the redis extra, none runs
redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install './client' '.[redis]'")
from redis.crc import key_slot  # noqa: E402

from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.core.errors import InvalidArgument, StoreChanged, StoreUnavailable
from neardup.store import create_store, open_store, store_exists
from neardup.store import redis as redis_store, redis_connection
from neardup.runtime.view import LiveView

from brute import assert_index_matches_sketches
from observe import commands_sent
from certs import issue, write_pem
from server_process import RedisServer, free_port, sketch_store
from sketches import K, sketch_with_shared_values

#: Batches of one article each of 4 other processes write while test_a_large_batch... writes its large one.
SMALL_WRITES = 400


@pytest.mark.parametrize("url, message", [
    ("redis://:secret@127.0.0.1:1/0", "NEARDUP_REDIS_PASSWORD"),
    ("redis://user:secret@127.0.0.1:1/0", "NEARDUP_REDIS_PASSWORD"),
    ("redis://127.0.0.1:1/zero", "DB a number"),
    ("redis://127.0.0.1:1/0?db=3", "one option"),
    ("redis://127.0.0.1:1/0?prefix={x}", "without braces"),
    ("redis:///0", "redis://HOST:PORT/DB"),
])
def test_a_bad_url_is_refused_before_connecting(url, message):
    with pytest.raises(InvalidArgument, match=message):
        open_store(url)


def test_no_store_at_a_url_says_how_to_make_one_and_exists_follows_creation(redis_url):
    assert not store_exists(redis_url)
    with pytest.raises(StoreUnavailable, match=r"no store at redis://127\.0\.0\.1:\d+/0\?prefix=test\d+: .*index"):
        open_store(redis_url)
    sketch_store(redis_url, {"a": b""})
    assert store_exists(redis_url)
    with open_store(redis_url) as store:
        assert store.backend == "redis" and store.format_version == redis_store.RedisStore.FORMAT_VERSION == 1
        assert store.count() == 1 and store.indexed


@pytest.mark.parametrize("field, damaged, message", [
    ("config", b"{not json", "restore it from a backup"), ("config", b'{"window": 3}', "restore it from a backup"),
    ("stoplist", b"abc", "restore it from a backup"), ("format_version", b"one", "restore it from a backup"),
    ("format_version", b"99", "format version 99.*re-index"),
])
def test_damaged_metadata_is_refused(redis_url, field, damaged, message):
    sketch_store(redis_url, {})
    with open_store(redis_url) as store:
        store._client.hset(store._keys.meta, field, damaged)
    with pytest.raises(StoreUnavailable, match=message):
        open_store(redis_url)


def test_keys_of_another_program_are_refused(redis_url):
    with _client(redis_url) as (client, keys):
        client.set(keys.meta, b"a string, not a hash")
    with pytest.raises(StoreUnavailable, match="cannot open store .*WRONGTYPE"):
        open_store(redis_url)
    with pytest.raises(StoreUnavailable, match="already holds a store"):
        create_store(redis_url, SketchConfig(), [])


def test_every_key_of_a_store_is_in_one_cluster_slot_and_prefixes_spread_stores(redis_server):
    slots = {}
    for prefix in ("slot-a", "slot-b"):
        with create_store(redis_server.url(prefix), SketchConfig(), []) as store:
            store.put_many([("a", encode_sketch([1, 2])), ("b", encode_sketch([2]))])
            store.set_clusters([("a", -1)])
            store.delete_many(["b"])
            keys = store._client.keys("{" + prefix + "}*")
            named = {key.decode() for key in keys if b":postings:" not in key}
            assert named == {"{" + prefix + "}:" + name for name in
                             ("meta", "generation", "log", "sketches", "docnos", "ids", "clusters")}
            assert len(keys) - len(named) == 2  # the buckets of values 1 and 2
            slots[prefix] = {key_slot(key) for key in keys}
    assert len(slots["slot-a"]) == 1 and len(slots["slot-b"]) == 1 and slots["slot-a"] != slots["slot-b"]


def test_the_change_log_is_bounded_and_a_large_batch_logs_everything(redis_url, monkeypatch):
    monkeypatch.setattr(redis_store, "LOG_ENTRIES", 5)
    monkeypatch.setattr(redis_store, "LOG_ENTRY_IDS", 3)
    sketch_store(redis_url, {})
    store = open_store(redis_url)
    first = store.put_many([("a", b"")])
    for n in range(5):
        store.put_many([(f"b{n}", b"")])
    assert store.changed_since(first - 1) is None                    # the first batch fell out of the log
    assert store.changed_since(first) == {f"b{n}" for n in range(5)}
    large = store.put_many([(f"c{n}", b"") for n in range(4)])
    assert store.changed_since(large - 1) is None                    # its ids were not listed
    assert store.changed_since(large) == set() and store.changed_since(large + 1) is None
    store.delete_many(["a"])
    assert store.changed_since(large) == {"a"}
    store.close()


@pytest.mark.parametrize("kind", ["redis", "redis-cluster"])
def test_concurrent_writers_commit_every_batch_whole(kind, request):
    """Writers that WATCH the same generation (of the store, or of each shard of a cluster store): a writer that
    lost the race reads again, so no batch is lost, the postings stay exact and no article number is given twice."""
    url = request.getfixturevalue("redis_url" if kind == "redis" else "redis_cluster_url")
    sketch_store(url, {})

    def write(seed: int) -> None:
        rng = random.Random(seed)
        with open_store(url) as store:
            for _ in range(25):
                store.put_many([(f"d{rng.randrange(60)}", sketch_with_shared_values(rng))
                                for _ in range(rng.randint(1, 20))])
                store.delete_many([f"d{rng.randrange(60)}" for _ in range(3)])

    writers = [threading.Thread(target=write, args=(seed,)) for seed in range(3)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    docnos = assert_index_matches_sketches(url)
    assert len(set(docnos.values())) == len(docnos) > 0
    if kind == "redis":  # one generation: each batch commits once (a cluster store's batch, once per shard)
        with open_store(url) as store:
            assert store.generation() == 3 * 25 * 2
            assert store.changed_since(0) is not None


def test_writers_adding_new_articles_at_once_never_lose_the_race(redis_url, redis_server):
    """Batches of new articles commit by one script, without WATCHing the generation (what several Dask workers
    writing one store do): 4 processes add 30 batches each at once, and no batch is tried twice. A batch holding a
    stored id is written as before, WATCHed. Article numbers stay distinct, postings exact."""
    sketch_store(redis_url, {})
    writers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import random
        from neardup.store import open_store
        from sketches import sketch_with_shared_values
        rng = random.Random({seed})
        with open_store({redis_url!r}) as store:
            for batch in range(30):
                store.put_many([(f"w{seed}-{{batch}}-{{n}}", sketch_with_shared_values(rng)) for n in range(20)])
        """)], env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}) for seed in range(4)]
    client = redis.Redis(port=redis_server.port)
    sent = commands_sent(client, lambda: [writer.wait(120) for writer in writers])
    assert [writer.returncode for writer in writers] == [0] * 4
    assert sent.get("watch", 0) == 0 and sent["incr"] == 4 * 30  # one generation a batch, none tried twice
    rng = random.Random(9)
    with open_store(redis_url) as store:
        assert store.generation() == 4 * 30 and store.count() == 4 * 30 * 20
        batch = [("w0-0-0", sketch_with_shared_values(rng)), ("new", sketch_with_shared_values(rng))]
        assert commands_sent(client, lambda: store.put_many(batch))["watch"] == 1  # a stored id: WATCHed
        assert store.generation() == 4 * 30 + 1 and store.changed_since(4 * 30) == {"w0-0-0", "new"}
        assert store.get_many(["w0-0-0", "new"]) == [sketch for _, sketch in batch]
    docnos = assert_index_matches_sketches(redis_url)
    assert len(set(docnos.values())) == len(docnos) == 4 * 30 * 20 + 1


def test_a_large_batch_commits_while_small_writers_keep_committing(redis_url):
    """A batch that keeps losing the race to smaller ones (each commit of another writer makes it compute again)
    takes its turn after a few losses: it commits after a bounded number of the others' commits, not once they
    stop. (Without the turn, 1,000 articles against 4 writers of one article took thousands of attempts.)"""
    rng = random.Random(7)
    sketch_store(redis_url, {f"c{n}": sketch_with_shared_values(rng) for n in range(2000)})
    small_writers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import random
        from neardup.store import open_store
        from sketches import sketch_with_shared_values
        rng = random.Random({seed})
        with open_store({redis_url!r}) as store:
            for _ in range({SMALL_WRITES}):
                store.put_many([(f"s{seed}-{{rng.randrange(100)}}", sketch_with_shared_values(rng))])
        """)], env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}) for seed in range(4)]
    try:
        large = {f"b{n}": sketch_with_shared_values(rng) for n in range(1000)}
        with open_store(redis_url) as store:
            while store.generation() < 1 + 40:  # the small writers are under way
                time.sleep(0.005)
            before = store.generation()
            committed = store.put_many(list(large.items()))
    finally:
        codes = [writer.wait(120) for writer in small_writers]
    assert codes == [0] * 4
    others_meanwhile = committed - before - 1  # 6 to 122 seen with the turn, ~1,550 of the 1,600 without it
    assert others_meanwhile < SMALL_WRITES, f"the batch waited for {others_meanwhile} commits of other writers"
    with open_store(redis_url) as store:
        assert store.generation() == 1 + 4 * SMALL_WRITES + 1
        assert store.get_many(list(large)) == list(large.values())
    assert_index_matches_sketches(redis_url)


def test_a_read_spanning_a_write_is_refused_and_a_search_asks_again(redis_url):
    with create_store(redis_url, SketchConfig(k=K), []) as store, open_store(redis_url) as other:
        store.put_many([("a", encode_sketch([1, 2, 3])), ("b", encode_sketch([1, 2, 3]))])
        with store.snapshot() as snapshot:
            docno, _ = snapshot.sketch("a")
            other.put_many([("c", encode_sketch([9]))])
            with pytest.raises(StoreChanged, match="changed during the read"):
                snapshot.articles([docno])
        first = store.snapshot()
        read_sketch = first.sketch

        def sketch_then_another_write(doc_id):
            found = read_sketch(doc_id)
            other.put_many([("d", encode_sketch([1, 2, 3]))])  # before the first search reads the postings
            return found

        first.sketch = sketch_then_another_write
        snapshots = iter([first])
        engine = SimilarSearch(ServedStore(_Wrapped(store, snapshot=lambda: next(snapshots, None) or store.snapshot())))
        found = engine.find_similar("a", SimilarParams(threshold=0.5))
        assert [match.id for match in found.matches] == ["b", "d"]


@pytest.mark.redis
def test_redis_going_away_is_unavailable_and_its_return_is_served(tmp_path):
    with RedisServer(tmp_path / "redis", durable=True) as server:
        url = server.url()
        sketch_store(url, {"a": encode_sketch([1])})
        store = open_store(url)
        snapshot = store.snapshot()  # a search under way when Redis goes
        server.stop()
        for call in (lambda: store.get_many(["a"]), store.generation, lambda: store.put_many([("b", b"")]),
                     lambda: snapshot.sketches(["a"]), lambda: snapshot.postings(encode_sketch([1])),
                     store.snapshot):
            with pytest.raises(StoreUnavailable, match="Redis|ConnectionError"):
                call()
        with pytest.raises(StoreUnavailable, match="cannot open store"):
            open_store(url)
        server.start()
        assert store.get_many(["a"]) == [encode_sketch([1])]  # the pooled connection is made again
        store.put_many([("b", b"")])
        assert store.count() == 2
        store.close()


class _Wrapped:
    """A store with one method replaced."""

    def __init__(self, store, **methods):
        self._store, self._methods = store, methods

    def __getattr__(self, name):
        return self._methods.get(name) or getattr(self._store, name)


class _client:
    """A raw redis-py client on a store URL, and the store's key names."""

    def __init__(self, url: str):
        self._client, self._keys, _ = redis_connection.connect(url)

    def __enter__(self):
        return self._client, self._keys

    def __exit__(self, *exc):
        self._client.close()


@pytest.mark.redis
def test_a_tls_redis_with_a_password_is_used_through_the_environment_only(tmp_path, monkeypatch):
    """rediss:// checks Redis' certificate against $NEARDUP_REDIS_CA; the password comes from
    $NEARDUP_REDIS_PASSWORD and is never shown."""
    pki = tmp_path / "pki"
    pki.mkdir()
    ca = issue("redis test CA")
    write_pem(pki, "ca", ca[0])
    write_pem(pki, "server", *issue("redis", ca, usage=ExtendedKeyUsageOID.SERVER_AUTH,
                                     names=(x509.IPAddress(ipaddress.ip_address("127.0.0.1")),)))
    with RedisServer(tmp_path / "redis", password="pa55-word", tls=pki) as server:
        url = server.url()
        monkeypatch.setenv(redis_connection.CA_ENV, str(pki / "ca.pem"))
        with pytest.raises(StoreUnavailable, match="(?i)auth") as refused:
            create_store(url, SketchConfig(), [])
        monkeypatch.setenv(redis_connection.PASSWORD_ENV, "wrong")
        with pytest.raises(StoreUnavailable, match="(?i)pass|auth"):
            open_store(url)
        monkeypatch.setenv(redis_connection.PASSWORD_ENV, "pa55-word")
        sketch_store(url, {"a": encode_sketch([1, 2])})
        with open_store(url) as store:
            assert store.get_many(["a", "b"]) == [encode_sketch([1, 2]), None] and store.generation() == 1
            assert store.location == url and "pa55" not in store.location
        monkeypatch.delenv(redis_connection.CA_ENV)  # the system's CAs do not know this one
        with pytest.raises(StoreUnavailable, match="(?i)certificate"):
            open_store(url)
        monkeypatch.setenv(redis_connection.CA_ENV, str(pki / "ca.pem"))
        with pytest.raises(StoreUnavailable):  # plain text to a TLS port
            open_store(url.replace("rediss://", "redis://"))
    assert "pa55" not in str(refused.value)


def test_a_generation_gone_back_after_a_failover_drops_what_the_view_read(redis_url):
    """A replica promoted without the primary's last writes answers an older generation (and older sketches): a
    server's view must not keep what it read at the lost generations."""
    sketch_store(redis_url, {"a": encode_sketch([1])})
    with open_store(redis_url) as store:
        view = LiveView(store)
        assert view.read().get_many(["a"]) == [encode_sketch([1])]
        store.put_many([("a", encode_sketch([2]))])             # written on the old primary, read by the view,
        assert view.read().get_many(["a"]) == [encode_sketch([2])]
        store._client.set(store._keys.generation, 1)            # then lost with it: the new primary is at 1
        store._client.hset(store._keys.sketches, "a", encode_sketch([1]))
        reading = view.read()
        assert reading.generation == 1 and reading.get_many(["a"]) == [encode_sketch([1])]


@pytest.mark.redis
def test_a_full_redis_refuses_whole_batches_and_keeps_every_acknowledged_one(tmp_path):
    """maxmemory with noeviction: a batch that would pass it is refused as a whole, the acknowledged ones stay and
    the request path still reads them; Redis refuses even reads inside MULTI then, so writes (deletes too) wait
    until maxmemory is raised, after which the postings are exact."""
    with RedisServer(tmp_path / "redis", options=("--maxmemory", "3mb", "--maxmemory-policy", "noeviction")) as server:
        url = server.url()
        sketch_store(url, {})
        rng = random.Random(3)
        acknowledged: dict[str, bytes] = {}
        with open_store(url) as store:
            with pytest.raises(StoreUnavailable, match="OutOfMemoryError.*maxmemory"):
                for number in range(10_000):
                    batch = {f"n{number}-{i}": sketch_with_shared_values(rng) for i in range(50)}
                    store.put_many(list(batch.items()))
                    acknowledged.update(batch)
            assert acknowledged and store.count() == len(acknowledged)
            assert store.generation() == len(acknowledged) // 50
            assert store.get_many(list(acknowledged)) == list(acknowledged.values())
            store._client.config_set("maxmemory", "0")
            assert store.delete_many(list(acknowledged)[:10])[0] == 10
        assert_index_matches_sketches(url)


def test_commands_on_an_unreachable_or_refused_url_fail_in_one_line(neardup, tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four"}\n')
    port = free_port()  # nothing listens there
    for args, message in [
        (("index", corpus, "--store", f"redis://127.0.0.1:{port}/0"), f"cannot open store redis://127.0.0.1:{port}/0"),
        (("serve", "--store", f"redis://127.0.0.1:{port}/0"), f"cannot open store redis://127.0.0.1:{port}/0"),
        (("migrate", f"redis://127.0.0.1:{port}/0", tmp_path / "copy"), "cannot open store"),
        (("index", corpus, "--store", "redis://:hunter2@127.0.0.1:1/0"), "NEARDUP_REDIS_PASSWORD"),
    ]:
        done = neardup(*args)
        assert done.returncode == 1, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("neardup: error: ") and message in lines[0], lines
        assert "hunter2" not in done.stderr
    assert not (tmp_path / "copy").exists()
