"""Figures of what the privacy unit's bounds cost: total error against max rows, and the
distribution of a privately chosen max rows."""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, finish, vline
from dpcore.contributions import MaxRowsSweep


def tuning_curve(sweep: MaxRowsSweep, *, current: int, unit: str = "") -> go.Figure:
    """Bias, noise and total error (RMSE) against the max-rows bound (log axis), the best
    bound starred and the current one dashed. Computed on the raw data: the title says so."""
    x = sweep.max_rows
    fig = go.Figure()
    for name, y, colour, dash in (
            ("bias of the bounds (|bias|)", np.abs(sweep.bias), PALETTE[1], "dot"),
            ("spread of the rows kept (sd)", sweep.truncation_sd, PALETTE[2], "dot"),
            ("noise (sd)", sweep.noise_sd, PALETTE[3], "dash"),
            ("total error (RMSE)", sweep.rmse, PALETTE[0], "solid")):
        fig.add_trace(go.Scatter(x=x, y=y, name=name, mode="lines+markers",
                                 line={"color": colour, "dash": dash},
                                 hovertemplate=f"max rows %{{x:,}}<br>{name}: %{{y:,.4g}}"
                                               "<extra></extra>"))
    best = sweep.best_max_rows
    at_best = float(sweep.rmse[np.searchsorted(x, best)])
    fig.add_trace(go.Scatter(x=[best], y=[at_best], mode="markers", name=f"best: {best:,}",
                             marker={"symbol": "star", "size": 16, "color": PALETTE[0]}))
    vline(fig, x=current, line_dash="dash", line_color="#444")
    # an annotation on a log axis is placed in log10 units (a shape in data units): placed by
    # add_vline at x = current, "now: 8" sat at 10^8 and stretched the axis to it
    fig.add_annotation(x=math.log10(current), y=1, xref="x", yref="paper", showarrow=False,
                       text=f"now: {current:,}", xanchor="right", yanchor="bottom")
    finish(fig, title="Total error against max rows per person — computed on the raw data: "
                      "NOT private", x_title="max rows per person (log scale)",
           y_title=f"error {unit}".strip())
    # the candidates plotted and nothing beyond; 1, 2, 5, 10, 20, 50 … labelled
    low, high = math.log10(min(x.min(), current)), math.log10(max(x.max(), current))
    pad = max(0.04 * (high - low), 0.05)
    fig.update_xaxes(type="log", range=[low - pad, high + pad], dtick="D2")
    return fig


def private_choice_bars(candidates: ArrayLike, probabilities: ArrayLike, *, drawn: int,
                        q: float, epsilon: float) -> go.Figure:
    """P(the DP quantile picks c) for each candidate max rows c (exact), the draw marked."""
    c = np.asarray(candidates)
    p = np.asarray(probabilities, dtype=np.float64)
    shown = p > 1e-6 * p.max()
    fig = go.Figure(go.Bar(x=c[shown], y=p[shown], marker_color=PALETTE[0],
                           hovertemplate="max rows %{x:,}: probability %{y:.3%}"
                                         "<extra></extra>"))
    vline(fig, x=drawn, line_dash="dash", line_color="#444",
          annotation_text=f"this simulation: {drawn:,}")
    finish(fig, title=f"Max rows chosen privately: the {q:.0%} quantile of rows per person at "
                      f"ε = {epsilon:g} (exact distribution)",
           x_title="max rows per person", y_title="probability")
    return fig
