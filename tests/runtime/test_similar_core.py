"""Corpus search on a real store (LMDB, Redis) equals an exhaustive scan with reference.py's definitions, hot values skipped."""
from __future__ import annotations

import random

import pytest

from neardup.core import candidates, kernel, reference, vocabulary
from neardup.core.sketch_config import SketchConfig
from neardup.core.vocabulary import BOTTOMK_METRICS as METRICS
from neardup.core.encoding import encode_sketch
from neardup.runtime.documents import RequestDocument
from neardup.runtime.params import Limits, SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import Match, SimilarSearch
from neardup.core.errors import InvalidArgument, NotFound, TooLarge
from neardup.store import create_store
from brute import exhaustive
from sketches import HOT, K, make_corpus


@pytest.fixture(scope="module", params=["lmdb", pytest.param("redis", marks=pytest.mark.redis)])
def indexed(request, tmp_path_factory):
    """An engine over a store (of each backend) written in batches with replacements and deletes, and what it
    holds."""
    rng = random.Random(3)
    corpus = make_corpus(rng, 400)
    location = request.getfixturevalue("redis_server").url("similar") if request.param == "redis" else \
        tmp_path_factory.mktemp("similar") / "s"
    store = create_store(location, SketchConfig(k=K), [])
    items = list(corpus.items())
    for start in range(0, len(items), 70):
        store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in items[start:start + 70]])
    replaced = make_corpus(rng, 40)
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in replaced.items()])
    corpus.update(replaced)
    gone = [f"doc-{n}" for n in rng.sample(range(400), 30)]
    store.delete_many(gone)
    for doc_id in gone:
        del corpus[doc_id]
    yield SimilarSearch(ServedStore(store)), corpus
    store.close()


@pytest.fixture
def skips(monkeypatch):
    """A low hot limit, so that searches skip postings, and a record of how many each search skipped."""
    monkeypatch.setattr(candidates, "HOT_POSTINGS", 40)
    seen = []
    search = candidates.candidates

    def recorded(*args, **kwargs):
        found = search(*args, **kwargs)
        seen.append(found.skipped)
        return found

    monkeypatch.setattr(candidates, "candidates", recorded)
    return seen


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("metric", METRICS)
@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.52, 0.9, 1.0])
def test_search_by_id_equals_an_exhaustive_scan(indexed, skips, metric, threshold):
    engine, corpus = indexed
    for doc_id in list(corpus)[::7]:
        outcome = engine.find_similar(doc_id, SimilarParams(top_k=1000, threshold=threshold, metric=metric))
        assert outcome.exact
        assert outcome.matches == exhaustive(corpus, corpus[doc_id], doc_id, threshold, metric)
    if 0.0 < threshold < 1.0:
        assert max(skips) > 0, "no search skipped a hot posting: the skip is untested"


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_top_k_keeps_the_best_in_order(indexed):
    engine, corpus = indexed
    doc_id = max(corpus, key=lambda d: len(exhaustive(corpus, corpus[d], d, 0.2, vocabulary.CONTAINMENT)))
    everything = exhaustive(corpus, corpus[doc_id], doc_id, 0.2, vocabulary.CONTAINMENT)
    assert len(everything) > 3
    outcome = engine.find_similar(doc_id, SimilarParams(top_k=3, threshold=0.2))
    assert outcome.matches == everything[:3]


def test_search_by_document_excludes_its_own_stored_id(indexed):
    engine, corpus = indexed
    doc_id = next(iter(corpus))
    sketch = encode_sketch(corpus[doc_id])
    with_id = engine.find_similar(RequestDocument(doc_id, sketch=sketch), SimilarParams(top_k=1000, threshold=0.3))
    without = engine.find_similar(RequestDocument("", sketch=sketch), SimilarParams(top_k=1000, threshold=0.3))
    assert without.matches[0] == Match(doc_id, 1.0)
    assert with_id.matches == without.matches[1:] == exhaustive(corpus, corpus[doc_id], doc_id, 0.3,
                                                                vocabulary.CONTAINMENT)


def test_errors_name_the_problem(indexed):
    engine, _ = indexed
    with pytest.raises(NotFound, match="no article 'nope'"):
        engine.find_similar("nope", SimilarParams())
    with pytest.raises(InvalidArgument, match="non-empty"):
        engine.find_similar("", SimilarParams())
    with pytest.raises(TooLarge, match="top_k"):
        engine.find_similar("doc-1", SimilarParams(top_k=engine.limits.max_result_set + 1))
    with pytest.raises(InvalidArgument, match="text or a sketch"):
        engine.find_similar(RequestDocument("x"), SimilarParams())
    for bad in (dict(top_k=0), dict(threshold=1.5), dict(metric="cosine")):
        with pytest.raises(InvalidArgument):
            SimilarParams(**bad)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_too_many_candidates_verifies_the_best_sharing_and_says_inexact(indexed):
    engine, corpus = indexed
    doc_id = max(corpus, key=lambda d: len(exhaustive(corpus, corpus[d], d, 0.0, vocabulary.JACCARD)))
    everything = exhaustive(corpus, corpus[doc_id], doc_id, 0.0, vocabulary.JACCARD)
    bounded = SimilarSearch(ServedStore(engine.store, Limits(max_candidates=5)))
    outcome = bounded.find_similar(doc_id, SimilarParams(top_k=1000, threshold=0.0, metric=vocabulary.JACCARD))
    assert not outcome.exact and len(outcome.matches) == 5
    shared = {match.id: len(set(corpus[doc_id]) & set(corpus[match.id])) for match in everything}
    assert sorted(shared[match.id] for match in outcome.matches) == sorted(shared.values())[-5:]


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("metric, threshold", [(vocabulary.CONTAINMENT, 0.52), (vocabulary.JACCARD, 0.25)])
def test_pairs_over_ranges_are_every_near_duplicate_pair_once(indexed, skips, metric, threshold):
    engine, corpus = indexed
    limit = engine.docno_limit()
    cuts = [0, limit // 3, limit // 2, limit]
    pairs = [(a, match.id, match.similarity) for start, stop in zip(cuts, cuts[1:])
             for a, outcome in engine.similar_pairs(threshold, metric, start, stop) for match in outcome.matches]
    expected = {frozenset((a, b)): reference.similarity(corpus[a], corpus[b], K, metric)
                for a in corpus for b in corpus
                if a < b and reference.is_duplicate(corpus[a], corpus[b], K, metric, threshold)}
    assert len(pairs) == len(expected) > 10
    assert {frozenset((a, b)): score for a, b, score in pairs} == expected


def test_kernel_similar_equals_reference_on_random_sketches():
    rng = random.Random(11)
    for _ in range(300):
        k = rng.choice([1, 4, 16, 64])
        pool = rng.sample(range(2**32), 120)
        query = sorted(rng.sample(pool, rng.randint(0, k)))
        sketches = [sorted(rng.sample(pool, rng.randint(0, k))) for _ in range(6)]
        threshold, metric = rng.choice([0.0, 0.3, 0.5, 0.9, 1.0]), rng.choice(METRICS)
        got = kernel.similar(encode_sketch(query), [encode_sketch(s) for s in sketches], k, threshold, metric)
        assert got == [(n, reference.similarity(query, s, k, metric)) for n, s in enumerate(sketches)
                       if reference.is_duplicate(query, s, k, metric, threshold)]
    with pytest.raises(ValueError, match="more than K"):
        kernel.similar(encode_sketch([1, 2, 3]), [encode_sketch([1])], 2, 0.5, vocabulary.CONTAINMENT)
    with pytest.raises(TypeError):
        kernel.similar(encode_sketch([1]), ["not bytes"], 4, 0.5, vocabulary.CONTAINMENT)


def test_decoded_large_buckets_are_reused_only_at_the_state_they_were_read(tmp_path, skips):
    """The store keeps large postings buckets decoded per committed state (LMDB's transaction id): a search at
    the same state reuses them, and after any write every search equals the exhaustive scan again."""
    rng = random.Random(11)
    corpus = make_corpus(rng, 300)
    store = create_store(tmp_path / "s", SketchConfig(k=K), [])
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in corpus.items()])
    engine = SimilarSearch(ServedStore(store))
    params = SimilarParams(top_k=1000, threshold=0.2, metric=vocabulary.CONTAINMENT)
    queries = list(corpus)[::25]

    def search_all() -> None:
        for doc_id in queries:
            assert engine.find_similar(doc_id, params).matches == exhaustive(corpus, corpus[doc_id], doc_id, 0.2,
                                                                            vocabulary.CONTAINMENT)

    search_all()
    decoded = dict(store._large_buckets)
    assert decoded and max(skips) > 0  # hot values' buckets are large at HOT_POSTINGS 40, and some were skipped
    search_all()
    assert all(store._large_buckets[key] is bucket for key, bucket in decoded.items())  # reused, not read again
    for round_ in range(3):  # writes into the hot buckets: new holders, replaced and deleted ones
        changed = {f"new-{round_}-{n}": sorted(set(rng.sample(HOT, 4)) | {rng.randrange(1000, 2**32)})
                   for n in range(30)}
        changed.update((doc_id, sorted(set(rng.sample(HOT, 2)) | set(corpus[doc_id][:3])))
                       for doc_id in rng.sample(sorted(corpus), 20))
        store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in changed.items()])
        corpus.update(changed)
        gone = rng.sample(sorted(set(corpus) - set(queries)), 15)
        store.delete_many(gone)
        for doc_id in gone:
            del corpus[doc_id]
        search_all()
    store.close()
