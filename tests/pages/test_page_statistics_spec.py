"""The Noisy statistics page and Choose epsilon build one query from the page's settings
(``stats_query.page_spec``): the query the page simulates is the one Choose epsilon sweeps.

The page is driven through its widgets under a person unit; the query it hands to the engine
is recorded and compared with Choose epsilon's reading of the same remembered settings and
with the query written out here.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dashboard import state
from dashboard.analysis import statistics as stats
from dashboard.analysis.epsilon_question import statistics_query
from dashboard.person import PrivacyUnit
from engine.queries import Contribution
from tests.conftest import open_app

UNITS = "privacy_unit_by_dataset"
UNIT = PrivacyUnit("pid", 2, 1)
SMALL = pd.DataFrame({"pid": [1, 1, 1, 1, 2, 3, 3],
                      "kind": ["a", "a", "b", "c", "a", "b", "b"],
                      "value": [10.0, 20.0, 30.0, 40.0, 5.0, 1.0, 2.0]})
# (query, column, typed bounds or None, the query written out: column, bounds, grouped), in
# this order: typed bounds stay while the column does
SETTINGS = (
    ("count", None, None, (None, None, None, False)),
    # no public range: the page suggests round numbers around the data's 1 … 40
    ("mean", "value", None, ("value", 0.0, 50.0, False)),
    ("sum", "value", (0.0, 25.0), ("value", 0.0, 25.0, False)),
    ("variance", "value", (-5.0, 45.0), ("value", -5.0, 45.0, False)),
    ("histogram", "kind", None, ("kind", None, None, True)),
)


@pytest.fixture
def small_file(tmp_path, monkeypatch):
    SMALL.to_parquet(tmp_path / "small.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return "file:small.parquet"


def test_the_page_and_choose_epsilon_build_the_same_query(small_file, monkeypatch):
    asked = []
    facts = stats.query_facts

    def recording(frame, data_key, spec):
        asked.append(spec)
        return facts(frame, data_key, spec)

    monkeypatch.setattr(stats, "query_facts", recording)
    at = open_app("statistics.py", dataset=small_file)
    loaded, data_key = at.session_state["dataset"], at.session_state["dataset"].key
    at.session_state[UNITS] = {data_key: UNIT}
    at.run()
    seed = int(at.session_state[state.SEED])
    for query, column, bounds, (col, lower, upper, grouped) in SETTINGS:
        at.selectbox(key="stats_query").select(query).run()
        if column is not None:
            at.selectbox(key="stats_column").select(column).run()
        if bounds is not None:
            at.number_input(key="stats_lower").set_value(bounds[0]).run()
            at.number_input(key="stats_upper").set_value(bounds[1]).run()
        assert not at.exception, [e.value for e in at.exception]
        shown = asked[-1]
        expected = stats.QuerySpec(query, col, lower, upper, None, Contribution(
            "pid", 2, 1 if grouped else None, seed))
        assert shown == expected
        swept = statistics_query(loaded, at.session_state[state.SAVED], data_key,
                                 unit=UNIT, seed=seed)
        assert swept.kind == query and swept.spec == shown
