"""What an attacker can learn at the ε chosen: trade-off curves, the posterior table and
its sentences, for pure DP, (ε, δ)-DP with the Gaussian mechanism, and ρ-zCDP.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.analysis import selection_choices as sel
from dashboard.choices import RHO_GRID
from dpcore import risk, safe_rounding
from dpcore.measures import ZCDP, ApproxDP, PureDP
from dpcore.mechanisms.gaussian import Gaussian

#: The attacker's starting beliefs in the posterior table.
PRIORS = (0.01, 0.1, 0.5)


#: ρ values the risk panel offers: both pages' slider grids, so a carried ρ is always on it.
RISK_RHO_GRID: tuple[float, ...] = tuple(sorted(set(RHO_GRID) | set(sel.RHO_GRID)))


def default_rho(epsilon: float, carried_rho: float | None) -> float:
    """The ρ the risk panel starts at: the query page's ρ under zCDP, else ρ = ε²/2, what
    ε-DP implies (the page forgets a ρ the user set when ε or the query's ρ changes)."""
    return carried_rho if carried_rho is not None else epsilon * epsilon / 2


@dataclass(frozen=True)
class RiskSummary:
    """Trade-off curves, posterior table and sentences for one privacy level.

    ``posteriors`` has one row per statement (a guarantee, or the Gaussian mechanism itself):
    the highest belief from each prior in :data:`PRIORS`, rounded up, and the probability
    that the belief passes it (rounded up). ``sentences`` start with a bold label saying which
    statement they are about.
    """

    fpr: NDArray[np.float64]
    curves: list[tuple[str, NDArray[np.float64]]]
    posteriors: pd.DataFrame
    sentences: list[str]


#: Column of the posterior table that holds the failure probability.
FAILS_COLUMN = "Passed with probability"


def prior_column(prior: float) -> str:
    """The posterior table's column for one prior: 'From 1%'."""
    return f"From {prior:.0%}"


def chance_text(p: float) -> str:
    """A failure probability rounded up to two significant digits: 2e-06, 1.9e-05."""
    return f"{float(safe_rounding.upper(p, 2)):.2g}" if p > 0 else "0"


def risk_summary(epsilon: float, *, delta: float | None, pure: bool,
                 rho: float | None = None) -> RiskSummary:
    """What an attacker can learn at ``epsilon``: pure DP and, with ``delta``, the Gaussian.

    ``pure`` adds the ε-DP guarantee (Laplace-type mechanisms, selection); ``delta`` adds the
    (ε, δ)-DP guarantee and the Gaussian mechanism calibrated to it, exactly μ-Gaussian-DP
    with μ = sensitivity / σ (the same for every sensitivity): its trade-off curve, and how
    often its privacy loss, N(μ²/2, μ²), lifts the belief past the ε-only bound. ``rho`` adds
    a ρ-zCDP guarantee (its trade-off is the envelope over its privacy profile, its belief
    bound the tail of its privacy loss at ``risk.DEFAULT_FAILURE``).

    Every belief is rounded up and every failure probability is at least the probability
    that the belief passes the belief as shown.
    """
    fpr = np.linspace(0.0, 1.0, 201)
    priors = np.array(PRIORS)
    curves, sentences, rows = [], [], []
    eps = safe_rounding.upper(epsilon, 4)

    def row(label: str, posterior: NDArray, fails: str) -> None:
        rows.append({"Release": label, **{prior_column(p): safe_rounding.percent_upper(float(b))
                                          for p, b in zip(PRIORS, posterior, strict=True)},
                     FAILS_COLUMN: fails})

    if pure:
        measure = PureDP(epsilon)
        curves.append((f"Any ε-DP release, ε = {eps}", np.asarray(risk.tradeoff(measure, fpr))))
        row(f"Any ε-DP release (ε = {eps})", risk.max_posterior(measure, priors).posterior,
            "never")
        sentences.append("**Any ε-DP release** (Laplace, geometric, selection): "
                         + risk.describe_risk(measure, 0.5))
    if delta is not None:
        measure = ApproxDP(epsilon, delta)
        curves.append((f"Any (ε, δ)-DP release, ε = {eps}, δ = {delta:g}",
                       np.asarray(risk.tradeoff(measure, fpr))))
        bound = risk.max_posterior(measure, priors)
        row(f"Any (ε, δ)-DP release (δ = {delta:g})", bound.posterior,
            f"at most {chance_text(bound.failure_probability)}")
        sentences.append(f"**Any (ε, δ)-DP release** (δ = {delta:g}): "
                         + risk.describe_risk(measure, 0.5))
        mu = 1.0 / Gaussian(sensitivity=1.0, epsilon=epsilon, delta=delta).scale
        ceiling = risk.max_posterior(PureDP(epsilon), priors).posterior
        # The belief passes the ε-only bound exactly when the privacy loss passes ε, from any
        # prior: one probability for the row (and at least that of passing the rounded-up
        # belief shown).
        passes = float(np.max(risk.exceed_probability(None, priors, ceiling, gaussian_mu=mu)))
        row("The Gaussian mechanism itself (passing the ε-only bound)", ceiling,
            f"{chance_text(passes)} (exact)")
        sentences.append(
            f"**The Gaussian mechanism itself** (μ = {safe_rounding.upper(mu)}): "
            + risk.describe_risk(None, 0.5, gaussian_mu=mu, delta=delta)[:-1]
            + f". It passes {safe_rounding.percent_upper(float(ceiling[PRIORS.index(0.5)]))}, the "
            f"bound ε = {eps} alone would set, with probability {chance_text(passes)} "
            f"(about {max(1, round(passes / delta)):,} × δ).")
    if rho is not None:
        zcdp = ZCDP(rho)
        curves.append((f"Any ρ-zCDP release, ρ = {safe_rounding.upper(rho, 4)}",
                       np.asarray(risk.tradeoff(zcdp, fpr))))
        bound = risk.max_posterior(zcdp, priors)
        row(f"Any ρ-zCDP release (ρ = {safe_rounding.upper(rho, 4)})", bound.posterior,
            f"at most {chance_text(bound.failure_probability)}")
        sentences.append(f"**Any ρ-zCDP release** (ρ = {safe_rounding.upper(rho, 4)}): "
                         + risk.describe_risk(zcdp, 0.5))
    if delta is not None:
        shown_mu = safe_rounding.upper(mu)
        curves.append((f"The Gaussian mechanism itself (exactly μ-GDP, μ = {shown_mu})",
                       np.asarray(risk.gaussian_tradeoff(mu, fpr))))
    return RiskSummary(fpr, curves, pd.DataFrame(rows), sentences)


def zcdp_note(rho: float) -> str:
    return (f"That page uses zCDP, ρ = {safe_rounding.upper(rho, 4)}: the curves below are drawn "
            "against ε; the risk panel at the bottom shows what that ρ lets an attacker learn.")


GDP_NOTE = ("μ-GDP (Gaussian differential privacy, Dong, Roth & Su 2022): telling 'Alice in' "
            "from 'Alice out' is exactly as hard as telling whether one number was drawn from "
            "a normal distribution with mean 0 or mean μ (standard deviation 1). Gaussian "
            "noise σ gives μ = sensitivity / σ: the smaller μ, the closer the line to the "
            "blind guess.")


@st.cache_data(show_spinner=False, max_entries=64)
def cached_risk(epsilon: float, delta: float | None, pure: bool,
                rho: float | None = None) -> RiskSummary:
    return risk_summary(epsilon, delta=delta, pure=pure, rho=rho)
