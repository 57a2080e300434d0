"""Dedup: a result set (stored ids, or documents sent inline) grouped by the kernel of the store's sketch kind.

The request path's one domain operation: `dedup_ids` reads the sketches and goes straight to the kernel. The
store's other operations live beside it: similar_search.py (FindSimilar, all pairs), explainer.py (Explain),
writer.py (Upsert, Delete, clusters); what they share is served_store.py, documents.py and params.py.
"""
from __future__ import annotations

from typing import NamedTuple, Sequence

from ..core import kernel
from ..core.vocabulary import SIMHASH
from ..store.base import check_ids
from .documents import RequestDocument, inline_sketch
from .params import DedupParams
from .served_store import Reader, ServedStore


class DedupOutcome(NamedTuple):
    packed_grouping: bytes      # the kernel's packed answer, encoded as is (kernel.unpack reads it)
    missing: list[int]          # positions whose id has no stored sketch
    read_ids: Sequence[str]     # ids whose sketches (or clusters) came from the store: what a cached answer reads
    clusters: list[int] | None = None  # per position, once the store is clustered (-1: none)


class Deduplicator:
    """Groups result sets of one served store: its reader by default (the store itself), or the request's."""

    def __init__(self, served: ServedStore):
        self.served = served
        self.reader = served.reader
        self._check_size = served.check_size
        self._check_metric = served.check_metric
        self._k = served.config.k
        self._simhash = served.config.kind == SIMHASH
        self._items = served.items

    def group(self, sketches: list[bytes | None], params: DedupParams) -> bytes:
        """The kernel of the store's sketch kind (the metric already checked), its answer packed."""
        if self._simhash:
            return kernel.dedup_simhash(sketches, params.threshold, params.grouping, packed=True)
        if self._items is not None:
            return self._items.dedup(sketches, params.threshold, params.grouping, packed=True)
        return kernel.dedup(sketches, self._k, params.threshold, params.metric, params.grouping, packed=True)

    def dedup_ids(self, ids: Sequence[str], params: DedupParams, reader: Reader | None = None,
                  ids_checked: bool = False) -> DedupOutcome:
        """The fast path: every result is a stored article. `reader` defaults to the store itself; ids_checked:
        every id is known to keep the id rule (the wire reader screened them)."""
        reader = reader or self.reader
        self._check_size(len(ids), "ids")
        if not ids_checked:
            check_ids(ids)
        self._check_metric(params.metric)
        sketches = reader.get_many(ids)
        missing = kernel.missing(sketches)
        grouping = self.group(sketches, params)
        return DedupOutcome(grouping, missing, ids, reader.clusters(ids))

    def dedup_documents(self, documents: Sequence[RequestDocument], params: DedupParams,
                        reader: Reader | None = None) -> DedupOutcome:
        """A result set that may carry texts or sketches inline; documents with only an id are read from the store."""
        self._check_size(len(documents), "documents")
        check_ids([doc.id for doc in documents], "documents[{}].id")
        self._check_metric(params.metric)
        stored_positions = []
        sketches: list[bytes | None] = []
        for position, doc in enumerate(documents):
            if not doc.inline:
                stored_positions.append(position)
                sketches.append(None)
            else:
                sketches.append(inline_sketch(self.served, doc, f"documents[{position}]"))
        stored_ids = [documents[p].id for p in stored_positions]
        missing = []
        reader = reader or self.reader
        for position, sketch in zip(stored_positions, reader.get_many(stored_ids)):
            sketches[position] = sketch
            if sketch is None:
                missing.append(position)
        grouping = self.group(sketches, params)
        clusters = reader.clusters([doc.id for doc in documents])
        return DedupOutcome(grouping, missing, stored_ids if clusters is None else [d.id for d in documents],
                            clusters)
