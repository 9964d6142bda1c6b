"""Data page: the loaded dataset as it is — first rows, a profile per column, distributions.

For the data owner's eyes: nothing on this page is private.
"""

from __future__ import annotations

import ast

import streamlit as st

from dashboard import charts, controls, datasets, presenting, state
from dashboard.data import column_facts
from dashboard.data.schema import format_categories
from dashboard.number_panel import formula_cells_section, number_cells_section
from dashboard.schema_editor import schema_section
from dashboard.text import plain
from dashboard.unit_panel import privacy_unit_section

COLUMNS_KEY = "data_columns"
COLUMNS_OWNER = "data_columns_dataset"   # which dataset the chosen columns belong to


def domain_text(domain: datasets.ColumnDomain | None) -> str:
    """A column's public domain in words, for the profile table."""
    if domain is None:
        return "none declared"
    if domain.kind == "numeric":
        flag = " (read off the data)" if domain.from_data else ""
        return f"[{domain.lower:g}, {domain.upper:g}] {domain.unit}".strip() + flag
    cats = domain.categories or ()
    more = ", …" if len(cats) > 6 else ""
    return f"{len(cats)} categories: {format_categories(cats[:6])}{more}"


def parse_names(raw: str) -> list[str]:
    """Column names from the URL (a Python list literal; never evaluated as code)."""
    try:
        names = ast.literal_eval(raw) if len(raw) <= 100_000 else None
    except (SyntaxError, MemoryError, RecursionError):
        names = None   # a mangled URL: fall back to the default columns
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("not a list of column names")
    return names


loaded = state.dataset()
relation = loaded.relation   # every figure below is computed by the engine
is_upload = state.dataset_key().startswith("upload:")

st.title("Data")
n_rows_total, n_columns = relation.shape
st.markdown(f"**{plain(loaded.name)}**: {n_rows_total:,} rows × {n_columns} columns. "
            f"{plain(loaded.source, limit=300)}")
st.warning(
    "**For the data owner's eyes only.** This page shows the data itself, with no privacy "
    "protection: the preview, the counts and the minimum and maximum below are exact. Do not "
    "publish anything from this page; the other pages show what a [differentially private]"
    "(./glossary#differential-privacy) release would look "
    "like.", icon=":material/visibility:")
for warning in loaded.warnings:
    st.warning(plain(warning, limit=400), icon=":material/report:")
if loaded.file is not None and (missing := column_facts.missing_warning(relation)) is not None:
    # an upload's parser says it; a data-folder file's count is the engine's (its profile)
    st.warning(plain(missing, limit=400), icon=":material/report:")

st.subheader("First rows")
n_rows = controls.select("Rows to show", (5, 10, 20, 50, 100), key="data_preview_rows",
                         default=10)
st.dataframe(column_facts.first_rows(relation, n_rows), width="stretch")

st.subheader("Column profile")
# filled below, once the unit controls have run: the public domains the table shows
# are those of the dataset as the controls leave it (a person id has none), never
# the former unit's until the next run
profile_box = st.container()

number_cells_section(loaded, state.dataset_key())
formula_cells_section(loaded)
privacy_unit_section(relation, state.dataset_key())
# read again: the unit controls may have just changed the unit, and the dataset the pages see
# hides the person id (drawn from the one read above, the table showed a former person id as
# "ignore", and the next run drew a new editor, dropping the cells typed in it meanwhile)
shown = state.dataset()
with profile_box:
    profile = column_facts.profile_table(relation)
    profile["public domain"] = [domain_text(shown.domains.get(c)) for c in profile["column"]]
    profile["domain source"] = [getattr(shown.domains.get(c), "source", "") for c in
                                profile["column"]]
    st.dataframe(profile, hide_index=True, width="stretch", placeholder="—", column_config={
        "missing": st.column_config.NumberColumn("missing", help="cells with no value"),
        "distinct": st.column_config.NumberColumn("distinct", help="different non-missing values"),
        "min": st.column_config.NumberColumn("min (data)", help="read off the data: not public"),
        "max": st.column_config.NumberColumn("max (data)", help="read off the data: not public"),
    })
    st.caption(
        "Min and max are read off the data, so they are not public bounds: clamping to them "
        "would leak information about the people at the extremes. The public domain comes from "
        "documentation or general knowledge (its source is shown); the query pages use it. A "
        "domain marked \"read off the data\" has no documented bound: the pages flag it too. "
        + ("An uploaded file has no declared domains: declare its categories and bounds in the "
           "declared schema below." if is_upload and not shown.domains else ""))
schema_section(shown, state.dataset_key())

st.subheader("Distributions")
columns = relation.columns
ss = st.session_state
state.remembered(COLUMNS_KEY, columns[:2], parse=parse_names)
chosen = [c for c in ss[COLUMNS_KEY] if c in columns] if isinstance(ss[COLUMNS_KEY], list) else []
if ss.get(COLUMNS_OWNER, state.dataset_key()) != state.dataset_key():
    chosen = columns[:2]   # another dataset: start from its first two columns
ss[COLUMNS_KEY], ss[COLUMNS_OWNER] = chosen, state.dataset_key()
picked = st.multiselect("Columns to draw", columns, key=COLUMNS_KEY,
                        help="A bar chart for a categorical column, a histogram for a "
                             "numeric one.")
if is_upload:   # column names of an upload stay out of the URL (and the browser history)
    ss[state.SAVED][COLUMNS_KEY] = ss[COLUMNS_KEY]
else:
    state.remember(COLUMNS_KEY)

# as the unit controls left the dataset (a person id just chosen is no query column)
numeric = set(datasets.numeric_columns(shown))
cells = st.columns(2)
for i, column in enumerate(picked):
    domain = shown.domains.get(column)
    with cells[i % 2]:
        if column in numeric:
            bounds = {"unit": domain.unit, "lower": domain.lower, "upper": domain.upper} \
                if domain is not None and domain.kind == "numeric" else {}
            presenting.chart(charts.binned_histogram(
                column_facts.numeric_distribution(
                    relation, column, (bounds["lower"], bounds["upper"]) if bounds else None),
                column=column, **bounds),
                key=f"data_chart_{i}")
            st.caption(f"How many rows have each value of {plain(column)}"
                       + (" (dashed lines: the public bounds)." if bounds else "."))
        else:
            categories = domain.categories if domain is not None else None
            try:
                counts = column_facts.category_distribution(relation, column, categories)
            except (ValueError, datasets.EngineError) as exc:   # too many values, dates…
                st.info(plain(exc, limit=300))
                continue
            presenting.chart(charts.counted_bars(counts, column=column), key=f"data_chart_{i}")
            st.caption(f"How many rows fall in each category of {plain(column)}; declared "
                       "categories with no rows show as empty bars.")
if not picked:
    st.info("Pick one or more columns above to see their distributions.")
