"""The privacy unit in a real browser: declared on the Data page for the clinic visits, read on
Noisy statistics (sensitivity, bounds cost), and still shown when the user comes back (a real
browser drops the widgets of pages it leaves; AppTest does not)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, choose_dataset, screenshot, wait_for_app

pytestmark = pytest.mark.e2e
VISITS = "Clinic visits (synthetic)"


def open_page(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    wait_for_app(page)


def test_unit_declared_on_the_data_page_is_kept(page, server_url):
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, VISITS)
    open_page(page, "Data")
    main = page.locator("[data-testid='stMain']")
    box = page.get_by_role("spinbutton", name="Max rows per person")
    assert box.input_value() == "5"           # the generator's declared starting bound
    box.fill("3")
    box.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    assert "at most 3 rows per person" in main.inner_text()
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    assert "at most 3 rows per person" in sidebar
    screenshot(page, "data_privacy_unit")

    open_page(page, "Noisy statistics")
    page.locator(".st-key-stats_query [role='combobox']").click()
    page.get_by_role("option", name="Count", exact=False).first.click()
    wait_for_app(page)
    assert_no_exception(page)
    text = main.inner_text()
    assert "sensitivity 3" in text and "add or remove one person" in text
    assert "What the bounds cost" in text and "not private" in text
    screenshot(page, "statistics_bounds_cost")

    open_page(page, "Data")
    assert page.get_by_role("spinbutton", name="Max rows per person").input_value() == "3"
    assert "at most 3 rows per person" in main.inner_text()
