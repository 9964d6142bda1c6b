"""Quantiles page: the median and any quantiles of a numeric column, released by report noisy
min over a public grid of candidates, with the exact distribution of what a release draws.

Widgets pick the column, the grid, the quantiles, the measure, the noise and ε (or ρ);
``dashboard.analysis.quantiles`` makes them the plan's query (the one Add to plan adds), builds
it as a release does (``plan.build``), scores the candidates (engine) and computes each part's
distribution and accuracy exactly. A setting a release refuses is shown, and said to be so.
"""

from __future__ import annotations

import streamlit as st

from dashboard import controls, datasets, person, plan_panel, presenting, state
from dashboard.analysis import quantiles as qa
from dashboard.charts.quantiles import quantile_distribution
from dashboard.choices import RHO_GRID
from dashboard.text import plain

BOUND_LIMIT = 1e15
problem = None   # what keeps the results from being computed: shown in their place

st.title("Quantiles")
st.caption("The median, quartiles or any percentile of a numeric column: each candidate of a "
           "public grid gets its [rank error](./glossary#rank-error) plus noise, and the "
           "smallest is released — more "
           "likely the closer that candidate's rank is to the quantile's "
           "([report noisy max](./glossary#report-noisy-max)): "
           f"{qa.NOISES['exponential']} or {qa.NOISES['gumbel']}. The chance of each "
           "candidate is known exactly, so is the accuracy.")
loaded = state.dataset()
relation, data_key = loaded.relation, state.dataset_key()
upload = data_key.startswith("upload:")
unit = person.current_unit(data_key)
columns = datasets.numeric_columns(loaded)
if not columns:
    st.info(f"{plain(loaded.name)} has no numeric column, so there is no quantile to take. "
            "Pick another dataset in the sidebar.")
    st.stop()

ask, grid_box, protect = st.columns(3, gap="large")
with ask:
    st.subheader("Quantiles")
    column = controls.select("Numeric column", columns, key="quantiles_column",
                             in_url=not upload)
    levels_text = controls.text("Quantiles to release (between 0 and 1)",
                                key="quantiles_levels", default=qa.DEFAULT_LEVELS,
                                help="0.5 is the median; 0.25, 0.5, 0.75 the quartiles. "
                                     "Separate them by commas.")
    try:
        levels = qa.parse_levels(levels_text)
    except ValueError as exc:
        problem, levels = f"{plain(exc, limit=300)}.", ()

with grid_box:
    st.subheader("Candidates")
    mode = controls.select("Grid of candidates", list(qa.GRID_MODES), key="quantiles_grid",
                           format_func=qa.GRID_MODES.get)
    bounds = qa.default_bounds(loaded, column)
    state.forget_when_changed("quantiles_grid_for", (data_key, column),
                              ("quantiles_lower", "quantiles_upper", "quantiles_points",
                               "quantiles_alpha"))
    try:
        if mode == "even":
            lower = controls.number("Lowest candidate", key="quantiles_lower",
                                    default=bounds.lower, min_value=-BOUND_LIMIT,
                                    max_value=BOUND_LIMIT, in_url=not upload)
            upper = controls.number("Highest candidate", key="quantiles_upper",
                                    default=bounds.upper, min_value=-BOUND_LIMIT,
                                    max_value=BOUND_LIMIT, in_url=not upload)
            points = controls.number("Number of candidates", key="quantiles_points",
                                     default=qa.default_points(loaded, column, bounds),
                                     min_value=2, max_value=qa.MAX_CANDIDATES)
            if bounds.from_data:
                st.warning("These ends are the column's smallest and largest values, read "
                           "off the data: that reveals them. For a real release, type "
                           "bounds from public knowledge.")
            grid = qa.even_grid(lower, upper, int(points))
        else:
            typed = controls.text("Candidates (numbers separated by commas)",
                                  key="quantiles_typed", default="")
            grid = qa.typed_grid(typed)
    except ValueError as exc:
        problem, grid = problem or f"{plain(exc, limit=300)}.", None
    st.caption("The grid must be public: chosen without looking at the data.")

with protect:
    st.subheader("Privacy")
    measure = controls.select("Privacy measure", list(qa.MEASURES), key="quantiles_measure",
                              format_func=qa.MEASURES.get)
    # each measure starts with the noise OpenDP certifies in it (changing the measure resets it)
    state.forget_when_changed("quantiles_noise_for", (measure,), ("quantiles_noise",))
    noise = controls.select("Noise", list(qa.NOISES), key="quantiles_noise",
                            default=qa.DEFAULT_NOISE[measure], format_func=qa.NOISES.get,
                            help=f"{qa.NOISES['exponential']}: ε-DP, and what a real "
                                 f"release draws under pure DP. {qa.NOISES['gumbel']}: "
                                 "OpenDP certifies it under zCDP (ρ = ε²/8), so a release "
                                 "draws it under zCDP.")
    if measure == "pure":
        budget = controls.epsilon_slider(key="quantiles_epsilon")
    else:
        budget = controls.exact_slider("ρ (rho)", RHO_GRID, key="quantiles_rho",
                                       default=qa.DEFAULT_RHO, symbol="ρ")
    alpha = controls.number("Accuracy: within ± α of the true quantile", key="quantiles_alpha",
                            default=qa.default_alpha(loaded, column, bounds),
                            min_value=0.0, max_value=BOUND_LIMIT, in_url=not upload,
                            format=qa.ALPHA_FORMAT,
                            help="In the column's units: the page gives the exact chance "
                                 "that the release lands this close to the truth.")
    if not alpha > 0:
        problem = problem or "α must be greater than 0: type a positive distance."
    st.caption(f"Privacy unit: {plain(unit.describe())} (set on the Data page).")

if problem is None:
    try:   # the plan's query, the very one Add to plan adds; its parts are what is simulated
        query = qa.page_query(unit, column=column, levels=levels, grid=tuple(map(float, grid)),
                              noise=noise, measure=measure, budget=budget,
                              from_data=mode == "even" and bounds.from_data
                              and (lower, upper) == (bounds.lower, bounds.upper))
        with st.spinner("Scoring the candidates…"):
            release = qa.quantile_release(relation, data_key, query, unit, float(alpha),
                                          state.seed())
    except (ValueError, TypeError) as exc:
        problem = f"{plain(exc, limit=400)}. Check the grid and the quantiles above."
if problem is not None:
    st.error(problem, icon=":material/error:")   # every control above keeps its value
    st.stop()

refusal = qa.release_refusal(query, unit)
st.markdown(qa.budget_sentence(release))
if refusal is not None:
    st.caption(qa.teaching_note(plain(refusal, limit=500)))
st.markdown(qa.sensitivity_sentence(release, unit))
st.markdown(f"**{qa.accuracy_sentence(release, column)}**")
st.dataframe(qa.results_table(release), hide_index=True, key="quantiles_table")
st.caption(f"Simulated release (seed {state.seed()}): one draw of the mechanism per "
           "quantile. The probabilities are exact; a probability rounds down, an expected "
           "error rounds up.")
if bound := qa.rank_bound_sentence(release):
    st.caption(bound)
presenting.chart(quantile_distribution(
    release.grid, [x.probabilities for x in release.results],
    [qa.level_name(x.q) for x in release.results], [x.true_value for x in release.results],
    alpha=release.alpha, x_title=f"Candidate value of {column}",
    title=f"Which candidate is released: exact probabilities ({column})"),
    key="quantiles_distribution")
st.caption(qa.distribution_note(release, releasable=refusal is None)
           + " Dotted lines: the true quantiles; shaded: ±α.")
plan_panel.add_to_plan(data_key, lambda: query, key="quantiles")
