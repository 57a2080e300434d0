"""Clustering near-duplicate pairs: what each method does with a chain, cliques joined by a weak link, ids."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from neardup.core import linkage as clusters
from neardup.core.linkage import communities, complete, components, Pairs, stable_ids


def pairs_of(edges: list[tuple[int, int, float]]) -> Pairs:
    a, b, similarity = zip(*edges) if edges else ((), (), ())
    return Pairs(np.array(a, np.int64), np.array(b, np.int64), np.array(similarity, float))


def cliques(sizes: list[int], similarity: float = 0.9) -> list[tuple[int, int, float]]:
    edges, start = [], 0
    for size in sizes:
        edges += [(i, j, similarity) for i, j in itertools.combinations(range(start, start + size), 2)]
        start += size
    return edges


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_a_chain_is_one_component_and_complete_linkage_splits_it():
    """A~B (0.6), B~C (0.6), A≁C: components chain all three; complete linkage keeps only pairs that are all
    near-duplicates of each other; D~E and the singleton F stay as they are for every method."""
    chain = pairs_of([(0, 1, 0.6), (1, 2, 0.6), (3, 4, 0.9)])
    assert components(6, chain).tolist() == [0, 0, 0, 1, 1, 2]
    assert complete(6, chain, threshold=0.52).tolist() == [0, 0, 1, 2, 2, 3]
    labels = communities(6, chain)
    assert labels[3] == labels[4] != labels[5] and labels[5] not in labels[:5]


def test_two_groups_joined_by_one_weak_link_are_split_by_complete_and_communities():
    edges = cliques([5, 5]) + [(4, 5, 0.55)]
    joined = pairs_of(edges)
    assert components(10, joined).tolist() == [0] * 10
    assert complete(10, joined, threshold=0.52).tolist() == [0] * 5 + [1] * 5
    assert communities(10, joined).tolist() == [0] * 5 + [1] * 5


def test_labels_do_not_depend_on_pair_order():
    edges = cliques([4, 3, 6]) + [(3, 4, 0.55), (6, 7, 0.6)]
    shuffled = edges[::-1]
    for method in (components, communities, lambda n, p: complete(n, p, 0.52)):
        assert method(14, pairs_of(edges)).tolist() == method(14, pairs_of(shuffled)).tolist()


def test_complete_linkage_cut_keeps_every_pair_of_a_cluster_within_the_cut():
    rng = np.random.default_rng(4)
    edges = [(i, j, float(rng.uniform(0.5, 1.0))) for i, j in itertools.combinations(range(40), 2)
             if rng.random() < 0.3]
    pairs = pairs_of(edges)
    labels = complete(40, pairs, threshold=0.52)
    similar = {(a, b): s for a, b, s in edges}
    loosest = 1.0 - 0.52 + clusters.WINDOW
    for label in set(labels.tolist()):
        members = np.flatnonzero(labels == label).tolist()
        for a, b in itertools.combinations(members, 2):
            assert 1.0 - similar.get((a, b), 0.0) <= loosest


def test_components_too_large_for_linkage_are_split_by_communities_first(monkeypatch):
    monkeypatch.setattr(clusters, "MAX_LINKAGE", 6)
    edges = cliques([5, 5, 5]) + [(4, 5, 0.55), (9, 10, 0.55)]
    assert complete(15, pairs_of(edges), threshold=0.52).tolist() == [0] * 5 + [1] * 5 + [2] * 5


def test_stable_ids_keep_the_ids_of_persisting_clusters():
    previous = np.array([7, 7, 7, 9, 9, -1])
    # the old cluster 7 split in two: its id goes to the part holding most of it; 9 persists; 5 is new
    labels = np.array([0, 0, 1, 2, 2, 3])
    ids = stable_ids(labels, previous, next_id=20)
    assert ids.ids.tolist() == [7, 7, 20, 9, 9, 21] and (ids.kept, ids.new) == (2, 2)
    assert stable_ids(labels, ids.ids, next_id=22).ids.tolist() == ids.ids.tolist()  # a re-run changes nothing


@pytest.mark.parametrize("method", [components, communities, lambda n, p: complete(n, p, 0.52)])
def test_no_pairs_means_singletons(method):
    assert method(3, pairs_of([])).tolist() == [0, 1, 2]
