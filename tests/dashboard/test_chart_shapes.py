"""The charts draw their spanning lines and bands with charts.base's vline, hline and vrect
(plotly's add_vline re-validates every earlier shape on each call): the figure's JSON is the
one plotly's add_vline, add_hline and add_vrect give, character for character."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.charts import base, bounds_cost, data, quantiles, statistics, tables
from dpcore.contributions import MaxRowsSweep

# every argument the charts pass, each annotation position among them
CASES = [
    ("vline", (3,), {"line": {"color": "#444", "dash": "dash"}, "annotation_text": "t 3"}),
    ("vline", (8,), {"line_dash": "dash", "line_color": "#444"}),
    ("vline", (2.5,), {"line_dash": "dash", "line_color": "#D55E00",
                       "annotation_text": "lower 2.5", "annotation_position": "top"}),
    ("vline", (4.5,), {"line_dash": "dash", "line_color": "#444",
                       "annotation_text": "max rows = 4", "annotation_position": "top right"}),
    ("vline", (1.0,), {"line_dash": "dash", "line_color": "#0072B2",
                       "annotation_text": "median 1", "annotation_position": "top left",
                       "annotation_font_color": "#0072B2"}),
    ("vline", (0,), {"line": {"color": "#000000", "width": 1.5}}),
    ("hline", (0.25,), {"line": {"color": "#777", "dash": "dash", "width": 1.2},
                        "annotation_text": "picking at random: 25.0%",
                        "annotation_position": "bottom right"}),
    ("vrect", (-1.5, 1.5), {"fillcolor": "#0072B2", "opacity": 0.18, "line_width": 0,
                            "layer": "below"}),
    ("vrect", (2.0, 4.0), {"fillcolor": "#E69F00", "opacity": 0.09, "line_width": 0}),
]


def _bars() -> go.Figure:
    return go.Figure(go.Bar(x=[1, 2, 3], y=[3, 1, 2]))


@pytest.mark.parametrize(("kind", "args", "kwargs"), CASES)
def test_each_helper_adds_what_plotlys_own_adds(kind, args, kwargs):
    ours, plotlys = _bars(), _bars()
    for _ in range(2):      # a second shape after the first, as the charts draw them
        getattr(base, kind)(ours, *args, **kwargs)
        getattr(plotlys, f"add_{kind}")(*args, **kwargs)
    assert ours.to_json() == plotlys.to_json()
    assert len(ours.layout.shapes) == 2


def _plotlys_own(monkeypatch, *modules) -> None:
    """The charts' modules drawing with plotly's add_vline, add_hline and add_vrect."""
    for module in modules:
        for kind in ("vline", "hline", "vrect"):
            if hasattr(module, kind):
                monkeypatch.setattr(module, kind, lambda fig, *a, k=kind, **kw:
                                    getattr(fig, f"add_{k}")(*a, **kw))


def _figures():
    sweep = MaxRowsSweep(np.arange(1, 9), np.zeros(8), np.zeros(8), np.ones(8), np.ones(8), 4)
    grid = np.linspace(0.0, 10.0, 41)
    return [
        bounds_cost.tuning_curve(sweep, current=3),
        bounds_cost.private_choice_bars(np.arange(1, 6), np.full(5, 0.2), drawn=2, q=0.9,
                                        epsilon=1.0),
        data.rows_per_person(np.array([1, 2, 5]), np.array([40, 7, 1]), person="id",
                             max_rows=2),
        quantiles.quantile_distribution(grid, [np.full(41, 1 / 41), np.full(41, 1 / 41)],
                                        ["median", "90%"], [5.0, 9.0], alpha=0.75,
                                        x_title="age", title="quantiles"),
        tables.l1_error_histograms(np.arange(6.0), np.full(5, 0.2), np.full(5, 0.2),
                                   median_before=3.0, median_after=2.0, trials=100,
                                   after_label="rounded"),
    ]


def test_the_charts_json_is_that_of_plotlys_add_vline(monkeypatch):
    ours = [fig.to_json() for fig in _figures()]
    _plotlys_own(monkeypatch, bounds_cost, data, quantiles, statistics, tables)
    theirs = [fig.to_json() for fig in _figures()]
    assert ours == theirs
    assert all('"shapes"' in figure for figure in ours)


def test_two_rows_is_make_subplots_figure_and_each_call_a_new_one():
    from plotly.subplots import make_subplots

    from dashboard.charts import errors

    theirs = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38],
                           vertical_spacing=0.06)
    first, second = errors.two_rows(), errors.two_rows()
    assert first.to_json() == theirs.to_json()
    for fig in (first, theirs):
        fig.add_trace(go.Bar(x=["a"], y=[1]), row=1, col=1)
        fig.add_trace(go.Bar(x=["a"], y=[-1]), row=2, col=1)
        fig.update_xaxes(title_text="column", row=2, col=1)
        fig.update_yaxes(title_text="error", row=2, col=1, zeroline=True)
    assert first.to_json() == theirs.to_json()
    assert second.to_json() == make_subplots(rows=2, cols=1, shared_xaxes=True,
                                             row_heights=[0.62, 0.38],
                                             vertical_spacing=0.06).to_json()


@pytest.mark.parametrize(("kind", "args", "kwargs"), [CASES[0], CASES[6], CASES[7]])
def test_on_a_figure_with_subplots_each_helper_is_plotlys_own(kind, args, kwargs):
    from dashboard.charts import errors

    ours, plotlys = errors.two_rows(), errors.two_rows()
    for fig in (ours, plotlys):
        fig.add_trace(go.Bar(x=[1, 2], y=[3, 4]), row=1, col=1)
        fig.add_trace(go.Bar(x=[1, 2], y=[1, -1]), row=2, col=1)
    getattr(base, kind)(ours, *args, **kwargs)
    getattr(plotlys, f"add_{kind}")(*args, **kwargs)
    assert ours.to_json() == plotlys.to_json()
    assert len(ours.layout.shapes) == 2              # one on each subplot
