"""Detection quality as the service delivers it: neardup's one default against the usual baselines, each
baseline at its own best threshold, on the development corpus's test split (benchmarks/devcorpus.py).

Each method scores every pair of a result set; the service's greedy grouping (reference.dedup's rule) turns the
scores into groups at each threshold; a pair is predicted a duplicate when both land in one group. Pairwise
precision, recall and F1 are micro-averaged over result sets of ~100 (devcorpus.draw_result_sets): overall on
mixed sets, and per scope (edit family, edit rate, length of the original, language) on sets whose duplicates
all come from that scope. Hard negatives are in every set: pages of one site, sections of one article (their
pairs count as false positives when grouped), and template variants (near-duplicates *as text*: their pairs
are left out of F1 and the share grouped is reported apart, as separating them needs fields).

Baselines see the same grouping: datasketch MinHash (128 permutations over word 5-grams, its Jaccard
estimate), exact word 5-gram Jaccard and containment, and 64-bit SimHash (restated below; PyPI `simhash`
breaks under numpy 2). neardup's stop-list is learned over the whole split with core/stoplist.py, as
`neardup index` does. neardup's own SimHash (a store made by `neardup index --sketch simhash`: the default
configuration's word 3-gram shingles and stop-list, one 64-bit fingerprint, each shingle weighing as a new simhash
store weighs it, metric hamming) sits beside them at its best threshold, and is also reported per Hamming distance,
at a simhash store's default (core/vocabulary.py) and at 3 bits (the most its corpus search finds exactly).

    python benchmarks/evaluate.py [--split test|tune] [--quick] [--explore]
writes benchmarks/out/quality-SPLIT.md (also printed), quality-SPLIT.json and quality-SPLIT_pr.png.
`--explore` adds the neardup configurations the default was chosen among, and SimHash under each shingle
weighting (vocabulary.WEIGHTINGS; run it on --split tune).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devcorpus  # noqa: E402
from neardup.core import calibration, reference, vocabulary  # noqa: E402
from neardup.core.sketch_config import SketchConfig, stoplist_digest
from neardup.core.sketcher import ShingleCounts, Sketcher
from neardup.core.encoding import decode_sketch
from neardup.core.stoplist import learn_stoplist  # noqa: E402
from neardup.runtime.deduplicator import Deduplicator
from neardup.jobs.index import index_corpus
from neardup.store import open_store  # noqa: E402

try:  # the compiled kernel when it is built; the reference answers the same, only slower
    from neardup.core.kernel import similarity as _sketch_similarity
except ImportError:
    def _sketch_similarity(a: bytes, b: bytes, k: int, metric: str) -> float:
        return reference.similarity(decode_sketch(a), decode_sketch(b), k, metric)

OUT = Path(__file__).resolve().parent / "out"
#: The SimHash distance its corpus search finds exactly (similar.SIMHASH_EXACT_DISTANCE, without importing numpy's
#: corpus search here) and its threshold.
SIMHASH_EXACT_BITS = 3
SIMHASH_EXACT_THRESHOLD = (64 - SIMHASH_EXACT_BITS) / 64
#: Every hundredth, the fixed defaults, and every threshold a store can learn (calibration's bin centres).
THRESHOLDS = np.union1d(np.round(np.arange(1, 100) / 100, 2),
                        [vocabulary.DEFAULT_THRESHOLD, vocabulary.SIMHASH_THRESHOLD, SIMHASH_EXACT_THRESHOLD,
                         *np.round((np.arange(round(1 / calibration.BIN_WIDTH)) + 0.5) * calibration.BIN_WIDTH, 4)])
_WORD = re.compile(r"[^\W_]+")
_NEGATIVE_KINDS = ("template", "site", "topic", "quote")  # Doc fields: hard negatives share one of them
#: Pairs of these kinds are left out of precision, recall and F1 (reported apart).
_IGNORED_KINDS = ("template",)


# --- methods: documents → a pairwise similarity matrix per result set -------------------------------------

@dataclass(frozen=True)
class NeardupConfig:
    unit: str = SketchConfig.unit
    k: int = SketchConfig.k
    min_word_len: int = SketchConfig.min_word_len
    metric: str = vocabulary.DEFAULT_METRIC
    stoplist: bool = True

    @property
    def label(self) -> str:
        return (f"neardup {self.unit} K={self.k} mwl={self.min_word_len} {self.metric}"
                f"{'' if self.stoplist else ' no-stoplist'}")


DEFAULT_CONFIG = NeardupConfig()
# The exploration behind the defaults (run on the tune split): the card's recipe, the previous default, and
# word n-grams over n, K, metric, word length and stop-list.
EXPLORED = [
    NeardupConfig("sentence", 64, 3, vocabulary.CONTAINMENT, stoplist=False),
    NeardupConfig("para-sentence", 64, 1, vocabulary.CONTAINMENT),
    NeardupConfig("word:2", 128),
    *[NeardupConfig(f"word:{n}", k) for n in (3, 4, 5) for k in (64, 128, 256)],
    NeardupConfig("word:6", 128),
    *[NeardupConfig(f"word:{n}", 128, metric=vocabulary.JACCARD) for n in (3, 4)],
    NeardupConfig("word:4", 128, 3),
    NeardupConfig("word:4", 128, stoplist=False),
]


class Method:
    """A named pairwise similarity, with the threshold it is read at by default (None: only its best)."""

    def __init__(self, name: str, pair_matrix: Callable[[list[int]], np.ndarray],
                 default_threshold: float | None = None):
        self.name, self.pair_matrix, self.default_threshold = name, pair_matrix, default_threshold


def _pairwise(items: list, score: Callable) -> np.ndarray:
    n = len(items)
    matrix = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            matrix[i, j] = matrix[j, i] = score(items[i], items[j])
    return matrix


class NeardupMethods:
    """Sketches under each configuration; the hashes (with their counts) of a (unit, min_word_len) are computed
    once per corpus."""

    def __init__(self, docs: list[devcorpus.Doc]):
        self.docs = docs
        self._counts: dict[tuple[str, int], list[ShingleCounts]] = {}
        self._hashes: dict[tuple[str, int], list[set[int]]] = {}

    def counts(self, unit: str, min_word_len: int) -> list[ShingleCounts]:
        key = (unit, min_word_len)
        if key not in self._counts:
            sketcher = Sketcher(SketchConfig(unit=unit, min_word_len=min_word_len))
            self._counts[key] = [sketcher.hash_counts(doc.text, doc.lang) for doc in self.docs]
        return self._counts[key]

    def hashes(self, unit: str, min_word_len: int) -> list[set[int]]:
        """Each document's distinct shingle hashes (Sketcher.hashes: those of its hash_counts)."""
        key = (unit, min_word_len)
        if key not in self._hashes:
            self._hashes[key] = [set(np.frombuffer(c.hashes, np.uint32).tolist())
                                 for c in self.counts(unit, min_word_len)]
        return self._hashes[key]

    def sketcher(self, config: NeardupConfig) -> Sketcher:
        """The Sketcher `neardup index` would build: the stop-list learned over every document of the corpus."""
        hashes = self.hashes(config.unit, config.min_word_len)
        stoplist = learn_stoplist(hashes) if config.stoplist else frozenset()
        sketch_config = SketchConfig(unit=config.unit, k=config.k, min_word_len=config.min_word_len,
                                     stoplist_digest=stoplist_digest(stoplist))
        return Sketcher(sketch_config, stoplist)

    def method(self, config: NeardupConfig, default_threshold: float | None = None) -> Method:
        hashes = self.hashes(config.unit, config.min_word_len)
        sketcher = self.sketcher(config)
        sketches: dict[int, bytes] = {}

        def pair_matrix(indexes: list[int]) -> np.ndarray:
            for i in indexes:
                if i not in sketches:
                    sketches[i] = sketcher.sketch_hashes(hashes[i])
            return _pairwise([sketches[i] for i in indexes],
                             lambda a, b: _sketch_similarity(a, b, config.k, config.metric))

        return Method(config.label, pair_matrix, default_threshold)

    def simhash_method(self, weighting: str | None = None) -> Method:
        """neardup's SimHash sketch: a new simhash store's fingerprints (the default unit and min_word_len, the
        stop-list learned as for bottom-K, its weighting of shingles unless `weighting` is given), similarity
        1 - hamming / 64; a text without a fingerprint is similar to nothing."""
        counts = self.counts(DEFAULT_CONFIG.unit, DEFAULT_CONFIG.min_word_len)
        bottom_k = self.sketcher(DEFAULT_CONFIG)
        config = SketchConfig(unit=DEFAULT_CONFIG.unit, min_word_len=DEFAULT_CONFIG.min_word_len,
                              stoplist_digest=bottom_k.config.stoplist_digest, kind=vocabulary.SIMHASH)
        sketcher = Sketcher(config, bottom_k.stoplist)
        fingerprints: dict[int, bytes] = {}

        def pair_matrix(indexes: list[int]) -> np.ndarray:
            for i in indexes:
                if i not in fingerprints:
                    fingerprints[i] = sketcher.sketch_counts(counts[i], weighting)
            blobs = [fingerprints[i] for i in indexes]
            values = np.array([int.from_bytes(b, "little") for b in blobs], dtype=np.uint64)
            present = np.array([bool(b) for b in blobs])
            similarity = 1.0 - np.bitwise_count(values[:, None] ^ values[None, :]) / 64.0
            return np.where(present[:, None] & present[None, :], similarity, 0.0)

        name = f"neardup SimHash {DEFAULT_CONFIG.unit} 64-bit hamming"
        return Method(name if weighting is None else f"{name} weight {weighting}", pair_matrix,
                      vocabulary.SIMHASH_THRESHOLD)


def word_ngrams(text: str, n: int = 5) -> list[str]:
    """The baselines' shingles: lowercased word n-grams, no stemming, no stop-list."""
    words = _WORD.findall(text.lower())
    return [" ".join(words[i:i + n]) for i in range(max(1, len(words) - n + 1))]


def _cached(docs: list[devcorpus.Doc], represent: Callable[[devcorpus.Doc], object]) -> Callable[[int], object]:
    cache: dict[int, object] = {}

    def get(i: int):
        if i not in cache:
            cache[i] = represent(docs[i])
        return cache[i]
    return get


def exact_method(docs: list[devcorpus.Doc], metric: str) -> Method:
    shingles = _cached(docs, lambda doc: frozenset(word_ngrams(doc.text)))

    def score(a: frozenset, b: frozenset) -> float:
        shared = len(a & b)
        return shared / min(len(a), len(b)) if metric == vocabulary.CONTAINMENT else shared / (len(a) + len(b) - shared)

    return Method(f"exact word 5-gram {metric}", lambda indexes: _pairwise([shingles(i) for i in indexes], score))


def minhash_method(docs: list[devcorpus.Doc]) -> Method:
    from datasketch import MinHash

    def signature(doc: devcorpus.Doc) -> np.ndarray:
        minhash = MinHash(num_perm=128, seed=1)
        minhash.update_batch([s.encode("utf-8") for s in word_ngrams(doc.text)])
        return minhash.hashvalues

    signatures = _cached(docs, signature)

    def pair_matrix(indexes: list[int]) -> np.ndarray:
        values = np.stack([signatures(i) for i in indexes])
        # MinHash.jaccard: the share of equal hash values
        return (values[:, None, :] == values[None, :, :]).mean(axis=2)

    return Method("MinHash 128 word 5-gram", pair_matrix)


_BITS = np.arange(64, dtype=np.uint64)
_feature_hashes: dict[str, int] = {}


def simhash(text: str) -> np.uint64:
    """Charikar's SimHash as the PyPI `simhash` package computes it: features are character 4-grams of the
    lowercased word characters (spaces removed), weighted by count, hashed with MD5 (low 64 bits); each bit of
    the fingerprint is the sign of the weighted vote of the features' bits."""
    chars = "".join(_WORD.findall(text.lower()))
    grams, counts = np.unique([chars[i:i + 4] for i in range(max(1, len(chars) - 3))], return_counts=True)
    for gram in grams:
        if gram not in _feature_hashes:
            _feature_hashes[gram] = int(hashlib.md5(gram.encode("utf-8")).hexdigest(), 16) & (2 ** 64 - 1)
    hashes = np.array([_feature_hashes[g] for g in grams], dtype=np.uint64)
    bits = ((hashes[:, None] >> _BITS) & np.uint64(1)).astype(np.int64)
    votes = (counts[:, None] * (2 * bits - 1)).sum(axis=0)
    return np.bitwise_or.reduce((votes > 0).astype(np.uint64) << _BITS)


def simhash_method(docs: list[devcorpus.Doc]) -> Method:
    fingerprints = _cached(docs, lambda doc: simhash(doc.text))

    def pair_matrix(indexes: list[int]) -> np.ndarray:
        values = np.array([fingerprints(i) for i in indexes], dtype=np.uint64)
        return 1.0 - np.bitwise_count(values[:, None] ^ values[None, :]) / 64.0

    return Method("SimHash 64-bit char 4-gram", pair_matrix)


# --- scoring: greedy groups at every threshold, pair counts -----------------------------------------------

def greedy_groups(similarity: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """reference.dedup's greedy rule at every threshold at once: in rank order, each result joins the first kept
    result it reaches the threshold with, else it is kept. Returns the group (a kept position) per threshold."""
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
                   {kind: np.zeros(size, dtype=np.int64) for kind in _NEGATIVE_KINDS},
                   dict.fromkeys(_NEGATIVE_KINDS, 0))

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
    def label(cls, docs: list[devcorpus.Doc], indexes: list[int]) -> "ResultSet":
        members = [docs[i] for i in indexes]
        upper = zip(*np.triu_indices(len(indexes), 1))
        pairs = [(members[i], members[j]) for i, j in upper]
        duplicate = np.array([a.group == b.group for a, b in pairs])
        negative = {kind: np.array([a.group != b.group and getattr(a, kind) != "" and getattr(a, kind) == getattr(b, kind)
                                    for a, b in pairs]) for kind in _NEGATIVE_KINDS if kind != "quote"}
        negative["quote"] = np.array([a.quotes == b.group or b.quotes == a.group for a, b in pairs])
        ignored = np.zeros(len(pairs), dtype=bool)
        for kind in _IGNORED_KINDS:
            ignored |= negative[kind]
        return cls(indexes, duplicate, negative, ~ignored)


def add_result_set(counts: Counts, result_set: ResultSet, similarity: np.ndarray) -> None:
    add_grouping(counts, result_set, greedy_groups(similarity, THRESHOLDS))


def add_grouping(counts: Counts, result_set: ResultSet, groups: np.ndarray) -> None:
    """Adds the pair counts of a result set grouped once per threshold (groups[threshold, position]: the
    position standing for its group)."""
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


# --- reporting ---------------------------------------------------------------------------------------------

def _at(threshold: float) -> int:
    return int(np.flatnonzero(np.isclose(THRESHOLDS, threshold))[0])


def summary(method: Method, counts: dict[str, Counts]) -> dict:
    """Best overall threshold, each scope's own best, and the figures at the method's default threshold."""
    overall = counts["overall"]
    best = int(np.argmax(overall.f1()))
    at = _at(method.default_threshold) if method.default_threshold is not None else best

    def figures(index: int) -> dict:
        return {"threshold": float(THRESHOLDS[index]), "precision": float(overall.precision()[index]),
                "recall": float(overall.recall()[index]), "f1": float(overall.f1()[index]),
                "scopes": {scope: float(c.f1()[index]) for scope, c in counts.items() if scope != "overall"},
                "negatives_grouped": {kind: float(overall.negatives_grouped[kind][index]
                                                  / max(1, overall.negatives[kind])) for kind in _NEGATIVE_KINDS}}

    scope_best = {scope: {"threshold": float(THRESHOLDS[int(np.argmax(c.f1()))]), "f1": float(np.max(c.f1()))}
                  for scope, c in counts.items() if scope != "overall"}
    return {"name": method.name, "default": figures(at), "best": figures(best), "scope_best": scope_best,
            "curve": {"threshold": THRESHOLDS.tolist(), "precision": overall.precision().tolist(),
                      "recall": overall.recall().tolist(), "f1": overall.f1().tolist()},
            "negatives_grouped_curve": {kind: (overall.negatives_grouped[kind] / max(1, overall.negatives[kind])
                                               ).tolist() for kind in _NEGATIVE_KINDS}}


def margins(default: dict, baselines: list[dict], oracle: bool = True) -> dict[str, float]:
    """neardup's F1 at its default minus the best baseline's F1, overall and per scope: the issue's bar is a
    margin >= 0 everywhere. Per scope, each baseline is read at that scope's own best threshold (oracle) or at
    its one best overall threshold, as a service would run it."""
    def baseline_f1(b: dict, scope: str) -> float:
        return b["scope_best"][scope]["f1"] if oracle else b["best"]["scopes"][scope]

    result = {scope: default["default"]["scopes"][scope] - max(baseline_f1(b, scope) for b in baselines)
              for scope in default["default"]["scopes"]}
    result["overall"] = default["default"]["f1"] - max(b["best"]["f1"] for b in baselines)
    return result


def _simhash_distance_f1(row: dict, distance: int) -> tuple[float, float, float, int]:
    """Precision, recall and F1 of a SimHash row at a Hamming distance, and the index of its threshold."""
    curve = row["curve"]
    i = max(i for i, t in enumerate(THRESHOLDS) if reference.max_distance(float(t)) == distance)
    return curve["precision"][i], curve["recall"][i], curve["f1"][i], i


def markdown(default: dict, baselines: list[dict], explored: list[dict], command: str, corpus_note: str,
             simhash: dict | None = None, weightings: list[dict] | None = None) -> str:
    """The report; `simhash`, neardup's SimHash sketch, is shown beside the baselines (at its best threshold, and
    per distance in a table of its own) but is no baseline: the margins are over the baselines only.
    `weightings`: SimHash under each shingle weighting (--explore)."""
    lines = [f"Measured with `{command}` ({corpus_note}).", "",
             "**Overall** (mixed result sets): neardup at its default threshold; each baseline at its own best "
             "threshold. *Grouped*: the share of hard-negative pairs put in one group — template variants (left "
             "out of F1: near-duplicates as text), pages of one site, sections of one article, a text and one that "
             "quotes a passage of it.", "",
             "| method | threshold | precision | recall | F1 | grouped: template | site | topic | quote |",
             "|---|---|---|---|---|---|---|---|---|"]
    others = baselines + ([simhash] if simhash else [])
    for row, figures in [(default, default["default"])] + [(b, b["best"]) for b in others]:
        neg = figures["negatives_grouped"]
        lines.append(f"| {row['name']} | {figures['threshold']:.2f} | {figures['precision']:.3f} | "
                     f"{figures['recall']:.3f} | **{figures['f1']:.3f}** | {neg['template']:.1%} | "
                     f"{neg['site']:.1%} | {neg['topic']:.1%} | {neg['quote']:.1%} |")
    margin = margins(default, baselines)
    lines += ["", "**Per scope** (F1 on result sets whose duplicates all come from one edit family, edit rate, "
              "length of the original or language; hard negatives included). neardup at its one default "
              "threshold; each baseline at *that scope's own* best threshold (an oracle no service has), shown as "
              "F1@threshold.", "",
              "| scope | " + " | ".join([default["name"]] + [b["name"] for b in others]) + " | margin |",
              "|---|" + "---|" * (len(others) + 2)]
    for scope in default["default"]["scopes"]:
        lines.append(f"| {scope} | **{default['default']['scopes'][scope]:.3f}** | " + " | ".join(
            f"{b['scope_best'][scope]['f1']:.3f}@{b['scope_best'][scope]['threshold']:.2f}" for b in others)
            + f" | {margin[scope]:+.3f} |")
    worst = min(margin, key=margin.get)
    served = margins(default, baselines, oracle=False)
    served_worst = min(served, key=served.get)
    lines += ["", f"Overall margin over the best baseline's best threshold: {margin['overall']:+.3f}; smallest "
              f"margin: {worst} {margin[worst]:+.3f} (baselines at each scope's own best threshold), "
              f"{served_worst} {served[served_worst]:+.3f} (baselines at their one best overall threshold)."]
    if simhash:
        default_bits = reference.max_distance(vocabulary.SIMHASH_THRESHOLD)
        lines += ["", f"**{simhash['name']}** — a store made by `neardup index --sketch simhash` (the default's "
                  "shingles and stop-list, one 64-bit fingerprint per text, each shingle weighing 1 + ln of its "
                  "count in the text): overall, per Hamming distance allowed (threshold t allows 64 − ⌈64 t⌉ bits; "
                  f"a simhash store's default, {vocabulary.SIMHASH_THRESHOLD:g} = {64 - default_bits}/64, allows "
                  f"{default_bits}; its corpus search finds up to {SIMHASH_EXACT_BITS} exactly), and per scope at "
                  "its one best overall threshold. It sits beside the baselines above but is none: the margins are "
                  "over the baselines only.", "",
                  "| max distance (bits) | threshold | precision | recall | F1 | grouped: template | site | topic | "
                  "quote |", "|---|---|---|---|---|---|---|---|---|"]
        best = simhash["best"]
        best_bits = reference.max_distance(best["threshold"])
        for distance in sorted({0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 20, default_bits, best_bits}):
            if not any(reference.max_distance(float(t)) == distance for t in THRESHOLDS):
                continue
            precision, recall, f1, i = _simhash_distance_f1(simhash, distance)
            neg = simhash["negatives_grouped_curve"]
            marks = [mark for mark, bits in (("default", default_bits), ("best", best_bits),
                                             ("exact search", SIMHASH_EXACT_BITS)) if distance == bits]
            mark = f" ({', '.join(marks)})" if marks else ""
            lines.append(f"| {distance}{mark} | {(64 - distance) / 64:.4f} | {precision:.3f} | "
                         f"{recall:.3f} | **{f1:.3f}** | {neg['template'][i]:.1%} | "
                         f"{neg['site'][i]:.1%} | {neg['topic'][i]:.1%} | {neg['quote'][i]:.1%} |")
        scopes = best["scopes"]
        lines += ["", "Per scope at its best threshold: " + ", ".join(f"{scope} {f1:.3f}"
                                                                       for scope, f1 in scopes.items()) + "."]
    if weightings:
        lines += ["", "**SimHash shingle weightings explored** (the same shingles and stop-list; a shingle votes "
                  "with 1, its count tf in the text, or 1 + ln tf: reference.shingle_weight), each at its own best "
                  "overall threshold, and at 3 bits.", "",
                  "| weighting | best threshold (bits) | precision | recall | F1 | F1 at 3 bits |",
                  "|---|---|---|---|---|---|"]
        for row in weightings:
            best = row["best"]
            lines.append(f"| {row['name'].rsplit(' weight ', 1)[-1]} | {best['threshold']:.4f} "
                         f"({reference.max_distance(best['threshold'])}) | {best['precision']:.3f} | "
                         f"{best['recall']:.3f} | **{best['f1']:.4f}** | "
                         f"{_simhash_distance_f1(row, SIMHASH_EXACT_BITS)[2]:.3f} |")
    if explored:
        lines += ["", "**neardup configurations explored** (each at its own best overall threshold; the worst "
                  "scope's F1 at that same threshold, and the worst margin over the baselines' per-scope best if "
                  "that threshold were the default).", "",
                  "| configuration | best threshold | F1 overall | worst scope (F1) | worst margin |",
                  "|---|---|---|---|---|"]
        for row in explored:
            scopes = row["best"]["scopes"]
            low = min(scopes, key=scopes.get)
            as_default = margins({"default": row["best"]}, baselines)
            low_margin = min(as_default, key=as_default.get)
            lines.append(f"| {row['name']} | {row['best']['threshold']:.2f} | {row['best']['f1']:.3f} | "
                         f"{low} ({scopes[low]:.3f}) | {low_margin} ({as_default[low_margin]:+.3f}) |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5.5))
    for row in rows:
        curve = row["curve"]
        line, = ax.plot(curve["recall"], curve["precision"], label=row["name"], linewidth=1.4)
        point = row["default"]
        ax.plot([point["recall"]], [point["precision"]], "o", color=line.get_color())
    ax.set_xlabel("recall (pairs)")
    ax.set_ylabel("precision (pairs)")
    ax.set_title("Near-duplicate pairs over a threshold sweep (dots: default / best threshold)")
    ax.set_xlim(0.4, 1.0)
    ax.set_ylim(0.4, 1.01)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def result_sets(docs: list[devcorpus.Doc], quick: bool, seed: int) -> dict[str, list[ResultSet]]:
    """Labelled result sets: mixed ones ('overall') and, per scope, sets whose duplicates all come from it."""
    overall, per_scope = (30, 8) if quick else (120, 30)
    scopes = {"overall": None, **devcorpus.scopes(), **devcorpus.language_scopes(docs)}
    sets = {}
    for number, (name, scope) in enumerate(scopes.items()):
        drawn = devcorpus.draw_result_sets(docs, overall if scope is None else per_scope, seed + number, scope=scope)
        if drawn:
            sets[name] = [ResultSet.label(docs, indexes) for indexes in drawn]
    return sets


def served_threshold(docs: list[devcorpus.Doc]) -> float:
    """The threshold a server of this corpus applies: what `neardup index` learns into a new store of it."""
    with tempfile.TemporaryDirectory() as workdir:
        corpus = Path(workdir) / "corpus.jsonl"
        devcorpus.write_jsonl(docs, corpus)
        index_corpus(str(corpus), str(Path(workdir) / "store"))
        with open_store(Path(workdir) / "store", readonly=True) as store:
            return Deduplicator(store).vocabulary.threshold


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=devcorpus.SPLITS, default="test",
                        help="test (the report; never tuned on) or tune (where defaults are chosen)")
    parser.add_argument("--quick", action="store_true", help="fewer result sets, no exploration")
    parser.add_argument("--explore", action="store_true", help="also the neardup configurations of EXPLORED")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        docs = devcorpus.generate(args.split)
    except devcorpus.SourceMissing as missing:
        parser.exit(2, f"evaluate: {missing}\n")
    sets = result_sets(docs, args.quick, devcorpus.SPLIT_SEEDS[args.split])
    neardup = NeardupMethods(docs)
    served = served_threshold(docs)
    default = neardup.method(DEFAULT_CONFIG, served)
    default.name = (f"neardup as served ({DEFAULT_CONFIG.label.removeprefix('neardup ')}, the threshold its store "
                    f"learned: {served:g})")
    baselines = [minhash_method(docs), exact_method(docs, vocabulary.JACCARD),
                 exact_method(docs, vocabulary.CONTAINMENT), simhash_method(docs)]
    neardup_simhash = neardup.simhash_method()
    explored = [neardup.method(c) for c in EXPLORED if c != DEFAULT_CONFIG] if args.explore else []
    weightings = [neardup.simhash_method(weighting) for weighting in vocabulary.WEIGHTINGS] if args.explore else []
    rows = {}
    for method in [default, *baselines, neardup_simhash, *weightings, *explored]:
        rows[method.name] = summary(method, evaluate(method, sets))
        print(f"  {method.name}: best F1 {rows[method.name]['best']['f1']:.3f} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    command = f"python benchmarks/evaluate.py --split {args.split}" + (" --quick" if args.quick else "") + \
        (" --explore" if args.explore else "")
    corpus_note = (f"{args.split} split, seed {devcorpus.SPLIT_SEEDS[args.split]}: {len(docs)} documents, "
                   f"{sum(len(s) for s in sets.values())} result sets of ~100, Python {sys.version.split()[0]}")
    table = markdown(rows[default.name], [rows[b.name] for b in baselines],
                     [rows[default.name]] + [rows[m.name] for m in explored] if explored else [],
                     command, corpus_note, rows[neardup_simhash.name], [rows[m.name] for m in weightings])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = f"quality-{args.split}"
    (args.out / f"{stem}.md").write_text(table, encoding="utf-8")
    (args.out / f"{stem}.json").write_text(json.dumps(
        {"command": command, "corpus": corpus_note, "thresholds": THRESHOLDS.tolist(), "methods": rows},
        indent=1), encoding="utf-8")
    plot([rows[default.name]] + [rows[b.name] for b in baselines] + [rows[neardup_simhash.name]],
         args.out / f"{stem}_pr.png")
    print(table)


if __name__ == "__main__":
    main()
