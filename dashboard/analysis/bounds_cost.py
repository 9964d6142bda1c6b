"""What the privacy unit's bounds cost (issue 12, item 3): the error of a release split into
the bias of dropped rows and clamped values and the noise, a tuning curve of the total error
against the max-rows bound, and the private route to choosing that bound (a DP quantile of
rows per person, charged to the budget).

Everything but the private route is computed on the raw data: for choosing bounds in
simulation, not private itself (the page says so). No widgets here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.analysis.stats_plan import make_plan
from dashboard.analysis.stats_query import QuerySpec
from dashboard.choices import PrivacyChoice
from dashboard.data.model import LoadedDataset
from dashboard.kinds import adapter_of
from dpcore.contributions import (
    ErrorBreakdown,
    MaxRowsSweep,
    error_breakdown,
    max_rows_sweep,
)
from dpcore.quantiles import rows_quantile_probabilities, sample_max_rows
from engine import RowsPerPerson

#: Candidate bounds drawn on the tuning curve (log-spaced up to the largest rows per person).
SWEEP_POINTS = 40
#: Quantile levels offered for the private choice of max rows.
QUANTILE_LEVELS = (0.5, 0.75, 0.9, 0.95, 0.99)
#: ε offered for the private choice of max rows.
QUANTILE_EPSILONS = (0.01, 0.05, 0.1, 0.2, 0.5, 1.0)
_RNG_OFFSET = 13   # this panel's own random stream


@dataclass(frozen=True, eq=False)
class BoundsCost:
    """The breakdown at the current bounds and the sweep over max rows."""

    breakdown: ErrorBreakdown
    sweep: MaxRowsSweep
    max_rows: int
    labels: tuple[str, ...] | None
    left_out: int   # rows without a person id, a value or a category: add to no answer

    def table(self) -> pd.DataFrame:
        """One row per answer (one for a count or sum, one per category of a histogram)."""
        b = self.breakdown
        out = pd.DataFrame({
            "True answer (all rows, unclamped)": b.true_value,
            "Bias: dropped rows": b.truncation_bias,
            "Bias: clamped values": b.clamping_bias,
            "Spread: which rows are dropped (sd)": b.truncation_sd,
            "Noise (sd)": b.noise_sd,
            "Total error (RMSE)": b.rmse,
        })
        if self.labels is not None and len(self.labels) == len(out):
            out.insert(0, "Category", list(self.labels))
        return out


def supported(spec: QuerySpec) -> bool:
    """True when the page's query has a person-level unit and its kind's page adapter breaks
    its error down (``PageKind.breaks_down``: a total over each person's kept rows; a mean's
    or a variance's error is a ratio's, not split here)."""
    return spec.contribution is not None and adapter_of(spec.query).breaks_down


def sweep_bounds(largest: int, current: int) -> NDArray[np.int64]:
    """Candidate max-rows bounds: 1 .. ``largest`` log-spaced, the current one included."""
    top = max(int(largest), 1)
    grid = np.unique(np.round(np.geomspace(1, top, min(SWEEP_POINTS, top))).astype(np.int64))
    return np.unique(np.append(grid, current))


@st.cache_data(show_spinner=False, max_entries=16)
def bounds_cost(_loaded: LoadedDataset, data_key: str, spec: QuerySpec, choice: PrivacyChoice,
                answer_range: tuple[float, float] | None) -> BoundsCost:
    """Cached: the error breakdown at the page's bounds and the sweep over max rows.

    The noise is the page's mechanism at the current bounds (its exact RMSE); the sweep
    assumes the noise grows in proportion to the sensitivity, as Laplace, Gaussian and
    geometric noise do.
    """
    bound = spec.contribution
    plan = make_plan(_loaded.relation, spec, choice, answer_range=answer_range)
    rmse = plan.analytic_rmse()
    noise_sd = float(np.sqrt(np.mean(np.square(rmse))))
    norm = plan.choice.spec.sensitivity_norm.lower()
    sensitivity = plan.answer.l1_sensitivity if norm == "l1" else plan.answer.l2_sensitivity
    categories = spec.categories if spec.categories is not None else plan.labels
    adapter = adapter_of(spec.query)
    cells, left_out, labels = adapter.contribution_cells(_loaded.relation, spec, categories)
    kind = adapter.kind
    k = bound.max_groups if kind.per_cell else None
    breakdown = error_breakdown(cells, max_rows=bound.max_rows, max_groups=k,
                                noise_sd=noise_sd)
    magnitude = adapter.reach(spec)
    largest = int(cells.person_rows.max() if k is None else cells.rows.max())
    sweep = max_rows_sweep(cells, sweep_bounds(largest, bound.max_rows), max_groups=k,
                           unit_noise_sd=noise_sd / sensitivity, norm=norm,
                           magnitude=magnitude)
    return BoundsCost(breakdown, sweep, bound.max_rows, labels, left_out)


@dataclass(frozen=True, eq=False)
class PrivateChoice:
    """The DP quantile of rows per person: its exact distribution and one draw."""

    candidates: NDArray[np.int64]
    probabilities: NDArray[np.float64]
    drawn: int
    epsilon: float
    q: float

    def within(self, low: int, high: int) -> float:
        """P(low ≤ chosen ≤ high), exact."""
        mask = (self.candidates >= low) & (self.candidates <= high)
        return float(self.probabilities[mask].sum())


@st.cache_data(show_spinner=False, max_entries=16)
def private_max_rows(_loaded: LoadedDataset, data_key: str, person: str, q: float,
                     epsilon: float, largest: int, seed: int) -> PrivateChoice:
    """Cached: the DP q-quantile of rows per person over 1..``largest`` (a public cap),
    tilted towards fewer rows, exactly, and one draw at ``seed`` (a simulation of the
    private choice)."""
    agg = _loaded.relation.answer(RowsPerPerson(person))
    if agg.total_people == 0:
        raise ValueError(f"no row has a value in {person}")
    probabilities = rows_quantile_probabilities(agg.rows, agg.people, q, epsilon=epsilon,
                                                largest=largest)
    rng = np.random.default_rng([seed, _RNG_OFFSET])
    drawn = sample_max_rows(agg.rows, agg.people, q, epsilon=epsilon, largest=largest, rng=rng)
    return PrivateChoice(np.arange(1, largest + 1), probabilities, int(drawn), epsilon, q)


def cost_sentence(cost: BoundsCost) -> str:
    """One plain sentence: where the error comes from at the current bound, and the best."""
    b, sweep = cost.breakdown, cost.sweep
    bias = float(np.sqrt(np.mean(np.square(b.bias))))
    noise = float(np.mean(b.noise_sd))
    total = float(np.sqrt(np.mean(np.square(b.rmse))))
    best = sweep.best_max_rows
    at_best = float(sweep.rmse[np.searchsorted(sweep.max_rows, best)])
    lead = "the bias of the bounds" if bias > noise else "the noise"
    return (f"At max rows = {cost.max_rows:,} the typical total error is {total:,.4g} "
            f"(bias {bias:,.4g}, noise sd {noise:,.4g}): {lead} dominates. The smallest total "
            f"error on this data is {at_best:,.4g}, at max rows = {best:,}.")


def total_privacy(epsilon: float | None, quantile_epsilon: float) -> str:
    """The release's total ε when max rows is chosen privately first (basic composition)."""
    if epsilon is None or not math.isfinite(epsilon):
        return (f"The private choice of max rows spends ε = {quantile_epsilon:g} on top of the "
                "release's own budget (sequential composition).")
    return (f"The private choice spends ε = {quantile_epsilon:g}; with the release's "
            f"ε = {epsilon:g} the total is ε = {epsilon + quantile_epsilon:g} (sequential "
            "composition).")
