"""Figures of the "Choose epsilon" page: privacy–utility curves and membership trade-off curves.

Pure functions from numbers to ``go.Figure``; mechanism names are ours, never from a user's file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import BAND_OPACITY, PALETTE, TRUE_COLOUR, finish
from dashboard.charts.tables import svg_text

#: Names of the marker traces (tests and the page find them by these names).
CURRENT_NAME = "Current ε"
TARGET_NAME = "Target"
SMALLEST_PREFIX = "Smallest ε meeting the target"


@dataclass(frozen=True)
class Curve:
    """One mechanism's line on the privacy–utility chart.

    ``line`` is the value of the measure at each ``epsilon``; ``low``/``high`` the 5%–95%
    band of the simulated errors and ``simulated`` the simulated value of the same measure
    (markers, to show that simulation and formula agree), both at each ``simulated_epsilon``
    (default: ``epsilon``).
    """

    name: str
    epsilon: ArrayLike
    line: ArrayLike | None = None
    low: ArrayLike | None = None
    high: ArrayLike | None = None
    simulated: ArrayLike | None = None
    simulated_epsilon: ArrayLike | None = None


def _rgba(hex_colour: str, alpha: float) -> str:
    r, g, b = (int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def utility_curves(curves: Sequence[Curve], *, title: str, y_title: str, measure_label: str,
                   band_label: str | None, current_epsilon: float,
                   target: float | None = None,
                   smallest: Sequence[tuple[str, float]] = (),
                   log_y: bool = True, value_format: str = ",.3g") -> go.Figure:
    """Error (or success rate) against epsilon on a log axis, one colour per mechanism.

    Parameters
    ----------
    curves
        One :class:`Curve` per mechanism.
    title, y_title
        Figure and y-axis titles (with units); ``title`` may quote a column name from the
        user's file and is escaped here.
    measure_label
        What a line value means in hover text, e.g. "error at most {y} in 95% of releases".
        ``{y}`` is replaced by the value.
    band_label
        What the band means in hover text, or None when there is no band.
    current_epsilon
        Drawn as a dashed vertical line (trace named :data:`CURRENT_NAME`).
    target
        Target level, drawn as a dotted horizontal line (trace :data:`TARGET_NAME`).
    smallest
        (mechanism name, epsilon) pairs where the target is first met: a diamond on the
        target line, trace named ``f"{SMALLEST_PREFIX} ({name})"``.
    """
    fig = go.Figure()
    values: list[float] = []
    for i, curve in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        eps = np.asarray(curve.epsilon, dtype=np.float64)
        sim_eps = eps if curve.simulated_epsilon is None else np.asarray(
            curve.simulated_epsilon, dtype=np.float64)
        if curve.low is not None and curve.high is not None:
            low = np.asarray(curve.low, dtype=np.float64)
            high = np.asarray(curve.high, dtype=np.float64)
            values += [*low[low > 0], *high]
            fig.add_trace(go.Scatter(
                x=sim_eps, y=low, mode="lines", line={"width": 0}, showlegend=False,
                legendgroup=curve.name, hoverinfo="skip", name=f"{curve.name} band low"))
            fig.add_trace(go.Scatter(
                x=sim_eps, y=high, mode="lines", line={"width": 0}, fill="tonexty",
                fillcolor=_rgba(colour, BAND_OPACITY), legendgroup=curve.name,
                name=f"{curve.name}: {band_label}", customdata=low, showlegend=False,
                hovertemplate=(f"{curve.name}, ε = %{{x:.3g}}: {band_label} between "
                               f"%{{customdata:{value_format}}} and %{{y:{value_format}}}"
                               "<extra></extra>")))
        if curve.line is not None:
            line = np.asarray(curve.line, dtype=np.float64)
            values += list(line)
            hover = measure_label.replace("{y}", f"%{{y:{value_format}}}")
            fig.add_trace(go.Scatter(
                x=eps, y=line, mode="lines", name=curve.name, legendgroup=curve.name,
                line={"color": colour, "width": 2.5},
                hovertemplate=f"{curve.name}, ε = %{{x:.3g}}: {hover}<extra></extra>"))
        if curve.simulated is not None:
            sim = np.asarray(curve.simulated, dtype=np.float64)
            values += list(sim)
            hover = measure_label.replace("{y}", f"%{{y:{value_format}}}")
            fig.add_trace(go.Scatter(
                x=sim_eps, y=sim, mode="markers", name=f"{curve.name} (simulated)",
                legendgroup=curve.name, marker={"color": colour, "size": 6, "symbol": "circle"},
                hovertemplate=(f"{curve.name}, ε = %{{x:.3g}}, simulated: {hover}"
                               "<extra></extra>")))
    finite = np.array([v for v in values if np.isfinite(v) and (v > 0 or not log_y)])
    if target is not None and np.isfinite(target):
        finite = np.append(finite, target)
    y_low = float(finite.min()) if finite.size else (1e-3 if log_y else 0.0)
    y_high = float(finite.max()) if finite.size else 1.0
    if not log_y:
        y_low = min(0.0, y_low)
    if target is not None:
        eps_all = np.concatenate([np.asarray(c.epsilon, dtype=np.float64) for c in curves])
        fig.add_trace(go.Scatter(
            x=[float(eps_all.min()), float(eps_all.max())], y=[target, target], mode="lines",
            name=TARGET_NAME, line={"color": TRUE_COLOUR, "dash": "dot", "width": 1.5},
            hovertemplate=f"Target: {measure_label.replace('{y}', '%{y:' + value_format + '}')}"
                          "<extra></extra>"))
        for name, eps_star in smallest:
            colour = PALETTE[[c.name for c in curves].index(name) % len(PALETTE)] \
                if name in [c.name for c in curves] else TRUE_COLOUR
            fig.add_trace(go.Scatter(
                x=[eps_star], y=[target], mode="markers", name=f"{SMALLEST_PREFIX} ({name})",
                marker={"symbol": "diamond", "size": 13, "color": colour,
                        "line": {"color": TRUE_COLOUR, "width": 1.5}},
                hovertemplate=(f"{name}: the target is met from ε = %{{x:.3g}} on"
                               "<extra></extra>")))
    fig.add_trace(go.Scatter(
        x=[current_epsilon, current_epsilon], y=[y_low, y_high], mode="lines",
        name=f"{CURRENT_NAME} = {current_epsilon:g}",
        line={"color": TRUE_COLOUR, "dash": "dash", "width": 1.5},
        hovertemplate="The ε chosen on the slider: %{x:.3g}<extra></extra>"))
    finish(fig, title=svg_text(title), x_title="ε (privacy loss, log scale)", y_title=y_title,
           log_x=True, height=520)
    _legend_below(fig)
    fig.update_xaxes(tickformat="~g")  # 0.0001, not plotly's SI "100µ"
    if log_y:
        span = math.log10(y_high / y_low) if y_low > 0 else 0.0
        # Powers of ten only when the curve spans decades: the 2-and-5 labels crowd otherwise.
        fig.update_yaxes(type="log", dtick=1 if span > 2 else None)
    return fig


def _legend_below(fig: go.Figure) -> None:
    """Many legend entries: below the plot, so they never cover the title."""
    fig.update_layout(legend={"orientation": "h", "yanchor": "top", "y": -0.2, "xanchor": "left",
                              "x": 0.0}, margin={"b": 40})


def tradeoff_chart(fpr: ArrayLike, curves: Sequence[tuple[str, ArrayLike]], *,
                   title: str) -> go.Figure:
    """The highest true-positive rate of any membership test, against its false-positive rate.

    ``curves`` are (label, TPR at each ``fpr``); the diagonal is a blind guess.
    """
    x = np.asarray(fpr, dtype=np.float64)
    fig = go.Figure()
    fig.add_trace(go.Scatter(
        x=[0, 1], y=[0, 1], mode="lines", name="Blind guess (TPR = FPR)",
        line={"color": "#888888", "dash": "dot"},
        hovertemplate="A coin flip: TPR = FPR = %{x:.0%}<extra></extra>"))
    # Vermillion, bluish green, black, reddish purple (Okabe & Ito): no yellow on white.
    colours = (PALETTE[5], PALETTE[2], PALETTE[7], PALETTE[3])
    dashes = ("solid", "dash", "dashdot", "longdash")
    for i, (label, tpr) in enumerate(curves):
        fig.add_trace(go.Scatter(
            x=x, y=np.asarray(tpr, dtype=np.float64), mode="lines", name=label,
            line={"color": colours[i % len(colours)], "width": 2.5,
                  "dash": dashes[i % len(dashes)]},
            hovertemplate=(f"{label}<br>a test that wrongly accuses %{{x:.1%}} of outsiders "
                           "can catch at most %{y:.1%} of members<extra></extra>")))
    finish(fig, title=title, x_title="False-positive rate (share of non-members flagged)",
           y_title="True-positive rate (share of members flagged)", height=500)
    _legend_below(fig)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", dtick=0.2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", dtick=0.2)
    return fig
