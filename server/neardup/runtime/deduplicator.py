"""The service's domain operations on plain values: gather sketches, run the kernel, write batches.

Both edges use it: the gRPC servicer converts messages into these calls and back.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, NamedTuple, Protocol, Sequence

from .. import __version__
from ..core import calibration, candidates, explain, item_scoring, kernel, language, vocabulary
from ..core.encoding import check_sketch
from ..core.errors import ConfigMismatch, InvalidArgument, NotFound, TooLarge
from ..core.fields import with_weights
from ..core.item_scoring import ItemScorer, PairModel
from ..core.sketch_config import SketchConfig
from ..core.sketcher import ItemSketcher, Sketcher
from ..core.vocabulary import (DEFAULT_GROUPING, DEFAULT_METRIC, DEFAULT_THRESHOLD, GREEDY, GROUPINGS, ITEMS,
                               KIND_METRICS, METRICS, SIMHASH)
from ..store.base import MemoizedArticles, SketchStore, Snapshot, check_ids, encode_id, read_consistently

if TYPE_CHECKING:
    from ..core.postings_index import Found

DEFAULT_MAX_RESULT_SET = 2_000
DEFAULT_MAX_TEXT_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True)
class RequestDocument:
    """One result (or article to store): an id with its text, its fields (an items store), its precomputed sketch,
    or none of them (read the store)."""

    id: str
    text: str | None = None
    sketch: bytes | None = None
    lang: str | None = None
    fields: Mapping | None = None

    @property
    def inline(self) -> bool:
        """Whether it carries its content (else it is read from the store)."""
        return self.text is not None or self.sketch is not None or self.fields is not None


@dataclass(frozen=True)
class Limits:
    max_result_set: int = DEFAULT_MAX_RESULT_SET  # also the largest top_k of a search
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
    max_candidates: int = candidates.DEFAULT_MAX_CANDIDATES


@dataclass(frozen=True)
class DedupParams:
    """What a Dedup applies; the defaults here are a bottom-K store's (Deduplicator.defaults: the store's own)."""

    threshold: float = DEFAULT_THRESHOLD
    metric: str = DEFAULT_METRIC
    grouping: str = DEFAULT_GROUPING

    def __post_init__(self) -> None:
        if not isinstance(self.threshold, (int, float)) or math.isnan(self.threshold) \
                or not 0.0 <= self.threshold <= 1.0:
            raise InvalidArgument(f"threshold must be a number in [0, 1], got {self.threshold!r}", "threshold")
        if self.metric not in METRICS:
            raise InvalidArgument(f"unknown metric {self.metric!r}; use one of {', '.join(METRICS)}", "metric")
        if self.grouping not in GROUPINGS:
            raise InvalidArgument(f"unknown grouping {self.grouping!r}; use one of {', '.join(GROUPINGS)}",
                                  "grouping")


@dataclass(frozen=True)
class SimilarParams:
    top_k: int = candidates.DEFAULT_TOP_K
    threshold: float = DEFAULT_THRESHOLD
    metric: str = DEFAULT_METRIC

    def __post_init__(self) -> None:
        DedupParams(self.threshold, self.metric)  # the same rules for both
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise InvalidArgument(f"top_k must be a positive integer, got {self.top_k!r}", "top_k")


class Match(NamedTuple):
    id: str
    similarity: float
    cluster: int = -1  # its cluster id once the store is clustered (`neardup cluster`)


class SimilarOutcome(NamedTuple):
    matches: list[Match]  # best first: similarity descending, then id
    # False when more candidates passed than Limits.max_candidates
    exact: bool
    # a query text's stemmer language and how it was chosen (core.language.query_language); "" for an id or a sketch
    lang: str = ""
    lang_source: str = ""


class DedupOutcome(NamedTuple):
    packed_grouping: bytes      # the kernel's packed answer, encoded as is (kernel.unpack reads it)
    missing: list[int]          # positions whose id has no stored sketch
    read_ids: Sequence[str]     # ids whose sketches (or clusters) came from the store: what a cached answer reads
    clusters: list[int] | None = None  # per position, once the store is clustered (-1: none)


class FieldComparison(NamedTuple):
    """One field of an explained items pair."""
    name: str
    kind: str
    weight: float
    similarity: float | None   # None when either item lacks the field


class ExplainOutcome(NamedTuple):
    similarity: float   # under the metric applied
    duplicate: bool     # what Dedup decides for the pair: the second document duplicates the first
    explanation: "explain.PairExplanation"
    fields: tuple[FieldComparison, ...] = ()   # an items pair, field by field; () for texts


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


class Deduplicator:
    """Store + sketcher + kernel: the whole request path after decoding. A simhash store's sketches go through the
    kernel's popcount path and its corpus search through the permutation tables or the fingerprint scan
    (core/candidates.py); its only metric is hamming."""

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
        """The metric must be one of the store's sketch kind: containment or jaccard for bottom-K sketches,
        hamming for SimHash fingerprints (ConfigMismatch, naming the fix, otherwise)."""
        kind = self.config.kind
        if metric not in KIND_METRICS[kind]:
            raise ConfigMismatch(
                f"metric {metric} does not apply to this store's {kind} sketches: use "
                f"{' or '.join(KIND_METRICS[kind])}, or leave the metric unset for the store's default "
                f"({self.defaults.metric} at {self.defaults.threshold:g})")

    def _dedup(self, sketches: list[bytes | None], params: DedupParams) -> bytes:
        """The kernel of the store's sketch kind (the metric already checked), its answer packed."""
        if self.config.kind == SIMHASH:
            return kernel.dedup_simhash(sketches, params.threshold, params.grouping, packed=True)
        if self.items is not None:
            return self.items.dedup(sketches, params.threshold, params.grouping, packed=True)
        return kernel.dedup(sketches, self.config.k, params.threshold, params.metric, params.grouping, packed=True)

    def _check_size(self, count: int, field: str) -> None:
        """The result set of `field` (ids or documents) within --max-result-set."""
        if count > self.limits.max_result_set:
            raise TooLarge(f"result set of {count} exceeds the limit of {self.limits.max_result_set}; "
                           "send fewer results or raise --max-result-set", field, self.limits.max_result_set)

    def _inline_sketch(self, doc: RequestDocument, field: str) -> bytes:
        """The sketch of a document sent inline; `field` is its place in the request ("documents[3]")."""
        if doc.sketch is not None:
            try:
                return check_sketch(doc.sketch, self.config)
            except InvalidArgument as error:
                raise InvalidArgument(str(error), f"{field}.sketch") from None
        if doc.fields is not None:
            if self.items is None:
                raise InvalidArgument(f"document {doc.id!r} has fields, but this store holds {self.config.kind} "
                                      "sketches of texts: send text, or use a store made with `neardup index "
                                      "--fields SCHEMA`", f"{field}.fields")
            size = sum(len(value.encode("utf-8", "surrogatepass")) for value in doc.fields.values()
                       if isinstance(value, str))
            if size > self.limits.max_text_bytes:
                raise TooLarge(f"fields of {doc.id!r} are {size} bytes, over the limit of "
                               f"{self.limits.max_text_bytes}", f"{field}.fields", self.limits.max_text_bytes)
            try:
                return self.item_sketcher.sketch(doc.fields, doc.lang or None)
            except InvalidArgument as error:
                raise InvalidArgument(f"document {doc.id!r}: {error}", f"{field}.fields") from None
        size = len(doc.text.encode("utf-8", "surrogatepass"))
        if size > self.limits.max_text_bytes:
            raise TooLarge(f"text of {doc.id!r} is {size} bytes, over the limit of {self.limits.max_text_bytes}",
                           f"{field}.text", self.limits.max_text_bytes)
        if self.items is not None:
            raise InvalidArgument(f"document {doc.id!r} has a text, but this store holds items with fields "
                                  f"({', '.join(spec.name for spec in self.config.fields)}): send its fields",
                                  f"{field}.text")
        try:
            return self.sketcher.sketch(doc.text, doc.lang or None)
        except InvalidArgument as error:  # its lang
            raise InvalidArgument(str(error), f"{field}.lang") from None

    def dedup_ids(self, ids: Sequence[str], params: DedupParams, reader: Reader | None = None,
                  ids_checked: bool = False) -> DedupOutcome:
        """The fast path: every result is a stored article. `reader` defaults to the store itself; ids_checked:
        every id is known to keep the id rule (the wire reader screened them)."""
        reader = reader or self.reader
        self._check_size(len(ids), "ids")
        if not ids_checked:
            check_ids(ids)
        self.check_metric(params.metric)
        sketches = reader.get_many(ids)
        missing = [p for p, sketch in enumerate(sketches) if sketch is None] if None in sketches else []  # a C scan first
        grouping = self._dedup(sketches, params)
        return DedupOutcome(grouping, missing, ids, reader.clusters(ids))

    def dedup_documents(self, documents: Sequence[RequestDocument], params: DedupParams,
                        reader: Reader | None = None) -> DedupOutcome:
        """A result set that may carry texts or sketches inline; documents with only an id are read from the store."""
        self._check_size(len(documents), "documents")
        check_ids([doc.id for doc in documents], "documents[{}].id")
        self.check_metric(params.metric)
        stored_positions = []
        sketches: list[bytes | None] = []
        for position, doc in enumerate(documents):
            if not doc.inline:
                stored_positions.append(position)
                sketches.append(None)
            else:
                sketches.append(self._inline_sketch(doc, f"documents[{position}]"))
        stored_ids = [documents[p].id for p in stored_positions]
        missing = []
        reader = reader or self.reader
        for position, sketch in zip(stored_positions, reader.get_many(stored_ids)):
            sketches[position] = sketch
            if sketch is None:
                missing.append(position)
        grouping = self._dedup(sketches, params)
        clusters = reader.clusters([doc.id for doc in documents])
        return DedupOutcome(grouping, missing, stored_ids if clusters is None else [d.id for d in documents],
                            clusters)

    def explain(self, a: RequestDocument, b: RequestDocument, params: DedupParams,
                reader: Reader | None = None) -> ExplainOutcome:
        """How similar two documents are under params (threshold and metric), whether Dedup makes the second a
        duplicate of the first, and what they share (core/explain.py). Each is a stored article (only an id: its
        stored sketch, NotFound when there is none) or inline (text, or a sketch: spans need the text); both are
        sketched, read and compared by Dedup's code. An items pair is compared field by field (_explain_items)."""
        self.check_metric(params.metric)
        docs = {"a": a, "b": b}
        sketches = {field: self._inline_sketch(doc, field) for field, doc in docs.items() if doc.inline}
        stored = [field for field in docs if field not in sketches]
        for field in stored:
            if not docs[field].id:
                raise InvalidArgument(f"document {field} is empty: give a stored article's id, or a text", field)
            encode_id(docs[field].id, field=f"{field}.id")
        for field, sketch in zip(stored, (reader or self.reader).get_many([docs[f].id for f in stored]) if stored else ()):
            if sketch is None:
                raise NotFound(f"no article {docs[field].id!r} is stored (document {field})")
            sketches[field] = sketch
        sketch_a, sketch_b = sketches["a"], sketches["b"]
        grouping = kernel.unpack(self._dedup([sketch_a, sketch_b], DedupParams(params.threshold, params.metric,
                                                                                GREEDY)))
        if self.items is not None:
            return self._explain_items(sketch_a, sketch_b, grouping.duplicate_of[1] == 0)
        if self.config.kind == SIMHASH:
            similarity = next((score for _, score in kernel.similar_simhash(sketch_a, [sketch_b], 0.0)), 0.0)
        else:
            similarity = kernel.similarity(sketch_a, sketch_b, self.config.k, params.metric)
        sides = [explain.Side(None if doc.text is None else self.sketcher.located_shingles(doc.text, doc.lang),
                              sketch) for doc, sketch in zip((a, b), (sketch_a, sketch_b))]
        explanation = explain.explain(self.config.kind, self.config.k, self.sketcher.stoplist, *sides)
        return ExplainOutcome(similarity, grouping.duplicate_of[1] == 0, explanation)

    def _explain_items(self, sketch_a: bytes, sketch_b: bytes, duplicate: bool) -> ExplainOutcome:
        """An items pair: its score as Dedup scores it (the fields' weighted similarity, or the trained model's
        probability) and each field's similarity; no spans (an items store has no texts). A pair sharing no super
        token is never compared: score 0, no field similarities, and the note says why."""
        fields = self.items.fields
        found = item_scoring.pair_features(fields, [sketch_a, sketch_b])
        if len(found.i):
            score = float(self.items.scores(found.features)[0])
            values = found.features[0, item_scoring.similarity_columns(fields)].tolist()
            note = ""
        else:
            score, values = 0.0, [math.nan] * len(fields)
            note = ("the two share no super token: no rule of the store's (" +
                    " | ".join("+".join(rule) for rule in self.config.rules) + ") can match them, so Dedup never "
                    "compares them")
        empty = explain.SideExplanation(False, 0, 0, 0, 0, [], [], [])
        comparisons = tuple(FieldComparison(spec.name, spec.kind, spec.weight,
                                            None if math.isnan(value) else float(value))
                            for spec, value in zip(fields, values))
        return ExplainOutcome(score, duplicate, explain.PairExplanation(empty, empty, 0, 0, note), comparisons)

    def find_similar(self, query: str | RequestDocument, params: SimilarParams, reader: Reader | None = None
                     ) -> SimilarOutcome:
        """Stored articles similar to a stored one (by id) or to a document (text or sketch), best first, never
        the query itself. From the reader's search index when it has one (in memory, as fresh as the reader),
        else from a snapshot of the store; clusters from the reader (default: the store)."""
        reader = reader or self.reader
        index = reader.search_index
        if params.top_k > self.limits.max_result_set:
            raise TooLarge(f"top_k {params.top_k} exceeds the limit of {self.limits.max_result_set}", "top_k",
                           self.limits.max_result_set)
        self.check_metric(params.metric)
        chosen = None
        if isinstance(query, RequestDocument):
            if not query.inline:
                raise InvalidArgument("a document to search with needs text or a sketch (fields, on an items "
                                      "store), or search by its id", "document")
            if query.text is not None and query.sketch is None and self.items is None:
                chosen = self.query_language(query)
                query = replace(query, lang=chosen.lang)
            sketch = self._inline_sketch(query, "document")
        if index is not None:
            if isinstance(query, RequestDocument):
                searched = index.search(query.id or None, sketch, params.threshold, params.metric,
                                        self.limits.max_candidates)
            else:
                encode_id(query, field="id")
                searched = index.search(query, None, params.threshold, params.metric, self.limits.max_candidates)
            if searched is not None:
                stored, found = searched
                if not stored and not isinstance(query, RequestDocument):
                    raise NotFound(f"no article {query!r} is stored")
                return self._with_language(self._answer(found.matches, found.exact, params, reader), chosen)

        def search(snapshot: Snapshot) -> SimilarOutcome:
            if isinstance(query, RequestDocument):
                stored = snapshot.sketch(query.id) if query.id else None
                return self._search(snapshot, sketch, params, exclude=stored[0] if stored else -1)
            encode_id(query, field="id")
            stored = snapshot.sketch(query)
            if stored is None:
                raise NotFound(f"no article {query!r} is stored")
            return self._search(snapshot, stored[1], params, exclude=stored[0])

        return self._with_language(read_consistently(self.store, search), chosen)

    def query_language(self, doc: RequestDocument) -> language.QueryLanguage:
        """The stemmer language a query document's text is sketched in, and how it was chosen: the one rule
        (core.language.query_language) over the store's language and the languages its texts carried, read now
        (another worker's Upsert may have added one); an unknown lang of the document is the INVALID_ARGUMENT of
        its field."""
        try:
            held = () if doc.lang or self.config.lang == language.AUTO else self.store.languages()
            return language.query_language(doc.text, doc.lang, self.config.lang, held)
        except InvalidArgument as error:
            raise InvalidArgument(str(error), "document.lang") from None

    def identifies_queries(self) -> bool:
        """Whether a query text without its lang is identified (query_language): an auto store, or a store whose
        texts carried another language than its own. `neardup serve` then loads the identifier before it forks."""
        return self.config.lang == language.AUTO or bool(self.store.languages() - {self.config.lang})

    @staticmethod
    def _with_language(outcome: SimilarOutcome, chosen: "language.QueryLanguage | None") -> SimilarOutcome:
        return outcome if chosen is None else outcome._replace(lang=chosen.lang, lang_source=chosen.source)

    def similar_pairs(self, threshold: float, metric: str, start: int = 0, stop: int | None = None
                      ) -> Iterator[tuple[str, SimilarOutcome]]:
        """Each stored article numbered start ≤ docno < stop with every article of a larger number it reaches the
        threshold with: every near-duplicate pair of the store exactly once over all ranges. One snapshot, never read
        again (the pairs already handed out cannot be taken back), so on a store without older states (Redis) a
        write during the run ends it with StoreChanged."""
        params = SimilarParams(threshold=threshold, metric=metric)
        self.check_metric(metric)
        with self.store.snapshot() as snapshot:
            articles = MemoizedArticles(snapshot)
            for docno, doc_id, sketch in snapshot.scan(start, stop):
                yield doc_id, self._search(snapshot, sketch, params, above=docno, read_articles=articles)

    def nearest_similarities(self, count: int) -> list[float]:
        """The similarity of each of `count` stored articles, drawn by their ids (calibration.sampled_keys), to its
        best match in the store under the default metric (0 when none reaches calibration.SEARCH_FLOOR): what
        calibration.learn_threshold learns from. A bounded sample: `count` searches, whatever the store's size."""
        params = SimilarParams(top_k=1, threshold=calibration.SEARCH_FLOOR, metric=self.defaults.metric)
        return [matches[0].similarity if matches else 0.0
                for _, matches in self.sampled_matches(count, params, calibration.CANDIDATES)]

    def sampled_matches(self, count: int, params: SimilarParams, max_candidates: int) -> list[tuple[str, list[Match]]]:
        """Each of `count` stored articles, drawn by their ids (calibration.sampled_keys: the same articles give
        the same sample however they are stored), in id order, with its best matches in the store under params
        (the article itself left out), verifying at most `max_candidates` candidates each: the sample a threshold
        is learned from (nearest_similarities) and `neardup label` proposes text pairs from. One snapshot; `count`
        searches and one read of every id, whatever the store's size."""
        self.check_metric(params.metric)

        def sample(snapshot: Snapshot) -> list[tuple[str, list[Match]]]:
            chosen = [key.decode() for key in calibration.sampled_keys(snapshot.id_keys(), count)]
            return [(doc_id, self._search(snapshot, sketch, params, exclude=docno, max_candidates=max_candidates,
                                          whole_ties=True).matches)
                    for doc_id, (docno, sketch) in zip(chosen, snapshot.sketches(chosen))]

        return read_consistently(self.store, sample)

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
                matches = self.find_similar(doc_id, params).matches
            except NotFound:  # deleted meanwhile
                continue
            known = dict(zip((m.id for m in matches), self.store.clusters([m.id for m in matches])))
            known.update((m.id, provisional[m.id]) for m in matches if m.id in provisional)
            provisional[doc_id] = next((known[m.id] for m in matches if known[m.id] != -1),
                                       -2 - len(provisional))
        if provisional:
            self.store.set_clusters(list(provisional.items()))
        return len(provisional)

    def docno_limit(self) -> int:
        """One more than the largest article number: similar_pairs ranges split [0, docno_limit())."""
        return read_consistently(self.store, lambda snapshot: snapshot.docno_limit())

    def _search(self, snapshot: Snapshot, sketch: bytes, params: SimilarParams, exclude: int = -1,
                above: int = -1, max_candidates: int | None = None,
                read_articles: Callable[[Sequence[int]], list[tuple[str, bytes]]] | None = None,
                whole_ties: bool = False) -> SimilarOutcome:
        """Candidates from the postings, verified by the kernel; top_k of them unless `above` (all pairs); at most
        max_candidates verified (default: the limit), those sharing the most values first (`whole_ties`: and all
        that share as many as the last of them, candidates.candidates); the candidates' sketches read by
        `read_articles` (default: snapshot.articles)."""
        max_candidates = max_candidates or self.limits.max_candidates
        read_articles = read_articles or snapshot.articles

        def read_unread(value_indices):
            return snapshot.unread_postings(sketch, value_indices)

        if self.items is not None:
            found = candidates.item_candidates(snapshot.postings(sketch), read_unread=read_unread, exclude=exclude,
                                               above=above, max_candidates=max_candidates, whole_ties=whole_ties)
            articles = read_articles(found.docnos.tolist())
            verified = self.items.similar(sketch, [article for _, article in articles], params.threshold)
        elif self.config.kind == SIMHASH:
            if candidates.simhash_tables_suffice(params.threshold):
                found = candidates.simhash_candidates(snapshot.postings(sketch), params.threshold,
                                                      read_unread=read_unread, exclude=exclude, above=above,
                                                      max_candidates=max_candidates)
            else:
                found = candidates.simhash_scan(snapshot.fingerprints(), sketch, params.threshold, exclude=exclude,
                                                above=above, max_candidates=max_candidates)
            articles = read_articles(found.docnos.tolist())
            verified = kernel.similar_simhash(sketch, [article for _, article in articles], params.threshold)
        else:
            found = candidates.candidates(len(sketch) // 4, snapshot.postings(sketch), params.threshold,
                                          params.metric, read_unread=read_unread, exclude=exclude, above=above,
                                          max_candidates=max_candidates, whole_ties=whole_ties)
            articles = read_articles(found.docnos.tolist())
            verified = kernel.similar(sketch, [article for _, article in articles], self.config.k,
                                      params.threshold, params.metric)
        return self._answer([(articles[position][0], score) for position, score in verified], found.exact, params,
                            self.reader, every=above >= 0)

    def _answer(self, verified: list[tuple[str, float]], exact: bool, params: SimilarParams, reader: Reader,
                every: bool = False) -> SimilarOutcome:
        """The verified (id, similarity) pairs best first (similarity descending, then id): the top_k of them with
        their clusters (from reader), or `every` one (all pairs)."""
        matches = sorted((Match(doc_id, score) for doc_id, score in verified),
                         key=lambda match: (-match.similarity, match.id))
        if not every:
            matches = matches[:params.top_k]
            clusters = reader.clusters([match.id for match in matches])
            if clusters is not None:
                matches = [match._replace(cluster=cluster) for match, cluster in zip(matches, clusters)]
        return SimilarOutcome(matches, exact)

    def upsert(self, documents: Sequence[RequestDocument]) -> tuple[int, int]:
        """Sketches every document first, then writes them in one atomic batch: all or nothing."""
        self._check_size(len(documents), "documents")
        check_ids([doc.id for doc in documents], "documents[{}].id")
        items = []
        for position, doc in enumerate(documents):
            if not doc.inline:
                raise InvalidArgument(f"document {doc.id!r} has neither text nor sketch (nor fields)",
                                      f"documents[{position}]")
            items.append((doc.id, self._inline_sketch(doc, f"documents[{position}]")))
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
        self._check_size(len(ids), "ids")
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


def _load_identifier_soon() -> None:
    """Loads the language identifier (seconds) beside what the serving process does, once an Upsert made its store
    one whose query texts are identified (Deduplicator.query_language), rather than in the first search that needs
    it; a search that comes first loads it itself. (A store that was one already had it loaded by `neardup serve`
    before its workers forked.)"""
    threading.Thread(target=language.load_identifier, name="load-identifier", daemon=True).start()
