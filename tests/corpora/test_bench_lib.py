"""The benchmarks' shared helpers (benchmarks/lib) do what their reports rest on: markdown tables line up, timing
summaries pick the right samples, h2load's byte count gives the gRPC errors, the quality scoring is the service's
greedy rule and counts pairs as labelled, and the launcher's helpers write what a test or a script needs."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks.lib import data, load, measure, paths, report
from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.fuzz import check_corpus_line, check_result_set_line, check_sketcher
from benchmarks.lib.harness_report import floor_of
from benchmarks.lib.quality_counts import THRESHOLDS, Counts, ResultSet, add_grouping, greedy_groups
from benchmarks import hash_luck
from benchmarks.lib.families import Corpus
from benchmarks.lib.quality_methods import (MINHASH_SEEDS, Method, exact_method, minhash_method, pairwise,
                                            simhash, word_ngrams)
from benchmarks.lib.quality_report import margins
from server_process import free_port, sketch_store, write_jsonl
from benchmarks.lib.soak import load_lines, server_line
from neardup.core import reference, vocabulary
from neardup.core.encoding import encode_sketch
from neardup.store import open_store


# --- report -------------------------------------------------------------------------------------------------------

def test_table_right_aligns_the_number_columns_after_the_first():
    lines = report.table(["size", "count", "note", "ms"], [["7", "1,200", "ok", "—"], ["8", "3.5 %", "—", "0.25"]])
    assert lines == ["| size | count | note | ms |", "|---|---:|---|---:|", "| 7 | 1,200 | ok | — |",
                     "| 8 | 3.5 % | — | 0.25 |"]


def test_latency_cells_and_a_missing_latency():
    latency = {"p50": 0.5, "p90": 1.234, "p99": 2.0, "p99.9": None}
    assert report.latency_cells(latency) == ["0.50", "1.23", "2.00", "—"]
    assert report.latency_cells(latency, ("p99",)) == ["2.00"]


def test_save_writes_the_results_and_the_report(tmp_path):
    report.save(tmp_path / "out", "run", {"a": [1, 2]}, "# run\n")
    assert json.loads((tmp_path / "out" / "run.json").read_text()) == {"a": [1, 2]}
    assert (tmp_path / "out" / "run.md").read_text() == "# run\n"


# --- measure ------------------------------------------------------------------------------------------------------

def test_summary_takes_the_median_and_the_99th_sample_of_all_calls():
    samples = [list(range(1, 101)), list(range(101, 201))]  # 200 calls: 1 .. 200 µs
    assert measure.summary_us(samples) == {"median_us": 100.5, "p99_us": 199, "calls": 200}


def test_time_calls_calls_every_input_once_per_round():
    seen = []
    samples = measure.time_calls(lambda x, y: seen.append((x, y)), [(1, 2), (3, 4)], rounds=3)
    assert seen == [(1, 2), (3, 4)] * 3
    assert [len(times) for times in samples] == [3, 3] and all(t >= 0 for times in samples for t in times)


def test_interleaved_functions_take_turns_round_by_round():
    order = []
    timed = measure.interleaved_us({"a": (lambda: order.append("a"), [(), ()]), "b": (lambda: order.append("b"), [()])},
                                   rounds=2)
    assert order == ["a", "a", "b", "a", "a", "b"]
    assert timed["a"]["calls"] == 4 and timed["b"]["calls"] == 2


def test_percentiles_are_observed_values_in_ms():
    figures = measure.percentiles_ms(np.arange(1, 101) * 1000.0)  # 1 .. 100 ms, in µs
    assert figures == {"p50": 51.0, "p90": 91.0, "p99": 100.0, "p99.9": 100.0, "mean": 50.5, "max": 100.0}
    assert measure.percentiles_ms(np.array([])) == dict.fromkeys(["p50", "p90", "p99", "p99.9", "mean", "max"])


def test_other_load_is_what_the_machine_spent_beyond_server_and_load_generator():
    meter = measure.CpuMeter(server_pid=0)
    meter.wall, meter.busy, meter.server_seconds, meter.load_seconds = 10.0, 9.0, 4.0, 2.0
    assert meter.other_load_cores() == pytest.approx(0.3)
    assert meter.other_load_cores(wall=3.0) == pytest.approx(1.0)
    meter.busy = 5.0  # less than server and load together (accounting noise): never negative
    assert meter.other_load_cores() == 0.0


# --- load (h2load) ------------------------------------------------------------------------------------------------

def test_a_grpc_frame_is_flag_length_message():
    assert load.grpc_frame(b"abc") == b"\0\0\0\0\x03abc"


def test_the_data_bytes_of_h2load_say_how_many_answers_were_ok():
    # 10 requests succeeded over HTTP, each OK answer a 20-byte message in a 5-byte frame: 8 answers' bytes
    assert load.check_answers(8 * 25, 10, 20) == 2
    assert load.check_answers(10 * 25, 10, 20) == 0


def test_h2load_offers_the_rate_over_all_connections_only_in_open_loop(tmp_path):
    endpoint = load.Endpoint("dedup", load.DEDUP_PATH, tmp_path / "dedup.grpc", 20)
    opened = load.h2load_command("127.0.0.1:5", endpoint, 3, connections=8, streams=16, rate=1000)
    closed = load.h2load_command("127.0.0.1:5", endpoint, 3, connections=8, streams=16)
    assert "--rps=125" in opened and not any(arg.startswith("--rps") for arg in closed)
    assert opened[-1] == closed[-1] == "http://127.0.0.1:5/neardup.v1.NearDup/Dedup"
    assert "--header=content-type: application/grpc" in closed and f"--data={endpoint.body}" in closed


# --- quality scoring ----------------------------------------------------------------------------------------------

def test_greedy_groups_follow_the_reference_rule_at_every_threshold():
    rng = np.random.default_rng(4)
    sketches = [sorted(set(rng.integers(0, 300, 40).tolist())) for _ in range(12)]
    sketches += [s[:30] + [1000 + i] for i, s in enumerate(sketches[:6])]  # near-duplicates of the first six
    matrix = pairwise(sketches, lambda a, b: reference.similarity(a, b, 64, vocabulary.CONTAINMENT))
    thresholds = np.unique(matrix[matrix > 0])[::7]  # similarities that occur: a pair right at the threshold groups
    groups = greedy_groups(matrix, thresholds)
    for row, threshold in zip(groups, thresholds):
        assert row.tolist() == reference.dedup(sketches, 64, float(threshold), vocabulary.CONTAINMENT).group


def doc(doc_id: str, group: str, **labels) -> Doc:
    return Doc(doc_id, "text", "en", group, labels.pop("family", "original"), **labels)


def test_result_set_labels_duplicates_hard_negatives_and_left_out_templates():
    docs = [doc("a", "g1"), doc("b", "g1", family="edit"), doc("c", "g2", site="news"), doc("d", "g3", site="news"),
            doc("e", "g4", template="t0", family="template"), doc("f", "g5", template="t0", family="template"),
            doc("g", "g6", quotes="g2", family="quoting")]
    labelled = ResultSet.label(docs, list(range(len(docs))))
    pairs = list(zip(*np.triu_indices(len(docs), 1)))
    assert [pairs[i] for i in np.flatnonzero(labelled.duplicate)] == [(0, 1)]
    assert [pairs[i] for i in np.flatnonzero(labelled.negative["site"])] == [(2, 3)]
    assert [pairs[i] for i in np.flatnonzero(labelled.negative["quote"])] == [(2, 6)]
    assert [pairs[i] for i in np.flatnonzero(~labelled.scored)] == [(4, 5)]  # template pairs: out of F1


def test_pair_counts_give_precision_recall_and_f1_per_threshold():
    docs = [doc("a", "g1"), doc("b", "g1"), doc("c", "g2"), doc("d", "g3")]
    labelled = ResultSet.label(docs, [0, 1, 2, 3])
    counts = Counts.empty(2)
    # threshold 0: b joins a (right) and c joins a too (wrong); threshold 1: nothing grouped
    add_grouping(counts, labelled, np.array([[0, 0, 0, 3], [0, 1, 2, 3]]))
    assert counts.tp.tolist() == [1, 0] and counts.fp.tolist() == [2, 0] and counts.fn.tolist() == [0, 1]
    assert counts.precision().tolist() == [pytest.approx(1 / 3), 1.0]
    assert counts.recall().tolist() == [1.0, 0.0]
    assert counts.f1().tolist() == [pytest.approx(0.5), 0.0]


def test_the_baselines_shingles_and_scores():
    assert word_ngrams("One, two three-four five six!", n=5) == ["one two three four five", "two three four five six"]
    docs = [Doc("a", "w1 w2 w3 w4 w5 w6 w7 w8", "en", "g", "original"),
            Doc("b", "w1 w2 w3 w4 w5 w6", "en", "g", "edit")]
    # a has 4 word 5-grams, b 2, both of b's in a: containment 1, Jaccard 2/4
    assert exact_method(docs, vocabulary.CONTAINMENT).pair_matrix([0, 1])[0, 1] == 1.0
    assert exact_method(docs, vocabulary.JACCARD).pair_matrix([0, 1])[0, 1] == 0.5
    assert simhash("The same text.") == simhash("the same, text") != simhash("another text entirely")


def test_the_minhash_peer_is_every_hash_seeds_estimate_and_scores_their_expected_f1():
    import datasketch  # the test extra's

    words = [f"w{i}" for i in range(60)]
    docs = [Doc("a", " ".join(words), "en", "g1", "original"),
            Doc("b", " ".join(words[:40] + [f"x{i}" for i in range(20)]), "en", "g1", "edit"),
            Doc("c", " ".join(words[20:] + [f"y{i}" for i in range(20)]), "en", "g2", "original")]
    stack = minhash_method(docs).pair_matrix([0, 1, 2])
    assert stack.shape == (len(MINHASH_SEEDS), 3, 3)
    for layer, seed in zip(stack, MINHASH_SEEDS):
        signatures = []
        for document in docs:
            minhash = datasketch.MinHash(num_perm=128, seed=seed)
            minhash.update_batch([s.encode() for s in word_ngrams(document.text)])
            signatures.append(minhash)
        assert layer[0, 1] == signatures[0].jaccard(signatures[1])
        assert layer[1, 2] == signatures[1].jaccard(signatures[2])
    assert len({round(float(layer[0, 2]), 6) for layer in stack}) > 1  # the seeds estimate differently
    # a stack of groupings adds each draw's pairs: one draw groups b with a (right), the other c with a (wrong)
    labelled = ResultSet.label(docs, [0, 1, 2])
    stacked = Counts.empty(1)
    add_grouping(stacked, labelled, np.array([[[0, 0, 2]], [[0, 1, 0]]]))
    assert stacked.tp.tolist() == [1] and stacked.fp.tolist() == [1] and stacked.fn.tolist() == [1]
    similarity = np.array([[[0, 0.9, 0.1], [0.9, 0, 0.2], [0.1, 0.2, 0]],
                           [[0, 0.1, 0.9], [0.1, 0, 0.2], [0.9, 0.2, 0]]])
    assert greedy_groups(similarity, np.array([0.5])).tolist() == [[[0, 0, 2]], [[0, 1, 0]]]


def test_hash_luck_remixes_each_value_to_one_other_and_keeps_the_shingles_apart():
    values = list(range(0, 1 << 32, 99_991))
    for salt in (1, 2):
        remixed = [hash_luck.remix(value, salt) for value in values]
        assert len(set(remixed)) == len(values) and all(0 <= value < 1 << 32 for value in remixed)
        assert remixed != values and sorted(remixed) != sorted(values)
    assert [hash_luck.remix(value, 1) for value in values[:50]] != [hash_luck.remix(value, 2) for value in values[:50]]


def test_hash_luck_scores_each_seed_and_each_hash_on_a_corpus():
    story = " ".join(f"word{i} about the harbour" for i in range(80))
    other = " ".join(f"term{i} about the mountain" for i in range(80))
    docs = [Doc("a", story, "en", "g1", "original"), Doc("b", story + " reprinted today", "en", "g1", "edit"),
            Doc("c", other, "en", "g2", "original")]
    result = hash_luck.measure(Corpus("x", "test", docs, {"overall": [[0, 1, 2]]}), seeds=3)
    assert len(result["minhash"]["seeds"]) == 3 and result["minhash"]["expected"] == 1.0
    assert all(f1 == 1.0 for f1 in result["minhash"]["seeds"])  # the copy grouped, the other text apart
    assert len(result["neardup"]) == 2 * len(vocabulary.BOTTOMK_METRICS)
    for figures in result["neardup"].values():
        assert figures["crc32"] == 1.0 and figures["remixed"] == [1.0] * len(hash_luck.SALTS)


def test_margins_are_neardup_at_its_default_minus_the_best_baseline():
    default = {"default": {"f1": 0.9, "scopes": {"s": 0.8}}}
    baselines = [{"best": {"f1": 0.85, "scopes": {"s": 0.7}}, "scope_best": {"s": {"f1": 0.82}}},
                 {"best": {"f1": 0.7, "scopes": {"s": 0.75}}, "scope_best": {"s": {"f1": 0.79}}}]
    assert margins(default, baselines) == {"s": pytest.approx(-0.02), "overall": pytest.approx(0.05)}
    assert margins(default, baselines, oracle=False)["s"] == pytest.approx(0.05)
    assert Method("x", lambda indexes: None).default_threshold is None
    assert 0.52 in THRESHOLDS.tolist() and 0.01 in THRESHOLDS.tolist()


# --- reports of the harness and the soak runs -------------------------------------------------------------------

def test_an_open_loop_runs_floor_is_the_health_run_at_its_rate_and_workers():
    runs = [{"endpoint": "health", "workers": 1, "offered_rps": 500},
            {"endpoint": "health", "workers": 2, "offered_rps": 1000},
            {"endpoint": "dedup", "workers": 2, "offered_rps": 1000}]
    assert floor_of(runs[2], runs) is runs[1]
    assert floor_of({"endpoint": "dedup", "workers": 1, "offered_rps": 1000}, runs) is None


def test_soak_summary_lines():
    report_ = {"command": "python -m benchmarks.soak", "workers": 2, "threads": 4, "cache": False, "offered_rps": 100,
               "seconds": 20.0, "warmup": 4.0, "load": {"gave_up": "h2load failed"},
               "server": {"exit_code": 0, "internal_errors_logged": 0}, "passed": False}
    assert load_lines(report_) == ["`python -m benchmarks.soak`: 2 workers x 4 threads, cache off, 100 rps offered "
                                   "for 20 s (4 s warm-up)", "h2load: h2load failed"]
    assert server_line(report_) == "server exit 0, 0 internal errors logged: FAILED"


# --- files, the launcher's helpers, the fuzz checks ----------------------------------------------------------------

def test_paths_and_data_files():
    assert paths.BENCHMARKS.name == "benchmarks" and paths.ROOT == paths.BENCHMARKS.parent
    assert paths.OUT == paths.BENCHMARKS / "out" and (paths.DATA / "synonyms.txt").is_file()
    assert data.load_json("jobads/schema.json") is data.load_json("jobads/schema.json")  # read once


def test_launcher_helpers_write_records_and_stores(tmp_path):
    path = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "é"}, {"id": "b"}])
    assert path.read_text(encoding="utf-8") == '{"id": "a", "text": "é"}\n{"id": "b"}\n'
    with open_store(sketch_store(tmp_path / "store", {"x": encode_sketch([1, 5])}), readonly=True) as store:
        assert store.get_many(["x", "y"]) == [encode_sketch([1, 5]), None]
    port = free_port()
    assert 0 < port < 65536


def test_fuzz_checks_name_what_happened():
    assert check_corpus_line(b'{"id": "a", "text": "Some text."}') == "record"
    assert check_corpus_line(b'{"id": 3}') == "reported"
    assert check_result_set_line(b'{"id": "a", "text": "t"}') == "document"
    assert check_result_set_line(b"not json") == "one-line error"
    assert check_sketcher("word:1", "Some words to sketch here.", "en") == "sketched"
    assert check_sketcher("word:1", "Some words.", "tlh") == "unknown language"


# --- a user's answers, simulated ---------------------------------------------------------------------------------

def test_simulated_answers_come_from_the_truth_and_train_the_store_at_each_checkpoint(tmp_path):
    """label's proposals answered from the truth (template pages: not duplicates) on a store whose threshold groups
    the pages (set by hand: this corpus learns one above them), train at 20 and 40 answers: the answers file holds
    them all, each as the truth says, and the store then serves a trained threshold above every template sibling's
    similarity."""
    from benchmarks.lib.answers import answer_and_train
    from neardup.core import kernel
    from neardup.jobs.index import IndexOptions, index_corpus
    from textgen import look_alike_corpus

    records, story_of = look_alike_corpus()
    index_corpus(str(write_jsonl(tmp_path / "texts.jsonl", records)), str(tmp_path / "store"),
                 IndexOptions(threshold=0.4125))
    seen = []
    reports = answer_and_train(tmp_path / "store", story_of, tmp_path / "answers.jsonl", (20, 40),
                               lambda count, trained, store: seen.append((count, store)))
    assert seen == [(20, tmp_path / "store"), (40, tmp_path / "store")] and [r["answers"] for r in reports] == [20, 40]
    assert not any(r["reindexed"] for r in reports)  # no corpus given: never advised
    answered = [json.loads(line) for line in (tmp_path / "answers.jsonl").read_text().splitlines()]
    assert len(answered) == 40
    assert all(a["duplicate"] == (story_of[a["a"]] == story_of[a["b"]]) for a in answered)
    assert not reports[-1]["refused"], reports[-1]
    pages = [r["id"] for r in records if r["id"].startswith("template-0-")]
    with open_store(tmp_path / "store", readonly=True) as store:
        setting = store.threshold()
        sketches = store.get_many(pages)
        siblings = max(kernel.similarity(a, b, store.config.k, setting["metric"])
                       for i, a in enumerate(sketches) for b in sketches[i + 1:])
    assert setting["source"] == "trained" and setting["threshold"] > siblings


def test_the_simulated_user_follows_every_advice_to_reindex_not_only_the_first(tmp_path, monkeypatch):
    """Where train advises one stop-list at a checkpoint and the other at a later one (scripted here: train's own
    report, with the advice set), the user re-indexes each time, trains the new store and labels on there."""
    from benchmarks.lib import answers
    from neardup.jobs.index import IndexOptions, index_corpus
    from neardup.core.sketch_config import SketchConfig
    from neardup.jobs.train import reindex_options
    from textgen import look_alike_corpus

    records, story_of = look_alike_corpus()
    corpus = write_jsonl(tmp_path / "texts.jsonl", records)
    index_corpus(str(corpus), str(tmp_path / "store"), IndexOptions(threshold=0.4125))
    advice = iter(["none", "copies counted", ""])
    trained_with_corpus = []

    def train(pairs: str, store: str, corpus: str | None = None) -> dict:
        report = answers_train(pairs, store, corpus=corpus)
        if corpus:
            trained_with_corpus.append(store)
            report["advised"] = next(advice)
            report["advised_options"] = reindex_options(SketchConfig(), report["advised"]) if report["advised"] else {}
        return report

    def reindex(stoplist: str, options: dict) -> Path:
        path = tmp_path / stoplist.replace(" ", "-")
        # at a threshold that groups the template pages, as the first store's: training must move it
        index_corpus(str(corpus), str(path), IndexOptions(**options, threshold=0.4125))
        return path

    answers_train = answers.train
    monkeypatch.setattr(answers, "train", train)
    served = []
    reports = answers.answer_and_train(tmp_path / "store", story_of, tmp_path / "answers.jsonl", (20, 30, 40),
                                       lambda count, trained, store: served.append(store), corpus, reindex)
    assert [r["reindexed"] for r in reports] == ["none", "copies counted", "copies counted"]
    assert served == [tmp_path / "none", tmp_path / "copies-counted", tmp_path / "copies-counted"]
    assert trained_with_corpus == [str(tmp_path / "store"), str(tmp_path / "none"), str(tmp_path / "copies-counted")]
    with open_store(tmp_path / "copies-counted", readonly=True) as store:
        assert store.threshold()["source"] == "trained"  # trained on the answers after its re-index
