"""dpcore.intervals: closed forms, cross-checks against scipy, and coverage over 10^4 releases
per mechanism and per kind (count, sum, mean, histogram cell, simultaneous table)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import intervals
from dpcore.mechanisms import CATALOGUE, make_mechanism
from dpcore.postprocess import clip_negative, round_counts

ALPHA = 0.05
RELEASES = 10_000
# three binomial standard deviations of a coverage of 1 − alpha over RELEASES draws
MARGIN = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RELEASES)

#: One mechanism of each kind at a moderate scale (discrete noise near its law's quantile).
PARAMETERS = {
    "laplace": {"epsilon": 0.2},
    "geometric": {"epsilon": 0.2},
    "gaussian": {"epsilon": 0.5, "delta": 1e-6},
    "discrete_gaussian": {"epsilon": 0.5, "delta": 1e-6},
    "staircase": {"epsilon": 0.2},
    "bounded_laplace": {"epsilon": 0.2, "lower": 0.0, "upper": 200.0},
    "clamped_laplace": {"epsilon": 0.2, "lower": 0.0, "upper": 200.0},
}


def _mechanism(kind, sensitivity=1.0):
    return make_mechanism(kind, sensitivity=sensitivity, **PARAMETERS[kind])


def _coverage(true, lower, upper):
    return float(np.mean((lower <= true) & (true <= upper)))


def _check(label, coverage, level=1 - ALPHA, ceiling=0.995):
    print(f"coverage {label}: {coverage:.4f} (level {level:.3f})")
    assert coverage >= level - MARGIN, f"{label}: {coverage} below {level}"
    assert coverage <= ceiling, f"{label}: {coverage} far above {level}: too wide"


def test_every_catalogue_kind_has_parameters_here():
    assert set(PARAMETERS) == set(CATALOGUE)


def test_laplace_closed_form():
    mech = make_mechanism("laplace", sensitivity=2.0, epsilon=0.5)
    low, high = intervals.noise_interval(mech, 10.0, 0.05)
    half = 4.0 * math.log(1 / 0.05)  # b ln(1/alpha), b = 2 / 0.5
    assert low == pytest.approx(10 - half, rel=1e-12)
    assert high == pytest.approx(10 + half, rel=1e-12)
    # scipy's Laplace quantile: P(|Z| <= half) = 1 − alpha
    assert stats.laplace(scale=4.0).ppf(1 - 0.025) == pytest.approx(half, rel=1e-12)


def test_gaussian_closed_form_and_scipy():
    mech = make_mechanism("gaussian", sensitivity=1.0, scale=3.0)
    half = intervals.noise_half_width(mech, 0.05)
    assert half == pytest.approx(3.0 * 1.959963984540054, rel=1e-12)  # sigma z_{0.975}
    assert half == pytest.approx(stats.norm(scale=3.0).ppf(0.975), rel=1e-12)


def test_geometric_is_the_whole_quantile_of_the_two_sided_geometric():
    mech = make_mechanism("geometric", sensitivity=1.0, scale=4.0)
    half = intervals.noise_half_width(mech, 0.05)
    assert half == int(half)
    # P(|Z| > a) for Z two-sided geometric with r = e^{-1/s}: 2 r^{a+1} / (1 + r)
    r = math.exp(-1 / 4.0)

    def tail(a):
        return 2 * r ** (a + 1) / (1 + r)

    assert tail(half) <= 0.05 < tail(half - 1)
    # scipy's dlaplace has the same law
    law = stats.dlaplace(1 / 4.0)
    assert law.cdf(half) - law.cdf(-half - 1) >= 0.95 > law.cdf(half - 1) - law.cdf(-half)


def test_discrete_gaussian_is_whole_and_covers():
    mech = make_mechanism("discrete_gaussian", sensitivity=1.0, scale=5.0)
    half = intervals.noise_half_width(mech, 0.05)
    assert half == int(half)
    k = np.arange(-200, 201)
    pmf = np.exp(-k**2 / 50.0)
    pmf /= pmf.sum()
    inside = pmf[np.abs(k) <= half].sum()
    assert inside >= 0.95 > pmf[np.abs(k) <= half - 1].sum()


def test_table_simultaneous_is_bonferroni():
    mech = make_mechanism("laplace", sensitivity=1.0, scale=1.0)
    low, high = intervals.table_interval(mech, np.zeros(10), 0.05, simultaneous=True)
    np.testing.assert_allclose(high, math.log(10 / 0.05), rtol=1e-12)
    low, high = intervals.table_interval(mech, np.zeros(10), 0.05)
    np.testing.assert_allclose(high, math.log(1 / 0.05), rtol=1e-12)


def test_ratio_interval_corners_and_a_count_reaching_zero():
    low, high = intervals.ratio_interval(-4.0, 6.0, 2.0, 4.0)
    assert (low, high) == (-2.0, 3.0)
    # a count interval reaching 0: the count is at least 1, then the declared bounds
    low, high = intervals.ratio_interval(-4.0, 6.0, -3.0, 4.0, lower=-1.0, upper=5.0)
    assert (low, high) == (-1.0, 5.0)


def test_monotone_interval_clip_and_round():
    low, high = intervals.monotone_interval([-3.2, 1.4], [2.6, 7.5], clip_negative)
    np.testing.assert_array_equal(low, [0.0, 1.4])
    with pytest.raises(ValueError, match="non-decreasing"):
        intervals.monotone_interval([0.0], [1.0], lambda x: -x)


def test_clamped_laplace_at_a_bound_is_open_beyond_it():
    mech = make_mechanism("clamped_laplace", sensitivity=1.0, scale=1.0, lower=0.0, upper=10.0)
    low, high = intervals.noise_interval(mech, [0.0, 5.0, 10.0], 0.05)
    half = math.log(20)
    np.testing.assert_allclose(low, [-np.inf, 5 - half, 10 - half])
    np.testing.assert_allclose(high, [half, 5 + half, np.inf])


def test_bad_alpha_and_mechanism_are_refused():
    mech = make_mechanism("laplace", sensitivity=1.0, scale=1.0)
    with pytest.raises(ValueError, match="alpha"):
        intervals.noise_interval(mech, 1.0, 1.5)
    with pytest.raises(TypeError, match="mechanism"):
        intervals.noise_interval("laplace", 1.0)


# --------------------------------------------------------------------------------------------
# coverage over 10^4 fixed-seed releases


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(PARAMETERS))
def test_coverage_of_a_count_and_a_sum_per_mechanism(kind):
    rng = np.random.default_rng(20261127)
    mech = _mechanism(kind)
    # a count near a bound of the range, and a sum in the middle of it
    for label, true in (("count", 3.0), ("sum", 117.0)):
        noisy = mech.sample(true, rng=rng, trials=RELEASES)
        low, high = intervals.noise_interval(mech, noisy, ALPHA)
        # the bounded Laplace's interval holds for every true value: conservative
        ceiling = 0.999 if kind == "bounded_laplace" else 0.995
        _check(f"{kind} {label}", _coverage(true, low, high), ceiling=ceiling)


@pytest.mark.slow
def test_coverage_of_a_clipped_and_rounded_count():
    rng = np.random.default_rng(7)
    mech = _mechanism("laplace")
    noisy = mech.sample(2.0, rng=rng, trials=RELEASES)
    low, high = intervals.noise_interval(mech, noisy, ALPHA)
    low, high = intervals.monotone_interval(low, high, lambda x: round_counts(clip_negative(x)))
    _check("laplace count, clipped and rounded", _coverage(2.0, low, high))


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "geometric", "gaussian", "discrete_gaussian"])
def test_coverage_of_a_mean(kind):
    rng = np.random.default_rng(11)
    count_mech = _mechanism(kind)
    sum_mech = _mechanism(kind, sensitivity=10.0)
    true_count, true_sum = 400, 1800  # mean 4.5 in [0, 10]
    noisy_count = count_mech.sample(true_count, rng=rng, trials=RELEASES)
    noisy_sum = sum_mech.sample(true_sum, rng=rng, trials=RELEASES)
    low, high = intervals.mean_interval(sum_mech, noisy_sum, count_mech, noisy_count,
                                        lower=0.0, upper=10.0, alpha=ALPHA)
    # splitting alpha is conservative: coverage above 1 − alpha, by how much is printed
    _check(f"{kind} mean (alpha split)", _coverage(true_sum / true_count, low, high),
           ceiling=0.9995)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "geometric", "gaussian"])
def test_coverage_of_a_histogram_cell_and_a_simultaneous_table(kind):
    rng = np.random.default_rng(5)
    mech = _mechanism(kind)
    true = np.array([0, 3, 40, 120, 7, 0, 55, 9, 1, 18], dtype=float)
    noisy = mech.sample(true, rng=rng, trials=RELEASES)
    low, high = intervals.table_interval(mech, noisy, ALPHA)
    _check(f"{kind} histogram cell", _coverage(true[3], low[:, 3], high[:, 3]))
    held = (low <= true) & (true <= high)
    _check(f"{kind} per-cell, all cells", float(held.mean()))
    low, high = intervals.table_interval(mech, noisy, ALPHA, simultaneous=True,
                                         cells=true.size)
    every = np.all((low <= true) & (true <= high), axis=1)
    _check(f"{kind} simultaneous table", float(every.mean()))


def test_a_planted_bug_too_narrow_is_caught():
    """Half the interval's width misses far more than alpha: the coverage check would fail."""
    rng = np.random.default_rng(3)
    mech = _mechanism("laplace")
    noisy = mech.sample(10.0, rng=rng, trials=RELEASES)
    half = intervals.noise_half_width(mech, ALPHA) / 2
    assert _coverage(10.0, noisy - half, noisy + half) < 1 - ALPHA - MARGIN
