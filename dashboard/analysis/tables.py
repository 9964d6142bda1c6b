"""Noisy tables: a crosstab of two categorical columns released with noise and post-processed.

Plain functions (no Streamlit) pick the columns, split the budget and simulate releases;
``table_release`` is the cached wrapper the "Noisy tables" page calls.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import ArrayLike, NDArray

from dashboard.analysis.intervals import kind_intervals
from dashboard.analysis.plan_entries import _category_values, _noise
from dashboard.analysis.stats_parts import plan_unit
from dashboard.analysis.stats_query import neighbours_of
from dashboard.choices import PrivacyChoice, mechanism_name
from dashboard.data import column_facts, true_answers
from dashboard.datasets import LoadedDataset, categorical_columns
from dashboard.exports import SIMULATION, noise_stream, simulation_fields
from dashboard.text import plain
from dpcore import measures, postprocess, queries
from dpcore.checks import check_rng, check_trials, trial_chunks
from dpcore.intervals import DEFAULT_ALPHA, monotone_interval, table_interval
from dpcore.mechanisms import AdditiveMechanism
from engine.queries import Contribution
from plan import model
from plan.build import Built, build

#: A column with more categories than this is not offered for a table (a 100 × 100 table
#: already has 10,000 cells, most of them pure noise).
MAX_TABLE_CATEGORIES = 100
#: Largest table the page draws (rows × columns).
MAX_TABLE_CELLS = 2_500
#: Work cap of one simulation: simulated releases × cells (about 5 s on one core at worst).
MAX_SIMULATED_CELLS = 10**7
#: Work cap of the comparison of the post-processing steps (six pipelines on the same noise).
MAX_STEP_CELLS = 2 * 10**6

#: Where the noisy total used for rescaling comes from.
TOTAL_SOURCES = {
    "cells": "Sum of the noisy cells (post-processing: costs nothing)",
    "separate": "A separate noisy count of all rows (spends a share of the budget)",
}
#: Shares of the budget the separate noisy total may take.
TOTAL_SHARES = (0.05, 0.1, 0.2, 0.3, 0.5)

#: Default crosstab (rows, columns) for the built-in datasets.
PREFERRED_AXES = {
    "Synthetic census": ("Occupation", "Sex"),
    "Adult (UCI census income)": ("education", "sex"),
}
CENSUS = "Synthetic census"

#: Post-processing pipelines compared on the same simulated noise: (label, clip, round,
#: rescale). Rescaling needs non-negative cells, so it always clips first.
STEPS: tuple[tuple[str, bool, bool, bool], ...] = (
    ("No post-processing", False, False, False),
    ("Clip negatives to 0", True, False, False),
    ("Round to integers", False, True, False),
    ("Clip, then round", True, True, False),
    ("Clip, rescale to the noisy total", True, False, True),
    ("Clip, rescale, round (sums exactly to the total)", True, True, True),
)
QUANTILES = (0.05, 0.5, 0.95)
_HISTOGRAM_BINS = 60
_RNG_OFFSET = 3   # the tables page's own random stream, apart from the other pages'


# --------------------------------------------------------------------------------------------
# Columns and categories


def table_columns(loaded: LoadedDataset) -> list[str]:
    """Categorical columns with at most ``MAX_TABLE_CATEGORIES`` declared categories."""
    return [c for c in categorical_columns(loaded)
            if len(declared_categories(loaded, c)[0]) <= MAX_TABLE_CATEGORIES]


def declared_categories(loaded: LoadedDataset, column: str) -> tuple[tuple[str, ...], bool]:
    """The categories of ``column`` and whether they were read off the data.

    Built-in columns have a public category list (every category keeps its cell, zeros
    included). An upload has none: its categories are the values found in the file, which
    leaks which values exist; the page says so.
    """
    domain = loaded.domains.get(column)
    if domain is not None and domain.kind == "categorical" and domain.categories:
        return tuple(domain.categories), False
    return column_facts.data_categories(loaded.relation, column), True


def default_axes(loaded: LoadedDataset, columns: list[str]) -> tuple[str, str] | None:
    """Sensible (row, column) for the crosstab, or None when fewer than two columns qualify.

    Built-in datasets have a preferred pair; otherwise the first two columns with at most 30
    categories (then any two), in file order.
    """
    preferred = PREFERRED_AXES.get(loaded.name)
    if preferred and all(c in columns for c in preferred):
        return preferred
    if len(columns) < 2:
        return None
    small = [c for c in columns if len(declared_categories(loaded, c)[0]) <= 30]
    pick = small if len(small) >= 2 else columns
    return pick[0], pick[1]


def true_table(frame: pd.DataFrame, row: str, column: str, *,
               row_categories: tuple[str, ...], column_categories: tuple[str, ...],
               contribution: Contribution | None = None) -> queries.QueryAnswer:
    """The crosstab over every declared category pair (add/remove one row: L1 = L2 = 1;
    under ``contribution`` the person-level sensitivities, after truncation)."""
    return true_answers.crosstab(frame, row, column, row_categories=list(row_categories),
                                 column_categories=list(column_categories),
                                 contribution=contribution)


# --------------------------------------------------------------------------------------------
# The budget


def split_budget(choice: PrivacyChoice, total_share: float) -> tuple[PrivacyChoice,
                                                                      PrivacyChoice]:
    """(the table's choice, the separate total's choice): the total gets ``total_share``.

    Epsilon, delta and rho are each split, so by sequential composition the two releases
    together cost exactly the chosen budget.
    """
    if not 0 < total_share < 1:
        raise ValueError(f"total_share must lie strictly between 0 and 1, got {total_share}")
    parts: dict[str, tuple[float | None, float | None]] = {}
    for name in ("epsilon", "delta", "rho"):
        value = getattr(choice, name)
        parts[name] = (None, None) if value is None else measures.split_budget(value, total_share)
    total = replace(choice, **{k: v[0] for k, v in parts.items()})
    table = replace(choice, **{k: v[1] for k, v in parts.items()})
    return table, total


# --------------------------------------------------------------------------------------------
# Simulation


@dataclass(frozen=True)
class TotalError:
    """Mean and quantiles of the total L1 error over the simulated releases."""

    mean: float
    quantiles: dict[float, float]


@dataclass(frozen=True)
class TableRelease:
    """What the page shows about a table release: one example and the error distribution.

    ``example_*`` is the first simulated release. ``histogram_*`` hold the share of releases
    whose total L1 error falls in each bin of ``histogram_edges`` (same bins before and after
    post-processing). ``steps`` compares the post-processing pipelines of ``STEPS`` on the same
    noise (the first ``compare_trials`` releases): mean total L1 error, and the mean (bias) and
    root-mean-square error of the table's total. ``trials`` releases were simulated; fewer
    than ``requested_trials`` when the work cap ``MAX_SIMULATED_CELLS`` stopped a big table.
    """

    row_labels: tuple[str, ...]
    column_labels: tuple[str, ...]
    true: NDArray[np.float64]
    example_noisy: NDArray[np.float64]
    example_published: NDArray[np.float64]
    example_total: float | None
    #: total L1 error and relative L1 error (%) of the example, before/after post-processing
    example_errors: dict[str, float]
    histogram_edges: NDArray[np.float64]
    histogram_before: NDArray[np.float64]
    histogram_after: NDArray[np.float64]
    before: TotalError
    after: TotalError
    steps: pd.DataFrame
    trials: int
    compare_trials: int
    requested_trials: int
    privacy: str
    noise: str
    missing_rows: int = 0
    #: the privacy unit's truncation (None: one row = one person) and the table's
    #: sensitivities under it
    contribution: Contribution | None = None
    l1_sensitivity: float = 1.0
    l2_sensitivity: float = 1.0
    #: mixed into the seed's stream to tell this dataset and table apart (``noise_stream``)
    stream: int = 0
    #: (lower, upper) at 1 − ``INTERVAL_ALPHA`` for each true cell behind ``example_noisy``
    #: (before post-processing), per cell (key False) and simultaneous (True):
    #: :func:`noisy_cell_intervals`
    example_intervals: dict[bool, tuple[NDArray[np.float64], NDArray[np.float64]]] | None = None

    def quantile_table(self) -> pd.DataFrame:
        """Mean and quantiles of the total L1 error, before and after post-processing."""
        rows = {"Noisy (no post-processing)": self.before, "Published": self.after}
        return pd.DataFrame(
            [[s.mean, *s.quantiles.values()] for s in rows.values()], index=list(rows),
            columns=["mean", *(f"{100 * q:g}% quantile" for q in QUANTILES)])

    def labelled(self, values: ArrayLike, row: str, column: str) -> pd.DataFrame:
        """A table of this release's shape as a DataFrame with its category labels."""
        return pd.DataFrame(np.asarray(values), index=pd.Index(self.row_labels, name=row),
                            columns=pd.Index(self.column_labels, name=column))


def _summary(errors: NDArray[np.float64]) -> TotalError:
    q = np.quantile(errors, QUANTILES)
    return TotalError(float(errors.mean()), {p: float(v) for p, v in zip(QUANTILES, q,
                                                                           strict=True)})


def shared_histogram(*samples: NDArray[np.float64], bins: int = _HISTOGRAM_BINS
                     ) -> tuple[NDArray[np.float64], list[NDArray[np.float64]]]:
    """Common bin edges for several samples and each sample's share of values per bin.

    When any sample holds whole numbers only, the bins have whole-number width and are centred
    on the integers, so no bin holds more possible values than its neighbours (which would draw
    a comb instead of a histogram).
    """
    lo = float(min(s.min() for s in samples))
    hi = float(max(s.max() for s in samples))
    if any(np.array_equal(s, np.rint(s)) for s in samples):
        lo, hi = math.floor(lo), math.ceil(hi)
        width = max(1, math.ceil((hi - lo + 1) / bins))
        edges = np.arange(lo - 0.5, hi + 0.5 + width, width, dtype=np.float64)
    else:
        if hi <= lo:
            lo, hi = lo - 0.5, hi + 0.5
        edges = np.linspace(lo, hi, bins + 1)
    shares = [np.histogram(s, bins=edges)[0] / s.size for s in samples]
    return edges, shares


def simulated_trials(trials: int, cells: int) -> int:
    """How many releases to simulate: ``trials``, capped so trials × cells <= the work cap.

    At least 1,000 releases are always simulated (enough for the quantiles shown).
    """
    return int(min(trials, max(1_000, MAX_SIMULATED_CELLS // max(cells, 1))))


def step_trials(trials: int, cells: int) -> int:
    """How many of the releases the comparison of post-processing steps uses."""
    return int(min(trials, max(1_000, MAX_STEP_CELLS // max(cells, 1))))


def _post_process(noisy: NDArray[np.float64], noisy_total: NDArray[np.float64], *, clip: bool,
                  round: bool, rescale: bool) -> NDArray[np.float64]:
    return postprocess.publish(noisy, clip=clip or rescale, round=round,
                               total=noisy_total if rescale else None)


def simulate_release(true: ArrayLike, *, table_mechanism, total_mechanism=None,
                     clip: bool, round: bool, rescale: bool, trials: int,
                     rng: np.random.Generator, compare_trials: int | None = None) -> dict:
    """Simulate ``trials`` releases of a table and keep their errors.

    Each release adds the table mechanism's noise to every cell. When ``rescale``, the noisy
    total is the sum of the noisy cells (``total_mechanism`` None: post-processing, free) or a
    separate noisy count of all rows drawn from ``total_mechanism`` (which then spends its own
    budget). Post-processing follows :func:`dpcore.postprocess.publish` (clip, rescale, round;
    rescaling always clips first). Trials run in chunks from ``trial_chunks``, so no noise block
    exceeds ``MAX_BLOCK_ELEMENTS``; only per-trial errors are kept.

    The pipelines of ``STEPS`` are compared on the first ``compare_trials`` releases (all of
    them by default), on the very same noise.

    Returns
    -------
    dict
        ``l1_before`` and ``l1_after`` (per-trial total L1 error, shape ``(trials,)``),
        ``steps`` (label → (mean total L1 error, mean and root-mean-square error of the
        table's total)),
        ``compare_trials``, and the first release: ``example_noisy``, ``example_published``,
        ``example_total`` (the noisy total it was rescaled to, or None).
    """
    rng = check_rng(rng)
    trials = check_trials(trials)
    compare = trials if compare_trials is None else min(check_trials(compare_trials), trials)
    truth = np.asarray(true, dtype=np.float64)
    true_total = float(truth.sum())
    l1_before, l1_after = np.empty(trials), np.empty(trials)
    sums = {label: np.zeros(3) for label, *_ in STEPS}
    example: dict = {}
    start = 0
    for n in trial_chunks(trials, truth.size):
        noisy = np.asarray(table_mechanism.sample(truth, rng=rng, trials=n), dtype=np.float64)
        if total_mechanism is None:
            noisy_total = noisy.sum(axis=(1, 2))
        else:
            noisy_total = np.asarray(total_mechanism.sample(true_total, rng=rng, trials=n),
                                     dtype=np.float64)
        published = _post_process(noisy, noisy_total, clip=clip, round=round, rescale=rescale)
        l1_before[start:start + n] = postprocess.table_errors(truth, noisy)["l1_error"]
        l1_after[start:start + n] = postprocess.table_errors(truth, published)["l1_error"]
        if not example:
            example = {"example_noisy": noisy[0], "example_published": published[0],
                       "example_total": float(noisy_total[0]) if rescale else None}
        k = min(n, compare - start)
        for label, step_clip, step_round, step_rescale in STEPS if k > 0 else ():
            released = _post_process(noisy[:k], noisy_total[:k], clip=step_clip,
                                     round=step_round, rescale=step_rescale)
            errors = postprocess.table_errors(truth, released)["l1_error"]
            total_errors = released.sum(axis=(1, 2)) - true_total
            sums[label] += (errors.sum(), total_errors.sum(), np.square(total_errors).sum())
        start += n
    steps = {label: (s[0] / compare, s[1] / compare, math.sqrt(s[2] / compare))
             for label, s in sums.items()}
    return {"l1_before": l1_before, "l1_after": l1_after, "steps": steps,
            "compare_trials": compare, **example}


def release_summary(answer: queries.QueryAnswer, simulated: dict, *, privacy: str,
                    noise: str, requested_trials: int) -> TableRelease:
    """Shrink a simulation to what the page shows (histograms and quantiles, one example)."""
    true = answer.true_value
    before, after = simulated["l1_before"], simulated["l1_after"]
    errors = {}
    for when, table in (("before", simulated["example_noisy"]),
                        ("after", simulated["example_published"])):
        found = postprocess.table_errors(true, table)
        errors[f"l1_{when}"] = float(found["l1_error"])
        errors[f"relative_{when}"] = float(found["relative_l1_error_percent"])
    edges, (hist_before, hist_after) = shared_histogram(before, after)
    steps = pd.DataFrame(
        [(label, *simulated["steps"][label]) for label, *_ in STEPS],
        columns=["Post-processing", "Mean total L1 error", "Mean error of the table total",
                 "RMS error of the table total"],
    )
    return TableRelease(
        row_labels=answer.labels, column_labels=answer.column_labels,
        true=np.array(true, dtype=np.float64),
        example_noisy=simulated["example_noisy"],
        example_published=simulated["example_published"],
        example_total=simulated["example_total"], example_errors=errors,
        histogram_edges=edges, histogram_before=hist_before, histogram_after=hist_after,
        before=_summary(before), after=_summary(after), steps=steps, trials=before.size,
        compare_trials=simulated["compare_trials"], requested_trials=requested_trials,
        privacy=privacy, noise=noise, missing_rows=answer.missing_rows,
    )


def cell_errors(true: ArrayLike, published: ArrayLike) -> tuple[NDArray[np.float64],
                                                                   NDArray[np.float64]]:
    """Per-cell absolute error and relative error in % (NaN where the true count is 0)."""
    truth = np.asarray(true, dtype=np.float64)
    absolute = np.abs(np.asarray(published, dtype=np.float64) - truth)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(truth > 0, 100.0 * absolute / truth, np.nan)
    return absolute, relative


@dataclass(frozen=True)
class TableView:
    """One tab of the heatmap: values, what they are, colour range and a caption."""

    values: NDArray[np.float64]
    value_name: str
    zmin: float | None
    zmax: float | None
    caption: str

    @property
    def is_error(self) -> bool:
        return "error" in self.value_name


def table_views(release: TableRelease) -> dict[str, TableView]:
    """The example release as five views; the three count views share one colour range."""
    absolute, relative = cell_errors(release.true, release.example_published)
    counts = (release.true, release.example_noisy, release.example_published)
    lo = min(0.0, *(float(t.min()) for t in counts))
    hi = max(1.0, *(float(t.max()) for t in counts))
    return {
        "True": TableView(release.true, "true count", lo, hi,
                          "The exact counts: never published."),
        "Noisy": TableView(release.example_noisy, "noisy count", lo, hi,
                           "One release: the true counts plus noise, before any "
                           "post-processing."),
        "Published": TableView(release.example_published, "published count", lo, hi,
                               "The same release after the post-processing chosen above."),
        "Absolute error": TableView(absolute, "|published − true| (people)", None, None,
                                    "How far each published cell is from the truth, in "
                                    "people."),
        "Relative error": TableView(relative, "relative error (%)", None, None,
                                    "The absolute error as a percentage of the true count "
                                    "(blank where the true count is 0)."),
    }


#: What each post-processing step does, under the comparison of the steps.
STEPS_EXPLAINED = (
    "- **Clip negatives to 0**: a true count is never negative, so clipping only moves a cell "
    "closer to the truth and lowers the L1 error, but it pushes small cells and the table's "
    "total upwards (bias).\n"
    "- **Round**: moves each cell by at most ½. Geometric noise is already whole, so rounding "
    "alone changes nothing; it matters after rescaling or with Laplace/Gaussian noise.\n"
    "- **Rescale to a noisy total**: keeps the proportions of the clipped cells and makes them "
    "sum to a noisy total, removing the upward drift of the total that clipping causes. The "
    "sum of the noisy cells is computed from the release itself (post-processing: free). A "
    "separate noisy count spends part of the budget, so every cell gets more noise and the "
    "L1 error grows; what it buys is a more accurate total in big tables, where the sum of "
    "many noisy cells is itself noisy (K cells: K times the variance of one)."
)


def sensitivity_text(release: TableRelease) -> str:
    """The table's sensitivities and the neighbours they are for (markdown-safe)."""
    bound = release.contribution
    if bound is None:
        return ("L1 = L2 = 1 under add/remove one row (one person is in exactly one cell)")
    groups = ("" if bound.max_groups is None else
              f" in each of at most {bound.max_groups:,} cells")
    return (f"L1 = {release.l1_sensitivity:.4g}, L2 = {release.l2_sensitivity:.4g} under "
            f"add/remove one person (all rows with the same {plain(bound.person)}; at most "
            f"{bound.max_rows:,} rows per person{groups})")


def table_built(row: str, column: str, row_categories: tuple[str, ...],
                column_categories: tuple[str, ...], choice: PrivacyChoice,
                contribution: Contribution | None) -> Built:
    """The page's crosstab built as a release builds it: ``plan.build`` of the plan's query
    (as Add to plan enters it) under the page's privacy unit. Noisy tables and Choose epsilon
    both build it here. Raises ValueError (the plan's reason) when it cannot be built."""
    query = model.PlanQuery("q", "table", model.Crosstab(
        row, column, model.Categories(_category_values(row_categories)),
        model.Categories(_category_values(column_categories))), _noise(choice), "tables")
    try:
        query.check("query")
        return build(query, plan_unit(contribution))
    except model.PlanError as exc:
        raise ValueError(exc.reason) from None


def plan_table(row: str, column: str, row_categories: tuple[str, ...],
               column_categories: tuple[str, ...], choice: PrivacyChoice,
               contribution: Contribution | None) -> AdditiveMechanism:
    """The table's mechanism as a release builds it (:func:`table_built`'s one part)."""
    return table_built(row, column, row_categories, column_categories, choice,
                       contribution).parts[0].mechanism


def build_mechanisms(choice: PrivacyChoice, *, rescale: bool, total_source: str,
                     total_share: float, l1_sensitivity: float = 1.0,
                     l2_sensitivity: float = 1.0,
                     make_table: Callable[[PrivacyChoice], AdditiveMechanism] | None = None
                     ) -> tuple[object, object | None, str, str]:
    """(table mechanism, total mechanism or None, privacy spent, noise description).

    One row = one person: a crosstab has L1 = L2 sensitivity 1 (adding or removing one row
    changes one cell by 1), and so has the count of all rows. Under person-level bounds the
    table's sensitivities are given; the total then changes by at most the table's L1 (every
    cell's change adds up in it), which is both its L1 and L2. ``make_table`` builds the
    table's mechanism for a choice (the page: ``plan.build``'s part of its crosstab, what a
    release draws); by default, the choice's mechanism at the given sensitivities.
    """
    separate = rescale and total_source == "separate"
    name = mechanism_name(choice.mechanism)
    if make_table is None:
        def make_table(c: PrivacyChoice) -> AdditiveMechanism:
            return c.build(l1_sensitivity=l1_sensitivity, l2_sensitivity=l2_sensitivity)
    if not separate:
        table = make_table(choice)
        return (table, None, table.privacy.describe(),
                f"{name} noise of scale {table.scale:.4g} on every cell")
    table_choice, total_choice = split_budget(choice, total_share)
    table = make_table(table_choice)
    total = total_choice.build(l1_sensitivity=l1_sensitivity, l2_sensitivity=l1_sensitivity)
    spent = measures.compose(table.privacy, total.privacy)
    privacy = (f"{spent.describe()} in all: the table {table.privacy.describe()}, the noisy "
               f"total {total.privacy.describe()} (sequential composition)")
    noise = (f"{name} noise of scale {table.scale:.4g} on every cell, scale "
             f"{total.scale:.4g} on the total")
    return table, total, privacy, noise


@st.cache_data(show_spinner=False, max_entries=64)
def table_release(_frame: pd.DataFrame, dataset_key: str, row: str, column: str,
                  row_categories: tuple[str, ...], column_categories: tuple[str, ...],
                  choice: PrivacyChoice, clip: bool, round: bool, rescale: bool,
                  total_source: str, total_share: float, trials: int,
                  seed: int, contribution: Contribution | None = None) -> TableRelease:
    """Cached: the true table, one example release and the error summaries of ``trials``."""
    answer = true_table(_frame, row, column, row_categories=row_categories,
                        column_categories=column_categories, contribution=contribution)
    l1, l2 = answer.l1_sensitivity, answer.l2_sensitivity
    table, total, privacy, noise = build_mechanisms(
        choice, rescale=rescale, total_source=total_source, total_share=total_share,
        l1_sensitivity=l1, l2_sensitivity=l2, make_table=lambda c: plan_table(
            row, column, row_categories, column_categories, c, contribution))
    # The same seed draws other noise for another dataset or table (exports.noise_stream).
    stream = noise_stream(dataset_key, _frame, "tables", row, column)
    rng = np.random.default_rng([seed, _RNG_OFFSET, stream])
    cells = answer.true_value.size
    simulated = simulate_release(answer.true_value, table_mechanism=table, total_mechanism=total,
                                 clip=clip, round=round, rescale=rescale,
                                 trials=simulated_trials(trials, cells), rng=rng,
                                 compare_trials=step_trials(trials, cells))
    # the intervals of the table's part as built (its budget share when a total is separate)
    table_choice = (split_budget(choice, total_share)[0]
                    if rescale and total_source == "separate" else choice)
    built = table_built(row, column, row_categories, column_categories, table_choice,
                        contribution)
    intervals = {both: noisy_cell_intervals(built, simulated["example_noisy"],
                                            simultaneous=both) for both in (False, True)}
    return replace(release_summary(answer, simulated, privacy=privacy, noise=noise,
                                   requested_trials=trials), stream=stream,
                   contribution=contribution, l1_sensitivity=l1, l2_sensitivity=l2,
                   example_intervals=intervals)


# --------------------------------------------------------------------------------------------
# Intervals for the true counts (issue 22)

#: The tables page's intervals: 95 %.
INTERVAL_ALPHA = DEFAULT_ALPHA
INTERVAL_LEVEL = f"{1 - INTERVAL_ALPHA:.0%}"


def noisy_cell_intervals(built: Built, noisy: ArrayLike, *, simultaneous: bool,
                         alpha: float = INTERVAL_ALPHA
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lower, upper) at 1 − ``alpha`` for each true cell behind a noisy table (the
    mechanism's output, before post-processing), from the noise's law alone: per cell by the
    crosstab kind's own intervals on its built part (what a release gives), or for all cells
    at once by ``dpcore.intervals.table_interval`` on the same part (Bonferroni: each cell at
    alpha / cells). ``noisy``: one table, or many releases of it (leading axes)."""
    values = np.asarray(noisy, dtype=np.float64)
    part = built.parts[0]
    if simultaneous:   # the table's cells (``noisy`` may hold many releases of it)
        return table_interval(part.mechanism, values, alpha, simultaneous=True,
                              cells=part.size)
    found = kind_intervals(built, values, alpha)
    if found is None:   # pragma: no cover — a crosstab's kind gives per-cell intervals
        raise ValueError("the table's query gives no intervals")
    return found


def published_intervals(release: TableRelease, *, simultaneous: bool, clip: bool, round: bool,
                        rescale: bool) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The example's intervals after the page's post-processing: clipping at 0 and rounding
    move both ends as they move a cell (``monotone_interval``: a true count is whole and
    non-negative, so it stays inside). Rescaling to a noisy total does not move them: each
    stays the interval of its noisy cell before rescaling, clipped at 0."""
    low, high = release.example_intervals[simultaneous]

    def post(ends: NDArray[np.float64]) -> NDArray[np.float64]:
        ends = postprocess.clip_negative(ends) if clip or rescale else ends
        return postprocess.round_counts(ends) if round else ends

    return monotone_interval(low, high, post)


def interval_frame(release: TableRelease, row: str, column: str, *, simultaneous: bool,
                   clip: bool, round: bool, rescale: bool) -> pd.DataFrame:
    """One line per cell: its labels, the noisy and the published count, and the interval
    for the true count (:func:`published_intervals`)."""
    low, high = published_intervals(release, simultaneous=simultaneous, clip=clip,
                                    round=round, rescale=rescale)
    ends = [f"Lower {INTERVAL_LEVEL}", f"Upper {INTERVAL_LEVEL}"]
    row_header = _header(str(row), [NOISY_HEADER, PUBLISHED_HEADER, *ends])
    column_header = _header(str(column), [NOISY_HEADER, PUBLISHED_HEADER, *ends, row_header])
    frame = table_values(release, row, column)
    frame.columns = [row_header, column_header, NOISY_HEADER, PUBLISHED_HEADER]
    frame[ends[0]], frame[ends[1]] = low.reshape(-1), high.reshape(-1)
    return frame


def interval_caption(release: TableRelease, *, simultaneous: bool, rescale: bool) -> str:
    """What the intervals are and why they hold after post-processing (plain words)."""
    level = INTERVAL_LEVEL
    cells = release.true.size
    how = (f"in {level} of releases all {cells:,} intervals contain their true counts at "
           f"once (so each is wider: computed at {INTERVAL_ALPHA:.0%} / {cells:,})"
           if simultaneous else
           f"each interval contains its true count in {level} of releases, on its own (in a "
           "big table a few of them miss)")
    text = (f"Lower and Upper: a {level} interval for each true count, from the noise's law "
            f"and the noisy count alone (never the data): {how}. Clipping at 0 and rounding "
            "move both ends the way they move the count, so the interval still holds.")
    if rescale:
        text += (" Rescaling to the noisy total does not move the intervals: each is the "
                 "interval of its noisy cell before rescaling (the noisy cells are the "
                 "mechanism's output, so this is post-processing), clipped at 0; a rescaled "
                 "cell may lie outside its interval.")
    return text


# --------------------------------------------------------------------------------------------
# Downloads: the example release (noisy and published) and the parameters behind it

NOISY_HEADER = "Noisy count"
PUBLISHED_HEADER = "Published count"


def _header(name: str, taken: list[str]) -> str:
    """``name``, suffixed until it differs from the headers in ``taken`` (a user's column may
    be called "Noisy count")."""
    while name in taken:
        name += " (category)"
    return name


def table_values(release: TableRelease, row: str, column: str) -> pd.DataFrame:
    """The example release in long format: one line per cell with its row and column labels,
    the noisy count and the published (post-processed) count.

    The true counts are left out on purpose: this file is a release, and a file that may be
    published must hold noisy values only.
    """
    row_header = _header(str(row), [NOISY_HEADER, PUBLISHED_HEADER])
    column_header = _header(str(column), [NOISY_HEADER, PUBLISHED_HEADER, row_header])
    rows, columns = len(release.row_labels), len(release.column_labels)
    return pd.DataFrame({
        row_header: np.repeat([str(r) for r in release.row_labels], columns),
        column_header: np.tile([str(c) for c in release.column_labels], rows),
        NOISY_HEADER: np.asarray(release.example_noisy, dtype=np.float64).reshape(-1),
        PUBLISHED_HEADER: np.asarray(release.example_published, dtype=np.float64).reshape(-1),
    })


def _privacy_fields(measure) -> dict:
    return {**{k: float(v) for k, v in asdict(measure).items()}, "guarantee": measure.describe()}


def describe_table(release: TableRelease, row: str, column: str, choice: PrivacyChoice, *,
                   dataset: str, clip: bool, round: bool, rescale: bool, total_source: str,
                   total_share: float, categories_from_data: bool) -> dict:
    """The parameters behind the example release: crosstab, measure, ε/δ/ρ, mechanism,
    sensitivities, noise scale(s) and post-processing. The seed is added by the download."""
    table, total, privacy, _ = build_mechanisms(
        choice, rescale=rescale, total_source=total_source, total_share=total_share,
        l1_sensitivity=release.l1_sensitivity, l2_sensitivity=release.l2_sensitivity,
        make_table=lambda c: plan_table(row, column, tuple(release.row_labels),
                                        tuple(release.column_labels), c,
                                        release.contribution))
    separate = total is not None
    bound = release.contribution
    random_stream = f"numpy.random.default_rng([seed, {_RNG_OFFSET}, {release.stream}])"
    parameters = {
        "page": "Noisy tables", "dataset": dataset, "query": "crosstab (count per cell)",
        "rows": row, "columns": column,
        "row_categories": [str(r) for r in release.row_labels],
        "column_categories": [str(c) for c in release.column_labels],
        "categories_from": ("the data (this reveals which values occur)" if
                            categories_from_data else "the columns' public lists"),
        "rows_not_counted_missing_value": int(release.missing_rows),
        "neighbouring_datasets": neighbours_of(bound),
        "contribution_bounds": None if bound is None else {
            "person": bound.person, "max_rows": bound.max_rows, "max_groups": bound.max_groups,
            "truncation_seed": bound.seed},
        "measure": choice.measure, "epsilon": choice.epsilon, "delta": choice.delta,
        "rho": choice.rho, "mechanism": choice.mechanism,
        "l1_sensitivity": release.l1_sensitivity, "l2_sensitivity": release.l2_sensitivity,
        "noise_scale": float(table.scale),
        "table_privacy": _privacy_fields(table.privacy),
        "privacy_spent": privacy,
        "post_processing": {"clip_negatives": bool(clip or rescale), "round": bool(round),
                            "rescale_to_noisy_total": bool(rescale)},
        "simulated_releases": int(release.trials),
        "simulated_releases_requested": int(release.requested_trials),
        "release": f"the first simulated release, from {random_stream}",
        SIMULATION: simulation_fields(random_stream),
    }
    if rescale:
        parameters["post_processing"] |= {
            "noisy_total_from": total_source,
            "noisy_total": release.example_total,
        }
    if separate:
        parameters["post_processing"] |= {
            "total_budget_share": total_share,
            "total_sensitivity": release.l1_sensitivity,
            "total_noise_scale": float(total.scale),
            "total_privacy": _privacy_fields(total.privacy),
        }
    return parameters


def table_download(release: TableRelease, row: str, column: str, choice: PrivacyChoice,
                   **settings) -> tuple[pd.DataFrame, dict]:
    """(values, parameters) for ``controls.downloads``; ``settings`` as :func:`describe_table`."""
    return (table_values(release, row, column),
            describe_table(release, row, column, choice, **settings))
