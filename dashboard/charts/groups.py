"""Figures of the Groups page: the exact chance that a group of n rows is released."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, finish


def keep_curve(sizes: ArrayLike, chance: ArrayLike, group_sizes: ArrayLike, kept: ArrayLike,
               *, threshold: float, title: str) -> go.Figure:
    """P(kept) against the group's size (exact), the threshold, and the data's groups marked
    kept or dropped in the simulated release."""
    fig = go.Figure(go.Scatter(
        x=np.asarray(sizes, float), y=np.asarray(chance, float), mode="lines+markers",
        name="P(group of n rows is released)", line={"color": PALETTE[0]},
        hovertemplate="n = %{x:,.0f} rows<br>P(released) = %{y:.4g}<extra></extra>"))
    x = np.asarray(sizes, float)
    n = np.asarray(group_sizes, float)
    shown = np.minimum(n, x.max())   # larger groups are ticked at the right edge
    k = np.asarray(kept, bool)
    for mask, name, colour, y in ((k, "groups kept (simulated)", PALETTE[2], 1.04),
                                  (~k, "groups dropped (simulated)", PALETTE[5], -0.04)):
        fig.add_trace(go.Scatter(x=shown[mask], y=np.full(int(mask.sum()), y),
                                 customdata=n[mask], mode="markers", name=name,
                                 marker={"color": colour, "symbol": "line-ns-open", "size": 12},
                                 hovertemplate="a group of %{customdata:,.0f} rows"
                                               "<extra></extra>"))
    fig.add_vline(x=threshold, line={"color": "#444", "dash": "dash"},
                  annotation_text=f"threshold {threshold:.4g}")
    fig.update_xaxes(range=[-0.5, x.max() + 0.5])
    return finish(fig, title=title, x_title="Rows in the group (after contribution bounds; "
                                            "larger groups ticked at the right edge)",
                  y_title="Probability of being released")
