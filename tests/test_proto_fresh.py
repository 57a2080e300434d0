"""The committed client stubs must be what proto/generate.py makes from the .proto files today."""
from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


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
