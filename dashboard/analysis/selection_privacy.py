"""A selection's privacy level turned into its mechanism: the measure, the noise scale, the
plan's part (or a teaching one), and the privacy map in words.
"""

from __future__ import annotations

import math

from dashboard.analysis import plan_entries
from dashboard.analysis.selection_choices import MEASURES, NOISE_NAMES, NOISES, SOURCES, fmt_value
from dashboard.choices import fmt_number
from dashboard.datasets import LoadedDataset
from dashboard.number_text import up
from dpcore.contributions import PrivacyUnit
from dpcore.measures import ZCDP, PureDP
from dpcore.selection import noisy_max_privacy, noisy_max_scale
from plan import model
from plan.build import build
from plan.parts import NoisyMax, noisy_max


def privacy_of(measure: str, level: float) -> PureDP | ZCDP:
    """The privacy target the slider stands for: ε-DP or ρ-zCDP."""
    if measure == "pure":
        return PureDP(level)
    if measure == "zcdp":
        return ZCDP(level)
    raise ValueError(f"measure must be one of {', '.join(MEASURES)}; got {measure!r}")


def noise_scale(measure: str, level: float, *, noise: str, sensitivity: float, monotonic: bool,
                k: int = 1) -> float:
    """The noise scale at this privacy level (the inverse of ``noisy_max_privacy``): what the
    P(correct) curves sweep; the chosen setting's scale is its mechanism's
    (:func:`data_mechanism`, :func:`teaching_mechanism`)."""
    return noisy_max_scale(privacy_of(measure, level), sensitivity=sensitivity, noise=noise,
                           monotonic=monotonic, k=k)


#: What the scores typed in and the revenues from bids are: teaching tools, not releases.
TEACHING_NOTE = ("Not releasable: a release of the plan picks among a column's counts in the "
                 f"data (\"{SOURCES['data']}\"), whose sensitivity follows from the privacy "
                 "unit. Scores typed in and revenues from bids are here to show how the noise "
                 "behaves, with a sensitivity you declare.")


def _selection_noise(noise: str, measure: str, level: float) -> model.SelectionNoise:
    privacy_of(measure, level)   # the measure and the level checked, with the page's message
    return (model.SelectionNoise(noise, "pure", epsilon=float(level)) if measure == "pure"
            else model.SelectionNoise(noise, "zcdp", rho=float(level)))


def teaching_mechanism(*, noise: str, measure: str, level: float, sensitivity: float,
                       monotonic: bool, k: int, negate: bool) -> NoisyMax:
    """Report noisy max (or top-k) over scores typed in or revenues from bids, at the declared
    ``sensitivity``: calibrated by the plan's own map (``plan.parts.noisy_max``), though no
    release draws it (:data:`TEACHING_NOTE`)."""
    spec = _selection_noise(noise, measure, level)
    return noisy_max(spec, sensitivity=float(sensitivity), monotonic=monotonic, k=int(k),
                     negate=negate, epsilon=spec.epsilon, rho=spec.rho, path="")


def data_mechanism(loaded: LoadedDataset, unit: PrivacyUnit, *, column: str, labels: tuple,
                   declared: bool, noise: str, measure: str, level: float, k: int,
                   negate: bool = False, monotonic: bool = True) -> NoisyMax:
    """The mechanism of the page's pick among ``column``'s counts: the part ``plan.build``
    gives the release of the plan's query (the one "Add to plan" adds:
    ``plan_entries.selection_query``) under the privacy unit ``unit`` — its noise, scale,
    sensitivity (max rows per person: the most one person moves a count) and k.

    A release picks the largest counts, calibrated as monotonic scores; with "Pick the
    smallest" or "not monotonic" on (no release draws these) the plan's part is recalibrated
    by the same map at its sensitivity. Raises ValueError (the plan's reason) when the query
    cannot be built ("k must be a whole number from 1 to the number of candidates …").
    """
    try:
        query = plan_entries.selection_query(
            loaded, unit, column=column, labels=labels, declared=declared, noise=noise,
            measure=measure, level=level, k=k, negate=False, monotonic=True, probability=None)
        part = build(query, plan_entries.plan_unit(unit)).parts[0]
    except model.PlanError as exc:   # its field's last name, then the reason: "k must be …"
        raise ValueError(f"{exc.field.rsplit('.', 1)[-1]} {exc.reason}".strip()) from None
    if monotonic and not negate:
        return part.mechanism
    return teaching_mechanism(noise=noise, measure=measure, level=level,
                              sensitivity=part.sensitivity, monotonic=monotonic, k=k,
                              negate=negate)


def privacy_map_text(*, noise: str, measure: str, level: float, sensitivity: float,
                     monotonic: bool, k: int, scale: float) -> str:
    """Markdown: which privacy map turns the level into the scale, with the numbers."""
    c = 1 if monotonic else 2
    cd = "Δ" if monotonic else "2Δ"
    kind = NOISES[noise]
    scores = "monotonic scores" if monotonic else "scores that may move in opposite directions"
    rounds = f"k·{cd}" if k > 1 else cd
    parts = [f"**{kind}, {scores}, {MEASURES[measure].split(' (')[0]}**: "]
    nums = f"Δ = {fmt_number(sensitivity)}" + (f", k = {k}" if k > 1 else "")
    if measure == "pure":
        parts.append(f"ε = {rounds}/b, so b = {rounds}/ε = {fmt_value(k * c * sensitivity)}/"
                     f"{fmt_number(level)} = **{fmt_value(scale)}** ({nums}).")
    elif noise == "gumbel":
        parts.append(f"the exponential mechanism with ε₀ = {cd}/b per pick is ε₀-bounded-range, "
                     f"hence ε₀²/8-zCDP; ρ = k·({cd}/b)²/8, so b = {cd}·√(k/(8ρ)) = "
                     f"**{fmt_value(scale)}** ({nums}).")
    elif k == 1:
        parts.append(f"no zCDP bound better than the pure-DP one is known for "
                     f"{NOISE_NAMES[noise]}: the pick is ε-DP with ε = {cd}/b, hence "
                     f"ε²/2-zCDP (ρ = ε²/2); "
                     f"so ε = √(2ρ) = {up(math.sqrt(2 * level))} and b = "
                     f"{cd}/ε = **{fmt_value(scale)}** ({nums}). Gumbel noise gets ε²/8 "
                     "instead: at the same ρ it needs half this scale, which makes it the "
                     "natural zCDP choice.")
    else:
        # OpenDP certifies the k picks as one kε₀-DP measurement; a release charges that
        # figure, so the page does too (composing ε₀²/2 per pick would claim less).
        parts.append(f"no zCDP bound better than the pure-DP one is known for "
                     f"{NOISE_NAMES[noise]}: the {k} picks are ε-DP with ε = {rounds}/b (what "
                     f"OpenDP certifies), hence ε²/2-zCDP (ρ = ε²/2); "
                     f"so ε = √(2ρ) = {up(math.sqrt(2 * level))} and b = "
                     f"{rounds}/ε = **{fmt_value(scale)}** ({nums}). Gumbel noise gets "
                     "k·ε₀²/8 instead (ε₀ per pick): at the same ρ it needs much less noise, "
                     "which makes it the natural zCDP choice.")
    if monotonic:
        parts.append(" Monotonic: between neighbouring datasets every score moves the same "
                     "way, so the gap between two scores changes by at most Δ (2Δ otherwise).")
    check = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise, monotonic=monotonic,
                              k=k, measure=measure)
    if k > 1:
        parts.append(_share_text(check, noisy_max_privacy(
            scale, sensitivity=sensitivity, noise=noise, monotonic=monotonic, k=1,
            measure=measure), k))
    parts.append(f" Privacy map check: noise of scale {fmt_value(scale)} costs "
                 f"{check.describe()}.")
    return "".join(parts)


def _share_text(charged: PureDP | ZCDP, one: PureDP | ZCDP, k: int) -> str:
    """How the ``k`` picks share what they are ``charged`` (the map a release charges, at the
    page's scale), from ``one``: what one pick alone at that scale costs by the same map.
    Composed pick by pick, each pick gets 1/k (ε under pure DP; ρ for Gumbel noise under
    zCDP); exponential or Laplace noise under zCDP is charged as one kε₀-DP measurement,
    ρ = (kε₀)²/2, so one pick's ρ₀ = ε₀²/2 is 1/k² of it (the share is read off the two
    figures, never assumed)."""
    def loss(p: PureDP | ZCDP) -> float:
        return p.epsilon if isinstance(p, PureDP) else p.rho

    ratio = loss(charged) / loss(one)
    share = (str(round(ratio)) if abs(ratio - round(ratio)) <= 1e-9 * ratio
             else fmt_number(ratio))
    if round(ratio) == k:
        return (f" The {k} picks share the budget (sequential composition): each pick costs "
                f"{one.describe()}, 1/{share} of the {charged.describe()} charged.")
    return (f" The {k} picks are charged as one {k}ε₀-DP measurement (what OpenDP "
            f"certifies), not pick by pick: each pick's ε₀ = √(2ρ)/{k} = "
            f"{up(math.sqrt(2 * loss(one)))} alone would cost {one.describe()}, 1/{share} "
            f"(1/k², not 1/k) of the {charged.describe()} charged.")
