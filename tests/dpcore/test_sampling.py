"""Tests for dpcore.sampling: each fast sampler against its closed-form law (KS or chi-square
with fixed seeds, power stated), against numpy's own sampler, and at its boundary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpcore import checks
from dpcore.sampling import (
    fill_gaussian,
    fill_laplace,
    fill_two_sided_geometric,
    standard_exponential,
    standard_gumbel,
    standard_laplace,
)

N = 400_000
# A correct sampler fails a test at p < P_MIN with probability ~1e-3 per seed: never for the
# fixed seeds here. With 4·10^5 draws the KS statistic's critical value at 1e-3 is ~0.003.
P_MIN = 1e-3


def _filled(fill, n=N, dtype=np.float64, **kwargs):
    out = np.empty(n, dtype=dtype)
    fill(out, **kwargs)
    return out


def discrete_laplace_pmf(k: np.ndarray, scale: float) -> np.ndarray:
    r = math.exp(-1 / scale)
    return (1 - r) / (1 + r) * np.exp(-np.abs(k) / scale)


@pytest.mark.slow
@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (0.03, 5.0), (250.0, -1e3)])
def test_laplace_is_laplace(scale, shift):
    draws = _filled(fill_laplace, scale=scale, shift=shift, rng=np.random.default_rng(1))
    law = stats.laplace(loc=shift, scale=scale)
    assert stats.kstest(draws, law.cdf).pvalue > P_MIN
    # the sign is a fair coin, independent of the size: |X − shift| is Exp(scale) either side
    below = draws < shift
    assert stats.binomtest(int(below.sum()), N, 0.5).pvalue > P_MIN
    for side in (below, ~below):
        size = np.abs(draws[side] - shift)
        assert stats.kstest(size, stats.expon(scale=scale).cdf).pvalue > P_MIN
    # power: a 5% error in the scale is rejected (KS distance ~0.009 against 0.003)
    assert stats.kstest(draws, stats.laplace(loc=shift, scale=1.05 * scale).cdf).pvalue < 1e-10


def test_laplace_has_numpys_law():
    ours = standard_laplace(N, rng=np.random.default_rng(2))
    theirs = np.random.default_rng(3).laplace(0.0, 1.0, N)
    assert stats.ks_2samp(ours, theirs).pvalue > P_MIN
    assert ours.shape == (N,) and ours.dtype == np.float64


@pytest.mark.slow
def test_gumbel_is_gumbel_and_has_numpys_law():
    draws = standard_gumbel((400, 1000), rng=np.random.default_rng(4)).ravel()
    assert np.all(np.isfinite(draws))
    assert stats.kstest(draws, stats.gumbel_r.cdf).pvalue > P_MIN
    theirs = np.random.default_rng(5).gumbel(0.0, 1.0, N)
    assert stats.ks_2samp(draws, theirs).pvalue > P_MIN
    # power: a Gumbel of scale 1.05 is rejected
    assert stats.kstest(draws, stats.gumbel_r(scale=1.05).cdf).pvalue < 1e-10


def test_exponential_is_exponential():
    draws = standard_exponential(N, rng=np.random.default_rng(6))
    assert stats.kstest(draws, stats.expon.cdf).pvalue > P_MIN
    assert stats.kstest(draws, stats.expon(scale=1.05).cdf).pvalue < 1e-10


@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (0.05, 3.0), (30.0, -2.0)])
def test_gaussian_is_gaussian(scale, shift):
    draws = _filled(fill_gaussian, scale=scale, shift=shift, rng=np.random.default_rng(7))
    assert stats.kstest(draws, stats.norm(loc=shift, scale=scale).cdf).pvalue > P_MIN
    assert stats.kstest(draws, stats.norm(loc=shift, scale=1.05 * scale).cdf).pvalue < 1e-10


def _chi_square_p(noise: np.ndarray, scale: float) -> float:
    """Pearson's chi-square of integer noise against the discrete Laplace PMF, on the values
    expected at least 30 times (the rest pooled)."""
    top = max(1, int(scale * math.log(N / 30 * (1 - math.exp(-1 / scale)))))
    k = np.arange(-top, top + 1)
    observed = np.bincount(np.clip(noise, -top - 1, top + 1) + top + 1, minlength=2 * top + 3)
    inner = discrete_laplace_pmf(k, scale)
    expected = np.concatenate([[(1 - inner.sum()) / 2], inner, [(1 - inner.sum()) / 2]]) * N
    keep = expected > 0
    return stats.chisquare(observed[keep], expected[keep]).pvalue


@pytest.mark.parametrize("scale", [0.3, 2.5, 40.0])
def test_two_sided_geometric_is_the_discrete_laplace(scale):
    noise = _filled(fill_two_sided_geometric, dtype=np.int64, scale=scale,
                    rng=np.random.default_rng(8))
    assert _chi_square_p(noise, scale) > P_MIN
    # power: the law of a scale 5% too small is rejected
    rng = np.random.default_rng(9)
    p = -math.expm1(-1 / (0.95 * scale))
    wrong = rng.geometric(p, N) - rng.geometric(p, N)
    assert _chi_square_p(wrong, scale) < 1e-10
    # and numpy's own construction has the same law
    p = -math.expm1(-1 / scale)
    theirs = rng.geometric(p, N) - rng.geometric(p, N)
    assert _chi_square_p(theirs, scale) > P_MIN


def test_two_sided_geometric_shift_is_exact_in_int64():
    out = _filled(fill_two_sided_geometric, n=1000, dtype=np.int64, scale=2.0, shift=2**62,
                  rng=np.random.default_rng(10))
    noise = out - 2**62
    assert np.abs(noise).max() < 100 and noise.std() > 1  # noise kept, no float rounding
    assert fill_two_sided_geometric(np.empty(0, dtype=np.int64), scale=1.0,
                                    rng=np.random.default_rng(0)).size == 0


def test_small_blocks_keep_the_law(monkeypatch):
    monkeypatch.setattr(checks, "MAX_BLOCK_ELEMENTS", 100)
    draws = _filled(fill_laplace, n=200_000, scale=2.0, rng=np.random.default_rng(11))
    assert stats.kstest(draws, stats.laplace(scale=2.0).cdf).pvalue > P_MIN
    noise = _filled(fill_two_sided_geometric, n=200_000, dtype=np.int64, scale=2.0,
                    rng=np.random.default_rng(12))
    assert stats.ks_2samp(noise, _filled(fill_two_sided_geometric, n=200_000,
                                         dtype=np.int64, scale=2.0,
                                         rng=np.random.default_rng(13))).pvalue > P_MIN


def test_validation_names_the_parameter():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="out"):
        fill_laplace(np.empty((2, 2)), scale=1.0, rng=rng)
    with pytest.raises(ValueError, match="out"):
        fill_laplace(np.empty(3, dtype=np.float32), scale=1.0, rng=rng)
    with pytest.raises(ValueError, match="out"):
        fill_two_sided_geometric(np.empty(3), scale=1.0, rng=rng)
    with pytest.raises(TypeError, match="out"):
        fill_gaussian([0.0, 0.0], scale=1.0, rng=rng)
    for bad in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="scale"):
            fill_laplace(np.empty(3), scale=bad, rng=rng)
    with pytest.raises(ValueError, match="scale"):
        fill_two_sided_geometric(np.empty(3, dtype=np.int64), scale=2.0**43, rng=rng)
    with pytest.raises(ValueError, match="shift"):
        fill_gaussian(np.empty(3), scale=1.0, shift=math.nan, rng=rng)
    with pytest.raises(TypeError, match="shift"):
        fill_two_sided_geometric(np.empty(3, dtype=np.int64), scale=1.0, shift=0.5, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        standard_gumbel(3, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="size"):
        standard_laplace(-1, rng=rng)
    with pytest.raises(TypeError, match="size"):
        standard_exponential(2.5, rng=rng)
