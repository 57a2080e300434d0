"""`neardup label`: which pairs of a store a user should label next, and the file of answers `neardup train` reads.

Labels are worth most where the store is least sure: proposals come from the pairs the server compares
(jobs/pair_sample.py), mostly the one the current scorer is least sure of, every COVER-th from the least labelled
band of score, one pair per family of look-alikes as long as the scorer agrees with its answer; while the answers
are lopsided, near where the other kind should be. Each answer is appended and flushed at once, so quitting loses
nothing and a session on the same file resumes. The rules: docs/commands/neardup-label.md.
"""
from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np

from ..core import calibration
from ..core.errors import ConfigMismatch, InvalidArgument
from ..core.item_scoring import model_inputs, similarity_columns
from ..core.vocabulary import ITEMS, SIMHASH
from ..runtime.documents import RequestDocument
from ..runtime.explainer import Explainer, ExplainOutcome
from ..runtime.served_store import ServedStore
from ..store import SketchStore
from .learners import PENALTY, fit_logistic
from .pair_sample import CandidatePairs, candidate_population, text_candidate_pairs
from .train import BINS, CHANCE_PENALTY, answered_sketches, last_answers, read_pairs, setting_similarities

#: Duplicates and others, each, among the answered candidates before the session fits its own scorer.
MIN_EACH = 3
#: Answers of one kind, with fewer than MIN_EACH of the other, after which proposals on a store of texts leave the
#: store's threshold to look for the other kind (an items store's stay: measured on texts only).
LOPSIDED = 2 * MIN_EACH
#: Duplicates and others, each, among the answers before a look-alike the scorer calls otherwise than its answered
#: pair was answered is proposed (a store of texts; on an items store a look-alike stays passed over: measured on
#: texts only).
CALLED_EACH = 10
#: Every COVER-th proposal comes from the least labelled bin of the score.
COVER = 4
#: An answered pair's neighbourhood reaches at least this share of the store's threshold
#: (docs/commands/neardup-label.md).
FAMILY_SHARE = 0.5


class Proposal(NamedTuple):
    a: str
    b: str
    score: float        # the pair's similarity: an items store's rules' (what it decides by without a model), or
                        # a text store's under its default metric
    certainty: float    # how far the current scorer is from undecided: 0 is a coin toss
    reason: str         # "uncertain" or "coverage"
    similarities: dict  # per field: its similarity for this pair (None where one item lacks the field); {} for texts


class LabelSession:
    """Proposes pairs and records answers in `path` (docs/commands/neardup-label.md)."""

    def __init__(self, store: SketchStore, path: str | os.PathLike, seed: int = 0, corpus: str | None = None):
        if store.config.kind == SIMHASH:
            raise ConfigMismatch(f"store {store.location} holds simhash fingerprints; labelling pairs is for a "
                                 "bottom-K store of texts or an items store")
        store.require_postings()
        self.path = Path(path)
        answered = self._read()
        answered_sketches(store, last_answers(answered)[0], str(self.path))  # what train would refuse, refused first
        self.fields = store.config.fields
        self.texts = store.config.kind != ITEMS
        #: What to run once the answers are in: train on them, given the corpus where train reads it (a store of
        #: texts: the other stop-lists weighed too, as this session proposed).
        self.next_command = shlex.join(["neardup", "train", str(path), "--store", store.location]
                                       + (["--corpus", str(corpus)] if corpus is not None and self.texts else []))
        served = ServedStore(store)
        self._explainer = Explainer(served)
        #: The store's default threshold (a trained model's on an items store that holds one).
        self.threshold = served.defaults.threshold
        #: Where proposals are nearest before the session fits its scorer, and what an answered pair's neighbourhood
        #: reaches: the threshold, or where the look-alikes a learned one was moved above begin (whether they are
        #: copies is what the answers decide).
        self._cut = (store.threshold() or {}).get(calibration.LOOK_ALIKES_FROM, self.threshold)
        #: What a text pair's score is (the store's default metric); an items store's is its rules' "fields".
        self.metric = served.defaults.metric
        #: The L2 penalty of the session's scorer: train's chance model's where it reads the same similarities.
        self._penalty = PENALTY
        if self.texts:
            self.pool: CandidatePairs = text_candidate_pairs(store)
            self._store_scores, self._inputs = self.pool.rule_scores, self.pool.features
            if corpus is not None and len(self.pool.a):
                self._inputs, self._penalty = setting_similarities(store, corpus, self.pool), CHANCE_PENALTY
        else:
            self.pool = candidate_population(store, seed)
            self._store_scores = served.items.scores(self.pool.features) if len(self.pool.a) else np.zeros(0)
            self._inputs = model_inputs(self.fields, self.pool.features) if len(self.pool.a) else np.zeros((0, 0))
        self._position = {pair: i for i, pair in enumerate(zip(self.pool.a, self.pool.b))}
        #: Each pooled article's number, and each pooled pair's two (what _repeats compares, vectorised).
        self._article: dict[str, int] = {}
        self._ends = np.array([[self._article.setdefault(a, len(self._article)),
                                self._article.setdefault(b, len(self._article))]
                               for a, b in zip(self.pool.a, self.pool.b)], np.intp).reshape(-1, 2)
        self._neighbours = self._linked()
        self.answers: list[tuple[str, str, bool | None]] = answered
        self._bins = np.digitize(self.pool.rule_scores, np.linspace(0.0, 1.0, BINS + 1)[1:-1])

    def _linked(self) -> dict[str, list[tuple[str, float]]]:
        """Per pooled article, the articles the pool pairs it with and the pair's score by the store's scorer."""
        linked: dict[str, list[tuple[str, float]]] = {}
        for a, b, score in zip(self.pool.a, self.pool.b, self._store_scores.tolist()):
            linked.setdefault(a, []).append((b, score))
            linked.setdefault(b, []).append((a, score))
        return linked

    def _read(self) -> list[tuple[str, str, bool | None]]:
        if not self.path.exists():
            return []
        return read_pairs(str(self.path))

    def _answered(self) -> np.ndarray:
        done = np.zeros(len(self.pool.a), bool)
        for a, b, _ in self.answers:
            i = self._index(a, b)
            if i is not None:
                done[i] = True
        return done

    def _index(self, a: str, b: str) -> int | None:
        """The pooled pair's position, in either order; None when it is not pooled."""
        return self._position.get((a, b), self._position.get((b, a)))

    def _repeats(self, open_: np.ndarray, called: np.ndarray | None) -> np.ndarray:
        """Per pooled pair, whether both its articles lie in one answered pair's neighbourhood
        (docs/commands/neardup-label.md); with `called` (the current scorer's call per pooled pair, once the answers
        hold enough of each), only where the scorer calls it as that pair was answered."""
        in_family = np.zeros((len(self._article), len(self.answers)), bool)  # [article, answered pair]
        # [the scorer calls the pair a duplicate (row 0) or not (row 1), answered pair]: False where the call
        # contradicts that pair's answer, and a look-alike is proposed
        passes = np.ones((2, len(self.answers)), bool)
        for family, (a, b, duplicate) in enumerate(self.answers):
            i = self._index(a, b)
            if i is None:
                continue
            if duplicate is not None:
                passes[int(duplicate), family] = False
            reach = max(min(float(self._store_scores[i]), self._cut), FAMILY_SHARE * self._cut)
            members = {a, b} | {other for end in (a, b) for other, score in self._neighbours.get(end, ())
                                if score >= reach}
            in_family[[self._article[member] for member in members], family] = True
        repeats = np.zeros(len(self.pool.a), bool)
        pairs = np.flatnonzero(open_ & in_family.any(axis=1)[self._ends].all(axis=1))
        if len(pairs):
            shared = in_family[self._ends[pairs, 0]] & in_family[self._ends[pairs, 1]]
            if called is not None:
                shared &= passes[(~called[pairs]).astype(np.intp)]
            repeats[pairs] = shared.any(axis=1)
        return repeats

    def _labelled(self) -> tuple[np.ndarray, np.ndarray]:
        """The pooled positions of the answered pairs (but the unsure ones), and their answers (a pair's last, as
        train counts it)."""
        labelled = [(self._index(a, b), duplicate) for a, b, duplicate in last_answers(self.answers)[0]]
        labelled = [(i, duplicate) for i, duplicate in labelled if i is not None]
        return (np.array([i for i, _ in labelled], np.intp), np.array([duplicate for _, duplicate in labelled], bool))

    def _chance(self) -> np.ndarray | None:
        """Per pooled pair, the current scorer's chance that it is a duplicate, once the answers hold MIN_EACH of
        each; None before."""
        positions, truth = self._labelled()
        if truth.sum() >= MIN_EACH and (~truth).sum() >= MIN_EACH:
            return fit_logistic(self._inputs[positions], truth, penalty=self._penalty).probability(self._inputs)
        return None

    def _certainty(self, chance: np.ndarray | None) -> np.ndarray:
        """Per pooled pair, how far the current scorer (`chance`, or before it the similarity _target) is from
        undecided (docs/commands/neardup-label.md)."""
        return np.abs(self._store_scores - self._target()) if chance is None else np.abs(chance - 0.5)

    def _target(self) -> float:
        """The similarity proposals are nearest before the session fits its scorer: _cut, unless
        the store holds texts and the answers are lopsided (LOPSIDED of one kind, fewer than MIN_EACH of the other:
        the threshold lies far from where this user's duplicates end), then the middle between the highest
        similarity answered "not a duplicate" (0 without one) and the lowest answered "duplicate" (1 without one),
        where the other kind is."""
        positions, truth = self._labelled()
        scores = self._store_scores[positions]
        duplicates, others = scores[truth], scores[~truth]
        if not self.texts or min(len(duplicates), len(others)) >= MIN_EACH \
                or max(len(duplicates), len(others)) < LOPSIDED:
            return self._cut
        return (float(others.max(initial=0.0)) + float(duplicates.min(initial=1.0))) / 2

    def next(self) -> Proposal | None:
        """The next pair to label, or None when every pooled pair is answered."""
        open_ = ~self._answered()
        if not open_.any():
            return None
        chance = self._chance()
        certainty = self._certainty(chance)
        reason = "uncertain"
        counts = self.counts()
        called = None if not self.texts or chance is None \
            or min(counts["duplicates"], counts["others"]) < CALLED_EACH else chance >= 0.5
        fresh = open_ & ~self._repeats(open_, called)
        chosen = np.flatnonzero(fresh if fresh.any() else open_)
        if len(self.answers) % COVER == COVER - 1:
            counts = np.bincount(self._bins, minlength=BINS)
            labelled = np.bincount(self._bins[~open_], minlength=BINS)
            wanted = np.unique(self._bins[chosen])
            neediest = wanted[np.argmin(labelled[wanted] / counts[wanted])]
            chosen = chosen[self._bins[chosen] == neediest]
            reason = "coverage"
        i = int(chosen[np.argmin(certainty[chosen])])
        return Proposal(self.pool.a[i], self.pool.b[i], float(self.pool.rule_scores[i]), float(certainty[i]),
                        reason, self._similarities(i))

    def _similarities(self, i: int) -> dict:
        if self.texts:
            return {}
        values = self.pool.features[i, similarity_columns(self.fields)]
        return {spec.name: None if np.isnan(value) else float(value) for spec, value in zip(self.fields, values)}

    def explain(self, proposal: Proposal, texts: dict[str, dict]) -> ExplainOutcome | None:
        """A text pair's shared passages (core/explain.py, as Explain answers them) from its articles' records
        (`texts`: id to {"text", "lang"?}, as `neardup index` read them); None when either is not there."""
        a, b = texts.get(proposal.a), texts.get(proposal.b)
        if not self.texts or a is None or b is None:
            return None
        return self._explainer.explain(RequestDocument(proposal.a, text=a["text"], lang=a.get("lang")),
                                       RequestDocument(proposal.b, text=b["text"], lang=b.get("lang")),
                                       self._explainer.served.defaults)

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
        """The answered pairs (each once, by its last answer, as train counts them) by answer, and the pool's size."""
        labels = [duplicate for _, _, duplicate in last_answers(self.answers, unsure=True)[0]]
        return {"answered": len(labels), "duplicates": labels.count(True), "others": labels.count(False),
                "unsure": labels.count(None), "pool": len(self.pool.a)}


def label_with(store: SketchStore, path: str | os.PathLike, oracle: Callable[[str, str], bool | None],
               budget: int, seed: int = 0, corpus: str | None = None) -> list[tuple[str, str, bool | None]]:
    """A session (given `corpus`, reading its texts' similarities under the other stop-lists too) answered by
    `oracle(a, b)` for `budget` pairs (or until nothing is left): what a benchmark compares with other ways of
    choosing labels. Returns the answers."""
    session = LabelSession(store, path, seed, corpus)
    while session.counts()["answered"] < budget:
        proposal = session.next()
        if proposal is None:
            break
        session.answer(proposal.a, proposal.b, oracle(proposal.a, proposal.b))
    return session.answers

