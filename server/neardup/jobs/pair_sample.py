"""A sample of an items store's candidate pairs: the pairs sharing a super token, the only ones its server ever
scores. `neardup train` weighs its labelled pairs against it (a model is judged where it will decide), and
`neardup label` proposes pairs to label from it.

The sample is every candidate pair whose first article (the smaller article number) lies in SAMPLE_BLOCKS blocks
of article numbers drawn at random, or in the whole store when it holds at most SAMPLE_ARTICLES, then at most
MAX_PAIRS of them drawn at random: each candidate pair is in it with the same probability, so its score
distribution is the candidates'.
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
#: The most pairs kept: enough for every bin of the rule score a model is judged in (train.BINS) to hold
#: thousands when the candidates spread over them.
MAX_PAIRS = 50_000


class CandidatePairs(NamedTuple):
    a: list[str]
    b: list[str]
    features: np.ndarray     # pair_features rows, one per pair
    rule_scores: np.ndarray  # the field rules' weighted similarity of each pair (no model)


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
    """The candidate pairs of a sample of the store's articles (module doc), at most MAX_PAIRS of them (a uniform
    subsample past it), with their features and rule scores."""
    engine = Deduplicator(store, pair_model=False)
    limit = engine.docno_limit()
    rng = random.Random(seed)
    if limit <= SAMPLE_ARTICLES:
        ranges = [(0, None)]
    else:
        blocks = sorted(rng.sample(range((limit + BLOCK - 1) // BLOCK), SAMPLE_BLOCKS))
        ranges = [(block * BLOCK, (block + 1) * BLOCK) for block in blocks]
    found = [(doc_id, [match.id for match in outcome.matches]) for start, stop in ranges
             for doc_id, outcome in engine.similar_pairs(0.0, FIELDS, start, stop) if outcome.matches]
    total = sum(len(matches) for _, matches in found)
    if total > MAX_PAIRS:
        kept = set(rng.sample(range(total), MAX_PAIRS))
        numbered, position = [], 0
        for doc_id, matches in found:
            numbered.append((doc_id, [m for k, m in enumerate(matches, position) if k in kept]))
            position += len(matches)
        found = [(doc_id, matches) for doc_id, matches in numbered if matches]
    fields = store.config.fields
    a, b, rows = [], [], []
    for doc_id, matches in found:  # one compiled call per sampled article: it with each of its candidates
        sketches = store.get_many([doc_id, *matches])
        pairs = pair_features(fields, sketches, query_only=True)
        a += [doc_id] * len(pairs.j)
        b += [matches[j - 1] for j in pairs.j.tolist()]
        rows.append(pairs.features)
    width = sum(len(spec.columns) for spec in fields)
    features = np.vstack(rows) if rows else np.zeros((0, width))
    return CandidatePairs(a, b, features, weighted(fields, features))
