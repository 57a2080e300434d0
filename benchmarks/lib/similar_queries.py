"""Queries of the corpus-search benchmarks and their truth: articles picked per kind (grouped, singleton, short,
hot-value) with the full sets of their group, what is kept of every generated article (Corpus: sketch, id, set
size, group, hot values), and the exact Jaccard of a query with every article, known without a scan (checked against
one on the quick run)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.lib.similar_corpus import GROUPED, SHORT, SINGLE, Chunk
from benchmarks.lib.store_content import article_id

KINDS = ("grouped", "singleton", "short", "hot")
HOT_QUERY = 3                  # a hot-value query holds at least this many hot values


@dataclass
class Query:
    article: int            # article number (store docno, position in the corpus)
    kind: str               # one of KINDS
    members: dict           # article number -> full set, for every article of its group (itself included)


def pick_queries(chunk: Chunk, first: int, per_kind: int, rng: np.random.Generator) -> list[Query]:
    """per_kind articles of each kind from this chunk (numbered from `first`), with their groups' sets."""
    hot_count = np.bitwise_count(chunk.hot)
    pools = {"hot": hot_count >= HOT_QUERY}
    ordinary = ~pools["hot"]
    pools["grouped"] = ordinary & (chunk.kind == GROUPED) & (chunk.group_size > 1)
    pools["singleton"] = ordinary & (chunk.kind == SINGLE)
    pools["short"] = ordinary & (chunk.kind == SHORT)
    queries = []
    for kind in KINDS:
        pool = np.nonzero(pools[kind])[0]
        for local in rng.choice(pool, min(per_kind, len(pool)), replace=False).tolist():
            mates = np.nonzero(chunk.group == chunk.group[local])[0]
            queries.append(Query(first + local, kind,
                                 {first + int(m): np.sort(chunk.set_of(int(m))) for m in mates}))
    return queries


class Corpus:
    """What is kept of every generated article: its sketch, set size, group and hot values (not its full set)."""

    def __init__(self):
        self.sketches: list[bytes] = []
        self.ids: list[str] = []
        self.lengths, self.groups, self.hot, self.kinds = [], [], [], []

    def add(self, chunk: Chunk, sketches: list[bytes]) -> None:
        first = len(self.sketches)
        self.sketches += sketches
        self.ids += [article_id(number) for number in range(first, first + len(sketches))]
        self.lengths.append(chunk.lengths)
        self.groups.append(chunk.group)
        self.hot.append(chunk.hot)
        self.kinds.append(chunk.kind)

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return np.concatenate(self.lengths), np.concatenate(self.groups), np.concatenate(self.hot)


def jaccard_truth(query: Query, size: int, lengths: np.ndarray, groups: np.ndarray, hot: np.ndarray,
                  threshold: float) -> set[int]:
    """Articles (numbers < size) whose full set has exact Jaccard >= threshold with the query's, itself left out.
    Within its group by intersecting the sets; any other article shares only the hot values both hold."""
    mine = query.members[query.article]
    truth = set()
    for article, values in query.members.items():
        if article != query.article and article < size:
            shared = len(np.intersect1d(mine, values, assume_unique=True))
            if shared and shared / (len(mine) + len(values) - shared) >= threshold:
                truth.add(article)
    shared = np.bitwise_count(hot[:size] & hot[query.article]).astype(np.int64)
    jaccard = shared / (len(mine) + lengths[:size] - shared)
    others = np.nonzero((shared > 0) & (jaccard >= threshold) & (groups[:size] != groups[query.article]))[0]
    return truth | set(others.tolist())


def check_truth(chunks: list[Chunk], queries: list[Query], lengths, groups, hot, threshold: float) -> int:
    """jaccard_truth against a scan of every full set (the quick run): the generator's promise, checked."""
    values = np.concatenate([c.values for c in chunks])
    sizes = np.concatenate([c.lengths for c in chunks])
    order = np.argsort(values, kind="stable")
    owner = np.repeat(np.arange(len(sizes)), sizes)[order]
    values = values[order]
    for query in queries:
        mine = query.members[query.article]
        low, high = np.searchsorted(values, mine, "left"), np.searchsorted(values, mine, "right")
        holders = np.concatenate([owner[a:b] for a, b in zip(low.tolist(), high.tolist())])
        shared = np.bincount(holders, minlength=len(sizes))
        jaccard = shared / (len(mine) + sizes - shared)
        scanned = set(np.nonzero(jaccard >= threshold)[0].tolist()) - {query.article}
        if scanned != jaccard_truth(query, len(sizes), lengths, groups, hot, threshold):
            raise SystemExit(f"the Jaccard truth of article {query.article} differs from a full scan")
    return len(queries)
