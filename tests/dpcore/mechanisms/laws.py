"""Independent checks of a mechanism's law, written once for every kind of the catalogue.

Everything here reads only a mechanism's error CDF, density or PMF (never its own moments or
accuracy), so the generic tests can hold each closed form against numbers derived from it.
"""

from __future__ import annotations

import math

import numpy as np

from dpcore.mechanisms import CATALOGUE, AdditiveMechanism, MechanismSpec, make_mechanism


def cases() -> list[tuple[str, int]]:
    """(kind, index of its sample parameters) for every kind of the catalogue."""
    return [(kind, i) for kind, spec in CATALOGUE.items()
            for i in range(len(spec.sample_parameters))]


def case_id(case: tuple[str, int]) -> str:
    return f"{case[0]}-{case[1]}"


def build(kind: str, index: int) -> AdditiveMechanism:
    return make_mechanism(kind, **CATALOGUE[kind].sample_parameters[index])


def truths(spec: MechanismSpec, params: dict) -> tuple[float, ...]:
    """True values to check a mechanism at: 0 and 7 (whole numbers for integer kinds); with an
    answer range, its ends and an inner point, and a point outside when that is allowed."""
    if not spec.needs_range:
        return (0.0, 7.0)
    lo, hi = float(params["lower"]), float(params["upper"])
    inside = (lo, lo + 0.3 * (hi - lo), hi)
    return inside if spec.true_value_in_range else (*inside, hi + 0.2 * (hi - lo))


def reach(mech: AdditiveMechanism, q: float) -> float:
    """An error beyond which the tails hold less than about 1e-15 of the mass."""
    return float(mech.accuracy(1e-15, q)) + 1.0


def tail(mech: AdditiveMechanism, alpha: float, q: float) -> float:
    """P(|error| > alpha) from the error CDF alone (the left limit taken just below −alpha)."""
    below = float(mech.error_cdf(np.nextafter(-alpha, -np.inf), q))
    return 1.0 - float(mech.error_cdf(alpha, q)) + below


def atoms(mech: AdditiveMechanism, q: float) -> list[tuple[float, float]]:
    """(error, probability) of the point masses of a continuous mechanism's error, found as
    jumps of the CDF at the ends of its answer range (none when it has no range)."""
    if not hasattr(mech, "lower"):
        return []
    found = []
    for end in (mech.lower - q, mech.upper - q):
        jump = float(mech.error_cdf(end, q)) - float(mech.error_cdf(np.nextafter(end, -np.inf), q))
        if jump > 0:
            found.append((end, jump))
    return found


def _panels(mech: AdditiveMechanism, q: float, lo: float, hi: float, count: int = 400
            ) -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Legendre nodes and weights (20 per panel) over [lo, hi], with a panel edge at
    every breakpoint of the error's density: exact to rounding on each smooth piece."""
    breaks = np.asarray(mech.error_breakpoints(q), dtype=np.float64)
    edges = np.unique(np.concatenate([np.linspace(lo, hi, count + 1),
                                      breaks[(breaks > lo) & (breaks < hi)]]))
    t, w = np.polynomial.legendre.leggauss(20)
    half = np.diff(edges)[:, None] / 2
    nodes = (edges[:-1, None] + half * (t + 1)).ravel()
    return nodes, (half * w).ravel()


def moments_from_density(mech: AdditiveMechanism, q: float) -> dict[str, float]:
    """Total mass, mean, variance and mean absolute value of the error, by summing the PMF
    (integer kinds) or integrating the density (Gauss–Legendre panels edged at its
    breakpoints) plus the point masses the CDF jumps by."""
    if mech.integer_output:
        top = math.ceil(reach(mech, q)) + 5
        k = np.arange(-top, top + 1, dtype=np.float64)
        p = np.asarray(mech.error_pmf(k), dtype=np.float64)
        mean = float(np.sum(k * p))
        variance = float(np.sum((k - mean) ** 2 * p))
        return {"mass": float(p.sum()), "mean": mean, "variance": variance,
                "mae": float(np.sum(np.abs(k) * p))}
    far = reach(mech, q)
    lo, hi = (mech.lower - q, mech.upper - q) if hasattr(mech, "lower") else (-far, far)
    nodes, weights = _panels(mech, q, max(lo, -far), min(hi, far))
    density = weights * np.asarray(mech.error_pdf(nodes, q), dtype=np.float64)
    point = atoms(mech, q)

    def integral(values: np.ndarray, g) -> float:
        return float(np.dot(density, values)) + sum(g(e) * m for e, m in point)

    mass = integral(np.ones_like(nodes), lambda e: 1.0)
    mean = integral(nodes, lambda e: e)
    return {"mass": mass, "mean": mean,
            "variance": integral((nodes - mean) ** 2, lambda e: (e - mean) ** 2),
            "mae": integral(np.abs(nodes), abs)}


def moments_from_cdf(mech: AdditiveMechanism, q: float) -> dict[str, float]:
    """Mean, variance and mean absolute value of a continuous (or mixed) error from its CDF
    alone: E X = ∫₀^∞ (1 − F(t) − F(−t)) dt, E|X| = ∫₀^∞ (1 − F(t) + F(−t)) dt,
    E X² = ∫₀^∞ 2t (1 − F(t) + F(−t)) dt (panels edged at the breakpoints, mirrored)."""
    far = reach(mech, q)
    breaks = np.abs(np.asarray(mech.error_breakpoints(q), dtype=np.float64))

    class Mirror:  # the breakpoints of t ↦ F(t) and F(−t) for t >= 0
        def error_breakpoints(self, _q):
            return breaks

    nodes, weights = _panels(Mirror(), q, 0.0, far)
    upper = 1.0 - np.asarray(mech.error_cdf(nodes, q), dtype=np.float64)
    lower = np.asarray(mech.error_cdf(-nodes, q), dtype=np.float64)
    mean = float(np.dot(weights, upper - lower))
    second = float(np.dot(weights, 2 * nodes * (upper + lower)))
    return {"mean": mean, "variance": second - mean**2,
            "mae": float(np.dot(weights, upper + lower))}


def output_cells(mech: AdditiveMechanism, x: float, x_prime: float, count: int = 4001
                 ) -> np.ndarray:
    """Edges of a partition of the output space, ±inf at the ends: fine enough that the
    probability of each cell shows the privacy loss of the mechanism's law."""
    if hasattr(mech, "lower"):
        inner = np.linspace(mech.lower, mech.upper, count)
    else:
        far = max(reach(mech, x), reach(mech, x_prime))
        inner = np.linspace(min(x, x_prime) - far, max(x, x_prime) + far, count)
        if mech.integer_output:
            inner = np.unique(np.floor(inner)) + 0.5
    return np.concatenate([[-np.inf], inner, [np.inf]])


def cell_probabilities(mech: AdditiveMechanism, q: float, edges: np.ndarray) -> np.ndarray:
    """P(output in (e_i, e_{i+1}]) for true value q, from the error CDF."""
    cdf = np.asarray(mech.error_cdf(edges - q, q), dtype=np.float64)
    return np.diff(cdf)


def privacy_excess(claim_epsilon: float | None, claim_delta: float, rho: float | None,
                   p: np.ndarray, r: np.ndarray) -> float:
    """How far the laws p, r of two neighbours' outputs (on the same cells) exceed a claim:
    positive means the claim is broken even on this coarse view (which by data processing
    can only understate the true loss).

    Pure DP: the largest |log p/r| over cells both sides give at least 1e-10 (where the CDF
    differences keep their precision), minus epsilon. Approximate DP: the hockey-stick
    divergence Σ max(0, p − e^ε r), both ways, minus delta. zCDP: the largest Rényi divergence
    D_a(p‖r)/a over orders a in {1.5, 2, 4, 8}, minus rho.
    """
    if rho is not None:
        worst = -np.inf
        for order in (1.5, 2.0, 4.0, 8.0):
            keep = (p > 0) & (r > 0)
            for a, b in ((p, r), (r, p)):
                log_terms = order * np.log(a[keep]) + (1 - order) * np.log(b[keep])
                divergence = float(np.logaddexp.reduce(log_terms)) / (order - 1)
                worst = max(worst, divergence / order - rho)
        return worst
    if claim_delta > 0:
        worst = max(float(np.sum(np.maximum(0.0, a - math.exp(claim_epsilon) * b)))
                    for a, b in ((p, r), (r, p)))
        return worst - claim_delta
    keep = (p > 1e-10) & (r > 1e-10)
    return float(np.max(np.abs(np.log(p[keep]) - np.log(r[keep])))) - claim_epsilon
