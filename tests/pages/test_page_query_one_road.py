"""Add to plan, the Noisy statistics page's simulation and Choose epsilon build their query in
one place: the kind's page adapter's ``page_query`` (issue 36 item 1).

The mean's adapter is replaced by one that records each call and marks the query it builds
(its label, and a budget share the page never offers); each of the three paths is driven
through the app and must show the mark.
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from dashboard.kinds import ADAPTERS
from dpcore.measures import PureDP
from tests.conftest import open_app

SMALL = pd.DataFrame({"pid": [1, 2, 3, 4, 5, 6, 7],
                      "value": [10.0, 20.0, 30.0, 40.0, 5.0, 1.0, 2.0]})
MARK = "Marked mean"
#: a share of the budget the page's slider never offers (0.1 … 0.9): seen only if the page's
#: query is the adapter's
SHARE = 0.25


@pytest.fixture
def small_file(tmp_path, monkeypatch):
    SMALL.to_parquet(tmp_path / "small.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return "file:small.parquet"


@pytest.fixture
def calls(monkeypatch):
    """Every call of the mean's ``page_query``: (declared, the query it returned)."""
    adapter = ADAPTERS["mean"]
    original = type(adapter).page_query
    made = []

    def marked(settings):
        query = original(adapter, settings)
        query = replace(query, label=MARK, query=replace(query.query, sum_share=SHARE))
        made.append((settings.declared, query))
        return query

    monkeypatch.setattr(adapter, "page_query", marked)
    return made


def test_add_to_plan_the_simulation_and_choose_epsilon_go_through_page_query(small_file,
                                                                             calls):
    at = open_app("statistics.py", dataset=small_file)
    at.selectbox(key="stats_query").select("mean").run()
    at.selectbox(key="stats_column").select("value").run()
    assert not at.exception, [e.value for e in at.exception]
    # the simulation: the page's parts are the marked query's (its budget split 25 / 75,
    # where the page's own share is 50 / 50)
    simulated = [q for declared, q in calls if declared is None]
    assert simulated, "the page's simulation did not build its query with page_query"
    said = " ".join(c.value for c in (*at.caption, *at.markdown))
    epsilon = float(at.session_state["stats_epsilon"])
    assert at.session_state["stats_measure"] == "pure"
    assert f"to the sum ({PureDP(SHARE * epsilon).describe()}" in said, said

    # Add to plan: the plan holds the marked query, with its declarations' origins
    calls.clear()
    at.button(key="stats_add_to_plan").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(declared is not None for declared, _ in calls)
    entries = at.session_state["release_plan_by_dataset"][at.session_state["dataset"].key]
    assert [e.query.label for e in entries] == [MARK]
    assert entries[0].query.query.sum_share == SHARE

    # Choose epsilon: the query set up on the page, swept as the adapter builds it
    calls.clear()
    at.switch_page("app_pages/choose_epsilon.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert calls, "Choose epsilon did not build its query with page_query"
    assert all(q.query.sum_share == SHARE for _, q in calls)
