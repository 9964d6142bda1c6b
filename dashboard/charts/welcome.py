"""The Welcome page's chart: how far one ε-DP release can move an attacker's belief that a
person is in the data, for every belief they start with."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, finish
from dpcore import safe_rounding


def belief_chart(prior: ArrayLike, curves: Sequence[tuple[str, ArrayLike]], *,
                 title: str) -> go.Figure:
    """The most an attacker's belief can reach after the release (``curves``: label, bound at
    each ``prior``), against the belief before; the diagonal is no release at all."""
    x = np.asarray(prior, dtype=np.float64)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[0, 1], y=[0, 1], mode="lines", name="Nothing released (belief unchanged)",
        line={"color": "#888888", "dash": "dot"},
        hovertemplate="Before and after: %{x:.0%}<extra></extra>"))
    colours = (PALETTE[5], PALETTE[0], PALETTE[2])
    for i, (label, posterior) in enumerate(curves):
        y = np.asarray(posterior, dtype=np.float64)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=label, line={"color": colours[i % 3], "width": 3},
            # the most an attacker can believe is a bound: rounded up
            text=[f"{label}: from {a:.0%} sure, at most "
                  f"{safe_rounding.percent_upper(float(min(b, 1.0)))} sure after the release"
                  for a, b in zip(x, y, strict=True)],
            hovertemplate="%{text}<extra></extra>"))
    finish(fig, title=title, x_title="Attacker's belief before the release (person is in)",
           y_title="Most the belief can be after", height=460)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", dtick=0.1)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", dtick=0.1)
    return fig
