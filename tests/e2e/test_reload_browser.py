"""A reload loses nothing but an upload's bytes (issue 32, items 2 and 3), in Chromium.

A server of its own (its own data folder, ledger, plans and declarations files, so that it
can be restarted on them): a built-in dataset with a second saved plan open comes back after
F5 on the same page, dataset and plan; an upload that is not kept is named after a reload,
with what waits for it; an upload kept on the server is offered as a data-folder file after
the server restarts, with its plan.
"""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from dashboard.plan_library import PlanLibrary
from tests.e2e.conftest import (
    assert_no_exception,
    choose_dataset,
    open_page,
    running_server,
    wait_for_app,
)
from tests.e2e.test_saved_plans_browser import add_count

pytestmark = pytest.mark.e2e

MALES = "nr,year,wage\n" + "".join(f"{13 + i % 40},{1980 + i % 8},{(i * 37) % 11}.5\n"
                                   for i in range(320))
UPLOAD = "Upload your own CSV"


@pytest.fixture
def own_files(tmp_path, monkeypatch):
    for variable, name in (("EPSILON_LAB_LEDGER", "ledger.sqlite"),
                           ("EPSILON_LAB_PLANS", "plans.sqlite"),
                           ("EPSILON_LAB_DECLARATIONS", "declarations.sqlite")):
        monkeypatch.setenv(variable, str(tmp_path / name))
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path / "data"))
    (tmp_path / "Males.csv").write_text(MALES)
    return tmp_path


def sidebar(page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def main(page) -> str:
    return page.locator("[data-testid='stMain']").inner_text()


def open_saved(page, plan_id: int, shown: str, wanted: str) -> None:
    """In the Saved plans section (its title names the plan ``shown``), open the plan
    ``plan_id`` named ``wanted``. The page is let finish its run first; an Open click that a
    redraw of the page swallows (a loaded machine: the full run lost it once, the URL still
    naming the latest plan) is made again, and the page's text is said if it never opens."""
    title = page.get_by_text(f"Saved plans: {shown}")
    title.wait_for(timeout=30_000)
    wait_for_app(page)
    opened = page.get_by_text(f"Saved plans: {wanted}")
    for attempt in range(3):
        button = page.locator(f".st-key-saved_plan_open_{plan_id} button")
        if not button.is_visible():
            title.click()                                       # the section's expander
        button.click()
        wait_for_app(page)
        assert_no_exception(page)
        try:
            opened.wait_for(timeout=10_000)
            return
        except PlaywrightTimeout:
            if attempt == 2:
                raise AssertionError(f"'{wanted}' did not open; URL {page.url}; page:\n"
                                     f"{main(page)[:3000]}") from None


def reload(page) -> None:
    page.reload()
    wait_for_app(page)
    assert_no_exception(page)


def test_a_reload_keeps_page_dataset_and_plan_and_names_the_upload(page, own_files):
    from dashboard.datasets import load_builtin

    iris = load_builtin("Iris").key
    library = PlanLibrary(os.environ["EPSILON_LAB_PLANS"])
    wanted = library.create(iris, "Petal counts", ())
    library.create(iris, "Latest plan", ())
    with running_server() as url:
        page.goto(url)
        wait_for_app(page)
        choose_dataset(page, "Iris")
        open_page(page, "Release plan")
        open_saved(page, wanted.id, "Latest plan", "Petal counts")   # the latest opens first

        reload(page)                                             # F5
        assert "/plan" in page.url
        page.get_by_text("Saved plans: Petal counts").wait_for(timeout=30_000)
        assert "Iris: 150 rows" in sidebar(page)

        choose_dataset(page, UPLOAD)
        page.locator(".st-key-upload_file input[type='file']").set_input_files(
            str(own_files / "Males.csv"))
        wait_for_app(page)
        assert "Males.csv: 320 rows" in sidebar(page)
        add_count(page)                                          # a plan saved for it
        reload(page)
        notice = "Upload Males.csv again: 1 saved plan is waiting."
        page.get_by_text(notice).wait_for(timeout=30_000)
        assert "Until a file loads" in sidebar(page)
        open_page(page, "Data")                                  # every page says it
        assert notice in main(page)
        assert "data=" in page.url and "wage" not in page.url and "Males" not in page.url

        page.locator(".st-key-upload_file input[type='file']").set_input_files(
            str(own_files / "Males.csv"))
        wait_for_app(page)
        assert notice not in main(page)
        page.get_by_role("button", name="Keep this file on the server").click()
        wait_for_app(page)
        assert_no_exception(page)
        assert "Kept on the server as Males.csv" in sidebar(page)
        assert (own_files / "data" / "Males.csv").read_text() == MALES

    with running_server() as url:                                # the server restarted
        page.goto(url)
        wait_for_app(page)
        choose_dataset(page, "Males.csv · data folder")
        assert "Males.csv: 320 rows" in sidebar(page)
        assert "Remove from the server" in sidebar(page)
        open_page(page, "Release plan")
        page.get_by_text("The plan: 1 query").wait_for(timeout=60_000)
