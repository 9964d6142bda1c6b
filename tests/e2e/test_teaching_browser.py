"""The teaching flow in a real browser (issue 35): a new session opens on the class of 30 and
says what to look at; the noise is visible on the new defaults, as the pages' own figures say
(read from the charts drawn in Chromium, checked against closed forms); rounds of the attacker
game are played and scored; Adult is one click away; presentation mode draws one chart and one
sentence per step (the README's screenshots). On a server of its own: the shared one fixes
Adult for the tests written on it."""

from __future__ import annotations

import math
import re
from itertools import permutations

import numpy as np
import pytest

from dashboard import teaching
from datasets_synthetic import teaching as tables
from tests.e2e.conftest import assert_no_exception, running_server, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def teaching_server():
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(teaching.DEFAULT_ENV, raising=False)
        with running_server() as url:
            yield url


def chosen_dataset(page) -> str:
    return page.locator(".st-key-dataset_choice [role='combobox']").input_value()


def test_a_round_of_the_attacker_game_on_the_class(page, teaching_server):
    page.goto(teaching_server)
    wait_for_app(page)
    assert_no_exception(page)
    assert chosen_dataset(page) == tables.CLASS
    assert "Look at:" in page.locator(".st-key-teaching_note").inner_text()
    screenshot(page, "teaching_welcome")

    page.goto(f"{teaching_server}/attacker")
    wait_for_app(page)
    assert_no_exception(page)
    assert chosen_dataset(page) == tables.CLASS
    page.wait_for_selector(".st-key-attack_chart .main-svg", timeout=30_000)
    assert "after 0 rounds" in page.locator(".st-key-attack_chart .gtitle").text_content()
    page.locator(".st-key-attack_guess_in button").click()
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector(".st-key-attack_chart .main-svg", timeout=30_000)
    assert "after 1 round" in page.locator(".st-key-attack_chart .gtitle").text_content()
    said = " ".join(page.locator("[data-testid='stMarkdown']").all_inner_texts())
    assert "Last round the person was" in said and "you said in" in said
    screenshot(page, "teaching_attacker")

    page.get_by_role("button", name="Open Adult (48,842 people) instead").click()
    wait_for_app(page)
    assert_no_exception(page)
    assert chosen_dataset(page) == "Adult (UCI census income)"


#: What Chromium drew: each trace's name and values, from plotly's own copy of the figure.
TRACES = """(key) => Object.fromEntries(document.querySelector(`.st-key-${key} .js-plotly-plot`)
    ._fullData.map(t => [t.name, {x: Array.from(t.x || []), y: Array.from(t.y || [])}]))"""


def traces(page, key: str) -> dict:
    page.wait_for_selector(f".st-key-{key} .main-svg", timeout=60_000)
    return page.evaluate(TRACES, key)


def page_text(page) -> str:
    return " ".join(page.locator("[data-testid='stMain'] [data-testid='stMarkdown']")
                    .all_inner_texts())


def test_the_noise_of_a_count_is_visible_on_the_class(page, teaching_server):
    """Noisy statistics on the class of 30: the page's own ±α (Laplace at ε = 1: ln 20 ≈ 3
    pupils, the closed form) is half a typical bar, and the release drawn moves a bar by
    more than a pupil; on Adult the same ±α is under 1 % of a typical bar."""
    page.goto(f"{teaching_server}/statistics")
    wait_for_app(page)
    assert_no_exception(page)
    drawn = traces(page, "stats_bars")
    truth = np.asarray(drawn["True count"]["y"])
    noisy = np.asarray(next(v["y"] for k, v in drawn.items() if k.startswith("One noisy")))
    assert sorted(truth.tolist(), reverse=True) == list(tables.SUBJECT_COUNTS)
    said = float(re.search(r"within ±([\d.]+) of the true count", page_text(page)).group(1))
    assert said == pytest.approx(math.log(20), abs=1e-3)   # b ln(1/β), b = 1, β = 5 %
    assert said / np.median(truth) > 0.4
    assert np.abs(noisy - truth).max() > 1.0
    page.get_by_role("button", name="Open Adult (48,842 people) instead").click()
    wait_for_app(page)
    assert_no_exception(page)
    adult = np.asarray(traces(page, "stats_bars")["True count"]["y"])
    said = float(re.search(r"within ±([\d.]+) of the true count", page_text(page)).group(1))
    assert said / np.median(adult) < 0.01   # education: ±3 beside a median bar of 1,172


def test_the_close_race_picks_the_winner_two_times_in_three(page, teaching_server):
    """Selection on the race (126, 125, 125, 124 votes): the page's sentence and its chart
    agree that at ε = 1 the winner is picked well under 90 % of the time; the exact share is
    the permute-and-flip law the page names, checked here against its closed form for
    monotonic scores: P(best) = Σ over orders, computed by brute force below."""
    page.goto(f"{teaching_server}/selection")
    wait_for_app(page)
    assert_no_exception(page)
    drawn = traces(page, "sel_chart")
    exact = dict(zip(drawn["Exact probability"]["x"], drawn["Exact probability"]["y"],
                     strict=True))
    votes = dict(zip(*next((v["x"], v["y"]) for k, v in drawn.items()
                           if k.startswith("True count")), strict=True))
    assert list(votes.values()) == [126, 125, 125, 124]
    said = re.search(r"At ε = 1, (\w+) \(the highest score\) is picked ([\d.]+)% of the time",
                     page_text(page))
    assert said is not None
    winner, share = said.group(1), float(said.group(2)) / 100
    assert winner == max(votes, key=votes.get)
    assert exact[winner] == pytest.approx(share, abs=5e-4)
    assert 0.5 < exact[winner] < 0.8   # the noise of ε = 1 visibly decides this race
    assert exact[winner] == pytest.approx(permute_and_flip_best(list(votes.values()), 1.0),
                                          abs=1e-9)


def permute_and_flip_best(scores: list[float], epsilon: float) -> float:
    """P(the top score is reported) by permute-and-flip with monotonic scores of sensitivity
    1 (McKenna & Sheldon 2020): candidates in a uniformly random order, each accepted with
    probability exp(ε (s − max)) — every order enumerated, the acceptance chain summed."""
    top = max(scores)
    accept = [math.exp(epsilon * (s - top)) for s in scores]
    best = scores.index(top)
    orders = list(permutations(range(len(scores))))
    total = 0.0
    for order in orders:
        # the best is reported when every candidate before it in the order is rejected
        rejected_before = 1.0
        for i in order:
            if i == best:
                total += rejected_before
                break
            rejected_before *= 1.0 - accept[i]
    # a full pass with no acceptance cannot happen: the top's acceptance is 1
    return total / len(orders)


def test_the_village_error_at_epsilon_one_is_readable(page, teaching_server):
    """Choose epsilon on the village of 400: the count's Laplace line at ε = 1 is the closed
    form ln 20 ≈ 3 people (95 %), and the smallest ε meeting ±10 is ln(20)/10, as the page
    says in its own sentence."""
    page.goto(f"{teaching_server}/choose_epsilon")
    wait_for_app(page)
    assert_no_exception(page)
    assert chosen_dataset(page) == tables.VILLAGE
    drawn = traces(page, "choose_curve")
    line = drawn["Laplace"]
    # the line is b ln(1/β) = ln(20)/ε: a straight line on log-log axes, read there
    at_one = float(np.exp(np.interp(0.0, np.log(line["x"]), np.log(line["y"]))))
    assert at_one == pytest.approx(math.log(20), rel=1e-3)
    smallest = drawn["Smallest ε meeting the target (Laplace)"]["x"][0]
    assert smallest == pytest.approx(math.log(20) / 10, rel=1e-9)
    said = page.locator("[data-testid='stAlertContentSuccess']").first.inner_text()
    assert re.search(r"With Laplace noise, ε ≥ 0\.3\b", said), said


def test_rounds_of_the_attacker_game_are_scored_on_the_chart(page, teaching_server):
    """Eight rounds played in Chromium, always guessing "in": the chart drawn in the browser
    puts the player's dot at 100 % hits and 100 % false alarms (both worlds came up at the
    default seed), and the computer's long run on the ε = 1 corner, 1/(1+e) and e/(1+e)."""
    page.goto(f"{teaching_server}/attacker")
    wait_for_app(page)
    assert_no_exception(page)
    for played in range(1, 9):
        page.locator(".st-key-attack_guess_in button").click()
        wait_for_app(page)
        page.wait_for_function(
            "(n) => (document.querySelector('.st-key-attack_chart .gtitle') || {})"
            ".textContent?.includes(`after ${n} round`)", arg=played, timeout=30_000)
    assert_no_exception(page)
    drawn = traces(page, "attack_chart")
    assert (drawn["You"]["x"][0], drawn["You"]["y"][0]) == (1.0, 1.0)
    long_run = next(v for k, v in drawn.items() if k.startswith("The computer over"))
    corner = 1 / (1 + math.e)
    assert long_run["x"][0] == pytest.approx(corner, abs=0.03)
    assert long_run["y"][0] == pytest.approx(1 - corner, abs=0.03)


@pytest.mark.parametrize("path", ["", "statistics", "selection", "choose_epsilon", "attacker"])
def test_presentation_mode_per_teaching_page(browser, teaching_server, path):
    """One chart and one sentence per step, the rest hidden; the README's screenshots, taken
    at 1400×900 (the page's full height)."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{teaching_server}/{path}?present=True")
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=60_000)
    steps = page.locator("[data-testid='stMain'] [class*='st-key-step_']")
    assert steps.count() >= 1
    for i in range(steps.count()):
        step = steps.nth(i)
        assert step.locator("[data-testid='stPlotlyChart']").count() == 1
        # a caption is a markdown element too: hidden here, and not counted
        said = step.locator("[data-testid='stMarkdown']"
                            ":not(:has([data-testid='stCaptionContainer']))")
        assert said.count() == 1 and said.inner_text().startswith("Look at:")
    main_charts = page.locator("[data-testid='stMain'] [data-testid='stPlotlyChart']")
    assert main_charts.count() == steps.count()   # no chart outside a step
    # the technical notes are hidden and the text is large (polled: the style may land a
    # moment after the run ends)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=\"stMain\"] "
        "[data-testid=\"stCaptionContainer\"]')].every(e => e.offsetParent === null)",
        timeout=10_000)
    page.wait_for_function(
        "() => parseFloat(getComputedStyle(document.querySelector('[data-testid=\"stMain\"] "
        "[data-testid=\"stMarkdownContainer\"] p')).fontSize) >= 22", timeout=10_000)
    screenshot(page, f"presenting_{path or 'welcome'}")
    context.close()
