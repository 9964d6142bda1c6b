"""report.html's charts draw long labels whole (issue 35 item 4: CPS1985's
"Professional_and_Related Services" read "ofessional_and_Related Serv…", cut at 30 characters
and drawn from left of the chart's edge). The geometry as drawn is checked in Chromium
(tests/e2e/test_report_browser.py); here, the text and the layout of the generated SVG."""

from __future__ import annotations

import io
import re
import zipfile
from html import unescape

import pandas as pd
import pytest

from engine.sources import FrameSource
from plan.model import (
    Categories,
    Dataset,
    Histogram,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Selection,
    SelectionNoise,
)
from release import Ledger, run
from release.package import release_package

#: CPS1985's occupations as the issue saw them, one longer than two lines can hold, and one
#: word with no place to break.
PROFESSIONAL = "Professional_and_Related Services"
MANAGEMENT = "Management, business and financial operations (all levels)"
TOO_LONG = "Installation, maintenance and repair of " * 4 + "everything"
NO_BREAK = "W" * 30
OCCUPATIONS = (PROFESSIONAL, "Sales", MANAGEMENT, NO_BREAK, TOO_LONG)


def long_label_plan() -> Plan:
    return Plan(Dataset("CPS1985"),
                (PlanQuery("h", "Workers by occupation",
                           Histogram("occupation", Categories(OCCUPATIONS, "public", "test")),
                           Noise("geometric", "pure", epsilon=1.0)),
                 PlanQuery("top", "The most common occupation",
                           Selection("occupation", Categories(OCCUPATIONS, "public", "test")),
                           SelectionNoise("exponential", "pure", epsilon=1.0))),
                PrivacyUnit())


def long_label_frame() -> pd.DataFrame:
    """40, 140, … 440 rows of each occupation: the longest is the most common by far."""
    return pd.DataFrame({"occupation": [o for i, o in enumerate(OCCUPATIONS)
                                        for _ in range(40 + 100 * i)]})


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> str:
    with Ledger(tmp_path_factory.mktemp("ledger") / "ledger.sqlite") as ledger:
        release = run(long_label_plan(), FrameSource(long_label_frame()), ledger=ledger)
    with zipfile.ZipFile(io.BytesIO(release_package(release))) as archive:
        return archive.read("report.html").decode()


def labels(svg: str) -> list[tuple[float, str, list[str], str | None]]:
    """Each row label of a chart: its x, text-anchor, lines (tspans) and tooltip."""
    found = []
    for attrs, body in re.findall(r'<text class="label" ([^>]*)>(.*?)</text>', svg):
        x = float(re.search(r'\bx="([^"]+)"', attrs).group(1))
        anchor = re.search(r'text-anchor="([^"]+)"', attrs).group(1)
        title = re.search(r"<title>(.*?)</title>", body)
        lines = [unescape(t) for t in re.findall(r"<tspan[^>]*>(.*?)</tspan>", body)]
        found.append((x, anchor, lines, None if title is None else unescape(title.group(1))))
    return found


def charts(report: str) -> list[str]:
    return re.findall(r'<svg class="chart".*?</svg>', report, flags=re.S)


def test_a_long_label_is_drawn_whole_right_of_the_charts_left_edge(report):
    histogram = charts(report)[0]
    drawn = {" ".join(lines): (x, anchor, lines, title)
             for x, anchor, lines, title in labels(histogram)}
    # one line each, whole, no ellipsis: the label column widened for them
    for label in (PROFESSIONAL, "Sales"):
        x, anchor, lines, title = drawn[label]
        assert lines == [label] and title is None
    # two lines, broken between words, nothing dropped
    x, anchor, lines, title = drawn["Management, business and financial operations (all "
                                    "levels)"]
    assert len(lines) == 2 and " ".join(lines) == MANAGEMENT and title is None
    # a word with no break point is split, every letter kept
    assert any("".join(lines) == NO_BREAK and len(lines) == 2 for _, _, lines, _ in
               drawn.values())
    # longer than two lines: cut with an ellipsis, whole in the tooltip (and the table)
    [(x, anchor, lines, title)] = [v for v in drawn.values() if v[3] is not None]
    assert title == TOO_LONG and lines[-1].endswith("…")
    assert TOO_LONG.startswith(" ".join(lines)[:-1].rstrip())
    assert f"<td>{TOO_LONG}</td>" in report
    # right-aligned against the bars, which start where the labels end
    xs = {x for x, _, _, _ in drawn.values()}
    assert len(xs) == 1 and {a for _, a, _, _ in drawn.values()} == {"end"}
    [bar_start] = {float(v) for v in re.findall(r'<rect class="bar" x="([^"]+)"', histogram)
                   if float(v) <= min(xs) + 6}
    assert bar_start == min(xs) + 6 and 0 < min(xs) <= 640


def test_a_long_choice_and_its_label_are_whole_in_the_list_chart(report):
    choice = charts(report)[1]
    [(x, anchor, lines, title)] = labels(choice)
    assert x > 0 and anchor == "end"
    # the most common by far (440 rows against 340 at ε = 1: picked but with odds e^-50)
    value = re.search(r'<text class="value"[^>]*>(.*?)</text>', choice).group(1)
    whole = re.search(r"<title>(.*?)</title>", value)
    shown = unescape(re.sub(r"<title>.*?</title>", "", value))
    # too long for the chart's width: cut with an ellipsis, whole on hover and in the table
    assert whole is not None and unescape(whole.group(1)) == TOO_LONG
    assert shown.endswith("…") and TOO_LONG.startswith(shown[:-1])
