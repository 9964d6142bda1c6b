"""Every chart a page draws goes through ``dashboard.presenting.chart`` (issue 35): that is what
gives it its PNG and SVG downloads and its presentation-mode size, so a chart drawn with
``st.plotly_chart`` directly would be missed. An AST rule over app_pages/, dashboard/ and
app.py, with a planted call that it must find."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

HELPER = "dashboard/presenting.py"
#: Streamlit's chart commands: each would be a chart without the downloads (st.map left out:
#: the name is also pandas' ``Series.map``; the app draws no map).
CHART_COMMANDS = {"plotly_chart", "line_chart", "bar_chart", "area_chart", "scatter_chart",
                  "altair_chart", "vega_lite_chart", "pyplot", "bokeh_chart"}


def direct_chart_calls(source: str) -> list[str]:
    """The chart commands ``source`` calls as ``<anything>.<command>(...)``."""
    return [node.func.attr for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in CHART_COMMANDS]


def test_the_rule_finds_a_direct_call():
    planted = "import streamlit as st\nplace = st.empty()\nplace.plotly_chart(fig, key='k')\n"
    assert direct_chart_calls(planted) == ["plotly_chart"]
    assert direct_chart_calls("presenting.chart(fig, key='k')\n") == []


def test_every_chart_goes_through_the_helper():
    files = [ROOT / "app.py", *(ROOT / "app_pages").glob("*.py"),
             *(ROOT / "dashboard").rglob("*.py")]
    assert len(files) > 20
    found = {str(f.relative_to(ROOT)): calls for f in files
             if str(f.relative_to(ROOT)) != HELPER
             and (calls := direct_chart_calls(f.read_text(encoding="utf-8")))}
    assert found == {}
