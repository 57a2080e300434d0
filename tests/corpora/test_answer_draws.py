"""benchmarks/answer_draws.py's report: per family, each column's mean [min–max] over the draws and how many draws
reach the peer after the last checkpoint."""
from __future__ import annotations

from benchmarks import answer_draws


def drawn(seed: int, default: float, after: tuple[float, float], best: float, peer: float,
          threshold: float = 0.5) -> dict:
    return {"seed": seed, "threshold": threshold, "neardup default": default, "neardup 30 answers": after[0],
            "neardup 60 answers": after[1], "neardup sweep": best, "peer": "MinHash", "peer f1": peer, "trained": {}}


def test_the_report_gives_each_columns_spread_and_the_draws_that_reach_the_peer():
    results = {"split": "tune", "seeds": [5, 6, 7], "families": {
        "template": [drawn(5, 0.6, (0.7, 0.8), 0.9, 0.8), drawn(6, 0.7, (0.8, 0.9), 0.95, 0.85, 0.0625),
                     drawn(7, 0.8, (0.6, 0.7), 0.85, 0.75)]}}
    lines = answer_draws.markdown(results, "python -m benchmarks.answer_draws", 12.0).splitlines()
    assert lines[0].startswith("Measured with `python -m benchmarks.answer_draws` (tune split, seeds 5 6 7, 12 s")
    row = next(line for line in lines if line.startswith("| template"))
    assert row == ("| template | 3 | 0.0625–0.5 | 0.700 [0.600–0.800] | 0.700 [0.600–0.800] "
                   "| 0.800 [0.700–0.900] | 0.900 [0.850–0.950] | 0.800 [0.750–0.850] | 2 of 3 |")
