"""The contract as another language sees it: a Node.js client loaded at run time from the .proto
(tests/contract/client.js, @grpc/grpc-js and @grpc/proto-loader from npm) calls every RPC of a real server and
must get exactly the Python stub's answers, and the Python client's; `buf lint` must pass on the proto.

The npm packages are installed by `.ci/run` (`npm install --prefix tests/contract`); without them these tests fail
and say so, they are not skipped.
"""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from neardup.core.sketch import SketchConfig, Sketcher
from neardup_client import NearDupClient
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from serverproc import serving
from textgen import article, text

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "tests" / "contract"
NODE_MODULES = CONTRACT / "node_modules"


def _require_node_modules() -> None:
    if shutil.which("node") is None or not (NODE_MODULES / "@grpc" / "grpc-js").is_dir():
        pytest.fail("the contract test needs Node.js and `npm install --prefix tests/contract` (bash .ci/run does both)")


def _documents() -> dict[str, str]:
    story, other = article(11), article(12)
    return {"story": text(story), "story-copy": "From the wire. " + text(story), "story-cut": text(story[:8]),
            "other": text(other)}


def _calls(sketch: bytes, other_config: dict) -> list[dict]:
    """Every RPC, with good and bad requests. Requests are proto JSON with proto field names; a Document's
    sketch is given as sketch_base64 (proto JSON would take base64 in "sketch" too: Node needs a Buffer)."""
    fresh = text(article(13))
    return [
        {"method": "Info", "request": {}},
        {"method": "Dedup", "request": {"ids": ["story", "other", "story-copy", "nowhere", "story-cut"]}},
        {"method": "Dedup", "request": {"ids": ["story-cut", "story", "story-copy"], "threshold": 0.9,
                                        "metric": "METRIC_JACCARD", "grouping": "GROUPING_COMPONENTS"}},
        {"method": "Dedup", "request": {"documents": [{"id": "inline", "text": "From a blog. " + fresh},
                                                      {"id": "story"}, {"id": "raw", "sketch_base64":
                                                                        base64.b64encode(sketch).decode()}]}},
        {"method": "Upsert", "request": {"documents": [{"id": "fresh", "text": fresh}]}},
        {"method": "Dedup", "request": {"documents": [{"id": "inline", "text": "From a blog. " + fresh},
                                                      {"id": "fresh"}]}},
        {"method": "Delete", "request": {"ids": ["fresh", "never-stored"]}},
        {"method": "Dedup", "request": {"ids": ["story"], "threshold": 2.0}},
        {"method": "Upsert", "request": {"documents": [{"id": "x", "text": "y"}],
                                         "sketch_config": other_config}},
        {"method": "Info", "request": {}},
    ]


def _python_answers(target: str, calls: list[dict]) -> list[dict]:
    """The same calls through the generated Python stub, answers as proto JSON with every field present."""
    answers = []
    with grpc.insecure_channel(target) as channel:
        stub = neardup_pb2_grpc.NearDupStub(channel)
        for call in calls:
            request = json.loads(json.dumps(call["request"]).replace('"sketch_base64"', '"sketch"'))
            message = json_format.ParseDict(request, getattr(pb, f"{call['method']}Request")())
            try:
                response = getattr(stub, call["method"])(message, timeout=10)
            except grpc.RpcError as error:
                answers.append({"code": error.code().name, "details": error.details()})
                continue
            answers.append({"response": json_format.MessageToDict(
                response, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)})
    return answers


def _node_answers(target: str, calls: list[dict]) -> list[dict]:
    done = subprocess.run(["node", str(CONTRACT / "client.js"), target, str(ROOT / "proto")],
                          input=json.dumps(calls), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def two_servers(indexed_store):
    """Two servers on two stores indexed alike: each client gets the same state, as the calls write."""
    stores = [indexed_store("contract-python", _documents()), indexed_store("contract-node", _documents())]
    with serving(stores[0]) as python_server, serving(stores[1]) as node_server:
        yield python_server, node_server


def test_a_node_client_gets_the_python_answers_on_every_rpc(two_servers):
    _require_node_modules()
    python_server, node_server = two_servers
    with NearDupClient(python_server.target) as client:
        info = client.info()
    sketch = Sketcher(SketchConfig(**{**info.sketch_config, "stoplist_digest": ""})).sketch(_documents()["story"])
    calls = _calls(sketch, {**info.sketch_config, "k": info.sketch_config["k"] // 2})
    python, node = _python_answers(python_server.target, calls), _node_answers(node_server.target, calls)
    assert [a.get("code", "OK") for a in python] == ["OK"] * 7 + ["INVALID_ARGUMENT", "FAILED_PRECONDITION", "OK"]
    for call, ours, theirs in zip(calls, python, node):
        if call["method"] == "Info":  # the stores were made in different directories at different times
            theirs["response"].pop("store", None), ours["response"].pop("store", None)
        if "response" in theirs and "response" in ours:
            # a message field left unset (DedupResponse.error of a request that succeeded) is null in
            # proto-loader's defaults and absent from the Python stub's JSON: both say "not set"
            for name in [name for name, value in theirs["response"].items()
                         if value is None and name not in ours["response"]]:
                del theirs["response"][name]
        assert theirs == ours, call
    # what the answers say, read the way the README tells another language to read them
    first = node[1]["response"]
    assert first["duplicate_of"] == [-1, -1, 0, -1, 0] and first["missing"] == [3]
    assert first["metric"] == "METRIC_CONTAINMENT" and first["grouping"] == "GROUPING_GREEDY"
    assert node[2]["response"]["metric"] == "METRIC_JACCARD"
    assert node[4]["response"]["upserted"] == 1 and node[6]["response"]["deleted"] == 1


def test_the_python_client_reads_the_same_answer(two_servers):
    _require_node_modules()
    python_server, node_server = two_servers
    ids = ["story", "other", "story-copy", "nowhere", "story-cut"]
    with NearDupClient(python_server.target) as client:
        answer = client.dedup(ids)
    node = _node_answers(node_server.target, [{"method": "Dedup", "request": {"ids": ids}}])[0]["response"]
    assert list(answer.duplicate_of) == node["duplicate_of"]
    assert list(answer.similarity) == node["similarity"]  # doubles: exactly equal, no float32 rounding
    assert list(answer.missing_positions) == node["missing"]


def test_buf_lint_passes_on_the_proto():
    _require_node_modules()
    done = subprocess.run([str(NODE_MODULES / ".bin" / "buf"), "lint"], cwd=ROOT / "proto", capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
