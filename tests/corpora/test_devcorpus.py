"""The development corpus is reproducible, labelled and split, its edits do what they say, and the default
sketch separates its duplicates from its hard negatives: what the quality figures in benchmarks/QUALITY.md
rest on."""
from __future__ import annotations

import itertools
import random
import re

import numpy as np
import pytest

from benchmarks.lib import devcorpus, devcorpus_sets, edits
from benchmarks.lib.quality_counts import greedy_groups
from benchmarks.lib.quality_methods import DEFAULT_CONFIG, NeardupMethods, pairwise
from neardup.core import reference
from neardup.core.vocabulary import DEFAULT_METRIC, DEFAULT_THRESHOLD
from neardup.core.encoding import decode_sketch

SIZE = 1500


@pytest.fixture(scope="module")
def docs() -> list[devcorpus.Doc]:
    return devcorpus.generate("tune", SIZE)


@pytest.fixture(scope="module")
def test_docs() -> list[devcorpus.Doc]:
    return devcorpus.generate("test", SIZE)


@pytest.fixture(scope="module")
def sketch_of(docs):
    """Sketches under the default configuration, stop-list learned over the whole corpus as `neardup index` does."""
    sketcher = NeardupMethods(docs).sketcher(DEFAULT_CONFIG)
    return lambda doc: decode_sketch(sketcher.sketch(doc.text, doc.lang))


def similarity(sketch_of, a: devcorpus.Doc, b: devcorpus.Doc) -> float:
    return reference.similarity(sketch_of(a), sketch_of(b), DEFAULT_CONFIG.k, DEFAULT_METRIC)


def test_same_split_same_bytes(tmp_path, docs):
    first, again = tmp_path / "first.jsonl", tmp_path / "again.jsonl"
    devcorpus.write_jsonl(docs, first)
    devcorpus.write_jsonl(devcorpus.generate("tune", SIZE), again)
    assert first.read_bytes() == again.read_bytes()
    assert devcorpus.read_jsonl(first) == docs
    assert devcorpus.generate("tune", SIZE, seed=8) != docs


def test_splits_share_no_text_and_test_has_more_languages(docs, test_docs):
    def originals(corpus):
        return {d.text for d in corpus if d.family in ("original", "shared_boilerplate", "quoting")}
    assert not originals(docs) & originals(test_docs)
    assert not {d.topic for d in docs if d.topic} & {d.topic for d in test_docs if d.topic}
    assert {d.source for d in test_docs} >= {"news", "encyclopedia", "manpages", "licenses", "bgwiki"}
    assert "pydoc" not in {d.source for d in test_docs} and "bgwiki" not in {d.source for d in docs}
    # languages the defaults were never chosen on: Italian, Spanish, and unstemmed Polish, Ukrainian, Bulgarian
    assert {d.lang for d in test_docs} - {d.lang for d in docs} >= {"it", "es", "none"}


def test_groups_families_and_buckets_are_labelled(docs):
    assert {d.family for d in docs} == {"original", *edits.EDIT_FAMILIES, *devcorpus.NEGATIVE_FAMILIES}
    assert {d.length for d in docs} == set(devcorpus.LENGTHS)
    assert len({d.id for d in docs}) == len(docs)
    groups: dict[str, list[devcorpus.Doc]] = {}
    for doc in docs:
        groups.setdefault(doc.group, []).append(doc)
    for members in groups.values():
        # one first publication per group; everything else is a copy of it, of the same length bucket
        assert [m.family for m in members if m.family not in edits.EDIT_FAMILIES] in (
            ["original"], ["template"], ["shared_boilerplate"], ["quoting"])
        assert len({m.length for m in members}) == 1
    rates = {devcorpus_sets.nominal_rate(d) for d in docs if d.family == "edit"}
    assert rates == set(edits.EDIT_RATES)


def test_word_edits_are_spread_at_the_rate():
    text = " ".join(f"word{i}." if i % 12 == 11 else f"word{i}" for i in range(1000))
    for rate in edits.EDIT_RATES:
        copy, actual = edits.edited(text, "en", rate, random.Random(1))
        assert actual == pytest.approx(rate, abs=0.002)
        before, after = text.split(), copy.split()
        changed = len(set(before) - set(after))
        assert rate * 1000 * 0.6 <= changed <= rate * 1000 * 1.05  # deletions and substitutions remove a word
        # spread: edits fall in every tenth of a 10 % edited text
        if rate == 0.10:
            positions = [i for i, w in enumerate(before) if w not in set(after)]
            assert {p // 100 for p in positions} == set(range(10))


def test_rewording_touches_most_sentences_and_unpunctuated_has_no_stops():
    sentences = [f"Sentence number {i} tells about a town, its river and its people." for i in range(20)]
    text = " ".join(sentences)
    copy, rate = edits.reworded(text, "en", random.Random(2))
    kept = sum(s in copy for s in sentences)
    assert kept <= 8 and 0.05 <= rate <= 0.12
    flat = edits.unpunctuated(text, random.Random(3))
    assert not re.search(r"[.!?](\s|$)", flat)
    assert flat.split() != text.split() and len(re.findall(r"\w+", flat)) == len(re.findall(r"\w+", text))


def test_hard_negatives_share_text_but_not_groups(docs):
    by_template = [d for d in docs if d.family == "template" and d.template == "t0"]
    assert len(by_template) > 20 and len({d.group for d in by_template}) == len(by_template)
    site = next(d.site for d in docs if d.family == "shared_boilerplate")
    by_site = [d for d in docs if d.family == "shared_boilerplate" and d.site == site]
    assert len(by_site) >= 3 and len({d.group for d in by_site}) == len(by_site)
    originals = {d.group: d for d in docs if d.family == "original"}
    quoting = [d for d in docs if d.family == "quoting"]
    assert len(quoting) >= 10  # about 8 % of the originals; how many depends on the texts the machine has
    for doc in quoting:
        quoted = originals[doc.quotes]
        source = " ".join(quoted.text.split())
        passages = [" ".join(p[1:-1].split()) for p in re.split(r"\n\s*\n", doc.text)
                    if p.startswith("“") and p.endswith("”")]
        # at most a third of its sentences, so well under half of its words
        assert any(p in source and len(p.split()) <= len(source.split()) / 2 for p in passages)


def test_result_sets_hold_duplicates_and_hard_negatives(docs):
    for indexes in devcorpus_sets.draw_result_sets(docs, 5, seed=1):
        assert len(indexes) == 100 == len(set(indexes))
        groups = [docs[i].group for i in indexes]
        assert 20 <= len(groups) - len(set(groups)) <= 41
        families = [docs[i].family for i in indexes]
        assert families.count("template") >= 2 and families.count("quoting") >= 1
    scope = devcorpus_sets.scopes()["rate 10%"]
    for indexes in devcorpus_sets.draw_result_sets(docs, 3, seed=1, scope=scope):
        copies = [docs[i] for i in indexes if docs[i].family in edits.EDIT_FAMILIES]
        assert copies and all(devcorpus_sets.nominal_rate(d) == 0.10 for d in copies)


def test_default_separates_duplicates_from_hard_negatives(docs, sketch_of):
    originals = {d.group: d for d in docs if d.family == "original"}
    copies = [d for d in docs if d.family in ("boilerplate", "format", "headline", "truncate") and d.group in originals
              and d.length != "short"]
    scores = [similarity(sketch_of, originals[c.group], c) for c in copies[:60]]
    assert min(scores) >= DEFAULT_THRESHOLD
    edited = [d for d in docs
              if d.family == "edit" and devcorpus_sets.nominal_rate(d) <= 0.02 and d.group in originals]
    scores = [similarity(sketch_of, originals[c.group], c) for c in edited[:40]]
    assert np.mean(np.array(scores) >= DEFAULT_THRESHOLD) >= 0.95
    site = next(d.site for d in docs if d.family == "shared_boilerplate")
    negatives = list(itertools.combinations([d for d in docs if d.family == "shared_boilerplate" and d.site == site], 2))
    by_topic: dict[str, list] = {}
    for d in docs:
        if d.family == "original" and d.topic:
            by_topic.setdefault(d.topic, []).append(d)
    negatives += [pair for members in by_topic.values() for pair in itertools.combinations(members, 2)][:100]
    assert max(similarity(sketch_of, a, b) for a, b in negatives) < DEFAULT_THRESHOLD


def test_matrix_greedy_grouping_is_the_services_rule(docs, sketch_of):
    indexes = devcorpus_sets.draw_result_sets(docs, 1, seed=3)[0]
    sketches = [sketch_of(docs[i]) for i in indexes]
    k, metric = DEFAULT_CONFIG.k, DEFAULT_METRIC
    matrix = pairwise(sketches, lambda a, b: reference.similarity(a, b, k, metric))
    groups = greedy_groups(matrix, np.array([DEFAULT_THRESHOLD]))[0]
    assert groups.tolist() == reference.dedup(sketches, k, DEFAULT_THRESHOLD, metric).group
