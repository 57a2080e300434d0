"""The words every interface of neardup uses, each defined once: metrics, groupings, sketch kinds, field kinds,
shingle units, weightings, and the defaults a store is served with.

The proto, the client, both command lines and the compiled extensions map to these names in one place each (a
test holds neardup_client.enums equal to METRICS and GROUPINGS; core/item_scoring.py checks _items.c's field-kind
codes against FIELD_KIND_CODES at import). How the defaults were chosen: docs/threshold.md, docs/simhash.md,
docs/fields.md.
"""
from __future__ import annotations

import re
from typing import NamedTuple

# Metrics: how a pair's similarity is measured.
CONTAINMENT = "containment"
JACCARD = "jaccard"
#: Shared values over the larger sample: the smaller of the two texts' containments, high only when each text
#: holds most of the other (a version that adds a clause to a short licence is not contained in it).
MUTUAL = "mutual"
HAMMING = "hamming"
#: An items store's weighted per-field similarity (core/item_scoring.py).
FIELDS = "fields"

# Sketch kinds (SketchConfig.kind) and the metrics each answers.
#: The K smallest shingle hashes of a text.
BOTTOMK = "bottomk"
#: One 64-bit SimHash fingerprint of the same shingles.
SIMHASH = "simhash"
#: Items with fields (core/fields.py): per-field sketches, compared field by field and weighed.
ITEMS = "items"
KINDS = (BOTTOMK, SIMHASH, ITEMS)
BOTTOMK_METRICS = (CONTAINMENT, JACCARD, MUTUAL)
#: What a text field of an items store is weighed by (core/_items.c computes these two per field).
FIELD_METRICS = (CONTAINMENT, JACCARD)
SIMHASH_METRICS = (HAMMING,)
ITEMS_METRICS = (FIELDS,)
KIND_METRICS = {BOTTOMK: BOTTOMK_METRICS, SIMHASH: SIMHASH_METRICS, ITEMS: ITEMS_METRICS}
#: Every metric name (the proto's Metric values, as neardup_client.enums names them).
METRICS = BOTTOMK_METRICS + SIMHASH_METRICS + ITEMS_METRICS

# Groupings: how a result set's duplicate pairs become "keep" and "duplicate of" (reference.dedup).
GREEDY = "greedy"
COMPONENTS = "components"
COMPLETE = "complete"
GROUPINGS = (GREEDY, COMPONENTS, COMPLETE)
#: Clustering methods of `neardup cluster` (core/linkage.py): the two groupings that make clusters, and Leiden
#: communities.
COMMUNITIES = "communities"
CLUSTER_METHODS = (COMPONENTS, COMPLETE, COMMUNITIES)

# How a SimHash fingerprint weighs a shingle by its count in the document (reference.shingle_weight).
UNIT = "unit"
TF = "tf"
LOG_TF = "log-tf"
WEIGHTINGS = (UNIT, TF, LOG_TF)

# Shingle units: Punkt sentences; sentences also cut at blank lines, so a heading, caption or dateline without a
# final stop does not fuse with the next sentence; word n-grams ("word:N").
SENTENCE = "sentence"
PARA_SENTENCE = "para-sentence"
#: Every shingle unit a text, or a text field of an item, can be sketched by; group 2 is N of "word:N".
UNIT_PATTERN = re.compile(rf"^({SENTENCE}|{PARA_SENTENCE}|word:([1-9][0-9]?))$")
UNIT_HELP = "'sentence', 'para-sentence' or 'word:N' (N in 1..99)"
#: Word 3-grams survive edits spread over every sentence, texts without sentence punctuation and short texts,
#: where one edited word breaks a whole sentence shingle (chosen on the development corpus's tune split). The
#: card's recipe stays available: unit "sentence", min_word_len 3.
DEFAULT_UNIT = "word:3"
#: A bottom-K sketch's size: the default, and the largest a store may keep.
DEFAULT_K = 128
MAX_K = 4096

# Field kinds of an items store (core/fields.py), and their codes in the compiled _items.
TEXT = "text"
EXACT = "exact"
LOCATION = "location"
FIELD_KINDS = (TEXT, EXACT, LOCATION)
FIELD_KIND_CODES = {TEXT: 0, EXACT: 1, LOCATION: 2}


class Defaults(NamedTuple):
    threshold: float
    metric: str
    grouping: str


#: A bottom-K store that holds no threshold of its own (a store learns one when `neardup index` creates it:
#: core/calibration.py); chosen on the development corpus's tune split, inside the plateau of containment's F1.
DEFAULT_THRESHOLD: float = 0.52
DEFAULT_METRIC: str = CONTAINMENT
DEFAULT_GROUPING: str = GREEDY
#: 46/64: a SimHash distance of at most 18 bits (reference.max_distance); chosen on the tune split.
SIMHASH_THRESHOLD: float = 46 / 64
#: An items store without a pair model and without a threshold of its own (learned by `neardup index` from its
#: records, or set): the weighted per-field similarity at which a pair (sharing a super token) is a duplicate,
#: chosen on the job-ad tune split. With a model, the model's own threshold on its probability
#: applies (chosen by cross-validated F1 when it was trained).
ITEMS_THRESHOLD: float = 0.74

#: The defaults of a store, by its sketch kind (SketchConfig.kind).
DEFAULTS = {
    BOTTOMK: Defaults(DEFAULT_THRESHOLD, DEFAULT_METRIC, DEFAULT_GROUPING),
    SIMHASH: Defaults(SIMHASH_THRESHOLD, HAMMING, DEFAULT_GROUPING),
    ITEMS: Defaults(ITEMS_THRESHOLD, FIELDS, DEFAULT_GROUPING),
}


def for_kind(kind: str) -> Defaults:
    """The threshold, metric and grouping a store of this sketch kind is served with unless a request says."""
    return DEFAULTS[kind]
