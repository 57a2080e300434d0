"""Synthetic result sets for the pair kernel: 100 documents of 30..400 shingle hashes, 20-40 % of them edited copies
or excerpts of an earlier one, as search results look; as shingle sets or as decoded bottom-K sketches (K = 64, so
most are full K samples and a few short ones complete)."""
from __future__ import annotations

import random

K = 64
RESULTS = 100
#: The threshold the synthetic sets are deduplicated at (bench_kernel's bottom-K rows).
THRESHOLD = 0.7
SEED = 20240601


def _document(rng: random.Random) -> set[int]:
    return {rng.getrandbits(32) for _ in range(rng.randint(30, 400))}


def _near_duplicate(rng: random.Random, original: set[int]) -> set[int]:
    """An edited copy (a few shingles changed) or an excerpt (a contiguous part of the text)."""
    shingles = sorted(original, key=lambda _: rng.random())
    if rng.random() < 0.3:
        return set(shingles[: max(1, int(len(shingles) * rng.uniform(0.4, 0.8)))])
    edits = int(len(shingles) * rng.uniform(0.02, 0.15))
    return set(shingles[edits:]) | {rng.getrandbits(32) for _ in range(edits)}


def result_documents(rng: random.Random) -> list[set[int]]:
    """One ranked result set as documents (their shingle hashes); each near-duplicate copies an earlier one."""
    share = rng.uniform(0.2, 0.4)
    documents: list[set[int]] = []
    for _ in range(RESULTS):
        if documents and rng.random() < share:
            documents.append(_near_duplicate(rng, rng.choice(documents)))
        else:
            documents.append(_document(rng))
    return documents


def result_set(rng: random.Random) -> list[list[int]]:
    """One ranked result set as decoded bottom-K sketches."""
    return [sorted(doc)[:K] for doc in result_documents(rng)]
