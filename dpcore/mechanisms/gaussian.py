"""The Gaussian mechanism: its class, its exact privacy profile, its maths and catalogue entry.

N(0, sigma²) noise calibrated to (epsilon, delta) by the analytic calibration, or to rho (zCDP).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import log_ndtr, ndtr, ndtri, ndtri_exp

from dpcore.checks import check_delta, check_positive, check_probability_open
from dpcore.measures import ZCDP, ApproxDP
from dpcore.mechanisms.base import (
    _SAFETY_STEP,
    _SCALE_RANGE,
    AdditiveMechanism,
    AuditCase,
    MechanismSpec,
    ReleaseRecipe,
    _check_grid,
    _exactly_one,
    _real_points,
    _rho_up,
    _scale_within,
    _shaped,
    _step_up,
    _threshold_grid,
)
from dpcore.sampling import fill_gaussian

__all__ = ["Gaussian", "SPECS"]


def _half_beta_quantile(beta: float) -> float:
    """Φ⁻¹(beta/2), through log(beta/2) where beta/2 would underflow (beta = 5e-324)."""
    if beta > 1e-300:
        return float(ndtri(beta / 2))
    return float(ndtri_exp(math.log(beta) - math.log(2)))


def _gaussian_log_delta(mu: float, epsilon: float) -> float:
    """log δ(ε) for the Gaussian mechanism whose sensitivity is ``mu`` noise standard deviations.

    .. math:: \\delta(\\varepsilon) = \\Phi(\\mu/2 - \\varepsilon/\\mu)
              - e^{\\varepsilon}\\,\\Phi(-\\mu/2 - \\varepsilon/\\mu)

    evaluated as ``log Φ(x₁) + log(1 − exp(ε + log Φ(x₂) − log Φ(x₁)))`` so that neither the
    tiny tails nor the difference of two nearly equal terms lose precision.
    """
    log_first = float(log_ndtr(mu / 2 - epsilon / mu))
    if log_first == -math.inf:  # Φ(x₁) underflows (e.g. epsilon = 1e300): delta is 0 in float64
        return -math.inf
    log_ratio = epsilon + float(log_ndtr(-mu / 2 - epsilon / mu)) - log_first
    if log_ratio >= 0:  # only by rounding: the true profile is strictly positive
        return -math.inf
    return log_first + math.log(-math.expm1(log_ratio))


def _analytic_gaussian_mu(epsilon: float, delta: float) -> float:
    """Largest ratio sensitivity/sigma for which the Gaussian mechanism is (epsilon, delta)-DP."""
    target = math.log(delta)

    def excess(log_mu: float) -> float:  # increasing in mu: more signal, less privacy
        return _gaussian_log_delta(math.exp(log_mu), epsilon) - target

    lo = hi = 0.0
    if excess(0.0) < 0:
        while excess(hi) < 0:
            lo, hi = hi, hi + 1.0
            if hi > 400:  # mu = e^400 covers every finite epsilon (mu ~ sqrt(2 epsilon))
                raise ValueError(f"epsilon = {epsilon:g} and delta = {delta:g} are too extreme "
                                 "to calibrate the Gaussian mechanism in float64")
    else:
        while excess(lo) >= 0:
            lo, hi = lo - 1.0, lo
            if lo < -700:
                raise ValueError(f"epsilon = {epsilon:g} and delta = {delta:g} are too extreme "
                                 "to calibrate the Gaussian mechanism in float64")
    from scipy.optimize import brentq  # slow to import: on first use
    return math.exp(brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                           maxiter=500))


def _delta_above(mu: float, epsilon: float, delta: float) -> bool:
    """Whether the Gaussian of sensitivity/sigma = mu needs more than ``delta`` at ``epsilon``,
    in log space or as the number delta_for_epsilon reports (exp of the log can round up)."""
    log_delta = _gaussian_log_delta(mu, epsilon)
    return log_delta > math.log(delta) or math.exp(log_delta) > delta



class Gaussian(AdditiveMechanism):
    """The Gaussian mechanism: add N(0, sigma²) noise, calibrated to (epsilon, delta), rho or sigma.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the query (> 0).
    epsilon, delta : float, optional
        Approximate-DP target, given together; sigma is the smallest noise for which the
        mechanism is (epsilon, delta)-DP (the analytic calibration, valid for every epsilon > 0).
    rho : float, optional
        zCDP target; sigma = sensitivity / sqrt(2 rho).
    scale : float, optional
        The noise standard deviation sigma itself.

    Give exactly one of (epsilon and delta), rho, scale.

    Notes
    -----
    The privacy profile of the Gaussian mechanism (Balle & Wang 2018, Theorem 8) is

    .. math:: \\delta(\\varepsilon) = \\Phi\\Big(\\frac{\\Delta}{2\\sigma}
              - \\frac{\\varepsilon\\sigma}{\\Delta}\\Big) - e^{\\varepsilon}\\,
              \\Phi\\Big(-\\frac{\\Delta}{2\\sigma} - \\frac{\\varepsilon\\sigma}{\\Delta}\\Big)

    and sigma is found by root finding on its logarithm (bracketing, then Brent's method),
    then nudged up until δ(ε) <= delta holds in floating point. The classic
    sqrt(2 ln(1.25/delta))·Δ/ε calibration is never used: it is loose, and wrong for ε > 1.

    References
    ----------
    B. Balle, Y.-X. Wang. "Improving the Gaussian Mechanism for Differential Privacy:
    Analytical Calibration and Optimal Denoising." ICML 2018. arXiv:1805.06530.
    M. Bun, T. Steinke. "Concentrated Differential Privacy: Simplifications, Extensions, and
    Lower Bounds." TCC 2016 (zCDP: rho = Δ² / (2 sigma²)).
    """

    name = "Gaussian"
    pld_noise = "gaussian"

    def __init__(self, *, sensitivity: float, epsilon: float | None = None,
                 delta: float | None = None, rho: float | None = None,
                 scale: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        pair = None if epsilon is None and delta is None else (epsilon, delta)
        given = _exactly_one("Gaussian", **{"epsilon and delta": pair, "rho": rho,
                                            "scale": scale})
        self._approx: ApproxDP | None = None
        if given == "epsilon and delta":
            if epsilon is None or delta is None:
                raise ValueError("Gaussian needs epsilon and delta together")
            eps = check_positive("epsilon", epsilon)
            dlt = check_delta("delta", delta, allow_zero=False)
            self._scale = self._calibrate(eps, dlt)
            self._approx = ApproxDP(eps, dlt)
        elif given == "rho":
            target = check_positive("rho", rho)
            self._scale = _scale_within(lambda b: _rho_up(self._sensitivity, b),
                                        self._sensitivity / math.sqrt(2 * target), target)
        else:
            self._scale = check_positive("scale", scale)
        self._check_scale(given)
        mu = self._sensitivity / self._scale
        self._rho = _rho_up(self._sensitivity, self._scale)
        if not 0 < self._rho < math.inf:
            # (the scale comes from what was given: name it, an epsilon of 1e308 say)
            raise ValueError(f"sensitivity / scale = {mu:g}, the scale from sensitivity and "
                             f"{given}: its zCDP rho = (sensitivity / scale)² / 2 leaves "
                             "float64; sensitivity and scale are too far apart")

    def _calibrate(self, epsilon: float, delta: float) -> float:
        sigma = self._sensitivity / _analytic_gaussian_mu(epsilon, delta)
        low, high = _SCALE_RANGE
        if not low <= sigma <= high:  # refused by _check_scale, naming the parameters
            return sigma
        while _delta_above(self._sensitivity / sigma, epsilon, delta):
            sigma = _step_up(sigma)
        return sigma

    @property
    def privacy(self) -> ApproxDP | ZCDP:
        """ApproxDP(epsilon, delta) when built from them, else the zCDP guarantee."""
        return self._approx if self._approx is not None else self.zcdp

    @property
    def zcdp(self) -> ZCDP:
        """The zCDP guarantee rho = sensitivity² / (2 sigma²), whatever it was built from."""
        return ZCDP(self._rho)

    def zcdp_bound(self) -> ZCDP:
        """Its exact rho (:attr:`zcdp`), whatever it was built from."""
        return self.zcdp

    def delta_for_epsilon(self, epsilon: float) -> float:
        """Exact privacy profile: the smallest delta with (epsilon, delta)-DP at this sigma."""
        epsilon = check_positive("epsilon", epsilon, allow_zero=True)
        return math.exp(_gaussian_log_delta(self._sensitivity / self._scale, epsilon))

    def epsilon_for_delta(self, delta: float) -> float:
        """Exact smallest epsilon with (epsilon, delta)-DP at this sigma (0.0 if delta suffices).

        Inverts :meth:`delta_for_epsilon` by Brent's method, then rounds epsilon up so that
        ``delta_for_epsilon(result) <= delta`` holds in floating point.
        """
        delta = check_delta("delta", delta, allow_zero=False)
        mu = self._sensitivity / self._scale
        target = math.log(delta)

        def excess(eps: float) -> float:  # decreasing in epsilon
            return _gaussian_log_delta(mu, eps) - target

        if excess(0.0) <= 0:
            return 0.0
        lo, hi = 0.0, 1.0
        while excess(hi) > 0:
            lo, hi = hi, 2 * hi
        from scipy.optimize import brentq  # slow to import: on first use
        eps = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
        while _delta_above(mu, eps, delta):
            eps = eps * _SAFETY_STEP + 1e-300
        return eps

    def _fill_noise(self, out, shift, rng):
        fill_gaussian(out, scale=self._scale, shift=shift, rng=rng)

    def _accuracy(self, beta, true_value):
        # sigma·Φ⁻¹(1 − beta/2), written with the lower tail to stay exact for tiny beta.
        return -self._scale * _half_beta_quantile(beta)

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        with np.errstate(over="ignore"):  # x/sigma = ±inf is the right limit for huge x
            return _shaped(ndtr(_real_points("x", x) / self._scale))

    def error_pdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """Density of the error at ``x``."""
        with np.errstate(over="ignore"):  # z² = inf for huge x: density 0, as it should be
            z = _real_points("x", x) / self._scale
            return _shaped(np.exp(-0.5 * z * z) / (self._scale * math.sqrt(2 * math.pi)))

    def variance(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        return _shaped(np.full(base.shape, self._scale**2))

    def mae(self, values: ArrayLike) -> NDArray:
        """E|Z| = sigma·sqrt(2/π)."""
        base = self._check_values(values)
        return _shaped(np.full(base.shape, self._scale * math.sqrt(2 / math.pi)))

    @classmethod
    def sweep(cls, epsilons: ArrayLike, *, sensitivity: float, beta: float = 0.05,
              true_value: float | None = None, **options: float
              ) -> dict[str, NDArray[np.float64]]:
        """sigma calibrated at each epsilon (no closed form); then alpha = sigma·Φ⁻¹(1 − β/2),
        RMSE = sigma, MAE = sigma·sqrt(2/π) over the whole grid at once."""
        grid = _check_grid(epsilons)
        beta = check_probability_open("beta", beta)
        scale = np.array([cls(sensitivity=sensitivity, epsilon=float(e), **options).scale
                          for e in grid])
        return {"scale": scale, "alpha": -scale * _half_beta_quantile(beta), "rmse": scale,
                "mae": scale * math.sqrt(2 / math.pi)}

    @classmethod
    def epsilon_for_accuracy(cls, alpha: float, beta: float, *, sensitivity: float,
                             **options: float) -> float | None:
        """The noise sigma must be at most alpha / Φ⁻¹(1 − beta/2); epsilon is the exact
        privacy profile of that sigma at ``delta`` (:meth:`epsilon_for_delta`)."""
        alpha = check_positive("alpha", alpha)
        beta = check_probability_open("beta", beta)
        delta = check_delta("delta", options.get("delta"), allow_zero=False)
        sigma = alpha / -_half_beta_quantile(beta)
        smallest, largest = _SCALE_RANGE
        if not sigma >= smallest:
            raise ValueError(f"alpha = {alpha:g} is too small for Gaussian noise: the noise "
                             f"scale it allows, {sigma:g}, is below {smallest:g}")
        # More noise than 1e150 allowed: building at 1e150 gives an epsilon at least as large,
        # which still meets the target (and is confirmed by the caller).
        sigma = min(sigma, largest)
        return cls(sensitivity=sensitivity, scale=sigma).epsilon_for_delta(delta)


def _worst_case(mechanism: Gaussian) -> tuple[AuditCase, ...]:
    # Answers 0 and Δ: the privacy loss grows linearly in the output, so the tail events
    # {y < t} carry the whole profile.
    sigma, sens = mechanism.scale, mechanism.sensitivity
    return (AuditCase(0.0, sens, tuple(_threshold_grid(-4 * sigma, sens + 4 * sigma, 37))),)


SPECS = (
    MechanismSpec(
        kind="gaussian",
        label="Gaussian",
        mechanism=Gaussian,
        budgets={"approx": ("epsilon", "delta"), "zcdp": ("rho",)},
        parameters=("epsilon", "delta", "rho", "scale"),
        sensitivity_norm="L2",
        integer_only=False,
        needs_range=False,
        true_value_in_range=False,
        scale_meaning="standard deviation σ",
        explanation="Adds normally distributed noise; its privacy has a small failure "
                    "probability δ, or is measured by zCDP's ρ.",
        worst_case=_worst_case,
        sample_parameters=({"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-3},
                           {"sensitivity": 2.0, "rho": 0.5},
                           {"sensitivity": 1.0, "epsilon": 0.3, "delta": 1e-6}),
        release=ReleaseRecipe("make_gaussian", "rho", pipeline_dp="GAUSSIAN"),
    ),
)
