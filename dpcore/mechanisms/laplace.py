"""The Laplace mechanism: its class, its maths and its catalogue entry.

Laplace(0, b) noise with b = sensitivity / epsilon: pure DP, the default for counts and sums.
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
    _checked_grid,
    _epsilon_or_scale,
    _loss_up,
    _pure_scales,
    _real_points,
    _shaped,
    _threshold_grid,
)
from dpcore.sampling import fill_laplace

__all__ = ["Laplace", "SPECS"]


def _laplace_half_tail(x: NDArray[np.float64], scale: float | NDArray) -> NDArray[np.float64]:
    """½e^{−|x|/b}; |x|/b may overflow to inf for huge x, where the tail is rightly 0."""
    with np.errstate(over="ignore"):
        return 0.5 * np.exp(-np.abs(x) / scale)


def _laplace_cdf(x: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    half_tail = _laplace_half_tail(x, scale)
    return np.where(x < 0, half_tail, 1.0 - half_tail)


def _laplace_sf(x: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    half_tail = _laplace_half_tail(x, scale)
    return np.where(x < 0, 1.0 - half_tail, half_tail)


class Laplace(AdditiveMechanism):
    """The Laplace mechanism: add Laplace(0, b) noise, b = sensitivity / epsilon.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity of the query (> 0).
    epsilon : float, optional
        Privacy budget; gives scale = sensitivity / epsilon.
    scale : float, optional
        Noise scale b; gives epsilon = sensitivity / b. Give exactly one of epsilon and scale.

    Notes
    -----
    .. math:: p(z) = \\frac{1}{2b} e^{-|z|/b}, \\qquad
              P(|Z| > \\alpha) = e^{-\\alpha/b}, \\qquad \\operatorname{Var} Z = 2b^2,
              \\qquad E|Z| = b

    References
    ----------
    C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating Noise to Sensitivity in Private
    Data Analysis." TCC 2006.
    """

    name = "Laplace"
    pld_noise = "laplace"

    def __init__(self, *, sensitivity: float, epsilon: float | None = None,
                 scale: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        given, self._scale = _epsilon_or_scale("Laplace", self._sensitivity, epsilon, scale)
        self._check_scale(given)

    @property
    def privacy(self) -> PureDP:
        return PureDP(_loss_up(self._sensitivity, self._scale))

    def _fill_noise(self, out, shift, rng):
        fill_laplace(out, scale=self._scale, shift=shift, rng=rng)

    def _accuracy(self, beta, true_value):
        return self._scale * -math.log(beta)  # not log(1/beta): 1/beta overflows

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        return _shaped(_laplace_cdf(_real_points("x", x), self._scale))

    def error_pdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """Density of the error at ``x``."""
        x = _real_points("x", x)
        return _shaped(_laplace_half_tail(x, self._scale) / self._scale)

    def variance(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        return _shaped(np.full(base.shape, 2 * self._scale**2))

    def mae(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        return _shaped(np.full(base.shape, self._scale))

    @classmethod
    def sweep(cls, epsilons: ArrayLike, *, sensitivity: float, beta: float = 0.05,
              true_value: float | None = None, **options: float
              ) -> dict[str, NDArray[np.float64]]:
        """Closed forms over the grid: alpha = b ln(1/beta), RMSE = √2 b, MAE = b, with b the
        very scale the mechanism has at each epsilon (to the ulp)."""
        grid = _checked_grid(cls, epsilons, sensitivity, options)
        beta = check_probability_open("beta", beta)
        scale = _pure_scales(float(sensitivity), grid)
        return {"scale": scale, "alpha": scale * -math.log(beta),
                "rmse": math.sqrt(2) * scale, "mae": scale.copy()}

    @classmethod
    def epsilon_for_accuracy(cls, alpha: float, beta: float, *, sensitivity: float,
                             **options: float) -> float | None:
        """epsilon = sensitivity · ln(1/beta) / alpha."""
        sens = check_positive("sensitivity", sensitivity)
        alpha = check_positive("alpha", alpha)
        epsilon = sens * -math.log(check_probability_open("beta", beta)) / alpha
        if not epsilon < math.inf:
            raise ValueError(f"alpha = {alpha:g} is too small for Laplace noise at sensitivity "
                             f"{sens:g}: the epsilon it needs overflows float64")
        return epsilon


def _worst_case(mechanism: Laplace) -> tuple[AuditCase, ...]:
    # Counts 0 and Δ: every event {y < t <= 0} has probability ratio exactly e^{Δ/b}.
    b, sens = mechanism.scale, mechanism.sensitivity
    return (AuditCase(0.0, sens, tuple(_threshold_grid(-4 * b, sens + 4 * b))),)


SPECS = (
    MechanismSpec(
        kind="laplace",
        label="Laplace",
        mechanism=Laplace,
        budgets={"pure": ("epsilon",)},
        parameters=("epsilon", "scale"),
        sensitivity_norm="L1",
        integer_only=False,
        needs_range=False,
        true_value_in_range=False,
        scale_meaning="Laplace scale b (standard deviation √2·b)",
        explanation="Adds noise from a Laplace (double exponential) distribution whose width "
                    "is the sensitivity divided by ε.",
        worst_case=_worst_case,
        sample_parameters=({"sensitivity": 1.0, "epsilon": 1.0},
                           {"sensitivity": 2.5, "epsilon": 0.3},
                           {"sensitivity": 0.5, "scale": 3.0}),
        release=ReleaseRecipe("make_laplace", "epsilon", pipeline_dp="LAPLACE"),
    ),
)
