"""The release package (``release.package``) of the Adult example plan: the time to build it
(report.html and the notebook included) the first time in a process (imports of nbformat
and the Welcome page's sentence included) and then (median of 5), and the sizes of the zip
and of report.html. The release itself (``release.run``) is not timed here
(``bench_release.py``).

Run: ``.venv/bin/python bench/bench_package.py``. The release goes to a ledger in a
temporary folder. Wall-clock seconds.
"""

from __future__ import annotations

import io
import statistics
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.sources import FileSource  # noqa: E402
from plan.examples import ADULT_PATH, adult_plan  # noqa: E402
from release import Ledger, run  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory() as folder, Ledger(Path(folder) / "l.sqlite") as ledger:
        release = run(adult_plan(), FileSource(ADULT_PATH, "csv"), ledger=ledger)
    start = time.perf_counter()
    from release.package import release_package

    data = release_package(release)
    first = time.perf_counter() - start
    times = []
    for _ in range(5):
        start = time.perf_counter()
        release_package(release)
        times.append(time.perf_counter() - start)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
    print(f"package of the Adult example plan: first build {first:.2f} s (imports included), "
          f"then {statistics.median(times):.3f} s (median of 5)")
    print(f"zip {len(data) / 1024:.1f} KiB; report.html {sizes['report.html'] / 1024:.1f} KiB "
          f"({len(sizes)} files: " + ", ".join(f"{k} {v / 1024:.1f} KiB"
                                                for k, v in sizes.items()) + ")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
