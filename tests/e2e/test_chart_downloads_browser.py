"""Every chart downloads as an image without the network (issue 35): in Chromium, with every
request blocked but those to the app's own server, a chart's toolbar saves an SVG (a file that
starts with ``<svg``) and a PNG; every chart of a teaching page carries both buttons."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from dashboard import presenting, teaching
from tests.e2e.conftest import assert_no_exception, running_server, wait_for_app

pytestmark = pytest.mark.e2e

PNG_TITLE = "Download plot as a PNG"   # plotly.js's own button, with format "png"
CHART = "[data-testid='stPlotlyChart']"


@pytest.fixture(scope="module")
def teaching_server():
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(teaching.DEFAULT_ENV, raising=False)
        with running_server() as url:
            yield url


@pytest.fixture
def offline_page(browser, teaching_server):
    """A page whose every request to anywhere but the app's server is refused (and noted)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    refused: list[str] = []
    origin = teaching_server

    def only_the_app(route):
        url = route.request.url
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob") or f"{parts.scheme}://{parts.netloc}" == origin:
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    context.route("**/*", only_the_app)
    page = context.new_page()
    yield page, refused
    context.close()


def downloaded(page, chart, title: str) -> tuple[str, bytes]:
    """Click ``title`` in ``chart``'s toolbar (shown on hover); the file's name and bytes."""
    chart.hover()
    button = chart.locator(f".modebar-btn[data-title='{title}']")
    button.wait_for(state="visible", timeout=10_000)
    with page.expect_download(timeout=30_000) as info:
        button.click()
    download = info.value
    with open(download.path(), "rb") as file:
        return download.suggested_filename, file.read()


# Welcome draws its chart in presentation mode only (its first page loads no plotly.js)
@pytest.mark.parametrize("path", ["?present=True", "statistics", "selection", "choose_epsilon",
                                  "attacker"])
def test_every_chart_offers_svg_and_png(offline_page, teaching_server, path):
    page, refused = offline_page
    page.goto(f"{teaching_server}/{path}")
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector(f"{CHART} .main-svg", timeout=60_000)
    charts = page.locator(CHART)
    count = charts.count()
    assert count >= 1
    for i in range(count):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        chart.hover()
        page.wait_for_function(
            "([chart, title]) => chart.querySelector(`.modebar-btn[data-title=\"${title}\"]`)",
            arg=[chart.element_handle(), presenting.SVG_TITLE], timeout=10_000)
        assert chart.locator(f".modebar-btn[data-title='{PNG_TITLE}']").count() == 1
    assert not refused, refused


def test_svg_and_png_download_offline(offline_page, teaching_server):
    page, refused = offline_page
    page.goto(f"{teaching_server}/statistics")
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector(f"{CHART} .main-svg", timeout=60_000)
    chart = page.locator(".st-key-stats_bars")
    name, svg = downloaded(page, chart, presenting.SVG_TITLE)
    assert name == "stats_bars.svg"
    assert svg.lstrip().startswith(b"<svg"), svg[:80]
    assert b"True counts of" in svg   # the chart's own title, as text in the drawing
    name, png = downloaded(page, chart, PNG_TITLE)
    assert name == "stats_bars.png"
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert not refused, refused
