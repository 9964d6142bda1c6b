"""Intervals for what a noisy arg-max releases (a chosen candidate, a quantile's grid value):
how far the chosen candidate's score falls short of the best one's, at 1 − alpha, from the
noise's law, its scale and the number of candidates only (a union bound), never the scores.

Report noisy max picks i with s_i + Z_i >= s_b + Z_b for a best candidate b, so the shortfall
s_b − s_i is at most Z_i − Z_b, a difference of two independent noises. It exceeds E only if
some other candidate's difference does: P(shortfall > E) <= (m − 1)·P(Z − Z' > E) over the
m − 1 candidates beside b. Each noise law's difference has a closed-form tail:

- Gumbel noise (the exponential mechanism): the logistic law, P(D > t) = 1 / (1 + e^{t/b});
- exponential noise (permute-and-flip): the Laplace law, P(D > t) = e^{−t/b} / 2;
- Laplace noise: P(D > t) = (2 + t/b)·e^{−t/b} / 4.

Top-k peels (k rounds of report noisy max, each on the candidates not chosen yet: OpenDP
peels permute-and-flip, and Gumbel's one-shot top-k has the law of peeling the exponential
mechanism), so rank r's shortfall from the best candidate left has the bound over the
m − r candidates beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from dpcore.checks import check_choice, check_int, check_positive, check_probability_open
from dpcore.selection import NOISE_TYPES

__all__ = ["difference_tail", "selection_shortfall", "top_k_shortfalls"]


def _lambert_laplace(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """t >= 0 with (2 + t)·e^{−t} / 4 = p (p <= 1/2): t = −2 − W₋₁(−4p·e^{−2})."""
    from scipy.special import lambertw

    return -2.0 - lambertw(-4.0 * p * math.exp(-2.0), k=-1).real


_Law = Callable[[NDArray[np.float64]], NDArray[np.float64]]
#: P(Z − Z' > t) for t >= 0 in units of the scale, Z and Z' independent standard noises of
#: each law, and its inverse for p in (0, 1/2] (the tail at 0 is 1/2 for every law).
_DIFFERENCE_LAWS: dict[str, tuple[_Law, _Law]] = {
    "gumbel": (lambda t: np.exp(-np.logaddexp(0.0, t)),
               lambda p: np.log1p(-p) - np.log(p)),
    "exponential": (lambda t: 0.5 * np.exp(-t),
                    lambda p: -np.log(2.0 * p)),
    "laplace": (lambda t: (2.0 + t) * np.exp(-t) / 4.0,
                _lambert_laplace),
}


def _shortfalls(noise: str, scale: float, candidates: NDArray[np.int64], alpha: float
                ) -> NDArray[np.float64]:
    """The union bound's E for each number of candidates (>= 1), vectorized."""
    with np.errstate(divide="ignore"):  # one candidate: p = inf, no shortfall
        p = np.minimum(alpha / (candidates - 1.0), 0.5)
    t = _DIFFERENCE_LAWS[noise][1](p)
    # rounded up: the inverse's last-digit error must not put the bound a hair below alpha
    return scale * np.maximum(t, 0.0) * (1 + 1e-12)


def difference_tail(noise: str, t: float | NDArray[np.float64]) -> NDArray[np.float64]:
    """P(Z − Z' > t) for two independent standard ``noise`` draws (scale 1), t >= 0: the
    law a noisy arg-max's shortfall is bounded by (see the module's docstring)."""
    noise = check_choice("noise", noise, NOISE_TYPES)
    values = np.asarray(t, dtype=np.float64)
    if not np.all(values >= 0):
        raise ValueError("t must be >= 0 (and not NaN)")
    return _DIFFERENCE_LAWS[noise][0](values)


def selection_shortfall(noise: str, scale: float, candidates: int, alpha: float) -> float:
    """E >= 0 with P(best score − chosen score > E) <= ``alpha`` for report noisy max over
    ``candidates`` scores with ``noise`` of ``scale``, whatever the scores: the union bound
    (candidates − 1)·P(Z − Z' > E/scale) <= alpha, solved in closed form (0 when one
    candidate, or when the bound holds at 0).

    Gumbel noise (the exponential mechanism): E = b·ln((m − 1)/alpha − 1), just below the
    textbook b·ln(m/alpha) (b = 2Δ/ε). Exponential noise (permute-and-flip): E =
    b·ln((m − 1)/(2·alpha)). Laplace noise: the root of (2 + t)e^{−t}/4 = alpha/(m − 1),
    t = E/b, by Lambert's W.
    """
    return float(top_k_shortfalls(noise, scale, candidates, 1, alpha)[0])


def top_k_shortfalls(noise: str, scale: float, candidates: int, k: int, alpha: float
                     ) -> NDArray[np.float64]:
    """For each rank r = 1..k of a peeled top-k, E_r >= 0 with P(the best score among the
    candidates not chosen before rank r − the score chosen at rank r > E_r) <= ``alpha``:
    :func:`selection_shortfall` over the m − r + 1 candidates left. Each rank holds at its
    level on its own; E_1 is report noisy max's."""
    noise = check_choice("noise", noise, NOISE_TYPES)
    scale = check_positive("scale", scale)
    m = check_int("candidates", candidates, minimum=1)
    k = check_int("k", k, minimum=1, maximum=m)
    alpha = check_probability_open("alpha", alpha)
    return _shortfalls(noise, scale, m - np.arange(k), alpha)
