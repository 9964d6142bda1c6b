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


#: The two tables of issue 37's goals: ``varying`` is ``bench_engine.generate``'s (each row's
#: person drawn among rows/4: about Poisson(4) rows each, 22% of people above 5 rows, 10% of
#: the rows past a person's 5th), ``exact`` the same columns with exactly 5 rows per person
#: (person = row number mod rows/5: each person's rows spread over the whole file).
TABLES = ("varying", "exact")


def generate_exact(path: Path, rows: int) -> Path:
    """A Parquet file of ``rows`` rows, exactly 5 per person, the columns of
    ``bench_engine.generate`` (written by DuckDB out of core); reused."""
    import duckdb

    if path.exists():
        return path
    print(f"generating {path} ({rows:,} rows, 5 per person) ...", flush=True)
    partial = path.with_suffix(".partial")
    con = duckdb.connect(config={"memory_limit": "2GB",
                                 "temp_directory": str(path.parent / "duckdb-tmp")})
    con.execute(f"""
        COPY (
          SELECT
            CAST(i % {max(rows // MEASURED_K, 1)} AS BIGINT) AS person,
            CASE WHEN hash(i, 2) % 2 = 0 THEN 'F' ELSE 'M' END AS sex,
            'region ' || lpad(CAST(hash(i, 3) % 10 AS VARCHAR), 2, '0') AS region,
            CASE WHEN hash(i, 4) % 50 = 0 THEN NULL
                 ELSE round(exp(10 + 1.2 * ((hash(i, 5) % 1000000) / 1e6 - 0.5) * 4), 2)
            END AS income
          FROM range({rows}) t(i)
        ) TO '{partial}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)
    """)
    con.close()
    partial.rename(path)
    return path


def table_files(table: str, rows: int) -> tuple[Path, Path]:
    """(CSV, Parquet) of ``table`` (:data:`TABLES`) at ``rows`` rows, made on first use."""
    import duckdb

    from bench.bench_engine import bench_dir, generate

    parquet = (generate(bench_dir() / f"people_{rows}.parquet", rows) if table == "varying"
               else generate_exact(bench_dir() / f"people_exact5_{rows}.parquet", rows))
    csv = parquet.with_suffix(".csv")
    if not csv.exists():
        partial = csv.with_suffix(".csv.partial")
        duckdb.connect().execute(
            f"COPY (SELECT * FROM read_parquet('{parquet}')) TO '{partial}' (HEADER)")
        partial.rename(csv)
    return csv, parquet


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


def _polars_queries(path: Path, rows: int) -> list:
    """The release's three queries in OpenDP's Polars Context at equal noise (issue 37, item
    5): one id per person and ``truncate_per_group(5)`` (count and histogram noise scale 10,
    sum 2.5e6, as the release's; ``unit_of(contributions=5, identifier=person)``, read as
    five ids per person, gave five times the sensitivity), and a public ``max_length`` just
    above the table's ``rows`` (``10**9`` made the float sum's scale 93,818 per unit of
    bound). :func:`_equal_noise` checks the scales against the release's."""
    import warnings

    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    frame = pl.scan_parquet(path) if path.suffix == ".parquet" else pl.scan_csv(path)
    context = dp.Context.compositor(
        data=frame, privacy_unit=dp.unit_of(contributions=1, identifier=pl.col("person")),
        privacy_loss=dp.loss_of(epsilon=1.5), split_evenly_over=3,
        margins=[dp.polars.Margin(by=[], max_length=rows + rows // 100)])
    with warnings.catch_warnings():  # dp.len()'s default (counts clamped at zero) is to change
        warnings.simplefilter("ignore", FutureWarning)
        return [
            context.query().truncate_per_group(MEASURED_K).select(dp.len()),
            context.query().truncate_per_group(MEASURED_K).group_by("region").agg(
                dp.len()).with_keys(pl.LazyFrame({"region": list(REGIONS)})),
            context.query().truncate_per_group(MEASURED_K).select(
                pl.col("income").fill_null(0.0).dp.sum((0.0, 250_000.0)))]


def _polars_context(path: Path, rows: int) -> None:
    """The same release with OpenDP's Polars Context at equal noise (:func:`_polars_queries`)."""
    for query in _polars_queries(path, rows):
        query.release().collect()


#: How far OpenDP's Polars sum's scale may sit above the release's: its float sum is
#: accounted with the rounding of ``max_length`` additions, an allowance that grows with the
#: table (2.50023e6 for the release's 2.5e6 at 10^6 rows, 2.52265e6 at 10^7). The count's and
#: the histogram's scales are equal.
SCALE_SLACK = 0.02


def _equal_noise(path: Path, rows: int) -> str:
    """The noise scales of the count, the histogram and the sum: the release's (OpenDP's
    scale of each part, ``release.run.prepare``) and the Polars Context's (its
    ``summarize()``), checked equal (the sum's within :data:`SCALE_SLACK`): a comparison at
    unequal noise would not be one."""
    from release.run import prepare

    ours = [c.opendp_scale for certified in prepare(measured_plan()).certified
            for c in certified]
    theirs = [float(query.summarize()["scale"][0]) for query in _polars_queries(path, rows)]
    for name, mine, other in zip(("count", "histogram", "sum"), ours, theirs, strict=True):
        if not mine <= other <= mine * (1 + SCALE_SLACK):
            raise SystemExit(f"unequal noise: the {name}'s scale is {mine:g} in the release, "
                             f"{other:g} in OpenDP's Polars Context")
    return ", ".join(f"{name} {mine:g} / {other:g}" for name, mine, other in
                     zip(("count", "histogram", "sum"), ours, theirs, strict=True))


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
                                         "polars"),
             tables: tuple[str, ...] = ("varying",)) -> None:
    """Seconds of the measured release (a first one, then one whose file's identity is
    remembered beside the ledger, each as a new process would run it), the identity digest
    alone, the one-pass SQL floor, DuckDB's SQL per query and the Polars Context (its noise
    scales checked equal to the release's first), per table and file (the ratios in CPU
    time), printed and appended to ``out`` as each is measured; then issue 37's goals table,
    side by side."""
    import importlib.util

    polars = importlib.util.find_spec("polars") is not None
    plan = measured_plan()
    goals: list[tuple[str, int, str, dict[str, float]]] = []

    def write(line: str) -> None:
        print(line, flush=True)
        with open(out, "a", encoding="utf-8") as results:
            results.write(f"{line}\n")

    try:
        _measure(folder, sizes, formats, methods, tables, plan, polars, goals, write)
    finally:  # what was measured, even when a later line fails (DuckDB's SQL out of memory)
        write(_goals_table(goals))


def _measure(folder, sizes, formats, methods, tables, plan, polars, goals, write) -> None:
    """The body of :func:`measured`: each line measured, written, and kept in ``goals``."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend

    for rows in sizes:
        for table in tables:
            csv, parquet = table_files(table, rows)
            for path, fmt in ((csv, "csv"), (parquet, "parquet")):
                if fmt not in formats:
                    continue
                cpu: dict[str, float] = {}
                goals.append((table, rows, fmt, cpu))  # filled as each line is measured

                def record(what: str, timed: str, mine: str | None = None) -> None:
                    cpu[what] = _cpu(timed)  # noqa: B023
                    ratio = "" if mine is None else \
                        f": release.run/this {_cpu(mine) / _cpu(timed):.2f}x CPU"
                    if floor is not None and "floor" not in what:  # noqa: B023
                        ratio += f", this/floor {_cpu(timed) / _cpu(floor):.2f}x CPU"  # noqa: B023
                    write(f"{rows:.0e} rows {table:7} {fmt:7} {what:22} {timed}{ratio}")  # noqa: B023

                _settled(path)
                floor = ours = None
                if "floor" in methods:
                    floor = _timed(_one_pass_sql, path)
                    record("one-pass SQL (floor)", floor)
                if "aggregates" in methods:
                    record("aggregates per query", _timed(_aggregates_alone, plan, path, fmt,
                                                          together=False))
                if {"aggregates", "together"} & set(methods):
                    record("aggregates together", _timed(_aggregates_alone, plan, path, fmt,
                                                         together=True))
                if "digest" in methods:
                    record("identity digest alone", _timed(_identity_alone, path, fmt))
                ledger_path = folder / f"measured-{table}-{rows}-{fmt}.sqlite"
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
                    write(f"{rows:.0e} rows {table:7} {fmt:7} noise scales (release / "
                          f"Polars): {_equal_noise(path, rows)}")
                    record("Polars Context", _timed(_polars_context, path, rows), ours)


def _goals_table(goals: list[tuple[str, int, str, dict[str, float]]]) -> str:
    """Issue 37's goals side by side: CPU seconds of the floor, and of each other line its
    ratio to the floor in the same run (goals: known ≤ 1.3×, first ≤ 2×, Polars ÷ first ≥ 3
    at 10^7)."""
    load = os.getloadavg()
    head = ("| table | rows | format | floor CPU s | first release | known identity | "
            "OpenDP Polars (equal noise) | Polars ÷ first |\n|---|---|---|---|---|---|---|---|")
    lines = [f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}", head]

    def ratio(cpu: dict[str, float], what: str) -> str:
        if what not in cpu or "one-pass SQL (floor)" not in cpu:
            return "—"
        return f"{cpu[what] / cpu['one-pass SQL (floor)']:.2f}×"

    for table, rows, fmt, cpu in goals:
        floor = cpu.get("one-pass SQL (floor)")
        speed = (f"{cpu['Polars Context'] / cpu['release.run (first)']:.2f}"
                 if {"Polars Context", "release.run (first)"} <= set(cpu) else "—")
        lines.append(f"| {table} | {rows:.0e} | {fmt} | "
                     f"{'—' if floor is None else f'{floor:.2f}'} | "
                     f"{ratio(cpu, 'release.run (first)')} | {ratio(cpu, 'release.run (known)')} "
                     f"| {ratio(cpu, 'Polars Context')} | {speed} |")
    return "\n".join(lines)


#: Issue 37, item 4: OpenDP's construction of the measured plan's three measurements, typed
#: by hand (``{opendp}`` the import: the core modules, or the prelude the release used to
#: import), and the release's own build (``release.run.prepare``: build, certify, compose).
_RAW_BUILD = """
import time
import numpy, duckdb, pandas  # imported by any release before it builds (untimed)
start = time.process_time()
{opendp}
dp.enable_features("contrib")
count = dp.m.make_laplace(dp.atom_domain(T="float", nan=False), dp.absolute_distance(T="float"),
                          scale=10.0)
cells = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T="i64")), dp.l1_distance(T="i64"),
                          scale=10.0)
total = dp.m.make_laplace(dp.atom_domain(T="float", nan=False), dp.absolute_distance(T="float"),
                          scale=2.5e6)
assert count.map(5.0) == cells.map(5) == total.map(1.25e6) == 0.5
print(time.process_time() - start)
"""
_CORE = """
import types
import opendp.domains as domains, opendp.measurements as m, opendp.metrics as metrics, opendp.mod
dp = types.SimpleNamespace(enable_features=opendp.mod.enable_features, m=m,
                           atom_domain=domains.atom_domain, vector_domain=domains.vector_domain,
                           absolute_distance=metrics.absolute_distance,
                           l1_distance=metrics.l1_distance)"""
_OURS = """
import sys, time
sys.path.insert(0, {root!r})
from bench.bench_release import measured_plan
from release.run import prepare
import numpy, duckdb, pandas
plan = measured_plan()
start = time.process_time()
prepare(plan)
print(time.process_time() - start)
"""


def build_cost(repeats: int = 5) -> str:
    """CPU seconds (medians of ``repeats`` fresh interpreters) of the release's building of the
    measured plan's measurements (``prepare``: OpenDP imported on the way), against OpenDP's
    raw construction of the same three measurements in the same run, with OpenDP's core
    modules and with its prelude (what the release imported until issue 37)."""
    def child(code: str) -> float:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                              text=True, check=True)
        return float(done.stdout.split()[-1])

    load = os.getloadavg()[0]
    ours = statistics.median(child(_OURS.format(root=str(ROOT))) for _ in range(repeats))
    core = statistics.median(child(_RAW_BUILD.format(opendp=_CORE)) for _ in range(repeats))
    prelude = statistics.median(child(_RAW_BUILD.format(opendp="import opendp.prelude as dp"))
                                for _ in range(repeats))
    return (f"building the measured plan's measurements in a fresh process (CPU s, medians of "
            f"{repeats}, load {load:.1f}): release.run.prepare {ours:.3f}, raw OpenDP "
            f"(core modules) {core:.3f} (prepare/raw {ours / core:.2f}x), raw OpenDP "
            f"(prelude) {prelude:.3f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--big", action="store_true")
    parser.add_argument("--spark-rows", type=int, default=10**8)
    parser.add_argument("--measured", help="row counts, e.g. 1e6,1e7: only issue 20's "
                        "measured release (see above)")
    parser.add_argument("--build", action="store_true", help="only the cost of building "
                        "the measured plan's OpenDP measurements (issue 37, item 4)")
    parser.add_argument("--formats", default="csv,parquet", help="with --measured")
    parser.add_argument("--tables", default="varying", help="with --measured: varying "
                        "(about Poisson(4) rows per person, 22%% above 5), exact (5 each), "
                        "or both: varying,exact")
    parser.add_argument("--methods", default="floor,digest,release,known,sql,polars",
                        help="with --measured: floor (one-pass SQL), aggregates (the "
                        "engine's true aggregates alone, one query at a time and together "
                        "as a release asks for them), together (only the latter: one "
                        "query at a time reads a 10^7-row CSV for minutes), digest (the identity "
                        "alone), release (a first release), known (a release of a file whose "
                        "identity is remembered, in a fresh process's state), sql, polars")
    args = parser.parse_args(argv)
    if args.build:
        print(build_cost(), flush=True)
        return 0
    if args.measured:
        sizes = [int(float(n)) for n in args.measured.split(",")]
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True).stdout.strip()
        results = ROOT / "bench" / "results"
        results.mkdir(exist_ok=True)
        with open(results / "release_measured.txt", "a", encoding="utf-8") as out:
            out.write(f"# {stamp}, commit {commit}, bench/bench_release.py --measured "
                      f"{args.measured} --formats {args.formats} --methods {args.methods} "
                      f"--tables {args.tables}, "
                      f"{os.cpu_count()} cores, DuckDB SQL memory {SQL_MEMORY}\n")
        with tempfile.TemporaryDirectory() as tmp:
            measured(Path(tmp), sizes, results / "release_measured.txt",
                     tuple(args.formats.split(",")), tuple(args.methods.split(",")),
                     tuple(args.tables.split(",")))
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
