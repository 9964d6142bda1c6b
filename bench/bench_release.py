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
every line gives its ratio to the floor in CPU time. Its item 6 adds the same release from the
command line (``cli``, ``cli-known``: the child's CPU and peak memory) and through the Spark
backend on a ``local[2]`` session started once (``spark``, ``spark-known``: the JVM's CPU
counted, the session's start timed apart), ``--repeats`` (medians) and each line's peak
resident memory (``VmHWM``, reset before it: run a line alone for its own peak).

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
from dataclasses import dataclass
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


def table_files(table: str, rows: int, *, csv_too: bool = True) -> tuple[Path, Path]:
    """(CSV, Parquet) of ``table`` (:data:`TABLES`) at ``rows`` rows, made on first use; the
    CSV only if ``csv_too`` (at 5·10^7 rows it is 1.4 GB that a Parquet-only run never reads)."""
    import duckdb

    from bench.bench_engine import bench_dir, generate

    parquet = (generate(bench_dir() / f"people_{rows}.parquet", rows) if table == "varying"
               else generate_exact(bench_dir() / f"people_exact5_{rows}.parquet", rows))
    csv = parquet.with_suffix(".csv")
    if csv_too and not csv.exists():
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


def _one_reading_floor(path: Path) -> None:
    """The floor's statement (:func:`_one_pass_sql`) reading the cells by the one rule, as a
    release does (``engine.cells``): a CSV through the engine's text reader (every field
    text, the record rules), the person and the region by their canonical key, the income by
    the number its text reads as; a Parquet file's region by its key (white space trimmed).
    What is left between it and a release is the engine's own work; between it and the
    floor, the one reading's."""
    import duckdb

    from engine.duckdb_backend import _key, _params_of, _text_number, csv_text_reader
    from engine.queries import ColumnInfo

    text = ColumnInfo("", "text", "VARCHAR")
    if path.suffix == ".parquet":
        src, params = f"read_parquet('{path}')", {}
        person, region, income = ("CAST(person AS VARCHAR)", _key("region", text),
                                  "CAST(income AS DOUBLE)")
        order = "person, sex, region, income"
    else:
        src, params, width = csv_text_reader(FileSource(path, "csv"))
        assert width == 4, width   # person, sex, region, income
        person, region, income = _key("c0", text), _key("c2", text), _text_number("c3")
        order = "c0, c1, c2, c3"
    regions = ", ".join(f"'{r}'" for r in REGIONS)
    sql = f"""
        SELECT CASE WHEN rk IN ({regions}) THEN rk END AS cell, count(*),
               sum(greatest(least(coalesce(inc, 0.0), 250000.0), 0.0))
        FROM (SELECT rk, inc, row_number() OVER (PARTITION BY pk ORDER BY h) AS r
              FROM (SELECT {person} AS pk, {region} AS rk, {income} AS inc,
                           hash({order}) AS h FROM {src})
              WHERE pk IS NOT NULL) t
        WHERE r <= {MEASURED_K}
        GROUP BY GROUPING SETS ((), (cell))"""
    with tempfile.TemporaryDirectory(prefix="bench-sql-") as spill:
        con = duckdb.connect(config={"memory_limit": SQL_MEMORY, "temp_directory": spill})
        con.execute(sql, _params_of(sql, params)).fetchall()
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


@dataclass(frozen=True)
class Outside:
    """Work a call did outside this process: the CLI's child process, Spark's JVM and its
    Python workers. ``cpu`` seconds count in the call's CPU; ``peak_mib`` is their peak
    resident memory; ``alone``: the whole work ran there (the CLI), so this process's own
    peak is not the work's."""

    cpu: float
    peak_mib: float | None = None
    alone: bool = False


@dataclass(frozen=True)
class Timing:
    """Medians over ``runs`` calls of wall and CPU seconds (this process's threads, DuckDB's
    and Polars', plus the work's :class:`Outside` CPU), the machine's load before the first,
    and the peak resident memory over the calls (MiB): the process's the work ran in
    (``VmHWM``, reset before the first call; ``None`` where it cannot be reset) and, for
    Spark, its JVM's beside it."""

    wall: float
    cpu: float
    load: float
    runs: int
    peak_mib: float | None = None
    outside_peak_mib: float | None = None

    def __str__(self) -> str:
        runs = "one run" if self.runs == 1 else f"median of {self.runs}"
        peak = "" if self.peak_mib is None else f", peak {self.peak_mib:,.0f} MiB"
        if self.outside_peak_mib is not None:
            peak += f" + JVM {self.outside_peak_mib:,.0f} MiB"
        return (f"{self.wall:7.2f} s wall {self.cpu:7.2f} s CPU ({runs}, load {self.load:.1f}"
                f"{peak})")


def _status_mib(pid: int | str, field: str) -> float | None:
    """A ``/proc/<pid>/status`` field in MiB (Linux), ``None`` if it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError):
        pass
    return None


def _reset_peak(pid: int | str = "self") -> bool:
    """Reset the process's peak resident memory (``VmHWM``) to its current resident memory
    (Linux: ``clear_refs``), so that the next reading is the peak of what ran since."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def _descendants() -> list[int]:
    """This process's descendants (Spark's JVM, its Python workers), read from ``/proc``."""
    parents: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(
                int(entry.name))
    found, todo = [], [os.getpid()]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _descendants_cpu() -> dict[int, float]:
    """CPU seconds so far of each descendant (user and system, with its own waited-for
    children's: Spark's Python daemon reaps its workers)."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in _descendants():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = sum(int(f) for f in fields[11:15]) / tick  # utime stime cutime cstime
    return seconds


def _timed(work, *, repeats: int = 1) -> Timing:
    """Run ``work(i)`` for ``i`` in ``range(repeats)``; medians of wall and CPU seconds and
    the peak memory over the runs (:class:`Timing`). The CPU time is the steadier figure on
    a shared machine. ``work`` may return an :class:`Outside`."""
    load = os.getloadavg()[0]
    reset = _reset_peak()
    walls, cpus, outside_peaks, alone = [], [], [], False
    for i in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        outside = work(i)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        if isinstance(outside, Outside):
            alone = outside.alone
            cpus[-1] = outside.cpu if alone else cpus[-1] + outside.cpu
            if outside.peak_mib is not None:
                outside_peaks.append(outside.peak_mib)
    own = _status_mib("self", "VmHWM") if reset else None
    outside_peak = max(outside_peaks) if outside_peaks else None
    return Timing(statistics.median(walls), statistics.median(cpus), load, repeats,
                  outside_peak if alone else own, None if alone else outside_peak)


def _cli_release(plan_path: Path, data: Path, ledger: Path, out: Path) -> Outside:
    """``python -m release`` on ``data`` (a fresh ledger: a first release; one that has seen
    the file: its identity is remembered). Its CPU seconds and peak resident memory come
    from the child's own resource usage (``wait4``)."""
    with open(out.with_suffix(".stderr"), "w+", encoding="utf-8") as errors:
        child = subprocess.Popen(
            [sys.executable, "-m", "release", "--plan", str(plan_path), "--data", str(data),
             "--ledger", str(ledger), "--out", str(out)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            errors.seek(0)
            raise SystemExit(f"the CLI failed: {errors.read().strip()}")
    return Outside(usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, alone=True)


_SPARK: dict[str, object] = {}


def _spark_session(write) -> object:
    """The bench's one Spark session: ``local[2]`` as ``EPSILON_LAB_ENGINE=spark`` starts it
    (``engine.spark_backend.spark_session``, the backend's default shuffle partitions),
    started on first use; its start (the JVM, the context) is timed and written apart."""
    if "session" not in _SPARK:
        from engine.spark_backend import SparkBackend

        # Spark's Python workers run this interpreter (its packages), as the tests' session
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        backend = SparkBackend("local[2]")
        timing = _timed(lambda _: backend.session.range(1).count())
        _SPARK["session"] = backend.session
        write(f"Spark local[2] session start (JVM and context, one run): {timing.wall:.2f} s "
              f"wall (load {timing.load:.1f})")
    return _SPARK["session"]


def _spark_release(plan: model.Plan, path: Path, fmt: str, ledger_path: Path,
                   session: object) -> Outside:
    """A release through the Spark backend on the bench's started session (a new backend
    and engine: nothing cached but the session), as :func:`_release_as_a_new_process`; the
    JVM's CPU seconds and peak resident memory returned."""
    from engine import Engine
    from engine.spark_backend import SparkBackend

    jvm = _descendants()
    for pid in jvm:
        _reset_peak(pid)
    before = _descendants_cpu()
    _release_as_a_new_process(plan, path, fmt, ledger_path,
                              Engine(SparkBackend(session=session)))
    after = _descendants_cpu()
    peaks = [_status_mib(pid, "VmHWM") for pid in jvm]
    return Outside(sum(after[pid] - before.get(pid, 0.0) for pid in after),
                   sum(p for p in peaks if p is not None))


#: The methods of ``--methods``, in the order they run (see ``--help``).
METHODS = ("floor", "floor-rule", "aggregates", "together", "digest", "release", "known", "cli",
           "cli-known", "sql", "polars", "spark", "spark-known")
#: The lines of the goals table, in the issue's order: (label, the line measured).
GOAL_COLUMNS = (("floor", "one-pass SQL (floor)"), ("floor, one reading", "floor, one reading"),
                ("ours first", "release.run (first)"),
                ("ours known", "release.run (known)"), ("CLI", "CLI (first)"),
                ("CLI known", "CLI (known)"), ("OpenDP Polars", "Polars Context"),
                ("Spark local[2] first", "Spark release (first)"),
                ("Spark local[2] known", "Spark release (known)"))


def measured(folder: Path, sizes: list[int], out: Path,
             formats: tuple[str, ...] = ("csv", "parquet"),
             methods: tuple[str, ...] = ("floor", "digest", "release", "known", "sql",
                                         "polars"),
             tables: tuple[str, ...] = ("varying",), repeats: int = 1) -> None:
    """Seconds of the measured release (a first one, then one whose file's identity is
    remembered beside the ledger, each as a new process would run it; in-process, from the
    command line, through Spark local[2]), the identity digest alone, the one-pass SQL
    floor, DuckDB's SQL per query and the Polars Context (its noise scales checked equal to
    the release's first), per table and file (the ratios in CPU time, medians of
    ``repeats``), printed and appended to ``out`` as each is measured; then issue 37's goals
    table, side by side, and the peak memory of each line."""
    import importlib.util

    unknown = set(methods) - set(METHODS)
    if unknown:
        raise SystemExit(f"unknown method(s) {', '.join(sorted(unknown))}: choose among "
                         f"{', '.join(METHODS)}")
    polars = importlib.util.find_spec("polars") is not None
    plan = measured_plan()
    goals: list[tuple[str, int, str, dict[str, Timing]]] = []

    def write(line: str) -> None:
        print(line, flush=True)
        with open(out, "a", encoding="utf-8") as results:
            results.write(f"{line}\n")

    try:
        _measure(folder, sizes, formats, methods, tables, plan, polars, goals, write, repeats)
    finally:  # what was measured, even when a later line fails (DuckDB's SQL out of memory)
        write(_goals_table(goals))


def _measure(folder, sizes, formats, methods, tables, plan, polars, goals, write,
             repeats) -> None:
    """The body of :func:`measured`: each line measured, written, and kept in ``goals``."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend

    plan_path = folder / "measured-plan.json"
    plan_path.write_text(plan.to_json(), encoding="utf-8")
    for rows in sizes:
        for table in tables:
            csv, parquet = table_files(table, rows, csv_too="csv" in formats)
            for path, fmt in ((csv, "csv"), (parquet, "parquet")):
                if fmt not in formats:
                    continue
                timings: dict[str, Timing] = {}
                goals.append((table, rows, fmt, timings))  # filled as each line is measured
                name = f"{table}-{rows}-{fmt}"

                def record(what: str, timing: Timing, mine: Timing | None = None) -> None:
                    timings[what] = timing  # noqa: B023
                    ratio = "" if mine is None else \
                        f": release.run/this {mine.cpu / timing.cpu:.2f}x CPU"
                    if floor is not None and "floor" not in what:  # noqa: B023
                        ratio += f", this/floor {timing.cpu / floor.cpu:.2f}x CPU"  # noqa: B023
                    write(f"{rows:.0e} rows {table:7} {fmt:7} {what:22} {timing}{ratio}")  # noqa: B023

                def ledger(kind: str, i: int) -> Path:
                    """A ledger in a folder of its own: the identities remembered beside
                    it (``release.identities``) are its own, so a first release (each
                    repeat, the CLI's, Spark's) finds no identity another line stored."""
                    own = folder / f"ledger-{kind}-{name}-{i}"  # noqa: B023
                    own.mkdir(exist_ok=True)
                    return own / "ledger.sqlite"

                def known_ledger(kind: str, first) -> Path:
                    """The ledger of the first timed first release, made (untimed) if
                    none ran: a known release needs the file's identity remembered."""
                    if not ledger(kind, 0).exists():
                        first(0)
                    return ledger(kind, 0)

                def ours_first(i: int) -> None:
                    _release_as_a_new_process(plan, path, fmt, ledger("measured", i),  # noqa: B023
                                              Engine(DuckDBBackend()))

                def cli_first(i: int) -> Outside:
                    return _cli_release(plan_path, path, ledger("cli", i),  # noqa: B023
                                        folder / f"cli-{name}-{i}")  # noqa: B023

                def spark_first(i: int) -> Outside:
                    return _spark_release(plan, path, fmt, ledger("spark", i),  # noqa: B023
                                          _spark_session(write))

                _settled(path)
                floor = ours = None
                if "floor" in methods:
                    floor = _timed(lambda _: _one_pass_sql(path), repeats=repeats)  # noqa: B023
                    record("one-pass SQL (floor)", floor)
                if "floor-rule" in methods:
                    record("floor, one reading", _timed(
                        lambda _: _one_reading_floor(path), repeats=repeats))  # noqa: B023
                if "aggregates" in methods:
                    record("aggregates per query", _timed(
                        lambda _: _aggregates_alone(plan, path, fmt, together=False),  # noqa: B023
                        repeats=repeats))
                if {"aggregates", "together"} & set(methods):
                    record("aggregates together", _timed(
                        lambda _: _aggregates_alone(plan, path, fmt, together=True),  # noqa: B023
                        repeats=repeats))
                if "digest" in methods:
                    record("identity digest alone", _timed(
                        lambda _: _identity_alone(path, fmt), repeats=repeats))  # noqa: B023
                if "release" in methods:
                    ours = _timed(ours_first, repeats=repeats)
                    record("release.run (first)", ours)
                if "known" in methods:
                    known = known_ledger("measured", ours_first)
                    record("release.run (known)", _timed(
                        lambda _: _release_as_a_new_process(
                            plan, path, fmt, known, Engine(DuckDBBackend())),  # noqa: B023
                        repeats=repeats))
                if "cli" in methods:
                    record("CLI (first)", _timed(cli_first, repeats=repeats))
                if "cli-known" in methods:
                    known = known_ledger("cli", cli_first)
                    record("CLI (known)", _timed(
                        lambda i: _cli_release(plan_path, path, known,  # noqa: B023
                                               folder / f"cli-known-{name}-{i}"),  # noqa: B023
                        repeats=repeats))
                if "sql" in methods:
                    record("DuckDB SQL", _timed(lambda _: _duckdb_sql(path),  # noqa: B023
                                                repeats=repeats), ours)
                if polars and "polars" in methods:
                    write(f"{rows:.0e} rows {table:7} {fmt:7} noise scales (release / "
                          f"Polars): {_equal_noise(path, rows)}")
                    record("Polars Context", _timed(
                        lambda _: _polars_context(path, rows), repeats=repeats), ours)  # noqa: B023
                if "spark" in methods:
                    record("Spark release (first)", _timed(spark_first, repeats=repeats))
                if "spark-known" in methods:
                    known = known_ledger("spark", spark_first)
                    record("Spark release (known)", _timed(
                        lambda _: _spark_release(plan, path, fmt, known,  # noqa: B023
                                                 _spark_session(write)),  # noqa: B023
                        repeats=repeats))


def _goals_table(goals: list[tuple[str, int, str, dict[str, Timing]]]) -> str:
    """Issue 37's table side by side, in CPU seconds with each line's ratio to the floor in
    the same run (goals: known ≤ 1.3×, first ≤ 2×, Polars ÷ first ≥ 3 at 10^7), then in wall
    seconds, then each line's peak resident memory (MiB; Spark: the Python process + its
    JVM)."""
    load = os.getloadavg()
    columns = [(label, what) for label, what in GOAL_COLUMNS
               if any(what in timings for *_, timings in goals)]
    if not columns:  # e.g. the first line failed (DuckDB's SQL out of memory)
        return f"load average at the end {load[0]:.1f}; no line of the goals table measured"
    head = ("| table | rows | format | " + " | ".join(label for label, _ in columns)
            + " | Polars ÷ first |\n|---|---|---|" + "---|" * (len(columns) + 1))
    lines = [f"load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}",
             "CPU seconds (ratio to the floor's):", head]

    def cpu(timings: dict[str, Timing], what: str) -> str:
        if what not in timings:
            return "—"
        floor = timings.get("one-pass SQL (floor)")
        ratio = "" if floor is None or "floor" in what else \
            f" ({timings[what].cpu / floor.cpu:.2f}×)"
        return f"{timings[what].cpu:.2f}{ratio}"

    for table, rows, fmt, timings in goals:
        speed = (f"{timings['Polars Context'].cpu / timings['release.run (first)'].cpu:.2f}"
                 if {"Polars Context", "release.run (first)"} <= set(timings) else "—")
        lines.append(f"| {table} | {rows:.0e} | {fmt} | "
                     + " | ".join(cpu(timings, what) for _, what in columns)
                     + f" | {speed} |")
    for title, cell in (
            ("wall seconds:", lambda t: f"{t.wall:.2f}"),
            ("peak resident memory, MiB:", lambda t: "—" if t.peak_mib is None else
             f"{t.peak_mib + (t.outside_peak_mib or 0.0):,.0f}")):
        lines += [title, head.split("\n")[0].removesuffix(" Polars ÷ first |"),
                  "|---|---|---|" + "---|" * len(columns)]
        lines += [f"| {table} | {rows:.0e} | {fmt} | " + " | ".join(
            cell(timings[what]) if what in timings else "—" for _, what in columns) + " |"
            for table, rows, fmt, timings in goals]
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
                        help="with --measured: floor (one-pass SQL), floor-rule (the same "
                        "statement reading the cells by the one rule, as a release does), "
                        "aggregates (the "
                        "engine's true aggregates alone, one query at a time and together "
                        "as a release asks for them), together (only the latter: one "
                        "query at a time reads a 10^7-row CSV for minutes), digest (the identity "
                        "alone), release (a first release), known (a release of a file whose "
                        "identity is remembered, in a fresh process's state), cli and "
                        "cli-known (the same as python -m release: wall, and the child's CPU "
                        "and peak memory), sql, polars, spark and spark-known (release.run "
                        "through the Spark backend on a local[2] session started once, its "
                        "start timed apart; CPU counts the JVM's)")
    parser.add_argument("--repeats", type=int, default=1, help="with --measured: medians "
                        "of this many runs of each line (a first release: each on a fresh "
                        "ledger)")
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
                      f"--tables {args.tables} --repeats {args.repeats}, "
                      f"{os.cpu_count()} cores, DuckDB SQL memory {SQL_MEMORY}\n")
        with tempfile.TemporaryDirectory() as tmp:
            measured(Path(tmp), sizes, results / "release_measured.txt",
                     tuple(args.formats.split(",")), tuple(args.methods.split(",")),
                     tuple(args.tables.split(",")), args.repeats)
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
