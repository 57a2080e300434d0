"""The harness's comparisons in process: the request path's kernel against the pure-Python reference merge and
datasketch MinHash on the same result sets (the development corpus's and bench_kernel's synthetic full-K ones), and
neardup's default Sketcher against MinHash on the corpus texts. `plan` is the harness's Plan (how many sets, rounds
and documents)."""
from __future__ import annotations

import random
import statistics

import numpy as np

from benchmarks.lib import kernel_sets, measure
from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.quality_counts import greedy_groups
from benchmarks.lib.quality_methods import word_ngrams
from benchmarks.lib.sketching import MINHASH_PERMUTATIONS, sketchers, throughput
from neardup.core import kernel, reference, vocabulary
from neardup.core.sketch_config import SketchConfig
from neardup.core.encoding import decode_sketch, encode_sketch


def kernel_comparison(store, docs: list[Doc], id_sets: list[list[str]], plan) -> list[dict]:
    """The request path's kernel against the pure-Python merge and datasketch MinHash on the same result sets.

    The dev-corpus sets are what the server sees (short documents: most sketches hold fewer than K values);
    bench_kernel's synthetic sets hold full K = 64 sketches, the budget's case. MinHash needs texts, so it runs
    on the dev sets only: signatures made beforehand, as a store would hold them, then the same greedy rule
    either pair by pair with MinHash.jaccard or as one numpy all-pairs matrix (the quality figures' way)."""
    from datasketch import MinHash

    k, threshold = store.config.k, vocabulary.DEFAULT_THRESHOLD
    by_id = {doc.id: doc for doc in docs}
    dev_blobs = [store.get_many(ids) for ids in id_sets[:plan.kernel_sets]]
    rng = random.Random(kernel_sets.SEED)
    synthetic = [kernel_sets.result_set(rng) for _ in range(plan.kernel_sets)]
    cases = {
        "dev corpus": (dev_blobs, [[None if b is None else decode_sketch(b) for b in blobs] for blobs in dev_blobs]),
        "synthetic full-K (bench_kernel)": ([[encode_sketch(s) for s in sketches] for sketches in synthetic],
                                            synthetic),
    }

    def signature(doc_id: str) -> MinHash:
        minhash = MinHash(num_perm=MINHASH_PERMUTATIONS, seed=1)
        minhash.update_batch([s.encode("utf-8") for s in word_ngrams(by_id[doc_id].text)])
        return minhash

    minhashes = [[signature(doc_id) for doc_id in ids] for ids in id_sets[:plan.reference_sets]]
    thresholds = np.array([threshold])

    def minhash_pairwise(signatures: list[MinHash]) -> list[int]:
        kept, duplicate_of = [], []
        for j, b in enumerate(signatures):
            duplicate_of.append(next((i for i in kept if signatures[i].jaccard(b) >= threshold), -1))
            if duplicate_of[-1] < 0:
                kept.append(j)
        return duplicate_of

    def minhash_numpy(signatures: list[MinHash]) -> np.ndarray:
        values = np.stack([m.hashvalues for m in signatures])
        return greedy_groups((values[:, None, :] == values[None, :, :]).mean(axis=2), thresholds)

    rows = []
    for name, (blobs, lists) in cases.items():
        compiled = measure.interleaved_us({"kernel": (kernel.dedup, [(b, k, threshold) for b in blobs])},
                                          plan.kernel_rounds)["kernel"]
        baselines = {"kernel": (kernel.dedup, [(b, k, threshold) for b in blobs[:plan.reference_sets]]),
                     "reference": (reference.dedup, [(s, k, threshold) for s in lists[:plan.reference_sets]])}
        if name == "dev corpus":
            baselines["minhash_pairwise"] = (minhash_pairwise, [(m,) for m in minhashes])
            baselines["minhash_numpy"] = (minhash_numpy, [(m,) for m in minhashes])
        timed = measure.interleaved_us(baselines, plan.baseline_rounds)
        row = {"sets": name, "kernel": compiled, "kernel_on_baseline_sets": timed.pop("kernel"),
               "duplicates_per_set": statistics.mean(
                   sum(d >= 0 for d in kernel.dedup(b, k, threshold).duplicate_of) for b in blobs)}
        for baseline, figures in timed.items():
            row[baseline] = figures
            row[f"{baseline}_ratio"] = figures["median_us"] / row["kernel_on_baseline_sets"]["median_us"]
        rows.append(row)
    return rows


def sketching(docs: list[Doc], plan) -> dict:
    """Documents per second on the dev corpus texts: neardup's default Sketcher against datasketch MinHash,
    interleaved round by round, best round each (bench_sketch.py's sketchers and timing: sketching.py)."""
    everything = sketchers()
    names = {"neardup": f"neardup {SketchConfig().unit}",
             "minhash": next(name for name in everything if name.startswith("datasketch"))}
    texts = docs[:plan.sketch_docs]
    rates = throughput({name: everything[name] for name in names.values()}, texts, plan.sketch_rounds)
    return {"documents": len(texts), "rounds": plan.sketch_rounds, "neardup": names["neardup"],
            "minhash": names["minhash"], "neardup_docs_per_s": rates[names["neardup"]],
            "minhash_docs_per_s": rates[names["minhash"]], "ratio": rates[names["neardup"]] / rates[names["minhash"]]}
