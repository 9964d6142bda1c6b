"""Tests for dpcore.measures: validation, conversions and composition, cross-checked against
OpenDP 0.16 and against the exact optimal composition of pure-DP mechanisms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from dpcore import Gaussian
from dpcore.measures import (
    ZCDP,
    ApproxDP,
    PureDP,
    advanced_composition,
    compose,
    zcdp_epsilon,
)

HYPOTHESIS = settings(max_examples=80, deadline=None)

not_positive = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0, np.float64("nan"),
                     np.float64("-inf")]),
    st.floats(max_value=0.0, allow_nan=False),
    st.integers(max_value=0),
)
not_a_probability = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf, 1.0, 1, 2.5]),
    st.floats(min_value=1.0),
    st.floats(max_value=-1e-300, allow_nan=False, allow_infinity=True),
)
not_a_number = st.one_of(st.text(max_size=4), st.booleans(), st.none(),
                         st.lists(st.floats(), max_size=2), st.just(1j), st.just(np.bool_(True)))
valid_positive = st.floats(min_value=1e-300, max_value=1e300)
valid_delta = st.floats(min_value=0.0, max_value=1.0, exclude_max=True)


@pytest.fixture(scope="module")
def dp():
    import opendp.prelude as opendp

    opendp.enable_features("contrib")
    return opendp


def _domain(dp):
    return dp.atom_domain(T=float, nan=False), dp.absolute_distance(T=float)


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


@HYPOTHESIS
@given(bad=not_positive)
def test_non_positive_or_non_finite_parameters_rejected(bad):
    with pytest.raises(ValueError, match="epsilon"):
        PureDP(bad)
    with pytest.raises(ValueError, match="rho"):
        ZCDP(bad)
    if bad == 0:  # (epsilon = 0, delta) is a valid approximate-DP guarantee
        assert ApproxDP(bad, 1e-6).epsilon == 0.0
    else:
        with pytest.raises(ValueError, match="epsilon"):
            ApproxDP(bad, 1e-6)


@HYPOTHESIS
@given(bad=not_a_probability)
def test_delta_outside_zero_one_rejected(bad):
    with pytest.raises(ValueError, match="delta"):
        ApproxDP(1.0, bad)
    with pytest.raises(ValueError, match="delta"):
        ZCDP(1.0).to_approx(bad)


@HYPOTHESIS
@given(bad=not_a_number)
def test_wrong_types_rejected(bad):
    for make in (PureDP, ZCDP, lambda v: ApproxDP(v, 1e-6), lambda v: ApproxDP(1.0, v)):
        with pytest.raises(TypeError):
            make(bad)


@HYPOTHESIS
@given(value=valid_positive, delta=valid_delta)
def test_valid_parameters_construct_as_floats(value, delta):
    assert PureDP(value).epsilon == value and type(PureDP(value).epsilon) is float
    assert ZCDP(value).rho == value
    m = ApproxDP(value, delta)
    assert (m.epsilon, m.delta) == (value, delta)


def test_measures_are_frozen_and_accept_numpy_numbers():
    m = PureDP(np.float32(0.5))
    assert m.epsilon == 0.5 and type(m.epsilon) is float
    with pytest.raises(AttributeError):
        m.epsilon = 2.0  # type: ignore[misc]
    assert ApproxDP(1, 0).delta == 0.0  # delta = 0 is allowed: pure DP written as approx


def test_zcdp_to_approx_needs_positive_delta():
    with pytest.raises(ValueError, match="delta"):
        ZCDP(0.5).to_approx(0.0)


# --------------------------------------------------------------------------------------------
# conversions
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-3, 0.5, 1.0, 7.0])
def test_pure_to_zcdp_is_half_epsilon_squared_and_matches_opendp(dp, eps):
    assert PureDP(eps).to_zcdp() == ZCDP(eps**2 / 2)
    laplace = dp.m.make_laplace(*_domain(dp), scale=1.0 / eps)
    assert PureDP(eps).to_zcdp().rho == pytest.approx(
        dp.c.make_pureDP_to_zCDP(laplace).map(1.0), rel=1e-12)


def test_to_approx_of_pure_and_approx():
    assert PureDP(1.5).to_approx(1e-6) == ApproxDP(1.5, 1e-6)
    assert PureDP(1.5).to_approx() == ApproxDP(1.5, 0.0)
    m = ApproxDP(1.0, 1e-6)
    assert m.to_approx() is m and m.to_approx(1e-5) == ApproxDP(1.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        m.to_approx(1e-7)  # cannot claim a smaller delta than the mechanism has
    assert ZCDP(0.3).to_zcdp() == ZCDP(0.3)


def _opendp_zcdp_grid(dp, seed: int, n: int):
    """(rho, delta, OpenDP's epsilon) for Gaussians of random scale and input distance."""
    rng = np.random.default_rng(seed)
    for _ in range(n):
        scale, d_in = 10 ** rng.uniform(-1, 2), 10 ** rng.uniform(-1, 1)
        delta = 10 ** rng.uniform(-12, -1)
        gaussian = dp.m.make_gaussian(*_domain(dp), scale=scale)
        epsilon = dp.c.make_zCDP_to_approxDP(gaussian).map(d_in).epsilon(delta)
        yield d_in**2 / (2 * scale**2), delta, epsilon


def test_zcdp_to_approx_matches_opendp(dp):
    """ZCDP(rho).to_approx(delta) against OpenDP's make_zCDP_to_approxDP (the CKS 2020
    conversion) on a Gaussian with rho = d_in² / (2 scale²), over a random grid."""
    positive = 0
    for rho, delta, expected in _opendp_zcdp_grid(dp, 61, 60):
        assert zcdp_epsilon(rho, delta) == pytest.approx(expected, rel=1e-9, abs=1e-12)
        approx = ZCDP(rho).to_approx(delta)
        assert approx.delta == delta
        assert approx.epsilon == pytest.approx(expected, rel=1e-9, abs=1e-12)
        positive += expected > 0
    assert positive >= 50


def test_zcdp_to_approx_when_delta_alone_covers_rho(dp):
    # rho so small that delta = 0.3 needs no epsilon at all: OpenDP says 0, and so do we
    gaussian = dp.m.make_gaussian(*_domain(dp), scale=10.0)
    assert dp.c.make_zCDP_to_approxDP(gaussian).map(1.0).epsilon(0.3) == 0.0
    assert zcdp_epsilon(0.005, 0.3) == 0.0
    assert ZCDP(0.005).to_approx(0.3) == ApproxDP(0.0, 0.3)


# --------------------------------------------------------------------------------------------
# composition
# --------------------------------------------------------------------------------------------


def test_compose_matches_opendp_basic_composition(dp):
    domain = _domain(dp)
    scales = [2.0, 0.5, 3.0]
    laplaces = dp.c.make_composition([dp.m.make_laplace(*domain, scale=s) for s in scales])
    assert compose(*(PureDP(1 / s) for s in scales)).epsilon == pytest.approx(
        laplaces.map(1.0), rel=1e-12)
    gaussians = dp.c.make_composition([dp.m.make_gaussian(*domain, scale=s) for s in scales])
    assert compose(*(ZCDP(1 / (2 * s * s)) for s in scales)).rho == pytest.approx(
        gaussians.map(1.0), rel=1e-12)


def test_compose_approx_adds_both_parameters_and_checks_kinds():
    total = compose(ApproxDP(0.5, 1e-6), ApproxDP(0.25, 2e-6), ApproxDP(1.0, 0.0))
    assert total.epsilon == pytest.approx(1.75) and total.delta == pytest.approx(3e-6)
    assert compose(PureDP(0.3)) == PureDP(0.3)
    with pytest.raises(ValueError, match="delta"):
        compose(ApproxDP(1.0, 0.6), ApproxDP(1.0, 0.5))
    with pytest.raises(TypeError, match="one kind"):
        compose(PureDP(1.0), ZCDP(0.5))
    with pytest.raises(TypeError):
        compose(1.0, 2.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one"):
        compose()


def optimal_pure_composition_delta(eps: float, k: int, eps_total: float) -> float:
    """Exact smallest delta for k-fold composition of eps-DP mechanisms at eps_total.

    Randomised response is the worst case (Kairouz, Oh & Viswanath 2015): with T ~ Bin(k, p),
    p = e^eps/(1+e^eps), truthful answers, the privacy loss is eps(2T − k) and
    delta = E[(1 − e^{eps_total − loss})₊].
    """
    t = np.arange(k + 1)
    loss = eps * (2 * t - k)
    weights = stats.binom.pmf(t, k, math.exp(eps) / (1 + math.exp(eps)))
    return float(np.sum(weights * -np.expm1(np.minimum(eps_total - loss, 0.0))))


def test_advanced_composition_formula_and_soundness():
    """The formula as written by Dwork & Roth (Thm 3.20), and never below the exact optimal
    composition: the advanced bound's delta' must cover the true privacy profile."""
    rng = np.random.default_rng(71)
    for _ in range(40):
        eps, k = 10 ** rng.uniform(-3, 0), int(rng.integers(2, 400))
        delta_prime = 10 ** rng.uniform(-10, -2)
        got = advanced_composition(PureDP(eps), k, delta_prime)
        expected = eps * math.sqrt(2 * k * math.log(1 / delta_prime)) + k * eps * (
            math.exp(eps) - 1)
        assert got.epsilon == pytest.approx(expected, rel=1e-12)
        assert got.delta == pytest.approx(delta_prime, rel=1e-15)
        assert optimal_pure_composition_delta(eps, k, got.epsilon) <= delta_prime
    # power: dropping the factor 2 under the square root is unsound, and the check sees it
    eps, k, delta_prime = 0.05, 300, 1e-6
    wrong = eps * math.sqrt(k * math.log(1 / delta_prime)) + k * eps * math.expm1(eps)
    assert optimal_pure_composition_delta(eps, k, wrong) > delta_prime


def test_advanced_composition_of_approx_and_its_validation():
    got = advanced_composition(ApproxDP(0.1, 1e-7), 50, 1e-6)
    assert got.delta == pytest.approx(50 * 1e-7 + 1e-6)
    # OpenDP 0.16 has only basic composition (make_composition and the adaptive/sequential
    # compositors sum epsilons), so the exact KOV profile above is the independent check.
    assert got.epsilon < compose(*[PureDP(0.1)] * 50).epsilon * 2
    with pytest.raises(ValueError, match="delta"):
        advanced_composition(ApproxDP(0.1, 0.1), 10, 1e-6)
    with pytest.raises(ValueError, match="k"):
        advanced_composition(PureDP(0.1), 0, 1e-6)
    with pytest.raises(TypeError, match="k"):
        advanced_composition(PureDP(0.1), 2.5, 1e-6)
    with pytest.raises(ValueError, match="delta_prime"):
        advanced_composition(PureDP(0.1), 3, 0.0)
    with pytest.raises(TypeError, match="measure"):
        advanced_composition(ZCDP(0.1), 3, 1e-6)


# --------------------------------------------------------------------------------------------
# the Gaussian mechanism's privacy against OpenDP
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scale, sens", [(0.3, 1.0), (2.0, 1.0), (5.0, 3.0), (40.0, 0.5)])
def test_gaussian_privacy_consistent_with_opendp(dp, scale, sens):
    ours = Gaussian(sensitivity=sens, scale=scale)
    gaussian = dp.m.make_gaussian(*_domain(dp), scale=scale)
    assert ours.privacy.rho == pytest.approx(gaussian.map(sens), rel=1e-12)
    profile = dp.c.make_zCDP_to_approxDP(gaussian).map(sens)
    for delta in (1e-10, 1e-6, 1e-3):
        via_zcdp = profile.epsilon(delta)
        assert ours.privacy.to_approx(delta).epsilon == pytest.approx(via_zcdp, rel=1e-9,
                                                                      abs=1e-12)
        # the exact analytic profile is never worse than the zCDP route (which is a bound)
        assert ours.epsilon_for_delta(delta) <= via_zcdp * (1 + 1e-12)


def test_gaussian_built_from_epsilon_delta_is_no_better_through_zcdp():
    mech = Gaussian(sensitivity=1.0, epsilon=0.9, delta=1e-6)
    assert mech.privacy == ApproxDP(0.9, 1e-6)
    assert mech.zcdp.to_approx(1e-6).epsilon >= 0.9


def test_split_budget_never_adds_up_to_more_than_the_total():
    from fractions import Fraction

    from dpcore.measures import split_budget

    rng = np.random.default_rng(41)
    lowered = 0
    for _ in range(4000):
        total, share = 10 ** rng.uniform(-6, 2), float(rng.choice([0.1, 0.2, 0.3, 0.5, 0.7]))
        first, rest = split_budget(total, share)
        assert Fraction(first) + Fraction(rest) <= Fraction(total)
        assert first == total * share and rest >= math.nextafter(total - first, 0.0)
        lowered += rest < total - first
    assert lowered > 100  # the plain split overspends by a fraction of an ulp that often
    for share in (0.0, 1.0, -0.5, float("nan")):
        with pytest.raises(ValueError, match="share"):
            split_budget(1.0, share)
    with pytest.raises(ValueError, match="total"):
        split_budget(float("inf"), 0.5)


def test_describe_rounds_every_loss_up():
    """What a user reads is never less than the loss: 4.254084… once read "4.254", a δ of
    1.2345e-07 "1.23e-07" and ρ = 11.045 (a float just below it) "11.04"."""
    import re
    from decimal import Decimal

    def shown(text: str, symbol: str) -> Decimal:
        return Decimal(re.search(rf"{symbol} = ([\d.e+-]+)", text)[1])

    assert shown(PureDP(4.254084650221792).describe(), "ε") >= Decimal("4.254084650221792")
    approx = ApproxDP(0.6931471805599453, 1.2345e-07).describe()
    assert shown(approx, "ε") >= Decimal("0.6931471805599453")
    assert shown(approx, "δ") >= Decimal("1.2345e-07")
    assert shown(ZCDP(11.045).describe(), "ρ") >= Decimal("11.045")
    assert PureDP(0.5).describe() == "ε = 0.5 (pure DP)"
