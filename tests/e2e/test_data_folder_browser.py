"""The server's data folder in a real browser: its files listed in the sidebar below the
built-ins, the Data and Noisy statistics pages on a Parquet file, and a file removed while
in use named in an error, the page's controls kept.

Screenshots go to tests/e2e/screenshots/ (the README's sidebar picture is
docs/data_folder.png, taken here with ``EPSILON_LAB_SCREENSHOT_DOCS=1``).
"""

from __future__ import annotations

import json
import os

import pytest

from datasets_synthetic.teaching import NAMES as TEACHING
from tests.e2e.conftest import (
    ROOT,
    assert_no_exception,
    choose_dataset,
    running_server,
    screenshot,
    wait_for_app,
)
from tests.pages.test_data_folder_pages import people

pytestmark = pytest.mark.e2e


@pytest.fixture
def folder_server(tmp_path, monkeypatch):
    frame = people(5000)
    frame.to_parquet(tmp_path / "survey_2024.parquet", index=False)
    frame.to_csv(tmp_path / "survey_2024_extract.csv.gz", index=False, compression="gzip")
    frame.to_csv(tmp_path / "to_remove.csv", index=False)
    (tmp_path / "survey_2024.schema.json").write_text(json.dumps({
        "source": "a made-up survey",
        "columns": {"age": {"lower": 0, "upper": 120, "unit": "years", "integer": True},
                    "region": {"categories": ["north", "south", "east", "west", "nowhere"]}}}))
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    with running_server() as url:
        yield url, tmp_path


def test_data_folder_files_are_datasets(page, folder_server):
    url, folder = folder_server
    page.goto(url)
    wait_for_app(page)
    page.locator(".st-key-dataset_choice [role='combobox']").click()
    options = page.get_by_role("option").all_inner_texts()
    assert options[:4] == ["Adult (UCI census income)", "Iris", "Synthetic census",
                           "Clinic visits (synthetic)"]
    # the teaching datasets (issue 35) come next, then the data folder's files
    assert options[4:7] == list(TEACHING)
    assert options[7:10] == ["survey_2024.parquet · data folder",
                            "survey_2024_extract.csv.gz · data folder",
                            "to_remove.csv · data folder"]
    page.keyboard.press("Escape")
    choose_dataset(page, "survey_2024.parquet · data folder")
    sidebar = page.locator("[data-testid='stSidebar']")
    assert "5,000 rows × 4 columns" in sidebar.inner_text()
    if os.environ.get("EPSILON_LAB_SCREENSHOT_DOCS") == "1":
        page.locator(".st-key-dataset_choice [role='combobox']").click()
        page.wait_for_timeout(300)
        page.screenshot(path=str(ROOT / "docs" / "data_folder.png"),
                        clip={"x": 0, "y": 330, "width": 620, "height": 480})
        page.keyboard.press("Escape")

    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert_no_exception(page)
    assert "(dashed lines: the public bounds)" in page.inner_text("body")   # age, declared
    screenshot(page, "data_folder_data_page")

    page.locator("[data-testid='stSidebarNav'] a", has_text="Noisy statistics").first.click()
    wait_for_app(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    assert_no_exception(page)
    screenshot(page, "data_folder_statistics")


def test_a_file_removed_in_use_is_named(page, folder_server):
    url, folder = folder_server
    page.goto(url)
    wait_for_app(page)
    choose_dataset(page, "to_remove.csv · data folder")
    page.locator("[data-testid='stSidebarNav'] a", has_text="Noisy statistics").first.click()
    wait_for_app(page)
    box = page.locator(".st-key-stats_trials [role='combobox']")
    box.click()
    page.get_by_role("option", name="1,000", exact=True).click()
    wait_for_app(page)
    (folder / "to_remove.csv").unlink()
    page.locator(".st-key-stats_confidence [role='combobox']").click()
    page.get_by_role("option", name="90%", exact=True).click()
    wait_for_app(page)
    assert_no_exception(page)
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    assert "to_remove.csv is no longer in the data folder" in sidebar
    # The page's controls keep their values on the dataset the pages fell back to.
    combo = ".st-key-{} [role='combobox']"
    assert page.locator(combo.format("stats_trials")).input_value() == "1,000"
    assert page.locator(combo.format("stats_confidence")).input_value() == "90%"
    screenshot(page, "data_folder_removed")
