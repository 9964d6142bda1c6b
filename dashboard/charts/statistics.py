"""Figures of the "Noisy statistics" page: error spread, noisy histograms, per-category error.

Pure functions from simulation summaries to ``go.Figure``; labels from a user's file are escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import plotly.graph_objects as go
from numpy.typing import NDArray

from dashboard.charts import errors
from dashboard.charts.base import BAND_OPACITY, PALETTE, TRUE_COLOUR, finish, vline, vrect
from dashboard.charts.tables import svg_text
from dashboard.number_text import up


class _Summary(Protocol):
    edges: NDArray[np.float64]
    cell_rmse: NDArray[np.float64]

    def density(self) -> NDArray[np.float64]: ...


class MechanismErrors(Protocol):
    """What the charts read from one mechanism's run (``analysis.statistics.MechanismRun``)."""

    name: str
    label: str
    true_value: NDArray[np.float64]
    labels: tuple[str, ...] | None
    release: NDArray[np.float64]
    summary: _Summary
    alpha: dict[float, NDArray[np.float64]] | None
    density_x: NDArray[np.float64] | None
    density_y: NDArray[np.float64] | None
    integer_errors: bool

    def alpha_at(self, confidence: float) -> tuple[float, bool]: ...


def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def error_spread(runs: Sequence[MechanismErrors], *, confidence: float, title: str,
                 x_title: str) -> go.Figure:
    """Simulated error histogram of each mechanism with its closed-form density and ±alpha.

    ``title`` and ``x_title`` may quote a column name from a user's file: they are escaped.

    Bars are the share of simulated releases per unit of error (so they sit on the density);
    the line is the closed-form density (for whole-number noise, the probability of each
    whole number). The band and dashed lines mark ±alpha at ``confidence``.
    """
    fig = go.Figure()
    overlay = len(runs) > 1
    for i, run in enumerate(runs):
        colour, s = _colour(i), run.summary
        edges = np.asarray(s.edges)
        share = s.density() * np.diff(edges)
        name = svg_text(run.name)  # the privacy level is the same for every mechanism shown
        fig.add_trace(go.Bar(
            x=(edges[:-1] + edges[1:]) / 2, y=s.density(), width=np.diff(edges),
            name=f"{name}: simulated", marker={"color": colour, "line": {"width": 0}},
            opacity=0.45 if overlay else 0.6,
            customdata=np.column_stack([edges[:-1], edges[1:], share]),
            hovertemplate=("errors from %{customdata[0]:.4g} to %{customdata[1]:.4g}:<br>"
                           "%{customdata[2]:.2%} of simulated releases<extra>" + name
                           + "</extra>"),
        ))
        if run.density_x is not None and run.density_y is not None:
            what = "probability of this whole-number error" if run.integer_errors else "density"
            fig.add_trace(go.Scatter(
                x=run.density_x, y=run.density_y, name=f"{name}: closed form",
                mode="lines+markers" if run.integer_errors else "lines",
                line={"color": colour, "width": 2.5}, marker={"size": 5},
                hovertemplate=f"error %{{x:.4g}}: {what} %{{y:.4g}}<extra>{name}</extra>",
            ))
        alpha, exact = run.alpha_at(confidence)
        how = "closed form" if exact else "simulated"
        if i == 0:
            vrect(fig, x0=-alpha, x1=alpha, fillcolor=colour, opacity=BAND_OPACITY,
                  line_width=0, layer="below")
        for sign in (-1, 1):
            vline(fig, x=sign * alpha, line={"color": colour, "dash": "dash", "width": 1.5})
        fig.add_annotation(x=alpha, y=1 - 0.07 * i, yref="paper", xanchor="left",
                           showarrow=False, font={"color": colour, "size": 12},
                           text=f"±{up(alpha)}: {confidence:.0%} ({how})")
    vline(fig, x=0, line={"color": TRUE_COLOUR, "width": 1.5})
    fig = finish(fig, title=svg_text(title), x_title=svg_text(x_title),
                 y_title="Share of releases per unit of error", height=460)
    # Up to four legend entries: below the plot, where they cannot cover the title.
    fig.update_layout(barmode="overlay", bargap=0, margin={"b": 110},
                      legend={"yanchor": "top", "y": -0.2, "xanchor": "left", "x": 0.0})
    return fig


def noisy_bars(runs: Sequence[MechanismErrors], *, confidence: float, title: str,
               x_title: str, counted: str = "people") -> go.Figure:
    """True counts next to one noisy release per mechanism, with ±alpha error bars; below, on
    a scale of its own, each bar's error (noisy − true) and its ±alpha band: beside counts in
    the thousands, an error of a few people cannot be seen in the bars. ``counted`` says what
    a count counts: people when a row is a person, rows (visits, say) under a person id."""
    first = runs[0]
    labels = [svg_text(c) for c in (first.labels or ())]
    truth = np.asarray(first.true_value, dtype=np.float64)
    fig = errors.two_rows()
    fig.add_trace(go.Bar(
        x=labels, y=truth, name="True count", marker={"color": TRUE_COLOUR},
        hovertemplate="%{x}: true count %{y:,.0f}<extra></extra>",
    ), row=1, col=1)
    for i, run in enumerate(runs):
        alpha = np.zeros(truth.shape) if run.alpha is None else np.broadcast_to(
            np.asarray(run.alpha[confidence], dtype=np.float64), truth.shape)
        name = svg_text(run.label)
        fig.add_trace(go.Bar(
            x=labels, y=run.release, name=f"One noisy release: {name}",
            marker={"color": _colour(i)},
            error_y={"type": "data", "array": alpha, "visible": True, "thickness": 1.2},
            # ±α rounded up here: a d3 format in the template would round it to nearest.
            customdata=[[t, up(a)] for t, a in zip(truth.tolist(), alpha.tolist(),
                                                   strict=True)],
            hovertemplate=("%{x}: noisy count %{y:,.1f} (true %{customdata[0]:,.0f})<br>"
                           f"{confidence:.0%} of releases land within ±%{{customdata[1]}}"
                           f"<extra>{name}</extra>"),
        ), row=1, col=1)
        errors.add_error_row(fig, labels, truth, run.release, alpha, name=name,
                             colour=_colour(i), group=i, confidence=confidence)
    return errors.finish_two_rows(fig, title=svg_text(title), x_title=svg_text(x_title),
                                  y_title=f"Count ({counted})",
                                  error_title=f"Error: noisy − true ({counted})")


def category_errors(runs: Sequence[MechanismErrors], *, title: str, x_title: str) -> go.Figure:
    """Typical error of each category relative to its true count (RMSE ÷ true count, log scale).

    Categories with a true count of 0 have no relative error and are left out of the bars.
    """
    first = runs[0]
    labels = [svg_text(c) for c in (first.labels or ())]
    truth = np.asarray(first.true_value, dtype=np.float64)
    fig = go.Figure()
    for i, run in enumerate(runs):
        rmse = np.asarray(run.summary.cell_rmse, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(truth > 0, 100 * rmse / truth, np.nan)
        name = svg_text(run.label)
        fig.add_trace(go.Bar(
            x=labels, y=relative, name=name, marker={"color": _colour(i)},
            customdata=np.column_stack([truth, rmse]),
            hovertemplate=("%{x}: typical error %{customdata[1]:.3g} on a true count of "
                           "%{customdata[0]:,.0f} = %{y:.3g}%<extra>" + name + "</extra>"),
        ))
    fig.update_layout(barmode="group")
    fig = finish(fig, title=svg_text(title), x_title=svg_text(x_title),
                 y_title="Typical error ÷ true count (%, log scale)")
    fig.update_xaxes(type="category")
    fig.update_yaxes(type="log", dtick=1, tickformat="~g", ticksuffix="%")
    return fig
