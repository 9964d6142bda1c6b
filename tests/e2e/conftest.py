"""Fixtures for browser tests: a headless streamlit server and Debian's Chromium.

Under CI (``CI=true``) a missing browser is a failure; elsewhere those tests are skipped with
the reason shown.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "tests" / "e2e" / "screenshots"
CHROMIUM_ARGS = [
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage",
]


def _drain(stream, lines: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        lines.append(raw.decode(errors="replace"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def chromium_path() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        message = "Debian's chromium is not installed (apt-get install chromium)"
        if os.environ.get("CI") == "true":
            pytest.fail(message + ": CI must run the browser tests")
        pytest.skip(message)
    return path


@contextlib.contextmanager
def running_server(output: list[str] | None = None, *,
                   settings_from_config_only: bool = False, port: int | None = None,
                   options: Sequence[str] = (),
                   environment: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start the app as ``dev.py run`` does (``serve.py run app.py``: `streamlit run app.py`
    with the first page's modules imported first), headless on a free localhost port; stop
    it afterwards.

    The server's stdout and stderr are read as they come (a full pipe would stall the server)
    and, when ``output`` is given, appended to it line by line: complete once the block exits.
    Usage statistics are switched off by an environment variable too, unless
    ``settings_from_config_only``: then ``.streamlit/config.toml`` alone decides, as for a user.
    ``port`` (default: a free one) and ``options`` (more ``--section.option value``) are for a
    server whose address must be known before it starts (sign-in's redirect address).
    ``environment``: variables set for the server only (its stores' files), over the test
    process's own.
    """
    port = _free_port() if port is None else port
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    if not settings_from_config_only:
        env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    env.update(environment or {})
    proc = subprocess.Popen(
        [sys.executable, "serve.py", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.fileWatcherType", "none", *options],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    lines = output if output is not None else []
    reader = threading.Thread(target=_drain, args=(proc.stdout, lines), daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                reader.join(timeout=5)
                pytest.fail(f"streamlit did not become healthy:\n{''.join(lines)[-3000:]}")
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        reader.join(timeout=10)


#: The files of the shared server's stores that a new session reads back: the saved plans (a
#: new session opens the dataset's most recently saved plan) and the dataset declarations (the
#: same data opened again gets its schema and unit back, issue 32).
SHARED_STORES = (("EPSILON_LAB_PLANS", "plans.sqlite"),
                 ("EPSILON_LAB_DECLARATIONS", "declarations.sqlite"))


@pytest.fixture(scope="session")
def _shared_server(tmp_path_factory) -> Iterator[tuple[str, tuple[Path, ...]]]:
    """One server for the browser tests of a test process, with stores of its own (not the
    files the process's last AppTest was given): its address and those files."""
    folder = tmp_path_factory.mktemp("shared-server")
    stores = {name: folder / file for name, file in SHARED_STORES}
    with running_server(environment={name: str(path) for name, path in stores.items()}) as url:
        yield url, tuple(stores.values())


@pytest.fixture
def server_url(_shared_server) -> str:
    """The shared server, as a first visitor finds it: no saved plan, no kept declarations.

    Each test starts from empty stores, whichever tests ran before it in this process (a
    parallel run deals the files out to its processes as they come free): a plan another test
    saved came back in this test's new session, and a query page then offered "Replace it in
    the plan" instead of "Add to plan" (tests/e2e/test_shared_server_browser.py). The server
    opens its stores' files on every use and creates a removed one afresh (``release.store``,
    ``dashboard.plan_library``). Removed before the test, once the earlier test's browser
    context is closed and its last checks have waited for its runs to end."""
    url, stores = _shared_server
    for path in stores:
        path.unlink(missing_ok=True)
    return url


@pytest.fixture(scope="session")
def browser():
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    yield page
    context.close()


def wait_for_app(page, timeout: float = 60_000) -> None:
    """Wait until the script run triggered by the last action has finished."""
    # A run may not have started yet right after an action: give it a moment to begin.
    page.wait_for_timeout(300)
    page.wait_for_selector(
        "[data-testid='stApp'][data-test-script-state='notRunning']", timeout=timeout
    )
    page.wait_for_timeout(200)


def choose_dataset(page, label: str) -> None:
    """Pick a dataset in the sidebar's selectbox (a combobox with a list of options)."""
    box = page.locator(".st-key-dataset_choice [role='combobox']")
    box.wait_for(timeout=60_000)
    box.click()
    page.get_by_role("option", name=label, exact=True).click()
    wait_for_app(page)


def open_options(page, combobox, timeout: float = 10_000) -> None:
    """Open a selectbox's list of options, clicking again if the first click found the
    widget between two runs of the script (its list then never opens)."""
    option = page.get_by_role("option").first
    for attempt in range(3):
        combobox.click()
        try:
            option.wait_for(timeout=timeout)
            return
        except Exception:
            if attempt == 2:
                raise
            page.keyboard.press("Escape")
            wait_for_app(page)


def open_page(page, title: str) -> None:
    """Open the page called ``title`` from the sidebar's navigation, wait for its run and
    check that it shows no exception."""
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    wait_for_app(page)
    assert_no_exception(page)


def open_path(page, server_url: str, path: str) -> None:
    """Open the page at ``server_url/path`` (a page's address, with its query string if any).

    The root is loaded first: on a fresh server a deep link runs the page file alone until
    app.py has called st.navigation once."""
    page.goto(server_url)
    wait_for_app(page)
    page.goto(f"{server_url}/{path}")
    wait_for_app(page)


def choose_count(page) -> None:
    """On Noisy statistics: choose the Count query."""
    open_options(page, page.locator(".st-key-stats_query [role='combobox']"))
    page.get_by_role("option", name="Count", exact=False).first.click()
    wait_for_app(page)


def add_to_plan(page, button: str = "Add to plan") -> None:
    """Press ``button`` ("Add to plan", or "Add a second" when the plan holds the query
    already) on a query page and wait for "Added to the plan"."""
    # a page that failed says so here, not as a button that never came; under a full run's
    # load a query page on Adult can take longer than a click's default 30 s to draw it
    assert_no_exception(page)
    page.get_by_role("button", name=button).click(timeout=60_000)
    wait_for_app(page)
    assert_no_exception(page)
    page.get_by_text("Added to the plan").wait_for(timeout=60_000)


def release_plan(page) -> None:
    """On the Release plan page: tick the confirmation, press Release and wait for "Released
    and recorded"."""
    page.locator(".st-key-plan_release_confirm label").click()
    wait_for_app(page)
    page.locator(".st-key-plan_release button").click()
    wait_for_app(page)
    assert_no_exception(page)
    page.get_by_text("Released and recorded").wait_for(timeout=60_000)


def settled_box(page, locator) -> dict:
    """``locator``'s bounding box once it has stopped moving (two looks 250 ms apart agree,
    at most 5 s): a run that ends above it, a chart drawn late, or a viewport changed back
    (``screenshot``) shifts or redraws a data editor's grid for a moment, and a click at a
    place computed from a box measured meanwhile lands off the cell meant."""
    box = locator.bounding_box()
    for _ in range(20):
        page.wait_for_timeout(250)
        again = locator.bounding_box()
        if again == box:
            break
        box = again
    return box


def grid_cell(grid, column: int, row: int):
    """A data editor's cell in the grid's accessible table (glide-data-grid draws the cells on
    a canvas and mirrors them there): its text is the cell's value ("true"/"false" for a
    checkbox), ``aria-selected`` says whether it is the selected cell. ``row`` 0 is the first
    row under the header; only the cells in view are mirrored."""
    return grid.locator(f"[data-testid='glide-cell-{column}-{row}']")


def select_grid_cell(page, grid, column: int, row: int, x: float, attempts: int = 3) -> None:
    """Select a (text or number) cell of a data editor by a click ``x`` px from the grid's
    left edge in row ``row`` (rows are 35 px, under a 35 px header), and check that the
    click selected it. The grid is drawn on a canvas, so the click is at a computed place:
    made once the grid has stopped moving and has drawn the cell. Clicked again only when
    the cell is provably not selected (a click on an unselected text cell only selects it,
    so a second one cannot undo the first)."""
    from playwright.sync_api import expect

    cell = grid_cell(grid, column, row)
    cell.wait_for(state="attached", timeout=60_000)
    for attempt in range(attempts):
        box = settled_box(page, grid)
        page.mouse.click(box["x"] + x, box["y"] + 35 + 35 * row + 17)
        try:
            expect(cell).to_have_attribute("aria-selected", "true", timeout=5_000)
        except AssertionError:
            if attempt == attempts - 1:
                raise AssertionError(f"{attempts} clicks did not select the grid's cell "
                                     f"({column}, {row})") from None
            continue
        page.wait_for_timeout(200)
        return


def type_grid_cell(page, grid, row: str, column: str, text: str, rows: tuple,
                   columns: tuple) -> None:
    """Type ``text`` into a data-editor cell: select the cell by keyboard from the first one,
    open its editor, type, press Enter. ``rows`` and ``columns`` name the grid's rows and
    columns in order. The grid is drawn on a canvas, so the first cell is clicked at its
    place (``select_grid_cell``: once the grid has stopped moving, and checked)."""
    select_grid_cell(page, grid, 0, 0, 30)   # first row, first column
    for _ in range(rows.index(row)):
        page.keyboard.press("ArrowDown")
    for _ in range(columns.index(column)):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")   # opens the cell's editor
    page.wait_for_timeout(200)
    page.keyboard.type(text, delay=50)
    page.keyboard.press("Enter")
    page.wait_for_timeout(300)   # no waiting for the run: the next cell is typed meanwhile


def apply_typed_cells(page, grid, cells: list[tuple[str, str, str]], applied: str,
                      rows: tuple, columns: tuple, attempts: int = 3) -> str:
    """Type ``cells`` (row, column, text) into the schema table, press "Apply the
    declarations" and return its success message once it says ``applied``. A browser test
    of something else (a unit kept, a story) uses this: if a keystroke met the grid while a
    run redrew it, the cells are typed and applied again (at most ``attempts`` times); that
    one Apply takes every typed cell is tested without retries in test_schema_editor_browser."""
    said = []
    for _ in range(attempts):
        grid.scroll_into_view_if_needed()
        for row, column, text in cells:
            type_grid_cell(page, grid, row, column, text, rows, columns)
        wait_for_app(page)
        page.get_by_role("button", name="Apply the declarations").click()
        wait_for_app(page)
        done = page.locator("[data-testid='stAlertContentSuccess']").filter(has_text="Applied")
        try:
            done.first.wait_for(timeout=30_000)
        except Exception:
            said.append("(no message)")
            continue
        said.append(done.first.inner_text())
        if applied in said[-1]:
            return said[-1]
    raise AssertionError(f"never applied {applied!r}; the page said {said}")


def assert_no_exception(page) -> None:
    errors = page.locator("[data-testid='stException']")
    assert errors.count() == 0, errors.first.inner_text()


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    # Streamlit scrolls inside its own container, so a full-page screenshot would stop at the
    # viewport: grow the viewport to the content's height for the picture, then restore it.
    size = page.viewport_size
    height = page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('[data-testid=\"stMain\"], "
        "[data-testid=\"stAppViewContainer\"]')].map(e => e.scrollHeight), 0)"
    )
    if size and height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 8000)})
        page.wait_for_timeout(300)
    page.screenshot(path=str(path), full_page=True)
    if size:
        page.set_viewport_size(size)
    return path


@pytest.fixture
def own_server(tmp_path, monkeypatch) -> Iterator[str]:
    """A server of the test's own, with its own saved plans, dataset declarations and ledger
    files: what it declares is not restored in the shared server's later sessions (issue 32:
    the same data opened again gets its kept schema and unit back), nor the reverse."""
    for name, file in (("EPSILON_LAB_PLANS", "plans.sqlite"),
                       ("EPSILON_LAB_DECLARATIONS", "declarations.sqlite"),
                       ("EPSILON_LAB_LEDGER", "ledger.sqlite")):
        monkeypatch.setenv(name, str(tmp_path / file))
    with running_server() as url:
        yield url
