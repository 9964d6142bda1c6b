"""What a release spends in all: its parts' losses composed under the plan's accounting.

:func:`privacy_spent` composes guarantees (an ε, an (ε, δ) pair, or a ρ, plus a threshold's δ)
with ``dpcore.accounting`` (basic, advanced, zCDP and privacy-loss distributions).
:func:`certified_spent` is what a release records and the Release plan page promises: the
tighter of OpenDP's certificates composed that way and the exact noise laws at OpenDP's scales.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpcore.accounting import ACCOUNTANT_LABELS, Loss, account, compose_pld
from dpcore.safe_rounding import upper
from plan.model import Accounting
from release.errors import ReleaseRefused

__all__ = ["Spent", "privacy_spent", "certified_spent", "accounting_losses", "total_up"]


@dataclass(frozen=True)
class Spent:
    """The privacy a release spends: (ε, δ) under ``method`` (the plan's accounting, which is
    also ``requested``), the plan's total ρ when it is accounted in zCDP, and a note saying
    how the total was read when the plan leaves it open (basic composition with no δ)."""

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


def _round_up(exact: Fraction) -> float:
    total = float(exact)
    while Fraction(total) < exact:
        total = math.nextafter(total, math.inf)
    return total


def total_up(values: Sequence[float]) -> float:
    """The exact sum of floats, rounded up to a float (never below the exact total)."""
    return _round_up(sum((Fraction(v) for v in values), Fraction(0)))


def accounting_losses(losses: Sequence[Loss]) -> tuple[object, ...]:
    """The parts as ``dpcore.accounting`` composes them (each :meth:`Loss.measures`)."""
    return tuple(measure for loss in losses for measure in loss.measures())


def _total_rho(losses: Sequence[Loss]) -> float:
    """The ρs added up, an ε-DP part counting ε²/2 (its δ kept apart); exact, rounded up."""
    exact = sum((Fraction(loss.rho) if loss.rho is not None else Fraction(loss.epsilon) ** 2 / 2
                 for loss in losses), Fraction(0))
    return _round_up(exact)


def _open_delta(losses: Sequence[Loss], labels: Sequence[str]) -> float:
    """The δ a basic-composition plan with no total δ is read at: its parts' own δs and the
    δs its ρ-parts are read at, added up (rounded up)."""
    deltas = []
    for loss, label in zip(losses, labels, strict=True):
        if loss.rho is not None:
            if loss.read_at is None:
                raise ReleaseRefused(
                    f"{label}: a zCDP guarantee under basic composition is read as (ε, δ) at "
                    "a δ the plan must give (the mechanism's delta, or accounting.delta): set "
                    "it, or account the plan in zCDP")
            deltas.append(loss.read_at)
        deltas.append(loss.delta)
    return total_up(deltas)


def privacy_spent(losses: Sequence[Loss], accounting: Accounting, *,
                  labels: Sequence[str] | None = None) -> Spent:
    """The (ε, δ) the parts spend together under the plan's ``accounting``.

    The total is ``dpcore.accounting.account`` of the parts (:func:`accounting_losses`) at
    the plan's δ, under the plan's accountant: basic (ε add up; δ shared among the parts
    whose ε depends on it), advanced (Kairouz, Oh & Viswanath), zCDP (ρ add up, then the
    optimal conversion) or PLD (``dp_accounting``, never above basic). Every figure is
    rounded up there. A plan whose every part is pure ε-DP is recorded as pure DP (ε the
    exact sum rounded up, δ = 0) whatever the accountant; the note gives the accountant's
    (ε, δ) figure. A basic-composition plan with no total δ (``accounting.delta`` = 0) is
    read at the sum of the δs its queries give, and says so in ``note``; with no δ anywhere,
    its ε is the exact sum of the parts' ε, rounded up.

    Raises
    ------
    ReleaseRefused
        The accountant cannot meet the δ (the parts' own δs use it up), or a ρ under basic
        composition has no δ to be read at.
    """
    if not losses:
        raise ValueError("losses must hold at least one loss")
    labels = list(labels) if labels is not None else [f"part {i}" for i in range(len(losses))]
    method = accounting.method
    pure = all(loss.rho is None and loss.delta == 0 for loss in losses)
    if pure and method == "basic":
        return Spent(total_up([loss.epsilon for loss in losses]), 0.0, method, method)
    label = ACCOUNTANT_LABELS[method]
    rho = _total_rho(losses) if method == "zcdp" else None
    delta, note = accounting.delta, ""
    if delta == 0:  # only basic composition allows it (plan.model)
        delta = _open_delta(losses, labels)
        if delta == 0:
            return Spent(total_up([loss.epsilon for loss in losses]), 0.0, method, method)
        note = (f"the plan gives no total δ: {label} is read at δ = {upper(delta, 3)}, the "
                "sum of the δs its queries give")
    if not delta < 1:
        raise ReleaseRefused(f"the parts' δs add up to {delta:g}, which is no guarantee: "
                             "lower the δs in the plan")
    try:
        total = account(accounting_losses(losses), delta=delta, accountant=method)
    except ValueError as exc:
        raise ReleaseRefused(f"the plan cannot be accounted by {label}: {exc}") from None
    if not math.isfinite(total.epsilon):
        raise ReleaseRefused(f"under {label} the plan cannot meet δ = {upper(delta, 3)}: "
                             f"{total.note}")
    if pure:
        # Every part is ε-DP: the release is pure DP, recorded as such (δ = 0, ε the exact
        # sum), not as the weaker (ε, δ) guarantee the accountant reads at the plan's δ.
        return Spent(total_up([loss.epsilon for loss in losses]), 0.0, "basic", method,
                     note=f"every part is pure ε-DP: recorded as pure DP (ε adds up, δ = 0); "
                          f"{label} would read ε = {upper(total.epsilon, 6)} at δ = "
                          f"{upper(delta, 3)}")
    return Spent(total.epsilon, delta, method, method, rho=rho, note=note)


def certified_spent(certified: Sequence[Any], accounting: Accounting, *,
                    labels: Sequence[str] | None = None) -> Spent:
    """What a release of these parts records: the smallest of two sound (ε, δ) figures at the
    same δ, under the plan's ``accounting``.

    ``certified`` are the parts as OpenDP certified them (``release.measurements.Certified``:
    each with its ``certified`` loss and its ``noise_law``). The first figure is
    :func:`privacy_spent` of the certificates (a Gaussian's ρ, a Laplace's ε, …). The second
    composes the very noises the release draws: each part's ``noise_law`` (its Laplace,
    Gaussian, discrete Laplace or discrete Gaussian at OpenDP's scale, a threshold's noise
    and δ), the other parts by their certificate; under PLD accounting its privacy-loss
    distribution is dp_accounting's pessimistic one with every loss rounded up to the grid
    (``compose_pld(connect_dots=False)``), under basic and advanced the Gaussian's exact
    profile. Both hold at the same δ — the plan's (or, under basic composition with no total
    δ, the sum of the δs its queries give) — so the smaller is a guarantee: three Gaussian
    counts at OpenDP's scale 4.2247 spend ε = 1.5996 at δ = 1e-5, where ρ's conversion says
    1.7413.

    A plan of pure ε-DP parts keeps its exact sum (δ = 0) and a zCDP plan its ρ and their
    conversion: the certificate is their exact figure.

    Raises
    ------
    ReleaseRefused
        As :func:`privacy_spent` (the certificates' composition refuses, whatever the noise
        laws give: a refusal reads the plan only).
    """
    spent = privacy_spent([c.certified for c in certified], accounting, labels=labels)
    if spent.delta == 0 or spent.method == "zcdp" or not any(c.noise_law for c in certified):
        return spent
    laws = tuple(m for c in certified
                 for m in (c.noise_law or accounting_losses([c.certified])))
    try:
        if spent.method == "pld":
            epsilon = compose_pld(laws, delta=spent.delta, connect_dots=False)
        else:
            epsilon = account(laws, delta=spent.delta, accountant=spent.method).epsilon
    except ValueError:   # a law beyond float64 accounting: the certificate stands
        return spent
    if not epsilon < spent.epsilon:
        return spent
    label = ACCOUNTANT_LABELS[spent.method]
    said = (f"the noises OpenDP draws, at its scales, give ε = {upper(epsilon, 6)} at δ = "
            f"{upper(spent.delta, 3)} under {label}; OpenDP's certificates composed give "
            f"{upper(spent.epsilon, 6)}: the smaller is recorded")
    return replace(spent, epsilon=epsilon, note=f"{spent.note}; {said}" if spent.note else said)
