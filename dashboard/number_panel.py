"""The Data page's cells to check, for the owner's eyes only: "Cells that are not numbers"
(each column's, and for a text column that is mostly numbers a button that declares it
numeric, those cells missing: ``dashboard.data.number_cells``), and the cells that could run
as formulas in a spreadsheet (``dashboard.data.formula_cells``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import person, state
from dashboard.data import number_cells as nc
from dashboard.data import schema as sc
from dashboard.data.formula_cells import formula_cells
from dashboard.text import plain

#: At most this many different non-numbers are listed per column (the most frequent).
SHOWN = 50


@st.cache_data(show_spinner=False, max_entries=8)
def _found(_loaded, data_key: str, declared: tuple[str, ...]) -> list[nc.NumberCells]:
    return nc.number_cells(_loaded)


def _declare(data_key: str, found: nc.NumberCells) -> None:
    loaded = state.dataset()
    unit = person.current_unit(data_key)
    state.declare_schema(data_key, nc.declared_numeric_schema(sc.of_dataset(loaded, unit),
                                                              found))
    st.session_state[f"numbers_declared::{data_key}"] = found.column


def formula_cells_section(loaded) -> None:
    """The cells the upload's formula warning counts, listed per column (nothing when
    none)."""
    found = formula_cells(loaded)
    if not found:
        return
    with st.expander("Cells that could run as formulas in a spreadsheet", expanded=False):
        st.caption("Kept as text on every page and in every release; every download writes "
                   "them escaped (a leading ') so a spreadsheet shows them, never runs them. "
                   "For your eyes only: never published.")
        for column, cells in found.items():
            st.markdown(f"**{plain(column)}**: {int(cells.sum()):,} cells")
            st.dataframe(pd.DataFrame({"cell": [str(t) for t in cells.index[:SHOWN]],
                                       "rows": cells.to_numpy()[:SHOWN]}), hide_index=True)


def number_cells_section(loaded, data_key: str) -> None:
    """Draw the section (nothing when every column reads cleanly)."""
    declared = tuple(sorted(c for c, d in loaded.domains.items() if d.kind == "numeric"))
    found = _found(loaded, data_key, declared)
    if not found:
        return
    st.subheader("Cells that are not numbers")
    st.caption(
        "Every release reads a cell of a numeric column by one rule: a number as written "
        "(1500, 1.5e3, -2), else missing; so does every query of a column declared numeric. "
        "These cells are missing there: \"unknown\", and \"12,500\" too (no page and no "
        "release reads thousands separators: write 12500 in the file to count it). Shown "
        "for your eyes only: never published.")
    just = st.session_state.pop(f"numbers_declared::{data_key}", None)
    if just is not None:
        st.success(f"{plain(just)} is declared numeric: its cells that are not numbers are "
                   "missing. Its bounds were read off the data (flagged): type public bounds "
                   "in the declared schema below.", icon=":material/check_circle:")
    for item in found:
        share = item.numbers / (item.numbers + item.not_numbers)
        what = "is numeric" if item.declared else (
            f"is read as text, but {share:.0%} of its cells are numbers")
        st.markdown(f"**{plain(item.column)}** {what}: {item.not_numbers:,} "
                    f"cell{'s' if item.not_numbers != 1 else ''} "
                    f"{'are' if item.not_numbers != 1 else 'is'} not a number "
                    f"({len(item.others):,} different).")
        table = pd.DataFrame({"cell": [str(t) for t in item.others.index[:SHOWN]],
                              "rows": item.others.to_numpy()[:SHOWN]})
        st.dataframe(table, hide_index=True)
        if not item.declared:
            st.button(f"Declare {plain(item.column)} numeric (these cells missing)",
                      key=f"numbers_declare::{data_key}::{item.column}",
                      on_click=_declare, args=(data_key, item),
                      help="Offers it to sums, means and quantiles; bounds are read off the "
                           "data and flagged until you type public ones.")
