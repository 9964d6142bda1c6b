"""The teaching flow in a real browser (issue 35): a new session opens on the class of 30 and
says what to look at; a round of the attacker game is played and scored; Adult is one click
away. On a server of its own: the shared one fixes Adult for the tests written on it."""

from __future__ import annotations

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


@pytest.mark.parametrize("path", ["", "statistics", "selection", "choose_epsilon", "attacker"])
def test_presentation_mode_per_teaching_page(page, teaching_server, path):
    page.goto(f"{teaching_server}/{path}?present=True")
    wait_for_app(page)
    assert_no_exception(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg, h1", timeout=30_000)
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
