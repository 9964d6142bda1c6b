"""Every benchmark in one run: sampling, selection Monte Carlo, page reruns, in that order.

Run: ``.venv/bin/python bench/run_all.py`` (several minutes; ``--quick`` skips the pages).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ("bench_sampling.py", "bench_selection.py", "bench_pages.py")


def main(argv: list[str]) -> int:
    scripts = SCRIPTS[:2] if "--quick" in argv else SCRIPTS
    for script in scripts:
        print(f"\n=== {script} ===", flush=True)
        result = subprocess.run([sys.executable, str(HERE / script)], cwd=HERE.parent)
        if result.returncode:
            return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
