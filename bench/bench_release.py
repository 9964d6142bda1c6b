"""Releasing for real: the Adult example plan (``python -m release --example-plan``) released
in the app (AppTest: the plan imported on the Release plan page, then "Release"), in-process
(``release.run``) and from the command line; with ``--big``, a plan of the same shape (a
count, a histogram, a clamped sum, a table) on the 10^8-row Parquet file of
``bench_engine.py`` with DuckDB and with Spark local mode (for the record).

With ``--measured 1e6,1e7`` (issue 20's target): a real release of a count, a 12-region
histogram and a clamped sum under a 5-rows-per-person unit (``release.run``, DuckDB), against
the same three aggregates typed into DuckDB's SQL with one ``row_number()`` per person per
aggregate, and against OpenDP's Polars Context on the same work (when polars is importable), on
the CSV and the Parquet file; the figures go to ``bench/results/release_measured.txt``.
Issue 37 adds the floor (one statement: each person's rows ranked once, one scan with
``GROUPING SETS``), the identity digest alone, and a second release of the same file in a
fresh process's state (its identity remembered beside the ledger: ``release.identities``);
every line gives its ratio to the floor in CPU time.

Run: ``.venv/bin/python bench/bench_release.py [--big] [--spark-rows N] [--measured ROWS]``.
Every release goes to a ledger in a temporary folder. Wall-clock seconds (a release is one-off
work, timed end to end); the CLI's time includes starting Python and importing OpenDP.
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


MEASURED_K = 5  # rows per person in the measured plan
#: DuckDB's SQL ran out of 1 GB (the engine's limit) at 10^7 rows, spilling or not, and of
#: 2 GB at 10^7 CSV rows (load 8); BENCH_SQL_MEMORY=6GB ran (the release keeps 1 GB)
SQL_MEMORY = os.environ.get("BENCH_SQL_MEMORY", "1GB")
REGIONS = tuple(f"region {i:02d}" for i in range(12))


def measured_plan() -> model.Plan:
    """Issue 20's measured release: a count, a 12-region histogram and a clamped sum under a
    5-rows-per-person unit (the columns of ``bench_engine.generate``)."""
    laplace = model.Noise("laplace", "pure", epsilon=0.5)
    return model.Plan(model.Dataset("bench measured"), (
        model.PlanQuery("rows", "Rows", model.Count(), laplace),
        model.PlanQuery("regions", "By region", model.Histogram(
            "region", model.Categories(REGIONS, "public")),
            model.Noise("geometric", "pure", epsilon=0.5)),
        model.PlanQuery("income", "Total income", model.Sum(
            "income", model.Bounds(0.0, 250_000.0, "public")), laplace)),
        privacy_unit=model.PrivacyUnit("person", MEASURED_K))


def _duckdb_sql(path: Path) -> None:
    """The same three aggregates typed into DuckDB: each truncated by one ``row_number()``
    per person (ordered by DuckDB's 64-bit hash of the row's values: an md5 ran out of
    memory at 10^7 rows under the engine's 1 GB), DuckDB's own CSV reader and types."""
    import duckdb

    src = (f"read_parquet('{path}')" if path.suffix == ".parquet"
           else f"read_csv('{path}', header = true)")

    def kept(where: str, *cols: str) -> str:
        listed = "".join(f", {c}" for c in cols)
        return (f"(SELECT person{listed}, row_number() OVER (PARTITION BY person ORDER BY "
                f"hash(person, sex, region, income)) AS r FROM {src} "
                f"WHERE person IS NOT NULL{where}) t WHERE r <= {MEASURED_K}")

    with tempfile.TemporaryDirectory(prefix="bench-sql-") as spill:
        con = duckdb.connect(config={"memory_limit": SQL_MEMORY, "temp_directory": spill})
        con.execute(f"SELECT count(*) FROM {kept('')}").fetchall()
        con.execute("SELECT region, count(*) FROM "
                    f"{kept(' AND region IN ' + str(REGIONS), 'region')} GROUP BY region"
                    ).fetchall()
        con.execute("SELECT sum(greatest(least(income, 250000.0), 0.0)) FROM "
                    f"{kept(' AND income IS NOT NULL', 'income')}").fetchall()
        con.close()


def _one_pass_sql(path: Path) -> None:
    """The floor (issue 37): one statement, each person's rows ranked once by a hash and the
    first 5 kept, then the count, the 12-region histogram and the clamped sum from one scan
    (``GROUPING SETS``)."""
    import duckdb

    src = (f"read_parquet('{path}')" if path.suffix == ".parquet"
           else f"read_csv('{path}', header = true)")
    regions = ", ".join(f"'{r}'" for r in REGIONS)
    with tempfile.TemporaryDirectory(prefix="bench-sql-") as spill:
        con = duckdb.connect(config={"memory_limit": SQL_MEMORY, "temp_directory": spill})
        con.execute(f"""
            SELECT CASE WHEN region IN ({regions}) THEN region END AS cell, count(*),
                   sum(greatest(least(coalesce(income, 0.0), 250000.0), 0.0))
            FROM (SELECT region, income, row_number() OVER (PARTITION BY person ORDER BY
                         hash(person, sex, region, income)) AS r
                  FROM {src} WHERE person IS NOT NULL) t
            WHERE r <= {MEASURED_K}
            GROUP BY GROUPING SETS ((), (cell))""").fetchall()
        con.close()


def _aggregates_alone(plan: model.Plan, path: Path, fmt: str, *, together: bool) -> None:
    """The engine's part of a release (issue 37, items 2 and 3): the true aggregates of the
    plan's engine queries, by a fresh DuckDB engine (nothing cached), under the unit's one
    truncation: one query at a time (each ranks every person's rows again) or, ``together``,
    as a release asks for them (``Engine.answer_many``: one ranking for the plan). In
    ``bench_engine.generate``'s table the rows per person vary (about Poisson(4): a fifth
    of the people have more than 5), so max rows bites."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend
    from plan.build import build_plan

    engine, source = Engine(DuckDBBackend()), FileSource(path, fmt)
    queries = [query for built in build_plan(plan) for query in built.engine_queries]
    if together:
        engine.answer_many(source, queries)
        return
    for query in queries:
        engine.answer(source, query)


def _identity_alone(path: Path, fmt: str) -> None:
    """The dataset's identity digest read from every cell (nothing remembered)."""
    from plan import identity

    identity._digest_cache.clear()
    identity.content_digest(FileSource(path, fmt))


def _release_as_a_new_process(plan: model.Plan, path: Path, fmt: str, ledger_path: Path,
                              engine) -> None:
    """A release in a process that has identified nothing yet (the in-process cache emptied):
    whatever it does not read again comes from the identities beside ``ledger_path``."""
    from plan import identity

    identity._digest_cache.clear()
    with Ledger(ledger_path) as ledger:
        run(plan, FileSource(path, fmt), ledger=ledger, engine=engine)


def _settled(path: Path) -> None:
    """Wait until the file is older than the identity's racy window (a file written moments
    ago is never remembered: plan.identity.RACY_SECONDS)."""
    from plan.identity import RACY_SECONDS

    info = path.stat()
    age = time.time() - max(info.st_mtime, info.st_ctime)
    if age < RACY_SECONDS:
        time.sleep(RACY_SECONDS - age + 0.1)


def _polars_context(path: Path, rows: int) -> None:
    """The same release with OpenDP's Polars Context at equal noise (issue 37, item 5): one id
    per person and ``truncate_per_group(5)`` (count and histogram noise scale 10, sum 2.5e6,
    as the release's; ``contributions=5`` read as five ids per person gave five times the
    sensitivity), and a public ``max_length`` just above the table's ``rows`` (``10**9`` made
    the float sum's scale 93,818 per unit of bound)."""
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    frame = pl.scan_parquet(path) if path.suffix == ".parquet" else pl.scan_csv(path)
    context = dp.Context.compositor(
        data=frame, privacy_unit=dp.unit_of(contributions=1, identifier=pl.col("person")),
        privacy_loss=dp.loss_of(epsilon=1.5), split_evenly_over=3,
        margins=[dp.polars.Margin(by=[], max_length=rows + rows // 100)])
    context.query().truncate_per_group(MEASURED_K).select(dp.len()).release().collect()
    context.query().truncate_per_group(MEASURED_K).group_by("region").agg(dp.len()).with_keys(
        pl.LazyFrame({"region": list(REGIONS)})).release().collect()
    context.query().truncate_per_group(MEASURED_K).select(
        pl.col("income").fill_null(0.0).dp.sum((0.0, 250_000.0))).release().collect()


def _timed(work, *args, **kwargs) -> str:
    """Wall and CPU seconds of one call (all of this process's threads: DuckDB's, Polars'),
    and the machine's load before it (the CPU time is the steadier figure on a shared
    machine)."""
    load = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    work(*args, **kwargs)
    return f"{time.perf_counter() - wall:7.2f} s wall {time.process_time() - cpu:7.2f} s CPU " \
           f"(load {load:.1f})"


def _cpu(timed: str) -> float:
    return float(timed.split(" s wall ")[1].split(" s CPU")[0])


def measured(folder: Path, sizes: list[int], out: Path,
             formats: tuple[str, ...] = ("csv", "parquet"),
             methods: tuple[str, ...] = ("floor", "digest", "release", "known", "sql",
                                         "polars")) -> None:
    """Seconds of the measured release (a first one, then one whose file's identity is
    remembered beside the ledger, each as a new process would run it), the identity digest
    alone, the one-pass SQL floor, DuckDB's SQL per query and the Polars Context, per file
    (the ratios in CPU time), printed and appended to ``out`` as each is measured."""
    import importlib.util

    import duckdb

    from bench.bench_engine import bench_dir, generate
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend

    polars = importlib.util.find_spec("polars") is not None
    plan = measured_plan()
    for rows in sizes:
        parquet = generate(bench_dir() / f"people_{rows}.parquet", rows)
        csv = parquet.with_suffix(".csv")
        if not csv.exists():
            duckdb.connect().execute(
                f"COPY (SELECT * FROM read_parquet('{parquet}')) TO '{csv}' (HEADER)")
        for path, fmt in ((csv, "csv"), (parquet, "parquet")):
            if fmt not in formats:
                continue

            def record(what: str, timed: str, mine: str | None = None) -> None:
                ratio = "" if mine is None else \
                    f": release.run/this {_cpu(mine) / _cpu(timed):.2f}x CPU"
                if floor is not None and "floor" not in what:  # noqa: B023
                    ratio += f", this/floor {_cpu(timed) / _cpu(floor):.2f}x CPU"  # noqa: B023
                line = f"{rows:.0e} rows {fmt:7} {what:22} {timed}{ratio}"  # noqa: B023
                print(line, flush=True)
                with open(out, "a", encoding="utf-8") as results:
                    results.write(f"{line}\n")

            _settled(path)
            floor = ours = None
            if "floor" in methods:
                floor = _timed(_one_pass_sql, path)
                record("one-pass SQL (floor)", floor)
            if "aggregates" in methods:
                record("aggregates per query", _timed(_aggregates_alone, plan, path, fmt,
                                                      together=False))
                record("aggregates together", _timed(_aggregates_alone, plan, path, fmt,
                                                     together=True))
            if "digest" in methods:
                record("identity digest alone", _timed(_identity_alone, path, fmt))
            ledger_path = folder / f"measured-{rows}-{fmt}.sqlite"
            if "release" in methods:
                ours = _timed(_release_as_a_new_process, plan, path, fmt, ledger_path,
                              Engine(DuckDBBackend()))
                record("release.run (first)", ours)
            if "known" in methods:
                record("release.run (known)", _timed(
                    _release_as_a_new_process, plan, path, fmt, ledger_path,
                    Engine(DuckDBBackend())))
            if "sql" in methods:
                record("DuckDB SQL", _timed(_duckdb_sql, path), ours)
            if polars and "polars" in methods:
                record("Polars Context", _timed(_polars_context, path, rows), ours)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--spark-rows", type=int, default=10**8)
    parser.add_argument("--measured", help="row counts, e.g. 1e6,1e7: only issue 20's "
                        "measured release (see above)")
    parser.add_argument("--formats", default="csv,parquet", help="with --measured")
    parser.add_argument("--methods", default="floor,digest,release,known,sql,polars",
                        help="with --measured: floor (one-pass SQL), aggregates (the "
                        "engine's true aggregates alone, one query at a time and together "
                        "as a release asks for them), digest (the identity "
                        "alone), release (a first release), known (a release of a file whose "
                        "identity is remembered, in a fresh process's state), sql, polars")
    args = parser.parse_args(argv)
    if args.measured:
        sizes = [int(float(n)) for n in args.measured.split(",")]
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        results = ROOT / "bench" / "results"
        results.mkdir(exist_ok=True)
        with open(results / "release_measured.txt", "a", encoding="utf-8") as out:
            out.write(f"# {stamp}, commit {commit}, bench/bench_release.py --measured "
                      f"{args.measured} --formats {args.formats} --methods {args.methods}, "
                      f"{os.cpu_count()} cores, DuckDB SQL memory {SQL_MEMORY}\n")
        with tempfile.TemporaryDirectory() as tmp:
            measured(Path(tmp), sizes, results / "release_measured.txt",
                     tuple(args.formats.split(",")), tuple(args.methods.split(",")))
        return 0
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
