"""The store's clusters for the page's Store view, read from the store itself (`neardup ui --store`, opened
read-only): the gRPC API has no call that lists clusters.

Every stored id and its cluster id are read once when the page starts, and again when a request finds the store's
generation changed (a write, or `neardup cluster` again); a request otherwise costs one generation() read.
"""
from __future__ import annotations

import threading
from collections import defaultdict

from ..store import SketchStore
from ..store.base import stored_ids

#: Members listed per cluster unless the request asks otherwise; the rest are counted.
DEFAULT_MEMBERS = 50
NOT_CLUSTERED = -1


class StoreClusters:
    """The clusters of one store opened read-only; thread-safe (the page's server answers in threads)."""

    def __init__(self, store: SketchStore):
        self.store = store
        self._lock = threading.Lock()
        self._generation: int | None = None
        self._clustered = False
        self._cluster_of: dict[str, int] = {}
        self._members: dict[int, list[str]] = {}
        self._order: list[int] = []   # cluster ids, largest first (ties: smaller cluster id first)
        self._clustering: dict | None = None
        self.refresh()

    def refresh(self) -> None:
        """Reads the ids and cluster ids again if the store's generation changed since the last read."""
        with self._lock:
            generation = self.store.generation()
            if generation == self._generation:
                return
            clustered, clustering = self.store.clustered(), self.store.clustering()
            cluster_of: dict[str, int] = {}
            if clustered:
                ids = stored_ids(self.store)
                for start in range(0, len(ids), 10_000):
                    batch = ids[start:start + 10_000]
                    cluster_of.update(zip(batch, self.store.clusters(batch)))
            members: dict[int, list[str]] = defaultdict(list)
            for doc_id, cluster in cluster_of.items():
                if cluster != NOT_CLUSTERED:
                    members[cluster].append(doc_id)
            for listed in members.values():
                listed.sort()
            self._generation, self._clustered, self._cluster_of = generation, clustered, cluster_of
            self._clustering = clustering
            self._members = dict(members)
            self._order = sorted(self._members, key=lambda cluster: (-len(self._members[cluster]), cluster))

    def summary(self, top: int, members: int = DEFAULT_MEMBERS) -> dict:
        """The largest `top` clusters, each with its first `members` ids (in id order) and how many more."""
        self.refresh()
        with self._lock:
            answer = self._described()
            if self._clustered:
                answer["largest"] = [self._cluster(cluster, members) for cluster in self._order[:top]]
            return answer

    def find(self, doc_id: str, members: int = DEFAULT_MEMBERS) -> dict:
        """The cluster of one id: {"id", "stored", "cluster" (-1: none), and the cluster's size and members}."""
        self.refresh()
        with self._lock:
            answer = {**self._described(), "id": doc_id}
            if not self._clustered:
                return {**answer, "stored": self.store.get_many([doc_id])[0] is not None, "cluster": NOT_CLUSTERED}
            cluster = self._cluster_of.get(doc_id)
            if cluster is None:
                return {**answer, "stored": False, "cluster": NOT_CLUSTERED}
            if cluster == NOT_CLUSTERED:
                return {**answer, "stored": True, "cluster": NOT_CLUSTERED}
            return {**answer, "stored": True, **self._cluster(cluster, members)}

    def _described(self) -> dict:
        answer = {"store": self.store.location, "generation": self._generation, "clustered": self._clustered}
        if self._clustered:
            answer.update(articles=len(self._cluster_of), clusters=len(self._members),
                          singletons=sum(len(listed) == 1 for listed in self._members.values()),
                          clustering=self._clustering)
        return answer

    def _cluster(self, cluster: int, members: int) -> dict:
        listed = self._members[cluster]
        return {"cluster": cluster, "size": len(listed), "members": listed[:members],
                "more": max(0, len(listed) - members)}

    def close(self) -> None:
        self.store.close()
