"""A data-folder CSV on the pages as an upload of it (issue 21 item 6): "What the bounds cost"
breaks a sum down (the engine's per-person aggregates; it said "needs the data in memory"),
the Data page warns about its missing cells, and a yes/no column is text (as uploaded)."""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard.person import PrivacyUnit
from tests.conftest import open_app
from tests.pages.test_person_pages import text, with_unit

FRAME = pd.DataFrame({"pid": [1, 1, 1, 1, 2, 3, 3, 4],
                      "smoker": ["yes", "yes", "no", "no", "yes", "no", None, "yes"],
                      "value": [10.0, 20.0, 30.0, 40.0, 5.0, 1.0, 2.0, None]})


@pytest.fixture
def small_csv(tmp_path, monkeypatch):
    FRAME.to_csv(tmp_path / "small.csv", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return "file:small.csv"


def test_the_bounds_cost_of_a_sum_on_a_data_folder_file(small_csv):
    at = open_app("statistics.py", dataset=small_csv)
    at.selectbox(key="stats_query").select("sum")
    at.run()
    at.selectbox(key="stats_column").select("value")
    at.run()
    with_unit(at, PrivacyUnit("pid", 2))
    words = text(at)
    assert "needs the data in memory" not in words and "No breakdown" not in words
    assert "At max rows = 2 the typical total error" in words
    table = next(d.value for d in at.dataframe if "Bias: dropped rows" in d.value.columns)
    # every row with a person id and a value, unclamped
    assert table["True answer (all rows, unclamped)"].iloc[0] == pytest.approx(108.0)
    assert "1 rows without a person id, a value or a category add nothing" in words


def test_the_data_page_warns_about_missing_cells(small_csv):
    at = open_app("data.py", dataset=small_csv)
    assert any(w.value.startswith("2 cells are missing") for w in at.warning), \
        [w.value for w in at.warning]
    kinds = {c.name: c.kind for c in at.session_state["dataset"].relation.column_info()}
    assert kinds == {"pid": "integer", "smoker": "text", "value": "float"}   # not boolean
