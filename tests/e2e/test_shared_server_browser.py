"""The server the browser tests share starts every test from empty stores (``server_url`` in
tests/e2e/conftest.py).

A new session opens the dataset's most recently saved plan (``dashboard.plan_store``), so on
a shared server a plan saved by one test came back in the next test's session: the Noisy
statistics page then found its Count already in the plan and offered "Replace it in the plan"
and "Add a second" instead of "Add to plan" (test_plan_table_browser.py failed so in full runs,
after test_plan_browser.py on the same process). The two tests below run in this order on the
same server, whatever else the process ran: the first leaves a saved plan, the second opens a
new session and finds none."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import add_to_plan, choose_count, open_page, wait_for_app

pytestmark = pytest.mark.e2e


def count_on_noisy_statistics(page, server_url: str) -> None:
    page.goto(server_url)
    wait_for_app(page)
    open_page(page, "Noisy statistics")
    choose_count(page)


def panel_text(page) -> str:
    """The "Release plan" panel under the results, once drawn (its link comes last)."""
    panel = page.locator("[class*='_plan_panel']").first
    panel.get_by_text("Open the release plan (").wait_for(timeout=60_000)
    return panel.inner_text()


def test_a_test_leaves_a_saved_plan_on_the_shared_server(page, server_url):
    count_on_noisy_statistics(page, server_url)
    add_to_plan(page)
    assert "Open the release plan (1 query)" in panel_text(page)


def test_the_next_test_finds_no_saved_plan_there(page, server_url):
    count_on_noisy_statistics(page, server_url)
    said = panel_text(page)
    assert "Already in the plan" not in said, said
    assert "Open the release plan (0 queries)" in said, said
    assert page.get_by_role("button", name="Add to plan").count() == 1
