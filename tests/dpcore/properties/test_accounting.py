"""Property tests of dpcore.accounting, dpcore.plan_risk and dpcore.allocation: a plan's
accounting, its risk and its budget split.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore import accounting, allocation, plan_risk
from dpcore.accounting import Loss, NoiseLoss, PlanAccounting, ThresholdLoss
from dpcore.mechanisms import CATALOGUE, make_mechanism
from dpcore.partition import PARTITION_NOISES
from tests.dpcore.properties.oracle import (
    MEASURE_WORDS,
    PROPERTY,
    Arg,
    as_real,
    attempt,
    choices,
    counts,
    covers,
    flags,
    judge,
    measure_args,
    positive,
    probability,
    score_vectors,
    scores_arg,
    tagged,
)

# Plans and targets cost a PLD each (tens of milliseconds): fewer examples than the others.
HEAVY = settings(PROPERTY, max_examples=60)

#: Every catalogue kind's sample mechanisms, built once.
MECHANISMS = [make_mechanism(kind, **params) for kind, spec in CATALOGUE.items()
              for params in spec.sample_parameters]


def noise_loss_args() -> st.SearchStrategy[Arg]:
    def build(noise, scale, sens):
        try:
            return NoiseLoss(noise, scale, sens)
        except ValueError:
            return None

    nice = st.builds(build, st.sampled_from(accounting.NOISES), st.floats(0.3, 20.0),
                     st.integers(1, 4)).filter(lambda x: x is not None)
    extreme = st.builds(build, st.sampled_from(accounting.NOISES),
                        st.sampled_from([1e-100, 1e-9, 1e9, 1e12]),
                        st.sampled_from([1.0, 1e6])).filter(lambda x: x is not None)
    return tagged(nice, extreme, None)


def release_args() -> st.SearchStrategy[Arg]:
    return st.one_of(
        st.sampled_from(MECHANISMS).map(lambda m: Arg(m, "nice")),
        measure_args(),
        noise_loss_args(),
        tagged(st.floats(1e-12, 1e-7).map(ThresholdLoss), None, None),
    )


@st.composite
def plans(draw) -> Arg:
    """A list of releases, tagged by its worst element; or junk instead of a list."""
    if draw(st.integers(0, 19)) == 0:
        return Arg(draw(st.sampled_from([None, "laplace", 3.0, {"a": 1}])), "bad")
    items = draw(st.lists(release_args(), max_size=5))
    tags = {a.tag for a in items}
    tag = "bad" if "bad" in tags else "extreme" if "extreme" in tags else "nice"
    return Arg([a.value for a in items], tag)


PLAN_WORDS = {"releases": ("epsilon", "rho", "delta", "sensitivity", "scale", "measures")}


def pld_delta() -> st.SearchStrategy[Arg]:
    """δ for the PLD: (1e-9, 0.5) nice; below MIN_PLD_DELTA extreme."""
    return tagged(st.floats(1e-9, 0.5), st.sampled_from([5e-324, 1e-300, 1e-13, 0.999999]),
                  st.sampled_from([0.0, 1.0, -1e-3, math.nan, None, "1e-6"]))


@pytest.mark.slow
@covers("accounting.NoiseLoss", "accounting.NoiseLoss.epsilon", "accounting.NoiseLoss.rho",
        "accounting.NoiseLoss.epsilon_for_delta", "accounting.ThresholdLoss")
@PROPERTY
@given(noise=choices(accounting.NOISES), scale=positive(), sensitivity=positive(),
       delta=probability(zero_ok=False))
def test_noise_loss(noise, scale, sensitivity, delta):
    sens = as_real(sensitivity.value)
    if (noise.tag == "nice" and noise.value.startswith("discrete") and sensitivity.tag == "nice"
            and not float(sens).is_integer()):
        sensitivity = Arg(sensitivity.value, "bad")
    loss = judge(lambda: NoiseLoss(noise.value, scale.value, sensitivity.value),
                 {"noise": noise, "scale": scale, "sensitivity": sensitivity})
    if loss is not None:
        assert loss.rho > 0 and math.isfinite(loss.rho) or loss.rho == math.inf
        eps = judge(lambda: loss.epsilon_for_delta(delta.value), {"delta": delta,
                                                                  "scale": scale})
        if eps is not None:
            assert eps >= 0
            if loss.epsilon is not None:
                assert eps == loss.epsilon
    threshold = judge(lambda: ThresholdLoss(delta.value), {"delta": delta})
    assert threshold is None or 0 <= threshold.delta < 1


@covers("accounting.Loss", "accounting.Loss.of", "accounting.Loss.measures",
        "accounting.Loss.to_dict")
@PROPERTY
@given(measure=measure_args())
def test_planned_loss(measure):
    loss = judge(lambda: Loss.of(measure.value), {"measure": measure}, MEASURE_WORDS)
    if loss is None:
        return
    parts = loss.measures()
    # the same ε (or ρ) and δ, split into what the accountants compose
    assert all(isinstance(x, (ThresholdLoss, *accounting._MEASURES)) for x in parts)
    assert math.fsum(getattr(x, "delta", 0.0) for x in parts) == loss.delta
    if loss.rho is not None:
        assert parts[0] == measure.value
    else:
        assert math.fsum(getattr(x, "epsilon", 0.0) for x in parts) == loss.epsilon
    assert set(loss.to_dict()) <= {"epsilon", "rho", "delta", "rho_read_at_delta"}
    assert accounting.privacy_losses([loss]) == parts


@covers("accounting.privacy_losses", "accounting.compose_pld", "accounting.account",
        "accounting.account_plan", "accounting.PlanAccounting", "accounting.PlanAccounting.of",
        "accounting.PlanAccounting.tightest", "accounting.PlanAccounting.saving",
        "accounting.AccountedTotal")
@HEAVY
@given(releases=plans(), delta=pld_delta())
def test_plan_accounting(releases, delta):
    args = {"releases": releases, "delta": delta}
    losses = judge(lambda: accounting.privacy_losses(releases.value),
                   {"releases": releases}, PLAN_WORDS)
    if losses is not None:
        assert all(isinstance(x, (NoiseLoss, ThresholdLoss, *accounting._MEASURES))
                   for x in losses)
    totals = judge(lambda: accounting.account_plan(releases.value, delta=delta.value), args,
                   PLAN_WORDS)
    if totals is None:
        return
    assert isinstance(totals, PlanAccounting)
    for name in accounting.ACCOUNTANTS:
        total = totals.of(name)
        assert total.accountant == name and (total.epsilon >= 0)
        assert (total.note == "") == math.isfinite(total.epsilon) or name != "pld"
    assert totals.tightest.epsilon == min(totals.of(n).epsilon for n in accounting.ACCOUNTANTS)
    if math.isfinite(totals.basic.epsilon):
        assert totals.pld.epsilon <= totals.basic.epsilon + 1e-9 * (1 + totals.basic.epsilon)
        assert math.isnan(totals.saving()) or totals.saving() >= -1e-9
    eps = accounting.compose_pld(releases.value, delta=delta.value)
    assert eps == totals.pld.epsilon


@covers("accounting.check_budget", "accounting.BudgetCheck")
@HEAVY
@given(releases=plans(), epsilon=positive(), delta=pld_delta(),
       accountant=choices(accounting.ACCOUNTANTS))
def test_check_budget(releases, epsilon, delta, accountant):
    if accountant.value != "pld" and delta.tag == "extreme" and delta.value > 1e-300:
        delta = Arg(delta.value, "nice")  # only the PLD refuses δ below 1e-12
    result = judge(lambda: accounting.check_budget(releases.value, epsilon=epsilon.value,
                                                   delta=delta.value,
                                                   accountant=accountant.value),
                   {"releases": releases, "epsilon": epsilon, "delta": delta,
                    "accountant": accountant}, PLAN_WORDS)
    if result is not None:
        assert result.fits == (result.spent <= as_real(epsilon.value))
        assert (result.reason == "") == result.fits


@covers("accounting.partition_losses")
@HEAVY
@given(noise=choices(PARTITION_NOISES), scale=positive(0.5, 20),
       threshold=tagged(st.floats(60.0, 500.0), None,
                        st.sampled_from([math.nan, math.inf, None, "40", 10**400])),
       max_rows=counts(1, 3), max_groups=counts(1, 3))
def test_partition_losses(noise, scale, threshold, max_rows, max_groups):
    if scale.tag != "nice":  # a huge scale needs a higher threshold: a different property
        scale = Arg(2.0, "nice")
    args = {"noise": noise, "scale": scale, "threshold": threshold, "max_rows": max_rows,
            "max_groups": max_groups}
    out = judge(lambda: accounting.partition_losses(
        noise=noise.value, scale=scale.value, threshold=threshold.value,
        max_rows=max_rows.value, max_groups=max_groups.value), args)
    if out is not None:
        noise_loss, threshold_loss = out
        assert noise_loss.noise == noise.value and 0 <= threshold_loss.delta < 1


@pytest.mark.slow
@covers("plan_risk.plan_gaussian_mu", "plan_risk.plan_tradeoff", "plan_risk.plan_loss_tail",
        "plan_risk.plan_max_posterior", "plan_risk.describe_plan_risk")
@HEAVY
@given(releases=plans(),
       fpr=tagged(st.floats(0.0, 1.0), None, st.sampled_from([-0.1, 1.5, math.nan, None, "0.5"])),
       prior=probability(zero_ok=False, nice_hi=0.99), failure=pld_delta())
def test_plan_risk(releases, fpr, prior, failure):
    mu = judge(lambda: plan_risk.plan_gaussian_mu(releases.value), {"releases": releases},
               PLAN_WORDS)
    assert mu is None or mu > 0
    tpr = judge(lambda: plan_risk.plan_tradeoff(releases.value, fpr.value),
                {"releases": releases, "fpr": fpr}, {**PLAN_WORDS, "fpr": ("fpr",)})
    if tpr is not None:
        assert as_real(fpr.value) - 1e-12 <= tpr <= 1.0
    tail = judge(lambda: plan_risk.plan_loss_tail(releases.value, failure=failure.value),
                 {"releases": releases, "failure": failure}, PLAN_WORDS)
    if tail is not None:
        s, f = tail
        assert s >= 0 and 0 <= f <= as_real(failure.value)
    bound = judge(lambda: plan_risk.plan_max_posterior(releases.value, prior.value,
                                                       failure=failure.value),
                  {"releases": releases, "prior": prior, "failure": failure}, PLAN_WORDS)
    if bound is not None:
        assert as_real(prior.value) <= bound.posterior <= 1.0
    text = judge(lambda: plan_risk.describe_plan_risk(releases.value, prior.value,
                                                      failure=failure.value),
                 {"releases": releases, "prior": prior, "failure": failure}, PLAN_WORDS)
    assert text is None or (text.startswith("After the whole plan") and "nan" not in text)


# --- allocation ------------------------------------------------------------------------------

TARGETS = [
    allocation.AccuracyTarget("laplace", 1.0, 5.0, 0.05),
    allocation.AccuracyTarget("gaussian", 2.0, 10.0, 0.1, options={"delta": 1e-6}),
    allocation.AccuracyTarget("clamped_laplace", 1.0, 3.0, 0.05, true_value=5.0,
                              options={"lower": 0.0, "upper": 10.0}),
    allocation.SelectionTarget((3.0, 1.0, 0.0), "gumbel", 0.8),
    allocation.QuantileTarget(tuple(np.linspace(0, 10, 50)), tuple(np.linspace(0, 10, 11)),
                              0.5, 6.0, 0.8),
]


@covers("allocation.AccuracyTarget")
@PROPERTY
@given(mechanism=choices(("laplace", "geometric", "staircase")), sensitivity=positive(),
       alpha=positive(), beta=probability(zero_ok=False))
def test_accuracy_target(mechanism, sensitivity, alpha, beta):
    sens = as_real(sensitivity.value)
    if (mechanism.tag == "nice" and mechanism.value == "geometric" and sensitivity.tag == "nice"
            and not float(sens).is_integer()):
        sensitivity = Arg(sensitivity.value, "bad")
    target = judge(lambda: allocation.AccuracyTarget(mechanism.value, sensitivity.value,
                                                     alpha.value, beta.value),
                   {"mechanism": mechanism, "sensitivity": sensitivity, "alpha": alpha,
                    "beta": beta})
    assert target is None or target.alpha > 0


@pytest.mark.slow
@covers("allocation.SelectionTarget")
@PROPERTY
@given(scores=score_vectors(), noise=choices(("laplace", "exponential", "gumbel")),
       probability_=probability(zero_ok=False, nice_hi=0.99), sensitivity=positive(),
       monotonic=flags(), negate=flags())
def test_selection_target(scores, noise, probability_, sensitivity, monotonic, negate):
    args = {**scores_arg(scores), "noise": noise, "probability": probability_,
            "sensitivity": sensitivity, "monotonic": monotonic, "negate": negate}
    target = judge(lambda: allocation.SelectionTarget(
        scores, noise.value, probability_.value, sensitivity.value, monotonic.value,
        negate.value), args)
    assert target is None or len(target.scores) >= 1


@covers("allocation.QuantileTarget")
@PROPERTY
@given(q=tagged(st.floats(0.0, 1.0), None, st.sampled_from([-0.1, 1.5, math.nan, None, "0.5"])),
       rank_error=positive(1.0, 50.0),
       probability_=probability(zero_ok=False, nice_hi=0.99), max_rows=counts(1, 3))
def test_quantile_target(q, rank_error, probability_, max_rows):
    values, candidates = tuple(np.linspace(0, 10, 30)), tuple(np.linspace(-1, 11, 25))
    target, error = attempt(lambda: allocation.QuantileTarget(
        values, candidates, q.value, rank_error.value, probability_.value, max_rows.value))
    bad = [n for n, a in (("q", q), ("rank_error", rank_error), ("probability", probability_),
                          ("max_rows", max_rows)) if a.tag == "bad"]
    if bad:
        assert error is not None
    elif error is not None:  # a rank error the grid cannot reach is refused, naming it
        assert "rank_error" in str(error) or rank_error.tag == "extreme" or q.tag == "extreme"
    else:
        assert target.rank_error >= 0


def epsilon_args() -> st.SearchStrategy[Arg]:
    return tagged(st.floats(1e-3, 50.0), st.sampled_from([1e-4, 1e3]),
                  st.sampled_from([0.0, -1.0, 1e-5, 2e3, math.nan, math.inf, None, "1"]))


@pytest.mark.slow
@covers("allocation.target_release", "allocation.target_ratio",
        "allocation.smallest_target_epsilon")
@PROPERTY
@given(target=st.sampled_from(TARGETS), epsilon=epsilon_args(),
       relax=tagged(st.floats(0.2, 5.0), st.sampled_from([1e-3, 1e3]),
                    st.sampled_from([0.0, -1.0, 1e-4, 1e4, math.nan, None])))
def test_target_functions(target, epsilon, relax):
    release = judge(lambda: allocation.target_release(target, epsilon.value),
                    {"epsilon": epsilon})
    assert release is not None or epsilon.tag == "bad"
    ratio = judge(lambda: allocation.target_ratio(target, epsilon.value), {"epsilon": epsilon})
    assert ratio is None or ratio > 0
    eps = judge(lambda: allocation.smallest_target_epsilon(target, relax=relax.value),
                {"relax": relax})
    if eps is not None:
        assert allocation.target_ratio(target, eps) >= 1 / as_real(relax.value) * (1 - 1e-6)


@pytest.mark.slow
@covers("allocation.allocate", "allocation.allocate_budget", "allocation.Allocation",
        "allocation.Allocation.worst_ratio", "allocation.Allocation.even_worst_ratio")
@settings(PROPERTY, max_examples=25)
@given(targets=st.lists(st.sampled_from(TARGETS), min_size=1, max_size=3),
       accountant=choices(accounting.ACCOUNTANTS), delta=pld_delta(),
       budget=tagged(st.floats(0.5, 20.0), st.sampled_from([1e-300, 1e300]),
                     st.sampled_from([0.0, -1.0, math.nan, None])))
def test_allocate(targets, accountant, delta, budget):
    if accountant.value != "pld" and delta.tag == "extreme" and delta.value > 1e-300:
        delta = Arg(delta.value, "nice")
    split = judge(lambda: allocation.allocate(targets, accountant=accountant.value,
                                              delta=delta.value),
                  {"accountant": accountant, "delta": delta})
    if split is not None:
        assert split.worst_ratio >= 1 - 1e-9 and split.total <= split.even_total + 1e-9
        assert split.even_worst_ratio >= 1 - 1e-9
    dual = judge(lambda: allocation.allocate_budget(
        targets, accountant=accountant.value, epsilon=budget.value, delta=delta.value),
        {"accountant": accountant, "delta": delta, "epsilon": budget})
    if dual is not None:
        assert dual.total <= as_real(budget.value)
        assert dual.worst_ratio >= dual.even_worst_ratio * (1 - 1e-3)


@covers("accounting.noise_law")
@PROPERTY
@given(noise=st.sampled_from([None, *accounting.NOISES]), scale=st.floats(1e-3, 1e3),
       sensitivity=st.floats(0.1, 10.0), implied=st.sampled_from([None, "epsilon", "rho"]),
       loss=st.floats(1e-3, 10.0), vector=st.booleans())
def test_noise_law(noise, scale, sensitivity, implied, loss, vector):
    """A law is never read at a distance below the one given or the one its certificate
    implies (ε·scale for Laplace, √(2ρ)·scale for Gaussian), and a law a PLD cannot represent
    exactly is left out: no noise, a whole-number noise at a fractional distance, a discrete
    Gaussian on a vector."""
    epsilon = loss if implied == "epsilon" else None
    rho = loss if implied == "rho" else None
    laws = accounting.noise_law(noise, scale, sensitivity, vector=vector, epsilon=epsilon,
                                rho=rho)
    discrete = noise is not None and noise.startswith("discrete")
    if noise is None or (vector and noise == "discrete_gaussian") or (
            discrete and not sensitivity.is_integer()):
        assert laws == ()
        return
    assert len(laws) <= 1
    for law in laws:
        assert isinstance(law, NoiseLoss)
        assert law.noise == noise and law.scale == scale
        assert law.sensitivity >= sensitivity
        if not discrete:
            floor = (epsilon * scale if epsilon is not None
                     else math.sqrt(2 * rho) * scale if rho is not None else 0.0)
            assert law.sensitivity >= floor
