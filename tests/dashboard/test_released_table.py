"""The plan page's released-values table (dashboard.release_panel): a choice's shortfall or
rank error is never shown as if it were an interval for the released value (issues 22, 31)."""

from __future__ import annotations

from types import SimpleNamespace

from dashboard import release_panel
from release.run import ReleasedQuery


def _query(id_, statistic, rows, intervals, method):
    return ReleasedQuery(id_, id_, statistic, rows, (), intervals=intervals,
                         interval_method=method)


def test_a_choices_bound_has_its_own_column_and_is_never_read_as_a_value_interval():
    """Issue 31 item 9: a wage quantile read `1.33 | 0 | 273.63` under Released value /
    Lower / Upper, the last two a rank error in rows. The interval columns now hold intervals
    for true values only; a choice's bound is words in a column of its own."""
    release = SimpleNamespace(queries=(
        _query("n", "count", (((), 100.0),), ((97.0, 103.0),), "exact"),
        _query("pick", "selection", ((("rank 1",), "HS-grad"), (("rank 2",), "Bachelors")),
               ((0.0, 5.0), (0.0, 4.6)), "shortfall"),
        _query("wage", "quantiles", ((("q=0.5",), 1.33),), ((0.0, 273.625),), "rank"),
        _query("v", "variance", (((), 180.0),), (), ""),
    ))
    table = release_panel.released_table(release)
    assert list(table.columns) == ["Query", "Statistic", "Group", "Released value",
                                   "True value ≥", "True value ≤", "Error of the choice"]
    assert table["True value ≥"].tolist()[0] == 97.0
    assert table["True value ≤"].tolist()[0] == 103.0
    # no number of a choice's bound sits in the value interval's columns
    assert table[["True value ≥", "True value ≤"]].iloc[1:].isna().all().all()
    assert table["Error of the choice"].tolist() == [
        "", "count ≤ 5 below the top", "count ≤ 4.6 below the top",
        "rank error ≤ best + 273.7 rows", ""]


def test_every_column_has_its_settings_and_says_what_it_bounds():
    columns = release_panel.released_columns()
    assert list(columns) == release_panel.RELEASED_COLUMNS
    assert "true value" in columns["True value ≥"]["help"]
    assert "rank error" in columns["Error of the choice"]["help"]


def test_the_caption_explains_shortfalls_and_no_longer_says_none_yet():
    said = release_panel.interval_caption(0.95)
    assert "95% interval for each true value" in said
    assert "none yet" not in said
    assert "Error of the choice" in said and "shortfall" in said and "rank error" in said
    assert "Interval of" not in said and "Lower and Upper" not in said


def test_the_caption_never_states_a_level_above_the_plans():
    # a plan's alpha of 0.005 read "a 100% interval" ({:.0%} rounds to nearest)
    said = release_panel.interval_caption(0.995)
    assert "a 99.5% interval" in said and "100%" not in said
