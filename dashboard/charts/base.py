"""The app's plotly template: colour-blind-safe palette (Okabe & Ito), fonts, margins.

``finish`` gives every figure a title, axis titles with units and the shared look.
"""

from __future__ import annotations

import plotly.graph_objects as go
import plotly.io as pio
from plotly import shapeannotation

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


def _spanning(fig: go.Figure, shape_type: str, shape: dict, kwargs: dict) -> go.Figure:
    """What ``fig.add_vline`` (``add_hline``, ``add_vrect``) adds to a figure without subplots:
    the same shape and annotation, the same JSON. Plotly's own rewrites and re-validates every
    earlier shape on each call (about 5 ms a line, more the more shapes a figure has). A
    figure with subplots (a line on each) is left to plotly."""
    if fig._has_subplots():
        return getattr(fig, f"add_{shape_type}")(**_plotlys_arguments(shape_type, shape),
                                                 **kwargs)
    vertical = shape_type in ("vline", "vrect")
    shape_kwargs, annotation_kwargs = shapeannotation.split_dict_by_key_prefix(
        kwargs, "annotation_")
    annotation = shapeannotation.axis_spanning_shape_annotation(
        None, shape_type, shape, annotation_kwargs)
    x_ref, y_ref = shape_kwargs.pop("xref", "x"), shape_kwargs.pop("yref", "y")
    spans = {"xref": x_ref, "yref": y_ref + " domain"} if vertical else {
        "xref": x_ref + " domain", "yref": y_ref}
    fig.add_shape(**shape, **shape_kwargs, **spans)
    if annotation is not None:
        fig.add_annotation(annotation, **spans)
    return fig


def _plotlys_arguments(shape_type: str, shape: dict) -> dict:
    if shape_type == "vline":
        return {"x": shape["x0"]}
    if shape_type == "hline":
        return {"y": shape["y0"]}
    return {"x0": shape["x0"], "x1": shape["x1"]}


def vline(fig: go.Figure, x: float, **kwargs) -> go.Figure:
    """``fig.add_vline(x, **kwargs)``, faster (see ``_spanning``)."""
    return _spanning(fig, "vline", {"type": "line", "x0": x, "x1": x, "y0": 0, "y1": 1}, kwargs)


def hline(fig: go.Figure, y: float, **kwargs) -> go.Figure:
    """``fig.add_hline(y, **kwargs)``, faster (see ``_spanning``)."""
    return _spanning(fig, "hline", {"type": "line", "x0": 0, "x1": 1, "y0": y, "y1": y}, kwargs)


def vrect(fig: go.Figure, x0: float, x1: float, **kwargs) -> go.Figure:
    """``fig.add_vrect(x0, x1, **kwargs)``, faster (see ``_spanning``)."""
    return _spanning(fig, "vrect", {"type": "rect", "x0": x0, "x1": x1, "y0": 0, "y1": 1},
                     kwargs)
