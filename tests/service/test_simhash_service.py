"""A real `neardup serve` over a simhash store (made by `neardup index --sketch simhash`): Info reports the store's
kind and defaults, Dedup and FindSimilar answer by Hamming distance as the reference and an exhaustive scan do,
inline texts and sketches are sketched and checked like the store's, and each store kind refuses the other's
metric with FAILED_PRECONDITION naming the fix."""
from __future__ import annotations

import json
import random

import grpc
import pytest

from neardup.core import reference
from neardup.core.vocabulary import SIMHASH
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.store import open_store
from neardup_client import Document, NearDupClient, NearDupClientError
from neardup_client.v1 import neardup_pb2 as pb
from neardup_client.v1 import neardup_pb2_grpc
from brute import exhaustive_hamming
from server_process import serving
from textgen import article, text


INDEX_ARGS = ("--sketch", "simhash")  # the module's store (conftest.py's `store`) is of corpus(), as simhash


def corpus() -> dict[str, str]:
    """Stories with republications (the same words, one word edited, a new last sentence) and unrelated ones."""
    texts = {}
    rng = random.Random(4)
    for story in range(12):
        sentences = article(100 + story, 30)
        texts[f"s{story}"] = text(sentences)
        texts[f"s{story}-shout"] = text(sentences).upper()
        words = text(sentences).split()
        words[rng.randrange(len(words))] = "reworded"
        texts[f"s{story}-edit"] = " ".join(words)
        texts[f"s{story}-more"] = text(sentences + article(900 + story, 4))
    return texts


@pytest.fixture(scope="module")
def fingerprints(store) -> dict[str, int]:
    with open_store(store, readonly=True) as opened:
        ids = list(corpus())
        return {doc_id: int.from_bytes(sketch, "little") for doc_id, sketch in zip(ids, opened.get_many(ids))}


def test_info_reports_the_kind_and_the_stores_defaults(client):
    info = client.info()
    assert info.sketch_config["kind"] == SIMHASH
    assert (info.default_metric, info.default_threshold, info.default_grouping) == ("hamming", 0.71875, "greedy")
    assert info.indexed and info.articles == len(corpus())
    # a new store weighs shingles by their counts: the current simhash sketcher version
    assert info.sketch_config["sketcher_version"] == 3


@pytest.mark.parametrize("grouping", ["greedy", "components", "complete"])
def test_dedup_applies_the_stores_defaults_and_equals_the_reference(client, fingerprints, grouping):
    ids = list(fingerprints)
    random.Random(1).shuffle(ids)
    answer = client.dedup(ids + ["not-stored"], grouping=grouping)
    assert (answer.metric, answer.threshold) == ("hamming", 46 / 64)
    expected = reference.dedup_simhash([fingerprints[i] for i in ids] + [None], 46 / 64, grouping)
    assert list(answer.duplicate_of) == expected.duplicate_of
    assert list(answer.similarity) == expected.similarity
    assert answer.missing == ["not-stored"]
    assert all(fingerprints[f"s{story}"] == fingerprints[f"s{story}-shout"] for story in range(12))
    assert len(answer.duplicates) >= 12


def test_dedup_at_a_higher_threshold_groups_less(client, fingerprints):
    ids = list(fingerprints)
    answer = client.dedup(ids, threshold=61 / 64, metric="hamming")
    assert list(answer.duplicate_of) == reference.dedup_simhash([fingerprints[i] for i in ids], 61 / 64,
                                                                "greedy").duplicate_of
    assert len(answer.duplicates) < len(client.dedup(ids).duplicates)


def test_inline_texts_and_sketches_are_made_and_checked_like_the_stores(client, store, fingerprints):
    with open_store(store, readonly=True) as opened:
        sketcher = Sketcher(opened.config, opened.stoplist)
    texts = corpus()
    answer = client.dedup([Document("s0"), Document("fresh", text=texts["s0"].replace(".", "!")),
                           Document("bytes", sketch=sketcher.sketch(texts["s1"])), "s1"])
    assert list(answer.duplicate_of) == [-1, 0, -1, 2]
    assert answer.similarity[1] == answer.similarity[3] == 1.0
    with pytest.raises(NearDupClientError) as refused:
        client.dedup([Document("bad", sketch=bytes(12))])
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "a simhash sketch is 8 bytes" in refused.value.details


def test_a_bottom_k_sketch_config_is_refused(server, store):
    with open_store(store, readonly=True) as opened:
        config = opened.config
    bottom_k = {**config.to_dict(), "kind": "bottomk"}
    with grpc.insecure_channel(server.target) as channel:
        stub = neardup_pb2_grpc.NearDupStub(channel)
        with pytest.raises(grpc.RpcError) as refused:
            stub.Dedup(pb.DedupRequest(documents=[pb.Document(id="x", sketch=bytes(8))],
                                       sketch_config=pb.SketchConfig(**bottom_k)), timeout=10)
        assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "kind='bottomk' (store: 'simhash')" in refused.value.details()
        # the store's own configuration, as Info gives it, is accepted
        info = stub.Info(pb.InfoRequest(), timeout=10)
        answer = stub.Dedup(pb.DedupRequest(documents=[pb.Document(id="x", sketch=bytes(8)), pb.Document(id="s0")],
                                            sketch_config=info.sketch_config), timeout=10)
        assert answer.metric == pb.METRIC_HAMMING and list(answer.duplicate_of) == [-1, -1]


@pytest.mark.parametrize("call", ["dedup", "find_similar"])
@pytest.mark.parametrize("metric", ["containment", "jaccard"])
def test_a_bottom_k_metric_is_failed_precondition_naming_the_fix(client, call, metric):
    with pytest.raises(NearDupClientError) as refused:
        if call == "dedup":
            client.dedup(["s0", "s0-shout"], metric=metric)
        else:
            client.find_similar("s0", metric=metric)
    assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
    assert refused.value.details == (f"metric {metric} does not apply to this store's simhash sketches: use "
                                     "hamming, or leave the metric unset for the store's default (hamming at "
                                     "0.71875)")


def test_find_similar_equals_an_exhaustive_scan_and_is_exact_up_to_3_bits(client, fingerprints):
    for query in fingerprints:
        answer = client.find_similar(query, top_k=100, threshold=61 / 64)
        assert answer.exact and (answer.metric, answer.threshold) == ("hamming", 61 / 64)
        assert [(m.id, m.similarity) for m in answer.matches] == \
            exhaustive_hamming(fingerprints, fingerprints[query], 61 / 64, leave_out=query)
    assert [m.id for m in client.find_similar("s3").matches][:1] == ["s3-shout"]


@pytest.mark.parametrize("threshold", [None, 0.9, 0.5])
def test_find_similar_past_3_bits_equals_an_exhaustive_scan(client, fingerprints, threshold):
    """The default (18 bits) and any threshold past what the permutation tables guarantee: the search scans every
    stored fingerprint, and says the answer is exact."""
    for query in fingerprints:
        answer = client.find_similar(query, top_k=100, threshold=threshold)
        assert answer.exact and answer.threshold == (threshold or 46 / 64)
        assert [(m.id, m.similarity) for m in answer.matches] == \
            exhaustive_hamming(fingerprints, fingerprints[query], answer.threshold, leave_out=query)[:100]


def test_find_similar_by_text_and_upsert(client, fingerprints):
    texts = corpus()
    answer = client.find_similar(document=Document("", text=texts["s5"].lower()))
    assert answer.matches[0].id in ("s5", "s5-shout") and answer.matches[0].similarity == 1.0
    client.upsert([Document("s5-again", text=texts["s5"])])
    assert "s5-again" in [m.id for m in client.find_similar("s5", top_k=20).matches]
    assert client.dedup(["s5", "s5-again"]).duplicate_of == (-1, 0)
    client.delete(["s5-again"])


def test_the_command_line_client_prints_hamming_answers(server, neardup):
    done = neardup("dedup", "--target", server.target, "s0", "s0-shout", "s1", "--metric", "hamming")
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout)
    assert printed["metric"] == "hamming" and printed["keep"] == ["s0", "s1"]
    refused = neardup("similar", "--target", server.target, "s0", "--metric", "jaccard")
    assert refused.returncode == 1 and "metric jaccard does not apply" in refused.stderr


def test_a_bottom_k_server_refuses_hamming(indexed_store):
    path = indexed_store("bottomk-service", {"a": text(article(1)), "b": text(article(1))})
    with serving(path) as running, NearDupClient(running.target, timeout=10) as client:
        info = client.info()
        assert info.sketch_config["kind"] == "bottomk"
        assert (info.default_metric, info.default_threshold) == ("containment", 0.52)
        with pytest.raises(NearDupClientError) as refused:
            client.dedup(["a", "b"], metric="hamming")
        assert refused.value.code == grpc.StatusCode.FAILED_PRECONDITION
        assert "metric hamming does not apply to this store's bottomk sketches: use containment, jaccard, mutual" \
            in refused.value.details
        assert client.dedup(["a", "b"]).duplicate_of == (-1, 0)
    assert SketchConfig().kind == "bottomk"
