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
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.analysis.intervals import (
    RATIO,
    SPREAD,
    has_method,
    kind_intervals,
    mean_intervals,
    method_of,
    variance_intervals,
)
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
    CONFIDENCE_OPTIONS,
    DEFAULT_MAX_CATEGORIES,
    FROM_DATA_BOUNDS,
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
    query_label,
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
    look_at_bars,
    look_at_errors,
    metrics_note,
    metrics_table,
    release_summary,
    release_table,
)
from dashboard.choices import PrivacyChoice, mechanism_name
from dashboard.kinds import adapter_of  # noqa: F401 (the page asks its query's adapter)
from dpcore.intervals import monotone_interval
from plan.kinds import KINDS  # noqa: F401 (the page asks its query's kind)

#: Points at which the closed-form density is drawn.
DENSITY_POINTS = 401


# --------------------------------------------------------------------------------------------
# What the page shows for one mechanism


def draw_release_parts(plan: ReleasePlan, *, seed: int, release: int,
                       stream: int = 0) -> tuple[NDArray[np.float64], ...]:
    """Release number ``release`` of ``seed``, each of its parts' noisy value (one for a
    mechanism; a mean's noisy sum and count), from its own random stream
    (:func:`release_stream`), so every release of a seed can be drawn again."""
    parts = [seed if part == "seed" else part for part in release_stream(release, stream)]
    return plan.sample_parts(None, np.random.default_rng(parts))


def draw_release(plan: ReleasePlan, *, seed: int, release: int,
                 stream: int = 0) -> NDArray[np.float64]:
    """Release number ``release`` of ``seed``: one noisy answer (:func:`draw_release_parts`
    post-processed)."""
    return np.asarray(plan.released(draw_release_parts(plan, seed=seed, release=release,
                                                       stream=stream)), dtype=np.float64)


@dataclass(frozen=True)
class ShownRelease:
    """One release the page shows: its value, its intervals per confidence (None where the
    kind gives none) and its parts' noisy values when it is made of several."""

    release: NDArray[np.float64]
    intervals: dict[float, tuple[NDArray[np.float64], NDArray[np.float64]]] | None
    parts: tuple[tuple[str, float], ...]


def shown_release(plan: ReleasePlan, *, seed: int, release: int, stream: int = 0
                  ) -> ShownRelease:
    """Release number ``release`` with its interval at each confidence the page offers,
    computed as a release computes it (:func:`release_interval`)."""
    noisy = draw_release_parts(plan, seed=seed, release=release, stream=stream)
    value = np.asarray(plan.released(noisy), dtype=np.float64)
    intervals = None
    if method_of(plan.built):
        found = {c: release_interval(plan, noisy, 1 - c) for c in CONFIDENCE_OPTIONS}
        intervals = None if None in found.values() else found
    parts = () if plan.closed_form else tuple(
        (name, float(v)) for name, v in zip(plan.part_names, noisy, strict=True))
    return ShownRelease(value, intervals, parts)


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
    shown = shown_release(plan, seed=seed, release=1, stream=stream)
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
    return MechanismRun(
        name=mechanism_name(plan.choice.mechanism), label=plan.choice.label(),
        query=plan.spec.query, true_value=plan.true_value, labels=plan.labels,
        release=shown.release, summary=summary, alpha=alpha,
        density_x=density_x, density_y=density_y, integer_errors=plan.integer_errors,
        analytic_bias=plan.analytic_bias(), analytic_rmse=plan.analytic_rmse(),
        sensitivity=sensitivity, scale=scale, explanation=explanation, clamped_to=clamped,
        intervals=shown.intervals, interval_method=method_of(plan.built),
        release_parts=shown.parts,
    )


def release_interval(plan: ReleasePlan, noisy_parts: tuple[NDArray[np.float64], ...],
                     alpha: float) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """(lower, upper) at 1 − ``alpha`` for the true value(s) behind the release drawn as
    ``noisy_parts``, per cell, as a release computes it: by the kind's own intervals on the
    built part, for a mean by ``mean_interval`` on its noisy sum and count, for a variance by
    ``variance_interval`` on its three noisy parts (the mechanisms' own output:
    post-processing); None where the kind gives none.

    A count's ends are rounded as the page rounds the count (a monotone map: a whole true
    count stays inside)."""
    built = plan.built
    if has_method(method_of(built), RATIO):
        sum_part, count_part = built.parts
        bounds = built.query.query.bounds
        return mean_intervals(sum_part, noisy_parts[0], count_part, noisy_parts[1],
                              lower=bounds.lower, upper=bounds.upper, alpha=alpha)
    if has_method(method_of(built), SPREAD):
        bounds = built.query.query.bounds
        return variance_intervals(built.parts, noisy_parts, lower=bounds.lower,
                                  upper=bounds.upper, alpha=alpha)
    if not plan.closed_form:   # a kind made of parts whose interval the page does not know
        return None
    found = kind_intervals(built, noisy_parts[0], alpha)
    if found is None or not KINDS[plan.spec.query].counts_rows:
        return found
    return monotone_interval(*found, np.round)


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
             release: int) -> ShownRelease:
    plan = make_plan(_frame, spec, choice, answer_range=answer_range, sum_share=sum_share)
    return shown_release(plan, seed=seed, release=release,
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
    shown = _release(frame, dataset_key, spec, choice, release=release, **common)
    return replace(run, release=shown.release, intervals=shown.intervals,
                   release_parts=shown.parts)
