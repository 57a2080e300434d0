"""Items with fields, literally and slowly: which pairs of a result set are compared, their per-field similarities,
their weighted score, the groupings and searches made of them, and a pair model's boosted trees.

The specification the compiled _items (through core/item_scoring.py) must equal, as reference.py is the kernel's
(tests/core/test_items_reference.py compares them); never called on the request path.
The definitions: docs/fields.md ("How two items are compared").
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from .fields import FieldSpec
from .reference import Grouping, _group, compared_lengths
from .vocabulary import EXACT, JACCARD, TEXT

Item = Sequence[Sequence[int]]


class Candidate(NamedTuple):
    i: int
    j: int
    row: list[float]  # fields.schema_columns, NaN where either item lacks the field


def shares_a_super_token(a: Item | None, b: Item | None) -> bool:
    return a is not None and b is not None and bool(set(a[-1]) & set(b[-1]))


def text_similarities(a: Sequence[int], b: Sequence[int], k: int) -> tuple[float, float]:
    """Containment and jaccard of two present text fields of bottom-K size k."""
    len_a, len_b, _ = compared_lengths(a, b, k)
    shared = len(set(a[:len_a]) & set(b[:len_b]))
    if shared == 0:
        return 0.0, 0.0
    return shared / min(len_a, len_b), shared / (len_a + len_b - shared)


def field_columns(spec: FieldSpec, a: Sequence[int], b: Sequence[int]) -> list[float]:
    """The field's columns (spec.columns) for two items' values of it."""
    if not a or not b:
        return [math.nan] * len(spec.columns)
    if spec.kind == TEXT:
        return list(text_similarities(a, b, spec.k))
    if spec.kind == EXACT:
        return [1.0 if a[0] == b[0] else 0.0]
    return [len(set(a) & set(b)) / max(len(a), len(b))]


def row(fields: Sequence[FieldSpec], a: Item, b: Item) -> list[float]:
    return [value for index, spec in enumerate(fields) for value in field_columns(spec, a[index], b[index])]


def candidates(fields: Sequence[FieldSpec], items: Sequence[Item | None], query_only: bool = False
               ) -> list[Candidate]:
    """The compared pairs of a result set (query_only: of item 0 with each other) and their rows."""
    return [Candidate(i, j, row(fields, items[i], items[j]))
            for j in range(1, len(items)) for i in range(1 if query_only else j)
            if shares_a_super_token(items[i], items[j])]


def score(fields: Sequence[FieldSpec], row_: Sequence[float]) -> float:
    """A candidate's weighted mean of its per-field similarities."""
    total = weighted = 0.0
    column = 0
    for spec in fields:
        value = row_[column + (1 if spec.kind == TEXT and spec.metric == JACCARD else 0)]
        column += len(spec.columns)
        if not math.isnan(value):
            total += spec.weight
            weighted += spec.weight * value
    return weighted / total if total > 0 else 0.0


def dedup(fields: Sequence[FieldSpec], items: Sequence[Item | None], threshold: float, grouping: str) -> Grouping:
    scores = {(c.i, c.j): score(fields, c.row) for c in candidates(fields, items)}
    return _group(len(items), lambda i, j: (i, j) in scores and scores[i, j] >= threshold,
                  lambda i, j: scores.get((i, j), 0.0), grouping)


def similar(fields: Sequence[FieldSpec], query: Item | None, items: Sequence[Item | None], threshold: float
            ) -> list[tuple[int, float]]:
    """(position, score) of each item that is a candidate with the query and reaches the threshold."""
    found = [(c.j - 1, score(fields, c.row)) for c in candidates(fields, [query, *items], query_only=True)]
    return [(position, value) for position, value in found if value >= threshold]


class Tree(NamedTuple):
    """One regression tree as a gradient boosting stores it: per node its feature, threshold, children (indices
    into this tree's nodes; -1 at a leaf) and value."""

    feature: list[int]
    threshold: list[float]
    left: list[int]
    right: list[int]
    value: list[float]


def tree_sum(trees: Sequence[Tree], inputs: Sequence[float]) -> float:
    """The sum over trees of the value of the leaf the row reaches."""
    total = 0.0
    for tree in trees:
        node = 0
        while tree.left[node] != -1:
            node = tree.left[node] if inputs[tree.feature[node]] <= tree.threshold[node] else tree.right[node]
        total += tree.value[node]
    return total
