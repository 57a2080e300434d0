"""Items with fields against text alone on the labelled job-ad set (issue 13; lib/jobads).

Three detectors decide every labelled pair of a split by the engine's own Dedup of the two items (a result set of
two stored ids, Deduplicator.dedup_ids; the similarity it reports is what a pair is judged by):
  text-only         the items' `text` in a default bottom-K store (word 3-grams, K = 128, stop-list learned),
                    containment, at its best threshold on the judged split itself (its best case);
  fields + rules    an items store of the fields (jobads.fields.SCHEMA), the weighted per-field similarity of pairs
                    that share a super token (a rule), at the threshold chosen on the tune split
                    (core/defaults.ITEMS_THRESHOLD);
  fields + model    the same store with the pair model `neardup train` fits on the tune split's labelled pairs
                    (train.train, then the model copied to the test store through the store interface), deciding
                    by its calibrated probability at its own threshold.
Weights, rules and thresholds are chosen on `tune` only; figures are reported on `test`.

The loader (jobads.fields.items_with_fields) maps a job ad to the schema's fields, as jobads.md leaves to a loader
(its docstring gives the rules).

    python -m benchmarks.fields_eval [--split test] [--size 2000] [--tune-weights]

Also times the engine's Dedup of 100 stored results on the three stores, in the same run. Writes
out/fields_eval.json and out/fields_eval.md.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.lib import jobads
from benchmarks.lib.devcorpus import SPLITS
from benchmarks.lib.jobads.fields import SCHEMA, items_with_fields
from benchmarks.lib.paths import OUT
from neardup.jobs import train
from neardup.core.fields import FieldSpec
from neardup.core.item_scoring import weighted
from neardup.core.kernel import unpack
from neardup.runtime.deduplicator import Deduplicator
from neardup.runtime.params import DedupParams
from neardup.runtime.served_store import ServedStore
from neardup.jobs.index import IndexOptions, index_corpus
from neardup.store import open_store


def write_jsonl(path: Path, rows) -> Path:
    with path.open("w", encoding="utf-8") as stream:
        for row in rows:
            stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


def build(split: str, size: int, work: Path, without: tuple[str, ...] = ()) -> dict:
    """The split's text store and items store (the fields in `without` left out), and its pairs file."""
    data = jobads.generate(split, size)
    base = work / split
    base.mkdir()
    texts = write_jsonl(base / "texts.jsonl", ({"id": i["id"], "lang": i["lang"], "text": i["text"]}
                                                for i in data.items))
    items = write_jsonl(base / "items.jsonl", ({**record, "fields": {name: value for name, value in
                                                                      record["fields"].items() if name not in without}}
                                               for record in items_with_fields(data.items)))
    pairs = write_jsonl(base / "pairs.jsonl", data.pairs)
    index_corpus(str(texts), str(base / "text-store"))
    schema = {"fields": tuple(FieldSpec.from_dict(spec) for spec in SCHEMA["fields"]),
              "rules": tuple(map(tuple, SCHEMA["rules"]))}
    index_corpus(str(items), str(base / "item-store"), IndexOptions(schema=schema))
    return {"pairs": data.pairs, "pairs_path": pairs, "text_store": base / "text-store",
            "item_store": base / "item-store"}


def dedup_scores(store_path: Path, pairs: list[dict], threshold: float) -> np.ndarray:
    """The similarity Dedup reports for b against a (0 when it keeps b, which a threshold of 0 never does for a
    pair it scores: those are the pairs sharing no value or no super token)."""
    with open_store(store_path, readonly=True) as store:
        engine = Deduplicator(ServedStore(store))
        params = DedupParams(threshold, engine.served.defaults.metric, "greedy")
        scores = []
        for pair in pairs:
            grouping = unpack(engine.dedup_ids([pair["a"], pair["b"]], params).packed_grouping)
            scores.append(grouping.similarity[1] if grouping.duplicate_of[1] == 0 else -1.0)
    return np.array(scores)


def dedup_cost(store_path: Path, result_sets: list[list[str]], rounds: int = 5) -> float:
    """Median µs of the engine's Dedup of a stored result set (in process: the request path after decoding)."""
    with open_store(store_path, readonly=True) as store:
        engine = Deduplicator(ServedStore(store))
        times = []
        for _ in range(rounds):
            for ids in result_sets:
                started = time.perf_counter()
                engine.dedup_ids(ids, engine.served.defaults)
                times.append(time.perf_counter() - started)
    return float(np.median(times) * 1e6)


def figures(decided: np.ndarray, pairs: list[dict]) -> dict:
    truth = np.array([p["duplicate"] for p in pairs])
    kinds = np.array([p["kind"] for p in pairs])
    tp, fp, fn = (decided & truth).sum(), (decided & ~truth).sum(), (~decided & truth).sum()
    per_kind = {kind: float(decided[kinds == kind].mean()) for kind in jobads.KINDS}
    return {"f1": float(2 * tp / (2 * tp + fp + fn)), "precision": float(tp / max(tp + fp, 1)),
            "recall": float(tp / (tp + fn)), "city_variants_apart": 1 - per_kind["city_variant"],
            "repost_recall": per_kind["repost"], "readvert_recall": per_kind["readvert"],
            "grouped_per_kind": per_kind}


def best_threshold(scores: np.ndarray, pairs: list[dict]) -> tuple[float, dict]:
    best = None
    for threshold in np.arange(0.05, 1.0001, 0.01):
        result = figures(scores >= threshold - 1e-12, pairs)
        if best is None or result["f1"] > best[1]["f1"]:
            best = (round(float(threshold), 2), result)
    return best


def tune_weights(store_path: Path, pairs: list[dict], rounds: int = 3) -> dict:
    """Coordinate search of the field weights on a split's pairs (weighted per-field similarity, best threshold)."""
    with open_store(store_path, readonly=True) as store:
        fields = store.config.fields
        ids = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
        sketches = dict(zip(ids, store.get_many(ids)))
    rows, scored = train.pair_rows(fields, sketches, [(p["a"], p["b"], p["duplicate"]) for p in pairs])

    def f1(specs):
        scores = np.where(scored, weighted(specs, np.where(scored[:, None], rows, 0.0)), -1.0)
        return best_threshold(scores, pairs)

    specs = list(fields)
    best = f1(specs)
    for _ in range(rounds):
        for position in range(len(specs)):
            for weight in (0.0, 0.5, 1.0, 2.0, 4.0, 8.0):
                trial = specs[:position] + [dataclasses.replace(specs[position], weight=weight)] + specs[position + 1:]
                result = f1(trial)
                if result[1]["f1"] > best[1]["f1"]:
                    specs, best = trial, result
    return {"weights": {spec.name: spec.weight for spec in specs}, "threshold": best[0], "tune": best[1]}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="test", choices=SPLITS, help="the split to report on (default test)")
    parser.add_argument("--size", type=int, default=jobads.DEFAULT_SIZE, help="items per split (default 2000)")
    parser.add_argument("--without", metavar="FIELD", action="append", default=[],
                        help="leave this field out of every item (repeatable; e.g. reference, to see what the "
                             "loader's reference pattern adds) (default: none)")
    parser.add_argument("--tune-weights", action="store_true",
                        help="search the field weights on the tune split and print them (default: use SCHEMA's)")
    args = parser.parse_args(argv)
    from neardup.core.vocabulary import ITEMS_THRESHOLD

    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        tune = build("tune", args.size, work, tuple(args.without))
        if args.tune_weights:
            print(json.dumps(tune_weights(tune["item_store"], tune["pairs"]), indent=1))
            return
        judged = build(args.split, args.size, work, tuple(args.without)) if args.split != "tune" else tune
        pairs = judged["pairs"]
        report = {"split": args.split, "size": args.size, "pairs": len(pairs), "schema": SCHEMA,
                  "without": args.without}
        text_threshold, report["text_only"] = best_threshold(dedup_scores(judged["text_store"], pairs, 0.0), pairs)
        report["text_only"]["threshold"] = text_threshold
        fields_scores = dedup_scores(judged["item_store"], pairs, 0.0)
        report["fields_rules"] = {**figures(fields_scores >= ITEMS_THRESHOLD, pairs), "threshold": ITEMS_THRESHOLD}
        report["fields_rules_best_threshold"] = best_threshold(fields_scores, pairs)[0]
        trained = train.train(str(tune["pairs_path"]), str(tune["item_store"]))
        with open_store(tune["item_store"], readonly=True) as source, open_store(judged["item_store"]) as target:
            target.set_model(source.model())
        rng = random.Random(7)
        ids = sorted({p["a"] for p in pairs} | {p["b"] for p in pairs})
        result_sets = [rng.sample(ids, 100) for _ in range(50)]
        cost = {"text_bottomk": dedup_cost(judged["text_store"], result_sets),
                "items_weighted": dedup_cost(judged["item_store"], result_sets)}
        model_scores = dedup_scores(judged["item_store"], pairs, 0.0)
        cost["items_model"] = dedup_cost(judged["item_store"], result_sets)
        report["dedup_us_100"] = cost
        report["fields_model"] = {**figures(model_scores >= trained["threshold"], pairs),
                                  "threshold": trained["threshold"], "model": trained["chosen"],
                                  "cv_on_tune": trained["models"][trained["chosen"]]["cv"],
                                  "cv_both": {kind: m["cv"] for kind, m in trained["models"].items()}}
    report["seconds"] = round(time.monotonic() - started, 1)
    OUT.mkdir(exist_ok=True)
    name = "fields_eval" + "".join(f"-without-{field}" for field in args.without)
    (OUT / f"{name}.json").write_text(json.dumps(report, indent=1))
    (OUT / f"{name}.md").write_text(markdown(report))
    print(markdown(report))


def markdown(report: dict) -> str:
    rows = [("text only (containment, best threshold on this split)", report["text_only"]),
            ("fields + rules (weighted, threshold from tune)", report["fields_rules"]),
            (f"fields + classifier ({report['fields_model']['model']}, trained on tune)", report["fields_model"])]
    without = f", without {', '.join(report['without'])}" if report["without"] else ""
    lines = [f"Job-ad {report['split']} split ({report['size']} items, {report['pairs']} labelled pairs{without}), "
             f"each pair decided by Dedup of the two items:", "",
             "| detector | threshold | F1 | precision | recall | city variants kept apart | repost recall | "
             "readvert recall |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in rows:
        lines.append(f"| {name} | {r['threshold']:.2f} | {r['f1']:.3f} | {r['precision']:.3f} | {r['recall']:.3f} | "
                     f"{100 * r['city_variants_apart']:.1f} % | {r['repost_recall']:.3f} | "
                     f"{r['readvert_recall']:.3f} |")
    lines += ["", "Share of each kind's pairs grouped as duplicates:", "",
              "| kind | " + " | ".join(name.split(" (")[0] for name, _ in rows) + " |",
              "|---|" + "---:|" * len(rows)]
    for kind in jobads.KINDS:
        lines.append(f"| {kind} | " + " | ".join(f"{r['grouped_per_kind'][kind]:.3f}" for _, r in rows) + " |")
    cost = report["dedup_us_100"]
    lines += ["", "Dedup of 100 stored items in process (median of 250, random sets of the split; the same ids' texts "
              "in the text store, same run): " + ", ".join(f"{name} {us:,.0f} µs" for name, us in cost.items())
              + f" ({cost['items_weighted'] / cost['text_bottomk']:.1f}x and "
              f"{cost['items_model'] / cost['text_bottomk']:.1f}x the text store's)"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
