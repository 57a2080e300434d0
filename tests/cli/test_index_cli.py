"""`neardup index` as a user runs it, then the store it leaves behind.

What is about the process (exit codes, progress and summary on their streams, stdin, the console script,
kill -9 and Ctrl-C) runs a real `neardup` subprocess; what is about the data runs the same `main()` in this
process, which saves the interpreter start-up (nltk's import alone takes a second or more).
The reference for every sketch is the sketcher in this process under the store's configuration and stop-list,
so the CLI, the worker processes and the batch writer must add nothing and lose nothing.
"""
from __future__ import annotations

import random
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from neardup.cli.main import main
from neardup.core import kernel
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.core.encoding import decode_sketch
from neardup.runtime.deduplicator import Deduplicator
from neardup.runtime.served_store import ServedStore
from neardup_client.cli_framework import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_PARTIAL, EXIT_USAGE
from neardup.store import create_store, open_store
from server_process import NEARDUP, run_neardup, write_jsonl
from observe import building, stored_count, written_count
from textgen import BOILERPLATE, article, corpus_records, malformed_corpus, text

def stored(store_path: Path, ids: list[str]) -> dict[str, bytes | None]:
    with open_store(store_path, readonly=True) as store:
        return dict(zip(ids, store.get_many(ids)))


def expected_sketches(store_path: Path, records: list[dict]) -> dict[str, bytes]:
    """What the store's own configuration and stop-list make of each record, in this process."""
    with open_store(store_path, readonly=True) as store:
        sketcher = Sketcher(store.config, store.stoplist)
    return {r["id"]: sketcher.sketch(r["text"], r.get("lang")) for r in records}


@pytest.fixture
def index_ok(neardup):
    def run(corpus_path: Path, store_path: Path, *args: str) -> subprocess.CompletedProcess:
        done = neardup("index", corpus_path, "--store", store_path, *args)
        assert done.returncode == 0, done.stderr
        return done
    return run


def run_index(corpus_path: Path | str, store_path: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """A real `neardup index` process."""
    return run_neardup("index", str(corpus_path), "--store", str(store_path), *args, **kwargs)


@pytest.mark.slow
def test_index_writes_every_document_and_prints_progress_and_a_summary(tmp_path):
    records = corpus_records(120) + [{"id": "ru-1", "lang": "ru",
                                      "text": "Министр представил бюджет. Депутаты спорили."}]
    done = run_index(write_jsonl(tmp_path / "corpus.jsonl", records), tmp_path / "store")
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr  # stderr is no terminal: no bar, one summary line (tests/cli/test_progress.py)
    assert done.stderr.startswith("neardup index: sketching 121 lines (121 sketched); writing 121 of 121 docs; ")
    summary = done.stdout
    for line in ("documents:            121", "skipped lines:        0", "duplicate ids:        0",
                 "stop-listed shingles: 0", "bytes per article:", "elapsed:"):
        assert line in summary
    assert stored(tmp_path / "store", [r["id"] for r in records]) == expected_sketches(tmp_path / "store", records)
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.count() == 121 and store.config == SketchConfig()


@pytest.mark.slow
def test_console_script_is_installed_and_runs(tmp_path):
    script = Path(sys.executable).parent / "neardup"
    if not script.exists():
        pytest.skip("the neardup console script is not installed in this environment")
    done = subprocess.run([str(script), "index", str(write_jsonl(tmp_path / "c.jsonl", corpus_records(3))),
                           "--store", str(tmp_path / "store")], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "documents:            3" in done.stdout


def test_store_defaults_to_the_environment_variable_then_the_working_directory(tmp_path, monkeypatch, neardup):
    corpus_path = write_jsonl(tmp_path / "c.jsonl", corpus_records(2))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NEARDUP_STORE", raising=False)
    assert neardup("index", corpus_path).returncode == 0
    monkeypatch.setenv("NEARDUP_STORE", "elsewhere")
    assert neardup("index", corpus_path).returncode == 0
    for store_path in (tmp_path / "neardup-store", tmp_path / "elsewhere"):
        assert stored(store_path, ["doc-0"])["doc-0"]


def test_malformed_lines_are_reported_with_their_line_number_and_skipped(tmp_path, neardup):
    """Each on a line of its own, never inside a progress bar's line; the exit code says lines were skipped."""
    problems = malformed_corpus(tmp_path / "corpus.jsonl")
    done = neardup("index", tmp_path / "corpus.jsonl", "--store", tmp_path / "store")
    assert done.returncode == EXIT_PARTIAL, done.stderr
    for number, reason in problems.items():
        assert any(line.startswith(f"neardup: line {number}: ") and reason in line and line.endswith("; skipped")
                   for line in done.stderr.split("\n")), (number, done.stderr)
    assert "\r" not in done.stderr  # stderr is no terminal here: no bar, one summary line at the end
    assert done.stderr.splitlines()[-1].startswith(f"neardup index: sketching {len(problems) + 6} lines (6 sketched, "
                                                   f"{len(problems)} skipped: malformed); writing 6 of 6 docs; ")
    assert "line 7:" not in done.stderr  # a blank line is no record
    assert "at at" not in done.stderr
    assert f"skipped lines:        {len(problems)}" in done.stdout
    good = [f"doc-{i}" for i in range(6)]
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.count() == 6 and None not in store.get_many(good)


@pytest.mark.slow
def test_strict_aborts_on_a_malformed_line_and_writes_nothing(tmp_path, neardup, index_ok):
    malformed_corpus(tmp_path / "corpus.jsonl")
    done = run_index(tmp_path / "corpus.jsonl", tmp_path / "new", "--strict")
    assert done.returncode == EXIT_FAILED
    assert done.stderr.splitlines()[-1].startswith("neardup: error: line 2: bad JSON")
    assert not (tmp_path / "new").exists()

    index_ok(write_jsonl(tmp_path / "first.jsonl", corpus_records(3)), tmp_path / "existing")
    before = stored(tmp_path / "existing", ["doc-0", "doc-1", "doc-2", "doc-3"])
    done = neardup("index", tmp_path / "corpus.jsonl", "--store", tmp_path / "existing", "--strict")
    assert done.returncode == EXIT_FAILED
    assert stored(tmp_path / "existing", list(before)) == before
    with open_store(tmp_path / "existing", readonly=True) as store:
        assert store.generation() == 1


@pytest.mark.slow
def test_stdin_gives_the_same_store_as_a_file(tmp_path, index_ok):
    records = corpus_records(30)
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl", records)
    index_ok(corpus_path, tmp_path / "from-file")
    done = run_index("-", tmp_path / "from-stdin", input=corpus_path.read_text())
    assert done.returncode == 0, done.stderr
    ids = [r["id"] for r in records]
    assert stored(tmp_path / "from-stdin", ids) == stored(tmp_path / "from-file", ids)


# `neardup index --workers 2` in a process of its own: forking workers from this one, after other tests' gRPC
# threads, can hang
@pytest.mark.slow
def test_two_workers_give_byte_identical_sketches_and_keep_corpus_order(tmp_path, index_ok):
    """Enough lines for several blocks of worker tasks; repeated ids check that the last record still wins."""
    records = corpus_records(1400, boilerplate_every=3, sentences=6)
    records += [{"id": "doc-5", "text": "A replacement that comes last."}, {"id": "doc-1399", "text": "Last."}]
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl", records)
    one = index_ok(corpus_path, tmp_path / "one", "--stop-min-docs", "100", "--workers", "1")
    two = run_index(corpus_path, tmp_path / "two", "--stop-min-docs", "100", "--workers", "2")
    assert two.returncode == 0, two.stderr
    assert "duplicate ids:        2" in one.stdout
    ids = [r["id"] for r in records[:1400]]
    sketches = stored(tmp_path / "one", ids)
    assert stored(tmp_path / "two", ids) == sketches
    final = {r["id"]: r for r in records}.values()
    assert sketches == expected_sketches(tmp_path / "one", list(final))


def test_reindexing_replaces_sketches_and_keeps_the_rest(tmp_path, index_ok):
    index_ok(write_jsonl(tmp_path / "first.jsonl", corpus_records(10)), tmp_path / "store")
    before = stored(tmp_path / "store", [f"doc-{i}" for i in range(10)])
    changed = corpus_records(2, start=50)
    changed = [{"id": "doc-3", "text": changed[0]["text"]}, {"id": "doc-new", "text": changed[1]["text"]}]
    done = index_ok(write_jsonl(tmp_path / "second.jsonl", changed), tmp_path / "store")
    assert "documents:            2" in done.stdout
    after = stored(tmp_path / "store", [*before, "doc-new"])
    assert after["doc-3"] != before["doc-3"]
    assert after == {**before, **expected_sketches(tmp_path / "store", changed)}


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_stoplist_is_learned_from_the_corpus_and_applied_to_later_indexing(tmp_path, index_ok):
    records = corpus_records(90, boilerplate_every=1)  # the boilerplate sits in every document
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl", records)
    # sentence shingles: the boilerplate is one shingle, and always among the K smallest of a short document
    done = index_ok(corpus_path, tmp_path / "store", "--stop-min-docs", "20", "--unit", "sentence")
    assert "stop-listed shingles: 1 (learned; removed 90 occurrences; kept 0 " in done.stdout
    boilerplate = Sketcher(SketchConfig(unit="sentence")).hashes(BOILERPLATE)
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.stoplist == boilerplate
        sketches = store.get_many([r["id"] for r in records])
    assert all(sketch and not boilerplate & set(decode_sketch(sketch)) for sketch in sketches)

    later = [{"id": "later", "text": f"{text(article(999))} {BOILERPLATE}"}]
    done = index_ok(write_jsonl(tmp_path / "later.jsonl", later), tmp_path / "store", "--unit", "sentence")
    assert "stop-listed shingles: 1 (the store's)" in done.stdout
    assert not boilerplate & set(decode_sketch(stored(tmp_path / "store", ["later"])["later"]))

    index_ok(corpus_path, tmp_path / "unfiltered", "--stop-min-docs", "20", "--no-stoplist", "--unit", "sentence")
    assert boilerplate <= set(decode_sketch(stored(tmp_path / "unfiltered", ["doc-0"])["doc-0"]))


def test_a_conflicting_configuration_is_refused_in_one_line(tmp_path, neardup, index_ok):
    corpus_path = write_jsonl(tmp_path / "corpus.jsonl", corpus_records(3))
    index_ok(corpus_path, tmp_path / "store", "-k", "32", "--unit", "word:4", "--lang", "nl")
    index_ok(corpus_path, tmp_path / "store", "-k", "32", "--lang", "dutch")  # the same, spelled another way
    for option in (["-k", "64"], ["--unit", "sentence"], ["--lang", "en"], ["--min-word-len", "4"]):
        done = neardup("index", corpus_path, "--store", tmp_path / "store", *option)
        assert done.returncode == EXIT_FAILED, option
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith("neardup: error: ") and "store" in done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert (store.config.k, store.config.unit, store.config.lang) == (32, "word:4", "dutch")


@pytest.mark.parametrize("args, code, message", [
    (["index", "missing.jsonl", "--store", "s"], EXIT_FAILED, "cannot read corpus"),
    (["index", "c.jsonl", "--store", "c.jsonl"], EXIT_FAILED, "no data.mdb"),
    (["index", "c.jsonl", "--store", "s", "--unit", "paragraph"], EXIT_USAGE, "unknown shingle unit"),
    (["index", "c.jsonl", "--store", "s", "--lang", "tlh"], EXIT_USAGE, "unknown language"),
    (["index", "c.jsonl", "--store", "s", "-k", "0"], EXIT_USAGE, "k must be an integer in 1..4096"),
    (["index", "c.jsonl", "--store", "s", "--workers", "0"], EXIT_USAGE, "at least 1"),
    (["index", "c.jsonl", "--store", "s", "--stop-min-docs", "1"], EXIT_USAGE, "at least 2"),
    (["index", "c.jsonl", "--store", "s", "--stop-fraction", "1.5"], EXIT_USAGE, "in [0, 1]"),
])
def test_errors_are_one_line_with_their_exit_code(tmp_path, monkeypatch, neardup, args, code, message):
    """A wrong option is a usage error, found before anything is read; a corpus or store that cannot be used is a
    failure."""
    write_jsonl(tmp_path / "c.jsonl", corpus_records(1))
    monkeypatch.chdir(tmp_path)
    done = neardup(*args)
    assert done.returncode == code
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("neardup: error: ") and message in done.stderr
    assert not (tmp_path / "s").exists()


@pytest.mark.slow
def test_a_10_mb_document_is_indexed(tmp_path, index_ok):
    paragraphs, size, seed = [], 0, 0
    while size < 10 * 2**20:
        paragraphs.append(text(article(seed)))
        size += len(paragraphs[-1]) + 2
        seed += 1
    records = [{"id": "huge", "text": "\n\n".join(paragraphs)}, {"id": "small", "text": paragraphs[0]}]
    index_ok(write_jsonl(tmp_path / "corpus.jsonl", records), tmp_path / "store")
    sketches = stored(tmp_path / "store", ["huge", "small"])
    huge = decode_sketch(sketches["huge"])
    assert len(huge) == SketchConfig().k and huge == sorted(set(huge))
    assert sketches["small"] == expected_sketches(tmp_path / "store", records[1:])["small"]


# --- a corpus that takes a few seconds: interrupting and killing a real ingest ------------------------------------

BIG_ARGS = ("--unit", "word:5", "--stop-min-docs", "100")


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> tuple[Path, list[str], dict[str, bytes]]:
    """4000 documents with boilerplate in a quarter of them, and the store a clean, uninterrupted run makes."""
    root = tmp_path_factory.mktemp("big")
    records = corpus_records(4000, boilerplate_every=4, sentences=8)
    corpus_path = write_jsonl(root / "corpus.jsonl", records)
    assert main(["index", str(corpus_path), "--store", str(root / "clean"), *BIG_ARGS]) == 0
    ids = [r["id"] for r in records]
    return corpus_path, ids, stored(root / "clean", ids)


def start_index(corpus_path: Path, store_path: Path, *args: str) -> subprocess.Popen:
    return subprocess.Popen([*NEARDUP, "index", str(corpus_path), "--store", str(store_path), *BIG_ARGS, *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)


def kill_once_written(corpus_path: Path, store_path: Path, articles: int) -> None:
    """`neardup index` in batches of 2, killed with SIGKILL once `articles` are written (observe.written_count)."""
    process = start_index(corpus_path, store_path, "--batch-size", "2", "--workers", "2")
    deadline = time.monotonic() + 120
    while written_count(store_path) < articles:
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.002)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    process.stderr.close()


@pytest.mark.slow
def test_kill_9_mid_ingest_keeps_every_committed_batch_and_the_store_writable(tmp_path, big_corpus, index_ok):
    """Into an existing store (here an empty one made with the clean store's configuration and stop-list), each
    batch is a transaction of its own."""
    corpus_path, ids, clean = big_corpus
    crashed = tmp_path / "crashed"
    with open_store(corpus_path.parent / "clean", readonly=True) as model:
        create_store(crashed, model.config, model.stoplist).close()
    kill_once_written(corpus_path, crashed, 4)

    with open_store(crashed) as store:
        count = store.count()
        assert 4 <= count < len(ids), "the ingest finished before it was killed: nothing was tested"
        survived = {doc_id: sketch for doc_id, sketch in zip(ids, store.get_many(ids)) if sketch is not None}
    assert len(survived) == count and count % 2 == 0  # whole batches only
    assert survived == {doc_id: clean[doc_id] for doc_id in survived}

    index_ok(corpus_path, crashed, *BIG_ARGS[:2])  # resumes into the same store, with its stop-list
    assert stored(crashed, ids) == clean


@pytest.mark.slow
def test_kill_9_while_a_new_store_is_built_leaves_no_store_and_the_next_run_clears_what_it_left(tmp_path, big_corpus,
                                                                                                 index_ok):
    """A new store is built beside its place and renamed into it once whole: killed with batches written, there
    is no store (and no half of one to resume from); the next run removes the killed one's directory."""
    corpus_path, ids, clean = big_corpus
    target = tmp_path / "store"
    kill_once_written(corpus_path, target, 4)
    assert not target.exists() and len(building(target)) == 1, "the build finished before it was killed"

    index_ok(corpus_path, target, *BIG_ARGS)
    assert building(target) == []
    assert stored(target, ids) == clean


@pytest.mark.slow
def test_ctrl_c_exits_130_and_writes_nothing(tmp_path, big_corpus):
    """Ctrl-C mid-run: the corpus comes on stdin and only half of it before the signal, so the run cannot have
    finished first (a file of 4,000 documents is sketched in under a second, which a loaded machine's scheduler
    can outlast between the progress line and the signal)."""
    corpus_path, _, _ = big_corpus
    lines = corpus_path.read_text(encoding="utf-8").splitlines(keepends=True)
    process = subprocess.Popen([*NEARDUP, "index", "-", "--store", str(tmp_path / "store"), *BIG_ARGS,
                                "--workers", "2", "--progress"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    process.stdin.write("".join(lines[:len(lines) // 2]))
    process.stdin.flush()
    progress = ""
    while "lines/s" not in progress:  # sketching has started, with both workers (--progress: its bar is drawn)
        progress += process.stderr.read(1)
        assert process.poll() is None, progress
    os.killpg(process.pid, signal.SIGINT)  # a terminal sends Ctrl-C to the whole process group
    assert process.wait(timeout=30) == EXIT_INTERRUPTED == 130
    process.stdin.close()
    process.stderr.close()
    assert not (tmp_path / "store").exists()


def test_an_empty_corpus_creates_no_store_but_adds_nothing_to_an_existing_one(tmp_path, neardup, index_ok):
    """A new store learns its stop-list from its first corpus: from no records it would learn none, for good."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n")
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text("not json\n{\"id\": \"x\"}\n")
    for corpus_path, why in ((empty, "holds no records: "), (malformed, "holds no records (2 malformed lines")):
        done = neardup("index", corpus_path, "--store", tmp_path / "store")
        assert done.returncode == EXIT_FAILED, done.stderr
        assert done.stderr.splitlines()[-1].startswith("neardup: error: corpus ") and why in done.stderr
        assert not (tmp_path / "store").exists()
    index_ok(write_jsonl(tmp_path / "corpus.jsonl", corpus_records(3)), tmp_path / "store")
    assert "documents:            0" in index_ok(empty, tmp_path / "store").stdout
    assert stored_count(tmp_path / "store") == 3


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
def test_a_story_republished_150_times_is_kept_and_the_sites_footers_are_stop_listed(tmp_path, index_ok):
    """150 copies of one story (two words edited in each) and 300 other articles, all ending in one of three
    sites' footers: the footers are boilerplate, the story is not, and 100 copies group as one."""
    rng = random.Random(25)
    footers = [f"Read more from the {town} Courier: sign up for our newsletter and follow us online." for town in
               ("Ashford", "Bexley", "Carlow")]
    story = text(article(7, sentences=20)).split()
    records = []
    for number in range(150):
        words = list(story)
        for at in rng.sample(range(len(words)), 2):
            words[at] = f"edited{number}x{at}"
        records.append({"id": f"copy-{number}", "text": " ".join(words) + "\n\n" + rng.choice(footers)})
    records += [{"id": f"other-{number}", "text": text(article(1000 + number)) + "\n\n" + rng.choice(footers)}
                for number in range(300)]
    rng.shuffle(records)
    done = index_ok(write_jsonl(tmp_path / "corpus.jsonl", records), tmp_path / "store")
    assert "stop-listed shingles:" in done.stdout and "default threshold:" in done.stdout
    with open_store(tmp_path / "store", readonly=True) as store:
        sketcher = Sketcher(store.config, store.stoplist)
        assert all(sketcher.hashes(footer) <= store.stoplist for footer in footers)
        story_hashes = sketcher.hashes(" ".join(story))
        assert len(story_hashes & store.stoplist) < len(story_hashes) // 10
        engine = Deduplicator(ServedStore(store))
        outcome = engine.dedup_ids([f"copy-{n}" for n in range(100)], engine.served.defaults)
        grouping = kernel.unpack(outcome.packed_grouping)
    assert grouping.duplicate_of[0] == -1 and all(leader >= 0 for leader in grouping.duplicate_of[1:])
