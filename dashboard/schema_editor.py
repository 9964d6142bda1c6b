"""The declared-schema section of the Data page: an editable table of the columns (role,
categories, bounds, bin edges, origin), "Apply", "Fill from the data", and the schema as a
JSON file to download or upload. Every page reads what is applied here
(``state.dataset()``); the person id is the privacy unit's (``dashboard.person``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import person, state
from dashboard.data import column_facts, left_out
from dashboard.data import schema as sc
from dashboard.data import schema_table as tab
from dashboard.text import plain
from engine import EngineError

ROLE_HELP = ("categorical: counted per declared category (numbers allowed: 0/1 flags, "
             "codes); numeric: clamped to the bounds, binned by the edges; person id: the "
             "privacy unit; ignore: offered to no query")

CATEGORIES_HELP = ('Every category (empty ones too), separated by commas. One that holds a '
                   'comma, a double quote or a line break, or keeps spaces at either end, goes '
                   'in double quotes, a quote inside typed twice: "Craftsmen, Foremen", '
                   'Laborers is two categories.')


BOUND_HELP = "A number: -2, 0.5, 1e6 (a minus sign − or – is read as -)."


def _kinds(relation) -> dict[str, str]:
    return {c.name: c.kind for c in relation.column_info()}


def _file_stem(name: str) -> str:
    for suffix in (".csv.gz", ".csv", ".parquet", ".tsv", ".txt", ".gz"):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return name


def _apply(data_key: str, declared: sc.Schema, unit: person.PrivacyUnit) -> None:
    """Declare ``declared`` and its person id (keeping the unit's bounds when the person id
    stays the same)."""
    state.declare_schema(data_key, declared)
    new = declared.unit
    if new != unit:
        person.set_unit(data_key, new)


def schema_section(loaded, data_key: str) -> None:
    """Draw the section for the dataset the pages see (``state.dataset()``)."""
    ss = st.session_state
    relation = loaded.relation
    st.subheader("Declared schema: what is public about each column")
    st.caption("What the query pages may use without looking at the data: categories, "
               "bounds, bin edges, and which column identifies a person. Declare them from "
               "public documentation or general knowledge; anything read off the data is "
               "flagged wherever it is used. " + ROLE_HELP + ".")
    unit = person.current_unit(data_key)
    current = sc.of_dataset(loaded, unit)
    table, table_key = _base(data_key, current, relation)
    edited = st.data_editor(
        table, key=table_key, hide_index=True, width="stretch",
        disabled=["column", "type"],
        column_config={
            "role": st.column_config.SelectboxColumn("role", options=tab.ROLE_CHOICES,
                                                     required=True, help=ROLE_HELP),
            "categories": st.column_config.TextColumn(
                "categories", help=CATEGORIES_HELP),
            # text cells read by schema_table.read_bound: a number cell drops a typed or
            # pasted minus sign it does not know (U+2212), and −2 became 2
            "lower": st.column_config.TextColumn("lower", help=BOUND_HELP),
            "upper": st.column_config.TextColumn("upper", help=BOUND_HELP),
            "bins": st.column_config.TextColumn("bin edges",
                                                help="Numbers separated by commas."),
            "origin": st.column_config.SelectboxColumn(
                "origin", options=sc.ORIGINS, required=True,
                help="public: documentation; typed: your own knowledge; data: read off the "
                     "data (not private, flagged)"),
            "source": st.column_config.TextColumn("source", help="Where it comes from."),
        })
    apply, fill, download = st.columns(3)
    # applied in a callback, before the page is drawn: one run, and every section above the
    # table (the profile's public domains, the unit) already shows what was applied
    apply.button("Apply the declarations", key=f"schema_apply::{data_key}", type="primary",
                 on_click=_on_apply, args=(data_key, current, unit, relation.columns))
    problems = ss.pop(f"schema_problems::{data_key}", None)
    if problems:
        st.error("Not applied — fix these and apply again (nothing else changed):\n\n"
                 + "\n".join(f"- {plain(p, limit=300)}" for p in problems),
                 icon=":material/error:")
    # said until the declarations change again (a rerun, e.g. the editor's own, keeps it)
    said, applied = ss.get(f"schema_applied::{data_key}") or (None, None)
    if said is None and applied is not None:   # the run after applying: what was applied
        ss[f"schema_applied::{data_key}"] = (sc.to_json(current), applied)
    elif said is not None and said != sc.to_json(current):
        ss.pop(f"schema_applied::{data_key}", None)
        applied = None
    if applied is not None:
        st.success("Applied: " + ("; ".join(plain(a, limit=300) for a in applied[:20])
                                  + ("; …" if len(applied) > 20 else "") if applied else
                                  "nothing changed, the declarations were already these."),
                   icon=":material/check_circle:")
    if fill.button("Fill the undeclared columns from the data",
                   key=f"schema_fill::{data_key}",
                   help="Bounds from the minimum and maximum, categories from the values "
                        "found: not private, and flagged as read off the data."):
        _fill(loaded, data_key, tab.with_implied_roles(edited, table)[0])
    download.download_button(
        "Download the schema (JSON)", sc.to_json(current, dataset=loaded.name),
        file_name=f"{_file_stem(loaded.name)}.schema.json", mime="application/json",
        key=f"schema_download::{data_key}")
    _upload(loaded, data_key, unit)
    for column in loaded.domains:   # the owner's eyes: the rows each list leaves out
        if (note := left_out.left_out_note(loaded, column)) is not None:
            st.warning(note, icon=":material/report:")
        domain = loaded.domains[column]
        if (note := left_out.same_key_note(column, domain.categories or ())) is not None:
            st.warning(note, icon=":material/report:")
    flagged = [c for c, d in loaded.domains.items() if d.from_data]
    if flagged:
        st.warning("Read off the data (not covered by the privacy guarantee): "
                   + ", ".join(plain(c) for c in flagged) + ". Declare them from public "
                   "knowledge for a real release.", icon=":material/report:")


def _new_base(data_key: str, token: str, table: pd.DataFrame) -> None:
    """Keep ``table`` as the one the edits apply to, under a new editor key: the browser's
    editor starts again from it (with the same key it would keep its old edits on top)."""
    ss = st.session_state
    old = ss.get(f"schema_base::{data_key}")
    if old is not None:
        ss.pop(old[2], None)
    version = ss.get(f"schema_version::{data_key}", 0) + 1
    ss[f"schema_version::{data_key}"] = version
    ss[f"schema_base::{data_key}"] = (token, table, f"schema_table::{data_key}::{version}")


def _base(data_key: str, current: sc.Schema, relation) -> tuple[pd.DataFrame, str]:
    """The table the editor's edits apply to and the editor's key, kept for the widget's
    life: the declarations (or the table filled from the data) as they were when it was
    drawn. Both change only when the declarations change (applied here or elsewhere)."""
    ss = st.session_state
    token = sc.to_json(current)
    stored = ss.get(f"schema_base::{data_key}")
    if stored is None or stored[0] != token:
        _new_base(data_key, token, tab.to_table(current, relation.columns, _kinds(relation)))
        stored = ss[f"schema_base::{data_key}"]
    return stored[1], stored[2]


def _edited(base: pd.DataFrame, widget: dict | None) -> pd.DataFrame:
    """``base`` with the editor's edits (its session state: ``edited_rows``) applied."""
    out = base.copy()
    for row, cells in ((widget or {}).get("edited_rows") or {}).items():
        for column, value in cells.items():
            out.loc[out.index[int(row)], column] = np.nan if value is None and \
                column in ("lower", "upper") else value
    return out


def _on_apply(data_key: str, current: sc.Schema, unit: person.PrivacyUnit,
              columns: list[str]) -> None:
    """Apply the edited table; record what changed (or the problems) for the page to say."""
    ss = st.session_state
    stored = ss.get(f"schema_base::{data_key}")
    if stored is None:
        return
    _, base, table_key = stored
    edited = tab.with_hand_edits(_edited(base, ss.get(table_key)), base)
    table, problems = tab.with_implied_roles(edited, base)
    declared, more = tab.from_table(table, max_rows=unit.max_rows, max_groups=unit.max_groups)
    problems += more
    if problems:
        ss[f"schema_problems::{data_key}"] = problems
        return
    _apply(data_key, declared, unit)
    ss[f"schema_applied::{data_key}"] = (None, tab.changes(current, declared, columns))
    ss.pop(table_key, None)
    ss.pop(f"schema_base::{data_key}", None)   # the next run draws the declarations


def _fill(loaded, data_key: str, edited) -> None:
    """Fill the rows still undeclared (``edited``: the edits, with the roles typed cells
    imply, so categories typed by hand in such a row are kept, not replaced by the data's)."""
    relation = loaded.relation
    try:
        profile = column_facts.profile_table(relation)
        kinds = _kinds(relation)
        cats = {}
        for column in edited.loc[edited["role"] == tab.NOT_DECLARED, "column"]:
            if kinds.get(column) in ("text", "boolean"):
                try:
                    cats[column] = column_facts.data_categories(relation, column)
                except ValueError:
                    continue   # too many values to list
        token = st.session_state[f"schema_base::{data_key}"][0]
        # the edits are in the filled table
        _new_base(data_key, token, tab.filled_from_data(edited, profile, cats))
    except (EngineError, ValueError) as exc:
        st.error(f"Could not read the data: {plain(exc, limit=300)}")
        return
    st.rerun()


def uploaded_summary(name: str, declared: sc.Schema) -> str:
    """What an uploaded schema file declares, in one line: how many columns, by role, how
    many with bounds, and the person id with its bounds."""
    roles = [declared.role(c) for c in (*declared.domains, *declared.ignored)]
    if declared.person is not None:
        roles.append("person id")
    by_role = ", ".join(f"{roles.count(r)} {r}" for r in sc.ROLES if roles.count(r))
    bounded = sum(1 for d in declared.domains.values() if d.kind == "numeric")
    unit = "" if declared.person is None else (
        f"; the person id with at most {declared.unit.max_rows} row"
        f"{'s' if declared.unit.max_rows != 1 else ''} per person")
    return (f"the schema file {name}: {len(roles)} column{'s' if len(roles) != 1 else ''} "
            f"declared ({by_role or 'none'}), {bounded} with bounds{unit}")


def _upload(loaded, data_key: str, unit: person.PrivacyUnit) -> None:
    ss = st.session_state
    uploaded = st.file_uploader("Upload a schema (JSON)", type=["json"],
                                key=f"schema_upload::{data_key}",
                                help="A file downloaded here, or a NAME.schema.json.")
    if uploaded is None:
        ss.pop(f"schema_upload_error::{data_key}", None)
        return
    done = f"schema_uploaded::{data_key}"
    if ss.get(done) != uploaded.file_id:
        ss[done] = uploaded.file_id
        try:
            declared = sc.from_json(uploaded.getvalue(), loaded.relation.columns)
        except sc.SchemaError as exc:
            ss[f"schema_upload_error::{data_key}"] = str(exc)
        else:
            ss.pop(f"schema_upload_error::{data_key}", None)
            current = sc.of_dataset(loaded, unit)
            _apply(data_key, declared, unit)
            # said as Apply's confirmation is (issue 35 item 4: an upload confirmed nothing)
            ss[f"schema_applied::{data_key}"] = (None, [
                uploaded_summary(uploaded.name, declared),
                *tab.changes(current, declared, loaded.relation.columns)])
            st.rerun()   # the declarations changed: the table is drawn again from them
    problem = ss.get(f"schema_upload_error::{data_key}")
    if problem:
        st.error(f"The schema was not applied: {plain(problem, limit=500)}",
                 icon=":material/error:")
