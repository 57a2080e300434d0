"""The contract as another language sees it: a Node.js client loaded at run time from the .proto
(tests/contract/client.js, @grpc/grpc-js and @grpc/proto-loader from npm) calls every RPC of a real server, the
DedupStream included, and must get exactly the Python stub's answers, and the Python client's (Dedup, FindSimilar,
DedupStream); `buf lint` must pass on the proto.

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

from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup_client import Document, NearDupClient, NearDupClientError
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from server_process import serving
from textgen import article, text

ROOT = Path(__file__).resolve().parents[2]
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
    sketch is given as sketch_base64 (proto JSON would take base64 in "sketch" too: Node needs a Buffer); uint64
    tags as strings. A DedupStream call gives its requests, all sent on one stream."""
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
        {"method": "DedupStream", "requests": [
            {"ids": ["story", "story-copy", "other"], "tag": "1"},
            {"ids": ["story"], "threshold": 2.0, "tag": "18446744073709551615"},  # refused; the stream goes on
            {"documents": [{"id": "inline", "text": "From a blog. " + fresh}, {"id": "story"},
                           {"id": "raw", "sketch_base64": base64.b64encode(sketch).decode()}],
             "tag": "9223372036854775808"},
            {"ids": ["story", "other", "story-copy", "nowhere", "story-cut"], "tag": "2"},  # as call 1: cached
            {"ids": ["story-cut", "story"], "threshold": 0.9, "metric": "METRIC_JACCARD", "tag": "7"},
        ]},
        {"method": "Info", "request": {}},
        {"method": "FindSimilar", "request": {"id": "story"}},
        {"method": "FindSimilar", "request": {"document": {"text": "From a blog. " + _documents()["story"]},
                                              "top_k": 2, "threshold": 0.3, "metric": "METRIC_JACCARD"}},
        {"method": "FindSimilar", "request": {"document": {"id": "story",
                                                           "sketch_base64": base64.b64encode(sketch).decode()}}},
        {"method": "FindSimilar", "request": {"id": "nowhere"}},
    ]


def _message(method: str, request: dict):
    request = json.loads(json.dumps(request).replace('"sketch_base64"', '"sketch"'))
    return json_format.ParseDict(request, getattr(pb, f"{method.removesuffix('Stream')}Request")())


def _as_json(response) -> dict:
    return json_format.MessageToDict(response, preserving_proto_field_name=True,
                                     always_print_fields_with_no_presence=True)


def _python_answers(target: str, calls: list[dict]) -> list[dict]:
    """The same calls through the generated Python stub, answers as proto JSON with every field present (for a
    stream: each answer, then the stream's status if it is not OK, as client.js gives them)."""
    answers = []
    with grpc.insecure_channel(target) as channel:
        stub = neardup_pb2_grpc.NearDupStub(channel)
        for call in calls:
            if "requests" in call:
                responses = []
                answers.append({"responses": responses})
                try:
                    for response in stub.DedupStream(iter([_message(call["method"], r) for r in call["requests"]]),
                                                     timeout=10):
                        responses.append(_as_json(response))
                except grpc.RpcError as error:
                    answers[-1].update(code=error.code().name, details=error.details())
                continue
            try:
                response = getattr(stub, call["method"])(_message(call["method"], call["request"]), timeout=10)
            except grpc.RpcError as error:
                answers.append({"code": error.code().name, "details": error.details()})
                continue
            answers.append({"response": _as_json(response)})
    return answers


def _unset_as_absent(theirs: dict, ours: dict) -> dict:
    """A message field left unset (DedupResponse.error of a request that succeeded) is null in proto-loader's
    defaults and absent from the Python stub's JSON: both say "not set"."""
    return {name: value for name, value in theirs.items() if value is not None or name in ours}


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
    assert [a.get("code", "OK") for a in python] == (["OK"] * 7 + ["INVALID_ARGUMENT", "FAILED_PRECONDITION"] +
                                                     ["OK"] * 5 + ["NOT_FOUND"])
    for call, ours, theirs in zip(calls, python, node):
        if call["method"] == "Info":  # the stores were made in different directories at different times
            theirs["response"].pop("store", None), ours["response"].pop("store", None)
        theirs = dict(theirs)  # node's answers stay as Node read them, for the reading below
        if "response" in theirs and "response" in ours:
            theirs["response"] = _unset_as_absent(theirs["response"], ours["response"])
        if "responses" in theirs and "responses" in ours and len(theirs["responses"]) == len(ours["responses"]):
            theirs["responses"] = [_unset_as_absent(t, o) for t, o in zip(theirs["responses"], ours["responses"])]
        assert theirs == ours, call
    # what the answers say, read the way the README tells another language to read them
    first = node[1]["response"]
    assert first["duplicate_of"] == [-1, -1, 0, -1, 0] and first["missing"] == [3]
    assert first["metric"] == "METRIC_CONTAINMENT" and first["grouping"] == "GROUPING_GREEDY"
    assert node[2]["response"]["metric"] == "METRIC_JACCARD"
    assert node[4]["response"]["upserted"] == 1 and node[6]["response"]["deleted"] == 1
    # a stream: one answer per request, in order, each with its request's tag (uint64: a string); error is null
    # unless that request failed, and then it is all the answer says besides the tag
    stream = node[9]["responses"]
    assert [a["tag"] for a in stream] == [r["tag"] for r in calls[9]["requests"]]
    assert [a["error"] and a["error"]["code"] for a in stream] == [None, 3, None, None, None]
    assert "threshold" in stream[1]["error"]["message"] and stream[1]["duplicate_of"] == []
    assert stream[0]["duplicate_of"] == [-1, 0, -1] and stream[2]["duplicate_of"] == [-1, -1, 1]
    assert [a["cached"] for a in stream] == [False, False, True, True, False]  # as calls 3 and 1 asked before
    assert stream[3]["duplicate_of"] == first["duplicate_of"] and stream[4]["metric"] == "METRIC_JACCARD"
    # FindSimilar: matches best first, never the query itself (by id, or a document naming a stored id)
    by_id, by_text, by_sketch = (node[n]["response"] for n in (11, 12, 13))
    assert [m["id"] for m in by_id["matches"]] == ["story-copy", "story-cut"]
    assert (by_id["exact"], by_id["top_k"], by_id["metric"]) == (True, 10, "METRIC_CONTAINMENT")
    assert [m["id"] for m in by_text["matches"]] == ["story", "story-copy"] and by_text["top_k"] == 2
    assert by_text["metric"] == "METRIC_JACCARD" and by_text["threshold"] == 0.3
    assert by_sketch["matches"] == by_id["matches"]
    assert node[14]["code"] == "NOT_FOUND" and "nowhere" in node[14]["details"]


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


def test_the_python_client_reads_the_same_search(two_servers):
    """find_similar by id and by document against Node's FindSimilar of the same queries."""
    _require_node_modules()
    python_server, node_server = two_servers
    blog = "From a blog. " + _documents()["story-cut"]
    with NearDupClient(python_server.target) as client:
        answers = [client.find_similar("story-cut", threshold=0.3),
                   client.find_similar(document=Document("", text=blog), top_k=1, metric="jaccard")]
    node = _node_answers(node_server.target, [
        {"method": "FindSimilar", "request": {"id": "story-cut", "threshold": 0.3}},
        {"method": "FindSimilar", "request": {"document": {"text": blog}, "top_k": 1, "metric": "METRIC_JACCARD"}}])
    for answer, theirs in zip(answers, (n["response"] for n in node)):
        assert [(m.id, m.similarity) for m in answer.matches] == [(m["id"], m["similarity"])
                                                                  for m in theirs["matches"]]
        assert (answer.exact, answer.threshold, answer.top_k) == (theirs["exact"], theirs["threshold"],
                                                                  theirs["top_k"])
        assert theirs["metric"] == f"METRIC_{answer.metric.upper()}"
    assert [m.id for m in answers[0].matches] == ["story", "story-copy"] and len(answers[1].matches) == 1


def test_the_python_client_reads_the_same_stream(two_servers):
    """dedup_stream (tags 0, 1, ...; one set of parameters) against a Node stream of the same requests."""
    _require_node_modules()
    python_server, node_server = two_servers
    result_sets = [["story-copy", "other", "story", "nowhere-else"], ["story", ""], ["story-cut", "other", "story"]]
    with NearDupClient(python_server.target) as client:
        answers = list(client.dedup_stream(result_sets, threshold=0.8, grouping="components"))
    requests = [{"ids": ids, "threshold": 0.8, "grouping": "GROUPING_COMPONENTS", "tag": str(tag)}
                for tag, ids in enumerate(result_sets)]
    (node,) = _node_answers(node_server.target, [{"method": "DedupStream", "requests": requests}])
    assert "code" not in node and [a["tag"] for a in node["responses"]] == ["0", "1", "2"]
    for answer, theirs in zip(answers, node["responses"]):
        if theirs["error"] is not None:
            assert isinstance(answer, NearDupClientError)
            assert (answer.code.value[0], answer.details) == (theirs["error"]["code"], theirs["error"]["message"])
            continue
        assert list(answer.duplicate_of) == theirs["duplicate_of"] and list(answer.group) == theirs["group"]
        assert list(answer.similarity) == theirs["similarity"]
        assert list(answer.missing_positions) == theirs["missing"] and answer.cached == theirs["cached"]
        assert answer.grouping == "components" and theirs["grouping"] == "GROUPING_COMPONENTS"
    assert [type(a).__name__ for a in answers] == ["DedupResult", "NearDupClientError", "DedupResult"]
    assert answers[1].code == grpc.StatusCode.INVALID_ARGUMENT


def test_buf_lint_passes_on_the_proto():
    _require_node_modules()
    done = subprocess.run([str(NODE_MODULES / ".bin" / "buf"), "lint"], cwd=ROOT / "proto", capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
