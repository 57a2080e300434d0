"""`neardup train PAIRS.jsonl --store S`: a store of texts' metric and threshold (the best expected F1 over the
store's pairs, each pair's chance fitted on the answers), or an items store's pair classifier (seed 000's second
stage), from the user's labelled pairs: what a duplicate is differs per user, and answers decide. When they cannot,
the store is unchanged and the command says why in one line.
The rules and why: docs/commands/neardup-train.md; docs/fields.md ("A trained pair model").
"""
from __future__ import annotations

import dataclasses
import json
import shlex
import time
from typing import Callable, NamedTuple, Sequence

import numpy as np

from ..core import calibration, kernel
from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.sketch_config import SketchConfig, stoplist_digest
from ..core.sketcher import Sketcher
from ..core.item_scoring import (GBM, LOGISTIC, MODEL_FORMAT, MODEL_VERSION, ItemScorer, PairModel, input_names,
                                 model_inputs, weighted)
from ..core.vocabulary import ITEMS, KIND_METRICS, MAX_K, SIMHASH
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
#: The L2 penalty of the chance model (a logistic fit of the answers on every setting's similarity) that weighs the
#: settings against each other: the similarities are alike, and a few dozen answers separate them often, which an
#: unpenalised fit answers with coefficients growing without bound (chosen on the tune split's families,
#: benchmarks/answer_draws.py).
CHANCE_PENALTY = 0.1
#: Settings whose expected F1 over the store's pairs lies within this of the best one's are not told apart by it:
#: the answers' cross-validated F1 chooses among them (the store's current setting its F1 on the answers).
EXPECTED_TIE = 0.01


def read_pairs(path: str) -> list[tuple[str, str, bool | None]]:
    """(a, b, duplicate) of each line, a null duplicate (`neardup label`'s "unsure") as None (last_answers says
    which count); InvalidArgument names the line that is wrong."""
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
                if a == b:
                    raise InvalidArgument(f"{path} line {number}: a and b are one id ({a!r}): a pair is two articles")
                pairs.append((a, b, duplicate))
    except OSError as error:
        raise InvalidArgument(f"cannot read {path}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidArgument(f"{path} is not UTF-8") from None
    return pairs


def last_answers(pairs: list[tuple[str, str, bool | None]],
                 unsure: bool = False) -> tuple[list[tuple[str, str, bool | None]], int]:
    """One answer per pair, in either order: its last (answer files joined, or a session resumed on another's
    file), the unsure ones left out unless `unsure`; and how many earlier answers the later ones replaced. A pair
    answered twice would count twice, and its copies in other folds would cross-validate on themselves."""
    latest: dict[tuple[str, str], tuple[str, str, bool | None]] = {}
    for a, b, duplicate in pairs:
        latest[min(a, b), max(a, b)] = (a, b, duplicate)
    answers = [answer for answer in latest.values() if unsure or answer[2] is not None]
    return answers, len(pairs) - len(latest)


def answered_sketches(store: SketchStore, pairs: list[tuple[str, str, bool | None]], pairs_path: str
                      ) -> dict[str, bytes]:
    """The stored sketch of every article the answers name; InvalidArgument naming the first the store does not
    hold (answers given on another store, or articles not indexed yet), so none is trained on or answered into."""
    ids = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
    sketches = dict(zip(ids, store.get_many(ids)))
    missing = [doc_id for doc_id, sketch in sketches.items() if sketch is None]
    if missing:
        raise InvalidArgument(f"{len(missing)} ids of {pairs_path} are not stored in {store.location} (first: "
                              f"{missing[0]!r}): answers given on another store, or articles to index first")
    return sketches


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


def answered_chance(chance: np.ndarray, truth: np.ndarray, answered: np.ndarray | None) -> np.ndarray:
    """Each of the store's pairs' chance of being a duplicate, but the answered ones' (`answered`: each answer's
    position among those pairs, -1 where it is not one of them), which is their answer: a pair the user answered is
    no guess. `neardup label` proposes the pairs a fitted chance knows least, near where the cut is decided."""
    if answered is None:
        return chance
    chance, inside = chance.copy(), answered >= 0
    chance[answered[inside]] = truth[inside]
    return chance


def fit_threshold(scores: np.ndarray, truth: np.ndarray, population: np.ndarray,
                  answered: np.ndarray | None = None) -> float:
    """The similarity threshold of the best expected F1 over the store's pairs (`population`, their similarities;
    the answers themselves where the store has none), each pair's chance of being a duplicate a logistic fit of the
    answers on similarity, but the answered pairs' (answered_chance). Answers alone leave the threshold anywhere in
    the gaps between them, and `neardup label` answers crowd near the threshold; the store's pairs say how many
    pairs each cut takes or leaves. The cut lies among the answers: above the lowest, at most the highest."""
    fitted = learners.fit_logistic(scores[:, None], truth, penalty=PLATT_PENALTY).probability
    if not len(population):
        population, answered = scores, None
    order = np.argsort(-population, kind="stable")
    chance, values = answered_chance(fitted(population[:, None]), truth, answered)[order], population[order]
    last = np.append(values[1:] != values[:-1], True)  # each value's last pair: cuts fall between values
    # descending: cut i calls the pairs down to values[i] duplicates
    values, expected, called = values[last], np.cumsum(chance)[last], np.flatnonzero(last) + 1
    f1 = 2 * expected / (called + chance.sum())  # 2 E[tp] / (called + E[duplicates])
    cuts = (values + np.append(values[1:], 0.0)) / 2
    # a cut below every answer (or above all) calls pairs no answer resembles by the fit's extrapolation alone: a
    # store re-indexed on train's advice holds chance pairs lower than any answer proposed on the store before
    among_answers = (cuts > scores.min()) & (cuts <= scores.max())
    i = int(np.argmax(np.where(among_answers, f1, -1.0))) if among_answers.any() else int(np.argmax(f1))
    return round(float(cuts[i]), 4)


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
                     populations: dict[str, np.ndarray], weight: np.ndarray,
                     answered: np.ndarray) -> dict[str, tuple[np.ndarray, dict]]:
    """Per metric: the answers' scores and the cross-validated figures of a threshold fitted on the other folds
    (only their answers known among the store's pairs: answered_chance)."""
    fitted = {}
    for metric, scores in scores_of.items():
        decided = np.zeros(len(truth), bool)
        for k in range(folds):
            held = fold == k
            decided[held] = scores[held] >= fit_threshold(scores[~held], truth[~held], populations[metric],
                                                          answered[~held])
        fitted[metric] = (scores, _f1(decided, truth, weight))
    return fitted


def _similarities(sketch_of: Callable[[str], bytes], a: Sequence[str], b: Sequence[str], k: int,
                  metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Per metric, the similarity of each pair (a[i], b[i]) of sketches."""
    return {metric: np.array([kernel.similarity(sketch_of(x), sketch_of(y), k, metric) for x, y in zip(a, b)])
            for metric in metrics}


class OtherStoplist(NamedTuple):
    """A way to sketch a store's texts that train weighs against the store's own, given its corpus (other_stoplists):
    another stop-list, and the sketch size."""

    label: str          # the line of train's report that shows how the answers separate under it
    sketched: str       # how the texts are sketched under it, in a sentence of the advice
    index_option: str   # the `neardup index` option that makes a store with its stop-list
    index_options: dict  # the same, as IndexOptions fields
    stoplist: str = ""  # the stop-list it sketches with, an OTHER_STOPLISTS name: "" its own
    k_factor: int = 1   # its sketch size: the store's K times this


#: By name: none, and every frequent shingle, copies of one text counted each (what a family of texts derived
#: from one another shares is dropped too; the store's own rule keeps it, as it keeps a popular story).
_STOPLISTS = {
    "none": OtherStoplist("no stop-list", "without the store's stop-list", "--no-stoplist", {"learn": False}),
    "copies counted": OtherStoplist("copies counted", "with a stop-list that counts copies of one text each",
                                    "--stop-own-share 0", {"stop_own_share": 0.0}),
}
#: Those stop-lists, and each in sketches of twice the store's size: a long text's versions differ in a few of its
#: sentences, which a sketch of K values samples too sparsely to tell them from its copies (docs/quality.md; the
#: advice says what it costs).
OTHER_STOPLISTS = {**_STOPLISTS, **{
    f"{name}, twice k": other._replace(label=f"{other.label}, 2k", sketched=f"{other.sketched}, in sketches of twice "
                                       "the size", stoplist=name, k_factor=2) for name, other in _STOPLISTS.items()}}


def sketch_config(config: SketchConfig, stoplist: str) -> SketchConfig:
    """The configuration `config`'s texts are sketched with under another way (OTHER_STOPLISTS name; its stop-list's
    digest aside): the store's, at its sketch size. A size past MAX_K is not offered (resketched)."""
    return dataclasses.replace(config, k=config.k * OTHER_STOPLISTS[stoplist].k_factor)


def reindex_options(config: SketchConfig, stoplist: str) -> dict:
    """The IndexOptions fields that make a new store of `config`'s texts sketched another way (OTHER_STOPLISTS
    name): the one train weighed, so the one its advice names (a store indexed with another shingle unit, size,
    language or word length keeps it; the stop-list's cut is index's default, as train's copies-counted one is)."""
    other = sketch_config(config, stoplist)
    return {"unit": other.unit, "k": other.k, "lang": other.lang, "min_word_len": other.min_word_len,
            **OTHER_STOPLISTS[stoplist].index_options}


def index_options(config: SketchConfig, stoplist: str) -> str:
    """reindex_options as `neardup index` options: those that differ from the defaults, and the stop-list's."""
    defaults, other = SketchConfig(), sketch_config(config, stoplist)
    options = [f"{flag} {shlex.quote(str(getattr(other, name)))}" for name, flag in
               (("unit", "--unit"), ("k", "-k"), ("lang", "--lang"), ("min_word_len", "--min-word-len"))
               if getattr(other, name) != getattr(defaults, name)]
    return " ".join(options + [OTHER_STOPLISTS[stoplist].index_option])


class Setting(NamedTuple):
    """A way to serve the store, weighed on the answers: a stop-list (OTHER_STOPLISTS name; "" the store's own),
    a metric and a threshold, with the similarities it sees."""

    stoplist: str
    metric: str
    threshold: float
    answers: np.ndarray     # each answered pair's similarity under this stop-list and metric
    population: np.ndarray  # each of the store's candidate pairs' (the rows `known` keeps: _expected_f1)
    figures: dict           # on the answers: cross-validated (a trained threshold) or as they are (the store's)


def _trained_settings(stoplist: str, scores_of: dict[str, np.ndarray], populations: dict[str, np.ndarray],
                      truth: np.ndarray, fold: np.ndarray, folds: int, weight: np.ndarray,
                      answered: np.ndarray) -> dict[str, Setting]:
    """Per metric, the setting of the threshold fitted on all the answers (`answered`: each one's position among the
    populations' pairs, -1 where it is not one of them), with its cross-validated figures."""
    fitted = _cross_validated(scores_of, truth, fold, folds, populations, weight, answered)
    return {metric: Setting(stoplist, metric, fit_threshold(scores, truth, populations[metric], answered), scores,
                            populations[metric], figures) for metric, (scores, figures) in fitted.items()}


def answer_positions(pool: CandidatePairs, pairs: list) -> np.ndarray:
    """Each answered pair's position among the pool's pairs (either order), -1 where it is not one."""
    position = {}
    for i, (a, b) in enumerate(zip(pool.a, pool.b)):
        position[a, b] = position[b, a] = i
    return np.array([position.get((a, b), -1) for a, b, _ in pairs], np.intp)


def kept_positions(answered: np.ndarray, rows: np.ndarray, size: int) -> np.ndarray:
    """Positions among the pool's `size` pairs (answer_positions) as positions among those at `rows`, -1 where the
    pair is not kept (the pairs whose texts the corpus holds: other_stoplists)."""
    row_of = np.full(size + 1, -1, np.intp)  # the last one stays -1: where an answer's own position is -1
    row_of[rows] = np.arange(len(rows))
    return row_of[answered]


def resketched(store: SketchStore, corpus: str, ids: set[str], which: Callable[[str], bool] = lambda name: True
               ) -> tuple[dict[str, dict[str, bytes]], dict[str, int]]:
    """Per other stop-list (OTHER_STOPLISTS name; one that is the store's own is left out), the sketches of the ids
    whose texts the corpus holds (records as `neardup index` reads them), made with the store's configuration under
    it (and its sketch size), of those `which` names; and each one's stop-list size. The stop-list decides some kinds
    of text in opposite directions (docs/quality.md: licence versions need it off or stricter, template pages and
    copies of a popular story its own), so the answers must tell: train weighs these stop-lists' settings, and
    `neardup label` proposes where their similarities leave the answers' chance undecided."""
    stoplists = {"none": frozenset(), "copies counted": frequent_shingles(corpus, store.config)}
    candidates = {name: (stoplists[other.stoplist or name], sketch_config(store.config, name))
                  for name, other in OTHER_STOPLISTS.items()
                  if which(name) and store.config.k * other.k_factor <= MAX_K}
    candidates = {name: (stoplist, config) for name, (stoplist, config) in candidates.items()
                  if (stoplist, config.k) != (store.stoplist, store.config.k)}
    if not candidates:
        return {}, {}
    texts = read_records(corpus, ids, "text")
    sketches = {}
    for name, (stoplist, config) in candidates.items():
        sketcher = Sketcher(dataclasses.replace(config, stoplist_digest=stoplist_digest(stoplist)), stoplist)
        sketches[name] = {doc_id: sketcher.sketch(record["text"], record.get("lang")) for doc_id, record in
                          texts.items()}
    return sketches, {name: len(stoplist) for name, (stoplist, _) in candidates.items()}


def pool_similarities(store: SketchStore, pool: CandidatePairs) -> dict[str, np.ndarray]:
    """Per metric, each of the pool's candidate pairs' similarity with the store's sketches."""
    pooled = sorted(set(pool.a) | set(pool.b))
    return _similarities(dict(zip(pooled, store.get_many(pooled))).__getitem__, pool.a, pool.b, store.config.k,
                         KIND_METRICS[store.config.kind])


def setting_similarities(store: SketchStore, corpus: str, pool: CandidatePairs) -> np.ndarray:
    """Per candidate pair of the pool, its similarity under each metric with the store's sketches, then under each
    other stop-list's at the store's sketch size (resketched; a pair whose texts the corpus lacks keeps the store's
    there): what train's chance model reads (_expected_f1, _at_store_size), so that `neardup label` given the corpus
    proposes where that model is least sure, as often between the stop-lists as between the metrics."""
    metrics, k = KIND_METRICS[store.config.kind], store.config.k
    own = pool_similarities(store, pool)
    columns = [own[metric] for metric in metrics]
    for sketches in resketched(store, corpus, set(pool.a) | set(pool.b), _at_store_size)[0].values():
        known = np.array([a in sketches and b in sketches for a, b in zip(pool.a, pool.b)], bool)
        other = _similarities(sketches.__getitem__, [a for a, kept in zip(pool.a, known) if kept],
                              [b for b, kept in zip(pool.b, known) if kept], k, metrics)
        for metric in metrics:
            column = own[metric].copy()
            column[known] = other[metric]
            columns.append(column)
    return np.column_stack(columns)


def other_stoplists(store: SketchStore, corpus: str, pairs: list, pool: CandidatePairs, truth: np.ndarray,
                    fold: np.ndarray, folds: int, weight: np.ndarray,
                    positions: np.ndarray) -> tuple[dict[str, dict[str, Setting]], dict[str, int], np.ndarray]:
    """The settings of the store's texts sketched with another stop-list (resketched): per OTHER_STOPLISTS name,
    per metric, a threshold trained as on the store's own sketches (`positions`: each answer's among the pool's
    pairs, answer_positions); each one's stop-list size; and the candidate pairs whose texts the corpus holds
    (their positions in the pool: the settings' populations)."""
    answered = sorted({a for a, _, _ in pairs} | {b for _, b, _ in pairs})
    sketches_of, sizes = resketched(store, corpus, set(answered) | set(pool.a) | set(pool.b))
    if not sketches_of:
        return {}, {}, np.arange(len(pool.a))
    texts = next(iter(sketches_of.values()))
    lacking = [doc_id for doc_id in answered if doc_id not in texts]
    if lacking:
        raise InvalidArgument(f"--corpus lacks the text of {len(lacking)} answered ids (first: {lacking[0]!r}): "
                              "give the corpus the store was indexed from")
    metrics = KIND_METRICS[store.config.kind]
    known = np.array([i for i, (a, b) in enumerate(zip(pool.a, pool.b)) if a in texts and b in texts], np.intp)
    positions = kept_positions(positions, known, len(pool.a))
    settings = {}
    for name, sketches in sketches_of.items():
        k = sketch_config(store.config, name).k
        scores_of = _similarities(sketches.__getitem__, [a for a, _, _ in pairs], [b for _, b, _ in pairs], k,
                                  metrics)
        populations = _similarities(sketches.__getitem__, [pool.a[i] for i in known], [pool.b[i] for i in known], k,
                                    metrics)
        settings[name] = _trained_settings(name, scores_of, populations, truth, fold, folds, weight, positions)
    return settings, sizes, known


def _at_store_size(stoplist: str) -> bool:
    """Whether a way to sketch (OTHER_STOPLISTS name, "" the store's own) keeps the store's sketch size. Only those
    are what the chance model (_expected_f1, and `neardup label`'s: setting_similarities) reads: a larger sketch's
    similarities are theirs with less noise; read too, they would add columns that a few dozen answers cannot weigh,
    and make `neardup label` sketch every pooled text once more. A larger sketch's settings are weighed by that
    chance like any other's, and its threshold is trained on its own similarities; it costs more (_chosen)."""
    return not stoplist or OTHER_STOPLISTS[stoplist].k_factor == 1


def _expected_f1(settings: list[Setting], truth: np.ndarray, answered: np.ndarray | None = None) -> np.ndarray:
    """Per setting, its expected F1 over the store's candidate pairs (their similarities: each setting's
    population; the answers themselves where the store has none), each pair's chance of being a duplicate a
    logistic fit of the answers on every setting's similarity at once, but the answered pairs' (`answered`: each
    answer's position among the populations' pairs; answered_chance). A setting's figures on the answers see only
    the answered pairs, and `neardup label` proposes them near the store's threshold under its own stop-list and
    metric: another setting that lifts a band of unanswered pairs over its threshold (template pages, once their
    shared text is no longer stop-listed) errs where no answer shows it. The chance model reads every pair under
    every setting, so such a band counts for what the answers say of pairs like it."""
    # a metric's trained setting and the store's share one; a larger sketch's are left out (_at_store_size)
    columns = {(s.stoplist, s.metric): s for s in settings if _at_store_size(s.stoplist)}
    answered_scores = np.column_stack([s.answers for s in columns.values()])
    rows = len(settings[0].population)
    population = np.column_stack([s.population for s in columns.values()]) if rows else answered_scores
    chance = learners.fit_logistic(answered_scores, truth, penalty=CHANCE_PENALTY).probability(population)
    chance = answered_chance(chance, truth, answered if rows else None)
    expected = chance.sum()
    called = np.array([(s.population if rows else s.answers) >= s.threshold for s in settings])
    return 2 * (called @ chance) / np.maximum(called.sum(axis=1) + expected, 1e-12)


def _chosen(settings: list[Setting], expected: np.ndarray) -> int:
    """The setting to serve: of those whose expected F1 lies within EXPECTED_TIE of the best, the one of the best
    F1 on the answers; the earliest (the store's current setting comes first) on a tie. A larger sketch costs bytes
    per article and values per comparison: among those near the best it wins only where its F1 on the answers beats
    the best at the store's sketch size with its own stop-list or the store's by more than EXPECTED_TIE: a larger
    sketch's similarities are its stop-list's with less noise, so where it does not win clearly, that stop-list
    serves at the store's size, or the store stays as it is; a third stop-list calls other pairs close, which
    neither the expected F1 nor the answers chose."""
    near = np.flatnonzero(expected >= expected.max() - EXPECTED_TIE)
    ranked = lambda i: (settings[i].figures["f1"], -i)  # noqa: E731
    best = int(max(near, key=ranked))
    stoplist = settings[best].stoplist
    if not _at_store_size(stoplist):
        stoplist = OTHER_STOPLISTS[stoplist].stoplist  # at the store's size; not resketched where it is the store's
    sized = [i for i in near if settings[i].stoplist in ("", stoplist)]
    if sized and best not in sized:
        cheaper = int(max(sized, key=ranked))
        if settings[best].figures["f1"] <= settings[cheaper].figures["f1"] + EXPECTED_TIE:
            return cheaper
    return best


def train_threshold(store: SketchStore, sketches: dict[str, bytes], pairs: list, pairs_path: str, folds: int,
                    write: bool, corpus: str | None = None) -> dict:
    """A store of texts' metric and threshold from labelled pairs (docs/commands/neardup-train.md), stored unless
    write is False or it is refused; returns the report. Every metric's trained threshold and the store's current
    setting are weighed by their expected F1 over the store's candidate pairs (_expected_f1); with `corpus` (the
    records the store was indexed from), so are those of the texts sketched with the other stop-lists
    (other_stoplists), and where one of those is the setting to serve, train advises re-indexing with it."""
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
    populations = pool_similarities(store, pool)
    weight = population_weights(scores_of[current.metric], pool.rule_scores)
    answered = answer_positions(pool, pairs)
    own = _trained_settings("", scores_of, populations, truth, fold, folds, weight, answered)
    before = _f1(scores_of[current.metric] >= current.threshold, truth, weight)
    others_of, sizes, known = other_stoplists(store, corpus, pairs, pool, truth, fold, folds, weight, answered) \
        if corpus else ({}, {}, np.arange(len(pool.a)))
    own = {metric: setting._replace(population=setting.population[known]) for metric, setting in own.items()}
    settings = [Setting("", current.metric, current.threshold, scores_of[current.metric],
                        populations[current.metric][known], before), *own.values(),
                *(setting for by_metric in others_of.values() for setting in by_metric.values())]
    expected = _expected_f1(settings, truth, kept_positions(answered, known, len(pool.a)))
    position = {(s.stoplist, s.metric): i for i, s in enumerate(settings) if i}  # the trained settings'
    mine = len(own) + 1  # the store's current setting and its trained ones come first
    # a current setting trained itself was fitted on some of these answers: its F1 on them is no yardstick
    first = int(served.threshold_source == calibration.TRAINED)
    stored = first + _chosen(settings[first:mine], expected[first:mine])
    # the trained setting reported: the one chosen, or where the store's current one is, the best trained one
    trained = stored if stored else 1 + _chosen(settings[1:mine], expected[1:mine])
    setting, served_best = settings[trained], first + _chosen(settings[first:], expected[first:])
    cv = setting.figures["f1"]
    report = {"texts": True, "pairs": len(pairs), "duplicates": duplicates, "others": others, "folds": folds,
              "among_candidates": int((answered >= 0).sum()), "candidates": len(pool.a),
              "metric": setting.metric, "threshold": setting.threshold, "cv": setting.figures,
              "expected": float(expected[trained]),
              "metrics": {m: figures.figures["f1"] for m, figures in own.items()},
              "before": {"threshold": current.threshold, "metric": current.metric,
                         "source": served.threshold_source, "f1": before, "expected": float(expected[0])}}
    everything = _f1(np.ones(len(pairs), bool), truth, weight)["f1"]
    report["refused"] = (
        f"not stored: the answers do not separate by {setting.metric}: a trained threshold cross-validates at F1 "
        f"{cv:.3f}, no better than calling every pair a duplicate ({everything:.3f})") if cv <= everything else (
        f"not stored: the answers expect the store's {current.metric} >= {current.threshold:g} "
        f"({served.threshold_source}) to serve its pairs as well as any trained threshold (expected F1 "
        f"{expected[0]:.3f}, {setting.metric} >= {setting.threshold:g} {expected[trained]:.3f}; F1 on the answers "
        f"{before['f1']:.3f}, cross-validated {cv:.3f})") if not stored else ""
    if corpus:
        report["stoplists"] = {}
        chosen = settings[served_best]
        for name, by_metric in others_of.items():  # each other stop-list's setting the rule serves: the advised one
            theirs = [position[name, metric] for metric in by_metric]
            at = served_best if chosen.stoplist == name else \
                theirs[_chosen([settings[i] for i in theirs], expected[theirs])]
            best = settings[at]
            report["stoplists"][name] = {
                "metric": best.metric, "threshold": best.threshold, "cv": best.figures, "expected": float(expected[at]),
                "metrics": {m: other.figures["f1"] for m, other in by_metric.items()},
                "stoplist_size": sizes[name], "index_options": index_options(store.config, name)}
        if chosen.stoplist:
            tied = expected[served_best] <= expected[stored] + EXPECTED_TIE  # the answers' F1 chose it
            factor = OTHER_STOPLISTS[chosen.stoplist].k_factor
            report["advice"] = (
                f"the answers expect the store's pairs served {'as well' if tied else 'better'} "
                f"{OTHER_STOPLISTS[chosen.stoplist].sketched} ({chosen.metric} >= {chosen.threshold:g}: expected F1 "
                f"{expected[served_best]:.3f}, against {expected[stored]:.3f} with the store's"
                + (f", within {EXPECTED_TIE:g}: a tie the answers' F1 decides" if tied else "")
                + f"; cross-validated F1 {chosen.figures['f1']:.3f}"
                + (f"; a text of more than {store.config.k} shingles is stored and compared in "
                   f"{'twice' if factor == 2 else f'{factor} times'} the values" if factor > 1 else "")
                + "): re-index the corpus into a new store with "
                f"`neardup index CORPUS --store NEW {index_options(store.config, chosen.stoplist)}`, then train NEW "
                "on these answers")
            report["advised"] = chosen.stoplist
            report["advised_options"] = reindex_options(store.config, chosen.stoplist)
    if write and not report["refused"]:
        written = {calibration.BELOW_THE_COPIES: True} if (store.threshold() or {}).get(
            calibration.BELOW_THE_COPIES) else {}  # how the store was written: learning again takes rule 8's step
        store.set_threshold({"threshold": setting.threshold, "metric": setting.metric,
                             "source": calibration.TRAINED, "trained_on": len(pairs), **written})
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
    rules = population.rule_scores >= rules_threshold
    model = scorer.scores(population.features) >= scorer.model.threshold
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
    pairs, replaced = last_answers(read_pairs(pairs_path))
    with open_store(store_path, readonly=not write) as store:
        config = store.config
        if config.kind == SIMHASH:
            raise ConfigMismatch(f"store {store_path} holds simhash fingerprints; train is for a bottom-K store of "
                                 "texts (its threshold) or an items store (a pair model)")
        sketches = answered_sketches(store, pairs, pairs_path)
        if config.kind != ITEMS:
            report = train_threshold(store, sketches, pairs, pairs_path, folds, write, corpus)
            return {**report, "replaced": replaced, "elapsed": time.monotonic() - started}
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
    report.update(chosen=kind, threshold=None if document is None else document["threshold"], replaced=replaced,
                  elapsed=time.monotonic() - started, model=document)
    return report


