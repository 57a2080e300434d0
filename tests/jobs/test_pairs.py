"""`neardup pairs` against an exhaustive scan, and `neardup index --no-postings`.

The reference for every store is reference.is_duplicate and reference.similarity over every pair of its stored
sketches (the kernel's compiled similar() for the one store too large for that), each pair named in docno order:
the command must print exactly those pairs, each once, whatever --workers. What is about the process (a closed
pipe, Ctrl-C, worker processes, streams) runs a real `neardup` subprocess; the rest runs main() in this process.
"""
from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from neardup.core import kernel, reference
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import decode_sketch, encode_sketch
from neardup.core.candidates import HOT_POSTINGS
from neardup.store import create_store, open_store
from neardup_client.cli_framework import EXIT_BROKEN_PIPE, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from brute import exhaustive_pairs, stored_in_docno_order
from observe import children
from server_process import NEARDUP, run_neardup, sketch_store, write_jsonl
from textgen import article, text

K = SketchConfig().k


def planted_sketches(seed: int, bases: int = 70) -> dict[str, bytes]:
    """Unrelated articles, each with 0-3 copies: edited (any share of values replaced, so similarities fall on
    both sides of any threshold), excerpted or extended (then cut to the K smallest). Lengths from 0 to K, and a
    small pool of values many articles hold, so that unrelated articles share a few values too."""
    rng = random.Random(seed)
    pool = [rng.getrandbits(32) for _ in range(30)]

    def sketch(values) -> bytes:
        return encode_sketch(sorted(set(values))[:K])

    sketches = {}
    for number in range(bases):
        length = rng.choice([K, K, K, 100, 40, 17, 12, 5, 1, 0])
        base = sorted(set(rng.sample(pool, min(3, length))) | {rng.getrandbits(32) for _ in range(length)})[:length]
        sketches[f"base-{number}"] = sketch(base)
        for copy in range(rng.randrange(4)):
            kind = rng.choice(["edit", "edit", "excerpt", "extend"])
            if kind == "edit":
                replaced = rng.randrange(len(base) + 1)
                values = rng.sample(base, len(base) - replaced) + [rng.getrandbits(32) for _ in range(replaced)]
            elif kind == "excerpt":
                values = rng.sample(base, len(base) * rng.randrange(1, 10) // 10)
            else:
                values = base + [rng.getrandbits(32) for _ in range(rng.randrange(1, 3 * K))]
            sketches[f"base-{number}-{kind}-{copy}"] = sketch(values)
    ids = list(sketches)
    rng.shuffle(ids)  # docno order is write order: not the order of the ids
    return {doc_id: sketches[doc_id] for doc_id in ids}


def printed_pairs(output: str) -> dict[tuple[str, str], float]:
    """The pairs of `neardup pairs` output; each must come once."""
    lines = [json.loads(line) for line in output.splitlines()]
    assert all(set(line) == {"a", "b", "similarity"} for line in lines)
    pairs = {(line["a"], line["b"]): line["similarity"] for line in lines}
    assert len(pairs) == len(lines), "a pair was printed twice"
    assert not {(b, a) for a, b in pairs} & set(pairs), "a pair was printed both ways"
    return pairs


@pytest.fixture(scope="module")
def planted_store(tmp_path_factory) -> Path:
    """The planted sketches written in three batches, then some rewritten and some deleted: docnos with gaps."""
    path = tmp_path_factory.mktemp("pairs") / "store"
    sketches = planted_sketches(11)
    items = list(sketches.items())
    with create_store(path, SketchConfig(), []) as store:
        for start in range(0, len(items), len(items) // 3 + 1):
            store.put_many(items[start:start + len(items) // 3 + 1])
        rng = random.Random(12)
        rewritten = rng.sample(list(sketches), 10)
        store.put_many([(doc_id, sketches[rng.choice(list(sketches))]) for doc_id in rewritten])
        store.delete_many(rng.sample(list(sketches), 15))
    return path


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("metric, threshold", [("containment", None), ("containment", 0.85), ("jaccard", 0.3),
                                               ("jaccard", 0.0)])
def test_pairs_equal_the_exhaustive_scan(neardup, planted_store, metric, threshold, workers):
    args = ["--metric", metric] + (["--threshold", threshold] if threshold is not None else [])
    done = neardup("pairs", "--store", planted_store, "--workers", workers, *args)
    assert done.returncode == EXIT_OK, done.stderr
    expected = exhaustive_pairs(planted_store, metric, 0.52 if threshold is None else threshold)
    assert len(expected) >= 30  # the planted copies are found, not only pairs of the shared pool
    assert printed_pairs(done.stdout) == expected
    articles = len(stored_in_docno_order(planted_store))
    assert done.stderr.count("\n") == 1, done.stderr  # no bar where stderr is no terminal, one summary line
    assert done.stderr.startswith(f"pairs: {articles:,} articles, {len(expected):,} pairs ({metric} >= ")
    assert f"{workers} worker" in done.stderr


@pytest.mark.redis
def test_pairs_of_a_store_sharded_over_a_redis_cluster_equal_the_exhaustive_scan(neardup, redis_cluster_url):
    """Every shard's postings searched for every article: the pairs of the LMDB store's planted sketches."""
    items = list(planted_sketches(11).items())
    with create_store(redis_cluster_url, SketchConfig(), []) as store:
        for start in range(0, len(items), 50):
            store.put_many(items[start:start + 50])
        store.delete_many([doc_id for doc_id, _ in items[::9]])
    done = neardup("pairs", "--store", redis_cluster_url, "--workers", 3, "--metric", "jaccard", "--threshold", 0.3)
    assert done.returncode == EXIT_OK, done.stderr
    expected = exhaustive_pairs(redis_cluster_url, "jaccard", 0.3)
    assert len(expected) >= 30 and printed_pairs(done.stdout) == expected


STORIES = {f"story-{seed}": text(article(seed, 8)) for seed in range(40)}


def edited(seed: int, rng: random.Random) -> str:
    sentences = article(seed, 8)
    for _ in range(rng.randrange(1, 5)):
        sentences[rng.randrange(len(sentences))] = f"A rewritten sentence number {rng.randrange(1000)} here."
    return "Breaking news. " + text(sentences[:rng.randrange(4, 9)])


@pytest.fixture(scope="module")
def text_store(indexed_store) -> Path:
    """Stories with edited, cut and wrapped copies, sketched by `neardup index`."""
    rng = random.Random(5)
    texts = dict(STORIES)
    for seed in range(0, 40, 2):
        for copy in range(rng.randrange(1, 4)):
            texts[f"story-{seed}-copy-{copy}"] = edited(seed, rng)
    return indexed_store("pairs-text", texts)


@pytest.mark.slow
def test_a_real_process_with_workers_finds_the_pairs_of_indexed_texts(text_store):
    """Worker processes, stdout and stderr of a real `neardup pairs`."""
    done = run_neardup("pairs", "--store", str(text_store), "--workers", "3")
    assert done.returncode == EXIT_OK, done.stderr
    expected = exhaustive_pairs(text_store, "containment", 0.52)
    assert printed_pairs(done.stdout) == expected
    assert len(expected) >= 20 and all(a.split("-copy")[0] == b.split("-copy")[0] for a, b in expected)
    assert done.stderr.count("\n") == 1 and "3 workers" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_progress_shows_a_bar_on_stderr(text_store):
    """--progress draws the bar where stderr is no terminal too, counting the workers' articles (its frames: text
    mode reads each "\r" as a line end; tests/cli/test_progress.py reads the bytes)."""
    done = run_neardup("pairs", "--store", str(text_store), "--workers", "2", "--progress")
    assert done.returncode == EXIT_OK, done.stderr
    articles = len(stored_in_docno_order(text_store))
    assert f"| 0/{articles} [" in done.stderr and f"| {articles}/{articles} [" in done.stderr
    assert "articles/s" in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"pairs: {articles:,} articles, ")


@pytest.mark.slow
def test_hot_values_across_ranges(neardup, tmp_path):
    """More articles than HOT_POSTINGS hold a few values, so their postings are left unread where that loses no
    match; short articles holding them are still found. Checked with the kernel over every pair (reference.py
    takes too long for 4 million pairs) and, for the pairs found, with reference.py."""
    rng = random.Random(3)
    hot = [rng.getrandbits(32) for _ in range(6)]
    sketches = {}
    for number in range(HOT_POSTINGS + 300):
        own = {rng.getrandbits(32) for _ in range(rng.choice([K - 6, K - 6, 30, 10]))}
        sketches[f"a{number}"] = encode_sketch(sorted(own | set(hot))[:K])
    for number in range(0, HOT_POSTINGS, 97):  # copies, and short articles of hot values only
        values = decode_sketch(sketches[f"a{number}"])
        sketches[f"a{number}-copy"] = encode_sketch(sorted(rng.sample(values, len(values) * 3 // 4)))
    for number in range(5):
        sketches[f"hot-only-{number}"] = encode_sketch(sorted(rng.sample(hot, 3 + number % 3)))
    store_path = sketch_store(tmp_path / "store", sketches)
    articles = stored_in_docno_order(store_path)
    raw = [encode_sketch(sketch) for _, sketch in articles]
    for metric, threshold in (("containment", 0.52), ("jaccard", 0.4)):
        expected = {}
        for i, (a, _) in enumerate(articles):
            for position, score in kernel.similar(raw[i], raw[i + 1:], K, threshold, metric):
                expected[a, articles[i + 1 + position][0]] = score
        done = run_neardup("pairs", "--store", str(store_path), "--metric", metric, "--threshold", str(threshold),
                           "--workers", "2")
        assert done.returncode == EXIT_OK, done.stderr
        found = printed_pairs(done.stdout)
        assert found == expected
        if metric == "containment":  # a short article of hot values is contained in every article
            assert sum("hot-only" in a + b for a, b in found) > HOT_POSTINGS
        sketch_of = dict(articles)
        for (a, b), score in found.items():
            assert score == reference.similarity(sketch_of[a], sketch_of[b], K, metric)


# `pairs --workers` in a process of its own: forking workers from this one, after other tests' gRPC threads, can
# hang
@pytest.mark.slow
def test_output_file_holds_the_same_pairs_and_nothing_is_left_beside_it(neardup, planted_store, tmp_path):
    on_stdout = neardup("pairs", "--store", planted_store)
    done = run_neardup("pairs", "--store", str(planted_store), "--workers", "2",
                       "--output", str(tmp_path / "pairs.jsonl"))
    assert done.returncode == EXIT_OK and done.stdout == ""
    assert done.stderr.startswith("pairs: ")
    assert printed_pairs((tmp_path / "pairs.jsonl").read_text(encoding="utf-8")) == printed_pairs(on_stdout.stdout)
    assert [path.name for path in tmp_path.iterdir()] == ["pairs.jsonl"]


def test_an_output_that_cannot_be_written_is_one_line(neardup, planted_store, tmp_path):
    for output, reason in ((tmp_path / "missing" / "pairs.jsonl", "No such file or directory"),
                           (tmp_path, "it is a directory")):
        done = neardup("pairs", "--store", planted_store, "--output", output)
        assert done.returncode == EXIT_FAILED and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: cannot write --output")
        assert reason in done.stderr


def test_a_failed_run_leaves_no_output_file(neardup, tmp_path):
    done = neardup("pairs", "--store", tmp_path / "no-store", "--output", tmp_path / "pairs.jsonl")
    assert done.returncode == EXIT_FAILED
    assert list(tmp_path.iterdir()) == []


# `pairs --workers` in a process of its own: forking workers from this one, after other tests' gRPC threads, can
# hang
@pytest.mark.slow
def test_an_empty_store_has_no_pairs(neardup, tmp_path):
    done = run_neardup("pairs", "--store", str(sketch_store(tmp_path / "store", {})), "--workers", "3")
    assert (done.returncode, done.stdout) == (EXIT_OK, "")
    assert done.stderr.startswith("pairs: 0 articles, 0 pairs")


def test_unicode_ids_are_written_as_utf8_json(neardup, tmp_path):
    values = encode_sketch(range(1000, 1000 + K))
    store_path = sketch_store(tmp_path / "store", {"статья \"1\"": values, "記事\t2": values})
    done = neardup("pairs", "--store", store_path, "--output", tmp_path / "pairs.jsonl")
    assert done.returncode == EXIT_OK
    line = (tmp_path / "pairs.jsonl").read_bytes()
    assert line == '{"a": "статья \\"1\\"", "b": "記事\\t2", "similarity": 1.0}\n'.encode("utf-8")


def test_inexact_searches_are_counted_and_exit_partial(neardup, tmp_path):
    """Three identical articles: the first has two candidates above it, past --max-candidates 1."""
    values = encode_sketch(range(5000, 5000 + K))
    store_path = sketch_store(tmp_path / "store", {"x": values, "y": values, "z": values})
    done = neardup("pairs", "--store", store_path, "--max-candidates", "1")
    assert done.returncode == EXIT_PARTIAL == 3
    summary, warning = done.stderr.splitlines()
    assert summary.startswith("pairs: 3 articles, 2 pairs")
    assert warning.startswith("neardup: 1 article had more than 1 candidates") and "--max-candidates" in warning
    assert len(printed_pairs(done.stdout)) == 2 and ("y", "z") in printed_pairs(done.stdout)
    assert neardup("pairs", "--store", store_path, "--max-candidates", "2").returncode == EXIT_OK


@pytest.mark.parametrize("args, message", [
    (["--threshold", "1.5"], "must be in [0, 1]"),
    (["--threshold", "nan"], "must be in [0, 1]"),
    (["--metric", "cosine"], "invalid choice"),
    (["--workers", "0"], "at least 1"),
    (["--max-candidates", "0"], "at least 1"),
])
def test_usage_errors_are_one_line_with_exit_code_2(neardup, planted_store, args, message):
    done = neardup("pairs", "--store", planted_store, *args)
    assert done.returncode == EXIT_USAGE and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: ") and message in done.stderr


def test_a_missing_store_is_one_line(neardup, tmp_path):
    done = neardup("pairs", "--store", tmp_path / "nothing")
    assert done.returncode == EXIT_FAILED and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: no store at")


# --- stores without postings ---------------------------------------------------------------------------------------

def test_a_store_without_postings_is_refused_in_one_line(neardup, tmp_path):
    with create_store(tmp_path / "store", SketchConfig(), [], indexed=False) as store:
        store.put_many([("a", encode_sketch([1, 2, 3])), ("b", encode_sketch([1, 2, 3]))])
    for workers in ("1", "3"):
        done = neardup("pairs", "--store", tmp_path / "store", "--workers", workers)
        assert done.returncode == EXIT_FAILED and done.stdout == ""
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: ")
        assert "no postings" in done.stderr


def test_index_no_postings_makes_a_store_without_them(neardup, tmp_path):
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": doc_id, "text": body} for doc_id, body in
                                                      list(STORIES.items())[:5]])
    done = neardup("index", corpus, "--store", tmp_path / "bare", "--no-postings")
    assert done.returncode == EXIT_OK, done.stderr
    assert "postings:             none" in done.stdout
    done = neardup("index", corpus, "--store", tmp_path / "full")
    assert done.returncode == EXIT_OK, done.stderr
    assert "postings:             kept" in done.stdout
    with open_store(tmp_path / "bare", readonly=True) as bare, open_store(tmp_path / "full", readonly=True) as full:
        assert (bare.indexed, full.indexed) == (False, True)
        assert bare.count() == full.count() == 5
        assert bare.get_many(list(STORIES)[:5]) == full.get_many(list(STORIES)[:5])
    assert neardup("pairs", "--store", tmp_path / "bare").returncode == EXIT_FAILED
    assert neardup("pairs", "--store", tmp_path / "full").returncode == EXIT_OK

    # an existing store keeps what it has: adding to one without postings needs no flag and adds none ...
    more = write_jsonl(tmp_path / "more.jsonl", [{"id": "later", "text": STORIES["story-9"]}])
    for args in ([], ["--no-postings"]):
        done = neardup("index", more, "--store", tmp_path / "bare", *args)
        assert done.returncode == EXIT_OK and "postings:             none" in done.stdout
    # ... and one with postings cannot drop them: refused before anything is read
    done = neardup("index", more, "--store", tmp_path / "full", "--no-postings")
    assert done.returncode == EXIT_FAILED and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "keeps postings" in done.stderr and "new --store" in done.stderr
    with open_store(tmp_path / "bare", readonly=True) as bare, open_store(tmp_path / "full", readonly=True) as full:
        assert (bare.indexed, bare.count(), full.indexed, full.count()) == (False, 6, True, 5)


# --- the process: closed pipes and Ctrl-C --------------------------------------------------------------------------

@pytest.fixture(scope="module")
def many_pairs_store(tmp_path_factory) -> Path:
    """400 near-identical articles: 79,800 pairs, several MB of output, more than a pipe holds."""
    rng = random.Random(8)
    base = [rng.getrandbits(32) for _ in range(K + 40)]
    sketches = {f"article-{number:03}": encode_sketch(sorted(rng.sample(base, K))) for number in range(400)}
    return sketch_store(tmp_path_factory.mktemp("many") / "store", sketches)


def assert_group_gone(pgid: int) -> None:
    """No process of the command's group is left: its workers were stopped and reaped."""
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "3"])
def test_a_closed_stdout_ends_quietly_with_exit_code_141(many_pairs_store, workers):
    read, write = os.pipe()
    os.close(read)
    try:
        process = subprocess.Popen([*NEARDUP, "pairs", "--store", str(many_pairs_store), "--workers", workers],
                                   stdout=write, stderr=subprocess.PIPE, start_new_session=True)
    finally:
        os.close(write)
    _, stderr = process.communicate(timeout=120)
    assert (process.returncode, stderr.decode()) == (EXIT_BROKEN_PIPE, "")
    assert_group_gone(process.pid)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "3"])
def test_piped_into_head_prints_its_first_line_and_no_traceback(many_pairs_store, workers):
    command = f"{shlex.join([*NEARDUP, 'pairs', '--store', str(many_pairs_store), '--workers', workers])} | head -1"
    done = subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.returncode == EXIT_BROKEN_PIPE and done.stderr == ""
    line = json.loads(done.stdout)
    assert line["a"].startswith("article-") and line["b"].startswith("article-")


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["1", "3"])
def test_ctrl_c_exits_130_without_a_traceback_and_stops_the_workers(many_pairs_store, workers):
    """Ctrl-C while the command waits for its reader (stdout is a pipe nobody reads after the first line)."""
    process = subprocess.Popen([*NEARDUP, "pairs", "--store", str(many_pairs_store), "--workers", workers],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    assert json.loads(process.stdout.readline())["a"].startswith("article-")  # pairs are being written
    os.killpg(process.pid, signal.SIGINT)  # a terminal sends Ctrl-C to the whole process group
    assert process.wait(timeout=60) == EXIT_INTERRUPTED == 130
    assert "Traceback" not in process.stderr.read().decode()
    process.stdout.close()
    process.stderr.close()
    assert_group_gone(process.pid)


@pytest.mark.slow
def test_a_worker_that_dies_is_one_line_and_exit_code_1(many_pairs_store):
    process = subprocess.Popen([*NEARDUP, "pairs", "--store", str(many_pairs_store), "--workers", "2"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    process.stdout.readline()  # the workers run (and wait, like the parent, for the output to be read)
    workers = children(process.pid)
    assert len(workers) == 2
    os.kill(workers[-1], signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == EXIT_FAILED
    assert stderr.decode() == "neardup: error: pairs worker 2 of 2 stopped before it finished (exit code -9)\n"
    assert_group_gone(process.pid)
