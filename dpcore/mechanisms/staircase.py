"""The staircase mechanism: its class, its closed-form law and its catalogue entry.

Pure-DP noise whose density steps down by e^{−ε} at every multiple of the sensitivity: the
optimal noise for large epsilon (Geng & Viswanath 2015), with γ at its optimum by default.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from dpcore.checks import check_positive, check_probability_open, check_real
from dpcore.measures import PureDP
from dpcore.mechanisms.base import (
    _SCALE_RANGE,
    AdditiveMechanism,
    AuditCase,
    MechanismSpec,
    _check_grid,
    _exactly_one,
    _real_points,
    _shaped,
)
from dpcore.sampling import _block_size

__all__ = ["Staircase", "SPECS"]

# Steps listed by error_breakpoints, at most: beyond a few thousand steps they are finer than
# anything a chart or a quadrature resolves over the noise's spread.
_MAX_STEPS = 2000


def _optimal_gamma(epsilon: NDArray[np.float64] | float) -> NDArray[np.float64] | float:
    """γ* = 1 / (1 + e^{ε/2}), the shape that minimises the expected absolute error."""
    return expit(-np.asarray(epsilon, dtype=np.float64) / 2)


def _shape(epsilon, gamma):
    """b = e^{−ε}, 1 − b, and D = γ + (1 − γ) b, the mass of one step over its width."""
    b = np.exp(-epsilon)
    one_minus = -np.expm1(-epsilon)
    return b, one_minus, gamma + (1 - gamma) * b


def _moments(epsilon, gamma, width):
    """(E X², E|X|) of the staircase noise, in closed form (sums over the steps:
    Σ b^k = 1/(1−b), Σ k b^k = b/(1−b)², Σ k² b^k = b(1+b)/(1−b)³)."""
    b, c, d = _shape(epsilon, gamma)
    g = gamma
    with np.errstate(over="ignore"):
        second = width**2 / (3 * d) * (
            3 * g * b * (1 + b) / c**2 + 3 * g * g * b / c + g**3
            + 3 * (1 - g) * b * b * (1 + b) / c**2 + 3 * (1 - g * g) * b * b / c
            + b * (1 - g**3))
        mean_abs = width / (2 * d) * (2 * g * b / c + g * g + 2 * (1 - g) * b * b / c
                                      + b * (1 - g * g))
    return second, mean_abs


def _tail_position(epsilon, gamma, beta):
    """The error alpha / width at which P(|X| > alpha) = beta: the step k = floor(ln(1/β)/ε)
    where the tail b^k has fallen to beta at most (corrected for rounding), then the place r
    within it, inverting the tail's linear pieces."""
    b, c, d = _shape(epsilon, gamma)
    log_beta = math.log(beta)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        k = np.floor(-log_beta / epsilon)
        k = np.where(log_beta + k * epsilon > 0, k - 1, k)  # b^k >= beta
        k = np.where(log_beta + (k + 1) * epsilon <= 0, k + 1, k)
        k = np.maximum(k, 0.0)
        # within step k: b^k (1 − (1 − b)/D · h(r)) = beta, h(r) = min(r, γ) + b·max(r − γ, 0)
        h = -np.expm1(log_beta + k * epsilon) * d / c
        r = np.where(h <= gamma, h, gamma + (h - gamma) / np.where(b > 0, b, 1.0))
    return k + np.clip(r, 0.0, 1.0)


class Staircase(AdditiveMechanism):
    """The staircase mechanism: pure DP noise shaped as a geometric mixture of uniforms.

    Parameters
    ----------
    sensitivity : float
        L1 sensitivity Δ (> 0): the width of each step.
    epsilon : float
        Privacy budget: the density falls by e^{−ε} at every step.
    gamma : float, optional
        Where within a step the density drops, as a share of the step, in [0, 1]; by default
        its optimum for the expected absolute error, γ* = 1 / (1 + e^{ε/2}).

    Notes
    -----
    With b = e^{−ε} and a = (1 − b) / (2Δ(γ + (1 − γ)b)), the density is a·b^k on
    [kΔ, (k+γ)Δ) and a·b^{k+1} on [(k+γ)Δ, (k+1)Δ), mirrored for negative errors. A shift by
    at most Δ crosses at most one drop, so the mechanism is ε-DP; P(|X| >= kΔ) = b^k.
    Drawn by the paper's construction, vectorised: X = S·Δ·(G + γU) with probability
    γ / (γ + (1 − γ)b), else S·Δ·(G + γ + (1 − γ)U), for a fair sign S, U uniform and
    G = floor(E/ε) geometric (E ~ Exp(1), from ``rng.standard_exponential``). For large ε
    its error is far below the Laplace mechanism's (the expected absolute error falls like
    e^{−ε/2} instead of 1/ε); for small ε the two agree.

    References
    ----------
    Q. Geng, P. Viswanath. "The Optimal Noise-Adding Mechanism in Differential Privacy."
    IEEE Transactions on Information Theory 62(2), 2016. arXiv:1212.1186.
    """

    name = "Staircase"

    def __init__(self, *, sensitivity: float, epsilon: float | None = None,
                 gamma: float | None = None) -> None:
        self._sensitivity = check_positive("sensitivity", sensitivity)
        _exactly_one("Staircase", epsilon=epsilon)  # its only budget: required
        self._epsilon = check_positive("epsilon", epsilon)
        if gamma is None:
            self._gamma = float(_optimal_gamma(self._epsilon))
        else:
            self._gamma = check_real("gamma", gamma)
            if not 0 <= self._gamma <= 1:
                raise ValueError(f"gamma must lie in [0, 1], got {self._gamma}")
        low, high = _SCALE_RANGE
        if not low <= self._sensitivity <= high:
            raise ValueError(f"sensitivity = {self._sensitivity:g}, the staircase's step, is "
                             f"outside [{low:g}, {high:g}], beyond which its density or "
                             "variance overflows float64")
        if not self._sensitivity / self._epsilon <= high:
            raise ValueError(f"epsilon = {self._epsilon:g} is too small for sensitivity "
                             f"{self._sensitivity:g}: the noise's spread, sensitivity/epsilon, "
                             f"exceeds {high:g}")
        self._scale = self._sensitivity
        self._derive()

    def _derive(self) -> None:
        b, c, d = _shape(self._epsilon, self._gamma)
        self._ratio, self._height = float(b), float(c / (2 * self._scale * d))
        self._first = self._gamma / float(d)  # P(the first, higher part of a step)

    @property
    def privacy(self) -> PureDP:
        return PureDP(self._epsilon)

    @property
    def gamma(self) -> float:
        """Where the density drops within each step, as a share of the step."""
        return self._gamma

    # -- sampling ------------------------------------------------------------------------------

    def _fill_noise(self, out, shift, rng):
        block = _block_size()
        size = min(block, out.size)
        position, coin = np.empty(size), np.empty(size)
        gamma, rest, width = self._gamma, 1 - self._gamma, self._scale
        for start in range(0, out.size, block):
            part = out[start:start + block]
            n = part.size
            u, v = position[:n], coin[:n]
            rng.standard_exponential(n, out=part)
            part /= self._epsilon
            np.floor(part, out=part)  # G: P(G >= k) = P(E >= kε) = b^k
            rng.random(n, out=u)
            rng.random(n, out=v)
            # one uniform gives both the sign (v < ½) and the part of the step: 2v mod 1 is
            # uniform on the 2**52 grid and independent of the sign, exactly
            sign = v - 0.5
            v *= 2.0
            v -= v >= 1.0
            second = v >= self._first
            u *= np.where(second, rest, gamma)
            u += np.where(second, gamma, 0.0)
            part += u
            part *= width
            np.copysign(part, sign, out=part)
            if shift:
                part += shift

    # -- the law -------------------------------------------------------------------------------

    def _survival(self, distance: NDArray[np.float64]) -> NDArray[np.float64]:
        """P(X > d) for d >= 0 (inf allowed)."""
        with np.errstate(invalid="ignore", over="ignore"):
            steps = distance / self._scale
            k = np.floor(steps)
            r = steps - k
            start = 0.5 * np.exp(-k * self._epsilon)  # ½ b^k
            inside = np.minimum(r, self._gamma) + self._ratio * np.maximum(r - self._gamma, 0)
            value = start * (1 - 2 * self._height * self._scale * inside)
        # (a distance so large that distance / step overflows is beyond every step: 0)
        return np.where(np.isfinite(steps), np.maximum(value, 0.0), 0.0)

    def _accuracy(self, beta, true_value):
        alpha = float(self._scale * _tail_position(self._epsilon, self._gamma, beta))
        for _ in range(64):  # rounding of the inverse: raise until the tail confirms it
            if 2 * float(self._survival(np.array(alpha))) <= beta:
                break
            alpha = math.nextafter(alpha, math.inf)
        return alpha

    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        x = _real_points("x", x)
        above = self._survival(np.abs(x))
        return _shaped(np.where(x < 0, above, 1.0 - above))

    def error_pdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """Density of the error at ``x`` (the value on the right of each step's edge)."""
        x = _real_points("x", x)
        with np.errstate(invalid="ignore", over="ignore"):
            steps = np.abs(x) / self._scale
            k = np.floor(steps)
            lower_part = steps - k >= self._gamma
            density = self._height * np.exp(-(k + lower_part) * self._epsilon)
        return _shaped(np.where(np.isfinite(x), density, 0.0))

    def error_breakpoints(self, true_value: ArrayLike | None = None) -> NDArray[np.float64]:
        """The steps' edges ±kΔ and ±(k + γ)Δ, out to where the tail falls below 1e-17 (at
        most 2000 steps each way)."""
        steps = min(_MAX_STEPS, math.ceil(39.2 / self._epsilon) + 1)
        k = np.arange(steps + 1, dtype=np.float64)
        edges = np.concatenate([k, k + self._gamma]) * self._scale
        return np.unique(np.concatenate([-edges, edges]))

    def variance(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        second, _ = _moments(self._epsilon, self._gamma, self._scale)
        return _shaped(np.full(base.shape, float(second)))

    def mae(self, values: ArrayLike) -> NDArray:
        base = self._check_values(values)
        _, mean_abs = _moments(self._epsilon, self._gamma, self._scale)
        return _shaped(np.full(base.shape, float(mean_abs)))

    @classmethod
    def sweep(cls, epsilons: ArrayLike, *, sensitivity: float, beta: float = 0.05,
              true_value: float | None = None, **options: float
              ) -> dict[str, NDArray[np.float64]]:
        """Closed forms over the grid: the step is the sensitivity at every epsilon, γ its
        optimum at each (or the one given); alpha from the tail's inverse, RMSE and MAE from
        the sums over the steps."""
        grid = _check_grid(epsilons)
        beta = check_probability_open("beta", beta)
        for end in (grid.min(), grid.max()):  # validates sensitivity, gamma and the spread
            cls(sensitivity=sensitivity, epsilon=float(end), **options)
        width = float(sensitivity)
        gamma = options.get("gamma")
        gammas = _optimal_gamma(grid) if gamma is None else np.full(grid.shape, float(gamma))
        second, mean_abs = _moments(grid, gammas, width)
        alpha = np.array([cls(sensitivity=width, epsilon=float(e), gamma=float(g))
                          ._accuracy(beta, None) for e, g in zip(grid, gammas, strict=True)])
        return {"scale": np.full(grid.shape, width), "alpha": alpha, "rmse": np.sqrt(second),
                "mae": mean_abs}


def _worst_case(mechanism: Staircase) -> tuple[AuditCase, ...]:
    # Answers 0 and Δ: each tail {y < −kΔ} has probability ratio exactly e^ε, and so do the
    # mirrored ones above Δ; the inner edges (k + γ)Δ and a grid complete the events.
    width, sens = mechanism.scale, mechanism.sensitivity
    reach = max(1, min(12, math.ceil(4 * math.sqrt(float(mechanism.variance(0))) / width)))
    k = np.arange(reach + 1, dtype=np.float64)
    edges = np.concatenate([k, k + mechanism.gamma]) * width
    grid = np.linspace(-reach * width, sens + reach * width, 17)
    thresholds = np.unique(np.concatenate([-edges, sens + edges, grid]))
    return (AuditCase(0.0, sens, tuple(thresholds)),)


SPECS = (
    MechanismSpec(
        kind="staircase",
        label="Staircase",
        mechanism=Staircase,
        budgets={"pure": ("epsilon",)},
        parameters=("epsilon", "gamma"),
        sensitivity_norm="L1",
        integer_only=False,
        needs_range=False,
        true_value_in_range=False,
        scale_meaning="step width (the sensitivity): the noise density drops by e^−ε at every "
                      "step",
        explanation="Adds noise whose density falls in steps rather than smoothly: the least "
                    "error pure DP allows, far below Laplace noise when ε is large.",
        worst_case=_worst_case,
        sample_parameters=({"sensitivity": 1.0, "epsilon": 1.0},
                           {"sensitivity": 2.0, "epsilon": 4.0},
                           {"sensitivity": 0.5, "epsilon": 0.3, "gamma": 0.3}),
        unreleasable=(
            "the staircase mechanism has no sampler in OpenDP 0.16 (drawn here with numpy "
            "floats, open to floating-point attacks; Mironov 2012): for a real release use "
            "Laplace, or geometric for whole numbers (ε-DP with OpenDP's exact samplers)"),
    ),
)
