"""Float sums benchmark: what summing decimals exactly costs (README, "Float sums").

Run: ``.venv/bin/python bench/bench_float_sums.py [--rows 10000000]``.

Prints the CPU seconds (best of three) of one DuckDB aggregate over ``--rows`` random doubles
in a table, ungrouped and by 8 groups: the compensated ``fsum`` the engine used before, a
plain ``sum``, and the engine's exact fixed-point sum (``engine.cells.fixed_point_sums``: each
clamped value times two powers of two, cast to BIGINT, summed into a HUGEINT) with the
``round_even`` it could have used instead of the cast; then numpy's ``np.sum`` against the
exported program's ``fixed_point_sums`` on the same values.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import numpy as np  # noqa: E402

from engine.cells import fixed_point_sums, sum_scale, sum_shift  # noqa: E402

CLAMPED = "greatest(least(x, 100.0), 0.0)"
SUMS = {
    "fsum (before)": f"fsum({CLAMPED})",
    "plain sum": f"sum({CLAMPED})",
    "fixed point (now)": f"sum(CAST({CLAMPED} * $f0 * $f1 AS BIGINT))",
    "fixed, round_even": f"sum(CAST(round_even({CLAMPED} * $f0 * $f1, 0) AS BIGINT))",
}


def best_cpu(run, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return min(times)


def statement(con: duckdb.DuckDBPyConnection, sql: str, params: dict):
    return lambda: con.execute(sql, params).fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**7)
    rows = parser.parse_args().rows
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT random() * 110 - 5 AS x, "
                f"CAST(random() * 8 AS INTEGER) AS k FROM range({rows})")
    f0, f1 = sum_scale(sum_shift(100.0))
    print(f"DuckDB, {rows:,} values: CPU seconds, best of 3")
    print(f"{'sum':22s} {'ungrouped':>10s} {'8 groups':>10s}")
    for name, expr in SUMS.items():
        params = {"f0": f0, "f1": f1} if "$f0" in expr else {}
        cells = [best_cpu(statement(con, f"SELECT {expr} FROM t{tail}", params))
                 for tail in ("", " GROUP BY k")]
        print(f"{name:22s} {cells[0]:10.3f} {cells[1]:10.3f}")
    x = np.clip(con.execute("SELECT x FROM t").fetchnumpy()["x"], 0.0, 100.0)
    cell = np.random.default_rng(0).integers(0, 8, x.size)
    shift = sum_shift(100.0)
    print(f"\nnumpy, {rows:,} values: CPU seconds, best of 3")
    print(f"{'np.sum (before)':22s} {best_cpu(lambda: np.sum(x)):10.3f}")
    print(f"{'np.bincount (before)':22s} "
          f"{best_cpu(lambda: np.bincount(cell, weights=x, minlength=8)):10.3f}")
    print(f"{'fixed_point_sums':22s} {best_cpu(lambda: fixed_point_sums(x, shift)):10.3f}")
    print(f"{'  by 8 groups':22s} "
          f"{best_cpu(lambda: fixed_point_sums(x, shift, cell, 8)):10.3f}")


if __name__ == "__main__":
    main()
