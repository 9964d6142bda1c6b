"""How pages present (issue 35): presentation mode — for a projector, larger text and charts,
none of the technical panels, one chart and one sentence per step; a sidebar toggle, and
``?present=True`` in a URL to open a page that way — and :func:`chart`, the one way a page
draws a chart, with its image downloads (PNG and SVG, made in the browser).

The look is CSS sent with the page (no request leaves the server); pages skip their technical
panels (plan, bounds, audit) when :func:`on` says so, and draw each step in :func:`step`.

Plotly's toolbar has one image button (PNG here, ``toImageButtonOptions``), and a chart's
config travels as JSON, so a second button cannot carry its click function: :data:`SVG_BUTTON`
is a small script, sent once per run with the sidebar's toggle, that adds an SVG button to
every chart's toolbar and calls ``Plotly.downloadImage`` (the plotly.js Streamlit already
loads) with the chart's own file name.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from dashboard import state

KEY = "present"

#: What presentation mode changes: text and headings larger, captions (the technical notes)
#: and tables hidden. Selectors are Streamlit's test ids.
STYLE = """
<style>
[data-testid="stMain"] [data-testid="stMarkdownContainer"] p,
[data-testid="stMain"] [data-testid="stMarkdownContainer"] li { font-size: 1.45rem; }
[data-testid="stMain"] h1 { font-size: 3.2rem; }
[data-testid="stMain"] [data-testid="stWidgetLabel"] [data-testid="stMarkdownContainer"] p {
  font-size: 1.1rem; }
[data-testid="stMain"] [data-testid="stCaptionContainer"] { display: none; }
[data-testid="stMain"] [data-testid="stExpander"] { display: none; }
[data-testid="stMain"] [data-testid="stDataFrame"] { display: none; }
</style>
"""

#: The title of the SVG button in each chart's toolbar (Plotly's own reads "Download plot as
#: a PNG"); the script below spells it out (a constant, tests/test_config.py).
SVG_TITLE = "Download plot as an SVG"

#: Chart text for a projector (the template's is 14 px, titles 17 px).
PRESENTING_FONT = 20
PRESENTING_TITLE_FONT = 26
PRESENTING_MIN_HEIGHT = 660

#: The script that adds the SVG button. Guarded, so the next run's copy installs nothing; a
#: MutationObserver puts the button back whenever Plotly redraws a toolbar. The element it
#: comes in hides its own container (no gap in the sidebar). No "<" before a letter in the
#: script: Streamlit's sanitizer (DOMPurify) drops an element whose text has one.
SVG_BUTTON = """<span id="epsilon-lab-svg-downloads"></span>
<style>
[data-testid="stElementContainer"]:has(#epsilon-lab-svg-downloads) { display: none; }
</style>
<script>
(() => {
  if (window.epsilonLabSvgDownloads) return;
  window.epsilonLabSvgDownloads = true;
  const TITLE = "Download plot as an SVG";
  const SVG = "http://www.w3.org/2000/svg";
  const icon = () => {
    const drawing = document.createElementNS(SVG, "svg");
    drawing.setAttribute("viewBox", "0 0 24 24");
    drawing.setAttribute("class", "icon");
    drawing.setAttribute("height", "1em");
    drawing.setAttribute("width", "1em");
    const arrow = document.createElementNS(SVG, "path");
    arrow.setAttribute("d", "M5 20h14v-2H5v2zM19 9h-4V3H9v6H5l7 7 7-7z");
    drawing.appendChild(arrow);
    return drawing;
  };
  const addButton = (chart) => {
    const bar = chart.querySelector(".modebar");
    if (!bar || bar.querySelector(`[data-title="${TITLE}"]`)) return;
    const group = document.createElement("div");
    group.className = "modebar-group";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "modebar-btn";
    button.setAttribute("rel", "tooltip");
    button.setAttribute("data-title", TITLE);
    button.setAttribute("aria-label", TITLE);
    button.setAttribute("data-gravity", "n");
    button.appendChild(icon());
    button.addEventListener("click", () => {
      const options = (chart._context && chart._context.toImageButtonOptions) || {};
      window.Plotly.downloadImage(chart, {format: "svg", filename: options.filename || "chart"});
    });
    group.appendChild(button);
    bar.insertBefore(group, bar.firstChild);
  };
  let queued = false;
  const scan = () => {
    queued = false;
    document.querySelectorAll(".js-plotly-plot").forEach(addButton);
  };
  new MutationObserver(() => {
    if (!queued) { queued = true; requestAnimationFrame(scan); }
  }).observe(document.body, {childList: true, subtree: true});
  scan();
})();
</script>"""


def _parse(raw: str) -> bool:
    return raw.strip().lower() in ("true", "1", "yes", "on")


def toggle() -> bool:
    """The sidebar's toggle (remembered, mirrored in the URL); sends the style when on, and
    the charts' SVG button always."""
    state.remembered(KEY, False, parse=_parse)
    presenting = st.toggle("Presentation mode", key=KEY,
                           help="For a projector: larger text and charts, one chart and one "
                                "sentence per step; the technical notes and panels are "
                                "hidden. A link with ?present=True opens a page this way.")
    state.remember(KEY)
    if presenting:
        st.html(STYLE)
    st.html(SVG_BUTTON, unsafe_allow_javascript=True)
    return bool(presenting)


def on() -> bool:
    """Whether this session presents (pages leave out their technical panels)."""
    return bool(st.session_state.get(KEY, False))


def image_config(key: str) -> dict[str, Any]:
    """A chart's plotly config: the toolbar's image button downloads a PNG named after the
    chart, at twice the screen's resolution (sharp on a slide); the SVG button takes the name."""
    return {"toImageButtonOptions": {"format": "png", "filename": key, "scale": 2},
            "displaylogo": False}


def _for_a_projector(fig: go.Figure) -> go.Figure:
    # Each axis, legend and note by name: Streamlit's chart theme sets their sizes in its
    # template, which the figure-wide font alone would not override.
    small = PRESENTING_FONT - 2
    # A legend above the plot (the template's) grows upwards with its text: the title is
    # pinned to the top and the plot moves down, so the two never overlap.
    legend_y = fig.layout.legend.y
    top = 150 if legend_y is None or legend_y >= 1 else 80
    fig.update_layout(font={"size": PRESENTING_FONT},
                      title={"font": {"size": PRESENTING_TITLE_FONT}, "yref": "container",
                             "y": 0.99, "yanchor": "top"},
                      legend={"font": {"size": small}}, margin={"t": top},
                      height=max(fig.layout.height or 0, PRESENTING_MIN_HEIGHT))
    # axis titles can be long ("Hits: share of rounds with the person guessed in (TPR)"):
    # the ticks' size, so they still fit the plot
    fig.update_xaxes(tickfont={"size": small}, title_font={"size": small}, automargin=True)
    fig.update_yaxes(tickfont={"size": small}, title_font={"size": small}, automargin=True)
    fig.update_annotations(font_size=small)
    return fig


def chart(fig: go.Figure, *, key: str, extra: bool = False, place: Any = None, **kwargs: Any):
    """Draw ``fig`` under the widget ``key`` (which also names its image files) in ``place``
    (the current container by default), with the PNG and SVG downloads. Every page's chart
    goes through here (``tests/test_charts_drawn.py``).

    In presentation mode the chart's text is larger, and an ``extra`` chart (one beyond its
    step's own) is not drawn: None is returned. Other keywords go to ``st.plotly_chart``.
    """
    presenting = on()
    if presenting and extra:
        return None
    if presenting:   # on a copy: a page may draw a figure it keeps (st.cache_resource)
        fig = _for_a_projector(go.Figure(fig))
    return (place or st).plotly_chart(fig, key=key, config=image_config(key), **kwargs)


@contextmanager
def step(key: str, look_at: str) -> Iterator[None]:
    """One step of a teaching page, in a container keyed ``step_<key>``: in presentation mode
    it opens with ``look_at``, the one sentence that says what to look at, and holds one chart
    (the page draws its other charts ``extra`` and its tables and figures only when not
    :func:`on`)."""
    with st.container(key=f"step_{key}"):
        if on():
            st.markdown(look_at)
        yield
