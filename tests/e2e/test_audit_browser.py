""""Check the claim" in Chromium: a click runs the audit (progress bar, then the bound), the
broken copy is caught, the numbers are those of ``audit_claim`` run here, and every control
keeps its value."""

from __future__ import annotations

import time

import numpy as np
import pytest

from dpcore.mechanisms import make_mechanism
from dpcore.mechanisms.catalogue import audit_claim
from dpcore.safe_rounding import lower
from tests.e2e.conftest import assert_no_exception, open_path, screenshot, wait_for_app
from tests.e2e.test_errors_keep_controls_browser import shown

pytestmark = pytest.mark.e2e

SEED = 2026   # the app's default seed


def verdicts(page) -> list[str]:
    return page.locator("[data-testid='stMarkdownContainer']",
                        has_text="the audit found").all_inner_texts() + page.locator(
        "[data-testid='stMarkdownContainer']", has_text="The audit found").all_inner_texts()


def test_check_the_claim_on_statistics(page, server_url):
    open_path(page, server_url, "statistics?stats_query=count&stats_epsilon=0.5")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=60_000)
    started = time.perf_counter()
    page.get_by_role("button", name="Check the claim").click()
    wait_for_app(page, timeout=120_000)
    seconds = time.perf_counter() - started
    assert_no_exception(page)
    mech = make_mechanism("laplace", sensitivity=1.0, epsilon=0.5)
    honest = audit_claim(mech, rng=np.random.default_rng([SEED, 10, 0, 0]), samples=4 * 10**6)
    assert honest.result.epsilon_lower_bound <= 0.5
    texts = " ".join(verdicts(page))
    assert f"ε ≥ {lower(honest.result.epsilon_lower_bound)}" in texts, texts
    assert "evidence, not proof" in texts
    assert page.locator(".st-key-stats_audit_chart .main-svg").count() >= 1
    print(f"one click: {seconds:.1f} s in the browser")

    page.locator(".st-key-stats_audit_broken label").click()
    wait_for_app(page, timeout=120_000)
    assert_no_exception(page)
    broken = audit_claim(mech, rng=np.random.default_rng([SEED, 10, 1, 0]), samples=4 * 10**6,
                         noise_factor=0.7)
    texts = " ".join(verdicts(page))
    assert (f"ε ≥ {lower(broken.result.epsilon_lower_bound)} > claimed ε = 0.5" in texts
            and "caught" in texts), texts
    # Nothing else moved: the controls and the URL keep the page's settings.
    assert shown(page, "stats_epsilon") == "0.5"
    assert shown(page, "stats_query") == "Count of rows"
    assert shown(page, "stats_audit_broken") is True
    assert "stats_epsilon=0.5" in page.url
    screenshot(page, "statistics_check_the_claim")


def test_check_the_claim_on_selection(page, server_url):
    open_path(page, server_url, "selection?sel_k=1")
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=60_000)
    page.get_by_role("button", name="Check the claim").click()
    wait_for_app(page, timeout=120_000)
    assert_no_exception(page)
    texts = " ".join(verdicts(page))
    assert "no violation found" in texts, texts
    assert page.locator(".st-key-sel_audit_chart .main-svg").count() >= 1
    assert shown(page, "sel_k") == "1"
    screenshot(page, "selection_check_the_claim")
