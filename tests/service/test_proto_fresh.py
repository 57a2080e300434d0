"""The committed client stubs must be what proto/generate.py makes from the .proto files today."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_committed_stubs_match_the_proto(tmp_path):
    spec = importlib.util.spec_from_file_location("generate", ROOT / "proto" / "generate.py")
    generate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generate)
    written = generate.generate(tmp_path)
    assert {p.name for p in written} == {"neardup_pb2.py", "neardup_pb2.pyi", "neardup_pb2_grpc.py"}
    for fresh in written:
        committed = ROOT / "client" / "neardup_client" / "v1" / fresh.name
        assert committed.read_text() == fresh.read_text(), (
            f"{committed.relative_to(ROOT)} is stale: run `python proto/generate.py` and commit the result")


def test_the_proto_enums_name_the_cores_metrics_and_groupings():
    """One vocabulary: the proto's METRIC_* / GROUPING_* values, as neardup_client.enums names them, are the
    server core's names, and every proto enum value carries its enum's prefix (buf's ENUM_VALUE_PREFIX)."""
    from neardup.core import vocabulary
    from neardup_client import enums
    from neardup_client.v1 import neardup_pb2 as pb

    assert set(enums.METRICS) == set(vocabulary.METRICS)
    assert set(enums.GROUPINGS) == set(vocabulary.GROUPINGS)
    assert list(enums.METRIC_HELP) == list(enums.METRICS) and list(enums.GROUPING_HELP) == list(enums.GROUPINGS)
    assert all(name.startswith("METRIC_") for name in pb.Metric.keys())
    assert all(name.startswith("GROUPING_") for name in pb.Grouping.keys())
    assert enums.metric_value("jaccard") == pb.METRIC_JACCARD
    with pytest.raises(ValueError, match="use one of containment, jaccard"):
        enums.metric_value("cosine")


def test_similarity_is_a_double_like_the_threshold():
    from neardup_client.v1 import neardup_pb2 as pb

    fields = pb.DedupResponse.DESCRIPTOR.fields_by_name
    assert fields["similarity"].type == fields["threshold"].type == fields["threshold"].TYPE_DOUBLE
    assert 2 not in pb.DedupResponse.DESCRIPTOR.fields_by_number  # the float field's number stays reserved


def test_the_servicer_serves_every_rpc_of_the_proto_and_the_metrics_time_every_unary_one():
    """The method table and the measured methods come from the proto's service descriptor: each RPC has a
    handler of its own kind, and no hand-written list can leave one out."""
    from neardup.service import servicer
    from neardup.service.server import MEASURED_METHODS
    from neardup_client.v1 import neardup_pb2 as pb

    service = pb.DESCRIPTOR.services_by_name["NearDup"]
    assert set(servicer.UNARY_METHODS) | set(servicer.STREAM_METHODS) == {rpc.name for rpc in service.methods}
    assert all(callable(getattr(servicer.NearDupServicer, name)) for name in servicer.UNARY_METHODS
               + servicer.STREAM_METHODS)
    assert {f"/{service.full_name}/{name}" for name in servicer.UNARY_METHODS} <= set(MEASURED_METHODS)
    assert service.methods_by_name["DedupStream"].client_streaming
