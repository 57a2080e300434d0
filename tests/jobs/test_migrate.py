"""`neardup migrate SRC DST`: an LMDB store to Redis (a single one, a cluster) and back, equal by count, digest, cluster ids and search
answers; targets it must not write into are refused with one line and left as they were."""
from __future__ import annotations

import pytest

from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.store import open_store
from server_process import sketch_store
from textgen import stories as corpus


@pytest.fixture(scope="module")
def source(indexed_store) -> str:
    """An LMDB store made by `neardup index`, three of its articles clustered, a pair model stored (bytes the store
    keeps as they are)."""
    path = indexed_store("migrate", corpus())
    with open_store(path) as store:
        store.set_clusters([("a", -1), ("a-republished", -1), ("b", -2)], {"method": "components", "next_id": 0,
                                                                            "threshold": 0.5,
                                                                            "metric": "containment"})
        store.set_model(b'{"a model": "kept as bytes"}')
    return str(path)


def snapshot_of(location) -> tuple:
    """What a copy must keep: digest, count, cluster ids and their description, the pair model, and a search's
    answer."""
    with open_store(location, readonly=True) as store:
        ids = [doc_id for doc_id, _ in store.items()]
        found = SimilarSearch(ServedStore(store)).find_similar("a", SimilarParams(threshold=0.3)).matches
        return store.digest(), store.count(), store.clusters(ids), store.clustering(), found, store.model()


@pytest.mark.redis
@pytest.mark.parametrize("backend", ["redis", "redis-cluster"])
def test_lmdb_to_redis_to_lmdb_keeps_everything(neardup, source, backend, request, tmp_path):
    redis_url = request.getfixturevalue("redis_url" if backend == "redis" else "redis_cluster_url")
    done = neardup("migrate", source, redis_url)
    assert done.returncode == 0, done.stderr
    assert f"migrated {len(corpus())} articles, 3 cluster ids from {source} to {redis_url}" in done.stdout
    assert "counts and digest equal" in done.stdout
    back = tmp_path / "back"
    assert neardup("migrate", redis_url, back).returncode == 0
    original = snapshot_of(source)
    assert original[2].count(-1) == len(corpus()) - 3 and original[4] and original[5]  # clustered, found, model
    assert snapshot_of(redis_url) == original == snapshot_of(back)
    with open_store(redis_url) as copy:
        assert copy.backend == backend and copy.clustered()


def test_a_target_holding_articles_is_refused_unless_replaced(neardup, source, redis_url):
    sketch_store(redis_url, {"stale": encode_sketch([1])})
    before = open_store(redis_url).digest()
    refused = neardup("migrate", source, redis_url)
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.strip().splitlines() == [
        f"neardup: error: store {redis_url} already holds 1 articles: choose an empty target, or --replace to make "
        "it a copy of the source"]
    assert open_store(redis_url).digest() == before
    replaced = neardup("migrate", source, redis_url, "--replace")
    assert replaced.returncode == 0 and "removed 1 the source does not hold" in replaced.stdout
    assert snapshot_of(redis_url) == snapshot_of(source)


def test_a_target_of_another_configuration_or_no_store_is_refused(neardup, source, redis_url, tmp_path):
    sketch_store(redis_url, {}, SketchConfig(k=16))
    refused = neardup("migrate", source, redis_url)
    assert refused.returncode == 1 and "configuration differs" in refused.stderr
    assert open_store(redis_url).count() == 0
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("not a store")
    refused = neardup("migrate", source, tmp_path / "junk")
    assert refused.returncode == 1 and "not a neardup store" in refused.stderr
    same = neardup("migrate", source, source)
    assert same.returncode == 2 and "the same store" in same.stderr


def test_a_copy_that_differs_from_its_source_fails_the_check(neardup, source, redis_url, monkeypatch):
    """A sketch changed on its way (as a write to the source during the copy would): the digests differ."""
    from neardup.store.redis import RedisStore  # the redis extra, as every test on a Redis store

    put_many = RedisStore.put_many

    def altered(self, items):
        return put_many(self, [(doc_id, sketch[:-4] if doc_id == "c" else sketch) for doc_id, sketch in items])

    monkeypatch.setattr(RedisStore, "put_many", altered)
    failed = neardup("migrate", source, redis_url)
    assert failed.returncode == 1 and len(failed.stderr.strip().splitlines()) == 1
    assert "the copy's digest differs from the source's" in failed.stderr
