"""A store as one process serves it (ServedStore): its sketchers, its items scorer, the threshold, metric and
grouping a request gets unless it says, the request limits, and the checks every operation applies. Dedup
(deduplicator.py), FindSimilar (similar_search.py), Explain (explainer.py) and the writes (writer.py) each take one.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping, Protocol, Sequence

from .. import __version__
from ..core import calibration, vocabulary
from ..core.errors import ConfigMismatch, TooLarge
from ..core.fields import with_weights
from ..core.item_scoring import ItemScorer, PairModel
from ..core.sketch_config import SketchConfig
from ..core.sketcher import ItemSketcher, Sketcher
from ..core.vocabulary import ITEMS, KIND_METRICS
from ..store.base import SketchStore
from .params import DedupParams, Limits

if TYPE_CHECKING:
    from ..core.postings_index import Found


class SearchIndex(Protocol):
    """A corpus search in memory (runtime/search/: MemorySearchIndex, SharedSearchIndex): bottom-K stores only."""

    def search(self, doc_id: str | None, sketch: bytes | None, threshold: float, metric: str,
               max_candidates: int) -> "tuple[bool, Found] | None":
        """(whether doc_id is stored, core.postings_index.Found) for article doc_id (its stored sketch when sketch is
        None), or for sketch never matching doc_id; None while the index cannot answer (search the store)."""


class Reader(Protocol):
    """What a result set reads from the store: the store itself (StoreReader), or a view.Reading on the request
    path, which answers both from memory and stays exact by the change feed (and may hold the search index)."""

    #: Where a corpus search reads: an in-memory SearchIndex, or None (a snapshot of the store).
    search_index: "SearchIndex | None"

    def get_many(self, ids: Sequence[str]) -> "list[bytes | None]":
        """Like SketchStore.get_many."""

    def clusters(self, ids: Sequence[str]) -> "list[int] | None":
        """The cluster id of each id (-1: none) once the store is clustered; None before."""


class StoreReader:
    """Reader straight from the store: two reads of its own per call (none memoized)."""

    search_index = None

    def __init__(self, store: SketchStore):
        self.store = store
        self.get_many = store.get_many

    def clusters(self, ids: Sequence[str]) -> "list[int] | None":
        return self.store.clusters(ids) if self.store.clustered() else None


class ServedStore:
    """Store + sketchers + defaults + limits. A simhash store's sketches go through the kernel's popcount path and
    its corpus search through the permutation tables or the fingerprint scan (core/candidates.py); its only metric
    is hamming."""

    def __init__(self, store: SketchStore, limits: Limits = Limits(), pair_model: bool = True,
                 field_weights: Mapping[str, float] | None = None):
        """`pair_model` False: an items store's pairs are decided by its field rules even when it holds a trained
        model (what learning a threshold and choosing pairs to label need). `field_weights`: an items store's
        fields weigh so (what learning its threshold under just-learned weights needs), not as the store says."""
        self.store = store
        self.reader = StoreReader(store)
        self.limits = limits
        self.config: SketchConfig = store.config
        self.sketcher = Sketcher(store.config, store.stoplist)
        #: The threshold, metric and grouping this store is served with unless a request says: by sketch kind,
        #: the threshold the store's own when it holds one (learned from its corpus or set: store.threshold()).
        self.defaults = DedupParams(*vocabulary.for_kind(store.config.kind))
        #: Where the default threshold comes from (core.calibration: LEARNED, SET, FIXED, PAIR_MODEL).
        self.threshold_source = calibration.FIXED
        own = store.threshold()
        if own is not None:
            # a trained setting names the metric its threshold was fitted under (jobs/train.py)
            self.defaults = DedupParams(own["threshold"], own.get("metric", self.defaults.metric),
                                        self.defaults.grouping)
            self.threshold_source = own["source"]
        #: An items store's scorer (its fields' weights and rules, or its trained pair model); None for texts.
        self.items: ItemScorer | None = None
        if store.config.kind == ITEMS:
            self.item_sketcher = ItemSketcher(store.config)
            stored_model = store.model() if pair_model else None
            model = None if stored_model is None else PairModel.from_json(stored_model, store.config.digest(),
                                                                           store.config.fields)
            if field_weights is None and own is not None:
                field_weights = own.get(calibration.FIELD_WEIGHTS)
            self.items = ItemScorer(with_weights(store.config.fields, field_weights or {}), model)
            if model is not None:  # the model decides by its probability, at the threshold chosen for it
                self.defaults = DedupParams(model.threshold, self.defaults.metric, self.defaults.grouping)
                self.threshold_source = calibration.PAIR_MODEL

    def check_config(self, config: SketchConfig | None) -> None:
        """A client that sends sketches it made itself says with what; they must match the store's."""
        if config is not None:
            self.config.require_equal(config, "the request's sketch")

    def check_metric(self, metric: str) -> None:
        """The metric must be one of the store's sketch kind: containment, jaccard or mutual for bottom-K sketches,
        hamming for SimHash fingerprints (ConfigMismatch, naming the fix, otherwise)."""
        kind = self.config.kind
        if metric not in KIND_METRICS[kind]:
            raise ConfigMismatch(
                f"metric {metric} does not apply to this store's {kind} sketches: use "
                f"{', '.join(KIND_METRICS[kind])}, or leave the metric unset for the store's default "
                f"({self.defaults.metric} at {self.defaults.threshold:g})")

    def check_size(self, count: int, field: str) -> None:
        """The result set of `field` (ids or documents) within --max-result-set."""
        if count > self.limits.max_result_set:
            raise TooLarge(f"result set of {count} exceeds the limit of {self.limits.max_result_set}; "
                           "send fewer results or raise --max-result-set", field, self.limits.max_result_set)

    def info(self) -> dict:
        """What Info answers: the store's size and configuration, the defaults and limits it is served with."""
        return {
            "articles": self.store.count(),
            "sketch_config": self.config,
            "version": __version__,
            "format_version": self.store.format_version,
            "generation": self.store.generation(),
            "stoplist_size": len(self.store.stoplist),
            "max_result_set": self.limits.max_result_set,
            "default_threshold": self.defaults.threshold,
            "default_threshold_source": self.threshold_source,
            "default_metric": self.defaults.metric,
            "default_grouping": self.defaults.grouping,
            "store": self.store.backend,
            "indexed": self.store.indexed,
            "pair_model": self.items.model.kind if self.items is not None and self.items.model else "",
            "description": self.config.describe(None if self.items is None else self.items.fields),
            "languages": sorted(self.store.languages()),
        }
