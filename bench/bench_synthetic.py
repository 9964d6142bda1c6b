"""Synthetic data (issues 23 and 34): generation time, peak memory and utility of OpenDP's mbi
(AIM, MST) on Adult's first 8 declared columns, from the built-in Adult table and from 10^6-
and 10^7-row Parquet files through DuckDB, and the 3-way workload's error of the synthetic rows
against the same marginals measured directly, at several budgets.

Two paths, in one run (``--paths``): "cells", what the page and a release run now (OpenDP's
algorithms reading the engine's cell counts, ``release.mbi_cells``: memory bounded by the
cells), and "rows", what they ran before issue 34 item 3 (the cells expanded back into one row
of codes per counted row, ``np.repeat``, then OpenDP's own ``contingency_table`` on that
LazyFrame). On Adult itself the "rows" path is OpenDP's own AIM/MST on the same data and ε:
the utility columns compare the two algorithms' behaviour over ``--fits`` fits.

A third path, "opendp" (issue 34: ours against OpenDP's own synthesizer), is OpenDP's own
path end to end: its ``contingency_table`` on the rows and its own sampler,
``ContingencyTable.synthesize(method="sample")`` (each row drawn i.i.d. from the model); the
same fit's rows by OpenDP's default sampler ("round", mbi's rounding by row order) are
measured too (``tv1_round``, ``tv2_round`` in the results file, "round" in the table).
Every path also records its fitted model's own 1- and 2-way marginals against the real ones
(``tv1_model``, ``tv2_model``: the model's exact projections, no rows drawn), which compare the
fits without either sampler's error.

Each fit runs in a fresh Python process (``--one``), so its peak memory (``ru_maxrss``) and
CPU time are its own; the driver prints one line per fit, writes them to
``bench/results/synthetic_cells.txt`` (a rerun keeps the fits recorded) and ends with a table.

Run: ``.venv/bin/python bench/bench_synthetic.py [--epsilons 0.3,1,3] [--fits 2]
[--big-rows 1e6,1e7] [--algorithms MST,AIM] [--paths cells,rows,opendp]``. The Adult fits run at
every ε; the big files' at ε = 1 only (its noise is negligible against 10^7 rows: what it
measures is the counting and the memory). Wall and CPU seconds with the load average (the
machine is shared: CPU seconds are the steadier figure).
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
    """Adult's rows repeated (and cut) to ``rows`` rows, as Parquet, written by DuckDB; reused.

    Row ``i`` of the content is Adult's row ``i mod 48,842`` (its order in ``adult.csv.gz``):
    whole copies of the table, the last one cut to its first rows. Written by DuckDB straight
    from ``range()`` cross Adult's rows numbered once, the cut a filter on the row number, so
    no array of ``rows`` rows is ever built in Python and DuckDB streams it. (It was a cross
    join cut by ``LIMIT``, which kept the order of its input: 46 s and 2.2 GB at 10^7, more
    than 20 minutes at 10^8; now 11 s and 0.4 GB at 10^7.)"""
    import duckdb

    from bench.bench_engine import bench_dir
    from dashboard.data.builtins import DATA_DIR

    path = bench_dir() / f"adult_{rows}.parquet"
    if path.exists():
        return path
    partial = path.with_suffix(".partial")
    con = duckdb.connect(config={"memory_limit": "2GB",
                                 "temp_directory": str(path.parent / "duckdb-tmp")})
    source = str(DATA_DIR / "adult.csv.gz").replace("'", "''")
    con.execute(f"CREATE TEMP TABLE adult AS SELECT * FROM read_csv('{source}', header=true)")
    # rowid is the order of insertion (the file's, kept by a plain CREATE ... AS read_csv)
    con.execute("CREATE TEMP TABLE numbered AS SELECT rowid AS k, * FROM adult")
    n = con.execute("SELECT count(*) FROM numbered").fetchone()[0]
    # the rows' order in the output does not matter (the bench counts cells): let it stream
    con.execute("SET preserve_insertion_order = false")
    con.execute(f"""
        COPY (SELECT a.* EXCLUDE (k) FROM range({-(-rows // n)}) r, numbered a
              WHERE r.range * {n} + a.k < {rows})
        TO '{partial}' (FORMAT parquet)""")
    con.close()
    partial.rename(path)
    return path


def fit_from_rows(cells, shape, *, epsilon: float, algorithm: str, iters: int):
    """The fit before issue 34 item 3 (main at 506915c, ``dashboard.analysis.synthetic.fit``):
    one row of codes per counted row, then OpenDP's own contingency table of that LazyFrame
    (its AIM float-dust patch on, as then)."""
    import functools

    import numpy as np
    import opendp.prelude as dp
    import polars as pl
    from mbi.estimation import mirror_descent

    from release.synthesis import without_aim_dust

    dp.enable_features("contrib")
    without_aim_dust()
    k = len(shape)
    names = [f"c{i}" for i in range(k)]
    records = np.repeat(cells.codes, cells.counts, axis=0).astype(np.uint32).reshape(-1, k)
    frame = pl.LazyFrame({n: pl.Series(n, records[:, i], dtype=pl.UInt32)
                          for i, n in enumerate(names)})
    estimator = functools.partial(mirror_descent, iters=iters)
    chosen = dp.mbi.MST(estimator=estimator) if algorithm == "MST" else dp.mbi.AIM(
        estimator=estimator)
    context = dp.Context.compositor(data=frame, privacy_unit=dp.unit_of(contributions=1),
                                    privacy_loss=dp.loss_of(epsilon=epsilon))
    return context.query(epsilon=epsilon).contingency_table(
        keys={n: list(range(s)) for n, s in zip(names, shape, strict=True)},
        algorithm=chosen).release()


def opendp_rows(table, shape, rows: int, method: str):
    """``rows`` synthetic rows drawn by OpenDP's own synthesizer (``ContingencyTable.synthesize``,
    mbi's ``synthetic_data``: "sample" draws each row i.i.d., "round" is its randomized rounding
    by row order, issue 34), as codes; its null key (no declared cell) read as the
    missing-or-other code, each column's last, as ``synthetic_rows`` reads it."""
    import numpy as np

    frame = table.synthesize(rows, method=method)
    return np.stack([frame[f"c{i}"].fill_null(s - 1).to_numpy().astype(np.int64)
                     for i, s in enumerate(shape)], axis=1)


def model_tv(model, cells, shape: tuple[int, ...]) -> dict:
    """The fitted model's own 1-way and 2-way marginals (its exact projections, no rows drawn)
    against the real ones, mean TV: the fit alone, without the sampler's error (i.i.d. rows
    miss by about 0.01 on a column of 8 values at 10^4 rows; the rounding keeps each 1-way
    count within a row), so ours and OpenDP's own fits compare directly. Each column's extra
    null key (no declared cell) is read as its last code, as the rows read it."""
    import itertools

    import numpy as np

    from dashboard.analysis import synthetic as sy
    from release.synthesis import numpy_projection

    def projected(axes):
        values = np.asarray(numpy_projection(model, tuple(f"c{a}" for a in axes)).values,
                            dtype=np.float64)
        for i, a in enumerate(axes):   # fold codes s - 1 … s (the null key) into s - 1
            head = np.take(values, np.arange(shape[a] - 1), axis=i)
            tail = np.take(values, np.arange(shape[a] - 1, values.shape[i]), axis=i)
            values = np.concatenate([head, tail.sum(axis=i, keepdims=True)], axis=i)
        return np.clip(values, 0.0, None)

    out = {}
    for way, axes_list in ((1, [(i,) for i in range(len(shape))]),
                           (2, list(itertools.combinations(range(len(shape)), 2)))):
        out[f"tv{way}_model"] = round(float(np.mean([
            sy.tv_distance(sy.marginal(cells.codes, cells.counts, shape, axes),
                           projected(axes)) for axes in axes_list])), 4)
    return out


def one(algorithm: str, epsilon: float, big: int, path: str) -> dict:
    """One fit in this process: count the cells, generate 10^4 rows, measure utility."""
    import numpy as np

    from dashboard.analysis import synthetic as sy
    from dashboard.data.builtins import BUILTIN_DATASETS, load_builtin
    from dpcore.contributions import PrivacyUnit
    from engine import engine_from_env
    from engine.sources import FileSource
    from release.synthesis import synthetic_rows

    loaded = load_builtin(BUILTIN_DATASETS[0])
    columns = sy.choose_columns(loaded, list(COLUMNS), PrivacyUnit())
    start, cpu = time.perf_counter(), time.process_time()
    if big:
        cells = engine_from_env().answer(FileSource(big_file(big), "parquet"), columns.query)
    else:
        cells = sy.joint_cells(loaded, columns)
    count_s, count_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    if path == "cells":   # sy.generate's two steps, so the fitted model is at hand
        table = sy.fit(cells, columns.shape, measure="epsilon", budget=epsilon, max_rows=1,
                       algorithm=algorithm, iters=sy.DEFAULT_ITERS)
        codes = synthetic_rows(table, columns.shape, 10_000, rng=np.random.default_rng())
    else:
        table = fit_from_rows(cells, columns.shape, epsilon=epsilon, algorithm=algorithm,
                              iters=sy.DEFAULT_ITERS)
        if path == "opendp":   # OpenDP's own path: the rows, its fit, its own sampler
            codes = opendp_rows(table, columns.shape, 10_000, "sample")
        else:
            codes = synthetic_rows(table, columns.shape, 10_000, rng=np.random.default_rng())
    fit_s, fit_cpu = time.perf_counter() - start, time.process_time() - cpu
    # read before the model's projections below (numpy, small), as before they were added
    peak_gb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    extra = model_tv(table.model, cells, columns.shape)
    if path == "opendp":   # the same fit through OpenDP's default sampler ("round")
        tv_round = sy.tv_table(cells, opendp_rows(table, columns.shape, 10_000, "round"),
                               columns)
        extra |= {"tv1_round": round(float(tv_round[tv_round.way == 1]["TV distance"].mean()), 4),
                 "tv2_round": round(float(tv_round[tv_round.way == 2]["TV distance"].mean()), 4)}
    tv = sy.tv_table(cells, codes, columns)
    w = sy.workload(cells, codes, columns.shape, measure="epsilon", budget=epsilon,
                    max_rows=1, rng=np.random.default_rng(23))
    return {"algorithm": algorithm, "epsilon": epsilon, "path": path,
            "rows": int(cells.counts.sum()),
            "cells": len(cells.counts), "count_s": round(count_s, 1),
            "count_cpu": round(count_cpu, 1), "fit_s": round(fit_s, 1),
            "fit_cpu": round(fit_cpu, 1),
            "peak_gb": peak_gb,
            "tv1": round(float(tv[tv.way == 1]["TV distance"].mean()), 4),
            "tv2": round(float(tv[tv.way == 2]["TV distance"].mean()), 4),
            "workload_synthetic": round(w.synthetic_error, 5),
            "workload_direct": round(w.direct_error, 5),
            "load": round(os.getloadavg()[0], 1), **extra}


def table(records: list[dict]) -> str:
    """The runs as a markdown table, one line per (source, algorithm, ε, path): times the median
    over its fits; peak memory, TV and the workload's error the mean and, over several fits,
    the lowest to highest. "model TV" is the fitted model's own marginals (no rows drawn), over
    the fits that recorded it (added later: how many, when not all)."""
    import statistics

    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["big"], r["algorithm"], r["epsilon"], r["path"]), []).append(r)
    lines = ["| rows | algorithm | ε | path | fits | fit s (CPU s) | peak GB | TV 1-way | "
             "TV 2-way | model TV 1-way | model TV 2-way | workload error synthetic | direct |",
             "|---" * 13 + "|"]
    for (_big, algorithm, epsilon, path), rs in sorted(groups.items()):
        def med(key, rs=rs):
            return statistics.median(r[key] for r in rs)

        def spread(key, digits=4, rs=rs):   # mean, and lowest to highest over the fits
            values = [r[key] for r in rs if key in r]
            if not values:
                return ""
            text = f"{statistics.fmean(values):.{digits}f}"
            if len(values) > 1:
                text += f" ({min(values):.{digits}f}–{max(values):.{digits}f})"
            return text + (f" [{len(values)} of {len(rs)} fits]" if len(values) < len(rs) else "")

        lines.append(f"| {rs[0]['rows']:,} | {algorithm} | {epsilon:g} | {path} | {len(rs)} | "
                     f"{med('fit_s'):.0f} ({med('fit_cpu'):.0f}) | {spread('peak_gb', 2)} | "
                     f"{spread('tv1')} | {spread('tv2')} | {spread('tv1_model')} | "
                     f"{spread('tv2_model')} | {spread('workload_synthetic', 5)} | "
                     f"{spread('workload_direct', 5)} |")
        if all("tv2_round" in r for r in rs):   # the same fits, OpenDP's default sampler
            lines.append(f"| {rs[0]['rows']:,} | {algorithm} | {epsilon:g} | {path} round | "
                         f"{len(rs)} | | | {spread('tv1_round')} | {spread('tv2_round')} | "
                         "| | | |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", default="0.3,1,3")
    parser.add_argument("--algorithms", default="MST,AIM")
    parser.add_argument("--paths", default="cells,rows")
    parser.add_argument("--fits", type=int, default=2, help="fits per Adult configuration")
    parser.add_argument("--big-rows", default="1e6,1e7", help="0: skip the big files")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" /
                                             "synthetic_cells.txt"))
    parser.add_argument("--one", help=argparse.SUPPRESS)   # ALGORITHM,EPSILON,BIG_ROWS,PATH
    args = parser.parse_args(argv)
    if args.one:
        algorithm, epsilon, big, path = args.one.split(",")
        print(json.dumps(one(algorithm, float(epsilon), int(big), path)))
        return 0
    paths = args.paths.split(",")
    algorithms = args.algorithms.split(",")
    runs = [(a, float(e), 0, p, f) for a in algorithms for e in args.epsilons.split(",")
            for p in paths for f in range(args.fits)]
    for big in (int(float(b)) for b in args.big_rows.split(",") if float(b)):
        big_file(big)
        runs += [(a, 1.0, big, p, 0) for a in algorithms for p in paths]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    # a rerun keeps the fits already recorded (each takes minutes)
    lines = out.read_text().splitlines() if out.exists() else []
    records = [json.loads(line) for line in lines]
    done = {(r["algorithm"], r["epsilon"], r["big"], r["path"], r["fit"]) for r in records}
    for algorithm, epsilon, rows, path, fit in runs:
        if (algorithm, epsilon, rows, path, fit) in done:
            continue
        result = subprocess.run([sys.executable, __file__, "--one",
                                 f"{algorithm},{epsilon},{rows},{path}"], cwd=ROOT,
                                capture_output=True, text=True)
        if result.returncode:
            print(f"{algorithm} ε={epsilon:g} rows={rows} {path}: failed "
                  f"({result.stderr.strip().splitlines()[-1:]})", flush=True)
            continue
        record = json.loads(result.stdout.strip().splitlines()[-1])
        record.update(big=rows, fit=fit,
                      source=f"Parquet {rows:.0e} rows" if rows else "Adult (built-in)")
        line = json.dumps(record)
        print(line, flush=True)
        lines.append(line)
        records.append(record)
        out.write_text("\n".join(lines) + "\n")
    print(table(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
