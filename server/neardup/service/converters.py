"""Messages ↔ plain domain values. The only place that knows both the protobuf types and the engine's."""
from __future__ import annotations

from neardup_client.enums import GROUPING_NAMES, GROUPING_VALUES, METRIC_NAMES, METRIC_VALUES
from neardup_client.v1 import neardup_pb2 as pb

from ..core.sketch import SketchConfig
from ..engine import DedupOutcome, DedupParams, Document
from ..errors import InvalidArgument


def _enum_name(value: int, names: dict, default: str, what: str) -> str:
    if value == 0:
        return default
    try:
        return names[value]
    except KeyError:
        raise InvalidArgument(f"unknown {what} {value}; use one of "
                              + ", ".join(f"{v} ({n})" for v, n in names.items())) from None


def dedup_params(request: pb.DedupRequest, defaults: DedupParams) -> DedupParams:
    return DedupParams(
        threshold=request.threshold if request.HasField("threshold") else defaults.threshold,
        metric=_enum_name(request.metric, METRIC_NAMES, defaults.metric, "metric"),
        grouping=_enum_name(request.grouping, GROUPING_NAMES, defaults.grouping, "grouping"),
    )


def sketch_config(message: pb.SketchConfig) -> SketchConfig:
    """A sketcher_version of 0 (unset) comes from a client made before sketcher versions existed: its sketches
    follow version 1's rules, as a stored configuration without the field does (SketchConfig.from_dict)."""
    return SketchConfig(unit=message.unit, k=message.k, min_word_len=message.min_word_len, lang=message.lang,
                        hash=message.hash, stoplist_digest=message.stoplist_digest,
                        sketcher_version=message.sketcher_version or 1)


def sketch_config_message(config: SketchConfig) -> pb.SketchConfig:
    return pb.SketchConfig(**config.to_dict())


def request_sketch_config(request) -> SketchConfig | None:
    return sketch_config(request.sketch_config) if request.HasField("sketch_config") else None


def document(message: pb.Document) -> Document:
    content = message.WhichOneof("content")
    return Document(id=message.id,
                    text=message.text if content == "text" else None,
                    sketch=message.sketch if content == "sketch" else None,
                    lang=message.lang or None)


def dedup_response(outcome: DedupOutcome, params: DedupParams) -> pb.DedupResponse:
    grouping = outcome.grouping
    return pb.DedupResponse(
        duplicate_of=grouping.duplicate_of, similarity=grouping.similarity, group=grouping.group,
        missing=outcome.missing, threshold=params.threshold,
        metric=METRIC_VALUES[params.metric], grouping=GROUPING_VALUES[params.grouping])


def info_response(info: dict) -> pb.InfoResponse:
    return pb.InfoResponse(
        **{**info,
           "sketch_config": sketch_config_message(info["sketch_config"]),
           "default_metric": METRIC_VALUES[info["default_metric"]],
           "default_grouping": GROUPING_VALUES[info["default_grouping"]]})
