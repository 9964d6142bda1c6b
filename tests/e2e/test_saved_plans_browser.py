"""Saved plans in Chromium (issue 22 item 3): a query added to the plan is still there after a
reload, in a new tab and after the server restarts; when tab B saves the plan, tab A says so
on its next run and shows B's version once asked to. Two pages on one plan (issue 32 item 6):
page 1 saves, page 2's edit is not written over it, and "Save mine as a copy" makes a second
plan. The server runs with its own ledger, plans and declarations files (in a temporary
folder) so that it can be restarted on them."""

from __future__ import annotations

import pytest

from dashboard.plan_library import PlanLibrary
from tests.e2e.conftest import (
    add_to_plan,
    assert_no_exception,
    choose_count,
    open_page,
    running_server,
    wait_for_app,
)

pytestmark = pytest.mark.e2e


def add_count(page, *, again: bool = False) -> None:
    """Add a count (``again``: a second one, "Add a second": the plan holds one already)."""
    open_page(page, "Noisy statistics")
    choose_count(page)
    add_to_plan(page, "Add a second" if again else "Add to plan")


def add_another(page) -> None:
    """On the statistics page, with a count chosen and planned: "Add a second" again."""
    page.get_by_role("button", name="Add a second").click()
    wait_for_app(page)
    assert_no_exception(page)


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
    monkeypatch.setenv("EPSILON_LAB_DECLARATIONS", str(tmp_path / "declarations.sqlite"))
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
        page.get_by_text("was changed in another tab or window at").wait_for(timeout=30_000)
        page.get_by_role("button", name="Reload the saved plan").click()
        wait_for_app(page)
        plan_has(page, 2)
        tab_b.close()
    assert (own_files / "plans.sqlite").exists()

    with running_server() as url:                       # the server restarted
        start(page, url)
        plan_has(page, 2)
        page.get_by_text("Saved plans: Untitled plan").wait_for(timeout=30_000)


def test_two_pages_on_one_plan_the_later_edit_is_kept_as_a_copy(page, own_files):
    """Page 1 and page 2 open one saved plan (a count); page 1 adds a second count and saves;
    page 2 adds two: its save is refused (page 1's plan stays as saved), page 2 says when and
    what page 1 changed and offers both ways; "Save mine as a copy" makes a second plan."""
    with running_server() as url:
        start(page, url)
        add_count(page)
        page_2 = page.context.new_page()
        start(page_2, url)
        plan_has(page_2, 1)                               # the same saved plan
        page.bring_to_front()
        add_another(page)                                 # page 1 saves: 2 queries
        library = PlanLibrary(own_files / "plans.sqlite")
        [first] = _all(library)
        assert first.size == 2
        page_2.bring_to_front()
        add_count(page_2, again=True)                     # page 2's edits, from version 1
        add_another(page_2)
        main = page_2.locator("[data-testid='stMain']")
        page_2.get_by_text("Your change in this tab is not saved").wait_for(timeout=30_000)
        text = main.inner_text()
        assert "was changed in another tab or window at" in text and "added" in text
        assert library.get(first.id) == first             # nothing written over page 1's
        page_2.get_by_role("button", name="Reload the saved plan").wait_for()
        page_2.get_by_role("button", name="Save mine as a copy").click()
        wait_for_app(page_2)
        assert_no_exception(page_2)
        plans = {p.name: p for p in _all(library)}
        assert set(plans) == {first.name, f"{first.name} (copy)"}
        assert plans[first.name] == first and plans[f"{first.name} (copy)"].size == 3
        assert main.get_by_text("Your change in this tab is not saved").count() == 0
        plan_has(page_2, 3)
        page_2.close()


def _all(library: PlanLibrary) -> list:
    """Every saved plan in the file (one dataset here: the built-in the app opens on)."""
    import sqlite3

    with sqlite3.connect(library.path) as c:
        datasets = {row[0] for row in c.execute("SELECT dataset FROM plans")}
    return [p for d in sorted(datasets) for p in library.plans(d)]
