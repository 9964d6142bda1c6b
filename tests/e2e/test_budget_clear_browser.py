"""The Budget editor in Chromium: a pure-DP row's δ and ρ are cleared in a fresh editor (not
kept on screen and ignored), with a message, and the cleared plan survives the next rerun."""

from __future__ import annotations

import json
import urllib.parse

import pytest

from tests.e2e.conftest import assert_no_exception, wait_for_app

pytestmark = pytest.mark.e2e


def shared_plan(page) -> list[list]:
    """The plan the page mirrors in its URL: what the editor on screen returned."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(page.url).query)
    return json.loads(query["budget_plan"][0])


def test_a_pure_dp_row_loses_its_delta_and_rho(page, server_url):
    plan = [["count", "laplace", "pure", 0.5, 1e-6, 0.3, 1.0],
            ["hours", "gaussian", "approx", 1.0, 1e-6, None, 99.0]]
    page.goto(server_url)
    wait_for_app(page)
    page.goto(f"{server_url}/budget?budget_plan={urllib.parse.quote(json.dumps(plan))}")
    wait_for_app(page)
    assert_no_exception(page)
    notices = " ".join(page.locator("[data-testid='stAlert']").all_inner_texts())
    assert "Row 1 (count): Pure DP (ε) has no use for δ and ρ, so they were cleared." in notices
    assert page.locator(".st-key-budget_editor_1").count() == 1   # a fresh editor
    assert shared_plan(page) == [["count", "laplace", "pure", 0.5, None, None, 1.0],
                                 ["hours", "gaussian", "approx", 1.0, 1e-6, None, 99.0]]
    # Another run (the release slider moves): the plan stays cleared, the message goes.
    thumb = page.locator(".st-key-budget_epsilon_release input[type='range']")
    thumb.focus()
    thumb.press("ArrowRight")
    wait_for_app(page)
    assert_no_exception(page)
    assert "has no use for" not in " ".join(
        page.locator("[data-testid='stAlert']").all_inner_texts())
    assert shared_plan(page)[0][4:6] == [None, None]
