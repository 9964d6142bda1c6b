"""Figures of the "Private learning" page: test accuracy of a private classifier against epsilon.

Pure functions from numbers to ``go.Figure``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import BAND_OPACITY, PALETTE, TRUE_COLOUR, finish, vline

BASELINE_NAME = "Non-private model"
MAJORITY_NAME = "Always guess the commonest class"


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def accuracy_range(curves: Mapping[str, tuple[ArrayLike, ArrayLike, ArrayLike]],
                   baseline: float, majority: float) -> list[float]:
    """The y-axis range: every band, median and reference line, with a little room.

    Zoomed to the data, not 0–100%: Adult's curves lie between about 73% and 80%, a flat
    line on the full scale. Never beyond [0, 1.02]."""
    values = [baseline, majority]
    for band in curves.values():
        values += [float(v) for part in band for v in np.asarray(part, dtype=np.float64).ravel()
                   if np.isfinite(v)]
    low, high = min(values), max(values)
    pad = max(0.01, 0.06 * (high - low))
    return [max(0.0, low - pad), min(1.02, high + pad)]


def accuracy_against_epsilon(epsilons: ArrayLike,
                             curves: Mapping[str, tuple[ArrayLike, ArrayLike, ArrayLike]], *,
                             baseline: float, majority: float, repetitions: int,
                             title: str, marked_epsilon: float | None = None) -> go.Figure:
    """Median test accuracy (line) and its 5–95% band for each noise, against epsilon (log).

    ``curves`` maps a noise name to (median, 5th percentile, 95th percentile), one value per
    epsilon. The non-private accuracy is a black line, guessing the commonest class a grey one.
    """
    x = np.asarray(epsilons, dtype=np.float64)
    fig = go.Figure()
    for i, (name, (median, low, high)) in enumerate(curves.items()):
        colour = PALETTE[i % len(PALETTE)]
        low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
        fig.add_trace(go.Scatter(
            x=np.concatenate([x, x[::-1]]), y=np.concatenate([high, low[::-1]]),
            fill="toself", fillcolor=_rgba(colour, BAND_OPACITY), line={"width": 0},
            name=f"{name}: 5–95% of fits", hoverinfo="skip", legendgroup=name))
        fig.add_trace(go.Scatter(
            x=x, y=np.asarray(median, dtype=np.float64), mode="lines+markers",
            name=f"{name} noise (median)", line={"color": colour, "width": 2.5},
            legendgroup=name, customdata=np.column_stack([low, high]),
            hovertemplate=(f"{name} noise, ε = %{{x:.3g}}: median test accuracy %{{y:.1%}} "
                           f"over {repetitions} private fits (90% of fits between "
                           "%{customdata[0]:.1%} and %{customdata[1]:.1%})<extra></extra>")))
    for value, name, colour, dash in ((baseline, BASELINE_NAME, TRUE_COLOUR, "dash"),
                                      (majority, MAJORITY_NAME, "#888888", "dot")):
        fig.add_trace(go.Scatter(
            x=[x.min(), x.max()], y=[value, value], mode="lines", name=name,
            line={"color": colour, "dash": dash, "width": 2},
            hovertemplate=f"{name}: test accuracy {value:.1%} (no privacy)<extra></extra>"))
    if marked_epsilon is not None:
        vline(fig, x=marked_epsilon, line={"color": "#444444", "width": 1, "dash": "dot"})
    finish(fig, title=title, x_title="ε (privacy budget of the whole fit, log scale)",
           y_title="test accuracy (share of test rows classified right)", log_x=True,
           height=520)
    fig.update_yaxes(range=accuracy_range(curves, baseline, majority), tickformat=".0%")
    # Six legend entries do not fit beside the title: list them under the plot.
    fig.update_layout(legend={"orientation": "h", "x": 0.0, "xanchor": "left", "y": -0.18,
                              "yanchor": "top"}, margin={"b": 120})
    return fig
