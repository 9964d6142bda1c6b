"""What the Selection page offers and how it names it: the score sources, the noises, the
privacy measures and their grids, and how its numbers are written.
"""

from __future__ import annotations

import math

from dpcore.selection import NOISE_LABELS

#: Where the scores come from, in the user's words.
SOURCES = {
    "data": "Counts of a column in the data",
    "typed": "Scores typed in (or a small CSV)",
    "pricing": "Pricing: pick a price from bids",
}


def monotonic_setting(source: str) -> tuple[str, bool]:
    """The session key and default of the "Scores are monotonic" toggle for a score source.

    Counts and revenues are monotonic by construction (adding a person never lowers any), so
    the toggle starts on. Typed scores may move in opposite directions: it starts off — the
    safe side, twice the noise — and is kept under its own key, so that switching sources
    never carries a "monotonic" answer over to scores nobody has vouched for.
    """
    return ("sel_monotonic_typed", False) if source == "typed" else ("sel_monotonic", True)


#: The noise a selection starts with: exponential noise (permute-and-flip), which OpenDP
#: certifies as ε-DP, so what the page starts with can be released as shown.
DEFAULT_NOISE = "exponential"
#: One name per noise, everywhere: dpcore's labels, as a release describes its part
#: (release.run), as the release plan names it, on every page.
NOISES = dict(NOISE_LABELS)
#: The short names, inside a sentence or a legend.
NOISE_NAMES = {"laplace": "Laplace noise", "exponential": "exponential noise",
               "gumbel": "Gumbel noise"}
#: The three noises in plain words (the Noise picker's help).
NOISE_HELP = (
    "Each adds noise to every score and reports the best noisy one (report noisy max); they "
    "differ in the noise. Report noisy max (Laplace noise): two-sided Laplace noise. "
    "Permute-and-flip (exponential noise): one-sided exponential noise, which makes exactly "
    "**permute-and-flip** (McKenna & Sheldon 2020): visit the candidates in a random order "
    "and accept each with probability exp(ε·(score − best score)/(2Δ)) (Δ instead of 2Δ for "
    "monotonic scores), else go on; it is never less accurate than the exponential "
    "mechanism. Exponential mechanism (Gumbel noise): Gumbel noise, which makes exactly the "
    "exponential mechanism (pick with probability proportional to exp(ε·score/(2Δ)), again "
    "Δ for monotonic scores). A real release (OpenDP 0.16) draws "
    "exponential noise under pure DP or zCDP and Gumbel noise under zCDP (ρ = ε²/8); Laplace "
    "noise has no OpenDP measurement, so it is here to compare, not to release.")
MEASURES = {"pure": "Pure DP (ε)", "zcdp": "zCDP (ρ)"}
LEVEL_SYMBOL = {"pure": "ε", "zcdp": "ρ"}
LEVEL_AXIS = {"pure": "ε (pure DP, log scale)", "zcdp": "ρ (zCDP, log scale)"}
LEVEL_LABEL = {"pure": "ε (epsilon)", "zcdp": "ρ (rho)"}

# Log grids (E12 series) reaching further down than the other pages': counts of thousands of
# people are picked correctly at any ε >= 0.01, and the interesting range is far below.
_E12 = (1.0, 1.2, 1.5, 1.8, 2.2, 2.7, 3.3, 3.9, 4.7, 5.6, 6.8, 8.2)
EPSILON_GRID: tuple[float, ...] = tuple(
    [round(m * 10.0**e, 8) for e in range(-4, 1) for m in _E12] + [10.0])
# ρ = 0.5 is added: it is what ε = 1 pure DP implies (ε²/2), the page's default.
RHO_GRID: tuple[float, ...] = tuple(sorted(
    {round(m * 10.0**e, 12) for e in range(-8, 1) for m in _E12} | {0.5, 10.0}))
DEFAULT_LEVEL = {"pure": 1.0, "zcdp": 0.5}
TRIAL_OPTIONS = (1_000, 10_000, 100_000, 1_000_000)
K_MAX = 10
_RNG_OFFSET = 4  # the selection page's own random streams, apart from the other pages'


def fmt_value(x: float) -> str:
    """48,842 · 269.6 · 2.996 · 0.0001234; '—' when not finite."""
    x = float(x)
    if not math.isfinite(x):
        return "—"
    if abs(x) >= 1e5:
        return f"{x:,.0f}"
    if abs(x) >= 1e3:
        return f"{x:,.1f}"
    return f"{x:.4g}"


#: Below this an expected loss reads "< 0.0001": a figure like 3.75e-28 is exact but reads as a
#: loss to someone who does not parse the exponent (issue 35).
SMALLEST_LOSS_SHOWN = 1e-4


def fmt_loss(x: float) -> str:
    """An expected loss (score, revenue): '0', '< 0.0001', else as :func:`fmt_value`."""
    x = float(x)
    if x == 0.0:
        return "0"
    if 0.0 < x < SMALLEST_LOSS_SHOWN:
        return f"< {SMALLEST_LOSS_SHOWN:g}"
    return fmt_value(x)


def fmt_share(p: float) -> str:
    """A probability as a percentage that rounds a near-certainty to 100% only when it is one
    to six decimals (quadrature leaves ~1e-15 below 1 where the exact value is 1 − 1e-2000)."""
    if p >= 1.0 - 5e-7:
        return "100%"
    if p > 0.999:
        return "more than 99.9%"
    if p <= 5e-7:
        return "0%"
    if p < 0.001:
        return "less than 0.1%"
    return f"{p:.1%}"
