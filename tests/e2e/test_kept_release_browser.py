"""Every release is kept (issue 32 item 4), in Chromium: a plan released on the Release plan
page, the package downloaded right after; the page reloaded, the Releases page gives the same
bytes; the server restarted (same ledger file), the Releases page gives them again."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.conftest import (
    add_to_plan,
    assert_no_exception,
    choose_count,
    open_page,
    release_plan,
    running_server,
    wait_for_app,
)

pytestmark = pytest.mark.e2e


def download(page, key: str) -> tuple[str, bytes]:
    """(file name, bytes) the download button of ``key`` gives."""
    button = page.locator(f".st-key-{key} button").first
    button.wait_for(timeout=60_000)
    with page.expect_download(timeout=60_000) as info:
        button.click()
    got = info.value
    return got.suggested_filename, Path(got.path()).read_bytes()


def releases_package(page) -> tuple[str, bytes]:
    open_page(page, "Releases")
    page.get_by_text("A release's files").wait_for(timeout=60_000)
    return download(page, "releases_file_package")


def test_a_release_is_downloaded_again_after_a_reload_and_a_restart(browser, tmp_path,
                                                                    monkeypatch):
    monkeypatch.setenv("EPSILON_LAB_PLANS", str(tmp_path / "plans.sqlite"))
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    page = context.new_page()
    try:
        with running_server() as url:
            page.goto(url)
            wait_for_app(page)
            open_page(page, "Noisy statistics")
            choose_count(page)
            add_to_plan(page)
            open_page(page, "Release plan")
            page.get_by_text("The plan: 1 query").wait_for(timeout=60_000)
            release_plan(page)
            page.get_by_text("kept in the ledger with entry #1").wait_for(timeout=10_000)
            name, right_after = download(page, "plan_release_package")
            assert name == "release-1.zip" and right_after.startswith(b"PK")

            page.reload()
            wait_for_app(page)
            assert releases_package(page) == (name, right_after)
            assert_no_exception(page)
        with running_server() as url:   # a new server process on the same ledger file
            page.goto(url)
            wait_for_app(page)
            assert releases_package(page) == (name, right_after)
            assert_no_exception(page)
    finally:
        context.close()
