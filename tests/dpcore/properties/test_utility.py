"""Property tests of dpcore.utility: error and selection sweeps, the smallest epsilon.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpcore import checks, selection, utility
from dpcore.mechanisms import CATALOGUE, make_mechanism
from tests.dpcore.properties.oracle import (
    HUGE,
    INF,
    NAN,
    OVER_BUDGET_TRIALS,
    PROPERTY,
    TINY,
    Arg,
    any_arrays,
    array_tag,
    as_real,
    assert_finite,
    attempt,
    bounded_time,
    choices,
    counts,
    covers,
    epsilon_grids,
    finite,
    flags,
    grid_tag,
    judge,
    k_arg,
    names,
    numeric_or_none,
    positive,
    probability,
    refused,
    rngs,
    run_regression,
    score_vectors,
    scores_arg,
    tagged,
)


def sweep_trials() -> st.SearchStrategy[Arg]:
    return tagged(st.integers(1, 30), None,
                  st.sampled_from([0, -1, 2.0, NAN, True, None, "5", *OVER_BUDGET_TRIALS]))



def _spec_of_kind(kind: Arg):
    """The spec a kind argument names (Laplace's for an invalid kind: the rest of the
    setting is drawn as if for Laplace, and the kind is what gets refused)."""
    return CATALOGUE[kind.value if kind.tag == "nice" else "laplace"]


@st.composite
def mechanism_settings(draw, kinds=tuple(CATALOGUE)):
    """A mechanism kind with its options, mostly as its spec needs them; each option's Arg
    says whether it is missing (required), superfluous or invalid."""
    kind = draw(choices(kinds))
    spec = _spec_of_kind(kind)
    needs = {n for n in spec.epsilon_budget() if n != "epsilon"}
    if spec.needs_range:
        needs |= {"lower", "upper", "true_value"}
    allowed = needs | {"true_value"} | (set(spec.parameters) - {"epsilon", "rho", "scale"})
    lower = draw(tagged(st.floats(-100, 0), st.sampled_from([-1e300, -TINY]),
                        st.sampled_from([NAN, INF, "0"])))
    upper = draw(tagged(st.floats(1, 100), st.sampled_from([1e300, HUGE]),
                        st.sampled_from([NAN, -INF, None])))
    truth = draw(tagged(st.floats(0, 1), st.sampled_from([0.0, -5.0, 1e3]),
                        st.sampled_from([NAN, [1.0, 2.0], "x"])))
    delta = draw(probability(zero_ok="pure" in spec.budgets))
    gamma = draw(tagged(st.floats(0, 1), None, st.sampled_from([-0.5, 1.5, NAN, "x"])))
    options, args = {}, {"kind": kind}
    for name, arg in (("lower", lower), ("upper", upper), ("true_value", truth),
                      ("delta", delta), ("gamma", gamma)):
        # needed: nearly always given; allowed: half the time; not applicable: rarely
        chance = 9 if name in needs else 5 if name in allowed else 1
        present = draw(st.integers(0, 9)) < chance
        if not present:
            if name in needs:
                args[name] = Arg(None, "bad")  # required but missing
            continue
        options[name] = arg.value
        args[name] = arg if name in allowed else Arg(arg.value, "bad")
        if arg.value is None:  # None is "not given"
            args[name] = Arg(None, "bad" if name in needs else "nice")
    given_ok = [n in options and args[n].tag != "bad" for n in ("lower", "upper", "true_value")]
    if spec.true_value_in_range and all(given_ok) and not (
            options["lower"] <= options["true_value"] <= options["upper"]):
        args["true_value"] = Arg(options["true_value"], "bad")  # outside the domain
    return options, args


def sensitivity_for(kind: Arg, sensitivity: Arg) -> Arg:
    """An integer kind needs a whole-number sensitivity."""
    if _spec_of_kind(kind).integer_only and sensitivity.tag != "bad" and not as_real(
            sensitivity.value).is_integer():
        return Arg(sensitivity.value, "bad")
    return sensitivity


def check_relative(result: dict[str, np.ndarray], key: str, truth: float) -> None:
    """relative_<m> = <m> / |truth| is finite, or inf (documented) exactly where that ratio is
    beyond float64: a true value of 0, or one so near 0 (1e-308) that the ratio overflows."""
    log_huge = math.log(HUGE)
    for measure, relative in zip(np.ravel(result[key.removeprefix("relative_")]),
                                 np.ravel(result[key]), strict=True):
        if measure == 0:
            assert relative == 0, (key, truth)
            continue
        excess = INF if truth == 0 else math.log(measure) - math.log(abs(truth)) - log_huge
        if abs(excess) > 1e-12:  # (either is right within rounding of the boundary)
            assert relative == INF if excess > 0 else math.isfinite(relative), (
                key, measure, truth, relative)


@pytest.mark.slow
@covers("utility.error_sweep")
@PROPERTY
@given(setting=mechanism_settings(), epsilons=epsilon_grids(), sensitivity=positive(),
       beta=probability(zero_ok=False),
       l2=st.one_of(st.none(), st.floats(0.1, 10), st.integers(1, 5).map(float)))
def test_error_sweep(setting, epsilons, sensitivity, beta, l2):
    options, args = setting
    args = {**args, "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "sensitivity": sensitivity_for(args["kind"], sensitivity), "beta": beta}
    spec = _spec_of_kind(args["kind"])
    if l2 is not None and spec.sensitivity_norm == "L2":  # the L2 one is used: whole for
        args["sensitivity"] = sensitivity  # an integer kind, and the L1 one only positive
        args["l2_sensitivity"] = Arg(l2, "bad" if spec.integer_only and not l2.is_integer()
                                     else "nice")
    result = judge(lambda: utility.error_sweep(
        args["kind"].value, epsilons=epsilons, sensitivity=sensitivity.value, beta=beta.value,
        l2_sensitivity=l2, **options), args, {"epsilons": ("epsilon", "scale")})
    if result is None:
        return
    n = np.size(epsilons)
    for key, value in result.items():
        assert value.shape == (n,), key
        if key.startswith("relative_"):
            check_relative(result, key, float(options["true_value"]))
        else:
            assert_finite(value, key)
    assert np.all(result["alpha"] >= 0) and np.all(result["scale"] > 0)
    assert np.all(result["mae"] <= result["rmse"] * (1 + 1e-9))  # Jensen: E|e| <= sqrt(E e²)



def releases() -> st.SearchStrategy[tuple[Callable, str]]:
    """Releases for monte_carlo_sweep: a Laplace release, and ones that break its contract."""
    def good(eps, n, rng, truth):
        return truth + rng.laplace(0.0, 1.0 / eps, (n, *np.shape(truth)))

    broken = {
        "wrong_shape": lambda eps, n, rng, truth: np.zeros((n + 1, *np.shape(truth))),
        "nan": lambda eps, n, rng, truth: np.full((n, *np.shape(truth)), NAN),
        "text": lambda eps, n, rng, truth: np.full((n, *np.shape(truth)), "x"),
        "none": lambda eps, n, rng, truth: None,
    }
    return st.one_of(st.just((good, "nice")), st.just((good, "nice")),
                     st.sampled_from([(f, "bad") for f in broken.values()]))



@pytest.mark.slow
@covers("utility.monte_carlo_sweep")
@PROPERTY
@given(release=releases(), epsilons=epsilon_grids(), true_value=any_arrays(max_side=3),
       trials=sweep_trials(), beta=probability(zero_ok=False), rng=rngs())
def test_monte_carlo_sweep(release, epsilons, true_value, trials, beta, rng):
    make, release_tag = release
    truth = numeric_or_none(true_value)

    def simulate(eps, n, gen):
        return make(eps, n, gen, truth)

    args = {"release": Arg(simulate, release_tag), "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "true_value": Arg(true_value, array_tag(true_value, min_size=1)), "trials": trials,
            "beta": beta, "rng": rng}
    with bounded_time():
        result = judge(lambda: utility.monte_carlo_sweep(
            simulate, epsilons=epsilons, true_value=true_value, trials=trials.value,
            rng=rng.value, beta=beta.value), args,
            {"epsilons": ("release",), "true_value": ("release",)})
    if result is None:
        return
    for key, value in result.items():
        if key.startswith("relative_"):
            check_relative(result, key, float(truth))
        else:
            assert_finite(value, key)
    assert np.all(result["p05"] <= result["median"]) and np.all(result["median"] <= result["p95"])
    # (squares of errors below 1e-154 underflow: RMSE may then read 0 while MAE does not)
    assert np.all(result["mae"] <= result["rmse"] * (1 + 1e-9) + 1e-150)



@pytest.mark.slow
@covers("utility.monte_carlo_error_sweep")
@PROPERTY
@given(setting=mechanism_settings(), epsilons=epsilon_grids(), sensitivity=positive(),
       trials=sweep_trials(), rng=rngs())
def test_monte_carlo_error_sweep(setting, epsilons, sensitivity, trials, rng):
    options, args = setting
    truth = options.pop("true_value", 0.5)
    if truth is None:
        truth = 0.5  # always given here
    if args.get("true_value", Arg(0, "nice")).tag == "bad" and array_tag(truth) != "bad":
        args["true_value"] = Arg(truth, "nice")  # here an array of true values is fine too
        if _spec_of_kind(args["kind"]).true_value_in_range and all(
                args.get(n, Arg(0, "bad")).tag != "bad" for n in ("lower", "upper")) and not (
                np.all((options["lower"] <= np.asarray(truth)) & (
                    np.asarray(truth) <= options["upper"]))):
            args["true_value"] = Arg(truth, "bad")
    args = {**args, "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "sensitivity": sensitivity_for(args["kind"], sensitivity), "trials": trials,
            "rng": rng}
    if _spec_of_kind(args["kind"]).integer_only and args.get(
            "true_value", Arg(0, "nice")).tag != "bad":
        truth = float(np.round(truth)) if np.ndim(truth) == 0 else truth
    with bounded_time():
        result = judge(lambda: utility.monte_carlo_error_sweep(
            args["kind"].value, epsilons=epsilons, sensitivity=sensitivity.value,
            true_value=truth, trials=trials.value, rng=rng.value, **options), args,
            {"epsilons": ("epsilon", "scale"), "true_value": ("values",)})
    if result is not None:
        assert all(np.shape(v) == (np.size(epsilons),) for v in result.values())
        # as in test_monte_carlo_sweep: squares of errors below 1e-154 underflow (seed 21: a
        # clamped Laplace at lower = -5e-324 gave MAE 5e-324 and RMSE 0)
        assert np.all(result["mae"] <= result["rmse"] * (1 + 1e-9) + 1e-150)



@pytest.mark.slow
@covers("utility.selection_sweep")
@PROPERTY
@given(scores=score_vectors(), noise=choices(selection.NOISE_TYPES), epsilons=epsilon_grids(),
       sensitivity=positive(), monotonic=flags(), measure=choices(("pure", "zcdp")),
       k=counts(1, 4), negate=flags(), trials=sweep_trials(), rng=rngs())
def test_selection_sweep(scores, noise, epsilons, sensitivity, monotonic, measure, k, negate,
                         trials, rng):
    k = k_arg(k, scores)
    args = {**scores_arg(scores), "noise": noise, "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "sensitivity": sensitivity, "monotonic": monotonic, "measure": measure, "k": k,
            "negate": negate}
    if k.tag != "bad" and int(k.value) > 1:  # simulated: trials and rng matter
        args.update(trials=trials, rng=rng)
    with bounded_time():
        result = judge(lambda: utility.selection_sweep(
            scores, noise=noise.value, epsilons=epsilons, sensitivity=sensitivity.value,
            monotonic=monotonic.value, measure=measure.value, k=k.value, negate=negate.value,
            trials=trials.value, rng=rng.value), args,
            {"epsilons": ("epsilon", "rho", "scale"), "sensitivity": ("scale",)})
    if result is not None:
        assert_finite(result)
        p = result["p_correct"]
        assert p.shape == (np.size(epsilons),) and np.all((0 <= p) & (p <= 1))
        assert np.all(result["scale"] > 0)



@pytest.mark.slow
@covers("utility.smallest_epsilon", "utility.SmallestEpsilon")
@PROPERTY
@given(setting=mechanism_settings(), sensitivity=positive(), alpha=positive(),
       beta=probability(zero_ok=False))
def test_smallest_epsilon(setting, sensitivity, alpha, beta):
    options, args = setting
    args = {**args, "sensitivity": sensitivity_for(args["kind"], sensitivity), "alpha": alpha,
            "beta": beta}
    kind = args["kind"].value
    result, error = attempt(lambda: utility.smallest_epsilon(
        kind, sensitivity=sensitivity.value, alpha=alpha.value, beta=beta.value, **options))
    bad = [n for n, a in args.items() if a.tag == "bad"]
    if bad:
        assert error is not None and (len(bad) > 1 or names(error, bad[0])), (bad, error)
        return
    if error is not None:
        # No epsilon up to 1e3 meets an error bound too tight for the noise: refused naming
        # alpha (or the extreme parameter that made it so).
        assert any(names(error, n) for n in ("alpha", "epsilon", *args)), error
        return
    assert isinstance(result, utility.SmallestEpsilon)
    low, high = utility.EPSILON_RANGE
    assert low <= result.epsilon <= high
    assert result.met_at_lower_end == (result.epsilon == low)
    mech = make_mechanism(kind, sensitivity=sensitivity.value, epsilon=result.epsilon,
                          **{n: v for n, v in options.items() if n != "true_value"})
    assert mech.accuracy(beta.value, options.get("true_value")) <= as_real(alpha.value)



@pytest.mark.slow
@covers("utility.smallest_epsilon_for_selection")
@PROPERTY
@given(scores=score_vectors(), noise=choices(selection.NOISE_TYPES), sensitivity=positive(),
       monotonic=flags(), target=probability(zero_ok=False, nice_hi=0.99), negate=flags())
def test_smallest_epsilon_for_selection(scores, noise, sensitivity, monotonic, target, negate):
    args = {**scores_arg(scores), "noise": noise, "sensitivity": sensitivity,
            "monotonic": monotonic, "target": target, "negate": negate}
    result, error = attempt(lambda: utility.smallest_epsilon_for_selection(
        scores, noise=noise.value, sensitivity=sensitivity.value, monotonic=monotonic.value,
        target=target.value, negate=negate.value))
    bad = [n for n, a in args.items() if a.tag == "bad"]
    if bad:
        assert error is not None and (len(bad) > 1 or names(error, bad[0])), (bad, error)
    elif error is not None:  # the best score's lead is too small even at epsilon = 1e3
        assert any(names(error, n) for n in ("target", *args)), error
    else:
        low, high = utility.EPSILON_RANGE
        assert low <= result.epsilon <= high
        assert result.met_at_lower_end == (result.epsilon == low)



def nan_release(eps, n, gen):
    return np.full((n, 1), NAN)



def relative_error_beyond_float64_is_inf():
    # alpha = ln 8 = 2.08 over |true value| 1.1e-308 is beyond float64: inf, as against a 0
    result, _ = attempt(lambda: utility.error_sweep(
        "laplace", epsilons=[1.0], sensitivity=1.0, beta=0.125,
        true_value=1.1125369292536007e-308))
    assert_finite({k: v for k, v in result.items() if not k.startswith("relative_")})
    assert result["relative_alpha"].tolist() == [INF]
    assert result["relative_mae"] == pytest.approx(1.0 / 1.1125369292536007e-308)



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "error_sweep(gaussian, beta=5e-324): alpha inf": lambda: (
        finite(lambda: utility.error_sweep("gaussian", epsilons=[1.0], sensitivity=1.0,
                                           beta=TINY, delta=1e-6))["alpha"][0] > 0),
    "error_sweep(gaussian, upper=1): silently ignored": lambda: refused(
        lambda: utility.error_sweep("gaussian", epsilons=[1.0], sensitivity=1.0, delta=1e-6,
                                    upper=1.0), "upper"),
    "error_sweep(laplace, sensitivity=5e-324): scale 0 reported": lambda: refused(
        lambda: utility.error_sweep("laplace", epsilons=[2.0], sensitivity=TINY), "epsilon"),
    "error_sweep(clamped_laplace, true value 1e306 outside): MSE and MAE overflow": lambda: (
        refused(lambda: utility.error_sweep(
            "clamped_laplace", epsilons=[2e3], sensitivity=1.0, lower=0.0, upper=1.0,
            true_value=-1e306), "values")),
    "error_sweep(bounded_laplace, true value outside, epsilon 1e300): named epsilon": lambda: (
        refused(lambda: utility.error_sweep(
            "bounded_laplace", epsilons=[1e300], sensitivity=0.5, lower=0.0, upper=1.0,
            true_value=-5.0), "true_value")),
    "monte_carlo_error_sweep(same): named epsilon": lambda: refused(
        lambda: utility.monte_carlo_error_sweep(
            "bounded_laplace", epsilons=[1e300], sensitivity=0.5, lower=0.0, upper=1.0,
            true_value=-5.0, trials=3, rng=np.random.default_rng(0)), "true_value"),
    "error_sweep(true_value=1.1e-308): relative error overflow warning":
        relative_error_beyond_float64_is_inf,
    "error_sweep(geometric, epsilon=746): log(0), r underflowed": lambda: (
        finite(lambda: utility.error_sweep("geometric", epsilons=[746.0], sensitivity=1,
                                           beta=0.5))["alpha"].tolist() == [0.0]),
    "selection_sweep(negate=1, epsilon=5e-324): named the scale, not negate": lambda: refused(
        lambda: utility.selection_sweep([0.0], noise="laplace", epsilons=[TINY], negate=1),
        "negate", TypeError),
    "smallest_epsilon_for_selection(scores=0.0, sensitivity=1.8e304): named the scale":
        lambda: refused(lambda: utility.smallest_epsilon_for_selection(
            0.0, noise="laplace", sensitivity=1.797693134862316e304, target=0.5), "scores"),
    # P(|Z| > 62) = 2 r^63 / (1 + r) = 2**-1074 with r = e^-t: 63 t = 1075 ln 2 − ln(1 + r)
    "smallest_epsilon(geometric, alpha=62, beta=5e-324): RuntimeError (subnormal tail)":
        lambda: finite(lambda: utility.smallest_epsilon("geometric", sensitivity=1.0,
                                                        alpha=62.0, beta=TINY)).epsilon
        == pytest.approx((1075 * math.log(2) - math.log1p(math.exp(-11.83))) / 63, rel=1e-6),
    "smallest_epsilon(geometric, alpha=1e100): brentq's 'f(a) and f(b) must have different "
    "signs'": lambda: finite(lambda: utility.smallest_epsilon(
        "geometric", sensitivity=1, alpha=1e100, beta=0.25)) == (utility.EPSILON_RANGE[0], True),
    "smallest_epsilon(sensitivity=5e-324): an epsilon no mechanism has": lambda: refused(
        lambda: utility.smallest_epsilon("laplace", sensitivity=TINY, alpha=1.0, beta=0.5),
        "sensitivity"),
    "check_int(10**5000): Python refuses to print the number": lambda: refused(
        lambda: checks.check_int("trials", 10**5000, maximum=10), "trials"),
    "smallest_epsilon(gaussian, alpha=5e-324): named scale": lambda: refused(
        lambda: utility.smallest_epsilon("gaussian", sensitivity=1.0, alpha=TINY, beta=0.5,
                                         delta=0.5), "alpha"),
    "monte_carlo_sweep(release gives NaN): NaN summaries": lambda: refused(
        lambda: utility.monte_carlo_sweep(nan_release, epsilons=[1.0], true_value=[0.0],
                                          trials=3, rng=np.random.default_rng(0)), "release"),
    "monte_carlo_sweep(true_value=[]): IndexError": lambda: refused(
        lambda: utility.monte_carlo_sweep(nan_release, epsilons=[1.0], true_value=[],
                                          trials=3, rng=np.random.default_rng(0)),
        "true_value"),
    "monte_carlo_sweep(2 epsilons × 6e8 trials): 1.2e9 draws": lambda: refused(
        lambda: utility.monte_carlo_sweep(nan_release, epsilons=[1.0, 2.0], true_value=0.0,
                                          trials=6 * 10**8, rng=np.random.default_rng(0)),
        "trials"),
    "selection_sweep(0-d scores, k=2): named k": lambda: refused(
        lambda: utility.selection_sweep(np.array(1.0), noise="laplace", epsilons=[1.0], k=2,
                                        rng=np.random.default_rng(0)), "scores"),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)
