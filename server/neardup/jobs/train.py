"""`neardup train PAIRS.jsonl --store S`: a pair classifier for an items store (seed 000's second stage).

Labelled pairs ({"a": id, "b": id, "duplicate": true|false}, both ids stored) become feature rows: the per-field
similarities and exact-field matches the server computes (core/item_scoring.py). Only the pairs that share a super
token are learned from: they are the only ones the server ever scores. The others are reported, not learned from
as if they were typical: a labelled duplicate that shares none is a miss no model can fix, and a random
non-duplicate that shares none teaches only "sharing anything means duplicate", which is false among candidates.

A model is judged where it will decide, on the store's candidates (jobs/pair_sample.py): each labelled pair is
weighted by how common its rule score is among a sample of the candidates against how common among the labels
(candidate_weights), so a few labelled non-duplicates with low scores stand for the many candidates like them. A
logistic regression and a gradient boosting (scikit-learn) are compared by weighted cross-validated F1
(stratified folds); each one's cross-validated scores are calibrated by Platt scaling on the same weights, and its
decision threshold is the probability where the weighted F1 peaks. Each is refitted on every pair; the better one
that may be stored is stored through the store interface (SketchStore.set_model) as JSON: coefficients, or the
trees as arrays; no Python objects. It is tied to the store's configuration digest, and the server evaluates it
with numpy alone.

A model may not be stored when it cross-validates worse than the rules alone (the store's default threshold on
its weighted field similarity) on the same weighted pairs, or when it would decide many sampled candidates
otherwise than the rules in bands of rule similarity where too few labelled pairs show it right there
(_refusal): a few random non-duplicates cannot stand for thousands of candidates. When neither may, the store is
unchanged and the command says why of each in one line.

scikit-learn comes with the `train` extra: pip install '.[train]'.
"""
from __future__ import annotations

import json
import time

import numpy as np

from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.item_scoring import (GBM, LOGISTIC, MODEL_FORMAT, MODEL_VERSION, ItemScorer, PairModel, input_names,
                                 model_inputs, weighted)
from ..core.vocabulary import ITEMS
from ..runtime.deduplicator import Deduplicator
from ..store import open_store
from .pair_sample import CandidatePairs, pair_rows, sample_candidate_pairs

DEFAULT_FOLDS = 5
#: Bins of the rule score by which labelled pairs are weighted against the store's candidates.
BINS = 10
#: A model may decide candidates otherwise than the rules without labelled support (_refusal) for at most this
#: share of the pairs it or the rules accept: past it, its figures would not describe it.
UNSUPPORTED_SHARE = 0.25
#: Labelled pairs a band of rule similarity needs, decided by the model otherwise than by the rules, before the
#: model may decide that band's candidates otherwise.
MIN_SUPPORT = 5
#: Gradient boosting's size: shallow trees, as seed 000's handful of features needs no more.
GBM_TREES, GBM_DEPTH, GBM_LEARNING_RATE = 150, 3, 0.1


def read_pairs(path: str, unsure: bool = False) -> list[tuple[str, str, bool | None]]:
    """(a, b, duplicate) of each line; a null duplicate (`neardup label`'s "unsure") is left out, or kept as None
    with `unsure`; InvalidArgument names the line that is wrong."""
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
                                          "true|false|null}") from None
                if not (isinstance(a, str) and isinstance(b, str) and isinstance(duplicate, (bool, type(None)))):
                    raise InvalidArgument(f"{path} line {number}: a and b are ids (strings), duplicate true, false "
                                          "or null (unsure)")
                if duplicate is not None or unsure:
                    pairs.append((a, b, duplicate))
    except OSError as error:
        raise InvalidArgument(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidArgument(f"{path} is not UTF-8") from None
    return pairs


def _f1(predicted: np.ndarray, truth: np.ndarray, weight: np.ndarray) -> dict:
    """Weighted F1, precision and recall of decisions against labels."""
    tp = float(weight[predicted & truth].sum())
    fp = float(weight[predicted & ~truth].sum())
    fn = float(weight[~predicted & truth].sum())
    return {"f1": 2 * tp / (2 * tp + fp + fn) if tp else 0.0, "precision": tp / (tp + fp) if tp else 0.0,
            "recall": tp / (tp + fn) if tp else 0.0}


def _best_threshold(probability: np.ndarray, truth: np.ndarray, weight: np.ndarray) -> tuple[float, dict]:
    """The probability threshold of the best weighted F1."""
    best = (-1.0, 0.5, {})
    for threshold in np.unique(np.round(probability, 4)):
        scores = _f1(probability >= threshold, truth, weight)
        if scores["f1"] > best[0]:
            best = (scores["f1"], float(threshold), scores)
    return best[1], best[2]


def candidate_weights(labelled: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Importance weights that make the labelled candidate pairs stand for the store's candidates: per bin of the
    rule score (BINS equal bins on [0, 1]), the candidates' share over the labelled pairs' share, normalised to a
    mean of 1."""
    edges = np.linspace(0.0, 1.0, BINS + 1)[1:-1]
    wanted = np.bincount(np.digitize(population, edges), minlength=BINS) / max(len(population), 1)
    held = np.bincount(np.digitize(labelled, edges), minlength=BINS) / max(len(labelled), 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(held > 0, wanted / held, 0.0)
    weight = ratio[np.digitize(labelled, edges)]
    return weight / weight.mean() if weight.sum() else np.ones(len(labelled))


def _refusal(figures: dict, rules: dict, scorer: ItemScorer, population: CandidatePairs,
             labelled: tuple[np.ndarray, np.ndarray], rules_threshold: float) -> str:
    """Why a model (its cross-validated `figures`) must not be stored ("" when it may): it cross-validates worse
    than the rules alone (`rules`) on the candidates, or it decides many sampled candidates otherwise than the
    rules where the labels do not show it right. `labelled`: the labelled candidates' rule scores and the model's
    cross-validated decisions on them.

    A model may accept what the rules reject (or the reverse) in a band of rule similarity only where at least
    MIN_SUPPORT labelled pairs of that band were decided so by it in cross-validation: otherwise nothing says how
    it does there (random non-duplicates, which share little, leave most bands without such pairs)."""
    if figures["cv"]["f1"] < rules["cv"]["f1"]:
        return (f"cross-validates at F1 {figures['cv']['f1']:.3f} on candidate pairs, below the rules alone "
                f"({rules['cv']['f1']:.3f} at {rules_threshold:g})")
    if not len(population.a):
        return ""
    edges = np.linspace(0.0, 1.0, BINS + 1)[1:-1]
    scores, decided = labelled
    rules, model = population.rule_scores >= rules_threshold, scorer.scores(population.features) >= scorer.model.threshold
    bands, labelled_bands = np.digitize(population.rule_scores, edges), np.digitize(scores, edges)
    unsupported = 0
    for accepts in (True, False):  # the model accepts what the rules reject, and the reverse
        support = np.bincount(labelled_bands[(decided == accepts) & ((scores >= rules_threshold) != accepts)],
                              minlength=BINS)
        differs = (model == accepts) & (rules != accepts)
        unsupported += int(np.count_nonzero(differs & (support[bands] < MIN_SUPPORT)))
    if unsupported > UNSUPPORTED_SHARE * max(int(model.sum()), int(rules.sum()), 1):
        return (f"decides {unsupported:,} of {len(population.a):,} sampled candidate pairs otherwise than the "
                f"rules where fewer than {MIN_SUPPORT} labelled pairs show it right")
    return ""


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
        inputs, labels = model_inputs(config.fields, rows[scored]), truth[scored]
        if min(labels.sum(), (~labels).sum()) < folds:
            raise InvalidArgument(f"{pairs_path}: the pairs that share a super token hold {int(labels.sum())} "
                                  f"duplicates and {int((~labels).sum())} others; {folds}-fold cross-validation "
                                  "needs at least that many of each (`neardup label` proposes candidate pairs)")
        rules = Deduplicator(store, pair_model=False)
        fields, rules_threshold = rules.items.fields, rules.defaults.threshold  # the store's weights and threshold
        rule_scores = weighted(fields, rows[scored])
        population = sample_candidate_pairs(store)
        weight = candidate_weights(rule_scores, population.rule_scores)
        report = {"pairs": len(pairs), "scored": int(scored.sum()), "duplicates": int(truth.sum()),
                  "duplicates_never_scored": int((truth & ~scored).sum()),
                  "others_never_scored": int((~truth & ~scored).sum()), "folds": folds,
                  "candidates_sampled": len(population.a),
                  "rules": {"threshold": rules_threshold, "cv": _f1(rule_scores >= rules_threshold, labels, weight)},
                  "models": {}}
        split, makers = _candidates(folds)
        fitted = {}
        for kind, make in makers.items():
            raw = cross_val_predict(make(), inputs, labels, cv=split, method="decision_function")
            platt = LogisticRegression(C=1e6, max_iter=1000).fit(raw[:, None], labels, sample_weight=weight)
            a, b = float(platt.coef_[0, 0]), float(platt.intercept_[0])
            probability = 1.0 / (1.0 + np.exp(-(a * raw + b)))
            threshold, scores = _best_threshold(probability, labels, weight)
            report["models"][kind] = {"cv": scores, "threshold": threshold}
            fitted[kind] = (make, a, b, threshold, probability >= threshold)
        # the best by cross-validated F1 that may be stored (_refusal), else none
        kind = document = data = None
        for candidate in sorted(fitted, key=lambda name: -report["models"][name]["cv"]["f1"]):
            make, a, b, threshold, decided = fitted[candidate]
            candidate_document = {
                "format": MODEL_FORMAT, "version": MODEL_VERSION, "config_digest": config.digest(),
                "inputs": input_names(config.fields), "threshold": threshold, "calibration": {"a": a, "b": b},
                "cv": report["models"][candidate]["cv"], "trained_on": report["pairs"],
                **_dump(candidate, make().fit(inputs, labels), inputs)}
            candidate_data = json.dumps(candidate_document, sort_keys=True).encode()
            model = PairModel.from_json(candidate_data, config.digest(), config.fields)  # as the server will
            why = _refusal(report["models"][candidate], report["rules"], ItemScorer(fields, model), population,
                           (rule_scores, decided), rules_threshold)
            report["models"][candidate]["refused"] = why
            if not why:
                kind, document, data = candidate, candidate_document, candidate_data
                break
        report["refused"] = "" if kind is not None else (
            "not stored: " + "; ".join(f"{name} {figures['refused']}" for name, figures in
                                       report["models"].items() if figures.get("refused"))
            + " (label pairs there: `neardup label` proposes them)")
        if write and kind is not None:
            store.set_model(data)
    report.update(chosen=kind, threshold=None if document is None else document["threshold"],
                  elapsed=time.monotonic() - started, model=document)
    return report


