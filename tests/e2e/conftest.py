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
from collections.abc import Iterator
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
                   settings_from_config_only: bool = False) -> Iterator[str]:
    """Start `streamlit run app.py` headless on a free localhost port; stop it afterwards.

    The server's stdout and stderr are read as they come (a full pipe would stall the server)
    and, when ``output`` is given, appended to it line by line: complete once the block exits.
    Usage statistics are switched off by an environment variable too, unless
    ``settings_from_config_only``: then ``.streamlit/config.toml`` alone decides, as for a user.
    """
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMLIT_")}
    if not settings_from_config_only:
        env = {**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.fileWatcherType", "none"],
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


@pytest.fixture(scope="session")
def server_url() -> Iterator[str]:
    """One server shared by the browser tests of a session."""
    with running_server() as url:
        yield url


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
    context.add_init_script(RUN_TRACKER)
    page = context.new_page()
    yield page
    context.close()


#: Installed in every document before the app's own scripts (``add_init_script``): records, on
#: the page's clock, the last user input (or Back/Forward), the last rerun request sent to the
#: server (a BackMsg whose first field is ``rerun_script``, field 11: first byte 0x5A), the last
#: end of a script run (``stApp``'s ``data-test-script-state`` turning ``notRunning``) and the
#: uploads in flight.
RUN_TRACKER = """
(() => {
  if (window.__epsilonRuns) return;
  const runs = window.__epsilonRuns = {
    input: performance.now(), rerunSent: -1, runEnded: -1, heard: -1, uploads: 0,
    settledFrames: 0,
  };
  // popstate: Back and Forward, which the app answers with a run like an input
  for (const type of ["pointerdown", "mousedown", "click", "keydown", "input", "change",
                      "popstate"]) {
    window.addEventListener(type, () => { runs.input = performance.now(); }, true);
  }
  const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data)
      : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, 1) : null;
    if (bytes && bytes.length && bytes[0] === 0x5a) runs.rerunSent = performance.now();
    if (!this.__epsilonHeard) {
      this.__epsilonHeard = true;
      this.addEventListener("message", () => { runs.heard = performance.now(); });
    }
    return send.call(this, data);
  };
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    this.__epsilonUpload = String(url).includes("/_stcore/upload_file");
    return open.call(this, method, url, ...rest);
  };
  const xhrSend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...args) {
    if (this.__epsilonUpload) {
      runs.uploads += 1;
      this.addEventListener("loadend", () => { runs.uploads -= 1; }, {once: true});
    }
    return xhrSend.apply(this, args);
  };
  let state = null;
  const look = () => {
    const app = document.querySelector("[data-testid='stApp']");
    const now = app && app.getAttribute("data-test-script-state");
    if (now !== state && now === "notRunning") runs.runEnded = performance.now();
    state = now;
  };
  look();   // installed late, into a page already loaded
  new MutationObserver(look).observe(document, {subtree: true, childList: true, attributes: true,
                        attributeFilter: ["data-test-script-state"]});
})();
"""

#: How long after the last user input a rerun request may still come (ms): an input that
#: starts no run (a menu opened, a cell selected) counts as settled once this has passed.
INPUT_GRACE_MS = 300

#: How long the server must have sent nothing (ms) for a rerun request answered without a
#: visible change of the script state (a short run whose start and end React shows in one
#: render) to count as done.
QUIET_MS = 250

#: True for the second animation frame in a row in which: the app is connected, no script
#: runs, no upload is in flight, a run ended after the last rerun request (or the server
#: answered it and has been quiet for ``QUIET_MS``), and that request
#: (if the last input made one) was sent, i.e. no rerun is pending.
_SETTLED = """
([grace, quiet]) => {
  const runs = window.__epsilonRuns;
  const app = document.querySelector("[data-testid='stApp']");
  const now = performance.now();
  const settled = !!app
    && app.getAttribute("data-test-script-state") === "notRunning"
    && app.getAttribute("data-test-connection-state") === "CONNECTED"
    && runs.uploads === 0
    && (runs.runEnded > runs.rerunSent
        || (runs.heard > runs.rerunSent && now - runs.heard >= quiet))
    && (runs.rerunSent > runs.input || now - runs.input >= grace);
  runs.settledFrames = settled ? runs.settledFrames + 1 : 0;
  return runs.settledFrames >= 2;
}
"""

_STATE = """
() => {
  const runs = window.__epsilonRuns || {};
  const app = document.querySelector("[data-testid='stApp']");
  const now = performance.now();
  const ago = (t) => t === undefined || t < 0 ? "never" : `${Math.round(now - t)} ms ago`;
  return `script state ${app && app.getAttribute("data-test-script-state")}, connection `
    + `${app && app.getAttribute("data-test-connection-state")}, last input ${ago(runs.input)}, `
    + `last rerun request ${ago(runs.rerunSent)}, last run ended ${ago(runs.runEnded)}, `
    + `last message from the server ${ago(runs.heard)}, `
    + `uploads in flight ${runs.uploads}`;
}
"""


def wait_for_app(page, timeout: float = 60_000) -> None:
    """Wait until the page has settled: the runs the last action asked for have all finished.

    Settled means, for two animation frames in a row: Streamlit connected and running no
    script (``stApp``'s ``data-test-script-state`` is ``notRunning``), no upload in flight, a
    run ended after the last rerun request (or the server answered it and then stayed quiet
    for ``QUIET_MS``), and no rerun still to come from the last input
    (one was sent after it, or ``INPUT_GRACE_MS`` passed without one). Fails after ``timeout``
    ms saying which of these did not hold.
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    if not page.evaluate("() => !!window.__epsilonRuns"):
        # A page from a context without the tracker: install it for this document (a run
        # request already sent is then unseen, so the grace after "input" covers it) and for
        # the next ones.
        page.evaluate(RUN_TRACKER)
        page.add_init_script(RUN_TRACKER)
    try:
        page.wait_for_function(_SETTLED, arg=[INPUT_GRACE_MS, QUIET_MS], polling="raf",
                               timeout=timeout)
    except PlaywrightTimeout:
        state = page.evaluate(_STATE)
        pytest.fail(f"the app did not settle within {timeout / 1000:.0f} s: {state}")


def choose_dataset(page, label: str) -> None:
    """Pick a dataset in the sidebar's selectbox (a combobox with a list of options)."""
    box = page.locator(".st-key-dataset_choice [role='combobox']")
    box.wait_for(timeout=60_000)
    box.click()
    page.get_by_role("option", name=label, exact=True).click()
    wait_for_app(page)


def assert_no_exception(page) -> None:
    errors = page.locator("[data-testid='stException']")
    assert errors.count() == 0, errors.first.inner_text()


#: True once the page has the new viewport's width and the content's size has not changed for
#: two animation frames in a row (charts redraw at the new size on a resize).
_LAID_OUT = """
(width) => {
  const main = document.querySelector("[data-testid='stMain']");
  const size = main ? `${main.scrollWidth}x${main.scrollHeight}` : "";
  const seen = window.__epsilonLayout || {size: null, frames: 0};
  seen.frames = size === seen.size ? seen.frames + 1 : 0;
  seen.size = size;
  window.__epsilonLayout = seen;
  return window.innerWidth === width && seen.frames >= 2;
}
"""


def wait_for_layout(page, timeout: float = 10_000) -> None:
    """Wait until the page's layout is steady after a change of the viewport's size."""
    page.evaluate("() => { window.__epsilonLayout = undefined; }")
    page.wait_for_function(_LAID_OUT, arg=page.viewport_size["width"], polling="raf",
                           timeout=timeout)


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
        wait_for_layout(page)
    page.screenshot(path=str(path), full_page=True)
    if size:
        page.set_viewport_size(size)
    return path
