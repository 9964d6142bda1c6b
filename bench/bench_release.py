"""Releasing for real: the Adult example plan (``python -m release --example-plan``) released
in the app (AppTest: the plan imported on the Release plan page, then "Release"), in-process
(``release.run``) and from the command line; with ``--big``, a plan of the same shape (a
count, a histogram, a clamped sum, a table) on the 10^8-row Parquet file of
``bench_engine.py`` with DuckDB and with Spark local mode (for the record).

Run: ``.venv/bin/python bench/bench_release.py [--big] [--spark-rows N]``. Every release goes
to a ledger in a temporary folder. Wall-clock seconds (a release is one-off work, timed end to
end); the CLI's time includes starting Python and importing OpenDP.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engine.sources import FileSource  # noqa: E402
from plan import model  # noqa: E402
from plan.examples import ADULT_PATH, adult_plan  # noqa: E402
from release import Ledger, run  # noqa: E402


def in_process(ledger_path: Path, repeats: int = 3) -> float:
    plan = adult_plan()
    times = []
    with Ledger(ledger_path) as ledger:
        for _ in range(repeats):
            start = time.perf_counter()
            run(plan, FileSource(ADULT_PATH, "csv"), ledger=ledger)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def cli(folder: Path, plan_path: Path, data: Path, env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "release", "--plan", str(plan_path), "--data", str(data),
         "--ledger", str(folder / "cli.sqlite"), "--out", str(folder / "out")],
        cwd=ROOT, capture_output=True, text=True, env={**os.environ, **(env or {})})
    elapsed = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"the CLI failed: {result.stderr.strip()}")
    return elapsed


def in_the_app(folder: Path) -> float:
    from tests.conftest import open_app

    os.environ["EPSILON_LAB_LEDGER"] = str(folder / "app.sqlite")
    plan = adult_plan(pin=False)
    at = open_app("plan.py")
    at.file_uploader(key="plan_import").set_value(("plan.json", plan.to_json().encode(),
                                                    "application/json")).run()
    at.checkbox(key="plan_release_confirm").check().run()
    start = time.perf_counter()
    at.button(key="plan_release").click().run()
    elapsed = time.perf_counter() - start
    assert not at.exception, [e.value for e in at.exception]
    assert any("Released and recorded" in s.value for s in at.success), \
        [e.value for e in at.error]
    return elapsed


def big_plan() -> model.Plan:
    regions = model.Categories(tuple(f"region {i:02d}" for i in range(12)), "public")
    sexes = model.Categories(("F", "M"), "public")
    laplace = model.Noise("laplace", "pure", epsilon=0.5)
    return model.Plan(model.Dataset("bench 1e8"), (
        model.PlanQuery("rows", "Rows", model.Count(), laplace),
        model.PlanQuery("regions", "By region", model.Histogram("region", regions),
                        model.Noise("geometric", "pure", epsilon=0.5)),
        model.PlanQuery("income", "Total income", model.Sum(
            "income", model.Bounds(0.0, 250_000.0, "public")), laplace),
        model.PlanQuery("table", "Sex by region", model.Crosstab("sex", "region", sexes,
                                                                 regions),
                        model.Noise("geometric", "pure", epsilon=0.5))))


def big(folder: Path, spark_rows: int) -> None:
    from bench.bench_engine import bench_dir, generate

    plan_path = folder / "big-plan.json"
    plan_path.write_text(big_plan().to_json(), encoding="utf-8")
    path = generate(bench_dir() / "people_1e8.parquet", 10**8)
    print(f"10^8 rows, DuckDB (CLI): {cli(folder, plan_path, path):.1f} s")
    small = path if spark_rows == 10**8 else generate(
        bench_dir() / f"people_{spark_rows}.parquet", spark_rows)
    spark = {"EPSILON_LAB_ENGINE": "spark", "EPSILON_LAB_SPARK": "local[2]"}
    print(f"{spark_rows:,} rows, Spark local[2] (CLI): "
          f"{cli(folder, plan_path, small, spark):.1f} s")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--spark-rows", type=int, default=10**8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        plan_path = folder / "plan.json"
        plan_path.write_text(adult_plan().to_json(), encoding="utf-8")
        print(f"Adult example plan ({len(adult_plan().queries)} queries, 48,842 rows):")
        print(f"  in the app (AppTest, the Release click): {in_the_app(folder):.2f} s")
        print(f"  in-process release.run, median of 3: {in_process(folder / 'run.sqlite'):.2f} s")
        print(f"  command line (python -m release, wall): "
              f"{cli(folder, plan_path, ADULT_PATH):.2f} s")
        if args.big:
            big(folder, args.spark_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
