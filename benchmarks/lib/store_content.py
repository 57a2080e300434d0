"""Synthetic store content: article ids shaped like news URLs, random sketches of 10..64 values written in batches
of BATCH (the same on every call), and result sets of RESULT_SET stored ids with a share missing."""
from __future__ import annotations

import random

import numpy as np

SEED = 20240611
BATCH = 10_000
RESULT_SET = 100
MISSING_SHARE = 0.1


def article_id(number: int) -> str:
    return f"https://news.example.org/{2000 + number % 25}/{number % 12 + 1:02d}/article-{number:09d}"


def sketches(rng: np.random.Generator, count: int) -> list[bytes]:
    """Random sorted unique uint32 values, 10..64 per sketch, as little-endian bytes."""
    lengths = rng.integers(10, 65, count)
    return [np.unique(rng.integers(0, 2**32, length, dtype=np.uint32)).astype("<u4").tobytes() for length in lengths]


def batches(size: int):
    """The store's content in write batches, the same on every call."""
    rng = np.random.default_rng(SEED)
    for start in range(0, size, BATCH):
        numbers = range(start, min(size, start + BATCH))
        yield list(zip(map(article_id, numbers), sketches(rng, len(numbers))))


def result_sets(size: int, count: int, rng: random.Random) -> list[list[str]]:
    """`count` sets of RESULT_SET ids of the first `size` articles, MISSING_SHARE of each not stored."""
    sets = []
    for _ in range(count):
        ids = [article_id(n) for n in rng.sample(range(size), RESULT_SET)]
        for position in rng.sample(range(RESULT_SET), int(RESULT_SET * MISSING_SHARE)):
            ids[position] += "-missing"
        sets.append(ids)
    return sets
