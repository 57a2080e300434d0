"""What only the Redis Cluster store has (its contract with the other stores is in test_store.py,
test_store_postings.py and test_snapshot_contract.py, parametrized over it): its URL, its shards' key layout over
the primaries, the shards fixed at creation, the digest of the LMDB store, the generation summed over the shards
and their change logs, snapshots per shard, writers at once, cluster ids taken once across shards. Against a real
cluster of 3 primaries and 3 replicas (conftest.py redis_cluster)."""
from __future__ import annotations

import json
import random
import signal
import time
import zlib

import pytest

redis = pytest.importorskip("redis", reason="the redis extra is not installed: pip install './client' '.[redis]'")
from redis.crc import key_slot  # noqa: E402

from neardup.core.encoding import encode_sketch
from neardup.core.errors import InvalidArgument, StoreChanged, StoreUnavailable
from neardup.core.sketch_config import SketchConfig
from neardup.store import create_store, open_store, read_consistently, store_exists
from neardup.store.redis_cluster import DEFAULT_SHARDS

from server_process import CLUSTER_BUS_OFFSET, RedisClusterServers, _ephemeral_range, sketch_store
from sketches import K, random_sketch

pytestmark = pytest.mark.redis


@pytest.mark.parametrize("url, message", [
    ("redis+cluster://user:secret@127.0.0.1:1", "NEARDUP_REDIS_PASSWORD"),
    ("redis+cluster://127.0.0.1:1/0", "no /DB"),
    ("redis+cluster://127.0.0.1:one", "PORT, N and R numbers"),
    ("redis+cluster://127.0.0.1:1?shards=many", "PORT, N and R numbers"),
    ("redis+cluster://127.0.0.1:1?wait=all", "PORT, N and R numbers"),
    ("redis+cluster://127.0.0.1:1?wait=-1", "number of replicas, 0 or more"),
    ("redis+cluster://127.0.0.1:1?shards=0", "1 to 1024 shards"),
    ("redis+cluster://127.0.0.1:1?db=3", "got options"),
    ("redis+cluster://127.0.0.1:1?prefix={x}", "without braces"),
    ("redis+cluster://:1", "redis\\+cluster://HOST:PORT"),
])
def test_a_bad_url_is_refused_before_connecting(url, message):
    with pytest.raises(InvalidArgument, match=message):
        open_store(url)


def test_no_cluster_at_a_url_is_unavailable_in_one_line(redis_cluster):
    with pytest.raises(StoreUnavailable, match=r"cannot reach Redis Cluster redis\+cluster://127\.0\.0\.1:1"):
        open_store("redis+cluster://127.0.0.1:1")


def test_no_store_at_a_url_says_how_to_make_one_and_exists_follows_creation(redis_cluster_url):
    assert not store_exists(redis_cluster_url)
    with pytest.raises(StoreUnavailable, match=r"no store at redis\+cluster://.*\?prefix=test\d+: .*index"):
        open_store(redis_cluster_url)
    sketch_store(redis_cluster_url, {})
    assert store_exists(redis_cluster_url)
    with pytest.raises(StoreUnavailable, match="already holds a store"):
        create_store(redis_cluster_url, SketchConfig(), [])


def test_each_shard_has_a_hash_tag_of_its_own_and_the_shards_spread_over_the_primaries(redis_cluster):
    prefix = "layout"
    url = redis_cluster.url(prefix)
    ids = [f"article-{n}" for n in range(200)]
    with create_store(url, SketchConfig(k=K), []) as store:
        store.put_many([(doc_id, random_sketch(random.Random(n), k=K)) for n, doc_id in enumerate(ids)])
        shard_of = store.shard_of
    cluster = redis.cluster.RedisCluster(host="127.0.0.1", port=redis_cluster.servers[0].port)
    try:
        keys = {key.decode("latin-1") for key in cluster.scan_iter(match=f"{{{prefix}*", target_nodes=cluster.PRIMARIES)}
        tags = {key[:key.index("}") + 1] for key in keys}
        assert tags == {f"{{{prefix}}}"} | {f"{{{prefix}:shard{n}}}" for n in range(DEFAULT_SHARDS)}
        assert {f"{{{prefix}}}:meta", f"{{{prefix}}}:generation"} <= keys
        assert int(cluster.hget(f"{{{prefix}}}:meta", "cluster_shards")) == DEFAULT_SHARDS
        for doc_id in ids[:20]:  # an article's sketch is in its shard's key space only
            shard = zlib.crc32(doc_id.encode()) % DEFAULT_SHARDS  # the rule as docs/fleet.md states it
            assert shard_of(doc_id.encode()) == shard
            assert [cluster.hexists(f"{{{prefix}:shard{n}}}:sketches", doc_id) for n in range(DEFAULT_SHARDS)] \
                == [n == shard for n in range(DEFAULT_SHARDS)]
        primaries = {str(cluster.nodes_manager.get_node_from_slot(key_slot(tag.encode())).port) for tag in tags}
    finally:
        cluster.close()
    assert len(primaries) == 3  # 17 tags over 3 primaries: writes go to each of them
    assert len({shard_of(doc_id.encode()) for doc_id in ids}) == DEFAULT_SHARDS


def test_the_shards_are_fixed_at_creation(redis_cluster):
    url = redis_cluster.url("fixed", shards=4)
    with create_store(url, SketchConfig(k=K), []) as store:
        store.put_many([(f"d{n}", encode_sketch([n])) for n in range(50)])
        assert {store.shard_of(f"d{n}".encode()) for n in range(50)} == {0, 1, 2, 3}
    with pytest.raises(InvalidArgument, match="has 4 shards, the URL asks for 8"):
        open_store(redis_cluster.url("fixed", shards=8))
    with open_store(redis_cluster.url("fixed")) as store:
        assert store.count() == 50 and store.get_many(["d7"]) == [encode_sketch([7])]


def test_the_digest_and_items_equal_the_lmdb_store_s_for_the_same_writes(redis_cluster_url, tmp_path):
    rng = random.Random(3)
    ids = [f"doc-{n}-é" if n % 7 == 0 else f"doc-{n}" for n in range(600)]
    batches = [[(doc_id, random_sketch(rng, k=K)) for doc_id in rng.sample(ids, 80)] for _ in range(12)]
    deleted = rng.sample(ids, 40)
    digests, items = [], []
    for location in (tmp_path / "lmdb", redis_cluster_url):
        with create_store(location, SketchConfig(k=K), []) as store:
            for batch in batches:
                store.put_many(batch)
            store.delete_many(deleted)
            digests.append(store.digest())
            items.append(list(store.items()))
    assert digests[0] == digests[1] and items[0] == items[1] and len(items[0]) > 300


def test_changed_since_reads_every_shard_s_change_log_from_the_generation_this_store_read(redis_cluster_url):
    with create_store(redis_cluster_url, SketchConfig(k=K), []) as store, open_store(redis_cluster_url) as other:
        first = store.generation()
        written = [f"w{n}" for n in range(40)]
        other.put_many([(doc_id, encode_sketch([1])) for doc_id in written])
        second = store.generation()
        assert second > first and store.changed_since(first) == set(written)
        other.delete_many(written[:5])
        assert store.changed_since(second) == set(written[:5])
        assert store.changed_since(first) == set(written)
        assert store.changed_since(store.generation()) == set()
        assert store.changed_since(second + 10_000) is None  # never read here: drop everything


def test_a_snapshot_refuses_only_a_read_of_a_shard_written_since_and_a_new_one_sees_the_write(redis_cluster_url):
    with create_store(redis_cluster_url, SketchConfig(k=K), []) as store, open_store(redis_cluster_url) as other:
        ids = [f"s{n}" for n in range(60)]
        store.put_many([(doc_id, encode_sketch([1, 2])) for doc_id in ids])
        changed = ids[0]
        untouched = next(doc_id for doc_id in ids if store.shard_of(doc_id.encode())
                         != store.shard_of(changed.encode()))
        with store.snapshot() as snapshot:
            other.put_many([(changed, encode_sketch([9]))])
            assert snapshot.sketch(untouched)[1] == encode_sketch([1, 2])  # its shard did not change
            with pytest.raises(StoreChanged, match="changed during the read"):
                snapshot.sketch(changed)
        assert read_consistently(store, lambda snapshot: snapshot.sketch(changed)[1]) == encode_sketch([9])


def test_new_cluster_ids_are_taken_once_for_the_whole_store(redis_cluster_url):
    with create_store(redis_cluster_url, SketchConfig(k=K), []) as store:
        ids = [f"c{n}" for n in range(30)]
        store.put_many([(doc_id, encode_sketch([n])) for n, doc_id in enumerate(ids)])
        assert len({store.shard_of(doc_id.encode()) for doc_id in ids}) > 1
        store.set_clusters([(doc_id, -1 - n % 3) for n, doc_id in enumerate(ids)] + [("gone", -1)],
                           {"method": "components", "next_id": 10})
        assert store.clusters(ids + ["gone"]) == [10 + n % 3 for n in range(30)] + [-1]
        assert store.clustering()["next_id"] == 13 and store.clustered()
        store.set_clusters([(ids[0], -1)])  # an article clustered later: a new id
        assert store.clusters(ids[:2]) == [13, 11] and store.clustering()["next_id"] == 14


def test_a_cold_request_reads_every_shard_s_generation_and_its_sketches_from_each_primary_once(redis_cluster):
    """A request whose sketches the view lacks asks each primary, in one send, for its shards' generations and
    the sketches of the shards holding its ids, and nothing else; a warm one asks for the generations only."""
    from neardup.runtime.view import LiveView
    from observe import commands_sent

    url = redis_cluster.url("request-path", shards=8)
    primaries = [redis.Redis(port=server.port) for server in redis_cluster.servers
                 if "role:master" in redis_cluster.cli(server, "info", "replication")]
    assert len(primaries) == 3
    with create_store(url, SketchConfig(k=K), []) as store:
        store.put_many([(f"d{n}", encode_sketch([n, n + 1])) for n in range(100)])
        ids = [f"d{n}" for n in range(0, 100, 7)] + ["missing"]
        holding = {store.shard_of(doc_id.encode()) for doc_id in ids}
        view = LiveView(store)
        answers = []

        def sent(read) -> list[dict[str, int]]:
            """The commands each primary counted while read ran, besides the INFO that counts them and its
            replica's acknowledgements."""
            counts = [{}] * len(primaries)

            def nested(index: int):
                if index == len(primaries):
                    return read()
                counts[index] = commands_sent(primaries[index], lambda: nested(index + 1))

            nested(0)
            return [{name: calls for name, calls in count.items() if name not in ("info", "replconf")} for count in counts]

        cold = sent(lambda: answers.append(view.read(ids).get_many(ids)))
        assert sum(count.get("get", 0) for count in cold) == 8
        assert sum(count.get("hmget", 0) for count in cold) == len(holding)
        assert {name for count in cold for name in count} == {"get", "hmget"}
        assert answers[0] == store.get_many(ids) and answers[0][-1] is None and answers[0][0] == encode_sketch([0, 1])
        warm = sent(lambda: answers.append(view.read(ids).get_many(ids)))
        assert {name for count in warm for name in count} == {"get"} and answers[1] == answers[0]
    for primary in primaries:
        primary.close()


def test_a_tls_cluster_with_a_password_is_used_through_the_environment_only(tmp_path, monkeypatch):
    """rediss+cluster:// checks every node's certificate against $NEARDUP_REDIS_CA; the password comes from
    $NEARDUP_REDIS_PASSWORD, for the slot map and every primary, and is never shown."""
    import ipaddress

    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID

    from neardup.store import redis_connection
    from certs import issue, write_pem
    from server_process import RedisClusterServers

    pki = tmp_path / "pki"
    pki.mkdir()
    ca = issue("redis test CA")
    write_pem(pki, "ca", ca[0])
    write_pem(pki, "server", *issue("redis", ca, usage=(ExtendedKeyUsageOID.SERVER_AUTH,
                                                        ExtendedKeyUsageOID.CLIENT_AUTH),
                                     names=(x509.IPAddress(ipaddress.ip_address("127.0.0.1")),)))
    with RedisClusterServers(tmp_path / "cluster", password="pa55-word", tls=pki) as cluster:
        url = cluster.url("secure")
        assert url.startswith("rediss+cluster://")
        monkeypatch.setenv(redis_connection.CA_ENV, str(pki / "ca.pem"))
        with pytest.raises(StoreUnavailable, match="(?i)auth") as refused:
            create_store(url, SketchConfig(k=K), [])
        monkeypatch.setenv(redis_connection.PASSWORD_ENV, "wrong")
        with pytest.raises(StoreUnavailable, match="(?i)pass|auth"):
            open_store(url)
        monkeypatch.setenv(redis_connection.PASSWORD_ENV, "pa55-word")
        sketch_store(url, {f"d{n}": encode_sketch([n]) for n in range(40)}, SketchConfig(k=K))
        with open_store(url) as store:
            assert store.get_many(["d3", "nope"]) == [encode_sketch([3]), None] and store.count() == 40
            assert "pa55" not in store.location
        monkeypatch.delenv(redis_connection.CA_ENV)  # the system's CAs do not know this one
        with pytest.raises(StoreUnavailable, match="(?i)certificate"):
            open_store(url)
        monkeypatch.setenv(redis_connection.CA_ENV, str(pki / "ca.pem"))
        with pytest.raises(StoreUnavailable):  # plain text to TLS ports
            open_store(url.replace("rediss+cluster://", "redis+cluster://"))
    assert "pa55" not in str(refused.value)


def test_metadata_naming_no_shards_or_a_shard_of_another_configuration_is_refused(redis_cluster):
    url = redis_cluster.url("damaged")
    sketch_store(redis_cluster.url("damaged", shards=2), {"a": encode_sketch([1])}, SketchConfig(k=K))
    cluster = redis.cluster.RedisCluster(host="127.0.0.1", port=redis_cluster.servers[0].port)
    try:
        other = SketchConfig(k=16).to_dict()
        config = cluster.hget("{damaged:shard1}:meta", "config")
        cluster.hset("{damaged:shard1}:meta", "config", json.dumps(other, sort_keys=True))
        with pytest.raises(StoreUnavailable, match=r"shard 1 is of another configuration than the store's"):
            open_store(url)
        cluster.hset("{damaged:shard1}:meta", "config", config)
        cluster.hdel("{damaged}:meta", "cluster_shards")
        with pytest.raises(StoreUnavailable, match="its metadata names no shards"):
            open_store(url)
    finally:
        cluster.close()


def test_generations_given_only_grow_shard_by_shard_and_one_gone_back_drops_what_the_view_read(redis_cluster_url):
    """A generation is the sum of the shards' read together; one whose shard is older than the last one given
    (another thread read later) is read again, so the sums order what they name; a shard older at every read went
    back (a replica promoted without the primary's last writes): the view drops what it read."""
    from neardup.runtime.view import LiveView

    sketch_store(redis_cluster_url, {"a": encode_sketch([1]), "b": encode_sketch([1])}, SketchConfig(k=K))
    with open_store(redis_cluster_url) as store, open_store(redis_cluster_url) as writer:
        view = LiveView(store)
        assert view.read().get_many(["a"]) == [encode_sketch([1])]
        writer.put_many([("a", encode_sketch([2]))])  # written on the old primary, read by the view,
        assert view.read().get_many(["a"]) == [encode_sketch([2])]
        shard = store._shards[store.shard_of(b"a")]
        before = store.generation()
        lost = shard._client.decr(shard._keys.generation) + 1  # then lost with it, its log entry too
        shard._client.xdel(shard._keys.log, f"0-{lost}")
        shard._client.execute_command("XSETID", shard._keys.log, f"0-{lost - 1}")
        shard._client.hset(shard._keys.sketches, "a", encode_sketch([1]))
        reading = view.read()
        assert reading.generation == before - 1 and reading.get_many(["a"]) == [encode_sketch([1])]
        given = [store.generation()]
        for n in range(20):
            writer.put_many([(f"w{n}", encode_sketch([n]))])
            given.append(store.generation())
        assert given == sorted(given) and len(set(given)) == len(given)
        assert store.changed_since(given[0]) == {f"w{n}" for n in range(20)}


def test_commands_on_an_unreachable_cluster_or_a_bad_url_fail_in_one_line(neardup, tmp_path):
    from server_process import free_port

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"id": "a", "text": "one two three four"}\n')
    url = f"redis+cluster://127.0.0.1:{free_port()}"  # nothing listens there
    for args, message in [
        (("index", corpus, "--store", url), f"cannot reach Redis Cluster {url}"),
        (("serve", "--store", url), f"cannot reach Redis Cluster {url}"),
        (("migrate", url, tmp_path / "copy"), "cannot reach Redis Cluster"),
        (("index", corpus, "--store", "redis+cluster://u:hunter2@127.0.0.1:1"), "NEARDUP_REDIS_PASSWORD"),
        (("index", corpus, "--store", "redis+cluster://127.0.0.1:1?shards=2000"), "1 to 1024 shards"),
    ]:
        done = neardup(*args)
        assert done.returncode == 1, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("neardup: error: ") and message in lines[0], lines
        assert "hunter2" not in done.stderr
    assert not (tmp_path / "copy").exists()


def test_a_batch_not_on_as_many_replicas_as_wait_asks_is_not_acknowledged(redis_cluster):
    """?wait=R: each shard's committed batch waits for R replicas (Redis WAIT); the session's cluster has one per
    primary, so ?wait=2 fails every write as unavailable, naming why, and ?wait=1 acknowledges them."""
    url = redis_cluster.url("waited", shards=2)
    sketch_store(url, {}, SketchConfig(k=K))
    with open_store(url + "&wait=1") as store:
        store.put_many([("a", encode_sketch([1])), ("b", encode_sketch([2]))])
        assert store.delete_many(["b"])[0] == 1
    with open_store(url + "&wait=2") as store:
        with pytest.raises(StoreUnavailable, match=r"1 of 2 replicas confirmed the batch .*\?wait=.*lost in a "
                                                   r"failover"):
            store.put_many([("c", encode_sketch([3]))])
        assert store.get_many(["a", "b"]) == [encode_sketch([1]), None]


def test_a_scan_goes_on_across_moved_slots_and_reads_one_state(tmp_path):
    """A whole-store scan (the offline jobs' read) whose shards' slots move while it runs: each shard's scan is
    routed anew and goes on from where it stopped, and the articles are those the store held when it began. Two
    shards of over a chunk of articles each, so each shard's scan reads again after the move."""
    with RedisClusterServers(tmp_path / "cluster") as cluster:
        url = cluster.url("scanned", shards=2)
        written = {f"d{n:05d}": encode_sketch([n, n + 1]) for n in range(2600)}
        sketch_store(url, written, SketchConfig(k=K))
        with open_store(url, readonly=True) as store:
            with store.snapshot() as snapshot:
                expected = list(snapshot.scan())
            assert sorted((doc_id, sketch) for _, doc_id, sketch in expected) == sorted(written.items())
            with store.snapshot() as snapshot:
                scan = snapshot.scan()
                found = [next(scan)]  # every shard's first chunk read
                for shard in store._shards:
                    cluster.move_slot(key_slot(shard._keys.meta.encode()))
                found += list(scan)
            assert found == expected


def test_a_moved_slot_and_a_promoted_replica_are_followed_without_reopening_the_store(tmp_path):
    """A cluster of its own (node timeout 1 s): a shard's slot moved by MIGRATE, then the primary of another
    shard killed. Reads follow the move at once (the slot map read again, the read sent once more); while the
    killed primary is not replaced, its shards' calls are StoreUnavailable; then reads are served again, writes
    (?wait=1) once the node is back as the new primary's replica; nothing acknowledged is lost."""
    with RedisClusterServers(tmp_path / "cluster", node_timeout_ms=1000) as cluster:
        url = cluster.url("faults", shards=3) + "&wait=1"
        written = {f"d{n}": encode_sketch([n, n + 1]) for n in range(60)}
        sketch_store(url, written, SketchConfig(k=K))
        with open_store(url) as store:
            ids = sorted(written)
            slot = key_slot(store._shards[0]._keys.meta.encode())
            moved_to = cluster.move_slot(slot)
            assert store.get_many(ids) == [written[doc_id] for doc_id in ids]  # no error: followed
            assert [n for n, in_node in store._by_node.items() if 0 in in_node] == [("127.0.0.1", moved_to.port)]
            on_moved_shard = next(f"m{n}" for n in range(100) if store.shard_of(f"m{n}".encode()) == 0)
            written[on_moved_shard] = encode_sketch([7])
            store.put_many([(on_moved_shard, written[on_moved_shard])])

            killed_slot = key_slot(store._shards[1]._keys.meta.encode())
            killed = cluster.primary_of(killed_slot)
            replica = cluster.replica_of(killed)
            killed.stop(signal.SIGKILL)
            with pytest.raises(StoreUnavailable):
                store.generation()
            deadline = time.monotonic() + 60
            while True:  # unavailable until the replica is promoted; never a wrong answer
                try:
                    assert store.get_many(ids) == [written[doc_id] for doc_id in ids]
                    break
                except StoreUnavailable:
                    assert time.monotonic() < deadline, "not served again within 60 s"
                    time.sleep(0.1)
            assert cluster.primary_of(killed_slot) is replica
            on_killed_shard = next(f"k{n}" for n in range(100) if store.shard_of(f"k{n}".encode()) == 1)
            with pytest.raises(StoreUnavailable, match="0 of 1 replicas"):  # the new primary has none yet
                store.put_many([(on_killed_shard, encode_sketch([9]))])
            killed.start()
            deadline = time.monotonic() + 60
            while not cluster.settled():
                assert time.monotonic() < deadline, "the restarted node did not rejoin"
                time.sleep(0.1)
            written[on_killed_shard] = encode_sketch([9])
            store.put_many([(on_killed_shard, written[on_killed_shard])])
        with open_store(url, readonly=True) as reopened:
            assert dict(reopened.items()) == written


def test_a_clusters_ports_and_bus_ports_lie_outside_the_range_outgoing_connections_take():
    """A node binds its ports seconds after they were found free: an outgoing connection (the kernel gives it a port
    of that range) must not take one before (a CI run failed so)."""
    low, high = _ephemeral_range()
    for _ in range(20):
        ports = RedisClusterServers._ports(6)
        bus = [port + CLUSTER_BUS_OFFSET for port in ports]
        assert len(set(ports)) == 6 and not set(ports) & set(bus)
        assert not any(low <= port <= high for port in ports + bus), (ports, bus, low, high)
