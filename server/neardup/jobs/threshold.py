"""A store's default threshold: learned by `neardup index` when it creates a bottom-K or items store with postings,
set by hand (`neardup index --threshold`, `neardup configure --threshold`), shown by `neardup info` with its source.

Learning searches SAMPLE_DOCUMENTS stored articles, drawn by a hash of their ids, over the whole store: a fixed
cost whatever the corpus size, and a result that depends on the ids and sketches alone, never on write order.
The rule is core/calibration.py's; what it depends on: docs/threshold.md.
"""
from __future__ import annotations

import time
from typing import NamedTuple, Union

from ..core import calibration, vocabulary
from ..core.errors import ConfigMismatch
from ..core.fields import weighted_by_hand
from ..core.item_scoring import similarity_columns
from ..core.sketch_config import SketchConfig
from ..core.vocabulary import BOTTOMK, ITEMS, MUTUAL
from ..runtime.served_store import ServedStore
from ..runtime.similar_search import SimilarSearch
from ..store import SketchStore
from .pair_sample import sample_candidate_pairs

#: Articles searched to learn a threshold: enough for a mode of near-duplicates that holds 1 % of the corpus to
#: show (calibration.MIN_NEAR_DUPLICATES), and for the sample's histogram to be the corpus's (on the short rewrites
#: of the families' test split, samples of 500 drawn by other hash keys often learned far above the whole store's
#: threshold, samples of 1,000 never: docs/threshold.md); few enough to be a small fixed cost of `neardup index`.
SAMPLE_DOCUMENTS = 1000
LEARN, FIXED = "learn", "default"
#: A number in [0, 1] (set by hand), LEARN or FIXED.
Choice = Union[float, str]


def learnable(config: SketchConfig, indexed: bool) -> bool:
    """Whether a store of this configuration can learn its threshold (docs/threshold.md)."""
    return config.kind in (BOTTOMK, ITEMS) and indexed


def check_learnable(choice: Choice | None, config: SketchConfig, indexed: bool) -> None:
    """Refuses `learn` for a store that cannot learn (before anything is written)."""
    if choice == LEARN and not learnable(config, indexed):
        raise ConfigMismatch(f"--threshold {LEARN} needs a bottom-K or items store with postings (this one holds "
                             f"{config.kind} sketches{'' if indexed else ', without postings'}): give a number "
                             f"or {FIXED}")


class Recorded(NamedTuple):
    """What a store's default threshold is after `neardup index` or `neardup configure`, for their summaries."""

    setting: dict | None   # store.threshold()
    fixed: float           # the sketch kind's fixed default, served when setting is None
    learned: bool          # a sample was searched this time
    seconds: float         # spent learning
    found: calibration.Learned | None = None  # what learning found this time (which rules moved the cut)

    def format(self) -> str:
        if self.setting is None:
            found = " (learning found no near-duplicate mode in the sample)" if self.learned else ""
            return f"{self.fixed:g} (fixed default of the sketch kind{found})"
        weights = self.setting.get(calibration.FIELD_WEIGHTS)
        weighing = "" if not weights else \
            f"; fields weigh {', '.join(f'{name} {weight:g}' for name, weight in weights.items())}"
        metric = f"{self.setting['metric']}; " if "metric" in self.setting else ""
        if self.setting["source"] == calibration.LEARNED:
            look_alikes = self.setting.get(calibration.LOOK_ALIKES_FROM)
            above = "" if look_alikes is None else f"; below the copies, look-alikes from {look_alikes:g}"
            if self.setting.get(calibration.BELOW_THE_COPIES):
                above += " up to them, so stored without the stop-list"
            return (f"{self.setting['threshold']:g} ({metric}learned from {self.setting['sampled']:,} sampled documents"
                    f"{f', {self.seconds:.2f} s' if self.learned else ''}{weighing}{above})")
        if self.setting["source"] == calibration.TRAINED:
            return f"{self.setting['threshold']:g} ({metric}trained on {self.setting['trained_on']:,} labelled pairs)"
        return f"{self.setting['threshold']:g} ({metric}set by hand{weighing})"


def learn_field_weights(store: SketchStore) -> dict[str, float] | None:
    """An items store's field weights learned from a sample of its candidate pairs (core/calibration.py), or None:
    a store of another kind, a schema that weighs its fields by hand, or too few candidate pairs."""
    fields = store.config.fields
    if store.config.kind != ITEMS or weighted_by_hand(fields):
        return None
    population = sample_candidate_pairs(store)
    weights = calibration.learn_field_weights(population.features[:, similarity_columns(fields)])
    return None if weights is None else dict(zip((spec.name for spec in fields), weights))


def record(store: SketchStore, choice: Choice | None, created: bool, sample: int = SAMPLE_DOCUMENTS,
           below_the_copies: bool = False) -> Recorded:
    """Applies --threshold to a store just written: None learns for a store `created` now (when it can: a bottom-K
    store with postings) and keeps an existing store's; LEARN learns, FIXED removes the store's own, a number sets
    it; learning searches `sample` articles. `below_the_copies` (or a setting learned so) learns by rule 8, under
    mutual. Returns what the store now holds."""
    started = time.monotonic()
    setting, learned = store.threshold(), None
    if choice is None and created and learnable(store.config, store.indexed):
        choice = LEARN
    if choice == LEARN:
        check_learnable(choice, store.config, store.indexed)
        below_the_copies = below_the_copies or bool((setting or {}).get(calibration.BELOW_THE_COPIES))
        weights = learn_field_weights(store)
        served = ServedStore(store, pair_model=False, field_weights=weights or {})
        nearest, pairs = SimilarSearch(served).sample_similarities(sample, MUTUAL if below_the_copies else None)
        learned = calibration.learn_below_the_copies(nearest) if below_the_copies else \
            calibration.learn(nearest, lowest_valley=store.config.kind == ITEMS, pairs=pairs)
        wanted = None if learned is None else {"threshold": learned.threshold, "source": calibration.LEARNED,
                                               "sampled": len(nearest)}
        if learned is not None and learned.look_alikes_from != learned.threshold:
            wanted[calibration.LOOK_ALIKES_FROM] = learned.look_alikes_from
        if wanted is not None and weights:
            wanted[calibration.FIELD_WEIGHTS] = weights
        if wanted is not None and below_the_copies:
            wanted.update({"metric": MUTUAL, calibration.BELOW_THE_COPIES: True})
        elif wanted is not None and setting is not None and "metric" in setting:  # the sample was searched under it
            wanted["metric"] = setting["metric"]
    elif choice == FIXED:
        wanted = None
    elif choice is None:
        wanted = setting
    else:  # set by hand: the store's learned field weights, trained metric and how it was written stay
        kept = {} if setting is None else {key: value for key, value in setting.items() if key in
                                           (calibration.FIELD_WEIGHTS, "metric", calibration.BELOW_THE_COPIES)}
        wanted = {"threshold": float(choice), "source": calibration.SET, **kept}
    if wanted != setting:  # a write bumps the generation (caches drop their answers): only for a change
        store.set_threshold(wanted)
    return Recorded(wanted, vocabulary.for_kind(store.config.kind).threshold, choice == LEARN,
                    time.monotonic() - started, learned)


