"""`neardup cluster`: a cluster id on every stored article, from its near-duplicate pairs (`neardup pairs`, or its
output with --pairs; the clustering is core/linkage.py); `neardup clusters`: those ids, exported for a search
engine to collapse results by. Ids are stable (linkage.stable_ids), so a collapse attribute does not churn.
Why: docs/design.md ("Clusters").
"""
from __future__ import annotations

import dataclasses
import json
import tempfile
import time
from contextlib import ExitStack
from typing import BinaryIO, Iterable

import numpy as np

from ..core import linkage
from ..core.candidates import DEFAULT_MAX_CANDIDATES
from ..core.errors import JobFailed
from ..core.vocabulary import COMPLETE
from ..runtime.served_store import ServedStore
from ..store import open_store
from ..store.base import stored_ids
from .progress import progress
from .view import read_view, sketch_digest, view_articles

DEFAULT_METHOD = COMPLETE
_CHUNK = 10_000  # ids per read where every article is read


@dataclasses.dataclass
class ClusterSummary:
    method: str
    articles: int = 0
    pairs: int = 0
    clusters: int = 0
    singletons: int = 0
    largest: int = 0
    kept: int = 0          # clusters that kept the id they had
    new: int = 0           # clusters given a new id
    changed: int = 0       # articles whose cluster id changed (or that had none)
    elapsed: float = 0.0
    inexact: str = ""      # the pair search's warning when some articles had too many candidates
    view: str = ""         # what state was read (jobs/view.View.describe)
    rewritten: int = 0     # articles of the view rewritten or deleted before the ids were stored: none given

    def format(self) -> str:
        return (f"cluster: {self.articles:,} articles, {self.pairs:,} pairs → {self.clusters:,} clusters "
                f"({self.method}; {self.singletons:,} singletons, largest {self.largest:,}); ids: {self.kept:,} "
                f"kept, {self.new:,} new, {self.changed:,} articles changed cluster"
                f"{f'; {self.rewritten:,} written since the read left for the next run' if self.rewritten else ''}"
                f"{f'; read {self.view}' if self.view else ''}; {self.elapsed:.1f} s")


def cluster_store(store_path: str, *, method: str = DEFAULT_METHOD, threshold: float | None = None,
                  metric: str | None = None, workers: int = 1, pairs_file: str | None = None,
                  max_candidates: int = DEFAULT_MAX_CANDIDATES,
                  search_file: str | None = None, search_index: str = "auto") -> ClusterSummary:
    """Clusters the articles of a view of the store (jobs/view.py: a snapshot, or a consistent copy of a store
    that keeps no older states) still stored with the sketch the view read, and stores their ids in one atomic
    batch (an article written since gets none from this run); threshold and metric default to the store's (by
    its sketch kind)."""
    from .pairs import PairsSummary, find_pairs, search_file_of, view_pairs

    started = time.monotonic()
    summary = ClusterSummary(method)
    with ExitStack() as held:
        with open_store(store_path, readonly=True) as store:  # closed before an LMDB store is opened again
            served = ServedStore(store)
            threshold = served.defaults.threshold if threshold is None else threshold
            metric = metric or served.defaults.metric
            served.check_metric(metric)
            store.require_postings()
            view = held.enter_context(read_view(store, store_path))
        summary.view = view.describe()
        read = view_articles(view.location)  # before the pairs: a later snapshot holds them unchanged
        found = held.enter_context(tempfile.TemporaryFile())
        if pairs_file is not None:
            lines: Iterable[bytes] = _read_pairs(pairs_file)
        else:
            search_file = search_file_of(store_path, search_file, search_index)
            if search_file is not None:  # the index file catches up with the store: the store's own pairs
                searched = find_pairs(store_path, found, threshold=threshold, metric=metric, workers=workers,
                                      max_candidates=max_candidates, search_file=search_file,
                                      search_index="shared")
            else:
                searched = view_pairs(view, found, PairsSummary(threshold, metric, max_candidates), workers)
            summary.inexact = searched.inexact_warning() if searched.inexact else ""
            found.seek(0)
            lines = found
        with open_store(store_path) as store:
            # only articles the writes since the read left alone: their pairs are the view's
            ids = _unchanged(store, read)
            pairs = _pairs(lines, {doc_id: n for n, doc_id in enumerate(ids)}, threshold)
            labels = linkage.cluster(method, len(ids), pairs, threshold)
            previous = np.array(store.clusters(ids), np.int64)
            next_id = (store.clustering() or {}).get("next_id", 0)
            stable = linkage.stable_ids(labels, previous, next_id)
            assigned = dict(zip(ids, stable.ids.tolist()))
            written = _unchanged(store, {doc_id: read[doc_id] for doc_id in ids})  # again, just before the write
            store.set_clusters([(doc_id, assigned[doc_id]) for doc_id in written],
                               {"method": method, "threshold": threshold, "metric": metric,
                                "next_id": next_id + stable.new})
    summary.rewritten = len(read) - len(written)
    sizes = np.bincount(labels) if len(ids) else np.zeros(0, np.int64)
    summary.articles, summary.pairs, summary.clusters = len(ids), len(pairs.a), len(sizes)
    summary.singletons, summary.largest = int((sizes == 1).sum()), int(sizes.max(initial=0))
    summary.kept, summary.new = stable.kept, stable.new
    summary.changed = int((stable.ids != previous).sum())
    summary.elapsed = time.monotonic() - started
    return summary


def _unchanged(store, read: dict[str, bytes]) -> list[str]:
    """The ids of `read` (id → digest of the sketch a view read, in article-number order) the store still holds
    with that sketch."""
    ids, unchanged = list(read), []
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        unchanged.extend(doc_id for doc_id, sketch in zip(chunk, store.get_many(chunk))
                         if sketch_digest(sketch) == read[doc_id])
    return unchanged


def _read_pairs(path: str) -> Iterable[bytes]:
    try:
        with open(path, "rb") as lines:
            yield from lines
    except OSError as error:
        raise JobFailed(f"cannot read --pairs {path}: {error.strerror}") from None


def _pairs(lines: Iterable[bytes], number: dict[str, int], threshold: float):
    """Pairs JSON Lines as arrays of article numbers; pairs below the threshold or of articles no longer stored
    are left out."""
    a, b, similarity = [], [], []
    for line_number, line in enumerate(lines, 1):
        try:
            pair = json.loads(line)
            first, second, score = number.get(pair["a"]), number.get(pair["b"]), float(pair["similarity"])
        except (ValueError, KeyError, TypeError):
            raise JobFailed(f"pairs line {line_number} is not a pair of `neardup pairs`: "
                                f"{line[:80]!r}") from None
        if first is not None and second is not None and score >= threshold and first != second:
            a.append(first)
            b.append(second)
            similarity.append(score)
    return linkage.Pairs(np.array(a, np.int64), np.array(b, np.int64), np.array(similarity, float))


def export_clusters(store_path: str, out: BinaryIO) -> int:
    """Writes {"id": ..., "cluster": ...} per stored article (cluster -1: none yet); returns how many."""
    written = 0
    with open_store(store_path, readonly=True) as store:
        ids = stored_ids(store)
        with progress("exporting", total=len(ids), unit=" articles") as bar:
            for start in range(0, len(ids), 10_000):
                batch = ids[start:start + 10_000]
                written += _write_clusters(out, batch, store.clusters(batch))
                bar.update(len(batch))
    out.flush()
    return written


def _write_clusters(out: BinaryIO, ids: list[str], cluster_ids: list[int]) -> int:
    out.write("".join(f'{{"id": {json.dumps(doc_id, ensure_ascii=False)}, "cluster": {cluster}}}\n'
                      for doc_id, cluster in zip(ids, cluster_ids)).encode("utf-8"))
    return len(ids)


