"""The dataset declarations store: versioned, dated, never rewritten, found by any name."""

from __future__ import annotations

import json
import sqlite3

import pytest

from dpcore.contributions import PrivacyUnit
from release.declarations import DeclarationsError, DeclarationStore, declarations_path

SCHEMA_A = json.dumps({"columns": {"age": {"role": "numeric", "lower": 0, "upper": 99}}})
SCHEMA_B = json.dumps({"columns": {"age": {"role": "numeric", "lower": 0, "upper": 120}}})
PANEL = PrivacyUnit("nr", max_rows=8)


@pytest.fixture
def store(tmp_path):
    return DeclarationStore(tmp_path / "declarations.sqlite")


def test_a_new_dataset_is_unknown_then_known_by_its_names(store):
    assert store.latest("sha256:aa") is None
    store.declare("sha256:aa", names=["Males.csv", "upload:1"])
    known = store.latest("sha256:aa")
    assert known.names == ("Males.csv", "upload:1") and known.empty
    assert known.versions == {"schema": 0, "unit": 0}
    assert store.find("Males.csv") == ["sha256:aa"] and store.find("other.csv") == []


def test_each_change_is_a_numbered_dated_event_and_a_repeat_is_none(store):
    store.declare("sha256:aa", schema=SCHEMA_A, unit=PANEL, reason="first")
    # the same declarations again, spelled differently: no new event
    store.declare("sha256:aa", schema=json.dumps(json.loads(SCHEMA_A), indent=4), unit=PANEL)
    after = store.declare("sha256:aa", schema=SCHEMA_B)
    assert after.versions == {"schema": 2, "unit": 1}
    assert after.privacy_unit == PANEL
    assert json.loads(after.schema_json) == json.loads(SCHEMA_B)
    history = store.history("sha256:aa")
    assert [(e.what, e.version) for e in history] == [("schema", 1), ("unit", 1),
                                                      ("schema", 2)]
    assert history[0].reason == "first" and len(history[0].date) == 10
    # what a plan built on schema version 1 was built on, still there
    assert json.loads(store.event("sha256:aa", "schema", 1).text) == json.loads(SCHEMA_A)
    assert after.restored_words() == f"schema and unit restored from {history[-1].date}"


def test_back_to_one_row_per_person_is_an_event(store):
    store.declare("sha256:aa", unit=PANEL)
    back = store.declare("sha256:aa", unit=None)
    assert back.versions["unit"] == 2 and back.privacy_unit is None
    assert back.restored_words() == ""


def test_history_is_never_rewritten(store):
    store.declare("sha256:aa", schema=SCHEMA_A)
    with sqlite3.connect(store.path) as c, pytest.raises(sqlite3.DatabaseError,
                                                          match="never changed"):
        c.execute("UPDATE events SET text = NULL")
    with sqlite3.connect(store.path) as c, pytest.raises(sqlite3.DatabaseError,
                                                          match="never removed"):
        c.execute("DELETE FROM events")


def test_another_database_is_refused_and_left_alone(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as c:
        c.execute("CREATE TABLE t (x)")
    with pytest.raises(DeclarationsError, match="something else"):
        DeclarationStore(other).latest("sha256:aa")
    with sqlite3.connect(other) as c:
        assert [r[0] for r in c.execute("SELECT name FROM sqlite_master")] == ["t"]


def test_the_file_lives_beside_the_ledger_unless_named(tmp_path, monkeypatch):
    monkeypatch.delenv("EPSILON_LAB_DECLARATIONS", raising=False)
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "l" / "ledger.sqlite"))
    assert declarations_path() == tmp_path / "l" / "declarations.sqlite"
    monkeypatch.setenv("EPSILON_LAB_DECLARATIONS", str(tmp_path / "d.sqlite"))
    assert declarations_path() == tmp_path / "d.sqlite"
    with pytest.raises(DeclarationsError, match="inside the repository"):
        declarations_path(__file__)
