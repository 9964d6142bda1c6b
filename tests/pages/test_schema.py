"""The declared schema (issue 12, item 1): its JSON form, the editable table, and the Data
page applying it for every page — integer-coded categories, declared bounds, origins flagged,
bad files refused with a message and nothing lost."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.data import schema as sc
from dashboard.data import schema_table as tab
from dashboard.data.folder import read_schema
from dashboard.person import PrivacyUnit
from tests.conftest import open_app

ADULT = datasets.BUILTIN_DATASETS[0]
UPLOAD = "Upload your own CSV"
ROWS = 60
# a 0/1 flag and a survey code held as integers, a team (text), a salary and a person id
CSV = ("pid,flag,code,team,salary\n" + "\n".join(
    f"{i // 2},{i % 2},{1 + i % 3},{'abc'[i % 3]},{1000 * (i + 1)}" for i in range(ROWS))
    + "\n").encode()
FRAME = pd.read_csv(__import__("io").BytesIO(CSV))


def uploaded(page: str | None = None):
    at = open_app()
    at.selectbox(key="dataset_choice").select(UPLOAD).run()
    at.file_uploader(key="upload_file").set_value(("people.csv", CSV, "text/csv")).run()
    at.switch_page("app_pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload_schema(at, payload: dict | str | bytes):
    key = at.session_state["dataset"].key or f"upload:{at.session_state['upload_file_id']}"
    data = payload if isinstance(payload, bytes) else (
        payload if isinstance(payload, str) else json.dumps(payload)).encode()
    at.file_uploader(key=f"schema_upload::{key}").set_value(("people.schema.json", data,
                                                             "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


SCHEMA = {"columns": {
    "flag": {"role": "categorical", "categories": [0, 1, 2], "origin": "public",
             "source": "the survey's codebook"},
    "salary": {"role": "numeric", "lower": 0, "upper": 100_000, "integer": True,
               "bins": [0, 20_000, 50_000, 100_000], "origin": "typed"},
    "pid": {"role": "person id"}},
    "privacy_unit": {"person": "pid", "max_rows": 2}}


def test_json_round_trip_keeps_every_declaration():
    adult = datasets.load_builtin(ADULT)
    declared = sc.of_dataset(adult, PrivacyUnit())
    back = sc.from_json(sc.to_json(declared, dataset=ADULT), list(adult.frame.columns))
    assert back.domains.keys() == declared.domains.keys()
    for column, domain in declared.domains.items():
        got = back.domains[column]
        assert (got.kind, got.categories, got.lower, got.upper, got.integer, got.bins,
                got.from_data) == (domain.kind, domain.categories, domain.lower,
                                   domain.upper, domain.integer, domain.bins, domain.from_data)
        assert sc.origin_of(got) == sc.origin_of(domain)
    assert back.domains["capital_loss"].from_data   # the one read off the data stays flagged


def test_older_files_without_roles_read_the_same():
    old = {"columns": {"age": {"lower": 0, "upper": 120, "unit": "years"},
                       "sex": {"categories": ["F", "M"]}}}
    declared = sc.from_json(json.dumps(old), ["age", "sex"])
    assert declared.domains["age"].kind == "numeric" and declared.domains["age"].upper == 120
    assert declared.domains["sex"].categories == ("F", "M")


def test_the_privacy_unit_has_one_spelling_and_older_files_still_read():
    """The schema file writes the plan file's spelling ("person_column"), and reads both."""
    unit = PrivacyUnit("pid", 2, None, "public")
    written = json.loads(sc.to_json(sc.Schema(unit=unit)))
    assert written["privacy_unit"] == {"person_column": "pid", "max_rows": 2,
                                       "max_groups": None, "bounds_origin": "public"}
    columns = list(FRAME.columns)
    back = sc.from_json(json.dumps(written), columns)
    assert back.unit == unit and back.unit.bounds_origin == "public"
    older = sc.from_json(json.dumps({"privacy_unit": {"person": "pid", "max_rows": 2}}), columns)
    assert older.unit == unit and older.person == "pid"
    # the unit's person column defaults to the column whose role is person id
    by_role = sc.from_json(json.dumps({"columns": {"pid": {"role": "person id"}},
                                       "privacy_unit": {"max_rows": 2}}), columns)
    assert by_role.unit == unit
    for spelling in ("person", "person_column"):
        *_, declared = read_schema({"privacy_unit": {spelling: "pid", "max_rows": 2}}, "f")
        assert declared == unit
    with pytest.raises(sc.SchemaError, match="not in the data"):
        sc.from_json(json.dumps({"privacy_unit": {"person_column": "nobody"}}), columns)


@pytest.mark.parametrize("payload, message", [
    ("{not json", "not valid JSON"),
    (json.dumps({"columns": {"nope": {"role": "ignore"}}}), "does not have"),
    (json.dumps({"columns": {"salary": {"lower": 5, "upper": 1}}}), "must be below"),
    (json.dumps({"columns": {"team": {"categories": ["a", "a"]}}}), "repeat"),
    (json.dumps({"columns": {"pid": {"role": "person id"}, "team": {"role": "person id"}}}),
     "only one column"),
    (json.dumps({"privacy_unit": {"person": "pid", "max_rows": 0}}), "whole number"),
    (json.dumps({"columns": {"team": {"role": "ordinal"}}}), "role must be one of"),
])
def test_bad_schema_files_say_what_is_wrong(payload, message):
    with pytest.raises(sc.SchemaError, match=message):
        sc.from_json(payload, list(FRAME.columns))


def test_the_table_reads_back_integer_codes_and_reports_bad_rows():
    table = tab.to_table(sc.Schema(), list(FRAME.columns), {"flag": "integer"})
    table.loc[table["column"] == "flag", ["role", "categories"]] = ["categorical", "0, 1"]
    table.loc[table["column"] == "salary", ["role", "lower", "upper"]] = ["numeric", 10, 5]
    table.loc[table["column"] == "pid", "role"] = "person id"
    declared, problems = tab.from_table(table, max_rows=3)
    assert declared.domains["flag"].categories == ("0", "1")
    assert sc.origin_of(declared.domains["flag"]) == "typed"
    assert declared.unit == PrivacyUnit("pid", 3)
    assert "salary" not in declared.domains
    assert problems == ["salary: the lower bound (10) must be below the upper bound (5)"]


def test_an_uploaded_schema_reaches_every_page():
    at = upload_schema(uploaded(), SCHEMA)
    assert not at.error, [e.value for e in at.error]
    key = f"upload:{at.session_state['upload_file_id']}"
    assert at.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit("pid", 2)
    # Noisy statistics: a histogram of the integer-coded flag over its declared codes
    at.switch_page("app_pages/statistics.py")
    at.run()
    at.selectbox(key="stats_query").select("histogram").run()
    at.selectbox(key="stats_column").select("flag").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(d.value for d in at.dataframe if "Category" in d.value.columns
                 or "category" in " ".join(map(str, d.value.columns)).lower())
    truth = [c for c in table.columns if "true" in str(c).lower()][0]
    # 2 rows per person and every pid has exactly 2 rows: nothing dropped
    assert list(table[truth]) == [ROWS // 2, ROWS // 2, 0]   # code 2 declared, no row
    # the person id is no query column
    assert "pid" not in at.selectbox(key="stats_column").options
    # Noisy statistics: the sum of salary starts from the declared bounds
    at.selectbox(key="stats_query").select("sum").run()
    at.selectbox(key="stats_column").select("salary").run()
    assert at.number_input(key="stats_upper").value == 100_000


def test_a_bad_schema_keeps_the_data_and_the_unit():
    at = uploaded()
    key = f"upload:{at.session_state['upload_file_id']}"
    at = upload_schema(at, b"{broken")
    assert any("not valid JSON" in e.value for e in at.error)
    assert at.session_state["dataset"].name == "people.csv"
    assert at.session_state.get("schema_by_dataset", {}).get(key) is None


def test_data_read_declarations_are_flagged_where_used():
    at = uploaded()
    at.button(key=f"schema_fill::upload:{at.session_state['upload_file_id']}").click().run()
    at.button(key=f"schema_apply::upload:{at.session_state['upload_file_id']}").click().run()
    assert not at.exception
    loaded = at.session_state["schema_by_dataset"][
        f"upload:{at.session_state['upload_file_id']}"]
    assert loaded.domains["salary"].from_data and loaded.domains["team"].from_data
    assert any("Read off the data" in w.value for w in at.warning)
    at.switch_page("app_pages/statistics.py")
    at.run()
    at.selectbox(key="stats_query").select("sum").run()
    at.selectbox(key="stats_column").select("salary").run()
    words = " ".join(w.value for w in at.warning) + " ".join(c.value for c in at.caption)
    assert "data" in words.lower() and "read" in words.lower()
    assert np.isclose(at.number_input(key="stats_upper").value, FRAME["salary"].max())


def test_a_schema_file_beside_a_data_file_is_read_with_roles_and_unit(tmp_path, monkeypatch):
    FRAME.to_parquet(tmp_path / "people.parquet", index=False)
    (tmp_path / "people.schema.json").write_text(json.dumps({"columns": {
        "flag": {"role": "categorical", "categories": [0, 1]},
        "code": {"role": "ignore"},
        "salary": {"role": "numeric", "lower": 0, "upper": 100_000, "bins": [0, 30_000,
                                                                              100_000]},
        "pid": {"role": "person id"}}, "privacy_unit": {"person": "pid", "max_rows": 3}}))
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app("groups.py", dataset="file:people.parquet")
    assert not at.exception and not at.error, [e.value for e in at.error]
    key = at.session_state["dataset"].key
    assert at.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit("pid", 3)
    options = at.selectbox(key="groups_by").options
    assert "flag" in options and "salary (in bins)" in options
    assert not any(o.startswith(("code", "pid")) for o in options)
    at.selectbox(key="groups_by").select("salary (in bins)").run()
    assert at.text_input(key="groups_edges").value == "0, 30000, 100000"
    table = next(d.value for d in at.dataframe if "True count" in d.value.columns)
    expected = [int((FRAME.salary < 30_000).sum()), int((FRAME.salary >= 30_000).sum())]
    assert table["True count"].tolist() == [0, *expected, 0]


def test_apply_says_what_it_applied_and_keeps_saying_it():
    """Issue 21, item 3: "Apply the declarations" confirmed nothing."""
    at = uploaded()
    key = f"upload:{at.session_state['upload_file_id']}"
    at.button(key=f"schema_fill::{key}").click().run()
    assert not at.success
    at.button(key=f"schema_apply::{key}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = " ".join(s.value for s in at.success).replace("\\", "")   # markdown escapes
    assert said.startswith("Applied:")
    assert f"salary: numeric from {FRAME.salary.min():g} to {FRAME.salary.max():g}" in said
    assert "team: categories a, b, c" in said
    # already on the page's profile, drawn above the table in the same run
    profile = next(d.value for d in at.dataframe if "public domain" in d.value.columns)
    domain = dict(zip(profile["column"], profile["public domain"], strict=True))
    assert domain["salary"].startswith(f"[{FRAME.salary.min():g}, {FRAME.salary.max():g}]")
    at.run()   # a rerun (the editor's own, a widget's) keeps the confirmation
    assert " ".join(s.value for s in at.success).replace("\\", "") == said
    at.button(key=f"schema_apply::{key}").click().run()
    assert [s.value for s in at.success] == [
        "Applied: nothing changed, the declarations were already these."]


# Issue 31, item 6: Males' occupations include "Craftsmen, Foremen_and_kindred". Filled from
# the data and applied, it was split in two at the comma: Groups counted 0 for it and dropped
# its rows in silence, and uploading a correct schema then pressing Apply split it again.
OCCUPATIONS = ("Craftsmen, Foremen_and_kindred", "Managers; Officials", 'say "hi"',
               "two\nlines", "Zürich ✓ 東京", "y" * 400, "012", "1.50", "Laborers")
# ("012" with "1.50", not "12": under the one reading of a key (engine.cells.cell_key), "012"
# and "12" are one group, 12, and "1.50" stays as written; two declared texts of one key are
# one key, which pandas' value_counts, the reference here, does not know.)
MALES = pd.DataFrame({
    "nr": np.arange(90) // 3,
    "occupation": [OCCUPATIONS[i % len(OCCUPATIONS)] if i % 4 else OCCUPATIONS[0]
                   for i in range(90)],
    "region": ["north" if i % 5 else "south" for i in range(90)],
    "wage": np.arange(90) * 10})


def males_uploaded():
    at = open_app()
    at.selectbox(key="dataset_choice").select(UPLOAD).run()
    at.file_uploader(key="upload_file").set_value(
        ("males.csv", MALES.to_csv(index=False).encode(), "text/csv")).run()
    at.switch_page("app_pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at, f"upload:{at.session_state['upload_file_id']}"


def groups_truth(at, column: str) -> dict[str, int]:
    at.switch_page("app_pages/groups.py")
    at.run()
    at.selectbox(key="groups_by").select(column).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(d.value for d in at.dataframe if "True count" in d.value.columns)
    return dict(zip(table["Group"], table["True count"].astype(int), strict=True))


def left_out_warnings(at) -> list[str]:
    return [w.value.replace("\\", "").replace("**", "") for w in at.warning
            if "leave out" in w.value]


def test_categories_holding_commas_survive_fill_apply_json_upload_apply():
    at, key = males_uploaded()
    at.button(key=f"schema_fill::{key}").click().run()
    at.button(key=f"schema_apply::{key}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    declared = at.session_state["schema_by_dataset"][key].domains["occupation"].categories
    assert sorted(declared) == sorted(OCCUPATIONS)   # each text one category, byte for byte
    assert left_out_warnings(at) == []
    truth = MALES["occupation"].value_counts().to_dict()   # the pandas reference
    assert groups_truth(at, "occupation") == truth
    assert left_out_warnings(at) == []
    # the schema downloaded, uploaded again, and the table it draws applied again
    schema = sc.to_json(at.session_state["schema_by_dataset"][key])
    at.switch_page("app_pages/data.py")
    at.run()
    upload_schema(at, schema)
    at.button(key=f"schema_apply::{key}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    again = at.session_state["schema_by_dataset"][key].domains["occupation"].categories
    assert again == declared
    assert [s.value for s in at.success] == [
        "Applied: nothing changed, the declarations were already these."]
    assert groups_truth(at, "occupation") == truth


def test_categories_that_leave_many_rows_out_are_said_on_every_page_that_uses_them():
    kept = [c for c in OCCUPATIONS if c not in ("Craftsmen, Foremen_and_kindred", "Laborers")]
    at, key = males_uploaded()
    upload_schema(at, {"columns": {
        "occupation": {"role": "categorical", "categories": kept, "origin": "typed"},
        "region": {"role": "categorical", "categories": ["north", "south"]}}})
    outside = int((~MALES["occupation"].isin(kept)).sum())   # the pandas reference
    share = round(100 * outside / len(MALES))
    said = (f"The declared categories of occupation leave out {outside:,} of {len(MALES):,} "
            f"rows ({share} %): they are dropped from every query over occupation")
    # by hand: rows 0, 4, …, 88 (23), and 7 more of each left-out occupation (i % 9 == 0, 8)
    assert outside == 37 and share == 41
    assert [w[:len(said)] for w in left_out_warnings(at)] == [said]   # the Data page
    assert sum(groups_truth(at, "occupation").values()) == len(MALES) - outside
    assert [w[:len(said)] for w in left_out_warnings(at)] == [said]   # Groups
    groups_truth(at, "region")
    assert left_out_warnings(at) == []   # its categories hold every row
    at.switch_page("app_pages/statistics.py")
    at.run()
    at.selectbox(key="stats_query").select("histogram").run()
    at.selectbox(key="stats_column").select("occupation").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [w[:len(said)] for w in left_out_warnings(at)] == [said]   # Noisy statistics
    # the page drops those rows as a release does (it refused, quoting values of the data)
    table = next(d.value for d in at.dataframe if "True count" in d.value.columns)
    assert dict(zip(table["Category"], table["True count"], strict=True)) == \
        MALES["occupation"].value_counts()[kept].to_dict()
    at.switch_page("app_pages/tables.py")
    at.run()
    at.selectbox(key="tables_row").select("region").run()
    at.selectbox(key="tables_column").select("occupation").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [w[:len(said)] for w in left_out_warnings(at)] == [said]   # Noisy tables
    true_table = at.dataframe[0].value   # the first tab: the true counts
    expected = pd.crosstab(MALES["region"], MALES["occupation"])[kept]
    assert np.array_equal(true_table.loc[["north", "south"], kept].to_numpy(),
                          expected.loc[["north", "south"]].to_numpy())
    at.switch_page("app_pages/selection.py")
    at.run()
    at.selectbox(key="sel_source").select("data").run()
    at.selectbox(key="sel_column").select("occupation").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert [w[:len(said)] for w in left_out_warnings(at)] == [said]   # Selection


def test_declared_categories_that_are_one_key_are_said_on_the_data_page():
    at, key = males_uploaded()
    upload_schema(at, {"columns": {
        "occupation": {"role": "categorical", "categories": [*OCCUPATIONS, "12"],
                       "origin": "typed"}}})
    assert not at.exception, [e.value for e in at.exception]
    said = [w.value.replace("\\", "") for w in at.warning
            if "one key as the data is read" in w.value]
    assert len(said) == 1 and "012 and 12" in said[0], said


def test_an_uploaded_schema_says_what_it_applied():
    """Issue 35 item 4: uploading a schema file confirmed nothing."""
    at = upload_schema(uploaded(), SCHEMA)
    said = " ".join(s.value for s in at.success).replace("\\", "")   # markdown escapes
    assert said.startswith("Applied: the schema file people.schema.json: 3 columns declared "
                           "(1 categorical, 1 numeric, 1 person id), 1 with bounds; the person "
                           "id with at most 2 rows per person"), said
    assert "salary: numeric from 0 to 100000, bin edges 0, 20000, 50000, 100000" in said
    assert "flag: categories 0, 1, 2" in said and "pid: the person id" in said


def test_a_bound_typed_with_a_typographic_minus_keeps_its_sign():
    """Issue 35 item 4: a typed −2 became 2 (the editor's number cells drop a minus sign they
    do not know, U+2212 pasted from a codebook); the bounds are text cells read here."""
    at = uploaded()
    key = f"upload:{at.session_state['upload_file_id']}"
    _, base, table_key = at.session_state[f"schema_base::{key}"]
    row = int(np.flatnonzero(base["column"].to_numpy() == "salary")[0])
    at.session_state[table_key] = {"edited_rows": {row: {"lower": "\u22122", "upper": "5e4"}},
                                   "added_rows": [], "deleted_rows": []}
    at.button(key=f"schema_apply::{key}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    profile = next(d.value for d in at.dataframe if "public domain" in d.value.columns)
    shown = dict(zip(profile["column"], profile["public domain"], strict=True))
    assert shown["salary"] == "[-2, 50000]", shown
    assert tab.read_bound(" \u2013 3.5 ") == -3.5 and tab.bound_text(-2.0) == "-2"
    assert sc.parse_bins("\u22122, 0, 2") == (-2.0, 0.0, 2.0)
