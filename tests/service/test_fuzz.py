"""Property tests for everything that decodes untrusted input: request bytes (in process; every RPC through real
servers is test_fuzz_rpcs.py), corpus lines of `neardup index`, result-set lines of `neardup dedup --jsonl`, and the
sketcher under any text and language. The contract in each case: an answer that is well formed, or the one error type
the edge turns into a status code or a one-line message; never anything else (which would be INTERNAL or a
traceback).

The kernel is property-tested against the reference in test_kernel.py, plain texts in test_sketch.py.
benchmarks/fuzz_long.py runs the same properties for 150,000 inputs, outside CI.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchmarks.lib.fuzz import (FUZZ, REQUESTS, UNITS, any_text, check_corpus_line, check_handler,
                                 check_result_set_line, check_sketcher, json_lines, langs, make_servicer,
                                 request_bytes)
from neardup.core.errors import InvalidArgument
from neardup.service import converters
from neardup_client.v1 import neardup_pb2 as pb


# --- the properties -------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def servicer(tmp_path_factory):
    store, servicer = make_servicer(tmp_path_factory.mktemp("fuzz") / "store")
    yield servicer
    store.close()


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@pytest.mark.parametrize("method", list(REQUESTS))
@FUZZ
@given(data=st.data())
def test_any_request_bytes_get_an_answer_or_a_domain_error(servicer, method, data):
    check_handler(servicer, method, data.draw(request_bytes(method)))


def _group(number: int, inside: bytes = b"") -> bytes:
    """An unknown field of the delimited encoding (a group): its start tag, its fields, its end tag."""
    return bytes([number << 3 | 3]) + inside + bytes([number << 3 | 4])


ID_QUERY = pb.FindSimilarRequest(id="a").SerializeToString()
DOCUMENT_QUERY = pb.FindSimilarRequest(document=pb.Document(text="some words")).SerializeToString()


@pytest.mark.parametrize("body", [ID_QUERY + _group(15) + DOCUMENT_QUERY, _group(15) + ID_QUERY + DOCUMENT_QUERY,
                                  DOCUMENT_QUERY + _group(15, _group(14, b"\x08\x01") + b"\x12\x01x") + ID_QUERY],
                         ids=["between", "before", "nested"])
def test_find_similar_finds_both_queries_on_the_wire_past_an_unknown_group(body):
    """A oneof keeps the last of its fields, so the servicer reads the bytes for both; a group before the second
    (what a newer client may send) once ended that reading, and the request was answered for one of them."""
    with pytest.raises(InvalidArgument, match="not both"):
        converters.similar_query(pb.FindSimilarRequest.FromString(body), body)
    alone = _group(15, b"\x08\x01") + DOCUMENT_QUERY + _group(14)
    assert converters.similar_query(pb.FindSimilarRequest.FromString(alone), alone).text == "some words"


@FUZZ
@given(unit=st.sampled_from(UNITS), text=any_text, lang=langs)
def test_any_text_in_any_language_gives_a_sketch_or_names_the_language(unit, text, lang):
    check_sketcher(unit, text, lang)


@FUZZ
@given(line=json_lines)
def test_any_corpus_line_is_a_record_or_reported(line):
    check_corpus_line(line)


@FUZZ
@given(line=json_lines)
def test_any_result_set_line_is_a_document_or_one_message(line):
    check_result_set_line(line)
