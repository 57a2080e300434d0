"""The store's postings (of each backend) stay exactly what the stored sketches say, after any writes, deletes and a kill -9."""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import lmdb
import pytest

from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.core.errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from neardup.store import create_store, is_redis, open_store
from brute import assert_index_matches_sketches, raw_parts
from sketches import K, sketch_with_shared_values
import sketches


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_postings_follow_random_writes_replacements_and_deletes(store_location):
    rng = random.Random(7)
    create_store(store_location, SketchConfig(k=K), []).close()
    with open_store(store_location) as store:
        for _ in range(60):
            ids = [f"d{rng.randrange(150)}" for _ in range(rng.randint(1, 30))]  # repeats within a batch too
            store.put_many([(doc_id, sketch_with_shared_values(rng)) for doc_id in ids])
            store.delete_many([f"d{rng.randrange(150)}" for _ in range(rng.randint(0, 12))] + ["never-stored"])
    assert_index_matches_sketches(store_location)


def test_docnos_are_kept_by_replacement_and_never_reused_after_delete(store_location):
    def numbers(store, ids):
        with store.snapshot() as snapshot:
            return [docno for docno, _ in snapshot.sketches(ids)]

    with create_store(store_location, SketchConfig(k=K), []) as store:
        store.put_many([("a", encode_sketch([1, 2])), ("b", encode_sketch([3]))])
        before = numbers(store, ["a", "b"])
        store.put_many([("a", encode_sketch([5]))])
        store.delete_many(["b"])
        store.put_many([("b", encode_sketch([3])), ("c", encode_sketch([3]))])
        after = numbers(store, ["a", "b", "c"])
        sharded = store.backend == "redis-cluster"
    docnos = assert_index_matches_sketches(store_location)
    assert docnos == dict(zip([b"a", b"b", b"c"], after))
    assert after[0] == before[0] and after[1] > before[1] and len(set(after) | set(before)) == 4
    if not sharded:  # a store of one key space numbers from 0 up; a cluster store's shards by their remainders
        assert after == [0, 2, 3]


def test_a_store_without_postings_writes_none_and_refuses_search(store_location):
    with create_store(store_location, SketchConfig(k=K), [], indexed=False) as store:
        store.put_many([("a", encode_sketch([1, 2]))])
        store.delete_many(["b"])
        assert not store.indexed
        with pytest.raises(ConfigMismatch, match="keeps no postings"):
            store.snapshot()
        with pytest.raises(ConfigMismatch, match="keeps no postings"):
            store.set_clusters([("a", 1)])
    if is_redis(store_location):
        assert {name: len(part) for name, part in raw_parts(store_location).items()} == \
            {b"sketches": 1, b"docnos": 0, b"ids": 0, b"postings": 0}
    else:
        with lmdb.open(str(store_location), readonly=True, max_dbs=6, lock=False) as env:
            with pytest.raises(lmdb.NotFoundError):
                env.open_db(b"postings", create=False)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("kind", ["bottomk", "simhash"])
@pytest.mark.parametrize("indexed", [True, False])
def test_a_store_created_with_its_articles_holds_the_bytes_batches_would(tmp_path, kind, indexed):
    """LmdbStore.create(articles=...) writes each postings bucket once; the bytes equal those of put_many's
    batches, ids given again (in a batch and across batches) included: the later sketch wins."""
    rng = random.Random(11)
    config = SketchConfig(k=K) if kind == "bottomk" else SketchConfig(kind=kind)

    def sketch() -> bytes:
        return sketch_with_shared_values(rng) if kind == "bottomk" else rng.randbytes(8)
    batches = [[(f"d{rng.randrange(400)}", sketch()) for _ in range(rng.randint(1, 90))] for _ in range(12)]
    with create_store(tmp_path / "batches", config, [], indexed=indexed) as store:
        for batch in batches:
            store.put_many(batch)
    parts_done = []
    with create_store(tmp_path / "created", config, [], indexed=indexed, articles=iter(batches),
                      postings_done=lambda part, parts: parts_done.append((part, parts))) as store:
        # generation 1 is the whole build, no reader knew what came before; the ids given again are written after
        seen, again = set(), set()
        for doc_id, _ in (item for batch in batches for item in batch):
            (again if doc_id in seen else seen).add(doc_id)
        assert again and store.generation() == 2 and store.changed_since(0) is None
        assert store.changed_since(1) == again
    if indexed:
        created, written = raw_parts(tmp_path / "created"), raw_parts(tmp_path / "batches")
        # a bucket's entries are in the order written: a replaced article's come last in one, in place in the other
        for parts in (created, written):
            parts[b"postings"] = {key: sorted(value[at:at + 6] for at in range(0, len(value), 6))
                                  for key, value in parts[b"postings"].items()}
    else:
        created, written = (dict(stored_items(tmp_path / name)) for name in ("created", "batches"))
    assert created == written and len(created[b"postings"] if indexed else created) > 100
    assert parts_done == ([(part + 1, 64) for part in range(64)] if indexed else [])
    assert [path.name for path in tmp_path.iterdir()] in (["batches", "created"], ["created", "batches"])
    if indexed and kind == "bottomk":  # a simhash store's postings are its permutation keys (test_simhash_store)
        assert_index_matches_sketches(tmp_path / "created")


def stored_items(path) -> list[tuple[str, bytes]]:
    with open_store(path, readonly=True) as store:
        return list(store.items())


def test_a_bad_article_or_a_full_map_creates_no_store_and_leaves_nothing_beside_it(tmp_path):
    batches = [[("a", encode_sketch([1, 2]))], [("b", b"\x01\x02\x03")]]  # not a whole number of values
    with pytest.raises(InvalidArgument, match="multiple of 4"):
        create_store(tmp_path / "store", SketchConfig(k=K), [], articles=iter(batches))
    assert list(tmp_path.iterdir()) == []
    rng = random.Random(3)
    many = [[(f"d{batch}-{n}", encode_sketch(sorted(rng.sample(range(2**32), K)))) for n in range(500)]
            for batch in range(8)]
    with pytest.raises(StoreUnavailable, match="reached its map size"):
        create_store(tmp_path / "store", SketchConfig(k=K), [], map_size=2 << 20, articles=iter(many))
    assert list(tmp_path.iterdir()) == []


def test_a_format_1_store_opens_and_writes_without_postings(tmp_path):
    """Stores made before postings existed: readable and writable as they are, search says to re-index."""
    path = tmp_path / "s"
    create_store(path, SketchConfig(k=K), [], indexed=False).close()
    with lmdb.open(str(path), max_dbs=6) as env, env.begin(write=True) as txn:
        meta = env.open_db(b"meta", txn=txn)
        txn.put(b"format_version", b"1", db=meta)
        txn.delete(b"indexed", db=meta)
        txn.delete(b"next_docno", db=meta)
    with open_store(path) as store:
        assert store.format_version == 1 and not store.indexed
        store.put_many([("a", encode_sketch([1, 2]))])
        store.delete_many(["a"])
        with pytest.raises(ConfigMismatch, match="re-index"):
            store.snapshot()


#: Run with sketches.py's folder on PYTHONPATH.
WRITER = """
    import random, sys
    from neardup.store import open_store
    from sketches import sketch_with_shared_values
    rng = random.Random(int(sys.argv[2]))
    with open_store(sys.argv[1]) as store:
        while True:
            batch = [(f"d{rng.randrange(3000)}", sketch_with_shared_values(rng))
                     for _ in range(rng.randint(200, 2000))]
            store.put_many(batch)
            store.delete_many([f"d{rng.randrange(3000)}" for _ in range(100)])
            print(store.generation(), flush=True)
"""


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_mid_batch_leaves_sketches_and_postings_consistent(store_location, seed):
    create_store(store_location, SketchConfig(k=K), []).close()
    helpers = os.pathsep.join(filter(None, [os.path.dirname(sketches.__file__), os.environ.get("PYTHONPATH")]))
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(store_location), str(seed)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": helpers})
    try:
        for _ in range(3 + seed):  # let several batches commit, then kill it in the middle of another
            assert writer.stdout.readline(), "the writer died"
        time.sleep(random.Random(seed).uniform(0, 0.05))
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    docnos = assert_index_matches_sketches(store_location)
    assert len(docnos) > 0
    with open_store(store_location) as store:  # and the store goes on being written, its index exact
        store.put_many([("after", encode_sketch([1, 2, 3]))])
    assert_index_matches_sketches(store_location)
