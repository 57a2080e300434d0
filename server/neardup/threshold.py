"""A store's default threshold: learned by `neardup index` when it creates a bottom-K store, set by hand with
`neardup index --threshold` or `neardup configure --threshold`, shown by `neardup info` with where it came from.

Learning (core/calibration.py has the rule) searches SAMPLE_DOCUMENTS stored articles, spread evenly over the
article numbers, over the whole store (Deduplicator.nearest_similarities): a fixed cost, whatever the corpus size.
Only bottom-K stores with postings learn: the sample is searched over the store, which needs its postings; a
SimHash store's Hamming threshold and an items store's field similarity keep their fixed defaults (set one by
hand). A store that holds no threshold (made before, or where the sample showed no near-duplicates) is served at
its kind's fixed default (core/defaults.py). Requests still override it (Dedup and FindSimilar `threshold`).
"""
from __future__ import annotations

import argparse
import time
from typing import NamedTuple, Union

from .cmdline import at_least, fraction
from .core import calibration, defaults
from .core.reference import BOTTOMK
from .core.sketch import SketchConfig
from .engine import Deduplicator
from .errors import ConfigMismatch, InvalidArgument
from .store import STORE_HELP, SketchStore, default_store_path, open_store

#: Articles searched to learn a threshold: enough for a mode of near-duplicates that holds 2 % of the corpus to
#: show (calibration.MIN_NEAR_DUPLICATES), few enough to be a small fixed cost of `neardup index`.
SAMPLE_DOCUMENTS = 500
LEARN, FIXED = "learn", "default"
#: A number in [0, 1] (set by hand), LEARN or FIXED.
Choice = Union[float, str]


def parse_choice(text: str) -> Choice:
    """An argparse type for --threshold: a number in [0, 1], `learn` or `default`."""
    if text in (LEARN, FIXED):
        return text
    try:
        value = float(text)
        fraction(value)
    except (ValueError, InvalidArgument):
        raise argparse.ArgumentTypeError(f"give a number in [0, 1], {LEARN} or {FIXED}, not {text!r}") from None
    return value


def check_learnable(choice: Choice | None, config: SketchConfig, indexed: bool) -> None:
    """Refuses `learn` for a store that cannot learn (before anything is written)."""
    if choice == LEARN and not (config.kind == BOTTOMK and indexed):
        raise ConfigMismatch(f"--threshold {LEARN} needs a bottom-K store with postings (this one holds "
                             f"{config.kind} sketches{'' if indexed else ', without postings'}): give a number "
                             f"or {FIXED}")


class Recorded(NamedTuple):
    """What a store's default threshold is after `neardup index` or `neardup configure`, for their summaries."""

    setting: dict | None   # store.threshold()
    fixed: float           # the sketch kind's fixed default, served when setting is None
    learned: bool          # a sample was searched this time
    seconds: float         # spent learning

    def format(self) -> str:
        if self.setting is None:
            found = " (learning found no near-duplicate mode in the sample)" if self.learned else ""
            return f"{self.fixed:g} (fixed default of the sketch kind{found})"
        if self.setting["source"] == calibration.LEARNED:
            return (f"{self.setting['threshold']:g} (learned from {self.setting['sampled']:,} sampled documents"
                    f"{f', {self.seconds:.2f} s' if self.learned else ''})")
        return f"{self.setting['threshold']:g} (set by hand)"


def record(store: SketchStore, choice: Choice | None, created: bool, sample: int = SAMPLE_DOCUMENTS) -> Recorded:
    """Applies --threshold to a store just written: None learns for a store `created` now (when it can: a bottom-K
    store with postings) and keeps an existing store's; LEARN learns, FIXED removes the store's own, a number sets
    it; learning searches `sample` articles. Returns what the store now holds."""
    started = time.monotonic()
    setting = store.threshold()
    if choice is None and created and store.config.kind == BOTTOMK and store.indexed:
        choice = LEARN
    if choice == LEARN:
        check_learnable(choice, store.config, store.indexed)
        nearest = Deduplicator(store).nearest_similarities(sample)
        value = calibration.learn_threshold(nearest)
        wanted = None if value is None else {"threshold": value, "source": calibration.LEARNED,
                                             "sampled": len(nearest)}
    elif choice == FIXED:
        wanted = None
    else:
        wanted = setting if choice is None else {"threshold": float(choice), "source": calibration.SET}
    if wanted != setting:  # a write bumps the generation (caches drop their answers): only for a change
        store.set_threshold(wanted)
    return Recorded(wanted, defaults.for_kind(store.config.kind).threshold, choice == LEARN,
                    time.monotonic() - started)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = ("Set a store's default threshold, which Dedup, FindSimilar, pairs and cluster apply unless "
                          "told otherwise (a server reads it when it starts; `neardup info` shows it).")
    parser.add_argument("--store", default=default_store_path(), help=STORE_HELP)
    add_threshold_argument(parser, required=True)
    parser.add_argument("--sample", type=at_least(calibration.MIN_SAMPLE), default=SAMPLE_DOCUMENTS,
                        help="articles --threshold learn searches (more: a steadier threshold, a longer run)")
    parser.set_defaults(func=_run)


def add_threshold_argument(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """--threshold, as `neardup index` and `neardup configure` take it."""
    parser.add_argument("--threshold", type=parse_choice, required=required, metavar="T|learn|default",
                        help="the store's default threshold: a number in [0, 1] (set by hand), learn (from "
                             f"{SAMPLE_DOCUMENTS:,} of its articles' best matches; bottom-K stores with postings) or "
                             "default (the sketch kind's fixed default)" +
                             ("" if required else " (default: a new bottom-K store with postings learns it, "
                                                  "an existing store keeps its own)"))


def _run(args: argparse.Namespace) -> int:
    with open_store(args.store) as store:
        recorded = record(store, args.threshold, created=False, sample=args.sample)
    print(f"default threshold of {args.store}: {recorded.format()}")
    return 0
