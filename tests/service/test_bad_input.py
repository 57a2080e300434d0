"""The bad-input table: every case gets its status code (RPCs) or its one-line message and exit code (CLI),
and a good request right after it still gets the right answer. The cases already in test_service.py
(threshold -1/2/NaN, unknown metric or grouping, empty id, ids and documents together, odd-length and
descending sketches, too many values, 10,000 ids, a 600-byte id, a config mismatch, garbage bytes, a message
over a lowered limit, a deadline that expires in the server, a missing store) are not repeated here.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import grpc
import lmdb
import pytest

from neardup.core.encoding import encode_sketch
from neardup.runtime.params import DEFAULT_MAX_RESULT_SET, DEFAULT_MAX_TEXT_BYTES
from neardup_client import cli as client_cli
from neardup_client.cli_framework import EXIT_FAILED, EXIT_USAGE
from neardup_client.v1 import neardup_pb2 as pb
from server_process import free_port, write_jsonl
from textgen import article, text

OK = grpc.StatusCode.OK
INVALID = grpc.StatusCode.INVALID_ARGUMENT
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED
TEXT = text(article(11))
SKETCH, OTHER_SKETCH = encode_sketch(range(100, 108)), encode_sketch(range(200, 208))
RESPONSES = {"Dedup": pb.DedupResponse, "Upsert": pb.UpsertResponse, "Delete": pb.DeleteResponse,
             "Info": pb.InfoResponse}


def corpus() -> dict[str, str]:
    """The texts of the module's store (conftest.py's `store`, which the `server` serves)."""
    first = text(article(1))
    return {"a": first, "b": text(article(2)), "a-copy": "Breaking. " + first}


@pytest.fixture(scope="module")
def channel(server):
    """A bare channel that sends what NearDupClient would refuse to build: raw bytes, 50 MB, huge metadata."""
    with grpc.insecure_channel(server.target, options=[("grpc.max_send_message_length", 256 * 2**20)]) as opened:
        yield opened


def call(channel, method: str, request, **kwargs) -> tuple[grpc.StatusCode, object]:
    body = request if isinstance(request, bytes) else request.SerializeToString()
    try:
        answer = channel.unary_unary(f"/neardup.v1.NearDup/{method}")(body, timeout=kwargs.pop("timeout", 30), **kwargs)
    except grpc.RpcError as error:
        assert error.details(), "every refusal says why"
        return error.code(), None
    return OK, RESPONSES[method].FromString(answer) if method in RESPONSES else answer


def stored(channel, *ids: str) -> list[bool]:
    _, answer = call(channel, "Dedup", pb.DedupRequest(ids=ids))
    return [position not in answer.missing for position in range(len(ids))]


def doc(doc_id: str, **content) -> pb.Document:
    return pb.Document(id=doc_id, **content)


def dedup(*documents: pb.Document, **fields) -> pb.DedupRequest:
    return pb.DedupRequest(documents=documents, **fields)


def upsert(*documents: pb.Document, **fields) -> pb.UpsertRequest:
    return pb.UpsertRequest(documents=documents, **fields)


def other_k_config(channel) -> pb.SketchConfig:
    _, info = call(channel, "Info", pb.InfoRequest())
    config = pb.SketchConfig()
    config.CopyFrom(info.sketch_config)
    config.k += 1
    return config


# (name, method, request or a function of the channel giving it, call options, expected code,
#  check(channel, answer) that must hold afterwards: the answer of an OK call, and what was or was not written)
RPC_CASES = [
    ("dedup: empty result set", "Dedup", pb.DedupRequest(), {}, OK,
     lambda ch, a: (list(a.duplicate_of), list(a.missing)) == ([], [])),
    ("dedup: empty result set with parameters", "Dedup", pb.DedupRequest(threshold=0.9, metric=pb.METRIC_JACCARD), {}, OK,
     lambda ch, a: list(a.group) == [] and a.metric == pb.METRIC_JACCARD),
    ("dedup: the same id twice is a duplicate of itself", "Dedup", pb.DedupRequest(ids=["a", "b", "a"]), {}, OK,
     lambda ch, a: list(a.duplicate_of) == [-1, -1, 0] and a.similarity[2] == 1.0),
    ("dedup: the same document twice", "Dedup", dedup(doc("x", text=TEXT), doc("x", text=TEXT)), {}, OK,
     lambda ch, a: list(a.duplicate_of) == [-1, 0]),
    ("dedup: 1 MB id", "Dedup", pb.DedupRequest(ids=["x" * 2**20]), {}, INVALID, None),
    ("dedup: id of invalid UTF-8 on the wire", "Dedup", b"\x0a\x02\xff\xfe", {}, INVALID, None),
    ("dedup: sketch with a repeated value", "Dedup", dedup(doc("x", sketch=encode_sketch([1, 1, 2]))), {}, INVALID,
     None),
    ("dedup: 50 MB text, over the 16 MB message limit", "Dedup", dedup(doc("x", text="word " * (10 * 2**20))), {},
     EXHAUSTED, None),
    ("dedup: 14 MB text, under the message limit but over the 10 MB text limit", "Dedup",
     dedup(doc("x", text="word " * (14 * 2**20 // 5))), {}, EXHAUSTED, None),
    ("dedup: gzip bomb, 40 MB of one letter", "Dedup", dedup(doc("x", text="a" * (40 * 2**20))),
     {"compression": grpc.Compression.Gzip}, EXHAUSTED, None),
    ("dedup: 100 kB of metadata", "Dedup", pb.DedupRequest(ids=["a"]), {"metadata": (("x-junk", "j" * 100_000),)},
     EXHAUSTED, None),
    ("dedup: deadline already expired", "Dedup", pb.DedupRequest(ids=["a"]), {"timeout": -1},
     grpc.StatusCode.DEADLINE_EXCEEDED, None),
    ("dedup: threshold +inf", "Dedup", pb.DedupRequest(ids=["a"], threshold=float("inf")), {}, INVALID, None),
    ("dedup: metric -1", "Dedup", pb.DedupRequest(ids=["a"], metric=-1), {}, INVALID, None),
    ("dedup: unknown language of a text", "Dedup", dedup(doc("x", text=TEXT, lang="tlh")), {}, INVALID, None),
    ("dedup: sketch_config with only k set", "Dedup",
     dedup(doc("x", sketch=SKETCH), sketch_config=pb.SketchConfig(k=64)), {}, INVALID, None),
    ("dedup: 2,000 ids, exactly the limit", "Dedup", pb.DedupRequest(ids=[f"n{i}" for i in range(2000)]), {}, OK,
     lambda ch, a: len(a.missing) == 2000),
    ("dedup: 2,001 ids", "Dedup", pb.DedupRequest(ids=[f"n{i}" for i in range(2001)]), {}, EXHAUSTED, None),
    ("dedup: empty text and control characters", "Dedup",
     dedup(doc("e", text=""), doc("c", text="\0\x01\x7f\u200b\ufeff"), doc("s", sketch=b"")), {}, OK,
     lambda ch, a: list(a.duplicate_of) == [-1, -1, -1] and list(a.missing) == []),
    ("dedup: a field this server does not know (a newer client)", "Dedup",
     pb.DedupRequest(ids=["a", "a-copy"], threshold=0.5).SerializeToString() + b"\xf8\x06\x01", {}, OK,
     lambda ch, a: list(a.duplicate_of) == [-1, 0]),
    ("dedup: a message cut in the middle", "Dedup", dedup(doc("x", text=TEXT)).SerializeToString()[:40], {}, INVALID,
     None),
    ("upsert: a document with neither text nor sketch", "Upsert", upsert(doc("new-1", text=TEXT), doc("new-2")), {},
     INVALID, lambda ch, a: stored(ch, "new-1", "new-2") == [False, False]),
    ("upsert: empty id", "Upsert", upsert(doc("new-3", text=TEXT), doc("", text=TEXT)), {}, INVALID,
     lambda ch, a: stored(ch, "new-3") == [False]),
    ("upsert: id of 512 UTF-8 bytes", "Upsert", upsert(doc("é" * 256, text=TEXT)), {}, INVALID, None),
    ("upsert: a sketch of odd length in the batch", "Upsert",
     upsert(doc("new-4", sketch=SKETCH), doc("new-5", sketch=b"\1\2\3")), {}, INVALID,
     lambda ch, a: stored(ch, "new-4", "new-5") == [False, False]),
    ("upsert: 2,001 documents", "Upsert", upsert(*(doc(f"n{i}", sketch=SKETCH) for i in range(2001))), {}, EXHAUSTED,
     lambda ch, a: stored(ch, "n0") == [False]),
    ("upsert: sketch_config of another K", "Upsert",
     lambda ch: upsert(doc("new-6", sketch=SKETCH), sketch_config=other_k_config(ch)), {},
     grpc.StatusCode.FAILED_PRECONDITION, lambda ch, a: stored(ch, "new-6") == [False]),
    ("upsert: empty batch", "Upsert", upsert(), {}, OK, lambda ch, a: a.upserted == 0),
    ("upsert: the same id twice, the last wins", "Upsert",
     upsert(doc("twice", sketch=SKETCH), doc("twice", sketch=OTHER_SKETCH)), {}, OK,
     lambda ch, a: list(call(ch, "Dedup", dedup(doc("probe", sketch=OTHER_SKETCH), doc("twice")))[1].similarity)
     == [0.0, 1.0]),
    ("upsert: id with NUL, newline and emoji", "Upsert", upsert(doc("nul\0new\nline 📰", text=TEXT)), {}, OK,
     lambda ch, a: stored(ch, "nul\0new\nline 📰") == [True]),
    ("delete: empty id", "Delete", pb.DeleteRequest(ids=["b", ""]), {}, INVALID,
     lambda ch, a: stored(ch, "b") == [True]),
    ("delete: 1 MB id", "Delete", pb.DeleteRequest(ids=["b", "x" * 2**20]), {}, INVALID,
     lambda ch, a: stored(ch, "b") == [True]),
    ("delete: 2,001 ids", "Delete", pb.DeleteRequest(ids=["b", *(f"n{i}" for i in range(2000))]), {}, EXHAUSTED,
     lambda ch, a: stored(ch, "b") == [True]),
    ("delete: ids never stored", "Delete", pb.DeleteRequest(ids=["never-1", "never-2"]), {}, OK,
     lambda ch, a: a.deleted == 0),
    ("info: garbage bytes", "Info", b"\xff\xff", {}, INVALID, None),
    ("upsert: garbage bytes", "Upsert", b"\x0a\xff\x01", {}, INVALID, None),
    ("an unknown method", "Frobnicate", b"", {}, grpc.StatusCode.UNIMPLEMENTED, None),
]


@pytest.mark.parametrize("name, method, request_, options, code, check", RPC_CASES, ids=[c[0] for c in RPC_CASES])
def test_bad_request_gets_its_status_and_a_good_request_still_succeeds(server, channel, name, method, request_,
                                                                       options, code, check):
    got, answer = call(channel, method, request_(channel) if callable(request_) else request_, **options)
    assert got == code
    if check is not None:
        assert check(channel, answer)
    _, good = call(channel, "Dedup", pb.DedupRequest(ids=["a", "b", "a-copy"], threshold=0.5))
    assert list(good.duplicate_of) == [-1, -1, 0]
    assert "internal error" not in server.log()


# --- the command line -------------------------------------------------------------------------------------------

def copy_store(store: Path, path: Path) -> Path:
    shutil.copytree(store, path)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory, store) -> dict[str, Path]:
    """Bad inputs on disk: JSON Lines result sets and stores that are not usable."""
    root = tmp_path_factory.mktemp("bad-files")
    good = json.dumps({"id": "a"}).encode() + b"\n"
    lines = {"utf8": b'{"id": "x", "text": "caf\xe9"}', "json": b'{"id": "x", "text": ', "array": b'["a", "b"]',
             "numeric": b'{"id": 7}', "surrogate": b'{"id": "x", "text": "half \\ud83d emoji"}'}
    paths = {}
    for name, line in lines.items():
        paths[name] = root / f"{name}.jsonl"
        paths[name].write_bytes(good + line + b"\n")
    paths["huge"] = write_jsonl(root / "huge.jsonl", [{"id": "huge", "text": "word " * (17 * 2**20 // 5)}])
    paths["corpus"] = write_jsonl(root / "corpus.jsonl", [{"id": "z", "text": TEXT}])
    paths["corrupt"] = copy_store(store, root / "corrupt")
    (paths["corrupt"] / "data.mdb").write_bytes(os.urandom(64 * 1024))
    paths["v99"] = copy_store(store, root / "v99")
    with lmdb.open(str(paths["v99"]), max_dbs=3) as env, env.begin(write=True, db=env.open_db(b"meta")) as txn:
        txn.put(b"format_version", b"99")
    paths["missing"] = root / "missing.jsonl"
    paths["dead"] = f"127.0.0.1:{free_port()}"  # nothing listens there
    return paths


@pytest.fixture(scope="module")
def readonly_store(tmp_path_factory, store):
    """A store nobody may write. Root ignores permission bits, so as root the files are made immutable
    (chattr +i, which binds root too); where the file system has no such attribute the cases are skipped."""
    path = copy_store(store, tmp_path_factory.mktemp("readonly") / "store")
    targets = [str(path / "data.mdb"), str(path / "lock.mdb"), str(path)]
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i", *targets], capture_output=True, text=True) \
            if shutil.which("chattr") else None
        if done is None or done.returncode != 0:
            pytest.skip(f"running as root and chattr +i is not available here ({done and done.stderr.strip()})")
        try:
            yield path
        finally:
            subprocess.run(["chattr", "-i", *targets], check=True)
    else:
        for target, mode in zip(targets, (0o444, 0o444, 0o555)):
            os.chmod(target, mode)
        try:
            yield path
        finally:
            for target, mode in zip(targets, (0o644, 0o644, 0o755)):
                os.chmod(target, mode)


# (name, argv with {placeholders} from the files fixture, exit code, what the one line says)
CLI_CASES = [
    ("dedup: no server listening", ["dedup", "--target", "{dead}", "--connect-timeout", "1", "a"], EXIT_FAILED,
     "UNAVAILABLE"),
    ("info: no server listening", ["info", "--target", "{dead}", "--connect-timeout", "1"], EXIT_FAILED, "UNAVAILABLE"),
    ("dedup: a target that is no address", ["dedup", "--target", "no target:::", "a"], EXIT_USAGE,
     "argument --target: give HOST:PORT"),
    ("dedup: threshold NaN", ["dedup", "--target", "{server}", "--threshold", "nan", "a"], EXIT_USAGE,
     "argument --threshold: must be in [0, 1], got nan"),
    ("dedup: deadline already expired", ["dedup", "--target", "{server}", "--timeout", "-1", "a"], EXIT_USAGE,
     "argument --timeout: must be more than 0"),
    ("dedup: a 600-byte id", ["dedup", "--target", "{server}", "x" * 600], EXIT_FAILED,
     "INVALID_ARGUMENT: id longer than"),
    ("dedup: undecodable bytes in an ID argument", ["dedup", "--target", "{server}", "ok", "\udcff"], EXIT_USAGE,
     "lone surrogate"),
    ("dedup: neither IDs nor --jsonl", ["dedup", "--target", "{server}"], EXIT_USAGE, "give either IDs or --jsonl"),
    ("dedup: threshold not a number", ["dedup", "--target", "{server}", "--threshold", "x", "a"], EXIT_USAGE,
     "invalid float value"),
    ("an unknown command", ["frobnicate"], EXIT_USAGE, "invalid choice"),
    ("dedup --jsonl: no such file", ["dedup", "--target", "{server}", "--jsonl", "{missing}"], EXIT_FAILED,
     "No such file or directory"),
    ("dedup --jsonl: invalid UTF-8 in a line", ["dedup", "--target", "{server}", "--jsonl", "{utf8}"], EXIT_FAILED,
     "utf8.jsonl:2: invalid UTF-8 at byte 24"),
    ("dedup --jsonl: a line that is not JSON", ["dedup", "--target", "{server}", "--jsonl", "{json}"], EXIT_FAILED,
     "json.jsonl:2: bad JSON"),
    ("dedup --jsonl: a JSON array line", ["dedup", "--target", "{server}", "--jsonl", "{array}"], EXIT_FAILED,
     "array.jsonl:2: not a JSON object"),
    ("dedup --jsonl: a numeric id", ["dedup", "--target", "{server}", "--jsonl", "{numeric}"], EXIT_FAILED,
     "numeric.jsonl:2: not a JSON object with a string id"),
    ("dedup --jsonl: half a surrogate pair", ["dedup", "--target", "{server}", "--jsonl", "{surrogate}"],
     EXIT_FAILED, "surrogate.jsonl:2: 'half \\ud83d emoji' is not valid Unicode"),
    ("dedup --jsonl: 17 MB text, over the client's message limit", ["dedup", "--target", "{server}", "--jsonl",
                                                                      "{huge}"], EXIT_FAILED, "RESOURCE_EXHAUSTED"),
    ("index: into a corrupt store", ["index", "{corpus}", "--store", "{corrupt}"], EXIT_FAILED, "is damaged"),
    ("index: into a store of format version 99", ["index", "{corpus}", "--store", "{v99}"], EXIT_FAILED,
     "format version 99"),
    ("index: into a read-only store", ["index", "{corpus}", "--store", "{readonly}"], EXIT_FAILED,
     "cannot open store"),
    ("serve: a read-only store", ["serve", "--store", "{readonly}", "--port", "0"], EXIT_FAILED,
     "cannot open store"),
    ("serve: a store of format version 99", ["serve", "--store", "{v99}", "--port", "0"], EXIT_FAILED,
     "format version 99"),
    ("serve: a file as the store", ["serve", "--store", "{corpus}", "--port", "0"], EXIT_FAILED, "no data.mdb"),
    ("serve: port 70000", ["serve", "--store", "{store}", "--port", "70000"], EXIT_USAGE, "0..65535"),
    ("serve: no workers", ["serve", "--store", "{store}", "--workers", "0"], EXIT_USAGE, "at least 1"),
    ("serve: two workers on port 0", ["serve", "--store", "{store}", "--workers", "2", "--port", "0"], EXIT_USAGE,
     "fixed --port"),
    ("serve: a 10-byte message limit", ["serve", "--store", "{store}", "--max-message-bytes", "10"], EXIT_USAGE,
     ">= 1024"),
    ("serve: a negative drain", ["serve", "--store", "{store}", "--drain", "-1"], EXIT_USAGE, "--drain must be >= 0"),
]


@pytest.mark.parametrize("name, argv, code, message", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_bad_command_is_one_line_and_a_good_command_still_succeeds(request, neardup, server, store, files, name,
                                                                   argv, code, message):
    values = {**files, "server": server.target, "store": store}
    if any("{readonly}" in arg for arg in argv):
        values["readonly"] = request.getfixturevalue("readonly_store")
    done = neardup(*(arg.format(**values) for arg in argv))
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith("neardup: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr
    good = neardup("dedup", "--target", server.target, "--threshold", "0.5", "a", "a-copy")
    assert good.returncode == 0 and json.loads(good.stdout)["keep"] == ["a"], good.stderr


@pytest.mark.parametrize("argv, code, message", [
    (["dedup", "--target", "{server}", "--threshold", "x", "a"], EXIT_USAGE, "invalid float value"),
    (["frobnicate"], EXIT_USAGE, "invalid choice"),
    (["dedup", "--target", "{dead}", "--connect-timeout", "1", "a"], EXIT_FAILED, "UNAVAILABLE"),
    (["dedup", "--target", "{server}", "--threshold", "2", "a"], EXIT_USAGE, "argument --threshold: must be in [0, 1]"),
])
def test_the_standalone_client_reports_errors_as_neardup_does(neardup, server, files, argv, code, message):
    """`neardup-client` (the client package alone, for a frontend host) says what went wrong the same way."""
    done = neardup(*(arg.format(server=server.target, **files) for arg in argv), entry=client_cli.main)
    assert (done.returncode, done.stdout) == (code, "")
    assert done.stderr.startswith("neardup: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert message in done.stderr


def _detail(error: grpc.RpcError):
    """The one google.rpc detail of a refusal (BadRequest or QuotaFailure), unpacked."""
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status

    status = rpc_status.from_call(error)
    assert status is not None and status.message == error.details() and len(status.details) == 1
    for kind in (error_details_pb2.BadRequest, error_details_pb2.QuotaFailure):
        if status.details[0].Is(kind.DESCRIPTOR):
            detail = kind()
            status.details[0].Unpack(detail)
            return detail
    raise AssertionError(f"unexpected detail {status.details[0].type_url}")


@pytest.mark.parametrize("method, request_message, field", [
    ("Dedup", pb.DedupRequest(ids=["a"], threshold=1.5), "threshold"),
    ("Dedup", pb.DedupRequest(ids=["a"], metric=99), "metric"),
    ("Dedup", pb.DedupRequest(ids=["a", "b", ""]), "ids[2]"),
    ("Dedup", dedup(doc("x", text="one"), doc("", text="two")), "documents[1].id"),
    ("Dedup", dedup(doc("x", text="one"), doc("y", text="two", lang="klingon")), "documents[1].lang"),
    ("Dedup", dedup(doc("x", sketch=b"\x01\x02\x03")), "documents[0].sketch"),
    ("Dedup", pb.DedupRequest(ids=["a"], documents=[doc("x", text="one")]), "documents"),
    ("Upsert", pb.UpsertRequest(documents=[doc("x", text="one"), doc("y")]), "documents[1]"),
    ("FindSimilar", pb.FindSimilarRequest(), "id"),
    ("FindSimilar", pb.FindSimilarRequest(id="a", threshold=-1.0), "threshold"),
])
def test_invalid_arguments_name_their_field_as_a_bad_request_detail(channel, method, request_message, field):
    with pytest.raises(grpc.RpcError) as refused:
        channel.unary_unary(f"/neardup.v1.NearDup/{method}")(request_message.SerializeToString(), timeout=30)
    assert refused.value.code() == INVALID
    detail = _detail(refused.value)
    assert [violation.field for violation in detail.field_violations] == [field]
    assert detail.field_violations[0].description == refused.value.details()


def test_limits_name_what_is_limited_and_the_limit_as_a_quota_failure_detail(channel):
    too_many = pb.DedupRequest(ids=[f"id-{n}" for n in range(DEFAULT_MAX_RESULT_SET + 1)])
    too_long = dedup(doc("x", text="one"), doc("y", text="x" * (DEFAULT_MAX_TEXT_BYTES + 1)))
    top_k = pb.FindSimilarRequest(id="a", top_k=DEFAULT_MAX_RESULT_SET + 1)
    for method, request_message, subject, limit in (("Dedup", too_many, "ids", DEFAULT_MAX_RESULT_SET),
                                                    ("Dedup", too_long, "documents[1].text", DEFAULT_MAX_TEXT_BYTES),
                                                    ("FindSimilar", top_k, "top_k", DEFAULT_MAX_RESULT_SET)):
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary(f"/neardup.v1.NearDup/{method}")(request_message.SerializeToString(), timeout=30)
        assert refused.value.code() == EXHAUSTED, subject
        [violation] = _detail(refused.value).violations
        assert (violation.subject, violation.quota_value) == (subject, limit)
        assert violation.description == refused.value.details()


def test_an_error_with_no_field_to_name_carries_no_detail(channel):
    with pytest.raises(grpc.RpcError) as refused:
        channel.unary_unary("/neardup.v1.NearDup/Dedup")(b"\xff\xff\xff", timeout=30)
    from grpc_status import rpc_status
    assert refused.value.code() == INVALID and rpc_status.from_call(refused.value) is None
