"""Noisy statistics: one count, sum, mean, variance or histogram released with noise, many
times over.

This module runs the simulation of one release (``run_mechanism``) and holds the cached
wrappers the page calls (``query_facts``, ``simulate_releases``); the rest is split by job and
re-exported here, so the page imports one module:

- ``stats_query``: the queries offered, default columns, bounds and answer ranges;
- ``stats_plan``: the release plan (true answer, mechanism or parts) and random streams;
- ``stats_parts``: a mean's or a variance's parts, built by ``plan.build`` as a release does;
- ``stats_errors``: simulated errors binned, with their metrics;
- ``stats_wording``: the sentences and tables on the page;
- ``stats_downloads``: the noisy release and its parameters file.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.analysis.stats_downloads import (  # noqa: F401 (the page's one import)
    describe_release,
    release_parameters,
    release_values,
)
from dashboard.analysis.stats_errors import (  # noqa: F401
    ERROR_BINS,
    ErrorSummary,
    MechanismRun,
    error_bin_edges,
    summarise_errors,
)
from dashboard.analysis.stats_plan import (  # noqa: F401
    _RNG_OFFSET,
    MAX_RELEASE,
    RANGE_BETA,
    ReleasePlan,
    answer_query,
    make_plan,
    query_stream,
    release_stream,
)
from dashboard.analysis.stats_query import (  # noqa: F401
    BOUNDED_QUERIES,
    CONFIDENCE_OPTIONS,
    DEFAULT_MAX_CATEGORIES,
    FROM_DATA_BOUNDS,
    QUERIES,
    SUM_SHARE_OPTIONS,
    TYPED,
    BoundsSuggestion,
    QuerySpec,
    allowed_mechanisms,
    answer_unit,
    available_queries,
    columns_for,
    comparable_mechanisms,
    contribution_for,
    declaration_origins,
    declared_categories,
    default_answer_range,
    default_bounds,
    default_column,
    neighbours_of,
    page_spec,
    reads_column,
    unit_note,
    uses_answer_range,
)
from dashboard.analysis.stats_wording import (  # noqa: F401
    CATEGORY_ERRORS_NOTE,
    COMPARE_NOTE,
    NEIGHBOURS,
    SENSITIVITY_NORMS,
    accuracy_sentence,
    answer_range_note,
    bars_note,
    categories_note,
    describe_plan,
    error_chart_note,
    fmt_value,
    interval_sentence,
    metrics_note,
    metrics_table,
    release_summary,
    release_table,
)
from dashboard.choices import PrivacyChoice, mechanism_name
from plan.kinds import KINDS  # noqa: F401 (the page asks its query's kind)

#: Points at which the closed-form density is drawn.
DENSITY_POINTS = 401


# --------------------------------------------------------------------------------------------
# What the page shows for one mechanism


def draw_release(plan: ReleasePlan, *, seed: int, release: int,
                 stream: int = 0) -> NDArray[np.float64]:
    """Release number ``release`` of ``seed``: one noisy answer, from its own random stream
    (:func:`release_stream`), so every release of a seed can be drawn again."""
    parts = [seed if part == "seed" else part for part in release_stream(release, stream)]
    return np.asarray(plan.sample(None, np.random.default_rng(parts)), dtype=np.float64)


def run_mechanism(plan: ReleasePlan, *, trials: int, seed: int, stream: int = 0) -> MechanismRun:
    """Simulate ``trials`` releases of ``plan`` and one example release, from ``seed``.

    The simulations use the stream ``[seed, 2, 0, stream]`` and the example release
    ``[seed, 2, 1, stream]``, ``stream`` telling the dataset and query apart
    (:func:`release_stream`): two mechanisms run on one query with the same seed share their
    random numbers where they can (common random numbers make the comparison sharper).
    """
    low, high = plan.error_span()
    edges = error_bin_edges(low, high, integer=plan.integer_errors)
    alpha = None
    if plan.closed_form:
        alpha = {c: plan.accuracy(1 - c) for c in CONFIDENCE_OPTIONS}
    rng = np.random.default_rng([seed, _RNG_OFFSET, 0, stream])
    truth = plan.true_value.reshape(1, -1)
    clamped = plan.clamped_to
    # the errors of a clamped release, computed as draw_errors computes them (bound − truth)
    clamped_errors = (None if clamped is None else
                      tuple(float((np.array([[bound]]) - truth)[0, 0]) for bound in clamped))

    def draw_errors(n: int) -> NDArray:
        return plan.sample(n, rng).reshape(n, -1) - truth

    summary = summarise_errors(draw_errors, trials=trials, cells=plan.cells, edges=edges,
                               alphas=alpha, clamped_errors=clamped_errors)
    release = draw_release(plan, seed=seed, release=1, stream=stream)
    density_x = density_y = None
    if plan.closed_form:
        if plan.integer_errors:
            density_x = np.arange(math.ceil(edges[0]), math.floor(edges[-1]) + 1, dtype=float)
            stride = max(1, density_x.size // DENSITY_POINTS)
            density_x = density_x[::stride]
        else:
            density_x = np.linspace(edges[0], edges[-1], DENSITY_POINTS)
        density_y = plan.error_density(density_x)
    sensitivity, scale, explanation = describe_plan(plan)
    intervals = None
    if plan.closed_form:
        intervals = {c: release_interval(plan.release, release, 1 - c,
                                         whole=KINDS[plan.spec.query].counts_rows)
                     for c in CONFIDENCE_OPTIONS}
    return MechanismRun(
        name=mechanism_name(plan.choice.mechanism), label=plan.choice.label(),
        query=plan.spec.query, true_value=plan.true_value, labels=plan.labels,
        release=np.asarray(release, dtype=np.float64), summary=summary, alpha=alpha,
        density_x=density_x, density_y=density_y, integer_errors=plan.integer_errors,
        analytic_bias=plan.analytic_bias(), analytic_rmse=plan.analytic_rmse(),
        sensitivity=sensitivity, scale=scale, explanation=explanation, clamped_to=clamped,
        intervals=intervals,
    )


def release_interval(mechanism, release: NDArray, alpha: float, *, whole: bool
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """(lower, upper) at 1 − ``alpha`` for the true value(s) behind ``release``, per cell; a
    count's ends rounded as the page rounds the count (a monotone map: a whole true count
    stays inside)."""
    from dpcore.intervals import monotone_interval, noise_interval

    low, high = noise_interval(mechanism, release, alpha)
    return monotone_interval(low, high, np.round) if whole else (low, high)


# --------------------------------------------------------------------------------------------
# Cached wrappers (what the page calls)


@st.cache_data(show_spinner=False, max_entries=64)
def query_facts(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec) -> tuple[bool, int]:
    """(integer_valued, rows) of the query; raises ValueError/TypeError for bad bounds."""
    answered = answer_query(_frame, spec)
    answer = answered[0] if isinstance(answered, tuple) else answered
    return bool(answer.integer_valued), len(_frame)


@st.cache_data(show_spinner=False, max_entries=32)
def _simulate(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec, choice: PrivacyChoice, *,
              answer_range: tuple[float, float] | None, sum_share: float, trials: int,
              seed: int) -> MechanismRun:
    plan = make_plan(_frame, spec, choice, answer_range=answer_range, sum_share=sum_share)
    return run_mechanism(plan, trials=trials, seed=seed,
                         stream=query_stream(dataset_key, _frame, spec))



@st.cache_data(show_spinner=False, max_entries=32)
def _release(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec, choice: PrivacyChoice, *,
             answer_range: tuple[float, float] | None, sum_share: float, seed: int,
             release: int) -> NDArray[np.float64]:
    plan = make_plan(_frame, spec, choice, answer_range=answer_range, sum_share=sum_share)
    return draw_release(plan, seed=seed, release=release,
                        stream=query_stream(dataset_key, _frame, spec))


def simulate_releases(frame: pd.DataFrame, dataset_key: str, spec: QuerySpec,
                      choice: PrivacyChoice, *, answer_range: tuple[float, float] | None,
                      sum_share: float, trials: int, seed: int, release: int = 1) -> MechanismRun:
    """Plan the release and simulate it (cached by every parameter, the dataset and the seed),
    showing release number ``release`` of the seed: drawing another one leaves the
    simulation as it is."""
    common = {"answer_range": answer_range, "sum_share": sum_share, "seed": seed}
    run = _simulate(frame, dataset_key, spec, choice, trials=trials, **common)
    if release == 1:
        return run
    return replace(run, release=_release(frame, dataset_key, spec, choice, release=release,
                                         **common))
