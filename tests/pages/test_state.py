"""dashboard.state: remembered widget values survive runs that do not draw the widget.

A browser forgets the value of a widget that a run did not draw (a page stopped by an input
error, a control shown only for some settings), while the server may keep it: the control then
shows its first option and the results use another value. ``state.remembered`` prevents this by
telling the browser the value on every run; the browser tests (tests/e2e/
test_errors_keep_controls_browser.py) show the effect, these tests pin the mechanism and that
every page uses it.
"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import ROOT

#: Widgets whose value the session state sets (file uploaders, buttons and data editors are not
#: set that way: their state is the file, the click or the edits).
VALUE_WIDGETS = {"selectbox", "select_slider", "slider", "number_input", "text_input",
                 "text_area", "toggle", "checkbox", "radio", "multiselect", "pills",
                 "segmented_control", "date_input", "time_input", "color_picker"}
SOURCES = [ROOT / "app.py", ROOT / "dashboard" / "controls.py",
           *sorted((ROOT / "app_pages").glob("*.py"))]


def script() -> None:
    import streamlit as st

    from dashboard import state

    state.remembered("k", 2, options=(1, 2, 3))
    st.selectbox("k", (1, 2, 3), key="k")
    state.remembered("level", 0.5, parse=float, options=(0.1, 0.5, 1.0))
    st.select_slider("level", (0.1, 0.5, 1.0), key="level")
    state.remembered("on", True, options=(True, False))
    st.toggle("on", key="on")


def test_every_run_sends_each_remembered_value_to_the_browser(monkeypatch):
    """``set_value`` makes the browser show the server's value even where it forgot the widget;
    before the fix it was sent only on the run that first set the value."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.syspath_prepend(str(ROOT))
    at = AppTest.from_function(script)
    at.run()
    for _ in range(2):   # an unchanged rerun, then one after the user picked another value
        at.run()
        assert not at.exception
        widgets = (at.selectbox(key="k"), at.select_slider(key="level"), at.toggle(key="on"))
        assert [w.proto.set_value for w in widgets] == [True] * 3
        assert [w.value for w in widgets] == [at.session_state[k] for k in ("k", "level", "on")]
        at.selectbox(key="k").select(3)
    assert at.selectbox(key="k").value == 3


def keyed_widgets(tree: ast.AST) -> list[tuple[int, str, str]]:
    """(line, widget, key source) of every value widget created with ``key=``."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in VALUE_WIDGETS
                and ast.unparse(node.func.value) != "controls"):   # the helpers remember
            for keyword in node.keywords:
                if keyword.arg == "key":
                    found.append((node.lineno, node.func.attr, ast.unparse(keyword.value)))
    return found


def remembered_keys(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, key source) of every ``state.remembered(key, …)`` call, and of every value set
    straight into session state before a widget (``ss[key] = …``: also sent on every run)."""
    calls = [(node.lineno, ast.unparse(node.args[0])) for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and node.func.attr == "remembered" and node.args]
    writes = [(node.lineno, ast.unparse(target.slice)) for node in ast.walk(tree)
              if isinstance(node, ast.Assign) for target in node.targets
              if isinstance(target, ast.Subscript) and ast.unparse(target.value) in (
                  "ss", "st.session_state")]
    return calls + writes


def unremembered(tree: ast.AST) -> list[tuple[int, str, str]]:
    """The keyed widgets with no ``state.remembered`` of their key before them."""
    remembered = remembered_keys(tree)
    return [(line, widget, key) for line, widget, key in keyed_widgets(tree)
            if not any(k == key and at <= line for at, k in remembered)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_every_keyed_widget_is_remembered_before_it_is_drawn(path):
    """A page's widget made without ``state.remembered`` would show its first option after a
    run that did not draw it: use the helpers of dashboard.controls, or call
    ``state.remembered(key, …)`` just before the widget."""
    missing = unremembered(ast.parse(path.read_text(encoding="utf-8")))
    assert not missing, f"{path.name}: widgets not set by state.remembered: {missing}"


def test_the_guard_finds_a_widget_that_skips_remembered():
    planted = ast.parse("state.remembered('a', 1)\nst.selectbox('A', [1], key='a')\n"
                        "st.number_input('B', key='b')\ncontrols.toggle('C', key='c')\n")
    assert [k for _, _, k in keyed_widgets(planted)] == ["'a'", "'b'"]
    assert remembered_keys(planted) == [(1, "'a'")]
    assert unremembered(planted) == [(3, "number_input", "'b'")]


def test_the_url_holds_the_current_page_settings_only(app):
    """Issue 21 item 5: after Noisy statistics → Groups the URL names Groups' settings and the
    sidebar's, none of the page left (whose run put them there)."""
    at = app("statistics.py")
    assert at.query_params["stats_query"]
    at.switch_page("app_pages/groups.py").run()
    assert not at.exception, [e.value for e in at.exception]
    keys = set(at.query_params)
    assert {"groups_epsilon", "dataset_choice", "seed_input"} <= keys, keys
    assert not [k for k in keys if k.startswith("stats_")], keys
    at.switch_page("app_pages/statistics.py").run()
    keys = set(at.query_params)
    assert "stats_query" in keys and not [k for k in keys if k.startswith("groups_")], keys
