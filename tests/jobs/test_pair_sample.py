"""jobs/pair_sample.py: the candidate population `neardup train` and `neardup label` read, against every candidate
pair of a real store (the pairs job at threshold 0: each pair sharing a super token, once)."""
from __future__ import annotations

import io
import json

import numpy as np
import pytest

from neardup.cli.main import main
from neardup.jobs import pair_sample
from neardup.jobs.pairs import find_pairs
from neardup.runtime.served_store import ServedStore
from neardup.store import open_store
from server_process import write_jsonl
from textgen import RECORD_SCHEMA, records_with_typos


@pytest.fixture(scope="module")
def records_store(tmp_path_factory):
    """Re-entered person records indexed by `neardup index`, and every candidate pair of theirs with its score."""
    root = tmp_path_factory.mktemp("pair-sample")
    records, _ = records_with_typos()
    corpus = write_jsonl(root / "records.jsonl", records)
    (root / "schema.json").write_text(json.dumps(RECORD_SCHEMA))
    assert main(["index", str(corpus), "--store", str(root / "store"), "--fields", str(root / "schema.json")]) == 0
    out = io.BytesIO()
    find_pairs(root / "store", out, threshold=0.0)
    pairs = {(p["a"], p["b"]): p["similarity"] for p in map(json.loads, out.getvalue().decode().splitlines())}
    return root / "store", pairs


def test_a_small_store_is_its_whole_population(records_store):
    """Every article drawn, every pair kept once (a before b as the pairs job has them), each standing for one,
    scored as the store scores it; the near stratum above half the rules' threshold, the uniform one below."""
    store_path, every = records_store
    with open_store(store_path, readonly=True) as store:
        population = pair_sample.candidate_population(store)
        floor = pair_sample.NEAR_SHARE * ServedStore(store, pair_model=False).defaults.threshold
    found = dict(zip(zip(population.a, population.b), population.rule_scores))
    assert found.keys() == every.keys() and len(found) == len(population.a)
    assert all(found[pair] == pytest.approx(every[pair]) for pair in every)
    assert np.all(population.stands_for == 1.0)
    assert 0 < np.count_nonzero(population.rule_scores >= floor) < len(population.a)


def test_a_sampled_population_stands_for_every_candidate(records_store, monkeypatch):
    """Drawn articles and kept pairs cut to a share: each kept pair stands for the pairs it was drawn among, so the
    population still counts the store's candidate pairs, and the near pairs are all there."""
    store_path, every = records_store
    monkeypatch.setattr(pair_sample, "SAMPLE_ARTICLES", 120)
    monkeypatch.setattr(pair_sample, "MAX_PAIRS", len(every) // 6)
    monkeypatch.setattr(pair_sample, "ENOUGH_PAIRS", len(every) // 3)
    with open_store(store_path, readonly=True) as store:
        estimates = [pair_sample.candidate_population(store, seed).stands_for.sum() for seed in range(5)]
        near = pair_sample.sample_candidate_pairs(store, at_least=0.5)
    assert np.mean(estimates) == pytest.approx(len(every), rel=0.2)
    assert set(zip(near.a, near.b)) == {pair for pair, similarity in every.items() if similarity >= 0.5 - 1e-9}
