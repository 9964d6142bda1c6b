"""Private selection: how often report noisy max (or top-k) picks the right candidate.

Plain functions (no Streamlit) read scores (a column's counts, typed numbers, revenues from bids)
and summarise exact and simulated selection; ``column_scores``, ``selection_summary`` and
``correctness_curves`` are the cached wrappers the page calls.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import ArrayLike, NDArray

from dashboard.choices import fmt_number
from dashboard.data import truth
from dashboard.datasets import LoadedDataset
from dashboard.exports import SIMULATION, simulation_fields
from dashboard.shown import up
from dashboard.text import plain
from dpcore.checks import check_int, check_positive, trial_chunks
from dpcore.contributions import PrivacyUnit
from dpcore.intervals import DEFAULT_ALPHA
from dpcore.measures import ZCDP, PureDP
from dpcore.rank_intervals import top_k_shortfalls
from dpcore.selection import (
    NOISE_LABELS,
    NOISE_TYPES,
    expected_score_gap,
    noisy_max_privacy,
    noisy_max_scale,
    noisy_top_k,
    prob_best_selected,
    report_noisy_max,
    selection_probabilities,
)
from engine.queries import Contribution
from plan import model
from plan.build import build
from plan.parts import NoisyMax, noisy_max

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
PRICE_STEPS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)
EXAMPLE_BIDS = "1, 1, 1, 3.01"
SIMULATED_BIDS = 100

MIN_CANDIDATES = 2
MAX_CANDIDATES = 200
MAX_PRICES = 2000
MAX_BIDS = 10_000
MAX_SCORE_FILE_BYTES = 100_000
#: At most this many noise draws (trials × candidates × k) per simulation, so a rerun stays
#: around a second; the page says when fewer releases than asked for were simulated.
MAX_DRAWS = 20_000_000
#: Points per decade of the privacy-level axis of the P(correct) curves, and the most points.
CURVE_POINTS_PER_DECADE = 6
CURVE_MAX_POINTS = 72
TOP_K_CURVE_POINTS = 20
TOP_K_MAX_TRIALS = 2_000
TOP_K_MIN_TRIALS = 200
_RNG_OFFSET = 4  # the selection page's own random streams, apart from the other pages'
MAX_RELEASE = 10**9   # the highest release number ("Draw another release" counts up from 1)
_Z95 = 1.959963984540054


# --------------------------------------------------------------------------------------------
# Reading scores


#: Scores are kept within ±MAX_SCORE: beyond, the spread of the scores and the noise scales
#: that the curves sweep overflow float64 (±1e308 did). Scaling every score and the
#: sensitivity by one factor leaves the selection probabilities unchanged.
MAX_SCORE = 1e15
#: A number with a decimal comma as the uploader reads it: 1,5 · -0,25 · 1.234,5 · 1 234,5.
_DECIMAL_COMMA = re.compile(r"[+-]?(?:\d{1,3}(?:[. \u00a0\u202f']\d{3})+|\d+),\d+")
_COMMA_NO_SPACE = re.compile(r",\S")
_COMMA_SPACE = re.compile(r",\s")


def _read_number(token: str, *, decimal_comma: bool) -> float:
    """One typed number; with ``decimal_comma`` a comma is the decimal mark (1,5 = 1.5)."""
    if decimal_comma and _DECIMAL_COMMA.fullmatch(token):
        token = re.sub(r"[. \u00a0\u202f']", "", token).replace(",", ".")
    return float(token)


def parse_numbers(text: str, *, what: str = "scores", minimum: int = MIN_CANDIDATES,
                  maximum: int = MAX_CANDIDATES,
                  largest: float | None = MAX_SCORE) -> NDArray[np.float64]:
    """Typed numbers → a float array; ValueError says what to fix.

    Numbers are separated by commas (0, 2, 4.5), or by semicolons, and then a comma is a
    decimal comma (1,5; 2,5), as the uploader reads a semicolon-separated file. Commas with
    and without a space after them in one text (1,5, 2,5) are refused: they may be decimal
    commas. ``largest`` bounds the size of each number (None: no bound).
    """
    if not isinstance(text, str):
        raise TypeError(f"{what} must be text, got {type(text).__name__}")
    decimal_comma = ";" in text
    if not decimal_comma and _COMMA_SPACE.search(text) and _COMMA_NO_SPACE.search(text):
        raise ValueError(f"some commas in the {what} have a space after them and some do not, "
                         "so they may be decimal commas: separate the numbers with semicolons "
                         "to use decimal commas (1,5; 2,5; 3,5), or write decimals with a "
                         "point (1.5, 2.5, 3.5)")
    tokens = [t.strip() for t in text.split(";" if decimal_comma else ",")]
    tokens = [t for t in tokens if t]
    values = []
    for position, token in enumerate(tokens, 1):
        try:
            value = _read_number(token, decimal_comma=decimal_comma)
        except ValueError:
            example = "0; 2,5; 4; 6" if decimal_comma else "0, 2.5, 4, 6"
            raise ValueError(f"{token[:30]!r} is not a number: type {what} as numbers "
                             f"separated by commas, e.g. {example}") from None
        if not math.isfinite(value):
            raise ValueError(f"{token[:30]!r} is not a finite number: {what} must be "
                             "ordinary numbers")
        if largest is not None and abs(value) > largest:
            raise ValueError(_too_large(what, f"{token[:30]!r} (number {position})", largest))
        values.append(value)
    given = f"{len(values)} {what if len(values) != 1 else what.removesuffix('s')} given"
    if len(values) < minimum:
        raise ValueError(f"{given}: type at least {minimum}, separated by commas")
    if len(values) > maximum:
        raise ValueError(f"{given}, more than the {maximum} this page handles: keep at most "
                         f"{maximum}")
    return np.array(values, dtype=np.float64)


def _too_large(what: str, which: str, largest: float) -> str:
    return (f"the {what.removesuffix('s')} {which} is too large: keep {what} between "
            f"-{largest:g} and {largest:g}. Divide every score and the sensitivity by the same "
            "number (e.g. 1,000): the chances of each pick do not change")


def parse_score_file(data: bytes) -> tuple[tuple[str, ...], NDArray[np.float64]]:
    """A tiny CSV of scores: one number per line, or ``label,score``; an optional header line.
    In a file separated by semicolons or tabs, a comma is a decimal comma (``a;1,5``).

    Returns (labels, scores); labels are ``#1, #2, …`` when the file has none. Raises
    ValueError naming the line that is wrong.
    """
    if len(data) > MAX_SCORE_FILE_BYTES:
        raise ValueError(f"the score file is {len(data):,} bytes; keep it under "
                         f"{MAX_SCORE_FILE_BYTES:,} (one score per line)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("the score file is not UTF-8 text: save it as a UTF-8 CSV") from None
    sample = text[:2000]
    # On a tie, not the comma: in "a;1,5" the comma is a decimal comma.
    delimiter = max((";", "\t", ","), key=sample.count)
    labels: list[str] = []
    scores: list[float] = []
    rows = [(i, r) for i, r in enumerate(csv.reader(io.StringIO(text), delimiter=delimiter), 1)
            if any(cell.strip() for cell in r)]
    for position, (line, row) in enumerate(rows):
        cells = [c.strip() for c in row]
        if len(cells) > 2:
            raise ValueError(f"line {line} of the score file has {len(cells)} fields: give "
                             "one score per line, or a label and a score")
        try:
            value = _read_number(cells[-1], decimal_comma=delimiter != ",")
        except ValueError:
            if position == 0:
                continue  # a header line
            raise ValueError(f"line {line} of the score file: {cells[-1][:30]!r} is "
                             "not a number") from None
        if not math.isfinite(value):
            raise ValueError(f"line {line} of the score file: the score must be finite")
        if abs(value) > MAX_SCORE:
            raise ValueError(_too_large("scores", f"on line {line} of the score file",
                                        MAX_SCORE))
        scores.append(value)
        labels.append(cells[0] if len(cells) == 2 else "")
    if not MIN_CANDIDATES <= len(scores) <= MAX_CANDIDATES:
        raise ValueError(f"the score file holds {len(scores)} score(s): give between "
                         f"{MIN_CANDIDATES} and {MAX_CANDIDATES}")
    return numbered_labels(len(scores), labels), np.array(scores, dtype=np.float64)


def numbered_labels(count: int, given: list[str] | None = None) -> tuple[str, ...]:
    """Candidate labels: the given ones, with ``#i`` where a label is missing or repeated."""
    given = given or [""] * count
    seen: set[str] = set()
    out = []
    for i, label in enumerate(given, 1):
        label = label if label and label not in seen else f"#{i}"
        seen.add(label)
        out.append(label)
    return tuple(out)


def category_counts(frame: pd.DataFrame, column: str,
                    categories: tuple[str, ...] | None,
                    contribution: Contribution | None = None
                    ) -> tuple[tuple[str, ...], NDArray, int]:
    """(labels, counts, missing rows) of a categorical column, most common first.

    Every declared category is a candidate, empty ones included (dropping them would reveal
    that nobody has that value). Counts change by 1 in one category when a row is added or
    removed, so the score vector has sensitivity 1 and is monotonic.
    """
    answer = truth.histogram(frame, column, categories=categories, contribution=contribution)
    counts = np.asarray(answer.true_value, dtype=np.float64)
    order = np.argsort(-counts, kind="stable")
    labels = tuple(answer.labels[i] for i in order)
    return labels, counts[order], answer.missing_rows


def price_grid(highest: float, step: float) -> NDArray[np.float64]:
    """Prices step, 2·step, …, up to ``highest`` (public: chosen without looking at the bids).

    Rounded to 9 decimals so that a price typed as 3.01 equals the bid 3.01 (0.01 × 301 is
    3.0100000000000002 in floating point, which a bid of exactly 3.01 would not reach).
    """
    highest = check_positive("highest price", highest)
    step = check_positive("price step", step)
    count = math.floor(highest / step + 1e-9)
    if count < MIN_CANDIDATES:
        raise ValueError(f"the price grid has {count} price(s): make the step smaller than "
                         "half the highest price")
    if count > MAX_PRICES:
        raise ValueError(f"the price grid would have {count:,} prices (the limit is "
                         f"{MAX_PRICES:,}): use a larger step or a lower highest price")
    return np.round(np.arange(1, count + 1) * step, 9)


def revenue_curve(bids: ArrayLike, prices: ArrayLike) -> NDArray[np.float64]:
    """Revenue at each price: price × number of bids at or above it (one item per bidder).

    Adding or removing one bidder changes the revenue at price p by p or by 0, so the scores
    have sensitivity max(prices) and only move up (add) or down (remove): monotonic.
    """
    bids = np.sort(np.asarray(bids, dtype=np.float64))
    prices = np.asarray(prices, dtype=np.float64)
    buyers = bids.size - np.searchsorted(bids, prices, side="left")
    return prices * buyers


def simulated_bids(highest: float, seed: int, count: int = SIMULATED_BIDS) -> NDArray:
    """``count`` bids drawn uniformly up to ``highest``, in cents, from the page's seed stream."""
    rng = np.random.default_rng([seed, _RNG_OFFSET, 9])
    return np.round(rng.uniform(0.0, highest, size=count), 2)


def parse_bids(text: str) -> NDArray[np.float64]:
    """Typed bids: 1 to MAX_BIDS non-negative numbers separated by commas."""
    bids = parse_numbers(text, what="bids", minimum=1, maximum=MAX_BIDS, largest=None)
    if np.any(bids < 0):
        raise ValueError("a bid is negative: bids are amounts a buyer would pay, 0 or more")
    return bids


# --------------------------------------------------------------------------------------------
# Privacy level → noise scale, and what the page says about it


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
    from dashboard.analysis import plan_entries

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
    else:
        parts.append(f"no zCDP bound better than the pure-DP one is known for "
                     f"{NOISE_NAMES[noise]}: each pick is ε₀-DP with ε₀ = {cd}/b, hence "
                     f"ε₀²/2-zCDP (ρ = ε²/2); "
                     f"so ε₀ = √(2ρ/k) = {up(math.sqrt(2 * level / k))} and b = "
                     f"{cd}/ε₀ = **{fmt_value(scale)}** ({nums}). Gumbel noise gets ε²/8 "
                     "instead: at the same ρ it needs half this scale, which makes it the "
                     "natural zCDP choice.")
    if monotonic:
        parts.append(" Monotonic: between neighbouring datasets every score moves the same "
                     "way, so the gap between two scores changes by at most Δ (2Δ otherwise).")
    if k > 1:
        parts.append(f" The {k} picks share the budget (sequential composition), so each pick "
                     "gets 1/k of it.")
    check = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise, monotonic=monotonic,
                              k=k, measure=measure)
    parts.append(f" Privacy map check: noise of scale {fmt_value(scale)} costs "
                 f"{check.describe()}.")
    return "".join(parts)


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


# --------------------------------------------------------------------------------------------
# Exact and simulated selection at one privacy level


def binomial_half_width(p: ArrayLike, trials: int) -> NDArray[np.float64]:
    """Half-width of the 95% normal interval for a frequency: 1.96·√(p(1−p)/N)."""
    p = np.asarray(p, dtype=np.float64)
    return _Z95 * np.sqrt(p * (1 - p) / trials)


def simulated_trials(requested: int, candidates: int, k: int = 1) -> int:
    """Releases to simulate: as asked, but at most MAX_DRAWS noise draws (never under 1,000)."""
    return int(min(requested, max(1_000, MAX_DRAWS // (candidates * k))))


def simulate_picks(scores: ArrayLike, *, scale: float, noise: str, negate: bool, k: int,
                   trials: int, rng: np.random.Generator) -> tuple[NDArray, NDArray, float | None]:
    """Simulate ``trials`` releases; return (first-pick counts, top-k inclusion counts,
    share of releases that recovered a true top-k set, or None when k = 1).

    With k > 1 each release is one run of ``noisy_top_k``; its first pick has the same
    distribution as report noisy max at that scale. Simulated in chunks and reduced to counts
    per candidate, so nothing of size ``trials`` is kept.
    """
    values = np.asarray(scores, dtype=np.float64)
    d = values.size
    first = np.zeros(d, dtype=np.int64)
    included = np.zeros(d, dtype=np.int64)
    oriented = -values if negate else values
    kth_best = np.partition(oriented, d - k)[d - k]
    recovered = 0
    for chunk in trial_chunks(trials, d * k):
        if k == 1:
            picks = np.asarray(report_noisy_max(values, scale=scale, noise=noise, negate=negate,
                                                trials=chunk, rng=rng))
            first += np.bincount(picks, minlength=d)
            continue
        chosen = noisy_top_k(values, k, scale=scale, noise=noise, negate=negate, trials=chunk,
                             rng=rng)
        first += np.bincount(chosen[:, 0], minlength=d)
        included += np.bincount(chosen.ravel(), minlength=d)
        recovered += int(np.all(oriented[chosen] >= kth_best, axis=1).sum())
    if k == 1:
        return first, first.copy(), None
    return first, included, recovered / trials


@dataclass(frozen=True, eq=False)
class SelectionSummary:
    """What the page shows for one setting: exact and simulated picks, and sentences;
    ``mechanism`` the report noisy max simulated (its ``scale`` is :attr:`scale`)."""

    labels: tuple[str, ...]
    scores: NDArray[np.float64]
    mechanism: NoisyMax
    scale: float
    exact: NDArray[np.float64]
    empirical: NDArray[np.float64]
    half_width: NDArray[np.float64]
    inclusion: NDArray[np.float64] | None
    trials: int
    requested_trials: int
    within_band: int
    p_correct: float
    expected_gap: float
    top_k: float | None
    best: NDArray[np.bool_]
    map_text: str


def summarise_selection(scores: ArrayLike, labels: tuple[str, ...], *, mechanism: NoisyMax,
                        level: float, trials: int, seed: int) -> SelectionSummary:
    """Exact probabilities, simulated frequencies (seeded numpy draws of exactly the law
    ``mechanism`` names: its noise at its scale, its k, its direction) and the privacy map
    that turns ``level`` into its scale."""
    values = np.asarray(scores, dtype=np.float64)
    k = check_int("k", mechanism.k, minimum=1, maximum=values.size)
    scale, noise, negate = float(mechanism.scale), mechanism.noise, mechanism.negate
    exact = selection_probabilities(values, scale=scale, noise=noise, negate=negate)
    simulated = simulated_trials(trials, values.size, k)
    rng = np.random.default_rng([seed, _RNG_OFFSET, 0])
    first, included, recovered = simulate_picks(values, scale=scale, noise=noise, negate=negate,
                                                k=k, trials=simulated, rng=rng)
    empirical = first / simulated
    oriented = -values if negate else values
    # 1e-12 absorbs the rounding of exact probabilities at 0 or 1 (a zero-width band).
    within = np.abs(empirical - exact) <= binomial_half_width(exact, simulated) + 1e-12
    return SelectionSummary(
        labels=labels, scores=values, mechanism=mechanism, scale=scale, exact=exact,
        empirical=empirical,
        half_width=binomial_half_width(empirical, simulated),
        inclusion=included / simulated if k > 1 else None, trials=simulated,
        requested_trials=trials, within_band=int(within.sum()),
        p_correct=prob_best_selected(values, scale=scale, noise=noise, negate=negate),
        expected_gap=expected_score_gap(values, scale=scale, noise=noise, negate=negate),
        top_k=recovered, best=oriented == oriented.max(),
        map_text=privacy_map_text(noise=noise, measure=mechanism.measure, level=level,
                                  sensitivity=mechanism.sensitivity,
                                  monotonic=mechanism.monotonic, k=k, scale=scale),
    )


#: What a pick's shortfall is about, by source: (the candidate, its score).
SHORTFALL_WORDS = {"data": ("category", "true count"), "typed": ("candidate", "true score"),
                   "pricing": ("price", "revenue")}


def shortfall_bounds(mechanism: NoisyMax, candidates: int, alpha: float = DEFAULT_ALPHA
                     ) -> NDArray[np.float64]:
    """E_r for each rank r = 1..k: with probability at least 1 − ``alpha`` (each rank on its
    own), the score picked at rank r falls short of the best score among the candidates not
    picked before it by at most E_r. What the selection kind's release states (its
    ``intervals``, method "shortfall": ``dpcore.rank_intervals.top_k_shortfalls``), from the
    noise's law, its scale and the number of candidates only: it holds for any scores, so for
    a pick of the smallest (the same law, the scores negated) and for the teaching sources."""
    return top_k_shortfalls(mechanism.noise, float(mechanism.scale), int(candidates),
                            int(mechanism.k), alpha)


def shortfall_sentence(mechanism: NoisyMax, candidates: int, *, source: str,
                       alpha: float = DEFAULT_ALPHA) -> str:
    """The pick's shortfall bound in words for a newcomer, next to the simulated pick(s):
    'With 95 %, the chosen category's true count is within E of the top count …'."""
    bounds = shortfall_bounds(mechanism, candidates, alpha)
    thing, value = SHORTFALL_WORDS[source]
    top = "smallest" if mechanism.negate else "top"
    level = f"{100 * (1 - alpha):g} %"
    if bounds.size == 1:
        text = (f"With {level}, the chosen {thing}'s {value} is within {up(bounds[0])} of the "
                f"{top} {value}")
    else:
        ranks = ", ".join(f"rank {r} within {up(e)}" for r, e in enumerate(bounds, start=1))
        text = (f"With {level} for each rank on its own, the {thing} picked at each rank has a "
                f"{value} within E of the {top} {value} among the {thing}s not picked before "
                f"it: {ranks}")
    return text + (" — from the noise's law, its scale b and the number of candidates alone, "
                   "never the scores (a union bound over the other candidates: conservative, "
                   "it holds at least as often as stated). A release drawing this noise at "
                   "this scale states the same bound.")


def pick_sentence(summary: SelectionSummary, *, measure: str, level: float, negate: bool,
                  k: int) -> str:
    """e.g. 'At ε = 1, **HS-grad** (the highest score) is picked 92.3% of the time; …'.

    Labels may come from a user's file: they are escaped for markdown here.
    """
    symbol = LEVEL_SYMBOL[measure]
    which = "lowest" if negate else "highest"
    ties = int(summary.best.sum())
    at = f"At {symbol} = {fmt_number(level)}"
    if k > 1:
        at += f" split over k = {k} picks"
    if ties == 1:
        best = int(np.argmax(summary.best))
        subject = f"**{plain(summary.labels[best])}** (the {which} score)"
    else:
        subject = f"one of the {ties} candidates tied for the {which} score"
    verb = "is the first pick" if k > 1 else "is picked"
    sentence = f"{at}, {subject} {verb} {fmt_share(summary.p_correct)} of the time"
    others = np.where(summary.best, -1.0, summary.exact)
    if not summary.best.all():
        runner = int(np.argmax(others))
        sentence += (f"; the next most likely, {plain(summary.labels[runner])}, "
                     f"{fmt_share(float(others[runner]))}")
    return sentence + " (exact probabilities)."


def look_at_curve(summary: SelectionSummary, *, measure: str, level: float) -> str:
    """Presentation mode's one sentence over the curve of P(best picked) against the level."""
    symbol = LEVEL_SYMBOL[measure]
    return (f"**Look at:** the marked point — at {symbol} = {fmt_number(level)} the best is "
            f"picked {fmt_share(summary.p_correct)} of the time — and how the line climbs "
            f"towards 100% as {symbol} grows: more {symbol}, less privacy, fewer wrong picks.")


def tie_note(summary: SelectionSummary, *, negate: bool, source: str) -> str | None:
    """When the true answer is a tie, say so plainly: any of the tied counts as right, and if
    every candidate ties, P(best picked) is 100% at every privacy level. None without a tie."""
    ties = int(summary.best.sum())
    if ties < 2:
        return None
    which = "lowest" if negate else "highest"
    if ties < summary.best.size:
        return (f"The true answer is a tie: {ties} candidates share the {which} score, and "
                "picking any of them counts as right, so P(best picked) is the chance of "
                "picking any of the tied.")
    where = ("choose another column or dataset, or type scores" if source == "data"
             else "change the scores")
    return (f"The true answer is a tie: all {ties} candidates have the same score, so any "
            "pick is right and P(best picked) is 100% at every privacy level — ε changes "
            f"nothing here. To see what ε does, {where} so that one candidate is ahead.")


# --------------------------------------------------------------------------------------------
# P(correct) across privacy levels


def curve_levels(scores: ArrayLike, *, measure: str, sensitivity: float, monotonic: bool,
                 negate: bool, k: int) -> NDArray[np.float64]:
    """Privacy levels for the P(correct) curves: the page's slider range, widened to show the
    whole climb from picking at random to picking right (for these scores).

    Random picking: noise scale 10 × the spread of the scores. Right almost always: scale
    gap / (log d + 5), gap = the smallest positive gap among the top k + 1 scores. The levels
    follow from these scales through the privacy maps (the Gumbel one for the lowest ρ, the
    Laplace one for the highest).
    """
    values = np.sort(-np.asarray(scores, dtype=np.float64) if negate
                     else np.asarray(scores, dtype=np.float64))[::-1]
    grid = EPSILON_GRID if measure == "pure" else RHO_GRID
    low, high = grid[0], grid[-1]
    spread = float(values[0] - values[-1])
    gaps = -np.diff(values[: k + 1])
    gaps = gaps[gaps > 0]
    if spread > 0:
        gap = float(gaps.min()) if gaps.size else spread
        fine = gap / (math.log(values.size) + 5)
        coarse = 10 * spread
        lows = [noisy_max_privacy(coarse, sensitivity=sensitivity, noise=n, monotonic=monotonic,
                                  k=k, measure=measure) for n in NOISE_TYPES]
        highs = [noisy_max_privacy(fine, sensitivity=sensitivity, noise=n, monotonic=monotonic,
                                   k=k, measure=measure) for n in NOISE_TYPES]
        attr = "epsilon" if measure == "pure" else "rho"
        low = min(low, min(getattr(p, attr) for p in lows))
        high = max(high, max(getattr(p, attr) for p in highs))
    # Keep the axis sane for extreme inputs (ε from 1e-8 to 1e6, ρ its square / 2).
    floor, ceiling = (1e-8, 1e6) if measure == "pure" else (1e-16, 1e12)
    low, high = max(low, floor), min(high, ceiling)
    decades = math.log10(high / low)
    points = int(min(CURVE_MAX_POINTS, max(12, math.ceil(decades * CURVE_POINTS_PER_DECADE))))
    return np.geomspace(low, high, points)


def p_correct_curve(scores: ArrayLike, levels: ArrayLike, *, noise: str, measure: str,
                    sensitivity: float, monotonic: bool, negate: bool,
                    k: int = 1) -> NDArray[np.float64]:
    """Exact P(a best candidate is the (first) pick) at each privacy level, for one noise."""
    return np.array([
        prob_best_selected(scores, negate=negate, noise=noise, scale=noise_scale(
            measure, float(level), noise=noise, sensitivity=sensitivity, monotonic=monotonic,
            k=k))
        for level in np.asarray(levels, dtype=np.float64)
    ])


def top_k_trials(candidates: int, k: int, points: int) -> int:
    """Trials per point of the top-k curves: all three noises together stay under MAX_DRAWS."""
    budget = MAX_DRAWS // (len(NOISE_TYPES) * points * candidates * k)
    return int(min(TOP_K_MAX_TRIALS, max(TOP_K_MIN_TRIALS, budget)))


def top_k_curve(scores: ArrayLike, levels: ArrayLike, *, noise: str, measure: str,
                sensitivity: float, monotonic: bool, negate: bool, k: int, trials: int,
                rng: np.random.Generator) -> NDArray[np.float64]:
    """Simulated P(the k picks are a true top-k set) at each privacy level (Monte Carlo)."""
    values = np.asarray(scores, dtype=np.float64)
    out = []
    for level in np.asarray(levels, dtype=np.float64):
        scale = noise_scale(measure, float(level), noise=noise, sensitivity=sensitivity,
                            monotonic=monotonic, k=k)
        _, _, recovered = simulate_picks(values, scale=scale, noise=noise, negate=negate, k=k,
                                         trials=trials, rng=rng)
        out.append(recovered)
    return np.array(out, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class CorrectnessCurves:
    """P(correct) against the privacy level for the three noises; top-k curves when k > 1."""

    levels: NDArray[np.float64]
    p_correct: dict[str, NDArray[np.float64]]
    chance: float
    top_k_levels: NDArray[np.float64] | None = None
    top_k: dict[str, NDArray[np.float64]] | None = None
    top_k_trials: int = 0


def level_reaching(levels: ArrayLike, values: ArrayLike, target: float) -> float | None:
    """The smallest level on the curve from which it stays at or above ``target``."""
    levels = np.asarray(levels, dtype=np.float64)
    below = np.flatnonzero(np.asarray(values, dtype=np.float64) < target)
    if below.size == 0:
        return float(levels[0])
    if below[-1] == levels.size - 1:
        return None
    return float(levels[below[-1] + 1])


def compute_curves(scores: ArrayLike, *, measure: str, sensitivity: float, monotonic: bool,
                   negate: bool, k: int, seed: int) -> CorrectnessCurves:
    """Exact P(correct) curves for the three noises; simulated top-k curves when k > 1."""
    values = np.asarray(scores, dtype=np.float64)
    k = check_int("k", k, minimum=1, maximum=values.size)
    levels = curve_levels(values, measure=measure, sensitivity=sensitivity, monotonic=monotonic,
                          negate=negate, k=k)
    common = {"measure": measure, "sensitivity": sensitivity, "monotonic": monotonic,
              "negate": negate, "k": k}
    p_correct = {n: p_correct_curve(values, levels, noise=n, **common) for n in NOISE_TYPES}
    oriented = -values if negate else values
    chance = float(np.mean(oriented == oriented.max()))
    if k == 1:
        return CorrectnessCurves(levels, p_correct, chance)
    stride = max(1, math.ceil(levels.size / TOP_K_CURVE_POINTS))
    top_levels = levels[::stride]
    trials = top_k_trials(values.size, k, top_levels.size)
    top = {n: top_k_curve(values, top_levels, noise=n, trials=trials,
                          rng=np.random.default_rng([seed, _RNG_OFFSET, 1, i]), **common)
           for i, n in enumerate(NOISE_TYPES)}
    return CorrectnessCurves(levels, p_correct, chance, top_levels, top, trials)


def categories_origin(declared: bool) -> str:
    """Where the candidates of a column's counts come from, for the parameters file."""
    return ("the column's public list" if declared else
            "the data (this reveals which values occur)")


def data_note(declared: bool, missing_rows: int = 0,
              contribution: Contribution | None = None) -> str:
    """Where the candidates and the sensitivity of a column's counts come from."""
    where = ("Categories: the column's public list, empty ones included." if declared else
             "**Categories read off the data**: that reveals which values exist; declare them "
             "from public knowledge for a real release.")
    missing = (f" {missing_rows:,} rows with no value are not counted." if missing_rows else "")
    if contribution is None:
        unit = ("Sensitivity 1 under add/remove one row: one person changes one category's "
                "count by 1")
    else:
        unit = (f"Sensitivity {contribution.max_rows:,} under add/remove one person (all rows "
                f"with the same {plain(contribution.person)}, at most "
                f"{contribution.max_rows:,} kept per person): one person changes a category's "
                f"count by at most {contribution.max_rows:,}")
    return f"{unit}, and all counts move the same way (monotonic). {where}{missing}"


def pricing_note(bids: int, highest: float) -> str:
    """Where the revenues and their sensitivity come from."""
    return (f"Revenue at price p = p × (number of bids ≥ p), for {bids:,} bids. Sensitivity = "
            f"the highest price, {highest:g}: adding or removing one bidder (one row) changes "
            "each revenue by at most its price, always in the same direction (monotonic). "
            "With a handful of bidders that is as large as the revenues themselves, so the pick "
            "is close to random; with 100 simulated bids the peak stands out.")


def chart_caption(summary: SelectionSummary, *, lines: bool) -> str:
    """How to read the per-candidate chart, and how many frequencies sit in their band."""
    capped = (f" Only {summary.trials:,} of the {summary.requested_trials:,} releases asked "
              f"for were simulated ({summary.scores.size:,} candidates)."
              if summary.trials < summary.requested_trials else "")
    return (f"{'Line' if lines else 'Bars'}: the exact probability; dots: the share of "
            f"{summary.trials:,} simulated releases, ±95% binomial band. "
            f"{summary.within_band} of {summary.scores.size} candidates fall within the 95% "
            "band around their exact probability (roughly 95% should)." + capped)


def curve_caption(curves: CorrectnessCurves, *, noise: str, measure: str) -> str:
    """Where the chosen noise starts picking the best at least 90% of the time."""
    symbol, name = LEVEL_SYMBOL[measure], NOISE_NAMES[noise]
    reach = level_reaching(curves.levels, curves.p_correct[noise], 0.9)
    where = (f"from {symbol} ≈ {up(reach, 2)} upwards" if reach is not None
             else "nowhere on this range")
    return (f"Exact, for the three noises at the same {symbol}. With {name} the best is "
            f"picked at least 90% of the time {where}.")


def top_k_caption(curves: CorrectnessCurves, summary: SelectionSummary) -> str:
    """How precise the simulated top-k curves are, and the value at the chosen setting."""
    return (f"Simulated: {curves.top_k_trials:,} releases per point (standard error at most "
            f"{top_k_standard_error(curves):.1%}); the star: {fmt_share(summary.top_k or 0.0)} "
            f"of {summary.trials:,} releases at the chosen setting. The order of the picks is "
            "ignored.")


def top_k_standard_error(curves: CorrectnessCurves) -> float:
    """Largest standard error of a simulated probability: 0.5/√trials (at p = 1/2)."""
    return 0.5 / math.sqrt(max(curves.top_k_trials, 1))


# --------------------------------------------------------------------------------------------
# Cached wrappers (what the page calls)


@st.cache_data(show_spinner=False, max_entries=32)
def column_scores(_frame: pd.DataFrame, dataset_key: str, column: str,
                  categories: tuple[str, ...] | None,
                  contribution: Contribution | None = None
                  ) -> tuple[tuple[str, ...], tuple, int]:
    """(labels, counts, missing rows) of a categorical column; raises ValueError/TypeError."""
    labels, counts, missing = category_counts(_frame, column, categories, contribution)
    return labels, tuple(float(c) for c in counts), missing


@st.cache_data(show_spinner=False, max_entries=64)
def selection_summary(scores: tuple[float, ...], labels: tuple[str, ...], *,
                      mechanism: NoisyMax, level: float, trials: int,
                      seed: int) -> SelectionSummary:
    """:func:`summarise_selection`, cached by every parameter and the seed."""
    return summarise_selection(scores, labels, mechanism=mechanism, level=level, trials=trials,
                               seed=seed)


@st.cache_data(show_spinner=False, max_entries=32)
def correctness_curves(scores: tuple[float, ...], *, measure: str, sensitivity: float,
                       monotonic: bool, negate: bool, k: int, seed: int) -> CorrectnessCurves:
    """:func:`compute_curves`, cached; independent of the noise and the level chosen, so moving
    the slider never recomputes it."""
    return compute_curves(scores, measure=measure, sensitivity=sensitivity, monotonic=monotonic,
                          negate=negate, k=k, seed=seed)


# --------------------------------------------------------------------------------------------
# One private release, and the download of the page's results

#: What the noise scale means for each noise, for the parameters file.
NOISE_SCALE_MEANING = {
    "laplace": "scale b of the Laplace noise added to each score",
    "exponential": "scale b of the one-sided exponential noise added to each score",
    "gumbel": "scale b of the Gumbel noise added to each score",
}


@dataclass(frozen=True, eq=False)
class SelectionRelease:
    """One private pick at the page's settings, a sentence about it, and the download."""

    picks: tuple[int, ...]
    sentence: str
    values: pd.DataFrame
    parameters: dict


def release_stream(release: int) -> list[int | str]:
    """The random stream of release number ``release`` of a seed: ``[seed, 4, 2]`` for the
    first, ``[seed, 4, 2, n]`` for release n > 1."""
    check_int("release", release, minimum=1, maximum=MAX_RELEASE)
    return ["seed", _RNG_OFFSET, 2] + ([release] if release > 1 else [])


def one_release(scores: ArrayLike, *, scale: float, noise: str, negate: bool, k: int,
                seed: int, release: int = 1) -> tuple[int, ...]:
    """The candidate(s) release number ``release`` of ``seed`` picks, best first (its own
    stream, :func:`release_stream`)."""
    values = np.asarray(scores, dtype=np.float64)
    rng = np.random.default_rng([seed if part == "seed" else part
                                 for part in release_stream(release)])
    if k == 1:
        return (int(report_noisy_max(values, scale=scale, noise=noise, negate=negate,
                                     rng=rng)),)
    chosen = noisy_top_k(values, k, scale=scale, noise=noise, negate=negate, rng=rng)
    return tuple(int(i) for i in np.asarray(chosen).reshape(-1))


def selection_values(summary: SelectionSummary, picks: tuple[int, ...], *,
                     candidates: str) -> pd.DataFrame:
    """Per candidate: exact probability of being (first) picked, simulated share of releases
    with its 95% half-width, top-k inclusion when k > 1, and its rank in one release.

    The true scores are left out: the file holds what the mechanism releases and how often.
    """
    k = len(picks)
    first = " first" if k > 1 else ""
    rank = np.full(len(summary.labels), np.nan)
    rank[list(picks)] = np.arange(1, k + 1)
    columns = {
        candidates: [str(label) for label in summary.labels],
        f"Exact probability of being picked{first}": summary.exact,
        f"Simulated share of releases picking it{first}": summary.empirical,
        "95% half-width of the simulated share": summary.half_width,
    }
    if summary.inclusion is not None:
        columns[f"Simulated share of releases with it in the top {k}"] = summary.inclusion
    columns["Rank in one private release (empty: not picked)"] = rank
    return pd.DataFrame(columns)


def private_release(summary: SelectionSummary, *, source: str, dataset: str, candidates: str,
                    level: float, seed: int, categories_from: str | None = None,
                    release: int = 1, neighbours: str | None = None) -> SelectionRelease:
    """One private release at the page's settings (the summary's mechanism), with the
    download's values and parameters (the seed is added by the download).
    ``categories_from`` says where the candidates of a column's counts come from
    (:func:`categories_origin`)."""
    mechanism = summary.mechanism
    noise, measure, k = mechanism.noise, mechanism.measure, mechanism.k
    negate, monotonic = mechanism.negate, mechanism.monotonic
    picks = one_release(summary.scores, scale=summary.scale, noise=noise, negate=negate, k=k,
                        seed=seed, release=release)
    names = ", ".join(f"**{plain(summary.labels[i])}**" for i in picks)
    sentence = (f"One private release at these settings (release {release:,} of seed {seed}) "
                f"picks {names}"
                + (" (best first)." if k > 1 else "."))
    privacy = mechanism.privacy
    parameters = {
        "page": "Selection", "scores_from": SOURCES[source],
        "dataset": dataset if source == "data" else None, "candidates": candidates,
        "categories_from": categories_from if source == "data" else None,
        "number_of_candidates": int(summary.scores.size),
        "mechanism": NOISES[noise] + (f", top {k} picks" if k > 1 else ""),
        "noise": noise, "measure": measure,
        "epsilon": level if measure == "pure" else None, "delta": None,
        "rho": level if measure == "zcdp" else None,
        "sensitivity": float(mechanism.sensitivity),
        "sensitivity_meaning": "the most any one score changes between neighbours: "
                               + (neighbours or "add/remove one row (one row = one person)"),
        "monotonic": monotonic, "pick": "smallest score" if negate else "largest score",
        "k": k, "noise_scale": float(summary.scale),
        "noise_scale_meaning": NOISE_SCALE_MEANING[noise],
        "privacy": {**{n: float(v) for n, v in asdict(privacy).items()},
                    "guarantee": privacy.describe()},
        "picked_in_one_release": [str(summary.labels[i]) for i in picks],
        "release_number": release,
        "release_random_stream": "numpy.random.default_rng([{}])".format(
            ", ".join(str(part) for part in release_stream(release))),
        SIMULATION: simulation_fields("numpy.random.default_rng([{}])".format(
            ", ".join(str(part) for part in release_stream(release)))),
        "simulated_releases": int(summary.trials),
        "simulated_releases_requested": int(summary.requested_trials),
    }
    return SelectionRelease(picks, sentence, selection_values(summary, picks,
                                                              candidates=candidates), parameters)
