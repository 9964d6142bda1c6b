""""Draw another release" in Chromium: a click shows release 2 of the seed, in the URL too, and
the controls and the simulation stay as they were."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, open_path, screenshot, wait_for_app
from tests.e2e.test_errors_keep_controls_browser import shown

pytestmark = pytest.mark.e2e


def release_note(page) -> str:
    return page.locator("[data-testid='stCaptionContainer']", has_text="Showing release"
                        ).first.inner_text()


def test_draw_another_release_on_statistics(page, server_url):
    open_path(page, server_url, "statistics?stats_query=count&stats_epsilon=0.1")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=60_000)
    metric = page.locator("[data-testid='stMetric']", has_text="One release").first
    first = metric.inner_text()
    errors = page.locator(".st-key-stats_errors .main-svg").first.inner_html()
    assert "release 1 of seed 2026" in release_note(page)

    page.get_by_role("button", name="Draw another release").click()
    wait_for_app(page)
    assert_no_exception(page)
    assert "release 2 of seed 2026" in release_note(page)
    assert "stats_release=2" in page.url
    assert metric.inner_text() != first
    assert page.locator(".st-key-stats_errors .main-svg").first.inner_html() == errors
    assert shown(page, "stats_epsilon") == "0.1" and shown(page, "stats_query") == "Count of rows"
    screenshot(page, "statistics_release_2")
