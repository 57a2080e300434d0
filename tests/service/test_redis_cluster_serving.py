"""A store sharded over a Redis Cluster serves what an LMDB store of the same corpus does: `neardup index` into
each gives the same digest, and a `neardup serve` on each answers Dedup and FindSimilar identically, before and
after writes through the servers."""
from __future__ import annotations

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
    with serving(stores[0], log_dir=tmp_path) as on_lmdb, serving(stores[1], log_dir=tmp_path) as on_cluster, \
            NearDupClient(on_lmdb.target, timeout=20) as lmdb_client, \
            NearDupClient(on_cluster.target, timeout=20) as cluster_client:
        clients = (lmdb_client, cluster_client)

        def answers():
            dedup = [[client.dedup(results, threshold=0.3) for results in result_sets] for client in clients]
            similar = [[client.find_similar(doc_id, threshold=0.2, top_k=50) for doc_id in ids]
                       for client in clients]
            by_text = [[client.find_similar(document=Document(f"query-{doc_id}", text=texts[doc_id]), threshold=0.2)
                        for doc_id in ids[::10]] for client in clients]
            return dedup, similar, by_text

        dedup, similar, by_text = answers()
        assert dedup[0] == dedup[1] and similar[0] == similar[1] and by_text[0] == by_text[1]
        assert sum(len(answer.matches) for answer in similar[0]) > len(ids)  # pairs to find, and found
        assert any(answer.keep != answer.ids for answer in dedup[0])

        for client in clients:  # the same writes through each server
            assert client.upsert([Document("copy-0", text=texts["story-5"]),
                                  Document("new", text=texts["story-7"])]) == 2
            assert client.delete(["story-9", "digest-3"]) == 2
        ids = [doc_id for doc_id in ids if doc_id not in ("story-9", "digest-3")] + ["new"]
        result_sets = [rng.sample(ids, 30) for _ in range(4)] + [ids]
        dedup, similar, by_text = answers()
        assert dedup[0] == dedup[1] and similar[0] == similar[1] and by_text[0] == by_text[1]
        assert [match.id for match in similar[1][ids.index("new")].matches][:1] == ["story-7"]
