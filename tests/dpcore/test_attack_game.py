"""The membership game: the best player's rates sit on the exact trade-off curve (simulation),
the curves are the exact ones (closed forms and scipy's distributions), and none beats ε-DP."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import attack_game as game

ROUNDS = 200_000   # per world: a rate's standard error is at most 0.5 / sqrt(ROUNDS) = 0.0011
TOLERANCE = 5 * 0.5 / math.sqrt(ROUNDS)   # 5 standard errors: a false alarm about 1 in 10^6


def pure_dp_tpr(epsilon: float, fpr: np.ndarray) -> np.ndarray:
    """The brief's closed form: type-II error ≥ max(1 − e^ε α, e^−ε (1 − α)); TPR = 1 − it."""
    return 1.0 - np.maximum(1.0 - np.exp(epsilon) * fpr, np.exp(-epsilon) * (1.0 - fpr))


def played(g: game.Game, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both worlds, ROUNDS each, and the answers released in them."""
    rng = np.random.default_rng(seed)
    person_in = np.repeat([False, True], ROUNDS)
    return person_in, game.release(g, person_in, rng=rng), rng


@pytest.mark.parametrize("epsilon", [0.25, 1.0, 3.0])
def test_randomized_response_puts_the_best_player_on_the_epsilon_dp_limit(epsilon):
    g = game.new_game("randomized response", epsilon, people=30)
    person_in, outputs, _ = played(g, seed=1)
    fpr, tpr, out, inside = game.rates(person_in, game.best_guess(g, outputs))
    assert (out, inside) == (ROUNDS, ROUNDS)
    # the corner of the pure ε-DP curve: FPR = 1 / (1 + e^ε), TPR = e^ε FPR
    corner = 1.0 / (1.0 + math.exp(epsilon))
    assert abs(fpr - corner) < TOLERANCE
    assert abs(tpr - pure_dp_tpr(epsilon, np.array([corner]))[0]) < TOLERANCE
    assert abs(tpr - math.exp(epsilon) * corner) < TOLERANCE
    # the game's curve for randomized response is the ε-DP limit itself
    alpha = np.linspace(0, 1, 101)
    np.testing.assert_allclose(game.exact_curve(g, alpha), pure_dp_tpr(epsilon, alpha),
                               atol=1e-12)
    np.testing.assert_allclose(game.limit_curve(g, alpha), pure_dp_tpr(epsilon, alpha),
                               atol=1e-12)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_the_likelihood_ratio_test_lands_on_the_mechanisms_exact_curve(mechanism, epsilon):
    g = game.new_game(mechanism, epsilon, people=30)
    person_in, outputs, _ = played(g, seed=2)
    # thresholds across the whole curve, from cautious to trigger-happy
    for threshold in (0.2, 0.6, 1.0, 1.7, 5.0):
        fpr, tpr, _, _ = game.rates(person_in, game.best_guess(g, outputs, threshold=threshold))
        # the curve's slope is at most e^ε: an FPR off by its own sampling error moves the
        # curve by at most e^ε times as much
        allowed = TOLERANCE * (1 + math.exp(epsilon))
        assert abs(tpr - game.exact_curve(g, np.array([fpr]))[0]) < allowed, threshold
        assert tpr <= game.limit_curve(g, np.array([fpr]))[0] + allowed


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0])
def test_the_laplace_curve_is_the_neyman_pearson_roc_of_scipys_laplace(epsilon):
    # Thresholding the answer at c is the likelihood-ratio test (the ratio grows with c):
    # FPR = P(Lap(n − 1, 1/ε) > c), TPR = P(Lap(n, 1/ε) > c) from scipy, not from the code.
    c = np.linspace(-10, 12, 400) / epsilon + 29.5
    fpr = stats.laplace.sf(c, loc=29, scale=1 / epsilon)
    tpr = stats.laplace.sf(c, loc=30, scale=1 / epsilon)
    g = game.new_game("laplace", epsilon, people=30)
    np.testing.assert_allclose(game.exact_curve(g, fpr), tpr, atol=1e-12)
    # inside the ε-DP limit, touching it at the ends only (α ≤ e^-ε / 2 or α ≥ 1/2)
    alpha = np.linspace(0, 1, 1001)
    assert np.all(game.exact_curve(g, alpha) <= pure_dp_tpr(epsilon, alpha) + 1e-12)
    middle = (alpha > math.exp(-epsilon) / 2 + 0.01) & (alpha < 0.49)
    assert np.all(game.exact_curve(g, alpha)[middle] < pure_dp_tpr(epsilon, alpha)[middle])


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_the_gaussian_curve_is_the_roc_of_scipys_normal_and_inside_its_epsilon_delta_limit(
        epsilon):
    g = game.new_game("gaussian", epsilon, people=30)
    sigma = g.scale
    c = np.linspace(-8, 9, 300) * sigma + 29.5
    fpr = stats.norm.sf(c, loc=29, scale=sigma)
    tpr = stats.norm.sf(c, loc=30, scale=sigma)
    np.testing.assert_allclose(game.exact_curve(g, fpr), tpr, atol=1e-9)
    # the brief's form Φ(Φ⁻¹(1 − α) − μ) is the type-II error; μ = 1/σ
    alpha = np.linspace(0.001, 0.999, 500)
    type_two = stats.norm.cdf(stats.norm.ppf(1 - alpha) - 1 / sigma)
    np.testing.assert_allclose(game.exact_curve(g, alpha), 1 - type_two, atol=1e-9)
    # the (ε, δ) curve: TPR ≤ min(1, e^ε α + δ, 1 − e^-ε (1 − δ − α)), Kairouz et al.
    limit = np.minimum(1, np.minimum(math.exp(epsilon) * alpha + game.GAUSSIAN_DELTA,
                                     1 - math.exp(-epsilon) * (1 - game.GAUSSIAN_DELTA - alpha)))
    np.testing.assert_allclose(game.limit_curve(g, alpha), limit, atol=1e-12)
    assert np.all(game.exact_curve(g, alpha) <= limit + 1e-12)


@pytest.mark.parametrize("mechanism", game.MECHANISMS)
def test_the_best_rates_in_closed_form_match_a_simulation_and_sit_on_the_curve(mechanism):
    g = game.new_game(mechanism, 1.0, people=400)
    person_in, outputs, _ = played(g, seed=3)
    fpr, tpr, _, _ = game.rates(person_in, game.best_guess(g, outputs))
    best_fpr, best_tpr = game.best_rates(g)
    assert abs(fpr - best_fpr) < TOLERANCE and abs(tpr - best_tpr) < TOLERANCE
    assert game.exact_curve(g, np.array([best_fpr]))[0] == pytest.approx(best_tpr, abs=1e-12)


def test_a_player_who_ignores_the_answer_stays_on_the_diagonal():
    # planted: a strategy that cannot beat a coin flip, whatever it does
    g = game.new_game("laplace", 1.0, people=30)
    person_in, _, rng = played(g, seed=4)
    guesses = rng.random(person_in.size) < 0.3
    fpr, tpr, _, _ = game.rates(person_in, guesses)
    assert abs(fpr - 0.3) < TOLERANCE and abs(tpr - 0.3) < TOLERANCE


def test_the_same_seed_releases_the_same_answers():
    g = game.new_game("gaussian", 1.0, people=30)
    worlds = np.array([True, False, True])
    first = game.release(g, worlds, rng=np.random.default_rng(9))
    again = game.release(g, worlds, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize("bad", [
    {"mechanism": "staircase", "epsilon": 1.0, "people": 30},
    {"mechanism": "laplace", "epsilon": 0.0, "people": 30},
    {"mechanism": "laplace", "epsilon": math.nan, "people": 30},
    {"mechanism": "laplace", "epsilon": math.inf, "people": 30},
    {"mechanism": "laplace", "epsilon": 1.0, "people": 0},
])
def test_bad_parameters_are_refused_by_name(bad):
    with pytest.raises(ValueError):
        game.new_game(bad.pop("mechanism"), bad.pop("epsilon"), **bad)


def test_rates_and_their_interval():
    fpr, tpr, out, inside = game.rates([True, True, False, False, False],
                                       [True, False, True, False, False])
    assert (fpr, tpr, out, inside) == (pytest.approx(1 / 3), 0.5, 3, 2)
    assert math.isnan(game.rates([True], [True])[0])
    low, high = game.rate_interval(5, 10)
    # Wilson 95 % interval for 5 of 10, hand-computed: 0.2366 to 0.7634
    assert low == pytest.approx(0.2366, abs=1e-4) and high == pytest.approx(0.7634, abs=1e-4)
