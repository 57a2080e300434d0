"""What the clients take and answer (Document, DedupResult, SimilarResult, ExplainResult, Info...), and their
conversion to and from the contract's messages: the one place that knows both."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

from .enums import GROUPING_NAMES, METRIC_NAMES, grouping_value, metric_value
from .v1 import neardup_pb2 as pb


@dataclass(frozen=True)
class Document:
    """A result given inline: its text (sketched by the server), its fields (an items store: name → a string, or
    a location as {"lat": .., "lon": ..} or a (lat, lon) pair), or a sketch made with the store's configuration."""

    id: str
    text: str | None = None
    sketch: bytes | None = None
    lang: str | None = None
    fields: dict | None = None


@dataclass(frozen=True)
class Duplicate:
    id: str
    position: int
    duplicate_of: str
    duplicate_of_position: int
    similarity: float


@dataclass(frozen=True)
class DedupResult:
    """The answer for a result set, by position in the request's rank order."""

    ids: tuple[str, ...]
    duplicate_of: tuple[int, ...]       # -1 when kept
    similarity: tuple[float, ...]
    group: tuple[int, ...]              # position of the kept result standing for the group
    missing_positions: tuple[int, ...]
    cached: bool
    threshold: float
    metric: str
    grouping: str
    clusters: tuple[int, ...] = ()      # per position once the store is clustered (-1: none), else empty

    @property
    def keep(self) -> list[str]:
        """Ids to show, in rank order."""
        return [doc_id for doc_id, of in zip(self.ids, self.duplicate_of) if of < 0]

    @property
    def duplicates(self) -> list[Duplicate]:
        return [Duplicate(self.ids[p], p, self.ids[of], of, self.similarity[p])
                for p, of in enumerate(self.duplicate_of) if of >= 0]

    @property
    def groups(self) -> list[list[str]]:
        """Every group of two or more results, kept result first, in rank order."""
        members: dict[int, list[str]] = {}
        for doc_id, leader in zip(self.ids, self.group):
            members.setdefault(leader, []).append(doc_id)
        return [ids for ids in members.values() if len(ids) > 1]

    @property
    def missing(self) -> list[str]:
        return [self.ids[p] for p in self.missing_positions]

    def to_dict(self) -> dict:
        return {
            "keep": self.keep,
            "duplicates": [{"id": d.id, "duplicate_of": d.duplicate_of, "similarity": d.similarity}
                           for d in self.duplicates],
            "groups": self.groups,
            "missing": self.missing,
            "cached": self.cached,
            "threshold": self.threshold,
            "metric": self.metric,
            "grouping": self.grouping,
            **({"clusters": dict(zip(self.ids, self.clusters))} if self.clusters else {}),
        }


@dataclass(frozen=True)
class Info:
    articles: int
    sketch_config: dict
    version: str
    format_version: int
    generation: int
    stoplist_size: int
    max_result_set: int
    default_threshold: float
    default_metric: str
    default_grouping: str
    store: str
    indexed: bool  # the store keeps postings: find_similar can search it
    pair_model: str = ""  # an items store's trained pair model ("logistic", "gradient-boosting"), "" when none
    #: where default_threshold comes from: "learned", "set", "fixed", "pair_model" ("" from an older server)
    default_threshold_source: str = ""
    #: the process id of the server worker that answered (0 from an older server)
    worker: int = 0
    #: the store's configuration in the terms of its kind, one line: a store of texts its shingle unit, sketch size
    #: and language; an items store its fields (kind, unit, weight...) and rules ("" from an older server)
    description: str = ""
    #: the stemmer languages the store's texts carried as their own lang, ascending (none from an older server):
    #: a find_similar text without its lang is identified when they hold one besides sketch_config["lang"]
    languages: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Match:
    """A stored article similar to the query of find_similar."""

    id: str
    similarity: float
    cluster: int = -1  # its cluster id once the store is clustered (`neardup cluster`)


@dataclass(frozen=True)
class SimilarResult:
    """The answer of find_similar, with the parameters the server applied."""

    matches: list[Match]  # best first: similarity descending, then id
    # False: only the candidates sharing the most values were compared, or a simhash store was searched below
    # threshold 61/64 (over 3 bits), which its tables do not guarantee; a match may be missing
    exact: bool
    threshold: float
    metric: str
    top_k: int
    #: the stemmer language a document's text was sketched in, and how it was chosen: "given" (its lang),
    #: "identified" (from the text) or "store" (the store's language); "" for an id or a sketch, or from an older
    #: server
    lang: str = ""
    lang_source: str = ""

    def to_dict(self) -> dict:
        answer = {
            "matches": [{"id": m.id, "similarity": m.similarity, "cluster": m.cluster}
                        for m in self.matches],
            "exact": self.exact,
            "threshold": self.threshold,
            "metric": self.metric,
            "top_k": self.top_k,
        }
        if self.lang:
            answer.update(lang=self.lang, lang_source=self.lang_source)
        return answer


@dataclass(frozen=True)
class ExplainedDocument:
    """One document of an explained pair: counts, and where in its text (when it was sent with one) it shares
    shingles with the other, shares sketch values with it, and holds boilerplate. Spans are ascending and merged."""

    id: str
    has_text: bool              # sent with its text: the spans and shingle counts are answered
    shingles: int               # distinct shingles of its text
    stoplisted_shingles: int    # of which stop-listed (boilerplate), in no sketch
    sketch_values: int          # values of its bottom-K sketch (0 on a simhash store)
    compared_values: int        # of which the similarity compares (at or below both sketches' caps)
    shared: list[Span]          # its shingles outside the stop-list that the other text has too (needs both texts)
    sketch_shared: list[Span]   # its shingles whose values both sketches hold: what decided the similarity
    boilerplate: list[Span]     # its stop-listed shingles

    def to_dict(self) -> dict:
        return {**dataclasses.asdict(self), **{name: [list(span) for span in getattr(self, name)]
                                               for name in ("shared", "sketch_shared", "boilerplate")}}


@dataclass(frozen=True)
class FieldComparison:
    """One field of an explained items pair: its similarity (None when either item lacks the field) and weight."""

    name: str
    kind: str                   # "text", "exact" or "location"
    weight: float
    similarity: float | None


@dataclass(frozen=True)
class ExplainResult:
    """The answer of explain: the pair's similarity, Dedup's decision for it, and what each document shares."""

    similarity: float
    duplicate: bool             # Dedup of [a, b] makes b a duplicate of a at the threshold applied
    threshold: float
    metric: str
    a: ExplainedDocument
    b: ExplainedDocument
    shared_shingles: int        # distinct shingles outside the stop-list both texts have (0 without both texts)
    shared_sketch_values: int   # values both bottom-K sketches hold
    note: str                   # what could not be answered and why ("" when everything was)
    #: an items pair, field by field (the schema's fields in order); empty for texts
    fields: list[FieldComparison] = dataclasses.field(default_factory=list)

    def to_dict(self) -> dict:
        return {"similarity": self.similarity, "duplicate": self.duplicate, "threshold": self.threshold,
                "metric": self.metric, "shared_shingles": self.shared_shingles,
                "shared_sketch_values": self.shared_sketch_values, "note": self.note,
                "a": self.a.to_dict(), "b": self.b.to_dict(),
                "fields": [dataclasses.asdict(field) for field in self.fields]}


def explain_request(a: str | Document, b: str | Document, threshold: float | None,
                     metric: str | None) -> pb.ExplainRequest:
    request = pb.ExplainRequest(a=document_message(a if isinstance(a, Document) else Document(a)),
                                b=document_message(b if isinstance(b, Document) else Document(b)))
    if threshold is not None:
        request.threshold = threshold
    if metric is not None:
        request.metric = metric_value(metric)
    return request


def explained(message: pb.ExplainedDocument) -> ExplainedDocument:
    return ExplainedDocument(
        id=message.id, has_text=message.has_text, shingles=message.shingles,
        stoplisted_shingles=message.stoplisted_shingles, sketch_values=message.sketch_values,
        compared_values=message.compared_values,
        **{name: [(span.start, span.end) for span in getattr(message, name)]
           for name in ("shared", "sketch_shared", "boilerplate")})


def explain_result(response: pb.ExplainResponse) -> ExplainResult:
    return ExplainResult(similarity=response.similarity, duplicate=response.duplicate, threshold=response.threshold,
                         metric=METRIC_NAMES.get(response.metric, "unspecified"), a=explained(response.a),
                         b=explained(response.b), shared_shingles=response.shared_shingles,
                         shared_sketch_values=response.shared_sketch_values, note=response.note,
                         fields=[FieldComparison(field.name, field.kind, field.weight,
                                                 field.similarity if field.HasField("similarity") else None)
                                 for field in response.fields])


def dedup_request(results: Sequence[str | Document], threshold: float | None, metric: str | None,
                   grouping: str | None) -> pb.DedupRequest:
    request = pb.DedupRequest(threshold=threshold) if threshold is not None else pb.DedupRequest()
    if metric is not None:
        request.metric = metric_value(metric)
    if grouping is not None:
        request.grouping = grouping_value(grouping)
    if all_ids(results):
        request.ids.extend(results)
    else:
        request.documents.extend(document_message(r if isinstance(r, Document) else Document(r)) for r in results)
    return request


def similar_request(id: str | None, document: Document | None, top_k: int | None, threshold: float | None,
                     metric: str | None) -> pb.FindSimilarRequest:
    if (id is None) == (document is None):
        raise ValueError("give exactly one of id and document")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None (the server's default), got {top_k!r}")
    request = pb.FindSimilarRequest(top_k=top_k or 0)
    if threshold is not None:
        request.threshold = threshold
    if metric is not None:
        request.metric = metric_value(metric)
    if id is not None:
        request.id = id
    else:
        request.document.CopyFrom(document_message(document))
    return request


def similar_result(response: pb.FindSimilarResponse) -> SimilarResult:
    return SimilarResult(matches=[Match(m.id, m.similarity, m.cluster) for m in response.matches], exact=response.exact,
                         threshold=response.threshold, metric=METRIC_NAMES.get(response.metric, "unspecified"),
                         top_k=response.top_k, lang=response.lang, lang_source=response.lang_source)


def document_message(doc: Document) -> pb.Document:
    message = pb.Document(id=doc.id, lang=doc.lang or "")
    if doc.text is not None:
        message.text = doc.text
    elif doc.sketch is not None:
        message.sketch = doc.sketch
    for name, value in (doc.fields or {}).items():
        if isinstance(value, str):
            message.fields[name].text = value
        elif isinstance(value, dict):
            message.fields[name].location.lat, message.fields[name].location.lon = value["lat"], value["lon"]
        else:
            try:
                message.fields[name].location.lat, message.fields[name].location.lon = value
            except (TypeError, ValueError):
                raise ValueError(f"field {name!r} of document {doc.id!r}: give a string, or a location as "
                                 f"{{'lat': .., 'lon': ..}} or (lat, lon); got {value!r}") from None
    return message


def all_ids(results: Sequence[str | Document]) -> bool:
    """Whether every result is a stored id (a str): by the set of their types first, twice as fast for 100."""
    return set(map(type, results)) <= _STR or all(isinstance(r, str) for r in results)


_STR = {str}


def dedup_result(results: Sequence[str | Document], response: pb.DedupResponse) -> DedupResult:
    # tuple(field[:]): a slice of a repeated field is a list made in C, twice as fast to take as the field itself
    return DedupResult(
        ids=tuple(results) if all_ids(results) else tuple(r if isinstance(r, str) else r.id for r in results),
        duplicate_of=tuple(response.duplicate_of[:]), similarity=tuple(response.similarity[:]),
        group=tuple(response.group[:]), missing_positions=tuple(response.missing[:]), cached=response.cached,
        threshold=response.threshold, metric=METRIC_NAMES.get(response.metric, "unspecified"),
        grouping=GROUPING_NAMES.get(response.grouping, "unspecified"), clusters=tuple(response.cluster[:]))


#: The trailing metadata key of Info's answer: the process id of the server worker that answered.
WORKER_METADATA = "neardup-worker"


def info_result(response: pb.InfoResponse, trailing_metadata=()) -> Info:
    config = response.sketch_config
    sketch_config = {"unit": config.unit, "k": config.k, "min_word_len": config.min_word_len, "lang": config.lang,
                     "hash": config.hash, "stoplist_digest": config.stoplist_digest,
                     "sketcher_version": config.sketcher_version, "kind": config.kind or "bottomk"}
    if config.lang_identifier:  # an auto store: what identified its texts' languages
        sketch_config["lang_identifier"] = config.lang_identifier
    if config.kind == "items":  # the schema: each field's settings, and the rules
        sketch_config["fields"] = [{"name": f.name, "kind": f.kind, "unit": f.unit, "k": f.k, "weight": f.weight,
                                    "precision": f.precision, "normalize": f.normalize,
                                    "drop_words": list(f.drop_words), "rule_tokens": f.rule_tokens,
                                    "metric": f.metric, "synonyms": dict(f.synonyms)} for f in config.fields]
        sketch_config["rules"] = [list(rule.fields) for rule in config.rules]
    return Info(
        articles=response.articles,
        sketch_config=sketch_config,
        version=response.version, format_version=response.format_version, generation=response.generation,
        stoplist_size=response.stoplist_size, max_result_set=response.max_result_set,
        default_threshold=response.default_threshold,
        default_metric=METRIC_NAMES.get(response.default_metric, "unspecified"),
        default_grouping=GROUPING_NAMES.get(response.default_grouping, "unspecified"),
        store=response.store, indexed=response.indexed, pair_model=response.pair_model,
        default_threshold_source=response.default_threshold_source, description=response.description,
        languages=list(response.languages),
        worker=next((int(value) for key, value in trailing_metadata or () if key == WORKER_METADATA), 0))


#: A passage of a text: (start, end) in Unicode code points of the text as sent (text[start:end] in Python).
Span = tuple[int, int]
