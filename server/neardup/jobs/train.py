"""`neardup train PAIRS.jsonl --store S`: a store of texts' metric and threshold (the best expected F1 over the
store's pairs, each pair's chance fitted on the answers), or an items store's pair classifier (seed 000's second
stage), from the user's labelled pairs: what a duplicate is differs per user, and answers decide. When they cannot,
the store is unchanged and the command says why in one line.
The rules and why: docs/commands/neardup-train.md; docs/fields.md ("A trained pair model").
"""
from __future__ import annotations

import dataclasses
import json
import time
from typing import Callable, NamedTuple, Sequence

import numpy as np

from ..core import calibration, kernel
from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.sketch_config import stoplist_digest
from ..core.sketcher import Sketcher
from ..core.item_scoring import (GBM, LOGISTIC, MODEL_FORMAT, MODEL_VERSION, ItemScorer, PairModel, input_names,
                                 model_inputs, weighted)
from ..core.vocabulary import ITEMS, KIND_METRICS, SIMHASH
from ..runtime.served_store import ServedStore
from ..store import SketchStore, open_store
from . import learners
from .pair_sample import (CHECK_ARTICLES, NEAR_SHARE, CandidatePairs, candidate_population, pair_rows,
                          text_candidate_pairs)
from .index import frequent_shingles
from .records import read_records

DEFAULT_FOLDS = 5
#: Bins (bands) of the rule score: where _refusal looks for labelled support, and `neardup label` for coverage.
BINS = 10
#: A model may decide candidates otherwise than the rules without labelled support (_refusal) for at most this
#: share of the pairs it or the rules accept: past it, its figures would not describe it.
UNSUPPORTED_SHARE = 0.25
#: Labelled pairs a band of rule similarity needs, decided by the model otherwise than by the rules, before the
#: model may decide that band's candidates otherwise.
MIN_SUPPORT = 5
#: Platt scaling's L2 penalty: next to none (one slope and an intercept, fitted on every labelled pair).
PLATT_PENALTY = 1e-6
#: How much better (cross-validated F1 on the answers) sketches with another stop-list must separate the answers
#: before train advises re-indexing with it: a few answers' CV figures move by a few hundredths between folds
#: (chosen on the tune split's families, benchmarks/evaluate_families.py).
STOPLIST_MARGIN = 0.03


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


def fit_threshold(scores: np.ndarray, truth: np.ndarray, population: np.ndarray) -> float:
    """The similarity threshold of the best expected F1 over the store's pairs (`population`, their similarities;
    the answers themselves where the store has none), each pair's chance of being a duplicate a logistic fit of the
    answers on similarity. Answers alone leave the threshold anywhere in the gaps between them, and `neardup label`
    answers crowd near the threshold; the store's pairs say how many pairs each cut takes or leaves."""
    chance = learners.fit_logistic(scores[:, None], truth, penalty=PLATT_PENALTY).probability
    values, counts = np.unique(population if len(population) else scores, return_counts=True)
    values, counts = values[::-1], counts[::-1]  # descending: cut i calls the pairs down to values[i] duplicates
    expected = chance(values[:, None]) * counts
    f1 = 2 * np.cumsum(expected) / (np.cumsum(counts) + expected.sum())  # 2 E[tp] / (called + E[duplicates])
    i = int(np.argmax(f1))
    below = values[i + 1] if i + 1 < len(values) else 0.0
    return round(float((values[i] + below) / 2), 4)


def population_weights(scores: np.ndarray, population: np.ndarray) -> np.ndarray:
    """Per labelled pair, how many pairs of the population it stands for: the population's pairs in its bin of the
    score (BINS bands) over the labelled pairs in that bin (at least 1). `neardup label` proposes pairs near the
    threshold far more often than their share of the store's pairs, so unweighted answers would decide as if the
    pairs near a wrong threshold were rare; weighted, F1 on the answers estimates F1 on the store's pairs."""
    edges = np.linspace(0.0, 1.0, BINS + 1)[1:-1]
    labelled_bins, population_bins = np.digitize(scores, edges), np.digitize(population, edges)
    labelled = np.bincount(labelled_bins, minlength=BINS)
    stood_for = np.maximum(np.bincount(population_bins, minlength=BINS), labelled)
    return stood_for[labelled_bins] / labelled[labelled_bins]


def _cross_validated(scores_of: dict[str, np.ndarray], truth: np.ndarray, fold: np.ndarray, folds: int,
                     populations: dict[str, np.ndarray], weight: np.ndarray) -> dict[str, tuple[np.ndarray, dict]]:
    """Per metric: the answers' scores and the cross-validated figures of a threshold fitted on the other folds."""
    fitted = {}
    for metric, scores in scores_of.items():
        decided = np.zeros(len(truth), bool)
        for k in range(folds):
            held = fold == k
            decided[held] = scores[held] >= fit_threshold(scores[~held], truth[~held], populations[metric])
        fitted[metric] = (scores, _f1(decided, truth, weight))
    return fitted


def _similarities(sketch_of: Callable[[str], bytes], a: Sequence[str], b: Sequence[str], k: int,
                  metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Per metric, the similarity of each pair (a[i], b[i]) of sketches."""
    return {metric: np.array([kernel.similarity(sketch_of(x), sketch_of(y), k, metric) for x, y in zip(a, b)])
            for metric in metrics}


class OtherStoplist(NamedTuple):
    """A stop-list train weighs against a store's own, given its corpus (other_stoplists)."""

    label: str          # the line of train's report that shows how the answers separate under it
    sketched: str       # how the texts are sketched under it, in a sentence of the advice
    index_option: str   # the `neardup index` option that makes a store with it
    index_options: dict  # the same, as IndexOptions fields


#: By name: none, and every frequent shingle, copies of one text counted each (what a family of texts derived
#: from one another shares is dropped too; the store's own rule keeps it, as it keeps a popular story).
OTHER_STOPLISTS = {
    "none": OtherStoplist("no stop-list", "without the store's stop-list", "--no-stoplist", {"learn": False}),
    "copies counted": OtherStoplist("copies counted", "with a stop-list that counts copies of one text each",
                                    "--stop-own-share 0", {"stop_own_share": 0.0}),
}


def other_stoplists(store: SketchStore, corpus: str, pairs: list, pool: CandidatePairs, truth: np.ndarray,
                    fold: np.ndarray, folds: int, weight: np.ndarray) -> dict[str, dict]:
    """How the answers separate when the store's texts are sketched with another stop-list (re-sketched from the
    corpus's records, JSON Lines as `neardup index` reads them), by OTHER_STOPLISTS name: per metric, the
    cross-validated F1, and the best metric's threshold. The stop-list decides some kinds of text in opposite
    directions (docs/quality.md: licence versions need it off or stricter, template pages and copies of a popular
    story its own), so the answers must tell. One that is the store's own is left out."""
    candidates = {"none": frozenset(), "copies counted": frequent_shingles(corpus, store.config)}
    candidates = {name: stoplist for name, stoplist in candidates.items() if stoplist != store.stoplist}
    if not candidates:
        return {}
    answered = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
    texts = read_records(corpus, set(answered) | set(pool.a) | set(pool.b), "text")
    lacking = [doc_id for doc_id in answered if doc_id not in texts]
    if lacking:
        raise InvalidArgument(f"--corpus lacks the text of {len(lacking)} answered ids (first: {lacking[0]!r}): "
                              "give the corpus the store was indexed from")
    metrics, k = KIND_METRICS[store.config.kind], store.config.k
    known = [i for i, (a, b) in enumerate(zip(pool.a, pool.b)) if a in texts and b in texts]
    found = {}
    for name, stoplist in candidates.items():
        sketcher = Sketcher(dataclasses.replace(store.config, stoplist_digest=stoplist_digest(stoplist)), stoplist)
        sketches = {doc_id: sketcher.sketch(texts[doc_id]["text"], texts[doc_id].get("lang")) for doc_id in texts}
        scores_of = _similarities(sketches.__getitem__, [a for a, _, _ in pairs], [b for _, b, _ in pairs], k,
                                  metrics)
        populations = _similarities(sketches.__getitem__, [pool.a[i] for i in known], [pool.b[i] for i in known], k,
                                    metrics)
        fitted = _cross_validated(scores_of, truth, fold, folds, populations, weight)
        metric = max(fitted, key=lambda m: fitted[m][1]["f1"])
        found[name] = {"metric": metric, "threshold": fit_threshold(fitted[metric][0], truth, populations[metric]),
                       "cv": fitted[metric][1], "metrics": {m: figures["f1"] for m, (_, figures) in fitted.items()},
                       "stoplist_size": len(stoplist), "index_option": OTHER_STOPLISTS[name].index_option}
    return found


def train_threshold(store: SketchStore, sketches: dict[str, bytes], pairs: list, pairs_path: str, folds: int,
                    write: bool, corpus: str | None = None) -> dict:
    """A store of texts' metric and threshold from labelled pairs (docs/commands/neardup-train.md), stored unless
    write is False or it is refused; returns the report. With `corpus` (the records the store was indexed from),
    also how the answers separate under the other stop-lists (other_stoplists), and advice to re-index with the
    best of them where it separates them better by STOPLIST_MARGIN."""
    served = ServedStore(store)
    current = served.defaults
    truth = np.array([duplicate for _, _, duplicate in pairs], bool)
    duplicates, others = int(truth.sum()), int((~truth).sum())
    if min(duplicates, others) < folds:
        raise InvalidArgument(f"{pairs_path}: the answers hold {duplicates} duplicates and {others} others; "
                              f"{folds}-fold cross-validation needs at least {folds} of each (`neardup label` "
                              "proposes pairs to answer)")
    fold = learners.stratified_folds(truth, folds)
    metrics, k = KIND_METRICS[store.config.kind], store.config.k
    scores_of = _similarities(sketches.__getitem__, [a for a, _, _ in pairs], [b for _, b, _ in pairs], k, metrics)
    # the population `neardup label` proposes from: the store's candidate pairs, scored under its default metric
    pool = text_candidate_pairs(store)
    pooled = sorted(set(pool.a) | set(pool.b))
    populations = _similarities(dict(zip(pooled, store.get_many(pooled))).__getitem__, pool.a, pool.b, k, metrics)
    weight = population_weights(scores_of[current.metric], pool.rule_scores)
    fitted = _cross_validated(scores_of, truth, fold, folds, populations, weight)
    # the metric whose threshold cross-validates best; the store's own wins a tie
    metric = max(fitted, key=lambda m: (fitted[m][1]["f1"], m == current.metric))
    scores, cv_figures = fitted[metric]
    threshold = fit_threshold(scores, truth, populations[metric])
    before = _f1(fitted[current.metric][0] >= current.threshold, truth, weight)
    report = {"texts": True, "pairs": len(pairs), "duplicates": duplicates, "others": others, "folds": folds,
              "metric": metric, "threshold": threshold, "cv": cv_figures,
              "metrics": {m: figures["f1"] for m, (_, figures) in fitted.items()},
              "before": {"threshold": current.threshold, "metric": current.metric,
                         "source": served.threshold_source, "f1": before}}
    everything = _f1(np.ones(len(pairs), bool), truth, weight)["f1"]
    cv = cv_figures["f1"]
    report["refused"] = (
        f"not stored: the answers do not separate by {metric}: a trained threshold cross-validates at F1 {cv:.3f}, "
        f"no better than calling every pair a duplicate ({everything:.3f})") if cv <= everything else (
        f"not stored: {metric} >= {threshold:g} cross-validates at F1 {cv:.3f}, below the store's "
        f"{current.metric} >= {current.threshold:g} ({served.threshold_source}) on the same answers "
        f"({before['f1']:.3f})") if cv < before["f1"] and served.threshold_source != calibration.TRAINED else ""
    if corpus:
        report["stoplists"] = other_stoplists(store, corpus, pairs, pool, truth, fold, folds, weight)
        better = {name: other for name, other in report["stoplists"].items()
                  if other["cv"]["f1"] >= cv + STOPLIST_MARGIN}
        if better:
            name = max(better, key=lambda n: better[n]["cv"]["f1"])
            other = better[name]
            report["advice"] = (
                f"the answers separate better {OTHER_STOPLISTS[name].sketched} ({other['metric']} >= "
                f"{other['threshold']:g} cross-validates at F1 {other['cv']['f1']:.3f}, against {cv:.3f} with the "
                f"store's): re-index the corpus into a new store with `neardup index CORPUS --store NEW "
                f"{other['index_option']}`, then train NEW on these answers")
            report["advised"] = name
    if write and not report["refused"]:
        store.set_threshold({"threshold": threshold, "metric": metric, "source": calibration.TRAINED,
                             "trained_on": len(pairs)})
    return report


def _refusal(figures: dict, rules: dict, scorer: ItemScorer, population: CandidatePairs,
             labelled: tuple[np.ndarray, np.ndarray, np.ndarray], rules_threshold: float) -> str:
    """Why a model (its cross-validated `figures`) must not be stored ("" when it may): it cross-validates worse
    than the rules alone (`rules`) on the candidates, or it decides many sampled candidates otherwise than the
    rules where the labels do not show it right. `labelled`: the labelled candidates' rule scores, the model's
    cross-validated decisions on them, and their labels.

    A model may accept what the rules reject (or the reverse) in a band of rule similarity only where at least
    MIN_SUPPORT labelled pairs of that band were decided so by it, rightly, in cross-validation: otherwise nothing
    says how it does there (random non-duplicates, which share little, leave most bands without such pairs)."""
    if figures["cv"]["f1"] < rules["cv"]["f1"]:
        return (f"cross-validates at F1 {figures['cv']['f1']:.3f} on candidate pairs, below the rules alone "
                f"({rules['cv']['f1']:.3f} at {rules_threshold:g})")
    if not len(population.a):
        return ""
    edges = np.linspace(0.0, 1.0, BINS + 1)[1:-1]
    scores, decided, truth = labelled
    rules, model = population.rule_scores >= rules_threshold, scorer.scores(population.features) >= scorer.model.threshold
    bands, labelled_bands = np.digitize(population.rule_scores, edges), np.digitize(scores, edges)
    unsupported = 0.0
    stands_for = population.stands_for
    for accepts in (True, False):  # the model accepts what the rules reject, and the reverse
        right = (decided == accepts) & (truth == accepts) & ((scores >= rules_threshold) != accepts)
        support = np.bincount(labelled_bands[right], minlength=BINS)
        differs = (model == accepts) & (rules != accepts)
        unsupported += float(stands_for[differs & (support[bands] < MIN_SUPPORT)].sum())
    if unsupported > UNSUPPORTED_SHARE * max(float(stands_for[model].sum()), float(stands_for[rules].sum()), 1.0):
        return (f"decides about {unsupported:,.0f} of the store's ~{stands_for.sum():,.0f} candidate pairs otherwise "
                f"than the rules where fewer than {MIN_SUPPORT} labelled pairs show it right")
    return ""


#: The learners compared (jobs/learners.py), each a function of (inputs, labels) to a fitted model.
LEARNERS = {LOGISTIC: learners.fit_logistic, GBM: learners.fit_boosting}


def _dump(kind: str, model: learners.Logistic | learners.Boosting) -> dict:
    """The fitted model as the JSON values core/item_scoring.PairModel reads."""
    if kind == LOGISTIC:
        document = {"coef": model.coef.tolist(), "intercept": model.intercept}
    else:
        document = {"init": model.init, "learning_rate": model.learning_rate,
                    "trees": [tree._asdict() for tree in model.trees]}
    return {"kind": kind, **document}


def train(pairs_path: str, store_path: str, folds: int = DEFAULT_FOLDS, write: bool = True,
          corpus: str | None = None) -> dict:
    """Fits, compares, stores (unless write is False) and returns the report: a store of texts' threshold
    (train_threshold; with `corpus`, also whether the answers separate better without its stop-list), else an
    items store's pair model."""
    started = time.monotonic()
    pairs = read_pairs(pairs_path)
    with open_store(store_path, readonly=not write) as store:
        config = store.config
        if config.kind == SIMHASH:
            raise ConfigMismatch(f"store {store_path} holds simhash fingerprints; train is for a bottom-K store of "
                                 "texts (its threshold) or an items store (a pair model)")
        ids = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
        sketches = dict(zip(ids, store.get_many(ids)))
        missing = [doc_id for doc_id, sketch in sketches.items() if sketch is None]
        if missing:
            raise InvalidArgument(f"{len(missing)} ids of {pairs_path} are not stored in {store_path} (first: "
                                  f"{missing[0]!r}): index them first")
        if config.kind != ITEMS:
            report = train_threshold(store, sketches, pairs, pairs_path, folds, write, corpus)
            return {**report, "elapsed": time.monotonic() - started}
        if corpus:
            raise InvalidArgument(f"store {store_path} holds items with fields, which have no stop-list: --corpus is "
                                  "for a store of texts")
        rows, scored = pair_rows(config.fields, sketches, pairs)
        truth = np.array([duplicate for _, _, duplicate in pairs])
        inputs, labels = model_inputs(config.fields, rows[scored]), truth[scored]
        if min(labels.sum(), (~labels).sum()) < folds:
            raise InvalidArgument(f"{pairs_path}: the pairs that share a super token hold {int(labels.sum())} "
                                  f"duplicates and {int((~labels).sum())} others; {folds}-fold cross-validation "
                                  f"needs at least {folds} of each (`neardup label` proposes candidate pairs)")
        rules = ServedStore(store, pair_model=False)
        fields, rules_threshold = rules.items.fields, rules.defaults.threshold  # the store's weights and threshold
        rule_scores = weighted(fields, rows[scored])
        population = candidate_population(store, near_articles=CHECK_ARTICLES)
        judged = rule_scores >= NEAR_SHARE * rules_threshold  # the figures' pairs (docs/commands/neardup-train.md)
        weight = judged.astype(np.float64)
        report = {"pairs": len(pairs), "scored": int(scored.sum()), "duplicates": int(truth.sum()),
                  "judged": int(judged.sum()), "judged_floor": NEAR_SHARE * rules_threshold,
                  "duplicates_never_scored": int((truth & ~scored).sum()),
                  "others_never_scored": int((~truth & ~scored).sum()), "folds": folds,
                  "candidates_sampled": len(population.a),
                  "rules": {"threshold": rules_threshold, "cv": _f1(rule_scores >= rules_threshold, labels, weight)},
                  "models": {}}
        fitted = {}
        judged_duplicates, judged_others = int(labels[judged].sum()), int((~labels[judged]).sum())
        too_few = min(judged_duplicates, judged_others) < folds
        for kind, fit in ({} if too_few else LEARNERS).items():
            raw = learners.cross_validated(fit, inputs, labels, folds)
            platt = learners.fit_logistic(raw[:, None], labels, weight, penalty=PLATT_PENALTY)
            a, b = float(platt.coef[0]), platt.intercept
            probability = learners.sigmoid(a * raw + b)
            threshold, scores = _best_threshold(probability, labels, weight)
            report["models"][kind] = {"cv": scores, "threshold": threshold}
            fitted[kind] = (fit, a, b, threshold, probability >= threshold)
        # the best by cross-validated F1 that may be stored (_refusal), else none
        kind = document = data = None
        for candidate in sorted(fitted, key=lambda name: -report["models"][name]["cv"]["f1"]):
            fit, a, b, threshold, decided = fitted[candidate]
            candidate_document = {
                "format": MODEL_FORMAT, "version": MODEL_VERSION, "config_digest": config.digest(),
                "inputs": input_names(config.fields), "threshold": threshold, "calibration": {"a": a, "b": b},
                "cv": report["models"][candidate]["cv"], "trained_on": report["pairs"],
                **_dump(candidate, fit(inputs, labels))}
            candidate_data = json.dumps(candidate_document, sort_keys=True).encode()
            model = PairModel.from_json(candidate_data, config.digest(), config.fields)  # as the server will
            why = _refusal(report["models"][candidate], report["rules"], ItemScorer(fields, model), population,
                           (rule_scores, decided, labels), rules_threshold)
            report["models"][candidate]["refused"] = why
            if not why:
                kind, document, data = candidate, candidate_document, candidate_data
                break
        report["refused"] = "" if kind is not None else (
            f"not stored: the labelled pairs scoring at least {NEAR_SHARE * rules_threshold:.3g} (half the rules' "
            f"threshold), where a model is judged, hold {judged_duplicates} duplicates and {judged_others} others; "
            f"{folds}-fold cross-validation needs at least {folds} of each (label pairs there: `neardup label` "
            "proposes them)") if too_few else "" if kind is not None else (
            "not stored: " + "; ".join(f"{name} {figures['refused']}" for name, figures in
                                       report["models"].items() if figures.get("refused"))
            + " (label pairs there: `neardup label` proposes them)")
        if write and kind is not None:
            store.set_model(data)
    report.update(chosen=kind, threshold=None if document is None else document["threshold"],
                  elapsed=time.monotonic() - started, model=document)
    return report


