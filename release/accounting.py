"""What a release spends in all: its parts' losses composed under the plan's accounting.

One function, :func:`privacy_spent`, so that the tighter accountants of ``dpcore.accounting``
(issue 11: advanced, PLD) can replace the composition here in one place. Until they are on
main, advanced and PLD plans are accounted by basic composition — never below what they
would give, since every valid accountant is at most basic composition — and say so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from dpcore.measures import zcdp_epsilon
from plan.build import Loss
from plan.model import Accounting
from release.errors import ReleaseRefused

__all__ = ["Spent", "privacy_spent", "total_up"]

# zcdp_epsilon minimises a smooth bound numerically; its value is raised by this factor (and
# an ulp) so that the few roundings inside it never leave the figure below the bound.
_ROUND_UP = 1 + 2.0**-40


@dataclass(frozen=True)
class Spent:
    """The privacy a release spends: (ε, δ) under ``method`` (the accounting actually used;
    ``requested`` the plan's), ρ when the plan is accounted in zCDP, and a note when the two
    methods differ."""

    epsilon: float
    delta: float
    method: str
    requested: str
    rho: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"epsilon": self.epsilon, "delta": self.delta}
        if self.rho is not None:
            out["rho"] = self.rho
        return out


def total_up(values: Sequence[float]) -> float:
    """The exact sum of floats, rounded up to a float (never below the exact total)."""
    exact = sum((Fraction(v) for v in values), Fraction(0))
    total = float(exact)
    while Fraction(total) < exact:
        total = math.nextafter(total, math.inf)
    return total


def _epsilon_of_rho(rho: float, delta: float) -> float:
    return math.nextafter(zcdp_epsilon(rho, delta) * _ROUND_UP, math.inf)


def _basic(losses: Sequence[Loss], labels: Sequence[str]) -> tuple[float, float]:
    epsilons, deltas = [], []
    for loss, label in zip(losses, labels, strict=True):
        if loss.rho is not None:
            if loss.read_at is None:
                raise ReleaseRefused(
                    f"{label}: a zCDP guarantee under basic composition is read as (ε, δ) at "
                    "a δ the plan must give (the mechanism's delta): set it, or account the "
                    "plan in zCDP")
            epsilons.append(_epsilon_of_rho(loss.rho, loss.read_at))
            deltas.append(loss.read_at)
        else:
            epsilons.append(loss.epsilon)
        deltas.append(loss.delta)
    return total_up(epsilons), total_up(deltas)


def privacy_spent(losses: Sequence[Loss], accounting: Accounting, *,
                  labels: Sequence[str] | None = None) -> Spent:
    """The (ε, δ) the parts spend together under ``accounting``.

    - basic: ε and δ add up; a ρ is read as (ε(ρ, δᵢ), δᵢ) at the δᵢ its query gives
      (Canonne, Kamath & Steinke 2020).
    - zcdp: an ε-DP part is (ε²/2)-zCDP, an (ε, δ)-DP part δ-approximately so (Bun & Steinke
      2016); the ρs add up and the total is read at the plan's δ, plus the parts' own δs.
    - advanced, pld: basic composition until ``dpcore.accounting`` is on main (a valid
      upper bound of both), said in ``note``.

    Sums are exact and rounded up.
    """
    if not losses:
        raise ValueError("losses must hold at least one loss")
    labels = list(labels) if labels is not None else [f"part {i}" for i in range(len(losses))]
    method = accounting.method
    if method == "zcdp":
        rhos = [loss.rho if loss.rho is not None else loss.epsilon * loss.epsilon / 2
                for loss in losses]
        rho = total_up(rhos)
        extra = total_up([loss.delta for loss in losses])
        epsilon = _epsilon_of_rho(rho, accounting.delta)
        delta = total_up([accounting.delta, extra])
        return Spent(epsilon, delta, "zcdp", method, rho=rho)
    epsilon, delta = _basic(losses, labels)
    note = ""
    if method in ("advanced", "pld"):
        note = (f"accounted by basic composition: the {method} accountant (dpcore.accounting) "
                "is not available yet, and basic composition is never below it")
    if not delta < 1:
        raise ReleaseRefused(f"the parts' δs add up to {delta:g}, which is no guarantee: "
                             "lower the δs in the plan")
    return Spent(epsilon, delta, "basic", method, note=note)
