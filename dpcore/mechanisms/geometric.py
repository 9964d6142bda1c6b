"""The two-sided geometric mechanism (discrete Laplace): class, maths and catalogue entry.

Integer noise for integer answers: pure DP with P(Z = k) ∝ e^{−|k|·epsilon/sensitivity}.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import check_positive, check_probability_open
from dpcore.measures import PureDP
from dpcore.mechanisms.base import (
    AdditiveMechanism,
    AuditCase,
    MechanismSpec,
    ReleaseRecipe,
    _check_integer_scale,
    _check_integer_valued,
    _checked_grid,
    _epsilon_or_scale,
    _half_integers,
    _loss_up,
    _pure_scales,
    _real_points,
    _shaped,
    _whole_values,
)
from dpcore.sampling import fill_two_sided_geometric

__all__ = ["Geometric", "SPECS"]


class Geometric(AdditiveMechanism):
    """The two-sided geometric mechanism (discrete Laplace): integer noise, integer output.

    Parameters
    ----------
    sensitivity : int
        L1 sensitivity, a positive whole number (1 or 1.0, not 1.5).
    epsilon : float, optional
        Privacy budget; gives scale = sensitivity / epsilon.
    scale : float, optional
        Noise scale s; gives epsilon = sensitivity / s. Give exactly one of epsilon and scale.

    Notes
    -----
    With r = e^{−1/s}:

    .. math:: P(Z = k) = \\frac{1-r}{1+r} r^{|k|}, \\qquad
              P(|Z| > a) = \\frac{2 r^{a+1}}{1+r}, \\qquad
              \\operatorname{Var} Z = \\frac{2r}{(1-r)^2}

    and E|Z| = 2r / (1 − r²). Z is sampled as the difference of two independent geometric
    variables with ratio r (``sampling.fill_two_sided_geometric``), whose law is exactly the
    one above. The scale is capped at 1e12, where whole numbers stay exact in float64.

    References
    ----------
    A. Ghosh, T. Roughgarden, M. Sundararajan. "Universally Utility-Maximizing Privacy
    Mechanisms." STOC 2009. S. Inusah, T. J. Kozubowski. "A discrete analogue of the Laplace
    distribution." J. Stat. Plan. Inference 136 (2006).
    """

    name = "Geometric"
    pld_noise = "discrete_laplace"
    integer_output = True

    def __init__(self, *, sensitivity: int, epsilon: float | None = None,
                 scale: float | None = None) -> None:
        self._sensitivity = _check_integer_valued("sensitivity", sensitivity)
        given, self._scale = _epsilon_or_scale("Geometric", self._sensitivity, epsilon, scale)
        self._check_scale(given)
        _check_integer_scale(self._scale)
        self._derive()

    @property
    def privacy(self) -> PureDP:
        return PureDP(_loss_up(self._sensitivity, self._scale))

    def _derive(self) -> None:
        # r = e^{-1/s} and the success probability 1 - r of each geometric draw.
        self._ratio = math.exp(-1 / self._scale)
        self._success = -math.expm1(-1 / self._scale)

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray[np.int64]:
        return _whole_values(name, values, "geometric")

    def _fill_noise(self, out, shift, rng):
        fill_two_sided_geometric(out, scale=self._scale, shift=shift, rng=rng)

    def _log_tail(self, a: int) -> float:
        """ln P(|Z| > a) = ln(2 r^{a+1} / (1 + r)) for a whole number a >= 0.

        In logs: near a subnormal beta the tail itself keeps only a bit or two of precision."""
        return math.log(2) - (a + 1) / self._scale - math.log1p(self._ratio)

    def _accuracy(self, beta, true_value):
        # P(|Z| > a) <= beta  <=>  a + 1 >= s·ln(2 / (beta (1 + r))); then fix rounding exactly.
        log_beta = math.log(beta)
        threshold = self._scale * (math.log(2) - log_beta - math.log1p(self._ratio))
        a = max(0, math.ceil(threshold) - 1)
        for _ in range(4):  # rounding moves the threshold by far less than one step
            if self._log_tail(a) <= log_beta:
                break
            a += 1
        while a > 0 and self._log_tail(a - 1) <= log_beta:
            a -= 1
        return a

    def error_pmf(self, k: ArrayLike) -> NDArray:
        """P(Z = k); zero where k is not a whole number."""
        k = _real_points("k", k)
        whole = np.floor(k) == k
        # (|k| / scale beyond float64 at |k| ~ 1e308: e^{-inf} = 0 is the right answer)
        with np.errstate(invalid="ignore", over="ignore"):
            pmf = (self._success / (1 + self._ratio)) * np.exp(-np.abs(k) / self._scale)
        return _shaped(np.where(whole & np.isfinite(k), pmf, 0.0))

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        k = np.floor(_real_points("x", x))
        with np.errstate(invalid="ignore", over="ignore"):  # (as in error_pmf)
            # k >= 0: 1 − r^{k+1}/(1+r);  k < 0: r^{|k|}/(1+r)
            upper = 1.0 - np.exp(-(np.maximum(k, 0) + 1) / self._scale) / (1 + self._ratio)
            lower = np.exp(-np.abs(np.minimum(k, 0)) / self._scale) / (1 + self._ratio)
        return _shaped(np.where(k >= 0, upper, lower))

    def variance(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        return _shaped(np.full(base.shape, 2 * self._ratio / self._success**2))

    def mae(self, values: ArrayLike) -> NDArray:
        """E|Z| = 2r / ((1 − r)(1 + r))."""
        base = self._check_values(values)
        return _shaped(np.full(base.shape, 2 * self._ratio / (self._success * (1 + self._ratio))))

    @classmethod
    def sweep(cls, epsilons: ArrayLike, *, sensitivity: float, beta: float = 0.05,
              true_value: float | None = None, **options: float
              ) -> dict[str, NDArray[np.float64]]:
        """Closed forms over the grid (r = e^{−1/s}, s the very scale of the mechanism at each
        epsilon): alpha the smallest whole a with 2r^{a+1}/(1 + r) <= beta, RMSE = √(2r)/(1 − r),
        MAE = 2r/(1 − r²)."""
        grid = _checked_grid(cls, epsilons, sensitivity, options)
        beta = check_probability_open("beta", beta)
        scale = _pure_scales(float(_check_integer_valued("sensitivity", sensitivity)), grid)
        ratio = np.exp(-1 / scale)  # as the mechanism computes them
        one_minus = -np.expm1(-1 / scale)
        return {"scale": scale, "alpha": _alpha(-1 / scale, beta),
                "rmse": np.sqrt(2 * ratio) / one_minus,
                "mae": 2 * ratio / (one_minus * (1 + ratio))}

    @classmethod
    def epsilon_for_accuracy(cls, alpha: float, beta: float, *, sensitivity: float,
                             **options: float) -> float | None:
        """The error is whole, so the target is P(|Z| >= m) = 2r^m/(1 + r) <= beta with
        m = floor(alpha) + 1, r = e^{−epsilon/sensitivity}: closed form for m = 1, one
        monotone root otherwise (:func:`_geometric_solution`)."""
        sens = _check_integer_valued("sensitivity", sensitivity)
        return _geometric_solution(sens, check_positive("alpha", alpha),
                                   check_probability_open("beta", beta))


def _alpha(log_ratio: NDArray[np.float64], beta: float) -> NDArray[np.float64]:
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
    # For m beyond ~1e15, m·t rounds by more than the excess at the bracket's ends: the root
    # then sits at an end to within rounding (brentq would refuse the bracket).
    if excess(lo) <= 0:
        return sens * lo
    if excess(hi) >= 0:
        return sens * hi
    from scipy.optimize import brentq  # slow to import: on first use
    return sens * brentq(excess, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps,
                         maxiter=500)


def _worst_case(mechanism: Geometric) -> tuple[AuditCase, ...]:
    # Counts 0 and Δ; integer outputs, so thresholds between the integers, out to about four
    # standard deviations either side.
    sens = mechanism.sensitivity
    reach = 4 * math.sqrt(float(mechanism.variance(0))) + 1
    return (AuditCase(0.0, float(sens), tuple(_half_integers(-reach, sens + reach))),)


SPECS = (
    MechanismSpec(
        kind="geometric",
        label="Geometric (discrete Laplace)",
        mechanism=Geometric,
        budgets={"pure": ("epsilon",)},
        parameters=("epsilon", "scale"),
        sensitivity_norm="L1",
        integer_only=True,
        needs_range=False,
        true_value_in_range=False,
        scale_meaning="two-sided geometric scale s: P(noise = k) ∝ exp(−|k|/s), k whole",
        explanation="Adds whole-number noise, the discrete twin of Laplace noise, so counts "
                    "stay whole numbers.",
        worst_case=_worst_case,
        sample_parameters=({"sensitivity": 1, "epsilon": 1.0},
                           {"sensitivity": 3, "epsilon": 0.5},
                           {"sensitivity": 1, "scale": 0.4}),
        release=ReleaseRecipe("make_laplace", "epsilon", pipeline_dp="LAPLACE"),
    ),
)
