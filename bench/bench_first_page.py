"""First page in the browser: from navigation to a drawn Welcome page, cold server and warm,
and from the server's start to the drawn page.

Run: ``.venv/bin/python bench/bench_first_page.py`` (needs Debian's chromium; about a minute).
"Cold" starts a new server for each run as ``dev.py run`` does (``serve.py``: the first page's
modules imported before the server listens, then the page's first script run); "warm" opens the
page again in a new browser context on a server that has served it once. The time is the page's
own clock (``performance.now()``, 0 at navigation) at the first moment the Welcome page's title
and its attacker sentence are drawn and no script run is in progress, polled every animation
frame. "Start" is what a demo waits for after ``dev.py run``: from launching the server to the
drawn page, the browser arriving as soon as the server answers (its health checked every
50 ms). Prints the times and their median for each, and the load average. ``--out FILE`` also
appends the table there.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import _free_port, chromium_path, running_server  # noqa: E402

#: True once the Welcome page is drawn and no run is in progress; then the page's clock.
DRAWN = """() => {
  const app = document.querySelector("[data-testid='stApp']");
  const title = document.querySelector("[data-testid='stMain'] h1");
  const text = document.querySelector("[data-testid='stMain']")?.innerText || "";
  return app && app.dataset.testScriptState === "notRunning" && title
      && title.innerText.includes("Epsilon Lab") && text.includes("What an attacker can learn")
      ? performance.now() : null;
}"""


def first_page_ms(browser, url: str) -> float:
    """Milliseconds from navigation to the drawn Welcome page, in a fresh context."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        page.goto(url)
        return float(page.wait_for_function(DRAWN, polling="raf", timeout=120_000).json_value())
    finally:
        context.close()


def start_to_drawn_ms(browser) -> float:
    """Milliseconds from launching ``serve.py`` (as ``dev.py run`` does) to the drawn Welcome
    page, the browser navigating as soon as the server's health check answers."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "serve.py", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port),
         "--server.fileWatcherType", "none"], cwd=ROOT,
        env={**os.environ, "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as response:
                    if response.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.perf_counter() - started > 120:
                raise RuntimeError("the server did not start")
            time.sleep(0.05)
        answered = time.perf_counter()
        return (answered - started) * 1000 + first_page_ms(browser, url)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    cold, warm, start = [], [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path())
        for _ in range(args.repeats):
            with running_server() as url:
                cold.append(first_page_ms(browser, url))
            start.append(start_to_drawn_ms(browser))
        with running_server() as url:
            first_page_ms(browser, url)
            warm.extend(first_page_ms(browser, url) for _ in range(args.repeats))
        browser.close()
    lines = [f"First page (Welcome) in Chromium, navigation → drawn (ms), {args.repeats} runs; "
             f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    for name, times in (("cold server", cold), ("warm server", warm),
                        ("start → drawn", start)):
        runs = " ".join(f"{t:6.0f}" for t in times)
        lines.append(f"{name:<12} median {statistics.median(times):6.0f}   runs {runs}")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as out:
            out.write(text + "\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
