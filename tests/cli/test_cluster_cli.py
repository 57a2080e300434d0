"""`neardup cluster` and `neardup clusters --export` as a user runs them: real processes on a real store."""
from __future__ import annotations

import json
import random
from collections import defaultdict

import pytest

from neardup.core import reference, vocabulary
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import encode_sketch
from neardup.runtime.documents import RequestDocument
from neardup.runtime.served_store import ServedStore
from neardup.runtime.writer import Writer
from neardup.store import create_store, open_store
from server_process import run_neardup, sketch_store

pytestmark = pytest.mark.slow  # every test runs `neardup cluster` (and index, serve) as a process of its own

K = 32
CONFIG = SketchConfig(k=K)


def corpus(rng: random.Random, families: int = 25, copies: int = 4, singletons: int = 60) -> dict[str, list[int]]:
    """Families of edited copies, a chain (a~b, b~c, a≁c) and unrelated articles."""
    articles = {}
    for family in range(families):
        base = rng.sample(range(2**32), K + 8)
        for copy in range(copies):
            articles[f"f{family}-{copy}"] = sorted(rng.sample(base, K - 4))
    half_a, half_b = rng.sample(range(2**32), 24), rng.sample(range(2**32), 24)
    shared = rng.sample(range(2**32), 16)
    articles["chain-a"] = sorted(half_a[:16] + shared)
    articles["chain-b"] = sorted(shared + half_b[:16])   # shares 16 of 32 with a and with c: 0.5 ≥ threshold
    articles["chain-c"] = sorted(half_b[:16] + rng.sample(range(2**32), 16))
    for n in range(singletons):
        articles[f"single-{n}"] = sorted(rng.sample(range(2**32), rng.randint(5, K)))
    return articles


def exported(store) -> dict[str, int]:
    done = run_neardup("clusters", "--store", str(store), "--export", "-")
    assert done.returncode == 0, done.stderr
    return {record["id"]: record["cluster"] for record in map(json.loads, done.stdout.splitlines())}


def groups(assigned: dict[str, int]) -> set[frozenset[str]]:
    members = defaultdict(set)
    for doc_id, cluster in assigned.items():
        members[cluster].add(doc_id)
    return {frozenset(group) for group in members.values()}


def cluster(store, *args: str) -> str:
    done = run_neardup("cluster", "--store", str(store), "--threshold", "0.5", *args)
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.fixture(params=["lmdb", pytest.param("redis-cluster", marks=pytest.mark.redis)])
def store(request, tmp_path):
    """The corpus in an LMDB store, and in one sharded over a Redis Cluster (a run reads every shard)."""
    articles = corpus(random.Random(5))
    location = tmp_path / "s" if request.param == "lmdb" else request.getfixturevalue("redis_cluster_url")
    path = sketch_store(location, {doc_id: encode_sketch(v) for doc_id, v in articles.items()}, CONFIG)
    return path, articles


def test_components_are_the_connected_near_duplicate_pairs_and_complete_splits_the_chain(store):
    path, articles = store
    assert "(components;" in cluster(path, "--method", "components", "--workers", "2")
    by_components = exported(path)
    assert set(by_components) == set(articles) and -1 not in by_components.values()
    # the oracle: connected components of the pairs the reference finds
    parent = {doc_id: doc_id for doc_id in articles}

    def root(x):
        while parent[x] != x:
            x = parent[x]
        return x

    ids = sorted(articles)
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            if reference.is_duplicate(articles[a], articles[b], K, vocabulary.CONTAINMENT, 0.5):
                parent[root(b)] = root(a)
    expected = defaultdict(set)
    for doc_id in ids:
        expected[root(doc_id)].add(doc_id)
    assert groups(by_components) == {frozenset(group) for group in expected.values()}
    assert by_components["chain-a"] == by_components["chain-b"] == by_components["chain-c"]

    cluster(path, "--method", "complete")
    by_complete = exported(path)
    assert by_complete["chain-a"] != by_complete["chain-c"]
    assert all(by_complete[f"f{f}-0"] == by_complete[f"f{f}-3"] for f in range(25))


def test_a_rerun_keeps_every_id_and_new_articles_get_a_cluster_at_once(store):
    path, articles = store
    cluster(path, "--method", "complete")
    first = exported(path)
    assert "0 articles changed cluster" in cluster(path, "--method", "complete")
    assert exported(path) == first

    rng = random.Random(9)
    copy_of = sorted(rng.sample(articles["f3-0"], K - 6))
    with open_store(path) as opened:
        Writer(ServedStore(opened)).upsert([RequestDocument("late-copy", sketch=encode_sketch(copy_of)),
                                     RequestDocument("late-new", sketch=encode_sketch(sorted(rng.sample(range(2**32), 20))))])
        late = dict(zip(["late-copy", "late-new"], opened.clusters(["late-copy", "late-new"])))
    assert late["late-copy"] == first["f3-0"]
    assert late["late-new"] >= 0 and late["late-new"] not in first.values()

    cluster(path, "--method", "complete")
    after = exported(path)
    kept = sum(after[doc_id] == cluster_id for doc_id, cluster_id in first.items())
    assert kept / len(first) >= 0.99
    assert after["late-copy"] == after["f3-0"]


def test_pairs_from_a_file_give_the_same_clusters(store, tmp_path):
    path, _ = store
    pairs = tmp_path / "pairs.jsonl"
    done = run_neardup("pairs", "--store", str(path), "--threshold", "0.5", "--output", str(pairs))
    assert done.returncode == 0, done.stderr
    cluster(path, "--method", "communities", "--pairs", str(pairs))
    from_file = groups(exported(path))
    cluster(path, "--method", "communities")
    assert groups(exported(path)) == from_file


def test_errors_are_one_line(tmp_path, store):
    path, _ = store
    bare = tmp_path / "bare"
    create_store(bare, CONFIG, [], indexed=False).close()
    done = run_neardup("cluster", "--store", str(bare))
    assert done.returncode == 1 and "keeps no postings" in done.stderr and len(done.stderr.splitlines()) == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"a": "x"}\n')
    done = run_neardup("cluster", "--store", str(path), "--pairs", str(bad))
    assert done.returncode == 1 and "pairs line 1" in done.stderr and "Traceback" not in done.stderr
    done = run_neardup("cluster", "--store", str(path), "--method", "ward")
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_dedup_and_find_similar_answers_carry_cluster_ids_that_follow_each_run(store, tmp_path):
    from neardup_client import Document as ClientDocument, NearDupClient
    from server_process import free_port, serving

    path, articles = store
    result_set = ["f1-0", "f1-1", "chain-a", "chain-c", "single-0", "not-stored"]
    with serving(path, workers=2, port=free_port(), log_dir=tmp_path) as server, NearDupClient(server.target) as client:
        before = client.dedup(result_set, threshold=0.5)
        assert before.clusters == () and "clusters" not in before.to_dict()  # not clustered: answers as before
        assert all(match.cluster == -1 for match in client.find_similar("f1-0", threshold=0.5).matches)

        cluster(path, "--method", "components")
        ids = exported(path)
        answer = client.dedup(result_set, threshold=0.5)  # the earlier answer was cached: it must not be served
        assert not answer.cached
        assert answer.clusters == tuple(ids.get(doc_id, -1) for doc_id in result_set)
        assert answer.clusters[2] == answer.clusters[3] and answer.clusters[-1] == -1
        assert client.dedup(result_set, threshold=0.5).cached
        found = client.find_similar("f1-0", threshold=0.5).matches
        assert found and all(match.cluster == ids[match.id] == ids["f1-0"] for match in found)

        cluster(path, "--method", "complete")  # splits the chain: every worker's cache sees it
        for _ in range(4):
            split = client.dedup(result_set, threshold=0.5)
            assert split.clusters[2] != split.clusters[3]

        copy = sorted(random.Random(2).sample(articles["f2-1"], K - 6))
        client.upsert([ClientDocument("late", sketch=encode_sketch(copy))])
        late = client.dedup(["late", "f2-1"], threshold=0.5)
        assert late.clusters[0] == late.clusters[1] == exported(path)["f2-1"]


def test_an_inexact_pair_search_still_clusters_and_exits_3(store):
    path, _ = store
    done = run_neardup("cluster", "--store", str(path), "--threshold", "0.0", "--max-candidates", "2")
    assert done.returncode == 3, done.stderr
    assert "--max-candidates" in done.stderr and "Traceback" not in done.stderr
    assert -1 not in exported(path).values()


def test_neardup_index_into_a_clustered_store_gives_each_new_article_a_cluster(store, tmp_path):
    from server_process import write_jsonl

    path, _ = store
    cluster(path, "--method", "components")
    text = ("The harbour authority said on Tuesday that the new container terminal would open in the spring, "
            "after two years of dredging and a dispute over the contract with the builders. ") * 3
    corpus = write_jsonl(tmp_path / "more.jsonl", [
        {"id": "wire-1", "text": text}, {"id": "wire-2", "text": text + " Updated at noon."},
        {"id": "other", "text": "A recipe for bread: flour, water, salt and a long, slow rise overnight in the cold."}])
    done = run_neardup("index", str(corpus), "--store", str(path))
    assert done.returncode == 0, done.stderr
    ids = exported(path)
    assert ids["wire-1"] == ids["wire-2"] != ids["other"]
    assert min(ids["wire-1"], ids["other"]) >= 0
    assert ids["wire-1"] not in {ids[doc_id] for doc_id in ids if doc_id not in ("wire-1", "wire-2")}
