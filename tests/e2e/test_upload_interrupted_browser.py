"""An upload interrupted by a page switch still loads (issue 21 item 2).

A ~20 MB CSV is chosen and, 0.7 s later, another page is opened through the sidebar while the
file is still on its way or being read: the page the user lands on must use the file (or say
why not), and removing it and choosing it again must load it again.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from tests.e2e.conftest import assert_no_exception, choose_dataset, wait_for_app

pytestmark = pytest.mark.e2e

ROWS = 400_000


@pytest.fixture
def big_csv(tmp_path):
    """A CSV of ROWS rows and about 20 MB: an id, a city and three numbers."""
    rng = np.random.default_rng(21)
    table = pd.DataFrame({
        "id": np.arange(ROWS),
        "city": rng.choice(np.array(["Lyon", "Lille", "Nantes", "Brest"]), ROWS),
        **{name: rng.normal(50, 10, ROWS).round(6) for name in "abc"},
    })
    path = tmp_path / "big.csv"
    table.to_csv(path, index=False)
    assert 15 * 2**20 < path.stat().st_size < 40 * 2**20
    return path


def _sidebar_text(page) -> str:
    return page.locator("[data-testid='stSidebar']").inner_text()


def _open_page(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()


def test_a_page_switch_during_an_upload_does_not_lose_it(page, server_url, big_csv):
    page.goto(server_url)
    wait_for_app(page)
    choose_dataset(page, "Upload your own CSV")
    uploader = page.locator(".st-key-upload_file input[type='file']")
    uploader.set_input_files(str(big_csv))
    page.wait_for_timeout(700)
    _open_page(page, "Data")
    loaded = f"big.csv: {ROWS:,} rows"
    page.wait_for_selector(f"[data-testid='stSidebar'] :text('{loaded}')", timeout=90_000)
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector(f"[data-testid='stMain'] :text('{loaded}')", timeout=60_000)

    # Removed and chosen again, another page opened at once: still no exception, and the
    # file in use (tests/dashboard/test_upload_reading.py shows it is read again).
    page.locator(".st-key-upload_file").get_by_role("button", name="Remove big.csv").click()
    wait_for_app(page)
    uploader.set_input_files(str(big_csv))
    page.wait_for_timeout(700)
    _open_page(page, "Noisy statistics")
    wait_for_app(page, timeout=90_000)
    assert_no_exception(page)
    assert loaded in _sidebar_text(page)
    assert "Until a file loads" not in _sidebar_text(page)
