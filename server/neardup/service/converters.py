"""Messages ↔ plain domain values. The only place that knows both the protobuf types and the runtime's."""
from __future__ import annotations

from neardup_client.enums import GROUPING_NAMES, GROUPING_VALUES, METRIC_NAMES, METRIC_VALUES
from neardup_client.v1 import neardup_pb2 as pb

from ..core.candidates import DEFAULT_TOP_K
from ..core.errors import InvalidArgument
from ..core.fields import ExactValue, FieldSpec, GeoPoint
from ..core.sketch_config import SketchConfig
from ..core.vocabulary import BOTTOMK
from ..runtime.deduplicator import DedupOutcome
from ..runtime.documents import RequestDocument
from ..runtime.explainer import ExplainOutcome
from ..runtime.params import DedupParams, SimilarParams
from ..runtime.similar_search import SimilarOutcome
from ..store.base import MAX_ID_BYTES
from . import _wire


def _enum_name(value: int, names: dict, default: str, what: str) -> str:
    if value == 0:
        return default
    try:
        return names[value]
    except KeyError:
        raise InvalidArgument(f"unknown {what} {value}; use one of "
                              + ", ".join(f"{v} ({n})" for v, n in names.items()), what) from None


def dedup_params(request: pb.DedupRequest, defaults: DedupParams) -> DedupParams:
    if not (request.metric or request.grouping or request.HasField("threshold")):
        return defaults  # the usual request: no new (validated) parameters to build
    return DedupParams(
        threshold=request.threshold if request.HasField("threshold") else defaults.threshold,
        metric=_enum_name(request.metric, METRIC_NAMES, defaults.metric, "metric"),
        grouping=_enum_name(request.grouping, GROUPING_NAMES, defaults.grouping, "grouping"),
    )


def similar_params(request: pb.FindSimilarRequest, defaults: DedupParams) -> SimilarParams:
    """top_k 0 (unset) is the default; threshold and metric default as for Dedup."""
    return SimilarParams(
        top_k=request.top_k or DEFAULT_TOP_K,
        threshold=request.threshold if request.HasField("threshold") else defaults.threshold,
        metric=_enum_name(request.metric, METRIC_NAMES, defaults.metric, "metric"),
    )


def explain_params(request: pb.ExplainRequest, defaults: DedupParams) -> DedupParams:
    """Threshold and metric default as for Dedup; the pair is decided as a greedy Dedup of [a, b] would."""
    return DedupParams(
        threshold=request.threshold if request.HasField("threshold") else defaults.threshold,
        metric=_enum_name(request.metric, METRIC_NAMES, defaults.metric, "metric"),
    )


def explain_documents(request: pb.ExplainRequest) -> tuple[RequestDocument, RequestDocument]:
    """Both documents of an ExplainRequest; one that is not set is INVALID_ARGUMENT naming it."""
    for field in ("a", "b"):
        if not request.HasField(field):
            raise InvalidArgument(f"set both a and b in an ExplainRequest: {field} is missing", field)
    return document(request.a, "a"), document(request.b, "b")


def explain_response(outcome: ExplainOutcome, params: DedupParams, ids: tuple[str, str]) -> pb.ExplainResponse:
    explanation = outcome.explanation
    return pb.ExplainResponse(
        similarity=outcome.similarity, duplicate=outcome.duplicate, threshold=params.threshold,
        metric=METRIC_VALUES[params.metric],
        a=_explained_document(ids[0], explanation.a), b=_explained_document(ids[1], explanation.b),
        shared_shingles=explanation.shared_shingles, shared_sketch_values=explanation.shared_sketch_values,
        note=explanation.note,
        fields=[pb.FieldComparison(name=field.name, kind=field.kind, weight=field.weight, similarity=field.similarity)
                for field in outcome.fields])


def _explained_document(doc_id: str, side) -> pb.ExplainedDocument:
    return pb.ExplainedDocument(
        id=doc_id, has_text=side.has_text, shingles=side.shingles, stoplisted_shingles=side.stoplisted_shingles,
        sketch_values=side.sketch_values, compared_values=side.compared_values,
        **{name: [pb.Span(start=start, end=end) for start, end in getattr(side, name)]
           for name in ("shared", "sketch_shared", "boilerplate")})


def similar_query(request: pb.FindSimilarRequest, request_bytes: bytes) -> str | RequestDocument:
    """The stored id or the document to search with. A oneof keeps only the last of its fields on the wire, so
    a request that sets both is found in its bytes."""
    kind = request.WhichOneof("query")
    if kind is None:
        raise InvalidArgument("set id or document in a FindSimilarRequest: the query is missing", "id")
    if _QUERY_FIELDS <= _top_level_fields(request_bytes):
        raise InvalidArgument("set either id or document in a FindSimilarRequest, not both", "document")
    return request.id if kind == "id" else document(request.document, "document")


_QUERY_FIELDS = frozenset(field.number
                          for field in pb.FindSimilarRequest.DESCRIPTOR.oneofs_by_name["query"].fields)


def _top_level_fields(data: bytes) -> set[int]:
    """The field numbers of a message that parsed: each top-level field's tag is read and its value skipped."""
    numbers, position = set(), 0
    while position < len(data):
        tag, position = _varint(data, position)
        numbers.add(tag >> 3)
        position = _skip_value(data, position, tag)
    return numbers


def _skip_value(data: bytes, position: int, tag: int) -> int:
    """The position after the value of the field whose tag was read. A group (an unknown field of the delimited
    encoding: what a newer client may send) runs to its end tag, over the fields it holds, so that the fields after
    it are read too (protobuf checked that it ends, and its nesting depth)."""
    wire_type = tag & 7
    if wire_type == 0:
        return _varint(data, position)[1]
    if wire_type == 2:
        length, position = _varint(data, position)
        return position + length
    if wire_type in (1, 5):
        return position + (8 if wire_type == 1 else 4)
    while True:  # a group: its fields, then its end tag
        inner, position = _varint(data, position)
        if inner & 7 == 4:
            return position
        position = _skip_value(data, position, inner)


def _varint(data: bytes, position: int) -> tuple[int, int]:
    """The varint at position, and the position after it."""
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7


def sketch_config(message: pb.SketchConfig) -> SketchConfig:
    """A sketcher_version of 0 (unset) comes from a client made before sketcher versions existed: its sketches
    follow version 1's rules, as a stored configuration without the field does (SketchConfig.from_dict); an
    empty kind, from a client made before sketch kinds existed, is bottomk. A lang "auto" needs its
    lang_identifier (SketchConfig refuses one without)."""
    return SketchConfig(unit=message.unit, k=message.k, min_word_len=message.min_word_len, lang=message.lang,
                        hash=message.hash, stoplist_digest=message.stoplist_digest,
                        sketcher_version=message.sketcher_version or 1, kind=message.kind or BOTTOMK,
                        fields=tuple(FieldSpec(name=spec.name, kind=spec.kind, unit=spec.unit, k=spec.k,
                                               weight=spec.weight, precision=spec.precision,
                                               normalize=spec.normalize, drop_words=tuple(spec.drop_words),
                                               rule_tokens=spec.rule_tokens, metric=spec.metric,
                                               synonyms=dict(spec.synonyms))
                                     for spec in message.fields),
                        rules=tuple(tuple(rule.fields) for rule in message.rules),
                        lang_identifier=message.lang_identifier)


def sketch_config_message(config: SketchConfig) -> pb.SketchConfig:
    values = config.to_dict()
    values["rules"] = [{"fields": list(rule)} for rule in values.get("rules", ())]
    for field in values.get("fields", ()):
        field["synonyms"] = dict(field.get("synonyms", ()))
    return pb.SketchConfig(**values)


def request_sketch_config(request) -> SketchConfig | None:
    return sketch_config(request.sketch_config) if request.HasField("sketch_config") else None


def document(message: pb.Document, field: str) -> RequestDocument:
    """The document of a request; `field` is its place in the request ("documents[3]"), for errors."""
    content = message.WhichOneof("content")
    fields = None
    if message.fields:
        if content is not None:
            raise InvalidArgument(f"document {message.id!r} has {content} and fields: send one of them",
                                  f"{field}.fields")
        fields = {name: _field_value(message.id, name, value, f"{field}.fields[{name!r}]")
                  for name, value in message.fields.items()}
    return RequestDocument(id=message.id,
                    text=message.text if content == "text" else None,
                    sketch=message.sketch if content == "sketch" else None,
                    lang=message.lang or None, fields=fields)


def _field_value(doc_id: str, name: str, value: pb.FieldValue, field: str):
    kind = value.WhichOneof("value")
    if kind is None:
        raise InvalidArgument(f"document {doc_id!r}: field {name!r} has no value (set text, exact or location)",
                              field)
    if kind == "location":
        return GeoPoint(value.location.lat, value.location.lon)
    return ExactValue(value.exact) if kind == "exact" else value.text


def plain_dedup_request(request_bytes: bytes) -> tuple[list[str], int, bytes] | None:
    """(ids, tag, the request without its tag) of a DedupRequest of ids with the server's default parameters, read
    by the compiled wire reader, every id keeping the id rule (store.encode_id); None for any other request
    (documents, parameters, an id the rule refuses, anything it cannot read), which goes through the protobuf
    runtime and the general path."""
    return _wire.parse_dedup_ids(request_bytes, MAX_ID_BYTES)


def dedup_response(outcome: DedupOutcome, params: DedupParams) -> bytes:
    """The serialized DedupResponse, written by the compiled encoder straight from the kernel's packed answer."""
    return _wire.encode_dedup_response(outcome.packed_grouping, outcome.missing, params.threshold,
                                       METRIC_VALUES[params.metric], GROUPING_VALUES[params.grouping],
                                       outcome.clusters)


def tag_field(tag: int) -> bytes:
    """A DedupResponse's tag field, appended to an answer (a later field overrides)."""
    return pb.DedupResponse(tag=tag).SerializeToString() if tag else b""


def similar_response(outcome: SimilarOutcome, params: SimilarParams) -> pb.FindSimilarResponse:
    return pb.FindSimilarResponse(
        matches=[pb.Match(id=match.id, similarity=match.similarity, cluster=match.cluster)
                 for match in outcome.matches],
        exact=outcome.exact, threshold=params.threshold, metric=METRIC_VALUES[params.metric], top_k=params.top_k,
        lang=outcome.lang, lang_source=outcome.lang_source)


def info_response(info: dict) -> pb.InfoResponse:
    return pb.InfoResponse(
        **{**info,
           "sketch_config": sketch_config_message(info["sketch_config"]),
           "default_metric": METRIC_VALUES[info["default_metric"]],
           "default_grouping": GROUPING_VALUES[info["default_grouping"]]})
