"""report.html in Chromium (release.package): opened from disk, it asks no other host for
anything, draws every chart, and prints to an A4 PDF; a simulation's label is on every
printed page."""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from engine.sources import FrameSource
from release import Ledger, run
from release.package import SIMULATION_LABEL, release_package, simulation_report
from tests.e2e.conftest import screenshot
from tests.release.test_package import program_plan
from tests.release.test_report_labels import (
    MANAGEMENT,
    PROFESSIONAL,
    long_label_frame,
    long_label_plan,
)
from tests.release_fixtures import visits

pytestmark = pytest.mark.e2e

A4_POINTS = (595.28, 841.89)   # 210 × 297 mm in PDF points (Chromium rounds to pixels)


def media_boxes(pdf: bytes) -> list[tuple[float, float]]:
    """Each page's size (width, height) in points, read off the PDF's /MediaBox entries."""
    return [(float(w), float(h)) for w, h in re.findall(
        rb"/MediaBox ?\[0 0 ([0-9.]+) ([0-9.]+)\]", pdf)]


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    with Ledger(folder / "ledger.sqlite") as ledger:
        release = run(program_plan(), FrameSource(visits(800)), ledger=ledger)
    with zipfile.ZipFile(io.BytesIO(release_package(release))) as archive:
        archive.extract("report.html", folder)
    return folder / "report.html"


def opened(browser, path):
    """A page showing ``path`` from disk, and the list of every non-file request it made
    (each one refused)."""
    context = browser.new_context(viewport={"width": 1000, "height": 900})
    requests: list[str] = []

    def refuse(route):
        requests.append(route.request.url)
        route.abort()

    context.route(lambda url: not url.startswith("file:"), refuse)
    page = context.new_page()
    page.on("request", lambda r: None if r.url.startswith("file:") else requests.append(r.url))
    page.goto(path.as_uri(), wait_until="load")
    return context, page, requests


def test_the_report_opens_from_disk_with_no_request_and_every_chart_drawn(browser,
                                                                          report_file):
    context, page, requests = opened(browser, report_file)
    try:
        charts = page.locator("svg.chart")
        assert charts.count() == len(program_plan().queries)
        drawn = page.evaluate("""() => [...document.querySelectorAll('svg.chart')].map(svg =>
            [...svg.querySelectorAll('rect, path, line, text')].filter(el => {
                const box = el.getBBox(); return box.width > 0 && box.height > 0; }).length)""")
        assert all(n >= 3 for n in drawn), drawn
        assert page.locator("text=What an attacker can learn:").count() == 1
        pdf = page.pdf(format="A4", print_background=True)
        assert pdf.startswith(b"%PDF")
        assert media_boxes(pdf) and all(
            abs(w - A4_POINTS[0]) < 2 and abs(h - A4_POINTS[1]) < 2 for w, h in media_boxes(pdf))
        assert requests == []
    finally:
        context.close()


def test_a_simulation_report_shows_its_label_on_every_printed_page(browser, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(simulation_report(program_plan(), {"n": [((), 3001.2)]}),
                    encoding="utf-8")
    context, page, requests = opened(browser, path)
    try:
        page.emulate_media(media="print")
        stamp = page.locator(".stamp")
        assert stamp.inner_text().lower() == SIMULATION_LABEL.lower()
        assert stamp.evaluate("el => getComputedStyle(el).position") == "fixed"
        assert stamp.is_visible()
        pdf = page.pdf(format="A4")
        assert pdf.startswith(b"%PDF") and media_boxes(pdf)
        assert requests == []
    finally:
        context.close()


def test_long_labels_are_drawn_whole_inside_the_chart_left_of_the_bars(browser, tmp_path):
    """Issue 35 item 4: "ofessional_and_Related Serv…". Each label as Chromium lays it out
    starts at x >= 0 and ends before its chart's bars; the values end inside the chart."""
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(long_label_plan(), FrameSource(long_label_frame()), ledger=ledger)
    with zipfile.ZipFile(io.BytesIO(release_package(release))) as archive:
        archive.extract("report.html", tmp_path)
    context, page, requests = opened(browser, tmp_path / "report.html")
    try:
        boxes = page.evaluate("""() => [...document.querySelectorAll('svg.chart')].map(svg => {
            const box = el => { const b = el.getBBox(); return [b.x, b.x + b.width]; };
            const bars = [...svg.querySelectorAll('rect.bar')].map(r => r.getBBox().x);
            return {width: svg.viewBox.baseVal.width, bars: Math.min(...bars),
                    labels: [...svg.querySelectorAll('text.label')].map(box),
                    values: [...svg.querySelectorAll('text.value')].map(box),
                    text: [...svg.querySelectorAll('text.label')].map(t => [...t.childNodes]
                        .filter(n => n.nodeName !== 'title').map(n => n.textContent)
                        .join(' '))};
        })""")
        histogram, choice = boxes
        assert PROFESSIONAL in histogram["text"] and MANAGEMENT in histogram["text"]
        for chart in boxes:
            for left, right in chart["labels"]:
                assert left >= 0 and right <= chart["bars"], (left, right, chart["bars"])
            for _, right in chart["values"]:
                assert right <= chart["width"], (right, chart["width"])
        screenshot(page, "report_long_labels")
        assert requests == []
    finally:
        context.close()
