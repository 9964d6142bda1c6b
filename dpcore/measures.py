"""Privacy measures (pure DP, approximate DP, zCDP), conversions between them, and composition.

Measures are frozen dataclasses that validate themselves; mechanisms report the measure they
satisfy in ``.privacy``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import TypeVar

import numpy as np

from dpcore.checks import check_delta, check_int, check_positive, check_real
from dpcore.safe_rounding import upper

__all__ = [
    "PureDP",
    "ApproxDP",
    "ZCDP",
    "Measure",
    "compose",
    "advanced_composition",
    "zcdp_epsilon",
    "split_budget",
]


@dataclass(frozen=True)
class PureDP:
    """epsilon-differential privacy: P[M(x) in S] <= e^epsilon P[M(x') in S] for neighbours."""

    epsilon: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon", check_positive("epsilon", self.epsilon))

    def to_zcdp(self) -> ZCDP:
        """epsilon-DP implies (epsilon²/2)-zCDP (Bun & Steinke 2016, Proposition 1.4)."""
        rho = self.epsilon * self.epsilon / 2  # a product: float ** raises on overflow
        if not 0 < rho < math.inf:
            raise ValueError(f"epsilon = {self.epsilon:g} has no zCDP equivalent in float64: "
                             "rho = epsilon²/2 overflows or underflows")
        return ZCDP(rho)

    def to_approx(self, delta: float = 0.0) -> ApproxDP:
        """epsilon-DP is (epsilon, delta)-DP for every delta >= 0."""
        return ApproxDP(self.epsilon, delta)

    def describe(self) -> str:
        """e.g. 'ε = 0.5 (pure DP)', ε rounded up (a privacy loss never reads smaller)."""
        return f"ε = {upper(self.epsilon, 4)} (pure DP)"


@dataclass(frozen=True)
class ApproxDP:
    """(epsilon, delta)-differential privacy.

    epsilon = 0 is allowed here (a zCDP guarantee read at a large delta can give it); pure DP
    needs epsilon > 0.
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "epsilon",
                           check_positive("epsilon", self.epsilon, allow_zero=True))
        object.__setattr__(self, "delta", check_delta("delta", self.delta))

    def to_approx(self, delta: float | None = None) -> ApproxDP:
        if delta is not None and check_delta("delta", delta) < self.delta:
            raise ValueError(
                f"delta must be >= the mechanism's own delta {self.delta:g}, got {delta:g}"
            )
        return self if delta is None else ApproxDP(self.epsilon, delta)

    def describe(self) -> str:
        """e.g. 'ε = 1, δ = 1e-06 (approximate DP)', both rounded up."""
        return f"ε = {upper(self.epsilon, 4)}, δ = {upper(self.delta, 3)} (approximate DP)"


@dataclass(frozen=True)
class ZCDP:
    """rho-zero-concentrated differential privacy (Bun & Steinke 2016)."""

    rho: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho", check_positive("rho", self.rho))

    def to_zcdp(self) -> ZCDP:
        return self

    def to_approx(self, delta: float) -> ApproxDP:
        """The (epsilon, delta) pair this rho implies, by the optimal conversion of CKS 2020."""
        delta = check_delta("delta", delta, allow_zero=False)
        return ApproxDP(zcdp_epsilon(self.rho, delta), delta)

    def describe(self) -> str:
        """e.g. 'ρ = 0.125 (zCDP)', ρ rounded up."""
        return f"ρ = {upper(self.rho, 4)} (zCDP)"


Measure = PureDP | ApproxDP | ZCDP
M = TypeVar("M", PureDP, ApproxDP, ZCDP)


def _cks_epsilon(alpha: float, rho: float, log_inv_delta: float) -> float:
    # Canonne, Kamath & Steinke 2020, Corollary 13, solved for epsilon at a fixed Renyi order.
    return alpha * rho + (log_inv_delta + (alpha - 1) * math.log1p(-1 / alpha)
                          - math.log(alpha)) / (alpha - 1)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Smallest epsilon such that rho-zCDP implies (epsilon, delta)-DP.

    Minimises, over Renyi orders alpha > 1, the bound of Canonne, Kamath & Steinke (2020),
    Corollary 13 — the conversion OpenDP's ``make_zCDP_to_approxDP`` implements:

    .. math:: \\varepsilon = \\inf_{\\alpha>1} \\alpha\\rho + \\frac{\\log(1/\\delta)
              + (\\alpha-1)\\log(1-1/\\alpha) - \\log\\alpha}{\\alpha-1}

    References
    ----------
    C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential Privacy."
    NeurIPS 2020. arXiv:2004.00010.
    """
    rho = check_positive("rho", rho)
    delta = check_delta("delta", delta, allow_zero=False)
    log_inv_delta = -math.log(delta)
    # Search over t = log(alpha - 1): the objective is smooth and unimodal in t.
    grid = np.linspace(-20.0, 25.0, 451)
    values = [_cks_epsilon(1 + math.exp(t), rho, log_inv_delta) for t in grid]
    i = int(np.argmin(values))
    lo, hi = grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)]
    from scipy.optimize import minimize_scalar  # slow to import: on first use
    result = minimize_scalar(
        lambda t: _cks_epsilon(1 + math.exp(t), rho, log_inv_delta),
        bounds=(lo, hi), method="bounded", options={"xatol": 1e-12},
    )
    best = min(float(result.fun), float(values[i]))
    if not best < math.inf:
        raise ValueError(f"rho = {rho:g} is too large: its epsilon at delta = {delta:g} "
                         "overflows float64")
    return max(best, 0.0)


def compose(*measures: M) -> M:
    """Sequential (basic) composition of measures of one kind.

    Pure DP adds epsilons; approximate DP adds epsilons and deltas; zCDP adds rhos (Bun &
    Steinke 2016, Lemma 2.3). Convert first to compose measures of different kinds.
    """
    if not measures:
        raise ValueError("measures must contain at least one measure")
    kind = type(measures[0])
    if kind not in (PureDP, ApproxDP, ZCDP):
        raise TypeError(f"measures must be PureDP, ApproxDP or ZCDP, got {kind.__name__}")
    if any(type(m) is not kind for m in measures):
        raise TypeError("measures must all be of one kind; convert them first")
    if kind is PureDP:
        return PureDP(_total("epsilon", [m.epsilon for m in measures]))
    if kind is ZCDP:
        return ZCDP(_total("rho", [m.rho for m in measures]))
    delta = math.fsum(m.delta for m in measures)
    if not delta < 1:
        raise ValueError(f"composed delta must be < 1, got {delta:g}")
    return ApproxDP(_total("epsilon", [m.epsilon for m in measures]), delta)


def _total(name: str, values: list[float]) -> float:
    """Exactly rounded sum; a total beyond float64 is refused, naming the quantity."""
    try:
        return math.fsum(values)
    except OverflowError:
        raise ValueError(f"the composed {name} overflows float64 (largest part "
                         f"{max(values):g})") from None


def advanced_composition(measure: PureDP | ApproxDP, k: int, delta_prime: float) -> ApproxDP:
    """k-fold adaptive composition of one (epsilon, delta) mechanism (Dwork, Rothblum & Vadhan).

    .. math:: \\varepsilon_k = \\varepsilon\\sqrt{2k\\ln(1/\\delta')}
              + k\\varepsilon(e^\\varepsilon-1), \\qquad \\delta_k = k\\delta + \\delta'

    References
    ----------
    C. Dwork, G. N. Rothblum, S. Vadhan. "Boosting and Differential Privacy." FOCS 2010;
    Dwork & Roth, *The Algorithmic Foundations of Differential Privacy*, Theorem 3.20.
    """
    if not isinstance(measure, (PureDP, ApproxDP)):
        raise TypeError(f"measure must be PureDP or ApproxDP, got {type(measure).__name__}")
    k = check_int("k", k, minimum=1)
    delta_prime = check_delta("delta_prime", delta_prime, allow_zero=False)
    eps = measure.epsilon
    delta = getattr(measure, "delta", 0.0)
    try:
        folds = float(k)
    except OverflowError:  # k beyond float64: no finite composed budget
        raise ValueError(f"k is too large ({k.bit_length()} bits)") from None
    total_delta = folds * delta + delta_prime
    if not total_delta < 1:
        raise ValueError(f"composed delta k·delta + delta_prime must be < 1, got {total_delta:g}")
    # math.expm1 raises OverflowError beyond epsilon ≈ 709.78; the product can reach inf too.
    growth = math.expm1(eps) if eps < 709 else math.inf
    total_eps = eps * math.sqrt(2 * folds * -math.log(delta_prime)) + folds * eps * growth
    if not total_eps < math.inf:
        raise ValueError(f"the composed epsilon of k = {k:g} mechanisms of epsilon = {eps:g} "
                         "overflows float64")
    # Rounded up, never down: a few float operations each err by an ulp or so, and a
    # subnormal result would otherwise round to 0, claiming less privacy loss than there is.
    total_eps = math.nextafter(total_eps * (1 + 2.0**-48), math.inf)
    return ApproxDP(total_eps, total_delta)


def split_budget(total: float, share: float) -> tuple[float, float]:
    """Split a budget (an epsilon, delta or rho) into (share·total, the rest).

    The rest is lowered by an ulp when rounding left the two parts adding up to more than
    ``total`` in exact arithmetic, so by sequential composition the two releases together
    never spend more than ``total``.
    """
    total = check_real("total", total)
    if not 0 < total < math.inf:
        raise ValueError(f"total must be positive and finite, got {total}")
    share = check_real("share", share)
    if not 0 < share < 1:
        raise ValueError(f"share must lie strictly between 0 and 1, got {share}")
    first = total * share
    rest = total - first
    while rest > 0 and Fraction(first) + Fraction(rest) > Fraction(total):
        rest = math.nextafter(rest, 0.0)
    return first, rest
