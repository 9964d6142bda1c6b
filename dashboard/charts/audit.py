"""The audit chart: each audit's lower bound on ε against the ε it claims.

A pure function from numbers to a ``go.Figure``; the panel passes the rows it shows.
"""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

from dashboard.charts.base import PALETTE, TRUE_COLOUR, finish


def claim_check(rows: Sequence[str], bounds: Sequence[float], claims: Sequence[float], *,
                confidence: float, bound_texts: Sequence[str], claim_texts: Sequence[str],
                title: str) -> go.Figure:
    """One row per audit: the claimed ε as a black tick, the lower bound as a dot with a bar
    running right (the true ε lies somewhere on it, at the confidence), red when it passes
    the claim."""
    reach = max([*bounds, *claims]) * 1.35 or 1.0
    fig = go.Figure()
    for row, bound, claim, shown in zip(rows, bounds, claims, bound_texts, strict=True):
        colour = PALETTE[5] if bound > claim else PALETTE[0]
        fig.add_trace(go.Scatter(
            x=[bound, reach], y=[row, row], mode="lines", line={"color": colour, "width": 8},
            opacity=0.35, showlegend=False, hoverinfo="skip"))
        fig.add_trace(go.Scatter(
            x=[bound], y=[row], mode="markers", marker={"color": colour, "size": 13},
            name=f"Lower bound on ε ({confidence:.0%} confidence)",
            legendgroup="bound", showlegend=row == rows[0],
            hovertemplate=(f"{row}<br>ε ≥ {shown} with {confidence:.0%} confidence: the true "
                           "ε is somewhere to the right<extra></extra>")))
    fig.add_trace(go.Scatter(
        x=list(claims), y=list(rows), mode="markers", name="Claimed ε",
        marker={"symbol": "line-ns-open", "size": 34, "line": {"width": 3,
                                                                 "color": TRUE_COLOUR},
                "color": TRUE_COLOUR},
        customdata=list(claim_texts),
        hovertemplate="%{y}<br>claimed ε = %{customdata}<extra></extra>"))
    fig.update_xaxes(range=[0, reach])
    fig.update_yaxes(autorange="reversed")
    fig.update_layout(legend={"yanchor": "top", "y": -0.35, "xanchor": "left", "x": 0.0},
                      margin={"b": 90})
    return finish(fig, title=title, x_title="ε (privacy loss, no unit)", y_title="",
                  height=190 + 45 * len(rows))
