"""Back in the browser (issue 21 item 5): one history entry per page visited, and a page's URL
carries that page's settings only."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.conftest import assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e


def go(page, title: str) -> None:
    page.locator("[data-testid='stSidebarNav']").get_by_text(title, exact=True).click()
    wait_for_app(page)


def where(page) -> tuple[str, dict[str, list[str]]]:
    url = urlsplit(page.url)
    return url.path, parse_qs(url.query)


def test_back_from_groups_returns_to_statistics_as_left_then_leaves_it(page, server_url):
    page.goto(server_url)
    wait_for_app(page)
    go(page, "Noisy statistics")
    box = page.locator(".st-key-stats_epsilon_exact input")
    box.fill("0.5")             # a setting changed: no history entry of its own
    box.press("Enter")
    wait_for_app(page)
    go(page, "Groups")
    path, params = where(page)
    assert path.endswith("/groups")
    assert any(k.startswith("groups_") for k in params), params
    assert not any(k.startswith("stats_") for k in params), params

    page.go_back()
    wait_for_app(page)
    assert_no_exception(page)
    path, params = where(page)
    assert path.endswith("/statistics"), page.url
    assert page.locator("h1").first.inner_text().startswith("Noisy statistics")
    assert not any(k.startswith("groups_") for k in params), params
    assert params.get("stats_epsilon") == ["0.5"], params

    page.go_back()              # Back leaves the page: to the Welcome page it came from
    wait_for_app(page)
    path, params = where(page)
    assert not path.endswith("/statistics"), page.url
    assert page.locator("h1").first.inner_text() != "Noisy statistics"
    assert not any(k.startswith(("stats_", "groups_")) for k in params), params
