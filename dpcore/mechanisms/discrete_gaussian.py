"""The discrete Gaussian mechanism: its class, its exact law and privacy profile, its entry.

Whole-number noise with P(Z = k) ∝ exp(−k²/(2σ²)) for integer queries: rho-zCDP with
rho = Δ²/(2σ²), or (epsilon, delta)-DP by its exact profile (Canonne, Kamath & Steinke 2020).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import log_ndtr

from dpcore.checks import check_delta, check_positive
from dpcore.measures import ZCDP, ApproxDP
from dpcore.mechanisms.base import (
    _SCALE_RANGE,
    AdditiveMechanism,
    AuditCase,
    MechanismSpec,
    ReleaseRecipe,
    _check_integer_scale,
    _check_integer_valued,
    _exactly_one,
    _half_integers,
    _real_points,
    _rho_up,
    _scale_within,
    _shaped,
    _step_up,
    _whole_values,
)
from dpcore.sampling import _block_size, fill_two_sided_geometric

__all__ = ["DiscreteGaussian", "SPECS"]

# Up to this sigma the law is summed term by term, over |k| <= 40σ + 2 (beyond, every term is
# below e^-800, nothing in float64); above it the sums are the Euler–Maclaurin expansion of
# the Gaussian integral, whose next term is below 1e-13 of the sum there (z^8/σ^8/1.2e6 at
# z <= 38, the last z with a tail in float64).
_EXACT_SIGMA = 1000.0
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


class _Law:
    """The discrete Gaussian N_Z(0, σ²): log tails P(Z >= m), moments, normaliser."""

    def __init__(self, sigma: float) -> None:
        self.sigma = sigma
        self.exact = sigma < _EXACT_SIGMA
        if self.exact:
            top = math.ceil(40 * sigma) + 2
            k = np.arange(top + 1, dtype=np.float64)
            with np.errstate(over="ignore"):  # (k/σ)² = inf: a weight of exactly 0
                self.log_weights = -0.5 * (k / sigma) ** 2  # log exp(−k²/2σ²), k = 0..top
            # log Σ_{k>=m} w_k for m = 0..top, summed from the smallest term up
            self.log_upper = np.logaddexp.accumulate(self.log_weights[::-1])[::-1]
            self.log_norm = float(np.logaddexp(self.log_weights[0],
                                               math.log(2) + self.log_upper[1]))
            weights = np.exp(self.log_weights - self.log_norm)
            self.variance = float(2 * np.sum(k[1:] ** 2 * weights[1:]))
            self.mean_abs = float(2 * np.sum(k[1:] * weights[1:]))
        else:
            # Poisson summation: Σ_k e^{−k²/2σ²} = σ√(2π)(1 + 2Σ_j e^{−2π²σ²j²}), and
            # E Z² = σ²(1 − O(σ² e^{−2π²σ²})): the corrections are 0 in float64 for σ > 7.
            self.log_norm = math.log(sigma) + _LOG_SQRT_2PI
            self.variance = sigma * sigma
            # Euler–Maclaurin for Σ_{k>=0} k e^{−k²/2σ²} = σ² − 1/12 − 1/(240σ²) − ...
            s2 = sigma * sigma
            self.mean_abs = 2 * (s2 - 1 / 12 - 1 / (240 * s2) - 1 / (2016 * s2 * s2)) * math.exp(
                -self.log_norm)

    def log_tail(self, m: NDArray[np.float64]) -> NDArray[np.float64]:
        """log P(Z >= m) for whole numbers m >= 1 (float array)."""
        if self.exact:
            idx = np.minimum(m, len(self.log_upper)).astype(np.int64)
            padded = np.append(self.log_upper, -np.inf)
            return padded[idx] - self.log_norm
        # Euler–Maclaurin: Σ_{k>=m} f(k) = ∫_m^∞ f + f(m)/2 − f'(m)/12 + f'''(m)/720
        # − f⁽⁵⁾(m)/30240, with f = e^{−k²/2σ²}; divided by σ√(2π) it is
        # Φ̄(z) + φ(z)/σ · c, z = m/σ.
        s = self.sigma
        beyond = m / s > 40.0  # the tail is below 1e-340 there: 0 in float64
        z = np.minimum(m / s, 40.0)
        c = (0.5 + z / (12 * s) + (3 * z / s**3 - z**3 / s**3) / 720
             - (-(z**5) / s**5 + 10 * z**3 / s**5 - 15 * z / s**5) / 30240)
        log_bar = log_ndtr(-z)
        log_ratio = -0.5 * z * z - _LOG_SQRT_2PI - math.log(s) - log_bar  # log φ(z)/(σΦ̄(z))
        return np.where(beyond, -np.inf, log_bar + np.log1p(np.exp(log_ratio) * c))

    def tail(self, m: NDArray[np.float64]) -> NDArray[np.float64]:
        """P(Z >= m) for any whole numbers m (float array)."""
        positive = np.exp(self.log_tail(np.maximum(m, 1.0)))
        mirrored = 1.0 - np.exp(self.log_tail(np.maximum(1.0 - m, 1.0)))  # P(Z >= m), m <= 0
        return np.where(m >= 1, positive, mirrored)

    def log_pmf(self, k: NDArray[np.float64]) -> NDArray[np.float64]:
        return -0.5 * (k / self.sigma) ** 2 - self.log_norm


def _log_tail_above(law: _Law, c: float) -> float:
    """log P(Z > c) for a real c (±inf allowed)."""
    if c == math.inf:
        return -math.inf
    if c == -math.inf:
        return 0.0
    m = math.floor(c) + 1
    if m >= 1:
        return float(law.log_tail(np.array([float(m)]))[0])
    return math.log1p(-math.exp(float(law.log_tail(np.array([float(1 - m)]))[0])))


def _log_delta(law: _Law, sensitivity: int, epsilon: float) -> float:
    """log δ(ε) of the discrete Gaussian with sensitivity Δ (Canonne, Kamath & Steinke 2020,
    Theorem 7):

    .. math:: \\delta(\\varepsilon) = P[Z > \\tfrac{\\varepsilon\\sigma^2}{\\Delta}
              - \\tfrac{\\Delta}{2}] - e^{\\varepsilon} P[Z > \\tfrac{\\varepsilon\\sigma^2}
              {\\Delta} + \\tfrac{\\Delta}{2}]

    — the hockey-stick divergence Σ_k (p(k) − e^ε p(k − Δ))₊ summed in closed form (the loss
    at output k is (Δ² − 2kΔ)/(2σ²)), in log space so that tiny deltas keep their precision.
    """
    s2 = law.sigma * law.sigma
    centre = epsilon * s2 / sensitivity
    log_first = _log_tail_above(law, centre - sensitivity / 2)
    if log_first == -math.inf:
        return -math.inf
    log_ratio = epsilon + _log_tail_above(law, centre + sensitivity / 2) - log_first
    if log_ratio >= 0:  # only by rounding: the profile is positive wherever P[Z > c₁] is
        return -math.inf
    return log_first + math.log(-math.expm1(log_ratio))


class DiscreteGaussian(AdditiveMechanism):
    """The discrete Gaussian mechanism: add N_Z(0, σ²) noise, P(Z = k) ∝ exp(−k²/(2σ²)).

    Parameters
    ----------
    sensitivity : int
        A positive whole number: the largest change of the (integer) answer, L2 over the
        coordinates for zCDP.
    epsilon, delta : float, optional
        Approximate-DP target, given together: σ is (nearly) the smallest for which the exact
        profile δ(ε) is at most delta, then raised until it is in floating point.
    rho : float, optional
        zCDP target: σ = sensitivity / sqrt(2 rho).
    scale : float, optional
        σ itself. Give exactly one of (epsilon and delta), rho, scale.

    Notes
    -----
    rho-zCDP with rho = Δ²/(2σ²) holds for any integer change of L2 norm Δ (CKS 2020,
    Theorem 4 and its multivariate form), the map of OpenDP's ``make_gaussian`` on integers.
    The (epsilon, delta) profile used here is the exact one of Theorem 7, for neighbours
    whose answers differ by at most Δ in one coordinate — every query of this project (a
    count, a sum, one histogram or table cell). Noise is drawn by rejection from a discrete
    Laplace of scale floor(σ) + 1 (CKS Algorithm 3), vectorised; the acceptance probability
    is computed in floating point, so the law is exact up to its rounding (~1e-16).

    References
    ----------
    C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential Privacy."
    NeurIPS 2020. arXiv:2004.00010.
    """

    name = "Discrete Gaussian"
    pld_noise = "discrete_gaussian"
    integer_output = True

    def __init__(self, *, sensitivity: int, epsilon: float | None = None,
                 delta: float | None = None, rho: float | None = None,
                 scale: float | None = None) -> None:
        self._sensitivity = _check_integer_valued("sensitivity", sensitivity)
        pair = None if epsilon is None and delta is None else (epsilon, delta)
        given = _exactly_one("DiscreteGaussian", **{"epsilon and delta": pair, "rho": rho,
                                                    "scale": scale})
        self._approx: ApproxDP | None = None
        if given == "epsilon and delta":
            if epsilon is None or delta is None:
                raise ValueError("DiscreteGaussian needs epsilon and delta together")
            eps = check_positive("epsilon", epsilon)
            dlt = check_delta("delta", delta, allow_zero=False)
            self._scale = self._calibrate(eps, dlt)
            self._approx = ApproxDP(eps, dlt)
        elif given == "rho":
            target = check_positive("rho", rho)
            self._scale = _scale_within(lambda s: _rho_up(self._sensitivity, s),
                                        self._sensitivity / math.sqrt(2 * target), target)
        else:
            self._scale = check_positive("scale", scale)
        self._check_scale(given)
        _check_integer_scale(self._scale)
        mu = self._sensitivity / self._scale
        self._rho = _rho_up(self._sensitivity, self._scale)
        if not 0 < self._rho < math.inf:
            raise ValueError(f"sensitivity / scale = {mu:g}, the scale from sensitivity and "
                             f"{given}: its zCDP rho leaves float64; they are too far apart")
        self._derive()

    def _derive(self) -> None:
        self._law = _Law(self._scale)
        # The proposal: a discrete Laplace of scale t = floor(σ) + 1, ratio r = e^{−1/t};
        # a proposal k is kept with probability exp(−(|k| − σ²/t)²/(2σ²)). The share kept is
        # (1 − r)/(1 + r) · e^{−σ²/(2t²)} · Σ_k e^{−k²/(2σ²)}.
        self._proposal = math.floor(self._scale) + 1.0
        r = math.exp(-1 / self._proposal)
        self._kept = min(1.0, (1 - r) / (1 + r) * math.exp(
            self._law.log_norm - 0.5 * (self._scale / self._proposal) ** 2))

    def _calibrate(self, epsilon: float, delta: float) -> float:
        sens = self._sensitivity
        target = math.log(delta)

        def excess(log_sigma: float) -> float:  # decreasing in sigma, up to the lattice
            return _log_delta(_Law(math.exp(log_sigma)), sens, epsilon) - target

        # A bracket around the continuous Gaussian's sigma, sens·sqrt(2 ln(1.25/δ))/ε at
        # most: widened until the sign changes.
        guess = sens * math.sqrt(2 * math.log(1.25 / delta)) / epsilon
        lo = hi = min(max(math.log(guess), math.log(_SCALE_RANGE[0])), math.log(2e12))
        while excess(lo) <= 0:  # noise so small that even it is private: rare, but bounded
            lo -= 1.0
            if lo < math.log(_SCALE_RANGE[0]):  # refused by _check_scale, naming the budget
                return math.exp(lo)
        while excess(hi) > 0:
            hi += 1.0
            if hi > math.log(2e12):  # refused as beyond the integer scale cap, naming it
                return math.exp(hi)
        from scipy.optimize import brentq  # slow to import: on first use
        sigma = math.exp(brentq(excess, lo, hi, xtol=1e-12, maxiter=500))
        while _log_delta(_Law(sigma), sens, epsilon) > target or math.exp(
                _log_delta(_Law(sigma), sens, epsilon)) > delta:
            sigma = _step_up(sigma)
        return sigma

    @property
    def privacy(self) -> ApproxDP | ZCDP:
        """ApproxDP(epsilon, delta) when built from them, else the zCDP guarantee."""
        return self._approx if self._approx is not None else self.zcdp

    @property
    def zcdp(self) -> ZCDP:
        """rho = sensitivity² / (2σ²), whatever it was built from."""
        return ZCDP(self._rho)

    def zcdp_bound(self) -> ZCDP:
        """Its exact rho (:attr:`zcdp`), whatever it was built from."""
        return self.zcdp

    def delta_for_epsilon(self, epsilon: float) -> float:
        """The exact privacy profile: the smallest delta with (epsilon, delta)-DP."""
        epsilon = check_positive("epsilon", epsilon, allow_zero=True)
        return math.exp(_log_delta(self._law, self._sensitivity, epsilon))

    def epsilon_for_delta(self, delta: float) -> float:
        """The smallest epsilon with (epsilon, delta)-DP (0.0 if delta suffices), from the
        exact profile, rounded up until ``delta_for_epsilon`` confirms it."""
        delta = check_delta("delta", delta, allow_zero=False)
        target = math.log(delta)

        def excess(eps: float) -> float:  # decreasing and continuous in epsilon
            return _log_delta(self._law, self._sensitivity, eps) - target

        if excess(0.0) <= 0:
            return 0.0
        lo, hi = 0.0, 1.0
        while excess(hi) > 0:
            lo, hi = hi, 2 * hi
        from scipy.optimize import brentq  # slow to import: on first use
        eps = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
        while excess(eps) > 0 or self.delta_for_epsilon(eps) > delta:
            eps = _step_up(eps) + 1e-300
        return eps

    # -- sampling ------------------------------------------------------------------------------

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray[np.int64]:
        return _whole_values(name, values, "discrete Gaussian")

    def _fill_noise(self, out, shift, rng):
        sigma, t = self._scale, self._proposal
        s2 = sigma * sigma
        block = _block_size()
        for start in range(0, out.size, block):
            part = out[start:start + block]
            filled = 0
            while filled < part.size:
                need = part.size - filled
                n = int(need / self._kept * 1.1) + 16
                proposals = np.empty(n, dtype=np.int64)
                fill_two_sided_geometric(proposals, scale=t, rng=rng)
                gap = np.abs(proposals) - s2 / t
                kept = proposals[rng.random(n) < np.exp(-0.5 * gap * gap / s2)][:need]
                part[filled:filled + kept.size] = kept
                filled += kept.size
            if shift:
                part += shift

    # -- the law -------------------------------------------------------------------------------

    def _accuracy(self, beta, true_value):
        # the smallest whole a with P(|Z| > a) = 2 P(Z >= a + 1) <= beta, by bisection
        log_beta = math.log(beta)

        def met(a: int) -> bool:
            return math.log(2) + float(self._law.log_tail(np.array([a + 1.0]))[0]) <= log_beta

        if met(0):
            return 0
        hi = 1
        while not met(hi):
            hi *= 2
        lo = hi // 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if met(mid):
                hi = mid
            else:
                lo = mid
        return hi

    def error_pmf(self, k: ArrayLike) -> NDArray:
        """P(Z = k); zero where k is not a whole number."""
        k = _real_points("k", k)
        whole = np.floor(k) == k
        with np.errstate(invalid="ignore", over="ignore"):
            pmf = np.exp(self._law.log_pmf(k))
        return _shaped(np.where(whole & np.isfinite(k), pmf, 0.0))

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        k = np.floor(_real_points("x", x))
        with np.errstate(invalid="ignore", over="ignore"):
            big = np.clip(k, -1e300, 1e300)
            # k >= 0: 1 − P(Z >= k + 1); k < 0: P(Z <= k) = P(Z >= −k)
            upper = 1.0 - self._law.tail(np.maximum(big, 0.0) + 1.0)
            lower = self._law.tail(np.maximum(-big, 1.0))
        return _shaped(np.where(k >= 0, upper, lower))

    def variance(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        return _shaped(np.full(base.shape, self._law.variance))

    def mae(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        return _shaped(np.full(base.shape, self._law.mean_abs))


def _worst_case(mechanism: DiscreteGaussian) -> tuple[AuditCase, ...]:
    # Answers 0 and Δ; thresholds between the integers out to about four σ either side.
    sens = mechanism.sensitivity
    reach = 4 * mechanism.scale + 1
    return (AuditCase(0.0, float(sens), tuple(_half_integers(-reach, sens + reach))),)


SPECS = (
    MechanismSpec(
        kind="discrete_gaussian",
        label="Discrete Gaussian",
        mechanism=DiscreteGaussian,
        budgets={"zcdp": ("rho",), "approx": ("epsilon", "delta")},
        parameters=("epsilon", "delta", "rho", "scale"),
        sensitivity_norm="L2",
        integer_only=True,
        needs_range=False,
        true_value_in_range=False,
        scale_meaning="σ of the discrete Gaussian: P(noise = k) ∝ exp(−k²/(2σ²)), k whole",
        explanation="Adds whole-number noise shaped like a bell curve, so counts stay whole; "
                    "its privacy is measured by zCDP's ρ.",
        worst_case=_worst_case,
        sample_parameters=({"sensitivity": 1, "epsilon": 1.0, "delta": 1e-3},
                           {"sensitivity": 2, "rho": 0.5},
                           {"sensitivity": 1, "scale": 0.6}),
        release=ReleaseRecipe("make_gaussian", "rho", pipeline_dp_reason=(
            "PipelineDP 0.3 has no discrete Gaussian noise (discrete_gaussian): use laplace, "
            "geometric or gaussian (approx)")),
    ),
)
