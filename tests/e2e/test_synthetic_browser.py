"""The Synthetic data page in a real browser: generate rows from the 1-way marginals of the
default dataset's declared columns, and download them as a CSV (a simulation, not a release).
"""

from __future__ import annotations

import csv
import io

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = [pytest.mark.e2e, pytest.mark.slow]   # a model fit: a minute or more


def test_synthetic_page_generates_and_downloads(page, server_url):
    page.goto(f"{server_url}/synthetic")
    wait_for_app(page)
    assert_no_exception(page)
    page.locator(".st-key-synthetic_marginals").get_by_text("all 1-way marginals").click()
    wait_for_app(page)
    page.get_by_role("button", name="Generate").click()
    wait_for_app(page, timeout=900_000)
    assert_no_exception(page)
    page.get_by_role("heading", name="Utility against the real data").wait_for(timeout=60_000)
    with page.expect_download() as download:
        page.get_by_role("button", name="Download synthetic rows (CSV)").click()
    assert download.value.suggested_filename.startswith("simulated-")
    text = download.value.path().read_text("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == 1 + 1000
    header = rows[0]
    assert len(header) >= 2 and all(header)
    main = page.locator("[data-testid='stMain']").inner_text()
    assert "The first 20 of 1,000 synthetic rows" in main
    screenshot(page, "synthetic_generated")
