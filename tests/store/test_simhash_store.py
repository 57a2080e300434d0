"""A simhash store (`neardup index --sketch simhash`): its postings are the permutation-table keys of the stored
fingerprints after any writes; Dedup, FindSimilar and `neardup pairs` equal an exhaustive scan of the fingerprints
at any threshold (from the tables up to 3 bits, by the scan past that); each store kind refuses the
other's metric; a store made before shingle weights (sketcher version 2) still sketches texts unweighted; the
indexer's fingerprints are the sketcher's of each text; the real CLI indexes, pairs and clusters such a store, and
bottom-K stores are unchanged."""
from __future__ import annotations

import json
import random
import re
import shutil

import lmdb
import numpy as np
import pytest

from neardup.core import kernel, reference
from neardup.core.vocabulary import CONTAINMENT, GROUPINGS, HAMMING, LOG_TF, SIMHASH, UNIT
from neardup.core.candidates import index_values, SIMHASH_BLOCKS
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.core.encoding import encode_sketch
from neardup.runtime.deduplicator import Deduplicator
from neardup.runtime.documents import RequestDocument
from neardup.runtime.params import DedupParams, Limits, SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.runtime.writer import Writer
from neardup.core.errors import ConfigMismatch, InvalidArgument, StoreUnavailable
from neardup.jobs.index import index_corpus
from neardup.store import create_store, open_store
from brute import exhaustive_hamming, read_index
from server_process import run_neardup, sketch_store, write_jsonl
import textgen

SIMHASH_CONFIG = SketchConfig(kind=SIMHASH)
#: A simhash store made before shingle weights: sketcher version 2, every distinct shingle weighing 1.
UNWEIGHTED_CONFIG = SketchConfig(kind=SIMHASH, sketcher_version=2)


def encode(value: int) -> bytes:
    return value.to_bytes(8, "little")


def flipped(rng: random.Random, value: int, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted(seed: int = 11, bases: int = 25, copies: int = 6, unrelated: int = 150) -> dict[str, int]:
    """Fingerprints: copies of a few bases at 0..8 bits from them, unrelated ones, and a crowd sharing one block
    (so one posting is long)."""
    rng = random.Random(seed)
    fingerprints = {}
    for base in range(bases):
        value = rng.getrandbits(64)
        fingerprints[f"b{base}"] = value
        for copy in range(copies):
            fingerprints[f"b{base}-{copy}"] = flipped(rng, value, rng.choice([0, 1, 2, 3, 4, 5, 8]))
    for other in range(unrelated):
        fingerprints[f"u{other}"] = rng.getrandbits(64)
    for crowd in range(80):
        fingerprints[f"c{crowd}"] = rng.getrandbits(48) << 16 | 0xBEEF
    return fingerprints


@pytest.fixture(scope="module")
def store_path(tmp_path_factory):
    fingerprints = planted()
    path = sketch_store(tmp_path_factory.mktemp("simhash") / "store",
                        {doc_id: encode(value) for doc_id, value in fingerprints.items()}, SIMHASH_CONFIG)
    return path, fingerprints


class Operations:
    """A served store's operations, as a serving process holds them (NearDupServicer)."""

    def __init__(self, store, limits: Limits = Limits()):
        self.served = ServedStore(store, limits)
        self.dedup, self.search = Deduplicator(self.served), SimilarSearch(self.served)
        self.writer = Writer(self.served)


@pytest.fixture
def engine(store_path):
    with open_store(store_path[0], readonly=True) as store:
        yield Operations(store, Limits(max_result_set=2000))


# ---- the store's postings ----------------------------------------------------------------------------------------

def assert_postings_are_the_tables_of_the_fingerprints(path):
    docnos, ids, postings = read_index(path)
    with open_store(path, readonly=True) as store, store._env.begin() as txn:
        sketches = dict(txn.cursor(db=store._sketches))
    assert set(docnos) == set(sketches)
    rebuilt = set()
    for key, sketch in sketches.items():
        for value in index_values([sketch], SIMHASH).values.tolist():
            rebuilt.add((value, docnos[key], False))
    assert postings == rebuilt
    assert len(postings) == SIMHASH_BLOCKS * sum(1 for sketch in sketches.values() if sketch)


def test_postings_follow_random_writes_replacements_and_deletes(tmp_path):
    rng = random.Random(3)
    path = tmp_path / "s"
    create_store(path, SIMHASH_CONFIG, []).close()
    with open_store(path) as store:
        for _ in range(50):
            ids = [f"d{rng.randrange(120)}" for _ in range(rng.randint(1, 25))]
            store.put_many([(doc_id, b"" if rng.random() < 0.1 else encode(rng.choice([0xBEEF, rng.getrandbits(64)])))
                            for doc_id in ids])
            store.delete_many([f"d{rng.randrange(120)}" for _ in range(rng.randint(0, 10))])
    assert_postings_are_the_tables_of_the_fingerprints(path)


def test_the_store_checks_simhash_sketches(tmp_path):
    with create_store(tmp_path / "s", SIMHASH_CONFIG, []) as store:
        with pytest.raises(InvalidArgument, match="a simhash sketch is 8 bytes"):
            store.put_many([("a", encode(1)), ("b", encode_sketch([1, 2, 3]))])
        assert store.count() == 0  # nothing of the refused batch
        store.put_many([("a", encode(1)), ("empty", b"")])
        assert store.get_many(["a", "empty"]) == [encode(1), b""]
    with open_store(tmp_path / "s", readonly=True) as store:
        assert store.config == SIMHASH_CONFIG


# ---- Dedup -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("grouping", GROUPINGS)
@pytest.mark.parametrize("threshold", [61 / 64, 0.9, 0.0])
def test_dedup_of_stored_ids_equals_the_reference(engine, store_path, grouping, threshold):
    fingerprints = store_path[1]
    ids = list(fingerprints)[:150] + ["not-stored"] + list(fingerprints)[300:]
    outcome = engine.dedup.dedup_ids(ids, DedupParams(threshold, HAMMING, grouping))
    assert kernel.unpack(outcome.packed_grouping) == reference.dedup_simhash([fingerprints.get(i) for i in ids], threshold, grouping)
    assert outcome.missing == [150]


def test_dedup_of_documents_sketches_texts_like_the_store(tmp_path):
    texts = {f"t{seed}": textgen.text(textgen.article(seed, 25)) for seed in range(4)}
    with create_store(tmp_path / "s", SIMHASH_CONFIG, []) as store:
        engine = Operations(store)
        engine.writer.upsert([RequestDocument(doc_id, text=text) for doc_id, text in texts.items()])
        copy = texts["t1"].replace(".", "!")  # the same shingles
        outcome = engine.dedup.dedup_documents([RequestDocument("t0"), RequestDocument("copy", text=copy), RequestDocument("t1"),
                                          RequestDocument("sketch", sketch=store.get_many(["t2"])[0])],
                                         engine.served.defaults)
        grouping = kernel.unpack(outcome.packed_grouping)
        assert grouping.duplicate_of == [-1, -1, 1, -1] and grouping.similarity[2] == 1.0
        with pytest.raises(InvalidArgument, match="a simhash sketch is 8 bytes"):
            engine.dedup.dedup_documents([RequestDocument("x", sketch=encode_sketch([1, 2, 3]))], engine.served.defaults)


def repetitive(seed: int) -> str:
    """An article whose sentences repeat unevenly, so its weighted and unweighted fingerprints differ."""
    rng = random.Random(seed)
    return textgen.text([s for s in textgen.article(seed, 15) for _ in range(rng.choice([1, 1, 2, 3, 8]))])


def test_a_store_made_before_weights_sketches_inline_texts_as_its_fingerprints_were_made(tmp_path):
    """A simhash store of sketcher version 2 (its configuration as neardup saved it before weights): Dedup,
    FindSimilar and Upsert of inline texts, and `neardup index` into it, sketch every shingle with weight 1, as
    its stored fingerprints were made, not with the current weighting."""
    texts = {f"r{seed}": repetitive(seed) for seed in range(6)}
    unweighted, weighted = Sketcher(UNWEIGHTED_CONFIG), Sketcher(SIMHASH_CONFIG)
    stored = {doc_id: unweighted.sketch(text) for doc_id, text in texts.items()}
    assert all(stored[doc_id] != weighted.sketch(text) for doc_id, text in texts.items())  # the test can fail
    path = tmp_path / "old"
    with create_store(path, UNWEIGHTED_CONFIG, []) as store:
        store.put_many(list(stored.items()))
    with open_store(path) as store:
        assert store.config == UNWEIGHTED_CONFIG and store.config.weighting == UNIT
        engine = Operations(store)
        assert engine.served.info()["sketch_config"].sketcher_version == 2
        for doc_id, text in texts.items():
            assert engine.served.sketcher.sketch(text) == stored[doc_id]
            outcome = engine.dedup.dedup_documents([RequestDocument(doc_id), RequestDocument("inline", text=text)],
                                             DedupParams(1.0, HAMMING))
            grouping = kernel.unpack(outcome.packed_grouping)
            assert grouping.duplicate_of == [-1, 0] and grouping.similarity[1] == 1.0
            found = engine.search.find_similar(RequestDocument("", text=text), SimilarParams(threshold=1.0, metric=HAMMING))
            assert [(m.id, m.similarity) for m in found.matches] == [(doc_id, 1.0)]
        engine.writer.upsert([RequestDocument("upserted", text=texts["r0"])])
        assert store.get_many(["upserted"]) == [stored["r0"]]
        # a client stating the store's configuration (as Info gives it) is accepted; the current one is not
        engine.served.check_config(UNWEIGHTED_CONFIG)
        with pytest.raises(ConfigMismatch, match=r"sketcher_version=3 \(store: 2\)"):
            engine.served.check_config(SIMHASH_CONFIG)
    corpus = write_jsonl(tmp_path / "more.jsonl", [{"id": "indexed", "text": texts["r1"]}])
    summary = index_corpus(str(corpus), str(path))
    assert summary.config == UNWEIGHTED_CONFIG
    with open_store(path, readonly=True) as store:
        assert store.get_many(["indexed"]) == [stored["r1"]]


def test_a_simhash_store_of_an_unknown_sketcher_version_is_refused(tmp_path):
    path = sketch_store(tmp_path / "s", {"a": encode(1)}, SIMHASH_CONFIG)
    config = {**SIMHASH_CONFIG.to_dict(), "sketcher_version": 4}
    with lmdb.open(str(path), max_dbs=8) as env, env.begin(write=True, db=env.open_db(b"meta")) as txn:
        txn.put(b"config", json.dumps(config, sort_keys=True).encode())
    with pytest.raises(StoreUnavailable, match="was made by sketcher version 4; this neardup sketches simhash stores "
                                               "with versions 2 and 3: rebuild it"):
        open_store(path, readonly=True)


# `neardup index --workers` in a process of its own: forking workers from this one, after other tests' gRPC
# threads, can hang
@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_the_indexers_fingerprints_are_the_sketchers_of_each_text(tmp_path, workers):
    """`neardup index --sketch simhash` keeps each text's hash counts between its passes (the stop-list learned in
    between, here from a footer every text repeats): every stored fingerprint is Sketcher.sketch of its text under
    the store's configuration and stop-list, in a new store and in the existing one."""
    footer = textgen.text(textgen.article(999, 3))
    texts = {f"d{seed}": repetitive(seed) + " " + footer + " " + footer for seed in range(30)}
    texts["empty"] = "!!!"
    texts["short"] = "one two"
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": k, "text": v} for k, v in texts.items()])
    path = tmp_path / "store"
    done = run_neardup("index", str(corpus), "--store", str(path), "--sketch", SIMHASH, "--workers", str(workers),
                       "--stop-min-docs", "2", "--stop-fraction", "0.5")
    assert done.returncode == 0 and re.search(r"stop-listed shingles: [1-9][0-9,]* \(learned", done.stdout), done
    more = {f"m{seed}": repetitive(100 + seed) + " " + footer for seed in range(5)}
    more_corpus = write_jsonl(tmp_path / "more.jsonl", [{"id": k, "text": v} for k, v in more.items()])
    assert run_neardup("index", str(more_corpus), "--store", str(path), "--workers", str(workers)).returncode == 0
    with open_store(path, readonly=True) as store:
        assert store.config.weighting == LOG_TF and store.config.sketcher_version == 3
        sketcher = Sketcher(store.config, store.stoplist)
        everything = {**texts, **more}
        assert store.get_many(list(everything)) == [sketcher.sketch(text) for text in everything.values()]
        assert store.get_many(["empty"]) == [b""]
        # the stop-list mattered: without it the fingerprints differ
        plain = Sketcher(SketchConfig(kind=SIMHASH))
        assert store.get_many(["d0"]) != [plain.sketch(texts["d0"])]


def test_the_defaults_follow_the_store_kind(engine, tmp_path):
    assert engine.served.defaults == DedupParams(46 / 64, HAMMING, "greedy")
    info = engine.served.info()
    assert (info["default_threshold"], info["default_metric"]) == (0.71875, HAMMING)
    assert reference.max_distance(engine.served.defaults.threshold) == 18
    assert info["sketch_config"].kind == SIMHASH
    with create_store(tmp_path / "b", SketchConfig(), []) as store:
        assert ServedStore(store).defaults == DedupParams(0.52, CONTAINMENT, "greedy")


def test_each_kind_refuses_the_other_kinds_metric(engine, tmp_path):
    with pytest.raises(ConfigMismatch, match="metric containment does not apply to this store's simhash sketches: "
                                             r"use hamming, or leave the metric unset for the store's default "
                                             r"\(hamming at 0.71875\)"):
        engine.dedup.dedup_ids(["b0"], DedupParams(0.9, CONTAINMENT))
    with pytest.raises(ConfigMismatch, match="metric jaccard does not apply"):
        engine.search.find_similar("b0", SimilarParams(threshold=0.9, metric="jaccard"))
    with create_store(tmp_path / "b", SketchConfig(), []) as store:
        bottom_k = Operations(store)
        with pytest.raises(ConfigMismatch, match="metric hamming does not apply to this store's bottomk sketches: "
                                                 "use containment, jaccard, mutual"):
            bottom_k.dedup.dedup_ids(["a"], DedupParams(0.9, HAMMING))
        with pytest.raises(ConfigMismatch, match="metric hamming does not apply"):
            list(bottom_k.search.similar_pairs(0.9, HAMMING))


# ---- corpus search ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("threshold", [61 / 64, 62 / 64, 1.0, 0.95])
def test_find_similar_equals_an_exhaustive_scan_up_to_3_bits(engine, store_path, threshold):
    fingerprints = store_path[1]
    for doc_id in list(fingerprints)[::7]:
        outcome = engine.search.find_similar(doc_id, SimilarParams(top_k=2000, threshold=threshold, metric=HAMMING))
        assert outcome.exact
        assert [(m.id, m.similarity) for m in outcome.matches] == \
            exhaustive_hamming(fingerprints, fingerprints[doc_id], threshold, leave_out=doc_id)


def test_find_similar_by_sketch_and_top_k(engine, store_path):
    fingerprints = store_path[1]
    query = fingerprints["b3"] ^ 1
    outcome = engine.search.find_similar(RequestDocument("", sketch=encode(query)),
                                  SimilarParams(top_k=2, threshold=61 / 64, metric=HAMMING))
    assert [(m.id, m.similarity) for m in outcome.matches] == exhaustive_hamming(fingerprints, query, 61 / 64)[:2]
    empty = engine.search.find_similar(RequestDocument("", sketch=b""), SimilarParams(threshold=0.0, metric=HAMMING))
    assert empty.matches == []


@pytest.mark.parametrize("threshold", [60 / 64, 0.8, 46 / 64, 0.0])
def test_beyond_3_bits_the_scan_equals_an_exhaustive_scan(engine, store_path, threshold):
    """Past what the permutation tables guarantee the search compares the query with every stored fingerprint."""
    fingerprints = store_path[1]
    for doc_id in list(fingerprints)[::9]:
        outcome = engine.search.find_similar(doc_id, SimilarParams(top_k=2000, threshold=threshold, metric=HAMMING))
        assert outcome.exact
        assert [(m.id, m.similarity) for m in outcome.matches] == \
            exhaustive_hamming(fingerprints, fingerprints[doc_id], threshold, leave_out=doc_id)


def test_the_scan_sees_a_write_at_once(store_path, tmp_path):
    """The fingerprints the scan reads are kept per committed state: a write is seen by the next search."""
    shutil.copytree(store_path[0], tmp_path / "store")
    with open_store(tmp_path / "store") as store:
        engine = Operations(store)
        params = SimilarParams(top_k=2000, threshold=0.8, metric=HAMMING)
        before = {m.id for m in engine.search.find_similar("b3", params).matches}
        query = store_path[1]["b3"]
        engine.writer.upsert([RequestDocument("b3-twin", sketch=encode(query ^ 0b1111))])
        assert {m.id for m in engine.search.find_similar("b3", params).matches} == before | {"b3-twin"}
        engine.writer.delete(["b3-twin"])
        assert {m.id for m in engine.search.find_similar("b3", params).matches} == before


@pytest.mark.parametrize("threshold", [61 / 64, 0.0])
def test_too_many_candidates_is_inexact(store_path, threshold):
    """At 61/64 more than 10 articles share a block with c0 (none within 3 bits); at 0 every article matches and
    the scan verifies the 10 nearest."""
    with open_store(store_path[0], readonly=True) as store:
        engine = Operations(store, Limits(max_candidates=10))
        outcome = engine.search.find_similar("c0", SimilarParams(top_k=100, threshold=threshold, metric=HAMMING))
        assert not outcome.exact
        expected = exhaustive_hamming(store_path[1], store_path[1]["c0"], threshold, leave_out="c0")
        found = [(m.id, m.similarity) for m in outcome.matches]
        assert set(found) <= set(expected)
        if threshold == 0.0:
            assert len(found) == 10 and min(s for _, s in found) >= expected[9][1]


@pytest.mark.parametrize("threshold", [61 / 64, 1.0])
def test_pairs_over_ranges_are_every_pair_within_the_distance_once(engine, store_path, threshold):
    fingerprints = store_path[1]
    limit = engine.search.docno_limit()
    found = set()
    for start, stop in ((0, limit // 3), (limit // 3, 2 * limit // 3), (2 * limit // 3, None)):
        for doc_id, outcome in engine.search.similar_pairs(threshold, HAMMING, start, stop):
            assert outcome.exact
            for match in outcome.matches:
                pair = (doc_id, match.id)
                assert pair not in found and pair[::-1] not in found
                found.add(pair)
    ids = list(fingerprints)  # written in this order: docno order
    most = reference.max_distance(threshold)
    expected = {(a, b) for i, a in enumerate(ids) for b in ids[i + 1:]
                if reference.hamming(fingerprints[a], fingerprints[b]) <= most}
    assert found == expected and expected


# ---- the command line ------------------------------------------------------------------------------------------

def corpus(path, articles: int = 40):
    rng = random.Random(2)
    records = []
    for seed in range(articles):
        text = textgen.text(textgen.article(seed, 30))
        records.append({"id": f"a{seed}", "text": text})
        if seed % 4 == 0:
            records.append({"id": f"a{seed}-same", "text": text.upper()})
        if seed % 4 == 1:
            words = text.split()
            words[rng.randrange(len(words))] = "replaced"
            records.append({"id": f"a{seed}-edited", "text": " ".join(words)})
    return write_jsonl(path, records)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    root = tmp_path_factory.mktemp("simhash-cli")
    done = run_neardup("index", str(corpus(root / "corpus.jsonl")), "--store", str(root / "store"),
                       "--sketch", "simhash")
    assert done.returncode == 0, done.stderr
    return root, done


@pytest.mark.slow
def test_index_sketch_simhash_through_the_real_command(indexed):
    root, done = indexed
    assert "(simhash: unit=word:3 sketch=simhash lang=english min_word_len=1)" in done.stdout
    assert "bytes per article:    8 (sketch)" in done.stdout
    with open_store(root / "store", readonly=True) as store:
        assert store.config.kind == SIMHASH and store.count() == 60
        assert all(len(sketch) == 8 for sketch in store.get_many([f"a{seed}" for seed in range(40)]))
        same, original = store.get_many(["a0-same", "a0"])
        assert same == original


@pytest.mark.slow
def test_index_refuses_mixing_kinds_and_k(indexed, neardup, tmp_path):
    root, _ = indexed
    mixed = neardup("index", root / "corpus.jsonl", "--store", root / "store", "--sketch", "bottomk")
    assert mixed.returncode == 1
    assert "holds simhash sketches, not bottomk: leave --sketch out to use the store's" in mixed.stderr
    k = neardup("index", root / "corpus.jsonl", "--store", tmp_path / "new", "--sketch", "simhash", "-k", "64")
    assert k.returncode == 2 and "-k sets the size of a bottom-K sketch" in k.stderr
    assert not (tmp_path / "new").exists()
    again = neardup("index", root / "corpus.jsonl", "--store", root / "store")  # the store's kind: fine
    assert again.returncode == 0 and "sketch=simhash" in again.stdout


@pytest.mark.slow
def test_pairs_of_the_indexed_store_equal_the_exhaustive_scan(indexed, neardup):
    root, _ = indexed
    with open_store(root / "store", readonly=True) as store, store.snapshot() as snapshot:
        stored = {doc_id: int.from_bytes(sketch, "little") for _, doc_id, sketch in snapshot.scan()}
    done = neardup("pairs", "--store", root / "store", "--threshold", "0.953125")
    assert done.returncode == 0, done.stderr
    assert "(hamming >= 0.953125)" in done.stderr
    pairs = {(p["a"], p["b"]): p["similarity"] for p in map(json.loads, done.stdout.splitlines())}
    ids = list(stored)
    expected = {(a, b): reference.hamming_similarity(stored[a], stored[b]) for i, a in enumerate(ids)
                for b in ids[i + 1:] if reference.hamming(stored[a], stored[b]) <= 3}
    assert pairs == expected
    assert all((f"a{seed}", f"a{seed}-same") in pairs for seed in range(0, 40, 4))


@pytest.mark.slow
@pytest.mark.parametrize("threshold", [None, "0.9"])
def test_pairs_past_3_bits_are_every_pair_within_the_distance(indexed, neardup, threshold):
    """The default, 46/64 (18 bits), and 0.9 (6 bits) are past what the tables find: the scan finds every pair."""
    root, _ = indexed
    with open_store(root / "store", readonly=True) as store, store.snapshot() as snapshot:
        stored = {doc_id: int.from_bytes(sketch, "little") for _, doc_id, sketch in snapshot.scan()}
    done = neardup("pairs", "--store", root / "store", *(("--threshold", threshold) if threshold else ()))
    assert done.returncode == 0, done.stderr
    bits = reference.max_distance(float(threshold or 46 / 64))
    pairs = {(p["a"], p["b"]): p["similarity"] for p in map(json.loads, done.stdout.splitlines())}
    ids = list(stored)
    assert pairs == {(a, b): reference.hamming_similarity(stored[a], stored[b]) for i, a in enumerate(ids)
                     for b in ids[i + 1:] if reference.hamming(stored[a], stored[b]) <= bits}
    wrong = neardup("pairs", "--store", root / "store", "--metric", "containment")
    assert wrong.returncode == 1 and "metric containment does not apply" in wrong.stderr and not wrong.stdout


@pytest.mark.slow
def test_cluster_a_simhash_store(indexed, neardup):
    pytest.importorskip("scipy")
    pytest.importorskip("igraph")
    root, _ = indexed
    done = neardup("cluster", "--store", root / "store", "--method", "components")
    assert done.returncode == 0, done.stderr
    exported = neardup("clusters", "--store", root / "store")
    clusters = {row["id"]: row["cluster"] for row in map(json.loads, exported.stdout.splitlines())}
    assert all(clusters[f"a{seed}"] == clusters[f"a{seed}-same"] for seed in range(0, 40, 4))
    with open_store(root / "store", readonly=True) as store:
        assert store.clustering()["metric"] == HAMMING and store.clustering()["threshold"] == 46 / 64


def test_a_bottom_k_store_is_indexed_as_before(tmp_path, neardup):
    done = neardup("index", corpus(tmp_path / "corpus.jsonl", 8), "--store", tmp_path / "store")
    assert done.returncode == 0 and "(bottomk: unit=word:3 k=128 lang=english min_word_len=1)" in done.stdout
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.config == SketchConfig(stoplist_digest=store.config.stoplist_digest)
        assert len(store.get_many(["a0"])[0]) > 8
        values = np.frombuffer(store.get_many(["a0"])[0], "<u4")
        assert (np.diff(values.astype(np.int64)) > 0).all()
