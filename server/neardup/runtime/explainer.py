"""Explain (Explainer): how similar two documents are, whether Dedup makes the second a duplicate of the first, and
what they share: passages of texts (core/explain.py), or an items pair field by field."""
from __future__ import annotations

import math
from typing import NamedTuple

from ..core import explain, item_scoring, kernel
from ..core.errors import InvalidArgument, NotFound
from ..core.vocabulary import GREEDY, SIMHASH
from ..store.base import encode_id
from .deduplicator import Deduplicator
from .documents import RequestDocument, inline_sketch
from .params import DedupParams
from .served_store import Reader, ServedStore


class FieldComparison(NamedTuple):
    """One field of an explained items pair."""
    name: str
    kind: str
    weight: float
    similarity: float | None   # None when either item lacks the field


class ExplainOutcome(NamedTuple):
    similarity: float   # under the metric applied
    duplicate: bool     # what Dedup decides for the pair: the second document duplicates the first
    explanation: "explain.PairExplanation"
    fields: tuple[FieldComparison, ...] = ()   # an items pair, field by field; () for texts


class Explainer:
    """Explains pairs of one served store, deciding each as its Deduplicator does."""

    def __init__(self, served: ServedStore):
        self.served = served
        self.config = served.config
        self.items = served.items
        self.deduplicator = Deduplicator(served)

    def explain(self, a: RequestDocument, b: RequestDocument, params: DedupParams, reader: Reader | None = None) -> ExplainOutcome:
        """How similar two documents are under params (threshold and metric), whether Dedup makes the second a
        duplicate of the first, and what they share (core/explain.py). Each is a stored article (only an id: its
        stored sketch, NotFound when there is none) or inline (text, or a sketch: spans need the text); both are
        sketched, read and compared by Dedup's code. An items pair is compared field by field (_explain_items)."""
        self.served.check_metric(params.metric)
        docs = {"a": a, "b": b}
        sketches = {field: inline_sketch(self.served, doc, field) for field, doc in docs.items() if doc.inline}
        stored = [field for field in docs if field not in sketches]
        for field in stored:
            if not docs[field].id:
                raise InvalidArgument(f"document {field} is empty: give a stored article's id, or a text", field)
            encode_id(docs[field].id, field=f"{field}.id")
        reader = reader or self.served.reader
        for field, sketch in zip(stored, reader.get_many([docs[f].id for f in stored]) if stored else ()):
            if sketch is None:
                raise NotFound(f"no article {docs[field].id!r} is stored (document {field})")
            sketches[field] = sketch
        sketch_a, sketch_b = sketches["a"], sketches["b"]
        grouping = kernel.unpack(self.deduplicator.group([sketch_a, sketch_b],
                                                         DedupParams(params.threshold, params.metric, GREEDY)))
        if self.items is not None:
            return self._explain_items(sketch_a, sketch_b, grouping.duplicate_of[1] == 0)
        if self.config.kind == SIMHASH:
            similarity = next((score for _, score in kernel.similar_simhash(sketch_a, [sketch_b], 0.0)), 0.0)
        else:
            similarity = kernel.similarity(sketch_a, sketch_b, self.config.k, params.metric)
        sketcher = self.served.sketcher
        sides = [explain.Side(None if doc.text is None else sketcher.located_shingles(doc.text, doc.lang), sketch)
                 for doc, sketch in zip((a, b), (sketch_a, sketch_b))]
        explanation = explain.explain(self.config.kind, self.config.k, sketcher.stoplist, *sides)
        return ExplainOutcome(similarity, grouping.duplicate_of[1] == 0, explanation)

    def _explain_items(self, sketch_a: bytes, sketch_b: bytes, duplicate: bool) -> ExplainOutcome:
        """An items pair: its score as Dedup scores it (the fields' weighted similarity, or the trained model's
        probability) and each field's similarity; no spans (an items store has no texts). A pair sharing no super
        token is never compared: score 0, no field similarities, and the note says why."""
        fields = self.items.fields
        found = item_scoring.pair_features(fields, [sketch_a, sketch_b])
        if len(found.i):
            score = float(self.items.scores(found.features)[0])
            values = found.features[0, item_scoring.similarity_columns(fields)].tolist()
            note = ""
        else:
            score, values = 0.0, [math.nan] * len(fields)
            note = ("the two share no super token: no rule of the store's (" +
                    " | ".join("+".join(rule) for rule in self.config.rules) + ") can match them, so Dedup never "
                    "compares them")
        empty = explain.SideExplanation(False, 0, 0, 0, 0, [], [], [])
        comparisons = tuple(FieldComparison(spec.name, spec.kind, spec.weight,
                                            None if math.isnan(value) else float(value))
                            for spec, value in zip(fields, values))
        return ExplainOutcome(score, duplicate, explain.PairExplanation(empty, empty, 0, 0, note), comparisons)
