"""Engine benchmark: queries over a 10^8-row Parquet file through the engine vs typed SQL.

Run: ``.venv/bin/python bench/bench_engine.py`` (first run generates the files, a few
minutes; ``--rows``, ``--pandas-rows``, ``--spark-rows`` to change sizes, ``--no-pandas``,
``--no-spark`` to skip parts). Files go to ``EPSILON_LAB_BENCH_DIR`` (default a folder in
the system's temporary folder, outside the repository) and are reused.

Prints, per query (histogram, bounded sum, crosstab, rows per person): the engine's time, the
same question typed as plain SQL into DuckDB, and their ratio (target <= 1.2); pandas
(``tests/queries_reference.py``) on 3·10^7 rows for the record; the process's peak memory after the
DuckDB part; Spark local mode on 10^7 rows, seconds per query.

``--pages`` adds (``--pages-only``: only) the dashboard's figure: an AppTest of Noisy
statistics on a 10^7-row Parquet file of a temporary EPSILON_LAB_DATA folder vs on Adult,
median rerun time after moving ε (target: the file within 1.5× of Adult), and the process's
peak memory. Run it apart from the other parts so that the peak is the pages' own.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from engine import BoundedSum, CategoryCounts, CategoryTable, FileSource, RowsPerPerson  # noqa: E402
from engine.duckdb_backend import DuckDBBackend  # noqa: E402

REGIONS = tuple(f"region {i:02d}" for i in range(12))  # 10 occur, 2 declared but empty
SEXES = ("F", "M")
INCOME_BOUNDS = (0.0, 250_000.0)


def bench_dir() -> Path:
    folder = Path(os.environ.get("EPSILON_LAB_BENCH_DIR")
                  or Path(tempfile.gettempdir()) / "epsilon-lab-bench")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def generate(path: Path, rows: int) -> Path:
    """A Parquet file of ``rows`` people-rows, written by DuckDB out of core; reused."""
    if path.exists():
        return path
    print(f"generating {path} ({rows:,} rows) ...", flush=True)
    start = time.perf_counter()
    partial = path.with_suffix(".partial")
    con = duckdb.connect(config={"memory_limit": "2GB",
                                 "temp_directory": str(path.parent / "duckdb-tmp")})
    # hash(i, k) gives independent pseudo-random 64-bit values per row: no state, parallel.
    con.execute(f"""
        COPY (
          SELECT
            CAST(hash(i, 1) % {max(rows // 4, 1)} AS BIGINT) AS person,
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
    print(f"  done in {time.perf_counter() - start:.0f} s, "
          f"{path.stat().st_size / 2**30:.2f} GiB", flush=True)
    return path


def queries() -> dict[str, object]:
    return {
        "histogram": CategoryCounts("region", REGIONS),
        "bounded sum": BoundedSum("income", *INCOME_BOUNDS),
        "crosstab": CategoryTable("sex", "region", SEXES, REGIONS),
        "rows per person": RowsPerPerson("person"),
    }


def typed_sql(path: Path) -> dict[str, str]:
    """The same questions as a person would type them into DuckDB."""
    p = str(path).replace("'", "''")
    lo, hi = INCOME_BOUNDS
    return {
        "histogram": f"SELECT region, count(*) FROM read_parquet('{p}') GROUP BY region",
        "bounded sum": (f"SELECT sum(greatest(least(income, {hi}), {lo})), count(income) "
                        f"FROM read_parquet('{p}') WHERE income IS NOT NULL"),
        "crosstab": (f"SELECT sex, region, count(*) FROM read_parquet('{p}') "
                     "GROUP BY sex, region"),
        "rows per person": (f"SELECT n, count(*) FROM (SELECT person, count(*) AS n FROM "
                            f"read_parquet('{p}') GROUP BY person) GROUP BY n"),
    }


def timed(run, repeats: int) -> tuple[float, float]:
    """(best wall seconds, best CPU seconds) of ``repeats`` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        run()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bench_duckdb(path: Path, repeats: int) -> None:
    backend = DuckDBBackend()
    direct = duckdb.connect(config={"memory_limit": backend.memory_limit,
                                    "temp_directory": backend.temp_directory})
    source = FileSource(path, "parquet")
    sql = typed_sql(path)
    print(f"\nDuckDB {duckdb.__version__}, {path.name}, memory limit {backend.memory_limit}; "
          f"best of {repeats}, wall seconds (CPU seconds)")
    print("engine: through the engine; its SQL: the statements it generates, run directly;")
    print("typed: the question as a person would type it (computes less: no missing or "
          "clamped counts, plain sum)")
    print(f"{'query':<17}{'engine':>16}{'its SQL':>16}{'typed':>16}{'ratio to its SQL':>18}"
          f"{'ratio to typed':>16}")

    def run_statements(statements: list) -> None:
        for statement, params in statements:
            direct.execute(statement, params).fetchall()

    for name, query in queries().items():
        generated = backend.sql_for(source, query)
        runs = (lambda q=query: backend.run(source, q),
                lambda s=generated: run_statements(s),
                lambda s=sql[name]: direct.execute(s).fetchall())
        times: list[list[tuple[float, float]]] = [[], [], []]
        for _ in range(repeats):  # interleaved, so all three see the same machine load
            for run, bucket in zip(runs, times, strict=True):
                bucket.append(timed(run, 1))
        best = [(min(t[0] for t in b), min(t[1] for t in b)) for b in times]
        cells = "".join(f"{w:>8.2f} ({c:>5.1f})" for w, c in best)
        print(f"{name:<17}{cells}{best[0][0] / best[1][0]:>18.2f}"
              f"{best[0][0] / best[2][0]:>16.2f}", flush=True)
    print(f"peak memory of this process after the DuckDB part: {peak_rss_mib():,.0f} MiB")


def bench_pandas(path: Path, rows: int) -> None:
    import pandas as pd

    from tests import queries_reference as reference

    con = duckdb.connect(config={"memory_limit": "4GB"})
    p = str(path).replace("'", "''")
    frame = con.execute(f"SELECT * FROM read_parquet('{p}') LIMIT {rows}").df()
    frame["region"] = pd.Categorical(frame["region"], categories=list(REGIONS))
    frame["sex"] = pd.Categorical(frame["sex"], categories=list(SEXES))
    print(f"\npandas {pd.__version__} (queries_reference) on {len(frame):,} rows in memory, "
          "seconds, one run")
    runs = {
        "histogram": lambda: reference.histogram(frame, "region", categories=list(REGIONS)),
        "bounded sum": lambda: reference.bounded_sum(frame, "income", lower=INCOME_BOUNDS[0],
                                                     upper=INCOME_BOUNDS[1]),
        "crosstab": lambda: reference.crosstab(frame, "sex", "region",
                                               row_categories=list(SEXES),
                                               column_categories=list(REGIONS)),
        "rows per person": lambda: frame.groupby("person").size().value_counts(),
    }
    for name, run in runs.items():
        wall, _ = timed(run, 1)
        print(f"{name:<17}{wall:>8.2f}", flush=True)
    print(f"peak memory of this process after pandas: {peak_rss_mib():,.0f} MiB")


def bench_spark(path: Path) -> None:
    from engine.spark_backend import SparkBackend

    start = time.perf_counter()
    backend = SparkBackend("local[2]", shuffle_partitions=4)
    source = FileSource(path, "parquet")
    backend.columns(source)
    print(f"\nSpark local[2] on {path.name}: start-up {time.perf_counter() - start:.1f} s; "
          "seconds per query (first run, second run)")
    for name, query in queries().items():
        first, _ = timed(lambda q=query: backend.run(source, q), 1)
        second, _ = timed(lambda q=query: backend.run(source, q), 1)
        print(f"{name:<17}{first:>8.2f}{second:>8.2f}", flush=True)


EPSILON_MOVES = (0.012, 0.15, 2.7, 0.056, 8.2, 0.33, 1.5, 0.027, 4.7)


def _rerun_times(at, moves: tuple[float, ...]) -> list[float]:
    times = []
    for epsilon in moves:
        at.select_slider(key="stats_epsilon").set_value(epsilon)
        start = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - start)
        if at.exception:
            raise RuntimeError([e.value for e in at.exception])
    return times


def bench_pages(rows: int) -> None:
    """Noisy statistics after moving ε: a 10^7-row Parquet file vs Adult (AppTest, median)."""
    import statistics as stats

    from streamlit.testing.v1 import AppTest

    folder = bench_dir() / "pages-data"
    folder.mkdir(exist_ok=True)
    name = f"people_{rows}.parquet"
    generate(folder / name, rows)
    os.environ["EPSILON_LAB_DATA"] = str(folder)
    results = {}
    for label, choice in (("Adult", "Adult (UCI census income)"),
                          (f"{rows:,}-row Parquet", f"file:{name}")):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=600)
        at.run()
        at.selectbox(key="dataset_choice").select(choice)
        start = time.perf_counter()
        at.run()
        at.switch_page("app_pages/statistics.py")
        at.run()
        first = time.perf_counter() - start
        if at.exception or at.error:
            raise RuntimeError([e.value for e in [*at.exception, *at.error]])
        times = _rerun_times(at, EPSILON_MOVES)
        results[label] = stats.median(times)
        print(f"{label:>24}: first view {first:6.2f} s (scans), rerun after moving ε: "
              f"median {stats.median(times):.3f} s over {len(times)} "
              f"(min {min(times):.3f}, max {max(times):.3f})", flush=True)
    adult, big = results.values()
    print(f"{'ratio file / Adult':>24}: {big / adult:.2f} (target <= 1.5)")
    print(f"{'peak RSS':>24}: {peak_rss_mib():,.0f} MiB")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=float, default=1e8)
    parser.add_argument("--pandas-rows", type=float, default=3e7)
    parser.add_argument("--spark-rows", type=float, default=1e7)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-pandas", action="store_true")
    parser.add_argument("--no-spark", action="store_true")
    parser.add_argument("--pages", action="store_true",
                        help="also time Noisy statistics on a file vs Adult (AppTest)")
    parser.add_argument("--pages-only", action="store_true")
    parser.add_argument("--pages-rows", type=float, default=1e7)
    args = parser.parse_args(argv)
    if args.pages_only:
        bench_pages(int(args.pages_rows))
        return 0
    folder = bench_dir()
    rows = int(args.rows)
    big = generate(folder / f"people_{rows}.parquet", rows)
    bench_duckdb(big, args.repeats)
    if not args.no_pandas:
        bench_pandas(big, int(args.pandas_rows))
    if not args.no_spark:
        spark_rows = int(args.spark_rows)
        bench_spark(generate(folder / f"people_{spark_rows}.parquet", spark_rows))
    if args.pages:
        bench_pages(int(args.pages_rows))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
