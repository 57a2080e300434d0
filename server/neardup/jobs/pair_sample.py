"""A sample of an items store's candidate pairs: the pairs sharing a super token, the only ones its server ever
scores. `neardup train` weighs its labelled pairs against it (a model is judged where it will decide), and
`neardup label` proposes pairs to label from it.

The sample is every candidate pair whose first article (the smaller article number) lies in SAMPLE_BLOCKS blocks
of article numbers drawn at random, or in the whole store when it holds at most SAMPLE_ARTICLES: each candidate
pair is in it with the same probability, so its score distribution is the candidates'.
"""
from __future__ import annotations

import random
from typing import NamedTuple, Sequence

import numpy as np

from ..core.fields import FieldSpec
from ..core.item_scoring import pair_features, weighted
from ..core.vocabulary import FIELDS
from ..runtime.deduplicator import Deduplicator
from ..store import SketchStore

#: Stores of at most this many articles are sampled whole.
SAMPLE_ARTICLES = 4_000
#: Past it, this many blocks of BLOCK consecutive article numbers.
BLOCK = 50
SAMPLE_BLOCKS = SAMPLE_ARTICLES // BLOCK


class CandidatePairs(NamedTuple):
    a: list[str]
    b: list[str]
    features: np.ndarray     # pair_features rows, one per pair
    rule_scores: np.ndarray  # the field rules' weighted similarity of each pair (no model)
    share: float             # the share of the store's article numbers whose pairs were taken


def pair_rows(fields: Sequence[FieldSpec], sketches: dict[str, bytes], pairs) -> tuple[np.ndarray, np.ndarray]:
    """The feature rows of (a, b, ...) pairs (NaN rows where a pair shares no super token), and which pairs are
    scored."""
    width = sum(len(spec.columns) for spec in fields)
    rows, scored = np.full((len(pairs), width), np.nan), np.zeros(len(pairs), bool)
    for row, (a, b, *_) in enumerate(pairs):
        found = pair_features(fields, [sketches[a], sketches[b]])
        if len(found.i):
            rows[row], scored[row] = found.features[0], True
    return rows, scored


def sample_candidate_pairs(store: SketchStore, seed: int = 0) -> CandidatePairs:
    """The candidate pairs of a sample of the store's articles (module doc), with their features and rule scores."""
    engine = Deduplicator(store, pair_model=False)
    limit = engine.docno_limit()
    if limit <= SAMPLE_ARTICLES:
        ranges = [(0, None)]
        share = 1.0
    else:
        blocks = sorted(random.Random(seed).sample(range((limit + BLOCK - 1) // BLOCK), SAMPLE_BLOCKS))
        ranges = [(block * BLOCK, (block + 1) * BLOCK) for block in blocks]
        share = SAMPLE_BLOCKS * BLOCK / limit
    a, b = [], []
    for start, stop in ranges:
        for doc_id, outcome in engine.similar_pairs(0.0, FIELDS, start, stop):
            for match in outcome.matches:
                a.append(doc_id)
                b.append(match.id)
    ids = sorted(set(a) | set(b))
    sketches = dict(zip(ids, store.get_many(ids)))
    fields = store.config.fields
    rows, _ = pair_rows(fields, sketches, list(zip(a, b)))
    return CandidatePairs(a, b, rows, weighted(fields, rows) if len(rows) else np.zeros(0), share)
