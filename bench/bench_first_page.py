"""First page in the browser: from navigation to a settled Welcome page, cold server and warm.

Run: ``.venv/bin/python bench/bench_first_page.py`` (needs Debian's chromium; about a minute).
"Cold" starts a new ``streamlit run app.py`` for each run, so the page's first script run
imports the app's modules; "warm" opens the page again in a new browser context on a server
that has served it once. Settled is ``tests/e2e/conftest.py``'s ``wait_for_app`` condition;
the time is the page's own clock (``performance.now()``, 0 at navigation) at the end of the
run that settled it. Prints the five times and their median for each, and the load average.
``--out FILE`` also writes the table there (``bench/results/``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import (  # noqa: E402
    CHROMIUM_ARGS,
    RUN_TRACKER,
    chromium_path,
    running_server,
    wait_for_app,
)

WELCOME = "Epsilon Lab"   # the Welcome page's title, shown once its run has drawn it


def first_page_ms(browser, url: str) -> float:
    """Milliseconds from navigation to the settled Welcome page, in a fresh context."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(RUN_TRACKER)
    try:
        page = context.new_page()
        page.goto(url)
        wait_for_app(page)
        title = page.locator("[data-testid='stMain'] h1").first.inner_text()
        if WELCOME not in title:
            raise RuntimeError(f"not the Welcome page: {title!r}")
        return page.evaluate("() => window.__epsilonRuns.runEnded")
    finally:
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    cold, warm = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        for _ in range(args.repeats):
            with running_server() as url:
                cold.append(first_page_ms(browser, url))
        with running_server() as url:
            first_page_ms(browser, url)
            warm.extend(first_page_ms(browser, url) for _ in range(args.repeats))
        browser.close()
    lines = [f"First page (Welcome) in Chromium, navigation → settled (ms), {args.repeats} runs; "
             f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    for name, times in (("cold server", cold), ("warm server", warm)):
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
