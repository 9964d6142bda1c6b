"""Synthetic data page (issue 23, first version): synthetic rows drawn by OpenDP's mbi (AIM or
MST) from the chosen columns' contingency table, and their utility against the real data.

Not a release: nothing is recorded in the ledger. A synthetic table is released for real as a
plan query of kind "synthetic" (plan/kinds/synthetic.py): Add to plan, then the Release plan
page, or ``python -m release``.
"""

from __future__ import annotations

import itertools

import numpy as np
import streamlit as st

from dashboard import (
    charts,
    controls,
    exports,
    person,
    plan_panel,
    presenting,
    state,
    synthetic_panel,
)
from dashboard.analysis import synthetic as sy
from dashboard.text import plain

ss = st.session_state
#: Beside the downloads: these rows are drawn with OpenDP's fresh noise, not the sidebar's seed.
UNSEEDED = ("**Not a release.** OpenDP drew these rows' noise afresh (the sidebar's seed plays "
            "no part), and nothing is recorded: every Generate reads the data again, so "
            "keeping the best of several tables spends more than the ε or ρ shown. Use them "
            "to judge the method; never publish them. To publish a synthetic table, add it to the "
            "plan and release it from the Release plan page, which records what it spends.")
loaded = state.dataset()
dataset_key = state.dataset_key()
upload = dataset_key.startswith("upload:")
unit = person.current_unit(dataset_key)

st.title("Synthetic data")
st.markdown(
    "Rows that look like the data, drawn from a model fitted to "
    "**[noisy marginals](./glossary#aim-mst-marginals)** "
    "([differentially private](./glossary#differential-privacy) counts of one, two or three "
    "columns at a time) with OpenDP's marginal-based inference: "
    "**AIM** picks the marginals worth measuring one at a time, **MST** measures a tree of "
    "pairs. Only declared cells are used: categories as the schema lists them, numeric "
    "columns through their declared bin edges. Nothing here is recorded as a release: to "
    "release a synthetic table for real, press **Add to plan** and release the plan from "
    "the Release plan page (or `python -m release --plan PLAN --data DATA --out DIR`).")

offered = sy.offered_columns(loaded)
if len(offered) < 2:
    st.info(f"{plain(loaded.name)} has fewer than two columns with declared categories or bin "
            "edges. Declare them on the Data page, or pick another dataset in the sidebar.")
    st.stop()

chosen = controls.multiselect("Columns", offered, default=offered[:min(4, len(offered))],
                              key="synthetic_columns", in_url=not upload,
                              help="Categorical columns, and numeric ones through their "
                                   "declared bin edges.")
if unit.person_column is None:
    st.caption("Privacy unit: **one row is one person** (declare a person id on the Data page).")
else:
    st.caption(f"Privacy unit: person id **{plain(unit.person_column)}**, each person keeping "
               f"at most **{unit.max_rows}** rows (the contingency table's contributions).")
try:
    columns = sy.choose_columns(loaded, chosen, unit, limit=sy.MAX_SYNTHETIC_CATEGORIES)
except sy.SynthesisError as exc:
    st.error(plain(exc))
    st.stop()

left, middle, right = st.columns(3)
measure = controls.radio("Measure", ["epsilon", "rho"], key="synthetic_measure",
                         container=left,
                         format_func=lambda m: "ε (pure DP)" if m == "epsilon" else "ρ (zCDP)")
budget = controls.number("ε" if measure == "epsilon" else "ρ", key="synthetic_budget",
                         default=1.0, min_value=0.001, max_value=100.0, container=middle,
                         format="%g")
algorithm = controls.radio("Algorithm", ["MST", "AIM"], key="synthetic_algorithm",
                           container=right)
marginal_labels = {"auto": "the algorithm's own selection", "one-way": "all 1-way marginals",
                   "pairs": "chosen 2-way marginals (AIM)"}
options = ["auto", "one-way"] + (["pairs"] if algorithm == "AIM" else [])
marginals = controls.radio("Marginals to preserve", options, key="synthetic_marginals",
                           format_func=marginal_labels.get, horizontal=True)
pairs: list[tuple[int, int]] = []
if marginals == "pairs":
    all_pairs = list(itertools.combinations(range(len(chosen)), 2))
    labels = [f"{chosen[a]} × {chosen[b]}" for a, b in all_pairs]
    picked = controls.multiselect("Pairs", labels, default=labels[:1], key="synthetic_pairs",
                                  in_url=not upload)
    pairs = [p for p in all_pairs if f"{chosen[p[0]]} × {chosen[p[1]]}" in picked]
rows = int(controls.number("Synthetic rows", key="synthetic_rows", default=1_000,
                           min_value=10, max_value=200_000, step=100))

# the columns' declared cells too: rows generated for other categories are not shown
settings = (dataset_key, tuple(chosen), columns.query, unit, measure, budget, algorithm,
            marginals, tuple(pairs), rows)
plan_panel.add_to_plan(dataset_key, lambda: sy.plan_query(
    loaded, unit, names=list(chosen), measure=measure, budget=budget, algorithm=algorithm,
    marginals=marginals, pairs=pairs, rows=rows), key="synthetic", certify_on_click=True)
if st.button("Generate", key="synthetic_generate", type="primary"):
    try:
        with st.spinner("Counting the table and fitting the model (this takes a while)…"):
            cells = sy.joint_cells(loaded, columns)
            codes = sy.generate(cells, columns.shape, measure=measure, budget=budget,
                                max_rows=unit.max_rows, algorithm=algorithm,
                                marginals=marginals, pairs=pairs, rows=rows,
                                iters=sy.DEFAULT_ITERS)
    except (ValueError, RuntimeError) as exc:
        st.error(f"The synthetic data could not be generated: {plain(exc, limit=400)}")
        st.stop()
    ss["synthetic_result"] = (settings, cells, codes)

result = ss.get("synthetic_result")
if result is None or result[0] != settings:
    st.info("Choose the settings, then **Generate**.")
    st.stop()
_, cells, codes = result
frame = sy.synthetic_frame(codes, columns)

st.subheader("Synthetic rows")
st.dataframe(frame.head(20), hide_index=True, key="synthetic_rows_table")
st.caption(f"The first 20 of {len(frame):,} synthetic rows. "
           f"'{sy.OTHER}' stands for a missing value or one outside the declared cells.")
parameters = {
    "dataset": loaded.name, "columns": list(chosen), "measure": measure, measure: budget,
    "algorithm": algorithm, "marginals": marginals, "rows": rows,
    "privacy_unit": unit.to_dict(),
    exports.SIMULATION: {**exports.simulation_fields("opendp"),
                         "warning": "Not a release: drawn on the dashboard with OpenDP's fresh "
                                    "noise (not from a seed) and recorded nowhere; keeping the "
                                    "best of several generations spends more than the budget "
                                    "shown. Never publish it."},
}
controls.downloads(frame, parameters, key="synthetic_download", file_stem="synthetic-data",
                   csv_label="Download synthetic rows (CSV)", unseeded=UNSEEDED)

st.subheader("Utility against the real data")
st.warning("**Not private.** These comparisons read the real table: they are for the data "
           "steward's eyes, like the bounds-cost curve. Never publish them.",
           icon=":material/visibility:")
tv = sy.tv_table(cells, codes, columns)
st.dataframe(tv, hide_index=True, key="synthetic_tv_table",
             column_config={"TV distance": st.column_config.NumberColumn(format="%.3f")})
st.caption("Total-variation distance of each marginal (0: the same proportions, 1: disjoint).")
matrix = sy.tv_pairs(tv, columns)
presenting.chart(charts.tables.table_heatmap(
    matrix.to_numpy(), list(chosen), list(chosen), title="TV distance per pair (diagonal: "
    "1-way)", value_name="TV", row_title="column", column_title="column",
    value_format=".2f", zmin=0.0), key="synthetic_tv_heatmap")
real_v = sy.association(cells.codes, cells.counts, columns)
synth_v = sy.association(codes, None, columns)
vl, vr = st.columns(2)
for place, title, v, key in ((vl, "Cramér's V, real", real_v, "synthetic_v_real"),
                             (vr, "Cramér's V, synthetic", synth_v, "synthetic_v_synth")):
    presenting.chart(charts.tables.table_heatmap(
        v.to_numpy(), list(chosen), list(chosen), title=title, value_name="V",
        row_title="column", column_title="column", value_format=".2f", zmin=0.0, zmax=1.0),
        key=key, place=place)
if len(chosen) >= 3:
    w = sy.workload(cells, codes, columns.shape, measure=measure, budget=budget,
                    max_rows=unit.max_rows, rng=state.rng(23))
    st.markdown(
        f"**Random 3-way counting queries** ({len(w.real)} conjunctions over "
        f"{len(np.unique(w.axes, axis=0))} marginals), mean absolute error as a fraction "
        f"of the rows: synthetic rows **{w.synthetic_error:.4f}**, the same marginals "
        "measured directly " + ("with Laplace noise at the same ε" if measure == "epsilon"
                                 else "with Gaussian noise at the same ρ")
        + f" **{w.direct_error:.4f}**.")

predicted = controls.select("Column to predict", chosen, default=chosen[-1], in_url=not upload,
                            key="synthetic_target")
target = chosen.index(predicted)
synthetic_panel.classifier_section(cells, codes, columns, target=target, seed=state.seed())
synthetic_panel.sweep_section(cells, columns, target=target, measure=measure,
                              max_rows=unit.max_rows, rows=rows, seed=state.seed(),
                              settings=(dataset_key, tuple(chosen), columns.query, unit, measure,
                                        rows))
