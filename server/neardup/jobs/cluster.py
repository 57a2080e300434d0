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

DEFAULT_METHOD = COMPLETE


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

    def format(self) -> str:
        return (f"cluster: {self.articles:,} articles, {self.pairs:,} pairs → {self.clusters:,} clusters "
                f"({self.method}; {self.singletons:,} singletons, largest {self.largest:,}); ids: {self.kept:,} "
                f"kept, {self.new:,} new, {self.changed:,} articles changed cluster; {self.elapsed:.1f} s")


def cluster_store(store_path: str, *, method: str = DEFAULT_METHOD, threshold: float | None = None,
                  metric: str | None = None, workers: int = 1, pairs_file: str | None = None,
                  max_candidates: int = DEFAULT_MAX_CANDIDATES,
                  search_file: str | None = None, search_index: str = "auto") -> ClusterSummary:
    """Clusters every stored article and stores the ids (one atomic batch); threshold and metric default to the
    store's (by its sketch kind)."""
    from .pairs import find_pairs

    started = time.monotonic()
    summary = ClusterSummary(method)
    with open_store(store_path, readonly=True) as store:
        served = ServedStore(store)
        threshold = served.defaults.threshold if threshold is None else threshold
        metric = metric or served.defaults.metric
        served.check_metric(metric)
    with tempfile.TemporaryFile() as found:
        if pairs_file is None:
            searched = find_pairs(store_path, found, threshold=threshold, metric=metric, workers=workers,
                                  max_candidates=max_candidates,
                                  search_file=search_file, search_index=search_index)
            summary.inexact = searched.inexact_warning() if searched.inexact else ""
            found.seek(0)
            lines: Iterable[bytes] = found
        else:
            lines = _read_pairs(pairs_file)
        with open_store(store_path) as store:
            ids = stored_ids(store)
            number = {doc_id: n for n, doc_id in enumerate(ids)}
            pairs = _pairs(lines, number, threshold)
            labels = linkage.cluster(method, len(ids), pairs, threshold)
            previous = np.array(store.clusters(ids), np.int64)
            described = store.clustering() or {}
            next_id = described.get("next_id", 0)
            stable = linkage.stable_ids(labels, previous, next_id)
            store.set_clusters(list(zip(ids, stable.ids.tolist())),
                               {"method": method, "threshold": threshold, "metric": metric,
                                "next_id": next_id + stable.new})
    sizes = np.bincount(labels) if len(ids) else np.zeros(0, np.int64)
    summary.articles, summary.pairs, summary.clusters = len(ids), len(pairs.a), len(sizes)
    summary.singletons, summary.largest = int((sizes == 1).sum()), int(sizes.max(initial=0))
    summary.kept, summary.new = stable.kept, stable.new
    summary.changed = int((stable.ids != previous).sum())
    summary.elapsed = time.monotonic() - started
    return summary


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


