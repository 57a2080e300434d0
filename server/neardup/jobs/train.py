"""`neardup train PAIRS.jsonl --store S`: a pair classifier for an items store (seed 000's second stage).

Labelled pairs ({"a": id, "b": id, "duplicate": true|false}, both ids stored) become feature rows: the per-field
similarities and exact-field matches the server computes (core/item_scoring.py), for the pairs that share a super token
(the only ones the server ever scores; a labelled duplicate that shares none is a miss no model can fix, and is
counted as one). A logistic regression and a gradient boosting (scikit-learn) are compared by cross-validated F1
(stratified folds); each one's cross-validated scores are calibrated by Platt scaling, and its decision threshold
is the probability where the cross-validated F1 peaks. The better one is refitted on every pair and stored
through the store interface (SketchStore.set_model) as JSON: coefficients, or the trees as arrays; no Python objects.
It is tied to the store's configuration digest, and the server evaluates it with numpy alone.

scikit-learn comes with the `train` extra: pip install '.[train]'.
"""
from __future__ import annotations

import json
import time

import numpy as np

from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.item_scoring import (GBM, LOGISTIC, MODEL_FORMAT, MODEL_VERSION, PairModel, input_names, model_inputs,
                                 pair_features)
from ..core.vocabulary import ITEMS
from ..store import open_store

DEFAULT_FOLDS = 5
#: Gradient boosting's size: shallow trees, as seed 000's handful of features needs no more.
GBM_TREES, GBM_DEPTH, GBM_LEARNING_RATE = 150, 3, 0.1


def read_pairs(path: str) -> list[tuple[str, str, bool]]:
    """(a, b, duplicate) of each line; InvalidArgument names the line that is wrong."""
    pairs = []
    try:
        with open(path, encoding="utf-8") as stream:
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                    a, b, duplicate = record["a"], record["b"], record["duplicate"]
                except (ValueError, TypeError, KeyError):
                    raise InvalidArgument(f"{path} line {number}: give {{\"a\": id, \"b\": id, \"duplicate\": "
                                          "true|false}") from None
                if not (isinstance(a, str) and isinstance(b, str) and isinstance(duplicate, bool)):
                    raise InvalidArgument(f"{path} line {number}: a and b are ids (strings), duplicate true or false")
                pairs.append((a, b, duplicate))
    except OSError as error:
        raise InvalidArgument(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidArgument(f"{path} is not UTF-8") from None
    return pairs


def pair_rows(fields, sketches: dict[str, bytes], pairs) -> tuple[np.ndarray, np.ndarray]:
    """The feature rows of the pairs (NaN rows where a pair shares no super token), and which pairs are scored."""
    width = sum(len(spec.columns) for spec in fields)
    rows, scored = np.full((len(pairs), width), np.nan), np.zeros(len(pairs), bool)
    for row, (a, b, _) in enumerate(pairs):
        found = pair_features(fields, [sketches[a], sketches[b]])
        if len(found.i):
            rows[row], scored[row] = found.features[0], True
    return rows, scored


def _best_threshold(probability: np.ndarray, truth: np.ndarray, missed: int) -> tuple[float, dict]:
    """The probability threshold of the best F1 (pairs never scored count as missed duplicates)."""
    best = (-1.0, 0.5, {})
    for threshold in np.unique(np.round(probability, 4)):
        predicted = probability >= threshold
        tp = int((predicted & truth).sum())
        fp = int((predicted & ~truth).sum())
        fn = int((~predicted & truth).sum()) + missed
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        if f1 > best[0]:
            best = (f1, float(threshold), {"f1": f1, "precision": tp / (tp + fp), "recall": tp / (tp + fn)})
    return best[1], best[2]


def _candidates(folds: int):
    from sklearn.ensemble import GradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    split = StratifiedKFold(folds, shuffle=True, random_state=0)
    return split, {
        LOGISTIC: lambda: LogisticRegression(max_iter=5000, C=1.0),
        GBM: lambda: GradientBoostingClassifier(n_estimators=GBM_TREES, max_depth=GBM_DEPTH,
                                                learning_rate=GBM_LEARNING_RATE, random_state=0),
    }


def _dump(kind: str, model, inputs: np.ndarray) -> dict:
    """The fitted model as JSON values; checked against scikit-learn's own scores."""
    if kind == LOGISTIC:
        document = {"coef": model.coef_[0].tolist(), "intercept": float(model.intercept_[0])}
    else:
        trees = [estimator.tree_ for estimator in model.estimators_[:, 0]]
        tree_sum = sum(tree.predict(inputs.astype(np.float32))[:, 0] for tree in trees) if trees else 0
        init = float(np.mean(model.decision_function(inputs) - model.learning_rate * tree_sum))
        document = {"init": init, "learning_rate": float(model.learning_rate),
                    "trees": [{"feature": tree.feature.tolist(), "threshold": tree.threshold.tolist(),
                               "left": tree.children_left.tolist(), "right": tree.children_right.tolist(),
                               "value": tree.value[:, 0, 0].tolist()} for tree in trees]}
    return {"kind": kind, **document}


def train(pairs_path: str, store_path: str, folds: int = DEFAULT_FOLDS, write: bool = True) -> dict:
    """Fits, compares, stores (unless write is False) and returns the report."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_predict

    started = time.monotonic()
    pairs = read_pairs(pairs_path)
    with open_store(store_path, readonly=not write) as store:
        config = store.config
        if config.kind != ITEMS:
            raise ConfigMismatch(f"store {store_path} holds {config.kind} sketches of texts; a pair model is for "
                                 "an items store (`neardup index --fields SCHEMA`)")
        ids = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
        sketches = dict(zip(ids, store.get_many(ids)))
        missing = [doc_id for doc_id, sketch in sketches.items() if sketch is None]
        if missing:
            raise InvalidArgument(f"{len(missing)} ids of {pairs_path} are not stored in {store_path} (first: "
                                  f"{missing[0]!r}): index them first")
        rows, scored = pair_rows(config.fields, sketches, pairs)
        truth = np.array([duplicate for _, _, duplicate in pairs])
        missed = int((truth & ~scored).sum())
        inputs, labels = model_inputs(config.fields, rows[scored]), truth[scored]
        if min(labels.sum(), (~labels).sum()) < folds:
            raise InvalidArgument(f"{pairs_path}: the pairs that share a super token hold {int(labels.sum())} "
                                  f"duplicates and {int((~labels).sum())} others; {folds}-fold cross-validation "
                                  "needs at least that many of each")
        split, makers = _candidates(folds)
        report = {"pairs": len(pairs), "scored": int(scored.sum()), "duplicates": int(truth.sum()),
                  "duplicates_never_scored": missed, "folds": folds, "models": {}}
        chosen = None
        for kind, make in makers.items():
            raw = cross_val_predict(make(), inputs, labels, cv=split, method="decision_function")
            platt = LogisticRegression(C=1e6, max_iter=1000).fit(raw[:, None], labels)
            a, b = float(platt.coef_[0, 0]), float(platt.intercept_[0])
            probability = 1.0 / (1.0 + np.exp(-(a * raw + b)))
            threshold, scores = _best_threshold(probability, labels, missed)
            report["models"][kind] = {"cv": scores, "threshold": threshold}
            if chosen is None or scores["f1"] > report["models"][chosen[0]]["cv"]["f1"]:
                chosen = (kind, make, a, b, threshold)
        kind, make, a, b, threshold = chosen
        document = {"format": MODEL_FORMAT, "version": MODEL_VERSION, "config_digest": config.digest(),
                    "inputs": input_names(config.fields), "threshold": threshold,
                    "calibration": {"a": a, "b": b}, "cv": report["models"][kind]["cv"], "trained_on": report["pairs"],
                    **_dump(kind, make().fit(inputs, labels), inputs)}
        data = json.dumps(document, sort_keys=True).encode()
        PairModel.from_json(data, config.digest(), config.fields)  # what the server will check at start
        if write:
            store.set_model(data)
    report.update(chosen=kind, threshold=threshold, elapsed=time.monotonic() - started, model=document)
    return report


