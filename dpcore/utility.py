"""Privacy–utility trade-offs: error and selection accuracy swept over a grid of epsilons.

Also the smallest epsilon that meets an accuracy target, for the catalogue's mechanisms and
for selection. Nothing here knows a mechanism by name: the specs and classes say it all.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import (
    MAX_DRAWS,
    check_bounds,
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_probability_open,
    check_rng,
    check_trials,
    finite_array,
    numeric_array,
    trial_chunks,
)
from dpcore.measures import ZCDP, PureDP
from dpcore.mechanisms import AdditiveMechanism, MechanismSpec, make_mechanism, spec_for
from dpcore.selection import (
    _check_flag,
    _check_scores,
    noisy_max_scale,
    prob_best_selected,
    prob_top_k_recovered,
)

__all__ = [
    "EPSILON_RANGE",
    "SmallestEpsilon",
    "error_sweep",
    "monte_carlo_sweep",
    "monte_carlo_error_sweep",
    "selection_sweep",
    "smallest_epsilon",
    "smallest_epsilon_for_selection",
]

#: The epsilons :func:`smallest_epsilon` and :func:`smallest_epsilon_for_selection` search.
EPSILON_RANGE = (1e-4, 1e3)

# The error measures every sweep reports; each gets a ``relative_<name>`` twin (divided by
# |true value|) when a scalar true value is given.
_ANALYTIC_KEYS = ("alpha", "rmse", "mae")
_MONTE_CARLO_KEYS = ("alpha", "rmse", "mae", "median", "p05", "p95")

# Relative width at which the bisections stop: far below the 0.1% step a caller can see.
_BISECTION_RTOL = 1e-10
# Nudge factor for an answer that misses the target by floating-point rounding only.
_NUDGE = 1 + 2.0**-40


class SmallestEpsilon(NamedTuple):
    """The answer of :func:`smallest_epsilon` and :func:`smallest_epsilon_for_selection`.

    Attributes
    ----------
    epsilon
        The smallest epsilon in :data:`EPSILON_RANGE` at which the target is met.
    met_at_lower_end
        True when the target is met already at the lowest epsilon searched, 1e-4 (then
        ``epsilon`` is that lower end): e.g. an error bound at least the width of a bounded
        domain, which every epsilon meets, or a single candidate, always selected.
    """

    epsilon: float
    met_at_lower_end: bool


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _check_epsilons(epsilons: ArrayLike, name: str = "epsilons") -> NDArray[np.float64]:
    grid = finite_array(name, epsilons, min_size=1)
    if grid.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional grid, got shape {grid.shape}")
    if not np.all(grid > 0):
        raise ValueError(f"{name} must all be > 0")
    return grid


def _options(spec: MechanismSpec, options: dict[str, object]) -> dict[str, object]:
    """The keyword arguments of ``make_mechanism`` besides sensitivity and epsilon.

    An option given as None counts as not given. Options the kind does not take are refused;
    the rest of an epsilon budget (delta, for a mechanism that is not pure DP) and an answer
    range are required when the kind needs them.
    """
    given = {name: value for name, value in options.items() if value is not None}
    allowed = set(spec.parameters) - {"epsilon", "rho", "scale"}
    unused = sorted(set(given) - allowed)
    if unused:
        verb = "does" if len(unused) == 1 else "do"
        raise ValueError(f"{' and '.join(unused)} {verb} not apply to the {spec.kind} mechanism")
    budget = spec.epsilon_budget()
    for name in budget:
        if name != "epsilon" and name not in given:
            raise ValueError(f"{name} is required for the {spec.kind} mechanism (approximate "
                             "DP)")
    if "delta" in given:
        given["delta"] = check_delta("delta", given["delta"], allow_zero="delta" not in budget)
    if spec.needs_range and not {"lower", "upper"} <= set(given):
        raise ValueError(f"the {spec.kind} mechanism needs lower and upper")
    return given


def _check_scalar_true_value(true_value: object, spec: MechanismSpec) -> float | None:
    if true_value is None:
        if spec.needs_range:
            raise ValueError(f"true_value is required for the {spec.kind} mechanism: its error "
                             "depends on where the true value lies between the bounds")
        return None
    arr = finite_array("true_value", true_value)
    if arr.ndim != 0:
        raise ValueError(f"true_value must be a single number, got shape {arr.shape}")
    return float(arr)


def _check_in_domain(spec: MechanismSpec, truth: float | NDArray | None,
                     options: dict[str, object]) -> None:
    """True values in [lower, upper] where the spec requires it. Checked before any
    calibration, so that a true value outside is named even when an extreme epsilon would be
    refused too."""
    if not spec.true_value_in_range or truth is None:
        return
    lo, hi = check_bounds(options["lower"], options["upper"])
    arr = np.asarray(truth)
    if arr.size and not (arr.min() >= lo and arr.max() <= hi):
        raise ValueError(f"true_value must lie in [lower, upper] = [{lo:g}, {hi:g}], the "
                         f"{spec.label} mechanism's domain; clamp it first")


def _sensitivity_for(spec: MechanismSpec, sensitivity: float,
                     l2_sensitivity: float | None) -> float:
    """The sensitivity the spec calibrates to (L2 when given and the spec says so)."""
    sensitivity = check_positive("sensitivity", sensitivity)
    name, chosen = "sensitivity", sensitivity
    if l2_sensitivity is not None:
        l2 = check_positive("l2_sensitivity", l2_sensitivity)
        if spec.sensitivity_norm == "L2":
            name, chosen = "l2_sensitivity", l2
    if spec.integer_only and not chosen.is_integer():
        raise ValueError(f"{name} must be a whole number for the {spec.kind} mechanism, got "
                         f"{chosen:g}")
    return chosen


def _with_relative(result: dict[str, NDArray], keys: tuple[str, ...],
                   true_value: float | None) -> dict[str, NDArray]:
    """Add ``relative_<key>`` = value / |true value| (inf where the true value is 0, or so
    near 0 that the ratio is beyond float64: a relative error that large is as undefined)."""
    if true_value is None:
        return result
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for key in keys:
            result[f"relative_{key}"] = np.where(
                result[key] == 0, 0.0, result[key] / abs(true_value))
    return result


# --------------------------------------------------------------------------------------------
# analytic error sweeps
# --------------------------------------------------------------------------------------------


def error_sweep(
    kind: str,
    *,
    epsilons: ArrayLike,
    sensitivity: float,
    beta: float = 0.05,
    true_value: float | None = None,
    l2_sensitivity: float | None = None,
    **options: float | None,
) -> dict[str, NDArray[np.float64]]:
    """Exact error measures of one mechanism of the catalogue at every epsilon of a grid.

    Parameters
    ----------
    kind : str
        A key of ``dpcore.mechanisms.CATALOGUE``.
    epsilons : array_like, shape (n,)
        The grid (each > 0).
    sensitivity : float
        L1 sensitivity (a kind calibrated to the L2 sensitivity uses ``l2_sensitivity`` when
        given, else this).
    beta : float
        Failure probability of the error bound: ``alpha`` holds with probability 1 − beta.
    true_value : float, optional
        Required by the kinds with an answer range; when given, relative errors are reported
        too.
    l2_sensitivity : float, optional
    **options
        The kind's other parameters: ``delta`` (required when it is not pure DP, as for the
        Gaussian), ``lower`` and ``upper`` (required by the kinds with an answer range),
        ``gamma``...

    Returns
    -------
    dict of str to ndarray, each shape (n,)
        ``epsilon``; ``scale`` (noise scale); ``alpha`` (smallest error bound with
        P(|error| > alpha) <= beta, as the mechanism's ``accuracy``); ``rmse`` (sqrt of
        E[error²], bias included); ``mae`` (E|error|); with ``true_value``, also
        ``relative_alpha``, ``relative_rmse``, ``relative_mae`` (divided by |true_value|, inf
        when it is 0 or so near 0 that the ratio is beyond float64).

    Notes
    -----
    The numbers come from the mechanism class's ``sweep``: closed forms vectorised over the
    grid where the class has them, else the mechanism built at each epsilon.
    """
    spec = spec_for(kind)
    grid = _check_epsilons(epsilons)
    beta = check_probability_open("beta", beta)
    sens = _sensitivity_for(spec, sensitivity, l2_sensitivity)
    given = _options(spec, options)
    q = _check_scalar_true_value(true_value, spec)
    _check_in_domain(spec, q, given)
    measures = spec.mechanism.sweep(grid, sensitivity=sens, beta=beta, true_value=q, **given)
    result = {"epsilon": grid, **{key: np.asarray(measures[key], dtype=np.float64)
                                  for key in ("scale", *_ANALYTIC_KEYS)}}
    return _with_relative(result, _ANALYTIC_KEYS, q)


# --------------------------------------------------------------------------------------------
# Monte Carlo error sweeps
# --------------------------------------------------------------------------------------------

#: A release to simulate: (epsilon, trials, rng) → noisy answers of shape (trials, *true.shape).
Release = Callable[[float, int, np.random.Generator], ArrayLike]


def monte_carlo_sweep(
    release: Release,
    *,
    epsilons: ArrayLike,
    true_value: ArrayLike,
    trials: int,
    rng: np.random.Generator,
    beta: float = 0.05,
) -> dict[str, NDArray[np.float64]]:
    """Simulated error of any release — a mean, a post-processed table — at each epsilon.

    Parameters
    ----------
    release : callable
        ``release(epsilon, n, rng)`` returns ``n`` simulated releases, shape
        ``(n, *true_value.shape)``.
    epsilons : array_like, shape (m,)
    true_value : array_like
        The true answer (scalar or array; for an array every cell's error counts).
    trials : int
        Simulated releases per epsilon.
    rng : numpy.random.Generator
    beta : float
        ``alpha`` is the empirical (1 − beta) quantile of |error|.

    Returns
    -------
    dict of str to ndarray, each shape (m,)
        ``epsilon``; quantiles of |error| over all releases and cells — ``p05``, ``median``,
        ``p95``, ``alpha`` (at 1 − beta; the sample version of the analytic ``alpha``); ``mae``
        and ``rmse``; with a scalar ``true_value``, ``relative_<each>`` too (inf as in
        :func:`error_sweep`).

    Notes
    -----
    Releases are simulated in chunks of at most MAX_BLOCK_ELEMENTS cells (``trial_chunks``), so
    memory stays bounded however many trials are asked for. Quantiles are the sample
    quantiles (``inverted_cdf``: the smallest value with at least that share of errors at or
    below it) when one chunk holds all trials; otherwise the chunk-size-weighted mean of the
    chunks' quantiles, each over about 4 million errors, whose bias (order 1/chunk size) is far
    below the Monte Carlo noise. MAE and RMSE are exact running sums.
    """
    grid = _check_epsilons(epsilons)
    truth = finite_array("true_value", true_value, min_size=1)  # no errors to summarise else
    trials = check_trials(trials)
    if trials is None:
        raise ValueError("trials must be a positive integer")
    rng = check_rng(rng)
    beta = check_probability_open("beta", beta)
    levels = np.array([0.05, 0.5, 0.95, 1 - beta])
    out = {key: np.empty(grid.size) for key in _MONTE_CARLO_KEYS}
    chunks = trial_chunks(trials, truth.size)
    draws = trials * truth.size * grid.size  # the bound on one call's work covers the sweep
    if draws > MAX_DRAWS:
        raise ValueError(
            f"trials × values per release × epsilons = {draws:,} simulated values, more than "
            f"the {MAX_DRAWS:,} one sweep may use: ask for at most "
            f"{max(1, MAX_DRAWS // (truth.size * grid.size)):,} trials")
    for i, eps in enumerate(grid):
        quantiles = np.zeros(levels.size)
        abs_sum = square_sum = 0.0
        for n in chunks:
            noisy = numeric_array("the release's output", release(float(eps), n, rng))
            if noisy.shape != (n, *truth.shape):
                raise ValueError(f"release returned shape {noisy.shape}, expected "
                                 f"{(n, *truth.shape)}")
            if not np.all(np.isfinite(noisy)):
                raise ValueError(f"release returned NaN or inf at epsilon = {eps:g}")
            with np.errstate(over="ignore"):  # checked below, once per epsilon
                err = np.abs(noisy - truth).ravel()
                abs_sum += float(err.sum())
                square_sum += float(np.dot(err, err))
            if not math.isfinite(square_sum):
                raise ValueError(f"the errors of release against true_value at epsilon = "
                                 f"{eps:g} are too large for float64")
            quantiles += np.quantile(err, levels, method="inverted_cdf") * (n / trials)
        cells = trials * truth.size
        out["p05"][i], out["median"][i], out["p95"][i], out["alpha"][i] = quantiles
        out["mae"][i] = abs_sum / cells
        out["rmse"][i] = math.sqrt(square_sum / cells)
    result = {"epsilon": grid, **out}
    return _with_relative(result, _MONTE_CARLO_KEYS, float(truth) if truth.ndim == 0 else None)


def monte_carlo_error_sweep(
    kind: str,
    *,
    epsilons: ArrayLike,
    sensitivity: float,
    true_value: ArrayLike,
    trials: int,
    rng: np.random.Generator,
    beta: float = 0.05,
    l2_sensitivity: float | None = None,
    **options: float | None,
) -> dict[str, NDArray[np.float64]]:
    """Simulated error of one mechanism at each epsilon: median, 5–95% band, MAE, RMSE.

    Parameters are those of :func:`error_sweep` (``true_value`` always required, scalar or
    array) plus ``trials`` simulated releases per epsilon and ``rng``. Returns what
    :func:`monte_carlo_sweep` returns; the analytic curves of :func:`error_sweep` should run
    through it (``alpha`` near the analytic alpha, ``mae`` near the analytic MAE).
    """
    spec = spec_for(kind)
    sens = _sensitivity_for(spec, sensitivity, l2_sensitivity)
    given = _options(spec, options)
    truth = finite_array("true_value", true_value)
    _check_in_domain(spec, truth, given)
    built: dict[float, AdditiveMechanism] = {}

    def release(eps: float, n: int, gen: np.random.Generator) -> NDArray:
        if eps not in built:  # one calibration per epsilon, not one per chunk
            built.clear()
            built[eps] = make_mechanism(kind, sensitivity=sens, epsilon=eps, **given)
        return built[eps].sample(truth, rng=gen, trials=n)

    return monte_carlo_sweep(release, epsilons=epsilons, true_value=truth, trials=trials,
                             rng=rng, beta=beta)


# --------------------------------------------------------------------------------------------
# selection sweeps
# --------------------------------------------------------------------------------------------


def _selection_scale(value: float, *, measure: str, noise: str, sensitivity: float,
                     monotonic: bool, k: int) -> float:
    privacy = PureDP(value) if measure == "pure" else ZCDP(value)
    return noisy_max_scale(privacy, sensitivity=sensitivity, noise=noise, monotonic=monotonic,
                           k=k)


def selection_sweep(
    scores: ArrayLike,
    *,
    noise: str,
    epsilons: ArrayLike,
    sensitivity: float = 1.0,
    monotonic: bool = False,
    measure: str = "pure",
    k: int = 1,
    negate: bool = False,
    trials: int = 10_000,
    rng: np.random.Generator | None = None,
) -> dict[str, NDArray[np.float64]]:
    """How often report noisy max (or noisy top-k) picks the right answer, at each epsilon.

    Parameters
    ----------
    scores : array_like, shape (d,)
        One score per candidate (e.g. the count of each category).
    noise : {"laplace", "exponential", "gumbel"}
    epsilons : array_like, shape (m,)
        Privacy levels: epsilon when ``measure="pure"``, rho when ``measure="zcdp"``. The
        noise scale at each is :func:`dpcore.selection.noisy_max_scale` (whole budget over k).
    sensitivity : float
        L∞ sensitivity of the scores (1 for counts under add/remove one row).
    monotonic : bool
        True when every score moves the same way between neighbours (counts do).
    measure : {"pure", "zcdp"}
    k : int
        Number selected. k = 1: ``p_correct`` is the exact probability that a best candidate
        is selected (:func:`dpcore.selection.prob_best_selected`; a tie for best counts as
        correct whichever tied candidate wins). k > 1: ``p_correct`` is the Monte Carlo
        probability that the k selected are a true top-k set
        (:func:`dpcore.selection.prob_top_k_recovered`, ``trials`` releases; needs ``rng``).
    negate : bool
        The smallest score is the right answer instead.
    trials : int
    rng : numpy.random.Generator, optional

    Returns
    -------
    dict of str to ndarray, each shape (m,)
        ``epsilon`` (the grid), ``scale``, ``p_correct``.
    """
    grid = _check_epsilons(epsilons)
    measure = check_choice("measure", measure, ("pure", "zcdp"))
    sensitivity = check_positive("sensitivity", sensitivity)
    scores_arr = finite_array("scores", scores, min_size=1)
    if scores_arr.ndim != 1:  # before k, whose range depends on it
        raise ValueError(f"scores must be a one-dimensional vector, got shape {scores_arr.shape}")
    k = check_int("k", k, minimum=1, maximum=max(1, scores_arr.size))
    # before the scales, which an extreme epsilon may refuse first
    negate = _check_flag("negate", negate)
    if k > 1:
        if rng is None:
            raise ValueError("rng is required for k > 1 (P(top-k recovered) is simulated)")
        rng = check_rng(rng)
        trials = check_int("trials", trials, minimum=1)
    scale = np.array([_selection_scale(float(e), measure=measure, noise=noise,
                                       sensitivity=sensitivity, monotonic=monotonic, k=k)
                      for e in grid])
    if k == 1:
        p = [prob_best_selected(scores_arr, scale=s, noise=noise, negate=negate) for s in scale]
    else:
        p = [prob_top_k_recovered(scores_arr, k, scale=s, noise=noise, negate=negate,
                                  trials=trials, rng=rng) for s in scale]
    return {"epsilon": grid, "scale": scale, "p_correct": np.asarray(p, dtype=np.float64)}


# --------------------------------------------------------------------------------------------
# the smallest epsilon meeting a target
# --------------------------------------------------------------------------------------------


def _bisect_log(met: Callable[[float], bool], lo: float, hi: float) -> float:
    """Smallest epsilon in (lo, hi] with met(epsilon), for met monotone (False at lo, True at hi).

    Bisection on log epsilon to a relative width of 1e-10; returns the end that meets it.
    """
    log_lo, log_hi = math.log(lo), math.log(hi)
    while log_hi - log_lo > _BISECTION_RTOL:
        mid = 0.5 * (log_lo + log_hi)
        if met(math.exp(mid)):
            log_hi = mid
        else:
            log_lo = mid
    eps = math.exp(log_hi)
    while not met(eps):  # exp(log) can round just below the end that was tested
        eps *= _NUDGE
    return eps


def _nudge_up(eps: float, met: Callable[[float], bool]) -> float:
    """Raise a closed-form answer by a few ulps until the mechanism itself confirms it."""
    for _ in range(10_000):
        if met(eps):
            return eps
        eps *= _NUDGE
    raise RuntimeError("the closed-form epsilon did not meet the target")  # pragma: no cover


def _in_range(eps: float, met: Callable[[float], bool], why: str) -> SmallestEpsilon:
    """Place a closed-form answer in EPSILON_RANGE: clip below, refuse above."""
    low, high = EPSILON_RANGE
    if eps <= low and met(low):  # building the mechanism at low also validates its scale
        return SmallestEpsilon(low, True)
    eps = max(eps, low)
    if eps > high:
        raise ValueError(f"the target needs epsilon = {eps:.4g}, above the largest epsilon "
                         f"searched ({high:g}): {why}")
    return SmallestEpsilon(_nudge_up(eps, met), False)


def _unreachable(spec: MechanismSpec, sens: float, alpha: float, q: float | None,
                 options: dict[str, object]) -> str:
    """Why no epsilon up to the largest searched meets the target, in the user's terms."""
    high = EPSILON_RANGE[1]
    mech = make_mechanism(spec.kind, sensitivity=sens, epsilon=high, **options)
    bias = float(np.max(np.abs(mech.bias(0.0 if q is None else q))))
    if alpha < bias:
        why = (f"even at epsilon = {high:g} its bias alone is {bias:.4g}, above alpha "
               f"({alpha:g})")
        lo, hi = options.get("lower"), options.get("upper")
        if q is not None and lo is not None and not lo <= q <= hi:
            why += (f": the true value {q:g} lies outside [lower, upper] = [{lo:g}, {hi:g}], "
                    "so every noisy answer errs by at least that distance; raise alpha or "
                    "widen the bounds")
        return why
    return "alpha is too small for this mechanism even at the largest epsilon"


def smallest_epsilon(
    mechanism: str,
    *,
    sensitivity: float,
    alpha: float,
    beta: float,
    true_value: float | None = None,
    **options: float | None,
) -> SmallestEpsilon:
    """The smallest epsilon at which P(|error| > alpha) <= beta.

    Searched over :data:`EPSILON_RANGE` = [1e-4, 1e3]. ``mechanism`` is a kind of the
    catalogue; ``sensitivity`` is the one its spec calibrates to (the L2 one for the
    Gaussian); ``options`` its other parameters as in :func:`error_sweep` (``true_value`` is
    required by the kinds with an answer range).

    When the mechanism's class has a closed form (``epsilon_for_accuracy``: Laplace
    sensitivity·ln(1/beta)/alpha; the Gaussian's exact privacy profile at the largest sigma
    allowed; the geometric's whole-number tail) it is used; otherwise a bisection on log
    epsilon of the mechanism's own ``accuracy(beta, true_value) <= alpha``, which is
    monotone in epsilon. Every answer is confirmed, and if need be raised by a few ulps, so
    that the mechanism built at the returned epsilon meets the target in floating point.

    Returns
    -------
    SmallestEpsilon
        ``(epsilon, met_at_lower_end)``. When the target is met even at 1e-4 — an alpha at least
        the largest error a bounded mechanism can make, or a very loose target — ``epsilon`` is
        1e-4 and ``met_at_lower_end`` is True.

    Raises
    ------
    ValueError
        For invalid parameters, and when no epsilon up to 1e3 meets the target: e.g. a clamped
        Laplace whose true value lies outside the bounds errs by at least that distance (its
        bias) at every epsilon.
    """
    spec = spec_for(mechanism)
    sens = check_positive("sensitivity", sensitivity)
    alpha = check_positive("alpha", alpha)
    beta = check_probability_open("beta", beta)
    given = _options(spec, options)
    q = _check_scalar_true_value(true_value, spec)
    _check_in_domain(spec, q, given)

    def met(eps: float) -> bool:
        mech = make_mechanism(spec.kind, sensitivity=sens, epsilon=eps, **given)
        return bool(mech.accuracy(beta, q) <= alpha)

    closed = spec.mechanism.epsilon_for_accuracy(alpha, beta, sensitivity=sens, **given)
    if closed is not None:
        at = " and ".join(["sensitivity", *(n for n in spec.epsilon_budget() if n != "epsilon")])
        return _in_range(closed, met, f"alpha is too small for {spec.label} noise at this {at}")
    low, high = EPSILON_RANGE
    if met(low):
        return SmallestEpsilon(low, True)
    if not met(high):
        raise ValueError(f"no epsilon up to {high:g} meets P(|error| > {alpha:g}) <= "
                         f"{beta:g}: {_unreachable(spec, sens, alpha, q, given)}")
    return SmallestEpsilon(_bisect_log(met, low, high), False)


def smallest_epsilon_for_selection(
    scores: ArrayLike,
    *,
    noise: str,
    sensitivity: float = 1.0,
    monotonic: bool = False,
    target: float,
    negate: bool = False,
) -> SmallestEpsilon:
    """The smallest epsilon (pure DP) at which report noisy max picks a best score with
    probability at least ``target``.

    "Correct" is as in :func:`dpcore.selection.prob_best_selected`: when several candidates
    tie for the best score, selecting any of them is correct, so ties never make a target
    unreachable (P(correct) -> 1 as epsilon grows). The probability is exact (closed form or
    quadrature) and increases with epsilon; the answer is found by bisection on log epsilon
    over :data:`EPSILON_RANGE`.

    Parameters
    ----------
    scores : array_like, shape (d,)
    noise : {"laplace", "exponential", "gumbel"}
    sensitivity : float
        L∞ sensitivity of the scores.
    monotonic : bool
    target : float
        Wanted probability of a correct answer, in (0, 1).
    negate : bool
        The smallest score is the right answer instead.

    Returns
    -------
    SmallestEpsilon
        ``met_at_lower_end`` is True when even epsilon = 1e-4 reaches the target (a single
        candidate, or a target at most the share of tied best candidates, the blind-guess rate).

    Raises
    ------
    ValueError
        For invalid parameters, and when even epsilon = 1e3 misses the target (the best score
        leads by too little for the noise at that epsilon).
    """
    target = check_probability_open("target", target)
    # scores and negate before the scales, which an extreme sensitivity may refuse first
    scores_arr = _check_scores(scores)
    negate = _check_flag("negate", negate)
    sensitivity = check_positive("sensitivity", sensitivity)

    def p_correct(eps: float) -> float:
        scale = noisy_max_scale(PureDP(eps), sensitivity=sensitivity, noise=noise,
                                monotonic=monotonic)
        return prob_best_selected(scores_arr, scale=scale, noise=noise, negate=negate)

    low, high = EPSILON_RANGE
    if p_correct(low) >= target:
        return SmallestEpsilon(low, True)
    best_at_high = p_correct(high)
    if best_at_high < target:
        raise ValueError(
            f"no epsilon up to {high:g} selects the best score with probability {target:.4g}: "
            f"at epsilon = {high:g} it is {best_at_high:.4g} (the lead of the best score is "
            "too small for the noise); lower the target")
    return SmallestEpsilon(_bisect_log(lambda e: p_correct(e) >= target, low, high), False)
