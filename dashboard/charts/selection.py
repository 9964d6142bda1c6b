"""Figures of the "Selection" page: how often each candidate is picked, and P(correct) curves.

Pure functions from selection summaries to ``go.Figure``; labels from a user's file are escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
from numpy.typing import ArrayLike

from dashboard.charts.base import PALETTE, TRUE_COLOUR, finish, hline
from dashboard.charts.tables import svg_text

#: Colours: exact probability, simulated frequency, top-k inclusion.
EXACT_COLOUR, SIMULATED_COLOUR, INCLUSION_COLOUR = PALETTE[0], PALETTE[5], PALETTE[2]
#: One colour per noise type, the same on every chart of the page.
NOISE_COLOURS = {"laplace": PALETTE[0], "exponential": PALETTE[1], "gumbel": PALETTE[3]}


def _array(values: ArrayLike) -> np.ndarray:
    return np.asarray(values, dtype=np.float64)


def selection_chart(labels: Sequence[str], scores: ArrayLike, exact: ArrayLike,
                    empirical: ArrayLike, half_width: ArrayLike, *, trials: int, title: str,
                    x_title: str, score_title: str, inclusion: ArrayLike | None = None,
                    k: int = 1, prices: ArrayLike | None = None) -> go.Figure:
    """Exact selection probability per candidate, the simulated frequency with its 95% band,
    and the true score on a second axis (right).

    ``labels``, ``title`` and ``x_title`` may hold text from a user's file: they are escaped.
    With ``prices`` the x axis is numeric (the pricing example): lines instead of bars, and the
    true score is the revenue curve. With ``inclusion`` (k > 1) a third series shows how often
    each candidate is among the k picks.
    """
    exact, empirical, half_width = _array(exact), _array(empirical), _array(half_width)
    scores = _array(scores)
    names = [svg_text(label) for label in labels]
    numeric = prices is not None
    x = _array(prices) if numeric else names
    what = "price %{x:.4g}" if numeric else "%{x}"
    fig = go.Figure()
    exact_hover = f"{what}: picked with probability %{{y:.2%}} (exact)<extra></extra>"
    if numeric:
        fig.add_trace(go.Scatter(x=x, y=exact, name="Exact probability", mode="lines",
                                 line={"color": EXACT_COLOUR, "width": 2.5},
                                 hovertemplate=exact_hover))
    else:
        fig.add_trace(go.Bar(x=x, y=exact, name="Exact probability", opacity=0.75,
                             marker={"color": EXACT_COLOUR}, hovertemplate=exact_hover))
    fig.add_trace(go.Scatter(
        x=x, y=empirical, name=f"Simulated share of {trials:,} releases (±95%)", mode="markers",
        marker={"color": SIMULATED_COLOUR, "size": 5 if numeric else 9, "symbol": "circle"},
        error_y={"type": "data", "array": half_width, "visible": True, "thickness": 1.3,
                 "color": SIMULATED_COLOUR},
        customdata=half_width,
        hovertemplate=(f"{what}: picked in %{{y:.2%}} of {trials:,} simulated releases "
                       "(±%{customdata:.2%}, 95% binomial band)<extra></extra>"),
    ))
    if inclusion is not None:
        fig.add_trace(go.Scatter(
            x=x, y=_array(inclusion), name=f"Among the {k} picks (simulated)", mode="markers",
            marker={"color": INCLUSION_COLOUR, "size": 5 if numeric else 9, "symbol": "diamond"},
            hovertemplate=(f"{what}: among the {k} picks in %{{y:.2%}} of simulated "
                           "releases<extra></extra>"),
        ))
    score_name = svg_text(score_title)
    fig.add_trace(go.Scatter(
        x=x, y=scores, name=f"{score_name} (right axis)", yaxis="y2",
        mode="lines" if numeric else "markers", line={"color": TRUE_COLOUR, "width": 1.5},
        marker={"color": TRUE_COLOUR, "symbol": "line-ew-open", "size": 16,
                "line": {"width": 2.5, "color": TRUE_COLOUR}},
        hovertemplate=f"{what}: true score %{{y:,.4g}}<extra></extra>",
    ))
    finish(fig, title=svg_text(title), x_title=svg_text(x_title),
           y_title="Probability of being picked", height=460)
    # Whole percents repeat on an axis that tops out at a few percent (400 prices).
    top = float(np.max(np.concatenate([exact, empirical + half_width])))
    fig.update_layout(
        barmode="overlay",
        yaxis={"tickformat": ".0%" if top >= 0.1 else ".1%", "rangemode": "tozero"},
        yaxis2={"title": {"text": score_name}, "overlaying": "y", "side": "right",
                "showgrid": False, "rangemode": "tozero", "linecolor": "#444"},
        margin={"r": 80},
    )
    if not numeric:
        fig.update_xaxes(type="category")
    return fig


def correctness_chart(levels: ArrayLike, curves: Mapping[str, ArrayLike], *,
                      noise_names: Mapping[str, str], current_noise: str, current_level: float,
                      current_value: float | None, level_title: str, level_symbol: str,
                      title: str, y_title: str, chance: float | None = None,
                      standard_error: float | None = None) -> go.Figure:
    """A probability of picking right against the privacy level (log x), one line per noise.

    The chosen noise is drawn thicker, with a star at the chosen level; ``chance`` adds the
    level of a random pick, ``standard_error`` (Monte Carlo curves) widens each point's hover.
    """
    levels = _array(levels)
    fig = go.Figure()
    se_text = f" (Monte Carlo, ±{standard_error:.1%})" if standard_error is not None else ""
    for noise, values in curves.items():
        chosen = noise == current_noise
        name = noise_names[noise]
        fig.add_trace(go.Scatter(
            x=levels, y=_array(values), name=name, mode="lines+markers" if se_text else "lines",
            line={"color": NOISE_COLOURS.get(noise, PALETTE[4]), "width": 4 if chosen else 2,
                  "dash": "solid" if chosen else "dot"},
            marker={"size": 5},
            hovertemplate=(f"{level_symbol} = %{{x:.3g}}: right %{{y:.1%}} of the time"
                           f"{se_text}<extra>{name}</extra>"),
        ))
    if chance is not None:
        hline(fig, y=chance, line={"color": "#777", "dash": "dash", "width": 1.2},
              annotation_text=f"picking at random: {chance:.1%}",
              annotation_position="bottom right")
    if current_value is not None:
        fig.add_trace(go.Scatter(
            x=[current_level], y=[current_value], name="Chosen setting", mode="markers",
            marker={"color": NOISE_COLOURS.get(current_noise, PALETTE[4]), "size": 16,
                    "symbol": "star", "line": {"color": TRUE_COLOUR, "width": 1}},
            hovertemplate=(f"chosen: {level_symbol} = %{{x:.3g}}, right %{{y:.1%}} of the "
                           f"time<extra>{noise_names[current_noise]}</extra>"),
        ))
    finish(fig, title=title, x_title=level_title, y_title=y_title, log_x=True)
    fig.update_xaxes(exponentformat="power")   # 10⁻⁵ rather than plotly's "10µ"
    fig.update_yaxes(range=[-0.02, 1.02], tickformat=".0%")
    return fig
