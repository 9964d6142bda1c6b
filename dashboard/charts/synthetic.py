"""Figures of the Synthetic data page's sweep: a utility figure against the budget, over several
generations at each budget (median line, min–max band, every generation as a point).

Pure functions from numbers to ``go.Figure``; titles may quote a user's column (escaped here).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import BAND_OPACITY, PALETTE, TRUE_COLOUR, finish
from dashboard.charts.epsilon import _legend_below, _rgba, _tick_text
from dashboard.charts.tables import svg_text

#: Reference lines (constant over the budget): their colour and dash, by position.
REFERENCE_STYLES = ((TRUE_COLOUR, "dash"), ("#888888", "dot"))


def against_budget(budgets: ArrayLike, series: Mapping[str, ArrayLike], *, symbol: str,
                   title: str, y_title: str, references: Mapping[str, float] | None = None,
                   percent: bool = False) -> go.Figure:
    """Each series (an array of budgets × generations) as its median over the generations
    (line), its min–max band, and every generation as a point, against the budget (log axis).

    ``symbol`` is "ε" or "ρ"; ``references`` are values that do not depend on the budget
    (drawn as horizontal lines, e.g. a classifier trained on the real rows); ``percent``
    formats the values as percentages.
    """
    x = np.asarray(budgets, dtype=np.float64)
    shown = ".1%" if percent else ".4f"
    # plain lists, not numpy arrays (plotly would write those as base64 in the figure's JSON)
    fig = go.Figure()
    for i, (name, values) in enumerate(series.items()):
        y = np.asarray(values, dtype=np.float64).reshape(len(x), -1)
        if not np.isfinite(y).any():
            continue
        colour = PALETTE[i % len(PALETTE)]
        generations = y.shape[1]
        low, median, high = np.nanmin(y, 1), np.nanmedian(y, 1), np.nanmax(y, 1)
        fig.add_trace(go.Scatter(
            x=np.concatenate([x, x[::-1]]).tolist(),
            y=np.concatenate([high, low[::-1]]).tolist(),
            fill="toself", fillcolor=_rgba(colour, BAND_OPACITY), line={"width": 0},
            name=f"{name}: lowest to highest of {generations} generations",
            legendgroup=name, hoverinfo="skip", showlegend=False))
        fig.add_trace(go.Scatter(
            x=np.repeat(x, generations).tolist(), y=y.ravel().tolist(), mode="markers",
            legendgroup=name,
            name=f"{name}: each generation", showlegend=False,
            marker={"color": colour, "size": 6, "opacity": 0.6},
            customdata=np.tile(np.arange(1, generations + 1), len(x)).tolist(),
            hovertemplate=(f"{name}, {symbol} = %{{x:g}}, generation %{{customdata}}: "
                           f"%{{y:{shown}}}<extra></extra>")))
        fig.add_trace(go.Scatter(
            x=x.tolist(), y=median.tolist(), mode="lines+markers", name=f"{name} (median)",
            legendgroup=name, line={"color": colour, "width": 2.5},
            hovertemplate=(f"{name}, {symbol} = %{{x:g}}: median %{{y:{shown}}} over "
                           f"{generations} generations<extra></extra>")))
    for (name, value), (colour, dash) in zip((references or {}).items(), REFERENCE_STYLES,
                                             strict=False):
        if not np.isfinite(value):
            continue
        fig.add_trace(go.Scatter(
            x=[float(x.min()), float(x.max())], y=[value, value], mode="lines", name=name,
            line={"color": colour, "dash": dash, "width": 2},
            hovertemplate=f"{name}: {value:{shown}} (no privacy)<extra></extra>"))
    finish(fig, title=svg_text(title), y_title=y_title, log_x=True, height=460,
           x_title=f"{symbol} of each generation (log scale)")
    fig.update_xaxes(tickvals=list(x), ticktext=[_tick_text(v) for v in x])
    if percent:
        fig.update_yaxes(tickformat=".0%")
    _legend_below(fig)
    return fig
