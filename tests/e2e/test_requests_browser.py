"""No request leaves the app's own server: every page in Chromium, every request recorded.

A privacy tool must not tell a third party (a font or icon host, a CDN, a usage-statistics
service) who uses it, and it must work offline. The server runs with the settings of
``.streamlit/config.toml`` alone, as a user's would.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest

from tests.e2e.conftest import assert_no_exception, running_server, wait_for_app

pytestmark = pytest.mark.e2e

# url path → does the page draw a plotly chart with the default dataset?
PAGES = {"": False, "data": True, "statistics": True, "tables": True, "selection": True,
         "choose_epsilon": True, "plan": False, "releases": False, "learning": True}
# Schemes that never reach a network (inline data, in-page objects).
LOCAL_SCHEMES = {"data", "blob", "about"}
# Every URL the document points at for loading (icons, styles, scripts, images, frames).
RESOURCE_URLS = """() => [...document.querySelectorAll(
    'link[href], script[src], img[src], iframe[src], source[src], video[src], audio[src]')]
    .map(e => e.href || e.src)"""


def foreign(urls, origin: str) -> list[str]:
    """The URLs in ``urls`` that would be fetched from anywhere but ``origin``."""
    return sorted({u for u in urls if urlsplit(u).scheme not in LOCAL_SCHEMES
                   and f"{urlsplit(u).scheme}://{urlsplit(u).netloc}" != origin})


def test_foreign_finds_other_hosts():
    """The filter itself: other hosts, ports and schemes count; inline data does not."""
    origin = "http://127.0.0.1:8501"
    urls = [f"{origin}/static/x.js", "data:image/svg+xml,<svg/>", "blob:abc",
            "https://fonts.gstatic.com/s/i/x.svg", "http://127.0.0.1:9999/x",
            "https://127.0.0.1:8501/x"]
    assert foreign(urls, origin) == ["http://127.0.0.1:9999/x", "https://127.0.0.1:8501/x",
                                     "https://fonts.gstatic.com/s/i/x.svg"]


def test_no_request_leaves_the_app_server(browser):
    with running_server(settings_from_config_only=True) as origin:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        requested: list[str] = []
        context.on("request", lambda request: requested.append(request.url))
        page = context.new_page()
        pointed: list[str] = []
        try:
            for path, has_chart in PAGES.items():
                page.goto(f"{origin}/{path}")
                wait_for_app(page)
                if has_chart:
                    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg",
                                           timeout=60_000)
                assert_no_exception(page)
                pointed += page.evaluate(RESOURCE_URLS)
            # Client-side navigation too: the sidebar's links switch pages without a reload.
            page.goto(origin)
            wait_for_app(page)
            for name in ("Release plan", "Private learning", "Synthetic data", "Glossary",
                         "Welcome"):
                page.locator("[data-testid='stSidebarNav'] a").filter(has_text=name).click()
                wait_for_app(page)
                assert_no_exception(page)
                pointed += page.evaluate(RESOURCE_URLS)
            page.wait_for_timeout(1000)   # late requests (telemetry is sent after load)
        finally:
            context.close()
    assert any(u.startswith(origin) for u in requested), requested[:5]
    assert foreign(requested, origin) == []
    assert foreign(pointed, origin) == []
