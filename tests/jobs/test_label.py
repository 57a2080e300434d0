"""`neardup label` (jobs/label.py): which candidate pairs it proposes, the console session end to end (answers,
unsure, undo, quit, resume), and labels chosen by it making `neardup train` better than the rules alone."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from neardup.core.item_scoring import pair_features
from neardup.jobs.label import COVER, LabelSession, label_with
from neardup.store import open_store
from benchmarks.lib.server_process import write_jsonl
from textgen import RECORD_SCHEMA, records_with_typos

RECORDS, TRUE_PAIRS = records_with_typos()


@pytest.fixture(scope="module")
def records_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("label")
    (root / "schema.json").write_text(json.dumps(RECORD_SCHEMA))
    corpus = write_jsonl(root / "records.jsonl", RECORDS)
    done = subprocess.run([sys.executable, "-m", "neardup.cli", "index", str(corpus), "--store", str(root / "store"),
                           "--fields", str(root / "schema.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root


def label(root, answers: str, *args: str):
    return subprocess.run([sys.executable, "-m", "neardup.cli", "label", str(root / "answers.jsonl"), "--store",
                           str(root / "store"), "--corpus", str(root / "records.jsonl"), *args],
                          input=answers, capture_output=True, text=True)


def stored_answers(root) -> list[dict]:
    return [json.loads(line) for line in (root / "answers.jsonl").read_text().splitlines()]


def test_proposals_are_candidates_the_store_is_least_sure_of_and_cover_every_bin(records_store, tmp_path):
    with open_store(records_store / "store", readonly=True) as store:
        session = LabelSession(store, tmp_path / "answers.jsonl")
        threshold = store.threshold()["threshold"]
        fields = store.config.fields
        first = session.next()
        distance = np.abs(session.pool.rule_scores - threshold)
        assert first.reason == "uncertain" and abs(first.score - threshold) == distance.min()
        reasons = []
        for _ in range(2 * COVER):
            proposal = session.next()
            reasons.append(proposal.reason)
            assert len(pair_features(fields, store.get_many([proposal.a, proposal.b])).i) == 1  # a candidate
            session.answer(proposal.a, proposal.b, frozenset((proposal.a, proposal.b)) in TRUE_PAIRS)
        assert reasons == (["uncertain"] * (COVER - 1) + ["coverage"]) * 2
        asked = [(a, b) for a, b, _ in session.answers]
        assert len(set(asked)) == len(asked)


def test_the_console_session_records_answers_undo_and_resumes(records_store):
    done = label(records_store, "y\nn\nu\nb\nwhat\ny\nq\n")
    assert done.returncode == 0, done.stderr
    answers = stored_answers(records_store)
    assert [answer["duplicate"] for answer in answers] == [True, False, True]
    assert "undone: " in done.stdout and "3 answers saved in" in done.stderr
    first = RECORDS[[record["id"] for record in RECORDS].index(answers[0]["a"])]
    assert first["fields"]["name"] in done.stdout  # shown field by field from --corpus
    again = label(records_store, "u\nq\n")
    assert again.returncode == 0, again.stderr
    answers = stored_answers(records_store)
    assert len(answers) == 4 and answers[-1]["duplicate"] is None
    asked = [(answer["a"], answer["b"]) for answer in answers]
    assert len(set(asked)) == 4  # a resumed session never asks an answered pair again
    full = label(records_store, "n\n" * 10, "--count", "6")  # stops at --count answers, end of input is quit
    assert full.returncode == 0 and len(stored_answers(records_store)) == 6


def test_label_refuses_a_store_of_texts(tmp_path, neardup, indexed_store):
    store = indexed_store("label-texts", {"x": "one text", "y": "another text"})
    done = neardup("label", tmp_path / "answers.jsonl", "--store", store)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "items store" in done.stderr


def pairs_f1(neardup, store) -> float:
    done = neardup("pairs", "--store", store)
    assert done.returncode == 0, done.stderr
    found = {frozenset((p["a"], p["b"])) for p in map(json.loads, done.stdout.splitlines())}
    return 2 * len(found & TRUE_PAIRS) / (len(found) + len(TRUE_PAIRS))


@pytest.mark.slow
def test_labels_it_chooses_train_a_model_better_than_the_rules(records_store, tmp_path, neardup):
    """40 answers from the truth, chosen by the session: the model `neardup train` stores from them beats the
    rules alone on the store's pairs (the random labels of test_train.py could not)."""
    store = tmp_path / "store"
    subprocess.run(["cp", "-r", str(records_store / "store"), str(store)], check=True)
    rules = pairs_f1(neardup, store)
    with open_store(store, readonly=True) as opened:
        answers = label_with(opened, tmp_path / "answers.jsonl",
                             lambda a, b: frozenset((a, b)) in TRUE_PAIRS, budget=40)
    assert len(answers) == 40 and {duplicate for *_, duplicate in answers} == {True, False}
    done = neardup("train", tmp_path / "answers.jsonl", "--store", store, "--folds", "3")
    assert done.returncode == 0 and "stored in" in done.stdout, done.stderr
    assert pairs_f1(neardup, store) > rules
