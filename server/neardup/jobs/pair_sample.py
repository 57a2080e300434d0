"""A sample of a store's candidate pairs (an items store's: those sharing a super token, the only ones its server
scores; a store of texts': pairs sharing sketch values): `neardup train` checks a model against it and `neardup
label` proposes pairs from it. Two strata: a uniform sample, whose score distribution is the candidates', and the
pairs near the rules' threshold, where duplicates, rare among candidates, are; each pair with what it stands for.
The sizes and why: docs/fields.md ("The candidates' sample"); texts: docs/commands/neardup-label.md.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

from ..core import calibration
from ..core.candidates import item_candidates
from ..core.fields import FieldSpec
from ..core.item_scoring import pair_features, weighted
from ..core.vocabulary import FIELDS
from ..runtime.params import SimilarParams
from ..runtime.served_store import ServedStore
from ..runtime.similar_search import SimilarSearch
from ..store import SketchStore
from ..store.base import MemoizedArticles, Snapshot, read_consistently

#: The most articles drawn: a store of at most this many is sampled whole.
SAMPLE_ARTICLES = 4_000
#: The most pairs kept: enough for every bin of the rule score a model is judged in (train.BINS) to hold
#: thousands when the candidates spread over them.
MAX_PAIRS = 50_000
#: The most articles whose near pairs (sample_candidate_pairs' at_least) are looked among: `neardup label`'s
#: pool, where every duplicate found is a pair worth proposing.
NEAR_ARTICLES = 5_000
#: ... for `neardup train`'s checks, which need the near stratum's shape, not each of its pairs.
CHECK_ARTICLES = 2_000
#: Where the near stratum begins: this share of the rules' threshold.
NEAR_SHARE = 0.5
#: Drawing articles stops once their candidate pairs are this many: kept pairs then come from many articles.
ENOUGH_PAIRS = 4 * MAX_PAIRS
#: A store of texts: the articles searched, and the best matches kept of each.
TEXT_ARTICLES, TEXT_MATCHES = 2_000, 10


class CandidatePairs(NamedTuple):
    a: list[str]
    b: list[str]
    features: np.ndarray     # pair_features rows, one per pair
    rule_scores: np.ndarray  # the field rules' weighted similarity of each pair (no model)
    stands_for: np.ndarray   # how many of the store's candidate pairs each one stands for (its sample's scale)

    def take(self, positions) -> "CandidatePairs":
        """The pairs at these positions (indices or a mask)."""
        positions = np.arange(len(self.a))[positions] if len(self.a) else np.zeros(0, np.int64)
        return CandidatePairs([self.a[i] for i in positions.tolist()], [self.b[i] for i in positions.tolist()],
                              self.features[positions], self.rule_scores[positions], self.stands_for[positions])

    def join(self, other: "CandidatePairs") -> "CandidatePairs":
        """These pairs and other's."""
        return CandidatePairs(self.a + other.a, self.b + other.b, np.vstack([self.features, other.features]),
                              np.concatenate([self.rule_scores, other.rule_scores]),
                              np.concatenate([self.stands_for, other.stands_for]))


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


def candidate_population(store: SketchStore, seed: int = 0, near_articles: int = NEAR_ARTICLES) -> CandidatePairs:
    """The store's candidate pairs in two strata (docs/fields.md): those scoring below NEAR_SHARE of the rules'
    threshold from the uniform sample, the others from the near pairs of up to `near_articles` articles, each
    pair with the number of candidate pairs it stands for."""
    floor = NEAR_SHARE * ServedStore(store, pair_model=False).defaults.threshold
    low = sample_candidate_pairs(store, seed)
    near = sample_candidate_pairs(store, seed, at_least=floor, near_articles=near_articles)
    return low.take(low.rule_scores < floor).join(near)


def text_candidate_pairs(store: SketchStore, articles: int = TEXT_ARTICLES) -> CandidatePairs:
    """A store of texts' candidate pairs (docs/commands/neardup-label.md), each once, with its similarity under the
    store's default metric as its one feature and its score."""
    search = SimilarSearch(ServedStore(store))
    params = SimilarParams(top_k=TEXT_MATCHES, threshold=calibration.SEARCH_FLOOR,
                           metric=search.served.defaults.metric)
    seen, a, b, scores = set(), [], [], []
    for doc_id, matches in search.sampled_matches(articles, params, max_candidates=calibration.CANDIDATES):
        for match in matches:
            pair = frozenset((doc_id, match.id))
            if pair not in seen:
                seen.add(pair)
                a.append(doc_id)
                b.append(match.id)
                scores.append(match.similarity)
    scores = np.array(scores, np.float64)
    return CandidatePairs(a, b, scores[:, None], scores, np.ones(len(a)))


def sample_candidate_pairs(store: SketchStore, seed: int = 0, at_least: float | None = None,
                           near_articles: int = NEAR_ARTICLES) -> CandidatePairs:
    """The candidate pairs of a sample of the store's articles (docs/fields.md), at most MAX_PAIRS of them, with their
    features and rule scores (under the store's field weights). `at_least`: instead, the candidate pairs whose
    rule score reaches it among those of up to `near_articles` articles drawn (every one of a smaller store), at
    most MAX_PAIRS of them at random."""
    served = ServedStore(store, pair_model=False)
    served.check_metric(FIELDS)  # an items store
    fields = served.items.fields
    most_articles = SAMPLE_ARTICLES if at_least is None else near_articles
    enough = ENOUGH_PAIRS if at_least is None else math.inf

    def sample(snapshot: Snapshot) -> CandidatePairs:
        rng = np.random.default_rng(seed)
        limit = snapshot.docno_limit()
        drawn: list[tuple[int, str, bytes, np.ndarray]] = []  # (docno, id, sketch, candidates above it)
        total = tried = 0
        for docno in rng.permutation(limit).tolist():
            if len(drawn) >= most_articles or total >= enough:
                break
            tried += 1
            for _, doc_id, sketch in snapshot.scan(docno, docno + 1):  # nothing where the article was deleted
                found = item_candidates(snapshot.postings(sketch), above=docno, max_candidates=limit,
                                        read_unread=lambda indices, sketch=sketch: snapshot.unread_postings(sketch,
                                                                                                         indices))
                drawn.append((docno, doc_id, sketch, found.docnos))
                total += len(found.docnos)
        keep = np.ones(total, bool)
        if at_least is None and total > MAX_PAIRS:
            keep = _subset(rng, total)
        articles = MemoizedArticles(snapshot)
        a, b, rows, position = [], [], [], 0
        for _, doc_id, sketch, found in drawn:  # one compiled call per drawn article: it with its kept candidates
            kept = found[keep[position:position + len(found)]].tolist()
            position += len(found)
            if not kept:
                continue
            others = articles(kept)
            pairs = pair_features(fields, [sketch, *(other for _, other in others)], query_only=True)
            j, features = pairs.j, pairs.features
            if at_least is not None:
                near = weighted(fields, features) >= at_least
                j, features = j[near], features[near]
            a += [doc_id] * len(j)
            b += [others[k - 1][0] for k in j.tolist()]
            rows.append(features)
        width = sum(len(spec.columns) for spec in fields)
        features = np.vstack(rows) if rows else np.zeros((0, width))
        found_pairs = len(a) if at_least is not None else total
        kept_pairs = min(found_pairs, MAX_PAIRS)
        scale = (limit / tried if tried else 1.0) * (found_pairs / kept_pairs if kept_pairs else 1.0)
        found = CandidatePairs(a, b, features, weighted(fields, features), np.full(len(a), scale))
        if at_least is not None and len(found.a) > MAX_PAIRS:
            return found.take(_subset(rng, len(found.a)))
        return found

    return read_consistently(store, sample)


def _subset(rng: np.random.Generator, total: int) -> np.ndarray:
    """MAX_PAIRS of `total` chosen at random, as a mask."""
    keep = np.zeros(total, bool)
    keep[rng.choice(total, MAX_PAIRS, replace=False)] = True
    return keep
