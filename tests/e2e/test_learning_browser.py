"""The "Private learning" page in Chromium: it runs, draws its charts, reacts to a dataset
switch, and never shows an exception.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, open_path, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

CHART = "[data-testid='stPlotlyChart'] .main-svg"


def test_learning_page_draws_and_switches_dataset(page, server_url):
    open_path(page, server_url, "learning")
    page.wait_for_selector(CHART, timeout=60_000)
    assert_no_exception(page)
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
