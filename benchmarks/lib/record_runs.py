"""The runs `python -m benchmarks.records` compares on a record set, each timed, and their scores: neardup through
its command line (index with the set's schema, train on labelled pairs, cluster, export), and dedupe 3.0.3 in
process (trained on the same labelled pairs through mark_pairs, or by its own active learner answered from the
truth), each clustering scored pairwise against the true entities.

Scoring (`pairwise`) is over every pair of the set's records, from the counts of the clustering against the
entities (a pair is predicted a duplicate when both records got one cluster, and is one when both are of one
entity): precision, recall and F1 of those pairs, as benchmarks/evaluate_clusters.py scores `neardup cluster`.

dedupe gets what neardup gets: the schema's fields, each text field a `String` variable and each exact field an
`Exact` one (every one `has_missing`: a missing value is None), the exact fields' values normalised as the schema
normalises them for neardup (a phone's digits, a code's casefolded words), the text fields' lowercased with their
white space collapsed (dedupe's own examples' preprocessing). Processes: dedupe with num_cores=1 (its classifier
search, GridSearchCV with n_jobs=-1 as dedupe sets it, still uses every core), neardup's commands with their
default of one process.
"""
from __future__ import annotations

import json
import random
import re
import resource
import shutil
import subprocess
import time
from collections import Counter
from pathlib import Path

from benchmarks.lib.record_labels import Strategy, TruthOracle
from benchmarks.lib.record_sets import RecordSet, write
from tests.server_process import NEARDUP
from neardup.core.fields import FieldSpec, normalized

#: dedupe's own default for partition(): pairs whose match probability reaches it are linked.
DEDUPE_THRESHOLD = 0.5
#: Records dedupe's learner is prepared on (prepare_training), drawn at random (seed SEED) from larger sets, the
#: labelled records added: prepare_training's own sample_size default, which 3.0.3 no longer applies itself (it
#: indexes every record given, and its block learner keeps every pair each candidate predicate covers: on all 5,000
#: FEBRL 3 records it passed 12 GB; dedupe issues 899 and 920). partition() then clusters every record.
DEDUPE_SAMPLE = 1500
SEED = 0
#: `neardup cluster`'s exit code when some article's candidates passed --max-candidates (clusters stored anyway).
EXIT_PARTIAL = 3
_SUMMARY = re.compile(r"^cluster: .*$", re.M)


class RunFailed(RuntimeError):
    pass


# --- scoring -------------------------------------------------------------------------------------------------------

def pairwise(record_set: RecordSet, cluster_of: dict[str, object]) -> dict:
    """Pairwise precision, recall and F1 of a clustering (record id -> cluster; a record without one is alone)."""
    entity = {record.id: record.entity for record in record_set.records}
    clusters = Counter(cluster_of.get(i, ("alone", i)) for i in entity)
    cells = Counter((cluster_of.get(i, ("alone", i)), e) for i, e in entity.items())
    pairs = lambda counts: sum(n * (n - 1) // 2 for n in counts.values())  # noqa: E731
    tp, predicted, true = pairs(cells), pairs(clusters), record_set.true_pairs()
    precision = tp / predicted if predicted else 1.0
    recall = tp / true if true else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1, "tp": tp, "fp": predicted - tp, "fn": true - tp,
            "clusters": len(clusters), "largest": max(clusters.values(), default=0)}


# --- neardup -------------------------------------------------------------------------------------------------------

def neardup(*args: str, accept: tuple[int, ...] = (0,)) -> tuple[subprocess.CompletedProcess, float]:
    """A neardup command as a user runs it, and its wall seconds."""
    started = time.perf_counter()
    done = subprocess.run([*NEARDUP, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode not in accept:
        raise RunFailed(f"`neardup {' '.join(args)}` exited {done.returncode}:\n{done.stderr}")
    return done, seconds


def index(record_set: RecordSet, folder: Path) -> dict:
    """The set written to folder (documents, schema, truth) and indexed into folder/store."""
    paths = write(record_set, folder)
    store = folder / "store"
    if store.exists():
        shutil.rmtree(store)
    done, seconds = neardup("index", str(paths["documents"]), "--store", str(store), "--fields", str(paths["schema"]))
    threshold = re.search(r"^\s*default threshold:\s*(.*)$", done.stdout, re.M)
    return {**paths, "store": store, "index_seconds": seconds, "threshold": threshold.group(1) if threshold else ""}


def cluster(record_set: RecordSet, store: Path) -> dict:
    """`neardup cluster` at the store's defaults (its model when trained), `neardup clusters --export -`, scored."""
    done, cluster_seconds = neardup("cluster", "--store", str(store), accept=(0, EXIT_PARTIAL))
    exported, export_seconds = neardup("clusters", "--store", str(store), "--export", "-")
    cluster_of = {}
    for line in exported.stdout.splitlines():
        record = json.loads(line)
        cluster_of[record["id"]] = record["cluster"]
    summary = _SUMMARY.search(done.stderr)
    return {**pairwise(record_set, cluster_of), "cluster_seconds": cluster_seconds, "export_seconds": export_seconds,
            "summary": summary.group(0) if summary else "", "inexact": done.returncode == EXIT_PARTIAL}


def neardup_defaults(record_set: RecordSet, indexed: dict) -> dict:
    """(a): the store as indexed, no labels: its field rules at its default threshold (what `neardup index`
    set: learned from the records, or the fixed default)."""
    store = indexed["store"].with_name("store-defaults")
    shutil.copytree(indexed["store"], store)
    result = cluster(record_set, store)
    result["threshold"] = indexed["threshold"]
    result["seconds"] = indexed["index_seconds"] + result["cluster_seconds"] + result["export_seconds"]
    return result


def neardup_trained(record_set: RecordSet, indexed: dict, name: str, choose: Strategy, budget: int,
                    labels: list[dict] | None = None) -> dict:
    """A copy of the indexed store, labelled pairs chosen by the strategy (or given), `neardup train` on them,
    then clustered (by the field rules when train refuses the model: exit 1, the store unchanged, said in
    model_refused). seconds: index, choosing, train, cluster and export."""
    slug = re.sub(r"[^\w.-]+", "-", name)
    store = indexed["store"].with_name(f"store-{slug}")
    shutil.copytree(indexed["store"], store)
    oracle = TruthOracle(record_set)
    started = time.perf_counter()
    if labels is None:
        labels = choose(store, oracle, budget)
    choose_seconds = time.perf_counter() - started
    if len(labels) > budget:
        raise RunFailed(f"strategy {name} returned {len(labels)} labelled pairs, over the budget of {budget}")
    pairs = store.with_name(f"labels-{slug}.jsonl")
    pairs.write_text("".join(json.dumps(label) + "\n" for label in labels), encoding="utf-8")
    trained, train_seconds = neardup("train", str(pairs), "--store", str(store), accept=(0, 1))
    refused = trained.returncode == 1
    if refused and "not stored" not in trained.stderr:
        raise RunFailed(f"`neardup train {pairs.name}` exited 1:\n{trained.stderr}")
    result = cluster(record_set, store)
    result.update(labels=len(labels), labelled_duplicates=sum(label["duplicate"] for label in labels),
                  oracle_answers=oracle.asked, choose_seconds=choose_seconds, train_seconds=train_seconds,
                  model_refused=_local(trained.stderr, store) if refused else "",
                  train_report=_local(trained.stdout, store),
                  seconds=indexed["index_seconds"] + choose_seconds + train_seconds + result["cluster_seconds"]
                  + result["export_seconds"])
    return result


def _local(text: str, store: Path) -> str:
    """A command's output with the run's folder left out of its paths (reports name no folder of the machine)."""
    return text.replace(f"{store.parent}/", "").strip()


# --- dedupe --------------------------------------------------------------------------------------------------------

def dedupe_data(record_set: RecordSet) -> tuple[dict, list]:
    """dedupe's records (id -> {field: value or None}) and variables for the set's schema."""
    import dedupe

    specs = [FieldSpec.from_dict(spec) for spec in record_set.schema["fields"]]
    data = {}
    for record in record_set.records:
        values = {}
        for spec in specs:
            value = record.fields.get(spec.name)
            if value is not None:
                value = normalized(spec, value) if spec.kind == "exact" else " ".join(value.lower().split())
            values[spec.name] = value or None
        data[record.id] = values
    variables = [dedupe.variables.String(spec.name, has_missing=True) if spec.kind == "text"
                 else dedupe.variables.Exact(spec.name, has_missing=True) for spec in specs]
    return data, variables


def _training_sample(data: dict, labels: list[dict] = ()) -> dict:
    """At most DEDUPE_SAMPLE records drawn at random, and every labelled one, in the set's order."""
    keep = set(random.Random(SEED).sample(sorted(data), min(len(data), DEDUPE_SAMPLE)))
    keep |= {label["a"] for label in labels} | {label["b"] for label in labels}
    return {record_id: values for record_id, values in data.items() if record_id in keep}


def _seeded() -> None:
    """dedupe draws with random and numpy.random: seeded, so a run repeats."""
    import numpy

    random.seed(SEED)
    numpy.random.seed(SEED)


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _partition(record_set: RecordSet, deduper, data: dict) -> dict:
    started = time.perf_counter()
    cluster_of = {}
    for number, (members, _) in enumerate(deduper.partition(data, threshold=DEDUPE_THRESHOLD)):
        for member in members:
            cluster_of[member] = number
    return {**pairwise(record_set, cluster_of), "partition_seconds": time.perf_counter() - started}


def dedupe_marked(record_set: RecordSet, labels: list[dict]) -> dict:
    """(c): dedupe trained on given labelled pairs (mark_pairs before prepare_training, so that its sample indexes
    the labelled records), then partition."""
    import dedupe

    _seeded()
    started = time.perf_counter()
    data, variables = dedupe_data(record_set)
    deduper = dedupe.Dedupe(variables, num_cores=1)
    deduper.mark_pairs({"match": [(data[l["a"]], data[l["b"]]) for l in labels if l["duplicate"]],
                        "distinct": [(data[l["a"]], data[l["b"]]) for l in labels if not l["duplicate"]]})
    deduper.prepare_training(_training_sample(data, labels))
    deduper.train()
    train_seconds = time.perf_counter() - started
    result = _partition(record_set, deduper, data)
    result.update(labels=len(labels), labelled_duplicates=sum(label["duplicate"] for label in labels),
                  train_seconds=train_seconds, seconds=train_seconds + result["partition_seconds"],
                  predicates=[str(p) for p in deduper.predicates], peak_mb=_peak_mb())
    return result


def dedupe_active(record_set: RecordSet, budget: int) -> dict:
    """(d): dedupe's active learner asks, the truth answers, until `budget` answers; then train and partition."""
    import dedupe

    _seeded()
    started = time.perf_counter()
    data, variables = dedupe_data(record_set)
    id_of = {id(values): record_id for record_id, values in data.items()}
    oracle = TruthOracle(record_set)
    deduper = dedupe.Dedupe(variables, num_cores=1)
    deduper.prepare_training(_training_sample(data))
    marked = {"match": 0, "distinct": 0}
    while oracle.asked < budget:
        pairs = deduper.uncertain_pairs()
        if not pairs:
            break
        first, second = pairs[0]
        answer = "match" if oracle(_record_id(first, data, id_of), _record_id(second, data, id_of)) else "distinct"
        deduper.mark_pairs({"match": [], "distinct": [], answer: [(first, second)]})
        marked[answer] += 1
    deduper.train()
    train_seconds = time.perf_counter() - started
    result = _partition(record_set, deduper, data)
    result.update(labels=oracle.asked, labelled_duplicates=marked["match"], train_seconds=train_seconds,
                  seconds=train_seconds + result["partition_seconds"],
                  predicates=[str(p) for p in deduper.predicates], peak_mb=_peak_mb())
    return result


def _record_id(values: dict, data: dict, id_of: dict) -> str:
    """The id of a record dedupe hands back (the same dict it was given, else the record with equal values)."""
    found = id_of.get(id(values))
    if found is not None:
        return found
    matches = [record_id for record_id, candidate in data.items() if candidate == dict(values)]
    if not matches:
        raise RunFailed(f"dedupe asked about a record that is not in the set: {values}")
    return matches[0]  # records with equal values: the first
