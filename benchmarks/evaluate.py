"""Detection quality on the development corpus: neardup's configurations against the usual baselines.

Each method scores every pair of a result set; the service's greedy grouping (reference.dedup's rule) turns the
scores into groups at each threshold; a pair is predicted a duplicate when both land in one group. Pairwise
precision, recall and F1 are micro-averaged over result sets of ~100 (devcorpus.draw_result_sets), overall on
mixed sets and per edit family on sets whose duplicates all come from that family. Hard negatives (template
variants, pages sharing a site's boilerplate) are in every set; how many of their pairs a method groups is
reported as well.

Baselines see the same grouping: datasketch MinHash (128 permutations over word 5-grams, its Jaccard
estimate), exact word 5-gram Jaccard and containment, and 64-bit SimHash (restated below; PyPI `simhash`
breaks under numpy 2). neardup's stop-list is learned over the whole corpus with core/stoplist.py, as
`neardup index` does.

    python benchmarks/evaluate.py [--quick] [--seed 7]
writes benchmarks/out/quality.md (also printed), quality.json and quality_pr.png.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import devcorpus  # noqa: E402
from neardup.core import defaults, reference  # noqa: E402
from neardup.core.sketch import SketchConfig, Sketcher, decode_sketch, stoplist_digest  # noqa: E402
from neardup.core.stoplist import document_frequencies, learn_stoplist  # noqa: E402

try:  # the compiled kernel when it is built; the reference answers the same, only slower
    from neardup.core.kernel import similarity as _sketch_similarity
except ImportError:
    def _sketch_similarity(a: bytes, b: bytes, k: int, metric: str) -> float:
        return reference.similarity(decode_sketch(a), decode_sketch(b), k, metric)

OUT = Path(__file__).resolve().parent / "out"
THRESHOLDS = np.union1d(np.round(np.arange(1, 100) / 100, 2), [defaults.DEFAULT_THRESHOLD])
_WORD = re.compile(r"[^\W_]+")
_NEGATIVE_KINDS = ("template", "site")  # Doc fields: hard negatives share one of them


# --- methods: documents → a pairwise similarity matrix per result set -------------------------------------

@dataclass(frozen=True)
class NeardupConfig:
    unit: str = SketchConfig.unit
    k: int = SketchConfig.k
    min_word_len: int = SketchConfig.min_word_len
    metric: str = defaults.DEFAULT_METRIC
    stoplist: bool = True

    @property
    def label(self) -> str:
        return (f"neardup {self.unit} K={self.k} mwl={self.min_word_len} {self.metric}"
                f"{'' if self.stoplist else ' no-stoplist'}")


DEFAULT_CONFIG = NeardupConfig()
# The exploration behind the defaults: the card's recipe, then one change at a time from the default.
EXPLORED = [
    NeardupConfig("sentence", 64, 3, reference.CONTAINMENT, stoplist=False),
    NeardupConfig("sentence", 64, 3, reference.CONTAINMENT),
    NeardupConfig("sentence", 64, 1, reference.CONTAINMENT),
    NeardupConfig(stoplist=False),
    NeardupConfig(metric=reference.JACCARD),
    *[NeardupConfig(k=k) for k in (32, 128, 256)],
    *[NeardupConfig(min_word_len=n) for n in (2, 3)],
    *[NeardupConfig(f"word:{n}", k=128) for n in (1, 2, 3, 4, 5, 7)],
    NeardupConfig("word:5", 128, 3),
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
    """Sketches under each configuration; the hashes of a (unit, min_word_len) are computed once per corpus."""

    def __init__(self, docs: list[devcorpus.Doc]):
        self.docs = docs
        self._hashes: dict[tuple[str, int], list[set[int]]] = {}

    def hashes(self, unit: str, min_word_len: int) -> list[set[int]]:
        key = (unit, min_word_len)
        if key not in self._hashes:
            sketcher = Sketcher(SketchConfig(unit=unit, min_word_len=min_word_len))
            self._hashes[key] = [sketcher.hashes(doc.text, doc.lang) for doc in self.docs]
        return self._hashes[key]

    def sketcher(self, config: NeardupConfig) -> Sketcher:
        """The Sketcher `neardup index` would build: the stop-list learned over every document of the corpus."""
        hashes = self.hashes(config.unit, config.min_word_len)
        stoplist = learn_stoplist(document_frequencies(hashes), len(hashes)) if config.stoplist else frozenset()
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
        return shared / min(len(a), len(b)) if metric == reference.CONTAINMENT else shared / (len(a) + len(b) - shared)

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

    @classmethod
    def label(cls, docs: list[devcorpus.Doc], indexes: list[int]) -> "ResultSet":
        members = [docs[i] for i in indexes]
        upper = zip(*np.triu_indices(len(indexes), 1))
        pairs = [(members[i], members[j]) for i, j in upper]
        duplicate = np.array([a.group == b.group for a, b in pairs])
        negative = {kind: np.array([a.group != b.group and getattr(a, kind) != "" and getattr(a, kind) == getattr(b, kind)
                                    for a, b in pairs]) for kind in _NEGATIVE_KINDS}
        return cls(indexes, duplicate, negative)


def add_result_set(counts: Counts, result_set: ResultSet, similarity: np.ndarray) -> None:
    groups = greedy_groups(similarity, THRESHOLDS)
    upper = np.triu_indices(len(result_set.indexes), 1)
    predicted = groups[:, upper[0]] == groups[:, upper[1]]
    truth = result_set.duplicate
    counts.tp += (predicted & truth).sum(axis=1)
    counts.fp += (predicted & ~truth).sum(axis=1)
    counts.fn += (~predicted & truth).sum(axis=1)
    for kind, pairs in result_set.negative.items():
        counts.negatives[kind] += int(pairs.sum())
        counts.negatives_grouped[kind] += (predicted & pairs).sum(axis=1)


def evaluate(method: Method, sets: dict[str, list[ResultSet]]) -> dict[str, Counts]:
    """Counts per scope ('overall' and each edit family) for one method."""
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
    """Best overall threshold, each family's own best, and the figures at the method's default threshold."""
    overall = counts["overall"]
    best = int(np.argmax(overall.f1()))
    at = _at(method.default_threshold) if method.default_threshold is not None else best

    def figures(index: int) -> dict:
        return {"threshold": float(THRESHOLDS[index]), "precision": float(overall.precision()[index]),
                "recall": float(overall.recall()[index]), "f1": float(overall.f1()[index]),
                "families": {scope: float(c.f1()[index]) for scope, c in counts.items() if scope != "overall"},
                "negatives_grouped": {kind: float(overall.negatives_grouped[kind][index]
                                                  / max(1, overall.negatives[kind])) for kind in _NEGATIVE_KINDS}}

    family_best = {scope: {"threshold": float(THRESHOLDS[int(np.argmax(c.f1()))]), "f1": float(np.max(c.f1()))}
                   for scope, c in counts.items() if scope != "overall"}
    return {"name": method.name, "default": figures(at), "best": figures(best), "family_best": family_best,
            "curve": {"threshold": THRESHOLDS.tolist(), "precision": overall.precision().tolist(),
                      "recall": overall.recall().tolist(), "f1": overall.f1().tolist()}}


def markdown(default: dict, baselines: list[dict], explored: list[dict], families: list[str], command: str,
             corpus_note: str) -> str:
    fam_header = " | ".join(families)
    lines = [f"Measured with `{command}` ({corpus_note}).", "",
             "**Overall** (mixed result sets): neardup's defaults at the default threshold; each baseline at its "
             "own best threshold. *Grouped negatives*: the share of hard-negative pairs (template variants; "
             "different articles on one site) put in one group.", "",
             "| method | threshold | precision | recall | F1 | grouped template negatives | grouped same-site "
             "negatives |", "|---|---|---|---|---|---|---|"]
    for row, figures in [(default, default["default"])] + [(b, b["best"]) for b in baselines]:
        neg = figures["negatives_grouped"]
        lines.append(f"| {row['name']} | {figures['threshold']:.2f} | {figures['precision']:.3f} | "
                     f"{figures['recall']:.3f} | **{figures['f1']:.3f}** | {neg['template']:.1%} | "
                     f"{neg['site']:.1%} |")
    lines += ["", "**Per edit family** (F1; result sets whose duplicates all come from one family, hard negatives "
              "included). neardup at its one default threshold; each baseline at *that family's own* best "
              "threshold (an oracle it would not have in service), shown as F1@threshold.", "",
              f"| method | {fam_header} |", "|---|" + "---|" * len(families)]
    lines.append(f"| {default['name']} @ {default['default']['threshold']:.2f} | "
                 + " | ".join(f"**{default['default']['families'][f]:.3f}**" for f in families) + " |")
    for b in baselines:
        lines.append(f"| {b['name']} | " + " | ".join(
            f"{b['family_best'][f]['f1']:.3f}@{b['family_best'][f]['threshold']:.2f}" for f in families) + " |")
    margins = {f: default["default"]["families"][f] - max(b["family_best"][f]["f1"] for b in baselines)
               for f in families}
    margins["overall"] = default["default"]["f1"] - max(b["best"]["f1"] for b in baselines)
    lines.append("| margin over the best baseline | " + " | ".join(f"{margins[f]:+.3f}" for f in families) + " |")
    lines += ["", f"Overall margin over the best baseline's best threshold: {margins['overall']:+.3f}.", "",
              "**neardup configurations explored** (each at its own best overall threshold; worst family F1 at "
              "that same threshold).", "",
              "| configuration | best threshold | F1 overall | worst family (F1) |", "|---|---|---|---|"]
    for row in explored:
        worst = min(row["best"]["families"].items(), key=lambda item: item[1])
        lines.append(f"| {row['name']} | {row['best']['threshold']:.2f} | {row['best']['f1']:.3f} | "
                     f"{worst[0]} ({worst[1]:.3f}) |")
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=devcorpus.DEFAULT_SEED)
    parser.add_argument("--size", type=int, default=devcorpus.DEFAULT_SIZE)
    parser.add_argument("--quick", action="store_true", help="fewer result sets, no exploration (under a minute)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    docs = devcorpus.generate(args.seed, args.size)
    overall_sets, family_sets = (30, 10) if args.quick else (120, 40)
    sets = {scope: [ResultSet.label(docs, indexes) for indexes in
                    devcorpus.draw_result_sets(docs, count, args.seed, family=None if scope == "overall" else scope)]
            for scope, count in [("overall", overall_sets)] + [(f, family_sets) for f in devcorpus.EDIT_FAMILIES]}
    neardup = NeardupMethods(docs)
    default = neardup.method(DEFAULT_CONFIG, defaults.DEFAULT_THRESHOLD)
    default.name = f"neardup default ({DEFAULT_CONFIG.label.removeprefix('neardup ')})"
    baselines = [minhash_method(docs), exact_method(docs, reference.JACCARD),
                 exact_method(docs, reference.CONTAINMENT), simhash_method(docs)]
    explored = [] if args.quick else [neardup.method(c) for c in EXPLORED if c != DEFAULT_CONFIG]
    rows = {}
    for method in [default, *baselines, *explored]:
        rows[method.name] = summary(method, evaluate(method, sets))
        print(f"  {method.name}: best F1 {rows[method.name]['best']['f1']:.3f} "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    command = "python benchmarks/evaluate.py" + (" --quick" if args.quick else "") + \
        (f" --seed {args.seed}" if args.seed != devcorpus.DEFAULT_SEED else "")
    corpus_note = (f"seed {args.seed}: {len(docs)} documents, {sum(len(s) for s in sets.values())} result sets of "
                   f"~100, Python {sys.version.split()[0]}")
    table = markdown(rows[default.name], [rows[b.name] for b in baselines],
                     [rows[default.name]] + [rows[m.name] for m in explored], list(devcorpus.EDIT_FAMILIES),
                     command, corpus_note)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "quality.md").write_text(table, encoding="utf-8")
    (args.out / "quality.json").write_text(json.dumps(
        {"command": command, "corpus": corpus_note, "thresholds": THRESHOLDS.tolist(), "methods": rows},
        indent=1), encoding="utf-8")
    plot([rows[default.name]] + [rows[b.name] for b in baselines], args.out / "quality_pr.png")
    print(table)


if __name__ == "__main__":
    main()
