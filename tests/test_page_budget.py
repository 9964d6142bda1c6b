"""AppTest interaction tests of the Budget page: totals, editing the plan, bad rows, the
releases-that-fit chart and its sentence, the plan in the URL.
"""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pytest

from dashboard.analysis import budget
from tests.test_analysis_budget import gaussian_profile_epsilon

EDITOR = "budget_editor_0"
# The default plan's basic total: three rows of ε 0.5, 0.5, 1 and a ρ = 0.125 Gaussian read
# at δ = 1e-6 through its exact privacy curve (solved in the test module).
DEFAULT_BASIC = 2.0 + gaussian_profile_epsilon(0.125, 1e-6)


@pytest.fixture
def at(app):
    at = app("budget.py")
    assert not at.exception, [e.value for e in at.exception]
    return at


def metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def epsilon_of(text: str) -> float:
    assert text.startswith("ε = "), text
    return float(text.removeprefix("ε = "))


def edit(at, *, edited=None, added=None, deleted=None, key=EDITOR):
    at.session_state[key] = {"edited_rows": edited or {}, "added_rows": added or [],
                             "deleted_rows": deleted or []}
    at.run()
    assert not at.exception, [e.value for e in at.exception]


def values(data) -> np.ndarray:
    """A trace's x or y: a list, or plotly's typed-array encoding {"dtype", "bdata"}."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
    return np.asarray(data, dtype=float)


def chart(at) -> dict:
    return json.loads(at.get("plotly_chart")[0].proto.spec)


def errors(at) -> str:
    return " ".join(e.value for e in at.error)


def test_defaults_show_the_totals_and_the_chart(at):
    assert at.title[0].value == "Privacy budget"
    assert at.data_editor(key=EDITOR).editing_mode == "dynamic"
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(DEFAULT_BASIC,
                                                                        rel=1e-3)
    assert not at.error
    fig = chart(at)
    names = [t.get("name") for t in fig["data"]]
    for rule in ("Basic composition", "Advanced composition", "zCDP composition", "Budget"):
        assert rule in names
    basic = next(t for t in fig["data"] if t.get("name") == "Basic composition")
    assert values(basic["y"]) == pytest.approx(0.1 * values(basic["x"]))
    line = next(t for t in fig["data"] if t.get("name") == "Budget")
    assert list(values(line["y"])) == [5.0, 5.0]
    assert "number of releases" in fig["layout"]["xaxis"]["title"]["text"]
    sentence = " ".join(m.value for m in at.markdown)
    assert "basic composition allows at most 50 releases" in sentence


def test_moving_the_release_slider_updates_the_sentence_and_chart(at):
    at.select_slider(key="budget_epsilon_release").set_value(0.22).run()
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert f"at most {math.floor(5 / 0.22)} releases" in text
    basic = next(t for t in chart(at)["data"] if t.get("name") == "Basic composition")
    assert values(basic["y"]) == pytest.approx(0.22 * values(basic["x"]))


def test_editing_a_row_changes_the_total(at):
    edit(at, edited={0: {budget.EPSILON: 1.5}})
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(DEFAULT_BASIC + 1.0,
                                                                        rel=1e-3)
    assert not at.error


@pytest.mark.parametrize("row, change, message", [
    (0, {budget.EPSILON: -1.0}, "ε must be a positive number"),
    (2, {budget.MEASURE: "pure"}, "never pure DP"),
    (2, {budget.DELTA: 1.0}, "δ must be at least 0 and below 1"),
    (0, {budget.SENSITIVITY: None}, "Sensitivity is empty"),
])
def test_bad_rows_get_a_message_and_are_skipped(at, row, change, message):
    edit(at, edited={row: change})
    assert message in errors(at) and f"Row {row + 1}" in errors(at)
    assert "left out of the totals" in errors(at)
    row_eps = {0: 0.5, 2: 1.0}[row]
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(
        DEFAULT_BASIC - row_eps, rel=1e-3)
    status = at.dataframe[1].value.loc[row, "Status"]
    assert status == "Not counted, see below"   # the reason is in the error box above


def test_the_release_table_fits_a_laptop_screen(at):
    """Issue 9 item 10: the Query and Status columns were cut off at 1400 px: a status held
    the row's whole note. Statuses are now a few words and the notes are listed below."""
    table = at.dataframe[1].value
    assert table["Status"].str.len().max() <= 25, table["Status"].tolist()
    notes = [c.value for c in at.caption if c.value.startswith("Row ")]
    assert any(note.startswith("Row 3") and "ρ" in note for note in notes), notes
    assert table["Query"].str.len().max() <= 45  # the example plan's queries read in full


def test_adding_and_deleting_rows(at):
    edit(at, added=[{budget.QUERY: "extra count", budget.MECHANISM: "laplace",
                     budget.MEASURE: "pure", budget.EPSILON: 0.25, budget.SENSITIVITY: 1.0}])
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(DEFAULT_BASIC + 0.25,
                                                                        rel=1e-3)
    assert "Total for 5 release(s)" in " ".join(m.value for m in at.markdown)
    edit(at, deleted=[0, 1, 2, 3])
    assert any("No release can be counted" in i.value for i in at.info)
    assert not at.metric


def test_reset_restores_the_example_plan(at):
    edit(at, edited={0: {budget.EPSILON: -1.0}})
    assert at.error
    at.button(key="budget_reset").click().run()
    assert not at.exception and not at.error
    assert at.data_editor[0].key == "budget_editor_1"
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(DEFAULT_BASIC, rel=1e-3)


def test_plan_survives_a_page_change_and_is_mirrored_in_the_url(at):
    edit(at, edited={1: {budget.EPSILON: 2.0}})
    shared = budget.plan_from_param(at.query_params["budget_plan"][0]
                                    if isinstance(at.query_params["budget_plan"], list)
                                    else at.query_params["budget_plan"])
    assert shared is not None and shared.loc[1, budget.EPSILON] == 2.0
    at.switch_page("app_pages/home.py").run()
    at.switch_page("app_pages/budget.py").run()
    assert not at.exception
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(DEFAULT_BASIC + 1.5,
                                                                        rel=1e-3)


def test_a_shared_url_opens_its_plan(app):
    at = app()
    at.query_params["budget_plan"] = budget.plan_to_param(budget._plan_frame([
        ("one", "laplace", "pure", 0.7, None, None, 1.0),
        ("two", "gaussian", "approx", 0.3, 1e-7, None, 2.0)]))
    at.switch_page("app_pages/budget.py").run()
    assert not at.exception
    assert epsilon_of(metric(at, "Basic composition")) == pytest.approx(1.0)
    assert list(at.data_editor[0].value[budget.QUERY]) == ["one", "two"]


def test_switching_a_row_to_pure_dp_clears_its_delta(at):
    """Row 3 is a Gaussian (ε = 1, δ = 1e-6); made a pure-DP Laplace row, its δ would stay on
    screen and be ignored: it is emptied in a fresh editor, with a message saying so."""
    edit(at, edited={2: {budget.MECHANISM: "laplace", budget.MEASURE: "pure"}})
    assert at.data_editor[0].key == "budget_editor_1"
    shown = at.data_editor[0].value
    assert math.isnan(shown.loc[2, budget.DELTA]) and math.isnan(shown.loc[2, budget.RHO])
    assert shown.loc[2, budget.MEASURE] == "pure" and shown.loc[2, budget.EPSILON] == 1.0
    notices = " ".join(i.value for i in at.info)
    assert "Row 3" in notices and "no use for δ" in notices and "cleared" in notices
    assert not at.error
    shared = budget.plan_from_param(at.query_params["budget_plan"][0]
                                    if isinstance(at.query_params["budget_plan"], list)
                                    else at.query_params["budget_plan"])
    assert math.isnan(shared.loc[2, budget.DELTA])
    # The next run keeps the cleaned plan and says nothing more.
    at.run()
    assert at.data_editor[0].key == "budget_editor_1" and not at.info


def test_privacy_figures_and_error_bounds_round_up(at):
    """Every shown loss is at least the exact one (computed here): the default plan's basic
    total 4.25408… once read "4.254"; row 1's ±α = 2·ln 20 = 5.99146… read "± 5.991"."""
    assert epsilon_of(metric(at, "Basic composition")) >= DEFAULT_BASIC
    table = at.dataframe[1].value
    alpha = float(table.loc[0, "Error at 95%"].removeprefix("± "))
    assert alpha >= 2 * math.log(20)          # Laplace, b = Δ/ε = 2: P(|X| > α) = e^(−α/b)
    counted = float(re.search(r"ε = ([\d.]+)", table.loc[3, "Basic / advanced count it as"])[1])
    assert counted >= gaussian_profile_epsilon(0.125, 1e-6)
