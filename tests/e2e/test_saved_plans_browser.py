"""Saved plans in Chromium (issue 22 item 3): a query added to the plan is still there after a
reload, in a new tab and after the server restarts; when tab B saves the plan, tab A says so
on its next run and shows B's version. The server runs with its own ledger and plans files
(in a temporary folder) so that it can be restarted on them."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, running_server, wait_for_app

pytestmark = pytest.mark.e2e


def open_page(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    wait_for_app(page)
    assert_no_exception(page)


def add_count(page, *, again: bool = False) -> None:
    """Add a count (``again``: a second one, "Add a second": the plan holds one already)."""
    open_page(page, "Noisy statistics")
    page.locator(".st-key-stats_query [role='combobox']").click()
    page.get_by_role("option", name="Count", exact=False).first.click()
    wait_for_app(page)
    page.get_by_role("button", name="Add a second" if again else "Add to plan").click()
    wait_for_app(page)
    assert_no_exception(page)
    page.get_by_text("Added to the plan").wait_for(timeout=30_000)


def plan_has(page, n: int) -> None:
    open_page(page, "Release plan")
    label = f"The plan: {n} " + ("query" if n == 1 else "queries")
    page.get_by_text(label).wait_for(timeout=60_000)


def start(page, url: str) -> None:
    page.goto(url)
    wait_for_app(page)
    assert_no_exception(page)


@pytest.fixture
def own_files(tmp_path, monkeypatch):
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("EPSILON_LAB_PLANS", str(tmp_path / "plans.sqlite"))
    return tmp_path


def test_a_plan_survives_reload_new_tab_restart_and_tells_a_stale_tab(page, own_files):
    with running_server() as url:
        start(page, url)
        add_count(page)
        page.reload()                                   # a reload: a new session
        wait_for_app(page)
        plan_has(page, 1)

        tab_b = page.context.new_page()                 # a new tab
        start(tab_b, url)
        plan_has(tab_b, 1)
        add_count(tab_b, again=True)                    # B saves the plan's next version

        open_page(page, "Noisy statistics")             # A's next run
        page.get_by_text("This plan was changed in another tab or window at").wait_for(
            timeout=30_000)
        assert "you now see that version" in page.locator(
            "[data-testid='stMain']").inner_text()
        plan_has(page, 2)
        tab_b.close()
    assert (own_files / "plans.sqlite").exists()

    with running_server() as url:                       # the server restarted
        start(page, url)
        plan_has(page, 2)
        page.get_by_text("Saved plans: Untitled plan").wait_for(timeout=30_000)
