"""Figure of the "Play the attacker" page: the player's and the computer's rates against the
trade-off curves (the limit the guarantee allows, and the mechanism's own exact curve).

A pure function from numbers to ``go.Figure``; every label is ours, never from a user's file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, finish

#: Names of the traces (tests and the page find them by these names).
LIMIT_NAME = "The most the guarantee allows"
EXACT_NAME = "The best any guess can do against this mechanism"
PLAYER_NAME = "You"
COMPUTER_NAME = "The computer (likelihood-ratio test)"
LONG_RUN_NAME = "The computer over many rounds"


class Rates(NamedTuple):
    """One player's rates: FPR and TPR, after ``rounds`` rounds, with 95 % intervals."""

    name: str
    fpr: float
    tpr: float
    rounds: int
    fpr_interval: tuple[float, float]
    tpr_interval: tuple[float, float]


def attack_chart(fpr: ArrayLike, limit: ArrayLike, exact: ArrayLike, players: Sequence[Rates],
                 *, title: str, limit_label: str) -> go.Figure:
    """TPR against FPR: the blind-guess diagonal, the guarantee's limit (``limit`` at each
    ``fpr``), the mechanism's exact curve, and a dot per player with its 95 % error bars."""
    x = np.asarray(fpr, dtype=np.float64)
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="Blind guess",
                             line={"color": "#888888", "dash": "dot"},
                             hovertemplate="A coin flip: as many hits as false alarms"
                                           "<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=x, y=np.asarray(limit, dtype=np.float64), mode="lines",
        name=f"{LIMIT_NAME} ({limit_label})", fill="tonexty", fillcolor="rgba(213,94,0,0.08)",
        line={"color": PALETTE[5], "width": 3},
        hovertemplate="No guess can get above this line: at %{x:.0%} false alarms, at most "
                      "%{y:.0%} hits<extra></extra>"))
    fig.add_trace(go.Scatter(
        x=x, y=np.asarray(exact, dtype=np.float64), mode="lines", name=EXACT_NAME,
        line={"color": PALETTE[2], "width": 2, "dash": "dash"},
        hovertemplate="The likelihood-ratio test reaches this line: %{x:.0%} false alarms, "
                      "%{y:.0%} hits<extra></extra>"))
    symbols = ("circle", "diamond", "square")
    colours = (PALETTE[0], PALETTE[7], PALETTE[3])
    for i, player in enumerate(players):
        if not (np.isfinite(player.fpr) and np.isfinite(player.tpr)):
            continue
        fig.add_trace(go.Scatter(
            x=[player.fpr], y=[player.tpr], mode="markers", name=player.name,
            marker={"size": 16, "symbol": symbols[i % 3], "color": colours[i % 3],
                    "line": {"color": "white", "width": 1.5}},
            error_x={"type": "data", "symmetric": False,
                     "array": [player.fpr_interval[1] - player.fpr],
                     "arrayminus": [player.fpr - player.fpr_interval[0]]},
            error_y={"type": "data", "symmetric": False,
                     "array": [player.tpr_interval[1] - player.tpr],
                     "arrayminus": [player.tpr - player.tpr_interval[0]]},
            hovertemplate=(f"{player.name} after {player.rounds:,} rounds: "
                           "%{x:.0%} false alarms, %{y:.0%} hits (bars: 95 % of luck)"
                           "<extra></extra>")))
    finish(fig, title=title, x_title="False alarms: share of rounds without the person "
                                     "guessed “in” (FPR)",
           y_title="Hits: share of rounds with the person guessed “in” (TPR)", height=520)
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.18,
                              "xanchor": "left", "x": 0.0})
    fig.update_xaxes(range=[0, 1], tickformat=".0%", dtick=0.2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", dtick=0.2)
    return fig
