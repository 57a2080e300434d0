"""`neardup train` (issue 13): a pair classifier fitted on labelled job-ad pairs of an items store, chosen by
cross-validated F1, stored in the store as JSON (no pickle), fitted and served without scikit-learn: Dedup then reports its
calibrated probability; a damaged model, or one of another configuration, stops `neardup serve` at start in one
line. On a store of texts, answers chosen by `neardup label` train its threshold, which `neardup serve` then
serves (source "trained"); answers that cannot decide leave the store unchanged."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import random
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from neardup.core import kernel
from neardup.jobs import learners, pair_sample, train
from neardup.jobs.index import frequent_shingles
from neardup.jobs.label import label_with
from neardup.cli.main import main
from neardup.core.item_scoring import ItemScorer, PairModel, model_inputs, pair_features
from neardup.core.errors import ConfigMismatch
from neardup.core.vocabulary import MAX_K
from neardup.runtime.served_store import ServedStore
from neardup.store import open_store
from neardup_client import NearDupClient
from benchmarks.lib import jobads
from benchmarks.lib.jobads.fields import SCHEMA, items_with_fields
from server_process import NEARDUP, Server, serving, write_jsonl
from textgen import RECORD_SCHEMA, article, licence_versions, look_alike_corpus, records_with_typos, text


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small tune split indexed into an items store by the CLI, and `neardup train` run on it."""
    root = tmp_path_factory.mktemp("train")
    data = jobads.generate("tune", 300)
    corpus = write_jsonl(root / "items.jsonl", items_with_fields(data.items))
    pairs = write_jsonl(root / "pairs.jsonl", data.pairs)
    (root / "schema.json").write_text(json.dumps(SCHEMA))
    assert main(["index", str(corpus), "--store", str(root / "store"), "--fields", str(root / "schema.json")]) == 0
    out, err = io.StringIO(), io.StringIO()  # `neardup train` in this process: no interpreter to start
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["train", str(pairs), "--store", str(root / "store"), "--folds", "3"])
    return root, data, subprocess.CompletedProcess([], code, out.getvalue(), err.getvalue())


def test_train_compares_both_models_by_cross_validated_f1_and_stores_json(trained):
    root, _, done = trained
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("rules alone ") and lines[1].startswith("logistic ")
    assert lines[2].startswith("gradient-boosting ")
    f1 = {line.split()[0]: float(line.split("F1 ")[1].split()[0]) for line in lines[:3]}
    assert all(0.5 < value <= 1 for value in f1.values())
    assert lines[3].startswith("figures over the ") and "where the rules and a model can disagree" in lines[3]
    chosen = lines[4].split("chosen: ")[1].split(";")[0]
    storable = [kind for kind, line in zip(("logistic", "gradient-boosting"), lines[1:3])
                if "may not be stored" not in line]
    assert f1[chosen] == max(f1[kind] for kind in storable) >= f1["rules"]
    with open_store(root / "store", readonly=True) as store:
        model = json.loads(store.model())
        assert model["format"] == "neardup-pair-model" and model["kind"] == chosen
        assert model["config_digest"] == store.config.digest()


@pytest.mark.slow
def test_served_dedup_decides_by_the_models_probability(trained):
    root, data, _ = trained
    repost = next(p for p in data.pairs if p["kind"] == "repost")
    with open_store(root / "store", readonly=True) as store:
        model = PairModel.from_json(store.model(), store.config.digest(), store.config.fields)
        found = pair_features(store.config.fields, store.get_many([repost["a"], repost["b"]]))
        expected = float(ItemScorer(store.config.fields, model).scores(found.features)[0])
    with serving(root / "store") as server, NearDupClient(server.target, timeout=10) as client:
        info = client.info()
        assert info.default_threshold == pytest.approx(model.threshold) and info.pair_model == model.kind
        answer = client.dedup([repost["a"], repost["b"]], threshold=0.0)
    assert answer.duplicates[0].similarity == pytest.approx(expected) and 0 <= expected <= 1


@pytest.mark.slow
@pytest.mark.parametrize("damage, message", [
    (b"{not json", "pair model is damaged"),
    (json.dumps({"format": "neardup-pair-model", "version": 1, "config_digest": "0123456789abcdef"}).encode(),
     "trained for sketch configuration '0123456789abcdef'"),
])
def test_a_damaged_model_or_one_of_another_configuration_is_refused_at_start(trained, tmp_path, damage, message):
    root, _, _ = trained
    copy = tmp_path / "store"
    shutil.copytree(root / "store", copy)
    with open_store(copy) as store:
        store.set_model(damage)
    server = Server(copy)
    code = server.process.wait(timeout=30)
    server._log.close()
    log = server.log().strip().splitlines()
    assert code == 1 and len(log) == 1 and message in log[0] and "neardup train" in log[0]


def test_train_refuses_too_few_text_answers_and_unknown_ids(trained, indexed_store, tmp_path, neardup):
    root, _, _ = trained
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [{"a": "x", "b": "y", "duplicate": True}])
    text_store = indexed_store("train-texts", {"x": "one text", "y": "another text"})
    done = neardup("train", pairs, "--store", text_store)
    assert done.returncode == 1 and len(done.stderr.splitlines()) == 1, done.stderr
    assert "hold 1 duplicates and 0 others; 5-fold cross-validation needs at least 5 of each" in done.stderr
    done = neardup("train", pairs, "--store", root / "store")
    assert done.returncode == 1 and "2 ids" in done.stderr and "not stored" in done.stderr


def test_model_evaluation_needs_no_scikit_learn(trained):
    """The server side imports numpy alone: core/item_scoring.py never imports scikit-learn."""
    source = (Path(__file__).resolve().parents[2] / "server" / "neardup" / "core" / "item_scoring.py").read_text()
    assert not re.search(r"^\s*(import|from) (sklearn|pickle)", source, re.MULTILINE)
    root, _, _ = trained
    with open_store(root / "store", readonly=True) as store:
        model = PairModel.from_json(store.model(), store.config.digest(), store.config.fields)
    assert np.all(np.diff(model.probability(np.zeros((3, len(model.document["inputs"]))))) == 0)


def test_a_model_whose_trees_loop_or_point_outside_is_damaged(trained):
    """The compiled tree walk checks every node first: a child before its parent (a loop) or past the end is refused
    when the model is read, never walked."""
    root, data, _ = trained
    with open_store(root / "store", readonly=True) as store:
        document, digest, fields = json.loads(store.model()), store.config.digest(), store.config.fields
        pairs = [(p["a"], p["b"], p["duplicate"]) for p in data.pairs]
        ids = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
        rows, scored = pair_sample.pair_rows(fields, dict(zip(ids, store.get_many(ids))), pairs)
    inputs, labels = model_inputs(fields, rows[scored]), np.array([d for _, _, d in pairs])[scored]
    fitted = learners.fit_boosting(inputs, labels, trees=5, depth=2)
    document.update(train._dump("gradient-boosting", fitted))
    model = PairModel.from_json(json.dumps(document).encode(), digest, fields)
    assert np.allclose(model.raw(inputs), fitted.decision(inputs))
    for child in (0, 10 ** 6):
        broken = json.loads(json.dumps(document))
        broken["trees"][0]["left"][0] = child
        with pytest.raises(ConfigMismatch, match="pair model is damaged"):
            PairModel.from_json(json.dumps(broken).encode(), digest, fields)


def pairs_f1(neardup, store) -> float:
    """F1 of the store's pairs at its served default against the records' true pairs."""
    done = neardup("pairs", "--store", store)
    assert done.returncode == 0, done.stderr
    found = {frozenset((p["a"], p["b"])) for p in map(json.loads, done.stdout.splitlines())}
    return 2 * len(found & TRUE_RECORD_PAIRS) / (len(found) + len(TRUE_RECORD_PAIRS))


RECORDS, TRUE_RECORD_PAIRS = records_with_typos()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_labels_never_leave_the_store_below_its_rules(tmp_path, neardup, seed):
    """The issue's trap: 60 labelled duplicates and 60 random non-duplicates, which share nothing. Training either
    refuses in one line, the store unchanged, or stores a model whose pairs score at least the rules'."""
    (tmp_path / "schema.json").write_text(json.dumps(RECORD_SCHEMA))
    corpus = write_jsonl(tmp_path / "records.jsonl", RECORDS)
    assert neardup("index", corpus, "--store", tmp_path / "store", "--fields", tmp_path / "schema.json").returncode == 0
    rules = pairs_f1(neardup, tmp_path / "store")
    rng = random.Random(seed)
    ids = [record["id"] for record in RECORDS]
    duplicates = [sorted(pair) for pair in rng.sample(sorted(map(sorted, TRUE_RECORD_PAIRS)), 60)]
    others = []
    while len(others) < 60:
        a, b = rng.sample(ids, 2)
        if frozenset((a, b)) not in TRUE_RECORD_PAIRS:
            others.append((a, b))
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"a": a, "b": b, "duplicate": True} for a, b in duplicates]
                         + [{"a": a, "b": b, "duplicate": False} for a, b in others])
    done = neardup("train", labels, "--store", tmp_path / "store", "--folds", "3")
    if done.returncode == 0:
        assert "stored in" in done.stdout
        assert pairs_f1(neardup, tmp_path / "store") >= rules
    else:
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and "not stored" in done.stderr, done.stderr
        with open_store(tmp_path / "store", readonly=True) as store:
            assert store.model() is None
    assert "non-duplicates are never compared (not learned from)" in done.stdout


def test_labels_far_below_the_rules_threshold_cannot_judge_a_model(tmp_path, neardup):
    """Non-duplicates that share a super token but score under half the rules' threshold say nothing about where
    a model and the rules disagree: with none nearer, train stores nothing and says so in one line."""
    (tmp_path / "schema.json").write_text(json.dumps(RECORD_SCHEMA))
    corpus = write_jsonl(tmp_path / "records.jsonl", RECORDS)
    assert neardup("index", corpus, "--store", tmp_path / "store", "--fields", tmp_path / "schema.json").returncode == 0
    with open_store(tmp_path / "store", readonly=True) as store:
        population = pair_sample.candidate_population(store)
        floor = pair_sample.NEAR_SHARE * store.threshold()["threshold"]
    far = [(a, b) for a, b, score in zip(population.a, population.b, population.rule_scores)
           if score < floor and frozenset((a, b)) not in TRUE_RECORD_PAIRS][:20]
    duplicates = sorted(map(sorted, TRUE_RECORD_PAIRS))[:20]
    assert len(far) == 20
    labels = write_jsonl(tmp_path / "labels.jsonl", [{"a": a, "b": b, "duplicate": True} for a, b in duplicates]
                         + [{"a": a, "b": b, "duplicate": False} for a, b in far])
    done = neardup("train", labels, "--store", tmp_path / "store", "--folds", "3")
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "hold 20 duplicates and 0 others" in done.stderr and "not stored" in done.stderr
    assert "3-fold cross-validation needs at least 3 of each" in done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.model() is None


# --- a store of texts: its threshold, trained on the user's answers -------------------------------------------------

TEXTS, STORY_OF = look_alike_corpus()


@pytest.fixture(scope="module")
def texts_store(tmp_path_factory):
    """Stories, their copies, digests and three templates' pages indexed by `neardup index` into a store of texts,
    and 40 answers chosen by `neardup label`'s session: copies are duplicates, a template's pages are not."""
    root = tmp_path_factory.mktemp("train-texts")
    corpus = write_jsonl(root / "texts.jsonl", TEXTS)
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(root / "store")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    with open_store(root / "store", readonly=True) as store:
        label_with(store, root / "answers.jsonl", lambda a, b: STORY_OF[a] == STORY_OF[b], budget=40)
    return root


def _similarity(store, a: str, b: str) -> float:
    sketches = store.get_many([a, b])
    return kernel.similarity(sketches[0], sketches[1], store.config.k, "containment")


def test_the_learned_default_keeps_a_templates_pages_apart_and_groups_the_copies(texts_store):
    """Each template page's nearest match is another page of its template or nothing, its candidates show its
    siblings: the store learns a threshold above them (rule 6, docs/threshold.md) and below the copies."""
    pages = [f"template-{template}-{page}" for template in range(3) for page in range(5)]
    with open_store(texts_store / "store", readonly=True) as store:
        learned = store.threshold()
        siblings = max(_similarity(store, a, b) for a in pages for b in pages if a < b and a[:10] == b[:10])
        copy = min(_similarity(store, f"story-{story}", f"copy-{story}") for story in range(12))
    assert learned["source"] == "learned" and siblings < learned["threshold"] <= copy


def test_text_answers_train_a_threshold_that_dedup_serves_keeping_template_pages_apart(texts_store, tmp_path):
    store_path = tmp_path / "store"
    shutil.copytree(texts_store / "store", store_path)
    pages = [f"template-0-{page}" for page in range(3)]
    with open_store(store_path, readonly=True) as store:
        siblings = max(_similarity(store, a, b) for a in pages for b in pages if a < b)
        copy = _similarity(store, "story-0", "copy-0")
    grouping = subprocess.run([*NEARDUP, "configure", "--store", str(store_path), "--threshold",
                               f"{siblings - 0.05:.4f}"], capture_output=True, text=True)  # a user's, grouping them
    assert grouping.returncode == 0, grouping.stderr
    done = subprocess.run([*NEARDUP, "train", str(texts_store / "answers.jsonl"), "--store", str(store_path),
                           "--folds", "3"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("store threshold ") and lines[1].startswith("trained threshold ")
    assert "stored in" in lines[-1] and "source trained" in lines[-1]
    with open_store(store_path, readonly=True) as store:
        after = store.threshold()
    assert after["source"] == "trained" and after["trained_on"] == 40
    assert siblings < after["threshold"] <= copy
    with serving(store_path) as server, NearDupClient(server.target, timeout=10) as client:
        info = client.info()
        assert (info.default_threshold, info.default_threshold_source) == (after["threshold"], "trained")
        answer = client.dedup([*pages, "story-0", "copy-0", "story-1", "copy-1"])
    assert answer.keep == [*pages, "story-0", "story-1"]  # the template's pages apart, the copies grouped
    assert {(d.id, d.duplicate_of) for d in answer.duplicates} == {("copy-0", "story-0"), ("copy-1", "story-1")}


def test_train_says_how_many_answers_are_among_the_store_s_candidate_pairs(texts_store, tmp_path, neardup):
    """`neardup label`'s answers are all candidate pairs of the store, where they count as answered; answers about
    pairs no search pairs (a story and a template page) count only through the fitted chance, and the report says
    how many are which."""
    answered = [json.loads(line) for line in (texts_store / "answers.jsonl").read_text().splitlines()]
    with open_store(texts_store / "store", readonly=True) as store:
        pool = pair_sample.text_candidate_pairs(store)
    pooled = set(zip(pool.a, pool.b)) | set(zip(pool.b, pool.a))
    assert all((answer["a"], answer["b"]) in pooled for answer in answered)
    strangers = [{"a": f"story-{story}", "b": f"template-2-{story}", "duplicate": False} for story in range(4)]
    assert not any((stranger["a"], stranger["b"]) in pooled for stranger in strangers)
    pairs = write_jsonl(tmp_path / "pairs.jsonl", answered + strangers)
    store_path = tmp_path / "store"  # set to group the template's pages, so that the answers train a threshold
    shutil.copytree(texts_store / "store", store_path)
    assert neardup("configure", "--store", store_path, "--threshold", "0.3").returncode == 0
    done = neardup("train", pairs, "--store", store_path, "--folds", "3", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert (f"{len(answered) + 4} answered pairs: " in done.stdout
            and f"; {len(answered)} of them among the store's {len(pool.a):,} candidate pairs, where they count as "
                "answered" in done.stdout), done.stdout


def _threshold_of(store_path):
    with open_store(store_path, readonly=True) as store:
        return store.threshold()


@pytest.mark.parametrize("answers, says", [
    ("few", "hold 4 duplicates and 20 others; 5-fold cross-validation needs at least 5 of each"),
    ("inverted", "the answers do not separate by containment"),
])
def test_train_refuses_text_answers_that_cannot_decide_in_one_line_the_store_unchanged(texts_store, tmp_path,
                                                                                         neardup, answers, says):
    answered = [json.loads(line) for line in (texts_store / "answers.jsonl").read_text().splitlines()]
    if answers == "few":  # too few duplicates
        duplicates = [answer for answer in answered if answer["duplicate"]][:4]
        answered = duplicates + [answer for answer in answered if answer["duplicate"] is False][:20]
    else:  # the more similar, the less a duplicate: no threshold separates them
        with open_store(texts_store / "store", readonly=True) as store:
            ranked = sorted(answered, key=lambda answer: _similarity(store, answer["a"], answer["b"]))
        answered = [{**answer, "duplicate": rank < len(ranked) // 2} for rank, answer in enumerate(ranked)]
    pairs = write_jsonl(tmp_path / "pairs.jsonl", answered)
    before = _threshold_of(texts_store / "store")
    done = neardup("train", pairs, "--store", texts_store / "store")
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert _threshold_of(texts_store / "store") == before


def test_a_pair_answered_again_counts_once_by_its_last_answer_and_a_pair_of_one_id_is_refused(texts_store, tmp_path,
                                                                                                 neardup):
    """Answers joined from two sessions: each pair, in either order, trains by its last answer, as if the file held
    only those; the report says how many earlier answers it left out."""
    answered = [json.loads(line) for line in (texts_store / "answers.jsonl").read_text().splitlines()]
    unsure = answered[0]
    flipped = [{"a": answer["b"], "b": answer["a"], "duplicate": not answer["duplicate"]} for answer in answered[1:]]
    last = write_jsonl(tmp_path / "last.jsonl", answered[1:])
    joined = write_jsonl(tmp_path / "joined.jsonl", [unsure, *flipped, *answered[1:], {**unsure, "duplicate": None}])
    alone, again = (neardup("train", pairs, "--store", texts_store / "store", "--folds", "3", "--dry-run")
                    for pairs in (last, joined))
    replaced = len(answered)  # the flipped answers, and the unsure one's first answer
    note = f"; {replaced} earlier answers of a pair answered again left out (the last counts)"
    assert note in again.stdout and "left out" not in alone.stdout
    assert f"{len(answered) - 1} answered pairs: " in alone.stdout

    def figures(run):  # the report but its elapsed time, and the outcome
        return [line for line in run.stdout.replace(note, "").splitlines() if not line.startswith("chosen:")], \
            run.returncode, run.stderr

    assert figures(again) == figures(alone)
    before = _threshold_of(texts_store / "store")
    one_id = write_jsonl(tmp_path / "one-id.jsonl", [*answered, {"a": "story-0", "b": "story-0", "duplicate": True}])
    done = neardup("train", one_id, "--store", texts_store / "store", "--folds", "3")
    assert done.returncode != 0 and done.stderr.count("\n") == 1, done.stderr
    assert f"one-id.jsonl line {len(answered) + 1}: a and b are one id ('story-0')" in done.stderr
    assert _threshold_of(texts_store / "store") == before


def test_answers_that_call_an_amended_text_no_duplicate_train_jaccard_and_dedup_serves_it(tmp_path):
    """A text that is another one whole plus added sentences (a licence "with these amendments") is contained
    whole: under containment no threshold keeps it apart from its original while grouping edited copies. Answers
    that say so make train choose jaccard, which the server then serves by default."""
    records = [{"id": f"story-{n}", "text": text(article(3000 + n))} for n in range(40)]
    for n in range(12):  # copies: a header and one sentence in four edited
        rng = random.Random(6000 + n)
        edited = [s.replace(s.split()[2], rng.choice(s.split()), 1) if i % 4 == 0 else s
                  for i, s in enumerate(article(3000 + n))]
        records.append({"id": f"copy-{n}", "text": f"Republished by the wire service {n}. " + text(edited)})
    for n in range(12, 24):  # amended: the story whole, then sentences of its own
        records.append({"id": f"amended-{n}", "text": text(article(3000 + n) + article(4000 + n, sentences=8))})
    corpus = write_jsonl(tmp_path / "texts.jsonl", records)
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "store")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert _similarity(store, "story-12", "amended-12") >= ServedStore(store).defaults.threshold  # grouped
    # one answer disagrees with the rest (amended-23 called a duplicate), as a user's answers sometimes do
    answers = ([{"a": f"story-{n}", "b": f"copy-{n}", "duplicate": True} for n in range(12)]
               + [{"a": f"story-{n}", "b": f"amended-{n}", "duplicate": n == 23} for n in range(12, 24)])
    pairs = write_jsonl(tmp_path / "answers.jsonl", answers)
    done = subprocess.run([*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "store"), "--folds", "3"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "chosen: jaccard >= " in done.stdout.splitlines()[-1]
    with open_store(tmp_path / "store", readonly=True) as store:
        after = store.threshold()
    assert (after["metric"], after["source"]) == ("jaccard", "trained")
    # trained again on these answers: the stored threshold was fitted on them, so its F1 there (above the
    # cross-validated one, the answers not being separable) is no yardstick to refuse by
    done = subprocess.run([*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "store"), "--folds", "3"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "stored in" in done.stdout.splitlines()[-1], done.stdout + done.stderr
    with serving(tmp_path / "store") as server, NearDupClient(server.target, timeout=10) as client:
        info = client.info()
        assert (info.default_metric, info.default_threshold) == ("jaccard", after["threshold"])
        answer = client.dedup(["story-12", "amended-12", "story-0", "copy-0", "story-13", "amended-13"])
    assert answer.keep == ["story-12", "amended-12", "story-0", "story-13", "amended-13"]
    assert [(d.id, d.duplicate_of) for d in answer.duplicates] == [("copy-0", "story-0")]


def test_versions_of_one_licence_get_advice_to_count_copies_in_the_stop_list(tmp_path):
    """Twelve versions of one licence (its text and a clause of their own), each republished once under a header
    of its own with a word changed in every other sentence. The store's stop-list keeps the licence's text: each
    version is mostly that text, so they look like copies of one popular story, more alike than a version and its
    edited copy. A user who calls those two duplicates and two versions not cannot be served by it; counting each
    copy as a text drops the licence's text, and the clauses tell them apart: train advises `--stop-own-share 0`,
    and the store so made serves what the user said: trained on the same answers, it keeps its own threshold, which
    serves every answer already (issue 38: texts derived from one another)."""
    records = licence_versions()
    corpus = write_jsonl(tmp_path / "versions.jsonl", records)
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "store")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert not store.stoplist  # the licence kept: versions look like copies
        assert _similarity(store, "v0", "v1") > 0.7
    answers = ([{"a": f"v{n}", "b": f"v{n}-copy", "duplicate": True} for n in range(12)]
               + [{"a": f"v{n}", "b": f"v{n + 1}", "duplicate": False} for n in range(11)])
    pairs = write_jsonl(tmp_path / "answers.jsonl", answers)
    done = subprocess.run([*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "store"), "--folds", "3",
                           "--corpus", str(corpus), "--dry-run"], capture_output=True, text=True)
    lines = {line[:18].strip(): line for line in done.stdout.splitlines()}
    assert "cross-validated F1 1.000" in lines["copies counted"], done.stdout
    assert "no stop-list" not in lines  # the store's own
    assert done.returncode == 1 and "do not separate" in done.stderr  # not under the store's stop-list
    advice = next(line for line in done.stdout.splitlines() if line.startswith("advice: "))
    assert "counts copies of one text each" in advice and "--stop-own-share 0" in advice, advice
    # the advised stop-list's line shows the setting the advice names
    setting = re.search(r"\((\w+ >= [\d.]+): expected F1", advice).group(1)
    assert f"({setting}, the texts sketched" in lines["copies counted"], (advice, lines["copies counted"])
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.threshold() is None  # --dry-run
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "counted"),
                           "--stop-own-share", "0"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "counted", readonly=True) as store:
        # the stop-list train weighed is the one `--stop-own-share 0` learns, shingle for shingle
        assert store.stoplist == frequent_shingles(str(corpus), store.config)
    done = subprocess.run([*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "counted"), "--folds", "3"],
                          capture_output=True, text=True)
    # its own threshold already serves every answer: the answers expect no trained one to do better
    assert done.returncode == 1 and "to serve its pairs as well as any trained threshold" in done.stderr, done.stderr
    assert "F1 on the answers 1.000" in done.stdout
    with serving(tmp_path / "counted") as server, NearDupClient(server.target, timeout=10) as client:
        answer = client.dedup(["v0", "v1", "v0-copy", "v2", "v1-copy"])
    assert answer.keep == ["v0", "v1", "v2"]
    assert sorted((d.id, d.duplicate_of) for d in answer.duplicates) == [("v0-copy", "v0"), ("v1-copy", "v1")]


def test_the_advised_index_command_makes_the_store_train_weighed_whatever_the_store_s_configuration(tmp_path):
    """A store indexed with another shingle unit and sketch size: the advice's `neardup index` keeps them, so the
    store it makes is the one train weighed (its configuration but the stop-list, that stop-list shingle for
    shingle), not one of the defaults'."""
    corpus = write_jsonl(tmp_path / "versions.jsonl", licence_versions())
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "store"), "--unit", "word:4",
                           "-k", "64"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    answers = ([{"a": f"v{n}", "b": f"v{n}-copy", "duplicate": True} for n in range(12)]
               + [{"a": f"v{n}", "b": f"v{n + 1}", "duplicate": False} for n in range(11)])
    pairs = write_jsonl(tmp_path / "answers.jsonl", answers)
    done = subprocess.run([*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "store"), "--folds", "3",
                           "--corpus", str(corpus), "--dry-run"], capture_output=True, text=True)
    advice = next(line for line in done.stdout.splitlines() if line.startswith("advice: "))
    command = re.search(r"`(neardup index CORPUS --store NEW [^`]*)`", advice).group(1)
    assert command == "neardup index CORPUS --store NEW --unit word:4 -k 64 --stop-own-share 0", advice
    argv = [str(corpus) if word == "CORPUS" else str(tmp_path / "new") if word == "NEW" else word
            for word in shlex.split(command)[1:]]
    done = subprocess.run([*NEARDUP, *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "store", readonly=True) as store, open_store(tmp_path / "new", readonly=True) as new:
        assert dataclasses.replace(new.config, stoplist_digest="") == \
            dataclasses.replace(store.config, stoplist_digest="")
        assert new.stoplist == frequent_shingles(str(corpus), store.config) and new.stoplist != store.stoplist
    # each larger sketch's command makes a store of twice the size with its stop-list, holding the very sketches
    # train weighed, byte for byte
    ids = {record["id"] for record in licence_versions()}
    with open_store(tmp_path / "store", readonly=True) as store:
        weighed = train.resketched(store, str(corpus), ids)[0]
        commands = {name: f"neardup index CORPUS --store NEW {train.index_options(store.config, name)}"
                    for name in ("none, twice k", "copies counted, twice k")}
    # twice 64 is the default size, which `neardup index` needs no option for
    assert commands == {"none, twice k": "neardup index CORPUS --store NEW --unit word:4 --no-stoplist",
                        "copies counted, twice k": "neardup index CORPUS --store NEW --unit word:4 --stop-own-share 0"}
    for name, command in commands.items():
        path = tmp_path / name.replace(" ", "-").replace(",", "")
        argv = [str(corpus) if word == "CORPUS" else str(path) if word == "NEW" else word
                for word in shlex.split(command)[1:]]
        done = subprocess.run([*NEARDUP, *argv], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        with open_store(path, readonly=True) as twice:
            assert (twice.config.k, twice.config.unit) == (128, "word:4")
            assert twice.stoplist == (frozenset() if name.startswith("none") else
                                      frequent_shingles(str(corpus), twice.config))
            assert dict(zip(sorted(ids), twice.get_many(sorted(ids)))) == weighed[name]
    # a store at the largest sketch size is not offered one past it
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "largest"), "-k",
                           str(MAX_K)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "largest", readonly=True) as largest:
        assert set(train.resketched(largest, str(corpus), ids)[0]) == {"copies counted"}  # none is its own


def test_answers_that_only_the_stop_listed_text_relates_get_advice_to_reindex_without_it(tmp_path):
    """One licence text under the header of 20 projects, among 20 other stories: the stop-list learns the licence
    from the diverse texts that share it and drops it, so the projects' texts look unrelated. A user who calls
    two projects' copies of the licence duplicates cannot be served by that store: train refuses, and given the
    corpus says the answers separate without the stop-list; re-indexed with --no-stoplist and trained on the same
    answers, the store serves what the user said (issue 38: the stop-list decides licence copies)."""
    licence = article(500, sentences=10)
    records = [{"id": f"project-{n}", "text": text(article(3000 + n) + licence)} for n in range(20)]
    records += [{"id": f"story-{n}", "text": text(article(4000 + n))} for n in range(20)]
    corpus = write_jsonl(tmp_path / "texts.jsonl", records)
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "store")], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.stoplist and store.threshold() is None
        assert _similarity(store, "project-0", "project-1") < 0.05  # the licence stop-listed
    answers = ([{"a": f"project-{n}", "b": f"project-{n + 1}", "duplicate": True} for n in range(0, 20, 2)]
               + [{"a": f"story-{n}", "b": f"project-{n}", "duplicate": False} for n in range(10)])
    pairs = write_jsonl(tmp_path / "answers.jsonl", answers)
    train_with = [*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "store"), "--folds", "3"]
    done = subprocess.run(train_with, capture_output=True, text=True)
    assert done.returncode == 1 and "do not separate" in done.stderr and "advice" not in done.stdout
    assert "other stop-lists   not weighed: give --corpus" in done.stdout  # what would tell
    done = subprocess.run([*train_with, "--corpus", str(corpus)], capture_output=True, text=True)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "do not separate" in done.stderr
    unlisted = next(line for line in done.stdout.splitlines() if line.startswith("no stop-list "))
    assert "cross-validated F1 1.000" in unlisted, done.stdout
    advice = next(line for line in done.stdout.splitlines() if line.startswith("advice: "))
    assert "without the store's stop-list" in advice and "--no-stoplist" in advice
    with open_store(tmp_path / "store", readonly=True) as store:
        assert store.threshold() is None  # refused: unchanged
    # a corpus that lacks an answered text is named in one line
    partial = write_jsonl(tmp_path / "partial.jsonl", records[1:])
    done = subprocess.run([*train_with, "--corpus", str(partial)], capture_output=True, text=True)
    assert done.returncode != 0 and "'project-0'" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    # a malformed line of the corpus is passed over, and its warning says which file it is in
    malformed = tmp_path / "malformed.jsonl"
    malformed.write_text(corpus.read_text() + "{not json\n")
    done = subprocess.run([*train_with, "--corpus", str(malformed)], capture_output=True, text=True)
    assert done.returncode == 1 and f"neardup: --corpus {malformed} line {len(records) + 1}: bad JSON" in done.stderr
    # ... and so is a line that is not UTF-8, among the texts: the same report, and no traceback
    undecodable = tmp_path / "undecodable.jsonl"
    undecodable.write_bytes(b"\xff\xfe not UTF-8\n" + corpus.read_bytes())
    again = subprocess.run([*train_with, "--corpus", str(undecodable)], capture_output=True, text=True)
    assert f"neardup: --corpus {undecodable} line 1: invalid UTF-8" in again.stderr, again.stderr
    assert "Traceback" not in again.stderr and (again.returncode, again.stdout.splitlines()[:-1]) == \
        (done.returncode, done.stdout.splitlines()[:-1])
    # as advised: a store without the stop-list, trained on the same answers, serves them
    done = subprocess.run([*NEARDUP, "index", str(corpus), "--store", str(tmp_path / "unlisted"), "--no-stoplist"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([*NEARDUP, "train", str(pairs), "--store", str(tmp_path / "unlisted"), "--folds", "3",
                           "--corpus", str(corpus)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # off a terminal, one line says what reading the corpus took (a refusal above was its one line)
    assert re.fullmatch(r"neardup train: sketching 40 lines \(40 sketched\) in [\d.]+ s\n", done.stderr), done.stderr
    # the other stop-list tried there drops the licence again (20 texts hold it): no advice
    assert "copies counted " in done.stdout and "no stop-list " not in done.stdout and "advice" not in done.stdout
    with serving(tmp_path / "unlisted") as server, NearDupClient(server.target, timeout=10) as client:
        answer = client.dedup(["project-0", "story-0", "project-1", "story-1"])
    assert answer.keep == ["project-0", "story-0", "story-1"]
    assert [(d.id, d.duplicate_of) for d in answer.duplicates] == [("project-1", "project-0")]
