"""Noisy statistics, the downloads: the noisy release shown, and the parameters that
produced it (reproducible, with where each declaration came from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import streamlit as st

from dashboard.analysis.stats_plan import ReleasePlan, make_plan, query_stream, release_stream
from dashboard.analysis.stats_query import QuerySpec, neighbours_of
from dashboard.choices import PrivacyChoice
from dashboard.exports import SIMULATION, simulation_fields
from dashboard.kinds import adapter_of
from plan.kinds import KINDS

if TYPE_CHECKING:
    from dashboard.analysis.stats_errors import MechanismRun




def _unique_header(name: str, taken: Sequence[str]) -> str:
    """``name``, suffixed until it differs from every header in ``taken`` (a user's column
    may be called like one of ours)."""
    while name in taken:
        name += " (category)"
    return name


def release_values(runs: Sequence[MechanismRun], spec: QuerySpec) -> pd.DataFrame:
    """The one noisy release the page shows, per mechanism (per category for a histogram).

    The true answer and the errors are left out on purpose: this file is a release, and a
    file that may be published must hold noisy values only. Values are full precision (the
    page rounds them for display).
    """
    kind = KINDS[spec.query]
    noisy = {f"Noisy {adapter_of(spec.query).value_noun} ({run.name})":
             np.asarray(run.release, dtype=np.float64).reshape(-1) for run in runs}
    if kind.per_cell:
        label = _unique_header(str(spec.column), list(noisy))
        first = pd.DataFrame({label: [str(c) for c in runs[0].labels or ()]})
    else:
        first = pd.DataFrame({"Query": [spec.describe()]})
    return pd.concat([first, pd.DataFrame(noisy)], axis=1)


def _privacy_fields(measure) -> dict:
    """A privacy measure as numbers (epsilon, delta or rho) and one sentence."""
    return {**{k: float(v) for k, v in asdict(measure).items()}, "guarantee": measure.describe()}


def _mechanism_fields(plan: ReleasePlan) -> dict:
    """Sensitivities, noise scale and privacy of one planned release (numbers, not text)."""
    kind = plan.choice.mechanism
    norm = plan.choice.spec.sensitivity_norm
    fields = {"mechanism": kind, "label": plan.choice.label(), "sensitivity_norm": norm,
              "noise_scale_meaning": plan.choice.spec.scale_meaning}
    if plan.closed_form:
        fields |= {"l1_sensitivity": float(plan.answer.l1_sensitivity),
                   "l2_sensitivity": float(plan.answer.l2_sensitivity),
                   "sensitivity": float(plan.release.sensitivity),
                   "noise_scale": float(plan.release.scale),
                   "privacy": _privacy_fields(plan.release.privacy)}
        if plan.choice.spec.needs_range:
            fields["answer_range"] = [float(plan.release.lower), float(plan.release.upper)]
        return fields
    # A mean or a variance: the parts a release draws, each with its share of the budget
    # (scalar parts: L1 = L2 = the sensitivity the noise is calibrated to).
    parts = {part.name: {"l1_sensitivity": float(part.sensitivity),
                         "l2_sensitivity": float(part.sensitivity),
                         "sensitivity": float(part.mechanism.sensitivity),
                         "noise_scale": float(part.mechanism.scale),
                         "privacy": _privacy_fields(part.mechanism.privacy)}
             for part in plan.built_parts}
    total = plan.release.privacy
    share = ({"sum_share": float(plan.sum_share)} if KINDS[plan.spec.query].split_by_share
             else {})
    return fields | share | parts | {"privacy": _privacy_fields(total)}


def describe_release(plans: Sequence[ReleasePlan], *, dataset: str, trials: int,
                     stream: int = 0, release: int = 1) -> dict:
    """The parameters behind the page's release(s): dataset, query, measure, ε/δ/ρ, and per
    mechanism its sensitivities, noise scale and privacy; marked as a simulation, with the
    random stream the noise came from. The seed is added by the download."""
    first = plans[0]
    spec, choice = first.spec, first.choice
    random_stream = "numpy.random.default_rng([{}])".format(
        ", ".join(str(part) for part in release_stream(release, stream)))
    parameters = {
        "page": "Noisy statistics", "dataset": dataset, "query": spec.query,
        "description": spec.describe(), "column": spec.column,
        "clamping_bounds": None if spec.lower is None else [spec.lower, spec.upper],
        "neighbouring_datasets": neighbours_of(spec.contribution),
        "contribution_bounds": None if spec.contribution is None else {
            "person": spec.contribution.person, "max_rows": spec.contribution.max_rows,
            "max_groups": spec.contribution.max_groups,
            "truncation_seed": spec.contribution.seed},
        "measure": choice.measure, "epsilon": choice.epsilon, "delta": choice.delta,
        "rho": choice.rho,
        "mechanisms": [_mechanism_fields(plan) for plan in plans],
        "simulated_releases": trials,
        "release_number": release,
        "release_random_stream": random_stream,
        SIMULATION: simulation_fields(random_stream),
    }
    if KINDS[spec.query].per_cell:
        parameters["categories"] = [str(c) for c in first.labels or ()]
        parameters["categories_from"] = ("the column's public list" if spec.categories
                                         is not None else "the data (this reveals which "
                                                          "values occur)")
    return parameters


@st.cache_data(show_spinner=False, max_entries=32)
def release_parameters(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec,
                       choices: tuple[PrivacyChoice, ...], *, dataset: str,
                       answer_range: tuple[float, float] | None, sum_share: float,
                       trials: int, origins: Mapping[str, str] | None = None,
                       release: int = 1) -> dict:
    """Cached :func:`describe_release` for the page's choices (plans rebuilt, not simulated);
    ``origins`` (from :func:`declaration_origins`) says where bounds and ranges come from."""
    plans = [make_plan(_frame, spec, c, answer_range=answer_range, sum_share=sum_share)
             for c in choices]
    stream = query_stream(dataset_key, _frame, spec)
    return {**describe_release(plans, dataset=dataset, trials=trials, stream=stream,
                               release=release), **(origins or {})}
