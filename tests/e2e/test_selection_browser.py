"""The Selection page in a real browser: renders, draws its charts, switches noise, no exception."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def chart_titles(page) -> list[str]:
    return page.locator("[data-testid='stPlotlyChart'] .gtitle").all_text_contents()


def test_selection_page_switches_noise(page, server_url):
    # Open the app once first: on a freshly started server, a deep link to a page runs that
    # page alone (Streamlit's pages/ auto-discovery) until app.py has run st.navigation.
    page.goto(server_url)
    wait_for_app(page)
    page.goto(f"{server_url}/selection?sel_pure_level=0.00027")
    wait_for_app(page)
    assert_no_exception(page)
    assert page.locator("h1", has_text="Selection").count() == 1
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 2
    assert any("How often each candidate" in t for t in chart_titles(page))
    assert page.locator(".st-key-sel_chart .bars path").count() >= 16   # one bar per level
    markdown = " ".join(page.locator("[data-testid='stMarkdown']").all_inner_texts())
    assert "Permute-and-flip (exponential noise)" in markdown and "is picked" in markdown
    assert page.locator(".st-key-dataset_choice").count() == 1      # the app's sidebar
    page.locator(".st-key-sel_chart").scroll_into_view_if_needed()
    screenshot(page, "selection_default")

    # Streamlit 1.67's selectbox is a combobox: open it, narrow it by typing, pick the option.
    combo = page.locator(".st-key-sel_noise [role='combobox']")
    combo.click()
    combo.fill("Gumbel")
    page.get_by_role("option", name="Exponential mechanism (Gumbel noise)").click()
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert "sel_noise=gumbel" in page.url
    markdown = " ".join(page.locator("[data-testid='stMarkdown']").all_inner_texts())
    assert "Gumbel noise" in markdown and "picked" in markdown
    page.locator(".st-key-sel_curve").scroll_into_view_if_needed()
    screenshot(page, "selection_gumbel")
