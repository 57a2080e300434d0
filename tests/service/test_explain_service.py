"""Explain end to end: a real `neardup serve` on a store made by `neardup index` (with a learned stop-list), the
Python clients (sync and asyncio), `neardup explain`, and the RPC's limits, token, metrics and status codes."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import math
import urllib.request

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from prometheus_client.parser import text_string_to_metric_families

from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.runtime.params import DEFAULT_MAX_TEXT_BYTES
from neardup.service.servicer import UNARY_METHODS
from neardup_client import AsyncNearDupClient, Document, NearDupClient, NearDupClientError
from neardup_client.cli_framework import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from neardup_client.v1 import neardup_pb2 as pb
from server_process import NEARDUP, Server, free_port, serving, write_jsonl
from textgen import RECORD_SCHEMA, article, records_with_typos, text

FOOTER = "Subscribe to our newsletter for more stories like this one, every single morning."
STORY = article(21)
TEXTS = {
    "story": text(STORY),
    "story-copy": "From the wire 😀 İstanbul desk: " + text(STORY[:10]) + " " + FOOTER,
    "other": text(article(22)),
    # a site's articles, all with its footer: the footer is learned as boilerplate
    **{f"site-{i}": text(article(40 + i)) + " " + FOOTER for i in range(12)},
}


@pytest.fixture(scope="module")
def store(indexed_store):
    return indexed_store("explain", TEXTS)


def _spans_text(body: str, spans) -> list[str]:
    return [body[start:end] for start, end in spans]


def _covered(spans) -> set[int]:
    return {i for start, end in spans for i in range(start, end)}


def test_explain_is_a_method_of_the_served_contract():
    assert "Explain" in UNARY_METHODS  # the servicer's table and the metrics' list come from the proto


def test_two_stored_ids_answer_the_similarity_dedup_finds_and_say_spans_need_texts(client):
    answer = client.explain("story", "story-copy")
    dedup = client.dedup(["story", "story-copy"])
    assert answer.duplicate and dedup.duplicate_of == (-1, 0)
    assert answer.similarity == dedup.similarity[1]  # the same kernel: exactly equal
    assert answer.to_dict()["similarity"] == dedup.to_dict()["duplicates"][0]["similarity"]  # printed alike (JSON)
    info = client.info()
    assert (answer.threshold, answer.metric) == (info.default_threshold, info.default_metric)
    assert not answer.a.has_text and not answer.b.has_text
    assert answer.a.shared == answer.b.sketch_shared == answer.b.boilerplate == []
    assert answer.a.sketch_values == info.sketch_config["k"] and answer.shared_sketch_values > 0
    assert "spans need both texts" in answer.note and "a and b came without text" in answer.note
    # containment, read from the counts: shared values over the fewer compared values
    assert answer.similarity == pytest.approx(
        answer.shared_sketch_values / min(answer.a.compared_values, answer.b.compared_values))


def test_two_texts_answer_their_shared_passages_and_boilerplate(client):
    copy = TEXTS["story-copy"]
    answer = client.explain(Document("story", text=TEXTS["story"]), Document("copy", text=copy))
    stored = client.explain("story", "story-copy")
    assert (answer.similarity, answer.duplicate) == (stored.similarity, stored.duplicate)  # same sketches
    assert answer.note == "" and answer.a.has_text and answer.b.has_text and answer.b.id == "copy"
    # the copy shares the story's first ten sentences: one passage, from the first word to the last (a span ends
    # with its last word)
    assert _spans_text(copy, answer.b.shared) == [text(STORY[:10]).rstrip(".")]
    # the footer is boilerplate: stop-listed when the store was indexed
    assert _spans_text(copy, answer.b.boilerplate) == [FOOTER.rstrip(".")]
    assert answer.b.stoplisted_shingles > 0 and client.info().stoplist_size > 0
    # the values that decided the similarity come from shared passages, and are what the counts say
    assert answer.b.sketch_shared and _covered(answer.b.sketch_shared) <= _covered(answer.b.shared)
    assert answer.shared_sketch_values == stored.shared_sketch_values
    # the story has no boilerplate, so every shingle both texts have is a shared one
    assert answer.a.stoplisted_shingles == 0
    assert answer.shared_shingles == len(_hashes(client, copy) & _hashes(client, TEXTS["story"]))


def _hashes(client, body: str) -> set[int]:
    """The text's shingle hashes under the store's configuration (the stop-list does not change them)."""
    config = SketchConfig(**{**client.info().sketch_config, "stoplist_digest": ""})
    return Sketcher(config).hashes(body)


def test_spans_count_code_points(client):
    """An astral character and a two-code-point lowercase before the shared passage: offsets are code points."""
    copy = TEXTS["story-copy"]
    answer = client.explain(Document("", text=TEXTS["story"]), Document("", text=copy))
    first = answer.b.shared[0][0]
    assert copy[first:].startswith(STORY[0].split()[0]) and copy.index(STORY[0]) == first


def test_a_text_against_a_stored_id(client):
    copy = TEXTS["story-copy"]
    answer = client.explain("story", Document("copy", text=copy))
    assert answer.duplicate and not answer.a.has_text and answer.b.has_text
    assert answer.b.shared == [] and answer.b.sketch_shared and answer.b.boilerplate
    assert "a came without text" in answer.note


def test_the_request_decides_threshold_and_metric(client):
    strict = client.explain("story", "story-copy", threshold=0.99, metric="jaccard")
    assert (strict.threshold, strict.metric, strict.duplicate) == (0.99, "jaccard", False)
    dedup = client.dedup(["story", "story-copy"], metric="jaccard", threshold=0.1)
    assert client.explain("story", "story-copy", metric="jaccard").similarity == dedup.similarity[1]
    distinct = client.explain("story", "other")
    assert not distinct.duplicate and distinct.similarity < 0.1


def test_the_async_client_explains_too(server):
    async def explain():
        async with AsyncNearDupClient(server.target, timeout=10) as client:
            return await client.explain(Document("a", text=TEXTS["story"]), Document("b", text=TEXTS["story-copy"]))

    answer = asyncio.run(explain())
    with NearDupClient(server.target, timeout=10) as client:
        assert answer == client.explain(Document("a", text=TEXTS["story"]), Document("b", text=TEXTS["story-copy"]))


def _detail_field(error: grpc.RpcError) -> str | None:
    status = rpc_status.from_call(error)
    if status is None or not status.details or not status.details[0].Is(error_details_pb2.BadRequest.DESCRIPTOR):
        return None
    detail = error_details_pb2.BadRequest()
    status.details[0].Unpack(detail)
    return detail.field_violations[0].field


@pytest.mark.parametrize("request_message, code, field, words", [
    (pb.ExplainRequest(a=pb.Document(id="story")), "INVALID_ARGUMENT", "b", "b is missing"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document()), "INVALID_ARGUMENT", "b", "b is empty"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document(id="story"), threshold=1.5), "INVALID_ARGUMENT",
     "threshold", "threshold"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document(id="story"), threshold=math.nan),
     "INVALID_ARGUMENT", "threshold", "threshold"),
    (pb.ExplainRequest(a=pb.Document(id="x" * 600), b=pb.Document(id="story")), "INVALID_ARGUMENT", "a.id", "511"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document(text="one", lang="klingon")), "INVALID_ARGUMENT",
     "b.lang", "klingon"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document(sketch=b"\x01\x02\x03")), "INVALID_ARGUMENT",
     "b.sketch", "multiple of 4"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document(id="nowhere")), "NOT_FOUND", None, "'nowhere'"),
    (pb.ExplainRequest(a=pb.Document(id="story"), b=pb.Document(id="story"), metric=pb.METRIC_HAMMING),
     "FAILED_PRECONDITION", None, "hamming"),
    (pb.ExplainRequest(a=pb.Document(text="x"), b=pb.Document(text="y" * (DEFAULT_MAX_TEXT_BYTES + 1))),
     "RESOURCE_EXHAUSTED", None, "over the limit"),
])
def test_bad_requests_get_their_status_code_and_the_field(server, request_message, code, field, words):
    with grpc.insecure_channel(server.target, options=[("grpc.max_send_message_length", 64 << 20)]) as channel:
        call = channel.unary_unary("/neardup.v1.NearDup/Explain")
        with pytest.raises(grpc.RpcError) as refused:
            call(request_message.SerializeToString(), timeout=30)
        assert refused.value.code().name == code, refused.value.details()
        assert words in refused.value.details()
        assert _detail_field(refused.value) == field
        with pytest.raises(grpc.RpcError) as malformed:
            call(b"\xff\xff\xff", timeout=30)
        assert malformed.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_a_sketch_of_another_configuration_is_a_failed_precondition(client):
    other = pb.SketchConfig(unit="word:2", k=128, lang="english", hash="crc32", sketcher_version=2, kind="bottomk")
    with grpc.insecure_channel(client.target) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary("/neardup.v1.NearDup/Explain")(pb.ExplainRequest(
                a=pb.Document(id="story"), b=pb.Document(sketch=b""), sketch_config=other).SerializeToString(),
                timeout=10)
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION and "unit" in refused.value.details()


# --- other stores -------------------------------------------------------------------------------------------------

def test_a_simhash_store_answers_the_hamming_similarity_and_shared_shingles(indexed_store):
    store = indexed_store("explain-simhash", TEXTS, "--sketch", "simhash")
    with serving(store) as running, NearDupClient(running.target, timeout=10) as client:
        answer = client.explain(Document("a", text=TEXTS["story"]), Document("b", text=TEXTS["story-copy"]))
        dedup = client.dedup([Document("a", text=TEXTS["story"]), Document("b", text=TEXTS["story-copy"])],
                             threshold=0.0)
        assert answer.metric == "hamming" and answer.similarity == dedup.similarity[1]
        assert answer.b.shared and answer.b.sketch_shared == [] and answer.shared_sketch_values == 0
        assert "simhash" in answer.note
        by_ids = client.explain("story", "story-copy")
        assert by_ids.similarity == answer.similarity


def test_an_items_pair_is_explained_field_by_field(tmp_path):
    """An items store compares fields: Explain answers the pair's score as Dedup scores it, each field's similarity
    and weight (None where a record lacks the field), and no spans; a pair no rule can match says so."""
    from neardup.cli.main import main

    records, _ = records_with_typos()
    (tmp_path / "schema.json").write_text(json.dumps(RECORD_SCHEMA))
    corpus = write_jsonl(tmp_path / "records.jsonl", records)
    assert main(["index", str(corpus), "--store", str(tmp_path / "store"), "--fields",
                 str(tmp_path / "schema.json")]) == 0
    fields = {record["id"]: record["fields"] for record in records}
    (missing,) = [n for n in range(120) if "postcode" not in fields[f"p{n}-again"]][:1]
    with serving(tmp_path / "store") as running, NearDupClient(running.target, timeout=10) as client:
        for a, b in (("p0", "p0-again"), (f"p{missing}", f"p{missing}-again")):
            answer = client.explain(a, b)
            dedup = client.dedup([a, b], threshold=0.0)
            assert answer.metric == "fields" and math.isclose(answer.similarity, dedup.similarity[1])
            assert answer.duplicate == (answer.similarity >= answer.threshold) and answer.note == ""
            assert [(f.name, f.kind) for f in answer.fields] == [("name", "text"), ("address", "text"),
                                                                  ("postcode", "exact")]
            # no trained model: the pair's score is the mean of its fields' similarities under the weights answered
            # (those the store learned), over the fields both records have
            present = [f for f in answer.fields if f.similarity is not None]
            assert math.isclose(answer.similarity, sum(f.weight * f.similarity for f in present) /
                                sum(f.weight for f in present))
            shown = {f.name: f.similarity for f in answer.fields}
            assert shown["name"] is not None and 0 < shown["name"] <= 1
            assert shown["postcode"] == (None if b == f"p{missing}-again" else 1.0)
            assert not answer.a.has_text and answer.a.shared == [] and answer.a.id == a
        # a pair no rule matches (no word of a name or an address in common, other postcodes): never compared
        words = {doc_id: {value for name in ("name", "address") for value in record.get(name, "").lower().split()}
                 | {record.get("postcode")} for doc_id, record in fields.items()}
        other = next(f"p{n}" for n in range(1, 150) if not words["p0"] & words[f"p{n}"])
        unrelated = client.explain("p0", other)
        assert unrelated.similarity == 0 and not unrelated.duplicate
        assert "share no super token" in unrelated.note and [f.similarity for f in unrelated.fields] == [None] * 3
        assert client.dedup(["p0", other], threshold=0.0).duplicates == []  # Dedup does not compare them either
        done = subprocess.run([*NEARDUP, "explain", "p0", "p0-again", "--target", running.target],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == EXIT_OK, done.stderr
        assert json.loads(done.stdout)["fields"] == [dataclasses.asdict(f) for f in client.explain("p0", "p0-again")
                                                     .fields]


# --- token and metrics --------------------------------------------------------------------------------------------

def test_explain_needs_the_token_and_is_measured(store, tmp_path):
    token = tmp_path / "token"
    token.write_text("s3cret-token-for-explain\n")
    metrics_port = free_port()
    with Server(store, "--token-file", str(token), "--metrics-port", str(metrics_port)) as running:
        with NearDupClient(running.target, timeout=10) as anonymous:
            with pytest.raises(NearDupClientError) as refused:
                anonymous.explain("story", "story-copy")
            assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
        with NearDupClient(running.target, timeout=10, token="s3cret-token-for-explain") as client:
            assert client.explain("story", "story-copy").duplicate
            with pytest.raises(NearDupClientError):
                client.explain("story", "nowhere")
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as response:
            body = response.read().decode()
        assert running.stop() == 0
    counted = {sample.labels["code"]: sample.value for family in text_string_to_metric_families(body)
               for sample in family.samples
               if sample.name == "neardup_rpc_duration_seconds_count" and sample.labels["method"] == "Explain"}
    assert counted == {"OK": 1, "NOT_FOUND": 1, "UNAUTHENTICATED": 1}


# --- the command line ---------------------------------------------------------------------------------------------

def test_the_command_line_explains_ids_texts_and_json_lines(neardup, server, tmp_path):
    story, copy = tmp_path / "story.txt", tmp_path / "copy.txt"
    story.write_text(TEXTS["story"], encoding="utf-8")
    copy.write_text(TEXTS["story-copy"], encoding="utf-8")
    done = neardup("explain", "--target", server.target, "story", "story-copy")
    assert done.returncode == EXIT_OK, done.stderr
    by_ids = json.loads(done.stdout)
    assert by_ids["duplicate"] and by_ids["a"]["id"] == "story" and not by_ids["b"]["has_text"]
    done = neardup("explain", "--target", server.target, "--text-a", story, "--text-b", copy)
    by_texts = json.loads(done.stdout)
    assert by_texts["b"]["id"] == "copy.txt" and by_texts["similarity"] == by_ids["similarity"]
    assert _spans_text(TEXTS["story-copy"], by_texts["b"]["boilerplate"]) == [FOOTER.rstrip(".")]
    done = neardup("explain", "--target", server.target, "story", "--text-b", copy, "--threshold", "0.99")
    mixed = json.loads(done.stdout)
    assert (mixed["a"]["id"], mixed["b"]["has_text"], mixed["duplicate"]) == ("story", True, False)
    records = write_jsonl(tmp_path / "pair.jsonl", [{"id": "story"}, {"id": "copy", "text": TEXTS["story-copy"]}])
    done = neardup("explain", "--target", server.target, "--jsonl", records)
    assert json.loads(done.stdout) == {**mixed, "threshold": by_ids["threshold"], "duplicate": True,
                                       "b": {**mixed["b"], "id": "copy"}}


@pytest.mark.parametrize("argv, code, message", [
    (["story"], EXIT_USAGE, "give two documents"),
    (["story", "story-copy", "other"], EXIT_USAGE, "give two documents"),
    (["story", "story-copy", "--text-a", "{file}"], EXIT_USAGE, "give two documents"),
    (["--jsonl", "{file}", "story"], EXIT_USAGE, "--jsonl gives both documents"),
    (["--jsonl", "{file}"], EXIT_FAILED, "the file holds 1"),
    (["story", "story-copy", "--lang", "german"], EXIT_USAGE, "--lang goes with"),
    (["story", "nowhere"], EXIT_FAILED, "NOT_FOUND: no article 'nowhere' is stored"),
    (["story", "story-copy", "--threshold", "2"], EXIT_USAGE, "argument --threshold: must be in [0, 1]"),
    (["story", "story-copy", "--metric", "hamming"], EXIT_FAILED, "FAILED_PRECONDITION: "),
    (["--text-a", "{missing}", "story"], EXIT_FAILED, "cannot read"),
])
def test_the_command_line_says_what_is_wrong(neardup, server, tmp_path, argv, code, message):
    one = write_jsonl(tmp_path / "one.jsonl", [{"id": "story"}])
    done = neardup("explain", "--target", server.target,
                   *(arg.format(file=one, missing=tmp_path / "missing.txt") for arg in argv))
    assert (done.returncode, done.stdout) == (code, "")
    assert message in done.stderr and done.stderr.count("\n") == 1, done.stderr
