"""A dataset keeps its declarations, in a real browser (issue 32, item 1): on a server of its
own (its own plans, declarations and ledger files), a panel CSV is uploaded, its privacy unit
(the person id, max rows) and a column's bounds are declared; F5 starts a new session that has
lost the upload; uploading the same content again (under another name) brings the unit and
the bounds back, and the sidebar says so."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import numpy as np
import pandas as pd
import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import (
    apply_typed_cells,
    assert_no_exception,
    choose_dataset,
    open_options,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e
SETTLED = 60_000
# the schema table's columns, left to right, and its rows (the data's columns)
COLUMNS = ("column", "type", "role", "categories", "lower", "upper")
ROWS = ("nr", "year", "wage")


def panel_csv() -> str:
    """A panel like Ecdat's Males: 30 people (``nr``) × 8 years, a wage (fixed values)."""
    nr = np.repeat(np.arange(1, 31) * 13, 8)
    year = np.tile(np.arange(1980, 1988), 30)
    wage = (nr % 7) + (year - 1980) / 4
    return pd.DataFrame({"nr": nr, "year": year, "wage": wage}).to_csv(index=False)


def upload(page, path, rows: int) -> None:
    choose_dataset(page, "Upload your own CSV")
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(path))
    page.wait_for_selector(f"[data-testid='stSidebar'] :text('{path.name}: {rows} rows')",
                           timeout=SETTLED)
    wait_for_app(page)


def downloaded_schema(page) -> dict:
    with page.expect_download() as download:
        page.get_by_role("button", name="Download the schema (JSON)").click()
    return json.loads(download.value.path().read_text())


def test_unit_and_bounds_come_back_after_a_reload_and_the_same_upload(page, own_server,
                                                                      tmp_path):
    data = tmp_path / "Males.csv"
    data.write_text(panel_csv())
    page.goto(own_server)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    upload(page, data, 240)
    sidebar = page.locator("[data-testid='stSidebar']")

    # the unit: nr, at most 8 rows per person
    person = page.locator("[data-testid='stSelectbox']", has_text="Person-id column")
    person.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    open_options(page, person.locator("[role='combobox']"))
    page.get_by_role("option", name="nr", exact=True).click()
    box = page.get_by_role("spinbutton", name="Max rows per person")
    expect(box).to_be_visible(timeout=SETTLED)
    box.fill("8")
    box.press("Enter")
    expect(sidebar).to_contain_text("at most 8 rows per person", timeout=SETTLED)
    wait_for_app(page)
    # the bounds of wage, typed in the schema table and applied
    grid = page.locator("[class*='st-key-schema_table'] [data-testid='stDataFrameResizable']")
    apply_typed_cells(page, grid, [("wage", "upper", "50"), ("wage", "lower", "0")],
                      "wage: numeric from 0 to 50", ROWS, COLUMNS)
    wait_for_app(page)
    assert_no_exception(page)

    page.reload()   # F5: a new session; the upload's bytes are gone
    wait_for_app(page)
    expect(sidebar).not_to_contain_text("Males.csv", timeout=SETTLED)
    copy = tmp_path / "Males (again).csv"
    copy.write_text(data.read_text())
    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    upload(page, copy, 240)
    assert_no_exception(page)
    today = datetime.now(UTC).date().isoformat()
    expect(sidebar).to_contain_text(f"Schema and unit restored from {today} (0 saved plans).",
                                    timeout=SETTLED)
    expect(sidebar).to_contain_text("at most 8 rows per person", timeout=SETTLED)
    expect(page.get_by_role("spinbutton", name="Max rows per person")).to_have_value(
        "8", timeout=SETTLED)
    saved = downloaded_schema(page)
    assert saved["privacy_unit"]["person_column"] == "nr"
    assert saved["privacy_unit"]["max_rows"] == 8
    wage = saved["columns"]["wage"]
    assert (wage["role"], wage["lower"], wage["upper"]) == ("numeric", 0, 50)
    screenshot(page, "declarations_restored")
