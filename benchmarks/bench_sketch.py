"""Sketching throughput, documents per second on one core: neardup's Sketcher against datasketch MinHash.

Same texts, same process, same run (the machine may be noisy, so the ratio is the figure to compare): the
development corpus (lib/devcorpus.py, fixed seed; English news and job ads from Python's own prose, plus Dutch,
Russian and German). The sketchers take turns round by round and each keeps its best round (lib/sketching.py).
MinHash is the usual baseline: 128 permutations over lowercased word 5-grams (quality_methods.word_ngrams),
`update_batch`, the tokenizing counted as neardup's is. Goal (issue 2): neardup >= 2x MinHash.

    python -m benchmarks.bench_sketch [--quick] [--docs N] [--profile]

writes benchmarks/out/sketch.json and prints a markdown table; --profile adds cProfile's top functions for each
neardup unit.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats

from benchmarks.lib import devcorpus
from benchmarks.lib.paths import OUT as OUT_DIR, ROOT
from benchmarks.lib.report import table
from benchmarks.lib.sketching import sketchers, throughput
from neardup.core.sketcher import CRC32_IS_COMPILED

OUT = OUT_DIR / "sketch.json"
GOAL_RATIO = 2.0


def profile(function, docs: list, top: int = 12) -> str:
    profiler = cProfile.Profile()
    profiler.enable()
    for doc in docs:
        function(doc)
    profiler.disable()
    report = io.StringIO()
    pstats.Stats(profiler, stream=report).sort_stats("tottime").print_stats(top)
    return report.getvalue()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="300 documents, 2 rounds")
    parser.add_argument("--docs", type=int, help="documents of the development corpus (default 3000)")
    parser.add_argument("--rounds", type=int, help="turns per sketcher; the best counts (default 5)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions per neardup unit")
    args = parser.parse_args(argv)
    size = args.docs or (300 if args.quick else devcorpus.DEFAULT_SIZE)
    rounds = args.rounds or (2 if args.quick else 5)
    docs = devcorpus.generate(devcorpus.DEFAULT_SPLIT, size)
    functions = sketchers()
    rates = throughput(functions, docs, rounds)
    baseline = rates[next(name for name in rates if name.startswith("datasketch"))]
    megabytes = sum(len(doc.text.encode("utf-8")) for doc in docs) / 1e6
    rows = [{"sketcher": name, "docs_per_s": rate, "mb_per_s": rate * megabytes / len(docs),
             "ratio_to_minhash": rate / baseline} for name, rate in rates.items()]
    report = {"command": "python -m benchmarks.bench_sketch" + (" --quick" if args.quick else ""),
              "documents": len(docs), "megabytes": megabytes, "split": devcorpus.DEFAULT_SPLIT, "rounds": rounds,
              "crc32_compiled": CRC32_IS_COMPILED, "python": platform.python_version(),
              "machine": platform.machine(), "goal_ratio": GOAL_RATIO, "rows": rows}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{len(docs)} dev-corpus documents ({megabytes:.1f} MB, {devcorpus.DEFAULT_SPLIT} split), one core, best of "
          f"{rounds} rounds; goal: neardup >= {GOAL_RATIO:.0f}x MinHash\n")
    print("\n".join(table(["sketcher", "docs/s", "MB/s", "x MinHash"],
                          [[row["sketcher"], f"{row['docs_per_s']:,.0f}", f"{row['mb_per_s']:.2f}",
                            f"{row['ratio_to_minhash']:.2f}"] for row in rows])))
    if args.profile:
        for name, function in functions.items():
            if name.startswith("neardup"):
                print(f"\n### cProfile: {name}\n\n```\n{profile(function, docs)}```")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
