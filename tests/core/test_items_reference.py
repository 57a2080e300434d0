"""The compiled item features (_items, through core/item_scoring.py) must answer what item_reference.py, written
from the definitions, answers: the candidate pairs and their per-field similarities exactly, and the scores,
groupings and searches made of them, on random schemas (kinds, sizes, weights, metrics, rules) and items with
missing fields, without a sketch, and with super tokens of their rules or of any values; and a pair model's
boosted trees, which refuse malformed nodes rather than walk them."""
from __future__ import annotations

import dataclasses
import math
import random
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from neardup.core import _items, item_reference
from neardup.core.fields import FieldSpec, GeoPoint, check_schema, decode_item, encode_item, field_values, \
    super_tokens
from neardup.core.item_scoring import GBM, ItemScorer, PairModel, pair_features
from neardup.core.vocabulary import EXACT, FIELD_KINDS, FIELD_METRICS, GROUPINGS, LOCATION, TEXT

#: Places some items are near (the last two at the poles, where a cell has fewer than eight neighbours).
PLACES = [GeoPoint(53.8008, -1.5491), GeoPoint(53.81, -1.53), GeoPoint(0.0, 179.99), GeoPoint(89.99, 10.0),
          GeoPoint(-89.99, -170.0)]


@st.composite
def schemas(draw):
    fields = [FieldSpec(f"f{index}", kind=draw(st.sampled_from(FIELD_KINDS)), k=draw(st.integers(1, 12)),
                        weight=draw(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.7])), precision=draw(st.integers(1, 7)),
                        rule_tokens=draw(st.integers(1, 3)), metric=draw(st.sampled_from(FIELD_METRICS)))
              for index in range(draw(st.integers(1, 6)))]
    if not any(spec.weight > 0 for spec in fields):
        fields[0] = dataclasses.replace(fields[0], weight=1.0)
    names = [spec.name for spec in fields]
    rules = draw(st.lists(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True), max_size=3))
    check_schema(fields, rules)
    return fields, rules


def base_value(rng: random.Random, spec: FieldSpec, universe: int):
    """What a field of a base item is: a text's whole set of shingle values (often more than K), an exact token,
    a place."""
    if spec.kind == TEXT:
        return {rng.randrange(universe) for _ in range(rng.randint(1, 3 * spec.k))}
    if spec.kind == EXACT:
        return rng.randrange(3)
    return rng.choice(PLACES)


def values_of(rng: random.Random, spec: FieldSpec, base, universe: int) -> list[int]:
    """One item's values of a field: the base's, edited, new, or none (the field missing)."""
    roll = rng.random()
    if roll < 0.15:
        return []
    if spec.kind == TEXT:
        document = set(base)
        if roll < 0.6:
            document = set(rng.sample(sorted(document), rng.randint(0, len(document)))) \
                | {rng.randrange(universe) for _ in range(rng.randint(0, spec.k))}
        elif roll < 0.7:
            document = {rng.randrange(universe) for _ in range(rng.randint(1, 2 * spec.k))}
        return sorted(document)[:spec.k]
    if spec.kind == EXACT:
        return [base if roll < 0.7 else rng.randrange(3)]
    if roll < 0.3:  # any one to nine cells of a few
        return sorted(rng.sample(range(12), rng.randint(1, 9)))
    place = base if roll < 0.6 else GeoPoint(base.lat + rng.uniform(-0.1, 0.1), base.lon)
    return field_values(spec, GeoPoint(max(-90.0, min(90.0, place.lat)), place.lon))


@st.composite
def result_sets(draw):
    """A schema, and a result set of items: edited copies of a few base items, some without a sketch (None or
    b'', both None to the reference); their super tokens those of the rules, or any few of a small range."""
    fields, rules = draw(schemas())
    rng = random.Random(draw(st.integers(0, 2**32)))  # fast; hypothesis shrinks the sizes below
    universe = draw(st.sampled_from([10, 60, 2**32]))
    tokens_of_rules = draw(st.booleans())
    bases = [[base_value(rng, spec, universe) for spec in fields] for _ in range(draw(st.integers(1, 4)))]
    items, blobs = [], []
    for _ in range(draw(st.integers(0, 40))):
        if rng.random() < 0.08:
            items.append(None)
            blobs.append(rng.choice([None, b""]))
            continue
        base = rng.choice(bases)
        sections = [values_of(rng, spec, value, universe) for spec, value in zip(fields, base)]
        tokens = super_tokens(fields, rules, sections) if tokens_of_rules \
            else sorted(rng.sample(range(8), rng.randint(0, 3)))
        items.append([*sections, tokens])
        blobs.append(encode_item(items[-1]))
        assert decode_item(blobs[-1], fields) == items[-1]  # a layout the store accepts
    return fields, items, blobs


def same(got, expected) -> bool:
    return all(g == e or math.isnan(g) and math.isnan(e) for g, e in zip(got, expected, strict=True))


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=300, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_sets(), st.booleans())
def test_candidates_and_their_features_equal_the_reference(case, query_only):
    fields, items, blobs = case
    expected = item_reference.candidates(fields, items, query_only)
    found = pair_features(fields, blobs, query_only)
    assert list(zip(found.i.tolist(), found.j.tolist())) == [(c.i, c.j) for c in expected]
    for got, candidate in zip(found.features.tolist(), expected):
        assert same(got, candidate.row), (candidate.i, candidate.j)
    scores = ItemScorer(fields).scores(found.features)
    assert scores.tolist() == pytest.approx([item_reference.score(fields, c.row) for c in expected], rel=1e-12,
                                            abs=1e-15)
    event(f"candidates: {'none' if not expected else 'some'}")
    event(f"a missing field in a candidate: {any(math.isnan(v) for c in expected for v in c.row)}")


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_sets(), st.floats(0.0, 1.0), st.sampled_from(GROUPINGS))
def test_dedup_and_search_equal_the_reference(case, threshold, grouping):
    fields, items, blobs = case
    scores = [item_reference.score(fields, c.row) for c in item_reference.candidates(fields, items)]
    # the compiled mean is numpy's sum, rounded in its own order: no score within rounding of the threshold
    assume(all(abs(value - threshold) > 1e-9 for value in scores))
    scorer = ItemScorer(fields)
    expected = item_reference.dedup(fields, items, threshold, grouping)
    got = scorer.dedup(blobs, threshold, grouping)
    assert (got.duplicate_of, got.group) == (expected.duplicate_of, expected.group)
    assert got.similarity == pytest.approx(expected.similarity, rel=1e-12, abs=1e-15)
    if items:
        found = scorer.similar(blobs[0], blobs[1:], threshold)
        wanted = item_reference.similar(fields, items[0], items[1:], threshold)
        assert [position for position, _ in found] == [position for position, _ in wanted]
        assert [value for _, value in found] == pytest.approx([value for _, value in wanted], rel=1e-12, abs=1e-15)
    event(f"duplicates: {'none' if max(expected.duplicate_of, default=-1) < 0 else 'some'}")


def test_each_kind_by_its_definition():
    """Hand-computed rows: a capped text field compared below the smaller cap, an exact token, cells near a pole."""
    fields = [FieldSpec("t", k=4), FieldSpec("e", kind=EXACT), FieldSpec("l", kind=LOCATION)]
    a = [[1, 2, 3, 9], [7], [1, 2, 3, 4, 5, 6], [42]]  # full: cap 9
    b = [[2, 3, 5], [8], [1, 2, 3, 4, 5, 6, 7, 8, 9], [42]]  # complete: all of it compared below 9
    c = [[], [7], [], [42]]
    # a' = {1, 2, 3, 9}, b' = {2, 3, 5}: 2 shared; 2 / 3 contained, 2 / 5 jaccard; cells 6 of 9
    assert item_reference.row(fields, a, b) == [2 / 3, 2 / 5, 0.0, 6 / 9]
    found = pair_features(fields, [encode_item(x) for x in (a, b, c)])
    assert found.features.tolist()[0] == [2 / 3, 2 / 5, 0.0, 6 / 9]
    assert same(found.features.tolist()[1], [math.nan, math.nan, 1.0, math.nan])  # a and c: the token only
    assert ItemScorer(fields).scores(found.features).tolist()[1] == 1.0


# --- a pair model's trees ---------------------------------------------------------------------------------------

def random_tree(rng: random.Random, columns: int) -> item_reference.Tree:
    """A regression tree as scikit-learn stores one: nodes depth first, children after their parent."""
    tree = item_reference.Tree([], [], [], [], [])

    def grow(depth: int) -> int:
        node = len(tree.feature)
        for part in tree:
            part.append(-1)
        tree.threshold[node], tree.value[node] = rng.choice([0.0, 0.5, 1.0, rng.random()]), rng.uniform(-2, 2)
        if depth and rng.random() < 0.8:
            tree.feature[node] = rng.randrange(columns)
            tree.left[node] = grow(depth - 1)
            tree.right[node] = grow(depth - 1)
        return node

    grow(rng.randint(0, 4))
    return tree


def gbm(trees, init: float = 0.25, learning_rate: float = 0.1) -> PairModel:
    return PairModel({"kind": GBM, "threshold": 0.5, "calibration": {"a": 1.0, "b": 0.0}, "init": init,
                      "learning_rate": learning_rate, "trees": [tree._asdict() for tree in trees]})


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, derandomize=True, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 9), st.integers(0, 12), st.integers(0, 20))
def test_boosted_trees_equal_the_reference(seed, columns, count, rows):
    rng = random.Random(seed)
    trees = [random_tree(rng, columns) for _ in range(count)]
    inputs = np.array([[rng.choice([0.0, 0.5, 1.0, math.nan, rng.random()]) for _ in range(columns)]
                       for _ in range(rows)]).reshape(rows, columns)
    got = gbm(trees, 0.25, 0.1).raw(inputs)
    assert got.tolist() == [0.25 + 0.1 * item_reference.tree_sum(trees, row) for row in inputs.tolist()]


#: Two trees over rows of 3 columns: nodes 0-4 (0 splits into 1 and 4, 1 into 2 and 3) and 5-7 (5 into 6 and 7).
TREES = {"feature": [0, 1, -1, -1, -1, 2, -1, -1], "threshold": [0.5] * 8, "left": [1, 2, -1, -1, -1, 6, -1, -1],
         "right": [4, 3, -1, -1, -1, 7, -1, -1], "value": [0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 4.0, 5.0], "roots": [0, 5]}


def compiled_tree_sum(arrays: dict, inputs: np.ndarray) -> list[float]:
    packed = {key: struct.pack(f"={len(values)}{'d' if key in ('threshold', 'value') else 'i'}", *values)
              for key, values in arrays.items()}
    return np.frombuffer(_items.tree_sum(inputs.tobytes(), 3, packed["feature"], packed["threshold"], packed["left"],
                                         packed["right"], packed["value"], packed["roots"]), np.float64).tolist()


def test_well_formed_trees_are_walked_and_inputs_must_be_whole_rows():
    assert compiled_tree_sum(TREES, np.zeros(6)) == [1.0 + 4.0] * 2  # zeros go left at every node
    assert compiled_tree_sum(TREES, np.ones(6)) == [3.0 + 5.0] * 2
    with pytest.raises(ValueError, match="malformed trees or inputs"):
        compiled_tree_sum(TREES, np.zeros(5))


@pytest.mark.parametrize("what, array, index, value", [
    ("a child before its parent (a loop)", "left", 1, 0),
    ("a node its own child", "right", 1, 1),
    ("a child past the nodes", "left", 0, 8),
    ("a leaf with one child", "right", 3, 4),
    ("a feature past the columns", "feature", 0, 3),
    ("a negative feature", "feature", 1, -1),
    ("a root past the nodes", "roots", 1, 8),
    ("a value missing", "value", 7, None),
])
def test_malformed_trees_are_refused_not_walked(what, array, index, value):
    """Each is a ValueError: walked, it would loop for ever or read past an array."""
    arrays = {key: list(values) for key, values in TREES.items()}
    if value is None:
        del arrays[array][index]
    else:
        arrays[array][index] = value
    with pytest.raises(ValueError, match="malformed trees or inputs"):
        compiled_tree_sum(arrays, np.zeros(6))
