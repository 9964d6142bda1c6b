"""Hostile names in a real browser (tests/hostile.py): on the Data page and the Noisy
statistics page, the visible text holds each shown name verbatim (no link, image, markup,
emoji, icon or dash made of it), the person-id list offers the raw column names, and no
link leads off the server.

The text is compared without the invisible word joiners that break up what Streamlit
would rewrite (dashes, autolinks, icons): they are not seen.
"""

from __future__ import annotations

import pytest

from tests import hostile
from tests.e2e.conftest import (
    assert_no_exception,
    choose_dataset,
    open_options,
    running_server,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e

#: Every link and image of the page whose target is not this server, as "tag url".
OFF_SERVER = """() => [...document.querySelectorAll('a, img, image, iframe, link, script')]
    .map(e => [e.tagName, e.getAttribute('href') || e.getAttribute('xlink:href')
               || e.getAttribute('src') || ''])
    .filter(([, u]) => u && !u.startsWith('#') && !u.startsWith('data:')
            && !u.startsWith('blob:') && new URL(u, location.href).origin !== location.origin)
    .map(([t, u]) => t + ' ' + u)"""


@pytest.fixture
def hostile_server(tmp_path, monkeypatch):
    choice, _ = hostile.write_folder(tmp_path)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    with running_server() as url:
        yield url, choice


def visible(page, selector: str = "body") -> str:
    return page.inner_text(selector).replace(hostile.WORD_JOINER, "")


def check_page(page, names: tuple[str, ...]) -> None:
    assert_no_exception(page)
    text = visible(page)
    for name in names:
        assert name in text, name
    assert page.evaluate(OFF_SERVER) == []
    # nothing of the names became markup, an emoji or an icon
    main = page.locator("[data-testid='stMain'], [data-testid='stSidebar']")
    assert main.locator("[data-testid='stMarkdownContainer'] :is(b, i, img, h1, em, code)"
                        ).filter(has_text="bold").count() == 0
    assert page.locator("[data-testid='stMarkdownContainer'] .katex").count() == 0


def test_hostile_names_show_verbatim_and_link_nowhere(page, hostile_server):
    url, choice = hostile_server
    page.goto(url)
    wait_for_app(page)
    label = f"{choice.removeprefix('file:')} · data folder"
    choose_dataset(page, label)
    file_name = choice.removeprefix("file:")
    check_page(page, (file_name,))

    page.locator("[data-testid='stSidebarNav'] a", has_text="Data").first.click()
    wait_for_app(page)
    check_page(page, (file_name, hostile.SCHEMA_SOURCE, *hostile.CATEGORICAL[:2]))
    person = page.locator("[data-testid='stSelectbox']", has_text="Person-id column")
    person.scroll_into_view_if_needed()
    page.wait_for_timeout(500)
    wait_for_app(page)
    open_options(page, person.locator("[role='combobox']"))
    options = page.get_by_role("option").all_inner_texts()
    assert options == ["One row = one person", *hostile.frame().columns]
    page.get_by_role("option", name="patient_id", exact=True).click()
    wait_for_app(page)
    assert "patient_id" in visible(page, "[data-testid='stMain']")
    assert "patient\\_id" not in visible(page)
    check_page(page, (file_name,))
    screenshot(page, "hostile_names_data")

    page.locator("[data-testid='stSidebarNav'] a", has_text="Noisy statistics").first.click()
    wait_for_app(page)
    page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=30_000)
    check_page(page, (file_name, hostile.CATEGORICAL[0]))
    screenshot(page, "hostile_names_statistics")
