"""Noisy tables page: a crosstab of two categorical columns released with noise on every cell.

The census-table workflow: geometric noise, post-processing, and the L1 error over many releases.
"""

from __future__ import annotations

import streamlit as st

from dashboard import charts, choices, controls, person, plan_panel, presenting, state
from dashboard.analysis import plan_entries, tables
from dashboard.data.left_out import left_out_note
from dashboard.text import plain

ss = st.session_state
loaded = state.dataset()
dataset_key = state.dataset_key()
is_upload = dataset_key.startswith("upload:")


def use_census() -> None:
    ss["dataset_choice"] = tables.CENSUS   # a callback runs before the sidebar is drawn


st.title("Noisy tables")
st.markdown("How many people fall in each combination of two categories, released with "
            "[differentially private](./glossary#differential-privacy) noise "
            "on every cell. Every declared category keeps its cell, **true zeros included**: "
            "dropping an empty cell would reveal that nobody has that combination.")
columns = tables.table_columns(loaded)
axes = tables.default_axes(loaded, columns)
if loaded.name != tables.CENSUS:
    st.button("Use the synthetic census (Occupation × Sex, the classic example)",
              key="tables_use_census", on_click=use_census, icon=":material/swap_horiz:")
if axes is None:
    st.info(f"{plain(loaded.name)} has fewer than two categorical columns (with at most "
            f"{tables.MAX_TABLE_CATEGORIES} categories), so there is no table to make. Pick "
            "another dataset in the sidebar, or use the button above.")
    st.stop()

left, right = st.columns(2, gap="large")
with left:
    row = controls.select("Rows of the table", columns, key="tables_row", default=axes[0],
                          in_url=not is_upload)
    others = [c for c in columns if c != row]
    column = controls.select("Columns of the table", others, key="tables_column",
                             default=axes[1] if axes[1] != row else others[0],
                             in_url=not is_upload)
    privacy = controls.privacy_controls("tables", integer_query=True,
                                        allowed=choices.RANGE_FREE,
                                        default_mechanism=choices.WHOLE_NUMBER_KIND)
with right:
    clip = controls.toggle("Clip negative counts to 0", key="tables_clip", default=True)
    round_ = controls.toggle("Round to whole numbers", key="tables_round", default=True)
    rescale = controls.toggle("Rescale to a noisy total", key="tables_rescale", default=False)
    source, share = "cells", 0.2
    if rescale:
        source = controls.select("Noisy total from", list(tables.TOTAL_SOURCES),
                                 key="tables_total_source", format_func=tables.TOTAL_SOURCES.get)
        if source == "separate":
            share = controls.select("Share of the budget spent on the total",
                                    tables.TOTAL_SHARES, key="tables_total_share", default=0.2,
                                    format_func=lambda s: f"{s:.0%}")
        if not clip:
            st.caption("Rescaling needs non-negative cells, so negatives are set to 0 first.")
    trials = controls.trials_picker(key="tables_trials")

row_categories, row_from_data = tables.declared_categories(loaded, row)
column_categories, column_from_data = tables.declared_categories(loaded, column)
if len(row_categories) * len(column_categories) > tables.MAX_TABLE_CELLS:
    st.error(f"This table would have {len(row_categories) * len(column_categories):,} cells "
             f"(the limit is {tables.MAX_TABLE_CELLS:,}). Pick columns with fewer categories.")
    st.stop()
for axis in (row, column):   # declared categories only: the data's own leave nothing out
    if (note := left_out_note(loaded, axis)) is not None:
        st.warning(note, icon=":material/report:")
try:
    with st.spinner(f"Simulating {trials:,} noisy releases of the table…"):
        release = tables.table_release(
            loaded.relation, dataset_key, row, column, row_categories, column_categories, privacy,
            clip, round_, rescale, source, share, trials, state.seed(),
            person.contribution(person.current_unit(dataset_key), seed=state.seed()))
except (ValueError, TypeError) as exc:
    st.error(f"Could not release this table: {plain(exc, limit=400)}. Check the columns and "
             "the privacy settings above.")
    st.stop()

st.markdown(f"**Privacy:** {release.privacy}. **Noise:** {release.noise}. **Sensitivity:** "
            f"{tables.sensitivity_text(release)}. L1 adds up how much every cell can change "
            f"({choices.norm_names('L1')} noise are calibrated to it), L2 is the square root "
            "of the sum of the squared changes "
            f"({choices.norm_names('L2')} noise are).")
if row_from_data or column_from_data:
    st.warning("The categories of this uploaded file are read off the data, which reveals "
               "which values exist (a category only one person has points at that person). "
               "For a real release, declare the categories from public knowledge.")
if release.missing_rows:
    st.caption(f"{release.missing_rows:,} rows with a missing value in either column are not "
               "counted.")

errors = release.example_errors
m1, m2, m3, m4 = st.columns(4)
m1.metric("Total L1 error (published)", f"{errors['l1_after']:,.1f}",
          help="Sum over cells of |published − true| for the example release below.")
relative_l1 = errors["relative_after"]   # NaN when no row was counted
m2.metric("Relative L1 error (published)",
          f"{relative_l1:.2f} %" if relative_l1 == relative_l1 else "—",
          help="Total L1 error as a share of the number of people counted.")
m3.metric("Total L1 error before post-processing", f"{errors['l1_before']:,.1f}")
m4.metric(f"Median L1 error ({release.trials:,} releases)",
          f"{release.after.quantiles[0.5]:,.1f}")
if release.example_total is not None:
    st.caption(f"Noisy total of this release: {release.example_total:,.1f} "
               f"(true total {release.true.sum():,.0f}).")

views = tables.table_views(release)
state.remembered("tables_view", "Published", options=list(views))
tabs = st.tabs(list(views), key="tables_view", on_change="rerun")   # draws the open tab only
state.remember("tables_view")
for tab, (name, view) in zip(tabs, views.items(), strict=True):
    with tab:
        if tab.open:
            presenting.chart(charts.table_heatmap(
                view.values, release.row_labels, release.column_labels,
                title=f"{name}: {row} by {column}", value_name=view.value_name, row_title=row,
                column_title=column, zmin=view.zmin, zmax=view.zmax,
                value_format=",.1f" if name == "Relative error" else None,
                colorscale="Viridis" if view.is_error else "Cividis"), key="tables_heatmap")
            st.caption(view.caption)
        st.dataframe(release.labelled(view.values, row, column), key=f"tables_frame_{name}")
st.markdown(f"**{tables.INTERVAL_LEVEL} interval for each true count**")
simultaneous = controls.toggle("Intervals that hold for all cells at once", key="tables_all_cells",
                               help="Off: each cell's interval holds on its own.")
st.dataframe(tables.interval_frame(release, row, column, simultaneous=simultaneous, clip=clip,
                                   round=round_, rescale=rescale),
             hide_index=True, key="tables_intervals")
st.caption(tables.interval_caption(release, simultaneous=simultaneous, rescale=rescale))
controls.downloads(*tables.table_download(
    release, row, column, privacy, dataset=loaded.name, clip=clip, round=round_, rescale=rescale,
    total_source=source, total_share=share, categories_from_data=row_from_data or column_from_data),
    key="tables_download", file_stem="noisy-table")

plan_panel.add_to_plan(dataset_key, lambda: plan_entries.tables_query(
    loaded, person.current_unit(dataset_key), row=row, column=column,
    row_categories=row_categories, column_categories=column_categories, choice=privacy),
    key="tables")

st.subheader("The error over many releases")
chosen = next(label for label, c, r, s in tables.STEPS if (c, r, s) == (clip or rescale, round_,
                                                                         rescale))
presenting.chart(charts.l1_error_histograms(
    release.histogram_edges, release.histogram_before, release.histogram_after,
    median_before=release.before.quantiles[0.5], median_after=release.after.quantiles[0.5],
    trials=release.trials, after_label=chosen.lower()), key="tables_l1_histogram")
capped = (f" Only {release.trials:,} of the {release.requested_trials:,} releases asked for "
          f"were simulated: the table has {release.true.size:,} cells."
          if release.trials < release.requested_trials else "")
st.caption("How the total L1 error of the whole table varies from one release to the next, "
           "before and after post-processing (same noise, dashed lines: medians)." + capped)
st.dataframe(release.quantile_table().style.format("{:,.2f}"), key="tables_quantiles")

st.subheader("What each post-processing step does to the error")
st.markdown(tables.STEPS_EXPLAINED)
st.dataframe(release.steps.style.format({"Mean total L1 error": "{:,.2f}",
                                         "Mean error of the table total": "{:+,.2f}",
                                         "RMS error of the table total": "{:,.2f}"}),
             hide_index=True, key="tables_steps")
st.caption(f"Means over the same {release.compare_trials:,} simulated noisy tables. Chosen now: "
           f"{chosen.lower()}. Post-processing never costs privacy.")
