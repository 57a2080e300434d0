"""core/calibration: learn_threshold on constructed samples of nearest-neighbour similarities, learn_field_weights on
constructed candidate pairs."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neardup.core import candidates
from neardup.core.calibration import (BIN_WIDTH, DUPLICATE_AGREEMENT, HIGHEST, LOOK_ALIKES_REACH, LOWEST,
                                     MIN_FIELD_PAIRS, MIN_LOOK_ALIKES, MIN_NEAR_DUPLICATES, MIN_SAMPLE,
                                     NEAREST_PER_PAIR, STRAGGLERS, UNLISTED_STRAGGLERS, equal_valleys, learn,
                                     learn_below_the_copies, learn_field_weights, learn_threshold, sampled_keys)


def sample(seed: int, *modes: tuple[int, float, float]) -> list[float]:
    """count values drawn uniformly from [low, high) per (count, low, high); 0 stands for "no match"."""
    rng = random.Random(seed)
    return [rng.uniform(low, high) if high > 0 else 0.0 for count, low, high in modes for _ in range(count)]


def test_short_rewrites_separate_low():
    """Unrelated short texts barely match (0, or under 0.08); their rewrites sit at 0.15-0.45: the threshold
    falls in the gap, far below the fixed default."""
    values = sample(1, (300, 0, 0), (150, 0.05, 0.08), (400, 0.15, 0.45))
    assert 0.08 <= learn_threshold(values) <= 0.15


def test_long_texts_with_shared_clauses_separate_high():
    """Unrelated formal texts share clauses (up to 0.4); copies sit at 0.7-1: the threshold falls in between."""
    values = sample(2, (200, 0, 0), (300, 0.05, 0.4), (300, 0.7, 1.0))
    assert 0.4 <= learn_threshold(values) <= 0.7


def test_rewrites_spread_from_the_chance_level_up_cut_at_the_chance_modes_edge():
    """Most texts have rewrites whose similarities spread evenly from 0.06 to 0.8, with no gap: the threshold is
    where the chance mode (no match, or under 0.05) ends, not the fixed default: the lower edge of the first bin
    where its fall ends, so that bin's rewrites (0.06 to 0.075) are grouped too."""
    values = sample(9, (120, 0, 0), (500, 0.06, 0.8))
    assert learn_threshold(values) == LOWEST


def test_where_every_document_has_a_near_duplicate_the_cut_falls_below_the_lowest_match():
    """Records each entered twice: every sampled document's best match scores 0.3 or more and nothing lies low.
    An empty stretch below them is no chance mode to take the edge of: the threshold is where the matches begin,
    not the lowest threshold learned."""
    values = sample(12, (20, 0.3, 0.5), (500, 0.5, 1.0))
    assert 0.275 <= learn_threshold(values) <= 0.35


def test_the_middle_of_an_empty_stretch():
    values = sample(3, (300, 0.05, 0.2), (300, 0.8, 1.0))
    assert learn_threshold(values) == pytest.approx(0.5, abs=0.03)
    # every valley of the stretch cuts the sample alike; the rule takes the middle one
    valleys = equal_valleys(values)
    assert len(valleys) >= 10 and valleys[0] < 0.3 and valleys[-1] > 0.7
    assert np.allclose(np.diff(valleys), BIN_WIDTH) and learn_threshold(values) == round(valleys[len(valleys) // 2], 4)


def test_no_equal_valleys_where_the_rule_learns_otherwise():
    assert len(equal_valleys(sample(9, (120, 0, 0), (500, 0.06, 0.8)))) == 0  # the chance mode's edge
    assert len(equal_valleys(sample(6, (MIN_SAMPLE // 2, 0.05, 0.2), (MIN_SAMPLE // 2 - 1, 0.8, 1.0)))) == 0


def test_rewrites_win_over_a_few_exact_copies_above_them():
    """A second, small mode of exact copies must not push the threshold above the rewrites."""
    values = sample(4, (300, 0, 0), (100, 0.05, 0.08), (500, 0.15, 0.5), (30, 0.92, 0.95))
    assert learn_threshold(values) <= 0.15


def test_a_few_close_copies_above_a_broad_spread_of_rewrites_are_no_second_mode():
    """Most texts have rewrites spread from the chance level up to 0.75 and a few close copies bunch above a dip
    there (a draw of the short rewrites did): that dip separates far less well than the best cut, so the threshold
    is the chance mode's edge, not one above nearly every rewrite."""
    values = sample(1, (80, 0, 0), (450, 0.05, 0.4), (300, 0.4, 0.7), (100, 0.6, 0.75), (50, 0.78, 0.92))
    assert LOWEST <= learn_threshold(values) <= 0.1


def test_a_corpus_without_near_duplicates_keeps_the_fixed_default():
    assert learn_threshold(sample(5, (500, 0, 0), (400, 0.05, 0.12), (60, 0.12, 0.3))) is None
    assert learn_threshold([0.0] * 1000) is None


def test_a_tiny_sample_keeps_the_fixed_default():
    values = sample(6, (MIN_SAMPLE // 2, 0, 0), (MIN_SAMPLE // 2 - 1, 0.8, 1.0))
    assert learn_threshold(values) is None
    assert learn_threshold(values + [0.0]) is not None  # one more and the same shape is enough


def test_a_handful_of_similar_documents_is_no_mode():
    values = sample(7, (500, 0, 0), (MIN_NEAR_DUPLICATES - 1, 0.9, 1.0))
    assert learn_threshold(values) is None
    assert learn_threshold(values + [0.95]) is not None


def test_look_alikes_among_the_candidates_lift_the_cut_above_them():
    """A template's pages: each one's nearest match is its copy (0.85-1), so the nearest-neighbour similarities
    show an empty stretch above the chance mode; their candidates show the sibling pages at 0.45-0.7. The cut
    moves from the stretch's middle to the sparsest stretch of the pairs between the siblings and the copies."""
    nearest = sample(4, (300, 0.05, 0.2), (300, 0.85, 1.0))
    siblings = sample(5, (600, 0.05, 0.2), (200, 0.45, 0.7), (5, 0.7, 0.8), (600, 0.85, 1.0))
    assert learn_threshold(nearest) == pytest.approx(0.525, abs=0.03)
    assert 0.7 <= learn_threshold(nearest, pairs=siblings) <= 0.85
    assert learn_threshold(nearest, pairs=list(reversed(siblings))) == learn_threshold(nearest, pairs=siblings)


def test_a_few_pairs_between_the_valley_and_the_copies_leave_the_cut():
    """Copies of one story edited in other places: a few of their pairs score below the others. Fewer than
    MIN_LOOK_ALIKES pairs are no population of look-alikes, so the valley's cut stays; as many move it."""
    nearest = sample(4, (300, 0.05, 0.2), (300, 0.85, 1.0))
    pairs = sample(6, (600, 0.05, 0.2), (600, 0.85, 1.0))
    weaker = [0.56 + i * 0.001 for i in range(MIN_LOOK_ALIKES)]
    valley = learn_threshold(nearest)
    assert learn_threshold(nearest, pairs=pairs + weaker[:-1]) == valley
    assert learn_threshold(nearest, pairs=pairs + weaker) > 0.6


def test_versions_alike_to_every_degree_put_the_cut_below_the_copies():
    """A licence's versions: each one's copies are its nearest matches (0.91-1), its sibling versions lie among its
    candidates at every similarity from 0.45 up to the copies, densest near them, with no sparse bin between. The
    cut moves on to the bin below the copies' lowest one."""
    nearest = sample(4, (300, 0.05, 0.2), (300, 0.91, 1.0))
    versions = sample(5, (600, 0.05, 0.2), (100, 0.45, 0.65), (400, 0.65, 0.91), (600, 0.91, 1.0))
    assert learn_threshold(nearest) == pytest.approx(0.5625)
    assert learn_threshold(nearest, pairs=versions) == pytest.approx(0.9 - BIN_WIDTH / 2)


def test_nearest_matches_among_the_versions_keep_the_cut_below_them():
    """The same versions where a few copies were edited: their nearest matches (0.86) lie among the versions. A few
    are stragglers the move gives up (at most STRAGGLERS of the copies, and NEAREST_PER_PAIR of the versions' pairs
    they lie among); more, and the cut stays below them."""
    nearest = sample(4, (300, 0.05, 0.2), (600, 0.91, 1.0))
    versions = sample(5, (600, 0.05, 0.2), (100, 0.45, 0.65), (400, 0.65, 0.91), (600, 0.91, 1.0))
    stretch = sum(0.5875 <= value < 0.8875 for value in versions)
    assert 6 <= NEAREST_PER_PAIR * stretch < 8 and 10 < STRAGGLERS * 600
    assert learn_threshold(nearest + [0.86] * 6, pairs=versions) == pytest.approx(0.8875)
    assert learn_threshold(nearest + [0.86] * 10, pairs=versions) < 0.86


def test_rule_8_is_tried_where_rules_6_and_7_move_the_cut_near_the_top():
    """Rule 8's condition: rules 6 and 7 moved the cut above look-alikes, past LOOK_ALIKES_REACH (versions alike to
    every degree up to copies bunched at 0.91, or at 0.86; pages up to 0.7 below copies from 0.85). A template's
    pages below copies from 0.8, and a valley near the top with no look-alikes, do not call for it."""
    chance = (300, 0.05, 0.2)
    versions = sample(5, (600, 0.05, 0.2), (100, 0.45, 0.65), (400, 0.65, 0.91), (600, 0.91, 1.0))
    assert learn(sample(4, chance, (300, 0.91, 1.0)), pairs=versions).up_to_the_copies
    lower = sample(5, (600, 0.05, 0.2), (100, 0.45, 0.65), (400, 0.65, 0.86), (600, 0.86, 1.0))
    moved = learn(sample(4, chance, (300, 0.86, 1.0)), pairs=lower)
    assert moved.valley < moved.look_alikes_from < moved.threshold < HIGHEST - BIN_WIDTH and moved.up_to_the_copies
    siblings = sample(5, (600, 0.05, 0.2), (200, 0.45, 0.7), (5, 0.7, 0.8), (600, 0.85, 1.0))
    pages = learn(sample(4, chance, (300, 0.85, 1.0)), pairs=siblings)
    assert pages.valley < pages.look_alikes_from == pages.threshold > LOOK_ALIKES_REACH and pages.up_to_the_copies
    template = sample(5, (600, 0.05, 0.2), (200, 0.45, 0.65), (5, 0.65, 0.75), (600, 0.8, 1.0))
    below = learn(sample(4, chance, (300, 0.8, 1.0)), pairs=template)
    assert below.valley < below.threshold <= LOOK_ALIKES_REACH and not below.up_to_the_copies
    high = sample(4, (300, 0.55, 0.7), (300, 0.95, 1.0))
    valley = learn(high, pairs=sample(5, (600, 0.55, 0.7), (600, 0.95, 1.0)))
    assert valley.threshold > LOOK_ALIKES_REACH and valley.valley == valley.threshold and not valley.up_to_the_copies


def test_rule_8_keeps_its_store_only_where_its_own_cut_lies_near_the_top():
    """Without the stop-list, copies bunched at 0.91 put rule 8's cut near the top; a template's pages, whose
    nearest matches are often a sibling page (0.5-0.7), put it low, and `neardup index` writes the store as it was."""
    chance = (300, 0.05, 0.2)
    assert learn_below_the_copies(sample(4, chance, (300, 0.91, 1.0))).near_the_top
    assert not learn_below_the_copies(sample(4, chance, (60, 0.5, 0.7), (300, 0.85, 1.0))).near_the_top


def test_below_the_copies_sets_aside_a_share_of_stragglers_and_needs_a_valley():
    """Rule 8's cut (a store without its stop-list, under mutual): the bin below the copies' bunch of the nearest
    matches above the valley, where up to UNLISTED_STRAGGLERS of them may lie lower (edited copies); more, and the
    cut falls below them. The valley's cut is where the look-alikes begin. No valley (or too small a sample): none."""
    copies = sample(4, (300, 0.05, 0.2), (600, 0.86, 1.0))
    few = [0.61] * int(UNLISTED_STRAGGLERS * 600 * 0.9)
    learned = learn_below_the_copies(copies + few)
    assert learned.threshold == pytest.approx(0.8375) and learned.look_alikes_from < 0.6
    assert learn_below_the_copies(copies + [0.61] * int(UNLISTED_STRAGGLERS * 600 * 1.2)).threshold == \
        pytest.approx(0.5875)
    assert learn_below_the_copies(sample(9, (120, 0, 0), (500, 0.06, 0.8))) is None
    assert learn_below_the_copies(copies[:MIN_SAMPLE - 1]) is None


def test_no_cut_above_pairs_that_thin_out_without_copies_above_them():
    """Pairs spreading from the valley up, thinning out with no mode of copies above: no sparse stretch lies
    between look-alikes and copies, and the valley's cut stays (not the top of the range)."""
    nearest = sample(4, (300, 0.05, 0.2), (300, 0.85, 1.0))
    thinning = sample(7, (600, 0.05, 0.2), (400, 0.45, 0.6), (200, 0.6, 0.75), (100, 0.75, 0.9), (40, 0.9, 1.0))
    assert learn_threshold(nearest, pairs=thinning) == learn_threshold(nearest)


def test_pairs_change_nothing_where_the_chance_modes_edge_or_items_decide():
    rewrites = sample(9, (120, 0, 0), (500, 0.06, 0.8))
    look_alikes = sample(5, (600, 0.05, 0.2), (200, 0.45, 0.7), (600, 0.85, 1.0))
    assert learn_threshold(rewrites, pairs=look_alikes) == learn_threshold(rewrites)
    records = sample(10, (300, 0.05, 0.25), (300, 0.8, 1.0))
    assert learn_threshold(records, lowest_valley=True, pairs=look_alikes) == learn_threshold(records,
                                                                                           lowest_valley=True)


def test_deterministic_and_order_free():
    values = sample(8, (300, 0, 0), (300, 0.6, 0.9))
    assert learn_threshold(values) == learn_threshold(list(reversed(values))) == learn_threshold(values)


@pytest.mark.slow  # seconds of work: the full suite's (tests/README.md)
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=MIN_SAMPLE, max_size=600),
       st.lists(st.floats(0.0, 1.0), max_size=400))
def test_the_answer_is_none_or_inside_the_range(low, high):
    for pairs in (None, high + low[:50]):
        learned = learn_threshold(low + high, pairs=pairs)
        assert learned is None or LOWEST <= learned <= HIGHEST


def candidate_similarities(seed: int, pairs: int, agreement: list[float]) -> np.ndarray:
    """Per-field similarities of candidate pairs: field f agrees (1) with probability agreement[f], else 0; NaN
    (a missing field) for a tenth of each field's pairs."""
    rng = np.random.default_rng(seed)
    values = (rng.random((pairs, len(agreement))) < np.array(agreement)).astype(np.float64)
    values[rng.random(values.shape) < 0.1] = np.nan
    return values


def test_a_field_most_candidates_share_weighs_least():
    """A city most candidates share tells little; a phone they rarely share tells much (log(m / u))."""
    weights = learn_field_weights(candidate_similarities(7, 5000, [0.02, 0.1, 0.6, 0.002]))
    name, address, city, phone = weights
    assert phone > name > address > city > 0
    assert np.mean(weights) == pytest.approx(1, abs=1e-3)
    assert phone / city == pytest.approx(np.log(DUPLICATE_AGREEMENT / 0.002) / np.log(DUPLICATE_AGREEMENT / 0.6),
                                         rel=0.1)


def test_a_field_too_few_candidates_share_weighs_the_mean_of_the_others():
    values = candidate_similarities(8, 2000, [0.05, 0.3, 0.01])
    values[MIN_FIELD_PAIRS - 1:, 2] = np.nan  # only MIN_FIELD_PAIRS - 1 pairs share the third field
    first, second, third = learn_field_weights(values)
    assert third == pytest.approx((first + second) / 2, rel=1e-3)
    assert learn_field_weights(values[:MIN_FIELD_PAIRS - 1]) is None
    assert learn_field_weights(np.ones((500, 2))) is None  # every candidate agrees on every field


def test_items_cut_next_to_the_chance_mode_where_texts_cut_in_the_middle():
    """Records' chance agreement is one narrow low mode; a store of records cuts at the first valley that
    separates nearly as well as the best (its larger entities' weaker links lie low in the gap), texts in the
    middle of the empty stretch."""
    values = sample(10, (300, 0.05, 0.25), (300, 0.8, 1.0))
    assert learn_threshold(values) == pytest.approx(0.525, abs=0.03)
    assert 0.25 <= learn_threshold(values, lowest_valley=True) <= 0.32
    noise = values + [0.0, 0.0, 0.01]  # a few values below the chance mode make no valley worth cutting at
    assert 0.25 <= learn_threshold(noise, lowest_valley=True) <= 0.32


def test_the_sample_is_drawn_by_the_ids_whatever_their_order():
    """The articles a threshold is learned from: the same ids in any order give the same sample, in id order; it
    spreads over the ids (not their first ones), and a store of fewer ids than asked gives every one."""
    keys = [f"story-{n}".encode() for n in range(5000)]
    chosen = sampled_keys(keys, 500)
    assert len(chosen) == 500 and chosen == sorted(chosen)
    shuffled = keys[:]
    random.Random(3).shuffle(shuffled)
    assert sampled_keys(iter(shuffled), 500) == chosen  # an iterator read once, as a store's cursor
    numbers = sorted(int(key.split(b"-")[1]) for key in chosen)
    assert numbers[0] < 100 and numbers[-1] > 4900 and not set(numbers) <= set(range(500))
    assert sampled_keys(keys[:40], 500) == sorted(keys[:40])
    assert sampled_keys(keys[:40] + keys[4000:], 500) == sampled_keys(keys[4000:] + keys[:40], 500)


def test_whole_ties_verify_the_same_articles_however_they_are_numbered():
    """Past max_candidates, the articles sharing as many values as the last one kept are all verified: which
    articles are, then depends on what they share, never on their article numbers (ties are cut by number
    otherwise)."""
    shared = {10: 5, 11: 3, 12: 3, 13: 3, 14: 9, 15: 1}  # article → values it shares with the query
    query = 9

    def postings(numbering: dict[int, int]) -> candidates.Postings:
        entries = [(value, numbering[article]) for article, count in shared.items() for value in range(count)]
        entries.sort(key=lambda entry: entry[1])
        return candidates.Postings(np.array([value for value, _ in entries], np.intp),
                                   np.array([docno for _, docno in entries], np.uint32),
                                   np.zeros(len(entries), np.uint8))

    def verified(numbering: dict[int, int], whole_ties: bool) -> set[int]:
        found = candidates.candidates(query, postings(numbering), 0.0, "containment", max_candidates=3,
                                      whole_ties=whole_ties)
        article = {docno: article for article, docno in numbering.items()}
        return {article[docno] for docno in found.docnos.tolist()}

    reversed_numbers = {article: 100 - article for article in shared}
    assert verified(dict(zip(shared, shared)), True) == verified(reversed_numbers, True) == {14, 10, 11, 12, 13}
    assert verified(dict(zip(shared, shared)), False) != verified(reversed_numbers, False)  # what ties cut
