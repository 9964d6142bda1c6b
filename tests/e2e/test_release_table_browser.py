"""The released values table at 1400 px (issue 31 item 9): a count, a quantile and a
selection released for real; every column of the table is in view (no horizontal scroll, no
column cut off), and the quantile's and the selection's bounds sit in "Error of the choice",
in words, never in the columns of a value's interval."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import (
    add_to_plan,
    assert_no_exception,
    choose_count,
    open_page,
    release_plan,
    running_server,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e


@pytest.fixture
def own_server(tmp_path, monkeypatch):
    """A server of this test's own, with an empty plans file and ledger: on the shared one, an
    earlier test's saved plan of Adult (plans are kept on the server) already holds a count,
    and Add to plan then asks whether to replace it or add a second."""
    monkeypatch.setenv("EPSILON_LAB_PLANS", str(tmp_path / "plans.sqlite"))
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    with running_server() as url:
        yield url


def test_every_column_of_the_released_table_is_in_view_at_1400_px(page, own_server):
    page.goto(own_server)
    wait_for_app(page)
    open_page(page, "Noisy statistics")
    choose_count(page)
    add_to_plan(page)
    open_page(page, "Quantiles")
    # three quartiles of a column with a long name: the widest labels a plan of Adult gets
    page.locator(".st-key-quantiles_column [role='combobox']").click()
    page.get_by_role("option", name="hours_per_week", exact=True).click()
    wait_for_app(page)
    levels = page.locator(".st-key-quantiles_levels input")
    levels.fill("0.25, 0.5, 0.75")
    levels.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    add_to_plan(page)
    open_page(page, "Selection")
    add_to_plan(page)
    open_page(page, "Release plan")
    page.get_by_text("The plan: 3 queries").wait_for(timeout=60_000)
    release_plan(page)

    table = page.locator("[data-testid='stDataFrame']").filter(
        has=page.locator("th", has_text="Released value")).first
    table.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    # the grid draws its columns on a canvas: their total width is its inner stack's, to be
    # held in the visible width of its scroller (wider: the last columns are cut off)
    columns, visible = table.locator(".dvn-scroller").first.evaluate(
        "e => [e.querySelector('.dvn-stack').scrollWidth, e.clientWidth]")
    path = screenshot(page, "release_table_1400")
    assert path.exists()
    assert columns <= visible, f"the columns take {columns} px of {visible} px in view"
    headers = table.locator("[role='columnheader']").evaluate_all(
        "nodes => nodes.map(n => n.textContent)")
    assert headers[-3:] == ["True value ≥", "True value ≤", "Error of the choice"], headers
    cells = table.locator("[role='gridcell']").evaluate_all(
        "nodes => nodes.map(n => n.textContent)")
    said = " ".join(cells)
    assert "rank error ≤ best + " in said and " below the top" in said, said
