"""Scoring a method's similarities as the service groups results: the greedy rule at every threshold at once, pair
counts summed over result sets (micro-averaged precision, recall and F1 per threshold), hard-negative pairs grouped
per kind, and labelled result sets (duplicate, negative and scored pairs)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmarks.lib.devcorpus import Doc
from benchmarks.lib.quality_methods import Method
from neardup.core import calibration, vocabulary

#: The SimHash distance its permutation tables answer (similar.SIMHASH_EXACT_DISTANCE, without importing numpy's
#: corpus search here) and its threshold.
SIMHASH_EXACT_BITS = 3
SIMHASH_EXACT_THRESHOLD = (64 - SIMHASH_EXACT_BITS) / 64
#: Every hundredth, the fixed defaults, and every threshold a store can learn (calibration's bin centres).
THRESHOLDS = np.union1d(np.round(np.arange(1, 100) / 100, 2),
                        [vocabulary.DEFAULT_THRESHOLD, vocabulary.SIMHASH_THRESHOLD, SIMHASH_EXACT_THRESHOLD,
                         *np.round((np.arange(round(1 / calibration.BIN_WIDTH)) + 0.5) * calibration.BIN_WIDTH, 4)])
NEGATIVE_KINDS = ("template", "site", "topic", "quote")  # Doc fields: hard negatives share one of them
#: Pairs of these kinds are left out of precision, recall and F1 (reported apart).
IGNORED_KINDS = ("template",)


def greedy_groups(similarity: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """reference.dedup's greedy rule at every threshold at once: in rank order, each result joins the first kept
    result it reaches the threshold with, else it is kept. Returns the group (a kept position) per threshold; for a
    stack of similarity matrices (a random method's draws, Method), one such array per draw."""
    if similarity.ndim == 3:
        return np.stack([greedy_groups(draw, thresholds) for draw in similarity])
    n = similarity.shape[0]
    groups = np.empty((len(thresholds), n), dtype=np.int64)
    kept = np.zeros((len(thresholds), n), dtype=bool)
    groups[:, 0] = 0
    kept[:, 0] = True
    for j in range(1, n):
        hits = kept[:, :j] & (similarity[:j, j][None, :] >= thresholds[:, None])
        found = hits.any(axis=1)
        groups[:, j] = np.where(found, hits.argmax(axis=1), j)
        kept[:, j] = ~found
    return groups


@dataclass
class Counts:
    """Pair counts per threshold, summed over result sets (micro-averaging)."""

    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    negatives_grouped: dict[str, np.ndarray]
    negatives: dict[str, int]

    @classmethod
    def empty(cls, size: int) -> "Counts":
        return cls(*(np.zeros(size, dtype=np.int64) for _ in range(3)),
                   {kind: np.zeros(size, dtype=np.int64) for kind in NEGATIVE_KINDS},
                   dict.fromkeys(NEGATIVE_KINDS, 0))

    def precision(self) -> np.ndarray:
        return np.divide(self.tp, self.tp + self.fp, out=np.ones(len(self.tp)), where=self.tp + self.fp > 0)

    def recall(self) -> np.ndarray:
        return self.tp / np.maximum(1, self.tp + self.fn)

    def f1(self) -> np.ndarray:
        p, r = self.precision(), self.recall()
        return np.divide(2 * p * r, p + r, out=np.zeros(len(p)), where=p + r > 0)


@dataclass
class ResultSet:
    """A result set's document indexes in rank order and its labels, per pair of the upper triangle."""

    indexes: list[int]
    duplicate: np.ndarray
    negative: dict[str, np.ndarray]
    scored: np.ndarray  # the pairs that count in precision and recall

    @classmethod
    def label(cls, docs: list[Doc], indexes: list[int]) -> "ResultSet":
        members = [docs[i] for i in indexes]
        upper = zip(*np.triu_indices(len(indexes), 1))
        pairs = [(members[i], members[j]) for i, j in upper]
        duplicate = np.array([a.group == b.group for a, b in pairs])
        negative = {kind: np.array([a.group != b.group and getattr(a, kind) != ""
                                    and getattr(a, kind) == getattr(b, kind) for a, b in pairs])
                    for kind in NEGATIVE_KINDS if kind != "quote"}
        negative["quote"] = np.array([a.quotes == b.group or b.quotes == a.group for a, b in pairs])
        ignored = np.zeros(len(pairs), dtype=bool)
        for kind in IGNORED_KINDS:
            ignored |= negative[kind]
        return cls(indexes, duplicate, negative, ~ignored)


def add_result_set(counts: Counts, result_set: ResultSet, similarity: np.ndarray) -> None:
    add_grouping(counts, result_set, greedy_groups(similarity, THRESHOLDS))


def add_grouping(counts: Counts, result_set: ResultSet, groups: np.ndarray) -> None:
    """Adds the pair counts of a result set grouped once per threshold (groups[threshold, position]: the
    position standing for its group); a stack of groupings (a random method's draws) adds each draw's, so the F1
    read from the counts is the method's expected F1 at each threshold."""
    if groups.ndim == 3:
        for draw in groups:
            add_grouping(counts, result_set, draw)
        return
    upper = np.triu_indices(len(result_set.indexes), 1)
    predicted = groups[:, upper[0]] == groups[:, upper[1]]
    truth, scored = result_set.duplicate, result_set.scored
    counts.tp += (predicted & truth & scored).sum(axis=1)
    counts.fp += (predicted & ~truth & scored).sum(axis=1)
    counts.fn += (~predicted & truth & scored).sum(axis=1)
    for kind, pairs in result_set.negative.items():
        counts.negatives[kind] += int(pairs.sum())
        counts.negatives_grouped[kind] += (predicted & pairs).sum(axis=1)


def evaluate(method: Method, sets: dict[str, list[ResultSet]]) -> dict[str, Counts]:
    """Counts per scope ('overall' and each scope of devcorpus.scopes) for one method."""
    result = {}
    for scope, scope_sets in sets.items():
        counts = Counts.empty(len(THRESHOLDS))
        for result_set in scope_sets:
            add_result_set(counts, result_set, method.pair_matrix(result_set.indexes))
        result[scope] = counts
    return result
