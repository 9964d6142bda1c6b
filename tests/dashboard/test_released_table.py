"""The plan page's released-values table (dashboard.release_panel): a choice's shortfall is
never shown as if it were an interval for the released value (issue 22)."""

from __future__ import annotations

from types import SimpleNamespace

from dashboard import release_panel
from release.run import ReleasedQuery


def _query(id_, statistic, rows, intervals, method):
    return ReleasedQuery(id_, id_, statistic, rows, (), intervals=intervals,
                         interval_method=method)


def test_a_shortfall_says_what_it_bounds_and_a_value_interval_says_nothing():
    release = SimpleNamespace(queries=(
        _query("n", "count", (((), 100.0),), ((97.0, 103.0),), "exact"),
        _query("pick", "selection", ((("rank 1",), "HS-grad"), (("rank 2",), "Bachelors")),
               ((0.0, 5.0), (0.0, 4.6)), "shortfall"),
        _query("median", "quantiles", ((("q=0.5",), 37.0),), ((0.0, 12.5),), "rank"),
        _query("v", "variance", (((), 180.0),), (), ""),
    ))
    table = release_panel.released_table(release)
    assert list(table.columns) == ["Query", "Statistic", "Group", "Released value", "Lower",
                                   "Upper", "Interval of"]
    assert table["Interval of"].tolist() == [
        "", "shortfall from the top count", "shortfall from the top count",
        "excess rank error over the grid's best candidate, in rows", ""]
    assert table["Upper"].tolist()[:4] == [103.0, 5.0, 4.6, 12.5]


def test_the_caption_explains_shortfalls_and_no_longer_says_none_yet():
    said = release_panel.interval_caption(0.95)
    assert "95% interval for each true value" in said
    assert "none yet" not in said
    assert "Interval of" in said and "shortfall" in said and "rank error" in said


def test_the_caption_never_states_a_level_above_the_plans():
    # a plan's alpha of 0.005 read "a 100% interval" ({:.0%} rounds to nearest)
    said = release_panel.interval_caption(0.995)
    assert "a 99.5% interval" in said and "100%" not in said
