"""Items with fields on the request path: a pair's similarity from its per-field similarities (the weighted mean over
the fields both items have), or from a trained pair model's calibrated probability. Pure: no I/O.

A model is JSON, never a serialised Python object (PairModel.from_json checks every part), evaluated here with
numpy and _items.tree_sum, without scikit-learn; the scores go to the kernel's groupings (kernel.group_scores).
The scoring and the model: docs/fields.md ("How two items are compared", "A trained pair model").
"""
from __future__ import annotations

import json
import math
import struct
from typing import NamedTuple, Sequence

import numpy as np

from . import _items, kernel
from .errors import ConfigMismatch
from .fields import FieldSpec, schema_columns
from .vocabulary import EXACT, FIELD_KIND_CODES, JACCARD, LOCATION, TEXT

_COMPILED_KIND_CODES = {TEXT: _items.TEXT, EXACT: _items.EXACT, LOCATION: _items.LOCATION}
if _COMPILED_KIND_CODES != FIELD_KIND_CODES:
    raise ImportError(f"the compiled item features code the field kinds as {_COMPILED_KIND_CODES}, vocabulary.py as "
                      f"{FIELD_KIND_CODES}: rebuild the package")

MODEL_FORMAT = "neardup-pair-model"
MODEL_VERSION = 1
LOGISTIC, GBM = "logistic", "gradient-boosting"


class PairFeatures(NamedTuple):
    i: np.ndarray         # int32, the first item of each candidate pair
    j: np.ndarray         # int32, the second (i < j)
    features: np.ndarray  # float64 [pairs, columns]: core/fields.schema_columns, NaN where a field is missing


def pair_features(fields: Sequence[FieldSpec], sketches: Sequence[bytes | None], query_only: bool = False
                  ) -> PairFeatures:
    """The candidate pairs of item sketches and their feature rows (query_only: item 0 with every other)."""
    kinds = bytes(FIELD_KIND_CODES[spec.kind] for spec in fields)
    ks = struct.pack(f"={len(fields)}I", *(spec.k for spec in fields))
    pairs, rows = _items.pair_features(sketches, kinds, ks, query_only)
    pairs = np.frombuffer(pairs, np.int32).reshape(-1, 2)
    columns = len(schema_columns(fields))
    return PairFeatures(pairs[:, 0], pairs[:, 1], np.frombuffer(rows, np.float64).reshape(-1, columns))


def model_inputs(fields: Sequence[FieldSpec], features: np.ndarray) -> np.ndarray:
    """What a model reads: every feature column (a missing field's as 0), then per field 1 when both items have
    it. `neardup train` and the server build them here, so they cannot drift apart."""
    firsts = np.cumsum([0] + [len(spec.columns) for spec in fields[:-1]])
    return np.hstack([np.nan_to_num(features, nan=0.0), (~np.isnan(features[:, firsts])).astype(np.float64)])


def input_names(fields: Sequence[FieldSpec]) -> list[str]:
    """The names of model_inputs' columns."""
    return schema_columns(fields) + [f"{spec.name}.present" for spec in fields]


def similarity_columns(fields: Sequence[FieldSpec]) -> list[int]:
    """The feature column of each field's similarity (a Jaccard text field's second: its first is containment)."""
    picks, column = [], 0
    for spec in fields:
        picks.append(column + (1 if spec.kind == TEXT and spec.metric == JACCARD else 0))
        column += len(spec.columns)
    return picks


def weighted(fields: Sequence[FieldSpec], features: np.ndarray) -> np.ndarray:
    """Each pair's weighted mean of its per-field similarities over the fields both items have (0 when they share
    no weighted field)."""
    weights = [spec.weight for spec in fields]
    values = features[:, similarity_columns(fields)]
    present = ~np.isnan(values)
    w = np.where(present, np.array(weights), 0.0)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (np.nan_to_num(values) * w).sum(axis=1) / total, 0.0)


class PairModel:
    """A trained pair classifier, checked and ready to evaluate (from_json)."""

    def __init__(self, document: dict):
        self.document = document
        self.kind = document["kind"]
        self.threshold = float(document["threshold"])
        self.calibration = (float(document["calibration"]["a"]), float(document["calibration"]["b"]))
        if self.kind == LOGISTIC:
            self.coef = np.array(document["coef"], np.float64)
            self.intercept = float(document["intercept"])
        else:
            self.init = float(document["init"])
            self.learning_rate = float(document["learning_rate"])
            trees = document["trees"]
            if not isinstance(trees, list) or not all(isinstance(tree, dict) for tree in trees):
                raise ValueError("trees must be a list of objects")
            sizes = [len(tree["feature"]) for tree in trees]
            offsets = np.cumsum([0] + sizes)[:-1].astype(np.int32)
            # every tree's nodes in one array, children indexing it (a leaf's stay -1), for _items.tree_sum
            self.roots = offsets.tobytes()
            self.nodes = {}
            for key, dtype in (("feature", np.int32), ("threshold", np.float64), ("left", np.int32),
                               ("right", np.int32), ("value", np.float64)):
                parts = [np.array(tree[key], dtype) for tree in trees]
                if any(len(part) != size or part.ndim != 1 for part, size in zip(parts, sizes)):
                    raise ValueError(f"a tree's {key} does not match its nodes")
                if key in ("left", "right"):
                    parts = [np.where(part == -1, -1, part + offset) for part, offset in zip(parts, offsets)]
                self.nodes[key] = np.concatenate(parts or [np.empty(0, dtype)]).astype(dtype).tobytes()

    @classmethod
    def from_json(cls, data: bytes, config_digest: str, fields: Sequence[FieldSpec]) -> "PairModel":
        """ConfigMismatch (one line, saying what to do) for a model that is damaged, of another format, or trained
        on a store of another configuration."""
        fix = "train it again with `neardup train PAIRS --store STORE`"
        try:
            document = json.loads(data.decode("utf-8"))
            if not isinstance(document, dict) or document.get("format") != MODEL_FORMAT:
                raise ValueError("not a neardup pair model")
            if document.get("version") != MODEL_VERSION:
                raise ValueError(f"model version {document.get('version')!r}, this neardup reads {MODEL_VERSION}")
        except (UnicodeDecodeError, ValueError) as error:
            raise ConfigMismatch(f"the store's pair model is damaged ({error}): {fix}") from None
        if document.get("config_digest") != config_digest:
            raise ConfigMismatch(f"the store's pair model was trained for sketch configuration "
                                 f"{document.get('config_digest')!r}, this store's is {config_digest!r}: {fix}")
        names = input_names(fields)
        try:
            if document["inputs"] != names:
                raise ValueError(f"its inputs {document['inputs']} are not this schema's {names}")
            model = cls(document)
            if model.kind == LOGISTIC:
                if model.coef.shape != (len(names),):
                    raise ValueError("coefficients do not match the inputs")
            elif model.kind == GBM:
                model.raw(np.zeros((1, len(names))))  # the compiled walk checks every node
            else:
                raise ValueError(f"unknown model kind {model.kind!r}")
            if not (0.0 <= model.threshold <= 1.0 and all(map(math.isfinite, model.calibration))):
                raise ValueError("threshold or calibration out of range")
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigMismatch(f"the store's pair model is damaged ({error}): {fix}") from None
        return model

    def raw(self, inputs: np.ndarray) -> np.ndarray:
        """The uncalibrated score: the logistic regression's logit, or the boosted trees' sum."""
        if self.kind == LOGISTIC:
            return inputs @ self.coef + self.intercept
        inputs = np.ascontiguousarray(inputs, np.float64)
        nodes = self.nodes
        sums = _items.tree_sum(inputs, inputs.shape[1], nodes["feature"], nodes["threshold"], nodes["left"],
                               nodes["right"], nodes["value"], self.roots)
        return self.init + self.learning_rate * np.frombuffer(sums, np.float64)

    def probability(self, inputs: np.ndarray) -> np.ndarray:
        """The calibrated probability that each pair is a duplicate (Platt scaling of raw)."""
        a, b = self.calibration
        return 1.0 / (1.0 + np.exp(-(a * self.raw(inputs) + b)))


class ItemScorer:
    """An items store's pair scores: weighted per-field similarity, or a model's probability when it has one."""

    def __init__(self, fields: Sequence[FieldSpec], model: PairModel | None = None):
        self.fields = tuple(fields)
        self.model = model

    def scores(self, features: np.ndarray) -> np.ndarray:
        if self.model is not None:
            return self.model.probability(model_inputs(self.fields, features))
        return weighted(self.fields, features)

    def dedup(self, sketches: Sequence[bytes | None], threshold: float, grouping: str, packed: bool = False):
        """kernel.dedup's answer for items: candidate pairs scored, then the kernel's grouping."""
        n = len(sketches)
        found = pair_features(self.fields, sketches)
        matrix = np.full(n * (n - 1) // 2, np.nan)
        matrix[found.j.astype(np.int64) * (found.j - 1) // 2 + found.i] = self.scores(found.features)
        return kernel.group_scores(matrix, n, threshold, grouping, packed)

    def similar(self, query: bytes, sketches: Sequence[bytes], threshold: float) -> list[tuple[int, float]]:
        """(position, score) of each sketch that shares a super token with the query and reaches the threshold."""
        found = pair_features(self.fields, [query, *sketches], query_only=True)
        scores = self.scores(found.features)
        keep = scores >= threshold
        return list(zip((found.j[keep] - 1).tolist(), scores[keep].tolist()))
