"""How long neardup's processes take to start, and whether a change made them slower (A/B).

    python -m benchmarks.start_time [--against REV] [--at REV] [--rounds N] [--out benchmarks/out]

A server is started at every deploy, and a worker again after every crash (its supervisor restarts it: until it
listens, the other workers carry its calls); `neardup index` starts once per batch a pipeline sends. Sides as in
benchmarks.request_cost (lib/ab.py: side A this environment's neardup, side B a revision installed into an
environment of its own that shares this one's third-party packages). Each round measures one side then the other
(the order alternates):

  * serve: `neardup serve` of a store of the shipped sample's first INDEX_ARTICLES articles (sentence shingles, as
    the card's recipe makes them; a server loads NLTK's sentence splitter before it listens), made once by side B's
    `neardup index` (older code reads what older code wrote), until its health Check answers SERVING;
  * index: `neardup index` of the sample's first INDEX_ARTICLES articles into a new store with sentence shingles,
    until it exits;

each a ratio to the same side's interpreter start in the same round (`python -c pass`, the median of three), so
that the machine's load in that moment divides out. The report gives each figure's median and spread over the
rounds per side and the paired difference B - A. Writes start_time.json and start_time.md.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.lib import ab, measure, sample
from benchmarks.lib.paths import OUT
from benchmarks.lib.report import save, table
from tests.server_process import Server, write_jsonl

#: Articles `neardup index` sketches per run: enough that it sketches, few enough that its start shows.
INDEX_ARTICLES = 300
#: The store options both figures use: the card's sentence shingles, which sketch through NLTK.
STORE_OPTIONS = ("--unit", "sentence")
FIGURES = {
    "serve": "`neardup serve` until SERVING / interpreter start",
    "index": f"`neardup index` of {INDEX_ARTICLES} articles / interpreter start",
}


def _seconds(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def measure_side(side: ab.Side, store: Path, corpus: Path, work: Path) -> dict[str, float]:
    """One round of one side: each figure's seconds over the interpreter's own start."""
    baseline = statistics.median(_seconds([side.python, "-c", "pass"]) for _ in range(3))
    started = time.perf_counter()
    server = Server(store, command=side.neardup, log_dir=work)
    try:
        server.wait_ready(120)
        serve = time.perf_counter() - started
    finally:
        server.stop()
    with tempfile.TemporaryDirectory(dir=work) as fresh:
        index = _seconds([*side.neardup, "index", str(corpus), "--store", str(Path(fresh) / "store"), *STORE_OPTIONS])
    return {"serve": serve / baseline, "index": index / baseline, "interpreter_seconds": baseline}


def run(sides: dict[str, ab.Side], rounds: int, work: Path, say) -> dict:
    head = write_jsonl(work / "head.jsonl", sample.build()[:INDEX_ARTICLES])
    store = work / "store"
    builder = sides.get("b", sides["a"])  # the older code reads what it wrote: side B's when there is one
    subprocess.run([*builder.neardup, "index", str(head), "--store", str(store), *STORE_OPTIONS], check=True,
                   capture_output=True)
    measured = []
    for number in range(rounds):
        row = {}
        for name in ab.order(number, list(sides)):
            row[name] = measure_side(sides[name], store, head, work)
        measured.append({name: row[name] for name in sides})
        say(f"round {number + 1}/{rounds}: " + ", ".join(
            f"{name.upper()} serve {row[name]['serve']:.1f}, index {row[name]['index']:.1f}" for name in sides))
    return {"sides": {name: {"label": side.label, "commit": side.commit, "dirty": side.dirty}
                      for name, side in sides.items()},
            "rounds": measured,
            "summary": ab.summarize([{name: {figure: row[name][figure] for figure in FIGURES} for name in sides}
                                     for row in measured])}


def markdown(results: dict) -> str:
    sides = results["sides"]
    summary = results["summary"]
    header = ["figure", *(name.upper() for name in sides)]
    if "difference" in summary:
        header += ["B − A", "within the rounds' spread", "A / B (medians)"]
    rows = []
    for figure, what in FIGURES.items():
        row = [what]
        for name in sides:
            cell = summary["sides"][name][figure]
            row.append(f"{cell['median']:.2f} [{cell['min']:.2f}–{cell['max']:.2f}]")
        if "difference" in summary:
            cell = summary["difference"][figure]
            row += [f"{cell['median']:+.2f} [{cell['min']:+.2f}–{cell['max']:+.2f}]",
                    "yes" if cell["within_spread"] else "no",
                    f"{summary['sides']['a'][figure]['median'] / summary['sides']['b'][figure]['median']:.2f}"]
        rows.append(row)
    interpreter = {name: statistics.median(row[name]["interpreter_seconds"] for row in results["rounds"])
                   for name in sides}
    described = "; ".join(f"{name.upper()}: {side['label']} ({side['commit'][:12]}"
                          f"{' + uncommitted changes' if side['dirty'] else ''})" for name, side in sides.items())
    return "\n".join([
        f"Measured with `{results['command']}` ({results['seconds']:.0f} s, {results['machine']['nproc']} cores, "
        f"Python {results['machine']['python']}); {described}.",
        "",
        "Each figure a ratio to the same side's interpreter start in the same round (median "
        + ", ".join(f"{name.upper()} {seconds * 1000:.0f} ms" for name, seconds in interpreter.items())
        + f"), median [min–max] over {len(results['rounds'])} rounds; the order of the sides alternates.",
        "",
        *table(header, rows),
        "",
    ])


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ab.add_side_arguments(parser)
    parser.add_argument("--rounds", type=int, default=7, help="rounds (default 7)")
    parser.add_argument("--out", type=Path, default=OUT, help="where the results are written")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args


def main(argv: list[str] | None = None) -> dict:
    args = parse_arguments(argv)

    def say(line: str) -> None:
        print(f"start_time: {line}", file=sys.stderr, flush=True)

    started = time.perf_counter()
    try:
        sides = ab.sides(args.at, args.against, say)
        with tempfile.TemporaryDirectory(prefix="start-time-") as work:
            results = {"command": " ".join(["python -m benchmarks.start_time",
                                            *(argv if argv is not None else sys.argv[1:])]),
                       "machine": measure.machine(), **run(sides, args.rounds, Path(work), say)}
    except ab.RevisionError as error:
        raise SystemExit(f"start_time: {error}") from None
    results["seconds"] = time.perf_counter() - started
    text = markdown(results)
    save(args.out, "start_time", results, text)
    print(text)
    print(f"wrote {args.out / 'start_time'}.json, start_time.md ({results['seconds']:.0f} s)")
    return results


if __name__ == "__main__":
    main()
