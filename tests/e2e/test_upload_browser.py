"""Upload a CSV through the real file chooser; see it named in the sidebar and on the Data page.

A real Chromium against `streamlit run`; the page is reached through the app's own navigation
(a reload would start a new session, and an upload lives only in its session).
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    ROOT,
    assert_no_exception,
    choose_dataset,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e

CSV = ROOT / "tests" / "data" / "semicolon.csv"   # city;temp;rain with decimal commas


def test_upload_a_csv_and_see_it_on_the_data_page(page, server_url):
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, "Upload your own CSV")
    uploader = page.locator(".st-key-upload_file input[type='file']")
    uploader.set_input_files(str(CSV))
    page.wait_for_selector("[data-testid='stSidebar'] :text('semicolon.csv: 3 rows')",
                           timeout=30_000)
    wait_for_app(page)
    assert_no_exception(page)
    sidebar = page.locator("[data-testid='stSidebar']")
    assert "decimal comma" in sidebar.inner_text()            # the load warning

    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert_no_exception(page)
    main = page.locator("[data-testid='stMain']")
    assert "semicolon.csv: 3 rows × 3 columns" in main.inner_text()
    chosen = page.locator(".st-key-data_columns").inner_text()   # the first two columns
    assert "city" in chosen and "temp" in chosen
    titles = page.locator("[data-testid='stPlotlyChart'] .gtitle").evaluate_all(
        "nodes => nodes.map(n => n.textContent)")
    # "3,5": a decimal comma is no number on any path (engine.cells rule 4), so temp is text
    assert "Rows per category of city" in titles and "Rows per category of temp" in titles
    screenshot(page, "upload_data_page")
