"""Where a synthetic fit's memory goes (issue 34, memory goal: AIM ≤ 1.5 GB, MST ≤ 1 GB):
the process's resident memory (Linux's /proc/self/statm) sampled every 20 ms by a thread,
each sample booked to the phase running then: the imports (numpy/polars/DuckDB, then jax,
mbi, OpenDP), counting the cells, building OpenDP's measurement, and inside the fit mbi's
estimations (``mirror_descent``), the selection's scores (projections of the model onto
candidate marginals) and the rest (the measurements' calibration and noise), then the rows
drawn (``synthetic_rows``).

One fit per process (``--one``), so each figure is its own; the driver runs each ``--modes``
in a fresh process and prints a table: per phase the peak RSS (GB), how much the RSS grew
while it ran (summed over its visits) and the wall seconds spent in it.
Modes: ``now`` (what the page and a release run: the selection's projections in numpy),
``main`` (before: mbi's own projections in jax, whose kernels MST's fits drop once the process
has grown 256 MB and AIM's keep), ``keep`` (mbi's projections, no kernel ever dropped).

Run: ``.venv/bin/python bench/bench_synthetic_memory.py [--algorithm AIM] [--epsilon 1]
[--modes now,keep] [--rows 0|1e7]`` (AIM on Adult's 8 columns: minutes per fit).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PAGE = os.sysconf("SC_PAGE_SIZE")
_phase = ["start"]
_peak: dict[str, int] = {}
_seconds: dict[str, float] = {}
_entered = [time.perf_counter()]
_grown: dict[str, int] = {}
_at_entry = [0]


def _rss() -> int:
    with open("/proc/self/statm", "rb") as statm:
        return int(statm.read().split()[1]) * PAGE


def _sample() -> None:
    while True:
        rss = _rss()
        phase = _phase[0]
        if rss > _peak.get(phase, 0):
            _peak[phase] = rss
        time.sleep(0.02)


def _enter(phase: str) -> str:
    """Book the time since the last switch to the phase running, switch to ``phase``, and
    return the one left (so a wrapper can switch back)."""
    now = time.perf_counter()
    left = _phase[0]
    _seconds[left] = _seconds.get(left, 0.0) + now - _entered[0]
    _entered[0] = now
    rss = _rss()
    _peak[left] = max(_peak.get(left, 0), rss)
    _grown[left] = _grown.get(left, 0) + rss - _at_entry[0]
    _at_entry[0] = rss
    _phase[0] = phase
    _peak[phase] = max(_peak.get(phase, 0), rss)
    return left


def _wrap_phases() -> None:
    """Book mbi's estimations and the projections made outside them to their own phases."""
    import mbi.estimation
    from mbi import MarkovRandomField

    descent = mbi.estimation.mirror_descent

    def timed_descent(*args, **kwargs):
        left = _enter("fit: estimation")
        try:
            return descent(*args, **kwargs)
        finally:
            _enter(left)

    mbi.estimation.mirror_descent = timed_descent
    project = MarkovRandomField.project

    def timed_project(self, attrs):
        if _phase[0] != "fit: measurements":
            return project(self, attrs)
        left = _enter("fit: scores (projections)")
        try:
            return project(self, attrs)
        finally:
            _enter(left)

    for name in ("lean",):
        if hasattr(project, name):
            setattr(timed_project, name, getattr(project, name))
    MarkovRandomField.project = timed_project


def one(algorithm: str, epsilon: float, big: int, mode: str) -> dict:
    threading.Thread(target=_sample, daemon=True).start()
    _enter("imports: numpy, polars, DuckDB")
    import duckdb  # noqa: F401
    import numpy as np
    import polars  # noqa: F401
    _enter("imports: jax, mbi, OpenDP")
    import jax  # noqa: F401
    import mbi  # noqa: F401
    import opendp.prelude  # noqa: F401

    from bench.bench_synthetic import COLUMNS, big_file
    from dashboard.analysis import synthetic as sy
    from dashboard.data.builtins import BUILTIN_DATASETS, load_builtin
    from dpcore.contributions import PrivacyUnit
    from engine import engine_from_env
    from engine.sources import FileSource
    from plan.kinds.synthetic import MarginalSynthesis
    from release import synthesis

    _enter("cells")
    loaded = load_builtin(BUILTIN_DATASETS[0])
    columns = sy.choose_columns(loaded, list(COLUMNS), PrivacyUnit())
    if big:
        cells = engine_from_env().answer(FileSource(big_file(big), "parquet"), columns.query)
    else:
        cells = sy.joint_cells(loaded, columns)
    spec = MarginalSynthesis(algorithm, "auto", tuple(int(s) for s in columns.shape), "pure",
                             float(epsilon), 1, 10_000, sy.DEFAULT_ITERS, ())
    if mode in ("main", "keep"):   # mbi's own projections, in jax
        import contextlib

        @contextlib.contextmanager
        def as_on_main(spec):
            token = synthesis._LEAN.set(mode == "main" and spec.algorithm == "MST")
            try:
                yield
            finally:
                synthesis._LEAN.reset(token)
        synthesis.lean_fit = as_on_main
    _enter("build the measurement")
    measurement, _ = synthesis._build(spec, spec.budget)
    _wrap_phases()
    cpu = time.process_time()
    _enter("fit: measurements")
    table = synthesis.SynthesisMeasurement(measurement, spec).fit(cells)
    fit_cpu = time.process_time() - cpu
    _enter("rows")
    codes = synthesis.synthetic_rows(table, spec.shape, 10_000, rng=np.random.default_rng())
    _enter("utility (not the fit)")
    tv = sy.tv_table(cells, codes, columns)
    _enter("end")
    return {"algorithm": algorithm, "epsilon": epsilon, "big": big, "mode": mode,
            "peak_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            "fit_cpu": round(fit_cpu, 1),
            "phases": {p: [round(_peak.get(p, 0) / 2**30, 2), round(_grown.get(p, 0) / 2**30, 2),
                           round(_seconds.get(p, 0.0), 1)] for p in _seconds},
            "tv1": round(float(tv[tv.way == 1]["TV distance"].mean()), 4),
            "tv2": round(float(tv[tv.way == 2]["TV distance"].mean()), 4),
            "load": round(os.getloadavg()[0], 1),
            "env": {k: v for k, v in os.environ.items() if k.startswith(("XLA", "JAX",
                                                                          "MALLOC"))}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--algorithm", default="AIM")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--rows", default="0", help="0: Adult itself; else a Parquet file")
    parser.add_argument("--modes", default="now")
    parser.add_argument("--one", help=argparse.SUPPRESS)   # ALGORITHM,EPSILON,BIG,MODE
    args = parser.parse_args(argv)
    if args.one:
        algorithm, epsilon, big, mode = args.one.split(",")
        print(json.dumps(one(algorithm, float(epsilon), int(big), mode)))
        return 0
    for mode in args.modes.split(","):
        result = subprocess.run([sys.executable, __file__, "--one",
                                 f"{args.algorithm},{args.epsilon},{int(float(args.rows))},"
                                 f"{mode}"], cwd=ROOT, capture_output=True, text=True)
        if result.returncode:
            print(f"{mode}: failed {result.stderr.strip().splitlines()[-3:]}", flush=True)
            continue
        record = json.loads(result.stdout.strip().splitlines()[-1])
        print(json.dumps(record), flush=True)
        print(f"\n{args.algorithm}, ε = {args.epsilon:g}, mode {mode}: peak "
              f"{record['peak_gb']:.2f} GB, fit {record['fit_cpu']:.0f} CPU s, TV "
              f"{record['tv1']:.4f} / {record['tv2']:.4f}, load {record['load']}\n"
              "| phase | peak RSS GB | RSS grown in it, GB | wall s |\n|---|---|---|---|")
        for phase, (gb, grown, seconds) in record["phases"].items():
            if phase != "start":
                print(f"| {phase} | {gb:.2f} | {grown:+.2f} | {seconds:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
