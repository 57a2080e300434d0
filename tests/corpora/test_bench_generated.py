"""The generated inputs of the kernel, store and corpus-search benchmarks (benchmarks/lib) are what their docstrings
say: synthetic result sets with near-duplicates, store content with missing ids, shingle sets whose sketches are their
K smallest values and whose MinHash signatures are datasketch's, and a Jaccard truth that equals a full scan."""
from __future__ import annotations

import random

import numpy as np
import pytest

from benchmarks.lib import kernel_sets, similar_corpus, similar_run, store_content
from benchmarks.lib.similar_queries import KINDS, Corpus, check_truth, jaccard_truth, pick_queries


def test_synthetic_result_sets_are_seeded_and_hold_near_duplicates():
    first = kernel_sets.result_documents(random.Random(kernel_sets.SEED))
    assert first == kernel_sets.result_documents(random.Random(kernel_sets.SEED))
    assert len(first) == kernel_sets.RESULTS and all(30 * 0.4 <= len(doc) <= 400 for doc in first)
    shared = [max(len(doc & earlier) / len(doc) for earlier in first[:i]) for i, doc in enumerate(first) if i]
    assert 0.1 <= sum(share >= 0.8 for share in shared) / len(shared) <= 0.5  # copies and excerpts of earlier ones
    sketches = kernel_sets.result_set(random.Random(kernel_sets.SEED))
    assert sketches == [sorted(doc)[:kernel_sets.K] for doc in first]


def test_store_content_is_the_same_on_every_call_and_misses_a_tenth():
    assert store_content.article_id(7) == "https://news.example.org/2007/08/article-000000007"
    batches = list(store_content.batches(25_000))
    assert [len(b) for b in batches] == [10_000, 10_000, 5_000] and batches == list(store_content.batches(25_000))
    values = np.frombuffer(batches[0][0][1], "<u4")
    assert 10 <= len(values) <= 64 and np.all(np.diff(values.astype(np.int64)) > 0)
    sets = store_content.result_sets(25_000, 3, random.Random(1))
    assert all(len(s) == 100 and sum(i.endswith("-missing") for i in s) == 10 for s in sets)


@pytest.fixture(scope="module")
def chunk():
    return similar_corpus.generate_chunk(similar_corpus.SEED, 0, 3000, similar_corpus.hot_values())


def test_fmix32_is_a_bijection_and_hot_values_are_small_and_distinct():
    sample = np.arange(200_000, dtype=np.uint32)
    assert len(np.unique(similar_corpus.fmix32(sample))) == len(sample) and similar_corpus.fmix32(np.zeros(1))[0] == 0
    hot = similar_corpus.hot_values()
    assert len(hot) == len(set(hot.tolist())) == similar_corpus.HOT_VALUES and hot.max() < similar_corpus.HOT_BELOW


def test_a_chunk_holds_groups_of_copies_and_its_hot_bits_say_which_hot_values(chunk):
    assert len(chunk.offsets) == 3001 and chunk.offsets[-1] == len(chunk.values)
    hot = similar_corpus.hot_values()
    for article in range(0, 3000, 97):
        values = set(chunk.set_of(article).tolist())
        assert len(values) == chunk.lengths[article]  # a set: no value twice
        held = {j for j, value in enumerate(hot.tolist()) if value in values}
        assert held == {j for j in range(similar_corpus.HOT_VALUES) if chunk.hot[article] >> j & 1}
    kinds = np.bincount(chunk.kind, minlength=3) / 3000
    assert kinds[similar_corpus.GROUPED] == pytest.approx(similar_corpus.GROUPED_SHARE, abs=0.01)
    groups, sizes = np.unique(chunk.group, return_counts=True)
    assert np.array_equal(chunk.group_size, sizes[np.searchsorted(groups, chunk.group)])
    # a copy shares values with its group's other members, never with another group but for the hot values
    members = np.nonzero(chunk.group == chunk.group[np.argmax(chunk.group_size)])[0]
    assert len(set(chunk.set_of(members[0]).tolist()) & set(chunk.set_of(members[1]).tolist()) - set(hot.tolist()))


def test_sketches_are_the_k_smallest_values(chunk):
    sketches = similar_corpus.bottom_k(chunk)
    for article in range(0, 3000, 101):
        expected = np.sort(chunk.set_of(article))[:similar_corpus.K]
        assert np.array_equal(np.frombuffer(sketches[article], "<u4"), expected)


def test_signatures_are_datasketchs(chunk):
    import datasketch  # the test extra has it: a missing one fails, as it should
    permutations = datasketch.MinHash(num_perm=similar_corpus.NUM_PERM, seed=1).permutations
    similar_corpus.check_signatures(chunk, similar_corpus.signatures(chunk, permutations), permutations)
    wrong = similar_corpus.signatures(chunk, permutations)
    wrong[0, 0] ^= 1
    with pytest.raises(SystemExit, match="differ"):
        similar_corpus.check_signatures(chunk, wrong, permutations)


def test_the_jaccard_truth_equals_a_full_scan(chunk):
    corpus = Corpus()
    corpus.add(chunk, similar_corpus.bottom_k(chunk))
    queries = pick_queries(chunk, 0, 8, np.random.default_rng(3))
    assert {q.kind for q in queries} == set(KINDS)
    lengths, groups, hot = corpus.arrays()
    assert check_truth([chunk], queries, lengths, groups, hot, 0.3) == len(queries)
    grouped = next(q for q in queries if q.kind == "grouped")
    assert jaccard_truth(grouped, 3000, lengths, groups, hot, 0.0) >= set(grouped.members) - {grouped.article}


def test_the_corpus_search_plan_and_its_minhashlsh_size():
    parser = similar_run.parser(similar_run.__doc__)
    args = parser.parse_args(["--quick"])
    plan = similar_run.plan_of(args, parser)
    assert (plan.sizes, plan.queries, plan.lsh_queries, plan.plain) == ([100_000], 25, 100, 0)
    args = parser.parse_args([])
    assert similar_run.plan_of(args, parser, plain=100_000).sizes == [100_000, 1_000_000]
    with pytest.raises(SystemExit):
        similar_run.plan_of(parser.parse_args(["--sizes", "1234"]), parser)
    size, skipped = similar_run.lsh_sizes([100_000, 1_000_000], lsh_max=100_000)
    assert size == 100_000 and skipped == {1_000_000: "--lsh-max"}
    assert similar_run.percentiles_us([1.0, 2.0, 3.0, 4.0]) == {"p50_us": 3.0, "p99_us": 4.0, "calls": 4}
