"""The declared-schema section of the Data page: an editable table of the columns (role,
categories, bounds, bin edges, origin), "Apply", "Fill from the data", and the schema as a
JSON file to download or upload. Every page reads what is applied here
(``state.dataset()``); the person id is the privacy unit's (``dashboard.person``)."""

from __future__ import annotations

import streamlit as st

from dashboard import person, state
from dashboard.data import facts
from dashboard.data import schema as sc
from dashboard.data import schema_table as tab
from dashboard.text import plain
from engine import EngineError

ROLE_HELP = ("categorical: counted per declared category (numbers allowed: 0/1 flags, "
             "codes); numeric: clamped to the bounds, binned by the edges; person id: the "
             "privacy unit; ignore: offered to no query")


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
    table_key = f"schema_table::{data_key}"
    # the table the edits apply to: the declarations, or the filled-in table until applied
    table = ss.get(f"schema_filled::{data_key}")
    if table is None:
        table = tab.to_table(current, relation.columns, _kinds(relation))
    edited = st.data_editor(
        table, key=table_key, hide_index=True, width="stretch",
        disabled=["column", "type"],
        column_config={
            "role": st.column_config.SelectboxColumn("role", options=tab.ROLE_CHOICES,
                                                     required=True, help=ROLE_HELP),
            "categories": st.column_config.TextColumn(
                "categories", help="Every category, separated by commas (empty ones too)."),
            "lower": st.column_config.NumberColumn("lower"),
            "upper": st.column_config.NumberColumn("upper"),
            "bins": st.column_config.TextColumn("bin edges",
                                                help="Numbers separated by commas."),
            "origin": st.column_config.SelectboxColumn(
                "origin", options=sc.ORIGINS, required=True,
                help="public: documentation; typed: your own knowledge; data: read off the "
                     "data (not private, flagged)"),
            "source": st.column_config.TextColumn("source", help="Where it comes from."),
        })
    apply, fill, download = st.columns(3)
    if apply.button("Apply the declarations", key=f"schema_apply::{data_key}", type="primary"):
        declared, problems = tab.from_table(edited, max_rows=unit.max_rows,
                                            max_groups=unit.max_groups)
        if problems:
            st.error("Not applied — fix these and apply again (nothing else changed):\n\n"
                     + "\n".join(f"- {plain(p, limit=300)}" for p in problems),
                     icon=":material/error:")
        else:
            _apply(data_key, declared, unit)
            ss.pop(table_key, None)
            ss.pop(f"schema_filled::{data_key}", None)
            st.rerun()
    if fill.button("Fill the undeclared columns from the data",
                   key=f"schema_fill::{data_key}",
                   help="Bounds from the minimum and maximum, categories from the values "
                        "found: not private, and flagged as read off the data."):
        _fill(loaded, data_key, edited)
    download.download_button(
        "Download the schema (JSON)", sc.to_json(current, dataset=loaded.name),
        file_name=f"{_file_stem(loaded.name)}.schema.json", mime="application/json",
        key=f"schema_download::{data_key}")
    _upload(loaded, data_key, unit)
    flagged = [c for c, d in loaded.domains.items() if d.from_data]
    if flagged:
        st.warning("Read off the data (not covered by the privacy guarantee): "
                   + ", ".join(plain(c) for c in flagged) + ". Declare them from public "
                   "knowledge for a real release.", icon=":material/report:")


def _fill(loaded, data_key: str, edited) -> None:
    relation = loaded.relation
    try:
        profile = facts.profile_table(relation)
        kinds = _kinds(relation)
        cats = {}
        for column in edited.loc[edited["role"] == tab.NOT_DECLARED, "column"]:
            if kinds.get(column) in ("text", "boolean"):
                try:
                    cats[column] = facts.data_categories(relation, column)
                except ValueError:
                    continue   # too many values to list
        st.session_state[f"schema_filled::{data_key}"] = tab.filled_from_data(edited, profile,
                                                                             cats)
        st.session_state.pop(f"schema_table::{data_key}", None)   # edits are in the new table
    except (EngineError, ValueError) as exc:
        st.error(f"Could not read the data: {plain(exc, limit=300)}")
        return
    st.rerun()


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
            _apply(data_key, declared, unit)
            ss.pop(f"schema_table::{data_key}", None)
            ss.pop(f"schema_filled::{data_key}", None)
            st.rerun()
    problem = ss.get(f"schema_upload_error::{data_key}")
    if problem:
        st.error(f"The schema was not applied: {plain(problem, limit=500)}",
                 icon=":material/error:")
