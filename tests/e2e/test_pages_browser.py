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
    "plan": False,
    "releases": False,
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


def test_deep_link_on_a_fresh_server_keeps_the_sidebar_and_settings(browser):
    """A copied URL opened first thing after a restart reopens the same view, sidebar and all."""
    from tests.e2e.conftest import running_server

    with running_server() as url:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        try:
            page.goto(f"{url}/statistics?dataset_choice=Iris&stats_query=count"
                      "&stats_epsilon=0.1")
            wait_for_app(page)
            assert_no_exception(page)
            assert page.locator(".st-key-dataset_choice").count() == 1
            sidebar = page.locator("[data-testid='stSidebar']").inner_text()
            assert "Iris: 150 rows" in sidebar, sidebar
            assert page.locator("h1").first.inner_text().startswith("Noisy statistics")
            # count: sensitivity 1, ε = 0.1 → 95% of releases within ln(20)/0.1 = 29.96
            assert "29.96" in page.locator("[data-testid='stMain']").inner_text()
        finally:
            context.close()
