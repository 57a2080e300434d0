"""A store sharded over a Redis Cluster serves what an LMDB store of the same corpus does: `neardup index` into
each gives the same digest, and a `neardup serve` on each answers Dedup and FindSimilar identically (on the
cluster store with each search index), before and after writes."""
from __future__ import annotations

import contextlib
import random

import pytest

from neardup.store import open_store
from neardup_client import Document, NearDupClient
from server_process import run_neardup, serving, write_jsonl
from textgen import look_alike_corpus

pytestmark = pytest.mark.redis


def test_a_server_on_the_cluster_store_answers_as_one_on_the_lmdb_store(redis_cluster_url, tmp_path):
    records, _ = look_alike_corpus()
    corpus = write_jsonl(tmp_path / "corpus.jsonl", records)
    stores = [str(tmp_path / "lmdb"), redis_cluster_url]
    for store in stores:
        done = run_neardup("index", str(corpus), "--store", store)
        assert done.returncode == 0, done.stderr
    digests = []
    for store in stores:
        with open_store(store, readonly=True) as opened:
            digests.append((opened.digest(), opened.count()))
    assert digests[0] == digests[1] and digests[0][1] == len(records)

    ids = [record["id"] for record in records]
    rng = random.Random(5)
    result_sets = [rng.sample(ids, 30) for _ in range(8)] + [ids]
    texts = {record["id"]: record["text"] for record in records}
    # on the cluster store: FindSimilar from the store's postings, from each worker's memory index, from a shared
    # index file; each following the shards' change logs
    search_indexes = [("--search-index", "store"), ("--search-index", "memory", "--workers", "2"),
                      ("--search-index", "shared", "--search-index-file", str(tmp_path / "search-index"),
                       "--workers", "2")]
    with contextlib.ExitStack() as servers:
        clients = [servers.enter_context(NearDupClient(servers.enter_context(serving(
            store, *args, log_dir=tmp_path)).target, timeout=20))
            for store, args in [(stores[0], ())] + [(stores[1], args) for args in search_indexes]]

        def answers(client):
            return ([client.dedup(results, threshold=0.3) for results in result_sets],
                    [client.find_similar(doc_id, threshold=0.2, top_k=50) for doc_id in ids],
                    [client.find_similar(document=Document(f"query-{doc_id}", text=texts[doc_id]), threshold=0.2)
                     for doc_id in ids[::10]])

        expected = answers(clients[0])
        assert all(answers(client) == expected for client in clients[1:])
        dedup, similar, _ = expected
        assert sum(len(answer.matches) for answer in similar) > len(ids)  # pairs to find, and found
        assert any(answer.keep != answer.ids for answer in dedup)

        for client in clients[:2]:  # the same writes into each store, through one server
            assert client.upsert([Document("copy-0", text=texts["story-5"]),
                                  Document("new", text=texts["story-7"])]) == 2
            assert client.delete(["story-9", "digest-3"]) == 2
        ids = [doc_id for doc_id in ids if doc_id not in ("story-9", "digest-3")] + ["new"]
        result_sets = [rng.sample(ids, 30) for _ in range(4)] + [ids]
        expected = answers(clients[0])
        assert all(answers(client) == expected for client in clients[1:])
        assert [match.id for match in expected[1][ids.index("new")].matches][:1] == ["story-7"]
