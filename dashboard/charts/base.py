"""The app's plotly template: colour-blind-safe palette (Okabe & Ito), fonts, margins.

``finish`` gives every figure a title, axis titles with units and the shared look.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio

#: Okabe & Ito (2008) colour-blind-safe palette, black last.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000")
TRUE_COLOUR = "#000000"   # the true (non-private) answer is always black
BAND_OPACITY = 0.18

TEMPLATE = "epsilon_lab"
_OVERRIDES = go.layout.Template(
    layout=go.Layout(
        colorway=PALETTE,
        font={"family": "Source Sans Pro, Arial, sans-serif", "size": 14},
        title={"x": 0.0, "xanchor": "left", "font": {"size": 17}},
        margin={"l": 60, "r": 20, "t": 60, "b": 55},
        hoverlabel={"namelength": -1},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "xanchor": "right", "x": 1.0},
        plot_bgcolor="white",
        xaxis={"showgrid": True, "gridcolor": "#e5e5e5", "zeroline": False, "linecolor": "#444"},
        yaxis={"showgrid": True, "gridcolor": "#e5e5e5", "zeroline": False, "linecolor": "#444"},
    )
)
# Merge once at import: a "plotly_white+ours" default would be re-merged for every figure
# (about 15-25 ms each, several per page rerun).
pio.templates["_epsilon_lab_overrides"] = _OVERRIDES
pio.templates[TEMPLATE] = pio.templates["plotly_white+_epsilon_lab_overrides"]
pio.templates.default = TEMPLATE


def finish(fig: go.Figure, *, title: str, x_title: str, y_title: str,
           log_x: bool = False, height: int = 420) -> go.Figure:
    """Apply the shared look, a title that says what the figure shows, and axis titles."""
    fig.update_layout(title={"text": title}, height=height)
    fig.update_xaxes(title_text=x_title, type="log" if log_x else None)
    fig.update_yaxes(title_text=y_title)
    return fig
