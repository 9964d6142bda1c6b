"""Figures of the "Noisy tables" page: table heatmaps and the distribution of the L1 error.

Pure functions from numbers to ``go.Figure``; labels from a user's file are shown literally.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, finish, vline

#: Above this many cells the numbers are not written inside the heatmap (they would not fit).
MAX_ANNOTATED_CELLS = 400


def svg_text(text: object) -> str:
    """``text`` shown literally by plotly: its pseudo-HTML and template braces neutralised."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("%", "&#37;").replace("{", "&#123;").replace("}", "&#125;"))


def table_heatmap(values: ArrayLike, row_labels: Sequence[str], column_labels: Sequence[str],
                  *, title: str, value_name: str, row_title: str, column_title: str,
                  value_format: str | None = None, zmin: float | None = None,
                  zmax: float | None = None, colorscale: str = "Cividis") -> go.Figure:
    """A heatmap of a 2-d table, rows top to bottom in table order, values written in cells.

    ``title``, ``row_title`` and ``column_title`` may hold column names from a user's file:
    they are escaped here. Missing values (NaN) are left blank (e.g. a relative error where
    the true count is 0). ``value_format`` (a d3 format) defaults to whole numbers when every
    value is one, else one decimal.
    """
    z = np.asarray(values, dtype=np.float64)
    if value_format is None:
        finite = z[np.isfinite(z)]
        value_format = ",.0f" if np.array_equal(finite, np.rint(finite)) else ",.1f"
    rows = [svg_text(r) for r in row_labels]
    cols = [svg_text(c) for c in column_labels]
    row_name, col_name = svg_text(row_title), svg_text(column_title)
    shown = z.size <= MAX_ANNOTATED_CELLS
    fig = go.Figure(go.Heatmap(
        z=z, x=cols, y=rows, zmin=zmin, zmax=zmax, colorscale=colorscale,
        colorbar={"title": {"text": svg_text(value_name)}},
        texttemplate=f"%{{z:{value_format}}}" if shown else None,
        hovertemplate=(f"{row_name} = %{{y}}<br>{col_name} = %{{x}}<br>"
                       f"{svg_text(value_name)}: %{{z:{value_format}}}<extra></extra>"),
        hoverongaps=False,
    ))
    height = int(min(900, max(320, 120 + 28 * len(rows))))
    finish(fig, title=svg_text(title), x_title=col_name, y_title=row_name, height=height)
    fig.update_xaxes(type="category", showgrid=False)
    fig.update_yaxes(type="category", autorange="reversed", showgrid=False)
    return fig


def l1_error_histograms(edges: ArrayLike, before: ArrayLike, after: ArrayLike, *,
                        median_before: float, median_after: float, trials: int,
                        after_label: str) -> go.Figure:
    """Two overlaid histograms of the total L1 error: before and after post-processing.

    ``before`` and ``after`` are the shares of simulated releases per bin of ``edges``.
    """
    edges = np.asarray(edges, dtype=np.float64)
    centres = (edges[:-1] + edges[1:]) / 2
    widths = np.diff(edges)
    fig = go.Figure()
    # the lower median is labelled on its left, the other on its right, so labels never overlap
    sides = ("top left", "top right") if median_before <= median_after else ("top right",
                                                                            "top left")
    for shares, name, colour, median, side in (
        (before, "Noisy (no post-processing)", PALETTE[0], median_before, sides[0]),
        (after, f"Published ({after_label})", PALETTE[1], median_after, sides[1]),
    ):
        percent = 100 * np.asarray(shares, dtype=np.float64)
        fig.add_trace(go.Bar(
            x=centres, y=percent, width=widths, name=name, marker_color=colour, opacity=0.6,
            customdata=np.column_stack([edges[:-1], edges[1:]]),
            hovertemplate=(f"{name}<br>total L1 error %{{customdata[0]:,.4g}} to "
                           "%{customdata[1]:,.4g}: %{y:.2f}% of releases<extra></extra>"),
        ))
        vline(fig, x=median, line_dash="dash", line_color=colour,
              annotation_text=f"median {median:,.3g}", annotation_position=side,
              annotation_font_color=colour)
    fig.update_layout(barmode="overlay", bargap=0)
    return finish(fig, title=f"Total L1 error of the table over {trials:,} simulated releases",
                  x_title="total L1 error (sum over cells of |released − true|, people)",
                  y_title="share of releases (%)")
