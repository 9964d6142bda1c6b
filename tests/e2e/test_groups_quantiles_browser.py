"""The Groups and Quantiles pages in a real browser: each draws, a control changes the result,
and the value typed stays in its box after the rerun."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import assert_no_exception, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


def open_fresh(page, server_url, title: str) -> None:
    """A new session (the address loaded again), then the page called ``title``."""
    page.goto(server_url)
    wait_for_app(page)
    open_page(page, title)


def test_groups_then_quantiles(page, server_url):
    open_fresh(page, server_url, "Groups")
    main = page.locator("[data-testid='stMain']")
    assert "every declared key is released" in main.inner_text()
    page.locator(".st-key-groups_public label").first.click()      # find the groups privately
    wait_for_app(page)
    page.wait_for_function(
        """() => [...document.querySelectorAll("[data-testid='stPlotlyChart'] .gtitle")]
                 .some(n => n.textContent.startsWith('Chance that a group is released'))""",
        timeout=30_000)
    assert_no_exception(page)
    threshold = re.search(r"noisy count is at least ([0-9.]+[0-9])", main.inner_text())
    assert threshold and abs(float(threshold.group(1)) - 14.12) < 0.01   # 1 + ln(1/(2·1e-6))
    screenshot(page, "groups_partition_selection")

    open_fresh(page, server_url, "Quantiles")
    levels = page.locator(".st-key-quantiles_levels input")
    levels.fill("0.25, 0.5, 0.75")
    levels.press("Enter")
    wait_for_app(page)
    assert_no_exception(page)
    text = main.inner_text()
    assert "split equally over the 3 quantiles" in text
    assert page.locator(".st-key-quantiles_levels input").input_value() == "0.25, 0.5, 0.75"
    names = page.locator("[data-testid='stPlotlyChart'] .legendtext").evaluate_all(
        "nodes => nodes.map(n => n.textContent)")
    assert {"0.25-quantile", "median", "0.75-quantile"} <= set(names)
    screenshot(page, "quantiles_three")
