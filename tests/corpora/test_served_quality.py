"""The served default against another revision (benchmarks/served_quality.py): a family's corpus indexed and served
by a build's own command line, scored from what its server answers."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from benchmarks import served_quality
from benchmarks.lib import ab, families
from benchmarks.lib.quality_counts import Counts, ResultSet, add_grouping
from neardup.core import kernel
from neardup.runtime.deduplicator import Deduplicator
from neardup.runtime.served_store import ServedStore
from neardup.store import open_store

THIS = [sys.executable, "-m", "neardup.cli"]


def test_a_served_family_is_scored_from_what_the_server_answers(tmp_path, monkeypatch):
    monkeypatch.setattr(families, "SHORT_SOURCES", 60)
    corpus = families.build("short", "tune")
    source = corpus.write_jsonl(tmp_path / "short.jsonl")
    figures = served_quality.served(THIS, source, corpus, tmp_path / "store")
    # the same store grouped in process, at its defaults, counts the same pairs
    counts = Counts.empty(1)
    with open_store(tmp_path / "store", readonly=True) as store:
        deduplicator = Deduplicator(ServedStore(store))
        defaults = deduplicator.served.defaults
        for indexes in corpus.result_sets["overall"]:
            ids = [corpus.docs[i].id for i in indexes]
            packed = deduplicator.dedup_ids(ids, defaults).packed_grouping
            add_grouping(counts, ResultSet.label(corpus.docs, indexes), np.array([kernel.unpack(packed).group]))
        assert (figures["threshold"], figures["metric"]) == (round(store.threshold()["threshold"], 6), "containment")
    assert figures["result_sets"] == len(corpus.result_sets["overall"]) > 0
    assert figures["f1"] == pytest.approx(counts.f1()[0]) and figures["recall"] == pytest.approx(counts.recall()[0])
    assert 0 < figures["f1"] < 1  # some rewrites found, not all: the equalities above compare something
    assert figures["precision"] == pytest.approx(counts.precision()[0])


def test_a_failed_index_is_one_clear_error(tmp_path):
    corpus = families.Corpus("short", "tune", [], {"overall": []})
    source = tmp_path / "short.jsonl"
    source.write_text("not json\n")
    with pytest.raises(SystemExit, match="`neardup index` of short failed"):
        served_quality.served(THIS, source, corpus, tmp_path / "store")


def test_the_report_names_the_families_where_this_side_is_below():
    sides = [ab.Side("this checkout", "a" * 40, sys.executable), ab.Side("b8f4bea", "b" * 40, sys.executable)]

    def figures(f1):
        return {"f1": f1, "precision": 1.0, "recall": f1, "threshold": 0.52, "metric": "containment"}

    results = {"short": {"this checkout": figures(0.9), "b8f4bea": figures(0.2)},
               "template": {"this checkout": figures(0.7), "b8f4bea": figures(0.75)}}
    text = "\n".join(served_quality.report_lines(results, sides, "test", "python -m benchmarks.served_quality"))
    assert "| short | 0.900 (1.00 / 0.90) at containment 0.52 | 0.200 (1.00 / 0.20) at containment 0.52 | +0.700 |" \
        in text
    assert "| template |" in text and "-0.050 |" in text
    assert text.endswith("A is below B on: template.")
    results["template"]["this checkout"] = figures(0.75)
    assert served_quality.report_lines(results, sides, "test", "")[-1] == "A is no worse than B on any family."


def test_a_revision_is_required():
    with pytest.raises(SystemExit):
        served_quality.parse_arguments([])
    assert served_quality.parse_arguments(["--against", "b8f4bea"]).split == "test"
