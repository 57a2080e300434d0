"""The development corpus is reproducible and labelled, and the default sketch separates its duplicates from
its hard negatives: what the quality figures in benchmarks/QUALITY.md rest on."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import devcorpus  # noqa: E402
import evaluate  # noqa: E402
from neardup.core import reference  # noqa: E402
from neardup.core.defaults import DEFAULT_METRIC, DEFAULT_THRESHOLD  # noqa: E402
from neardup.core.sketch import decode_sketch  # noqa: E402


@pytest.fixture(scope="module")
def docs() -> list[devcorpus.Doc]:
    return devcorpus.generate(devcorpus.DEFAULT_SEED)


@pytest.fixture(scope="module")
def sketch_of(docs):
    """Sketches under the default configuration, stop-list learned over the whole corpus as `neardup index` does."""
    sketcher = evaluate.NeardupMethods(docs).sketcher(evaluate.DEFAULT_CONFIG)
    return lambda doc: decode_sketch(sketcher.sketch(doc.text, doc.lang))


def similarity(sketch_of, a: devcorpus.Doc, b: devcorpus.Doc) -> float:
    return reference.similarity(sketch_of(a), sketch_of(b), evaluate.DEFAULT_CONFIG.k, DEFAULT_METRIC)


def test_same_seed_same_bytes(tmp_path, docs):
    again = tmp_path / "again.jsonl"
    first = tmp_path / "first.jsonl"
    devcorpus.write_jsonl(docs, first)
    devcorpus.write_jsonl(devcorpus.generate(devcorpus.DEFAULT_SEED), again)
    assert first.read_bytes() == again.read_bytes()
    assert devcorpus.read_jsonl(first) == docs
    assert devcorpus.generate(devcorpus.DEFAULT_SEED + 1) != docs


def test_groups_and_families_are_labelled(docs):
    families = {doc.family for doc in docs}
    assert families == {"original", *devcorpus.EDIT_FAMILIES, *devcorpus.NEGATIVE_FAMILIES}
    assert {doc.lang for doc in docs} == {"en", "nl", "ru", "de"}
    assert len({doc.id for doc in docs}) == len(docs)
    groups: dict[str, list[devcorpus.Doc]] = {}
    for doc in docs:
        groups.setdefault(doc.group, []).append(doc)
    for members in groups.values():
        # one first publication per group; everything else is a republication of it
        assert [m.family for m in members if m.family not in devcorpus.EDIT_FAMILIES] in (
            ["original"], ["template"], ["shared_boilerplate"])


def test_hard_negatives_share_text_but_not_groups(docs):
    by_template = [d for d in docs if d.family == "template" and d.template == "t0"]
    assert len(by_template) > 20 and len({d.group for d in by_template}) == len(by_template)
    by_site = [d for d in docs if d.family == "shared_boilerplate" and d.site == "Example News"]
    assert len(by_site) >= 3 and len({d.group for d in by_site}) == len(by_site)
    assert all("Example News" in d.text for d in by_site)


def test_result_sets_hold_duplicates_and_hard_negatives(docs):
    for indexes in devcorpus.draw_result_sets(docs, 5, seed=1):
        assert len(indexes) == 100 == len(set(indexes))
        groups = [docs[i].group for i in indexes]
        duplicates = len(groups) - len(set(groups))
        assert 20 <= duplicates <= 41
        assert sum(docs[i].family == "template" for i in indexes) >= 3
    for indexes in devcorpus.draw_result_sets(docs, 3, seed=1, family="excerpt"):
        assert {docs[i].family for i in indexes if sum(docs[j].group == docs[i].group for j in indexes) > 1} \
            <= {"original", "template", "excerpt"}


def test_default_separates_duplicates_from_hard_negatives(docs, sketch_of):
    originals = {d.group: d for d in docs if d.family == "original"}
    copies = [d for d in docs if d.family in ("boilerplate", "reflow", "truncate", "caption") and d.group in originals]
    duplicate_scores = [similarity(sketch_of, originals[c.group], c) for c in copies[:40]]
    assert min(duplicate_scores) >= DEFAULT_THRESHOLD
    variants = [d for d in docs if d.family == "template" and d.template in ("t0", "t1", "t3")]
    negatives = [(a, b) for a, b in itertools.combinations(variants, 2) if a.template == b.template][::7]
    site_pages = [d for d in docs if d.family == "shared_boilerplate" and d.site == "Example News"]
    negatives += list(itertools.combinations(site_pages, 2))
    assert max(similarity(sketch_of, a, b) for a, b in negatives) < DEFAULT_THRESHOLD


def test_matrix_greedy_grouping_is_the_services_rule(docs, sketch_of):
    indexes = devcorpus.draw_result_sets(docs, 1, seed=3)[0]
    sketches = [sketch_of(docs[i]) for i in indexes]
    k, metric = evaluate.DEFAULT_CONFIG.k, DEFAULT_METRIC
    matrix = evaluate._pairwise(sketches, lambda a, b: reference.similarity(a, b, k, metric))
    groups = evaluate.greedy_groups(matrix, np.array([DEFAULT_THRESHOLD]))[0]
    assert groups.tolist() == reference.dedup(sketches, k, DEFAULT_THRESHOLD, metric).group
