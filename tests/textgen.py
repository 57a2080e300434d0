"""Deterministic article-like texts for tests: distinct sentences from a fixed vocabulary and a seed."""
from __future__ import annotations

import random

_VOCABULARY = (
    "market council river station budget harbour festival minister railway hospital election contract "
    "factory village museum airport engineer teacher farmer shipment weather storm bridge tunnel energy "
    "climate report inquiry treaty court school garden library concert tournament stadium vaccine "
    "research satellite harvest drought pension salary housing transport license permit airline museum "
    "merchant archive castle mountain forest lake coast island valley desert glacier canyon volcano"
).split()
_GLUE = "the a of and to in on for with from by about after before during".split()


def sentence(rng: random.Random, words: int = 12) -> str:
    tokens = [rng.choice(_VOCABULARY) if i % 2 == 0 else rng.choice(_GLUE + _VOCABULARY) for i in range(words)]
    tokens.append(str(rng.randrange(10, 10_000)))  # numbers make sentences distinct across articles
    return tokens[0].capitalize() + " " + " ".join(tokens[1:]) + "."


def article(seed: int, sentences: int = 14) -> list[str]:
    rng = random.Random(seed)
    return [sentence(rng, rng.randrange(9, 16)) for _ in range(sentences)]


def text(sentences: list[str]) -> str:
    return " ".join(sentences)
