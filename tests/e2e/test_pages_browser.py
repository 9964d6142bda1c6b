"""Every page in a real browser: loads, finishes its run, draws its chart, no exception."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

# url path → does the page draw a plotly chart with the default dataset?
PAGES = {
    "": False,
    "data": True,
    "statistics": True,
    "tables": True,
    "selection": True,
    "choose_epsilon": True,
    "budget": True,
    "learning": True,
}


@pytest.mark.parametrize("path", list(PAGES))
def test_page_renders(page, server_url, path):
    page.goto(f"{server_url}/{path}")
    wait_for_app(page)
    assert_no_exception(page)
    assert page.locator("h1").count() >= 1
    if PAGES[path]:
        page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    screenshot(page, path or "home")
