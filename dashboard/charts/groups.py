"""Figures of the Groups page: noisy against true per group with the ±α band, and the exact
chance that a group of n rows is released."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts import errors
from dashboard.charts.base import PALETTE, TRUE_COLOUR, finish, vline
from dashboard.charts.tables import svg_text
from dashboard.number_text import up


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
    vline(fig, x=threshold, line={"color": "#444", "dash": "dash"},
          annotation_text=f"threshold {threshold:.4g}")
    fig.update_xaxes(range=[-0.5, x.max() + 0.5])
    return finish(fig, title=title, x_title="Rows in the group (after contribution bounds; "
                                            "larger groups ticked at the right edge)",
                  y_title="Probability of being released")


def noisy_against_true(labels: Sequence[str], truth: ArrayLike, noisy: ArrayLike, alpha: float,
                       *, confidence: float, title: str, x_title: str, y_title: str
                       ) -> go.Figure:
    """True and noisy value per group (whiskers ±α); below, each group's error and its ±α
    band. ``labels`` and the titles may come from a user's file: they are escaped here."""
    shown = [svg_text(label) for label in labels]
    truth = np.asarray(truth, dtype=np.float64)
    fig = errors.two_rows()
    fig.add_trace(go.Bar(x=shown, y=truth, name="True value", marker={"color": TRUE_COLOUR},
                         hovertemplate="%{x}: true %{y:,.4g}<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Bar(
        x=shown, y=np.asarray(noisy, dtype=np.float64), name="One simulated release",
        marker={"color": PALETTE[0]},
        error_y={"type": "constant", "value": alpha, "visible": True, "thickness": 1.2},
        hovertemplate=(f"%{{x}}: noisy %{{y:,.4g}}<br>{confidence:.0%} of releases land "
                       f"within ±{up(alpha)}<extra></extra>")), row=1, col=1)
    errors.add_error_row(fig, shown, truth, noisy, alpha, name="simulated release",
                         colour=PALETTE[0], group=0, confidence=confidence)
    return errors.finish_two_rows(fig, title=svg_text(title), x_title=svg_text(x_title),
                                  y_title=svg_text(y_title),
                                  error_title="Error: noisy − true")
