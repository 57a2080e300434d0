"""`neardup label`: which candidate pairs of an items store a user should label next, and the file of answers.

Labels are worth most where the store is least sure: a pair whose score lies near the decision threshold. The
proposals come from a sample of the store's candidate pairs (jobs/pair_sample.py: those sharing a super token,
the only pairs the server scores), never from pairs that share nothing (which teach nothing about candidates).
The pool is their population (pair_sample.candidate_population): a uniform sample of the pairs far below the
rules' threshold and the pairs nearer to it, where duplicates, rare among a large store's candidates, are:

  * most proposals are the unanswered pair the current scorer is least sure of: once the answers hold
    MIN_EACH duplicates and MIN_EACH others among candidates, a logistic regression on the pairs' features fitted
    to them (refitted after each answer: jobs/learners.py), its probability nearest 1/2; before that, the store's own
    scorer (a trained model's probability at its threshold, else the field rules' similarity at the store's
    default threshold), the score nearest the threshold;
  * every COVER-th proposal is drawn from the bin of the rule score (train.BINS) whose candidates are the least
    labelled for their number, so the answers show every kind of candidate: `neardup train` lets a model decide
    a band of candidates otherwise than the rules only where labels there show it right.

Answers are JSON Lines, one per pair, as `neardup train` reads them: {"a": id, "b": id, "duplicate": true|false},
or null for "unsure" (train skips those). Each answer is appended and flushed at once, so quitting loses nothing;
a session started on the same file resumes (answered pairs are not proposed again); undo drops the last line.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.item_scoring import model_inputs, similarity_columns
from ..core.vocabulary import ITEMS
from ..runtime.deduplicator import Deduplicator
from ..store import SketchStore
from .learners import fit_logistic
from .pair_sample import CandidatePairs, candidate_population
from .train import BINS, read_pairs

#: Duplicates and others, each, among the answered candidates before the session fits its own scorer.
MIN_EACH = 3
#: Every COVER-th proposal comes from the least labelled bin of the rule score.
COVER = 4


class Proposal(NamedTuple):
    a: str
    b: str
    score: float        # the rule similarity of the pair (what the store decides by without a model)
    certainty: float    # how far the current scorer is from undecided: 0 is a coin toss
    reason: str         # "uncertain" or "coverage"
    similarities: dict  # per field: its similarity for this pair (None where one item lacks the field)


class LabelSession:
    """Proposes pairs and records answers in `path` (module doc)."""

    def __init__(self, store: SketchStore, path: str | os.PathLike, seed: int = 0):
        if store.config.kind != ITEMS:
            raise ConfigMismatch(f"store {store.location} holds {store.config.kind} sketches of texts; labelling "
                                 "pairs is for an items store (`neardup index --fields SCHEMA`)")
        store.require_postings()
        self.path = Path(path)
        self.fields = store.config.fields
        self.pool: CandidatePairs = candidate_population(store, seed)
        engine = Deduplicator(store)
        self._store_scores = (engine.items.scores(self.pool.features) if len(self.pool.a)
                              else np.zeros(0))
        self._store_threshold = engine.defaults.threshold
        self._inputs = model_inputs(self.fields, self.pool.features) if len(self.pool.a) else np.zeros((0, 0))
        self._position = {pair: i for i, pair in enumerate(zip(self.pool.a, self.pool.b))}
        self.answers: list[tuple[str, str, bool | None]] = self._read()
        self._bins = np.digitize(self.pool.rule_scores, np.linspace(0.0, 1.0, BINS + 1)[1:-1])

    def _read(self) -> list[tuple[str, str, bool | None]]:
        if not self.path.exists():
            return []
        return read_pairs(str(self.path), unsure=True)

    def _answered(self) -> np.ndarray:
        done = np.zeros(len(self.pool.a), bool)
        for a, b, _ in self.answers:
            for pair in ((a, b), (b, a)):
                if pair in self._position:
                    done[self._position[pair]] = True
        return done

    def certainty(self) -> np.ndarray:
        """Per pooled pair, how far the current scorer is from undecided (module doc)."""
        labelled = [(self._position.get((a, b), self._position.get((b, a))), duplicate)
                    for a, b, duplicate in self.answers if duplicate is not None]
        labelled = [(i, duplicate) for i, duplicate in labelled if i is not None]
        truth = np.array([duplicate for _, duplicate in labelled], bool)
        if truth.sum() >= MIN_EACH and (~truth).sum() >= MIN_EACH:
            rows = self._inputs[[i for i, _ in labelled]]
            return np.abs(fit_logistic(rows, truth).probability(self._inputs) - 0.5)
        return np.abs(self._store_scores - self._store_threshold)

    def next(self) -> Proposal | None:
        """The next pair to label, or None when every pooled pair is answered."""
        open_ = ~self._answered()
        if not open_.any():
            return None
        certainty = self.certainty()
        reason = "uncertain"
        chosen = np.flatnonzero(open_)
        if len(self.answers) % COVER == COVER - 1:
            counts = np.bincount(self._bins, minlength=BINS)
            labelled = np.bincount(self._bins[~open_], minlength=BINS)
            wanted = np.flatnonzero(np.bincount(self._bins[open_], minlength=BINS))
            neediest = wanted[np.argmin(labelled[wanted] / counts[wanted])]
            chosen = chosen[self._bins[chosen] == neediest]
            reason = "coverage"
        i = int(chosen[np.argmin(certainty[chosen])])
        return Proposal(self.pool.a[i], self.pool.b[i], float(self.pool.rule_scores[i]), float(certainty[i]),
                        reason, self._similarities(i))

    def _similarities(self, i: int) -> dict:
        values = self.pool.features[i, similarity_columns(self.fields)]
        return {spec.name: None if np.isnan(value) else float(value) for spec, value in zip(self.fields, values)}

    def answer(self, a: str, b: str, duplicate: bool | None) -> None:
        """Records an answer (None: unsure), appended to the file at once."""
        if not isinstance(duplicate, (bool, type(None))):
            raise InvalidArgument("an answer is true, false or null (unsure)")
        with open(self.path, "a", encoding="utf-8") as stream:
            stream.write(json.dumps({"a": a, "b": b, "duplicate": duplicate}, ensure_ascii=False) + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        self.answers.append((a, b, duplicate))

    def undo(self) -> tuple[str, str, bool | None] | None:
        """Drops the last answer (from the file too); None when there is none."""
        if not self.answers:
            return None
        lines = [line for line in self.path.read_text(encoding="utf-8").splitlines() if line.strip()]
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text("".join(line + "\n" for line in lines[:-1]), encoding="utf-8")
        os.replace(partial, self.path)  # the file first: a failed rewrite leaves the session as the file is
        return self.answers.pop()

    def counts(self) -> dict:
        labels = [duplicate for _, _, duplicate in self.answers]
        return {"answered": len(labels), "duplicates": labels.count(True), "others": labels.count(False),
                "unsure": labels.count(None), "pool": len(self.pool.a)}


def label_with(store: SketchStore, path: str | os.PathLike, oracle: Callable[[str, str], bool | None],
               budget: int, seed: int = 0) -> list[tuple[str, str, bool | None]]:
    """A session answered by `oracle(a, b)` for `budget` pairs (or until nothing is left): what a benchmark
    compares with other ways of choosing labels. Returns the answers."""
    session = LabelSession(store, path, seed)
    while len(session.answers) < budget:
        proposal = session.next()
        if proposal is None:
            break
        session.answer(proposal.a, proposal.b, oracle(proposal.a, proposal.b))
    return session.answers

