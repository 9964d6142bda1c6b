"""Figures of the "Budget" page: total epsilon against the number of releases, per rule.

Pure functions from numbers to ``go.Figure``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, TRUE_COLOUR, finish
from dashboard.shown import up

_RULE_STYLE = {
    "basic": ("Basic composition", PALETTE[0], "solid"),
    "advanced": ("Advanced composition", PALETTE[1], "dash"),
    "zcdp": ("zCDP composition", PALETTE[2], "dot"),
}


def releases_budget(releases: ArrayLike, totals: Mapping[str, ArrayLike], *,
                    epsilon: float, epsilon_budget: float, delta_budget: float,
                    most: Mapping[str, int]) -> go.Figure:
    """Total ε of k releases under each composition rule, and the budget as a horizontal line.

    ``totals`` maps a rule ("basic", "advanced", "zcdp") to the total ε at each k of
    ``releases``; ``most`` maps it to the largest k within the budget (marked on its line).
    """
    ks = np.asarray(releases, dtype=np.int64)
    fig = go.Figure()
    top = epsilon_budget
    for rule, (name, colour, dash) in _RULE_STYLE.items():
        y = np.asarray(totals[rule], dtype=np.float64)
        top = max(top, float(np.nanmax(y)) if y.size else top)
        fig.add_trace(go.Scatter(
            x=ks, y=y, mode="lines", name=name, line={"color": colour, "dash": dash, "width": 2.5},
            customdata=[up(v) for v in y.tolist()],   # rounded up, which d3 formats cannot
            hovertemplate=(f"{name}<br>%{{x:,}} releases of ε = {epsilon:g} each cost "
                           f"ε = %{{customdata}} in total (δ = {delta_budget:g})<extra></extra>"),
        ))
        k = int(most[rule])
        if k >= 1 and k in set(ks.tolist()):
            at = float(y[np.searchsorted(ks, k)])
            fig.add_trace(go.Scatter(
                x=[k], y=[at], mode="markers", name=f"{name}: most that fit",
                marker={"color": colour, "size": 10, "symbol": "circle-open", "line":
                        {"width": 2.5}}, showlegend=False,
                hovertemplate=(f"{name}: at most {k:,} releases fit the budget "
                               f"(total ε = {up(at)})<extra></extra>"),
            ))
    fig.add_trace(go.Scatter(
        x=[ks.min() if ks.size else 1, ks.max() if ks.size else 1],
        y=[epsilon_budget, epsilon_budget], mode="lines", name="Budget",
        line={"color": TRUE_COLOUR, "width": 2},
        hovertemplate=(f"The budget: ε = {epsilon_budget:g}, δ = {delta_budget:g}"
                       "<extra></extra>"),
    ))
    finish(fig, title=f"How many releases of ε = {epsilon:g} fit a budget of "
                      f"ε = {epsilon_budget:g}, δ = {delta_budget:g}",
           x_title="number of releases k", y_title="total privacy loss ε (at the budget's δ)")
    # Far beyond the budget the lines only squeeze the interesting part: cap the view.
    fig.update_yaxes(range=[0, min(top, 2.5 * epsilon_budget) * 1.05], rangemode="tozero")
    return fig
