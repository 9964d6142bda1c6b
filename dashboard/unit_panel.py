"""The privacy-unit controls of the Data page: one row = one person, or a person-id column
with contribution bounds (``dashboard.person`` keeps the choice for every page).

The controls are drawn from the unit the session holds each time the page is shown (a real
browser forgets widget values on other pages; the unit itself lives in a plain session key).
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from dashboard import charts, person, presenting
from dashboard.text import plain
from engine import EngineError, RowsPerPerson

ONE_ROW_CHOICE = "One row = one person"
#: The one reading of a person id (``engine.cells.cell_key``), said beside the choice: the
#: page, every release and the exported programs read ids by it.
ID_RULE = ("One id, one person, on this page and in every release: white space around an id "
           "is ignored, a whole number is one id however it is written (12, 012, 12.0, 1.2e1), "
           "and any other text is compared as written (ab and AB are two people).")
#: Largest bounds the controls accept.
MAX_ROWS_BOUND = 100_000
MAX_GROUPS_BOUND = 10_000
#: A person id just chosen starts with the max rows that keeps all the rows of this share of
#: the people (read off the data, flagged so on the release card).
SUGGESTED_SHARE = 0.9
#: A bound that drops more than this share of the rows is said in a warning, not a caption.
LOUD_DROP_SHARE = 0.1


def _keys(data_key: str) -> tuple[str, str, str, str]:
    # one set of widgets per dataset: a unit declared for one never shows up on another
    return tuple(f"unit_{what}::{data_key}"   # type: ignore[return-value]
                 for what in ("person", "rows", "limit", "groups"))


def _start(keys: tuple[str, str, str, str], unit: person.PrivacyUnit,
           columns: list[str], seen: str) -> None:
    """Show ``unit`` in the controls unless they already show it; a unit changed elsewhere
    (another page's "Use max rows") wins over the controls' old values."""
    ss = st.session_state
    k_person, k_rows, k_limit, k_groups = keys
    if ss.get(seen) != unit:
        for key in keys:
            ss.pop(key, None)
    if k_person not in ss or ss[k_person] not in [ONE_ROW_CHOICE, *columns]:
        ss[k_person] = (unit.person_column if unit.person_column in columns
                       else ONE_ROW_CHOICE)
    ss.setdefault(k_rows, unit.max_rows if unit.person_column else 1)
    ss.setdefault(k_limit, unit.max_groups is not None)
    ss.setdefault(k_groups, unit.max_groups or 1)


def privacy_unit_section(relation, data_key: str) -> person.PrivacyUnit:
    """Draw the controls, declare the unit they say for ``data_key``, and return it."""
    st.subheader("Privacy unit: who is protected")
    columns = relation.columns
    keys = _keys(data_key)
    seen = f"unit_shown::{data_key}"   # the unit the controls were last drawn from
    _start(keys, person.current_unit(data_key), columns, seen)
    k_person, k_rows, k_limit, k_groups = keys
    ss = st.session_state
    chosen = st.selectbox(
        "Person-id column", [ONE_ROW_CHOICE, *columns], key=k_person,
        format_func=str,
        help="If one person can have several rows (visits, transactions, answers), choose "
             "the column that identifies them: the guarantee then covers all of a person's "
             "rows, not one row.")
    if chosen != ONE_ROW_CHOICE:
        st.caption(ID_RULE)
    suggested = None
    if chosen != ONE_ROW_CHOICE and chosen != person.current_unit(data_key).person_column:
        # a person id just chosen: max rows 1 would drop most rows of a panel in silence, so
        # the bound starts where most people's rows are kept, flagged as read off the data
        suggested = _suggested_max_rows(relation, chosen)
        if suggested is not None:
            ss[k_rows] = suggested
    if chosen == ONE_ROW_CHOICE:
        unit = person.ONE_ROW
    else:
        left, middle, right = st.columns(3)
        max_rows = left.number_input(
            "Max rows per person", min_value=1, max_value=MAX_ROWS_BOUND, step=1, key=k_rows,
            help="Rows a person keeps (in each group, for group-by queries); the rest are "
                 "dropped at random. Larger: less bias, more noise.")
        limit = middle.checkbox("Also bound the groups per person", key=k_limit,
                                help="For group-by queries: a person keeps rows in at most "
                                     "this many groups.")
        max_groups = right.number_input("Max groups per person", min_value=1,
                                        max_value=MAX_GROUPS_BOUND, step=1, key=k_groups,
                                        disabled=not limit)
        unit = person.PrivacyUnit(chosen, int(max_rows), int(max_groups) if limit else None,
                                  bounds_origin="data" if suggested is not None else "typed")
    if unit != person.current_unit(data_key):
        person.set_unit(data_key, unit)
    st.session_state[seen] = unit
    st.info(f"**{plain(unit.describe())}.** {plain(person.neighbours(unit))} Every query page "
            "uses this unit and shows it next to the sensitivity.", icon=":material/person:")
    if not unit.per_row:
        _rows_per_person(relation, person.current_unit(data_key))
    return unit


def _suggested_max_rows(relation, column: str) -> int | None:
    """The max rows that keeps every row of ``SUGGESTED_SHARE`` of the people (read off
    the data: the unit says so); None when the rows cannot be counted."""
    try:
        counts = relation.answer(RowsPerPerson(column))
    except (EngineError, ValueError):
        return None
    if counts.total_people == 0:
        return None
    return min(people_quantile(counts.rows, counts.people, SUGGESTED_SHARE), MAX_ROWS_BOUND)


def people_quantile(rows, people, share: float) -> int:
    """The smallest number of rows that at least ``share`` of the people have at most
    (``people[i]`` people have ``rows[i]`` rows each)."""
    rows, people = np.asarray(rows, dtype=np.int64), np.asarray(people, dtype=np.int64)
    order = np.argsort(rows, kind="stable")
    covered = np.cumsum(people[order])
    return int(rows[order][np.searchsorted(covered, share * covered[-1])])


def _rows_per_person(relation, unit: person.PrivacyUnit) -> None:
    try:
        counts = relation.answer(RowsPerPerson(unit.person_column))
    except (EngineError, ValueError) as exc:
        st.error(f"Rows per person could not be counted: {plain(exc, limit=300)} Choose "
                 "another person-id column.", icon=":material/error:")
        return
    if counts.total_people == 0:
        st.warning(f"No row has a value in {plain(unit.person_column)}: choose another column.")
        return
    presenting.chart(charts.rows_per_person(counts.rows, counts.people, person=unit.person_column,
                                            max_rows=unit.max_rows), key="data_rows_per_person")
    kept = counts.kept_rows(unit.max_rows)
    total = int((counts.rows * counts.people).sum())
    over = int(counts.people[counts.rows > unit.max_rows].sum())
    if unit.bounds_origin == "data":
        st.warning(f"Max rows = {unit.max_rows:,} was read off the data: "
                   f"{SUGGESTED_SHARE:.0%} of people have at most {unit.max_rows:,} rows. "
                   "Such a bound is not covered by the privacy guarantee, and every release "
                   "card says so: type a bound you know without looking (a survey's waves, a "
                   "study's visits), or draw one privately on the query pages.",
                   icon=":material/report:")
    if total and total - kept > LOUD_DROP_SHARE * total:
        st.warning(f"With at most {unit.max_rows:,} row{'s' if unit.max_rows != 1 else ''} "
                   f"per person, {total - kept:,} of {total:,} rows "
                   f"({(total - kept) / total:.0%}) are dropped before any query: raise max "
                   "rows to keep them.", icon=":material/report:")
    st.caption(
        f"{counts.total_people:,} people; the most rows one person has is "
        f"{counts.max_rows:,}. With at most {unit.max_rows:,} rows per person, "
        f"{over:,} people lose rows and {total - kept:,} of {total:,} rows are dropped "
        "(before any group bound). Read off the data, for the data owner's eyes: choosing "
        "the bound by looking at this is not private (the query pages offer a private route)."
        + (f" {counts.missing_person_rows:,} rows have no {plain(unit.person_column)} and are left "
           "out." if counts.missing_person_rows else ""))
