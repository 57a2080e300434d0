"""How much of a method's F1 at its best threshold is its hash function's luck on a set of texts.

    python -m benchmarks.hash_luck [--family template derived] [--split test tune] [--licences 5 8 9] [--seeds N]
                                   [--out benchmarks/out]

Every draw of a family (and of the held-out licences, benchmarks/heldout.py) holds the same distinct texts, so a
hash function that happens to sample the few shingles telling two versions of a licence apart does so in every draw.
Per set: the MinHash peer's F1 at its best threshold under each hash seed 1 to N (datasketch's default seed 1, and
its rank among them), and its expected F1 over quality_methods.MINHASH_SEEDS at one threshold (what the other
reports show); beside it neardup's sketch at its best threshold under the CRC32 the product hashes with, and under
seeded bijections of it (each a hash function with the CRC32's collisions that orders the values otherwise, so the
sketch keeps other values), with the store's stop-list and without, per metric. An oracle over thresholds on both
sides. Writes hash_luck.json and .md.
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from benchmarks.lib import families, held_out
from benchmarks.lib.paths import OUT
from benchmarks.lib.quality_counts import ResultSet, evaluate
from benchmarks.lib.quality_methods import MINHASH_SEEDS, NeardupConfig, NeardupMethods, minhash_method
from benchmarks.lib.report import save, table
from neardup.core.vocabulary import BOTTOMK_METRICS

#: The seeds of the bijections of the CRC32 neardup's sketch is measured under, beside the CRC32 itself.
SALTS = tuple(range(1, 8))
_MASK = (1 << 32) - 1


def remix(value: int, salt: int) -> int:
    """A bijection of 32-bit values per salt: MurmurHash3's finalizer after a xor with the salt."""
    value = (value ^ (salt * 0x9E3779B9)) & _MASK
    value = (value * 0x85EBCA6B) & _MASK
    value ^= value >> 13
    value = (value * 0xC2B2AE35) & _MASK
    return value ^ (value >> 16)


class RemixedMethods(NeardupMethods):
    """neardup's sketches of base's shingles hashed by remix(CRC32, salt): the stop-list, learned on the remixed
    values, holds the same shingles; the bottom-K sample is another one."""

    def __init__(self, base: NeardupMethods, salt: int):
        super().__init__(base.docs)
        self.base, self.salt, self._remixed = base, salt, {}

    def hashes(self, unit: str, min_word_len: int) -> list[set[int]]:
        key = (unit, min_word_len)
        if key not in self._remixed:
            self._remixed[key] = [{remix(value, self.salt) for value in hashes}
                                  for hashes in self.base.hashes(unit, min_word_len)]
        return self._remixed[key]


def best_f1(counts) -> float:
    return float(counts["overall"].f1().max())


def measure(corpus: families.Corpus, seeds: int) -> dict:
    docs = corpus.docs
    sets = {"overall": [ResultSet.label(docs, indexes) for indexes in corpus.result_sets["overall"]]}
    per_seed = [best_f1(evaluate(minhash_method(docs, (seed,)), sets)) for seed in range(1, seeds + 1)]
    expected = best_f1(evaluate(minhash_method(docs), sets))
    base = NeardupMethods(docs)
    neardup: dict[str, list[float]] = {}
    for methods in (base, *(RemixedMethods(base, salt) for salt in SALTS)):
        for metric in BOTTOMK_METRICS:
            for stoplist in (True, False):
                label = f"{metric}, {'store' if stoplist else 'no'} stop-list"
                neardup.setdefault(label, []).append(
                    best_f1(evaluate(methods.method(NeardupConfig(metric=metric, stoplist=stoplist)), sets)))
    return {"documents": len(docs), "minhash": {"seeds": per_seed, "expected": expected},
            "neardup": {label: {"crc32": values[0], "remixed": values[1:]} for label, values in neardup.items()}}


def spread(values: list[float]) -> str:
    return f"{np.mean(values):.3f} [{min(values):.3f}–{max(values):.3f}]"


def markdown(output: dict) -> str:
    lines = [f"Measured with `{output['command']}` ({output['seconds']:.0f} s).", "",
             "F1 at the best threshold (an oracle). MinHash: datasketch, 128 permutations over word 5-grams; neardup: "
             f"its sketch of the store's configuration, under the CRC32 and under {len(SALTS)} seeded bijections of it "
             "(remixed: mean [min–max]), at its best metric.", ""]
    rows = []
    for name, result in output["sets"].items():
        minhash = result["minhash"]
        seeds = minhash["seeds"]
        rank = 1 + sum(f1 > seeds[0] for f1 in seeds)
        row = [name, f"{seeds[0]:.3f} ({rank} of {len(seeds)})", spread(seeds), f"{minhash['expected']:.3f}"]
        for stoplist in ("store", "no"):
            label = max((label for label in result["neardup"] if label.endswith(f"{stoplist} stop-list")),
                        key=lambda label: result["neardup"][label]["crc32"])
            figures = result["neardup"][label]
            row += [f"{figures['crc32']:.3f} ({label.split(',')[0]})", spread(figures["remixed"])]
        rows.append(row)
    seeds = len(next(iter(output["sets"].values()))["minhash"]["seeds"])
    lines += table(["set", "MinHash seed 1 (its rank)", f"MinHash per seed (1–{seeds})",
                    f"MinHash expected over seeds 1–{len(MINHASH_SEEDS)}, one threshold",
                    "neardup CRC32, store's stop-list", "same, remixed",
                    "neardup CRC32, no stop-list", "same, remixed"], rows)
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", nargs="+", default=["template", "derived"], choices=families.FAMILIES)
    parser.add_argument("--split", nargs="+", default=["test", "tune"], choices=["test", "tune"])
    parser.add_argument("--licences", type=int, nargs="*", default=[5, 8, 9], metavar="SEED",
                        help="held-out licence draws (benchmarks.heldout licences) to measure too")
    parser.add_argument("--seeds", type=int, default=len(MINHASH_SEEDS), metavar="N",
                        help="MinHash's F1 under hash seeds 1 to N, and seed 1's rank among them (default: the "
                             "seeds the reports score it over)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    corpora = {f"{family} {split}": (lambda family=family, split=split: families.build(family, split))
               for split in args.split for family in args.family}
    corpora.update({f"held-out licences, seed {seed}": (lambda seed=seed: held_out.licences(seed))
                    for seed in args.licences})
    results = {}
    for name, build in corpora.items():
        results[name] = measure(build(), args.seeds)
        print(f"  {name}: MinHash seed 1 {results[name]['minhash']['seeds'][0]:.3f}, expected "
              f"{results[name]['minhash']['expected']:.3f}", flush=True)
    command = ("python -m benchmarks.hash_luck --family " + " ".join(args.family) + " --split " + " ".join(args.split)
               + " --licences " + " ".join(map(str, args.licences)) + f" --seeds {args.seeds}")
    output = {"command": command, "sets": results, "seconds": round(time.perf_counter() - started, 1)}
    text = markdown(output)
    save(args.out, "hash_luck", output, text)
    print(text + f"\nwrote {args.out / 'hash_luck'}.json, .md")
    return output


if __name__ == "__main__":
    main()
