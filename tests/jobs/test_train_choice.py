"""How `neardup train` fits a text store's threshold and chooses the setting to serve, as functions of the answers and
the similarities of the store's candidate pairs: each answer standing for its band, the threshold of the best expected
F1 among the answers, answered pairs counted as answered, and the settings weighed by their expected F1 and, near a
tie, by the answers."""
from __future__ import annotations

import numpy as np
import pytest

from neardup.jobs import pair_sample, train


def test_each_answer_stands_for_the_pairs_of_its_band():
    """Labelled pairs weigh what the store's pairs of their band of similarity over the labelled ones there: two
    answers in a band of 300 pairs weigh 150 each, one in a band of 10 weighs 10; a band with more answers than
    pooled pairs weighs 1 an answer."""
    scores = np.array([0.05, 0.06, 0.55, 0.72, 0.95, 0.96, 0.97])
    population = np.concatenate([np.full(300, 0.03), np.full(10, 0.5), np.full(40, 0.75), np.full(1, 0.99)])
    weights = train.population_weights(scores, population)
    assert weights.tolist() == [150.0, 150.0, 10.0, 40.0, 1.0, 1.0, 1.0]


@pytest.mark.parametrize("proposed_near", [0.5, 0.7])
def test_the_fitted_threshold_is_near_the_best_one_of_the_store_the_answers_were_drawn_from(proposed_near):
    """A store whose pairs' chance of being duplicates rises with similarity (the best threshold near 0.6); 60
    answers, 50 of them crowded near a threshold a little off (as `neardup label` proposes near the store's current
    one) and 10 anywhere. Over 20 such stores the fitted threshold's F1 on the whole store falls short of the best
    threshold's by 0.012 at most on average and 0.05 at worst. (The middle of the answers' best cuts, weighted or
    not, fell short by 0.02-0.04 on average here, and by 0.15 in the worst store.)"""
    shortfalls = []
    for seed in range(20):
        rng = np.random.default_rng(seed)
        population = np.concatenate([rng.beta(2, 8, 3000), rng.beta(8, 2, 400), rng.uniform(0.3, 0.8, 600)])
        duplicate = rng.random(len(population)) < 1 / (1 + np.exp(-(population - 0.62) * 18))
        near = np.flatnonzero(np.abs(population - proposed_near) < 0.12)
        drawn = np.concatenate([rng.choice(near, 50, replace=False), rng.choice(len(population), 10, replace=False)])
        if min(duplicate[drawn].sum(), (~duplicate[drawn]).sum()) < train.DEFAULT_FOLDS:
            continue  # train refuses such answers

        def f1(cut):
            called = population >= cut
            return 2 * (called & duplicate).sum() / (called.sum() + duplicate.sum())

        threshold = train.fit_threshold(population[drawn], duplicate[drawn], population)
        shortfalls.append(max(f1(cut) for cut in np.linspace(0, 1, 201)) - f1(threshold))
    assert len(shortfalls) >= 15
    assert np.mean(shortfalls) <= 0.012 and max(shortfalls) <= 0.05


def _versions_between_copies(seed: int = 3) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A store's pairs: 40 copies (0.92-0.98), 30 versions of one text, no copies (0.78-0.88), 10 copies heavily
    edited (0.70-0.76) and 300 unrelated pairs; and the positions of 60 answered ones: every version, every edited
    copy, 10 copies and 10 unrelated pairs."""
    rng = np.random.default_rng(seed)
    population = np.concatenate([rng.uniform(0.92, 0.98, 40), rng.uniform(0.78, 0.88, 30),
                                 rng.uniform(0.70, 0.76, 10), rng.uniform(0.05, 0.3, 300)])
    duplicate = np.concatenate([np.ones(40, bool), np.zeros(30, bool), np.ones(10, bool), np.zeros(300, bool)])
    answered = np.concatenate([np.arange(10), np.arange(40, 90)])
    return population, duplicate, answered


def test_answered_pairs_of_the_store_count_as_answered_where_the_threshold_is_fitted():
    """The answers rise with similarity but for the versions between the edited copies and the copies, which a
    logistic fit of them calls likely duplicates: over the store's pairs at those chances, calling every version
    too would look best (0.7122, F1 0.740 by the truth). The versions are all answered, so they count as what they
    are, and the threshold falls between them and the copies, the best cut by the truth (F1 0.889)."""
    population, duplicate, answered = _versions_between_copies()
    scores, truth = population[answered], duplicate[answered]

    def f1(cut):
        called = population >= cut
        return 2 * (called & duplicate).sum() / (called.sum() + duplicate.sum())

    guessed = train.fit_threshold(scores, truth, population)
    threshold = train.fit_threshold(scores, truth, population, answered)
    assert guessed < 0.78 and f1(guessed) < 0.75
    assert 0.88 < threshold < 0.92
    assert f1(threshold) == max(f1(cut) for cut in np.linspace(0, 1, 201))
    # answers outside the store's pairs (-1) count only through the fit
    assert train.fit_threshold(scores, truth, population, np.full(len(answered), -1)) == guessed


def test_an_answer_is_found_among_the_store_s_pairs_in_either_order_and_only_there():
    """An answer's pair is found whichever way round either names it, at its position among the rows kept (the
    pairs whose texts the corpus holds), and nowhere (-1) when it is not pooled or its row is not kept: an answer
    counted at another pair's position would teach that pair's chance."""
    pool = pair_sample.CandidatePairs(["a", "b", "c", "d"], ["b", "c", "d", "e"], np.zeros((4, 1)), np.zeros(4),
                                      np.ones(4))
    answers = [("b", "a", True), ("c", "d", False), ("a", "e", False), ("d", "e", True)]
    positions = train.answer_positions(pool, answers)
    assert positions.tolist() == [0, 2, -1, 3]
    assert train.kept_positions(positions, np.array([1, 3]), 4).tolist() == [-1, -1, -1, 1]


def test_a_store_whose_pairs_are_all_answered_expects_each_setting_s_f1_by_the_answers():
    """Where every one of the store's pairs is answered, nothing is left to guess: each setting's expected F1 over
    them is its F1 by the answers, whatever the chance model fitted on them says."""
    population, duplicate, _ = _versions_between_copies()
    everything = np.arange(len(population))
    settings = [_setting("", cut, population.tolist(), population, 0.0) for cut in (0.5, 0.74, 0.9)]
    expected = train._expected_f1(settings, duplicate, everything)
    truth = [2 * (duplicate & (population >= cut)).sum() / ((population >= cut).sum() + duplicate.sum())
             for cut in (0.5, 0.74, 0.9)]
    assert np.allclose(expected, truth)
    assert int(np.argmax(expected)) == 2 and int(np.argmax(train._expected_f1(settings, duplicate))) != 2


def _setting(stoplist: str, threshold: float, answers: list[float], population: np.ndarray, f1: float,
             metric: str = "containment") -> train.Setting:
    return train.Setting(stoplist, metric, threshold, np.array(answers), population, {"f1": f1})


def test_a_setting_that_calls_a_band_the_answers_make_unlikely_duplicates_is_expected_to_serve_worse():
    """The store's pairs: 50 copies (0.9 under both settings), and a band of 200 template pages that the store's own
    stop-list sets at 0.3 and no stop-list at 0.8. Of 30 answers, 6 are such pages, answered "not a duplicate",
    18 copies and 6 unrelated pairs. Without the stop-list, a threshold of 0.7 calls the whole band duplicates: its
    expected F1 over the store's pairs falls below the store's own setting's, although both separate the answers
    alike."""
    copies, pages = np.full((50, 2), 0.9), np.tile([0.3, 0.8], (200, 1))
    population = np.vstack([copies, pages])
    answered = {"own": [0.9] * 18 + [0.3, 0.3, 0.1, 0.1] * 3, "none": [0.9] * 18 + [0.8, 0.8, 0.1, 0.1] * 3}
    truth = np.array([True] * 18 + [False] * 12)
    own = _setting("", 0.6, answered["own"], population[:, 0], 1.0)
    other = _setting("none", 0.7, answered["none"], population[:, 1], 1.0)
    expected = train._expected_f1([own, other], truth)
    assert expected[0] > expected[1] + 0.2
    assert train._chosen([own, other], expected) == 0


def test_settings_the_store_s_pairs_cannot_tell_apart_are_chosen_by_the_answers():
    """Expected F1 within EXPECTED_TIE of the best: the setting of the best F1 on the answers wins, the earliest on
    an equal one (the store's current setting comes first); beyond it, the best expected F1 wins."""
    population = np.zeros(3)
    settings = [_setting("", 0.5, [], population, f1) for f1 in (0.80, 0.90, 0.95, 0.90)]
    tie = train.EXPECTED_TIE
    assert train._chosen(settings, np.array([0.90, 0.90 - tie / 2, 0.90 - 2 * tie, 0.90])) == 1
    assert train._chosen(settings, np.array([0.90, 0.90, 0.90, 0.90])) == 2
    assert train._chosen(settings[:2] + settings[3:], np.array([0.90, 0.90, 0.90])) == 1
    assert train._chosen(settings, np.array([0.95, 0.90, 0.90, 0.90])) == 0


def test_a_larger_sketch_near_the_best_wins_only_by_more_than_a_tie_on_the_answers():
    """Twice the sketch costs twice the bytes per article and per comparison: near the best expected F1, it is
    chosen over the best setting of the store's sketch size only where its F1 on the answers is higher by more than
    EXPECTED_TIE; where its expected F1 alone is near the best, it is chosen whatever its F1."""
    population, tie = np.zeros(3), train.EXPECTED_TIE
    settings = [_setting("", 0.5, [], population, 0.80), _setting("none", 0.5, [], population, 0.90)]
    for twice_f1, chosen in ((0.90 + tie / 2, 1), (0.90 + tie, 1), (0.90 + 2 * tie, 2)):
        twice = _setting("none, twice k", 0.5, [], population, twice_f1)
        assert train._chosen([*settings, twice], np.array([0.80, 0.85, 0.85])) == chosen, twice_f1
    twice = _setting("copies counted, twice k", 0.5, [], population, 0.5)
    assert train._chosen([*settings, twice], np.array([0.80, 0.85, 0.85 + 2 * tie])) == 2


def test_a_larger_sketch_near_the_best_gives_way_to_its_own_stop_list_not_to_another():
    """A store indexed with the stop-list that counts copies (so train resketches no copies-counted texts at the
    store's size): its settings, no stop-list's, and copies counted in twice the sketch, all near the best expected
    F1, the larger sketch's the best. It is weighed against its own stop-list at the store's size, the store's
    settings: where it beats them by more than EXPECTED_TIE on the answers it is chosen, even though no stop-list's
    F1 on the answers is within a tie of it; where it does not, the store's own setting serves, not no stop-list's.
    Any larger sketch is weighed against its stop-list at the store's size and the store's own setting, not a
    third stop-list."""
    population, tie = np.zeros(3), train.EXPECTED_TIE
    expected = np.array([0.760, 0.763, 0.760, 0.769])
    for own_f1, chosen in ((0.73, 3), (0.79, 0)):
        settings = [_setting("", 0.90, [], population, own_f1), _setting("", 0.91, [], population, own_f1 - 0.03),
                    _setting("none", 0.89, [], population, 0.791),
                    _setting("copies counted, twice k", 0.92, [], population, 0.791 + tie / 2)]
        assert train._chosen(settings, expected) == chosen, own_f1
    # where the store has a stop-list of its own, copies counted at its size is the larger sketch's yardstick
    for counted_f1, chosen in ((0.70, 3), (0.79, 1)):
        settings = [_setting("", 0.90, [], population, 0.80),
                    _setting("copies counted", 0.89, [], population, counted_f1),
                    _setting("none", 0.89, [], population, 0.79),
                    _setting("copies counted, twice k", 0.92, [], population, 0.795)]
        assert train._chosen(settings, np.array([0.70, 0.769, 0.765, 0.769])) == chosen, counted_f1
    # no stop-list in twice the sketch, near no stop-list at the store's size: the store's own setting, of a better
    # F1 on the answers, is its yardstick too, and serves where the larger sketch does not beat it clearly
    settings = [_setting("", 0.90, [], population, 0.80), _setting("none", 0.89, [], population, 0.75),
                _setting("none, twice k", 0.92, [], population, 0.805)]
    assert train._chosen(settings, np.array([0.765, 0.765, 0.769])) == 0




def test_the_fitted_threshold_lies_among_the_answers():
    """A store re-indexed without its stop-list holds 840 chance pairs (0.02-0.05) lower than any pair answered on the
    store before (0.06-0.6, rewrites and others mixed low down). The logistic fit of the answers gives those chance
    pairs a duplicate's chance no answer supports, and the best expected F1 over the store's pairs cut below them all
    (0.01, F1 0.42 by the truth); a cut among the answers is the best of those (F1 0.85 against the best 0.89)."""
    rng = np.random.default_rng(1)
    scores = np.array([0.06] * 3 + [0.12] * 20 + [0.17] + [0.25] * 5 + [0.4] * 3 + [0.6] * 3
                      + [0.06] * 5 + [0.09] * 6 + [0.12] * 12 + [0.17] + [0.6])
    truth = np.arange(len(scores)) < 35
    population = np.concatenate([rng.uniform(0.02, 0.05, 840), rng.uniform(0.05, 0.1, 100),
                                 rng.uniform(0.1, 0.2, 100), rng.uniform(0.2, 0.6, 300)])
    chance = np.select([population < 0.05, population < 0.1, population < 0.2], [0.0, 0.2, 0.6], 0.9)
    duplicate = rng.random(len(population)) < chance

    def f1(cut):
        called = population >= cut
        return 2 * (called & duplicate).sum() / (called.sum() + duplicate.sum())

    threshold = train.fit_threshold(scores, truth, population)
    assert scores.min() < threshold <= scores.max()
    assert f1(threshold) >= 0.8
