"""DedupStream end to end: real `neardup serve` processes on loopback, a store made by `neardup index`, the generated
stub, raw bytes, and the Python clients' dedup_stream. One answer per request, in order, with its tag; a refused
request is answered with its status and the stream goes on; what ends a whole stream ends it with a status."""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import queue
import random
import signal
import threading
import time
from concurrent import futures

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from neardup_client import AsyncNearDupClient, DedupResult, Document, NearDupClient, NearDupClientError
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from observe import rpc_counts, scrape, value
from server_process import Server, free_port, serving
from textgen import article, text

MAX_RESULT_SET = 12
TOKEN = "stream-Token_42"
STREAM = "/neardup.v1.NearDup/DedupStream"


def corpus() -> dict[str, str]:
    """Three stories with republications, and unrelated articles."""
    a, b = article(21), article(22)
    edited = list(b)
    edited[2] = edited[2].replace(edited[2].split()[1], "harbourmaster", 1)
    return {
        "a": text(a),
        "a-republished": "BREAKING from the wire. " + text(a) + " Share this story with friends today.",
        "a-truncated": text(a[:8]),
        "b": text(b),
        "b-edited": text(edited),
        "c": text(article(23)),
        "c-copy": text(article(23)) + " Read more on our site.",
        "d": text(article(24)),
        "e": text(article(25)),
    }


def result_sets(count: int, seed: int = 7) -> list[list[str | Document]]:
    """Result sets of stored ids, unknown ids, inline texts and id-only Documents, mixed; some repeat."""
    rng = random.Random(seed)
    texts = corpus()
    ids = sorted(texts)
    sets: list[list[str | Document]] = []
    for n in range(count):
        if sets and n % 9 == 0:
            sets.append(list(rng.choice(sets)))  # a repeat: the session cache may answer it
            continue
        chosen: list[str | Document] = rng.sample(ids, rng.randrange(1, 8))
        if n % 5 == 1:
            chosen.append(f"unknown-{n}")
        if n % 3 == 2:  # documents: some inline, some read from the store
            source = rng.choice(ids)
            chosen = [Document(f"inline-{n}", text="Reposted: " + texts[source])] + [
                Document(r) if rng.random() < 0.5 else r for r in chosen]
        rng.shuffle(chosen)
        sets.append(chosen)
    return sets


def uncached(answer: DedupResult) -> DedupResult:
    return dataclasses.replace(answer, cached=False)


def untagged(response: pb.DedupResponse) -> pb.DedupResponse:
    """The answer without what differs between a stream's answer and a unary one (its tag, the cache flag)."""
    copy = pb.DedupResponse()
    copy.CopyFrom(response)
    copy.ClearField("tag")
    copy.ClearField("cached")
    return copy


def error_of(response: pb.DedupResponse) -> tuple[str, str]:
    """(status code name, message) of a refused request's answer, which must carry nothing but its tag besides."""
    assert response.HasField("error"), response
    assert {field.name for field, _ in response.ListFields()} <= {"tag", "error"}, response
    code = next(code for code in grpc.StatusCode if code.value[0] == response.error.code)
    return code.name, response.error.message


class OpenStream:
    """A DedupStream the test keeps open (a context manager): ask() sends one request and reads its answer;
    close() half-closes and returns the answers still due; rest() reads on without half-closing."""

    def __init__(self, channel: grpc.Channel, **call_options):
        self._requests: queue.Queue = queue.Queue()
        self._answers = neardup_pb2_grpc.NearDupStub(channel).DedupStream(iter(self._requests.get, None),
                                                                           timeout=60, **call_options)

    def ask(self, request: pb.DedupRequest) -> pb.DedupResponse:
        self._requests.put(request)
        return next(self._answers)

    def close(self) -> list[pb.DedupResponse]:
        self._requests.put(None)
        return list(self._answers)

    def rest(self) -> list[pb.DedupResponse]:
        return list(self._answers)

    def __enter__(self) -> "OpenStream":
        return self

    def __exit__(self, *exc) -> None:
        self._answers.cancel()  # no-op once the stream ended
        self._requests.put(None)  # ends gRPC's thread that takes the requests


class Paced:
    """Result sets to iterate one at a time: set n comes only once the caller has told got() of n answers."""

    def __init__(self, sets: list):
        self.sets = sets
        self.answers: list = []
        self._turn = threading.Condition()

    def __iter__(self):
        for n, results in enumerate(self.sets):
            with self._turn:
                assert self._turn.wait_for(lambda: len(self.answers) >= n, timeout=30), \
                    f"no answer to result set {n - 1} before result set {n} was sent"
            yield results

    def got(self, answer) -> None:
        with self._turn:
            self.answers.append(answer)
            self._turn.notify_all()


def stream_code(channel: grpc.Channel, requests: list[pb.DedupRequest], **call_options) -> tuple[list, str]:
    """The answers of a whole stream and the status it ended with."""
    answers = []
    try:
        for answer in neardup_pb2_grpc.NearDupStub(channel).DedupStream(iter(requests), timeout=30, **call_options):
            answers.append(answer)
    except grpc.RpcError as error:
        return answers, error.code().name
    return answers, "OK"


@pytest.fixture(scope="module")
def server(store):
    with serving(store, "--max-result-set", str(MAX_RESULT_SET)) as running:
        yield running


@pytest.fixture
def channel(server):
    with grpc.insecure_channel(server.target) as connected:
        yield connected


@pytest.fixture(scope="module")
def ending_server(store):
    """For streams that end with a status (their size, their deadline): none of those is an internal error."""
    with serving(store, "--max-message-bytes", "4096") as running:
        yield running


# --- order, tags, equality with unary Dedup -------------------------------------------------------------------------

def test_answers_come_in_order_and_equal_unary_dedup(client):
    sets = result_sets(60)
    unary = [client.dedup(results, threshold=0.5) for results in sets]
    streamed = list(client.dedup_stream(sets, threshold=0.5))
    assert all(isinstance(answer, DedupResult) for answer in streamed)
    assert [uncached(a) for a in streamed] == [uncached(a) for a in unary]
    assert [a.ids for a in streamed] == [tuple(r if isinstance(r, str) else r.id for r in s) for s in sets]
    assert any(a.duplicates for a in streamed) and any(a.missing for a in streamed)  # the sets say something


def test_tags_are_echoed_whatever_their_value_and_order(channel):
    stub = neardup_pb2_grpc.NearDupStub(channel)
    tags = [2**63, 0, 2**64 - 1, 7, 7, 1, 2**32 + 5]
    requests = [pb.DedupRequest(ids=[f"unknown-{n}", "a", "b", "a-republished"][n % 3:], threshold=0.5, tag=tag)
                for n, tag in enumerate(tags)]
    answers = list(stub.DedupStream(iter(requests), timeout=30))
    assert [a.tag for a in answers] == tags
    for request, answer in zip(requests, answers):
        request.ClearField("tag")
        assert untagged(answer) == untagged(stub.Dedup(request, timeout=10))


def test_a_refused_request_is_answered_with_its_status_and_the_stream_goes_on(channel, server):
    stub = neardup_pb2_grpc.NearDupStub(channel)
    info = stub.Info(pb.InfoRequest(), timeout=10)
    other = pb.SketchConfig()
    other.CopyFrom(info.sketch_config)
    other.k += 1
    good = pb.DedupRequest(ids=["b", "b-edited", "c"], threshold=0.5)
    requests = [
        pb.DedupRequest(ids=["a", "a-republished"], threshold=0.5, tag=10),
        pb.DedupRequest(ids=["a"], documents=[pb.Document(id="x", text="y")], tag=11),
        pb.DedupRequest(ids=["a", "b"], threshold=2.5, tag=12),
        pb.DedupRequest(ids=[f"id-{i}" for i in range(MAX_RESULT_SET + 1)], tag=13),
        pb.DedupRequest(ids=["a", ""], tag=14),
        pb.DedupRequest(documents=[pb.Document(id="x", sketch=b"\x01\0\0\0")], sketch_config=other, tag=15),
        pb.DedupRequest(documents=[pb.Document(id="x", sketch=b"\x01\x02\x03")], tag=16),
        pb.DedupRequest(ids=["a"], metric=7, tag=17),
        pb.DedupRequest(ids=good.ids, threshold=0.5, tag=18),
    ]
    answers = list(stub.DedupStream(iter(requests), timeout=30))
    assert [a.tag for a in answers] == list(range(10, 19))
    assert list(answers[0].duplicate_of) == [-1, 0] and not answers[0].HasField("error")
    errors = [error_of(a) for a in answers[1:-1]]
    assert [code for code, _ in errors] == ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED",
                                            "INVALID_ARGUMENT", "FAILED_PRECONDITION", "INVALID_ARGUMENT",
                                            "INVALID_ARGUMENT"]
    assert "not both" in errors[0][1] and "2.5" in errors[1][1] and str(MAX_RESULT_SET) in errors[2][1]
    assert "k=" in errors[4][1]
    # each message is what the unary call would have ended with
    for request, (code, message) in zip(requests[1:-1], errors):
        with pytest.raises(grpc.RpcError) as raised:
            stub.Dedup(request, timeout=10)
        assert (raised.value.code().name, raised.value.details()) == (code, message)
    assert not answers[-1].HasField("error")
    assert untagged(answers[-1]) == untagged(stub.Dedup(good, timeout=10))
    assert list(answers[-1].duplicate_of) == [-1, 0, -1]


def test_an_undecodable_message_is_answered_and_the_stream_goes_on(channel):
    raw = channel.stream_stream(STREAM, request_serializer=None, response_deserializer=None)
    messages = [pb.DedupRequest(ids=["a", "a-truncated"], threshold=0.5, tag=1).SerializeToString(),
                b"\xff\xff\xff",
                pb.DedupRequest(ids=["b", "b-edited"], threshold=0.5, tag=3).SerializeToString()]
    answers = [pb.DedupResponse.FromString(answer) for answer in raw(iter(messages), timeout=30)]
    assert [a.tag for a in answers] == [1, 0, 3]  # an undecodable message has no tag to echo
    assert list(answers[0].duplicate_of) == [-1, 0] and list(answers[2].duplicate_of) == [-1, 0]
    code, message = error_of(answers[1])
    assert code == "INVALID_ARGUMENT" and "malformed DedupRequest" in message


def test_the_session_cache_answers_a_repeat_with_the_second_tag(channel):
    stub = neardup_pb2_grpc.NearDupStub(channel)
    ids = ["never-asked-before", "c", "c-copy", "d"]  # an id no other test sends: not in the cache yet
    first, second = stub.DedupStream(iter([pb.DedupRequest(ids=ids, threshold=0.5, tag=41),
                                           pb.DedupRequest(ids=ids, threshold=0.5, tag=42)]), timeout=30)
    assert (first.cached, second.cached) == (False, True)
    assert (first.tag, second.tag) == (41, 42)
    assert untagged(first) == untagged(second) and list(first.duplicate_of) == [-1, -1, 1, -1]
    # the cache is keyed without the tag: a unary Dedup of the same result set is answered from it too, untagged
    unary = stub.Dedup(pb.DedupRequest(ids=ids, threshold=0.5), timeout=10)
    assert unary.cached and unary.tag == 0 and untagged(unary) == untagged(first)


def test_a_tag_of_0_written_on_the_wire_is_no_part_of_the_cache_key(channel):
    request = pb.DedupRequest(ids=["zero-tag", "d", "e"], threshold=0.5)
    assert not neardup_pb2_grpc.NearDupStub(channel).Dedup(request, timeout=10).cached
    explicit_zero = request.SerializeToString() + b"\x38\x00"  # field 7 (tag) as varint 0
    assert pb.DedupRequest.FromString(explicit_zero) == request  # the same message, other bytes
    raw = channel.stream_stream(STREAM, request_serializer=None, response_deserializer=None)
    (answer,) = [pb.DedupResponse.FromString(a) for a in raw(iter([explicit_zero]), timeout=30)]
    assert answer.tag == 0 and answer.cached


# --- what ends a whole stream ---------------------------------------------------------------------------------------

def test_a_stream_over_max_streams_is_refused_while_others_and_unary_calls_are_served(store):
    with serving(store, "--max-streams", "1", "--threads", "1") as server, \
            grpc.insecure_channel(server.target) as channel, NearDupClient(server.target, timeout=10) as client:
        with OpenStream(channel) as first:
            answer = first.ask(pb.DedupRequest(ids=["a", "a-republished"], threshold=0.5, tag=1))
            assert list(answer.duplicate_of) == [-1, 0]
            answers, code = stream_code(channel, [pb.DedupRequest(ids=["a"], tag=5)])
            assert (answers, code) == ([], "RESOURCE_EXHAUSTED")
            with pytest.raises(NearDupClientError) as raised:
                list(client.dedup_stream([["a"], ["b"]]))
            assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED and "--max-streams" in raised.value.details
            # the open stream has a thread of its own: the one --threads thread still answers unary calls
            assert client.dedup(["b", "b-edited"], threshold=0.5).keep == ["b"]
            health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            assert health.status == health_pb2.HealthCheckResponse.SERVING
            assert first.ask(pb.DedupRequest(ids=["c", "c-copy"], threshold=0.5, tag=2)).tag == 2
            assert first.close() == []
        # a closed stream gives its place back before its end reaches the client
        assert [type(a) for a in client.dedup_stream([["a"], ["b"]])] == [DedupResult, DedupResult]


def test_the_streams_of_one_client_process_go_to_one_worker(store):
    """Two workers with one stream each, and two clients: gRPC gives both channels one connection, so the second
    stream goes to the worker that serves the first, and is refused."""
    with serving(store, "--max-streams", "1", workers=2, port=free_port()) as server, \
            NearDupClient(server.target, timeout=10) as first, NearDupClient(server.target, timeout=10) as second:
        sets, second_stream = Paced([["a"], ["b"]]), []
        for answer in first.dedup_stream(sets):
            if not sets.answers:  # the first stream is open, its second result set not sent yet
                try:
                    second_stream.extend(second.dedup_stream([["c"]]))
                except NearDupClientError as error:
                    second_stream.append(error.code)
            sets.got(answer)
        assert second_stream == [grpc.StatusCode.RESOURCE_EXHAUSTED]
        assert [a.keep for a in sets.answers] == [["a"], ["b"]]


def test_max_streams_0_refuses_every_stream_but_not_unary_dedup(store):
    async def async_stream(target):
        async with AsyncNearDupClient(target) as async_client:
            return [a async for a in async_client.dedup_stream([["a"]])]

    with serving(store, "--max-streams", "0") as server, NearDupClient(server.target, timeout=10) as client:
        with pytest.raises(NearDupClientError) as raised:
            list(client.dedup_stream([["a"]]))
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(NearDupClientError) as raised:  # the async client raises it alike
            asyncio.run(async_stream(server.target))
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert client.dedup(["a", "a-truncated"], threshold=0.5).keep == ["a"]


def test_an_accepted_stream_sends_its_headers_before_any_request(store):
    """The async client writes only once they came (a refused stream then ends with its status, see
    test_max_streams_0_...): an accepted stream must send them before it reads, or that client would wait forever."""
    async def headers_then_answer(target):
        async with grpc.aio.insecure_channel(target) as channel:
            call = neardup_pb2_grpc.NearDupStub(channel).DedupStream(timeout=30)
            await asyncio.wait_for(call.initial_metadata(), 10)
            open_before_writing = not call.done()
            await call.write(pb.DedupRequest(ids=["a", "a-truncated"], threshold=0.5, tag=3))
            answer = await call.read()
            await call.done_writing()
            return open_before_writing, answer.tag, list(answer.duplicate_of), await call.code()

    with serving(store) as server:
        assert asyncio.run(headers_then_answer(server.target)) == (True, 3, [-1, 0], grpc.StatusCode.OK)


def test_a_stream_needs_the_token(store, tmp_path):
    (tmp_path / "token").write_text(TOKEN + "\n")
    with serving(store, "--token-file", str(tmp_path / "token")) as server, \
            grpc.insecure_channel(server.target) as channel:
        request = pb.DedupRequest(ids=["a", "a-republished"], threshold=0.5, tag=3)
        assert stream_code(channel, [request]) == ([], "UNAUTHENTICATED")
        assert stream_code(channel, [request], metadata=(("authorization", "Bearer wrong"),)) == ([], "UNAUTHENTICATED")
        answers, code = stream_code(channel, [request], metadata=(("authorization", f"Bearer {TOKEN}"),))
        assert code == "OK" and [(a.tag, list(a.duplicate_of)) for a in answers] == [(3, [-1, 0])]
        for token in (None, "wrong"):
            with NearDupClient(server.target, token=token) as client:
                with pytest.raises(NearDupClientError) as raised:
                    next(client.dedup_stream([["a"]]))
                assert raised.value.code == grpc.StatusCode.UNAUTHENTICATED
        with NearDupClient(server.target, token=TOKEN) as client:
            assert [a.keep for a in client.dedup_stream([["a", "a-republished"]], threshold=0.5)] == [["a"]]


def test_a_message_over_the_size_limit_ends_the_stream_after_the_answers_before_it(ending_server):
    sets = Paced([["a", "a-truncated"], [Document("big", text="word " * 2000)], ["b"]])
    with NearDupClient(ending_server.target, timeout=10) as client:
        with pytest.raises(NearDupClientError) as raised:
            for answer in client.dedup_stream(sets, threshold=0.5):
                sets.got(answer)
        assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert [a.keep for a in sets.answers] == [["a"]]
        assert client.dedup(["b", "b-edited"], threshold=0.5).keep == ["b"]


def test_the_timeout_bounds_the_whole_stream(ending_server):
    """Without a timeout a stream has no deadline (the client's timeout is for unary calls); with one, the stream
    ends DEADLINE_EXCEEDED once it passes, after the answers given until then."""
    release = threading.Event()

    def then_wait(pause: float):
        yield ["a", "a-republished"]
        release.wait(pause)
        yield ["b"]

    try:
        with NearDupClient(ending_server.target, timeout=0.05) as client:
            assert [a.keep for a in client.dedup_stream(then_wait(0.5), threshold=0.5)] == [["a"], ["b"]]
            answers = []
            with pytest.raises(NearDupClientError) as raised:
                for answer in client.dedup_stream(then_wait(60), threshold=0.5, timeout=1):
                    answers.append(answer)
            assert raised.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
            assert [a.keep for a in answers] == [["a"]]
    finally:
        release.set()


def test_a_stream_the_caller_stops_reading_frees_its_place(store):
    with serving(store, "--max-streams", "1") as server, NearDupClient(server.target, timeout=10) as client:
        for n, _ in enumerate(client.dedup_stream(itertools.repeat(["a", "b"]))):
            if n == 3:
                break  # the client cancels the call; the server learns it a moment later
        for attempt in itertools.count():
            try:
                assert [a.keep for a in client.dedup_stream([["c", "c-copy"]], threshold=0.5)] == [["c"]]
                break
            except NearDupClientError as error:
                assert error.code == grpc.StatusCode.RESOURCE_EXHAUSTED and attempt < 200, error
                time.sleep(0.05)


def test_sigterm_lets_an_open_stream_finish_within_grace_then_ends_it_unavailable(store):
    server = Server(store, "--grace", "3").wait_ready()
    with grpc.insecure_channel(server.target) as channel, OpenStream(channel) as stream:
        assert stream.ask(pb.DedupRequest(ids=["a", "a-truncated"], threshold=0.5, tag=1)).tag == 1
        server.process.send_signal(signal.SIGTERM)
        assert list(stream.ask(pb.DedupRequest(ids=["b", "b-edited"], threshold=0.5, tag=2)).duplicate_of) == [-1, 0]
        with pytest.raises(grpc.RpcError) as raised:
            stream.rest()  # the client never half-closes: the server ends the stream when --grace is over
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
    # the server is exiting now: wait for it (another SIGTERM, as stop() sends, could hit its last instants, when
    # the interpreter has put the default action back)
    assert server.process.wait(30) == 0
    assert server.stop() == 0 and "stopped" in server.log()
    assert "internal error" not in server.log()


def test_a_stream_the_caller_cancels_is_no_internal_error(store):
    """Five streams cancelled by their caller while the server waits for their next request: the server's request
    iterator then mostly raises (sometimes it just ends), which is the call's end, not a bug to log."""
    with serving(store) as server, grpc.insecure_channel(server.target) as channel:
        for tag in range(5):
            with OpenStream(channel) as stream:
                assert stream.ask(pb.DedupRequest(ids=["a", "a-republished"], threshold=0.5, tag=tag)).tag == tag
                time.sleep(0.2)  # the server's thread is back waiting for the stream's next request
            # leaving the block cancelled the call
        answer = neardup_pb2_grpc.NearDupStub(channel).Dedup(pb.DedupRequest(ids=["a"]), timeout=10)
        assert list(answer.duplicate_of) == [-1]
    # serving(): exit code 0, and no internal error in the log


# --- metrics ---------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def metrics_server(store):
    metrics_port = free_port()
    with serving(store, "--metrics-port", str(metrics_port), "--max-result-set", str(MAX_RESULT_SET)) as running:
        yield running, metrics_port


def _mixed_stream(nonce: str) -> list[pb.DedupRequest]:
    """Six messages: three computed, one answered from the session cache, two refused."""
    ids = [f"{nonce}-unknown", "a", "a-republished"]
    return [pb.DedupRequest(ids=ids, threshold=0.5, tag=1),
            pb.DedupRequest(ids=["b", "b-edited", nonce], tag=2),
            pb.DedupRequest(ids=ids, threshold=2.5, tag=3),
            pb.DedupRequest(ids=ids, threshold=0.5, tag=4),
            pb.DedupRequest(ids=[f"{nonce}-{i}" for i in range(MAX_RESULT_SET + 1)], tag=5),
            pb.DedupRequest(documents=[pb.Document(id=nonce, text=corpus()["c"]), pb.Document(id="c")], tag=6)]


def test_each_stream_message_is_timed_with_its_own_status_code(metrics_server):
    server, metrics_port = metrics_server
    with grpc.insecure_channel(server.target) as channel:
        before = scrape(metrics_port)
        answers, code = stream_code(channel, _mixed_stream("timed"))
        assert code == "OK" and [a.tag for a in answers] == [1, 2, 3, 4, 5, 6]
        assert [a.cached for a in answers] == [False, False, False, True, False, False]
        neardup_pb2_grpc.NearDupStub(channel).Dedup(pb.DedupRequest(ids=["a", "timed-unary"]), timeout=10)
        after = scrape(metrics_port)
    counts = {key: n - rpc_counts(before).get(key, 0) for key, n in rpc_counts(after).items()}
    assert {key: n for key, n in counts.items() if n} == {
        ("DedupStream", "OK"): 4, ("DedupStream", "INVALID_ARGUMENT"): 1, ("DedupStream", "RESOURCE_EXHAUSTED"): 1,
        ("Dedup", "OK"): 1}
    assert value(after, "neardup_rpc_duration_seconds_sum", service="neardup.v1.NearDup", method="DedupStream",
                 code="OK") > 0
    computed = [3, 3, 2, 2]  # three stream messages and the unary call; not the cached or refused ones
    assert value(after, "neardup_dedup_results_count") - value(before, "neardup_dedup_results_count") == 4
    assert value(after, "neardup_dedup_results_sum") - value(before, "neardup_dedup_results_sum") == sum(computed)
    assert value(after, "neardup_rpc_in_flight") == 0
    with grpc.insecure_channel(server.target) as channel, OpenStream(channel) as stream:
        assert stream.ask(pb.DedupRequest(ids=["a"], tag=9)).tag == 9
        assert value(scrape(metrics_port), "neardup_rpc_in_flight") == 0  # an open stream is no unary call
        assert stream.close() == []


def cache_lookups(metrics_port: int, channel: grpc.Channel, messages: list[bytes]) -> tuple[list, float, float]:
    """The answers to one stream of raw messages, and the session cache hits and misses it added."""
    before = scrape(metrics_port)
    raw = channel.stream_stream(STREAM, request_serializer=None, response_deserializer=None)
    answers = [pb.DedupResponse.FromString(answer) for answer in raw(iter(messages), timeout=30)]
    after = scrape(metrics_port)
    hits, misses = (value(after, name) - value(before, name) for name in
                    ("neardup_session_cache_hits_total", "neardup_session_cache_misses_total"))
    return answers, hits, misses


def test_the_session_cache_counts_one_lookup_per_stream_message(metrics_server):
    """A tagged message is looked up by its bytes, then without its tag: still one hit or one miss."""
    server, metrics_port = metrics_server
    with grpc.insecure_channel(server.target) as channel:
        answers, hits, misses = cache_lookups(metrics_port, channel, [
            request.SerializeToString() for request in _mixed_stream("counted")])
    assert [a.tag for a in answers] == [1, 2, 3, 4, 5, 6]
    assert hits == sum(a.cached for a in answers) == 1
    assert hits + misses == len(answers)


def test_an_undecodable_message_counts_as_a_session_cache_miss(metrics_server):
    server, metrics_port = metrics_server
    with grpc.insecure_channel(server.target) as channel:
        answers, hits, misses = cache_lookups(metrics_port, channel, [b"\xff\xff\xff"])
    assert error_of(answers[0])[0] == "INVALID_ARGUMENT"
    assert (hits, misses) == (0, 1)


# --- the Python clients ----------------------------------------------------------------------------------------------

def test_the_client_yields_refusals_in_place_and_refuses_unknown_names_itself(client):
    sets = [["a", "a-republished"], [f"x-{i}" for i in range(MAX_RESULT_SET + 1)], ["b", ""],
            [Document("fresh", text=corpus()["c"]), "c-copy"]]
    answers = list(client.dedup_stream(sets, threshold=0.5))
    assert [type(a) for a in answers] == [DedupResult, NearDupClientError, NearDupClientError, DedupResult]
    assert answers[0].keep == ["a"] and answers[3].keep == ["fresh"]
    assert answers[1].code == grpc.StatusCode.RESOURCE_EXHAUSTED and str(MAX_RESULT_SET) in answers[1].details
    assert answers[2].code == grpc.StatusCode.INVALID_ARGUMENT
    # a bad threshold refuses every result set, one by one
    refused = list(client.dedup_stream(sets[:2], threshold=2.5))
    assert [a.code for a in refused] == [grpc.StatusCode.INVALID_ARGUMENT] * 2
    # an unknown metric is refused by the call itself, before a stream opens
    with pytest.raises(ValueError, match="unknown metric"):
        client.dedup_stream(sets, metric="cosine")
    with pytest.raises(ValueError, match="unknown grouping"):
        client.dedup_stream(sets, grouping="transitive")
    assert list(client.dedup_stream([])) == []


def test_the_client_sends_while_answers_come_back(client):
    """Each result set is made only once the answer to the one before has reached the caller: a client that
    collected its requests before reading answers would wait here forever (and fail on the wait's limit)."""
    sets = Paced([["a", "a-republished", f"paced-{n}"] for n in range(6)])
    for answer in client.dedup_stream(sets, threshold=0.5):
        sets.got(answer)
    assert [a.keep for a in sets.answers] == [["a", f"paced-{n}"] for n in range(6)]


def test_the_client_raises_what_the_result_sets_raise_after_the_answers_before(client):
    def failing():
        yield ["a", "a-republished"]
        yield ["b"]
        raise LookupError("the search backend went away")

    answers = []
    with pytest.raises(LookupError, match="went away"):
        for answer in client.dedup_stream(failing(), threshold=0.5):
            answers.append(answer)
    assert [a.keep for a in answers] == [["a"], ["b"]]


def test_the_async_client_streams_sync_and_async_result_sets(server):
    sets = result_sets(20, seed=11) + [["a", ""]]

    async def as_async(items):
        for item in items:
            await asyncio.sleep(0)
            yield item

    async def main():
        async with AsyncNearDupClient(server.target, timeout=10) as client:
            unary = [await client.dedup(s, threshold=0.5) for s in sets[:-1]]
            from_async = [a async for a in client.dedup_stream(as_async(sets), threshold=0.5)]
            from_sync = [a async for a in client.dedup_stream(sets, threshold=0.5)]
            with pytest.raises(ValueError):
                client.dedup_stream(sets, metric="cosine")
        return unary, from_async, from_sync

    unary, from_async, from_sync = asyncio.run(main())
    for streamed in (from_async, from_sync):
        assert [uncached(a) for a in streamed[:-1]] == [uncached(a) for a in unary]
        assert isinstance(streamed[-1], NearDupClientError)
        assert streamed[-1].code == grpc.StatusCode.INVALID_ARGUMENT


# --- the client checks the server's side of the contract -------------------------------------------------------------

def _broken_server(answer):
    """A gRPC server on loopback whose DedupStream answers all requests at once with answer(requests): a server
    that breaks the contract, which a real neardup never does."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    handler = grpc.stream_stream_rpc_method_handler(
        lambda requests, _context: iter(answer(list(requests))), request_deserializer=pb.DedupRequest.FromString,
        response_serializer=pb.DedupResponse.SerializeToString)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("neardup.v1.NearDup",
                                                                          {"DedupStream": handler}),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


@pytest.mark.parametrize("answer, message", [
    (lambda requests: [pb.DedupResponse(tag=r.tag) for r in reversed(requests)], "answers out of order"),
    (lambda requests: [pb.DedupResponse(tag=r.tag) for r in requests[:-1]], "ended without answering result sets 2"),
    (lambda requests: [pb.DedupResponse(tag=r.tag) for r in requests + requests[:1]], "after all 3 result sets"),
])
def test_the_client_refuses_answers_with_the_wrong_tags(answer, message):
    server, target = _broken_server(answer)
    try:
        with NearDupClient(target, timeout=10) as client:
            with pytest.raises(NearDupClientError, match=message) as raised:
                list(client.dedup_stream([["a"], ["b"], ["c"]]))
            assert raised.value.code == grpc.StatusCode.INTERNAL
    finally:
        server.stop(None)


def test_the_client_ends_a_stream_at_its_timeout_even_where_grpc_would_not():
    """A DedupStream was seen waiting past its deadline for a server that had gone idle (a worker restarted under
    load): the client keeps the stream's timeout itself. Here gRPC is given no deadline at all, and a server that
    never answers: only the client's own bound can end the wait."""
    from neardup_client._client import _Deadline

    answered = threading.Event()
    server, target = _broken_server(lambda requests: answered.wait(30) and [])
    try:
        with grpc.insecure_channel(target) as channel:
            call = neardup_pb2_grpc.NearDupStub(channel).DedupStream(iter([pb.DedupRequest(ids=["a"], tag=0)]))
            watchdog = _Deadline(call, 0.5)
            with pytest.raises(grpc.RpcError) as raised:
                list(call)
            assert watchdog.expired and raised.value.code() == grpc.StatusCode.CANCELLED
            stopped = _Deadline(call, 0.2)
            stopped.stop()
            time.sleep(0.4)
            assert not stopped.expired
    finally:
        answered.set()
        server.stop(None)


def test_the_async_client_ends_a_stream_at_its_timeout_even_where_grpc_would_not():
    """As above, for grpc.aio: the event loop runs the timer, and the cancelled call's CancelledError is the
    stream's DEADLINE_EXCEEDED, not the caller's task being cancelled."""
    from neardup_client._client import _Deadline

    answered = threading.Event()
    server, target = _broken_server(lambda requests: answered.wait(30) and [])

    async def wait_for_answers() -> tuple[bool, NearDupClientError]:
        async with grpc.aio.insecure_channel(target) as channel:
            call = neardup_pb2_grpc.NearDupStub(channel).DedupStream(iter([pb.DedupRequest(ids=["a"], tag=0)]))
            watchdog = _Deadline(call, 0.5, asyncio.get_running_loop())
            try:
                async for _ in call:
                    pass
            except asyncio.CancelledError:
                return watchdog.expired, watchdog.error()
            raise AssertionError("the call ended without the watchdog")

    try:
        expired, error = asyncio.run(wait_for_answers())
        assert expired and error.code == grpc.StatusCode.DEADLINE_EXCEEDED and "0.5 s" in error.details
    finally:
        answered.set()
        server.stop(None)
