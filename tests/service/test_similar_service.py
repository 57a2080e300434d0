"""FindSimilar end to end: real `neardup serve` processes on real stores (texts indexed by `neardup index`, and
sketches of known overlaps), answers held to an exhaustive scan with the reference similarity; the clients, the
command line, the errors, auth, metrics and writes seen across worker processes."""
from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import subprocess
import urllib.request
from pathlib import Path

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from neardup.core import reference
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.core.encoding import decode_sketch, encode_sketch
from neardup.store import create_store, open_store
from neardup_client import AsyncNearDupClient, Document, Match, NearDupClient, NearDupClientError, SimilarResult
from neardup_client import cli as client_cli
from neardup_client.cli_framework import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from observe import HEAVY, imported_by, new_connection
from server_process import NEARDUP, free_port, run_neardup, serving
from textgen import article, text

NEARDUP_SERVICE = "neardup.v1.NearDup"
TOKEN = "similar-Token.42"
DEFAULT_TOP_K = 10


def corpus() -> dict[str, str]:
    """Two stories with republications (a wire copy, an excerpt, an edited copy), and unrelated articles."""
    a, b = article(21), article(22)
    edited = [s.replace(s.split()[2], "harbourmaster", 1) if i % 4 == 0 else s for i, s in enumerate(a)]
    return {
        "a": text(a),
        "a-wire": "BREAKING from the wire. " + text(a) + " Share this story with friends today.",
        "a-cut": text(a[:8]),
        "a-edited": text(edited),
        "b": text(b),
        "b-copy": "Reposted: " + text(b[1:]),
        **{f"other-{n}": text(article(30 + n)) for n in range(6)},
    }


def synthetic() -> dict[str, list[int]]:
    """Families of sketches with known overlaps: a full, a shorter and a short (under reference.MIN_EVIDENCE
    values) original, each with variants keeping 95 %, 70 % and 45 % of its values, and an excerpt (its
    smallest values); and a crowd: 14 copies of one sketch, keeping 50 % to 91 % of it."""
    rng = random.Random(7)
    sketches = {}
    for family, length in enumerate((128, 128, 60, 12)):
        base = rng.sample(range(1, 2**32), length)
        sketches[f"s{family}"] = sorted(base)
        for variant, keep in enumerate((0.95, 0.7, 0.45)):
            kept = rng.sample(base, round(length * keep))
            sketches[f"s{family}-v{variant}"] = sorted(set(kept + rng.sample(range(1, 2**32), length - len(kept))))
        sketches[f"s{family}-excerpt"] = sorted(base)[:max(4, length // 3)]
    crowd = rng.sample(range(1, 2**32), 128)
    sketches["crowd"] = sorted(crowd)
    for copy in range(14):
        kept = rng.sample(crowd, 64 + 4 * copy)
        sketches[f"crowd-{copy:02}"] = sorted(set(kept + rng.sample(range(1, 2**32), 128 - len(kept))))
    return sketches


def expected(query: list[int], stored: dict[str, list[int]], k: int, threshold: float, metric: str,
             top_k: int = DEFAULT_TOP_K, exclude: str | None = None) -> list[tuple[str, float]]:
    """The exhaustive answer: every stored sketch but the query's own, scored with reference.similarity."""
    scored = [(doc_id, reference.similarity(query, values, k, metric)) for doc_id, values in stored.items()
              if doc_id != exclude]
    return sorted(((doc_id, score) for doc_id, score in scored if score >= threshold),
                  key=lambda match: (-match[1], match[0]))[:top_k]


def pairs(result: SimilarResult) -> list[tuple[str, float]]:
    return [(match.id, match.similarity) for match in result.matches]


@pytest.fixture(scope="module")
def store(store) -> Path:
    """conftest.py's store of corpus() (the texts indexed by `neardup index`), then the synthetic sketches written
    into it."""
    with open_store(store) as opened:
        opened.put_many([(doc_id, encode_sketch(values)) for doc_id, values in synthetic().items()])
    return store


@pytest.fixture(scope="module", params=["store", "memory"])
def server(store, request):
    """`neardup serve` on the module's store, searching the store's postings or its in-memory index: every test
    of the answers runs against both."""
    with serving(store, "--search-index", request.param) as running:
        yield running


@pytest.fixture(scope="module")
def stored(store) -> tuple[dict[str, list[int]], int, Sketcher]:
    """Every stored sketch as values, K, and a sketcher of the store's configuration and stop-list."""
    ids = [*corpus(), *synthetic()]
    with open_store(store, readonly=True) as opened:
        sketches = dict(zip(ids, opened.get_many(ids)))
        assert opened.count() == len(ids) and all(sketches.values())
        return ({doc_id: decode_sketch(sketch) for doc_id, sketch in sketches.items()}, opened.config.k,
                Sketcher(opened.config, opened.stoplist))


def stub_call(target: str, request, **kwargs):
    """FindSimilar through the generated stub; the status code name and the answer (or the details)."""
    with grpc.insecure_channel(target) as channel:
        method = neardup_pb2_grpc.NearDupStub(channel).FindSimilar
        try:
            return "OK", method(request, timeout=10, **kwargs)
        except grpc.RpcError as error:
            return error.code().name, error.details()


# --- answers ------------------------------------------------------------------------------------------------------

def test_the_copies_of_a_story_are_found_best_first_and_never_the_story_itself(client):
    answer = client.find_similar("a", threshold=0.5)
    assert {m.id for m in answer.matches} == {"a-wire", "a-cut", "a-edited"}
    assert [m.similarity for m in answer.matches] == sorted((m.similarity for m in answer.matches), reverse=True)
    assert all(0.5 <= m.similarity <= 1.0 for m in answer.matches)
    assert (answer.exact, answer.threshold, answer.metric, answer.top_k) == (True, 0.5, "containment", DEFAULT_TOP_K)
    assert [m.id for m in client.find_similar("b", threshold=0.5).matches] == ["b-copy"]
    assert client.find_similar("other-0", threshold=0.5).matches == []


@pytest.mark.parametrize("metric", ["containment", "jaccard"])
@pytest.mark.parametrize("threshold", [0.1, 0.3, 0.52, 0.9])
def test_by_id_equals_an_exhaustive_scan(client, stored, metric, threshold):
    sketches, k, _ = stored
    for doc_id, values in sketches.items():
        answer = client.find_similar(doc_id, threshold=threshold, metric=metric)
        assert pairs(answer) == expected(values, sketches, k, threshold, metric, exclude=doc_id), doc_id
        assert answer.exact and answer.metric == metric and answer.threshold == threshold


def test_by_sketch_equals_an_exhaustive_scan(client, stored):
    sketches, k, _ = stored
    rng = random.Random(11)
    queries = {
        "most of s0": sorted(set(rng.sample(sketches["s0"], 90) + rng.sample(range(1, 2**32), 38))),
        "half of s2 and a third of s1": sorted(set(rng.sample(sketches["s2"], 30) + rng.sample(sketches["s1"], 40))),
        "the short s3": sketches["s3"],
        "nothing stored": sorted(rng.sample(range(1, 2**32), 128)),
        "one value": [sketches["s1"][0]],
    }
    for name, values in queries.items():
        for metric in ("containment", "jaccard"):
            for threshold in (0.2, 0.6):
                answer = client.find_similar(document=Document("", sketch=encode_sketch(values)),
                                             threshold=threshold, metric=metric, top_k=5)
                assert pairs(answer) == expected(values, sketches, k, threshold, metric, top_k=5), (name, metric)
    # its own sketch and its excerpt contain each other fully (ties: by id), then the copy keeping 95 %
    assert [m.id for m in client.find_similar(document=Document("", sketch=encode_sketch(sketches["s0"])),
                                              threshold=0.9).matches] == ["s0", "s0-excerpt", "s0-v0"]


def test_by_text_equals_an_exhaustive_scan_of_the_text_sketched_like_the_store(client, stored):
    sketches, k, sketcher = stored
    texts = corpus()
    fresh = "From a blog: " + texts["b"] + " " + text(article(40)[:3])
    for query in (texts["a"], fresh, texts["other-3"][:300]):
        values = decode_sketch(sketcher.sketch(query))
        for metric in ("containment", "jaccard"):
            answer = client.find_similar(document=Document("", text=query), threshold=0.3, metric=metric)
            assert pairs(answer) == expected(values, sketches, k, 0.3, metric), metric
    # the same text as a stored article: that article is a match (similarity 1) unless the document names it
    assert client.find_similar(document=Document("", text=texts["a"])).matches[0] == Match("a", 1.0)
    assert client.find_similar(document=Document("new", text=texts["a"])).matches[0] == Match("a", 1.0)
    named = client.find_similar(document=Document("a", text=texts["a"]))
    assert "a" not in {m.id for m in named.matches} and {"a-wire", "a-cut"} <= {m.id for m in named.matches}


def test_top_k_keeps_the_best_in_order(client, stored):
    sketches, k, _ = stored
    everything = client.find_similar("s0", threshold=0.05, top_k=2000)
    assert len(everything.matches) == 4 and everything.top_k == 2000  # s0's variants and excerpt
    for top_k in (1, 2, 3):
        answer = client.find_similar("s0", threshold=0.05, top_k=top_k)
        assert answer.matches == everything.matches[:top_k] and answer.top_k == top_k
    assert pairs(everything) == expected(sketches["s0"], sketches, k, 0.05, "containment", 2000, exclude="s0")
    # 14 copies reach the threshold: the default top_k answers the best ten, the closest copy first
    crowd = client.find_similar("crowd", threshold=0.3, top_k=2000)
    assert [m.id for m in crowd.matches] == [f"crowd-{copy:02}" for copy in range(13, -1, -1)]
    default = client.find_similar("crowd", threshold=0.3)
    assert default.matches == crowd.matches[:10] and default.top_k == 10


def test_threshold_0_matches_the_articles_sharing_a_value(client, stored):
    """As the proto says: an article that shares no sketch value with the query is never a match."""
    sketches, k, _ = stored
    answer = client.find_similar("s1", threshold=0.0, top_k=2000)
    sharing = {doc_id for doc_id, values in sketches.items() if doc_id != "s1" and set(values) & set(sketches["s1"])}
    assert {m.id for m in answer.matches} == sharing
    assert len(sharing) < len(sketches) - 1  # some stored articles share nothing and are left out


def test_an_id_query_ignores_sketch_config_a_document_query_checks_it(server, client):
    info = client.info()
    assert info.indexed is True
    other = pb.SketchConfig(**{**info.sketch_config, "k": info.sketch_config["k"] + 1})
    code, answer = stub_call(server.target, pb.FindSimilarRequest(id="a", threshold=0.5, sketch_config=other))
    assert code == "OK" and {m.id for m in answer.matches} == {"a-wire", "a-cut", "a-edited"}
    document = pb.Document(sketch=encode_sketch([1, 2, 3]))
    code, details = stub_call(server.target, pb.FindSimilarRequest(document=document, sketch_config=other))
    assert code == "FAILED_PRECONDITION" and "k=" in details
    same = pb.SketchConfig(**info.sketch_config)
    assert stub_call(server.target, pb.FindSimilarRequest(document=document, sketch_config=same))[0] == "OK"


def test_the_answer_on_the_wire_states_the_defaults_applied(server, client):
    info = client.info()
    code, answer = stub_call(server.target, pb.FindSimilarRequest(id="b"))
    assert code == "OK"
    assert (answer.top_k, answer.threshold, answer.metric) == (DEFAULT_TOP_K, info.default_threshold,
                                                               pb.METRIC_CONTAINMENT)
    assert [(m.id, m.similarity) for m in answer.matches] == pairs(client.find_similar("b"))


# --- errors -------------------------------------------------------------------------------------------------------

BOTH = pb.FindSimilarRequest(id="a").SerializeToString() + pb.FindSimilarRequest(
    document=pb.Document(text="some words to search with")).SerializeToString()


@pytest.mark.parametrize("request_, code", [
    (pb.FindSimilarRequest(id="never-stored"), "NOT_FOUND"),
    (pb.FindSimilarRequest(id="a", threshold=-0.1), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(id="a", threshold=1.5), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(id="a", threshold=math.nan), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(id="a", metric=7), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(top_k=5, threshold=0.5), "INVALID_ARGUMENT"),
    (BOTH, "INVALID_ARGUMENT"),
    (b"\xff\xff\xff", "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(id=""), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(id="x" * 600), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(document=pb.Document(id="a")), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(document=pb.Document(sketch=b"\x01\x02\x03")), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(document=pb.Document(sketch=encode_sketch([2, 1]))), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(document=pb.Document(text="words", lang="tlh")), "INVALID_ARGUMENT"),
    (pb.FindSimilarRequest(document=pb.Document(sketch=bytes(4 * 5000))), "FAILED_PRECONDITION"),
    (pb.FindSimilarRequest(id="a", top_k=2001), "RESOURCE_EXHAUSTED"),
], ids=["unknown id", "threshold -0.1", "threshold 1.5", "threshold NaN", "metric 7", "no query",
        "parameters without a query", "id and document", "malformed", "empty id", "id of 600 bytes",
        "document without text or sketch", "sketch of 3 bytes", "sketch not ascending", "unknown language",
        "sketch longer than K", "top_k over --max-result-set"])
def test_a_bad_request_gets_its_status_and_the_server_keeps_serving(server, request_, code):
    with grpc.insecure_channel(server.target) as channel:
        raw = channel.unary_unary(f"/{NEARDUP_SERVICE}/FindSimilar")
        with pytest.raises(grpc.RpcError) as raised:
            raw(request_ if isinstance(request_, bytes) else request_.SerializeToString(), timeout=10)
    assert raised.value.code().name == code, raised.value.details()
    assert raised.value.details() and "internal" not in raised.value.details()
    ok, answer = stub_call(server.target, pb.FindSimilarRequest(id="a", top_k=2000, threshold=0.5))
    assert ok == "OK" and len(answer.matches) == 3


def test_the_messages_say_what_to_fix(client):
    with pytest.raises(NearDupClientError) as raised:
        client.find_similar("never-stored")
    assert raised.value.code == grpc.StatusCode.NOT_FOUND and "'never-stored'" in raised.value.details
    with pytest.raises(NearDupClientError) as raised:
        client.find_similar("a", top_k=2001)
    assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "2000" in raised.value.details
    with grpc.insecure_channel(client.target) as channel:
        with pytest.raises(grpc.RpcError) as raised:
            channel.unary_unary(f"/{NEARDUP_SERVICE}/FindSimilar")(BOTH, timeout=10)
    assert "not both" in raised.value.details()


def test_the_client_refuses_a_query_it_cannot_send():
    with NearDupClient(f"127.0.0.1:{free_port()}") as client:  # nothing is sent: no server needed
        for kwargs in ({}, {"id": "a", "document": Document("", text="x")}, {"id": "a", "top_k": 0},
                       {"id": "a", "top_k": -3}, {"id": "a", "metric": "cosine"}):
            with pytest.raises(ValueError):
                client.find_similar(**kwargs)


def test_a_store_without_postings_is_failed_precondition_and_still_dedups(tmp_path, stored):
    sketches, _, _ = stored
    path = tmp_path / "plain"
    with create_store(path, SketchConfig(), [], indexed=False) as plain:
        plain.put_many([(doc_id, encode_sketch(values)) for doc_id, values in synthetic().items()])
    with serving(path) as server, NearDupClient(server.target, timeout=10) as client:
        assert client.info().indexed is False
        for query in ({"id": "s0"}, {"document": Document("", sketch=encode_sketch(sketches["s0"]))},
                      {"id": "never-stored"}):
            with pytest.raises(NearDupClientError) as raised:
                client.find_similar(**query)
            assert raised.value.code == grpc.StatusCode.FAILED_PRECONDITION
            assert "keeps no postings" in raised.value.details and "re-index" in raised.value.details
        assert client.dedup(["s0", "s0-v0", "s1"], threshold=0.5).keep == ["s0", "s1"]


# --- writes, workers, auth, metrics -------------------------------------------------------------------------------

def one_stub_per_worker(target: str, connections: contextlib.ExitStack, metadata) -> list:
    """Stubs on two connections served by different workers: the first of each worker's connections to ask a
    Dedup computes it, the others on that worker find it in its session cache."""
    asked = pb.DedupRequest(ids=["s0", "s1", "s0-v0"], threshold=0.5)
    per_worker = []
    for _ in range(64):
        stub = neardup_pb2_grpc.NearDupStub(connections.enter_context(new_connection(target)))
        if not stub.Dedup(asked, timeout=10, metadata=metadata).cached:
            per_worker.append(stub)
            if len(per_worker) == 2:
                return per_worker
    raise AssertionError("every connection went to the same worker")


def scrape(port: int) -> dict[tuple[str, str], float]:
    """(method, code) -> calls of the NearDup service, from the latency histogram's _count."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        body = response.read().decode("utf-8")
    return {(s.labels["method"], s.labels["code"]): s.value for family in text_string_to_metric_families(body)
            for s in family.samples
            if s.name == "neardup_rpc_duration_seconds_count" and s.labels["service"] == NEARDUP_SERVICE}


@pytest.fixture(scope="module", params=["store", "memory"])
def guarded(indexed_store, tmp_path_factory, request):
    """Two workers, a token, metrics, a small --max-result-set and --max-message-bytes, on a store of its own
    (the tests write to it); searching the store or each worker's in-memory index."""
    store = indexed_store("similar-guarded", corpus())
    token_file = tmp_path_factory.mktemp("similar-token") / "token"
    token_file.write_text(TOKEN + "\n")
    metrics_port = free_port()
    with serving(store, "--token-file", str(token_file), "--metrics-port", str(metrics_port),
                 "--max-result-set", "20", "--max-message-bytes", "65536", "--search-index", request.param, workers=2,
                 port=free_port()) as running:
        running.metrics_port = metrics_port
        yield running


def test_a_write_is_seen_by_the_next_search_of_every_worker(guarded):
    texts = corpus()
    metadata = (("authorization", f"Bearer {TOKEN}"),)
    with contextlib.ExitStack() as connections:
        first, second = one_stub_per_worker(guarded.target, connections, metadata)

        def similar_to_b(stub) -> set[str]:
            request = pb.FindSimilarRequest(id="b", threshold=0.5)
            return {m.id for m in stub.FindSimilar(request, timeout=10, metadata=metadata).matches}

        assert similar_to_b(first) == similar_to_b(second) == {"b-copy"}
        upsert = pb.UpsertRequest(documents=[pb.Document(id="b-late", text="Late edition. " + texts["b"])])
        first.Upsert(upsert, timeout=10, metadata=metadata)
        assert similar_to_b(second) == similar_to_b(first) == {"b-late", "b-copy"}
        # the new article is searchable by its id at once, on the other worker too
        late = second.FindSimilar(pb.FindSimilarRequest(id="b-late", threshold=0.5), timeout=10, metadata=metadata)
        assert {m.id for m in late.matches} == {"b", "b-copy"}
        second.Delete(pb.DeleteRequest(ids=["b-late", "b-copy"]), timeout=10, metadata=metadata)
        assert similar_to_b(first) == similar_to_b(second) == set()
        with pytest.raises(grpc.RpcError) as raised:
            first.FindSimilar(pb.FindSimilarRequest(id="b-copy"), timeout=10, metadata=metadata)
        assert raised.value.code() == grpc.StatusCode.NOT_FOUND
        first.Upsert(pb.UpsertRequest(documents=[pb.Document(id="b-copy", text=texts["b-copy"])]), timeout=10,
                     metadata=metadata)  # restore for the other tests
        assert similar_to_b(second) == {"b-copy"}


def test_the_token_is_required(guarded):
    for token in (None, "wrong"):
        with NearDupClient(guarded.target, token=token, timeout=10) as client:
            with pytest.raises(NearDupClientError) as raised:
                client.find_similar("a")
            assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
    with NearDupClient(guarded.target, token=TOKEN, timeout=10) as client:
        assert {m.id for m in client.find_similar("a", threshold=0.5).matches} == {"a-wire", "a-cut", "a-edited"}


def test_the_server_limits_apply(guarded):
    with NearDupClient(guarded.target, token=TOKEN, timeout=10) as client:
        assert client.find_similar("a", top_k=20).top_k == 20
        with pytest.raises(NearDupClientError) as raised:
            client.find_similar("a", top_k=21)
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "20" in raised.value.details
        with pytest.raises(NearDupClientError) as raised:
            client.find_similar(document=Document("", text="word " * 20_000))
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert client.info().max_result_set == 20


def test_find_similar_calls_are_counted_per_status_code(guarded):
    before = scrape(guarded.metrics_port)
    with NearDupClient(guarded.target, token=TOKEN, timeout=10) as client:
        for _ in range(3):
            client.find_similar("a")
        client.find_similar(document=Document("", text=corpus()["b"]))
        for bad in ({"id": "never-stored"}, {"id": "a", "threshold": 2.0}, {"id": "a", "top_k": 50}):
            with pytest.raises(NearDupClientError):
                client.find_similar(**bad)
    with NearDupClient(guarded.target, timeout=10) as anonymous:
        with pytest.raises(NearDupClientError):
            anonymous.find_similar("a")
    after = scrape(guarded.metrics_port)
    counted = {key: after[key] - before.get(key, 0.0) for key in after if after[key] != before.get(key, 0.0)}
    assert counted == {("FindSimilar", "OK"): 4, ("FindSimilar", "NOT_FOUND"): 1,
                       ("FindSimilar", "INVALID_ARGUMENT"): 1, ("FindSimilar", "RESOURCE_EXHAUSTED"): 1,
                       ("FindSimilar", "UNAUTHENTICATED"): 1}


# --- the async client ---------------------------------------------------------------------------------------------

def test_async_client(server, client):
    async def main():
        async with AsyncNearDupClient(server.target, timeout=10) as connected:
            answers = await asyncio.gather(
                connected.find_similar("a", threshold=0.5),
                connected.find_similar(document=Document("", text=corpus()["b"]), top_k=1),
                connected.find_similar("s2", metric="jaccard", threshold=0.3))
            try:
                await connected.find_similar("never-stored")
            except NearDupClientError as error:
                missing = error
            with pytest.raises(ValueError):
                await connected.find_similar()
        return answers, missing

    answers, missing = asyncio.run(main())
    assert answers[0] == client.find_similar("a", threshold=0.5)
    assert pairs(answers[1]) == [("b", 1.0)] and answers[1].top_k == 1
    assert answers[2] == client.find_similar("s2", metric="jaccard", threshold=0.3) and answers[2].matches
    assert missing.code == grpc.StatusCode.NOT_FOUND


# --- the command line ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", [None, client_cli.main], ids=["neardup", "neardup-client"])
def test_similar_prints_json_like_dedup(neardup, server, client, tmp_path, entry):
    run = (lambda *args: neardup(*args)) if entry is None else (lambda *args: neardup(*args, entry=entry))
    done = run("similar", "--target", server.target, "--threshold", "0.5", "a")
    assert (done.returncode, done.stderr) == (EXIT_OK, "")
    printed = json.loads(done.stdout)
    assert printed == client.find_similar("a", threshold=0.5).to_dict()
    assert {m["id"] for m in printed["matches"]} == {"a-wire", "a-cut", "a-edited"}
    assert (printed["exact"], printed["threshold"], printed["metric"], printed["top_k"]) == (True, 0.5,
                                                                                              "containment", 10)
    query = tmp_path / "query.txt"
    query.write_text("Seen elsewhere. " + corpus()["b"], encoding="utf-8")
    done = run("similar", "--target", server.target, "--text", str(query), "--top-k", "1", "--metric", "jaccard")
    assert done.returncode == EXIT_OK, done.stderr
    printed = json.loads(done.stdout)
    assert [m["id"] for m in printed["matches"]] == ["b"] and printed["metric"] == "jaccard"
    assert printed["top_k"] == 1


def test_similar_reads_the_text_from_stdin(server):
    done = subprocess.run([*NEARDUP, "similar", "--target", server.target, "--text", "-", "--threshold", "0.5"],
                          input=corpus()["a-cut"].encode(), capture_output=True, timeout=60)
    assert done.returncode == EXIT_OK, done.stderr
    assert {m["id"] for m in json.loads(done.stdout)["matches"]} >= {"a", "a-cut", "a-wire"}


def test_similar_exit_codes(neardup, server, tmp_path):
    target = ("--target", server.target)
    not_found = neardup("similar", *target, "never-stored")
    assert not_found.returncode == EXIT_FAILED and not_found.stdout == ""
    assert not_found.stderr.startswith("neardup: error: NOT_FOUND: ") and not_found.stderr.count("\n") == 1
    bad = neardup("similar", *target, "--metric", "hamming", "a")  # refused by the server: a bottom-K store
    assert bad.returncode == EXIT_FAILED and bad.stderr.startswith("neardup: error: FAILED_PRECONDITION: ")
    over = neardup("similar", *target, "--top-k", "5000", "a")
    assert over.returncode == EXIT_FAILED and "RESOURCE_EXHAUSTED" in over.stderr
    assert neardup("similar", *target, "--text", str(tmp_path / "nowhere.txt")).stderr == (
        f"neardup: error: cannot read {tmp_path / 'nowhere.txt'}: No such file or directory\n")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\u00e9 au lait".encode("latin-1"))
    done = neardup("similar", *target, "--text", str(latin1))
    assert (done.returncode, done.stderr) == (EXIT_FAILED, f"neardup: error: {latin1}: invalid UTF-8 at byte 3\n")
    for argv, message in ([(), "give either ID or --text FILE"], [("a", "--text", str(latin1)), "give either ID"],
                          [("--top-k", "0", "a"), "argument --top-k: must be at least 1"],
                          [("--threshold", "2", "a"), "argument --threshold: must be in [0, 1]"],
                          [("--lang", "german", "a"), "--lang goes with --text"],
                          [("--metric", "cosine", "a"), "invalid choice: 'cosine'"],
                          [("--top-k", "many", "a"), "invalid int value: 'many'"]):
        done = neardup("similar", *target, *argv)
        assert done.returncode == EXIT_USAGE and message in done.stderr and done.stdout == "", argv
        assert done.stderr.endswith("(see `neardup similar --help`)\n")


def test_similar_names_an_unreachable_server():
    target = f"127.0.0.1:{free_port()}"
    done = run_neardup("similar", "--target", target, "--connect-timeout", "1", "a")
    assert (done.returncode, done.stdout) == (EXIT_FAILED, "")
    assert done.stderr.startswith("neardup: error: UNAVAILABLE: ")
    assert done.stderr.endswith(f"; is `neardup serve` running on {target}?\n")


@pytest.mark.parametrize("argv", [["similar", "--help"], ["similar", "--target", "{target}", "a"],
                                  ["similar", "--target", "{target}", "--text", "{text}"]])
def test_similar_imports_neither_nltk_nor_the_server(server, tmp_path, argv):
    """As README says of dedup and info: the text is sketched by the server, so the command starts quickly."""
    (tmp_path / "query.txt").write_text(corpus()["b"], encoding="utf-8")
    code, modules = imported_by(tmp_path, *(arg.format(target=server.target, text=tmp_path / "query.txt")
                                            for arg in argv))
    assert code == EXIT_OK
    assert not {name for name in modules if name.split(".")[0] in HEAVY or name in HEAVY}, argv


def test_info_says_whether_the_store_is_searchable(neardup, server):
    done = neardup("info", "--target", server.target)
    assert done.returncode == EXIT_OK and json.loads(done.stdout)["indexed"] is True
