"""The "Noisy tables" page in a real browser: its heatmap draws, and another tab draws its own.

Reached through the app's navigation on the synthetic census (Occupation × Sex).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

HEATMAP = "[data-testid='stPlotlyChart'] .heatmaplayer image, [data-testid='stPlotlyChart'] .hm"


def test_tables_page_draws_its_heatmap(page, server_url):
    page.goto(server_url)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav'] a", has_text="Noisy tables").first.click()
    wait_for_app(page)
    button = page.locator(".st-key-tables_use_census button")
    button.wait_for(timeout=60_000)
    button.click()                                   # switch to the synthetic census
    wait_for_app(page)
    page.wait_for_selector(HEATMAP, state="attached", timeout=30_000)
    assert_no_exception(page)
    main = page.locator("[data-testid='stMain']")
    assert "Total L1 error (published)" in main.inner_text()
    labels = page.locator("[data-testid='stPlotlyChart'] .ytick text").evaluate_all(
        "nodes => nodes.map(n => n.textContent)")
    assert "Unicorn Wrangler" in labels              # a declared category, kept
    titles = page.locator("[data-testid='stPlotlyChart'] .gtitle").evaluate_all(
        "nodes => nodes.map(n => n.textContent)")
    assert "Published: Occupation by Sex" in titles
    assert any(t.startswith("Total L1 error of the table over") for t in titles)

    page.get_by_role("tab", name="Noisy").click()
    wait_for_app(page)
    page.wait_for_function(
        """() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .gtitle")]
                 .some(n => n.textContent === 'Noisy: Occupation by Sex')""", timeout=30_000)
    assert_no_exception(page)
    screenshot(page, "tables_heatmap")
