"""benchmarks/start_time.py, the A/B of neardup's start-up: the whole tool on one round of this environment's
neardup, checked for what its report holds, never for how fast anything was."""
from __future__ import annotations

import json
import math

import pytest

from benchmarks import start_time

pytestmark = pytest.mark.slow  # servers and `neardup index` started as processes


def test_one_round_reports_each_figure_as_a_ratio_to_the_interpreter_start(tmp_path):
    results = start_time.main(["--rounds", "1", "--out", str(tmp_path)])
    assert list(results["sides"]) == ["a"] and results["sides"]["a"]["label"] == "this checkout"
    (row,) = results["rounds"]
    # a server that answers, and an index run that sketched, each take longer than an interpreter that does nothing
    assert set(row["a"]) == {*start_time.FIGURES, "interpreter_seconds"}
    assert all(math.isfinite(row["a"][figure]) and row["a"][figure] > 1 for figure in start_time.FIGURES)
    assert set(results["summary"]["sides"]["a"]) == set(start_time.FIGURES) and "difference" not in results["summary"]
    written = json.loads((tmp_path / "start_time.json").read_text())
    assert written["rounds"] == results["rounds"]
    report = (tmp_path / "start_time.md").read_text()
    assert all(what in report for what in start_time.FIGURES.values()) and "B − A" not in report


def test_rounds_below_one_are_refused(capsys):
    with pytest.raises(SystemExit) as refused:
        start_time.parse_arguments(["--rounds", "0"])
    assert refused.value.code == 2 and "--rounds must be at least 1" in capsys.readouterr().err
