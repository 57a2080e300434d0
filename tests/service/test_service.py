"""The Dedup service end to end: a real `neardup serve` process on loopback, a store made by `neardup index`."""
from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import threading
import time

import grpc
import pytest
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from neardup_client import AsyncNearDupClient, Document, NearDupClient, NearDupClientError
from neardup_client.cli_framework import EXIT_FAILED
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from server_process import Server, run_neardup, write_jsonl
from textgen import STORIES_THRESHOLD as THRESHOLD, stories as corpus


def test_near_duplicates_found_and_better_ranked_copy_kept(client):
    ids = ["a", "c", "a-republished", "b", "a-truncated", "d", "b-edited", "e"]
    answer = client.dedup(ids, threshold=THRESHOLD)
    assert answer.keep == ["a", "c", "b", "d", "e"]
    found = {(d.id, d.duplicate_of) for d in answer.duplicates}
    assert found == {("a-republished", "a"), ("a-truncated", "a"), ("b-edited", "b")}
    assert all(THRESHOLD <= d.similarity <= 1.0 for d in answer.duplicates)
    assert answer.duplicate_of == (-1, -1, 0, -1, 0, -1, 3, -1)
    assert answer.group == (0, 1, 0, 3, 0, 5, 3, 7)
    assert answer.groups == [["a", "a-republished", "a-truncated"], ["b", "b-edited"]]


def test_rank_order_decides_which_copy_is_kept(client):
    answer = client.dedup(["a-truncated", "d", "a", "a-republished"], threshold=THRESHOLD)
    assert answer.keep == ["a-truncated", "d"]
    assert [(d.id, d.duplicate_of) for d in answer.duplicates] == [("a", "a-truncated"),
                                                                    ("a-republished", "a-truncated")]


def test_jaccard_is_stricter_than_containment_for_an_excerpt(client):
    """An excerpt is contained in its source but shares only part of the union."""
    containment = client.dedup(["a", "a-truncated"], threshold=0.9, metric="containment")
    jaccard = client.dedup(["a", "a-truncated"], threshold=0.9, metric="jaccard")
    assert containment.keep == ["a"] and jaccard.keep == ["a", "a-truncated"]
    assert jaccard.metric == "jaccard" and jaccard.threshold == pytest.approx(0.9)


def test_mutual_is_the_smaller_containment(client):
    """Mutual divides the shared values by the larger sample: an excerpt scores its share of the source (below its
    containment, 1); an edited copy, which both lose and gain values, scores above its jaccard."""
    def similarity(ids, metric):
        answer = client.dedup(ids, threshold=0.01, metric=metric)
        assert answer.metric == metric
        return answer.duplicates[0].similarity
    excerpt, edited = ["a", "a-truncated"], ["b", "b-edited"]
    assert similarity(excerpt, "mutual") == similarity(excerpt, "jaccard") < similarity(excerpt, "containment")
    assert similarity(edited, "jaccard") < similarity(edited, "mutual") <= similarity(edited, "containment")
    between = (similarity(excerpt, "mutual") + similarity(excerpt, "containment")) / 2
    assert client.dedup(excerpt, threshold=between, metric="mutual").keep == excerpt
    assert client.dedup(excerpt, threshold=between, metric="containment").keep == ["a"]


def test_missing_ids_are_kept_and_listed(client):
    answer = client.dedup(["nope-1", "a", "nope-2", "a-republished"], threshold=THRESHOLD)
    assert answer.keep == ["nope-1", "a", "nope-2"]
    assert answer.missing == ["nope-1", "nope-2"]


def test_inline_documents_mix_with_stored_ids(client):
    texts = corpus()
    results = [Document("fresh", text=texts["b"]), "b-edited", Document("other", text=texts["e"]), "c"]
    answer = client.dedup(results, threshold=THRESHOLD)
    assert answer.keep == ["fresh", "other", "c"]
    assert [(d.id, d.duplicate_of) for d in answer.duplicates] == [("b-edited", "fresh")]


def test_components_grouping_is_transitive(client):
    answer = client.dedup(["a-truncated", "a", "a-republished", "c"], threshold=THRESHOLD, grouping="components")
    assert answer.keep == ["a-truncated", "c"]
    assert answer.group == (0, 0, 0, 3)
    assert answer.grouping == "components"


def test_session_cache_hit_then_invalidated_by_upsert_and_delete(server, store):
    texts = corpus()
    with NearDupClient(server.target, timeout=10) as client:
        ids = ["c", "d", "e", "b", "b-edited"]
        first = client.dedup(ids, threshold=THRESHOLD)
        second = client.dedup(ids, threshold=THRESHOLD)
        assert (first.cached, second.cached) == (False, True)
        assert second.duplicate_of == first.duplicate_of and second.similarity == first.similarity
        # another threshold is another entry
        assert client.dedup(ids, threshold=0.99).cached is False
        # "e" becomes a copy of "c": the cached answer must not be served
        assert client.upsert([Document("e", text=texts["c"])]) == 1
        after_upsert = client.dedup(ids, threshold=THRESHOLD)
        assert after_upsert.cached is False
        assert ("e", "c") in {(d.id, d.duplicate_of) for d in after_upsert.duplicates}
        assert client.delete(["e", "never-stored"]) == 1
        after_delete = client.dedup(ids, threshold=THRESHOLD)
        assert after_delete.cached is False and after_delete.missing == ["e"]
        # an unrelated write keeps other cached answers valid
        client.dedup(["a", "a-truncated"], threshold=THRESHOLD)
        client.upsert([Document("unrelated", text=texts["d"] + " More.")])
        assert client.dedup(["a", "a-truncated"], threshold=THRESHOLD).cached is True
        client.upsert([Document("e", text=texts["e"])])  # restore for other tests


def test_cache_never_stale_across_worker_processes(indexed_store):
    texts = corpus()
    ids = ["c", "e", "a"]
    with Server(indexed_store("service-workers", texts), workers=2) as server:
        # many channels: SO_REUSEPORT spreads connections over both workers, so both cache the answer
        clients = [NearDupClient(server.target, timeout=10) for _ in range(12)]
        try:
            for c in clients:
                assert c.dedup(ids, threshold=THRESHOLD).keep == ids
            assert sum(c.dedup(ids, threshold=THRESHOLD).cached for c in clients) == len(clients)
            clients[0].upsert([Document("e", text=texts["c"])])
            for c in clients:
                answer = c.dedup(ids, threshold=THRESHOLD)
                assert answer.keep == ["c", "a"], f"stale answer from a worker (cached={answer.cached})"
            pids = set(server.log().split("pid ")[i].split()[0] for i in (1, 2))
            assert len(pids) == 2
        finally:
            for c in clients:
                c.close()
        assert server.stop() == 0


@pytest.mark.parametrize("request_fields, code", [
    ({"ids": ["a"], "threshold": -1.0}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"ids": ["a"], "threshold": 2.0}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"ids": ["a"], "threshold": math.nan}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"ids": ["a"], "metric": 7}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"ids": ["a"], "grouping": 9}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"ids": ["a", ""]}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"ids": ["a"], "documents": [pb.Document(id="x", text="y")]}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"documents": [pb.Document(id="x", sketch=b"\x01\x02\x03")]}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"documents": [pb.Document(id="x", sketch=b"\x02\0\0\0\x01\0\0\0")]}, grpc.StatusCode.INVALID_ARGUMENT),
    ({"documents": [pb.Document(id="x", sketch=bytes(4 * 5000))]}, grpc.StatusCode.FAILED_PRECONDITION),
    ({"ids": [f"id-{i}" for i in range(10_000)]}, grpc.StatusCode.RESOURCE_EXHAUSTED),
    ({"ids": ["x" * 600]}, grpc.StatusCode.INVALID_ARGUMENT),
])
def test_bad_dedup_requests_get_their_status_and_the_server_keeps_serving(server, request_fields, code):
    with grpc.insecure_channel(server.target) as channel:
        stub = neardup_pb2_grpc.NearDupStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            stub.Dedup(pb.DedupRequest(**request_fields), timeout=10)
        assert raised.value.code() == code, raised.value.details()
        assert raised.value.details()
        good = stub.Dedup(pb.DedupRequest(ids=["a", "a-republished"], threshold=THRESHOLD), timeout=10)
        assert list(good.duplicate_of) == [-1, 0]


def test_config_mismatch_and_malformed_messages(server):
    with grpc.insecure_channel(server.target) as channel:
        info = neardup_pb2_grpc.NearDupStub(channel).Info(pb.InfoRequest(), timeout=10)
        other = pb.SketchConfig()
        other.CopyFrom(info.sketch_config)
        other.k += 1
        stub = neardup_pb2_grpc.NearDupStub(channel)
        with pytest.raises(grpc.RpcError) as raised:
            stub.Dedup(pb.DedupRequest(documents=[pb.Document(id="x", sketch=b"")], sketch_config=other), timeout=10)
        assert raised.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "k=" in raised.value.details()
        raw = channel.unary_unary("/neardup.v1.NearDup/Dedup")
        with pytest.raises(grpc.RpcError) as raised:
            raw(b"\xff\xff\xff", timeout=10)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert stub.Info(pb.InfoRequest(), timeout=10).articles == info.articles


def test_message_over_the_limit_is_resource_exhausted(store):
    with Server(store, "--max-message-bytes", "4096") as server:
        with NearDupClient(server.target, timeout=10) as client:
            with pytest.raises(NearDupClientError) as raised:
                client.dedup([Document("big", text="word " * 5000)])
            assert raised.value.code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert client.dedup(["a", "a-truncated"], threshold=THRESHOLD).keep == ["a"]


def test_expired_deadline(client):
    with pytest.raises(NearDupClientError) as raised:
        client.dedup([Document(f"d{i}", text="many words here " * 2000) for i in range(50)], timeout=0.001)
    assert raised.value.code == grpc.StatusCode.DEADLINE_EXCEEDED
    assert client.dedup(["a", "a-truncated"], threshold=THRESHOLD).keep == ["a"]


def test_info_health_and_reflection(server, client):
    info = client.info()
    assert info.articles >= 8 and info.store == "lmdb" and info.sketch_config["k"] >= 1
    assert info.max_result_set >= 100 and 0 <= info.default_threshold <= 1
    with grpc.insecure_channel(server.target) as channel:
        services = ProtoReflectionDescriptorDatabase(channel).get_services()
    assert "neardup.v1.NearDup" in services and "grpc.health.v1.Health" in services


def test_async_client(server):
    async def main():
        async with AsyncNearDupClient(server.target, timeout=10) as client:
            answers = await asyncio.gather(*(client.dedup(["a", "b", "b-edited"], threshold=THRESHOLD)
                                             for _ in range(5)))
            info = await client.info()
        return answers, info

    answers, info = asyncio.run(main())
    assert all(a.keep == ["a", "b"] for a in answers) and info.articles >= 8


def test_dedup_cli_prints_json(server, tmp_path):
    done = run_neardup("dedup", "--target", server.target, "--threshold", str(THRESHOLD), "b", "b-edited", "nope")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["keep"] == ["b", "nope"] and answer["missing"] == ["nope"]
    assert answer["duplicates"][0]["id"] == "b-edited" and answer["duplicates"][0]["duplicate_of"] == "b"
    docs = write_jsonl(tmp_path / "set.jsonl", [{"id": "x", "text": corpus()["c"]}, {"id": "c"}])
    done = run_neardup("dedup", "--target", server.target, "--jsonl", str(docs))
    assert done.returncode == 0 and json.loads(done.stdout)["keep"] == ["x"]
    bad = run_neardup("dedup", "--target", server.target, "--metric", "hamming", "a")  # refused by the server
    assert bad.returncode == EXIT_FAILED and "FAILED_PRECONDITION" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_serve_refuses_a_missing_store_with_one_line(tmp_path):
    done = run_neardup("serve", "--store", str(tmp_path / "nowhere"), "--port", "0")
    assert done.returncode == EXIT_FAILED
    assert done.stderr.strip().startswith("neardup: error:") and len(done.stderr.strip().splitlines()) == 1


def test_sigterm_under_load_fails_no_in_flight_call(store):
    texts = corpus()
    server = Server(store, "--threads", "16", "--grace", "120").wait_ready()
    slow = [Document(f"slow-{i}", text=(texts["c"] + " ") * 80) for i in range(3)] + ["a", "b"]
    outcomes: list[object] = []
    started = threading.Barrier(9)

    def call():
        with NearDupClient(server.target, timeout=60) as client:
            started.wait()
            try:
                outcomes.append(client.dedup(slow, threshold=THRESHOLD))
            except NearDupClientError as error:
                outcomes.append(error)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    started.wait()
    time.sleep(0.5)  # the calls are in the server now: each takes seconds to sketch
    assert server.stop() == 0
    for t in threads:
        t.join()
    assert len(outcomes) == 8
    failures = [o for o in outcomes if isinstance(o, Exception)]
    assert not failures, failures
    assert all(o.keep == ["slow-0", "a", "b"] for o in outcomes)
    assert "stopped" in server.log()


def test_a_worker_takes_its_start_up_heap_out_of_the_collectors_passes():
    """settle_heap (run by every worker before it serves) freezes what exists and lets young objects pile up longer;
    a cycle made afterwards is still collected. In a child process: freezing is for the whole process."""
    program = """
import gc
from neardup.service.server import YOUNG_COLLECTION_THRESHOLD, settle_heap
built_at_start = [[i] for i in range(1000)]
settle_heap()
frozen = gc.get_freeze_count()
cycle = []
cycle.append(cycle)
del cycle
print(frozen >= 1000, gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD, gc.collect() >= 1, gc.get_freeze_count() == frozen)
"""
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.split() == ["True", "True", "True", "True"]
