"""Synthetic data (issue 23): generation time, peak memory and utility of OpenDP's mbi (AIM,
MST) on Adult's first 8 declared columns, from the built-in Adult table and from a 10^7-row
Parquet file through DuckDB, and the 3-way workload's error of the synthetic rows against the
same marginals measured directly, at several budgets.

Each fit runs in a fresh Python process (``--one``), so its peak memory (``ru_maxrss``) and
CPU time are its own; the driver prints one line per fit and writes them to
``bench/results/synthetic.txt``.

Run: ``.venv/bin/python bench/bench_synthetic.py [--epsilons 0.3,1,3] [--big-rows 1e7]
[--algorithms MST,AIM]``. The Adult fits run at every ε; the big file's at ε = 1 only (its
noise is negligible against 10^7 rows: what it measures is the counting and the memory).
Wall and CPU seconds with the load average: the fit (jax on CPU) dominates and is the same
work for 5·10^4 and 10^7 rows, since it sees the contingency cells only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

#: Adult's first 8 columns with declared cells (categories, or age's bins).
COLUMNS = ("age", "workclass", "education", "marital_status", "occupation", "relationship",
           "race", "sex")


def big_file(rows: int) -> Path:
    """Adult's rows repeated (and cut) to ``rows`` rows, as Parquet, written by DuckDB; reused."""
    import duckdb

    from bench.bench_engine import bench_dir
    from dashboard.data.builtins import DATA_DIR

    path = bench_dir() / f"adult_{rows}.parquet"
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    con = duckdb.connect(config={"memory_limit": "2GB"})
    source = str(DATA_DIR / "adult.csv.gz").replace("'", "''")
    con.execute(f"""
        COPY (SELECT a.* FROM read_csv('{source}', header=true) a,
                   range({-(-rows // 48_842)}) r LIMIT {rows})
        TO '{partial}' (FORMAT parquet)""")
    partial.rename(path)
    return path


def one(algorithm: str, epsilon: float, big: int) -> dict:
    """One fit in this process: count the cells, generate 10^4 rows, measure utility."""
    import numpy as np

    from dashboard.analysis import synthetic as sy
    from dashboard.data.builtins import BUILTIN_DATASETS, load_builtin
    from dpcore.contributions import PrivacyUnit
    from engine import engine_from_env
    from engine.sources import FileSource

    loaded = load_builtin(BUILTIN_DATASETS[0])
    columns = sy.choose_columns(loaded, list(COLUMNS), PrivacyUnit())
    start, cpu = time.perf_counter(), time.process_time()
    if big:
        cells = engine_from_env().answer(FileSource(big_file(big), "parquet"), columns.query)
    else:
        cells = sy.joint_cells(loaded, columns)
    count_s, count_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    codes = sy.generate(cells, columns.shape, measure="epsilon", budget=epsilon, max_rows=1,
                        algorithm=algorithm, rows=10_000, iters=sy.DEFAULT_ITERS)
    fit_s, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    tv = sy.tv_table(cells, codes, columns)
    w = sy.workload(cells, codes, columns.shape, measure="epsilon", budget=epsilon,
                    max_rows=1, rng=np.random.default_rng(23))
    return {"algorithm": algorithm, "epsilon": epsilon, "rows": int(cells.counts.sum()),
            "cells": len(cells.counts), "count_s": round(count_s, 1),
            "count_cpu": round(count_cpu, 1), "fit_s": round(fit_s, 1),
            "fit_cpu": round(fit_cpu, 1),
            "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "tv1": round(float(tv[tv.way == 1]["TV distance"].mean()), 4),
            "tv2": round(float(tv[tv.way == 2]["TV distance"].mean()), 4),
            "workload_synthetic": round(w.synthetic_error, 5),
            "workload_direct": round(w.direct_error, 5),
            "load": round(os.getloadavg()[0], 1)}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="0.3,1,3")
    parser.add_argument("--algorithms", default="MST,AIM")
    parser.add_argument("--big-rows", default="1e7", help="0: skip the big file")
    parser.add_argument("--one", help=argparse.SUPPRESS)   # ALGORITHM,EPSILON,BIG_ROWS
    args = parser.parse_args(argv)
    if args.one:
        algorithm, epsilon, big = args.one.split(",")
        print(json.dumps(one(algorithm, float(epsilon), int(big))))
        return 0
    big = int(float(args.big_rows))
    runs = [(a, float(e), 0) for a in args.algorithms.split(",")
            for e in args.epsilons.split(",")]
    if big:
        big_file(big)
        runs += [(a, 1.0, big) for a in args.algorithms.split(",")]
    out = ROOT / "bench" / "results" / "synthetic.txt"
    out.parent.mkdir(parents=True, exist_ok=True)
    # a rerun keeps the fits already recorded (each takes minutes)
    lines = out.read_text().splitlines() if out.exists() else []
    done = {(r["algorithm"], r["epsilon"], r["big"]) for r in map(json.loads, lines)}
    for algorithm, epsilon, rows in runs:
        if (algorithm, epsilon, rows) in done:
            continue
        result = subprocess.run([sys.executable, __file__, "--one",
                                 f"{algorithm},{epsilon},{rows}"], cwd=ROOT,
                                capture_output=True, text=True)
        if result.returncode:
            raise SystemExit(result.stderr[-2000:])
        record = json.loads(result.stdout.strip().splitlines()[-1])
        record["big"] = rows
        record["source"] = f"Parquet {rows:.0e} rows" if rows else "Adult (built-in)"
        line = json.dumps(record)
        print(line, flush=True)
        lines.append(line)
        out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
