"""Additive noise mechanisms: Laplace, Gaussian, two-sided geometric, bounded and clamped Laplace.

Each is calibrated from a privacy target or a noise scale, simulates many releases at once, and
knows its exact error distribution, accuracy, bias and variance.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import brentq
from scipy.special import gammainc, log_ndtr, ndtr, ndtri, ndtri_exp

from dpcore import _checks
from dpcore._checks import (
    check_bounds,
    check_choice,
    check_delta,
    check_positive,
    check_probability_open,
    check_rng,
    check_trials,
    finite_array,
    numeric_array,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP

__all__ = [
    "AdditiveMechanism",
    "Laplace",
    "Gaussian",
    "Geometric",
    "BoundedLaplace",
    "ClampedLaplace",
    "MECHANISM_KINDS",
    "make_mechanism",
]

#: The ``kind`` strings :func:`make_mechanism` understands.
MECHANISM_KINDS = ("laplace", "gaussian", "geometric", "bounded_laplace", "clamped_laplace")

# A calibrated scale is nudged up by this factor until its privacy check passes, so that root
# finding tolerance can never leave a mechanism with less noise than its privacy claim needs.
_SAFETY_STEP = 1 + 2.0**-40

# A bounded Laplace domain narrower than this has a calibrated scale, and renormalising
# masses, at the edge of float64 (a subnormal width gives 0/0).
_MIN_BOUNDED_WIDTH = 1e-290

# Above this scale numpy's geometric draws (success probability ~1/scale) approach the int64
# limit and saturate; 1e12 keeps every draw far below it and exactly representable in float64.
_MAX_GEOMETRIC_SCALE = 1e12
_MAX_GEOMETRIC_VALUE = 2**62

# Noise scales outside this range make the error density (~1/scale) or the variance (~scale²)
# of a mechanism overflow float64; no release needs them.
_SCALE_RANGE = (1e-300, 1e150)


# --------------------------------------------------------------------------------------------
# private validation helpers (the shared ones live in dpcore._checks)
# --------------------------------------------------------------------------------------------


def _exactly_one(mechanism: str, **options: object) -> str:
    """Name of the single option that is not None; ValueError naming them all otherwise."""
    given = [name for name, value in options.items() if value is not None]
    if len(given) != 1:
        names = " or ".join(options)
        got = ", ".join(given) if given else "none"
        raise ValueError(f"{mechanism} needs exactly one of {names}; got {got}")
    return given[0]


def _real_points(name: str, x: ArrayLike) -> NDArray[np.float64]:
    """Points at which a distribution function is evaluated: numbers, ±inf allowed, no NaN."""
    arr = numeric_array(name, x)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    return arr


def _check_integer_valued(name: str, value: object) -> int:
    """A positive whole number given as an int or an integral float (2 or 2.0, not 2.5)."""
    x = check_positive(name, value)
    if not x.is_integer():
        raise ValueError(f"{name} must be a whole number, got {x}")
    return int(x)


def _step_up(x: float) -> float:
    """x raised by _SAFETY_STEP, and by at least one ulp (a subnormal times 1 + 2^-40 rounds
    back to itself, which would loop forever)."""
    return max(x * _SAFETY_STEP, math.nextafter(x, math.inf))


def _scale_within(loss: Callable[[float], float], scale: float, budget: float) -> float:
    """``scale`` raised ulp by ulp until ``loss(scale) <= budget``.

    A scale computed as sensitivity / epsilon can round down, leaving the privacy loss the
    mechanism reports (and has) an ulp above the budget it was built for.
    """
    while 0 < scale < math.inf and loss(scale) > budget:
        scale = math.nextafter(scale, math.inf)
    return scale


def _epsilon_or_scale(mechanism: str, sensitivity: float, epsilon: object,
                      scale: object) -> tuple[str, float]:
    """("epsilon" or "scale", b) for the mechanisms with pure-DP loss sensitivity / b."""
    given = _exactly_one(mechanism, epsilon=epsilon, scale=scale)
    if given == "scale":
        return given, check_positive("scale", scale)
    eps = check_positive("epsilon", epsilon)
    return given, _scale_within(lambda b: sensitivity / b, sensitivity / eps, eps)


def _delta_above(mu: float, epsilon: float, delta: float) -> bool:
    """Whether the Gaussian of sensitivity/sigma = mu needs more than ``delta`` at ``epsilon``,
    in log space or as the number delta_for_epsilon reports (exp of the log can round up)."""
    log_delta = _gaussian_log_delta(mu, epsilon)
    return log_delta > math.log(delta) or math.exp(log_delta) > delta


def _check_domain(lower: object, upper: object) -> tuple[float, float]:
    """Finite bounds lower < upper whose width upper − lower is finite too."""
    lo, hi = check_bounds(lower, upper)
    if not hi - lo < math.inf:
        raise ValueError(f"upper − lower overflows float64 (lower={lo:g}, upper={hi:g}): "
                         "narrow the bounds")
    return lo, hi


def _points_and_truth(x: ArrayLike, q: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """Evaluation points and true values broadcast together (ValueError naming both)."""
    points = _real_points("x", x)
    try:
        return np.broadcast_arrays(points, q)
    except ValueError:
        raise ValueError(f"x (shape {points.shape}) and true_value (shape {q.shape}) must "
                         "broadcast together") from None


def _shaped(arr: NDArray) -> NDArray:
    # A 0-d result becomes a numpy scalar (a float/int subclass); arrays pass through.
    return arr[()]


# --------------------------------------------------------------------------------------------
# distribution helpers
# --------------------------------------------------------------------------------------------


def _laplace_half_tail(x: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """½e^{−|x|/b}; |x|/b may overflow to inf for huge x, where the tail is rightly 0."""
    with np.errstate(over="ignore"):
        return 0.5 * np.exp(-np.abs(x) / scale)


def _laplace_cdf(x: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    half_tail = _laplace_half_tail(x, scale)
    return np.where(x < 0, half_tail, 1.0 - half_tail)


def _laplace_sf(x: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    half_tail = _laplace_half_tail(x, scale)
    return np.where(x < 0, 1.0 - half_tail, half_tail)


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
    return math.exp(brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps,
                           maxiter=500))


def _bounded_laplace_log_ratio(scale: float, sensitivity: float, width: float) -> float:
    """log C(l + Δ) / C(l): the worst ratio of the truncation constants of two neighbours.

    C(q) = 1 − ½(e^{−(q−l)/b} + e^{−(u−q)/b}) is the Laplace(q, b) mass inside [l, u]; expm1
    keeps the ratio accurate when the scale is large compared with the domain.
    """
    numerator = -(math.expm1(-sensitivity / scale) + math.expm1(-(width - sensitivity) / scale))
    denominator = -math.expm1(-width / scale)
    return math.log(numerator / denominator)


def _bounded_laplace_epsilon(scale: float, sensitivity: float, width: float) -> float:
    """Exact pure-DP epsilon of the bounded Laplace mechanism at noise scale ``scale``."""
    return sensitivity / scale + _bounded_laplace_log_ratio(scale, sensitivity, width)


# --------------------------------------------------------------------------------------------
# the base class
# --------------------------------------------------------------------------------------------


class AdditiveMechanism(ABC):
    """Common shape of the additive mechanisms: noisy value = true value + noise.

    Subclasses set ``_sensitivity`` and ``_scale`` in their constructor and implement
    ``_draw`` (one block of noisy values), ``privacy`` and the error distribution.

    Noise comes from numpy's floating-point samplers: right for simulating and showing what a
    mechanism does, but not hardened against attacks on the low-order bits of floating-point
    noise (Mironov 2012); a real release should use exact samplers such as OpenDP's.
    """

    #: Name shown to users.
    name: ClassVar[str] = ""
    #: True when the noisy values are integers (int64).
    integer_output: ClassVar[bool] = False

    _sensitivity: float
    _scale: float

    @property
    def scale(self) -> float:
        """Noise scale: the Laplace b, the Gaussian sigma, the geometric scale."""
        return self._scale

    @property
    def sensitivity(self) -> float:
        """Largest change of the true value between neighbouring datasets."""
        return self._sensitivity

    @property
    @abstractmethod
    def privacy(self) -> PureDP | ApproxDP | ZCDP:
        """The privacy guarantee of one release."""

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self._sensitivity:g}, "
                f"scale={self._scale:.6g}) — {self.privacy.describe()}")

    def _check_scale(self, given: str) -> None:
        """Refuse a noise scale whose density, variance or privacy loss leaves float64.

        ``given`` names what the scale came from ("scale", "epsilon", "rho", ...).
        """
        source = "scale" if given == "scale" else f"the noise scale from sensitivity and {given}"
        low, high = _SCALE_RANGE
        if not low <= self._scale <= high:
            raise ValueError(f"{source} = {self._scale:g} is outside [{low:g}, {high:g}], beyond "
                             "which the noise density or variance overflows float64")
        if not 0 < self._sensitivity / self._scale < math.inf:
            raise ValueError(f"sensitivity / scale = {self._sensitivity:g} / {self._scale:g} "
                             "is no positive finite privacy loss: sensitivity and scale are too "
                             "far apart")

    # -- sampling ------------------------------------------------------------------------------

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray:
        return finite_array(name, values)

    @abstractmethod
    def _draw(self, base: NDArray, size: tuple[int, ...], rng: np.random.Generator) -> NDArray:
        """A fresh array of shape ``size`` holding ``base`` (broadcast) plus noise."""

    def sample(self, values: ArrayLike, *, rng: np.random.Generator,
               trials: int | None = None) -> NDArray:
        """Noisy versions of ``values``: one release, or ``trials`` simulated releases.

        Parameters
        ----------
        values : array_like
            True value(s): a scalar or an array of finite numbers.
        rng : numpy.random.Generator
            Source of randomness.
        trials : int, optional
            Number of independent releases to simulate. ``None`` (default) gives one release.

        Returns
        -------
        ndarray
            Shape ``values.shape`` when ``trials`` is None, else ``(trials, *values.shape)``
            (a numpy scalar for a scalar ``values`` and ``trials=None``). float64, or int64 when
            ``integer_output``.

        Notes
        -----
        Trials are drawn in chunks of whole trials from ``trial_chunks``, so each block of
        noise holds at most ``max(MAX_BLOCK_ELEMENTS, values.size)`` elements
        (MAX_BLOCK_ELEMENTS = 2**22, 32 MiB of float64): one numpy draw and an in-place add
        per chunk. The returned array itself is as large as asked for.
        """
        rng = check_rng(rng)
        trials = check_trials(trials)
        base = self._check_values(values)
        if trials is None:
            return _shaped(self._draw(base, base.shape, rng))
        chunks = _checks.trial_chunks(trials, base.size)
        _checks.check_returned_size(trials, base.size)
        if len(chunks) == 1:
            return self._draw(base, (trials, *base.shape), rng)
        out = np.empty((trials, *base.shape), dtype=np.int64 if self.integer_output else float)
        start = 0
        for n in chunks:
            out[start:start + n] = self._draw(base, (n, *base.shape), rng)
            start += n
        return out

    # -- accuracy and error distribution -------------------------------------------------------

    def accuracy(self, beta: float, true_value: ArrayLike | None = None) -> float | NDArray:
        """Smallest alpha with P(|noisy − true| > alpha) <= beta (a (1 − beta) error bound).

        Parameters
        ----------
        beta : float
            Failure probability in (0, 1), e.g. 0.05 for a 95% bound.
        true_value : array_like, optional
            Needed only by the bounded and clamped mechanisms, whose error depends on where the
            true value sits between the bounds.
        """
        beta = check_probability_open("beta", beta)
        return self._accuracy(beta, true_value)

    @abstractmethod
    def _accuracy(self, beta: float, true_value: ArrayLike | None) -> float | NDArray:
        ...

    @abstractmethod
    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """P(noisy − true <= x), vectorized in ``x``."""

    # -- bias and variance ---------------------------------------------------------------------

    def bias(self, values: ArrayLike) -> NDArray:
        """E[noisy] − true value, shaped like ``values`` (zero for zero-mean noise)."""
        base = self._check_values(values)
        return _shaped(np.zeros(base.shape))

    @abstractmethod
    def variance(self, values: ArrayLike) -> NDArray:
        """Var[noisy], shaped like ``values``."""

    def mse(self, values: ArrayLike) -> NDArray:
        """Mean squared error E[(noisy − true)²] = variance + bias²."""
        return _shaped(np.asarray(self.variance(values) + np.square(self.bias(values))))


# --------------------------------------------------------------------------------------------
# Laplace
# --------------------------------------------------------------------------------------------


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
              P(|Z| > \\alpha) = e^{-\\alpha/b}, \\qquad \\operatorname{Var} Z = 2b^2

    References
    ----------
    C. Dwork, F. McSherry, K. Nissim, A. Smith. "Calibrating Noise to Sensitivity in Private
    Data Analysis." TCC 2006.
    """

    name = "Laplace"

    def __init__(self, *, sensitivity: float, epsilon: float | None = None,
                 scale: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        given, self._scale = _epsilon_or_scale("Laplace", self._sensitivity, epsilon, scale)
        self._check_scale(given)

    @property
    def privacy(self) -> PureDP:
        return PureDP(self._sensitivity / self._scale)

    def _draw(self, base, size, rng):
        noisy = rng.laplace(0.0, self._scale, size)
        noisy += base
        return noisy

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


# --------------------------------------------------------------------------------------------
# Gaussian
# --------------------------------------------------------------------------------------------


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
            self._scale = _scale_within(
                lambda b: (self._sensitivity / b) * (self._sensitivity / b) / 2,  # as _rho
                self._sensitivity / math.sqrt(2 * target), target)
        else:
            self._scale = check_positive("scale", scale)
        self._check_scale(given)
        mu = self._sensitivity / self._scale
        self._rho = mu * mu / 2  # (Δ/σ)²/2, not Δ²/(2σ²): the squares alone may leave float64
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
        eps = brentq(excess, lo, hi, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
        while _delta_above(mu, eps, delta):
            eps = eps * _SAFETY_STEP + 1e-300
        return eps

    def _draw(self, base, size, rng):
        noisy = rng.normal(0.0, self._scale, size)
        noisy += base
        return noisy

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


# --------------------------------------------------------------------------------------------
# Geometric (discrete Laplace)
# --------------------------------------------------------------------------------------------


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

    Z is sampled as the difference of two independent geometric variables with success
    probability 1 − r, whose law is exactly the one above. The scale is capped at 1e12, where
    numpy's int64 geometric draws would start to saturate.

    References
    ----------
    A. Ghosh, T. Roughgarden, M. Sundararajan. "Universally Utility-Maximizing Privacy
    Mechanisms." STOC 2009. S. Inusah, T. J. Kozubowski. "A discrete analogue of the Laplace
    distribution." J. Stat. Plan. Inference 136 (2006).
    """

    name = "Geometric"
    integer_output = True

    def __init__(self, *, sensitivity: int, epsilon: float | None = None,
                 scale: float | None = None) -> None:
        self._sensitivity = _check_integer_valued("sensitivity", sensitivity)
        given, self._scale = _epsilon_or_scale("Geometric", self._sensitivity, epsilon, scale)
        self._check_scale(given)
        if not self._scale <= _MAX_GEOMETRIC_SCALE:
            raise ValueError(f"scale (sensitivity/epsilon) = {self._scale:g} exceeds "
                             f"{_MAX_GEOMETRIC_SCALE:g}, where int64 geometric sampling "
                             "overflows; use a larger epsilon or a smaller scale")
        # r = e^{-1/s} and the success probability 1 - r of each geometric draw.
        self._ratio = math.exp(-1 / self._scale)
        self._success = -math.expm1(-1 / self._scale)

    @property
    def privacy(self) -> PureDP:
        return PureDP(self._sensitivity / self._scale)

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray[np.int64]:
        try:
            arr = np.asarray(values)
        except ValueError:  # ragged nesting: finite_array words the TypeError
            arr = finite_array(name, values)
        if arr.dtype.kind not in "iu":
            if arr.dtype != np.float64:
                arr = finite_array(name, arr)
            # One cast and one comparison catch NaN, ±inf, fractions and magnitudes beyond
            # int64: none of them survives the round trip through int64.
            with np.errstate(invalid="ignore"):
                whole = arr.astype(np.int64)
            if not np.array_equal(whole, arr):
                finite_array(name, arr)  # raises the usual message for NaN or inf
                raise ValueError(f"{name} must be whole numbers for the geometric mechanism")
            arr = whole
        # Headroom so that adding noise can never wrap around int64.
        if arr.size and not (-_MAX_GEOMETRIC_VALUE <= arr.min() and arr.max()
                             <= _MAX_GEOMETRIC_VALUE):
            raise ValueError(f"{name} must lie within ±2**62 for the geometric mechanism")
        return arr.astype(np.int64, copy=False)

    def _draw(self, base, size, rng):
        noisy = rng.geometric(self._success, size)
        noisy -= rng.geometric(self._success, size)
        noisy += base
        return noisy

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


# --------------------------------------------------------------------------------------------
# Bounded Laplace
# --------------------------------------------------------------------------------------------


class _BoundedDomain(AdditiveMechanism):
    """Shared pieces of the mechanisms whose output lies in [lower, upper]."""

    _lower: float
    _upper: float

    @property
    def lower(self) -> float:
        return self._lower

    @property
    def upper(self) -> float:
        return self._upper

    def _in_scales(self, distance: NDArray[np.float64]) -> NDArray[np.float64]:
        """distance / scale; ±inf beyond ~1e308 scales, where every tail term is exactly 0."""
        with np.errstate(over="ignore"):
            return distance / self._scale

    def _true_value(self, true_value: ArrayLike | None) -> NDArray[np.float64]:
        if true_value is None:
            raise ValueError(f"true_value is required: the {self.name} mechanism's error "
                             "depends on where the true value lies between the bounds")
        return self._check_values(true_value, "true_value")

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self._sensitivity:g}, "
                f"lower={self._lower:g}, upper={self._upper:g}, scale={self._scale:.6g})"
                f" — {self.privacy.describe()}")


class BoundedLaplace(_BoundedDomain):
    """The bounded Laplace mechanism: Laplace noise conditioned on landing in [lower, upper].

    The output is drawn from the Laplace(true value, b) density restricted to [lower, upper]
    and renormalised, so it never leaves the domain. Because the renormalising constant
    differs between neighbouring true values, b must be larger than sensitivity / epsilon.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity (> 0). Two true values in [lower, upper] differ by at most
        upper − lower, so the calibration uses min(sensitivity, upper − lower).
    lower, upper : float
        The output domain, lower < upper. True values must lie inside it: ``sample``, ``bias``
        and the other methods raise ValueError otherwise (clamp the data first if needed —
        clamping does not increase the sensitivity).
    epsilon : float, optional
        Privacy budget.
    delta : float, default 0.0
        Allowed failure probability in [0, 1).
    scale : float, optional
        A noise scale b instead of (epsilon, delta); the mechanism then reports the exact
        pure-DP epsilon of that b. Give exactly one of epsilon and scale.

    Notes
    -----
    With :math:`C_b(q) = 1 - \\tfrac12\\big(e^{-(q-l)/b} + e^{-(u-q)/b}\\big)` the Laplace mass
    inside [l, u], the density ratio of two neighbours is largest for the true values l and
    l + Δ, at output l. Following Holohan et al.'s calibration, b is the smallest scale with

    .. math:: \\frac{\\Delta}{b} + \\ln\\frac{C_b(l+\\Delta)}{C_b(l)}
              \\le \\varepsilon - \\ln(1-\\delta),

    which is exactly what :func:`_bounded_laplace_epsilon` evaluates (the left side is the
    mechanism's exact pure-DP epsilon). For delta > 0 this is (epsilon, delta)-DP because a
    mechanism with privacy-loss ratio at most e^{ε₀} satisfies
    P[S] − e^ε P'[S] <= P[S](1 − e^{ε−ε₀}) <= δ when ε₀ = ε − ln(1 − δ).
    The root is found by Brent's method on the bracket [Δ/T, 2Δ/T] (T the right side), then
    nudged up until the inequality holds in floating point.

    References
    ----------
    N. Holohan, S. Antonatos, S. Braghin, P. Mac Aonghusa. "The Bounded Laplace Mechanism in
    Differential Privacy." Journal of Privacy and Confidentiality 10(1), 2020.
    arXiv:1808.10410.
    """

    name = "Bounded Laplace"

    def __init__(self, *, sensitivity: float, lower: float, upper: float,
                 epsilon: float | None = None, delta: float = 0.0,
                 scale: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        self._lower, self._upper = _check_domain(lower, upper)
        self._delta = check_delta("delta", delta)
        given = _exactly_one("BoundedLaplace", epsilon=epsilon, scale=scale)
        # Every parameter is checked before the domain width, so a bad one is the one named.
        if given == "epsilon":
            self._epsilon = check_positive("epsilon", epsilon)
        else:
            if self._delta != 0:
                raise ValueError("delta must be 0 when the bounded Laplace is built from scale")
            self._scale = check_positive("scale", scale)
        width = self._upper - self._lower
        if width < _MIN_BOUNDED_WIDTH:  # its renormalising masses underflow to 0
            raise ValueError(f"upper − lower = {width:g} is too narrow for the bounded Laplace "
                             f"mechanism (at least {_MIN_BOUNDED_WIDTH:g}): widen [lower, upper]")
        # Neighbouring true values are both in [lower, upper]: they differ by at most width.
        self._domain_sensitivity = min(self._sensitivity, width)
        if given == "epsilon":
            self._scale = self._calibrate(self._epsilon, self._delta)
        # The calibrated scale also depends on the domain: a tiny width gives a tiny scale.
        self._check_scale("scale" if given == "scale" else "epsilon, delta, lower and upper")
        if given == "scale":
            self._epsilon = self.effective_epsilon

    def _calibrate(self, epsilon: float, delta: float) -> float:
        sens, width = self._domain_sensitivity, self._upper - self._lower
        target = epsilon - math.log1p(-delta)
        if not sens / target <= _SCALE_RANGE[1]:  # the root lies above Δ/T (see below)
            raise ValueError(f"the noise scale from sensitivity and epsilon would exceed "
                             f"{_SCALE_RANGE[1]:g}: epsilon = {epsilon:g} is too small for "
                             f"sensitivity {sens:g}")
        if not 2 * sens / target >= _SCALE_RANGE[0]:  # the root lies below 2Δ/T (see below)
            raise ValueError(f"the noise scale from sensitivity and epsilon, delta, lower and "
                             f"upper would be below {_SCALE_RANGE[0]:g}, beyond which the noise "
                             f"density overflows float64: 2·min(sensitivity, upper − lower) / "
                             f"epsilon = {2 * sens / target:g}")

        def excess(log_scale: float) -> float:  # decreasing in the scale
            return _bounded_laplace_epsilon(math.exp(log_scale), sens, width) - target

        lo, hi = math.log(sens / target), math.log(2 * sens / target)
        for _ in range(64):  # ln C-ratio <= Δ/b puts the root below 2Δ/T: no doubling needed
            if excess(hi) <= 0:
                break
            hi += math.log(2.0)
        else:
            raise RuntimeError("bounded Laplace calibration failed to bracket the root")
        if excess(lo) <= 0:
            scale = math.exp(lo)
        else:
            scale = math.exp(brentq(excess, lo, hi, xtol=1e-15,
                                    rtol=4 * np.finfo(float).eps, maxiter=500))
        while _bounded_laplace_epsilon(scale, sens, width) > target:
            scale = _step_up(scale)
        return scale

    @property
    def effective_epsilon(self) -> float:
        """The exact pure-DP epsilon of this mechanism (> epsilon when delta > 0)."""
        return _bounded_laplace_epsilon(self._scale, self._domain_sensitivity,
                                        self._upper - self._lower)

    @property
    def privacy(self) -> PureDP | ApproxDP:
        if self._delta > 0:
            return ApproxDP(self._epsilon, self._delta)
        return PureDP(self._epsilon)

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray[np.float64]:
        arr = finite_array(name, values)
        if arr.size and not (arr.min() >= self._lower and arr.max() <= self._upper):
            raise ValueError(
                f"{name} must lie in [lower, upper] = [{self._lower:g}, {self._upper:g}], the "
                "bounded Laplace mechanism's domain; clamp them first")
        return arr

    def _tails(self, q: NDArray[np.float64]):
        """Half-tails ½e^{−(q−l)/b}, ½e^{−(u−q)/b} and the mass Z = C_b(q) inside [l, u]."""
        a = self._in_scales(q - self._lower)
        c = self._in_scales(self._upper - q)
        mass = -0.5 * (np.expm1(-a) + np.expm1(-c))
        return 0.5 * np.exp(-a), 0.5 * np.exp(-c), mass

    def _draw(self, base, size, rng):
        # Inverse CDF of the truncated Laplace, with both p and 1 − p formed directly so the
        # upper tail keeps its precision.
        lower_tail, upper_tail, mass = self._tails(base)
        u = rng.random(size)
        p = lower_tail + u * mass
        p_upper = upper_tail + (1.0 - u) * mass
        with np.errstate(divide="ignore"):
            noisy = np.where(p <= 0.5, base + self._scale * np.log(2 * p),
                             base - self._scale * np.log(2 * p_upper))
        np.clip(noisy, self._lower, self._upper, out=noisy)
        return noisy

    def _accuracy(self, beta, true_value):
        q = self._true_value(true_value)
        lower_tail, upper_tail, mass = self._tails(q)
        a = self._in_scales(q - self._lower)
        c = self._in_scales(self._upper - q)
        # While alpha is below both distances to the bounds, both tails count:
        #   P(|E| > alpha) = (2 e^{-alpha} - e^{-a} - e^{-c}) / (2 Z)   (in units of b);
        # beyond the nearer bound, only the far tail: (e^{-alpha} - e^{-max(a,c)}) / (2 Z).
        both = -np.log(beta * mass + lower_tail + upper_tail)
        one = -np.log(2 * beta * mass + np.exp(-np.maximum(a, c)))
        alpha = np.where(both <= np.minimum(a, c), both, one)
        return _shaped(self._scale * np.maximum(alpha, 0.0))

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        q = self._true_value(true_value)
        x, q = _points_and_truth(x, q)
        lower_tail, upper_tail, mass = self._tails(q)
        e = np.clip(x, self._lower - q, self._upper - q)
        below = (_laplace_cdf(e, self._scale) - lower_tail) / mass
        above = 1.0 - (_laplace_sf(e, self._scale) - upper_tail) / mass
        return _shaped(np.clip(np.where(e < 0, below, above), 0.0, 1.0))

    def error_pdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """Density of the error at ``x`` (zero outside [lower − true, upper − true])."""
        q = self._true_value(true_value)
        x, q = _points_and_truth(x, q)
        _, _, mass = self._tails(q)
        inside = (x >= self._lower - q) & (x <= self._upper - q)
        density = _laplace_half_tail(x, self._scale) / (self._scale * mass)
        return _shaped(np.where(inside, density, 0.0))

    def _moments(self, values: ArrayLike):
        """Mean and variance of the error, from the truncated Laplace moments.

        In units of b, with a = (q − l)/b, c = (u − q)/b and P the regularised lower incomplete
        gamma function: mass = ½(P(1,a) + P(1,c)), first moment ½(P(2,c) − P(2,a)), second
        moment P(3,a) + P(3,c). ``gammainc`` keeps these exact when a and c are small.
        """
        q = self._check_values(values)
        a = self._in_scales(q - self._lower)
        c = self._in_scales(self._upper - q)
        mass = 0.5 * (gammainc(1, a) + gammainc(1, c))
        mean = 0.5 * (gammainc(2, c) - gammainc(2, a)) / mass
        second = (gammainc(3, a) + gammainc(3, c)) / mass
        return self._scale * mean, self._scale**2 * np.maximum(second - mean**2, 0.0)

    def bias(self, values: ArrayLike) -> NDArray:
        return _shaped(self._moments(values)[0])

    def variance(self, values: ArrayLike) -> NDArray:
        return _shaped(self._moments(values)[1])


# --------------------------------------------------------------------------------------------
# Clamped Laplace
# --------------------------------------------------------------------------------------------


class ClampedLaplace(_BoundedDomain):
    """Laplace noise, then the noisy value clamped to [lower, upper].

    Clamping is post-processing, so the guarantee is the Laplace one, epsilon-DP with
    b = sensitivity / epsilon; the price is bias near the bounds and point masses at them
    (see :meth:`point_masses`). True values outside [lower, upper] are allowed.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity (> 0).
    lower, upper : float
        Clamping bounds, lower < upper.
    epsilon : float, optional
        Privacy budget; scale = sensitivity / epsilon.
    scale : float, optional
        Noise scale b instead. Give exactly one of epsilon and scale.

    Notes
    -----
    In units of b, with A = (l − q)/b, C = (u − q)/b and W = clip(Y, A, C), Y ~ Laplace(0, 1):
    for A < 0 < C, :math:`E W = \\tfrac12(e^{A} - e^{-C})` and
    :math:`E W^2 = P(2, C) + P(2, -A)` (P the regularised lower incomplete gamma function);
    for A >= 0 (true value below the bounds), with d = C − A,
    :math:`E W = A + \\tfrac12 e^{-A}(1 - e^{-d})` and
    :math:`\\operatorname{Var} W = e^{-A} P(2, d) - \\tfrac14 e^{-2A}(1 - e^{-d})^2`;
    C <= 0 is the mirror image.
    """

    name = "Clamped Laplace"

    def __init__(self, *, sensitivity: float, lower: float, upper: float,
                 epsilon: float | None = None, scale: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        self._lower, self._upper = _check_domain(lower, upper)
        given, self._scale = _epsilon_or_scale("ClampedLaplace", self._sensitivity, epsilon, scale)
        self._check_scale(given)

    @property
    def privacy(self) -> PureDP:
        return PureDP(self._sensitivity / self._scale)

    def _draw(self, base, size, rng):
        noisy = rng.laplace(0.0, self._scale, size)
        noisy += base
        np.clip(noisy, self._lower, self._upper, out=noisy)
        return noisy

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray[np.float64]:
        arr = finite_array(name, values)
        with np.errstate(over="ignore"):
            reachable = np.isfinite(arr - self._lower) & np.isfinite(self._upper - arr)
        if not np.all(reachable):  # the bias (about the distance to a bound) would overflow
            raise ValueError(f"{name} must lie within float64 reach of [lower, upper] = "
                             f"[{self._lower:g}, {self._upper:g}]: the distance overflows")
        return arr

    def point_masses(self, true_value: ArrayLike) -> tuple[NDArray, NDArray]:
        """(P(noisy = lower), P(noisy = upper)) for each true value."""
        q = self._true_value(true_value)
        at_lower = _laplace_cdf(self._lower - q, self._scale)
        at_upper = _laplace_sf(self._upper - q, self._scale)
        return _shaped(at_lower), _shaped(at_upper)

    def _tail(self, alpha: NDArray, q: NDArray) -> NDArray:
        """P(|E| > alpha) for alpha >= 0, E = clip(q + L, l, u) − q."""
        half = _laplace_half_tail(alpha, self._scale)
        low, high = self._lower - q, self._upper - q
        above = np.where(alpha < low, 1.0, np.where(alpha < high, half, 0.0))
        below = np.where(alpha < -high, 1.0, np.where(alpha < -low, half, 0.0))
        return above + below

    def _accuracy(self, beta, true_value):
        q = self._true_value(true_value)
        # The answer is the left end of a piece of the tail function or the point where a piece
        # ½e^{-alpha/b}·k (k = 1, 2) crosses beta: try them all, keep the smallest that works.
        low, high = self._lower - q, self._upper - q
        crossings = [np.full(q.shape, self._scale * (math.log(k / 2) - math.log(beta)))
                     for k in (1, 2)]
        candidates = np.stack([np.zeros(q.shape), low, high, -low, -high, *crossings])
        candidates = np.maximum(candidates, 0.0)
        feasible = self._tail(candidates, q) <= beta * (1 + 1e-12)
        return _shaped(np.where(feasible, candidates, np.inf).min(axis=0))

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        q = self._true_value(true_value)
        x, q = _points_and_truth(x, q)
        cdf = _laplace_cdf(x, self._scale)
        cdf = np.where(x < self._lower - q, 0.0, np.where(x >= self._upper - q, 1.0, cdf))
        return _shaped(cdf)

    def error_pdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """Density of the continuous part of the error (the bounds carry point masses too)."""
        q = self._true_value(true_value)
        x, q = _points_and_truth(x, q)
        inside = (x > self._lower - q) & (x < self._upper - q)
        return _shaped(np.where(inside, _laplace_half_tail(x, self._scale) / self._scale, 0.0))

    def _moments(self, values: ArrayLike):
        q = self._check_values(values)
        b = self._scale
        a, c = self._in_scales(self._lower - q), self._in_scales(self._upper - q)
        d = self._in_scales(self._upper - self._lower)  # c − a, which is NaN when both are inf
        # true value at or below the lower bound (a >= 0); the bias b·E W is formed in the
        # data's units, (l − q) + ..., since a itself can overflow when b is small
        ea = np.exp(-np.maximum(a, 0.0))
        bias_below = np.maximum(self._lower - q, 0.0) - 0.5 * b * ea * np.expm1(-d)
        var_below = ea * gammainc(2, d) - 0.25 * (ea * np.expm1(-d)) ** 2
        # true value at or above the upper bound (c <= 0): the mirror image
        ec = np.exp(np.minimum(c, 0.0))
        bias_above = np.minimum(self._upper - q, 0.0) + 0.5 * b * ec * np.expm1(-d)
        var_above = ec * gammainc(2, d) - 0.25 * (ec * np.expm1(-d)) ** 2
        # true value strictly between the bounds
        e_low, e_high = np.exp(np.minimum(a, 0.0)), np.exp(-np.maximum(c, 0.0))
        mean_inside = 0.5 * (e_low - e_high)
        var_inside = (gammainc(2, np.maximum(c, 0.0)) + gammainc(2, np.maximum(-a, 0.0))
                      - 0.25 * (e_low - e_high) ** 2)
        bias = np.where(a >= 0, bias_below, np.where(c <= 0, bias_above, b * mean_inside))
        var = np.where(a >= 0, var_below, np.where(c <= 0, var_above, var_inside))
        return bias, b**2 * np.maximum(var, 0.0)

    def bias(self, values: ArrayLike) -> NDArray:
        return _shaped(self._moments(values)[0])

    def variance(self, values: ArrayLike) -> NDArray:
        return _shaped(self._moments(values)[1])

    def mse(self, values: ArrayLike) -> NDArray:
        bias, variance = self._moments(values)
        with np.errstate(over="ignore"):
            mse = variance + np.square(bias)
        if not np.all(np.isfinite(mse)):  # |bias| beyond ~1e154: a true value absurdly far out
            raise ValueError(f"values lie so far outside [lower, upper] = [{self._lower:g}, "
                             f"{self._upper:g}] that the mean squared error overflows float64; "
                             "keep them within 1e154 of the bounds")
        return _shaped(mse)


# --------------------------------------------------------------------------------------------
# factory
# --------------------------------------------------------------------------------------------

_OPTIONAL_PARAMETERS = {
    "laplace": {"epsilon", "scale"},
    "gaussian": {"epsilon", "delta", "rho", "scale"},
    "geometric": {"epsilon", "scale"},
    "bounded_laplace": {"epsilon", "delta", "scale", "lower", "upper"},
    "clamped_laplace": {"epsilon", "scale", "lower", "upper"},
}


def make_mechanism(kind: str, *, sensitivity: float, epsilon: float | None = None,
                   delta: float | None = None, rho: float | None = None,
                   scale: float | None = None, lower: float | None = None,
                   upper: float | None = None) -> AdditiveMechanism:
    """Build an additive mechanism by name, as the UI and the accuracy solver do.

    Parameters
    ----------
    kind : {"laplace", "gaussian", "geometric", "bounded_laplace", "clamped_laplace"}
    sensitivity, epsilon, delta, rho, scale, lower, upper
        As in each class. A parameter the kind does not use (rho for "laplace", bounds for
        "gaussian", ...) raises ValueError rather than being silently ignored; "bounded_laplace"
        and "clamped_laplace" need lower and upper.
    """
    kind = check_choice("kind", kind, MECHANISM_KINDS)
    given = {"epsilon": epsilon, "delta": delta, "rho": rho, "scale": scale,
             "lower": lower, "upper": upper}
    unused = sorted(n for n, v in given.items()
                    if v is not None and n not in _OPTIONAL_PARAMETERS[kind])
    if unused:
        raise ValueError(f"{', '.join(unused)} does not apply to the {kind} mechanism")
    if kind == "laplace":
        return Laplace(sensitivity=sensitivity, epsilon=epsilon, scale=scale)
    if kind == "gaussian":
        return Gaussian(sensitivity=sensitivity, epsilon=epsilon, delta=delta, rho=rho,
                        scale=scale)
    if kind == "geometric":
        return Geometric(sensitivity=sensitivity, epsilon=epsilon, scale=scale)
    if lower is None or upper is None:
        raise ValueError(f"the {kind} mechanism needs lower and upper")
    if kind == "bounded_laplace":
        return BoundedLaplace(sensitivity=sensitivity, lower=lower, upper=upper,
                              epsilon=epsilon, delta=0.0 if delta is None else delta,
                              scale=scale)
    return ClampedLaplace(sensitivity=sensitivity, lower=lower, upper=upper, epsilon=epsilon,
                          scale=scale)
