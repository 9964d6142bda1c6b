"""Property tests of dpcore.mechanisms: every class of the catalogue and the factory.

Random valid and invalid input, judged by the shared oracle (tests/dpcore/properties/oracle.py);
then each bug these properties found, pinned by one example.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.optimize import brentq
from scipy.special import log_ndtr

from dpcore import measures
from dpcore.measures import ZCDP, ApproxDP, PureDP
from dpcore.mechanisms import (
    CATALOGUE,
    AdditiveMechanism,
    AuditCase,
    MechanismSpec,
    audit_claim,
    make_mechanism,
    spec_for,
    spec_of,
)
from dpcore.mechanisms.bounded import BoundedLaplace, ClampedLaplace
from dpcore.mechanisms.discrete_gaussian import DiscreteGaussian
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.mechanisms.geometric import Geometric
from dpcore.mechanisms.laplace import Laplace
from tests.dpcore.properties.oracle import (
    HUGE,
    INF,
    JUNK,
    NAN,
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
    covers,
    epsilon_grids,
    finite,
    finite_real,
    float_arrays,
    grid_tag,
    judge,
    names,
    numeric_or_none,
    ok,
    positive,
    probability,
    refused,
    rngs,
    run_regression,
    tagged,
    trial_counts,
)

KINDS = tuple(CATALOGUE)


def _method_like(value: object) -> bool:
    return inspect.isfunction(value) or isinstance(value, property | classmethod | staticmethod)


def public_members(cls: type) -> list[str]:
    """The public methods and properties of a class that dpcore defines (as the public-API
    meta-test enumerates them)."""
    found = []
    for attr in dir(cls):
        if attr.startswith("_"):
            continue
        owner = next(c for c in cls.__mro__ if attr in vars(c))
        if owner.__module__.startswith("dpcore") and _method_like(vars(owner)[attr]):
            found.append(attr)
    return found


def class_names(cls: type) -> list[str]:
    """The public-API names of a class and its members: "mechanisms.laplace.Laplace.sample"."""
    home = f"{cls.__module__.removeprefix('dpcore.')}.{cls.__name__}"
    return [home, *(f"{home}.{attr}" for attr in public_members(cls))]


def points_tag(value: object) -> str:
    """Evaluation points of a distribution function: numbers, ±inf allowed, NaN not."""
    arr = numeric_or_none(value)
    if arr is None or np.isnan(arr).any():
        return "bad"
    return "extreme" if arr.size and np.max(np.abs(arr)) > 1e6 else "nice"


def domain_tag(mech: AdditiveMechanism, value: object) -> str:
    """Whether ``value`` is a valid true value (or array of them) for this mechanism, from its
    spec: whole numbers within ±2**62 for integer kinds, inside the answer range where the
    spec requires it, and within float64 reach of the range's ends otherwise."""
    tag = array_tag(value)
    if tag == "bad":
        return tag
    spec = spec_of(mech)
    arr = numeric_or_none(value)
    if spec.integer_only and (
            not np.all(arr == np.floor(arr)) or arr.size and np.max(np.abs(arr)) > 2**62):
        return "bad"
    if spec.true_value_in_range and arr.size and (
            arr.min() < mech.lower or arr.max() > mech.upper):
        return "bad"
    if spec.needs_range:
        with np.errstate(over="ignore"):  # a distance to a bound beyond float64
            if not np.all(np.isfinite(arr - mech.lower) & np.isfinite(mech.upper - arr)):
                return "bad"
    return tag


def mse_tag(mech: AdditiveMechanism, value: object, tag: str) -> str:
    """Where true values may lie outside the answer range, the bias is about the distance to
    it: beyond ~1e154 outside, its square (the MSE) overflows float64 and is refused."""
    spec = spec_of(mech)
    if tag == "bad" or not spec.needs_range or spec.true_value_in_range or not np.size(value):
        return tag
    arr = numeric_or_none(value)
    far = np.max(np.maximum(mech.lower - arr, arr - mech.upper))
    return "bad" if far > 1e155 else "extreme" if far > 1e153 else tag


def points_in(mech: AdditiveMechanism) -> st.SearchStrategy:
    """Arrays mixing arbitrary values with ones inside the mechanism's domain."""
    spec = spec_of(mech)
    inside = st.floats(-1e3, 1e3)
    if spec.needs_range:
        inside = st.floats(mech.lower, mech.upper)
    if spec.integer_only:
        inside = st.integers(-1000, 1000).map(float)
    return st.one_of(inside, float_arrays(inside, min_dims=0, max_dims=2, max_side=3),
                     any_arrays())


def rebuild_options(mech: AdditiveMechanism) -> dict[str, float]:
    """The keywords besides sensitivity and epsilon that rebuild a mechanism like ``mech`` at
    other epsilons (its answer range, its delta, its gamma)."""
    spec = spec_of(mech)
    privacy = mech.privacy
    options: dict[str, float] = {}
    if spec.needs_range:
        options.update(lower=mech.lower, upper=mech.upper)
    if "delta" in spec.epsilon_budget():
        options["delta"] = privacy.delta if isinstance(privacy, ApproxDP) else 1e-6
    elif "delta" in spec.parameters and isinstance(privacy, ApproxDP):
        options["delta"] = privacy.delta
    if "gamma" in spec.parameters:
        options["gamma"] = mech.gamma
    return options


#: The public members exercise_mechanism knows how to call. A class with another one fails
#: until its call is added here: every public name gets exercised, not just declared.
HANDLED = {"scale", "sensitivity", "privacy", "sample", "accuracy", "error_cdf", "error_pdf",
           "error_pmf", "error_breakpoints", "bias", "variance", "mse", "mae",
           "epsilon_for_delta", "delta_for_epsilon", "zcdp", "effective_epsilon", "lower",
           "upper", "point_masses", "gamma", "sweep", "epsilon_for_accuracy",
           "pure_epsilon_bound", "zcdp_bound", "answer_range", "integer_input", "simulate"}


def exercise_mechanism(mech: AdditiveMechanism, data, context: dict[str, Arg]) -> None:
    """Call every public member of a constructed mechanism with random arguments."""
    members = set(public_members(type(mech)))
    assert members <= HANDLED, f"exercise_mechanism does not call {sorted(members - HANDLED)}"
    spec = spec_of(mech)
    assert_finite(mech.scale)
    assert_finite(mech.sensitivity)
    assert mech.scale > 0 and mech.sensitivity > 0
    privacy = mech.privacy
    assert isinstance(privacy, (PureDP, ApproxDP, ZCDP))
    assert "nan" not in repr(mech)
    bounded = spec.needs_range

    values = data.draw(points_in(mech), label="values")
    trials, rng = data.draw(trial_counts(), label="trials"), data.draw(rngs(), label="rng")
    args = {**context, "values": Arg(values, domain_tag(mech, values)), "trials": trials,
            "rng": rng}
    out = ok(lambda: mech.sample(values, rng=rng.value, trials=trials.value), args)
    if out is not None:
        shape = np.shape(values) if trials.value is None else (int(trials.value),
                                                               *np.shape(values))
        assert np.shape(out) == shape
        assert np.asarray(out).dtype == (np.int64 if mech.integer_output else np.float64)
        if bounded:
            assert np.all((mech.lower <= out) & (out <= mech.upper))
        # as a plan's part (plan.parts.PartMechanism): one release as plain numbers, the
        # same draw as sample's from the same stream
        one = mech.simulate(values, scale=mech.scale, rng=np.random.default_rng(5))
        assert isinstance(one, list | int | float)
        assert one == np.asarray(mech.sample(values, rng=np.random.default_rng(5))).tolist()
    assert mech.answer_range == ((mech.lower, mech.upper) if bounded else None)
    assert mech.integer_input == spec.integer_only

    beta = data.draw(probability(zero_ok=False), label="beta")
    truth = data.draw(points_in(mech), label="true_value") if bounded else None
    truth_arg = Arg(truth, domain_tag(mech, truth) if bounded else "nice")
    alpha = ok(lambda: mech.accuracy(beta.value, truth), {**context, "beta": beta,
                                                          "true_value": truth_arg})
    if alpha is not None:
        assert np.all(np.asarray(alpha) >= 0)
        if bounded:
            assert np.shape(alpha) == np.shape(truth)

    x = data.draw(st.one_of(any_arrays(), st.sampled_from([INF, -INF, [-INF, 0.0, INF]])),
                  label="x")
    x_arg = Arg(x, points_tag(x))
    if bounded and truth_arg.tag != "bad" and x_arg.tag != "bad":
        try:
            np.broadcast_shapes(np.shape(x), np.shape(truth))
        except ValueError:
            x_arg = Arg(x, "bad")  # x and true_value must broadcast together
    curve_args = {**context, "x": x_arg, "true_value": truth_arg}
    cdf = ok(lambda: mech.error_cdf(x, truth), curve_args)
    if cdf is not None:
        assert np.all((0 <= cdf) & (cdf <= 1))
        grid = np.sort(np.ravel(np.asarray(x, dtype=np.float64)))
        t = np.full(grid.shape, np.ravel(truth)[0]) if bounded and np.size(truth) else truth
        if not bounded or np.size(truth):
            along = np.ravel(mech.error_cdf(grid, t))
            assert np.all(np.diff(along) >= -1e-12), "the error CDF must not decrease"
    if mech.integer_output:
        pdf = ok(lambda: mech.error_pmf(x), {**context, "k": Arg(x, points_tag(x))})
    else:
        pdf = ok(lambda: mech.error_pdf(x, truth), curve_args)
    assert pdf is None or np.all(np.asarray(pdf) >= 0)

    single = data.draw(points_in(mech), label="breakpoints_at") if bounded else None
    single_tag = "nice"
    if bounded:
        single_tag = domain_tag(mech, single)
        if single_tag != "bad" and np.ndim(single) != 0:
            single_tag = "bad"  # one true value at a time
    breaks = ok(lambda: mech.error_breakpoints(single),
                {**context, "true_value": Arg(single, single_tag)})
    if breaks is not None:
        assert breaks.ndim == 1 and np.all(np.diff(breaks) > 0) and 0.0 in breaks

    moments_at = data.draw(points_in(mech), label="moments_at")
    moment_args = {**context, "values": Arg(moments_at, domain_tag(mech, moments_at))}
    bias = ok(lambda: mech.bias(moments_at), moment_args)
    variance = ok(lambda: mech.variance(moments_at), moment_args)
    mse = ok(lambda: mech.mse(moments_at), {**moment_args, "values": Arg(
        moments_at, mse_tag(mech, moments_at, moment_args["values"].tag))})
    mae = ok(lambda: mech.mae(moments_at), moment_args)
    if variance is not None:
        assert np.shape(bias) == np.shape(variance) == np.shape(moments_at)
        assert np.all(np.asarray(variance) >= 0)
    if mse is not None:
        assert np.shape(mse) == np.shape(moments_at)
        assert np.all(np.asarray(mse) >= np.asarray(variance) * (1 - 1e-12))
        assert np.shape(mae) == np.shape(moments_at)
        # Jensen: E|e| <= sqrt(E e²) (squares below 1e-308 underflow, hence the slack)
        assert np.all(np.asarray(mae) <= np.sqrt(np.asarray(mse)) * (1 + 1e-9) + 1e-150)

    exercise_privacy_members(mech, data, context)
    exercise_class_methods(mech, data, context)


def exercise_privacy_members(mech: AdditiveMechanism, data, context: dict[str, Arg]) -> None:
    """epsilon_for_delta, and the members only some classes have (exact profiles, ranges)."""
    privacy = mech.privacy
    level = data.draw(probability(zero_ok=True), label="delta_at")
    eps = ok(lambda: mech.epsilon_for_delta(level.value),
             {**context, "delta": Arg(level.value, "extreme" if level.tag == "nice" else
                                      level.tag)})
    if eps is not None:
        assert eps >= 0
        if isinstance(privacy, PureDP):
            assert eps == privacy.epsilon
        elif isinstance(privacy, ApproxDP) and as_real(level.value) == privacy.delta:
            assert eps <= privacy.epsilon * (1 + 1e-12)
    if hasattr(mech, "delta_for_epsilon"):
        at = data.draw(positive(zero_ok=True), label="epsilon_at")
        d = ok(lambda: mech.delta_for_epsilon(at.value), {**context, "epsilon": at})
        assert d is None or 0 <= d <= 1
        if eps is not None and level.value != 0:
            assert mech.delta_for_epsilon(eps) <= as_real(level.value) * (1 + 1e-9)
    if hasattr(mech, "zcdp"):
        assert mech.zcdp.rho > 0
    bound = mech.zcdp_bound()
    if isinstance(privacy, ZCDP):
        assert bound == privacy
    elif isinstance(privacy, PureDP):
        rho = privacy.epsilon * privacy.epsilon / 2
        assert bound == (ZCDP(rho) if 0 < rho < INF else None)
    if bound is not None and hasattr(mech, "effective_epsilon"):
        # ρ = ε₀²/2 for the pure ε₀ the class promises: at least its own exact pure ε
        assert 2 * bound.rho >= mech.effective_epsilon**2 * (1 - 1e-12)
    if hasattr(mech, "zcdp"):
        assert bound == mech.zcdp
    budget_eps = data.draw(positive(), label="bound_epsilon")
    budget_delta = data.draw(probability(zero_ok=True), label="bound_delta")
    pure = ok(lambda: type(mech).pure_epsilon_bound(budget_eps.value, budget_delta.value),
              {**context, "epsilon": budget_eps, "delta": budget_delta})
    if pure is not None:
        assert pure >= as_real(budget_eps.value)
        if as_real(budget_delta.value) == 0:
            assert pure == as_real(budget_eps.value)
    if hasattr(mech, "effective_epsilon"):
        assert 0 < mech.effective_epsilon < INF
        if isinstance(privacy, PureDP):
            assert mech.effective_epsilon <= privacy.epsilon * (1 + 1e-9)
    if hasattr(mech, "lower"):
        assert mech.lower < mech.upper
    if hasattr(mech, "gamma"):
        assert 0 <= mech.gamma <= 1
    if hasattr(mech, "point_masses"):
        truth = data.draw(points_in(mech), label="masses_at")
        masses = ok(lambda: mech.point_masses(truth),
                    {**context, "true_value": Arg(truth, domain_tag(mech, truth))})
        if masses is not None:
            at_lower, at_upper = (np.asarray(m) for m in masses)
            assert np.all((0 <= at_lower) & (at_upper >= 0)
                          & (at_lower + at_upper <= 1 + 1e-12))


def exercise_class_methods(mech: AdditiveMechanism, data, context: dict[str, Arg]) -> None:
    """The class's sweep over a random grid and its closed-form smallest epsilon."""
    cls, spec = type(mech), spec_of(mech)
    options = rebuild_options(mech)
    epsilons = data.draw(epsilon_grids(), label="epsilons")
    beta = data.draw(probability(zero_ok=False), label="sweep_beta")
    truth = (mech.lower + mech.upper) / 2 if spec.needs_range else None
    if spec.integer_only and truth is not None:
        truth = float(np.floor(truth))
    args = {**context, "epsilons": Arg(epsilons, grid_tag(epsilons)), "beta": beta}
    with bounded_time():
        swept = ok(lambda: cls.sweep(epsilons, sensitivity=mech.sensitivity, beta=beta.value,
                                     true_value=truth, **options), args,
                   {"epsilons": ("epsilon", "scale", "sensitivity", "lower", "upper"),
                    **ALIASES})
    if swept is not None:
        for key in ("scale", "alpha", "rmse", "mae"):
            assert np.shape(swept[key]) == (np.size(epsilons),)
        assert np.all(swept["alpha"] >= 0) and np.all(swept["scale"] > 0)
    alpha = data.draw(positive(), label="alpha")
    with bounded_time():
        eps = ok(lambda: cls.epsilon_for_accuracy(alpha.value, beta.value,
                                                  sensitivity=mech.sensitivity, **options),
                 {**context, "alpha": alpha, "beta": beta}, ALIASES)
    assert eps is None or eps >= 0


#: Other words a refusal may use for a context argument (a scale derived from them).
ALIASES = {"sensitivity": ("scale",), "epsilon": ("scale",), "rho": ("scale",),
           "alpha": ("scale", "epsilon")}


def built_mechanism(build: Callable[[], object], args: dict[str, Arg]):
    mech = judge(build, args)
    if mech is not None:
        assert isinstance(mech, AdditiveMechanism)
    return mech



def exactly_one_of(**options: Arg) -> st.SearchStrategy[tuple[dict[str, object], dict]]:
    """Keyword arguments giving exactly one option (mostly), or none, or two (refused)."""
    names_ = list(options)

    def pick(chosen: list[str]):
        kwargs = {n: options[n].value for n in chosen}
        # An option passed as None is one not given (seed 40: epsilon=1, scale=None is valid).
        given = [n for n in chosen if options[n].value is not None]
        tags = {n: options[n] for n in given}
        if len(given) != 1:  # "needs exactly one of ...": the message names the options
            tags = {names_[0]: Arg(None, "bad")}
        return kwargs, tags

    picks = st.one_of(*[st.just([n]) for n in names_ for _ in range(3)], st.just([]),
                      st.just(names_[:2]))
    return picks.map(pick)



@pytest.mark.slow
@covers(*class_names(Laplace))
@PROPERTY
@given(sensitivity=positive(), epsilon=positive(), scale=positive(), data=st.data())
def test_laplace(sensitivity, epsilon, scale, data):
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    args = {"sensitivity": sensitivity, **tags}
    mech = built_mechanism(lambda: Laplace(sensitivity=sensitivity.value, **kwargs),
                           args)
    if mech is not None:
        exercise_mechanism(mech, data, args)



@pytest.mark.slow
@covers(*class_names(Gaussian))
@PROPERTY
@given(sensitivity=positive(), epsilon=positive(), delta=probability(zero_ok=False),
       rho=positive(), scale=positive(), data=st.data())
def test_gaussian(sensitivity, epsilon, delta, rho, scale, data):
    chosen = data.draw(st.sampled_from([("pair",), ("rho",), ("scale",)] * 3
                                       + [(), ("pair", "rho")]), label="options")
    kwargs: dict[str, object] = {}
    tags: dict[str, Arg] = {}
    if "pair" in chosen:
        kwargs.update(epsilon=epsilon.value, delta=delta.value)
        tags.update(epsilon=epsilon, delta=delta)
    for name, arg in (("rho", rho), ("scale", scale)):
        if name in chosen:
            kwargs[name], tags[name] = arg.value, arg
    if len(chosen) != 1:  # "needs exactly one of epsilon and delta or rho or scale"
        tags = {"epsilon": Arg(None, "bad")}
    args = {"sensitivity": sensitivity, **tags}
    mech = built_mechanism(lambda: Gaussian(sensitivity=sensitivity.value, **kwargs),
                           args)
    if mech is None:
        return
    exercise_mechanism(mech, data, args)
    rho_out = ok(lambda: mech.zcdp, args)
    assert rho_out is None or rho_out.rho > 0
    at = data.draw(positive(zero_ok=True), label="epsilon_at")
    d = ok(lambda: mech.delta_for_epsilon(at.value), {**args, "epsilon": at})
    assert d is None or 0 <= d <= 1
    level = data.draw(probability(zero_ok=False), label="delta_at")
    e = ok(lambda: mech.epsilon_for_delta(level.value), {**args, "delta": level})
    if e is not None:
        assert e >= 0
        assert mech.delta_for_epsilon(e) <= as_real(level.value) * (1 + 1e-9)



def whole_sensitivity() -> st.SearchStrategy[Arg]:
    return tagged(st.one_of(st.integers(1, 20), st.sampled_from([2.0, np.int64(3)])),
                  st.sampled_from([2**63, 10**30, 1e300]),
                  st.sampled_from([1.5, 0, -1, 0.0, NAN, INF, 10**400, *JUNK]))



@pytest.mark.slow
@covers(*class_names(Geometric))
@PROPERTY
@given(sensitivity=whole_sensitivity(), epsilon=positive(), scale=positive(), data=st.data())
def test_geometric(sensitivity, epsilon, scale, data):
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    args = {"sensitivity": sensitivity, **tags}
    mech = built_mechanism(lambda: Geometric(sensitivity=sensitivity.value, **kwargs),
                           args)
    if mech is not None:
        exercise_mechanism(mech, data, args)



def ordered(lower: Arg, upper: Arg) -> tuple[Arg, Arg]:
    """Two nice bounds in increasing order (so that most examples are valid)."""
    if lower.tag == upper.tag == "nice" and as_real(lower.value) > as_real(upper.value):
        return upper, lower
    return lower, upper



def bounds_args(lower: Arg, upper: Arg) -> dict[str, Arg]:
    """lower >= upper, or a width beyond float64 (both valid) is refused, naming both."""
    if lower.tag != "bad" and upper.tag != "bad":
        lo, hi = as_real(lower.value), as_real(upper.value)
        if not lo < hi or hi - lo == INF:
            return {"lower": lower, "upper": Arg(upper.value, "bad")}
    return {"lower": lower, "upper": upper}



@pytest.mark.slow
@covers(*class_names(BoundedLaplace))
@PROPERTY
@given(sensitivity=positive(), lower=finite_real(), upper=finite_real(), epsilon=positive(),
       delta=probability(zero_ok=True), scale=positive(), data=st.data())
def test_bounded_laplace(sensitivity, lower, upper, epsilon, delta, scale, data):
    lower, upper = ordered(lower, upper)
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    if "scale" in kwargs and delta.tag != "bad" and as_real(delta.value) != 0:
        delta = Arg(delta.value, "bad")  # a mechanism built from scale reports pure DP
    args = {"sensitivity": sensitivity, **bounds_args(lower, upper), "delta": delta, **tags}
    if args["lower"].tag != "bad" and args["upper"].tag != "bad" and (
            as_real(upper.value) - as_real(lower.value) < 1e-290):
        # A domain 2e-308 wide (both bounds nice) makes the calibrated scale, which shrinks
        # with the width, leave float64's range: at the edge of float64, refused naming them.
        args["upper"] = Arg(upper.value, "extreme")
    mech = built_mechanism(lambda: BoundedLaplace(
        sensitivity=sensitivity.value, lower=lower.value, upper=upper.value, delta=delta.value,
        **kwargs), args)
    if mech is None:
        return
    exercise_mechanism(mech, data, args)
    assert mech.effective_epsilon > 0 and math.isfinite(mech.effective_epsilon)
    if "epsilon" in kwargs:  # never less private than claimed
        claimed = as_real(epsilon.value) - math.log1p(-mech.privacy.__dict__.get("delta", 0.0))
        assert mech.effective_epsilon <= claimed * (1 + 1e-9)



@pytest.mark.slow
@covers(*class_names(ClampedLaplace))
@PROPERTY
@given(sensitivity=positive(), lower=finite_real(), upper=finite_real(), epsilon=positive(),
       scale=positive(), data=st.data())
def test_clamped_laplace(sensitivity, lower, upper, epsilon, scale, data):
    lower, upper = ordered(lower, upper)
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    args = {"sensitivity": sensitivity, **bounds_args(lower, upper), **tags}
    mech = built_mechanism(lambda: ClampedLaplace(
        sensitivity=sensitivity.value, lower=lower.value, upper=upper.value, **kwargs), args)
    if mech is None:
        return
    exercise_mechanism(mech, data, args)
    truth = data.draw(points_in(mech), label="true_value")
    masses = ok(lambda: mech.point_masses(truth),
                {**args, "true_value": Arg(truth, domain_tag(mech, truth))})
    if masses is not None:
        at_lower, at_upper = (np.asarray(m) for m in masses)
        assert np.all((0 <= at_lower) & (at_upper >= 0) & (at_lower + at_upper <= 1 + 1e-12))



@pytest.mark.slow
@covers("mechanisms.catalogue.make_mechanism", *class_names(AdditiveMechanism))
@PROPERTY
@given(kind=choices(KINDS), sensitivity=whole_sensitivity(),
       extra=st.dictionaries(st.sampled_from(["epsilon", "delta", "rho", "scale", "lower",
                                              "upper", "gamma"]),
                             st.one_of(st.floats(0.1, 10.0), st.sampled_from([NAN, -1.0, 0.0,
                                                                              "x", None])),
                             max_size=2),
       use_extra=st.integers(0, 3), data=st.data())
def test_make_mechanism(kind, sensitivity, extra, use_extra, data):
    spec = CATALOGUE.get(kind.value) if isinstance(kind.value, str) else None
    given_ = {n: v for n, v in spec.sample_parameters[0].items()
              if n != "sensitivity"} if spec else {"epsilon": 1.0}
    if use_extra == 0:  # a quarter of the time, options drawn at random on top
        given_.update(extra)
    if spec and not spec.integer_only and isinstance(sensitivity.value, float) and (
            sensitivity.value == 1.5):
        sensitivity = Arg(1.5, "nice")  # only integer kinds need a whole number
    mech, error = attempt(lambda: make_mechanism(kind.value, sensitivity=sensitivity.value,
                                                 **given_))
    if error is not None:
        assert any(names(error, n) for n in ("kind", "sensitivity", "epsilon", "delta", "rho",
                                             "scale", "lower", "upper", "gamma")), error
        return
    assert kind.tag != "bad" and sensitivity.tag != "bad"
    assert isinstance(mech, AdditiveMechanism)
    exercise_mechanism(mech, data, {"sensitivity": sensitivity,
                                    **{n: Arg(v, "nice") for n, v in given_.items()}})


def parameter_values(name: str, spec: MechanismSpec) -> st.SearchStrategy[Arg]:
    """Random values for one parameter of a mechanism, tagged as the oracle needs."""
    if name in ("lower", "upper"):
        return finite_real()
    if name == "delta":
        return probability(zero_ok="pure" in spec.budgets)
    if name == "gamma":
        return tagged(st.floats(0.0, 1.0), None, st.sampled_from([-0.1, 1.5, NAN, INF, "x"]))
    if name == "sensitivity" and spec.integer_only:
        return whole_sensitivity()
    return positive()


#: Each parameter, and the others a refusal caused by it may name instead (a scale is made
#: of sensitivity and budget; a range of both ends).
RELATED = {"lower": ("upper",), "upper": ("lower",), "sensitivity": ("epsilon", "scale", "rho"),
           "epsilon": ("sensitivity", "scale", "delta"), "rho": ("sensitivity", "scale"),
           "scale": ("sensitivity", "epsilon"), "delta": ("epsilon",), "gamma": ()}


@pytest.mark.slow
@covers(*[name for spec in CATALOGUE.values() for name in class_names(spec.mechanism)])
@PROPERTY
@given(kind=st.sampled_from(KINDS), index=st.integers(0, 2), changed=st.integers(0, 9),
       data=st.data())
def test_every_kind_of_the_catalogue(kind, index, changed, data):
    """Each kind built from its spec's sample parameters with one of them (mostly) replaced
    by a random value: built, or refused naming that parameter (or one it combines with);
    then every public member exercised. A new kind is covered by its spec alone."""
    spec = CATALOGUE[kind]
    params = dict(spec.sample_parameters[index % len(spec.sample_parameters)])
    names_ = sorted(params)
    context = {n: Arg(v, "nice") for n, v in params.items()}
    if changed < len(names_):
        name = names_[changed]
        drawn = data.draw(parameter_values(name, spec), label=name)
        params[name] = drawn.value
        context[name] = drawn
        if drawn.tag == "nice" and name in ("lower", "upper"):
            context[name] = Arg(drawn.value, "extreme")  # may cross the other end
    mech, error = attempt(lambda: make_mechanism(kind, **params))
    if error is not None:
        changed_ = [n for n, a in context.items() if a.tag != "nice"]
        assert changed_, f"refused its own sample parameters {params}: {error!r}"
        words = {w for n in changed_ for w in (n, *RELATED[n])}
        assert any(names(error, w) for w in words), error
        return
    assert all(a.tag != "bad" for a in context.values()), (params, mech)
    exercise_mechanism(mech, data, context)


@covers("mechanisms.base.MechanismSpec", "mechanisms.base.MechanismSpec.measures",
        "mechanisms.base.MechanismSpec.epsilon_budget",
        "mechanisms.base.MechanismSpec.measure_of", "mechanisms.base.AuditCase",
        "mechanisms.catalogue.spec_for", "mechanisms.catalogue.spec_of")
@PROPERTY
@given(kind=choices(KINDS), given_names=st.lists(st.sampled_from(["epsilon", "delta", "rho",
                                                                  "scale", "gamma"]),
                                                 max_size=3, unique=True),
       field=st.sampled_from(["budgets", "parameters", "sensitivity_norm", "needs_range",
                              "true_value_in_range", "sample_parameters", "mechanism"]),
       junk=st.sampled_from([None, (), {}, "L3", True, ("colour",), {"pure": ()}, dict]))
def test_specs(kind, given_names, field, junk):
    spec = judge(lambda: spec_for(kind.value), {"kind": kind})
    if spec is None:
        return
    assert spec_of(make_mechanism(kind.value, **spec.sample_parameters[0])) is spec
    assert spec.measures == tuple(spec.budgets) and "epsilon" in spec.epsilon_budget()
    measure, error = attempt(lambda: spec.measure_of(given_names))
    if error is None:
        assert set(spec.budgets[measure]) == set(given_names)
    else:
        assert any(names(error, n) for n in ("epsilon", "rho", "none")), error
    fields = {name: getattr(spec, name) for name in spec.__dataclass_fields__}
    fields["budgets"] = dict(spec.budgets)
    fields[field] = junk
    rebuilt, error = attempt(lambda: MechanismSpec(**fields))
    assert error is not None or rebuilt.kind == spec.kind
    with pytest.raises(TypeError):
        spec_of(object())
    case = AuditCase(0.0, 1.0, (0.5,))
    assert case.x_prime - case.x == 1.0


@pytest.mark.slow
@covers("mechanisms.catalogue.audit_claim", "mechanisms.catalogue.ClaimAudit",
        "mechanisms.catalogue.ClaimAudit.refuted")
@PROPERTY
@given(kind=st.sampled_from(KINDS), samples=trial_counts(none_ok=False, hi=30),
       confidence=probability(zero_ok=False, nice_hi=0.99), delta=st.one_of(
           st.none(), st.just(Arg(0.0, "nice")), probability(zero_ok=True)),
       factor=positive(0.5, 2.0), rng=rngs())
def test_audit_claim(kind, samples, confidence, delta, factor, rng):
    mech = make_mechanism(kind, **CATALOGUE[kind].sample_parameters[0])
    delta_value = None if delta is None else delta.value
    args = {"samples": samples, "confidence": confidence, "noise_factor": factor, "rng": rng}
    if delta is not None:  # a valid delta may still be one the claim cannot be read at
        args["delta"] = Arg(delta.value, "extreme" if delta.tag == "nice" else delta.tag)
    with bounded_time():
        result = ok(lambda: audit_claim(mech, rng=rng.value, samples=samples.value,
                                        confidence=confidence.value, delta=delta_value,
                                        noise_factor=factor.value), args)
    if result is not None:
        assert result.claimed_epsilon >= 0 and result.result.samples == samples.value
        assert result.refuted == (result.result.epsilon_lower_bound > result.claimed_epsilon)


GAUSS = Gaussian(sensitivity=1.0, scale=1.0)



LAPLACE = Laplace(sensitivity=1.0, scale=1.0)



BOUNDED = BoundedLaplace(sensitivity=1.0, lower=0.0, upper=1.0, epsilon=1.0)



CLAMPED = ClampedLaplace(sensitivity=1.0, lower=0.0, upper=1.0, scale=1e-3)



FAR_CLAMPED = ClampedLaplace(sensitivity=1.0, lower=1e308, upper=1.5e308, scale=1.0)



def gaussian_accuracy_at_tiny_beta():
    # was inf (beta/2 underflowed); the root of log Φ(−z) = log(beta/2), found here directly
    z = brentq(lambda t: float(log_ndtr(-t)) - (math.log(TINY) - math.log(2)), 1.0, 60.0,
               xtol=1e-14)
    assert finite(lambda: GAUSS.accuracy(TINY)) == pytest.approx(z, rel=1e-12)



#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: commit before it) and passes after it.
REGRESSIONS = {
    "DiscreteGaussian.delta_for_epsilon(2.77e307): OverflowError (floor of an infinite "
    "threshold)": lambda: finite(lambda: DiscreteGaussian(
        sensitivity=1, epsilon=1.0, delta=1e-3).delta_for_epsilon(2.7728016134853587e307))
    == 0.0,
    "DiscreteGaussian(epsilon=1e300, delta=1e-3): (k/σ)² overflow in its law": lambda: (
        finite(lambda: DiscreteGaussian(sensitivity=1, epsilon=1e300, delta=1e-3).scale)
        < 1e-100),
    "Laplace(sensitivity=1e300, epsilon=1e-300): scale inf": lambda: refused(
        lambda: Laplace(sensitivity=1e300, epsilon=1e-300), "epsilon"),
    "Laplace(sensitivity=5e-324, epsilon=2): scale 0": lambda: refused(
        lambda: Laplace(sensitivity=TINY, epsilon=2.0), "epsilon"),
    "Laplace(scale=1e200).variance(): OverflowError": lambda: refused(
        lambda: Laplace(sensitivity=1.0, scale=1e200).variance(0.0), "scale"),
    "Gaussian(5e-324, rho=5e-324).zcdp: ZeroDivisionError": lambda: (
        finite(lambda: Gaussian(sensitivity=TINY, rho=TINY).zcdp.rho) == TINY),
    "Gaussian(5e-324, epsilon=1, delta=1e-9): hung forever": lambda: refused(
        lambda: Gaussian(sensitivity=TINY, epsilon=1.0, delta=1e-9), "epsilon"),
    "Gaussian(epsilon=1e100): RuntimeError, root not bracketed": lambda: (
        finite(lambda: Gaussian(sensitivity=1.0, epsilon=1e100, delta=0.5)).privacy
        .epsilon == 1e100),
    "Gaussian.delta_for_epsilon(1e300): NaN": lambda: (
        finite(lambda: GAUSS.delta_for_epsilon(1e300)) == 0.0),
    "Gaussian.accuracy(5e-324): inf": gaussian_accuracy_at_tiny_beta,
    "Laplace.accuracy(5e-324): inf": lambda: (
        finite(lambda: LAPLACE.accuracy(TINY)) == pytest.approx(-math.log(TINY))),
    "Geometric.accuracy(5e-324): inf": lambda: (
        finite(lambda: Geometric(sensitivity=1, scale=1.0).accuracy(TINY)) > 700),
    "Laplace(scale=0.5).error_cdf(±1.8e308): overflow warning": lambda: (
        finite(lambda: Laplace(sensitivity=1.0, scale=0.5).error_cdf([-HUGE, HUGE]))
        .tolist() == [0.0, 1.0]),
    "Laplace.error_cdf(complex array): imaginary part dropped": lambda: refused(
        lambda: LAPLACE.error_cdf(np.array([1 + 1j])), "x", TypeError),
    "Geometric.sample(ragged): numpy's message": lambda: refused(
        lambda: Geometric(sensitivity=1, scale=1.0).sample(
            [[1], [1, 2]], rng=np.random.default_rng(0)), "values", TypeError),
    "BoundedLaplace.accuracy(true_value=2): named values": lambda: refused(
        lambda: BOUNDED.accuracy(0.05, 2.0), "true_value"),
    "BoundedLaplace.error_cdf(x, true_value) mismatch: numpy's message": lambda: refused(
        lambda: BOUNDED.error_cdf([0.0, 1.0, 2.0], [0.5, 0.5]), "x"),
    "ClampedLaplace(lower=-1.8e308, upper=1.8e308): width inf": lambda: refused(
        lambda: ClampedLaplace(sensitivity=1.0, lower=-HUGE, upper=HUGE, epsilon=1.0),
        "upper"),
    "ClampedLaplace.bias(-1e306) at scale 1e-3: NaN (inf − inf)": lambda: (
        finite(lambda: CLAMPED.bias(-1e306)) == pytest.approx(1e306)),
    "ClampedLaplace.bias beyond float64: inf": lambda: refused(
        lambda: FAR_CLAMPED.bias(-1e308), "values"),
    "Geometric.error_cdf(±1.8e308) at scale 0.5: overflow warning": lambda: (
        finite(lambda: Geometric(sensitivity=1, scale=0.5).error_cdf([-HUGE, HUGE]))
        .tolist() == [0.0, 1.0]),
    "Geometric.error_pmf(1.8e308) at scale 0.5: overflow warning": lambda: (
        finite(lambda: Geometric(sensitivity=1, scale=0.5).error_pmf([HUGE]))
        .tolist() == [0.0]),
    "Gaussian(epsilon=9e307, delta=0.5): rho overflow named sensitivity and scale": lambda: (
        refused(lambda: Gaussian(sensitivity=1.0, epsilon=8.988465674327692e307,
                                          delta=0.5), "epsilon")),
    "BoundedLaplace(sensitivity=5e-324, epsilon=2): 'math domain error'": lambda: refused(
        lambda: BoundedLaplace(sensitivity=TINY, lower=0.0, upper=1.0, epsilon=2.0),
        "sensitivity"),
    "BoundedLaplace(epsilon=5e-324): ZeroDivisionError": lambda: refused(
        lambda: BoundedLaplace(sensitivity=1.0, lower=0.0, upper=1.0, epsilon=TINY),
        "epsilon"),
    "advanced_composition(PureDP(5e-324), 1, 0.999999): epsilon rounded down to 0": lambda: (
        measures.advanced_composition(PureDP(TINY), 1, 0.999999).epsilon > 0),
    "BoundedLaplace(lower=0, upper=5e-324, scale=1): 0/0 in its masses": lambda: refused(
        lambda: BoundedLaplace(sensitivity=1.0, lower=0.0, upper=TINY, scale=1.0),
        "upper"),
    "BoundedLaplace(upper=5e-324, delta=0.5, scale=1): named the width, not delta": lambda: (
        refused(lambda: BoundedLaplace(sensitivity=1.0, lower=0.0, upper=TINY,
                                                delta=0.5, scale=1.0), "delta")),
    "BoundedLaplace(width 1e-120, epsilon=4e203): math domain error": lambda: refused(
        lambda: BoundedLaplace(sensitivity=1.0, lower=0.0, upper=9.67e-121,
                                        epsilon=3.9e203), "epsilon"),
    "Laplace(sensitivity=1, epsilon=3.7).privacy: epsilon an ulp above 3.7": lambda: (
        Laplace(sensitivity=1.0, epsilon=3.7).privacy.epsilon <= 3.7),
    "Gaussian(sensitivity=1, rho=0.3).zcdp: rho an ulp above 0.3": lambda: (
        Gaussian(sensitivity=1.0, rho=0.3).zcdp.rho <= 0.3),
    "ClampedLaplace.mse(1e300) on [0, 10]: inf (bias squared)": lambda: refused(
        lambda: ClampedLaplace(sensitivity=1.0, lower=0.0, upper=10.0,
                                        epsilon=1.0).mse([1e300]), "values"),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    run_regression(check)


@covers("mechanisms.base.ReleaseRecipe")
@given(opendp=st.sampled_from(["make_laplace", "make_gaussian", "make_other", ""]),
       certifies=st.sampled_from(["epsilon", "rho", "delta"]),
       pipeline=st.sampled_from([None, "LAPLACE", "GAUSSIAN", "laplace"]),
       reason=st.sampled_from(["", "no such noise"]))
def test_release_recipe(opendp, certifies, pipeline, reason):
    """A recipe names an OpenDP constructor and what it certifies, and either a PipelineDP
    noise or why there is none; anything else is refused naming the field. Every catalogue
    kind has a recipe or says why it cannot be released."""
    from dpcore.mechanisms import CATALOGUE
    from dpcore.mechanisms.base import ReleaseRecipe

    valid = (opendp in ("make_laplace", "make_gaussian") and certifies in ("epsilon", "rho")
             and pipeline in (None, "LAPLACE", "GAUSSIAN") and (pipeline is None) == bool(reason))
    if valid:
        recipe = ReleaseRecipe(opendp, certifies, pipeline_dp=pipeline,
                               pipeline_dp_reason=reason)
        assert (recipe.opendp, recipe.certifies) == (opendp, certifies)
    else:
        with pytest.raises(ValueError, match="opendp|certifies|pipeline_dp"):
            ReleaseRecipe(opendp, certifies, pipeline_dp=pipeline, pipeline_dp_reason=reason)
    for spec in CATALOGUE.values():
        assert (spec.release is None) == bool(spec.unreleasable), spec.kind
