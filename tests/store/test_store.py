"""The store contract, for every backend (LMDB, Redis): byte-exact round trips, atomic batches, the generation and
change log seen from other processes, the digest; and for the embedded store, clear errors for everything that is
not a readable store of this format (a Redis store's own are in test_redis_store.py)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import lmdb
import pytest

from neardup.core.sketch_config import SketchConfig, stoplist_digest
from neardup.core.encoding import encode_sketch
from neardup.core.errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from neardup.store import MAX_ID_BYTES, create_store, open_store, store_exists
from neardup.store.lmdb import CHANGE_LOG_IDS, LmdbStore
from server_process import sketch_store
from sketches import random_sketch

K = SketchConfig().k


def commits(store, ids) -> int:
    """The generations a batch of these ids adds: one; on a cluster store, one per shard it touches."""
    shard_of = getattr(store, "shard_of", None)
    return 1 if shard_of is None else len({shard_of(doc_id.encode()) for doc_id in ids})


@pytest.fixture
def store_path(store_location):
    """An empty store of each backend: an LMDB directory, a Redis URL."""
    return sketch_store(store_location, {})


@pytest.fixture
def lmdb_path(tmp_path):
    return sketch_store(tmp_path / "store", {})


@pytest.fixture
def store(store_path):
    with open_store(store_path) as opened:
        yield opened


def run_python(code: str, *args: str) -> str:
    """Runs code in another interpreter: what another server worker or tool process would see."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_round_trip_is_byte_identical_and_missing_ids_are_none(store):
    rng = random.Random(1)
    items = [(f"article-{i}", random_sketch(rng)) for i in range(500)] + [("ключ/ü", random_sketch(rng, K)),
                                                                         ("empty", b"")]
    store.put_many(items)
    ids = [doc_id for doc_id, _ in items]
    assert store.get_many(ids) == [sketch for _, sketch in items]
    assert store.get_many(["nope", ids[3], "also-missing"]) == [None, items[3][1], None]
    assert store.get_many([]) == []
    assert store.count() == len(items)


def test_put_replaces_and_the_last_of_repeated_ids_wins(store):
    store.put_many([("a", encode_sketch([1, 2])), ("a", encode_sketch([3]))])
    assert store.get_many(["a"]) == [encode_sketch([3])]
    store.put_many([("a", encode_sketch([7]))])
    assert store.get_many(["a"]) == [encode_sketch([7])] and store.count() == 1


def test_delete_counts_only_stored_ids(store):
    store.put_many([("a", b""), ("b", encode_sketch([1]))])
    deleted, generation = store.delete_many(["a", "never-stored"])
    assert (deleted, generation) == (1, commits(store, ["a", "b"]) + commits(store, ["a", "never-stored"]))
    assert store.get_many(["a", "b"]) == [None, encode_sketch([1])] and store.count() == 1


@pytest.mark.parametrize("bad_item, error", [
    (("x" * (MAX_ID_BYTES + 1), b""), InvalidArgument),
    (("é" * (MAX_ID_BYTES // 2 + 1), b""), InvalidArgument),   # short in characters, long in UTF-8 bytes
    (("", b""), InvalidArgument),
    ((42, b""), InvalidArgument),
    (("\ud800", b""), InvalidArgument),
    (("bad", encode_sketch([5, 3])), InvalidArgument),
    (("bad", b"\x01\x02\x03"), InvalidArgument),
    (("bad", "not bytes"), InvalidArgument),
    (("bad", encode_sketch(range(K + 1))), ConfigMismatch),
])
def test_a_bad_item_in_a_batch_writes_nothing(store, bad_item, error):
    store.put_many([("kept", encode_sketch([9]))])
    with pytest.raises(error):
        store.put_many([("good", encode_sketch([1])), bad_item, ("kept", encode_sketch([2]))])
    assert store.get_many(["good", "kept"]) == [None, encode_sketch([9])]
    assert store.count() == 1 and store.generation() == 1


@pytest.mark.parametrize("bad_id", ["x" * (MAX_ID_BYTES + 1), "", 42, "\ud800"])
def test_a_bad_id_in_a_delete_deletes_nothing(store, bad_id):
    store.put_many([("kept", encode_sketch([9]))])
    with pytest.raises(InvalidArgument):
        store.delete_many(["kept", bad_id])
    assert store.count() == 1 and store.generation() == 1


def test_the_longest_id_fits(store):
    longest = "é" * (MAX_ID_BYTES // 2)
    store.put_many([(longest, encode_sketch([1]))])
    assert store.get_many([longest]) == [encode_sketch([1])]


def test_writes_of_another_process_are_seen_with_their_generation_and_changes(store, store_path):
    store.put_many([("a", encode_sketch([1])), ("b", encode_sketch([2]))])
    before = store.generation()
    assert store.get_many(["a", "c"]) == [encode_sketch([1]), None]
    run_python("""
        import sys
        from neardup.core.encoding import encode_sketch
        from neardup.store import open_store
        with open_store(sys.argv[1]) as store:
            store.put_many([("a", encode_sketch([10])), ("c", encode_sketch([30]))])
            store.delete_many(["b"])
    """, str(store_path))
    middle = before + commits(store, ["a", "c"])
    now = store.generation()
    assert now == middle + commits(store, ["b"])
    assert store.changed_since(before) == {"a", "b", "c"}
    sharded = store.backend == "redis-cluster"
    if not sharded:  # a cluster store knows the shards' generations of a sum it read itself only
        assert store.changed_since(middle) == {"b"}
    assert store.changed_since(now) == set()
    assert store.get_many(["a", "b", "c"]) == [encode_sketch([10]), None, encode_sketch([30])]
    assert store.changed_since(now + 1) is None  # a generation this store never had: drop everything

    store.put_many([("d", b"")])
    seen_elsewhere = run_python("""
        import sys
        from neardup.store import open_store
        with open_store(sys.argv[1], readonly=True) as store:
            changed = store.changed_since(int(sys.argv[2]))
            print(store.generation(), changed if changed is None else sorted(changed), store.get_many(["d"]))
    """, str(store_path), str(before))
    # another process's generation: a cluster store's other process cannot tell its shards' generations
    changed = "None" if sharded else "['a', 'b', 'c', 'd']"
    assert seen_elsewhere.split(None, 1) == [str(now + commits(store, ["d"])), f"{changed} [b'']\n"]


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_change_log_is_bounded_and_says_when_it_no_longer_reaches_back(lmdb_path):
    store = open_store(lmdb_path)
    half = CHANGE_LOG_IDS // 2 + 1
    first = store.put_many([(f"a{i}", b"") for i in range(half)])
    second = store.put_many([(f"b{i}", b"") for i in range(half)])
    assert store.changed_since(first - 1) is None          # the first batch fell out of the log
    assert store.changed_since(first) == {f"b{i}" for i in range(half)}
    huge = store.put_many([(f"c{i}", b"") for i in range(CHANGE_LOG_IDS + 1)])
    assert store.changed_since(second) is None             # a batch bigger than the log clears it
    assert store.changed_since(huge) == set()
    store.delete_many(["a0"])
    assert store.changed_since(huge) == {"a0"}
    store.close()


@pytest.mark.parametrize("readonly", [True, False])
def test_a_process_opening_the_store_keeps_the_read_transactions_of_processes_that_have_it_open(lmdb_path, readonly):
    """LMDB knows it is not alone by the POSIX locks every process holds on lock.mdb; a store that closed a
    descriptor of that file of its own (reading the commit id) dropped them, and the next process to open the store
    took itself for the only one and reset the reader table: this process's read transaction vanished from it, and
    a writer could reuse the pages it was reading (readers saw torn batches)."""
    with open_store(lmdb_path, readonly=readonly) as store, store.snapshot():
        opener = ("import lmdb, sys\nfrom neardup.store import open_store\n"
                  "with open_store(sys.argv[1], readonly=True) as store: print(store._env.readers())")
        done = subprocess.run([sys.executable, "-c", opener, str(lmdb_path)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stderr
        assert str(os.getpid()) in done.stdout.split(), done.stdout


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_readers_in_other_processes_see_whole_batches_only(store, store_path):
    """Every batch writes one value to all ids; a reader must never see two values in one get_many (on a cluster
    store, whose batches are atomic per shard: in one shard's ids)."""
    ids = [f"id-{i}" for i in range(100)]
    store.put_many([(doc_id, encode_sketch([0])) for doc_id in ids])
    reader = """
        import sys
        from neardup.core.encoding import encode_sketch
        from neardup.store import open_store
        ids = [f"id-{i}" for i in range(100)]
        with open_store(sys.argv[1], readonly=True) as store:
            shard_of = getattr(store, "shard_of", lambda key: 0)
            seen = set()
            print("ready", flush=True)
            while encode_sketch([40]) not in seen:
                by_shard = {}
                for doc_id, value in zip(ids, store.get_many(ids)):
                    by_shard.setdefault(shard_of(doc_id.encode()), set()).add(value)
                assert all(len(values) == 1 for values in by_shard.values()), by_shard
                seen |= set().union(*by_shard.values())
            print(len(seen))
    """
    readers = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(reader), str(store_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for process in readers:
        assert process.stdout.readline() == "ready\n", process.stderr.read()
    for generation in range(2, 41):
        store.put_many([(doc_id, encode_sketch([generation])) for doc_id in reversed(ids)])
    versions_seen = []
    for process in readers:
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, err
        versions_seen.append(int(out))
    assert max(versions_seen) > 1  # the readers did read while batches were being written


def test_reopen_after_close_keeps_data_configuration_and_stoplist(tmp_path):
    config = SketchConfig(unit="word:4", k=16, lang="nl", stoplist_digest=stoplist_digest([7, 3]))
    with create_store(tmp_path / "s", config, [7, 3]) as store:
        store.put_many([("a", encode_sketch([1, 2]))])
        generation = store.generation()
    with open_store(tmp_path / "s") as store:
        assert store.config == config and store.stoplist == frozenset({3, 7})
        assert store.format_version == LmdbStore.FORMAT_VERSION == 2 and store.backend == "lmdb" and store.indexed
        assert store.get_many(["a"]) == [encode_sketch([1, 2])] and store.generation() == generation
        assert store.put_many([("b", b"")]) == generation + 1


def test_create_refuses_a_stoplist_that_does_not_match_the_digest_and_an_existing_store(tmp_path, store_path):
    with pytest.raises(ConfigMismatch):
        create_store(tmp_path / "other", SketchConfig(), [1, 2])
    with pytest.raises(StoreUnavailable, match="already holds a store"):
        create_store(store_path, SketchConfig(), [])


def test_readonly_reads_and_refuses_writes(store_path):
    with open_store(store_path) as store:
        store.put_many([("a", encode_sketch([1]))])
    with open_store(store_path, readonly=True) as readonly:
        assert readonly.get_many(["a"]) == [encode_sketch([1])]
        with pytest.raises(StoreUnavailable, match="read-only"):
            readonly.put_many([("b", b"")])
        with pytest.raises(StoreUnavailable, match="read-only"):
            readonly.delete_many(["a"])


def test_missing_directory_says_how_to_create_one(tmp_path):
    with pytest.raises(StoreUnavailable, match="no store at .*neardup index"):
        open_store(tmp_path / "nowhere")


def test_a_directory_without_a_store_is_not_a_store(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(StoreUnavailable, match="not a neardup store"):
        open_store(tmp_path)


def test_an_lmdb_database_of_another_program_is_not_a_store(tmp_path):
    with lmdb.open(str(tmp_path), max_dbs=2) as env, env.begin(write=True) as txn:
        txn.put(b"key", b"value")
    with pytest.raises(StoreUnavailable, match="not a neardup store"):
        open_store(tmp_path)


def test_another_format_version_is_refused(lmdb_path):
    with lmdb.open(str(lmdb_path), max_dbs=3) as env:
        meta = env.open_db(b"meta")
        with env.begin(write=True, db=meta) as txn:
            txn.put(b"format_version", b"99")
    with pytest.raises(StoreUnavailable, match="format version 99.*re-index"):
        open_store(lmdb_path)


@pytest.mark.parametrize("key, damaged", [(b"config", b"{not json"), (b"config", b'{"window": 3}'),
                                          (b"stoplist", b"abc"), (b"format_version", b"one")])
def test_damaged_metadata_is_refused(lmdb_path, key, damaged):
    with lmdb.open(str(lmdb_path), max_dbs=3) as env:
        meta = env.open_db(b"meta")
        with env.begin(write=True, db=meta) as txn:
            txn.put(key, damaged)
    with pytest.raises(StoreUnavailable, match="restore it from a backup or re-index"):
        open_store(lmdb_path)


def test_a_corrupt_data_file_is_refused(lmdb_path):
    data = lmdb_path / "data.mdb"
    data.write_bytes(random.Random(0).randbytes(3 * 4096) + data.read_bytes()[3 * 4096:])
    with pytest.raises(StoreUnavailable, match="restore"):
        open_store(lmdb_path)


def test_an_unreadable_directory_is_refused():
    """As an ordinary user: root reads every directory, so as root the store is opened in a forked child that
    drops to nobody (the modules are already loaded), under a directory nobody may traverse (pytest's temporary
    directories are private to their owner)."""
    parent = Path(tempfile.mkdtemp(prefix="neardup-unreadable-"))
    try:
        parent.chmod(0o755)
        create_store(parent / "store", SketchConfig(), []).close()
        (parent / "store").chmod(0)
        assert "permission denied" in _store_error_as_user(parent / "store").lower()
    finally:
        (parent / "store").chmod(0o755)
        shutil.rmtree(parent)


def _store_error_as_user(path: Path) -> str:
    """The StoreUnavailable message opening `path` gives an unprivileged user ("" when it opens)."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            open_store(path).close()
            message = ""
        except StoreUnavailable as error:
            message = str(error)
        except BaseException as error:  # noqa: BLE001  (reported to the parent, which fails the test)
            message = f"not StoreUnavailable: {error!r}"
        finally:
            os.write(write_end, message.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(child, 0)
    assert str(path) in message, message
    return message


def test_items_come_in_id_byte_order_and_the_digest_says_whether_stores_are_equal(store, tmp_path):
    rng = random.Random(5)
    items = {doc_id: random_sketch(rng) for doc_id in ["b", "a", "é", "z", "a1", "ключ", "Z", "empty"]}
    items["empty"] = b""
    store.put_many(list(items.items()))
    assert list(store.items()) == sorted(items.items(), key=lambda item: item[0].encode())
    # the same sketches written in another order, in batches, with a replaced and a deleted article between
    with create_store(tmp_path / "same", SketchConfig(), []) as same:
        same.put_many([("gone", b""), ("z", encode_sketch([1]))])
        same.put_many(list(reversed(items.items())))
        same.delete_many(["gone"])
        assert same.digest() == store.digest()
        same.put_many([("z", encode_sketch([2]))])
        assert same.digest() != store.digest()
        same.put_many([("z", items["z"])])
        same.delete_many(["empty"])
        assert same.digest() != store.digest()
    config = SketchConfig(stoplist_digest=stoplist_digest([7]))
    with create_store(tmp_path / "stoplist", config, [7]) as other:  # same items, another stop-list
        other.put_many(list(items.items()))
        assert other.digest() != store.digest()
    full = store.digest()
    store.delete_many(list(items))
    assert list(store.items()) == [] and store.digest() != full


def test_a_dropped_store_leaves_nothing_and_a_new_one_is_made_in_its_place(store_location):
    """drop() removes a store and all it holds (`neardup index` drops a store it has just written, to write it
    again without its stop-list: rule 8 of docs/threshold.md); a store made there after holds only its own."""
    config = SketchConfig(stoplist_digest=stoplist_digest([7, 9]))
    written = {f"doc-{number}": random_sketch(random.Random(number), K) for number in range(50)}
    with create_store(store_location, config, [7, 9]) as store:
        store.put_many(list(written.items()))
        store.set_threshold({"threshold": 0.7, "source": "set"})
    open_store(store_location).drop()
    assert not store_exists(store_location)
    if isinstance(store_location, Path):
        assert not store_location.exists()
    with pytest.raises(StoreUnavailable):
        open_store(store_location)
    with create_store(store_location, SketchConfig(), []) as store:
        store.put_many([("doc-new", written["doc-1"])])
        assert (store.count(), store.stoplist, store.threshold()) == (1, frozenset(), None)
        assert store.get_many(["doc-1", "doc-new"]) == [None, written["doc-1"]]
