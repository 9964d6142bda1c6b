"""The declared-schema table in a real browser (issue 21, item 3): cells typed one after
another (an upper bound, a first lower bound, a category list; each ended with Enter) are
all applied by "Apply the declarations", which says what it applied, and the downloaded
schema holds them. The rows were left "not declared": the typed cells give their role."""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import (
    assert_no_exception,
    choose_dataset,
    screenshot,
    select_grid_cell,
    type_grid_cell,
    wait_for_app,
)

pytestmark = pytest.mark.e2e

CSV = "pid,age,team\n1,30,a\n2,41,b\n3,25,a\n4,60,c\n"
# the table's columns, left to right, and its rows (the data's columns)
COLUMNS = ("column", "type", "role", "categories", "lower", "upper")
ROWS = ("pid", "age", "team")


def type_cell(page, grid, row: str, column: str, text: str) -> None:
    type_grid_cell(page, grid, row, column, text, ROWS, COLUMNS)


def test_typed_cells_are_all_applied_and_confirmed(page, server_url, tmp_path):
    data = tmp_path / "people.csv"
    data.write_text(CSV)
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, "Upload your own CSV")
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(data))
    page.wait_for_selector("[data-testid='stSidebar'] :text('people.csv: 4 rows')",
                           timeout=30_000)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    assert_no_exception(page)
    grid = page.locator("[class*='st-key-schema_table'] [data-testid='stDataFrameResizable']")
    grid.scroll_into_view_if_needed()

    type_cell(page, grid, "age", "upper", "90")
    type_cell(page, grid, "age", "lower", "0")
    type_cell(page, grid, "team", "categories", "a, b, c")
    wait_for_app(page)
    page.get_by_role("button", name="Apply the declarations").click()
    wait_for_app(page)
    assert_no_exception(page)
    done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="Applied")
    done.wait_for(timeout=30_000)
    said = done.inner_text()
    assert "age: numeric from 0 to 90" in said and "team: categories a, b, c" in said, said
    assert "pid" not in said   # untouched
    screenshot(page, "schema_applied")

    with page.expect_download() as download:
        page.get_by_role("button", name="Download the schema (JSON)").click()
    saved = json.loads(download.value.path().read_text())["columns"]
    assert (saved["age"]["role"], saved["age"]["lower"], saved["age"]["upper"]) == \
        ("numeric", 0, 90)
    assert (saved["team"]["role"], saved["team"]["categories"]) == \
        ("categorical", ["a", "b", "c"])
    assert "pid" not in saved


def test_a_bound_typed_with_a_minus_sign_keeps_it(page, server_url, tmp_path):
    """Issue 35 item 4: a typed −2 became 2 (the number cell dropped the minus sign U+2212,
    as a codebook writes it): the bound cells are text, read with any minus sign."""
    data = tmp_path / "people.csv"
    data.write_text(CSV)
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, "Upload your own CSV")
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(data))
    page.wait_for_selector("[data-testid='stSidebar'] :text('people.csv: 4 rows')",
                           timeout=30_000)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    grid = page.locator("[class*='st-key-schema_table'] [data-testid='stDataFrameResizable']")
    grid.scroll_into_view_if_needed()
    type_cell(page, grid, "age", "upper", "90")
    type_cell(page, grid, "age", "lower", "\u22122")
    wait_for_app(page)
    page.get_by_role("button", name="Apply the declarations").click()
    wait_for_app(page)
    assert_no_exception(page)
    done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="Applied")
    done.wait_for(timeout=30_000)
    assert "age: numeric from -2 to 90" in done.inner_text(), done.inner_text()


# Issue 31, item 6: a value holding a comma, filled from the data, applied, downloaded.
MALES = ('pid,occupation,team\n1,"Craftsmen, Foremen_and_kindred",x\n2,Laborers,y\n'
         '3,"Craftsmen, Foremen_and_kindred",x\n4,"say ""hi""",y\n')
MALES_ROWS = ("pid", "occupation", "team")


def test_a_category_holding_a_comma_is_one_category_through_the_browser(page, server_url,
                                                                       tmp_path):
    data = tmp_path / "males.csv"
    data.write_text(MALES)
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, "Upload your own CSV")
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(data))
    page.wait_for_selector("[data-testid='stSidebar'] :text('males.csv: 4 rows')",
                           timeout=30_000)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    grid = page.locator("[class*='st-key-schema_table'] [data-testid='stDataFrameResizable']")
    grid.scroll_into_view_if_needed()
    # typed by hand in quotes: one category "a, b" and one c
    select_grid_cell(page, grid, 0, 0, 30)   # first row, first column
    for _ in range(MALES_ROWS.index("team")):
        page.keyboard.press("ArrowDown")
    for _ in range(COLUMNS.index("categories")):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.wait_for_timeout(200)
    page.keyboard.type('"a, b", c', delay=50)
    page.keyboard.press("Enter")
    wait_for_app(page)
    # the rest filled from the data: the occupations as they are
    page.get_by_role("button", name="Fill the undeclared columns from the data").click()
    wait_for_app(page)
    page.get_by_role("button", name="Apply the declarations").click()
    wait_for_app(page)
    assert_no_exception(page)
    done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="Applied")
    done.wait_for(timeout=30_000)
    said = done.inner_text()
    assert 'occupation: categories "Craftsmen, Foremen_and_kindred", Laborers, ' \
           '"say ""hi"""' in said, said
    assert 'team: categories "a, b", c' in said, said
    assert page.locator("[data-testid='stAlert']").filter(has_text="leave out").count() == 1
    screenshot(page, "schema_commas_applied")

    with page.expect_download() as download:
        page.get_by_role("button", name="Download the schema (JSON)").click()
    saved = json.loads(download.value.path().read_text())["columns"]
    assert saved["occupation"]["categories"] == ["Craftsmen, Foremen_and_kindred", "Laborers",
                                                 'say "hi"']
    assert saved["team"]["categories"] == ["a, b", "c"]
