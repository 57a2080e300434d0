"""The in-memory search index (`neardup serve --search-index memory`) answers exactly what a search of the store
answers, and what an exhaustive scan finds, on random corpora through writes, replacements and deletes: in
process (core.postings_index, and the view following a real LMDB store written by another handle), and through real
servers taking Upsert and Delete."""
from __future__ import annotations

import logging
import random
import threading
import time

import grpc
import pytest

from neardup.core import candidates, postings_index, vocabulary
from neardup.core.postings_index import PostingsIndex
from neardup.core.sketch_config import SketchConfig
from neardup.core.vocabulary import BOTTOMK_METRICS as METRICS
from neardup.core.encoding import encode_sketch
from neardup.runtime.documents import RequestDocument
from neardup.runtime.params import Limits, SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.core.errors import NotFound
from neardup.store import create_store, open_store
from neardup.store import lmdb as lmdb_store
from neardup.runtime.view import LiveView
from neardup_client import Document as ClientDocument
from neardup_client import NearDupClient, NearDupClientError
from brute import exhaustive, reaching, scored
from observe import commands_sent
from server_process import run_neardup, serving, sketch_store
from sketches import HOT, K, make_corpus

THRESHOLDS = (0.0, 0.2, 0.52, 0.9, 1.0)
HOT_LIMIT = 40  # a low hot limit, so that searches leave hot postings unread


def answer(outcome) -> list[tuple[str, float]]:
    return [(match.id, match.similarity) for match in outcome.matches]


def change(rng: random.Random, corpus: dict[str, list[int]], round_: int) -> tuple[dict[str, list[int]], list[str]]:
    """A batch of writes (new articles, replaced ones, some into the hot values) and deletes, applied to corpus."""
    written = {f"new-{round_}-{n}": values for n, values in enumerate(make_corpus(rng, 25).values())}
    for doc_id in rng.sample(sorted(corpus), 20):
        written[doc_id] = sorted(set(rng.sample(HOT, 3)) | set(corpus[doc_id][:rng.randint(1, 8)]))
    gone = rng.sample(sorted(set(corpus) - set(written)), 15)
    corpus.update(written)
    for doc_id in gone:
        del corpus[doc_id]
    return written, gone


@pytest.fixture
def low_hot_limit(monkeypatch):
    monkeypatch.setattr(candidates, "HOT_POSTINGS", HOT_LIMIT)


@pytest.mark.slow
def test_the_index_equals_an_exhaustive_scan_through_writes_and_compactions():
    rng = random.Random(5)
    corpus = make_corpus(rng, 400)
    index = PostingsIndex(K, hot_postings=HOT_LIMIT)
    docnos = {}
    for doc_id, values in corpus.items():
        docnos[doc_id] = len(docnos)
        index.put(doc_id, docnos[doc_id], encode_sketch(values))
    index.build()

    def check() -> None:
        for doc_id in list(corpus)[::6]:
            docno, sketch = index.stored(doc_id)
            assert sketch == encode_sketch(corpus[doc_id])
            for metric in METRICS:
                matches = scored(corpus, corpus[doc_id], doc_id, metric)
                for threshold in THRESHOLDS:
                    found = index.search(sketch, threshold, metric, exclude=docno)
                    assert found.exact
                    assert sorted(found.matches, key=lambda m: (-m[1], m[0])) == \
                        answer_of(reaching(matches, threshold))

    check()
    for round_ in range(4):  # the delta: written after the base, never found through the old postings
        written, gone = change(rng, corpus, round_)
        for doc_id, values in written.items():
            docnos.setdefault(doc_id, len(docnos))
            index.put(doc_id, docnos[doc_id], encode_sketch(values))
        for doc_id in gone:
            index.delete(doc_id)
        assert index.stored(gone[0]) is None
        assert index.stats()["delta_entries"] > 0
        check()
    index.build()  # the same answers from a base rebuilt over replaced and deleted articles
    assert index.stats()["delta_entries"] == 0 and index.stats()["articles"] == len(corpus)
    check()
    assert index.stats()["hot_values_skipped"] > 0, "no search left a hot posting unread: the rule is untested"


def answer_of(matches) -> list[tuple[str, float]]:
    return [(match.id, match.similarity) for match in matches]


@pytest.mark.slow
def test_the_view_follows_another_writer_and_answers_like_the_store(tmp_path, monkeypatch, caplog, low_hot_limit):
    """A server's view of an LMDB store written behind its back (the view learns of writes only from the store's
    generation and change log, as of another process's): after each batch, every search from memory equals the
    search of the store, by id and by document, both metrics; a batch too large for the change log rebuilds the
    index."""
    monkeypatch.setattr(lmdb_store, "CHANGE_LOG_IDS", 60)
    rng = random.Random(8)
    corpus = make_corpus(rng, 300)
    path = tmp_path / "s"
    writer = store = create_store(path, SketchConfig(k=K), [])
    writer.put_many([(doc_id, encode_sketch(values)) for doc_id, values in corpus.items()])
    caplog.set_level(logging.INFO, "neardup.serve")
    view = LiveView(store, search_index=True)
    index = view.search_index
    engine = SimilarSearch(ServedStore(store))

    def builds() -> int:
        return sum("search index: " in message and "built in" in message for message in caplog.messages)

    def check() -> None:
        for doc_id in list(corpus)[::9]:
            for metric in METRICS:
                matches = scored(corpus, corpus[doc_id], doc_id, metric)
                for threshold in (0.2, 0.52, 0.9):
                    params = SimilarParams(top_k=1000, threshold=threshold, metric=metric)
                    from_memory = engine.find_similar(doc_id, params, view.read())
                    assert from_memory == engine.find_similar(doc_id, params)
                    assert answer(from_memory) == answer_of(reaching(matches, threshold))
        query = RequestDocument("new-query", sketch=encode_sketch(corpus[doc_id][:5] + [2**32 - 1]))
        assert engine.find_similar(query, SimilarParams(top_k=5), view.read()) == \
            engine.find_similar(query, SimilarParams(top_k=5))

    check()
    for round_ in range(3):
        written, gone = change(rng, corpus, round_)
        writer.put_many([(doc_id, encode_sketch(values)) for doc_id, values in written.items()])
        writer.delete_many(gone)
        check()
        with pytest.raises(NotFound):
            engine.find_similar(gone[0], SimilarParams(), view.read())
    assert builds() == 1  # followed the change log: no rebuild
    assert index.stats()["hot_values_skipped"] > 0
    written = {f"bulk-{n}": values for n, values in enumerate(make_corpus(rng, 80).values())}
    writer.put_many([(doc_id, encode_sketch(values)) for doc_id, values in written.items()])  # > CHANGE_LOG_IDS
    corpus.update(written)
    check()  # the store answers while the index is rebuilt in the background, then the index
    settle(index)
    check()
    assert builds() == 2 and index.stats()["articles"] == len(corpus)
    store.close()


def settle(index, timeout: float = 60) -> None:
    """Until the index's background rebuild or compaction is done."""
    deadline = time.monotonic() + timeout
    while index.busy:
        assert time.monotonic() < deadline, "the search index stayed busy"
        time.sleep(0.01)


def test_a_compaction_in_the_background_stalls_no_request(tmp_path, monkeypatch):
    """While the delta is folded into a new base (seconds at a million articles), the feed's subscriber returns at
    once (requests catch up with writes without waiting), searches are answered from the store, and the writes
    made meanwhile are in the index when it answers again."""
    monkeypatch.setattr(postings_index, "DELTA_MIN", 0)
    monkeypatch.setattr(postings_index, "DELTA_SHARE", 0.05)
    rng = random.Random(11)
    corpus = make_corpus(rng, 200)
    store = create_store(tmp_path / "s", SketchConfig(k=K), [])
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in corpus.items()])
    view = LiveView(store, search_index=True)
    index, engine = view.search_index, SimilarSearch(ServedStore(store))
    folding, release = threading.Event(), threading.Event()
    compact = PostingsIndex.compact

    def held_compact(self):
        if folding.is_set():  # the background fold: held until the test releases it
            assert release.wait(30)
        folding.set()
        compact(self)

    monkeypatch.setattr(PostingsIndex, "compact", held_compact)
    folding.set()
    params = SimilarParams(top_k=1000, threshold=0.2)
    written, gone = change(rng, corpus, 0)  # over DELTA_SHARE of the base: the fold is due
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in written.items()])
    store.delete_many(gone)
    view.read()
    assert index.busy
    written_meanwhile, gone_meanwhile = change(rng, corpus, 1)
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in written_meanwhile.items()])
    store.delete_many(gone_meanwhile)
    began = time.monotonic()
    reading = view.read()  # catches up without waiting for the fold
    assert time.monotonic() - began < 5 and index.busy
    assert index.search(next(iter(written_meanwhile)), None, 0.2, "jaccard", 100) is None
    probes = list(written_meanwhile)[:5] + list(corpus)[:5]
    for doc_id in probes:  # from the store meanwhile, with the writes made during the fold
        assert answer(engine.find_similar(doc_id, params, reading)) == answer_of(
            exhaustive(corpus, corpus[doc_id], doc_id, 0.2, "containment"))
    release.set()
    settle(index)
    assert index.stats()["delta_entries"] < index.stats()["base_entries"]
    assert index.stats()["articles"] == len(corpus)
    for doc_id in probes:  # from memory again
        assert index.search(doc_id, None, 0.2, "containment", 10_000) is not None
        assert answer(engine.find_similar(doc_id, params, view.read())) == answer_of(
            exhaustive(corpus, corpus[doc_id], doc_id, 0.2, "containment"))
    with pytest.raises(NotFound):
        engine.find_similar(gone_meanwhile[0], params, view.read())
    store.close()


def test_too_many_candidates_verifies_the_same_ones_as_the_store(tmp_path, low_hot_limit):
    rng = random.Random(4)
    corpus = make_corpus(rng, 300)
    with create_store(tmp_path / "s", SketchConfig(k=K), []) as store:
        store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in corpus.items()])
        view = LiveView(store, search_index=True)
        bounded = SimilarSearch(ServedStore(store, Limits(max_candidates=5)))
        params = SimilarParams(top_k=1000, threshold=0.0, metric=vocabulary.JACCARD)
        for doc_id in list(corpus)[::30]:
            from_memory = bounded.find_similar(doc_id, params, view.read())
            assert not from_memory.exact and len(from_memory.matches) == 5
            assert from_memory == bounded.find_similar(doc_id, params)


@pytest.mark.slow
def test_serve_refuses_a_store_the_memory_index_cannot_serve(tmp_path):
    simhash = sketch_store(tmp_path / "simhash", {"a": b"\x01" * 8}, SketchConfig(kind="simhash"))
    done = run_neardup("serve", "--store", str(simhash), "--search-index", "memory", "--port", "0")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"neardup: error: --search-index memory serves stores of bottom-K sketches; store {simhash} holds simhash "
        "sketches: use --search-index store"]
    plain = tmp_path / "plain"
    create_store(plain, SketchConfig(), [], indexed=False).close()
    done = run_neardup("serve", "--store", str(plain), "--search-index", "memory", "--port", "0")
    assert done.returncode == 1 and "keeps no postings" in done.stderr and len(done.stderr.splitlines()) == 1
    done = run_neardup("serve", "--store", str(simhash), "--search-index", "disk")
    assert done.returncode == 2 and "--search-index" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["lmdb", pytest.param("redis", marks=pytest.mark.redis)])
def test_servers_with_and_without_the_index_answer_alike_through_upsert_and_delete(request, tmp_path, backend):
    """Two servers on one store, one searching its memory, one the store: writes through either (and by another
    process) are answered alike and as an exhaustive scan finds, by the next call."""
    rng = random.Random(9)
    corpus = make_corpus(rng, 250)
    location = request.getfixturevalue("redis_server").url("memory-index") if backend == "redis" else \
        tmp_path / "s"
    path = sketch_store(location, {doc_id: encode_sketch(values) for doc_id, values in corpus.items()},
                        SketchConfig(k=K))
    with serving(path, "--search-index", "memory", log_dir=tmp_path) as memory, \
            serving(path, log_dir=tmp_path) as plain, \
            NearDupClient(memory.target, timeout=10) as in_memory, NearDupClient(plain.target, timeout=10) as stored:
        assert "search index: 250 articles" in memory.log()

        def check() -> None:
            for doc_id in list(corpus)[::12]:
                for metric in METRICS:
                    got = in_memory.find_similar(doc_id, top_k=1000, threshold=0.3, metric=metric)
                    assert got == stored.find_similar(doc_id, top_k=1000, threshold=0.3, metric=metric)
                    assert got.exact and [(m.id, m.similarity) for m in got.matches] == \
                        answer_of(exhaustive(corpus, corpus[doc_id], doc_id, 0.3, metric))

        check()
        for round_, client in enumerate((in_memory, stored, None)):
            written, gone = change(rng, corpus, round_)
            documents = [ClientDocument(doc_id, sketch=encode_sketch(values)) for doc_id, values in written.items()]
            if client is None:  # another process: this one, through the store
                with open_store(path) as writer:
                    writer.put_many([(doc.id, doc.sketch) for doc in documents])
                    writer.delete_many(gone)
            else:
                client.upsert(documents)
                client.delete(gone)
            check()
            assert in_memory.find_similar(next(iter(written)), top_k=3).matches == \
                stored.find_similar(next(iter(written)), top_k=3).matches
            for doc_id in gone:
                with pytest.raises(NearDupClientError) as raised:
                    in_memory.find_similar(doc_id)
                assert raised.value.code == grpc.StatusCode.NOT_FOUND


def test_the_index_follows_a_redis_store_in_one_round_trip_per_write_batch(redis_url):
    """Catching up with a batch of writes on a Redis store reads every changed id in one round trip (two HMGETs in
    one pipeline), not two HGETs per id; the index then answers like the store."""
    import redis  # the redis extra, as every test on a Redis store

    rng = random.Random(5)
    corpus = make_corpus(rng, 120)
    with create_store(redis_url, SketchConfig(k=K), []) as store, \
            redis.Redis.from_url(redis_url.split("?")[0]) as client:
        store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in corpus.items()])
        view = LiveView(store, search_index=True)
        written, gone = change(rng, corpus, 0)
        store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in written.items()])
        store.delete_many(gone)
        sent = commands_sent(client, view.read)
        # the generation, the change log and two HMGETs: a few commands, where a read per id sent 130 HGETs
        assert sum(sent.values()) < len(written) + len(gone) and sent.get("hmget") == 2, sent
        engine, params = SimilarSearch(ServedStore(store)), SimilarParams(top_k=1000, threshold=0.2)
        for doc_id in list(written)[:10]:
            assert engine.find_similar(doc_id, params, view.read()) == engine.find_similar(doc_id, params)
