"""The "Budget" and "Private learning" pages in Chromium: they run, draw their charts, react to
a slider, a cell edit in the plan and a dataset switch, and never show an exception.
"""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

CHART = "[data-testid='stPlotlyChart'] .main-svg"
MOST = re.compile(r"basic composition allows at most ([\d,]+) releases")


def open_page(page, server_url: str, path: str) -> None:
    # Load the root first: a first request straight to /<page> on a fresh server runs the page
    # file alone until app.py has called st.navigation once.
    page.goto(server_url)
    wait_for_app(page)
    page.goto(f"{server_url}/{path}")
    wait_for_app(page)
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)


def metric_value(page, label: str) -> str:
    metric = page.locator("[data-testid='stMetric']").filter(has_text=label).first
    return metric.locator("[data-testid='stMetricValue']").inner_text()


def test_budget_page_slider_and_plan_edit(page, server_url):
    open_page(page, server_url, "budget")
    assert page.locator(".st-key-budget_editor_0 [data-testid='stDataFrame']").count() == 1
    assert int(MOST.search(page.locator("body").inner_text())[1]) == 50
    screenshot(page, "budget")

    thumb = page.locator(".st-key-budget_epsilon_release input[type='range']")
    thumb.focus()
    thumb.press("ArrowRight")   # 0.1 → 0.12 on the log grid
    wait_for_app(page)
    page.wait_for_selector(CHART, timeout=30_000)
    assert_no_exception(page)
    assert int(MOST.search(page.locator("body").inner_text())[1]) == 41  # ⌊5 / 0.12⌋

    before = metric_value(page, "Basic composition")
    # Select the first row's Query cell, move to its ε cell and type a bad value.
    grid = page.locator(".st-key-budget_editor_0 [data-testid='stDataFrameResizable']")
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 60, box["y"] + 35 + 17)
    page.wait_for_timeout(300)  # the grid takes the focus
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.keyboard.type("0")
    page.wait_for_timeout(300)  # the cell editor opens
    page.keyboard.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    page.get_by_text("These rows are left out of the totals").wait_for(timeout=30_000)
    assert "ε must be a positive number" in page.locator("[data-testid='stAlert']").first \
        .inner_text()
    assert metric_value(page, "Basic composition") != before
    screenshot(page, "budget_bad_row")


def test_learning_page_draws_and_switches_dataset(page, server_url):
    open_page(page, server_url, "learning")
    assert page.locator("[data-testid='stDataFrame']").count() == 1  # the bounds table
    screenshot(page, "learning_iris")
    page.locator(".st-key-learning_dataset [role='combobox']").click()
    page.get_by_role("option", name="Adult").click()
    wait_for_app(page, timeout=120_000)
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
    assert page.get_by_text("48,842 rows").count() >= 1
    assert "learning_dataset=Adult" in page.url
    screenshot(page, "learning_adult")
