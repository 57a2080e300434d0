"""The search index file (`neardup search-index`) and the index every worker maps from it (`neardup serve
--search-index shared`): the bytes of its header, the refusal of a damaged, cut, forged or foreign file, answers
equal to an exhaustive scan and to the store path through writes, replacements and deletes (caught up from the
change log, or by comparing every article when the log no longer reaches back), a new file written and mapped
when the delta grows, and real servers whose workers share one file, answer alike, and come back after a kill."""
from __future__ import annotations

import json
import os
import random
import re
import signal
import struct
import time
from pathlib import Path

import grpc
import pytest

from neardup.core import _search, candidates
from neardup.core.encoding import encode_sketch
from neardup.core.errors import ConfigMismatch, NotFound, StoreUnavailable
from neardup.core.sketch_config import SketchConfig
from neardup.core.vocabulary import BOTTOMK_METRICS as METRICS
from neardup.runtime.search import base_file, delta, shared
from neardup.runtime.params import SimilarParams
from neardup.runtime.served_store import ServedStore
from neardup.runtime.similar_search import SimilarSearch
from neardup.runtime.view import LiveView
from neardup.store import create_store, open_store
from neardup.store import lmdb as lmdb_store
from neardup_client import Document as ClientDocument
from neardup_client import NearDupClient, NearDupClientError
from server_process import free_ports, run_neardup, serving, sketch_store
from brute import exhaustive, reaching, scored
from sketches import K, make_corpus

HOT_LIMIT = 40  # a low hot limit, so that searches leave hot postings unread


def answer_of(matches) -> list[tuple[str, float]]:
    return [(match.id, match.similarity) for match in matches]


def change(rng: random.Random, corpus: dict[str, list[int]], round_: int) -> tuple[dict[str, list[int]], list[str]]:
    """New articles, replaced ones and deletes, applied to corpus."""
    written = {f"new-{round_}-{n}": values for n, values in enumerate(make_corpus(rng, 25).values())}
    for doc_id in rng.sample(sorted(corpus), 20):
        written[doc_id] = sorted(set(corpus[doc_id][:rng.randint(1, 8)]) | set(rng.sample(range(100, 112), 3)))
    gone = rng.sample(sorted(set(corpus) - set(written)), 15)
    corpus.update(written)
    for doc_id in gone:
        del corpus[doc_id]
    return written, gone


def write(store, written: dict[str, list[int]], gone: list[str]) -> None:
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in written.items()])
    store.delete_many(gone)


def check_index(index, corpus: dict[str, list[int]], every: int = 7) -> None:
    """Each searched article's answers from the index equal the exhaustive scan's, both metrics."""
    for doc_id in list(corpus)[::every]:
        docno, sketch = index.stored(doc_id)
        assert sketch == encode_sketch(corpus[doc_id])
        for metric in METRICS:
            matches = scored(corpus, corpus[doc_id], doc_id, metric)
            for threshold in (0.2, 0.52, 0.9):
                found = index.search(sketch, threshold, metric, exclude=docno)
                assert found.exact
                assert sorted(found.matches, key=lambda m: (-m[1], m[0])) == answer_of(reaching(matches, threshold))


@pytest.fixture
def low_hot_limit(monkeypatch):
    monkeypatch.setattr(candidates, "HOT_POSTINGS", HOT_LIMIT)


@pytest.fixture
def corpus_store(tmp_path, low_hot_limit):
    rng = random.Random(21)
    corpus = make_corpus(rng, 300)
    store = create_store(tmp_path / "s", SketchConfig(k=K), [])
    store.put_many([(doc_id, encode_sketch(values)) for doc_id, values in corpus.items()])
    yield rng, corpus, store
    store.close()


def reference_checksum(data: bytes) -> int:
    """The file checksum as _search.c defines it, the slow way: four lanes over the 64-bit words (the checksum's
    own word read as 0), mixed with the length."""
    mask, p1, p2 = (1 << 64) - 1, 0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & mask

    lanes = [p1, p2, p1 ^ p2, ~p1 & mask]
    for i, (word,) in enumerate(struct.iter_unpack("<Q", data)):
        word = 0 if i == 31 else word
        lanes[i % 4] = rotl(((lanes[i % 4] ^ word) * p1) & mask, 31)
    x = (len(data) * p2) & mask
    for lane in lanes:
        x = (rotl(x ^ ((lane * p2) & mask), 27) * p1) & mask
    x ^= x >> 33
    x = (x * p2) & mask
    x ^= x >> 29
    x = (x * p1) & mask
    return x ^ (x >> 32)


def test_the_file_header_holds_the_version_the_store_generation_and_a_checksum(corpus_store):
    _, corpus, store = corpus_store
    path = base_file.resolve_path(store.location, None)
    assert path == Path(store.location) / "search-index"
    built = base_file.build(store, path, hot_postings=HOT_LIMIT)
    data = path.read_bytes()
    assert data[:8] == b"NDSRCHIX"
    version, header_bytes, file_bytes, generation, k, hot = struct.unpack_from("<IIQQII", data, 8)
    assert (version, header_bytes, file_bytes, k, hot) == (1, 256, len(data), K, HOT_LIMIT)
    assert generation == store.generation() == built.header["generation"]
    limit, articles, pool_values = struct.unpack_from("<QQQ", data, 48)
    assert (limit, articles) == (len(corpus), len(corpus))
    assert pool_values == sum(len(values) for values in corpus.values())
    assert data[96:112] == store.config.digest().encode()
    assert struct.unpack_from("<Q", data, 248)[0] == reference_checksum(data) == built.header["checksum"]
    assert len(data) % 8 == 0 and built.header["file_bytes"] == len(data)
    # the pool section, right after the header, holds the sketches by docno
    with store.snapshot() as snapshot:
        first = next(snapshot.scan())
    assert first[0] == 0 and data[256:256 + len(first[2])] == first[2]


def test_a_file_built_a_few_buckets_at_a_time_is_the_same_file(tmp_path, corpus_store, monkeypatch):
    _, _, store = corpus_store
    whole = base_file.build(store, tmp_path / "whole", hot_postings=HOT_LIMIT).path.read_bytes()
    monkeypatch.setattr(base_file, "BUILD_WINDOW", 300)  # a few thousand buckets a window: about twenty windows
    windowed = base_file.build(store, tmp_path / "windowed", hot_postings=HOT_LIMIT).path.read_bytes()
    assert len(windowed) == len(whole)
    different = [at for at in range(0, len(whole), 8) if whole[at:at + 8] != windowed[at:at + 8]]
    assert set(different) <= {184, 248}  # when it was written, and so the checksum


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_a_mapped_file_answers_as_an_exhaustive_scan_through_writes_and_a_new_file(corpus_store):
    rng, corpus, store = corpus_store
    path = base_file.build(store, Path(store.location) / "search-index", hot_postings=HOT_LIMIT).path
    mapped = base_file.open_mapped(path, store)
    index = mapped.index
    check_index(index, corpus)
    for round_ in range(3):  # written after the file: caught up from the change log, into the delta
        written, gone = change(rng, corpus, round_)
        write(store, written, gone)
        delta.catch_up(index, store, mapped.header["generation"], lambda _: None)
        assert all(index.stored(doc_id) is None for doc_id in gone)
        check_index(index, corpus)
    assert index.stats()["delta_entries"] > 0 and len(index) == len(corpus)
    assert index.stats()["hot_values_skipped"] > 0, "no search left a hot posting unread: the rule is untested"
    # a new file from the base and the delta: the same answers, nothing in its delta
    header = base_file.write_file(path, index.export(), store.generation(), store, hot_postings=HOT_LIMIT)
    assert header["articles"] == len(corpus) and header["generation"] == store.generation()
    renewed = base_file.open_mapped(path, store).index
    assert renewed.stats()["delta_entries"] == 0 and len(renewed) == len(corpus)
    check_index(renewed, corpus, every=5)
    check_index(index, corpus, every=11)  # the old mapping still answers (its inode lives while mapped)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_catching_up_compares_every_article_when_the_change_log_no_longer_reaches_back(tmp_path, corpus_store,
                                                                                       monkeypatch):
    rng, corpus, store = corpus_store
    monkeypatch.setattr(lmdb_store, "CHANGE_LOG_IDS", 30)
    path = base_file.build(store, tmp_path / "index", hot_postings=HOT_LIMIT).path
    for round_ in range(2):
        write(store, *change(rng, corpus, round_))
    mapped = base_file.open_mapped(path, store)
    assert store.changed_since(mapped.header["generation"]) is None
    lines = []
    delta.catch_up(mapped.index, store, mapped.header["generation"], lines.append)
    assert any("comparing every article" in line for line in lines)
    assert len(mapped.index) == len(corpus)
    check_index(mapped.index, corpus)
    # a file of another store of the same configuration: other articles under the same docnos, all replaced
    other_corpus = make_corpus(random.Random(3), 200)
    with create_store(tmp_path / "other", SketchConfig(k=K), []) as other:
        other.put_many([(doc_id, encode_sketch(values)) for doc_id, values in other_corpus.items()])
        foreign = base_file.build(other, tmp_path / "foreign", hot_postings=HOT_LIMIT).path
    mapped = base_file.open_mapped(foreign, store)
    delta.reconcile(mapped.index, store, lambda _: None)
    assert len(mapped.index) == len(corpus)
    assert all(mapped.index.stored(doc_id) is None for doc_id in set(other_corpus) - set(corpus))
    check_index(mapped.index, corpus, every=5)


def resealed(data: bytearray) -> bytes:
    """The file with its checksum made right again (a forgery, or damage before the checksum was taken)."""
    _search.seal(data, len(data))
    return bytes(data)


def test_a_damaged_cut_forged_or_foreign_file_is_refused_saying_what_to_run(tmp_path, corpus_store):
    _, _, store = corpus_store
    path = base_file.build(store, tmp_path / "index", hot_postings=HOT_LIMIT).path
    good = path.read_bytes()
    offsets = struct.unpack_from("<9Q", good, 112)
    pool_offsets = offsets[1]
    rebuild = f"rebuild it with `neardup search-index --store {store.location} --file {path}`"

    def refusal(data: bytes) -> str:
        path.write_bytes(data)
        with pytest.raises(StoreUnavailable) as raised:
            base_file.open_mapped(path, store)
        assert str(raised.value).endswith(rebuild)
        return str(raised.value)

    flipped = bytearray(good)
    flipped[300] ^= 1  # a value in the pool
    assert "damaged: checksum" in refusal(bytes(flipped))
    assert "the header says %d bytes, the file has %d (cut short?)" % (len(good), len(good) - 64) in \
        refusal(good[:-64])
    assert "not a neardup search index file" in refusal(b"PK\x03\x04" + good[4:])
    newer = bytearray(good)
    struct.pack_into("<I", newer, 8, 2)
    assert "format version 2; this neardup reads version 1" in refusal(resealed(newer))
    outside = bytearray(good)  # a section past the end, with a checksum to match: checked all the same
    struct.pack_into("<Q", outside, 112 + 8 * 5, len(good) - 8)
    assert "damaged: section base" in refusal(resealed(outside))
    backwards = bytearray(good)  # an article's values out of the pool, with a checksum to match
    struct.pack_into("<Q", backwards, pool_offsets + 8 * 3, 2**40)
    assert "damaged: an article's values are out of range" in refusal(resealed(backwards))
    path.write_bytes(good)
    with create_store(tmp_path / "simhash", SketchConfig(kind="simhash"), []) as simhash:
        with pytest.raises(ConfigMismatch, match="serves stores of bottom-K sketches; .* use --search-index store"):
            base_file.build(simhash, tmp_path / "never")
    with create_store(tmp_path / "other", SketchConfig(k=K, min_word_len=2), []) as other:
        with pytest.raises(ConfigMismatch, match="was built for sketch configuration"):
            base_file.open_mapped(path, other)
    assert base_file.open_mapped(path, store).header["checksum"] == reference_checksum(good)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_a_view_sharing_the_file_answers_like_the_store_and_writes_a_new_file_when_its_delta_grows(
        tmp_path, corpus_store, monkeypatch):
    """The request path with --search-index shared, on a store written behind its back: every answer equals the
    store path's and the exhaustive scan's; a delta past its share is folded into a new file (written in the
    background, mapped by this worker as by any other), after which the answers are the same."""
    monkeypatch.setattr(shared, "SHARED_DELTA_SHARE", 0.0)
    monkeypatch.setattr(shared, "DELTA_MIN", 200)  # a new file once a few batches were written
    rng, corpus, store = corpus_store
    path = base_file.build(store, Path(store.location) / "search-index", hot_postings=HOT_LIMIT).path
    monkeypatch.setattr(shared, "WATCH_SECONDS", 0.05)
    view = LiveView(store, search_index="shared", search_index_file=str(path))
    other = LiveView(store, search_index="shared", search_index_file=str(path))  # another worker on the same file
    index, engine = view.search_index, SimilarSearch(ServedStore(store))

    def check() -> None:
        for doc_id in list(corpus)[::9]:
            for metric in METRICS:
                params = SimilarParams(top_k=1000, threshold=0.3, metric=metric)
                from_file = engine.find_similar(doc_id, params, view.read())
                assert from_file == engine.find_similar(doc_id, params) == engine.find_similar(doc_id, params,
                                                                                               other.read())
                assert answer_of(from_file.matches) == answer_of(exhaustive(corpus, corpus[doc_id], doc_id, 0.3,
                                                                            metric))

    first = base_file.read_header(path, store)["generation"]
    check()
    for round_ in range(3):
        written, gone = change(rng, corpus, round_)
        write(store, written, gone)
        check()
        with pytest.raises(NotFound):
            engine.find_similar(gone[0], SimilarParams(), view.read())
    deadline = time.monotonic() + 30
    while (index.files_mapped < 2 or index.busy or other.search_index.busy
           or other.search_index.stats()["generation"] < base_file.read_header(path, store)["generation"]):
        assert time.monotonic() < deadline, "no new file was written and mapped by both"
        time.sleep(0.02)
    header = base_file.read_header(path, store)
    written = index.files_written + other.search_index.files_written
    assert written >= 1 and header["generation"] > first and header["articles"] == len(corpus)
    assert other.search_index.files_mapped >= 2  # the one that did not write it mapped it
    check()
    index.close()
    other.search_index.close()


@pytest.mark.slow
def test_pairs_from_the_file_equal_pairs_from_the_store(tmp_path):
    rng = random.Random(6)
    corpus = make_corpus(rng, 250)
    path = sketch_store(tmp_path / "s", {doc_id: encode_sketch(values) for doc_id, values in corpus.items()},
                        SketchConfig(k=K))
    assert run_neardup("search-index", "--store", str(path)).returncode == 0
    with open_store(path) as store:  # written after the file: the pairs' processes catch up
        write(store, *change(rng, corpus, 0))

    def pairs(*args: str) -> tuple[list[dict], str]:
        done = run_neardup("pairs", "--store", str(path), "--threshold", "0.3", *args)
        assert done.returncode == 0, done.stderr
        return sorted((json.loads(line) for line in done.stdout.splitlines()),
                      key=lambda pair: (pair["a"], pair["b"])), done.stderr

    from_store, said = pairs("--search-index", "store")
    assert "search index" not in said
    from_file, said = pairs("--workers", "2")
    assert f"search index {path / 'search-index'}" in said
    assert from_file == from_store and len(from_store) > 100


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["lmdb", pytest.param("redis", marks=pytest.mark.redis)])
def test_workers_sharing_one_file_answer_like_the_store_and_a_killed_one_serves_again(request, tmp_path, backend):
    """`serve --workers 2 --search-index shared` builds the file (there is none), each worker maps it; writes through
    either server, and by another process, are answered by both workers alike and as the store answers; a worker
    killed with SIGKILL is restarted, maps the file, catches up, and answers the same."""
    rng = random.Random(13)
    corpus = make_corpus(rng, 250)
    location = request.getfixturevalue("redis_server").url("shared-index") if backend == "redis" else \
        tmp_path / "s"
    path = sketch_store(location, {doc_id: encode_sketch(values) for doc_id, values in corpus.items()},
                        SketchConfig(k=K))
    file_args = ("--search-index-file", str(tmp_path / "index")) if backend == "redis" else ()
    first = free_ports(2)
    with serving(path, "--search-index", "shared", *file_args, "--workers", "2", "--worker-ports", str(first),
                 log_dir=tmp_path) as shared, serving(path, log_dir=tmp_path) as plain, \
            NearDupClient(f"127.0.0.1:{first}", timeout=10) as worker_1, \
            NearDupClient(f"127.0.0.1:{first + 1}", timeout=10) as worker_2, \
            NearDupClient(plain.target, timeout=10) as stored:
        assert "building it from the store" in shared.log() and shared.log().count("search index: mapped") == 2

        def check() -> None:
            for doc_id in list(corpus)[::15]:
                for metric in METRICS:
                    want = stored.find_similar(doc_id, top_k=1000, threshold=0.3, metric=metric)
                    assert want.exact and [(m.id, m.similarity) for m in want.matches] == \
                        answer_of(exhaustive(corpus, corpus[doc_id], doc_id, 0.3, metric))
                    for worker in (worker_1, worker_2):
                        assert worker.find_similar(doc_id, top_k=1000, threshold=0.3, metric=metric) == want

        check()
        for round_, client in enumerate((worker_1, stored, None)):
            written, gone = change(rng, corpus, round_)
            documents = [ClientDocument(doc_id, sketch=encode_sketch(values)) for doc_id, values in written.items()]
            if client is None:
                with open_store(path) as writer:
                    write(writer, written, gone)
            else:
                client.upsert(documents)
                client.delete(gone)
            check()
            for worker in (worker_1, worker_2):
                with pytest.raises(NearDupClientError) as raised:
                    worker.find_similar(gone[0])
                assert raised.value.code == grpc.StatusCode.NOT_FOUND
        pid = int(shared.log().split("worker 2/2 pid ")[1].split()[0])
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while shared.log().count("search index: mapped") < 3 or shared.log().count("listening on") < 3:
            assert time.monotonic() < deadline, shared.log()
            time.sleep(0.05)
        check()


@pytest.mark.slow
def test_serve_and_check_refuse_a_damaged_file_in_one_line(tmp_path):
    corpus = make_corpus(random.Random(2), 50)
    path = sketch_store(tmp_path / "s", {doc_id: encode_sketch(values) for doc_id, values in corpus.items()},
                        SketchConfig(k=K))
    assert run_neardup("search-index", "--store", str(path)).returncode == 0
    checked = run_neardup("search-index", "--store", str(path), "--check")
    assert checked.returncode == 0 and "50 articles at generation 1" in checked.stdout, checked.stderr
    index = path / "search-index"
    index.write_bytes(index.read_bytes()[:-8])
    for command in (("serve", "--search-index", "shared", "--port", "0"), ("search-index", "--check")):
        done = run_neardup(*command, "--store", str(path))
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"neardup: error: search index file {index} cannot be used (damaged: the header says "
            f"{index.stat().st_size + 8} bytes, the file has {index.stat().st_size} (cut short?)): rebuild it with "
            f"`neardup search-index --store {path}`"]
    assert run_neardup("search-index", "--store", str(path)).returncode == 0
    flipped = bytearray(index.read_bytes())
    flipped[1000] ^= 0x10
    index.write_bytes(flipped)
    done = run_neardup("serve", "--search-index", "shared", "--port", "0", "--store", str(path))
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "cannot be used (damaged: checksum" in done.stderr


def test_index_builds_the_file_when_asked_and_check_verifies_it(tmp_path, neardup):
    texts = {f"doc-{n}": f"story {n} about the harbour and the ships that came in on day {n % 7}" for n in range(40)}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": doc_id, "text": text}) + "\n" for doc_id, text in texts.items()))
    store = tmp_path / "s"
    done = neardup("index", corpus, "--store", store, "--search-index")
    assert done.returncode == 0, done.stderr
    assert f"search index {store / 'search-index'}: 40 articles" in done.stdout
    rebuilt = neardup("search-index", "--store", store)  # the same build (base_file.build_store_file), the same line
    assert rebuilt.returncode == 0, rebuilt.stderr
    said = [re.sub(r"built in [0-9.]+ s$", "built in S s", done.stdout.strip().splitlines()[-1]),
            re.sub(r"built in [0-9.]+ s$", "built in S s", rebuilt.stdout.strip())]
    assert said[0] == said[1] and re.fullmatch(
        re.escape(f"search index {store / 'search-index'}: 40 articles, ") + r"[0-9,]+ postings at generation "
        r"[0-9,]+, [0-9,]+ bytes, built in S s", said[0]), said
    checked = neardup("search-index", "--store", store, "--check")
    assert checked.returncode == 0 and "40 articles at generation" in checked.stdout and "0 ids written since" in \
        checked.stdout, checked.stderr
    with open_store(store) as opened:
        mapped = base_file.open_mapped(store / "search-index", opened)
        assert len(mapped.index) == 40 and mapped.index.stored("doc-3")[1] == opened.get_many(["doc-3"])[0]
    assert neardup("index", corpus, "--store", tmp_path / "t", "--search-index-file", tmp_path / "x").returncode == 2
