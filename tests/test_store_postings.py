"""The store's postings (of each backend) stay exactly what the stored sketches say, after any writes, deletes and a kill -9."""
from __future__ import annotations

import os
import random
import signal
import struct
import subprocess
import sys
import textwrap
import time

import lmdb
import pytest

from neardup.core.reference import MIN_EVIDENCE
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.core.errors import ConfigMismatch
from neardup.store import create_store, is_redis, open_store
from neardup.store.buckets import BUCKET_BITS

K = 32
HOT = list(range(1, 9))  # values many articles hold, so some buckets grow long


def random_sketch(rng: random.Random) -> bytes:
    size = rng.choice([0, 1, 5, MIN_EVIDENCE - 1, MIN_EVIDENCE, K])
    values = set(rng.sample(HOT, rng.randint(0, 3))) | {rng.randrange(2**32) for _ in range(size)}
    return encode_sketch(sorted(values)[:K])


@pytest.fixture(params=["lmdb", "redis"])
def path(request, tmp_path):
    """Where a store of each backend is made: an LMDB directory, a Redis URL."""
    return request.getfixturevalue("redis_url") if request.param == "redis" else tmp_path / "s"


def raw_parts(path) -> dict[bytes, dict[bytes, bytes]]:
    """The bytes a store holds, as the backend keeps them: sketches, docnos, ids and postings, key → value."""
    names = (b"sketches", b"docnos", b"ids", b"postings")
    if is_redis(path):
        with open_store(path, readonly=True) as store:
            client, keys = store._client, store._keys
            parts = {name: client.hgetall(getattr(keys, name.decode())) for name in names[:3]}
            prefix = keys.buckets([b""])[0]
            bucket_keys = sorted(client.scan_iter(match=prefix + b"*", count=1000))
            parts[b"postings"] = {key[len(prefix):]: value for key, value in
                                  zip(bucket_keys, client.mget(bucket_keys) if bucket_keys else [])}
            return parts
    with lmdb.open(str(path), readonly=True, max_dbs=7, lock=False) as env:
        dbs = {name: env.open_db(name, create=False) for name in names}
        with env.begin() as txn:
            return {name: dict(txn.cursor(db=db)) for name, db in dbs.items()}


def read_index(path) -> tuple[dict[bytes, int], dict[int, bytes], set[tuple[int, int, bool]]]:
    """The raw index of a store: id → docno, docno → id, and every posting as (value, docno, the article's
    length when it is under MIN_EVIDENCE values, else 0)."""
    parts = raw_parts(path)
    docnos = {key: struct.unpack("<I", value)[0] for key, value in parts[b"docnos"].items()}
    ids = {struct.unpack(">I", key)[0]: value for key, value in parts[b"ids"].items()}
    postings = set()
    for key, value in parts[b"postings"].items():
        assert value and len(value) % 6 == 0, "an empty or torn bucket"
        bucket = struct.unpack(">I", key)[0]
        for at in range(0, len(value), 6):
            tag, docno = struct.unpack("<HI", value[at:at + 6])
            posting = ((tag >> 4) << BUCKET_BITS | bucket, docno, tag & 15)
            assert posting not in postings, "a posting written twice"
            postings.add(posting)
    return docnos, ids, postings


def assert_index_matches_sketches(path) -> dict[bytes, int]:
    """The index equals one rebuilt from the sketches (numbers aside, which only the store gives)."""
    docnos, ids, postings = read_index(path)
    sketches = raw_parts(path)[b"sketches"]
    assert set(docnos) == set(sketches), "docnos and sketches hold other ids"
    assert {docno: key for key, docno in docnos.items()} == ids, "ids is not the inverse of docnos"
    rebuilt = {(value, docnos[key], len(sketch) // 4 if len(sketch) // 4 < MIN_EVIDENCE else 0)
               for key, sketch in sketches.items() for value in struct.unpack(f"<{len(sketch) // 4}I", sketch)}
    assert postings == rebuilt
    return docnos


def test_postings_follow_random_writes_replacements_and_deletes(path):
    rng = random.Random(7)
    create_store(path, SketchConfig(k=K), []).close()
    with open_store(path) as store:
        for _ in range(60):
            ids = [f"d{rng.randrange(150)}" for _ in range(rng.randint(1, 30))]  # repeats within a batch too
            store.put_many([(doc_id, random_sketch(rng)) for doc_id in ids])
            store.delete_many([f"d{rng.randrange(150)}" for _ in range(rng.randint(0, 12))] + ["never-stored"])
    assert_index_matches_sketches(path)


def test_docnos_are_kept_by_replacement_and_never_reused_after_delete(path):
    with create_store(path, SketchConfig(k=K), []) as store:
        store.put_many([("a", encode_sketch([1, 2])), ("b", encode_sketch([3]))])
        store.put_many([("a", encode_sketch([5]))])
        store.delete_many(["b"])
        store.put_many([("b", encode_sketch([3])), ("c", encode_sketch([3]))])
    docnos = assert_index_matches_sketches(path)
    assert docnos == {b"a": 0, b"b": 2, b"c": 3}


def test_a_store_without_postings_writes_none_and_refuses_search(path):
    with create_store(path, SketchConfig(k=K), [], indexed=False) as store:
        store.put_many([("a", encode_sketch([1, 2]))])
        store.delete_many(["b"])
        assert not store.indexed
        with pytest.raises(ConfigMismatch, match="keeps no postings"):
            store.snapshot()
        with pytest.raises(ConfigMismatch, match="keeps no postings"):
            store.set_clusters([("a", 1)])
    if is_redis(path):
        assert {name: len(part) for name, part in raw_parts(path).items()} == \
            {b"sketches": 1, b"docnos": 0, b"ids": 0, b"postings": 0}
    else:
        with lmdb.open(str(path), readonly=True, max_dbs=6, lock=False) as env:
            with pytest.raises(lmdb.NotFoundError):
                env.open_db(b"postings", create=False)


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


WRITER = """
    import random, sys
    from neardup.store import open_store
    from test_store_postings import random_sketch
    rng = random.Random(int(sys.argv[2]))
    with open_store(sys.argv[1]) as store:
        while True:
            batch = [(f"d{rng.randrange(3000)}", random_sketch(rng)) for _ in range(rng.randint(200, 2000))]
            store.put_many(batch)
            store.delete_many([f"d{rng.randrange(3000)}" for _ in range(100)])
            print(store.generation(), flush=True)
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_kill_9_mid_batch_leaves_sketches_and_postings_consistent(path, seed):
    create_store(path, SketchConfig(k=K), []).close()
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(WRITER), str(path), str(seed)],
                              cwd=os.path.dirname(__file__), stdout=subprocess.PIPE, text=True)  # imports this module
    try:
        for _ in range(3 + seed):  # let several batches commit, then kill it in the middle of another
            assert writer.stdout.readline(), "the writer died"
        time.sleep(random.Random(seed).uniform(0, 0.05))
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    docnos = assert_index_matches_sketches(path)
    assert len(docnos) > 0
    with open_store(path) as store:  # and the store goes on being written, its index exact
        store.put_many([("after", encode_sketch([1, 2, 3]))])
    assert_index_matches_sketches(path)
