"""Figures of the "Choose epsilon" page: privacy–utility curves and membership trade-off curves.

Pure functions from numbers to ``go.Figure``; mechanism names are ours, never from a user's file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike, NDArray

from dashboard.charts.base import BAND_OPACITY, PALETTE, TRUE_COLOUR, finish
from dashboard.charts.tables import svg_text
from dpcore import safe_rounding

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


def _shown(value: float, direction: str) -> str:
    """A value for hover text, rounded the safe way: "up" for errors, "down" for guarantees."""
    if not np.isfinite(value):
        return "∞" if value > 0 else "—"
    if value == 0:
        return "0"
    return safe_rounding.upper(value) if direction == "up" else safe_rounding.lower(value)


def _log_ticks(low: float, high: float, *, max_ticks: int = 12) -> list[float]:
    """Tick positions for a log axis from ``low`` to ``high``: 1-2-5 in each decade when they
    fit, else the powers of ten (thinned to every other one over many decades)."""
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    for mantissas in ((1, 2, 5), (1,)):
        ticks = [m * 10.0**e for e in range(first, last + 1) for m in mantissas]
        ticks = [t for t in ticks if low * (1 - 1e-9) <= t <= high * (1 + 1e-9)]
        if len(ticks) <= max_ticks:
            return ticks
    step = math.ceil(len(ticks) / max_ticks)
    return ticks[::step]


def _tick_text(value: float) -> str:
    return f"{float(f'{value:.12g}'):g}"   # 0.05, 1, 10, 1e-05 (no SI prefix such as "100µ")


def utility_curves(curves: Sequence[Curve], *, title: str, y_title: str, measure_label: str,
                   band_label: str | None, current_epsilon: float,
                   target: float | None = None,
                   smallest: Sequence[tuple[str, float]] = (),
                   log_y: bool = True, value_format: str = ",.3g",
                   round_values: str = "up") -> go.Figure:
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
        target line, trace named ``f"{SMALLEST_PREFIX} ({name})"``; one beyond the ε range of
        the curves is named in a note at that edge of the chart instead (annotation named the
        same way).
    log_y
        A log y axis. Errors of 0 (discrete noise) cannot sit on it: they are drawn on a
        line at the bottom of the axis, labelled 0.
    value_format
        Unused (kept for callers): values in hover text are rounded by ``round_values``.
    round_values
        "up" (error bounds: a shown bound never understates) or "down" (success rates).
    """
    fig = go.Figure()
    arrays: list[NDArray] = []
    all_eps = [np.asarray(c.epsilon, dtype=np.float64) for c in curves] + [
        np.asarray(c.simulated_epsilon, dtype=np.float64) for c in curves
        if c.simulated_epsilon is not None]
    eps_low = float(min(e.min() for e in all_eps)) if all_eps else 0.01
    eps_high = float(max(e.max() for e in all_eps)) if all_eps else 10.0
    for curve in curves:
        for part in (curve.line, curve.low, curve.high, curve.simulated):
            if part is not None:
                arrays.append(np.asarray(part, dtype=np.float64))
    values = np.concatenate(arrays) if arrays else np.array([])
    values = values[np.isfinite(values)]
    floor = None
    if log_y:
        positive = values[values > 0]
        if target is not None and np.isfinite(target) and target > 0:
            positive = np.append(positive, target)
        y_low = float(positive.min()) if positive.size else 1e-3
        y_high = float(positive.max()) if positive.size else 1.0
        if np.any(values <= 0):
            # Half a decade below the smallest positive value: the line labelled 0.
            floor = 10.0 ** (math.floor(math.log10(y_low) * 2) / 2 - 0.5)
            y_low = floor
    else:
        finite = values if target is None else np.append(values, target)
        y_low = min(0.0, float(finite.min())) if finite.size else 0.0
        y_high = float(finite.max()) if finite.size else 1.0

    def placed(part) -> NDArray:
        y = np.asarray(part, dtype=np.float64)
        return np.where(y > 0, y, floor) if floor is not None else y

    def label(eps: NDArray, y: NDArray, name: str, extra: str = "") -> list[str]:
        return [f"{name}, ε = {_shown(e, 'up')}{extra}: "
                + measure_label.replace("{y}", _shown(v, round_values))
                for e, v in zip(eps, y, strict=True)]

    for i, curve in enumerate(curves):
        colour = PALETTE[i % len(PALETTE)]
        eps = np.asarray(curve.epsilon, dtype=np.float64)
        sim_eps = eps if curve.simulated_epsilon is None else np.asarray(
            curve.simulated_epsilon, dtype=np.float64)
        if curve.low is not None and curve.high is not None:
            low = np.asarray(curve.low, dtype=np.float64)
            high = np.asarray(curve.high, dtype=np.float64)
            fig.add_trace(go.Scatter(
                x=sim_eps, y=placed(low), mode="lines", line={"width": 0}, showlegend=False,
                legendgroup=curve.name, hoverinfo="skip", name=f"{curve.name} band low"))
            fig.add_trace(go.Scatter(
                x=sim_eps, y=placed(high), mode="lines", line={"width": 0}, fill="tonexty",
                fillcolor=_rgba(colour, BAND_OPACITY), legendgroup=curve.name,
                name=f"{curve.name}: {band_label}", showlegend=False,
                text=[f"{curve.name}, ε = {_shown(e, 'up')}: {band_label} between "
                      f"{_shown(lo, 'down')} and {_shown(hi, 'up')}"
                      for e, lo, hi in zip(sim_eps, low, high, strict=True)],
                hovertemplate="%{text}<extra></extra>"))
        if curve.line is not None:
            line = np.asarray(curve.line, dtype=np.float64)
            fig.add_trace(go.Scatter(
                x=eps, y=placed(line), mode="lines", name=curve.name, legendgroup=curve.name,
                line={"color": colour, "width": 2.5}, text=label(eps, line, curve.name),
                hovertemplate="%{text}<extra></extra>"))
        if curve.simulated is not None:
            sim = np.asarray(curve.simulated, dtype=np.float64)
            fig.add_trace(go.Scatter(
                x=sim_eps, y=placed(sim), mode="markers", name=f"{curve.name} (simulated)",
                legendgroup=curve.name, marker={"color": colour, "size": 6, "symbol": "circle"},
                text=label(sim_eps, sim, curve.name, ", simulated"),
                hovertemplate="%{text}<extra></extra>"))
    if target is not None:
        fig.add_trace(go.Scatter(
            x=[eps_low, eps_high], y=[target, target], mode="lines",
            name=TARGET_NAME, line={"color": TRUE_COLOUR, "dash": "dot", "width": 1.5},
            text=["Target: " + measure_label.replace("{y}", f"{target:g}")] * 2,
            hovertemplate="%{text}<extra></extra>"))
        names = [c.name for c in curves]
        for name, eps_star in smallest:
            colour = (PALETTE[names.index(name) % len(PALETTE)] if name in names
                      else TRUE_COLOUR)
            shown = safe_rounding.upper(eps_star)
            if eps_low * (1 - 1e-9) <= eps_star <= eps_high * (1 + 1e-9):
                fig.add_trace(go.Scatter(
                    x=[eps_star], y=[target], mode="markers",
                    name=f"{SMALLEST_PREFIX} ({name})",
                    marker={"symbol": "diamond", "size": 13, "color": colour,
                            "line": {"color": TRUE_COLOUR, "width": 1.5}},
                    text=[f"{name}: the target is met from ε = {shown} on"],
                    hovertemplate="%{text}<extra></extra>"))
                continue
            right = eps_star > eps_high
            fig.add_annotation(
                name=f"{SMALLEST_PREFIX} ({name})", x=math.log10(eps_high if right else eps_low),
                y=math.log10(target) if log_y and target > 0 else target,
                xanchor="right" if right else "left", yanchor="bottom", showarrow=False,
                font={"color": colour, "size": 13},
                text=(f"{svg_text(name)}: met from ε = {shown}, off the chart →" if right else
                      f"← {svg_text(name)}: met at every ε shown"))
    fig.add_trace(go.Scatter(
        x=[current_epsilon, current_epsilon], y=[y_low, y_high], mode="lines",
        name=f"{CURRENT_NAME} = {safe_rounding.upper(current_epsilon, 6)}",
        line={"color": TRUE_COLOUR, "dash": "dash", "width": 1.5},
        text=[f"The ε chosen above: {safe_rounding.upper(current_epsilon, 6)}"] * 2,
        hovertemplate="%{text}<extra></extra>"))
    finish(fig, title=svg_text(title), x_title="ε (privacy loss, log scale)", y_title=y_title,
           log_x=True, height=520)
    _legend_below(fig)
    x_ticks = _log_ticks(eps_low, eps_high)
    pad = 0.03 * (math.log10(eps_high) - math.log10(eps_low) or 1.0)
    fig.update_xaxes(range=[math.log10(eps_low) - pad, math.log10(eps_high) + pad],
                     tickvals=x_ticks, ticktext=[_tick_text(t) for t in x_ticks])
    if log_y:
        top = y_high * 1.15
        ticks = _log_ticks(y_low if floor is None else floor * 10**0.5, top, max_ticks=8)
        texts = [_tick_text(t) for t in ticks]
        if floor is not None:
            ticks, texts = [floor, *ticks], ["0", *texts]
        fig.update_yaxes(type="log", range=[math.log10(y_low) - 0.05, math.log10(top)],
                         tickvals=ticks, ticktext=texts)
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
        y = np.asarray(tpr, dtype=np.float64)
        fig.add_trace(go.Scatter(
            x=x, y=y, mode="lines", name=label,
            line={"color": colours[i % len(colours)], "width": 2.5,
                  "dash": dashes[i % len(dashes)]},
            # the most a test can catch is a bound: rounded up
            text=[f"{label}<br>a test that wrongly accuses {a:.1%} of outsiders can catch at "
                  f"most {safe_rounding.percent_upper(float(min(max(b, 0.0), 1.0)))} of members"
                  for a, b in zip(x, y, strict=True)],
            hovertemplate="%{text}<extra></extra>"))
    finish(fig, title=title, x_title="False-positive rate (share of non-members flagged)",
           y_title="True-positive rate (share of members flagged)", height=500)
    _legend_below(fig)
    fig.update_xaxes(range=[0, 1], tickformat=".0%", dtick=0.2)
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%", dtick=0.2)
    return fig
