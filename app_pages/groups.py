"""Groups page: count, sum and mean per group of one or two columns; the groups are the
declared keys, or found privately by partition selection (a noisy count over a threshold).

Widgets pick the groups, the statistic and the noise; ``dashboard.analysis.groups`` computes.
"""

from __future__ import annotations

import streamlit as st

from dashboard import controls, datasets, person, plan_panel, presenting, state
from dashboard.analysis import groups as ga
from dashboard.analysis import plan_entries
from dashboard.charts.groups import keep_curve, noisy_against_true
from dashboard.choices import DELTA_OPTIONS, RHO_GRID, fmt_number
from dashboard.data.left_out import left_out_note
from dashboard.text import plain

BOUND_LIMIT = 1e15
problem = None

st.title("Groups")
st.caption("A count, sum or mean for every group of one or two columns, or a count per bin "
           "of a numeric column (a binned histogram). With public keys (declared categories, "
           "bin edges) every group is released, empty ones too. Without them the groups "
           "themselves are private: a group is released only if its noisy count clears a "
           "threshold ([partition selection](./glossary#partition-selection)), and that costs a "
           "small [δ](./glossary#delta).")
loaded = state.dataset()
data_key = state.dataset_key()
upload = data_key.startswith("upload:")
unit = person.current_unit(data_key)
columns = ga.group_columns(loaded)
if not columns:
    st.info(f"{plain(loaded.name)} has no categorical or numeric column to group by. Pick "
            "another dataset in the sidebar.")
    st.stop()

ask, protect = st.columns(2, gap="large")
with ask:
    st.subheader("Groups")
    first = controls.select("Group by", columns, key="groups_by", in_url=not upload)
    binned, edges = ga.binned_column(first), None
    second = "—" if binned else controls.select(
        "Then by (optional)", ["—", *[c for c in columns if c != first and not
                                      ga.binned_column(c)]], key="groups_by2", in_url=not upload)
    by = (binned,) if binned else (first,) if second == "—" else (first, second)
    if binned:
        text, origin = ga.default_edges(loaded, binned)
        state.forget_when_changed("groups_edges_for", (data_key, binned), ("groups_edges",))
        typed = controls.text("Bin edges", key="groups_edges", default=text,
                              help="Public edges, chosen without looking at the data.")
        outside = controls.select("Values outside the edges go", list(ga.OUTSIDE),
                                  key="groups_outside", format_func=ga.OUTSIDE.get)
        st.caption(f"Default edges: {plain(origin, limit=300)}.")
        try:
            edges = ga.parse_edges(typed)
        except ValueError as exc:
            problem = f"{plain(exc)}."
    numeric = datasets.numeric_columns(loaded)
    per_group = ga.statistics()
    offered = [s for s in per_group
               if (len(by) == 1 and numeric and not binned) or not ga.of_a_column(s)]
    statistic = controls.select("Statistic", offered, key="groups_statistic",
                                format_func=per_group.get)
    if len(by) == 2:
        st.caption("By two columns the page releases counts (sums and means by one column).")
    column = lower = upper = None
    if ga.of_a_column(statistic):
        column = controls.select("Of the column", numeric, key="groups_column",
                                 in_url=not upload)
        domain = loaded.domains.get(column)
        low, high = (domain.lower, domain.upper) if domain and domain.kind == "numeric" \
            else (0.0, 1.0)
        state.forget_when_changed("groups_bounds_for", (data_key, column),
                                  ("groups_lower", "groups_upper"))
        lower = controls.number("Lower bound", key="groups_lower", default=float(low),
                                min_value=-BOUND_LIMIT, max_value=BOUND_LIMIT, in_url=not upload)
        upper = controls.number("Upper bound", key="groups_upper", default=float(high),
                                min_value=-BOUND_LIMIT, max_value=BOUND_LIMIT, in_url=not upload)
        if not lower < upper:
            problem = "The lower bound must be below the upper bound: change one of them."
    declared = bool(binned) or all(ga.declared_keys(loaded, c) is not None for c in by)
    public = bool(binned) or declared and controls.toggle(
        "The groups are public (declared categories)", key="groups_public", default=True,
        help="Off: the groups are found privately, as if no list of categories existed.")
    if not declared:
        st.caption("No declared categories for these columns: the groups are found privately.")
    for group_column in by if public and not binned else ():
        if (note := left_out_note(loaded, group_column)) is not None:
            st.warning(note, icon=":material/report:")

with protect:
    st.subheader("Privacy")
    noise = controls.select("Noise on the counts", list(ga.NOISES), key="groups_noise",
                            format_func=ga.NOISES.get)
    if ga.uses_rho(noise):
        budget = controls.exact_slider("ρ (rho)", RHO_GRID, key="groups_rho", default=0.5,
                                       symbol="ρ")
    else:
        budget = controls.epsilon_slider(key="groups_epsilon")
    delta = 0.0
    if not public:
        delta = controls.select("δ for the threshold", DELTA_OPTIONS, key="groups_delta",
                                default=1e-6, format_func=fmt_number)
    st.caption(f"Privacy unit: {plain(unit.describe())} (set on the Data page).")

if problem is None:
    spec = ga.GroupsSpec(by, statistic, column, lower, upper, public, noise, budget, delta,
                         edges, outside if binned else "separate")
    try:
        with st.spinner("Counting the groups…"):
            release = ga.groups_release(loaded, data_key, spec, unit, state.seed(),
                                        tuple(ga.declared_keys(loaded, c) for c in by))
    except (ValueError, TypeError) as exc:
        problem = f"{plain(exc, limit=400)}. Check the columns, bounds and budget above."
if problem is not None:
    st.error(problem, icon=":material/error:")   # every control above keeps its value
    st.stop()

st.markdown(ga.privacy_sentence(release, spec, unit))
found, shown, dropped = st.columns(3)
found.metric("Groups in the data" if not public else "Declared groups", f"{len(release.labels):,}")
shown.metric("Released (simulated)", f"{int(release.kept.sum()):,}")
dropped.metric("Dropped by the threshold", f"{int((~release.kept).sum()):,}")
if not public:
    sizes, chance = ga.keep_curve(release)
    presenting.chart(keep_curve(sizes, chance, release.counts, release.kept,
                                threshold=release.threshold,
                                title="Chance that a group is released, by its size (exact)"),
                     key="groups_keep_curve")
    st.caption("Exact probabilities P(n + noise ≥ threshold), not a simulation. Ticks: the "
               "data's groups, kept (top) or dropped (bottom) in this simulated release. The "
               "groups are read off the data only for this simulation; a release never lists "
               "a dropped group.")
chart = ga.chart_values(release, spec)
st.markdown(ga.accuracy_sentence(chart, spec))
presenting.chart(noisy_against_true(
    chart.labels, chart.truth, chart.noisy, chart.alpha, confidence=ga.CONFIDENCE,
    title=f"True and noisy {chart.what} per group, with ±α", x_title=" · ".join(by),
    y_title=chart.what.capitalize()), key="groups_chart")
st.caption(ga.chart_caption(chart, public))
st.dataframe(ga.group_table(release, spec), hide_index=True, key="groups_table")
st.caption(ga.interval_caption(release))
st.caption(f"Simulated release (seed {state.seed()}); true values are shown beside it only "
           "in this simulation.")
plan_panel.add_to_plan(data_key, lambda: plan_entries.groups_query(
    loaded, unit, by=by, statistic=statistic, column=column, lower=lower, upper=upper,
    public=public, noise=noise, budget=budget, delta=delta, edges=edges,
    outside=outside if binned else "separate",
    keys=tuple(ga.declared_keys(loaded, c) for c in by)), key="groups")
