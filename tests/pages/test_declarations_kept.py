"""A dataset keeps its declarations (issue 32, item 1): the schema and unit declared in one
session are written to the server's declarations file and restored in a new session that opens
the same data (an upload of the same content under any name, a built-in), with the sentence
that says so; a change makes a new version and the old one stays readable; what no longer fits
the data, or a store that cannot be used, is said, never a crash."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

from dashboard import datasets
from dashboard.person import PrivacyUnit
from dashboard.plan_library import PlanLibrary
from datasets_synthetic.visits import PERSON_ID
from plan.identity import content_digest
from release.declarations import DeclarationStore
from tests.conftest import open_app

UPLOAD = "Upload your own CSV"
VISITS = datasets.BUILTIN_DATASETS[3]
ROWS = 40
# a person id with two rows each, a 0/1 flag and a salary
CSV = ("pid,flag,salary\n" + "\n".join(f"{i // 2},{i % 2},{1000 * (i + 1)}" for i in range(ROWS))
       + "\n").encode()
SCHEMA = {"columns": {
    "flag": {"role": "categorical", "categories": [0, 1], "origin": "public",
             "source": "the codebook"},
    "salary": {"role": "numeric", "lower": 0, "upper": 100_000, "integer": True,
               "origin": "typed"},
    "pid": {"role": "person id"}},
    "privacy_unit": {"person": "pid", "max_rows": 2}}


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def words(at) -> str:
    """Everything the page says in info and warning boxes, markdown escapes removed."""
    return " ".join(e.value for kind in ("info", "warning", "error")
                    for e in getattr(at, kind)).replace("\\", "").replace("\u2060", "")


def upload_key(at) -> str:
    return f"upload:{at.session_state['upload_file_id']}"


def uploaded(name: str, *, plans: str | None = None):
    """A new session on the Data page that uploaded CSV as ``name``."""
    at = open_app("data.py", plans=plans)
    at.selectbox(key="dataset_choice").select(UPLOAD).run()
    at.file_uploader(key="upload_file").set_value((name, CSV, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["dataset"].name == name
    return at


def upload_schema(at, schema: dict, name: str = "people.schema.json"):
    at.file_uploader(key=f"schema_upload::{upload_key(at)}").set_value(
        (name, json.dumps(schema).encode(), "application/json"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def the_data(tmp_path) -> str:
    """The content identity of CSV, from the file itself (the command line's reading)."""
    path = tmp_path / "people.csv"
    path.write_bytes(CSV)
    return content_digest(path)


def test_an_uploads_schema_and_unit_come_back_when_the_same_content_is_uploaded(tmp_path):
    plans = os.environ["EPSILON_LAB_PLANS"]
    at = upload_schema(uploaded("people.csv", plans=plans), SCHEMA)
    key = upload_key(at)
    at.number_input(key=f"unit_rows::{key}").set_value(3).run()
    assert not at.exception
    dataset = the_data(tmp_path)
    kept = DeclarationStore().latest(dataset)
    assert kept is not None and "people.csv" in kept.names
    assert kept.versions == {"schema": 1, "unit": 2}   # the file's unit, then max rows 3
    assert kept.privacy_unit == PrivacyUnit("pid", 3)
    PlanLibrary(plans).create("content:" + dataset, "My plan", ())

    again = uploaded("renamed copy.csv", plans=plans)   # a new session, another name
    key = upload_key(again)
    restored = again.session_state["schema_by_dataset"][key]
    assert (restored.domains["salary"].lower, restored.domains["salary"].upper) == (0, 100_000)
    assert restored.domains["flag"].categories == ("0", "1")
    assert again.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit("pid", 3)
    assert f"Schema and unit restored from {today()} (1 saved plan)." in words(again)
    assert DeclarationStore().find("renamed copy.csv") == [dataset]
    # every page reads them: the sidebar's unit, the query pages' bounds
    assert "at most 3 rows per person" in " ".join(c.value for c in again.sidebar.caption)
    again.switch_page("app_pages/statistics.py")
    again.run()
    again.selectbox(key="stats_query").select("sum").run()
    again.selectbox(key="stats_column").select("salary").run()
    assert again.number_input(key="stats_upper").value == 100_000
    # said once, under the dataset's caption in the sidebar
    assert words(again).count("restored from") == 1
    assert any("restored from" in e.value for e in again.sidebar.info)


def test_a_plan_built_on_restored_declarations_is_not_told_they_differ():
    """The schema restored from the server is the one the plan was built on: the Release plan
    page says nothing about it. (The restored typed bounds' source used to read "Typed by the
    user: Typed by the user", and the page said the schema differed "for salary".)"""
    plans = os.environ["EPSILON_LAB_PLANS"]
    at = upload_schema(uploaded("people.csv", plans=plans), SCHEMA)
    at.switch_page("app_pages/statistics.py")
    at.run()
    at.selectbox(key="stats_query").select("sum").run()
    at.selectbox(key="stats_column").select("salary").run()
    at.button(key="stats_add_to_plan").click().run()
    assert not at.exception, [e.value for e in at.exception]

    again = uploaded("people.csv", plans=plans)   # a new session: the same content
    assert f"Schema and unit restored from {today()} (1 saved plan)." in words(again)
    again.switch_page("app_pages/plan.py")
    again.run()
    assert not again.exception, [e.value for e in again.exception]
    assert "The plan: 1 query" in " ".join(h.value for h in again.subheader)
    assert "differs from the one this plan was built on" not in words(again)


def test_the_data_page_does_not_say_a_restored_upload_has_no_declared_domains():
    """The column profile's caption told every upload it had no declared domains, beside the
    restored salary bounds in the same table."""
    no_domains = "An uploaded file has no declared domains"
    plans = os.environ["EPSILON_LAB_PLANS"]
    fresh = uploaded("people.csv", plans=plans)
    assert no_domains in " ".join(c.value for c in fresh.caption)
    upload_schema(fresh, SCHEMA)
    again = uploaded("people.csv", plans=plans)   # a new session: its schema restored
    assert "salary" in again.session_state["schema_by_dataset"][upload_key(again)].domains
    assert no_domains not in " ".join(c.value for c in again.caption)


def test_a_builtins_unit_comes_back_in_a_new_session():
    plans = os.environ["EPSILON_LAB_PLANS"]
    at = open_app("data.py", dataset=VISITS, plans=plans)
    key = at.session_state["dataset"].key
    assert at.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit(
        PERSON_ID, datasets.VISITS_DEFAULT_MAX_ROWS)   # as shipped: nothing kept yet
    at.number_input(key=f"unit_rows::{key}").set_value(2).run()
    assert not at.exception
    again = open_app("data.py", dataset=VISITS, plans=plans)
    assert again.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit(PERSON_ID, 2)
    assert f"Unit restored from {today()} (0 saved plans)." in words(again)
    assert again.number_input(key=f"unit_rows::{key}").value == 2
    (dataset,) = DeclarationStore().find(key)
    assert [(e.what, e.version) for e in DeclarationStore().history(dataset)] == [("unit", 1)]


def test_a_new_schema_is_version_2_and_version_1_stays_readable(tmp_path):
    at = upload_schema(uploaded("people.csv"), SCHEMA)
    wider = json.loads(json.dumps(SCHEMA))
    wider["columns"]["salary"]["upper"] = 200_000
    upload_schema(at, wider, "wider.schema.json")
    dataset = the_data(tmp_path)
    store = DeclarationStore()
    assert store.latest(dataset).versions["schema"] == 2
    first, second = store.event(dataset, "schema", 1), store.event(dataset, "schema", 2)
    assert json.loads(first.text)["columns"]["salary"]["upper"] == 100_000
    assert json.loads(second.text)["columns"]["salary"]["upper"] == 200_000
    # applying the same declarations again is no change: no new version
    key = upload_key(at)
    at.button(key=f"schema_apply::{key}").click().run()
    assert not at.exception
    assert at.success[0].value.endswith("the declarations were already these.")
    assert store.latest(dataset).versions == {"schema": 2, "unit": 1}


def test_declarations_that_no_longer_fit_the_data_are_refused_with_a_sentence(tmp_path):
    dataset = the_data(tmp_path)
    stale = {"format": "epsilon-lab-schema", "version": 1, "columns": {
        "height": {"role": "numeric", "lower": 0, "upper": 250, "origin": "public"}}}
    DeclarationStore().declare(dataset, names=["people.csv"], schema=json.dumps(stale),
                               unit=PrivacyUnit("patient", 2))
    at = uploaded("people.csv", plans=os.environ["EPSILON_LAB_PLANS"])
    key = upload_key(at)
    assert at.session_state.get("schema_by_dataset", {}).get(key) is None
    assert key not in at.session_state.get("privacy_unit_by_dataset", {})
    said = words(at)
    assert f"The schema saved on {today()} (version 1) was not restored" in said
    assert "'height'" in said
    assert f"The unit saved on {today()} (version 1) was not restored" in said
    assert "'patient' is not in the data" in said
    assert "restored from" not in said


def test_a_store_that_cannot_be_written_keeps_the_declaration_and_says_so(tmp_path, monkeypatch):
    folder = tmp_path / "a folder, not a file"
    folder.mkdir()
    monkeypatch.setenv("EPSILON_LAB_DECLARATIONS", str(folder))
    at = uploaded("people.csv", plans=os.environ["EPSILON_LAB_PLANS"])
    assert not at.exception
    at = upload_schema(at, SCHEMA)
    key = upload_key(at)
    assert at.session_state["schema_by_dataset"][key].domains["salary"].upper == 100_000
    assert at.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit("pid", 2)
    assert "used in this session but not saved on the server" in words(at)


def test_data_that_cannot_be_identified_keeps_its_declarations_for_the_session(monkeypatch):
    def broken(*args, **kwargs):
        raise OSError("cannot be read")

    monkeypatch.setattr("dashboard.declared.identity_of", broken)
    at = upload_schema(uploaded("people.csv", plans=os.environ["EPSILON_LAB_PLANS"]), SCHEMA)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state["privacy_unit_by_dataset"][upload_key(at)] == PrivacyUnit("pid", 2)
    assert "kept for this session only" in words(at)


def test_nothing_is_declared_for_a_session_that_declares_nothing():
    """Opening data declares nothing: the store holds the upload's name under its content
    (what a reloaded page names when it asks for the file again) and no schema or unit."""
    at = uploaded("people.csv")
    assert not at.exception
    store = DeclarationStore(os.environ["EPSILON_LAB_DECLARATIONS"])
    (identity,) = store.find("people.csv")
    assert store.latest(identity).empty and store.history(identity) == []


def test_a_data_folder_files_unit_comes_back_for_the_same_content_under_another_name(
        tmp_path, monkeypatch):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "people.csv").write_bytes(CSV)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(folder))
    plans = os.environ["EPSILON_LAB_PLANS"]
    at = open_app("data.py", dataset="file:people.csv", plans=plans)
    key = at.session_state["dataset"].key
    at.selectbox(key=f"unit_person::{key}").select("pid").run()
    at.number_input(key=f"unit_rows::{key}").set_value(2).run()
    assert not at.exception
    (folder / "people.csv").rename(folder / "renamed.csv")   # the same bytes, another name
    again = open_app("data.py", dataset="file:renamed.csv", plans=plans)
    key = again.session_state["dataset"].key
    assert again.session_state["privacy_unit_by_dataset"][key] == PrivacyUnit("pid", 2)
    assert f"Unit restored from {today()} (0 saved plans)." in words(again)
    assert DeclarationStore().find("renamed.csv") == [the_data(tmp_path)]
