"""Random sketches for tests: sorted, distinct uint32 values, as lists or encoded, and corpora of them with edited
copies and values many articles share. The same seed gives the same values."""
from __future__ import annotations

import random

from neardup.core.encoding import encode_sketch
from neardup.core.reference import MIN_EVIDENCE
from neardup.core.sketch_config import SketchConfig

#: The sketch size of the small stores made of random corpora (make_corpus, sketch_with_shared_values).
K = 32
#: Values most articles of make_corpus hold, so that searches meet long postings.
HOT = list(range(100, 112))
#: Values many sketches of sketch_with_shared_values hold, so that some postings buckets grow long.
SHARED_VALUES = list(range(1, 9))


def random_values(rng: random.Random, size: int) -> list[int]:
    """size distinct uint32 values, sorted."""
    return sorted(rng.sample(range(2**32), size))


def random_sketch(rng: random.Random, size: int | None = None, *, smallest: int = 0,
                  k: int = SketchConfig().k) -> bytes:
    """An encoded sketch of size random values, or, without a size, of from smallest to k of them."""
    return encode_sketch(random_values(rng, rng.randint(smallest, k) if size is None else size))


def sketch_with_shared_values(rng: random.Random) -> bytes:
    """An encoded sketch of K or fewer values, of the lengths around MIN_EVIDENCE that postings mark, holding up to
    three SHARED_VALUES."""
    size = rng.choice([0, 1, 5, MIN_EVIDENCE - 1, MIN_EVIDENCE, K])
    values = set(rng.sample(SHARED_VALUES, rng.randint(0, 3))) | {rng.randrange(2**32) for _ in range(size)}
    return encode_sketch(sorted(values)[:K])


def make_corpus(rng: random.Random, size: int) -> dict[str, list[int]]:
    """Clusters of edited copies, unrelated articles, short ones, and values most articles hold."""
    bases = [rng.sample(range(1000, 2**32), K + 20) for _ in range(12)]
    corpus = {}
    for n in range(size):
        values = set(rng.sample(rng.choice(bases), rng.randint(1, K))) if rng.random() < 0.7 else set()
        values |= {rng.randrange(1000, 2**32) for _ in range(rng.choice([0, 2, 10, 40]))}
        values |= set(rng.sample(HOT, rng.randint(0, 6)))
        corpus[f"doc-{n}"] = sorted(values)[:K] or [rng.randrange(1000, 2**32)]
    return corpus
