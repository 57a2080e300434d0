"""A store's default threshold, learned from its own corpus (issue 25), and an items store's field weights: one fixed
threshold cannot fit short texts rewritten by hand and long formal texts that share whole clauses.

The threshold is the valley between the two modes of a sample's nearest-neighbour similarities, moved above the
look-alikes its candidates show there (a template's pages, a licence's versions), up to the copies where they fill
the stretch below them; a field weighs Fellegi and
Sunter's agreement weight log(m / u). Pure and deterministic: the same values give the same answer.
The rule, step by step: docs/threshold.md ("The rule", "Items: the fields' weights first").
"""
from __future__ import annotations

import hashlib
import heapq
from typing import Iterable, NamedTuple, Sequence

import numpy as np

#: The lowest and highest threshold learned; the corpus search of the sample runs at SEARCH_FLOOR = LOWEST, so
#: anything below it counts as no match (0).
LOWEST, HIGHEST = 0.05, 0.9
SEARCH_FLOOR = LOWEST
BIN_WIDTH = 0.025
#: A valley's smoothed count is at most this share of the highest bin on either side.
DIP = 0.5
#: A valley's cut separates at least this share of the best cut's between-class variance (Otsu's optimum over all
#: bins): a dip lower in the sample is no cut between chance and near-duplicates, but the tail of one broad spread
#: of rewrites above which a few close copies bunch.
SEPARATES = 0.75
#: A sampled document's best match is looked for among the articles sharing the most values with it: this many.
CANDIDATES = 16
#: The key of the hash that picks the sampled articles by their ids (sampled_keys); changing it changes every
#: store's sample, and so may change the threshold it learns.
SAMPLE_HASH = b"neardup-sample-1"
#: Fewer sampled documents than this say too little about the corpus.
MIN_SAMPLE = 100
#: The upper mode must hold at least this many documents: a few similar pairs are no population of copies.
MIN_NEAR_DUPLICATES = 10
#: Rule 4 (no gap): the share of the sample at or above the chance mode's edge, and a similarity some must reach.
REWRITTEN_SHARE = 0.5
NEAR_COPY = 0.5
#: Rule 6: the sampled documents' candidate pairs between the valley and the cut above them must be at least this
#: many before the cut moves: a few pairs are no population of look-alikes (an edited copy's weaker pairs are).
MIN_LOOK_ALIKES = 10
#: Rule 7 (below the copies): the share of the nearest matches above the valley read as stragglers below the copies'
#: bunch (its lowest value after them marks the bunch), and the most nearest matches per candidate pair a stretch
#: of look-alikes holds (a licence's versions are their siblings' candidates, almost never their nearest match).
STRAGGLERS = 0.02
NEAREST_PER_PAIR = 0.02
#: Rule 8 (look-alikes up to the copies): a cut above LOOK_ALIKES_REACH lies near the top, where copies bunch (rules 6
#: and 7 moved a licence's versions to 0.8375 or higher on the development corpus's tune split, every other family's
#: look-alikes to 0.7875 or lower; rule 8's own cut, without the stop-list, fell to 0.64 or lower for a template's
#: pages); and the share of the nearest matches set aside below the copies' bunch in a store sketched without its
#: stop-list, where an edited copy's nearest match spreads lower than with it (chosen on the same split).
LOOK_ALIKES_REACH = 0.8
UNLISTED_STRAGGLERS = 0.05

#: Field weights: duplicates' assumed agreement on a field (m), the lowest chance agreement counted (u; a field no
#: two sampled candidates agree on), the lowest weight (a field every candidate agrees on still counts a little),
#: and the candidate pairs (sharing the field) needed to learn a field's weight.
DUPLICATE_AGREEMENT = 0.95
LOWEST_AGREEMENT = 1e-3
LOWEST_WEIGHT = 0.05
MIN_FIELD_PAIRS = 100

#: Items: the lowest valley whose cut separates at least this share of the best cut's between-class variance.
NEAR_BEST = 0.9

#: Where a store's default threshold comes from (InfoResponse.default_threshold_source): learned from its corpus,
#: set by hand, its sketch kind's fixed default (core/vocabulary.py), an items store's trained pair model, or
#: trained on a text store's labelled pairs (`neardup train`: the threshold of the best cross-validated F1).
LEARNED, SET, FIXED, PAIR_MODEL, TRAINED = "learned", "set", "fixed", "pair_model", "trained"
#: The key of an items store's learned field weights ({field name: weight}) in its threshold setting.
FIELD_WEIGHTS = "field_weights"
#: The key of where the look-alikes a learned threshold was moved above begin (Learned), where they do.
LOOK_ALIKES_FROM = "look_alikes_from"
#: The key (true) of a threshold learned by rule 8 (learn_below_the_copies), in a store sketched without its
#: stop-list and served under mutual: learning again takes the same step.
BELOW_THE_COPIES = "below_the_copies"


def sampled_keys(keys: Iterable[bytes], count: int) -> list[bytes]:
    """The sample of stored articles a threshold is learned from (and `neardup label` proposes text pairs from):
    of the articles' ids (`keys`: their UTF-8, in any order), the `count` whose SAMPLE_HASH is smallest, every one
    when there are fewer; returned in the order of the ids' UTF-8 bytes. A rule of the ids alone: the same articles
    give the same sample whatever order they were written in, numbered in or stored in (a migrated copy, another
    backend), and a sample spread over the corpus as a random one is."""
    chosen = heapq.nsmallest(count, ((_sample_rank(key), key) for key in keys)) if count > 0 else []
    return sorted(key for _, key in chosen)


def _sample_rank(key: bytes) -> bytes:
    """SAMPLE_HASH of an id's UTF-8: a keyed BLAKE2b of 8 bytes, compared as bytes."""
    return hashlib.blake2b(key, digest_size=8, person=SAMPLE_HASH).digest()


class Learned(NamedTuple):
    """A learned threshold, and where the look-alikes it was moved above begin (rule 6's first cut; the threshold
    itself where it moved above none): whether those look-alikes are copies is the user's call, so `neardup label`
    proposes from there."""

    threshold: float
    look_alikes_from: float
    valley: float  # where the cut stood before rules 6 and 7 moved it (rule 3's valley, or rule 4's edge)

    @property
    def near_the_top(self) -> bool:
        """Whether the cut lies above LOOK_ALIKES_REACH, just below copies bunched near the top: rule 8's store is
        kept only where its own cut does."""
        return self.threshold > LOOK_ALIKES_REACH

    @property
    def up_to_the_copies(self) -> bool:
        """Rule 8's condition: rules 6 and 7 moved the cut above look-alikes, and near the top: they fill the bins
        up to the copies, and no cut of this metric lies between the two."""
        return self.valley < self.threshold and self.near_the_top


def learn_threshold(nearest: Sequence[float], lowest_valley: bool = False,
                    pairs: Sequence[float] | None = None) -> float | None:
    """The threshold between the two modes of the nearest-neighbour similarities `nearest` (one per sampled
    document, 0 where it has no match), or None where the sample shows no near-duplicate mode; `lowest_valley`:
    the valley nearest the chance mode rather than Otsu's, for items; `pairs`: the similarity of every candidate
    pair of the sampled documents, which moves a text store's valley cut above the look-alikes (the rule:
    docs/threshold.md)."""
    learned = learn(nearest, lowest_valley, pairs)
    return None if learned is None else learned.threshold


def learn(nearest: Sequence[float], lowest_valley: bool = False,
          pairs: Sequence[float] | None = None) -> Learned | None:
    """learn_threshold's threshold, with where the look-alikes it moved above begin."""
    values = np.clip(np.asarray(nearest, np.float64), 0.0, 1.0)
    if len(values) < MIN_SAMPLE:
        return None
    centres, smoothed, valley, separation = _valleys(values)
    if valley.any():
        if lowest_valley:
            best = np.flatnonzero(valley & (separation >= NEAR_BEST * separation[valley].max()))[:1]
        else:
            best = np.flatnonzero(_best_cuts(valley, separation))
        cut = int(best[len(best) // 2])
        threshold = look_alikes_from = valley_cut = float(centres[cut])
        if pairs is not None and not lowest_valley:  # rule 6, texts only: an items store cuts low on purpose
            pairs = np.clip(np.asarray(pairs, np.float64), 0.0, 1.0)
            look_alikes_from = _above_look_alikes(cut, values, pairs)
            if look_alikes_from != threshold:
                threshold = _below_copies(threshold, look_alikes_from, values, pairs)
    else:
        threshold = look_alikes_from = valley_cut = _chance_edge(values, smoothed, centres)
        if threshold is None:
            return None
    if np.count_nonzero(values >= threshold) < MIN_NEAR_DUPLICATES:
        return None
    return Learned(round(threshold, 4), round(look_alikes_from, 4), round(valley_cut, 4))


def learn_below_the_copies(nearest: Sequence[float]) -> Learned | None:
    """Rule 8's threshold, for a store sketched without its stop-list and served under mutual where rule 7 cut at
    the top (Learned.up_to_the_copies): the bin below the copies' bunch of the nearest-neighbour similarities above
    the valley (rule 3's cut, which the result records as where the look-alikes begin), UNLISTED_STRAGGLERS of them
    set aside; None where the sample shows no valley. Rule 6 does not come first: there the look-alikes' pairs leave
    no sparse bin, and the valley's cut falls in the middle of them."""
    values = np.clip(np.asarray(nearest, np.float64), 0.0, 1.0)
    if len(values) < MIN_SAMPLE:
        return None
    centres, _, valley, separation = _valleys(values)
    if not valley.any():
        return None
    best = np.flatnonzero(_best_cuts(valley, separation))
    cut = float(centres[best[len(best) // 2]])
    threshold = _bin_below_the_bunch(values, cut, UNLISTED_STRAGGLERS)
    if np.count_nonzero(values >= threshold) < MIN_NEAR_DUPLICATES:
        return None
    return Learned(round(threshold, 4), round(min(cut, threshold), 4), round(cut, 4))


def equal_valleys(nearest: Sequence[float]) -> np.ndarray:
    """The centres of the valleys whose cut separates the sample best, ascending: several where the modes leave an
    empty stretch (moving the cut moves no document), and learn_threshold takes the middle one; none where it
    learns by another step."""
    values = np.clip(np.asarray(nearest, np.float64), 0.0, 1.0)
    centres, _, valley, separation = _valleys(values)
    if len(values) < MIN_SAMPLE or not valley.any():
        return np.zeros(0)
    return centres[_best_cuts(valley, separation)]


def _best_cuts(valley: np.ndarray, separation: np.ndarray) -> np.ndarray:
    """The valleys whose cut separates best (rule 3): equal ones where moving the cut moves no document."""
    return valley & (separation == separation[valley].max())


def _histogram(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The values' counts in bins BIN_WIDTH wide on [0, 1], the counts smoothed (rule 1), and the bins' centres."""
    counts, edges = np.histogram(values, bins=round(1 / BIN_WIDTH), range=(0.0, 1.0))
    smoothed = np.convolve(np.pad(counts.astype(np.float64), 1, mode="edge"), [0.25, 0.5, 0.25], mode="valid")
    return counts, smoothed, (edges[:-1] + edges[1:]) / 2


def _above_look_alikes(valley: int, nearest: np.ndarray, pairs: np.ndarray) -> float:
    """Rule 6: the cut of bin `valley` moved up to the sparsest bin of the candidate pairs' similarities between it
    and the copies above, where the pairs between the two are a population of look-alikes (a template's pages,
    a licence's versions: each one's nearest match may be a copy, but its candidates show its siblings)."""
    _, smoothed, centres = _histogram(pairs)
    highest_above = np.append(np.maximum.accumulate(smoothed[::-1])[::-1][1:], 0.0)
    candidate = (np.arange(len(centres)) >= valley) & (centres <= HIGHEST) & (smoothed <= DIP * highest_above)
    threshold = float(centres[valley])
    if not candidate.any():
        return threshold
    sparsest = np.flatnonzero(candidate & (smoothed == smoothed[candidate].min()))
    cut = float(centres[sparsest[len(sparsest) // 2]])
    look_alikes = np.count_nonzero((pairs >= threshold) & (pairs < cut))
    if look_alikes < MIN_LOOK_ALIKES or np.count_nonzero(nearest >= cut) < MIN_NEAR_DUPLICATES:
        return threshold
    return cut


def _below_copies(valley: float, cut: float, nearest: np.ndarray, pairs: np.ndarray) -> float:
    """Rule 7: where look-alikes fill the stretch from the cut up to the copies with no sparse bin
    (versions of licences, each alike its siblings to every degree), the cut moves on to the bin below the copies'
    bunch in the nearest-neighbour similarities, provided that stretch holds a population of pairs and almost none
    of the sampled articles' nearest matches (copies lost by the move)."""
    below = _bin_below_the_bunch(nearest, valley, STRAGGLERS)
    look_alikes = np.count_nonzero((pairs >= cut) & (pairs < below))
    lost = np.count_nonzero((nearest >= cut) & (nearest < below))
    if below <= cut or look_alikes < MIN_LOOK_ALIKES or lost > NEAREST_PER_PAIR * look_alikes \
            or np.count_nonzero(nearest >= below) < MIN_NEAR_DUPLICATES:
        return cut
    return below


def _bin_below_the_bunch(nearest: np.ndarray, valley: float, stragglers: float) -> float:
    """The centre of the bin below the copies' bunch: the bin of the lowest nearest match at or above `valley` once
    the lowest `stragglers` share of them are set aside; at most _top_cut()."""
    _, _, centres = _histogram(nearest)
    above = np.sort(nearest[nearest >= valley])
    bunch = min(int(above[int(stragglers * len(above))] / BIN_WIDTH), len(centres) - 1)
    return min(float(centres[max(bunch - 1, 0)]), _top_cut())


def _top_cut() -> float:
    """The highest cut rules 7 and 8 take: the centre of the highest bin under HIGHEST."""
    return round((int(HIGHEST / BIN_WIDTH + 1e-9) - 0.5) * BIN_WIDTH, 4)


def _valleys(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per bin of the values' histogram: its centre, its smoothed count, whether it is a valley (rule 2) and the
    between-class variance of cutting there (rule 3)."""
    counts, smoothed, centres = _histogram(values)
    bins = len(centres)
    below = np.maximum.accumulate(smoothed)                  # highest bin at or below each bin
    above = np.maximum.accumulate(smoothed[::-1])[::-1]      # ... at or above
    valley = np.zeros(bins, bool)
    middle = smoothed[1:-1]
    valley[1:-1] = ((middle <= smoothed[:-2]) & (middle <= smoothed[2:])
                    & (middle <= DIP * below[:-2]) & (middle <= DIP * above[2:]) & (above[2:] > 0))
    separation = _between_class_variance(counts, np.histogram(values, bins=bins, range=(0.0, 1.0),
                                                              weights=values)[0])
    valley &= (centres >= LOWEST) & (centres <= HIGHEST) & (separation >= SEPARATES * separation.max())
    return centres, smoothed, valley, separation


def _chance_edge(values: np.ndarray, smoothed: np.ndarray, centres: np.ndarray) -> float | None:
    """Rule 4: the upper edge of the chance mode, where most of the sample lies above it with no gap: the lower
    edge of the first bin where its fall ends (that bin holds rewrites as much as chance). The search starts at the
    first bin from LOWEST that holds anything: where no sampled document scores low (every one has a
    near-duplicate, as in a set of records each entered twice), an empty bin is no chance mode, and the cut falls
    just below the lowest best match."""
    searched = np.logical_or.accumulate((centres >= LOWEST) & (smoothed > 0))
    rising = np.flatnonzero(searched[:-1] & (smoothed[:-1] <= smoothed[1:]))
    if not len(rising):
        return None
    edge = float(centres[rising[0]]) - BIN_WIDTH / 2
    if np.count_nonzero(values >= edge) < REWRITTEN_SHARE * len(values) or values.max() < NEAR_COPY:
        return None
    return edge


def _between_class_variance(counts: np.ndarray, sums: np.ndarray) -> np.ndarray:
    """Per bin i, Otsu's between-class variance of the cut that puts bins [0, i) below and [i, end) above (`sums`:
    the values' sum per bin). Computed from cumulative sums, so cuts that move no document are exactly equal."""
    total, total_sum = counts.sum(), sums.sum()
    below = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.float64)
    below_sum = np.concatenate([[0.0], np.cumsum(sums)[:-1]])
    above, above_sum = total - below, total_sum - below_sum
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where((below > 0) & (above > 0), below_sum / below - above_sum / above, 0.0)
    return below * above * gap * gap / (total * total)


def learn_field_weights(similarities: np.ndarray) -> list[float] | None:
    """Each field's weight, log(m / u) (docs/threshold.md), from the per-field similarities of a sample of candidate
    pairs (`similarities`: one row per pair, one column per field, NaN where either item lacks the field); a field
    fewer than MIN_FIELD_PAIRS pairs share weighs the mean of the others. None when no field has enough pairs."""
    values = np.asarray(similarities, np.float64)
    shared = np.count_nonzero(~np.isnan(values), axis=0)
    known = shared >= MIN_FIELD_PAIRS
    if values.ndim != 2 or not known.any():
        return None
    with np.errstate(invalid="ignore"):
        chance = np.nanmean(np.where(known, values, 0.0), axis=0)
    weight = np.log(DUPLICATE_AGREEMENT / np.clip(chance, LOWEST_AGREEMENT, DUPLICATE_AGREEMENT))
    if weight[known].max() <= 0:  # every field agrees by chance as often as duplicates do: nothing to tell apart
        return None
    weight = np.where(known, np.maximum(weight, LOWEST_WEIGHT * weight[known].max()), 0.0)
    weight = np.where(known, weight, weight[known].mean())
    return [round(float(w), 4) for w in weight / weight.mean()]
