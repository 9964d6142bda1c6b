"""Choose epsilon's downloads: the curves' numbers and the settings behind them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dashboard import choices
from dashboard.analysis import selection_choices as sel
from dashboard.analysis import statistics as stats
from dashboard.analysis.epsilon_question import SOURCES, ErrorQuery, SelectionQuestion
from dashboard.analysis.epsilon_sweep import (
    _RNG_OFFSET,
    GRID,
    MEASURES,
    SELECTION_GRID,
    SIM_ERRORS,
    SIM_GRID,
    TOP_K_TRIALS,
    MechanismCurves,
    QueryNumbers,
)
from dashboard.analysis.epsilon_view import CurveView

NEIGHBOURS = "add/remove one row (one row = one person)"


def curve_values(view: CurveView, *, computed_by: Sequence[str],
                 scales: Sequence[NDArray | None], unit: str, scale_unit: str) -> pd.DataFrame:
    """The chart's numbers, one line per curve and ε, in long format.

    ``computed_by[i]`` says how curve i's line was computed ("closed form" or "simulation");
    its simulated points (and the 5–95% band, where drawn) follow as "simulation" lines.
    ``scales[i]`` is the noise scale at each ε of the line (None: not one number, e.g. the
    mean's two parts). These are simulated and analytic results, not a data release.
    """
    value = view.y_title.replace(", log scale)", ")")
    low = f"5th percentile of simulated |error| ({unit})"
    high = f"95th percentile of simulated |error| ({unit})"
    scale_header = f"Noise scale ({scale_unit})"
    frames = []
    for curve, how, scale in zip(view.curves, computed_by, scales, strict=True):
        epsilon = np.asarray(curve.epsilon, dtype=np.float64)
        nothing = np.full(epsilon.size, np.nan)
        band_on_line = curve.simulated is None and curve.low is not None
        frames.append(pd.DataFrame({
            "Curve": curve.name, "Computed by": how, "epsilon": epsilon,
            value: np.asarray(curve.line, dtype=np.float64),
            low: np.asarray(curve.low, dtype=np.float64) if band_on_line else nothing,
            high: np.asarray(curve.high, dtype=np.float64) if band_on_line else nothing,
            scale_header: nothing if scale is None else np.asarray(scale, dtype=np.float64)}))
        if curve.simulated is not None:
            at = np.asarray(curve.simulated_epsilon if curve.simulated_epsilon is not None
                            else curve.epsilon, dtype=np.float64)
            frames.append(pd.DataFrame({
                "Curve": curve.name, "Computed by": "simulation", "epsilon": at,
                value: np.asarray(curve.simulated, dtype=np.float64),
                low: np.asarray(curve.low, dtype=np.float64),
                high: np.asarray(curve.high, dtype=np.float64),
                scale_header: np.full(at.size, np.nan)}))
    table = pd.concat(frames, ignore_index=True)
    if view.band_label is None:
        table = table.drop(columns=[low, high])
    return table


def error_download(view: CurveView, query: ErrorQuery, results: Mapping[str, MechanismCurves],
                   numbers: QueryNumbers, *, dataset: str, measure: str, relative: bool,
                   beta: float, delta: float, epsilon: float,
                   target: float) -> tuple[pd.DataFrame, dict]:
    """(curve table, parameters) of an error query for ``controls.downloads``."""
    unit = "% of the true value" if relative else query.unit
    table = curve_values(
        view, computed_by=["simulation" if r.exact is None else "closed form"
                           for r in results.values()],
        scales=[None if r.exact is None else r.exact["scale"] for r in results.values()],
        unit=unit, scale_unit=query.unit)
    spec = query.spec
    cells = int(numbers.true_value.size)
    parameters = {
        "page": "Choose epsilon", "dataset": dataset, "query_from": SOURCES[query.source],
        "query": query.kind, "description": query.what,
        "column": spec.column if spec is not None else None,
        "clamping_bounds": (None if spec is None or spec.lower is None
                            else [spec.lower, spec.upper]),
        "table": (None if query.table is None else
                  {"rows": query.table[0], "columns": query.table[1]}),
        "cells": cells, "neighbouring_datasets": stats.neighbours_of(
            query.contribution if spec is None else spec.contribution),
        "l1_sensitivity": numbers.l1, "l2_sensitivity": numbers.l2,
        "mechanisms": list(results),
        "privacy_measure": {k: choices.calibrated_from_epsilon(k, 1.0, delta).measure
                            for k in results},
        "delta": delta if any(map(choices.needs_delta, results)) else None, "rho": None,
        "answer_range": (list(query.answer_range) if query.answer_range is not None and
                         choices.uses_answer_range(list(results)) else None),
        "mean_sum_share": getattr(query.built(choices.DEFAULT_KIND, 1.0, delta).query.query,
                                  "sum_share", None),
        "table_separate_total_share": query.total_share,
        "error_measure": MEASURES[measure], "confidence": round(1 - beta, 10),
        "relative": relative, "target": target, "target_unit": unit,
        "smallest_epsilon": dict(view.smallest), "current_epsilon": epsilon,
        "epsilons_closed_form": list(GRID), "epsilons_simulated": list(SIM_GRID),
        # As mechanism_curves: about SIM_ERRORS errors per epsilon, pooled over the cells.
        "simulated_releases_per_epsilon": max(200, math.ceil(SIM_ERRORS / cells)),
        "noise_scale": (f"each part of the {query.kind} gets its share of ε: no single scale"
                        if query.made_of_parts else
                        "per ε in the CSV's noise scale column (L1 sensitivity / ε for "
                        "Laplace and geometric; calibrated for the others)"
                        + ("" if query.total_share is None else
                           ", at the cells' share of ε (and δ)")),
        "simulation_random_stream": f"numpy.random.default_rng([seed, {_RNG_OFFSET}, 0])",
    }
    origins = dict(query.origins)
    if parameters["answer_range"] is None:
        origins.pop("answer_range_from", None)
    return table, parameters | origins


def selection_download(view: CurveView, question: SelectionQuestion,
                       results: Mapping[str, tuple[Mapping[str, NDArray], object]], *,
                       dataset: str, epsilon: float, target: float
                       ) -> tuple[pd.DataFrame, dict]:
    """(curve table, parameters) of the selection question for ``controls.downloads``."""
    how = "closed form" if question.k == 1 else "simulation"
    table = curve_values(view, computed_by=[how] * len(results),
                         scales=[sweep["scale"] for sweep, _ in results.values()], unit="%",
                         scale_unit="score units")
    top = f", top {question.k} picks" if question.k > 1 else ""
    parameters = {
        "page": "Choose epsilon", "dataset": dataset, "query_from": SOURCES["selection"],
        "question": question.what, "number_of_candidates": len(question.scores),
        "mechanism": [sel.NOISES[n] + top for n in results],
        "noise": list(results), "measure": "pure", "delta": None, "rho": None,
        "sensitivity": question.sensitivity, "neighbouring_datasets": question.neighbours,
        "monotonic": question.monotonic,
        "pick": "smallest score" if question.negate else "largest score", "k": question.k,
        "target_share_right": target, "smallest_epsilon": dict(view.smallest),
        "current_epsilon": epsilon, "epsilons": list(SELECTION_GRID),
        "noise_scale": "per ε in the CSV's noise scale column",
        "simulated_releases_per_epsilon": TOP_K_TRIALS if question.k > 1 else None,
        "simulation_random_stream": (f"numpy.random.default_rng([seed, {_RNG_OFFSET}, 1])"
                                     if question.k > 1 else None),
    }
    return table, parameters | dict(question.origins)
