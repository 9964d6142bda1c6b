"""The "Choose epsilon" page in a real browser: renders, draws both charts, no exception,
and survives switching the query to the selection question."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def test_choose_epsilon_renders(page, server_url):
    page.goto(f"{server_url}/choose_epsilon")
    wait_for_app(page)
    assert_no_exception(page)
    assert page.locator("h1", has_text="Choose epsilon").count() == 1
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert page.locator("[data-testid='stPlotlyChart']").count() == 2
    # The curve draws its lines (plotly renders each trace as an SVG path).
    curve = page.locator("[data-testid='stPlotlyChart']").first
    assert curve.locator("path.js-line").count() >= 3
    assert page.get_by_text("keeps the count within").count() >= 1
    screenshot(page, "choose_epsilon")

    page.locator(".st-key-choose_source").get_by_text("The Selection question").click()
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert page.get_by_text("picks the most common").count() >= 1
    screenshot(page, "choose_epsilon_selection")
