"""dpcore.intervals.variance_interval: the box's extremes by hand, and coverage over 10^4
fixed-seed releases per mechanism (the alpha split is conservative: printed, asserted >=)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpcore import intervals
from dpcore.mechanisms import make_mechanism

ALPHA = 0.05
RELEASES = 10_000
# three binomial standard deviations of a coverage of 1 − alpha over RELEASES draws
MARGIN = 3 * math.sqrt(ALPHA * (1 - ALPHA) / RELEASES)


def _laplace(scale):
    return make_mechanism("laplace", sensitivity=1.0, scale=scale)


def test_the_box_by_hand():
    # Laplace half-widths at alpha / 3 = 0.01: b·ln(100)
    t = math.log(100)
    low, high = intervals.variance_interval(_laplace(1.0), 100.0, _laplace(5.0), 50.0,
                                            _laplace(25.0), 900.0, half_width=5.0,
                                            alpha=0.03)
    n_lo, n_hi = 100 - t, 100 + t
    d_lo, d_hi = 50 - 5 * t, 50 + 5 * t
    s_lo, s_hi = 900 - 25 * t, 900 + 25 * t
    assert float(low) == pytest.approx(s_lo / n_hi - (d_hi / n_lo) ** 2, rel=1e-12)
    assert float(high) == pytest.approx(s_hi / n_lo - (d_lo / n_hi) ** 2, rel=1e-12)


def test_a_sum_of_deviations_around_zero_squares_to_zero_inside():
    """(S₁/n)² is smallest at S₁ = 0 inside the box, not at a corner (a planted bug that
    took the corners only would give a smaller upper end)."""
    t = math.log(100)
    low, high = intervals.variance_interval(_laplace(1.0), 100.0, _laplace(5.0), 3.0,
                                            _laplace(25.0), 900.0, half_width=5.0,
                                            alpha=0.03)
    assert float(high) == pytest.approx((900 + 25 * t) / (100 - t), rel=1e-12)
    d_far = 3 + 5 * t
    assert float(low) == pytest.approx((900 - 25 * t) / (100 + t) - (d_far / (100 - t)) ** 2,
                                       rel=1e-12)


def test_the_public_range_and_a_count_below_one():
    # a count interval reaching below 1: read at 1; ends clipped to [0, h²]
    low, high = intervals.variance_interval(_laplace(1.0), 0.0, _laplace(5.0), 0.0,
                                            _laplace(25.0), 10.0, half_width=2.0, alpha=0.05)
    assert float(low) == 0.0 and float(high) == 4.0
    with pytest.raises(ValueError, match="half_width"):
        intervals.variance_interval(_laplace(1.0), 1.0, _laplace(1.0), 1.0, _laplace(1.0),
                                    1.0, half_width=0.0)
    with pytest.raises(ValueError, match="alpha"):
        intervals.variance_interval(_laplace(1.0), 1.0, _laplace(1.0), 1.0, _laplace(1.0),
                                    1.0, half_width=1.0, alpha=1.0)


@pytest.mark.parametrize(("kind", "budget"), [
    ("laplace", {"epsilon": 0.3}),
    ("gaussian", {"epsilon": 0.5, "delta": 1e-6}),
])
def test_coverage_of_a_variance(kind, budget):
    rng = np.random.default_rng(2611)
    lower, upper = 0.0, 10.0
    h = (upper - lower) / 2
    values = np.clip(rng.normal(6.0, 2.0, size=300), lower, upper)
    y = values - (lower + upper) / 2
    n, s1, s2 = float(y.size), float(y.sum()), float((y * y).sum())
    true = float(np.var(values))  # the population variance of the clamped values
    mechanisms = [make_mechanism(kind, sensitivity=s, **budget) for s in (1.0, h, h * h)]
    noisy = [m.sample(v, rng=rng, trials=RELEASES) for m, v in zip(mechanisms, (n, s1, s2),
                                                                      strict=True)]
    low, high = intervals.variance_interval(mechanisms[0], noisy[0], mechanisms[1], noisy[1],
                                            mechanisms[2], noisy[2], half_width=h,
                                            alpha=ALPHA)
    coverage = float(np.mean((low <= true) & (true <= high)))
    print(f"coverage {kind} variance (alpha split, interval arithmetic): {coverage:.4f} "
          f"(level {1 - ALPHA:.3f}; mean width {float(np.mean(high - low)):.3g})")
    assert coverage >= 1 - ALPHA - MARGIN
    # every interval lies in the public range [0, h²]
    assert np.all((0.0 <= low) & (low <= high) & (high <= h * h))
