"""Figures of the Quantiles page: the exact output distribution over the candidates."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import BAND_OPACITY, PALETTE, TRUE_COLOUR, finish, vline, vrect

#: Up to this many candidates a distribution is drawn with a marker on each.
_MARKERS_UP_TO = 150


def quantile_distribution(grid: ArrayLike, probabilities: Sequence[ArrayLike],
                          names: Sequence[str], truths: Sequence[float | None], *,
                          alpha: float, x_title: str, title: str) -> go.Figure:
    """P(released = c) over the candidates, one trace per quantile, with each true quantile
    (a dotted black line) and the band ±α around it."""
    x = np.asarray(grid, dtype=np.float64)
    mode = "lines+markers" if x.size <= _MARKERS_UP_TO else "lines"
    fig = go.Figure()
    for i, (probs, name, truth) in enumerate(zip(probabilities, names, truths, strict=True)):
        colour = PALETTE[i % len(PALETTE)]
        fig.add_trace(go.Scatter(
            x=x, y=np.asarray(probs, dtype=np.float64), mode=mode, name=name,
            line={"color": colour, "shape": "hv" if x.size > _MARKERS_UP_TO else "linear"},
            hovertemplate=f"{name}<br>candidate %{{x:,.6g}}<br>P(released) = %{{y:.4g}}"
                          "<extra></extra>"))
        if truth is not None:
            vrect(fig, x0=truth - alpha, x1=truth + alpha, fillcolor=colour,
                  opacity=BAND_OPACITY / 2, line_width=0)
            vline(fig, x=truth, line={"color": TRUE_COLOUR, "dash": "dot", "width": 1.5})
    return finish(fig, title=title, x_title=x_title, y_title="Probability of being released")
