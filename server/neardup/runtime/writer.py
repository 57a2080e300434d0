"""The writes of one served store (Writer): Upsert (every document sketched first, then one atomic batch), Delete,
and the clusters of new articles once the store is clustered."""
from __future__ import annotations

import threading
from typing import Sequence

from ..core import language
from ..core.errors import InvalidArgument, NotFound
from ..store.base import check_ids
from .documents import RequestDocument, inline_sketch
from .params import SimilarParams
from .served_store import ServedStore
from .similar_search import SimilarSearch


class Writer:
    """Writes to one served store: each document sketched by its rules, new articles clustered by its search."""

    def __init__(self, served: ServedStore):
        self.served = served
        self.store = served.store
        self.config = served.config
        self.search = SimilarSearch(served)

    def upsert(self, documents: Sequence[RequestDocument]) -> tuple[int, int]:
        """Sketches every document first, then writes them in one atomic batch: all or nothing."""
        self.served.check_size(len(documents), "documents")
        check_ids([doc.id for doc in documents], "documents[{}].id")
        items = []
        for position, doc in enumerate(documents):
            if not doc.inline:
                raise InvalidArgument(f"document {doc.id!r} has neither text nor sketch (nor fields)",
                                      f"documents[{position}]")
            items.append((doc.id, inline_sketch(self.served, doc, f"documents[{position}]")))
        carried = {language.canonical_lang(doc.lang) for doc in documents if doc.lang}  # each lang checked above
        generation = self.store.put_many(items)
        if carried and self.store.add_languages(carried):  # the languages its texts carried: one is new to it
            generation = self.store.generation()
            if self.config.lang != language.AUTO and carried - {self.config.lang}:
                _load_identifier_soon()
        if self.assign_clusters([doc_id for doc_id, _ in items]):
            generation = self.store.generation()
        return len(items), generation

    def delete(self, ids: Sequence[str]) -> tuple[int, int]:
        self.served.check_size(len(ids), "ids")
        check_ids(ids)
        return self.store.delete_many(ids)

    def assign_clusters(self, ids: Sequence[str]) -> int:
        """Once the store is clustered, each article of ids without a cluster joins the cluster of its best
        match (at the clustering's threshold and metric) or starts a new one, so a search engine's collapse
        attribute is there at once; the next full `neardup cluster` may revise it. Returns how many."""
        clustering = self.store.clustering()
        if not clustering or not ids:
            return 0
        params = SimilarParams(top_k=20, threshold=clustering["threshold"], metric=clustering["metric"])
        unassigned = [doc_id for doc_id, cluster in zip(ids, self.store.clusters(ids)) if cluster < 0]
        provisional: dict[str, int] = {}  # articles of this call: their cluster, or a new one (below -1)
        for doc_id in dict.fromkeys(unassigned):
            try:
                matches = self.search.find_similar(doc_id, params).matches
            except NotFound:  # deleted meanwhile
                continue
            known = dict(zip((m.id for m in matches), self.store.clusters([m.id for m in matches])))
            known.update((m.id, provisional[m.id]) for m in matches if m.id in provisional)
            provisional[doc_id] = next((known[m.id] for m in matches if known[m.id] != -1),
                                       -2 - len(provisional))
        if provisional:
            self.store.set_clusters(list(provisional.items()))
        return len(provisional)


def _load_identifier_soon() -> None:
    """Loads the language identifier (seconds) beside what the serving process does, once an Upsert made its store
    one whose query texts are identified (documents.query_language), rather than in the first search that needs
    it; a search that comes first loads it itself. (A store that was one already had it loaded by `neardup serve`
    before its workers forked.)"""
    threading.Thread(target=language.load_identifier, name="load-identifier", daemon=True).start()
