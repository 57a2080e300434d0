"""Why two texts are, or are not, near-duplicates: which passages of each they share (shared), which of those decided
the similarity (sketch_shared: the values a bottom-K similarity counted; none for a SimHash fingerprint) and which
are boilerplate. Pure: texts, sketches and the stop-list in, spans out (code points, [start, end), merged and
ascending), from Sketcher.located_shingles, whose hashes are exactly those the sketch was made of.
What the answer holds: docs/commands/neardup-explain.md.
"""
from __future__ import annotations

from typing import Iterable, NamedTuple, Sequence

from . import reference
from .encoding import decode_sketch
from .sketcher import LocatedShingle
from .vocabulary import BOTTOMK, SIMHASH

Span = tuple[int, int]

#: What the note says when a document came without its text.
NO_TEXT = ("the store keeps sketches, not texts: shared spans need both texts, a document's other spans its own "
           "(send texts inline); {which} came without text")
SIMHASH_NOTE = "a simhash fingerprint shares bits, not shingle values: sketch_shared spans are for bottom-K stores"


class Side(NamedTuple):
    """One document of a pair: its shingles located in its text (None without a text) and its sketch."""

    located: Sequence[LocatedShingle] | None
    sketch: bytes


class SideExplanation(NamedTuple):
    has_text: bool
    shingles: int              # distinct shingle hashes of its text (0 without text)
    stoplisted_shingles: int   # of which in the stop-list
    sketch_values: int         # values its bottom-K sketch holds (0 for a simhash store)
    compared_values: int       # of which at or below both sketches' caps: what the similarity compares
    shared: list[Span]
    sketch_shared: list[Span]
    boilerplate: list[Span]


class PairExplanation(NamedTuple):
    a: SideExplanation
    b: SideExplanation
    shared_shingles: int       # distinct shingle hashes outside the stop-list both texts have (0 without both)
    shared_sketch_values: int  # values both bottom-K sketches hold (0 for a simhash store)
    note: str                  # what could not be answered and why; "" when every list was


def merge_spans(spans: Iterable[Span]) -> list[Span]:
    """The spans sorted, overlapping or touching ones joined into one."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(start, end) for start, end in merged]


def spans_of(located: Iterable[LocatedShingle], values) -> list[Span]:
    """The merged spans of the shingles whose hash is in `values` (a set)."""
    return merge_spans((shingle.start, shingle.end) for shingle in located if shingle.hash in values)


def explain(kind: str, k: int, stoplist: frozenset[int], a: Side, b: Side) -> PairExplanation:
    """Counts and spans of a pair of documents of a store of sketch kind `kind` (bottomk or simhash) with bottom-K
    size k and this stop-list."""
    if kind not in (BOTTOMK, SIMHASH):
        raise ValueError(f"spans are shingles of texts; a {kind} store compares other things")
    hashes = [None if side.located is None else {shingle.hash for shingle in side.located} for side in (a, b)]
    values = [decode_sketch(side.sketch) if kind == BOTTOMK else [] for side in (a, b)]
    shared_values = set(values[0]) & set(values[1])
    compared = reference.compared_lengths(values[0], values[1], k)[:2] if kind == BOTTOMK else (0, 0)
    shared_hashes = (hashes[0] & hashes[1]) - stoplist if None not in hashes else set()
    sides = []
    for side, own, own_values, own_compared in zip((a, b), hashes, values, compared):
        if own is None:
            sides.append(SideExplanation(False, 0, 0, len(own_values), own_compared, [], [], []))
            continue
        located = side.located
        sides.append(SideExplanation(
            True, len(own), len(own & stoplist), len(own_values), own_compared,
            shared=spans_of(located, shared_hashes),
            sketch_shared=spans_of(located, shared_values),
            boilerplate=spans_of(located, stoplist)))
    notes = []
    without = [name for name, own in zip("ab", hashes) if own is None]
    if without:
        notes.append(NO_TEXT.format(which=" and ".join(without)))
    if kind == SIMHASH:
        notes.append(SIMHASH_NOTE)
    return PairExplanation(sides[0], sides[1], len(shared_hashes), len(shared_values), "; ".join(notes))
