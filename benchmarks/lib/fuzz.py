"""The fuzz properties' inputs and checks, shared by tests/service/test_fuzz.py (in CI) and benchmarks/fuzz_long.py (at
length): hypothesis strategies for request bytes, sketcher texts and JSON lines, and per kind of input the check
that its answer is well formed or the one error type the edge turns into a status code or a one-line message.
Each check returns what happened (fuzz_long tallies it)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import grpc
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from tests.server_process import sketch_store
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.core.encoding import decode_sketch, encode_sketch
from neardup.runtime.params import Limits
from neardup.core.errors import InvalidArgument, NearDupError
from neardup.jobs.records import parse_record
from neardup.service.servicer import NearDupServicer
from neardup.store import open_store
from neardup_client.cli import _document_of
from neardup_client.v1 import neardup_pb2 as pb

K = SketchConfig().k
STORED = [f"s{i}" for i in range(20)]
MAX_RESULT_SET = 40  # small, so random lists cross it
FUZZ = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# --- strategies -------------------------------------------------------------------------------------------------

def mostly(valid: st.SearchStrategy, invalid: st.SearchStrategy) -> st.SearchStrategy:
    """Valid three times in four: a request fails at its first bad field, so all-random ones rarely get past it."""
    return st.sampled_from((valid, valid, valid, invalid)).flatmap(lambda chosen: chosen)


def sketches(max_values: int = K + 2) -> st.SearchStrategy[bytes]:
    """Mostly valid sketches, some unsorted, repeated, too long or of odd length."""
    values = st.lists(st.integers(0, 2**32 - 1), max_size=max_values)
    return mostly(values.map(lambda v: encode_sketch(sorted(set(v))[:K])),
                  st.one_of(values.map(encode_sketch), st.binary(max_size=4 * max_values + 3)))


ids = mostly(st.one_of(st.sampled_from(STORED), st.text(min_size=1, max_size=12)),
             st.one_of(st.just(""), st.text(min_size=128, max_size=520)))
langs = mostly(st.sampled_from(["", "en", "nl", "ru", "none", "EN"]), st.one_of(st.just("tlh"), st.text(max_size=6)))
documents = st.builds(
    lambda doc_id, content, lang: pb.Document(id=doc_id, lang=lang, **content),
    ids, st.one_of(st.just({}), st.builds(lambda t: {"text": t}, st.text(max_size=300)),
                   st.builds(lambda s: {"sketch": s}, sketches())), langs)
enum_values = mostly(st.integers(0, 2), st.integers(-2**31, 2**31 - 1))
sketch_configs = st.one_of(
    st.none(), st.none(), st.just(pb.SketchConfig(**SketchConfig().to_dict())),
    st.builds(pb.SketchConfig, unit=st.sampled_from(["", "sentence", "para-sentence", "word:5", "word:0", "x"]),
              k=st.integers(0, 2**32 - 1), min_word_len=st.integers(0, 5), lang=langs,
              hash=st.sampled_from(["", "crc32", "md5"]), stoplist_digest=st.text(max_size=8)))


@st.composite
def dedup_requests(draw) -> pb.DedupRequest:
    request = pb.DedupRequest(metric=draw(enum_values), grouping=draw(enum_values))
    if draw(st.integers(0, 3)) == 0:
        request.documents.extend(draw(st.lists(documents, max_size=8)))
    if not request.documents or draw(st.integers(0, 7)) == 0:
        request.ids.extend(draw(st.lists(ids, max_size=MAX_RESULT_SET + 5)))
    threshold = draw(st.one_of(st.none(), st.floats(0, 1), st.floats()))
    if threshold is not None:
        request.threshold = threshold
    config = draw(sketch_configs)
    if config is not None:
        request.sketch_config.CopyFrom(config)
    return request


upsert_requests = st.builds(lambda docs, config: pb.UpsertRequest(documents=docs, sketch_config=config),
                            mostly(st.lists(documents, max_size=4), st.lists(documents, max_size=MAX_RESULT_SET + 2)),
                            sketch_configs)
delete_requests = st.builds(lambda doc_ids: pb.DeleteRequest(ids=doc_ids), st.lists(ids, max_size=MAX_RESULT_SET + 2))
REQUESTS = {"Dedup": dedup_requests(), "Upsert": upsert_requests, "Delete": delete_requests,
            "Info": st.just(pb.InfoRequest())}


@st.composite
def mutated(draw, messages: st.SearchStrategy) -> bytes:
    """A serialized message with bytes flipped, cut, inserted or appended: near misses of the wire format."""
    data = bytearray(draw(messages).SerializeToString())
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        edit = draw(st.sampled_from(["flip", "cut", "insert", "append"]))
        if edit == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif edit == "cut":
            del data[at:]
        else:
            chunk = draw(st.binary(min_size=1, max_size=8))
            data[at:at] = chunk if edit == "insert" else b""
            data += chunk if edit == "append" else b""
    return bytes(data)


def request_bytes(method: str) -> st.SearchStrategy[bytes]:
    messages = REQUESTS[method]
    return mostly(messages.map(lambda m: m.SerializeToString()), st.one_of(mutated(messages), st.binary(max_size=256)))


any_text = st.text(alphabet=st.one_of(st.characters(), st.integers(0xD800, 0xDFFF).map(chr),
                                      st.sampled_from(".!?\n\n  \t\u2029")), max_size=400)


# --- checks ------------------------------------------------------------------------------------------------------

def make_servicer(path: Path):
    """The request path of one worker, as `serve` builds it, over a store with a few sketches."""
    store = open_store(sketch_store(path, {doc_id: encode_sketch(range(i, i + 10))
                                           for i, doc_id in enumerate(STORED)}))
    return store, NearDupServicer.for_store(store, Limits(max_result_set=MAX_RESULT_SET), cache_size=64, cache_ttl=0)


class _Context:
    """What the unary handlers use of gRPC's servicer context, in process: the trailing metadata Info sets."""

    def set_trailing_metadata(self, metadata) -> None:
        self.trailing_metadata = tuple(metadata)


def check_handler(servicer: NearDupServicer, method: str, body: bytes) -> str:
    """Any request bytes: a well-formed answer or a NearDupError (a status code), never another exception.
    Returns what happened, for fuzz_long's tally."""
    try:
        answer = getattr(servicer, method)(body, _Context())
    except NearDupError as error:
        return type(error).__name__
    if method == "Dedup":
        response, request = pb.DedupResponse.FromString(answer), pb.DedupRequest.FromString(body)
        size = len(request.ids) or len(request.documents)
        assert len(response.duplicate_of) == len(response.similarity) == len(response.group) == size
        for position, (of, similarity, group) in enumerate(zip(response.duplicate_of, response.similarity,
                                                               response.group)):
            assert (of == -1 and group == position) or (0 <= of < position and group <= of)
            assert 0.0 <= similarity <= 1.0 and not math.isnan(similarity)
        assert set(response.missing) <= set(range(size)) and 0.0 <= response.threshold <= 1.0
    else:
        {"Upsert": pb.UpsertResponse, "Delete": pb.DeleteResponse, "Info": pb.InfoResponse}[method].FromString(answer)
    return "answered"


UNITS = ["sentence", "para-sentence", "word:1", "word:4"]


def check_sketcher(unit: str, text: str, lang: str) -> str:
    """Any str in any language: K or fewer ascending unique values, or InvalidArgument for the language."""
    try:
        sketch = Sketcher(SketchConfig(unit=unit, k=16)).sketch(text, lang or None)
    except InvalidArgument as error:
        assert "language" in str(error)
        return "unknown language"
    values = decode_sketch(sketch)
    assert len(values) <= 16 and values == sorted(set(values))
    return "sketched" if values else "empty sketch"


def check_corpus_line(line: bytes) -> str:
    """`neardup index`: a record or InvalidArgument (a line reported and skipped), never another exception."""
    try:
        doc_id, text, lang = parse_record(line)
    except InvalidArgument:
        return "reported"
    assert isinstance(doc_id, str) and doc_id and isinstance(text, str) and (lang is None or isinstance(lang, str))
    return "record"


def check_result_set_line(line: bytes) -> str:
    """`neardup dedup --jsonl`: a document the client can send, or ValueError (one line, exit 1)."""
    try:
        document = _document_of(line)
    except ValueError:
        return "one-line error"
    pb.Document(id=document.id, text=document.text or "", lang=document.lang or "").SerializeToString()
    return "document"


json_values = st.one_of(st.none(), st.integers(), st.floats(), st.lists(st.integers(), max_size=2), any_text)
records = st.fixed_dictionaries(
    {"id": mostly(st.text(min_size=1, max_size=20), json_values),
     "text": mostly(any_text, json_values)},
    optional={"lang": mostly(st.sampled_from(["en", "nl", "ru", "none"]), json_values),
              "extra": json_values})
json_lines = mostly(
    st.builds(lambda record, ascii_only: json.dumps(record, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass"),
              records, st.booleans()),
    st.one_of(st.binary(max_size=120), any_text.map(lambda t: t.encode("utf-8", "surrogatepass")),
              st.builds(lambda record: json.dumps(record).encode()[:-1], records)))


EXPECTED_CODES = (grpc.StatusCode.OK, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.RESOURCE_EXHAUSTED,
                  grpc.StatusCode.FAILED_PRECONDITION)


def check_over_grpc(channel: grpc.Channel, method: str, body: bytes) -> str:
    """Through gRPC too: the handler wrapping, not only the servicer, never turns input into INTERNAL."""
    try:
        channel.unary_unary(f"/neardup.v1.NearDup/{method}")(body, timeout=30)
        code = grpc.StatusCode.OK
    except grpc.RpcError as error:
        code = error.code()
        assert code in EXPECTED_CODES, (code, error.details())
    return code.name
