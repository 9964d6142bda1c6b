"""Figures of the "Data" page: the distribution of one column (bars or a histogram).

Pure functions from a column's values to ``go.Figure``; names from a user's file shown literally.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, finish, vline
from dashboard.charts.tables import svg_text

#: At most this many bars: a column with more categories shows its most common ones.
MAX_BARS = 50
HISTOGRAM_BINS = 40


def category_bars(values: pd.Series, *, column: str,
                  categories: Sequence[str] | None = None) -> go.Figure:
    """Bar chart of how many rows hold each category (declared categories with no rows too).

    With more than ``MAX_BARS`` categories only the most common ones are drawn, and the title
    says so.
    """
    counts = values.dropna().astype(str).value_counts()
    if categories is not None:
        counts = counts.reindex([str(c) for c in categories], fill_value=0)
    return counted_bars(counts, column=column)


def counted_bars(counts: pd.Series, *, column: str) -> go.Figure:
    """Bar chart of rows per category from counts already made (by the engine), indexed by
    category label."""
    total = int(counts.sum())
    shown = counts if len(counts) <= MAX_BARS else counts.sort_values(ascending=False)[:MAX_BARS]
    name = svg_text(column)
    labels = [svg_text(c) for c in shown.index]
    share = 100 * shown.to_numpy(dtype=np.float64) / max(total, 1)
    fig = go.Figure(go.Bar(
        x=labels, y=shown.to_numpy(), marker_color=PALETTE[0], customdata=share,
        hovertemplate=(f"{name} = %{{x}}<br>%{{y:,}} rows (%{{customdata:.1f}}% of the "
                       "non-missing values)<extra></extra>"),
    ))
    title = f"Rows per category of {name}"
    if len(shown) < len(counts):
        title += f" (the {MAX_BARS} most common of {len(counts):,})"
    finish(fig, title=title, x_title=f"{name} (category)", y_title="rows (people)")
    fig.update_xaxes(type="category")
    return fig


def numeric_histogram(values: ArrayLike, *, column: str, unit: str = "",
                      lower: float | None = None, upper: float | None = None) -> go.Figure:
    """Histogram of a numeric column; dashed lines at its public bounds when it has them.

    Whole numbers over a short range get one bar per value.
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    binned = None
    if x.size:
        lo, hi = float(x.min()), float(x.max())
        if np.array_equal(x, np.rint(x)) and hi - lo <= 2 * HISTOGRAM_BINS:
            edges = np.arange(lo - 0.5, hi + 1.5)
        else:
            edges = np.linspace(lo, hi if hi > lo else lo + 1, HISTOGRAM_BINS + 1)
        binned = np.histogram(x, bins=edges)[::-1]
    return binned_histogram(binned, column=column, unit=unit, lower=lower, upper=upper)


def binned_histogram(binned: tuple[ArrayLike, ArrayLike] | None, *, column: str,
                     unit: str = "", lower: float | None = None,
                     upper: float | None = None) -> go.Figure:
    """Histogram from (bin edges, counts) already made (by the engine); None draws a note
    that the column has no finite value."""
    name = svg_text(column)
    axis = f"{name} ({svg_text(unit)})" if unit else name
    fig = go.Figure()
    if binned is not None:
        edges = np.asarray(binned[0], dtype=np.float64)
        counts = np.asarray(binned[1])
        fig.add_trace(go.Bar(
            x=(edges[:-1] + edges[1:]) / 2, y=counts, width=np.diff(edges),
            marker_color=PALETTE[0], customdata=np.column_stack([edges[:-1], edges[1:]]),
            hovertemplate=(f"{name} from %{{customdata[0]:,.4g}} to %{{customdata[1]:,.4g}}:"
                           " %{y:,} rows<extra></extra>"),
            name="rows",
        ))
        fig.update_layout(bargap=0.02)
    else:
        fig.add_annotation(text="no finite range to draw: every cell is missing or a value "
                                "is infinite", showarrow=False,
                           x=0.5, y=0.5, xref="paper", yref="paper")
    for bound, label in ((lower, "public lower bound"), (upper, "public upper bound")):
        if bound is not None and math.isfinite(bound):
            vline(fig, x=bound, line_dash="dash", line_color=PALETTE[5],
                  annotation_text=f"{label} {bound:,.6g}", annotation_position="top")
    return finish(fig, title=f"Distribution of {name}", x_title=axis, y_title="rows (people)")


#: Up to this many rows between the chart's ends, every whole number is labelled (plotly's own
#: ticks are whole numbers above it).
WHOLE_TICKS_SPAN = 20


def rows_per_person(rows: ArrayLike, people: ArrayLike, *, person: str,
                    max_rows: int) -> go.Figure:
    """Bars of how many people have 1, 2, 3, … rows (log scale: the tail is long), with the
    max-rows bound as a dashed line; rows right of it are dropped."""
    rows = np.asarray(rows, dtype=np.int64)
    people = np.asarray(people, dtype=np.int64)
    dropped = np.where(rows > max_rows, (rows - max_rows) * people, 0)
    fig = go.Figure(go.Bar(
        x=rows, y=people, marker_color=[PALETTE[1] if r > max_rows else PALETTE[0]
                                        for r in rows.tolist()],
        customdata=dropped,
        hovertemplate=("%{y:,} people have %{x:,} rows<br>"
                       "rows dropped by the bound: %{customdata:,}<extra></extra>"),
    ))
    vline(fig, x=max_rows + 0.5, line_dash="dash", line_color="#444",
          annotation_text=f"max rows = {max_rows:,}", annotation_position="top right")
    name = svg_text(person)
    finish(fig, title=f"Rows per person ({name})", x_title="rows of one person",
           y_title="people (log scale)")
    # powers of ten only (1, 10, 100 …): plotly labels every minor tick of a short log range
    top = math.log10(max(int(people.max()), 1))
    fig.update_yaxes(type="log", dtick=1, tickformat=",d", range=[-0.1, top + 0.15])
    # whole rows only, and the bars and the bound's line both in view: over one bar (a
    # balanced panel: every person has 8 rows) plotly ranged 7.6 to 8.4, ticks 7.6, 7.8 …,
    # and the line at max rows 1 fell outside (issue 35 item 4)
    low = min(int(rows.min()) if rows.size else 1, max_rows)
    high = max(int(rows.max()) if rows.size else 1, max_rows + 1)
    fig.update_xaxes(range=[low - 0.6, high + 0.6], tickformat=",d")
    if high - low <= WHOLE_TICKS_SPAN:
        fig.update_xaxes(tick0=0, dtick=1)
    return fig
