"""`neardup label` (jobs/label.py): which candidate pairs it proposes, the console session end to end (answers,
unsure, undo, quit, resume), and labels chosen by it making `neardup train` better than the rules alone; on a store
of texts made by `neardup index` (stories, their copies, digests sharing a few sentences, pages of templates):
proposals near the threshold, spread over the bands of similarity, one pair per template family, and the texts
side by side with their shared passages marked."""
from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pytest

from neardup.core import kernel
from neardup.core.item_scoring import pair_features
from neardup.core.sketch_config import stoplist_digest
from neardup.core.sketcher import Sketcher
from neardup.core.vocabulary import KIND_METRICS
from neardup.jobs.index import frequent_shingles
from neardup.jobs.label import COVER, LOPSIDED, LabelSession, label_with
from neardup.jobs.train import BINS, setting_similarities
from neardup.store import open_store
from server_process import write_jsonl
from textgen import RECORD_SCHEMA, licence_versions, look_alike_corpus, records_with_typos

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
    # an items store has no stop-list to weigh: train is not given the corpus
    assert done.stderr.rstrip().endswith(f"next: neardup train {records_store / 'answers.jsonl'} --store "
                                         f"{records_store / 'store'}")
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
    # a pair answered again (files joined) counts once, as train counts it: in the counts and for --count
    first = stored_answers(records_store)[0]
    with open(records_store / "answers.jsonl", "a") as stream:
        stream.write(json.dumps({"a": first["b"], "b": first["a"], "duplicate": not first["duplicate"]}) + "\n")
    joined = label(records_store, "q\n")
    assert "; 6 answers in " in joined.stderr and "6 answers saved in" in joined.stderr, joined.stderr
    one_more = label(records_store, "n\n" * 3, "--count", "7")
    assert one_more.returncode == 0 and len(stored_answers(records_store)) == 8, one_more.stderr


def test_label_refuses_a_simhash_store(tmp_path, neardup, indexed_store):
    store = indexed_store("label-simhash", {"x": "one text", "y": "another text"}, "--sketch", "simhash")
    done = neardup("label", tmp_path / "answers.jsonl", "--store", store)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "simhash" in done.stderr


def test_label_on_a_store_without_candidate_pairs_says_so_in_one_line_and_writes_nothing(tmp_path, neardup,
                                                                                         indexed_store):
    store = indexed_store("label-no-pairs", {"x": "one text about gardens", "y": "another about ships at sea"})
    answers = tmp_path / "answers.jsonl"
    done = neardup("label", answers, "--store", store)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "has no candidate pairs to label: no two of its articles share a sketch value" in done.stderr
    assert not answers.exists()


def test_answers_naming_articles_the_store_does_not_hold_are_refused_by_label_and_train_alike(tmp_path, neardup,
                                                                                             indexed_store):
    """An answers file of another store (or of articles not indexed yet): `neardup label` says so in one line
    before sampling, as `neardup train` would after the session, and leaves the file as it was."""
    store = indexed_store("label-other-answers", {"x": "one text about gardens", "y": "one text about gardens too"})
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"a": "x", "b": "y", "duplicate": true}\n{"a": "x", "b": "elsewhere", "duplicate": false}\n'
                       '{"a": "gone", "b": "y", "duplicate": null}\n')
    before = answers.read_bytes()
    said = {}
    for command in ("label", "train"):
        done = neardup(command, answers, "--store", store)
        assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
        said[command] = done.stderr
    assert said["label"] == said["train"], said
    assert f"1 ids of {answers} are not stored in {store} (first: 'elsewhere'): answers given on another store" \
        in said["label"]
    assert answers.read_bytes() == before


TEXTS, STORY_OF = look_alike_corpus()
TEXT_OF = {record["id"]: record["text"] for record in TEXTS}


def same_story(a: str, b: str) -> bool:
    """The user's answer: copies of one story are duplicates; a template's pages and digests are not."""
    return STORY_OF[a] == STORY_OF[b]


def family(doc_id: str) -> str | None:
    return doc_id.rsplit("-", 1)[0] if doc_id.startswith("template-") else None


#: A threshold below the template pages' similarities (the one this corpus learned before the rule that lifts the
#: cut above look-alikes): the proposals' rules are about a store whose threshold the answers must move.
GROUPING_THRESHOLD = "0.4125"


@pytest.fixture(scope="module")
def texts_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("label-texts")
    corpus = write_jsonl(root / "texts.jsonl", TEXTS)
    done = subprocess.run([sys.executable, "-m", "neardup.cli", "index", str(corpus), "--store", str(root / "store"),
                           "--threshold", GROUPING_THRESHOLD], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root


def test_text_proposals_are_near_the_threshold_spread_and_one_per_template_family(texts_store, tmp_path):
    with open_store(texts_store / "store", readonly=True) as store:
        session = LabelSession(store, tmp_path / "answers.jsonl")
        threshold = session.threshold
        assert threshold == store.threshold()["threshold"] == float(GROUPING_THRESHOLD)  # the store's own
        first = session.next()
        assert first.reason == "uncertain" and first.similarities == {}
        assert abs(first.score - threshold) == np.abs(session.pool.rule_scores - threshold).min()
        proposals = []
        for _ in range(30):
            proposal = session.next()
            proposals.append(proposal)
            session.answer(proposal.a, proposal.b, same_story(proposal.a, proposal.b))
    families = [family(p.a) if family(p.a) == family(p.b) else None for p in proposals]
    assert all(a is None or a != b for a, b in zip(families, families[1:]))  # never two of one family in a row
    proposed = [name for name in families if name is not None]
    assert sorted(proposed) == ["template-0", "template-1", "template-2"]  # each family once, while others remain
    bands = {min(int(p.score * BINS), BINS - 1) for p in proposals}
    assert len(bands) >= 6, bands  # spread over the similarities
    nearest = sorted(abs(p.score - threshold) for p in proposals)
    assert nearest[:5] == sorted(np.abs(session.pool.rule_scores - threshold))[:5]  # the pairs nearest it first
    assert {p.reason for p in proposals} == {"uncertain", "coverage"}
    assert {same_story(p.a, p.b) for p in proposals} == {True, False}


def test_a_look_alike_is_proposed_where_the_boundary_calls_it_otherwise_than_its_family_was_answered(texts_store,
                                                                                                     tmp_path):
    """One pair of a template answered "not a duplicate" makes the template's other pairs look-alikes, passed over;
    once the answers hold CALLED_EACH of each (`called`: the boundary's call per pair), only those the boundary
    calls as their family was answered are."""
    with open_store(texts_store / "store", readonly=True) as store:
        session = LabelSession(store, tmp_path / "answers.jsonl")
        pooled = list(zip(session.pool.a, session.pool.b))
        template = [i for i, (a, b) in enumerate(pooled) if family(a) == family(b) == "template-0"]
        assert len(template) >= 3
        session.answer(*pooled[template[0]], False)
        open_ = ~session._answered()
        others = np.array([i in template[1:] for i in range(len(pooled))])
        assert session._repeats(open_, None)[others].all()  # passed over, whatever the boundary says
        called_duplicates = np.ones(len(pooled), bool)
        assert not session._repeats(open_, called_duplicates)[others].any()  # proposed where the boundary disagrees
        assert session._repeats(open_, ~called_duplicates)[others].all()  # passed over where it agrees
        # a user who calls a template's pages duplicates: the template's pairs the boundary calls others come up
        called_template = [i for i, (a, b) in enumerate(pooled) if family(a) == family(b) == "template-1"]
        session.answer(*pooled[called_template[0]], True)
        open_ = ~session._answered()
        assert session._repeats(open_, called_duplicates)[called_template[1:]].all()
        assert not session._repeats(open_, ~called_duplicates)[called_template[1:]].any()


def test_a_pair_answered_twice_teaches_the_session_its_last_answer(texts_store, tmp_path):
    """Answer files joined: each pair answered wrongly first, then (in the other order) as the user means it. The
    session proposes what it proposes given the last answers alone, and counts each pair once."""
    with open_store(texts_store / "store", readonly=True) as store:
        answered = label_with(store, tmp_path / "last.jsonl", same_story, budget=24)
        flipped = [{"a": b, "b": a, "duplicate": not duplicate} for a, b, duplicate in answered]
        write_jsonl(tmp_path / "joined.jsonl", [*flipped, *({"a": a, "b": b, "duplicate": duplicate}
                                                            for a, b, duplicate in answered)])
        last, joined = (LabelSession(store, tmp_path / name) for name in ("last.jsonl", "joined.jsonl"))
        assert joined.counts() == last.counts() and last.counts()["answered"] == 24
        for _ in range(COVER):  # uncertain proposals, and a coverage one
            proposal = last.next()
            assert joined.next() == proposal
            for session in (last, joined):
                session.answer(proposal.a, proposal.b, same_story(proposal.a, proposal.b))


def test_lopsided_answers_send_the_proposals_where_the_other_kind_should_be(texts_store, tmp_path):
    """A store whose threshold is far above where this user's duplicates end: every answer near it is "duplicate".
    After LOPSIDED such answers (and no "not a duplicate"), the next pair is the one nearest the middle between 0
    and the lowest answered duplicate; before, the one nearest the threshold."""
    with open_store(texts_store / "store", readonly=True) as store:
        session = LabelSession(store, tmp_path / "answers.jsonl")
        order = np.argsort(-session.pool.rule_scores)  # the most similar pairs, as if all near the threshold
        for i in order[:LOPSIDED - 1].tolist():
            session.answer(session.pool.a[i], session.pool.b[i], True)
        before = session.next()
        distances = [abs(score - session.threshold) for a, b, score in zip(session.pool.a, session.pool.b,
                                                                           session.pool.rule_scores)]
        assert abs(before.score - session.threshold) <= sorted(distances)[LOPSIDED]
        session.answer(session.pool.a[order[LOPSIDED - 1]], session.pool.b[order[LOPSIDED - 1]], True)
        lowest = float(session.pool.rule_scores[order[LOPSIDED - 1]])
        after = session.next()
    assert after.score < lowest and abs(after.score - lowest / 2) < abs(before.score - lowest / 2)
    assert abs(after.score - lowest / 2) <= 0.05


def test_an_items_stores_proposals_stay_near_its_threshold_after_lopsided_answers(records_store, tmp_path):
    """The rules for lopsided answers and look-alikes were measured on texts: on an items store, LOPSIDED answers
    "duplicate" and none "not" leave the next proposal the open pair nearest the store's threshold."""
    with open_store(records_store / "store", readonly=True) as store:
        session = LabelSession(store, tmp_path / "answers.jsonl")
        order = np.argsort(-session.pool.rule_scores)
        for i in order[:LOPSIDED].tolist():
            session.answer(session.pool.a[i], session.pool.b[i], True)
        proposed = session.next()
        answered = set(order[:LOPSIDED].tolist())
        nearest = min(abs(float(score) - session.threshold) for i, score in enumerate(session.pool.rule_scores)
                      if i not in answered)
    assert abs(proposed.score - session.threshold) == pytest.approx(nearest)
    lowest = float(session.pool.rule_scores[order[LOPSIDED - 1]])
    assert abs(proposed.score - session.threshold) < abs(proposed.score - lowest / 2)


def label_texts(root, answers: str, *args: str):
    return subprocess.run([sys.executable, "-m", "neardup.cli", "label", str(root / "answers.jsonl"), "--store",
                           str(root / "store"), *args], input=answers, capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "120"})


def test_the_console_shows_text_pairs_side_by_side_with_shared_passages_and_resumes(texts_store):
    done = label_texts(texts_store, "n\nb\ny\nu\nq\n", "--corpus", str(texts_store / "texts.jsonl"))
    assert done.returncode == 0, done.stderr
    # off a terminal, one line says what the session's start took to read the corpus
    assert done.stderr.startswith(f"neardup label: sketching {len(TEXTS)} lines ({len(TEXTS)} sketched) in ")
    # quitting says what to run next: train given the corpus, as the session read it
    assert done.stderr.rstrip().endswith(
        f"2 answers saved in {texts_store / 'answers.jsonl'}; next: neardup train {texts_store / 'answers.jsonl'} "
        f"--store {texts_store / 'store'} --corpus {texts_store / 'texts.jsonl'}")
    answers = stored_answers(texts_store)
    assert [answer["duplicate"] for answer in answers] == [True, None] and "undone: " in done.stdout
    first = done.stdout.split("duplicate? ")[0]
    a, b = answers[0]["a"], answers[0]["b"]
    assert first.splitlines()[1].split() == [a, "|", b] and "containment" in first.splitlines()[0]
    assert first.count("«") >= 1 and first.count("«") == first.count("»")
    shown = " ".join(line.split(" | ")[0] for line in first.splitlines()[3:] if " | " in line)
    assert " ".join(shown.replace("«", "").replace("»", "").split()) == " ".join(TEXT_OF[a].split())[:len(
        " ".join(shown.replace("«", "").replace("»", "").split()))]
    again = label_texts(texts_store, "n\nq\n")  # resumes; without --corpus: ids only
    assert again.returncode == 0 and "give --corpus" in again.stdout
    assert again.stderr.rstrip().endswith(f"--store {texts_store / 'store'}") and "sketching" not in again.stderr
    answers = stored_answers(texts_store)
    assert len(answers) == 3 and len({(x["a"], x["b"]) for x in answers}) == 3


def test_a_corpus_without_the_pair_s_texts_is_named_with_the_ids_it_lacks(texts_store, tmp_path):
    elsewhere = write_jsonl(tmp_path / "elsewhere.jsonl", [{"id": "elsewhere", "text": "A text of another corpus."}])
    done = label_texts(texts_store, "q\n", "--corpus", str(elsewhere))
    assert done.returncode == 0, done.stderr
    ids = done.stdout.splitlines()[1].split(" | ")
    assert f"(texts not shown: --corpus {elsewhere} holds no text of {ids[0].strip()} nor of {ids[1].strip()})" \
        in done.stdout


def test_the_next_command_is_one_a_shell_runs_whatever_the_paths(texts_store, tmp_path):
    answers, corpus = tmp_path / "my answers.jsonl", texts_store / "texts.jsonl"
    with open_store(texts_store / "store", readonly=True) as store:
        command = LabelSession(store, answers, corpus=str(corpus)).next_command
    assert shlex.split(command) == ["neardup", "train", str(answers), "--store", str(texts_store / "store"),
                                    "--corpus", str(corpus)]


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


def test_given_the_corpus_the_session_reads_every_stop_list_s_similarity_and_tells_versions_from_copies(tmp_path):
    """Versions of one licence and their copies: the store keeps the licence's text (versions look like copies of
    one text), so its similarity ranks versions with copies. Given the corpus, the session's scorer also reads each
    pair under the stop-list that counts copies each (train's chance model: jobs/train.setting_similarities), which
    drops the licence's text: after three answers of each kind, every open copy pair is likelier a duplicate than
    every open pair of versions, where the store's similarity alone leaves each a coin toss (issue 38: answers
    where the stop-lists disagree)."""
    corpus = write_jsonl(tmp_path / "versions.jsonl", licence_versions(16))
    done = subprocess.run([sys.executable, "-m", "neardup.cli", "index", str(corpus), "--store",
                           str(tmp_path / "store")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert not store.stoplist
        pooled = list(zip(*(pool := LabelSession(store, tmp_path / "none.jsonl").pool)[:2]))
        copy_pairs = [pair for pair in pooled if pair[0].split("-")[0] == pair[1].split("-")[0]]
        version_pairs = [pair for pair in pooled if "-" not in pair[0] + pair[1]]
        answers = ([{"a": a, "b": b, "duplicate": True} for a, b in copy_pairs[:3]]
                   + [{"a": a, "b": b, "duplicate": False} for a, b in version_pairs[:3]])
        stoplist = frequent_shingles(str(corpus), store.config)  # every shingle of ten texts: the licence's
        counted = Sketcher(dataclasses.replace(store.config, stoplist_digest=stoplist_digest(stoplist)), stoplist)
        metric = KIND_METRICS[store.config.kind][0]
        chances = {}
        for given in (None, str(corpus)):
            path = write_jsonl(tmp_path / f"answers-{given is None}.jsonl", answers)
            session = LabelSession(store, path, corpus=given)
            chances[given] = session._chance()
        similarities = setting_similarities(store, str(corpus), pool)
        own = store.get_many([*pool.a, *pool.b])
    texts = {record["id"]: record["text"] for record in licence_versions(16)}
    k, n = store.config.k, len(pool.a)
    for i, (a, b) in enumerate(zip(pool.a, pool.b)):  # the store's sketches, then the copies-counted stop-list's
        assert similarities[i, 0] == kernel.similarity(own[i], own[n + i], k, metric)
        assert similarities[i, 3] == kernel.similarity(counted.sketch(texts[a]), counted.sketch(texts[b]), k,
                                                       metric)
    answered = {(x["a"], x["b"]) for x in answers}
    is_open = np.array([(a, b) not in answered and (b, a) not in answered for a, b in zip(pool.a, pool.b)])
    copies = is_open & np.array([a.split("-")[0] == b.split("-")[0] for a, b in zip(pool.a, pool.b)])
    versions = is_open & np.array(["-" not in a + b for a, b in zip(pool.a, pool.b)])
    assert copies.sum() >= 5 and versions.sum() >= 5
    assert chances[str(corpus)][copies].min() > 0.5 > chances[str(corpus)][versions].max()
    assert np.abs(chances[None][copies | versions] - 0.5).max() < 0.05  # the store's similarity: coin tosses
