"""Privacy–utility trade-offs: error and selection accuracy swept over a grid of epsilons.

Also the smallest epsilon that meets an accuracy target, for additive mechanisms and selection.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import gammainc

from dpcore._checks import (
    MAX_DRAWS,
    check_bounds,
    check_choice,
    check_delta,
    check_finite,
    check_int,
    check_positive,
    check_probability_open,
    check_rng,
    check_trials,
    finite_array,
    numeric_array,
    trial_chunks,
)
from dpcore.additive import (
    _SCALE_RANGE,
    MECHANISM_KINDS,
    AdditiveMechanism,
    Gaussian,
    Geometric,
    _half_beta_quantile,
    make_mechanism,
)
from dpcore.measures import ZCDP, PureDP
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


def _check_kind(kind: object) -> str:
    return check_choice("kind", kind, MECHANISM_KINDS)


def _check_scalar_true_value(true_value: object, *, required: bool, kind: str) -> float | None:
    if true_value is None:
        if required:
            raise ValueError(f"true_value is required for the {kind} mechanism: its error "
                             "depends on where the true value lies between the bounds")
        return None
    arr = finite_array("true_value", true_value)
    if arr.ndim != 0:
        raise ValueError(f"true_value must be a single number, got shape {arr.shape}")
    return float(arr)


def _check_in_domain(kind: str, truth: float | NDArray | None,
                     options: dict[str, float | None]) -> None:
    """Bounded Laplace true values lie in [lower, upper]. Checked before any calibration, so
    that a true value outside is named even when an extreme epsilon would be refused too."""
    if kind != "bounded_laplace" or truth is None:
        return
    lo, hi = check_bounds(options["lower"], options["upper"])
    arr = np.asarray(truth)
    if arr.size and not (arr.min() >= lo and arr.max() <= hi):
        raise ValueError(f"true_value must lie in [lower, upper] = [{lo:g}, {hi:g}], the "
                         "bounded Laplace mechanism's domain; clamp it first")


def _mechanism_options(kind: str, *, delta: float | None, lower: float | None,
                       upper: float | None) -> dict[str, float | None]:
    """The keyword arguments of ``make_mechanism`` besides sensitivity and epsilon."""
    if kind in ("laplace", "gaussian", "geometric") and (lower is not None
                                                         or upper is not None):
        raise ValueError(f"lower and upper do not apply to the {kind} mechanism")
    if kind == "gaussian":
        if delta is None:
            raise ValueError("delta is required for the gaussian mechanism (approximate DP)")
        return {"delta": check_delta("delta", delta, allow_zero=False)}
    if kind in ("bounded_laplace", "clamped_laplace"):
        if lower is None or upper is None:
            raise ValueError(f"the {kind} mechanism needs lower and upper")
        options: dict[str, float | None] = {"lower": lower, "upper": upper}
        if kind == "bounded_laplace" and delta is not None:
            options["delta"] = delta
        elif delta is not None:
            raise ValueError("delta does not apply to the clamped_laplace mechanism")
        return options
    if delta is not None:
        raise ValueError(f"delta does not apply to the {kind} mechanism")
    return {}


def _sensitivity_for(kind: str, sensitivity: float, l2_sensitivity: float | None) -> float:
    sensitivity = check_positive("sensitivity", sensitivity)
    if l2_sensitivity is None:
        return sensitivity
    l2 = check_positive("l2_sensitivity", l2_sensitivity)
    return l2 if kind == "gaussian" else sensitivity


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


def _geometric_alpha(log_ratio: NDArray[np.float64], beta: float) -> NDArray[np.float64]:
    """Smallest whole a with P(|Z| > a) = 2 r^{a+1} / (1 + r) <= beta, for each log r.

    Takes log r = −epsilon/sensitivity itself: r underflows to 0 beyond epsilon ≈ 745."""
    ratio = np.exp(log_ratio)

    def log_tail(a: NDArray[np.float64]) -> NDArray[np.float64]:
        return math.log(2) + (a + 1) * log_ratio - np.log1p(ratio)

    log_beta = math.log(beta)
    a = np.maximum(0.0, np.ceil((log_beta - math.log(2) + np.log1p(ratio)) / log_ratio) - 1)
    # The ceiling is exact up to rounding of the logs: settle the last step either way.
    a = np.where(log_tail(a) > log_beta, a + 1, a)
    a = np.where((a > 0) & (log_tail(a - 1) <= log_beta), a - 1, a)
    return a


def _bounded_laplace_mae(scale: float, lower: float, upper: float, q: float) -> float:
    """E|error| of the bounded Laplace: ½ b (P(2, a) + P(2, c)) / (½ (P(1, a) + P(1, c)))."""
    a, c = (q - lower) / scale, (upper - q) / scale
    return scale * (gammainc(2, a) + gammainc(2, c)) / (gammainc(1, a) + gammainc(1, c))


def _clamped_laplace_mae(scale: NDArray, lower: float, upper: float, q: float) -> NDArray:
    """E|error| of the clamped Laplace.

    Inside the bounds, E|W| = ∫ P(|W| > t) dt = b (1 − ½(e^{−(u−q)/b} + e^{−(q−l)/b})); outside
    them the error has one sign, so E|W| = |E W| = |bias|.
    """
    # Distances of more than ~1e308 noise scales overflow to inf, where the exponentials are
    # rightly 0; outside the bounds the distance itself is added in the data's units, since
    # b·(distance / b) would be inf·b there.
    with np.errstate(over="ignore"):
        if lower < q < upper:
            return scale * (1 - 0.5 * (np.exp(-(upper - q) / scale)
                                       + np.exp(-(q - lower) / scale)))
        d = (upper - lower) / scale
        if q <= lower:
            a = (lower - q) / scale  # error = b·W with W in [a, a + d]
            return (lower - q) - 0.5 * scale * np.exp(-a) * np.expm1(-d)
        c = (q - upper) / scale
        return (q - upper) - 0.5 * scale * np.exp(-c) * np.expm1(-d)


def _pure_scales(sensitivity: float, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
    """sensitivity / epsilon per epsilon, each raised by an ulp where it rounded down: the
    scales the mechanisms built at those epsilons have (see ``additive._scale_within``)."""
    scale = sensitivity / epsilons
    short = sensitivity / scale > epsilons
    while np.any(short):
        scale[short] = np.nextafter(scale[short], np.inf)
        short = sensitivity / scale > epsilons
    return scale


def error_sweep(
    kind: str,
    *,
    epsilons: ArrayLike,
    sensitivity: float,
    beta: float = 0.05,
    delta: float | None = None,
    lower: float | None = None,
    upper: float | None = None,
    true_value: float | None = None,
    l2_sensitivity: float | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Exact error measures of one additive mechanism at every epsilon of a grid.

    Parameters
    ----------
    kind : {"laplace", "gaussian", "geometric", "bounded_laplace", "clamped_laplace"}
    epsilons : array_like, shape (n,)
        The grid (each > 0).
    sensitivity : float
        L1 sensitivity (the Gaussian uses ``l2_sensitivity`` when given, else this).
    beta : float
        Failure probability of the error bound: ``alpha`` holds with probability 1 − beta.
    delta : float, optional
        Required for "gaussian" (approximate DP); optional for "bounded_laplace".
    lower, upper : float, optional
        Required for "bounded_laplace" and "clamped_laplace".
    true_value : float, optional
        Required for the bounded and clamped mechanisms; when given, relative errors are
        reported too.
    l2_sensitivity : float, optional

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
    Closed forms in the noise scale b: Laplace alpha = b ln(1/beta), RMSE = √2 b, MAE = b;
    Gaussian alpha = sigma Φ⁻¹(1 − beta/2), RMSE = sigma, MAE = sigma √(2/π); geometric
    (r = e^{−ε/Δ}) RMSE = √(2r)/(1 − r), MAE = 2r/(1 − r²). Laplace, Gaussian and geometric
    are vectorized over the grid (the Gaussian and bounded Laplace scales are calibrated per
    grid point); the bounded and clamped mechanisms' error bound and variance come from the
    mechanism objects, their MAE from the truncated-Laplace moments.
    """
    kind = _check_kind(kind)
    grid = _check_epsilons(epsilons)
    beta = check_probability_open("beta", beta)
    sens = _sensitivity_for(kind, sensitivity, l2_sensitivity)
    options = _mechanism_options(kind, delta=delta, lower=lower, upper=upper)
    bounded = kind in ("bounded_laplace", "clamped_laplace")
    q = _check_scalar_true_value(true_value, required=bounded, kind=kind)
    _check_in_domain(kind, q, options)
    if kind == "geometric":
        Geometric(sensitivity=sens, epsilon=1.0)  # validates a whole-number sensitivity
    if kind in ("laplace", "geometric"):
        # Their scales, sensitivity / epsilon, are computed below without building the
        # mechanisms; building them at both ends of the grid validates every scale between.
        for end in (grid.min(), grid.max()):
            make_mechanism(kind, sensitivity=sens, epsilon=float(end))

    if kind == "laplace":
        scale = _pure_scales(sens, grid)
        alpha, rmse, mae = scale * -math.log(beta), math.sqrt(2) * scale, scale
    elif kind == "gaussian":
        scale = np.array([Gaussian(sensitivity=sens, epsilon=e, delta=options["delta"]).scale
                          for e in grid])
        alpha = -scale * _half_beta_quantile(beta)
        rmse, mae = scale, scale * math.sqrt(2 / math.pi)
    elif kind == "geometric":
        scale = _pure_scales(sens, grid)
        ratio = np.exp(-1 / scale)  # as additive.Geometric computes them
        one_minus = -np.expm1(-1 / scale)
        alpha = _geometric_alpha(-1 / scale, beta)
        rmse = np.sqrt(2 * ratio) / one_minus
        mae = 2 * ratio / (one_minus * (1 + ratio))
    else:
        mechanisms = [make_mechanism(kind, sensitivity=sens, epsilon=float(e), **options)
                      for e in grid]
        scale = np.array([m.scale for m in mechanisms])
        alpha = np.array([float(m.accuracy(beta, q)) for m in mechanisms])
        rmse = np.sqrt([float(m.mse(q)) for m in mechanisms])
        if kind == "bounded_laplace":
            mae = np.array([_bounded_laplace_mae(m.scale, m.lower, m.upper, q)
                            for m in mechanisms])
        else:
            mae = _clamped_laplace_mae(scale, float(lower), float(upper), q)
    result = {"epsilon": grid, "scale": np.asarray(scale, dtype=np.float64),
              "alpha": np.asarray(alpha, dtype=np.float64),
              "rmse": np.asarray(rmse, dtype=np.float64), "mae": np.asarray(mae, dtype=np.float64)}
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
    delta: float | None = None,
    lower: float | None = None,
    upper: float | None = None,
    l2_sensitivity: float | None = None,
) -> dict[str, NDArray[np.float64]]:
    """Simulated error of one additive mechanism at each epsilon: median, 5–95% band, MAE, RMSE.

    Parameters are those of :func:`error_sweep` (``true_value`` always required, scalar or
    array) plus ``trials`` simulated releases per epsilon and ``rng``. Returns what
    :func:`monte_carlo_sweep` returns; the analytic curves of :func:`error_sweep` should run
    through it (``alpha`` near the analytic alpha, ``mae`` near the analytic MAE).
    """
    kind = _check_kind(kind)
    sens = _sensitivity_for(kind, sensitivity, l2_sensitivity)
    options = _mechanism_options(kind, delta=delta, lower=lower, upper=upper)
    truth = finite_array("true_value", true_value)
    _check_in_domain(kind, truth, options)
    built: dict[float, AdditiveMechanism] = {}

    def release(eps: float, n: int, gen: np.random.Generator) -> NDArray:
        if eps not in built:  # one calibration per epsilon, not one per chunk
            built.clear()
            built[eps] = make_mechanism(kind, sensitivity=sens, epsilon=eps, **options)
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


def _geometric_solution(sens: int, alpha: float, beta: float) -> float:
    """Exact epsilon with P(|Z| > alpha) = 2 r^m / (1 + r) = beta, m = floor(alpha) + 1.

    With r = e^{−t}, t = epsilon / sensitivity, log(2/beta) − m t − log(1 + e^{−t}) is strictly
    decreasing in t, so the root is unique. m = 1 is closed form, r = beta / (2 − beta);
    otherwise Brent's method on the bracket [ln(1/beta)/m, ln(2/beta)/m] (log(1 + e^{−t}) lies
    in (0, ln 2)).
    """
    m = math.floor(alpha) + 1
    if m == 1:
        return sens * (math.log(2 - beta) - math.log(beta))

    def excess(t: float) -> float:
        return math.log(2) - math.log(beta) - m * t - math.log1p(math.exp(-t))

    lo, hi = -math.log(beta) / m, (math.log(2) - math.log(beta)) / m
    return sens * brentq(excess, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps,
                         maxiter=500)


def smallest_epsilon(
    mechanism: str,
    *,
    sensitivity: float,
    alpha: float,
    beta: float,
    delta: float | None = None,
    lower: float | None = None,
    upper: float | None = None,
    true_value: float | None = None,
) -> SmallestEpsilon:
    """The smallest epsilon at which P(|error| > alpha) <= beta.

    Searched over :data:`EPSILON_RANGE` = [1e-4, 1e3].

    - "laplace": closed form epsilon = sensitivity · ln(1/beta) / alpha.
    - "gaussian" (needs ``delta``; ``sensitivity`` is the L2 one): the noise sigma must be at
      most alpha / Φ⁻¹(1 − beta/2); epsilon is the exact privacy profile of that sigma at
      ``delta`` (``Gaussian.epsilon_for_delta``, the analytic calibration inverted).
    - "geometric" (whole-number sensitivity): the error is an integer, so the target is
      P(|Z| >= m) = 2 r^m / (1 + r) <= beta with m = floor(alpha) + 1, r = e^{−epsilon /
      sensitivity} — closed form for m = 1, a one-dimensional root otherwise.
    - "bounded_laplace", "clamped_laplace" (need ``lower``, ``upper``, ``true_value``; bounded
      Laplace takes an optional ``delta``): bisection on log epsilon of the mechanism's own
      ``accuracy(beta, true_value) <= alpha``, which is monotone in epsilon.

    Every answer is confirmed, and if need be raised by a few ulps, so that the mechanism built
    at the returned epsilon meets the target in floating point.

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
    kind = _check_kind(mechanism)
    sens = check_positive("sensitivity", sensitivity)
    alpha = check_positive("alpha", alpha)
    beta = check_probability_open("beta", beta)
    options = _mechanism_options(kind, delta=delta, lower=lower, upper=upper)
    bounded = kind in ("bounded_laplace", "clamped_laplace")
    q = _check_scalar_true_value(true_value, required=bounded, kind=kind)

    def met(eps: float) -> bool:
        mech = make_mechanism(kind, sensitivity=sens, epsilon=eps, **options)
        return bool(mech.accuracy(beta, q) <= alpha)

    if kind == "laplace":
        return _in_range(sens * -math.log(beta) / alpha, met,
                         "alpha is too small for Laplace noise at this sensitivity")
    if kind == "gaussian":
        sigma = alpha / -_half_beta_quantile(beta)
        smallest, largest = _SCALE_RANGE
        if not sigma >= smallest:
            raise ValueError(f"alpha = {alpha:g} is too small for Gaussian noise: the noise "
                             f"scale it allows, {sigma:g}, is below {smallest:g}")
        # More noise than 1e150 allowed: building at 1e150 gives an epsilon at least as large,
        # which still meets the target (and is confirmed below).
        sigma = min(sigma, largest)
        eps = Gaussian(sensitivity=sens, scale=sigma).epsilon_for_delta(options["delta"])
        return _in_range(eps, met, "alpha is too small for Gaussian noise at this "
                                   "sensitivity and delta")
    if kind == "geometric":
        Geometric(sensitivity=sens, epsilon=1.0)  # whole-number sensitivity, else ValueError
        return _in_range(_geometric_solution(int(sens), alpha, beta), met,
                         "alpha is too small for geometric noise at this sensitivity")
    low, high = EPSILON_RANGE
    if met(low):
        return SmallestEpsilon(low, True)
    if not met(high):
        lo_b, hi_b = check_finite("lower", lower), check_finite("upper", upper)
        gap = max(lo_b - q, q - hi_b, 0.0)
        if kind == "clamped_laplace" and alpha < gap:
            why = (f"the true value {q:g} lies {gap:g} outside [lower, upper] = [{lo_b:g}, "
                   f"{hi_b:g}], so the clamped output errs by at least {gap:g} (its bias) "
                   "at every epsilon; raise alpha or widen the bounds")
        else:
            why = "alpha is too small for this mechanism even at the largest epsilon"
        raise ValueError(f"no epsilon up to {high:g} meets P(|error| > {alpha:g}) <= "
                         f"{beta:g}: {why}")
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
