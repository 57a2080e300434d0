"""benchmarks/look_alikes.py: which pairs lie between a draw's learned cut and its best one, and the report of them."""
from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks import look_alikes
from benchmarks.lib.devcorpus import Doc


def doc(group: str, site: str = "") -> Doc:
    return Doc(id=group, text="", lang="en", group=group, family="original", site=site)


def test_a_pair_is_copies_by_its_group_and_look_alikes_by_a_shared_template():
    assert look_alikes.pair_kind(doc("g1", "charsets"), doc("g1", "charsets")) == look_alikes.COPIES
    assert look_alikes.pair_kind(doc("g1", "charsets"), doc("g2", "charsets")) == look_alikes.LOOK_ALIKES
    assert look_alikes.pair_kind(doc("g1", "charsets"), doc("g2", "sql")) == ""
    assert look_alikes.pair_kind(doc("g1"), doc("g2")) == ""  # no template: unrelated texts, not look-alikes


def test_the_band_counts_each_kind_from_the_lower_cut_up_to_the_higher_one():
    pairs = [(0.60, "copies"), (0.61, "copies"), (0.70, "look-alikes"), (0.79, "look-alikes"), (0.80, "copies"),
             (0.75, "")]
    assert look_alikes.in_band(pairs, 0.61, 0.80) == {"copies": 1, "look-alikes": 2}


def row(seed, f1: float, best: float) -> dict:
    return {"seed": seed, "metric": "containment", "threshold": 0.6125, "f1": f1,
            "best": {"threshold": 0.8, "f1": best}, "sample": {"copies": 6, "look-alikes": 34},
            "result sets": {"copies": 5, "look-alikes": 30}}


def test_the_report_marks_the_draws_whose_default_misses_its_best_by_more_than_the_margin():
    lines = look_alikes.report_lines({"test": {"template": [row(None, 0.834, 0.962), row(5, 0.90, 0.915)]}})
    assert lines[0] == "**template, test split**: the default more than 0.02 below the best threshold in 1 draws of 2"
    assert "| own | containment 0.6125 | 0.834 | 0.962 at 0.8 | **yes** | 6 / 34 | 5 / 30 |" in lines
    assert "| 5 | containment 0.6125 | 0.900 | 0.915 at 0.8 | no | 6 / 34 | 5 / 30 |" in lines


def test_a_template_draw_is_measured_on_its_own_store():
    """The test split's own template draw (a real store, its sample searched): its default misses its best threshold
    (issue 38's figure), and the pairs between the two cuts are copies and look-alikes both, among the sample's
    candidates as among the result sets' pairs."""
    with tempfile.TemporaryDirectory() as work:
        row = look_alikes.draw("template", "test", None, Path(work))
    assert row["metric"] == "containment" and row["threshold"] < row["best"]["threshold"]
    assert look_alikes.missed(row)
    assert row["sample"]["copies"] > 0 and row["sample"]["look-alikes"] > row["sample"]["copies"]
    assert row["result sets"]["look-alikes"] > 0
