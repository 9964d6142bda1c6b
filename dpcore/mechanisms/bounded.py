"""The bounded and the clamped Laplace mechanisms: classes, maths and catalogue entries.

Both keep the noisy answer inside a public range [lower, upper]: the bounded Laplace by
truncating the noise (and widening it to stay private), the clamped Laplace by clamping.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import gammainc

from dpcore.checks import check_bounds, check_delta, check_positive, finite_array
from dpcore.measures import ApproxDP, PureDP
from dpcore.mechanisms.base import (
    _SCALE_RANGE,
    AdditiveMechanism,
    AuditCase,
    MechanismSpec,
    ReleaseRecipe,
    _epsilon_or_scale,
    _exactly_one,
    _loss_up,
    _points_and_truth,
    _shaped,
    _step_up,
)
from dpcore.mechanisms.laplace import _laplace_cdf, _laplace_half_tail, _laplace_sf
from dpcore.sampling import _block_size, fill_laplace

__all__ = ["BoundedLaplace", "ClampedLaplace", "SPECS"]

# A bounded Laplace domain narrower than this has a calibrated scale, and renormalising
# masses, at the edge of float64 (a subnormal width gives 0/0).
_MIN_BOUNDED_WIDTH = 1e-290


def _check_domain(lower: object, upper: object) -> tuple[float, float]:
    """Finite bounds lower < upper whose width upper − lower is finite too."""
    lo, hi = check_bounds(lower, upper)
    if not hi - lo < math.inf:
        raise ValueError(f"upper − lower overflows float64 (lower={lo:g}, upper={hi:g}): "
                         "narrow the bounds")
    return lo, hi


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

    @property
    def answer_range(self) -> tuple[float, float]:
        return (self._lower, self._upper)

    def _in_scales(self, distance: NDArray[np.float64]) -> NDArray[np.float64]:
        """distance / scale; ±inf beyond ~1e308 scales, where every tail term is exactly 0."""
        with np.errstate(over="ignore"):
            return distance / self._scale

    def _true_value(self, true_value: ArrayLike | None) -> NDArray[np.float64]:
        if true_value is None:
            raise ValueError(f"true_value is required: the {self.name} mechanism's error "
                             "depends on where the true value lies between the bounds")
        return self._check_values(true_value, "true_value")

    def error_breakpoints(self, true_value: ArrayLike | None = None) -> NDArray[np.float64]:
        """0 and the errors that land on the range's ends, lower − true and upper − true."""
        q = self._true_value(true_value)
        if q.ndim != 0:
            raise ValueError(f"true_value must be a single number, got shape {q.shape}")
        return np.unique([self._lower - float(q), 0.0, self._upper - float(q)])

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
            from scipy.optimize import brentq  # slow to import: on first use
            scale = math.exp(brentq(excess, lo, hi, xtol=1e-15,
                                    rtol=4 * np.finfo(float).eps, maxiter=500))
        while _bounded_laplace_epsilon(scale, sens, width) > target:
            scale = _step_up(scale)
        return scale

    @classmethod
    def pure_epsilon_bound(cls, epsilon: float, delta: float = 0.0) -> float:
        """epsilon − ln(1 − delta): the calibration makes every bounded Laplace built from
        (epsilon, delta) pure-DP at this epsilon (its :attr:`effective_epsilon` is at most
        this, whatever its sensitivity and domain)."""
        epsilon = check_positive("epsilon", epsilon)
        delta = check_delta("delta", delta)
        return epsilon - math.log1p(-delta)

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

    def _draw_into(self, out, base, rng):
        # Inverse CDF of the truncated Laplace, with one logarithm per draw: the uniform U
        # becomes p = P(noisy <= y) measured from the lower bound, and 1 − p is formed
        # directly from the upper tail, so that both tails keep their precision. Whole trials
        # are drawn a cache-sized block at a time.
        if out.size == 0:
            return
        view = out if out.ndim > base.ndim else out[np.newaxis]
        lower_tail, upper_tail, mass = self._tails(base)
        per_block = max(1, _block_size() // max(1, base.size))
        for start in range(0, view.shape[0], per_block):
            block = view[start:start + per_block]
            u = rng.random(block.shape)
            low_side = lower_tail + u * mass  # p
            below = low_side <= 0.5
            u = upper_tail + (1.0 - u) * mass  # 1 − p
            np.copyto(u, low_side, where=below)
            u *= 2.0
            with np.errstate(divide="ignore"):  # p = 0 exactly: the lower bound itself
                np.log(u, out=u)
            u *= self._scale
            np.negative(u, out=u, where=~below)
            u += base
            np.clip(u, self._lower, self._upper, out=block)

    def _interval_half_width(self, alpha):
        # The noise is Laplace conditioned on landing in [l, u], whose mass C_b(q) is at least
        # ½(1 − e^{−(u−l)/b}) for a true value q in [l, u] (at q = l or u), so
        # P(|E| > a) <= e^{−a/b} / min C_b = alpha at a = b·ln(1 / (alpha·min C_b)):
        # conservative (true for every q), never the true value's own accuracy.
        least_mass = -0.5 * math.expm1(-(self._upper - self._lower) / self._scale)
        return self._scale * -(math.log(alpha) + math.log(least_mass))

    def _interval_around(self, released, half_width):
        # the true value lies in [lower, upper] (the mechanism refuses any other)
        released = np.asarray(released, dtype=np.float64)
        return (np.maximum(released - half_width, self._lower),
                np.minimum(released + half_width, self._upper))

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

    def mae(self, values: ArrayLike) -> NDArray:
        """E|error| = b (P(2, a) + P(2, c)) / (P(1, a) + P(1, c)), a = (q − l)/b,
        c = (u − q)/b (each tail of the truncated Laplace contributes ½ b P(2, ·))."""
        q = self._check_values(values)
        a = self._in_scales(q - self._lower)
        c = self._in_scales(self._upper - q)
        mae = self._scale * (gammainc(2, a) + gammainc(2, c)) / (gammainc(1, a) + gammainc(1, c))
        return _shaped(mae)

    def epsilon_for_delta(self, delta: float) -> float:
        """epsilon at every delta at least the one it was built for; its exact pure-DP
        epsilon (:attr:`effective_epsilon`) below that."""
        delta = check_delta("delta", delta)
        return self._epsilon if delta >= self._delta else self.effective_epsilon


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
    # clamping is post-processing: the privacy loss is the Laplace mechanism's
    pld_noise = "laplace"

    def __init__(self, *, sensitivity: float, lower: float, upper: float,
                 epsilon: float | None = None, scale: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        self._lower, self._upper = _check_domain(lower, upper)
        given, self._scale = _epsilon_or_scale("ClampedLaplace", self._sensitivity, epsilon, scale)
        self._check_scale(given)

    @property
    def privacy(self) -> PureDP:
        return PureDP(_loss_up(self._sensitivity, self._scale))

    def _fill_noise(self, out, shift, rng):
        fill_laplace(out, scale=self._scale, shift=shift, rng=rng)

    def _finish(self, out):
        np.clip(out, self._lower, self._upper, out=out)

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

    def _interval_half_width(self, alpha):
        return self._scale * -math.log(alpha)  # the Laplace noise before clamping

    def _interval_around(self, released, half_width):
        # Clamping moves the noisy value towards the range, so |clamped − true| <= |noise|
        # for a true value inside it; but the true value may lie outside: a value clamped to
        # a bound says only that the true value is within a of it or beyond.
        released = np.asarray(released, dtype=np.float64)
        low = np.where(released <= self._lower, -np.inf, released - half_width)
        high = np.where(released >= self._upper, np.inf, released + half_width)
        return low, high

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

    def mae(self, values: ArrayLike) -> NDArray:
        """E|error| of the clamped Laplace.

        Inside the bounds, E|W| = ∫ P(|W| > t) dt = b (1 − ½(e^{−(u−q)/b} + e^{−(q−l)/b}));
        outside them the error has one sign, so E|W| = |E W| = |bias|.
        """
        q = self._check_values(values)
        b = self._scale
        a, c = self._in_scales(q - self._lower), self._in_scales(self._upper - q)
        d = self._in_scales(self._upper - self._lower)
        inside = b * (1 - 0.5 * (np.exp(-np.maximum(c, 0.0)) + np.exp(-np.maximum(a, 0.0))))
        # Beyond a bound the distance is added in the data's units: b·(distance / b) would be
        # inf·b when the distance is ~1e308 scales.
        below = (np.maximum(self._lower - q, 0.0)
                 - 0.5 * b * np.exp(-np.maximum(-a, 0.0)) * np.expm1(-d))
        above = (np.maximum(q - self._upper, 0.0)
                 - 0.5 * b * np.exp(-np.maximum(-c, 0.0)) * np.expm1(-d))
        with np.errstate(over="ignore"):
            mae = np.where(a <= 0, below, np.where(c <= 0, above, inside))
        if not np.all(np.isfinite(mae)):  # pragma: no cover (the values are checked above)
            raise ValueError("values lie too far outside [lower, upper]")
        return _shaped(mae)


def _edge_pairs(mechanism: _BoundedDomain) -> tuple[tuple[float, float], ...]:
    """Neighbouring true values at each bound (where the truncated mass, and so the privacy
    loss, is most lopsided), and a pair in the middle for contrast."""
    lo, hi = mechanism.lower, mechanism.upper
    step = min(mechanism.sensitivity, hi - lo)
    mid = lo + (hi - lo - step) / 2
    return (lo, lo + step), (hi - step, hi), (mid, mid + step)


def _bounded_worst_case(mechanism: BoundedLaplace) -> tuple[AuditCase, ...]:
    # Every output lies in [lower, upper]; extra thresholds hug the bounds, where the density
    # ratio of the two neighbours peaks.
    lo, hi = mechanism.lower, mechanism.upper
    width = hi - lo
    hugging = [lo + width * f for f in (0.002, 0.005, 0.01)] + [hi - width * f
                                                                for f in (0.002, 0.005, 0.01)]
    thresholds = tuple(sorted({*hugging, *np.linspace(lo, hi, 41).tolist()}))
    return tuple(AuditCase(x, x_prime, thresholds) for x, x_prime in _edge_pairs(mechanism))


def _clamped_worst_case(mechanism: ClampedLaplace) -> tuple[AuditCase, ...]:
    # The clamped mass sits exactly on the bounds: events just inside them catch it.
    lo, hi = mechanism.lower, mechanism.upper
    width = hi - lo
    inner = np.linspace(lo + width / 40, hi - width / 40, 39).tolist()
    thresholds = tuple([lo + width * 1e-9, *inner, hi - width * 1e-9])
    return tuple(AuditCase(x, x_prime, thresholds) for x, x_prime in _edge_pairs(mechanism))


SPECS = (
    MechanismSpec(
        kind="bounded_laplace",
        label="Bounded Laplace",
        mechanism=BoundedLaplace,
        budgets={"pure": ("epsilon",), "approx": ("epsilon", "delta")},
        parameters=("epsilon", "delta", "scale", "lower", "upper"),
        sensitivity_norm="L1",
        integer_only=False,
        needs_range=True,
        true_value_in_range=True,
        scale_meaning="scale b of the Laplace density restricted to the answer range",
        explanation="Draws Laplace noise that never leaves the public answer range; the noise "
                    "is widened to pay for the cut-off tails.",
        worst_case=_bounded_worst_case,
        sample_parameters=({"sensitivity": 1.0, "epsilon": 1.0, "lower": 0.0, "upper": 10.0},
                           {"sensitivity": 2.0, "epsilon": 0.5, "delta": 1e-3, "lower": -3.0,
                            "upper": 7.0},
                           {"sensitivity": 1.0, "scale": 1.0, "lower": 0.0, "upper": 2.0}),
        unreleasable=(
            "bounded Laplace has no floating-point-safe sampler in OpenDP 0.16 (its noise, a "
            "Laplace density cut to the answer range, is drawn here with numpy floats, which "
            "floating-point attacks can read; Mironov 2012): for a real release use clamped "
            "Laplace (Laplace noise, then clamping to the same range: the same ε)"),
    ),
    MechanismSpec(
        kind="clamped_laplace",
        label="Clamped Laplace",
        mechanism=ClampedLaplace,
        budgets={"pure": ("epsilon",)},
        parameters=("epsilon", "scale", "lower", "upper"),
        sensitivity_norm="L1",
        integer_only=False,
        needs_range=True,
        true_value_in_range=False,
        scale_meaning="Laplace scale b; the noisy answer is then clamped to the answer range",
        explanation="Adds Laplace noise, then moves any answer outside the public range to "
                    "the nearest end of it.",
        worst_case=_clamped_worst_case,
        sample_parameters=({"sensitivity": 1.0, "epsilon": 1.0, "lower": 0.0, "upper": 10.0},
                           {"sensitivity": 1.0, "epsilon": 2.0, "lower": -1.0, "upper": 1.0},
                           {"sensitivity": 3.0, "scale": 0.5, "lower": 0.0, "upper": 100.0}),
        release=ReleaseRecipe("make_laplace", "epsilon", clamp=True,
                              pipeline_dp_reason="PipelineDP 0.3 does not clamp its output: "
                              "use laplace for the Spark program"),
    ),
)
