"""Sketching throughput on documents: the sketchers compared (neardup's default unit and others, datasketch MinHash
over word 5-grams) and their best docs/s over rounds in turns, each round a cold pass as `neardup index` makes over
a new corpus."""
from __future__ import annotations

import time
from typing import Callable

from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.quality_methods import word_ngrams
from neardup.core.sketch_config import SketchConfig
from neardup.core.sketcher import Sketcher
from neardup.core.nltk_text import forget_memos

MINHASH_PERMUTATIONS = 128


def sketchers() -> dict[str, Callable[[Doc], object]]:
    """Name → function of one document; neardup's per-document language as `neardup index` passes it."""
    from datasketch import MinHash

    units = [SketchConfig().unit] + [unit for unit in ("sentence", "word:5") if unit != SketchConfig().unit]
    chosen = {}
    for unit in units:
        sketcher = Sketcher(SketchConfig(unit=unit))
        chosen[f"neardup {unit}"] = lambda doc, sketcher=sketcher: sketcher.sketch(doc.text, doc.lang)

    def minhash(doc: Doc) -> None:
        MinHash(num_perm=MINHASH_PERMUTATIONS, seed=1).update_batch(
            [shingle.encode("utf-8") for shingle in word_ngrams(doc.text)])

    chosen[f"datasketch MinHash {MINHASH_PERMUTATIONS} perms, word 5-grams"] = minhash
    return chosen


def throughput(functions: dict, docs: list, rounds: int) -> dict[str, float]:
    """Best docs/s of each function over `rounds` turns, the functions interleaved within every round."""
    for function in functions.values():
        function(docs[0])  # imports and numpy warm up outside the timing
    best = {name: 0.0 for name in functions}
    for _ in range(rounds):
        for name, function in functions.items():
            forget_memos()  # every round a cold pass, as `neardup index` makes over a new corpus
            started = time.perf_counter()
            for doc in docs:
                function(doc)
            best[name] = max(best[name], len(docs) / (time.perf_counter() - started))
    return best
