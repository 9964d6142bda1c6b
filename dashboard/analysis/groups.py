"""Groups page: count, sum and mean per group, over declared keys or keys found privately;
counts per bin of a numeric column over public bin edges (a binned histogram).

The page builds its query as the release plan's query (the one "Add to plan" adds) and
builds it with ``plan.build``: the very parts a release draws — partition selection's
threshold (groups found privately), the counts, the sums, a mean's sum and count — with their
mechanisms, scales, thresholds and budget shares. A simulated release draws each part with
the law it names; it differs from a real one only in who draws the noise (seeded numpy here,
OpenDP in ``release``). Public keys: every declared key is released, zeros kept. True answers
from the engine; no widgets here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray
from scipy import stats

from dashboard.analysis import plan_entries
from dashboard.analysis.intervals import (
    CONDITIONAL,
    KEPT,
    RATIO,
    as_arrays,
    has_method,
    kind_intervals,
    mean_intervals,
    method_of,
    simulated_part,
)
from dashboard.analysis.plan_entries import uses_rho
from dashboard.data import column_facts
from dashboard.datasets import LoadedDataset, categorical_columns, numeric_columns
from dashboard.exports import noise_stream
from dashboard.kinds import per_group
from dashboard.person import PrivacyUnit, contribution
from dashboard.text import plain
from dpcore import safe_rounding
from dpcore.contributions import count_sensitivity
from dpcore.partition import keep_probability, release_partitions
from dpcore.quantiles import MAX_BINS, bin_labels
from engine import Binned, CategoryCounts, CategoryTable, DistinctValues, GroupedSum
from plan import model
from plan.build import Built, Part, PartitionThreshold, build
from plan.kinds import KINDS
from plan.kinds.base import additive_intervals, means_of, threshold_intervals

#: The page's choices of noise on the counts, named as partition selection's noises
#: (``dpcore.partition.PARTITION_NOISES``) and the catalogue's kinds: the plan's query takes
#: them as they are (``plan_entries.groups_query``).
NOISES = {"laplace": "Laplace (ε: pure DP on the counts)",
          "gaussian": "Gaussian (ρ: zCDP on the counts)"}
#: Most groups the page lists (keys of two columns multiply).
MAX_GROUPS = 10_000
#: Most groups of one column whose keys are found privately (partition selection) the page
#: simulates: a column of 20,000 postcodes is offered (issue 35 item 4), as a release reads
#: every key (``plan.kinds.group_by``: ``DistinctValues(limit=None)``).
MAX_FOUND_GROUPS = 200_000
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


def statistics() -> dict[str, str]:
    """The statistic per group the page offers, with its label: each a query kind of one
    number whose page adapter offers it per group (``dashboard.kinds``)."""
    return per_group()


def of_a_column(statistic: str) -> bool:
    """Whether a statistic per group reads a column clamped to bounds (a sum, a mean; a count
    reads none)."""
    return not KINDS[statistic].counts_rows


def group_columns(loaded: LoadedDataset) -> list[str]:
    """Categorical columns, then text columns with too many values to be categories (their
    keys found by partition selection, never listed: issue 35 item 4, a column of 20,000
    values was not offered at all), then numeric ones counted per bin (named with
    ``BINNED``)."""
    categorical = categorical_columns(loaded)
    return [*categorical, *many_keyed_columns(loaded, categorical),
            *(c + BINNED for c in numeric_columns(loaded) if c not in categorical)]


def many_keyed_columns(loaded: LoadedDataset, categorical: list[str]) -> list[str]:
    """Text columns that are not categorical (more than ``MAX_CATEGORIES`` values) and not
    declared numeric or hidden: grouped by keys found privately."""
    numeric = set(numeric_columns(loaded))
    return [c.name for c in loaded.relation.column_info()
            if c.kind == "text" and c.name not in categorical and c.name not in numeric
            and c.name not in loaded.hidden]


def found_keys(relation, column: str) -> tuple[object, ...]:
    """The keys a column holds, as a release's partition selection reads them (every one;
    read only to simulate it: the release path drops what the threshold does not clear): a
    Categorical's own list, else the engine's distinct values."""
    cats = column_facts.frame_categories(relation, column)
    if cats is not None:
        return cats
    return tuple(relation.answer(DistinctValues(column, limit=None)).values)


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


def page_query(loaded: LoadedDataset, spec: GroupsSpec, unit: PrivacyUnit) -> model.PlanQuery:
    """The page's query as the plan's query: the very query "Add to plan" adds
    (``plan_entries.groups_query``). Raises ValueError (the plan's reason) when the settings
    are not one query of the plan: a release could not draw them, so neither does the page."""
    try:
        return plan_entries.groups_query(
            loaded, unit, by=spec.by, statistic=spec.statistic, column=spec.column,
            lower=spec.lower, upper=spec.upper, public=spec.public, noise=spec.noise,
            budget=spec.budget, delta=spec.delta, edges=spec.edges, outside=spec.outside,
            keys=tuple(declared_keys(loaded, c) for c in spec.by))
    except model.PlanError as exc:
        raise ValueError(exc.reason) from None


def page_built(loaded: LoadedDataset, spec: GroupsSpec, unit: PrivacyUnit) -> Built:
    """The page's query built as a release builds it (``plan.build``): its parts (the
    threshold, the counts, the sums) are what the page simulates."""
    query = page_query(loaded, spec, unit)
    try:
        return build(query, plan_entries.plan_unit(unit))
    except model.PlanError as exc:
        raise ValueError(exc.reason) from None


@dataclass(frozen=True)
class GroupsParts:
    """The parts of a built group query by role: ``gate`` partition selection's threshold
    (groups found privately), ``counts`` the noise on the counts released over public keys
    (a count, a histogram, a table, a mean's count), ``sums`` the noise on the sums."""

    gate: PartitionThreshold | None
    counts: Part | None
    sums: Part | None
    gate_part: Part | None = None


def parts_of(built: Built) -> GroupsParts:
    """Sort the built parts by what they noise (the kinds name them: "groups", "sum",
    "count", "value")."""
    by_name = {part.name: part for part in built.parts}
    gate_part = by_name.get("groups")
    return GroupsParts(None if gate_part is None else gate_part.mechanism,
                       by_name.get("count", by_name.get("value")), by_name.get("sum"),
                       gate_part)


@dataclass(frozen=True)
class GroupsRelease:
    """Every group's truth and one simulated release of the built query's parts, drawn with
    the laws they name (seeded numpy here, OpenDP in a release), and the privacy behind them.

    ``gate_counts``: the threshold's noisy counts (groups found privately); ``noisy_counts``
    the counts part's (a count over public keys, a mean's count), None when there is none;
    ``noisy_means``: a mean's sums and counts combined as its kind combines them."""

    labels: tuple[str, ...]
    counts: NDArray[np.float64]
    totals: NDArray[np.float64] | None
    gate_counts: NDArray[np.float64] | None
    noisy_counts: NDArray | None
    noisy_totals: NDArray | None
    noisy_means: NDArray[np.float64] | None
    kept: NDArray[np.bool_]
    keep_chance: NDArray[np.float64] | None
    built: Built
    delta: float
    stream: int

    @property
    def released_counts(self) -> NDArray | None:
        """The noisy counts shown: the counts part's, else the threshold's."""
        return self.gate_counts if self.noisy_counts is None else self.noisy_counts

    @property
    def parts(self) -> GroupsParts:
        return parts_of(self.built)

    @property
    def count_scale(self) -> float | None:
        parts = self.parts
        if parts.gate is not None:
            return parts.gate.scale
        return None if parts.counts is None else parts.counts.scale

    @property
    def sum_scale(self) -> float | None:
        return None if self.parts.sums is None else self.parts.sums.scale

    @property
    def threshold(self) -> float | None:
        return None if self.parts.gate is None else self.parts.gate.threshold

    @property
    def groups_bound(self) -> int | None:
        return None if self.parts.gate is None else self.parts.gate.max_groups

    @property
    def rows(self) -> int:
        return int(self.counts.sum())


def _true_groups(relation, spec: GroupsSpec, keys: list[tuple[str, ...]], bound
                 ) -> tuple[tuple[str, ...], NDArray, NDArray | None]:
    keys = [column_facts.plan_categories(k) for k in keys]
    labels = [tuple(str(v) for v in k) for k in keys]
    if of_a_column(spec.statistic):   # sums and counts per group
        agg = relation.answer(GroupedSum(spec.by[0], keys[0], spec.column, spec.lower,
                                         spec.upper, bound))
        return labels[0], np.asarray(agg.rows, float), np.asarray(agg.totals, float)
    if len(spec.by) == 1:
        agg = relation.answer(CategoryCounts(spec.by[0], keys[0], bound))
        return labels[0], np.asarray(agg.counts, float), None
    agg = relation.answer(CategoryTable(spec.by[0], spec.by[1], keys[0], keys[1], bound))
    pairs = tuple(f"{a} · {b}" for a in labels[0] for b in labels[1])
    return pairs, np.asarray(agg.counts, float).reshape(-1), None


@st.cache_data(show_spinner=False, max_entries=32)
def groups_release(_loaded: LoadedDataset, data_key: str, spec: GroupsSpec,
                   unit: PrivacyUnit, seed: int, declared: tuple = ()) -> GroupsRelease:
    """Cached: true answers per group (engine) and one simulated release of the parts
    ``plan.build`` gives the page's query. ``declared``: the group-by columns' declared keys
    (in the cache key: declarations change on the Data page)."""
    relation = _loaded.relation
    built = page_built(_loaded, spec, unit)
    bound = contribution(unit, seed=seed)
    if spec.edges is not None:
        agg = relation.answer(Binned(spec.by[0], spec.edges, "bins", spec.outside, bound))
        labels = bin_labels(spec.edges, outside=spec.outside)
        return _released(labels, np.asarray(agg.counts, float), None, spec, built, data_key,
                         relation, seed)
    keys = []
    for column in spec.by:
        declared = declared_keys(_loaded, column)
        # without public keys the observed ones are read only to simulate: the release
        # path is partition selection, which drops what the threshold does not clear
        keys.append(declared if spec.public else found_keys(relation, column))
    most = MAX_GROUPS if spec.public or len(spec.by) > 1 else MAX_FOUND_GROUPS
    if math.prod(len(k) for k in keys) > most:
        raise ValueError(f"more than {most:,} groups: pick columns with fewer values")
    labels, counts, totals = _true_groups(relation, spec, keys, bound)
    if not spec.public:   # groups with no (kept) row do not exist in the data
        present = counts > 0
        labels = tuple(lab for lab, p in zip(labels, present, strict=True) if p)
        counts = counts[present]
        totals = None if totals is None else totals[present]
    return _released(labels, counts, totals, spec, built, data_key, relation, seed)


def _released(labels: tuple[str, ...], counts: NDArray, totals: NDArray | None,
              spec: GroupsSpec, built: Built, data_key: str, relation,
              seed: int) -> GroupsRelease:
    """One simulated release of the true ``counts`` (and ``totals``) per group: each part
    drawn in the release's order (the threshold, then the sums, then a mean's counts) with
    the law it names."""
    parts = parts_of(built)
    stream = noise_stream(data_key, relation, "groups", *spec.by, spec.statistic, spec.column,
                          *(() if spec.edges is None else ("bins", *spec.edges, spec.outside)))
    rng = np.random.default_rng([seed, _RNG_OFFSET, stream])
    kept = np.ones(counts.size, bool)
    gate_counts = noisy_counts = noisy_totals = noisy_means = chance = None
    delta = 0.0
    gate = parts.gate
    if gate is not None:
        drawn = release_partitions(counts, threshold=gate.threshold, noise=gate.noise,
                                   scale=gate.scale, rng=rng)
        kept, gate_counts = drawn.kept, drawn.noisy_counts
        chance = keep_probability(counts, threshold=gate.threshold, noise=gate.noise,
                                  scale=gate.scale)
        delta = parts.gate_part.loss.delta
    if parts.sums is not None:
        noisy_totals = parts.sums.mechanism.sample(totals, rng=rng)
    if parts.counts is not None:
        noisy_counts = parts.counts.mechanism.sample(counts, rng=rng)
    if parts.sums is not None and parts.counts is not None:   # a mean: the kind's combination
        noisy_means = means_of(noisy_totals, noisy_counts, spec.lower, spec.upper)
    return GroupsRelease(labels, counts, totals, gate_counts, noisy_counts, noisy_totals,
                         noisy_means, kept, chance, built, delta, stream)


def keep_curve(release: GroupsRelease) -> tuple[NDArray, NDArray]:
    """(group sizes n = 0, 1, …, probability that a group of n rows is kept), exact, up to
    where it is all but certain."""
    gate = release.parts.gate
    top = int(math.ceil(gate.threshold + 6 * gate.scale)) + 1
    sizes = np.arange(0, max(top, 10) + 1, dtype=np.float64)
    return sizes, keep_probability(sizes, threshold=gate.threshold, noise=gate.noise,
                                   scale=gate.scale)


def group_intervals(release: GroupsRelease, alpha: float = 1 - CONFIDENCE
                    ) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """(lower, upper) at 1 − ``alpha`` for each group's true statistic behind the simulated
    release, as a release computes it (NaN for a group the threshold dropped; None without
    groups): the kind's own intervals where it has them (a binned histogram, a table), else
    the path ``group_by``'s release takes — the threshold's noisy count for a count found
    privately (``threshold_intervals``: conditional on being kept), the sum's noise
    (``additive_intervals``), a mean's noisy sum and count (``mean_interval``). The noisy
    values may hold many releases (leading axes)."""
    built, parts = release.built, release.parts
    method = method_of(built)
    if not release.counts.size or not method:
        return None
    counted = release.noisy_counts if release.noisy_counts is not None else release.gate_counts
    found = kind_intervals(built, counted, alpha)
    if found is None and has_method(method, RATIO):
        bounds = built.query.query.bounds
        found = mean_intervals(parts.sums, release.noisy_totals, parts.counts,
                               release.noisy_counts, lower=bounds.lower, upper=bounds.upper,
                               alpha=alpha)
    elif found is None:
        if has_method(method, CONDITIONAL):   # a count found privately: the threshold's own counts
            values, of = release.gate_counts, threshold_intervals
            part = parts.gate_part
        elif parts.sums is not None:
            values, of, part = release.noisy_totals, additive_intervals, parts.sums
        else:
            values, of, part = release.noisy_counts, additive_intervals, parts.counts
        values = np.asarray(values, dtype=np.float64)
        found = as_arrays(of(simulated_part(part), values.reshape(-1), alpha), values.shape)
    if found is None:   # pragma: no cover — every kind the page builds gives intervals
        return None
    low, high = (np.where(release.kept, np.asarray(end, dtype=np.float64), np.nan)
                 for end in found)
    return low, high


#: The interval columns of the groups table.
INTERVAL_COLUMNS = (f"Lower {CONFIDENCE:.0%}", f"Upper {CONFIDENCE:.0%}")


def interval_caption(release: GroupsRelease) -> str:
    """What the table's interval columns are, in plain words."""
    method = method_of(release.built)
    what = "mean" if has_method(method, RATIO) else "sum" if release.totals is not None \
        else "count"
    text = (f"Lower and Upper: a {CONFIDENCE:.0%} interval for each released group's true "
            f"{what}, from the noise's law and the released values alone (never the data); "
            "each holds on its own, not all at once.")
    if has_method(method, RATIO):
        text += (f" A mean's comes from the group's noisy sum and noisy count, each at "
                 f"{1 - (1 - CONFIDENCE) / 2:.1%}: conservative, it holds at least as often "
                 "as stated.")
    if has_method(method, CONDITIONAL):
        text += (" Groups found by the threshold: the interval holds given that the group was "
                 "kept, and a kept group's noise leans upwards, so near the threshold it may "
                 "hold less often than stated.")
    elif has_method(method, KEPT):
        text += (" Groups found by the threshold: the interval holds for each group kept (its "
                 f"{what}'s noise is drawn apart from the threshold's).")
    return text


def group_table(release: GroupsRelease, spec: GroupsSpec) -> pd.DataFrame:
    """One row per group: truth, the simulated noisy answer and its interval for the true
    value (:func:`group_intervals`), kept or dropped, P(kept)."""
    out = pd.DataFrame({"Group": release.labels, "True count": release.counts})
    if release.totals is not None:
        out["True sum"] = release.totals
        with np.errstate(invalid="ignore", divide="ignore"):
            out["True mean"] = release.totals / release.counts
    if release.released_counts is not None:
        out["Noisy count"] = release.released_counts
    if release.gate_counts is not None and release.noisy_counts is not None:
        out["Noisy count at the threshold"] = release.gate_counts
    if release.noisy_totals is not None:
        out["Noisy sum"] = release.noisy_totals
    if release.noisy_means is not None:
        out["Noisy mean (clamped to the bounds)"] = release.noisy_means
    if (intervals := group_intervals(release)) is not None:
        out[INTERVAL_COLUMNS[0]], out[INTERVAL_COLUMNS[1]] = intervals
    if release.keep_chance is not None:
        out["Released"] = np.where(release.kept, "kept", "dropped")
        out["P(kept), exact"] = [safe_rounding.percent_upper(p) for p in release.keep_chance]
    return out


def _law(part: Part) -> str:
    """The name of the noise a part draws."""
    return part.mechanism.name


def _budget(part: Part) -> str:
    loss = part.loss
    if loss.rho is not None:
        return f"ρ = {safe_rounding.upper(loss.rho, 4)}"
    return f"ε = {safe_rounding.upper(loss.epsilon, 4)}"


def privacy_sentence(release: GroupsRelease, spec: GroupsSpec, unit: PrivacyUnit) -> str:
    """The parts the release draws, each with its noise, scale and budget (``plan.build``)."""
    parts = release.parts
    text = ""
    counted = parts.gate_part if parts.gate is not None else parts.counts
    if counted is not None:
        sens = count_sensitivity(release.built.unit.bounds(grouped=True))
        text = (f"**Counts:** {_law(counted)} noise of scale {counted.scale:.4g} for "
                f"{_budget(counted)} — count sensitivity L1 = {sens.l1:g}, L2 = {sens.l2:.4g} "
                f"under add/remove of one person ({plain(unit.describe())}).")
    if parts.sums is not None:
        text += (f" **Sums:** {_law(parts.sums)} noise of scale {parts.sums.scale:.4g} for "
                 f"{_budget(parts.sums)} (values clamped to [{spec.lower:g}, {spec.upper:g}]"
                 f"; sensitivity {parts.sums.sensitivity:.4g}).")
        if parts.gate is not None and parts.counts is not None:
            text += (f" **The mean's counts:** {_law(parts.counts)} noise of scale "
                     f"{parts.counts.scale:.4g} for {_budget(parts.counts)}.")
        if release.noisy_means is not None:
            text += (" The mean is the noisy sum over the noisy count (at least 1), clamped "
                     "to the bounds (post-processing).")
        text = text.strip()
    if release.threshold is None:
        return text + " **δ = 0**: every declared key is released, zeros kept."
    return text + (f" **Threshold:** a group is released only if its noisy count is at least "
                   f"{release.threshold:.4g}. **δ = {safe_rounding.upper(release.delta, 3)}**: the "
                   f"chance, at most, that one person's groups (up to {release.groups_bound:,}"
                   " that only they make) are released at all.")


def noise_alpha(noise: str, scale: float, confidence: float = CONFIDENCE) -> float:
    """α with P(|noise| ≤ α) ≥ ``confidence`` under partition selection's noise (exact):
    Laplace b·ln(1/β), Gaussian σ·Φ⁻¹(1 − β/2), β = 1 − confidence; the discrete Laplace
    the smallest whole α with P(|Z| > α) = 2e^{−(α+1)/b}/(1 + e^{−1/b}) ≤ β."""
    beta = 1.0 - confidence
    if uses_rho(noise):
        return float(stats.norm.isf(beta / 2, scale=scale))
    if noise == "laplace":
        return scale * -math.log(beta)
    ratio = beta * (1 + math.exp(-1 / scale)) / 2
    return float(max(0.0, math.ceil(-scale * math.log(ratio) - 1)))


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
    noisy = release.released_counts if counts_only else release.noisy_totals
    parts = release.parts
    if counts_only and parts.gate is not None:
        alpha = noise_alpha(parts.gate.noise, parts.gate.scale)
    else:   # the closed form of the catalogue mechanism the part draws
        part = parts.counts if counts_only else parts.sums
        alpha = float(part.mechanism.accuracy(1.0 - CONFIDENCE))
    shown = np.arange(truth.size)
    if truth.size > MAX_CHART_GROUPS:   # the largest groups, in the table's order
        shown = np.sort(np.argsort(-truth, kind="stable")[:MAX_CHART_GROUPS])
    return GroupsChart(
        labels=tuple(release.labels[i] for i in shown.tolist()), truth=truth[shown],
        noisy=np.where(release.kept, noisy, np.nan)[shown],
        alpha=alpha, what="count" if counts_only else "sum",
        left_out=truth.size - shown.size)


def accuracy_sentence(chart: GroupsChart, spec: GroupsSpec) -> str:
    """e.g. 'In each group, 95% of the releases this page draws land within ±2.996 …'."""
    law = ("σ·Φ⁻¹(1 − β/2), Gaussian" if uses_rho(spec.noise)
           else "b·ln(1/β), Laplace")
    text = (f"**In each group, {CONFIDENCE:.0%} of the releases this page draws land within "
            f"±{safe_rounding.upper(chart.alpha, 4)} of the true {chart.what}** (α = {law}, "
            f"β = {1 - CONFIDENCE:.0%}: the noise's exact law, not a simulation).")
    if KINDS[spec.statistic].split_by_share:   # its chart shows the sums (chart_values)
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
