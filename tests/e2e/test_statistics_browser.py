"""The "Noisy statistics" page in Chromium: runs, redraws after the epsilon slider moves, URL views.

The ±alpha sentence is checked against the Laplace closed form b·ln(20), b = 1/ε, computed here.
"""

from __future__ import annotations

import math
import re
import time
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import assert_no_exception, screenshot, wait_for_app

pytestmark = pytest.mark.e2e

SENTENCE = re.compile(r"95% of releases are within ±([\d,.]+) of the true count")
CHART = "[data-testid='stPlotlyChart'] .main-svg"


def open_statistics(page, server_url: str, query: str = "") -> None:
    # Load the root first: on a fresh server, a first request straight to /statistics runs the
    # page file alone (Streamlit's fallback for a pages/ folder) until app.py has called
    # st.navigation once.
    page.goto(server_url)
    wait_for_app(page)
    page.goto(f"{server_url}/statistics{query}")
    wait_for_app(page)
    page.wait_for_selector(CHART, timeout=30_000)


def shown_alpha(page) -> float:
    text = page.get_by_text(SENTENCE).first.inner_text()
    return float(SENTENCE.search(text)[1].replace(",", ""))


def shown_epsilon(page) -> float:
    thumb = page.locator(".st-key-stats_epsilon [data-testid='stSliderThumbValue']")
    return float(thumb.inner_text())


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def settled_epsilon(page, timeout: float = 60.0) -> float:
    """The slider's value once the page has re-run for it.

    Each key press can send its own rerun, and the runs for the first presses may end before the
    last press's run starts: the page is "not running" between them while the thumb, the URL and
    the sentence still show an earlier value. Wait until the thumb and the URL agree, twice in a
    row, with no run in progress (the URL is written at the end of a run)."""
    deadline = time.monotonic() + timeout
    agreed = 0
    while time.monotonic() < deadline:
        wait_for_app(page)
        epsilon = shown_epsilon(page)
        in_url = parse_qs(urlparse(page.url).query).get("stats_epsilon", [""])[0]
        # compared as numbers: the URL may write 1.0 where the thumb shows 1
        agreed = agreed + 1 if _number(in_url) == epsilon else 0
        if agreed == 2:
            return epsilon
    raise AssertionError(f"the slider shows {shown_epsilon(page)} but the URL is {page.url}")


def test_moving_the_epsilon_slider_redraws(page, server_url):
    open_statistics(page, server_url)
    assert_no_exception(page)
    assert page.locator("[data-testid='stSidebar']").get_by_text("Dataset").count() >= 1
    assert shown_epsilon(page) == 1.0
    assert shown_alpha(page) == pytest.approx(math.log(20), rel=1e-3)

    thumb = page.locator(".st-key-stats_epsilon input[type='range']")  # the thumb's input
    for _ in range(3):   # on a loaded machine a rerun can redraw the thumb under the key
        thumb.focus()    # presses, which are then lost (the slider stays at 1): press again
        for _ in range(3):
            thumb.press("ArrowRight")
        epsilon = settled_epsilon(page)
        if epsilon > 1.0:
            break
    page.wait_for_selector(CHART, timeout=30_000)
    assert_no_exception(page)
    assert epsilon > 1.0
    # The page re-ran with the new ε: its 95% bound is b·ln(20) with b = 1/ε.
    assert shown_alpha(page) == pytest.approx(math.log(20) / epsilon, rel=1e-3)
    assert page.locator("[data-testid='stPlotlyChart']").count() == 3
    assert f"stats_epsilon={epsilon:g}" in page.url
    screenshot(page, "statistics_epsilon")


def test_url_opens_the_same_view(page, server_url):
    open_statistics(page, server_url, "?stats_query=count&stats_epsilon=0.1")
    assert_no_exception(page)
    assert shown_epsilon(page) == 0.1
    assert shown_alpha(page) == pytest.approx(10 * math.log(20), rel=1e-3)
    screenshot(page, "statistics_count_url")
