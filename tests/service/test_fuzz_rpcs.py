# Whole on purpose: every RPC is fuzzed on the same module-scoped servers (fuzzed_server), started once.
"""Every RPC of neardup.v1 fuzzed through real `neardup serve` processes (two workers each, over loopback), on both
backends (LMDB, Redis) and both search indexes (`--search-index store` and `memory`) of a bottom-K store, on items
stores (documents with fields) of both backends and on a simhash store (the memory index serves bottom-K stores
only): Dedup, DedupStream, Upsert, Delete, Info, FindSimilar and Explain, with well-formed and malformed messages
(hypothesis) and with raw request bytes that are not protobuf at all, or nearly (truncated varints, wrong wire types,
invalid UTF-8 in strings, fields of no message, groups).

The property: every answer is a correct answer or a named status (INVALID_ARGUMENT, RESOURCE_EXHAUSTED,
FAILED_PRECONDITION, NOT_FOUND), never UNKNOWN or INTERNAL, and no worker restarts. Bytes the protobuf runtime cannot
decode are INVALID_ARGUMENT, whichever reader (the compiled one of Dedup's plain requests included) saw them first.
What is correct is checked where it is cheap, against a model of what the store holds (the ids the fuzz wrote or
deleted, each write checked at once to be all or nothing): Dedup's missing positions, a document being its own
duplicate, FindSimilar finding a stored text and never a deleted or the queried article, Explain deciding as Dedup
does, Info counting the articles, each DedupStream answer being the unary call's. After each test the server's
processes are those it started with, its metrics count no UNKNOWN or INTERNAL call and it still answers Info.

The in-process fuzzing of the decoders is test_fuzz.py; bad inputs one by one, test_bad_input.py.
"""
from __future__ import annotations

import contextlib
import math
import struct
from dataclasses import dataclass

import grpc
import pytest
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from benchmarks.lib.fuzz import FUZZ, mostly, mutated, sketches
from server_process import Server, free_port, sketch_store
from neardup.core.fields import FieldSpec
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import ItemSketcher, Sketcher
from neardup_client.messages import WORKER_METADATA
from neardup_client.v1 import neardup_pb2 as pb
from observe import children, new_connection, rpc_counts, scrape
from textgen import ITEMS, SCHEMA, article, text

OK = grpc.StatusCode.OK
INVALID = grpc.StatusCode.INVALID_ARGUMENT
#: The statuses a request may end with: what it asked for was refused, and the status says why.
NAMED = {OK, INVALID, grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.FAILED_PRECONDITION,
         grpc.StatusCode.NOT_FOUND}
MAX_RESULT_SET = 40  # small, so that lists cross it
MAX_ID_BYTES = 511
REQUESTS = {"Dedup": pb.DedupRequest, "Upsert": pb.UpsertRequest, "Delete": pb.DeleteRequest,
            "Info": pb.InfoRequest, "FindSimilar": pb.FindSimilarRequest, "Explain": pb.ExplainRequest}
#: Every RPC of the contract is fuzzed here: a method the proto adds fails this until it is.
assert set(REQUESTS) | {"DedupStream"} == set(pb.DESCRIPTOR.services_by_name["NearDup"].methods_by_name)


# --- the stores: articles pinned for the checks of answers, and ids the fuzz writes -----------------------------

PINNED_TEXTS = {f"pinned-{n}": text(article(300 + n)) for n in range(4)}
PINNED_TEXTS["pinned-copy"] = PINNED_TEXTS["pinned-0"]
PINNED_ITEMS = {f"pinned-{name}": fields for name, fields in ITEMS.items()}
PINNED_ITEMS["pinned-copy"] = ITEMS["ad-1"]
#: What Upsert and Delete draw their ids from (and random ones); they never write a pinned article.
WRITE_IDS = [f"w{n}" for n in range(8)]
ITEMS_CONFIG = SketchConfig(kind="items", fields=tuple(FieldSpec.from_dict(spec) for spec in SCHEMA["fields"]),
                            rules=tuple(map(tuple, SCHEMA["rules"])))
CONFIGS = {"bottomk": SketchConfig(), "simhash": SketchConfig(kind="simhash"), "items": ITEMS_CONFIG}


def field_values(fields: dict) -> dict[str, pb.FieldValue]:
    """An item's fields (textgen.ITEMS) as the message sends them: strings as text, places as locations."""
    return {name: pb.FieldValue(text=value) if isinstance(value, str) else pb.FieldValue(location=pb.GeoPoint(**value))
            for name, value in fields.items()}


@dataclass
class Fuzzed:
    """A running server, what its store holds (the model the answers are checked against), and how to call it."""

    server: Server
    backend: str  # "lmdb" or "redis"
    kind: str  # "bottomk", "simhash" or "items"
    metrics_port: int
    workers: list[int]
    channels: list[grpc.Channel]
    stored: set[str]
    #: Each pinned article's content: its text (bottom-K) or its fields (items).
    pinned: dict
    #: The store's generation after the last write that succeeded: no failed write, nor any read, moves it.
    generation: int = 0
    calls: int = 0

    def __post_init__(self) -> None:
        #: The pinned articles no write has touched (the fuzz writes other ids, but raw bytes may say anything).
        self.intact = set(self.pinned)
        self.pinned_keys = {_key(content) for content in self.pinned.values()}

    def channel(self) -> grpc.Channel:
        """The calls alternate between the workers (one connection to each)."""
        self.calls += 1
        return self.channels[self.calls % len(self.channels)]

    def call(self, method: str, body: bytes, compression=None) -> tuple[grpc.StatusCode, bytes | None, str]:
        try:
            answer = self.channel().unary_unary(f"/neardup.v1.NearDup/{method}")(body, timeout=60,
                                                                                 compression=compression)
        except grpc.RpcError as error:
            return error.code(), None, error.details()
        return OK, answer, ""

    def assert_unharmed(self) -> None:
        """The server and its workers are the processes it started with, it counted no call as UNKNOWN or INTERNAL
        and logged no internal error, and it answers Info with what the store holds."""
        assert self.server.process.poll() is None, self.server.log()
        assert children(self.server.process.pid) == self.workers, self.server.log()
        assert [worker_of(channel) for channel in self.channels] == sorted(self.workers), "each connection's worker"
        counts = rpc_counts(scrape(self.metrics_port))
        assert counts, "the metrics count the calls"
        assert not {key: n for key, n in counts.items() if key[1] in ("UNKNOWN", "INTERNAL")}, counts
        log = self.server.log()
        assert "internal error" not in log and "restarting" not in log and "Traceback" not in log, log
        code, answer, details = self.call("Info", b"")
        assert code == OK, details
        articles, expected = pb.InfoResponse.FromString(answer).articles, len(self.stored)
        assert articles == expected


def worker_of(channel: grpc.Channel) -> int:
    """The process id of the worker that serves a connection (Info's trailing metadata says it)."""
    _, call = channel.unary_unary("/neardup.v1.NearDup/Info").with_call(b"", timeout=30)
    return next(int(value) for key, value in call.trailing_metadata() if key == WORKER_METADATA)


def one_connection_per_worker(target: str, connections: contextlib.ExitStack) -> list[grpc.Channel]:
    """Connections served by the two workers, in the order of their process ids."""
    per_worker = {}
    for _ in range(64):
        channel = connections.enter_context(new_connection(target))
        per_worker.setdefault(worker_of(channel), channel)
        if len(per_worker) == 2:
            return [per_worker[pid] for pid in sorted(per_worker)]
    raise AssertionError("every connection went to the same worker")


SERVERS = [
    pytest.param(("lmdb", "bottomk", "store"), id="lmdb-store"),
    pytest.param(("lmdb", "bottomk", "memory"), id="lmdb-memory"),
    pytest.param(("redis", "bottomk", "store"), id="redis-store", marks=pytest.mark.redis),
    pytest.param(("redis", "bottomk", "memory"), id="redis-memory", marks=pytest.mark.redis),
    # the memory index serves bottom-K stores only (`serve` refuses another at start)
    pytest.param(("lmdb", "simhash", "store"), id="lmdb-simhash"),
    pytest.param(("lmdb", "items", "store"), id="lmdb-items"),
    pytest.param(("redis", "items", "store"), id="redis-items", marks=pytest.mark.redis),
]


@pytest.fixture(scope="module", params=SERVERS)
def fuzzed_server(request, tmp_path_factory):
    """`neardup serve --workers 2` with metrics, on a store of the pinned articles of its kind; shared by the tests
    (and their examples) of one configuration."""
    backend, kind, search_index = request.param
    root = tmp_path_factory.mktemp(f"fuzz-{backend}-{kind}-{search_index}")
    location = (request.getfixturevalue("redis_server").url(f"fuzz-{kind}-{search_index}") if backend == "redis"
                else root / "store")
    config = CONFIGS[kind]
    sketcher, pinned = (ItemSketcher(config), PINNED_ITEMS) if kind == "items" else (Sketcher(config), PINNED_TEXTS)
    sketch_store(location, {doc_id: sketcher.sketch(content, None) for doc_id, content in pinned.items()}, config)
    metrics_port = free_port()
    server = Server(location, "--search-index", search_index, "--max-result-set", str(MAX_RESULT_SET),
                    "--metrics-port", str(metrics_port), workers=2, log_dir=root)
    with server, contextlib.ExitStack() as connections:
        workers, channels = children(server.process.pid), one_connection_per_worker(server.target, connections)
        assert [worker_of(channel) for channel in channels] == sorted(workers)
        target = Fuzzed(server, backend, kind, metrics_port, workers, channels, set(pinned), pinned)
        target.generation = pb.InfoResponse.FromString(target.call("Info", b"")[1]).generation
        yield target
    assert server.process.returncode == 0 and "internal error" not in server.log(), server.log()


# --- strategies: messages, half of them sane, the others with fields out of line ----------------------------------

#: A request fails at its first bad field. So that fuzzed ones get past the checks to an answer, half the messages
#: are sane (every field valid for the store, though an id need not be stored), and in the others each field is
#: valid three times in four and a list holds at most one bad element (or too many good ones).
SANE_METRICS = {"bottomk": [0, pb.METRIC_CONTAINMENT, pb.METRIC_JACCARD, pb.METRIC_MUTUAL],
                "simhash": [0, pb.METRIC_HAMMING], "items": [0, pb.METRIC_FIELDS]}
#: A simhash sketch: a 64-bit fingerprint, or empty (a text without shingles).
fingerprints = st.one_of(st.binary(min_size=8, max_size=8), st.just(b""))


def either(sane: bool, valid: st.SearchStrategy, invalid: st.SearchStrategy) -> st.SearchStrategy:
    """The valid values in a sane message; in another, valid three times in four."""
    return valid if sane else mostly(valid, invalid)


@st.composite
def lists_of(draw, sane: bool, valid: st.SearchStrategy, invalid: st.SearchStrategy, max_size: int) -> list:
    """Valid elements; in a message that is not sane, perhaps one invalid among them, or more than the server
    takes."""
    if not sane and draw(st.integers(0, 7)) == 0:
        return draw(st.lists(valid, min_size=MAX_RESULT_SET + 1, max_size=MAX_RESULT_SET + 3))
    elements = draw(st.lists(valid, max_size=max_size))
    if not sane and draw(st.booleans()):
        elements.insert(draw(st.integers(0, len(elements))), draw(invalid))
    return elements


#: Ids of MAX_ID_BYTES UTF-8 bytes, and of one more.
LONGEST_IDS = ["x" * MAX_ID_BYTES, "\u00e9" * 255 + "x", "\U0001f4f0" * 127 + "abc"]
TOO_LONG_IDS = ["x" * (MAX_ID_BYTES + 1), "\u00e9" * 256, "\U0001f4f0" * 128]
bad_ids = st.one_of(st.sampled_from(["", *TOO_LONG_IDS]), st.text(min_size=128, max_size=520))


def ids(write: bool = False) -> st.SearchStrategy[str]:
    """Valid ids to read (pinned, written or random ones), or to write (never a pinned article's)."""
    known = WRITE_IDS if write else [*PINNED_TEXTS, *PINNED_ITEMS, *WRITE_IDS]
    valid = st.one_of(st.sampled_from(known), st.sampled_from(known), st.text(min_size=1, max_size=12),
                      st.sampled_from(LONGEST_IDS))
    return valid.filter(lambda doc_id: not doc_id.startswith("pinned-")) if write else valid


langs = st.sampled_from(["", "", "", "en", "nl", "none", "english", "auto"])
bad_langs = st.one_of(st.just("tlh"), st.text(max_size=6))
texts = st.one_of(st.sampled_from(list(PINNED_TEXTS.values())), st.text(max_size=300),
                  st.sampled_from(["", "\0\x01\x7f\u200b\ufeff", "\u05e9\u05dc\u05d5\u05dd \U0001f4f0 e\u0301",
                                   "word " * 3000, "Dr. No. 7. \u2029 Ms. X!! ... ?"]))
#: Doubles the messages may carry: in [0, 1], the edges and what is not a threshold at all.
doubles = st.one_of(st.floats(0, 1), st.sampled_from([math.nan, -0.0, 0.0, 1.0, math.inf, -math.inf, 1e308, -1e-300,
                                                      5e-324, 1.0000000000000002, -1.0]), st.floats())
valid_thresholds = st.one_of(st.none(), st.none(), st.floats(0, 1), st.sampled_from([0.0, -0.0, 1.0]))
bad_enums = st.sampled_from([1, 2, 3, 4, 5, 99, -1, 2**31 - 1, -2**31])
top_ks = st.one_of(st.sampled_from([0, 1, 2, 10, MAX_RESULT_SET - 1, MAX_RESULT_SET]), st.integers(0, MAX_RESULT_SET))
bad_top_ks = st.one_of(st.sampled_from([MAX_RESULT_SET + 1, 2**31, 2**32 - 1]), st.integers(0, 2**32 - 1))
tags = st.one_of(st.just(0), st.integers(0, 2**64 - 1))
locations = st.builds(lambda lat, lon: pb.GeoPoint(lat=lat, lon=lon),
                      mostly(st.floats(-90, 90), doubles), mostly(st.floats(-180, 180), doubles))
field_names = [spec["name"] for spec in SCHEMA["fields"]]
#: An item's fields: a pinned item's, or any of the schema's as text (exact fields take text too).
valid_fields = st.one_of(st.sampled_from([field_values(fields) for fields in ITEMS.values()]),
                         st.dictionaries(st.sampled_from([name for name in field_names if name != "location"]),
                                         texts.map(lambda t: pb.FieldValue(text=t)), min_size=1, max_size=4))
bad_fields = st.dictionaries(st.sampled_from(field_names + ["salary", ""]),
                             st.one_of(texts.map(lambda t: pb.FieldValue(text=t)),
                                       st.text(max_size=40).map(lambda t: pb.FieldValue(exact=t)),
                                       locations.map(lambda g: pb.FieldValue(location=g)), st.just(pb.FieldValue())),
                             max_size=6)


def contents(sane: bool, kind: str, stored: bool = True) -> st.SearchStrategy[dict]:
    """A document's content: none (a stored article by its id, unless `stored` is False), a text, a sketch, fields;
    or what the store cannot take: the wrong one, bad values, two of them."""
    inline = ([st.builds(lambda f: {"fields": f}, valid_fields)] if kind == "items" else
              [st.builds(lambda t: {"text": t}, texts),
               st.builds(lambda s: {"sketch": s}, sketches() if kind == "bottomk" else fingerprints)])
    valid = st.one_of(*([st.just({})] if stored else []), *inline)
    invalid = st.one_of(st.just({}), st.builds(lambda t: {"text": t}, texts),
                        st.builds(lambda f: {"fields": f}, bad_fields),
                        st.builds(lambda t, f: {"text": t, "fields": f}, texts, valid_fields),
                        st.builds(lambda s: {"sketch": s}, st.binary(max_size=40)))
    return either(sane, valid, invalid)


def documents(sane: bool, kind: str, doc_ids: st.SearchStrategy | None = None,
              stored: bool = True) -> st.SearchStrategy[pb.Document]:
    return st.builds(lambda doc_id, content, lang: pb.Document(id=doc_id, lang=lang, **content),
                     either(sane, ids(), bad_ids) if doc_ids is None else doc_ids, contents(sane, kind, stored),
                     either(sane, langs, bad_langs))


def sketch_configs(sane: bool, kind: str) -> st.SearchStrategy:
    """Mostly none; else the store's own configuration, or another."""
    from neardup.service.converters import sketch_config_message

    def changed(change: str, value):
        message = sketch_config_message(CONFIGS[kind])
        if change:
            setattr(message, change, value)
        return message

    own = st.builds(changed, st.just(""), st.none())
    other = st.one_of(st.builds(changed, st.just("k"), st.integers(0, 2**32 - 1)),
                      st.builds(changed, st.just("unit"), st.sampled_from(["", "sentence", "word:0", "x"])),
                      st.builds(changed, st.just("kind"),
                                st.sampled_from(["", "bottomk", "items", "simhash", "?"])))
    return either(sane, st.one_of(st.none(), st.none(), own), other)


def _with(message, **optional):
    for name, value in optional.items():
        if value is not None:
            getattr(message, name).CopyFrom(value) if hasattr(value, "DESCRIPTOR") else setattr(message, name, value)
    return message


def _parameters(draw, sane: bool, kind: str) -> dict:
    return {"metric": draw(either(sane, st.sampled_from(SANE_METRICS[kind]), bad_enums)),
            "threshold": draw(either(sane, valid_thresholds, doubles)),
            "sketch_config": draw(sketch_configs(sane, kind))}


@st.composite
def dedup_requests(draw, kind: str) -> pb.DedupRequest:
    sane = draw(st.booleans())
    request = pb.DedupRequest(grouping=draw(either(sane, st.integers(0, 3), bad_enums)), tag=draw(tags))
    choice = draw(st.integers(0, 8 if sane else 9))
    if choice < 4 or choice == 9:  # 9: ids and documents both
        request.ids.extend(draw(lists_of(sane, ids(), bad_ids, 12)))
    if choice >= 4:
        request.documents.extend(draw(lists_of(sane, documents(True, kind), documents(False, kind), 6)))
    if choice in (7, 8) and request.documents:  # a document again: it is its own duplicate
        request.documents.append(request.documents[draw(st.integers(0, len(request.documents) - 1))])
    return _with(request, **_parameters(draw, sane, kind))


@st.composite
def upsert_requests(draw, kind: str) -> pb.UpsertRequest:
    sane = draw(st.booleans())
    docs = draw(lists_of(sane, documents(True, kind, ids(write=True), stored=False),
                         documents(False, kind, either(False, ids(write=True), bad_ids)), 4))
    return _with(pb.UpsertRequest(documents=docs), sketch_config=draw(sketch_configs(sane, kind)))


@st.composite
def delete_requests(draw, kind: str) -> pb.DeleteRequest:
    sane = draw(st.booleans())
    return pb.DeleteRequest(ids=draw(lists_of(sane, ids(write=True), bad_ids, 6)))


@st.composite
def find_similar_requests(draw, kind: str) -> pb.FindSimilarRequest:
    sane = draw(st.booleans())
    request = pb.FindSimilarRequest(top_k=draw(either(sane, top_ks, bad_top_ks)))
    choice = draw(st.integers(0, 4 if sane else 5))  # 5: no query
    if choice < 2:
        request.id = draw(either(sane, ids(), bad_ids))
    elif choice < 5:  # by a document, without an id or naming a stored article
        request.document.CopyFrom(draw(documents(sane, kind, either(sane, st.sampled_from(["", "", "pinned-1"]),
                                                                    bad_ids), stored=False)))
    return _with(request, **_parameters(draw, sane, kind))


@st.composite
def explain_requests(draw, kind: str) -> pb.ExplainRequest:
    sane = draw(st.booleans())
    request = pb.ExplainRequest()
    for side in draw(either(sane, st.just("ab"), st.sampled_from(["", "a", "b"]))):
        getattr(request, side).CopyFrom(draw(documents(sane, kind)))
    if draw(st.integers(0, 3)) == 0 and request.HasField("a"):  # the same document on both sides
        request.b.CopyFrom(request.a)
    return _with(request, **_parameters(draw, sane, kind))


def messages(method: str, kind: str) -> st.SearchStrategy:
    return {"Dedup": dedup_requests(kind), "Upsert": upsert_requests(kind), "Delete": delete_requests(kind),
            "Info": st.just(pb.InfoRequest()), "FindSimilar": find_similar_requests(kind),
            "Explain": explain_requests(kind)}[method]


# --- strategies: raw request bytes ----------------------------------------------------------------------------------

def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def padded_varint(value: int, extra: int) -> bytes:
    """A varint written with `extra` more bytes than it needs (zero high groups), which a parser must take too."""
    body = bytearray(varint(value))
    if extra:
        body[-1] |= 0x80
        body += b"\x80" * (extra - 1) + b"\x00"
    return bytes(body)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


@st.composite
def unknown_fields(draw) -> bytes:
    """Well-formed fields of numbers no message of the contract has: what a newer client may send, groups (the
    delimited encoding) included. Keys and lengths are sometimes written longer than they need."""
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        number = draw(st.integers(100, 2**29 - 1))
        pad = draw(st.sampled_from([0, 0, 1, 3]))
        wire_type = draw(st.sampled_from([0, 1, 2, 3, 5]))
        key = padded_varint(number << 3 | wire_type, pad)
        if wire_type == 0:
            parts.append(key + varint(draw(st.integers(0, 2**64 - 1))))
        elif wire_type in (1, 5):
            size = 8 if wire_type == 1 else 4
            parts.append(key + draw(st.binary(min_size=size, max_size=size)))
        elif wire_type == 2:
            body = draw(st.binary(max_size=12))
            parts.append(key + padded_varint(len(body), pad) + body)
        else:  # a group: fields, then the end tag of the same number
            inner = draw(st.one_of(st.just(b""), st.just(tag(1, 0) + b"\x01"), st.just(tag(2, 2) + b"\x01x")))
            parts.append(key + inner + tag(number, 4))
    return b"".join(parts)


#: Strings that are not UTF-8: a lone continuation byte, an overlong NUL, a surrogate, past U+10FFFF, a cut sequence.
NOT_UTF8 = [b"\xff", b"ab\xfe", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"caf\xe2\x82"]
DOCUMENT_FIELDS = [field.number for field in pb.Document.DESCRIPTOR.fields]


@st.composite
def wire_fields(draw, numbers: list[int], depth: int = 0) -> bytes:
    """Fields as the wire writes them, of the message's numbers (each with its own or another wire type) or of no
    message's, then perhaps a broken end: a truncated varint, a length past the end, a cut."""
    parts = []
    for _ in range(draw(st.integers(0, 5))):
        number = draw(st.one_of(st.sampled_from(numbers), st.sampled_from([0, 19000, 2**29 - 1]),
                                st.integers(1, 2**29 - 1)))
        wire_type = draw(st.sampled_from([0, 0, 1, 2, 2, 2, 2, 5, 3, 4, 6, 7]))
        if wire_type == 0:
            payload = draw(st.one_of(st.integers(0, 2**64 - 1).map(varint), st.just(b"\xff" * 10 + b"\x01"),
                                     st.just(b"\x80" * 11 + b"\x00")))
        elif wire_type == 1:
            payload = draw(st.one_of(doubles.map(lambda d: struct.pack("<d", d)), st.binary(min_size=8, max_size=8)))
        elif wire_type == 5:
            payload = draw(st.binary(min_size=4, max_size=4))
        elif wire_type == 2:
            body = draw(st.one_of(st.sampled_from(NOT_UTF8), st.text(max_size=12).map(str.encode),
                                  st.binary(max_size=16),
                                  *([wire_fields(DOCUMENT_FIELDS, depth + 1)] if depth < 2 else [])))
            payload = varint(len(body)) + body
        else:  # a group's start or end, or a wire type that does not exist
            payload = b""
        parts.append(padded_varint(number << 3 | wire_type, draw(st.sampled_from([0, 0, 0, 1, 4]))) + payload)
    frame = b"".join(parts)
    ending = draw(st.sampled_from(["", "", "varint", "length", "cut"]))
    if ending == "varint":
        frame += tag(draw(st.sampled_from(numbers)), 0) + b"\x80" * draw(st.integers(1, 10))
    elif ending == "length":
        frame += tag(draw(st.sampled_from(numbers)), 2) + varint(draw(st.integers(1, 2**32))) + b"ab"
    elif ending == "cut":
        frame = frame[:draw(st.integers(0, len(frame)))]
    return frame


def raw_frames(method: str, kind: str) -> st.SearchStrategy[bytes]:
    """Bytes that are not the message, or nearly: random, mutated, wire fields, a good message then wire fields."""
    numbers = [field.number for field in REQUESTS[method].DESCRIPTOR.fields] or [1]
    good = messages(method, kind)
    return st.one_of(st.binary(max_size=64), mutated(good), wire_fields(numbers),
                     st.builds(lambda message, extra: message.SerializeToString() + extra, good, wire_fields(numbers)),
                     st.builds(lambda before, message, after: before + message.SerializeToString() + after,
                               unknown_fields(), good, st.one_of(st.just(b""), unknown_fields())))


def both_queries(doc_id: str, document: pb.Document, between: bytes, id_first: bool) -> bytes:
    """A FindSimilarRequest with both its id and its document on the wire (a oneof keeps the last it reads, so the
    server finds both in the bytes), perhaps with unknown fields between them."""
    fields = (pb.FindSimilarRequest(id=doc_id).SerializeToString(), between,
              pb.FindSimilarRequest(document=document).SerializeToString())
    return b"".join(fields if id_first else fields[::-1])


def bodies(method: str, kind: str) -> st.SearchStrategy[bytes]:
    """Request bytes: mostly a message, else raw frames."""
    extra = []
    if method == "FindSimilar":
        extra = [st.builds(both_queries, ids(), documents(True, kind, st.just(""), stored=False),
                           st.one_of(st.just(b""), unknown_fields()), st.booleans())]
    return mostly(messages(method, kind).map(lambda m: m.SerializeToString()),
                  st.one_of(raw_frames(method, kind), *extra))


compressions = st.sampled_from([None, None, None, grpc.Compression.Gzip])


# --- the checks -----------------------------------------------------------------------------------------------------

def content_key(target: Fuzzed, doc: pb.Document | str):
    """Equal for documents that hold one pinned article's content: by its id (while the fuzz has not written that
    id), or inline in the store's default language; None for any other document."""
    doc = pb.Document(id=doc) if isinstance(doc, str) else doc
    content = doc.WhichOneof("content")
    if content is None and not doc.fields:
        pinned = target.pinned.get(doc.id)
        return None if pinned is None or doc.id not in target.intact else _key(pinned)
    if doc.lang or (content is not None and doc.fields):
        return None
    key = ("text", doc.text) if content == "text" else (
        ("fields", _fields_key(doc.fields)) if content is None else None)
    return key if key in target.pinned_keys else None


def _key(content) -> tuple:
    return ("text", content) if isinstance(content, str) else ("fields", _fields_key(field_values(content)))


def _fields_key(fields) -> tuple:
    return tuple(sorted((name, value.SerializeToString(deterministic=True)) for name, value in fields.items()))


def valid_id(doc_id: str) -> bool:
    return 0 < len(doc_id.encode("utf-8")) <= MAX_ID_BYTES


def id_only(doc: pb.Document) -> bool:
    return doc.WhichOneof("content") is None and not doc.fields


def check_probe(target: Fuzzed, ids) -> None:
    """After a write: which of these ids Dedup finds stored (through the other worker first) and the store's
    generation are what the model says."""
    ids = [doc_id for doc_id in dict.fromkeys(ids) if valid_id(doc_id)]
    for start in range(0, len(ids), MAX_RESULT_SET):
        chunk = ids[start:start + MAX_RESULT_SET]
        code, answer, details = target.call("Dedup", pb.DedupRequest(ids=chunk).SerializeToString())
        assert code == OK, details
        assert list(pb.DedupResponse.FromString(answer).missing) == [
            position for position, doc_id in enumerate(chunk) if doc_id not in target.stored]
    code, answer, details = target.call("Info", b"")
    assert code == OK, details
    generation, expected = pb.InfoResponse.FromString(answer).generation, target.generation
    assert generation == expected, "only a write that succeeded writes"


def assert_applied(request, response) -> None:
    """The answer states the parameters applied: those the request set."""
    if request.HasField("threshold"):
        assert response.threshold == request.threshold
    if request.metric:
        assert response.metric == request.metric


def check_dedup(target: Fuzzed, request: pb.DedupRequest, code, answer: bytes | None) -> None:
    if code != OK:
        return
    response = pb.DedupResponse.FromString(answer)
    assert not (request.ids and request.documents)
    documents = list(request.documents) or [pb.Document(id=doc_id) for doc_id in request.ids]
    size = len(documents)
    assert len(response.duplicate_of) == len(response.similarity) == len(response.group) == size
    assert response.tag == request.tag and not response.HasField("error")
    assert 0.0 <= response.threshold <= 1.0 and not response.cluster  # the store is not clustered
    assert_applied(request, response)
    if request.grouping:
        assert response.grouping == request.grouping
    for position, (of, similarity, group) in enumerate(zip(response.duplicate_of, response.similarity,
                                                           response.group)):
        assert (of == -1 and group == position and similarity == 0.0) or (0 <= of < position and group <= of)
        assert 0.0 <= similarity <= 1.0
        if of != -1 and response.grouping in (pb.GROUPING_GREEDY, pb.GROUPING_COMPLETE):  # no chains
            assert similarity >= response.threshold
    assert list(response.missing) == [position for position, doc in enumerate(documents)
                                      if id_only(doc) and doc.id not in target.stored]
    keys = [content_key(target, doc) for doc in documents]
    for position, key in enumerate(keys):
        if key is not None and key in keys[:position]:  # an identical document ranks above it
            assert response.duplicate_of[position] != -1, (position, response)
            if keys[response.duplicate_of[position]] == key:
                assert response.similarity[position] == 1.0


def check_upsert(target: Fuzzed, request: pb.UpsertRequest, code, answer: bytes | None) -> None:
    ids = [doc.id for doc in request.documents]
    if code == OK:
        response = pb.UpsertResponse.FromString(answer)
        assert response.upserted == len(ids)
        assert response.generation > target.generation if ids else response.generation >= target.generation
        target.generation = response.generation
        target.stored.update(ids)
        target.intact.difference_update(ids)
    check_probe(target, ids)  # all of the batch, or nothing


def check_delete(target: Fuzzed, request: pb.DeleteRequest, code, answer: bytes | None) -> None:
    if code == OK:
        response = pb.DeleteResponse.FromString(answer)
        assert response.deleted == len(set(request.ids) & target.stored)
        assert response.generation >= target.generation
        target.generation = response.generation
        target.stored.difference_update(request.ids)
        target.intact.difference_update(request.ids)
    check_probe(target, request.ids)


def check_info(target: Fuzzed, request: pb.InfoRequest, code, answer: bytes | None) -> None:
    assert code == OK
    response = pb.InfoResponse.FromString(answer)
    assert (response.articles, response.max_result_set, response.indexed) == (len(target.stored), MAX_RESULT_SET, True)
    assert response.sketch_config.kind == target.kind and response.generation == target.generation
    assert response.store == target.backend and response.default_metric == SANE_METRICS[target.kind][1]


def top_level_fields(body: bytes) -> list[int]:
    """The field numbers of a message's bytes in order, as protobuf reads them (each field unknown to a message of
    none), and not as the server does."""
    return [unknown.field_number for unknown in UnknownFieldSet(pb.InfoRequest.FromString(body))]


def check_find_similar(target: Fuzzed, request: pb.FindSimilarRequest, code, answer: bytes | None,
                       body: bytes) -> None:
    if {1, 2} <= set(top_level_fields(body)):
        assert code == INVALID, "both id and document on the wire is refused"
    query = request.WhichOneof("query")
    if query == "id" and code in (OK, grpc.StatusCode.NOT_FOUND):
        assert (request.id in target.stored) == (code == OK), (request.id, code)
    if code != OK:
        return
    response = pb.FindSimilarResponse.FromString(answer)
    assert response.top_k == (request.top_k or 10) and len(response.matches) <= response.top_k
    assert_applied(request, response)
    assert all(match.cluster == -1 for match in response.matches)  # the store is not clustered
    found = [(match.id, match.similarity) for match in response.matches]
    assert found == sorted(found, key=lambda match: (-match[1], match[0])) and len(set(dict(found))) == len(found)
    assert all(response.threshold <= similarity <= 1.0 for _, similarity in found), found
    assert set(dict(found)) <= target.stored, "never an article that is not stored"
    own = request.id if query == "id" else request.document.id
    assert own not in dict(found), "never the query itself"
    key = content_key(target, request.id if query == "id" else request.document)
    if key is None or not response.exact:
        return
    for doc_id, content in target.pinned.items():  # the articles of the same content are found, best first
        if doc_id != own and doc_id in target.intact and _key(content) == key:
            assert (doc_id, 1.0) in found or (len(found) == response.top_k and found[-1][1] == 1.0), (doc_id, found)


def _spans_ok(spans, text: str) -> bool:
    bounds = [(span.start, span.end) for span in spans]
    return all(0 <= start < end <= len(text) for start, end in bounds) and all(
        earlier[1] < later[0] for earlier, later in zip(bounds, bounds[1:]))


def check_explain(target: Fuzzed, request: pb.ExplainRequest, code, answer: bytes | None) -> None:
    sides = [getattr(request, side) for side in "ab"]
    stored = [doc.id in target.stored for doc in sides if id_only(doc)]
    if code == OK:
        assert all(stored)
    elif code == grpc.StatusCode.NOT_FOUND:
        assert not all(stored)
    if code != OK:
        return
    response = pb.ExplainResponse.FromString(answer)
    assert 0.0 <= response.similarity <= 1.0 and 0.0 <= response.threshold <= 1.0
    assert_applied(request, response)
    for doc, explained in zip(sides, (response.a, response.b)):
        has_text = doc.WhichOneof("content") == "text"
        assert explained.id == doc.id and explained.has_text == has_text
        for spans in (explained.shared, explained.sketch_shared, explained.boilerplate):
            assert _spans_ok(spans, doc.text) if has_text else not spans
        assert explained.stoplisted_shingles <= explained.shingles and (has_text or not explained.shingles)
        assert explained.compared_values <= explained.sketch_values <= CONFIGS[target.kind].k
        if target.kind == "simhash":  # a fingerprint shares bits, not values
            assert explained.sketch_values == 0 and not explained.sketch_shared
    assert response.shared_sketch_values <= min(response.a.compared_values, response.b.compared_values)
    if not (response.a.has_text and response.b.has_text):
        assert response.shared_shingles == 0 and not response.a.shared and not response.b.shared
    keys = [content_key(target, doc) for doc in sides]
    if keys[0] is not None and keys[0] == keys[1]:
        assert (response.similarity, response.duplicate) == (1.0, True)
    # what Explain decides, Dedup of [a, b] decides at the same threshold and metric
    pair = [pb.Document(id=doc.id or f"explained-{side}", text=doc.text, lang=doc.lang) if doc.HasField("text")
            else pb.Document(id=doc.id or f"explained-{side}", sketch=doc.sketch, lang=doc.lang)
            if doc.HasField("sketch") else doc for doc, side in zip(sides, "ab")]
    if all(valid_id(doc.id) for doc in pair):
        dedup = _with(pb.DedupRequest(documents=pair, threshold=response.threshold, metric=response.metric,
                                      grouping=pb.GROUPING_GREEDY),
                      sketch_config=request.sketch_config if request.HasField("sketch_config") else None)
        code, answer, details = target.call("Dedup", dedup.SerializeToString())
        assert code == OK, details
        dedup_response = pb.DedupResponse.FromString(answer)
        assert list(dedup_response.duplicate_of) == [-1, 0 if response.duplicate else -1]
        if response.duplicate:
            assert dedup_response.similarity[1] == response.similarity


CHECKS = {"Dedup": check_dedup, "Upsert": check_upsert, "Delete": check_delete, "Info": check_info,
          "Explain": check_explain}


def exercise(target: Fuzzed, method: str, body: bytes, compression=None) -> tuple[grpc.StatusCode, bytes | None]:
    """One call of any bytes: a named status, INVALID_ARGUMENT for what protobuf cannot decode, and for what it can,
    an answer that holds up to the model (which a successful write updates)."""
    code, answer, details = target.call(method, body, compression)
    assert code in NAMED, (method, code, details)
    try:
        request = REQUESTS[method].FromString(body)
    except DecodeError:
        assert code == INVALID, f"{method} answered {code.name} to bytes protobuf cannot decode: {body!r}"
        return code, answer
    if method == "FindSimilar":
        check_find_similar(target, request, code, answer, body)
    else:
        CHECKS[method](target, request, code, answer)
    return code, answer


STATUS_OF = {status.value[0]: status for status in grpc.StatusCode}


def stream(target: Fuzzed, messages: list[bytes]) -> tuple[grpc.StatusCode, list[bytes]]:
    answers = []
    try:
        for answer in target.channel().stream_stream("/neardup.v1.NearDup/DedupStream")(iter(messages), timeout=60):
            answers.append(answer)
    except grpc.RpcError as error:
        return error.code(), answers
    return OK, answers


def check_stream(target: Fuzzed, messages: list[bytes]) -> list[grpc.StatusCode]:
    """One answer per message, in order, with its tag; a failed message is answered with its status and the stream
    goes on; each answer is what unary Dedup answers to the same bytes."""
    code, answers = stream(target, messages)
    assert code == OK and len(answers) == len(messages), (code, len(answers), len(messages))
    codes = []
    for body, answer in zip(messages, answers):
        response = pb.DedupResponse.FromString(answer)
        try:
            request = pb.DedupRequest.FromString(body)
        except DecodeError:
            request = None
        assert response.tag == (request.tag if request is not None else 0)
        unary, unary_answer, details = target.call("Dedup", body)
        if response.HasField("error"):
            status = STATUS_OF.get(response.error.code)
            assert status in NAMED - {OK} and response.error.message, response.error
            assert (status, response.error.message) == (unary, details)
            assert request is not None or status == INVALID
            assert response == pb.DedupResponse(tag=response.tag, error=response.error)
        else:
            assert unary == OK, details
            check_dedup(target, request, OK, answer)
            assert _untagged(response) == _untagged(pb.DedupResponse.FromString(unary_answer))
            status = OK
        codes.append(status)
    return codes


def _untagged(response: pb.DedupResponse) -> pb.DedupResponse:
    response.ClearField("tag")
    response.ClearField("cached")
    return response


# --- the tests ------------------------------------------------------------------------------------------------------

#: Examples per test and server: shared servers and a few milliseconds a call keep all of them near a minute.
EXAMPLES = settings(FUZZ, max_examples=30)


def stranger(target: Fuzzed) -> str:
    """A pinned article that duplicates no other."""
    return "pinned-other" if target.kind == "items" else "pinned-1"


def twin(target: Fuzzed) -> str:
    """The pinned article that pinned-copy copies."""
    return next(doc_id for doc_id, content in target.pinned.items()
                if doc_id != "pinned-copy" and content == target.pinned["pinned-copy"])


def good_requests(target: Fuzzed) -> dict[str, pb.DedupRequest]:
    """Per RPC a request that must succeed, checked as the fuzzed ones are."""
    original, copy = pb.Document(id=twin(target)), pb.Document(id="pinned-copy")
    inline = _key(target.pinned[original.id])
    document = (pb.Document(fields=field_values(target.pinned[original.id])) if target.kind == "items"
                else pb.Document(text=inline[1]))
    named = pb.Document(id="inline")
    named.MergeFrom(document)
    written = pb.Document(id="w0")
    written.MergeFrom(document)
    return {"Dedup": pb.DedupRequest(documents=[original, named, copy]),
            "Upsert": pb.UpsertRequest(documents=[written]),
            "Delete": pb.DeleteRequest(ids=["w0", "w1"]),
            "Info": pb.InfoRequest(),
            "FindSimilar": pb.FindSimilarRequest(document=document, top_k=3),
            "Explain": pb.ExplainRequest(a=original, b=document if target.kind == "items" else copy)}


def seeds(target: Fuzzed, method: str) -> list[bytes]:
    """Requests each run tries before those hypothesis draws: per RPC its good request and the edges it must get
    right, a write batch with one bad document after a good one above all (nothing of it is written)."""
    good = good_requests(target)
    original = twin(target)
    content = good["FindSimilar"].document  # the twin's content, inline

    def named(doc_id: str, of: pb.Document = content) -> pb.Document:
        document = pb.Document(id=doc_id)
        document.MergeFrom(of)
        return document

    bad = (pb.Document(fields={"location": pb.FieldValue(location=pb.GeoPoint(lat=math.nan, lon=0))})
           if target.kind == "items" else pb.Document(text="a few words", lang="tlh"))
    both = both_queries(original, content, tag(100, 3) + tag(1, 0) + b"\x01" + tag(100, 4), True)  # a group between
    requests = {
        "Dedup": [pb.DedupRequest(ids=[original, original, "never-stored"]), b"\x0a\x02\xff\xfe",
                  pb.DedupRequest(ids=[original], threshold=math.nan),
                  pb.DedupRequest(documents=[named("x"), named("x")], grouping=pb.GROUPING_COMPONENTS)],
        "Upsert": [pb.UpsertRequest(documents=[named("w-partial"), pb.Document(id="w-partial-2")]),
                   pb.UpsertRequest(documents=[named("w-partial"), named("w-partial-2", bad)]),
                   pb.UpsertRequest(documents=[named("w-partial"), named("")])],
        "Delete": [pb.DeleteRequest(ids=["w0", ""]), pb.DeleteRequest(ids=["w0", TOO_LONG_IDS[1]])],
        "Info": [b"\xf8\x06\x01", b"\x08"],
        "FindSimilar": [pb.FindSimilarRequest(id=original), both, pb.FindSimilarRequest(id=original, top_k=2**32 - 1),
                        pb.FindSimilarRequest(id="never-stored")],
        "Explain": [pb.ExplainRequest(a=pb.Document(id=original), b=pb.Document(id="never-stored")),
                    pb.ExplainRequest(a=content, b=named("b"), threshold=1.0)],
    }[method]
    return [request if isinstance(request, bytes) else request.SerializeToString()
            for request in [good[method], *requests]]


def assert_still_serving(target: Fuzzed, method: str) -> None:
    """After the fuzz: a good request of the method gets its correct answer (not a refusal), and the server is
    unharmed."""
    code, _ = exercise(target, method, good_requests(target)[method].SerializeToString())
    assert code == OK
    target.assert_unharmed()


@pytest.mark.parametrize("method", list(REQUESTS))
def test_any_request_gets_a_correct_answer_or_a_named_status(fuzzed_server, method):
    @EXAMPLES
    @given(body=bodies(method, fuzzed_server.kind), compression=compressions)
    def any_request(body, compression):
        code, _ = exercise(fuzzed_server, method, body, compression)
        event(code.name)

    for body in seeds(fuzzed_server, method):
        any_request = example(body=body, compression=None)(any_request)
    any_request()
    assert_still_serving(fuzzed_server, method)


def test_any_stream_gets_an_answer_per_message_as_unary_dedup_gives(fuzzed_server):
    @settings(EXAMPLES, max_examples=EXAMPLES.max_examples // 2)
    @given(messages=st.lists(bodies("Dedup", fuzzed_server.kind), min_size=1, max_size=8))
    def any_stream(messages):
        for code in set(check_stream(fuzzed_server, messages)):
            event(code.name)

    any_stream()
    assert_still_serving(fuzzed_server, "Dedup")


def test_many_messages_on_one_stream_bad_ones_between_good_ones(fuzzed_server):
    """Hundreds of messages on one stream, a refused or undecodable one after every good one: each is answered in
    its place, with its tag and status, and the good ones with their correct answer."""
    target = fuzzed_server
    original, other = twin(target), stranger(target)
    inline = pb.Document(id="inline")
    inline.MergeFrom(good_requests(target)["FindSimilar"].document)
    from neardup.service.converters import sketch_config_message
    other_config = sketch_config_message(CONFIGS[target.kind])
    other_config.unit = "word:2" if target.kind == "items" else "sentence"
    # (message, status code, the duplicate_of and missing of its answer)
    cases = [
        (pb.DedupRequest(ids=[original, other, "pinned-copy"]), OK, ([-1, -1, 0], [])),
        (b"\x0a\x02\xff\xfe", INVALID, None),  # an id that is not UTF-8
        (pb.DedupRequest(documents=[inline, pb.Document(id=original)]), OK, ([-1, 0], [])),
        (pb.DedupRequest(ids=[original], threshold=math.nan), INVALID, None),
        (pb.DedupRequest(ids=["never-stored", original, "never-stored"]), OK, ([-1, -1, -1], [0, 2])),
        (pb.DedupRequest(ids=[original], metric=99), INVALID, None),
        (pb.DedupRequest(), OK, ([], [])),
        (pb.DedupRequest(ids=[original] * (MAX_RESULT_SET + 1)), grpc.StatusCode.RESOURCE_EXHAUSTED, None),
        (pb.DedupRequest(ids=[original, "pinned-copy"], threshold=1.0, grouping=pb.GROUPING_COMPLETE), OK,
         ([-1, 0], [])),
        (b"\x38\x80", INVALID, None),  # a tag whose varint is cut
        (pb.DedupRequest(documents=[inline], sketch_config=other_config), grpc.StatusCode.FAILED_PRECONDITION, None),
    ]
    messages, expected = [], []
    for number in range(1, 401):
        message, code, result = cases[number % len(cases)]
        if isinstance(message, bytes):
            messages.append(message)
            expected.append((0, code, result))
        else:
            tagged = pb.DedupRequest()
            tagged.CopyFrom(message)
            tagged.tag = number
            messages.append(tagged.SerializeToString())
            expected.append((number, code, result))
    status, answers = stream(target, messages)
    assert status == OK and len(answers) == len(messages)
    for answer, (tag_, code, result) in zip(answers, expected):
        response = pb.DedupResponse.FromString(answer)
        assert response.tag == tag_
        if code == OK:
            assert not response.HasField("error"), response.error
            assert (list(response.duplicate_of), list(response.missing)) == result
        else:
            assert STATUS_OF[response.error.code] == code and response.error.message
    assert_still_serving(target, "Dedup")


MEGABYTE = 2**20
#: Of the server's defaults: the longest text it sketches, the largest message it reads.
MAX_TEXT_BYTES, MAX_MESSAGE_BYTES = 10 * MEGABYTE, 16 * MEGABYTE


def big_text(megabytes: float) -> str:
    """Words of articles no other text has, repeated to that size."""
    words = " ".join(text(article(900 + n)) for n in range(4)) + "\n\n"
    return (words * int(megabytes * MEGABYTE // len(words) + 1))[:int(megabytes * MEGABYTE)]


def test_texts_of_megabytes_are_answered_and_those_over_the_limits_refused(fuzzed_server):
    """A 2 MB text through every RPC that takes one (correct answers: it is its own duplicate, FindSimilar finds it
    once stored); one over the text limit, and a message over the message limit, get RESOURCE_EXHAUSTED."""
    target = fuzzed_server
    exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED

    def doc(doc_id: str, body: str) -> pb.Document:
        if target.kind != "items":
            return pb.Document(id=doc_id, text=body)
        return pb.Document(id=doc_id, fields={"title": pb.FieldValue(text="Forklift driver"),
                                              "body": pb.FieldValue(text=body)})

    big = big_text(2)
    answers = {}
    for method, request in [
            ("Dedup", pb.DedupRequest(documents=[doc("big", big), doc("big-again", big)])),
            ("Upsert", pb.UpsertRequest(documents=[doc("w-big", big)])),
            ("FindSimilar", pb.FindSimilarRequest(document=doc("", big), top_k=1)),
            ("Explain", pb.ExplainRequest(a=doc("big", big), b=pb.Document(id="w-big")))]:
        code, answers[method] = exercise(target, method, request.SerializeToString())
        assert code == OK, method
    assert list(pb.DedupResponse.FromString(answers["Dedup"]).duplicate_of) == [-1, 0]
    assert [(m.id, m.similarity) for m in pb.FindSimilarResponse.FromString(answers["FindSimilar"]).matches] == [
        ("w-big", 1.0)]
    explained = pb.ExplainResponse.FromString(answers["Explain"])
    assert (explained.similarity, explained.duplicate) == (1.0, True)
    if target.kind == "items":  # field by field: both fields the same
        assert [(field.name, field.similarity) for field in explained.fields if field.HasField("similarity")] == [
            ("title", 1.0), ("body", 1.0)]
    else:
        assert explained.a.has_text and not explained.fields
    over_text = pb.DedupRequest(documents=[doc("over", "word " * ((MAX_TEXT_BYTES + MEGABYTE) // 5))])
    over_message = pb.UpsertRequest(documents=[doc("w-over", "word " * ((MAX_MESSAGE_BYTES + MEGABYTE) // 5))])
    with grpc.insecure_channel(target.server.target, options=[("grpc.max_send_message_length", 64 * MEGABYTE)]) as wide:
        for method, request in (("Dedup", over_text), ("Upsert", over_message)):
            with pytest.raises(grpc.RpcError) as refused:
                wide.unary_unary(f"/neardup.v1.NearDup/{method}")(request.SerializeToString(), timeout=60)
            assert refused.value.code() == exhausted, refused.value.details()
    check_probe(target, ["w-big", "w-over"])
    assert_still_serving(target, "Info")
