"""Groups page: count, sum and mean per group, over declared keys or keys found privately;
counts per bin of a numeric column over public bin edges (a binned histogram).

Public keys: every declared key is released, zeros kept. Otherwise partition selection
(``dpcore.partition``): a group is released only if its noisy count clears a threshold set by
ε (or ρ), δ and the groups a person may be in. True answers from the engine; no widgets here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray
from scipy import stats

from dashboard.data import facts
from dashboard.datasets import LoadedDataset, categorical_columns, numeric_columns
from dashboard.exports import noise_stream
from dashboard.person import PrivacyUnit, contribution
from dpcore import figures
from dpcore.contributions import ContributionBounds, count_sensitivity, sum_sensitivity
from dpcore.partition import (
    keep_probability,
    partition_delta,
    partition_scale,
    partition_threshold,
)
from dpcore.quantiles import MAX_BINS, bin_labels
from engine import Binned, CategoryCounts, CategoryTable, GroupedSum

#: Partition selection's own noises (``dpcore.partition.PARTITION_NOISES``): what the
#: simulation adds to the counts. A real release of integer counts uses the discrete Laplace.
NOISES = {"laplace": "Laplace (ε: pure DP on the counts)",
          "gaussian": "Gaussian (ρ: zCDP on the counts)"}
STATISTICS = {"count": "Count per group", "sum": "Sum per group", "mean": "Mean per group"}
#: Most groups the page lists (keys of two columns multiply).
MAX_GROUPS = 10_000
#: Most groups the noisy-against-true chart draws (the largest, in the table's order).
MAX_CHART_GROUPS = 40
#: How often a release lands within the chart's ±α band.
CONFIDENCE = 0.95
_RNG_OFFSET = 9   # the Groups page's own random stream


#: How a numeric column is offered as a group-by choice: counted per bin.
BINNED = " (in bins)"
#: Where values outside the bin edges go (``dpcore.quantiles.bin_indices``).
OUTSIDE = {"separate": "in their own cells: below and above the edges",
           "clamp": "into the first or last bin"}
#: Bins between the public bounds when no edges are declared.
EVEN_BINS = 10


def group_columns(loaded: LoadedDataset) -> list[str]:
    """Categorical columns, then numeric ones counted per bin (named with ``BINNED``)."""
    categorical = categorical_columns(loaded)
    return [*categorical, *(c + BINNED for c in numeric_columns(loaded)
                            if c not in categorical)]


def binned_column(choice: str) -> str | None:
    """The numeric column of a ``BINNED`` choice, None for a categorical column."""
    return choice[: -len(BINNED)] if choice.endswith(BINNED) else None


def default_edges(loaded: LoadedDataset, column: str) -> tuple[str, str]:
    """(edges as text, where they come from): the declared bins, else ``EVEN_BINS`` even bins
    between the public bounds, else nothing (the user types them)."""
    domain = loaded.domains.get(column)
    if domain is None or domain.kind != "numeric":
        return "", "no public bounds or bins are declared for this column: type the edges"
    if domain.bins is not None:
        return ", ".join(f"{e:g}" for e in domain.bins), f"declared: {domain.source}"
    edges = np.linspace(domain.lower, domain.upper, EVEN_BINS + 1)
    return (", ".join(f"{e:.6g}" for e in edges),
            f"{EVEN_BINS} even bins between the public bounds ({domain.source})")


def parse_edges(text: str) -> tuple[float, ...]:
    """Bin edges typed as numbers separated by commas, spaces or semicolons."""
    parts = [p for p in text.replace(";", ",").replace(" ", ",").split(",") if p.strip()]
    try:
        edges = np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise ValueError("The bin edges must be numbers separated by commas, e.g. "
                         "0, 10, 20, 50") from None
    if edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ValueError("The bin edges must be at least two finite numbers in increasing "
                         "order, e.g. 0, 10, 20, 50")
    if edges.size - 1 > MAX_BINS:
        raise ValueError(f"At most {MAX_BINS:,} bins: type fewer edges")
    return tuple(edges.tolist())


def declared_keys(loaded: LoadedDataset, column: str) -> tuple[str, ...] | None:
    """The column's public categories, or None when none are declared."""
    domain = loaded.domains.get(column)
    if domain is not None and domain.kind == "categorical" and domain.categories:
        return tuple(domain.categories)
    return None


def uses_rho(noise: str) -> bool:
    return noise == "gaussian"


@dataclass(frozen=True)
class GroupsSpec:
    """What the user asked: group-by columns, the statistic, its column and bounds, whether
    the keys are public, the noise and the budget (ε or ρ; δ for the threshold)."""

    by: tuple[str, ...]
    statistic: str
    column: str | None
    lower: float | None
    upper: float | None
    public: bool
    noise: str
    budget: float
    delta: float
    edges: tuple[float, ...] | None = None   # bin edges of a binned histogram (by[0])
    outside: str = "separate"


def selection_bounds(unit: PrivacyUnit) -> tuple[int, int, int]:
    """(r, k for the noise, k for δ). r rows per person in a group. With a group bound k both
    are k. With a person id and only a total bound r, the counts' sensitivity is r (all rows
    may fall in one group: k = 1 for the noise) but a person can make up to r groups alone
    (k = r for δ, each at most r rows: an over-estimate, never an under-estimate)."""
    r = unit.max_rows
    if unit.max_groups is not None:
        return r, unit.max_groups, unit.max_groups
    return r, 1, r


@dataclass(frozen=True)
class GroupsRelease:
    """Every group's truth and one simulated release, and the privacy behind them."""

    labels: tuple[str, ...]
    counts: NDArray[np.float64]
    totals: NDArray[np.float64] | None
    noisy_counts: NDArray[np.float64]
    noisy_totals: NDArray[np.float64] | None
    kept: NDArray[np.bool_]
    keep_chance: NDArray[np.float64] | None
    count_scale: float
    sum_scale: float | None
    threshold: float | None
    delta: float
    rows: int
    groups_bound: int
    count_budget: float
    sum_budget: float | None
    stream: int


def _true_groups(relation, spec: GroupsSpec, keys: list[tuple[str, ...]], bound
                 ) -> tuple[tuple[str, ...], NDArray, NDArray | None]:
    keys = [facts.engine_categories(relation, c, tuple(k)) for c, k in zip(spec.by, keys,
                                                                              strict=True)]
    labels = [tuple(str(v) for v in k) for k in keys]
    if spec.statistic != "count":
        agg = relation.answer(GroupedSum(spec.by[0], keys[0], spec.column, spec.lower,
                                         spec.upper, bound))
        return labels[0], np.asarray(agg.rows, float), np.asarray(agg.totals, float)
    if len(spec.by) == 1:
        agg = relation.answer(CategoryCounts(spec.by[0], keys[0], bound))
        return labels[0], np.asarray(agg.counts, float), None
    agg = relation.answer(CategoryTable(spec.by[0], spec.by[1], keys[0], keys[1], bound))
    pairs = tuple(f"{a} · {b}" for a in labels[0] for b in labels[1])
    return pairs, np.asarray(agg.counts, float).reshape(-1), None


def _draw(noise: str, scale: float, size: int, rng: np.random.Generator) -> NDArray:
    if uses_rho(noise):
        return rng.normal(0.0, scale, size=size)
    return rng.laplace(0.0, scale, size=size)


@st.cache_data(show_spinner=False, max_entries=32)
def groups_release(_loaded: LoadedDataset, data_key: str, spec: GroupsSpec,
                   unit: PrivacyUnit, seed: int, declared: tuple = ()) -> GroupsRelease:
    """Cached: true answers per group (engine) and one simulated release. ``declared``: the
    group-by columns' declared keys (in the cache key: declarations change on the Data page)."""
    relation = _loaded.relation
    bound = contribution(unit, seed=seed)
    if spec.edges is not None:
        if not spec.public or spec.statistic != "count" or len(spec.by) != 1:
            raise ValueError("bins are public keys: a binned histogram releases counts of one "
                             "column, every bin")
        agg = relation.answer(Binned(spec.by[0], spec.edges, "bins", spec.outside, bound))
        labels = bin_labels(spec.edges, outside=spec.outside)
        return _released(labels, np.asarray(agg.counts, float), None, spec, unit, data_key,
                         relation, seed)
    keys = []
    for column in spec.by:
        declared = declared_keys(_loaded, column)
        if spec.public and declared is None:
            raise ValueError(f"{column!r} has no declared categories: its groups must be "
                             "found privately")
        # without public keys the observed ones are read only to simulate: the release
        # path is partition selection, which drops what the threshold does not clear
        keys.append(declared if spec.public else facts.data_categories(relation, column))
    if math.prod(len(k) for k in keys) > MAX_GROUPS:
        raise ValueError(f"more than {MAX_GROUPS:,} groups: pick columns with fewer values")
    labels, counts, totals = _true_groups(relation, spec, keys, bound)
    if not spec.public:   # groups with no (kept) row do not exist in the data
        present = counts > 0
        labels = tuple(lab for lab, p in zip(labels, present, strict=True) if p)
        counts = counts[present]
        totals = None if totals is None else totals[present]
    return _released(labels, counts, totals, spec, unit, data_key, relation, seed)


def _released(labels: tuple[str, ...], counts: NDArray, totals: NDArray | None,
              spec: GroupsSpec, unit: PrivacyUnit, data_key: str, relation,
              seed: int) -> GroupsRelease:
    """One simulated release of the true ``counts`` (and ``totals``) per group."""
    count_budget = spec.budget if spec.statistic == "count" else spec.budget / 2
    sum_budget = None if spec.statistic == "count" else spec.budget - count_budget
    r, k_noise, k_delta = selection_bounds(unit)
    budget = {"rho" if uses_rho(spec.noise) else "epsilon": count_budget}
    scale = partition_scale(noise=spec.noise, max_rows=r, max_groups=k_noise, **budget)
    threshold, delta = None, 0.0
    if not spec.public:
        threshold = partition_threshold(noise=spec.noise, scale=scale, delta=spec.delta,
                                        max_rows=r, max_groups=k_delta)
        delta = partition_delta(threshold, noise=spec.noise, scale=scale, max_rows=r,
                                max_groups=k_delta)
    stream = noise_stream(data_key, relation, "groups", *spec.by, spec.statistic, spec.column,
                          *(() if spec.edges is None else ("bins", *spec.edges, spec.outside)))
    rng = np.random.default_rng([seed, _RNG_OFFSET, stream])
    noisy_counts = counts + _draw(spec.noise, scale, counts.size, rng)
    kept = np.ones(counts.size, bool) if threshold is None else noisy_counts >= threshold
    sum_scale = noisy_totals = None
    if sum_budget is not None:
        sens = sum_sensitivity(unit.bounds(), lower=spec.lower, upper=spec.upper)
        sum_scale = (sens.l2 / math.sqrt(2 * sum_budget) if uses_rho(spec.noise)
                     else sens.l1 / sum_budget)
        sum_scale = math.nextafter(sum_scale, math.inf)   # never below the calibrated scale
        noisy_totals = totals + _draw(spec.noise, sum_scale, counts.size, rng)
    chance = None if threshold is None else keep_probability(counts, threshold=threshold,
                                                             noise=spec.noise, scale=scale)
    return GroupsRelease(labels, counts, totals, noisy_counts, noisy_totals, kept, chance,
                         scale, sum_scale, threshold, delta, int(counts.sum()), k_delta,
                         count_budget, sum_budget, stream)


def keep_curve(release: GroupsRelease, noise: str) -> tuple[NDArray, NDArray]:
    """(group sizes n = 0, 1, …, probability that a group of n rows is kept), exact, up to
    where it is all but certain."""
    top = int(math.ceil(release.threshold + 6 * release.count_scale)) + 1
    sizes = np.arange(0, max(top, 10) + 1, dtype=np.float64)
    return sizes, keep_probability(sizes, threshold=release.threshold, noise=noise,
                                   scale=release.count_scale)


def group_table(release: GroupsRelease, spec: GroupsSpec) -> pd.DataFrame:
    """One row per group: truth, the simulated noisy answer, kept or dropped, P(kept)."""
    out = pd.DataFrame({"Group": release.labels, "True count": release.counts})
    if release.totals is not None:
        out["True sum"] = release.totals
        with np.errstate(invalid="ignore", divide="ignore"):
            out["True mean"] = release.totals / release.counts
    out["Noisy count"] = release.noisy_counts
    if release.noisy_totals is not None:
        out["Noisy sum"] = release.noisy_totals
        mean = release.noisy_totals / np.where(release.noisy_counts > 0,
                                               release.noisy_counts, np.nan)
        out["Noisy mean (clamped to the bounds)"] = np.clip(mean, spec.lower, spec.upper)
    if release.keep_chance is not None:
        out["Released"] = np.where(release.kept, "kept", "dropped")
        out["P(kept), exact"] = [figures.percent_upper(p) for p in release.keep_chance]
    return out


def privacy_sentence(release: GroupsRelease, spec: GroupsSpec, unit: PrivacyUnit) -> str:
    symbol = "ρ" if uses_rho(spec.noise) else "ε"
    name = NOISES[spec.noise].split(" (")[0]
    sens = count_sensitivity(ContributionBounds(unit.max_rows, unit.max_groups))
    text = (f"**Counts:** {name} noise of scale {release.count_scale:.4g} for {symbol} = "
            f"{figures.upper(release.count_budget, 4)} — count sensitivity L1 = {sens.l1:g}, "
            f"L2 = {sens.l2:.4g} under add/remove of one person ({unit.describe()}).")
    if release.sum_scale is not None:
        text += (f" **Sums:** {name} noise of scale {release.sum_scale:.4g} for {symbol} = "
                 f"{figures.upper(release.sum_budget, 4)} (values clamped to "
                 f"[{spec.lower:g}, {spec.upper:g}]). The mean is the noisy sum over the "
                 "noisy count (post-processing).")
    if release.threshold is None:
        return text + " **δ = 0**: every declared key is released, zeros kept."
    return text + (f" **Threshold:** a group is released only if its noisy count is at least "
                   f"{release.threshold:.4g}. **δ = {figures.upper(release.delta, 3)}**: the "
                   f"chance, at most, that one person's groups (up to {release.groups_bound:,}"
                   " that only they make) are released at all.")


def noise_alpha(noise: str, scale: float, confidence: float = CONFIDENCE) -> float:
    """α with P(|noise| ≤ α) = ``confidence`` under the noise's exact law: Laplace b·ln(1/β),
    Gaussian σ·Φ⁻¹(1 − β/2), β = 1 − confidence."""
    beta = 1.0 - confidence
    if uses_rho(noise):
        return float(stats.norm.isf(beta / 2, scale=scale))
    return scale * -math.log(beta)


@dataclass(frozen=True)
class GroupsChart:
    """What the noisy-against-true chart draws: per group (at most ``MAX_CHART_GROUPS``, the
    largest) the true and the noisy value (NaN if dropped), and the one ±α of every group."""

    labels: tuple[str, ...]
    truth: NDArray[np.float64]
    noisy: NDArray[np.float64]
    alpha: float
    what: str
    left_out: int


def chart_values(release: GroupsRelease, spec: GroupsSpec) -> GroupsChart:
    """The counts, or the sums for a sum or a mean (the mean's own error has no closed form:
    the noisy sum over the noisy count)."""
    counts_only = release.totals is None
    truth = release.counts if counts_only else release.totals
    noisy = release.noisy_counts if counts_only else release.noisy_totals
    scale = release.count_scale if counts_only else release.sum_scale
    shown = np.arange(truth.size)
    if truth.size > MAX_CHART_GROUPS:   # the largest groups, in the table's order
        shown = np.sort(np.argsort(-truth, kind="stable")[:MAX_CHART_GROUPS])
    return GroupsChart(
        labels=tuple(release.labels[i] for i in shown.tolist()), truth=truth[shown],
        noisy=np.where(release.kept, noisy, np.nan)[shown],
        alpha=noise_alpha(spec.noise, scale), what="count" if counts_only else "sum",
        left_out=truth.size - shown.size)


def accuracy_sentence(chart: GroupsChart, spec: GroupsSpec) -> str:
    """e.g. 'In each group, 95% of the releases this page draws land within ±2.996 …'."""
    law = ("σ·Φ⁻¹(1 − β/2), Gaussian" if uses_rho(spec.noise)
           else "b·ln(1/β), Laplace")
    text = (f"**In each group, {CONFIDENCE:.0%} of the releases this page draws land within "
            f"±{figures.upper(chart.alpha, 4)} of the true {chart.what}** (α = {law}, "
            f"β = {1 - CONFIDENCE:.0%}: the noise's exact law, not a simulation).")
    if chart.what == "sum" and spec.statistic == "mean":
        text += " The chart shows the sums: the mean is the noisy sum over the noisy count."
    return text


def chart_caption(chart: GroupsChart, public: bool) -> str:
    text = ("Top: the true values (black) and one simulated release (whiskers ±α). Below, on "
            "a scale of its own, each group's error (noisy − true) inside its ±α band.")
    if not public:
        text += " A group dropped by the threshold has no noisy value."
    if chart.left_out:
        text += (f" The {MAX_CHART_GROUPS} largest groups are drawn; the table lists all "
                 f"{chart.left_out + len(chart.labels):,}.")
    return text
