"""The service's domain operations on plain values: gather sketches, run the kernel, write batches.

Both edges use it: the gRPC servicer converts messages into these calls and back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

from . import __version__
from .core import kernel
from .core.defaults import DEFAULT_GROUPING, DEFAULT_METRIC, DEFAULT_THRESHOLD
from .core.reference import GROUPINGS, METRICS, Grouping
from .core.sketch import SketchConfig, Sketcher, validate_sketch
from .errors import InvalidArgument, TooLarge
from .store.base import SketchStore, check_ids

DEFAULT_MAX_RESULT_SET = 2_000
DEFAULT_MAX_TEXT_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class Document:
    """One result (or article to store): an id with its text, its precomputed sketch, or neither (read the store)."""

    id: str
    text: str | None = None
    sketch: bytes | None = None
    lang: str | None = None


@dataclass(frozen=True)
class Limits:
    max_result_set: int = DEFAULT_MAX_RESULT_SET
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES


@dataclass(frozen=True)
class DedupParams:
    threshold: float = DEFAULT_THRESHOLD
    metric: str = DEFAULT_METRIC
    grouping: str = DEFAULT_GROUPING

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or math.isnan(self.threshold) \
                or not 0.0 <= self.threshold <= 1.0:
            raise InvalidArgument(f"threshold must be a number in [0, 1], got {self.threshold!r}")
        if self.metric not in METRICS:
            raise InvalidArgument(f"unknown metric {self.metric!r}; use one of {', '.join(METRICS)}")
        if self.grouping not in GROUPINGS:
            raise InvalidArgument(f"unknown grouping {self.grouping!r}; use one of {', '.join(GROUPINGS)}")


class DedupOutcome(NamedTuple):
    grouping: Grouping
    missing: list[int]          # positions whose id has no stored sketch
    read_ids: Sequence[str]     # ids whose sketches came from the store (what a cached answer depends on)


#: How the engine reads stored sketches: SketchStore.get_many, or a view.Reading's (the request path).
ReadSketches = Callable[[Sequence[str]], "list[bytes | None]"]


class Deduplicator:
    """Store + sketcher + kernel: the whole request path after decoding."""

    def __init__(self, store: SketchStore, limits: Limits = Limits()):
        self.store = store
        self.limits = limits
        self.config: SketchConfig = store.config
        self.sketcher = Sketcher(store.config, store.stoplist)

    def check_config(self, config: SketchConfig | None) -> None:
        """A client that sends sketches it made itself says with what; they must match the store's."""
        if config is not None:
            self.config.require_equal(config, "the request's sketch")

    def _check_size(self, count: int) -> None:
        if count > self.limits.max_result_set:
            raise TooLarge(f"result set of {count} exceeds the limit of {self.limits.max_result_set}; "
                           "send fewer results or raise --max-result-set")

    def _inline_sketch(self, doc: Document) -> bytes:
        if doc.sketch is not None:
            return validate_sketch(doc.sketch, self.config.k)
        size = len(doc.text.encode("utf-8", "surrogatepass"))
        if size > self.limits.max_text_bytes:
            raise TooLarge(f"text of {doc.id!r} is {size} bytes, over the limit of {self.limits.max_text_bytes}")
        return self.sketcher.sketch(doc.text, doc.lang or None)

    def dedup_ids(self, ids: Sequence[str], params: DedupParams, read: ReadSketches | None = None) -> DedupOutcome:
        """The fast path: every result is a stored article. `read` defaults to the store itself."""
        self._check_size(len(ids))
        check_ids(ids)
        sketches = (read or self.store.get_many)(ids)
        missing = [position for position, sketch in enumerate(sketches) if sketch is None]
        grouping = kernel.dedup(sketches, self.config.k, params.threshold, params.metric, params.grouping)
        return DedupOutcome(grouping, missing, ids)

    def dedup_documents(self, documents: Sequence[Document], params: DedupParams,
                        read: ReadSketches | None = None) -> DedupOutcome:
        """A result set that may carry texts or sketches inline; documents with only an id are read from the store."""
        self._check_size(len(documents))
        check_ids([doc.id for doc in documents])
        stored_positions = []
        sketches: list[bytes | None] = []
        for position, doc in enumerate(documents):
            if doc.text is None and doc.sketch is None:
                stored_positions.append(position)
                sketches.append(None)
            else:
                sketches.append(self._inline_sketch(doc))
        stored_ids = [documents[p].id for p in stored_positions]
        missing = []
        for position, sketch in zip(stored_positions, (read or self.store.get_many)(stored_ids)):
            sketches[position] = sketch
            if sketch is None:
                missing.append(position)
        grouping = kernel.dedup(sketches, self.config.k, params.threshold, params.metric, params.grouping)
        return DedupOutcome(grouping, missing, stored_ids)

    def upsert(self, documents: Sequence[Document]) -> tuple[int, int]:
        """Sketches every document first, then writes them in one atomic batch: all or nothing."""
        self._check_size(len(documents))
        check_ids([doc.id for doc in documents])
        items = []
        for doc in documents:
            if doc.text is None and doc.sketch is None:
                raise InvalidArgument(f"document {doc.id!r} has neither text nor sketch")
            items.append((doc.id, self._inline_sketch(doc)))
        return len(items), self.store.put_many(items)

    def delete(self, ids: Sequence[str]) -> tuple[int, int]:
        self._check_size(len(ids))
        check_ids(ids)
        return self.store.delete_many(ids)

    def info(self) -> dict:
        return {
            "articles": self.store.count(),
            "sketch_config": self.config,
            "version": __version__,
            "format_version": self.store.format_version,
            "generation": self.store.generation(),
            "stoplist_size": len(self.store.stoplist),
            "max_result_set": self.limits.max_result_set,
            "default_threshold": DEFAULT_THRESHOLD,
            "default_metric": DEFAULT_METRIC,
            "default_grouping": DEFAULT_GROUPING,
            "store": self.store.backend,
        }
