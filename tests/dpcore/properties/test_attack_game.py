"""Property tests of dpcore.attack_game: the membership game's curves, players and rates.

Expected values come from closed forms and scipy.stats, never from the module itself; sampling
uses fixed seeds and binomial error bounds.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcore import attack_game
from tests.dpcore.properties.oracle import covers

FAST = settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])

MECHANISMS = st.sampled_from(attack_game.MECHANISMS)
EPSILONS = st.floats(0.05, 5.0)
PEOPLE = st.integers(1, 1000)
FPRS = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20).map(np.array)
GRID = np.linspace(0.0, 1.0, 201)


def pure_dp_tpr(epsilon: float, alpha: np.ndarray) -> np.ndarray:
    """TPR = 1 − β with β(α) = max(1 − e^ε α, e^−ε (1 − α)), and never above 1."""
    beta = np.maximum(1.0 - math.exp(epsilon) * alpha, math.exp(-epsilon) * (1.0 - alpha))
    return np.clip(1.0 - beta, 0.0, 1.0)


def approx_dp_tpr(epsilon: float, delta: float, alpha: np.ndarray) -> np.ndarray:
    """TPR = min(1, e^ε α + δ, 1 − e^−ε (1 − δ − α)) (Kairouz, Oh & Viswanath)."""
    return np.minimum.reduce([np.ones_like(alpha), math.exp(epsilon) * alpha + delta,
                              1.0 - math.exp(-epsilon) * (1.0 - delta - alpha)])


def gaussian_tpr(sigma: float, alpha: np.ndarray) -> np.ndarray:
    """1 − Φ(Φ⁻¹(1 − α) − 1/σ): thresholding N(1, σ²) against N(0, σ²)."""
    return 1.0 - stats.norm.cdf(stats.norm.ppf(1.0 - alpha) - 1.0 / sigma)


def laplace_tpr(epsilon: float, alpha: np.ndarray) -> np.ndarray:
    """The Laplace(0, b) vs Laplace(1, b) trade-off from scipy: thresholds t in [0, 1] (where
    the likelihood ratio moves), randomized (linear) beyond them, b = 1/ε."""
    b = 1.0 / epsilon
    a1 = stats.laplace.sf(1.0, 0.0, b)        # FPR at t = 1
    tpr1 = stats.laplace.sf(1.0, 1.0, b)      # = 1/2
    a0 = stats.laplace.sf(0.0, 0.0, b)        # = 1/2
    tpr0 = stats.laplace.sf(0.0, 1.0, b)
    t = np.clip(stats.laplace.isf(np.clip(alpha, a1, a0), 0.0, b), 0.0, 1.0)
    middle = stats.laplace.sf(t, 1.0, b)
    low = alpha * tpr1 / a1
    high = tpr0 + (alpha - a0) * (1.0 - tpr0) / (1.0 - a0)
    return np.where(alpha < a1, low, np.where(alpha <= a0, middle, high))


# -- Game, new_game --------------------------------------------------------------------------

@covers("attack_game.new_game", "attack_game.Game", "attack_game.Game.count_with")
@FAST
@given(mechanism=MECHANISMS, epsilon=EPSILONS, people=PEOPLE)
def test_new_game_matches_the_mechanism(mechanism, epsilon, people):
    g = attack_game.new_game(mechanism, epsilon, people=people)
    assert isinstance(g, attack_game.Game)
    assert g.mechanism == mechanism and g.epsilon == epsilon
    assert g.count_without == people - 1
    assert g.count_with == g.count_without + 1 == people
    if mechanism == "randomized response":
        assert g.delta == 0.0
        assert g.scale == pytest.approx(math.exp(epsilon) / (1 + math.exp(epsilon)), rel=1e-12)
    elif mechanism == "laplace":
        assert g.delta == 0.0
        assert g.scale == pytest.approx(1.0 / epsilon, rel=1e-12)
    else:
        assert g.delta == attack_game.GAUSSIAN_DELTA
        assert g.scale > 0 and math.isfinite(g.scale)
        # σ buys (ε, δ)-DP: the Gaussian curve stays inside the (ε, δ) limit (checked below);
        # and more ε never costs more noise than the classical calibration for ε < 1.
        if epsilon < 1:
            classical = math.sqrt(2 * math.log(1.25 / attack_game.GAUSSIAN_DELTA)) / epsilon
            assert g.scale <= classical * (1 + 1e-9)


@covers("attack_game.Game", "attack_game.Game.count_with")
@FAST
@given(count=st.integers(0, 10**6), scale=st.floats(1e-3, 1e3))
def test_game_count_with_is_one_more(count, scale):
    g = attack_game.Game("laplace", 1.0, 0.0, scale, count)
    assert g.count_with == count + 1


@covers("attack_game.new_game")
@pytest.mark.parametrize(("args", "word"), [
    (("laplacian", 1.0, 3), "mechanism"), (("laplace", 0.0, 3), "epsilon"),
    (("laplace", -1.0, 3), "epsilon"), (("laplace", math.inf, 3), "epsilon"),
    (("laplace", math.nan, 3), "epsilon"), (("gaussian", 1.0, 0), "people")])
def test_new_game_refuses_invalid(args, word):
    mechanism, epsilon, people = args
    with pytest.raises(ValueError, match=word):
        attack_game.new_game(mechanism, epsilon, people=people)


# -- release -----------------------------------------------------------------------------------

@covers("attack_game.release")
@FAST
@given(mechanism=MECHANISMS, epsilon=EPSILONS, people=PEOPLE,
       person_in=st.lists(st.booleans(), min_size=1, max_size=50), seed=st.integers(0, 2**32))
def test_release_shape_and_support(mechanism, epsilon, people, person_in, seed):
    g = attack_game.new_game(mechanism, epsilon, people=people)
    out = attack_game.release(g, person_in, rng=np.random.default_rng(seed))
    assert out.shape == (len(person_in),)
    assert np.all(np.isfinite(out))
    if mechanism == "randomized response":
        assert set(np.unique(out)) <= {0.0, 1.0}


@covers("attack_game.release")
@pytest.mark.parametrize("mechanism", attack_game.MECHANISMS)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_release_distribution(mechanism, epsilon):
    rounds = 20_000
    g = attack_game.new_game(mechanism, epsilon, people=10)
    rng = np.random.default_rng(12345)
    inside = np.repeat([False, True], rounds)
    out = attack_game.release(g, inside, rng=rng)
    if mechanism == "randomized response":
        p = math.exp(epsilon) / (1 + math.exp(epsilon))
        truthful = np.mean(out == inside.astype(float))
        assert abs(truthful - p) < 5 * math.sqrt(p * (1 - p) / (2 * rounds))
    else:
        std = math.sqrt(2) / epsilon if mechanism == "laplace" else g.scale
        for world, count in ((False, 9), (True, 10)):
            mean = out[inside == world].mean()
            assert abs(mean - count) < 5 * std / math.sqrt(rounds)
        assert np.std(out[~inside]) == pytest.approx(std, rel=0.05)


# -- best_guess --------------------------------------------------------------------------------

def scipy_log_ratio(g: attack_game.Game, outputs: np.ndarray) -> np.ndarray:
    if g.mechanism == "randomized response":
        y = (outputs > 0.5).astype(int)
        return stats.bernoulli.logpmf(y, g.scale) - stats.bernoulli.logpmf(y, 1 - g.scale)
    dist = stats.laplace if g.mechanism == "laplace" else stats.norm
    return (dist.logpdf(outputs, g.count_with, g.scale)
            - dist.logpdf(outputs, g.count_without, g.scale))


@covers("attack_game.best_guess")
@FAST
@given(mechanism=MECHANISMS, epsilon=EPSILONS, people=st.integers(1, 50),
       threshold=st.floats(0.05, 20.0), seed=st.integers(0, 2**32))
def test_best_guess_is_the_likelihood_ratio_test(mechanism, epsilon, people, threshold, seed):
    g = attack_game.new_game(mechanism, epsilon, people=people)
    rng = np.random.default_rng(seed)
    outputs = attack_game.release(g, rng.random(40) < 0.5, rng=rng)
    guess = attack_game.best_guess(g, outputs, threshold=threshold)
    assert guess.dtype == np.bool_ and guess.shape == outputs.shape
    margin = scipy_log_ratio(g, outputs) - math.log(threshold)
    clear = np.abs(margin) > 1e-9
    assert np.array_equal(guess[clear], margin[clear] > 0)


@covers("attack_game.best_guess")
@pytest.mark.parametrize("threshold", [0.0, -1.0, math.nan])
def test_best_guess_refuses_bad_threshold(threshold):
    g = attack_game.new_game("laplace", 1.0, people=3)
    with pytest.raises(ValueError, match="threshold"):
        attack_game.best_guess(g, [1.0, 2.0], threshold=threshold)


# -- curves ------------------------------------------------------------------------------------

@covers("attack_game.exact_curve", "attack_game.limit_curve")
@FAST
@given(mechanism=MECHANISMS, epsilon=EPSILONS, people=PEOPLE, fpr=FPRS)
def test_curves_are_tradeoff_curves_inside_the_limit(mechanism, epsilon, people, fpr):
    g = attack_game.new_game(mechanism, epsilon, people=people)
    for curve in (attack_game.exact_curve, attack_game.limit_curve):
        tpr = curve(g, fpr)
        assert tpr.shape == fpr.shape
        assert np.all((tpr >= fpr - 1e-12) & (tpr <= 1.0))          # above the diagonal
        on_grid = curve(g, GRID)
        assert np.all(np.diff(on_grid) >= -1e-12)   # TPR up as α up: β non-increasing
    exact = attack_game.exact_curve(g, fpr)
    if g.delta == 0.0:
        limit = pure_dp_tpr(epsilon, fpr)
        assert exact == pytest.approx(np.minimum(exact, limit), abs=1e-9)  # never beats ε-DP
        assert attack_game.limit_curve(g, fpr) == pytest.approx(limit, abs=1e-12)
    else:
        limit = approx_dp_tpr(epsilon, g.delta, fpr)
        assert np.all(exact <= limit + 1e-9)                 # never beats (ε, δ)-DP
        assert attack_game.limit_curve(g, fpr) == pytest.approx(limit, abs=1e-12)


@covers("attack_game.exact_curve")
@FAST
@given(mechanism=MECHANISMS, epsilon=EPSILONS, fpr=FPRS)
def test_exact_curve_closed_forms(mechanism, epsilon, fpr):
    g = attack_game.new_game(mechanism, epsilon, people=5)
    exact = attack_game.exact_curve(g, fpr)
    if mechanism == "randomized response":
        expected = pure_dp_tpr(epsilon, fpr)          # randomized response reaches the limit
    elif mechanism == "laplace":
        expected = laplace_tpr(epsilon, fpr)
    else:
        expected = gaussian_tpr(g.scale, fpr)
    assert exact == pytest.approx(expected, abs=1e-9)


@covers("attack_game.laplace_tradeoff")
@FAST
@given(epsilon=st.floats(0.01, 10.0), fpr=FPRS)
def test_laplace_tradeoff_closed_form(epsilon, fpr):
    tpr = attack_game.laplace_tradeoff(epsilon, fpr)
    assert tpr.shape == fpr.shape
    assert tpr == pytest.approx(laplace_tpr(epsilon, fpr), abs=1e-9)
    assert np.all(tpr <= pure_dp_tpr(epsilon, fpr) + 1e-12)
    assert np.all(tpr >= fpr - 1e-12)


@covers("attack_game.laplace_tradeoff")
@covers("attack_game.laplace_tradeoff")
def test_laplace_tradeoff_tiny_fpr_without_warnings():
    """Found by the property above: a subnormal α overflowed e^-ε/(4α) with a warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert attack_game.laplace_tradeoff(1.0, [5e-324])[0] == pytest.approx(math.e * 5e-324)


@covers("attack_game.laplace_tradeoff")
@pytest.mark.parametrize("epsilon", [0.0, -1.0, math.nan])
def test_laplace_tradeoff_refuses_bad_epsilon(epsilon):
    with pytest.raises(ValueError, match="epsilon"):
        attack_game.laplace_tradeoff(epsilon, [0.1])


# -- rates -------------------------------------------------------------------------------------

@covers("attack_game.rates")
@FAST
@given(pairs=st.lists(st.tuples(st.booleans(), st.booleans()), min_size=0, max_size=60))
def test_rates_count_the_guesses(pairs):
    inside = [p for p, _ in pairs]
    guessed = [q for _, q in pairs]
    fpr, tpr, rounds_out, rounds_in = attack_game.rates(inside, guessed)
    n_in = sum(inside)
    n_out = len(pairs) - n_in
    assert (rounds_out, rounds_in) == (n_out, n_in)
    tp = sum(p and q for p, q in pairs)
    fp = sum((not p) and q for p, q in pairs)
    assert math.isnan(tpr) if n_in == 0 else tpr == pytest.approx(tp / n_in)
    assert math.isnan(fpr) if n_out == 0 else fpr == pytest.approx(fp / n_out)


@covers("attack_game.rates")
def test_rates_refuses_mismatched_lengths():
    with pytest.raises(ValueError, match="person_in"):
        attack_game.rates([True, False], [True])


def wilson(hits: int, rounds: int) -> tuple[float, float]:
    z = stats.norm.ppf(0.975)
    p = hits / rounds
    denom = 1 + z**2 / rounds
    centre = (p + z**2 / (2 * rounds)) / denom
    half = z / denom * math.sqrt(p * (1 - p) / rounds + z**2 / (4 * rounds**2))
    return centre - half, centre + half


@covers("attack_game.rate_interval")
@FAST
@given(data=st.data(), rounds=st.integers(1, 10**6))
def test_rate_interval_is_wilson(data, rounds):
    hits = data.draw(st.integers(0, rounds))
    low, high = attack_game.rate_interval(hits, rounds)
    share = hits / rounds
    assert 0.0 <= low and high <= 1.0
    assert low <= share + 1e-15 and share <= high + 1e-15   # rounding: see the pinned case
    lo_ref, hi_ref = wilson(hits, rounds)
    assert low == pytest.approx(max(0.0, lo_ref), abs=1e-12)
    assert high == pytest.approx(min(1.0, hi_ref), abs=1e-12)


@covers("attack_game.rate_interval")
@covers("attack_game.rate_interval")
def test_rate_interval_with_no_hits_starts_at_zero():
    """Found by the property above: with no hits the Wilson lower end rounded to 2e-19."""
    low, high = attack_game.rate_interval(0, 1075)
    assert low <= 0.0 < high


@covers("attack_game.rate_interval")
@FAST
@given(hits=st.integers(0, 100), rounds=st.integers(-100, 0))
def test_rate_interval_without_rounds_is_nan(hits, rounds):
    assert all(math.isnan(x) for x in attack_game.rate_interval(hits, rounds))


@covers("attack_game.rate_interval")
def test_rate_interval_covers_the_true_rate_about_95_percent():
    rng = np.random.default_rng(2024)
    rounds, p, trials = 200, 0.3, 2000
    hits = rng.binomial(rounds, p, size=trials)
    covered = np.mean([lo <= p <= hi for lo, hi in
                       (attack_game.rate_interval(int(h), rounds) for h in hits)])
    assert abs(covered - 0.95) < 5 * math.sqrt(0.95 * 0.05 / trials)


# -- best_rates --------------------------------------------------------------------------------

@covers("attack_game.best_rates")
@FAST
@given(mechanism=MECHANISMS, epsilon=EPSILONS, people=PEOPLE)
def test_best_rates_closed_form_on_the_exact_curve(mechanism, epsilon, people):
    g = attack_game.new_game(mechanism, epsilon, people=people)
    fpr, tpr = attack_game.best_rates(g)
    if mechanism == "randomized response":
        p = math.exp(epsilon) / (1 + math.exp(epsilon))
        expected = (1 - p, p)
    elif mechanism == "laplace":   # "in" above n − 1/2
        expected = (stats.laplace.sf(0.5, 0.0, 1 / epsilon),
                    stats.laplace.sf(0.5, 1.0, 1 / epsilon))
    else:
        expected = (stats.norm.sf(0.5, 0.0, g.scale), stats.norm.sf(0.5, 1.0, g.scale))
    assert (fpr, tpr) == pytest.approx(expected, abs=1e-12)
    # the likelihood-ratio test at threshold 1 lands on the exact curve
    on_curve = {"randomized response": pure_dp_tpr, "laplace": laplace_tpr}.get(mechanism)
    curve = (on_curve(epsilon, np.array([fpr])) if on_curve
             else gaussian_tpr(g.scale, np.array([fpr])))
    assert tpr == pytest.approx(float(curve[0]), abs=1e-9)


@covers("attack_game.best_rates", "attack_game.release", "attack_game.best_guess",
        "attack_game.rates")
@pytest.mark.parametrize("mechanism", attack_game.MECHANISMS)
@pytest.mark.parametrize("epsilon", [0.3, 1.5])
def test_best_rates_match_a_simulated_run(mechanism, epsilon):
    rounds = 20_000
    g = attack_game.new_game(mechanism, epsilon, people=7)
    rng = np.random.default_rng(777)
    inside = np.repeat([False, True], rounds)
    guess = attack_game.best_guess(g, attack_game.release(g, inside, rng=rng))
    fpr, tpr, rounds_out, rounds_in = attack_game.rates(inside, guess)
    assert (rounds_out, rounds_in) == (rounds, rounds)
    best_fpr, best_tpr = attack_game.best_rates(g)
    for seen, expected in ((fpr, best_fpr), (tpr, best_tpr)):
        bound = 5 * math.sqrt(expected * (1 - expected) / rounds) + 1e-12
        assert abs(seen - expected) < bound
