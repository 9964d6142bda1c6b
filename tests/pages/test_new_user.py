"""What a new user tripped on (issue 35 item 4), one test each: an expected loss of 3.75e-28
read as a loss; counts of rows labelled "(people)" under a person id."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from dashboard import datasets
from tests.conftest import ROOT, fresh_plans, open_app

VISITS = datasets.BUILTIN_DATASETS[3]


def test_a_negligible_expected_loss_does_not_read_as_a_number_in_scientific_notation():
    # Adult's relationship at ε = 0.01: Husband leads by 7,133 with noise scale 100, so the
    # exact expected loss is about 7,133·e^-71 ≈ 4e-28: it reads "< 0.0001", not "3.75e-28"
    fresh_plans()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["sel_pure_level"] = "0.01"
    at.query_params["sel_column"] = "relationship"
    at.switch_page("app_pages/selection.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    shown = {m.label: m.value for m in at.metric}
    assert shown["Noise scale b"] == "100"
    assert shown["Expected score lost (best − picked)"] == "< 0.0001"


def axis_titles(at, key: str) -> list[str]:
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    layout = figure["layout"]
    return [layout[k]["title"]["text"] for k in sorted(layout)
            if k.startswith("yaxis") and "title" in layout[k]]


def test_counts_of_rows_under_a_person_id_are_not_labelled_people():
    at = open_app("statistics.py", dataset=VISITS)   # one row per visit: patient_id
    assert at.selectbox(key="stats_query").value == "histogram"
    titles = axis_titles(at, "stats_bars")
    assert titles == ["Count (rows)", "Error: noisy − true (rows)"], titles
    # one row = one person: people
    at = open_app("statistics.py")
    assert axis_titles(at, "stats_bars") == ["Count (people)", "Error: noisy − true (people)"]


def test_the_selection_axis_says_rows_under_a_person_id():
    at = open_app("selection.py", dataset=VISITS)
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    texts = json.dumps(figure["layout"])
    assert "True count (rows)" in texts and "True count (people)" not in texts
