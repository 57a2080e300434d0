"""benchmarks/answer_draws.py's report: per family, each column's mean [min–max] over the draws and how many draws
reach the peer after the last checkpoint."""
from __future__ import annotations

import pytest

from benchmarks import answer_draws, heldout


def drawn(seed: int, default: float, after: tuple[float, ...], best: float, peer: float, threshold: float = 0.5,
          checkpoints: tuple[int, ...] = (30, 60)) -> dict:
    return {"seed": seed, "threshold": threshold, "neardup default": default,
            **{f"neardup {count} answers": f1 for count, f1 in zip(checkpoints, after)}, "neardup sweep": best,
            "peer": "MinHash", "peer f1": peer, "trained": {}}


def test_the_report_gives_each_columns_spread_and_the_draws_that_reach_the_peer():
    results = {"split": "tune", "seeds": [5, 6, 7], "answer_checkpoints": [30, 60], "families": {
        "template": [drawn(5, 0.6, (0.7, 0.8), 0.9, 0.8), drawn(6, 0.7, (0.8, 0.9), 0.95, 0.85, 0.0625),
                     drawn(7, 0.8, (0.6, 0.7), 0.85, 0.75)]}}
    lines = answer_draws.markdown(results, "python -m benchmarks.answer_draws", 12.0).splitlines()
    assert lines[0].startswith("Measured with `python -m benchmarks.answer_draws` (tune split, seeds 5 6 7, 12 s")
    row = next(line for line in lines if line.startswith("| template"))
    assert row == ("| template | 3 | 0.0625–0.5 | 0.700 [0.600–0.800] | 0.700 [0.600–0.800] "
                   "| 0.800 [0.700–0.900] | 0.900 [0.850–0.950] | 0.800 [0.750–0.850] | 2 of 3 |")


def test_more_checkpoints_add_their_columns_and_the_peer_is_counted_after_the_last():
    checkpoints = (30, 60, 90)
    results = {"split": "test", "seeds": [5, 6], "answer_checkpoints": list(checkpoints), "families": {
        "derived": [drawn(5, 0.6, (0.7, 0.8, 0.9), 0.95, 0.85, checkpoints=checkpoints),
                    drawn(6, 0.6, (0.7, 0.9, 0.8), 0.95, 0.85, checkpoints=checkpoints)]}}
    lines = answer_draws.markdown(results, "python -m benchmarks.answer_draws --answers 30 60 90", 1.0).splitlines()
    head = next(line for line in lines if line.startswith("| family"))
    assert "| after 30 answers | after 60 answers | after 90 answers |" in head
    assert head.endswith("| draws at or above the peer after 90 |")
    row = next(line for line in lines if line.startswith("| derived"))
    assert row.endswith("| 0.850 [0.800–0.900] | 0.950 [0.950–0.950] | 0.850 [0.850–0.850] | 1 of 2 |")
    assert answer_draws.answers_option([30, 60]) == ""
    assert answer_draws.answers_option([30, 60, 90]) == " --answers 30 60 90"


@pytest.mark.parametrize("main", [answer_draws.main, lambda argv: heldout.main(["licences", *argv])])
def test_a_count_of_answers_below_one_is_refused_before_any_draw(main, capsys):
    with pytest.raises(SystemExit) as refused:
        main(["--answers", "30", "0"])
    assert refused.value.code == 2 and "--answers: each COUNT is a number of answers, at least 1" in \
        capsys.readouterr().err
