"""Every ε/ρ control takes an exact typed value as well as its slider (issue 9, item 14).

AppTest runs: the typed value is used by the page, joins the slider, is remembered and
mirrored in the URL; an out-of-range value is refused with a message and the last valid one
is kept. (Keeping it across a page change in a real browser: tests/e2e.)
"""

from __future__ import annotations

import pytest

from dashboard import controls


def no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.mark.parametrize(("page", "key", "value", "off_grid"), [
    ("statistics.py", "stats_epsilon", 0.3, True),
    ("tables.py", "tables_epsilon", 0.123, True),
    ("selection.py", "sel_pure_level", 0.0042, True),
    ("choose_epsilon.py", "choose_epsilon", 0.817, True),
])
def test_typed_value_is_used_remembered_and_in_the_url(app, page, key, value, off_grid):
    at = app(page)
    slider = at.select_slider(key=key)
    assert (f"{value:g}" in slider.options) is not off_grid   # options are labels
    at.number_input(key=f"{key}_exact").set_value(value).run()
    no_exception(at)
    assert at.select_slider(key=key).value == value
    assert at.number_input(key=f"{key}_exact").value == value
    assert at.query_params[key] == [repr(value)] or at.query_params[key] == repr(value)
    assert at.session_state["_saved_widgets"][key] == value
    # the slider still moves, and the box follows it
    at.select_slider(key=key).set_value(1.0).run()
    no_exception(at)
    assert at.number_input(key=f"{key}_exact").value == 1.0


def test_out_of_range_value_is_refused_with_a_message(app):
    at = app("statistics.py")
    at.number_input(key="stats_epsilon_exact").set_value(0.47).run()
    assert at.select_slider(key="stats_epsilon").value == 0.47
    for bad in (20.0, 0.0, -1.0):
        at.number_input(key="stats_epsilon_exact").set_value(bad).run()
        no_exception(at)
        errors = [e.value for e in at.error]
        assert any("ε must be between 0.01 and 10" in e and "stays 0.47" in e for e in errors)
        assert at.select_slider(key="stats_epsilon").value == 0.47
        # the box keeps what was typed beside the message (issue 21 item 4)
        assert at.number_input(key="stats_epsilon_exact").value == bad
    at.number_input(key="stats_epsilon_exact").set_value(0.5).run()
    assert not any("must be between" in e.value for e in at.error)
    assert at.select_slider(key="stats_epsilon").value == 0.5


def test_typing_the_value_kept_after_a_refusal_clears_the_message(app):
    """Issue 21 item 4: after "ε stays 0.47", typing 0.47 takes it and the message goes."""
    at = app("statistics.py")
    at.number_input(key="stats_epsilon_exact").set_value(0.47).run()
    at.number_input(key="stats_epsilon_exact").set_value(20.0).run()
    assert any("stays 0.47" in e.value for e in at.error)
    at.number_input(key="stats_epsilon_exact").set_value(0.47).run()
    no_exception(at)
    assert not any("must be between" in e.value for e in at.error)
    assert at.select_slider(key="stats_epsilon").value == 0.47
    assert at.number_input(key="stats_epsilon_exact").value == 0.47
    # the slider moved after a refusal: the message goes too and the box follows it
    at.number_input(key="stats_epsilon_exact").set_value(-1.0).run()
    at.select_slider(key="stats_epsilon").set_value(1.0).run()
    assert not any("must be between" in e.value for e in at.error)
    assert at.number_input(key="stats_epsilon_exact").value == 1.0


def test_rho_typed_under_zcdp_reaches_the_mechanism(app):
    at = app("statistics.py")
    at.selectbox(key="stats_measure").select("zcdp").run()
    at.number_input(key="stats_rho_exact").set_value(0.0123).run()
    no_exception(at)
    assert at.select_slider(key="stats_rho").value == 0.0123
    assert any("0.0123" in m.value for m in [*at.markdown, *at.caption])


def test_url_value_off_the_grid_is_read_and_out_of_range_ignored(app):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    for raw, expected in (("0.3", 0.3), ("25", 1.0), ("nan", 1.0)):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.query_params["stats_epsilon"] = raw
        at.run()
        at.switch_page("app_pages/statistics.py")
        at.query_params["stats_epsilon"] = raw
        at.run()
        no_exception(at)
        assert at.select_slider(key="stats_epsilon").value == expected


def test_grids_are_unchanged():
    # The slider's stops are the E12 grid (a typed value only joins them).
    assert controls.EPSILON_GRID[0] == 0.01 and controls.EPSILON_GRID[-1] == 10.0
    assert 0.27 in controls.EPSILON_GRID and 0.33 in controls.EPSILON_GRID
    assert 0.3 not in controls.EPSILON_GRID
