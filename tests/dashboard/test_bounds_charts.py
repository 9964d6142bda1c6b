"""The bounds' figures (issue 21, item 11): the tuning curve's x-axis spans the candidates
plotted (not 10 million when max rows ≤ 8) and labels 1, 2, 5, 10 …; the rows-per-person
chart labels powers of ten only, and whole rows on a short range (Males: one bar at 8)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dashboard.charts.bounds_cost import tuning_curve
from dashboard.charts.data import rows_per_person
from dpcore.contributions import MaxRowsSweep


def _layout(fig) -> dict:
    return json.loads(fig.to_json())["layout"]


@pytest.mark.parametrize("current", [1, 3, 8])
def test_the_tuning_curves_axis_spans_the_candidates_plotted(current):
    bounds = np.arange(1, 9)
    sweep = MaxRowsSweep(bounds, np.zeros(8), np.zeros(8), np.ones(8), np.ones(8), 4)
    layout = _layout(tuning_curve(sweep, current=current))
    low, high = layout["xaxis"]["range"]
    assert layout["xaxis"]["type"] == "log"
    assert -0.2 < low <= 0.0 and math.log10(8) <= high < math.log10(8) + 0.2
    assert layout["xaxis"]["dtick"] == "D2"        # 1, 2, 5 labelled: no minor ticks
    [now] = [a for a in layout["annotations"] if a["text"].startswith("now")]
    assert now["x"] == pytest.approx(math.log10(current))   # log units on a log axis


def test_the_rows_per_person_chart_labels_powers_of_ten_only():
    fig = rows_per_person([8], [545], person="pid", max_rows=8)
    axis = _layout(fig)["yaxis"]
    assert axis["type"] == "log" and axis["dtick"] == 1
    low, high = axis["range"]
    assert low < 0 < math.log10(545) < high < math.log10(545) + 0.5


@pytest.mark.parametrize(("rows", "max_rows"), [([8], 8), ([1, 2, 3], 2), ([5, 9], 12)])
def test_the_rows_per_person_chart_labels_whole_rows(rows, max_rows):
    """A balanced panel (Males: 545 people with 8 rows each) has one bar: plotly's own ticks
    read 7.6, 7.8, 8, 8.2, 8.4 rows of one person. Every whole number is labelled instead."""
    axis = _layout(rows_per_person(rows, [545] * len(rows), person="nr",
                                   max_rows=max_rows))["xaxis"]
    assert (axis.get("tick0"), axis.get("dtick")) == (0, 1)


def test_a_long_tail_of_rows_per_person_is_left_to_plotlys_ticks():
    """Not 300 labels: plotly's own ticks over a long range are whole numbers."""
    axis = _layout(rows_per_person(np.arange(1, 301), np.ones(300, dtype=int), person="nr",
                                   max_rows=8))["xaxis"]
    assert "dtick" not in axis


@pytest.mark.parametrize(("rows", "max_rows"), [([8], 1), ([8], 8), ([2, 3], 40)])
def test_the_rows_per_person_chart_shows_the_bars_and_the_bound_on_one_axis(rows, max_rows):
    """Issue 35 item 4: Males with max rows 1 drew the one bar at 8 on an axis of 7.6 to 8.4,
    the bound's line (at 1.5) beside it. The axis runs over both, half a row beyond."""
    layout = _layout(rows_per_person(rows, [545] * len(rows), person="nr", max_rows=max_rows))
    low, high = layout["xaxis"]["range"]
    line = layout["shapes"][0]["x0"]
    assert line == max_rows + 0.5
    assert low < min(*rows, line) - 0.5 and max(*rows, line) + 0.5 < high
    assert high - low < max(*rows, max_rows + 1) - min(*rows, max_rows) + 2
