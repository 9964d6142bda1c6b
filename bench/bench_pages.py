"""Page benchmark: AppTest run time of every page with defaults and after moving epsilon.

Run: ``.venv/bin/python bench/bench_pages.py`` (median of 5; prints a table). Each "after
moving ε" run sets the page's ε to a value not simulated before, so its cached work is redone;
``--root`` points at another checkout to compare before/after in the same environment.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

# page file → (ε widget key, values to move it through); None where a page has no ε
PAGES = {
    "home.py": None,
    "data.py": None,
    "statistics.py": ("stats_epsilon", [0.012, 0.15, 2.7, 0.056, 8.2, 0.33]),
    "tables.py": ("tables_epsilon", [0.012, 0.15, 2.7, 0.056, 8.2, 0.33]),
    "selection.py": ("sel_pure_level", [0.012, 0.15, 2.7, 0.056, 8.2, 0.33]),
    "choose_epsilon.py": ("choose_epsilon", [0.012, 0.15, 2.7, 0.056, 8.2, 0.33]),
    "plan.py": None,
    "releases.py": None,
    "learning.py": ("learning_epsilon", None),
}


def _timed_run(at) -> float:
    start = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - start
    if at.exception:
        raise RuntimeError([e.value for e in at.exception])
    return elapsed


def bench_page(root: Path, page_dir: str, page: str, repeats: int) -> tuple[float, float | None]:
    from streamlit.testing.v1 import AppTest

    defaults, moved = [], []
    spec = PAGES[page]
    for i in range(repeats):
        at = AppTest.from_file(str(root / "app.py"), default_timeout=300)
        at.run()
        at.switch_page(f"{page_dir}/{page}")
        defaults.append(_timed_run(at))
        if spec is None:
            continue
        key, values = spec
        slider = at.select_slider(key=key)
        options = values or [float(o) for o in slider.options if float(o) != slider.value]
        value = options[i % len(options)]
        slider.set_value(type(slider.value)(value) if not isinstance(value, str) else value)
        moved.append(_timed_run(at))
    return statistics.median(defaults), (statistics.median(moved) if moved else None)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    root = args.root.resolve()
    sys.path.insert(0, str(root))
    page_dir = "app_pages" if (root / "app_pages").is_dir() else "pages"
    print(f"AppTest run time per page, median of {args.repeats} (s); root {root}")
    print(f"{'page':<20}{'defaults':>10}{'after moving ε':>16}")
    for page in PAGES:
        default, moved = bench_page(root, page_dir, page, args.repeats)
        moved_text = "—" if moved is None else f"{moved:.3f}"
        print(f"{page:<20}{default:>10.3f}{moved_text:>16}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
