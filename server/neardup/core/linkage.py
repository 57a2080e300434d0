"""Articles into clusters from their near-duplicate pairs ((a, b, similarity) arrays), for a search engine to
collapse results by cluster id: connected components, complete linkage inside each component, or Leiden
communities (constant Potts model). Labels are 0..clusters-1 in order of each cluster's smallest article.
Why these methods and how they cut: docs/design.md ("Clusters"); how they compare: docs/quality.md.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .vocabulary import CLUSTER_METHODS, COMMUNITIES, COMPLETE, COMPONENTS

#: How far from 1 - threshold the complete-linkage cut may move to where the cluster count bends.
WINDOW = 0.05
#: The largest component complete linkage runs on directly (its distance matrix: m²/2 doubles, 32 MB here).
MAX_LINKAGE = 2_000
#: CPM's resolution: the least mean link weight a cluster keeps. Chosen on the development corpus's tune split
#: (0.3–0.4 is a plateau of pairwise F1; benchmarks/evaluate_clusters.py --split tune), reported on test.
RESOLUTION = 0.35


class Pairs(NamedTuple):
    a: np.ndarray           # int64 article numbers
    b: np.ndarray
    similarity: np.ndarray  # float64


def renumber(labels: np.ndarray) -> np.ndarray:
    """Labels numbered in order of each cluster's smallest member."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse]


def components(n: int, pairs: Pairs) -> np.ndarray:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(pairs.a)), (pairs.a, pairs.b)), shape=(n, n))
    return renumber(connected_components(graph, directed=False)[1])


def communities(n: int, pairs: Pairs, resolution: float = RESOLUTION, seed: int = 0) -> np.ndarray:
    import random

    import igraph

    random.seed(seed)  # igraph's Leiden draws from Python's random module: same input, same clusters
    graph = igraph.Graph(n=n, edges=np.column_stack([pairs.a, pairs.b]).tolist())
    partition = graph.community_leiden(objective_function="CPM", weights=pairs.similarity.tolist(),
                                       resolution=resolution, n_iterations=-1)
    return renumber(np.asarray(partition.membership))


def complete(n: int, pairs: Pairs, threshold: float) -> np.ndarray:
    from scipy.cluster.hierarchy import fcluster, linkage

    parts = components(n, pairs)
    sizes = np.bincount(parts)
    if (sizes > MAX_LINKAGE).any():
        parts = _split_large(n, pairs, parts, sizes)
        sizes = np.bincount(parts)
    members = np.argsort(parts, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    position = np.empty(n, np.int64)  # each article's place in its part
    position[members] = np.arange(n) - np.repeat(bounds[:-1], sizes)
    # the pairs inside each part, grouped by part once (not searched for per part)
    inside = parts[pairs.a] == parts[pairs.b]
    pair_part = parts[pairs.a[inside]]
    order = np.argsort(pair_part, kind="stable")
    a, b = pairs.a[inside][order], pairs.b[inside][order]
    distance = 1.0 - pairs.similarity[inside][order]
    pair_bounds = np.searchsorted(pair_part[order], np.arange(len(sizes) + 1))
    # a part of two articles has one pair and one merge, at that pair's distance: no tree needed
    twos = np.flatnonzero(sizes == 2)
    trees = []
    for part in np.flatnonzero(sizes > 2).tolist():
        group = members[bounds[part]:bounds[part + 1]]
        span = slice(pair_bounds[part], pair_bounds[part + 1])
        trees.append((group, linkage(_distances(len(group), position[a[span]], position[b[span]], distance[span]),
                                     method="complete")))
    heights = np.concatenate([distance[pair_bounds[twos]]] + [tree[:, 2] for _, tree in trees])
    cut = _cut_height(heights, n, threshold)
    labels = np.arange(n) + n  # articles alone keep labels of their own
    first, second = members[bounds[twos]], members[bounds[twos] + 1]
    joined = distance[pair_bounds[twos]] <= cut
    labels[second[joined]] = labels[first[joined]]
    for group, tree in trees:
        labels[group] = _flat(fcluster(tree, cut, criterion="distance"), group)
    return renumber(labels)


def _flat(cluster_of: np.ndarray, group: np.ndarray) -> np.ndarray:
    """fcluster's 1-based labels made unique across groups: each becomes its smallest member's number."""
    smallest = np.full(cluster_of.max() + 1, np.iinfo(np.int64).max)
    np.minimum.at(smallest, cluster_of, group)
    return smallest[cluster_of]


def _distances(m: int, i: np.ndarray, j: np.ndarray, distance: np.ndarray) -> np.ndarray:
    """The condensed distance matrix of m articles given their pairs (positions i, j): 1 where no pair reached
    the threshold."""
    i, j = np.minimum(i, j), np.maximum(i, j)
    condensed = np.ones(m * (m - 1) // 2)
    condensed[m * i - i * (i + 1) // 2 + (j - i - 1)] = distance
    return condensed


def _cut_height(heights: np.ndarray, n: int, threshold: float) -> float:
    """Where the count of clusters over cut heights bends most, within WINDOW of 1 - threshold."""
    target = 1.0 - threshold
    if not len(heights):
        return target
    heights = np.sort(heights)
    grid = np.linspace(max(0.0, target - WINDOW), min(1.0, target + WINDOW), 21)
    counts = n - np.searchsorted(heights, grid, side="right")
    bend = np.diff(counts.astype(float), 2)
    if not len(bend) or bend.max() <= 0:
        return target
    return float(grid[np.argmax(bend) + 1])


def _split_large(n: int, pairs: Pairs, parts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Components over MAX_LINKAGE articles split into communities (themselves split further if still large)."""
    large = np.flatnonzero(sizes > MAX_LINKAGE)
    in_large = np.isin(parts, large)
    inside = in_large[pairs.a] & in_large[pairs.b]
    split = communities(n, Pairs(pairs.a[inside], pairs.b[inside], pairs.similarity[inside]))
    labels = np.where(in_large, split + n, parts)
    labels = renumber(labels)
    if np.bincount(labels).max() > MAX_LINKAGE:
        raise ValueError(f"a community of more than {MAX_LINKAGE} articles: complete linkage would need "
                         f"{MAX_LINKAGE}² distances; use --method communities")
    return labels


def cluster(method: str, n: int, pairs: Pairs, threshold: float) -> np.ndarray:
    """Labels by one of vocabulary.CLUSTER_METHODS; `threshold` is the one the pairs were found at."""
    if method == COMPONENTS:
        return components(n, pairs)
    if method == COMMUNITIES:
        return communities(n, pairs)
    if method == COMPLETE:
        return complete(n, pairs, threshold)
    raise ValueError(f"unknown clustering method {method!r}; use one of {', '.join(CLUSTER_METHODS)}")


class StableIds(NamedTuple):
    ids: np.ndarray  # the cluster id of each article
    kept: int        # clusters that kept an id they had
    new: int         # clusters given a new id


def stable_ids(labels: np.ndarray, previous: np.ndarray, next_id: int) -> StableIds:
    """Cluster ids for new labels that keep the ids of clusters that persist: each previous id goes to the
    new cluster holding most of its articles (largest overlaps first; each id used once); the rest get new ids
    from next_id. `previous` holds each article's previous id, -1 where it had none."""
    had = previous >= 0
    overlap_labels, overlap_ids = labels[had], previous[had]
    pairs, counts = np.unique(np.column_stack([overlap_labels, overlap_ids]), axis=0, return_counts=True)
    order = np.lexsort((pairs[:, 1], pairs[:, 0], -counts))
    given: dict[int, int] = {}
    taken: set[int] = set()
    for label, old in pairs[order].tolist():
        if label not in given and old not in taken:
            given[label] = old
            taken.add(old)
    clusters = np.unique(labels)
    fresh = [label for label in clusters.tolist() if label not in given]
    given.update(zip(fresh, range(next_id, next_id + len(fresh))))
    mapping = np.empty(clusters.max() + 1 if len(clusters) else 0, np.int64)
    mapping[list(given)] = list(given.values())
    return StableIds(mapping[labels], len(clusters) - len(fresh), len(fresh))
