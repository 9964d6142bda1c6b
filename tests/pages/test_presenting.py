"""Presentation mode and chart downloads on the teaching pages, through AppTest (issue 35).

In presentation mode each step of a teaching page (Welcome, Noisy statistics, Choose epsilon,
Selection, Play the attacker) is a container holding one chart and one sentence of what to
look at, and no chart is drawn outside a step; the extra charts, tables and figures are back
in the normal mode. Every chart carries its PNG download (plotly's button, named after the
chart) and the page the script that adds the SVG one.
"""

from __future__ import annotations

import json
import re

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import presenting, teaching
from dashboard.charts.base import finish
from tests.conftest import ROOT, fresh_plans

#: page (URL path) → the keys of its steps' charts, in order
STEPS = {
    "": ["welcome_belief"],
    "statistics": ["stats_bars", "stats_errors"],
    "selection": ["sel_chart", "sel_curve"],
    "choose_epsilon": ["choose_curve", "choose_tradeoff"],
    "attacker": ["attack_chart"],
}
#: the charts the normal mode draws: the steps' and more (the class's histogram: errors per
#: category), or fewer (Welcome says it in words: the first page loads no plotly.js)
NORMAL = {**STEPS, "": [], "statistics": ["stats_bars", "stats_errors", "stats_categories"]}


def opened(page: str, monkeypatch, *, present: bool) -> AppTest:
    monkeypatch.delenv(teaching.DEFAULT_ENV, raising=False)
    fresh_plans()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if present:
        at.query_params["present"] = "True"
    if page:
        at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def nodes(node):
    """Every element and block under ``node``, depth first in page order."""
    for child in getattr(node, "children", {}).values():
        yield child
        yield from nodes(child)


def charts_in(node) -> list:
    return [n for n in nodes(node) if n.type == "plotly_chart"]


def steps_of(at: AppTest) -> list:
    return [n for n in nodes(at.main) if (n.key or "").startswith("step_")]


@pytest.mark.parametrize("page", list(STEPS))
def test_presentation_mode_draws_one_chart_and_one_sentence_per_step(page, monkeypatch):
    at = opened(page, monkeypatch, present=True)
    steps = steps_of(at)
    assert [[c.key for c in charts_in(step)] for step in steps] == [[k] for k in STEPS[page]]
    for step in steps:
        inside = list(nodes(step))
        said = [n for n in inside if n.type == "markdown"]
        assert len(said) == 1 and said[0].value.startswith("**Look at:**"), said
        # one sentence: one full stop or colon-led clause, no second paragraph
        assert "\n\n" not in said[0].value
        assert not [n for n in inside if n.type in ("dataframe", "metric", "table")]
    # no chart outside a step, and none of the tables
    assert len(charts_in(at.main)) == len(STEPS[page])
    assert not [n for n in nodes(at.main) if n.type in ("dataframe", "arrow_data_frame")]
    # the charts' text is larger for the projector
    for chart in charts_in(at.main):
        layout = json.loads(chart.proto.spec)["layout"]
        assert layout["font"]["size"] == presenting.PRESENTING_FONT
        # each axis by name: Streamlit's theme sets tick sizes the figure's font does not reach
        assert layout["xaxis"]["tickfont"]["size"] > 14
        assert layout["yaxis"]["title"]["font"]["size"] > 14
        assert layout["height"] >= presenting.PRESENTING_MIN_HEIGHT


@pytest.mark.parametrize("page", list(STEPS))
def test_the_normal_mode_keeps_every_chart_and_no_step_sentence(page, monkeypatch):
    at = opened(page, monkeypatch, present=False)
    keys = [c.key for c in charts_in(at.main)]
    assert sorted(keys) == sorted(NORMAL[page])
    for step in steps_of(at):
        assert not [n for n in nodes(step) if n.type == "markdown"
                    and n.value.startswith("**Look at:**")]
    if page == "statistics":   # the tables and the per-run figures are back
        assert [n for n in nodes(at.main) if n.type in ("dataframe", "arrow_data_frame")]


@pytest.mark.parametrize("page", list(STEPS))
@pytest.mark.parametrize("present", [False, True])
def test_every_chart_downloads_as_png_and_svg(page, present, monkeypatch):
    at = opened(page, monkeypatch, present=present)
    drawn = charts_in(at.main)
    assert len(drawn) == len(STEPS[page] if present else NORMAL[page])
    for chart in drawn:
        config = json.loads(chart.proto.config)
        assert config["toImageButtonOptions"] == {"format": "png", "filename": chart.key,
                                                  "scale": 2}
        assert config.get("displayModeBar", True) is not False   # the toolbar is there
    # the SVG button's script, sent once with JavaScript allowed (the sidebar's)
    scripts = [h for h in at.get("html") if presenting.SVG_TITLE in h.proto.body]
    assert len(scripts) == 1
    assert scripts[0].proto.unsafe_allow_javascript


def test_the_svg_script_survives_streamlits_sanitizer():
    """DOMPurify drops an element whose text holds "<" before a letter, "/" or "!" (its
    mXSS rule): the script must have none, or the SVG button silently never appears."""
    script = re.search(r"<script>(.*)</script>", presenting.SVG_BUTTON, re.S).group(1)
    assert "Plotly.downloadImage" in script and 'format: "svg"' in script
    assert not re.search(r"<[/\w!]", script)


def test_presenting_enlarges_a_copy_of_a_kept_figure(monkeypatch):
    """A page may draw a figure it keeps for every session (Welcome's, st.cache_resource):
    presentation mode enlarges a copy, so the kept figure keeps its size for the next one."""
    drawn = {}

    class Place:
        def plotly_chart(self, fig, **kwargs):
            drawn.update(fig=fig, **kwargs)
            return self

    kept = finish(go.Figure(go.Scatter(x=[0, 1], y=[0, 1])), title="t", x_title="x",
                  y_title="y", height=420)
    monkeypatch.setattr(presenting, "on", lambda: True)
    presenting.chart(kept, key="kept", place=Place())
    assert drawn["fig"].layout.font.size == presenting.PRESENTING_FONT
    assert drawn["config"] == presenting.image_config("kept")
    assert kept.layout.font.size is None and kept.layout.height == 420
    monkeypatch.setattr(presenting, "on", lambda: False)
    assert presenting.chart(kept, key="extra", place=Place(), extra=True) is not None
    monkeypatch.setattr(presenting, "on", lambda: True)
    assert presenting.chart(kept, key="extra", place=Place(), extra=True) is None
