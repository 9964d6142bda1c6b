"""Load benchmark: rerun times with 1, 2, 4 and 8 browser sessions working at once.

Run: ``.venv/bin/python bench/bench_load.py [--sessions 1 2 4 8]`` (needs Debian's chromium).
Each session does what ``tests/e2e/test_load_browser.py`` does, on one fresh server per row.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import running_server  # noqa: E402
from tests.e2e.test_load_browser import plan, scenario  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args()
    print("Seconds from an action to its finished run (statistics and selection pages)")
    print(f"{'sessions':>8}{'reruns':>8}{'median':>9}{'worst':>8}{'first load':>12}{'wall':>8}")
    for count in args.sessions:
        sessions = plan(count)
        with running_server() as url:
            start = time.perf_counter()
            asyncio.run(scenario(url, sessions))
            wall = time.perf_counter() - start
        reruns = [t for s in sessions for t in s.reruns.values()]
        loads = [s.first_load for s in sessions]
        print(f"{count:>8}{len(reruns):>8}{statistics.median(reruns):>9.2f}{max(reruns):>8.2f}"
              f"{statistics.median(loads):>12.2f}{wall:>8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
