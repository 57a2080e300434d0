"""Labelling strategies for `python -m benchmarks.records`: which pairs of a record set get a label, answered from
the truth.

A strategy is a function `choose(store_path, oracle, budget) -> list of {"a": id, "b": id, "duplicate": bool}`:
it may read the indexed store at store_path (an items store of the record set, as `neardup index --fields` left
it), ask `oracle(a, b)` whether two stored records are one entity (each answer is counted: oracle.asked), and
returns at most `budget` labelled pairs, which `neardup train` then fits on. The benchmark runs every strategy it
is given on a copy of the indexed store (`--strategy NAME`, or `--strategy module:function` for one written
elsewhere). `label` is `neardup label`'s session answered by the oracle.

`random_labels` is issue's setting: half the budget true duplicates drawn at random from the truth (a user who
already holds labelled duplicates: oracle.true_pairs(), which no active strategy may use), the other half random
pairs of records that the oracle says are not one entity. The same pairs are given to dedupe (mark_pairs).
"""
from __future__ import annotations

import importlib
import random
from pathlib import Path
from typing import Callable

from benchmarks.lib.record_sets import RecordSet

Strategy = Callable[[Path, "TruthOracle", int], list[dict]]
#: The seed of random_labels' draws.
SEED = 0


class TruthOracle:
    """Answers whether two records of a set are one entity, counting its answers."""

    def __init__(self, record_set: RecordSet):
        self._entity = {record.id: record.entity for record in record_set.records}
        self._members = record_set.entities()
        self.asked = 0

    def __call__(self, a: str, b: str) -> bool:
        self.asked += 1
        return self._entity[a] == self._entity[b]

    def ids(self) -> list[str]:
        """Every record id, in the set's order."""
        return list(self._entity)

    def true_pairs(self) -> list[tuple[str, str]]:
        """Every pair of records of one entity (a before b in the set's order): for strategies that stand for a
        user's labels made without neardup, never for an active learner."""
        return [(ids[i], ids[j]) for ids in self._members.values() for i in range(len(ids))
                for j in range(i + 1, len(ids))]


def labels(pairs: list[tuple[str, str]], oracle: TruthOracle) -> list[dict]:
    return [{"a": a, "b": b, "duplicate": oracle(a, b)} for a, b in pairs]


def random_labels(store_path: Path, oracle: TruthOracle, budget: int, seed: int = SEED) -> list[dict]:
    """budget // 2 true duplicates drawn from the truth, the rest random pairs the oracle says are distinct."""
    rng = random.Random(seed)
    true_pairs = oracle.true_pairs()
    duplicates = rng.sample(true_pairs, min(budget // 2, len(true_pairs)))
    ids, chosen, seen = oracle.ids(), [], set(duplicates)
    while len(chosen) < budget - len(duplicates):
        a, b = rng.sample(ids, 2)
        if (a, b) in seen or (b, a) in seen:
            continue
        seen.add((a, b))
        if not oracle(a, b):
            chosen.append((a, b))
    return [{"a": a, "b": b, "duplicate": True} for a, b in duplicates] + \
        [{"a": a, "b": b, "duplicate": False} for a, b in chosen]


def neardup_label(store_path: Path, oracle: TruthOracle, budget: int) -> list[dict]:
    """`neardup label`'s session (jobs/label.label_with: the candidate pairs the store is least sure of, its
    scorer refitted to each answer) on the store, the oracle answering, until `budget` answers."""
    from neardup.jobs.label import label_with
    from neardup.store import open_store

    with open_store(str(store_path), readonly=True) as store:
        answers = label_with(store, store_path.with_name(store_path.name + "-label.jsonl"), oracle, budget)
    return [{"a": a, "b": b, "duplicate": duplicate} for a, b, duplicate in answers if duplicate is not None]


#: The strategies `--strategy NAME` names; another is one more function of the same signature.
STRATEGIES: dict[str, Strategy] = {"random": random_labels, "label": neardup_label}


def strategy(name: str) -> Strategy:
    """A strategy by its STRATEGIES name, or a function given as module:function."""
    if name in STRATEGIES:
        return STRATEGIES[name]
    module, _, function = name.partition(":")
    if not function:
        raise ValueError(f"unknown strategy {name!r}: use one of {', '.join(STRATEGIES)} or module:function")
    return getattr(importlib.import_module(module), function)
