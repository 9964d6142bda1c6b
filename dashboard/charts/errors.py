"""The error row under a noisy-against-true bar chart: noisy − true per bar and its ±α band, on
a scale of its own (beside counts in the thousands, an error of a few units is invisible).

Labels and names reach these functions already escaped (``charts.tables.svg_text``).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike
from plotly.subplots import make_subplots

from dashboard.charts.base import BAND_OPACITY, TRUE_COLOUR, finish
from dashboard.number_text import up


@cache
def _two_rows_grid() -> tuple[dict[str, Any], Any, Any]:
    """make_subplots' axes (without the template) and subplot grid, worked out once: each call
    of make_subplots re-validates its layout (about 20 ms)."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.62, 0.38],
                        vertical_spacing=0.06)
    axes = {k: v for k, v in fig.to_dict()["layout"].items() if k != "template"}
    return axes, fig._grid_ref, fig._grid_str


def two_rows() -> go.Figure:
    """Values on top (two thirds of the height), their errors below, on one category axis:
    the figure make_subplots gives (the same JSON), a third of the time."""
    axes, grid_ref, grid_str = _two_rows_grid()
    fig = go.Figure({"data": [], "_grid_ref": grid_ref, "_grid_str": grid_str})
    fig.update_layout(copy.deepcopy(axes))
    return fig


def add_error_row(fig: go.Figure, labels: Sequence[str], truth: ArrayLike, noisy: ArrayLike,
                  alpha: ArrayLike, *, name: str, colour: str, group: int,
                  confidence: float) -> None:
    """Row 2: the band −α … +α of each bar (where ``confidence`` of releases land) and the
    error of this release, noisy − true, overlaid at the same place (``group``)."""
    truth = np.asarray(truth, dtype=np.float64)
    error = np.asarray(noisy, dtype=np.float64) - truth
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), truth.shape)
    shown = [up(a) for a in alpha.tolist()]   # rounded up: a d3 format would round to nearest
    fig.add_trace(go.Bar(
        x=list(labels), y=2 * alpha, base=-alpha, name=f"±α: {confidence:.0%} of releases",
        marker={"color": colour, "line": {"width": 0}}, opacity=BAND_OPACITY + 0.1,
        offsetgroup=str(group), customdata=shown, legendgroup=f"band{group}",
        hovertemplate=(f"%{{x}}: {confidence:.0%} of releases land within "
                       f"±%{{customdata}}<extra>{name}</extra>")), row=2, col=1)
    fig.add_trace(go.Bar(
        x=list(labels), y=error, name=f"Error of this release: {name}", width=0.25,
        marker={"color": colour}, offsetgroup=str(group), showlegend=False,
        hovertemplate=f"%{{x}}: noisy − true = %{{y:,.3g}}<extra>{name}</extra>"),
        row=2, col=1)


def finish_two_rows(fig: go.Figure, *, title: str, x_title: str, y_title: str,
                    error_title: str) -> go.Figure:
    """The shared look, both axis titles, grouped bars and a zero line under the errors."""
    fig.update_layout(barmode="group")
    fig = finish(fig, title=title, x_title="", y_title=y_title, height=560)
    fig.update_xaxes(type="category")
    fig.update_xaxes(title_text=x_title, row=2, col=1)
    fig.update_yaxes(title_text=error_title, row=2, col=1, zeroline=True,
                     zerolinecolor=TRUE_COLOUR)
    return fig
