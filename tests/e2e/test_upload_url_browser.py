"""An upload's values never reach the browser's URL (issue 9, item 3), in Chromium.

137 salaries up to 123,456: Noisy statistics suggests bounds [0, 200,000] and the answer range
[0, 40,000,000] from them. The page shows them; the URL, which a user copies and shares and the
browser keeps in its history, must not hold them, on any page.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import assert_no_exception, choose_dataset, wait_for_app
from tests.e2e.test_errors_keep_controls_browser import pick, shown

pytestmark = pytest.mark.e2e

DERIVED = ("123456", "200000", "40000000", "4e+07", "salary", "team_")
PAGES = ("Data", "Noisy statistics", "Noisy tables", "Selection", "Choose epsilon",
         "Release plan", "Releases", "Private learning", "Synthetic data", "Welcome")


def go_to(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    wait_for_app(page)
    assert_no_exception(page)


def assert_clean_url(page, where: str) -> None:
    for value in DERIVED:
        assert value not in page.url, f"{where}: {value} in {page.url}"


def test_upload_derived_numbers_stay_out_of_the_url(page, server_url, tmp_path):
    rows = [f"{123_456 * (i + 1) // 137},team_{'abc'[i % 3]}" for i in range(137)]
    path = tmp_path / "salaries.csv"
    path.write_text("salary,team\n" + "\n".join(rows) + "\n", encoding="utf-8")
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, "Upload your own CSV")
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(path))
    page.wait_for_selector("[data-testid='stSidebar'] :text('salaries.csv: 137 rows')",
                           timeout=30_000)
    wait_for_app(page)

    go_to(page, "Noisy statistics")
    pick(page, "stats_query", "Sum of a column")
    pick(page, "stats_mechanism", "Bounded Laplace")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=60_000)
    assert_no_exception(page)
    # The page shows what it derived from the data…
    assert shown(page, "stats_upper") == "200000.00"
    assert shown(page, "stats_answer_upper") == "40000000.00"
    # …and the URL holds the settings, but none of it.
    assert "stats_query=sum" in page.url and "stats_mechanism=bounded_laplace" in page.url
    assert "stats_answer" not in page.url and "stats_lower" not in page.url
    assert_clean_url(page, "Noisy statistics")
    for title in PAGES:
        go_to(page, title)
        assert_clean_url(page, title)
