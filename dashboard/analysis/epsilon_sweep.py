"""Choose epsilon's sweep: a query's error (or a selection's chance of being right) against
ε, the smallest ε meeting a target, and the cached wrappers the page calls.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard import choices
from dashboard.analysis import statistics as stats
from dashboard.analysis import tables
from dashboard.analysis.epsilon_question import DEFAULT_DELTA, ErrorQuery, SelectionQuestion
from dashboard.choices import PrivacyChoice
from dpcore import utility

#: What the curve shows for an error query.
MEASURES = {
    "alpha": "Error bound ±α at the chosen confidence",
    "rmse": "Root mean squared error",
    "mae": "Mean absolute error",
}
CONFIDENCES = (0.8, 0.9, 0.95, 0.99)
#: Epsilons of the exact curves and of the simulated points (0.01 to 10, log-spaced).
GRID = tuple(float(x) for x in np.geomspace(0.01, 10, 41))
SIM_GRID = tuple(float(x) for x in np.geomspace(0.01, 10, 13))
#: Simulated errors per epsilon (pooled over the cells of a histogram or table).
SIM_ERRORS = 20_000
#: Epsilons of the selection curve: counts of thousands are picked right far below 0.01.
SELECTION_GRID = tuple(float(x) for x in np.geomspace(1e-4, 10, 51))
#: Simulated releases per point of a top-k curve (standard error at most 0.5/sqrt(2000) = 1.1%).
TOP_K_TRIALS = 2_000
_RNG_OFFSET = 6  # this page's own random stream


def mechanism_name(kind: str) -> str:
    """'Laplace', 'Geometric', 'Gaussian', 'Bounded Laplace', 'Clamped Laplace'..."""
    return choices.mechanism_name(kind)


def fmt(x: float) -> str:
    return stats.fmt_value(x)


def cells_budget(query: ErrorQuery, epsilon: float, delta: float) -> tuple[float, float]:
    """The (ε, δ) the cells of a table get out of a total budget (ε, δ): all of it, or what
    the separate total leaves (``tables.split_budget``, the Noisy tables page's own split)."""
    if query.total_share is None:
        return epsilon, delta
    table, _ = tables.split_budget(PrivacyChoice("approx", choices.DEFAULT_KIND, epsilon=epsilon,
                                                 delta=delta), query.total_share)
    return table.epsilon, table.delta


def total_for_cells(query: ErrorQuery, cells_epsilon: float, delta: float) -> float:
    """The smallest total ε whose cells' share is at least ``cells_epsilon`` (the inverse of
    :func:`cells_budget`, raised an ulp at a time where rounding fell short)."""
    if query.total_share is None:
        return cells_epsilon
    total = cells_epsilon / (1 - query.total_share)
    while cells_budget(query, total, delta)[0] < cells_epsilon:
        total = math.nextafter(total, math.inf)
    return total


@dataclass(frozen=True)
class QueryNumbers:
    """True answer and sensitivities of an error query (a mean's or a variance's: its parts',
    in ``parts``, as the Noisy statistics page words them)."""

    true_value: NDArray[np.float64]
    l1: float
    l2: float
    integer: bool
    parts: str | None = None


def query_numbers(frame: pd.DataFrame, query: ErrorQuery) -> QueryNumbers:
    """True answer and L1/L2 sensitivity (``plan.build``'s, of the page's query); for a mean
    or a variance, the value its parts estimate (as a release post-processes them) and the
    parts' sensitivities."""
    if query.table is not None:
        row, column, row_cats, col_cats = query.table
        answer = tables.true_table(frame, row, column, row_categories=row_cats,
                                   column_categories=col_cats, contribution=query.contribution)
    else:
        answered = stats.answer_query(frame, query.spec)
        if query.made_of_parts:
            sum_answer = answered[0]
            any_choice = choices.calibrated_from_epsilon(query.mechanisms[0], 1.0, 1e-6)
            plan = stats.make_plan(frame, query.spec, any_choice, sum_share=query.sum_share)
            sensitivity = stats.describe_plan(plan)[0]
            return QueryNumbers(np.asarray(plan.true_value, dtype=np.float64),
                                sum_answer.l1_sensitivity, sum_answer.l2_sensitivity,
                                sum_answer.integer_valued, sensitivity)
        answer = answered
    # the statistic's sensitivity under the unit (any mechanism: the default one always builds)
    sensitivity = query.built(choices.DEFAULT_KIND, 1.0, DEFAULT_DELTA).sensitivity
    return QueryNumbers(np.asarray(answer.true_value, dtype=np.float64), sensitivity.l1,
                        sensitivity.l2, answer.integer_valued)


def release_part(query: ErrorQuery, mechanism: str, delta: float):
    """The one part a release draws for a count, sum, histogram or table (``plan.build`` of
    the page's query, at the cells' share of δ): its sensitivity is the one its noise is
    calibrated to (in the mechanism's norm, whole for whole-number noise on whole numbers)."""
    return query.built(mechanism, *cells_budget(query, 1.0, delta)).parts[0]


def _options(query: ErrorQuery, mechanism: str, delta: float) -> dict:
    """Keyword arguments of the utility sweeps for one mechanism: the sensitivity of the
    part a release draws, at the cells' share of δ."""
    cells_delta = cells_budget(query, 1.0, delta)[1]
    sensitivity = release_part(query, mechanism, delta).sensitivity
    options: dict = {"sensitivity": sensitivity, "l2_sensitivity": sensitivity}
    if choices.needs_delta(mechanism):
        options["delta"] = cells_delta
    if choices.spec(mechanism).needs_range:
        options["lower"], options["upper"] = query.answer_range
    return options


@dataclass(frozen=True)
class MechanismCurves:
    """Exact (``exact``, None for the mean) and simulated error measures over epsilon."""

    kind: str
    exact: dict[str, NDArray[np.float64]] | None
    simulated: dict[str, NDArray[np.float64]]
    true_value: float | None
    cells: int = 1


def mechanism_curves(frame: pd.DataFrame, query: ErrorQuery, mechanism: str, *, beta: float,
                     delta: float, seed: int) -> MechanismCurves:
    """Sweep one mechanism over :data:`GRID` (exact) and :data:`SIM_GRID` (simulated)."""
    numbers = query_numbers(frame, query)
    scalar = None if query.per_cell else float(numbers.true_value)
    rng = np.random.default_rng([seed, _RNG_OFFSET, 0])
    trials = max(200, math.ceil(SIM_ERRORS / numbers.true_value.size))
    if query.made_of_parts:
        def release(eps: float, n: int, gen: np.random.Generator) -> NDArray:
            choice = choices.calibrated_from_epsilon(mechanism, eps, delta)
            plan = stats.make_plan(frame, query.spec, choice, sum_share=query.sum_share)
            return plan.sample(n, gen)

        simulated = utility.monte_carlo_sweep(release, epsilons=SIM_GRID, true_value=scalar,
                                              trials=trials, rng=rng, beta=beta)
        return MechanismCurves(mechanism, None, simulated, scalar, numbers.true_value.size)
    # A table with a separate total: the cells get their share of each total (ε, δ); the
    # curves are drawn against the total.
    grid = [cells_budget(query, e, delta)[0] for e in GRID]
    sim_grid = [cells_budget(query, e, delta)[0] for e in SIM_GRID]
    options = _options(query, mechanism, delta)
    # Per-cell errors of additive noise do not depend on the cell's value: one sweep serves all.
    exact = utility.error_sweep(mechanism, epsilons=grid, beta=beta, true_value=scalar,
                                **options)
    simulated = utility.monte_carlo_error_sweep(
        mechanism, epsilons=sim_grid, true_value=numbers.true_value, trials=trials, rng=rng,
        beta=beta, **options)
    exact = {**exact, "epsilon": np.array(GRID)}
    simulated = {**simulated, "epsilon": np.array(SIM_GRID)}
    return MechanismCurves(mechanism, exact, simulated, scalar, numbers.true_value.size)


def smallest_for(frame: pd.DataFrame, query: ErrorQuery, mechanism: str, *, alpha: float,
                 beta: float, delta: float,
                 curves: MechanismCurves | None = None) -> utility.SmallestEpsilon:
    """The smallest epsilon meeting P(|error| > alpha) <= beta for one mechanism.

    Exact (``utility.smallest_epsilon``) except for a mean or a variance, which have no closed
    form: there
    it is read off the simulated curve by log-log interpolation between the grid points that
    straddle alpha. Raises ValueError when the target cannot be met.
    """
    numbers = query_numbers(frame, query)
    if not query.made_of_parts:
        options = _options(query, mechanism, delta)
        options.pop("l2_sensitivity")   # the part's sensitivity is in its own norm
        bounded = choices.spec(mechanism).needs_range
        truth = float(numbers.true_value) if bounded else None
        found = utility.smallest_epsilon(mechanism, alpha=alpha, beta=beta, true_value=truth,
                                         **options)
        # The cells' ε, raised to the total that leaves the cells that much.
        return found._replace(epsilon=total_for_cells(query, found.epsilon, delta))
    return read_off(curves.simulated["epsilon"], curves.simulated["alpha"], alpha,
                    decreasing=True)


def read_off(epsilons: NDArray, values: NDArray, target: float, *,
             decreasing: bool) -> utility.SmallestEpsilon:
    """The smallest epsilon where a simulated curve reaches ``target`` (an error falling to it,
    or a success rate rising to it), by log-log interpolation between the straddling points."""
    eps = np.asarray(epsilons, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    meets = np.flatnonzero(values <= target if decreasing else values >= target)
    if meets.size == 0:
        raise ValueError(f"no simulated epsilon up to {eps[-1]:g} reaches the target "
                         f"{fmt(target)}")
    i = int(meets[0])
    if i == 0:
        return utility.SmallestEpsilon(float(eps[0]), True)
    x0, x1 = math.log(eps[i - 1]), math.log(eps[i])
    y0, y1, y = (math.log(max(v, 1e-300)) for v in (values[i - 1], values[i], target))
    t = (y - y0) / (y1 - y0) if y1 != y0 else 1.0
    return utility.SmallestEpsilon(float(math.exp(x0 + t * (x1 - x0))), False)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_numbers(_frame: pd.DataFrame, dataset_key: str, query: ErrorQuery) -> QueryNumbers:
    return query_numbers(_frame, query)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_curves(_frame: pd.DataFrame, dataset_key: str, query: ErrorQuery, mechanism: str,
                  beta: float, delta: float, seed: int) -> MechanismCurves:
    return mechanism_curves(_frame, query, mechanism, beta=beta, delta=delta, seed=seed)


def sweep_mechanisms(frame: pd.DataFrame, dataset_key: str, query: ErrorQuery,
                     mechanisms: Sequence[str], *, alpha: float, beta: float, delta: float,
                     seed: int) -> tuple[dict, dict, list[str]]:
    """(curves, smallest ε, problems) for each mechanism: one whose sweep fails is left out,
    with a message saying what to fix (the user's text in it is not escaped)."""
    results, answers, problems = {}, {}, []
    for kind in mechanisms:
        try:
            results[kind] = cached_curves(frame, dataset_key, query, kind, beta, delta, seed)
        except (ValueError, TypeError) as exc:
            problems.append(f"{mechanism_name(kind)}: {exc}")
            continue
        answers[kind] = cached_smallest(frame, dataset_key, query, kind, alpha, beta, delta,
                                        seed)
    return results, answers, problems


@st.cache_data(show_spinner=False, max_entries=256)
def cached_smallest(_frame: pd.DataFrame, dataset_key: str, query: ErrorQuery, mechanism: str,
                    alpha: float, beta: float, delta: float, seed: int
                    ) -> utility.SmallestEpsilon | str:
    """The smallest epsilon, or the reason it does not exist (a message)."""
    curves = None
    if query.made_of_parts:
        curves = cached_curves(_frame, dataset_key, query, mechanism, beta, delta, seed)
    try:
        return smallest_for(_frame, query, mechanism, alpha=alpha, beta=beta, delta=delta,
                            curves=curves)
    except ValueError as exc:
        return str(exc)


def selection_curve(question: SelectionQuestion, target: float, *, seed: int
                    ) -> tuple[dict[str, NDArray], utility.SmallestEpsilon | str]:
    """P(correct) over :data:`SELECTION_GRID` and the smallest epsilon meeting ``target``, of
    the Selection page's mechanism (:meth:`SelectionQuestion.mechanism`: its noise,
    sensitivity, calibration, k and pick), swept over ε by the map that calibrates it.

    k = 1: exact (``utility.selection_sweep`` and ``smallest_epsilon_for_selection``). k > 1:
    P(true top k recovered) simulated, and the smallest epsilon read off that curve.
    """
    part = question.mechanism()
    common = {"noise": part.noise, "sensitivity": part.sensitivity,
              "monotonic": part.monotonic, "negate": part.negate}
    rng = np.random.default_rng([seed, _RNG_OFFSET, 1])
    sweep = utility.selection_sweep(question.scores, epsilons=SELECTION_GRID, k=part.k,
                                    trials=TOP_K_TRIALS, rng=rng, **common)
    try:
        if part.k == 1:
            return sweep, utility.smallest_epsilon_for_selection(question.scores, target=target,
                                                                 **common)
        return sweep, read_off(sweep["epsilon"], sweep["p_correct"], target, decreasing=False)
    except ValueError as exc:
        return sweep, str(exc)


@st.cache_data(show_spinner=False, max_entries=64)
def cached_selection(question: SelectionQuestion, target: float, seed: int
                     ) -> tuple[dict[str, NDArray], utility.SmallestEpsilon | str]:
    return selection_curve(question, target, seed=seed)
