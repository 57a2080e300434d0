"""The page's Label pairs view (`neardup ui --store S --labels PAIRS [--corpus JSONL]`): the session of `neardup
label` (jobs/label.py) behind the JSON API, one per page process, on a store of texts or an items store.

The page's server answers in threads, so every use of the session holds one lock: an answer is appended to PAIRS,
and the next proposal chosen, before another request sees it; an answer to a pair no longer proposed is Stale.
What the view shows and answers: docs/ui.md ("Label pairs", "The JSON API").
"""
from __future__ import annotations

import logging
import math
import os
import threading
import time
from pathlib import Path

from ..core.errors import ConfigMismatch
from ..core.vocabulary import BOTTOMK
from ..jobs.label import LabelSession, Proposal
from ..runtime.explainer import ExplainOutcome
from ..store import SketchStore
from .corpus import Corpus, field_rows

log = logging.getLogger("neardup.ui")


class Stale(Exception):
    """An answer to a pair that is not the one proposed now; the message says which is."""


class LabelsUnavailable(Exception):
    """The session cannot run on this store (a simhash store, one without postings); the message says why."""


class NotWritten(Exception):
    """PAIRS cannot be written now (a full disk, its permissions changed); nothing was recorded."""


class StoreLabels:
    """`neardup label`'s session on one store and answers file, for the page; thread-safe."""

    def __init__(self, store: SketchStore, pairs: str | os.PathLike, corpus: Corpus | None = None):
        self.pairs, self.store_location, self.corpus = str(pairs), store.location, corpus
        self._lock = threading.Lock()
        self.session: LabelSession | None = None
        self.refused: str | None = None
        started = time.monotonic()
        log.info("labels: sampling the candidate pairs of %s%s", store.location,
                 f" and sketching {corpus.path} under the other stop-lists"
                 if corpus is not None and store.config.kind == BOTTOMK else "")
        try:
            self.session = LabelSession(store, pairs, corpus=corpus.path if corpus else None)
        except ConfigMismatch as error:  # a simhash store, or one without postings: the view says so
            self.refused = str(error)
            log.warning("labels: %s", error)
            return
        counts = self.session.counts()
        log.info("labels: %s candidate pairs sampled in %.1f s; %s answers in %s", f"{counts['pool']:,}",
                 time.monotonic() - started, f"{counts['answered']:,}", self.pairs)
        self._proposal = self.session.next()

    def _require(self) -> LabelSession:
        if self.session is None:
            raise LabelsUnavailable(self.refused)
        return self.session

    def view(self) -> dict:
        """The pair proposed now (None once every sampled pair is answered) and the counts."""
        session = self._require()
        with self._lock:
            return self._described(session)

    def answer(self, a: str, b: str, duplicate: bool | None) -> dict:
        """Records the answer to the pair proposed now (appended to PAIRS at once); the view after it."""
        session = self._require()
        with self._lock:
            proposal = self._proposal
            if proposal is None or (proposal.a, proposal.b) != (a, b):
                now = "no pair: every sampled pair is answered" if proposal is None else \
                    f"{proposal.a} / {proposal.b}"
                raise Stale(f"{a} / {b} is not the pair proposed now ({now}); was it answered in another window?")
            try:
                session.answer(a, b, duplicate)
            except OSError as error:
                raise NotWritten(f"cannot write {self.pairs}: {error.strerror}") from None
            self._proposal = session.next()
            return {**self._described(session), "answered": _answer((a, b, duplicate))}

    def undo(self) -> dict:
        """Drops the last answer (from PAIRS too); the view after it, with what was undone (None: nothing)."""
        session = self._require()
        with self._lock:
            try:
                undone = session.undo()
            except OSError as error:  # the file still holds the answer, and so does the session
                raise NotWritten(f"cannot write {self.pairs}: {error.strerror}") from None
            if undone is not None:
                self._proposal = session.next()
            return {**self._described(session), "undone": None if undone is None else _answer(undone)}

    def _described(self, session: LabelSession) -> dict:
        return {"store": self.store_location, "pairs": self.pairs,
                "corpus": None if self.corpus is None else self.corpus.path, "next": session.next_command,
                "counts": session.counts(),
                "last": _answer(session.answers[-1]) if session.answers else None,
                "proposal": None if self._proposal is None else self._shown(self._proposal)}

    def _shown(self, proposal: Proposal) -> dict:
        """The pair: an items pair field by field (corpus.field_rows, as the pair view shows one); a text pair's texts (null where --corpus lacks one) and, with both, what Explain answers
        for them (its spans in code points)."""
        texts = explained = rows = None
        if self.session.texts:
            records = {doc_id: self.corpus.text(doc_id) if self.corpus is not None else None
                       for doc_id in (proposal.a, proposal.b)}
            texts = {side: None if records[doc_id] is None else records[doc_id]["text"]
                     for side, doc_id in (("a", proposal.a), ("b", proposal.b))}
            explained = self.session.explain(proposal, {k: v for k, v in records.items() if v is not None})
            found = {side: texts[side] is not None for side in texts}
            rows = []
        else:
            values = {side: self.corpus.fields(doc_id) if self.corpus is not None else None
                      for side, doc_id in (("a", proposal.a), ("b", proposal.b))}
            found = {side: value is not None for side, value in values.items()}
            rows = field_rows({name: _finite(value) for name, value in proposal.similarities.items()},
                              values["a"], values["b"])
        return {"a": proposal.a, "b": proposal.b, "score": _finite(proposal.score),
                "certainty": _finite(proposal.certainty), "reason": proposal.reason, "metric": self.session.metric,
                "found": found, "fields": rows, "texts": texts,
                "explain": None if explained is None else _explained(proposal, explained, self.session)}


def _explained(proposal: Proposal, outcome: ExplainOutcome, session: LabelSession) -> dict:
    """An ExplainOutcome in the shape /api/explain answers (the client's ExplainResult.to_dict)."""
    explanation = outcome.explanation
    sides = {name: {"id": doc_id, **{key: [list(span) for span in value] if isinstance(value, list) else value
                                     for key, value in side._asdict().items()}}
             for name, doc_id, side in (("a", proposal.a, explanation.a), ("b", proposal.b, explanation.b))}
    return {"similarity": round(outcome.similarity, 6), "duplicate": outcome.duplicate,
            "threshold": session.threshold, "metric": session.metric, "shared_shingles": explanation.shared_shingles, "shared_sketch_values": explanation.shared_sketch_values,
            "note": explanation.note, **sides}


def _answer(answer: tuple[str, str, bool | None]) -> dict:
    a, b, duplicate = answer
    return {"a": a, "b": b, "duplicate": duplicate}


def _finite(value: float | None) -> float | None:
    """JSON has no NaN: a similarity that is not a number is sent as null."""
    return None if value is None or not math.isfinite(value) else float(value)


def writable(path: str) -> str | None:
    """Why answers cannot be appended to path, or None when they can (checked when the page starts, so the first
    answer does not fail)."""
    where = Path(path)
    if where.exists():
        return None if os.access(where, os.W_OK) and where.is_file() else f"cannot write --labels {path}"
    parent = where.parent
    if not parent.is_dir():
        return f"cannot write --labels {path}: no directory {parent}"
    return None if os.access(parent, os.W_OK) else f"cannot write --labels {path}: the directory is not writable"
