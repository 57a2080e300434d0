"""benchmarks/threshold_cut.py's report: each position's F1 per family and its mean over the families."""
from __future__ import annotations

from benchmarks import threshold_cut


def row(valleys: list[float], f1s: list[float]) -> dict:
    cuts = {position: {"threshold": valleys[index(len(valleys))] if valleys else 0.0625, "f1": f1}
            for (position, index), f1 in zip(threshold_cut.POSITIONS, f1s)}
    return {"valleys": valleys, "served": 0.5, "cuts": cuts, "best": {"threshold": 0.6, "f1": 1.0}}


def test_the_report_gives_each_positions_f1_and_its_mean():
    results = {"test": {"shared": row([0.4375, 0.4625, 0.4875, 0.5125], [0.9, 0.95, 1.0, 0.99]),
                        "short": row([], [0.93, 0.93, 0.93, 0.93])}}
    lines = threshold_cut.report_lines(results)
    assert lines[0] == "**test split**"
    assert ("| shared | 0.4375–0.5125 | 0.900 at 0.4375 | 0.950 at 0.4875 | 1.000 at 0.5125 | 0.990 at 0.5125 "
            "| 1.000 at 0.60 |") in lines
    assert "| short | — | 0.930 at 0.0625 | 0.930 at 0.0625 | 0.930 at 0.0625 | 0.930 at 0.0625 | 1.000 at 0.60 |" in lines
    assert "| **mean** |  | 0.9150 | 0.9400 | 0.9650 | 0.9600 |  |" in lines
