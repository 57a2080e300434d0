"""Sketching throughput, documents per second on one core: neardup's Sketcher against its own pure-Python reference
path (the code before sketching was compiled: the regex tokenizer, NLTK's stemmers, shingles joined in Python),
rensa's compiled MinHash (on the plain split, and on word 5-grams) and datasketch MinHash.

Same texts, same process, same run (the machine may be noisy, so the ratios are the figures to compare): the
development corpus (lib/devcorpus.py, fixed seed; English news and job ads from Python's own prose, plus Dutch,
Russian and German). The sketchers take turns round by round and each keeps its best round (lib/sketching.py),
every round a cold pass (the stem memos emptied). Each neardup unit is measured twice: as it sketches
(Sketcher) and by its reference path (Sketcher(reference=True), the same sketches: tests/core/
test_sketch_compiled.py). rensa is the compiled anchor: RMinHash, 128 permutations, over the text's plain
whitespace split (no n-grams, no lowercasing), and over lowercased word 5-grams (the shingles neardup's word:5
hashes; the issue's goal: neardup word:5 >= rensa on them), the tokenizing counted as neardup's is. MinHash is the usual baseline: 128 permutations over lowercased
word 5-grams (quality_methods.word_ngrams), `update_batch`, the tokenizing counted as neardup's is. Goal (issue 2):
neardup >= 2x MinHash.

    python -m benchmarks.bench_sketch [--quick] [--docs N] [--profile]

writes benchmarks/out/sketch.json and prints markdown tables; --profile adds cProfile's top functions for each
neardup unit, compiled and reference.
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
from benchmarks.lib.quality_methods import word_ngrams
from benchmarks.lib.report import table
from benchmarks.lib.sketching import MINHASH_PERMUTATIONS, sketchers, throughput
from neardup.core.nltk_text import forget_memos
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import CRC32_IS_COMPILED, Sketcher

OUT = OUT_DIR / "sketch.json"
GOAL_RATIO = 2.0
REFERENCE = ", reference"
RENSA = f"rensa RMinHash {MINHASH_PERMUTATIONS} perms, plain split"
RENSA_NGRAMS = f"rensa RMinHash {MINHASH_PERMUTATIONS} perms, word 5-grams"


def all_sketchers() -> dict:
    """lib/sketching.py's sketchers, each neardup unit's reference path after them, and rensa."""
    from rensa import RMinHash

    functions = sketchers()
    for name in [name for name in functions if name.startswith("neardup ")]:
        sketcher = Sketcher(SketchConfig(unit=name.removeprefix("neardup ")), reference=True)
        functions[name + REFERENCE] = lambda doc, sketcher=sketcher: sketcher.sketch(doc.text, doc.lang)

    def rensa(doc) -> None:
        minhash = RMinHash(num_perm=MINHASH_PERMUTATIONS, seed=1)
        minhash.update(doc.text.split())
        minhash.digest()

    def rensa_ngrams(doc) -> None:
        minhash = RMinHash(num_perm=MINHASH_PERMUTATIONS, seed=1)
        minhash.update(word_ngrams(doc.text))
        minhash.digest()

    functions[RENSA] = rensa
    functions[RENSA_NGRAMS] = rensa_ngrams
    return functions


def profile(function, docs: list, top: int = 12) -> str:
    forget_memos()  # cold, as every timed round
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
    functions = all_sketchers()
    rates = throughput(functions, docs, rounds)
    baseline = rates[next(name for name in rates if name.startswith("datasketch"))]
    anchor, ngrams_anchor = rates[RENSA], rates[RENSA_NGRAMS]
    megabytes = sum(len(doc.text.encode("utf-8")) for doc in docs) / 1e6
    rows = [{"sketcher": name, "docs_per_s": rate, "mb_per_s": rate * megabytes / len(docs),
             "ratio_to_minhash": rate / baseline, "ratio_to_rensa": rate / anchor,
             "ratio_to_rensa_5grams": rate / ngrams_anchor} for name, rate in rates.items()]
    units = [{"unit": name.removeprefix("neardup "), "docs_per_s": rate, "reference_docs_per_s": rates[name + REFERENCE],
              "speedup": rate / rates[name + REFERENCE], "ratio_to_rensa": rate / anchor,
              "ratio_to_rensa_5grams": rate / ngrams_anchor,
              "reference_ratio_to_rensa": rates[name + REFERENCE] / anchor}
             for name, rate in rates.items() if name.startswith("neardup ") and not name.endswith(REFERENCE)]
    report = {"command": "python -m benchmarks.bench_sketch" + (" --quick" if args.quick else ""),
              "documents": len(docs), "megabytes": megabytes, "split": devcorpus.DEFAULT_SPLIT, "rounds": rounds,
              "crc32_compiled": CRC32_IS_COMPILED, "python": platform.python_version(),
              "machine": platform.machine(), "goal_ratio": GOAL_RATIO, "rows": rows, "units": units}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n")

    print(f"{len(docs)} dev-corpus documents ({megabytes:.1f} MB, {devcorpus.DEFAULT_SPLIT} split), one core, best of "
          f"{rounds} rounds, each a cold pass; goal: neardup >= {GOAL_RATIO:.0f}x MinHash\n")
    print("\n".join(table(["sketcher", "docs/s", "MB/s", "x MinHash", "x rensa", "x rensa 5-grams"],
                          [[row["sketcher"], f"{row['docs_per_s']:,.0f}", f"{row['mb_per_s']:.2f}",
                            f"{row['ratio_to_minhash']:.2f}", f"{row['ratio_to_rensa']:.2f}",
                            f"{row['ratio_to_rensa_5grams']:.2f}"] for row in rows])))
    print()
    print("\n".join(table(["unit", "reference docs/s", "docs/s", "speedup", "reference x rensa", "x rensa"],
                          [[row["unit"], f"{row['reference_docs_per_s']:,.0f}", f"{row['docs_per_s']:,.0f}",
                            f"{row['speedup']:.2f}", f"{row['reference_ratio_to_rensa']:.2f}",
                            f"{row['ratio_to_rensa']:.2f}"] for row in units])))
    if args.profile:
        for name, function in functions.items():
            if name.startswith("neardup"):
                print(f"\n### cProfile: {name}\n\n```\n{profile(function, docs)}```")
    print(f"\nwrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
