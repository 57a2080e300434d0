"""The contracts of the issue-25 development families (benchmarks/lib/families.py): splits from different texts,
the popular stories' copy counts, rewrite rates, unlabelled languages, and determinism by seed."""
from __future__ import annotations

import pytest

from benchmarks.lib import families, family_sets, sources
from benchmarks.lib.rewrites import changed_share


@pytest.fixture
def few_short_sources(monkeypatch):
    """A short family of 60 sources, enough for its contracts and quick to build."""
    monkeypatch.setattr(families, "SHORT_SOURCES", 60)


def test_splits_take_disjoint_source_texts():
    tune, test = families.articles("tune"), families.articles("test")
    assert tune and test
    assert not {s.key for s in tune} & {s.key for s in test}
    assert not {s.text for s in tune} & {s.text for s in test}
    licences = list(sources.licenses())
    in_tune = {s.key for s in licences if families.in_split(s, "tune")}
    in_test = {s.key for s in licences if families.in_split(s, "test")}
    assert in_tune and in_test and not in_tune & in_test
    # licences sharing passages stay on one side
    for members in ({"GPL-2", "LGPL-2.1"}, {"GPL-3", "LGPL-3"}, {"MPL-1.1", "MPL-2.0"}):
        assert members <= in_tune or members <= in_test


def test_built_splits_share_no_original(few_short_sources):
    originals = {split: {d.text for d in families.build("short", split).docs if d.family == "original"}
                 for split in ("tune", "test")}
    assert originals["tune"] and not originals["tune"] & originals["test"]


def test_popular_stories_have_the_asked_copies():
    corpus = families.build("popular", "test")
    sizes = {}
    for doc in corpus.docs:
        sizes.setdefault(doc.group, []).append(doc.family)
    assert {300, 500} <= set(families.POPULAR_COPIES)
    for copies in families.POPULAR_COPIES:
        kinds = sizes[f"test-popular{copies}"]
        assert kinds.count("original") == 1 and kinds.count("copy") == copies
    others = [g for g in sizes if "popular" not in g]
    assert 1000 <= len(others) <= 2000
    assert any(len(sizes[g]) > 1 for g in others)  # ordinary duplication too
    # the copies-only result sets hold 100 copies of the story
    docs = corpus.docs
    for result_set in corpus.result_sets["copies 500"]:
        assert len(result_set) == family_sets.RESULT_SET_SIZE
    assert max(sum(docs[i].group == "test-popular500" for i in s) for s in corpus.result_sets["copies 500"]) == 100


def test_rewrites_change_a_fifth_to_a_half_of_the_words(few_short_sources):
    docs = families.build("short", "tune").docs
    originals = {d.group: d.text for d in docs if d.family == "original"}
    rewrites = [d for d in docs if d.family == "rewrite"]
    assert len(rewrites) >= 30
    shares = [changed_share(originals[d.group], d.text) for d in rewrites]
    assert all(0.2 <= share <= 0.5 for share in shares)
    assert min(shares) < 0.3 and max(shares) > 0.4  # spread over the range, not one rate
    assert all(100 <= len(text.split()) <= 300 for text in originals.values())


def test_multilingual_records_carry_no_language(monkeypatch):
    news = list(sources.news())[:40]
    languages = ("de", "fr")
    fake_pages = [sources.Source("manpages", f"{languages[n % 2]}/{n}.1.gz", languages[n % 2], s.text)
                  for n, s in enumerate(news)]
    monkeypatch.setattr(sources, "manpages", lambda languages, per_language: iter(fake_pages))
    monkeypatch.setattr(sources, "bgwiki", lambda: iter(()))
    corpus = families.build("multilingual", "test")
    records = list(corpus.records())
    assert len(records) == len(corpus.docs)
    assert all(set(record) == {"id", "text"} for record in records)
    assert {"de", "fr", "en"} <= {d.lang for d in corpus.docs}  # the labels stay with the evaluation
    assert all(set(r) == {"id", "text", "lang"} for r in families.build("popular", "tune").records())


def test_the_same_seed_builds_the_same_corpus(few_short_sources):
    first, again = families.build("short", "tune", seed=5), families.build("short", "tune", seed=5)
    assert [(d.id, d.text, d.group) for d in first.docs] == [(d.id, d.text, d.group) for d in again.docs]
    assert first.result_sets == again.result_sets
    other = families.build("short", "tune", seed=6)
    assert [d.text for d in other.docs] != [d.text for d in first.docs]
