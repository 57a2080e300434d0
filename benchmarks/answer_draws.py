"""How much the families' figures after a user's answers owe to one draw: evaluate_families' run of each family
over several draws of one split (`--seed`: other copies and result sets from the same source texts), summed up per
family as mean [min–max] over the draws, beside the best peer at its best threshold in the same draws.

Which pairs `neardup label` proposes, and so what 30 or 60 answers teach, depends on which copies and result sets
a draw holds: one draw's figure after answers is an example. A change to labelling or training is judged here,
on the mean over draws and on how many draws reach the peer, not on one draw.

    python -m benchmarks.answer_draws [--split tune] [--family template derived short] [--seeds 5 6 7 8 9 10]
                                      [--answers 30 60]
writes benchmarks/out/answer_draws-SPLIT.json and .md (also printed).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from benchmarks.evaluate_families import ANSWER_CHECKPOINTS, best_peer, evaluate_family, scope_rows
from benchmarks.lib import devcorpus, families, report
from benchmarks.lib.quality_methods import MINHASH_SCORED
from benchmarks.lib.paths import OUT
from benchmarks.lib.sources import SourceMissing
from neardup.jobs.train import OTHER_STOPLISTS

#: The families whose truth is partly the user's call (docs/quality.md), where answers move the figures.
DEFAULT_FAMILIES = ("template", "derived", "short")
DEFAULT_SEEDS = (5, 6, 7, 8, 9, 10)


def columns(checkpoints: Sequence[int]) -> tuple[str, ...]:
    """A draw's figures by name: the learned default, after each checkpoint's answers, the best threshold."""
    return ("neardup default", *(f"neardup {count} answers" for count in checkpoints), "neardup sweep")


def draw(family: str, split: str, seed: int, checkpoints: Sequence[int] = ANSWER_CHECKPOINTS) -> dict:
    """One draw's F1 per column and the best peer's (name and F1 at its best threshold)."""
    return figures(families.build(family, split, seed), seed, checkpoints)


def figures(corpus: families.Corpus, seed: int, checkpoints: Sequence[int] = ANSWER_CHECKPOINTS) -> dict:
    """draw()'s figures of a corpus drawn with `seed`."""
    with tempfile.TemporaryDirectory(prefix="neardup-draws-") as workdir:
        result = evaluate_family(corpus, Path(workdir), {}, None, tuple(checkpoints))
    overall = scope_rows(result["counts"])["overall"]
    peer, peer_figures = best_peer(overall)
    answers = result["store"]["answers"]
    return {"seed": seed, "threshold": result["store"]["served"]["threshold"],
            **{column: overall[column]["f1"] for column in columns(checkpoints)},
            "peer": peer, "peer f1": peer_figures["f1"],
            "trained": {count: f"{trained['served']['metric']} {trained['served']['threshold']:g}"
                        + (" (refused)" if trained["refused"] else "")
                        + (f" (re-indexed {OTHER_STOPLISTS[trained['reindexed']].sketched})"
                           if trained.get("reindexed") else "")
                        for count, trained in answers.items()}}


def spread(values: list[float]) -> str:
    return f"{np.mean(values):.3f} [{min(values):.3f}–{max(values):.3f}]"


def header(checkpoints: Sequence[int]) -> list[str]:
    """The report's columns after the family: one row() of draws each."""
    return ["draws", "learned threshold", "default", *(f"after {count} answers" for count in checkpoints),
            "neardup best threshold", "best peer, best threshold",
            f"draws at or above the peer after {checkpoints[-1]}"]


def row(draws: list[dict], checkpoints: Sequence[int]) -> list[str]:
    """header()'s cells for the draws of one family: each column's mean [min–max] over them."""
    last = f"neardup {checkpoints[-1]} answers"
    thresholds = [d["threshold"] for d in draws]
    return [str(len(draws)), f"{min(thresholds):.4g}–{max(thresholds):.4g}",
            *(spread([d[column] for d in draws]) for column in columns(checkpoints)),
            spread([d["peer f1"] for d in draws]), f"{sum(d[last] >= d['peer f1'] for d in draws)} of {len(draws)}"]


def markdown(results: dict, command: str, seconds: float) -> str:
    checkpoints = results["answer_checkpoints"]
    rows = [[family, *row(draws, checkpoints)] for family, draws in results["families"].items()]
    return "\n".join([
        f"Measured with `{command}` ({results['split']} split, seeds {' '.join(map(str, results['seeds']))}, "
        f"{seconds:.0f} s, Python {sys.version.split()[0]}).", "",
        "F1 per family, mean [min–max] over the draws: neardup at the store's learned default (the thresholds "
        "learned: lowest–highest), after a user's answers (evaluate_families: `neardup label`'s proposals answered "
        "from the truth, `neardup train --corpus`), at its best threshold (an oracle), and the best peer of each draw "
        f"at its best threshold ({MINHASH_SCORED}).", "",
        *report.table(["family", *header(checkpoints)], rows), ""])


def add_answers_argument(parser: argparse.ArgumentParser) -> None:
    """--answers COUNT...: the checkpoints at which the simulated user trains (answer_checkpoints reads them)."""
    parser.add_argument("--answers", type=int, nargs="+", default=list(ANSWER_CHECKPOINTS), metavar="COUNT",
                        help="train on the simulated answers after each COUNT and serve again (default: "
                             f"{' '.join(map(str, ANSWER_CHECKPOINTS))})")


def answer_checkpoints(parser: argparse.ArgumentParser, counts: Sequence[int]) -> list[int]:
    """--answers as the checkpoints (ascending, distinct), or the parser's error: a count must be positive."""
    if min(counts) < 1:
        parser.error("--answers: each COUNT is a number of answers, at least 1")
    return sorted(set(counts))


def answers_option(checkpoints: Sequence[int]) -> str:
    """The --answers option of a report's command line, empty at the default checkpoints."""
    return "" if list(checkpoints) == list(ANSWER_CHECKPOINTS) else f" --answers {' '.join(map(str, checkpoints))}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="tune")
    parser.add_argument("--family", choices=families.FAMILIES, nargs="+", default=list(DEFAULT_FAMILIES))
    parser.add_argument("--seeds", type=int, nargs="+", default=list(DEFAULT_SEEDS))
    add_answers_argument(parser)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    checkpoints = answer_checkpoints(parser, args.answers)
    command = (f"python -m benchmarks.answer_draws --split {args.split} --family {' '.join(args.family)} "
               f"--seeds {' '.join(map(str, args.seeds))}" + answers_option(checkpoints))
    started = time.perf_counter()
    results: dict = {"command": command, "split": args.split, "seeds": args.seeds, "answer_checkpoints": checkpoints,
                     "families": {}}
    for family in args.family:
        for seed in args.seeds:
            try:
                drawn = draw(family, args.split, seed, checkpoints)
            except SourceMissing as missing:
                parser.exit(2, f"answer_draws: {missing}\n")
            results["families"].setdefault(family, []).append(drawn)
            print(f"  {family} seed {seed}: after answers "
                  f"{', '.join(f'{drawn[c]:.3f}' for c in columns(checkpoints)[1:-1])}, peer {drawn['peer f1']:.3f} "
                  f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    text = markdown(results, command, time.perf_counter() - started)
    report.save(args.out, f"answer_draws-{args.split}", results, text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
