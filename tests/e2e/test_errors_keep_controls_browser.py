"""An input error never resets a control, in a real browser (issue 9, item 7).

A widget that a run does not draw loses its state in the browser (AppTest keeps it), so these
scenarios run in Chromium: set every control, make an input error, fix it, and check after
each step that every control still shows the user's value and that the results were computed
with what the controls show.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    assert_no_exception,
    choose_dataset,
    open_path,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e

CHART = "[data-testid='stPlotlyChart'] .main-svg"


# -- reading and setting controls by their key ---------------------------------------------------

def shown(page, key: str) -> str | bool | None:
    """What the control with this key shows: a selectbox's option, a slider's value, a text or
    number box's text, a toggle's state; None when the control is not on the page."""
    box = page.locator(f".st-key-{key}")
    if box.count() == 0:
        return None
    for selector, read in (("[role='combobox']", "value"),
                           ("[data-testid='stSliderThumbValue']", "text"),
                           ("input[type='checkbox']", "checked"),
                           ("input", "value")):
        found = box.locator(selector)
        if found.count():
            if read == "text":
                return found.first.inner_text()
            if read == "checked":
                return found.first.is_checked()
            return found.first.input_value()
    return None


def assert_controls(page, expected: dict[str, str | bool], when: str) -> None:
    actual = {key: shown(page, key) for key in expected}
    wrong = {k: (v, expected[k]) for k, v in actual.items() if v != expected[k]}
    assert not wrong, f"{when}: controls changed (shown, expected): {wrong}"


def pick(page, key: str, option: str) -> None:
    combo = page.locator(f".st-key-{key} [role='combobox']")
    combo.click()
    page.get_by_role("option", name=option, exact=True).click()
    wait_for_app(page)


def type_into(page, key: str, text: str) -> None:
    box = page.locator(f".st-key-{key} input")
    box.fill(text)
    box.press("Enter")
    wait_for_app(page)


def markdown(page) -> str:
    return "\n".join(page.locator("[data-testid='stMarkdown']").all_inner_texts())


def captions(page) -> str:
    return "\n".join(page.locator("[data-testid='stCaptionContainer']").all_inner_texts())


def chart_titles(page) -> list[str]:
    return page.locator("[data-testid='stPlotlyChart'] .gtitle").all_text_contents()


def errors(page) -> list[str]:
    return page.locator("[data-testid='stAlertContentError']").all_inner_texts()


# -- Noisy statistics ----------------------------------------------------------------------------

STATISTICS = {
    "stats_query": "Mean of a column", "stats_column": "age",
    "stats_lower": "18.00", "stats_upper": "90.00",
    "stats_measure": "Approximate DP (ε, δ)", "stats_mechanism": "Gaussian",
    "stats_epsilon": "0.47", "stats_delta": "1e-07", "stats_compare": "Laplace",
    "stats_share": "0.3", "stats_confidence": "80%", "stats_trials": "100,000",
}


def assert_statistics_results(page) -> None:
    """The results were computed with the controls above (every setting appears in them)."""
    text = markdown(page)
    assert "Gaussian, ε = 0.47, δ = 1e-07" in text, text[:600]
    assert "Laplace, ε = 0.47, δ = 1e-07" in text, text[:600]
    assert "80% of the simulated releases were within" in text, text[:600]
    notes = captions(page)
    assert "clamped to [18, 90]" in notes and "30% to the sum" in notes, notes[:600]
    assert "Error of the noisy mean of age over 100,000 releases" in chart_titles(page)


def test_statistics_error_keeps_every_control(page, server_url):
    open_path(page, server_url, "statistics?stats_query=mean&stats_column=age"
              "&stats_measure=approx&stats_mechanism=gaussian&stats_epsilon=0.47"
              "&stats_share=0.3&stats_trials=100000")
    # The rest as a user would set it: in the page's own controls.
    type_into(page, "stats_lower", "18")
    pick(page, "stats_delta", "1e-07")
    pick(page, "stats_compare", "Laplace")
    pick(page, "stats_confidence", "80%")
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
    assert_controls(page, STATISTICS, "before the error")
    assert_statistics_results(page)

    type_into(page, "stats_lower", "200")   # above the upper bound
    assert_no_exception(page)
    assert any("lower" in e and "upper" in e for e in errors(page)), errors(page)
    assert_controls(page, {**STATISTICS, "stats_lower": "200.00"}, "during the error")
    assert page.locator(CHART).count() == 0   # no results computed from bad bounds
    screenshot(page, "statistics_input_error")

    type_into(page, "stats_lower", "18")    # fixed
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
    assert not errors(page)
    assert_controls(page, STATISTICS, "after the fix")
    assert_statistics_results(page)
    screenshot(page, "statistics_after_error_fixed")


# -- Selection -------------------------------------------------------------------------------------

SELECTION = {
    "sel_source": "Scores typed in (or a small CSV)", "sel_scores_text": "0, 2, 5, 6, 9",
    "sel_sensitivity": "2.00", "sel_noise": "Exponential mechanism (Gumbel noise)",
    "sel_measure": "zCDP (ρ)", "sel_zcdp_level": "0.1", "sel_monotonic_typed": True,
    "sel_negate": True, "sel_k": "2", "sel_trials": "100,000",
}


def assert_selection_results(page) -> None:
    text = markdown(page)
    assert "Exponential mechanism (Gumbel noise), monotonic scores, zCDP" in text, text[:800]
    assert "Δ = 2, k = 2" in text, text[:800]
    assert "At ρ = 0.1 split over k = 2 picks, #1 (the lowest score) is the first pick" \
        in text, text[:800]
    assert "How often each candidate is the first pick" in chart_titles(page)


def test_selection_typo_keeps_every_control(page, server_url):
    open_path(page, server_url, "selection?sel_source=typed&sel_noise=gumbel"
              "&sel_measure=zcdp&sel_zcdp_level=0.1&sel_trials=100000")
    type_into(page, "sel_scores_text", "0, 2, 5, 6, 9")
    type_into(page, "sel_sensitivity", "2")
    for key in ("sel_monotonic_typed", "sel_negate"):
        page.locator(f".st-key-{key} label").click()
        wait_for_app(page)
    pick(page, "sel_k", "2")
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
    assert_controls(page, SELECTION, "before the error")
    assert_selection_results(page)

    type_into(page, "sel_scores_text", "0, 2, 5x, 6, 9")   # a typo
    assert_no_exception(page)
    assert any("5x" in e for e in errors(page)), errors(page)
    assert_controls(page, {**SELECTION, "sel_scores_text": "0, 2, 5x, 6, 9"}, "during the error")
    assert page.locator(CHART).count() == 0

    type_into(page, "sel_scores_text", "0, 2, 5, 6, 9")    # fixed
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
    assert not errors(page)
    assert_controls(page, SELECTION, "after the fix")
    assert_selection_results(page)


# -- Any page: a run that stops before its controls (the shared mechanism in dashboard.state) -----

TABLES = {"tables_measure": "Approximate DP (ε, δ)", "tables_mechanism": "Gaussian",
          "tables_epsilon": "0.47", "tables_delta": "1e-08", "tables_trials": "10,000"}


def test_controls_survive_a_run_that_does_not_draw_them(page, server_url):
    """Noisy tables on Iris (too few categorical columns) stops before its controls; back on
    Adult, they show the values set before, and the table is released with them."""
    open_path(page, server_url, "tables?tables_measure=approx&tables_mechanism=gaussian"
              "&tables_epsilon=0.47")
    pick(page, "tables_delta", "1e-08")
    page.wait_for_selector(CHART, timeout=60_000)
    assert_controls(page, TABLES, "before")

    choose_dataset(page, "Iris")
    assert_no_exception(page)
    assert shown(page, "tables_epsilon") is None     # the page stopped before its controls
    choose_dataset(page, "Adult (UCI census income)")
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
    assert_controls(page, TABLES, "after a run that did not draw them")
    assert "ε = 0.47, δ = 1e-08" in markdown(page)
