"""The release plan in a real browser: queries added from three pages (Add to plan), the plan
page lists them and reads the totals four ways; an ε edited in the table moves the totals; the
split is applied; the plan survives leaving the page and coming back (a browser drops the
widgets of pages it leaves; AppTest does not)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    add_to_plan,
    assert_no_exception,
    choose_count,
    open_page,
    release_plan,
    screenshot,
    select_grid_cell,
    wait_for_app,
)

pytestmark = pytest.mark.e2e


def metric(page, label: str) -> float:
    box = page.locator("[data-testid='stMetric']").filter(has_text=label).first
    text = box.locator("[data-testid='stMetricValue']").inner_text()
    return float(text.split("=")[1].rstrip("↑"))


def test_a_plan_from_three_pages_is_accounted_and_kept(page, server_url):
    page.goto(server_url)
    wait_for_app(page)
    open_page(page, "Noisy statistics")
    choose_count(page)
    add_to_plan(page)
    open_page(page, "Noisy tables")
    add_to_plan(page)
    open_page(page, "Selection")
    # the page starts on permute-and-flip, which OpenDP samples exactly (report noisy max
    # with Laplace noise it does not: the page would offer no Add to plan for it; the AppTest
    # tests check the default, the release below that it is releasable)
    add_to_plan(page)

    open_page(page, "Release plan")
    page.get_by_text("The plan: 3 queries").wait_for(timeout=60_000)
    main = page.locator("[data-testid='stMain']")
    basic, pld = metric(page, "Basic composition"), metric(page, "Privacy-loss distributions")
    assert 3.0 <= basic <= 3.002        # three queries at ε = 1 each
    assert pld <= basic
    assert "What the whole plan lets an attacker learn" in main.inner_text()
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=60_000)
    screenshot(page, "release_plan")

    # edit the first query's ε in the table: 1 → 2, the basic total grows by 1
    grid = page.locator(".st-key-plan_editor_0 [data-testid='stDataFrameResizable']")
    grid.scroll_into_view_if_needed()
    select_grid_cell(page, grid, 1, 0, 85 + 60)   # first row, Query cell (after Remove's 85 px)
    for _ in range(3):   # (Remove →) Query → Accuracy now → Meets target → ε
        page.keyboard.press("ArrowRight")
    page.keyboard.type("2")
    page.wait_for_timeout(300)
    page.keyboard.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=stMetric]')].some("
        "m => m.innerText.includes('Basic composition') && m.innerText.includes('= 4'))",
        timeout=60_000)
    assert 4.0 <= metric(page, "Basic composition") <= 4.002

    page.get_by_role("button", name="Use this split").click()
    wait_for_app(page)
    assert_no_exception(page)
    after = metric(page, "Privacy-loss distributions")
    assert after < 4.0

    open_page(page, "Data")
    open_page(page, "Release plan")
    page.get_by_text("The plan: 3 queries").wait_for(timeout=60_000)
    assert metric(page, "Privacy-loss distributions") == after
    screenshot(page, "release_plan_split")

    # release it for real: OpenDP, recorded in the session's ledger (tests/conftest.py)
    release_plan(page)
    assert "Released value" in main.inner_text()
    screenshot(page, "release_done")
    open_page(page, "Releases")
    page.get_by_text("Budget per dataset").wait_for(timeout=30_000)
    assert "the chain of entry hashes checks out" in main.inner_text()
    screenshot(page, "releases")
