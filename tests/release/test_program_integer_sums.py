"""An integer column's sum is the same on the release (DuckDB) and in the exported OpenDP
program, whatever the bounds (README, "Float sums"): one rule decides how it is summed.

The app sums a typed integer column with whole bounds within 64 bits exactly
(``engine._folding.exact_sum``), whatever the noise; the program took that route only for
whole-number noise and otherwise put each value on the fixed-point grid, whose step is 2
for bounds from 2^62: 3 + 5 + 7 at bounds [0, 2^62] gave 15 on DuckDB and 16 in the
program. A CSV's cells are text read as doubles on both (``engine.cells.cell_number``), so
the same numbers in a CSV are summed on that grid on both alike.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from engine import Engine, FileSource
from engine.duckdb_backend import DuckDBBackend
from plan.model import (
    Bounds,
    Categories,
    Dataset,
    GroupBy,
    Noise,
    Plan,
    PlanQuery,
    Sum,
)
from release import Ledger, run
from release.measurements import Certified
from release.programs import opendp_program
from tests.release.test_program_stability import recorders
from tests.release_fixtures import load_program

LAPLACE = Noise("laplace", "pure", epsilon=1.0)


def plan(upper: float) -> Plan:
    bounds = Bounds(0.0, upper, "public")
    return Plan(Dataset("d"), (
        PlanQuery("s", "Sum", Sum("x", bounds), LAPLACE),
        PlanQuery("g", "Sum by group", GroupBy("k", "sum", "x", bounds, Categories(
            ("a",), "public", "test declaration")), LAPLACE)))


def write(folder: Path, fmt: str, values: list[int | None]) -> Path:
    path = folder / f"d.{fmt}"
    if fmt == "parquet":
        pq.write_table(pa.table({"x": pa.array(values, pa.int64()),
                                 "k": pa.array(["a"] * len(values))}), path)
    else:
        text = "".join(f"{'' if v is None else v},a\n" for v in values)
        path.write_bytes(("x,k\n" + text).encode())
    return path


def released(path: Path, fmt: str, the_plan: Plan, folder: Path, monkeypatch) -> list:
    """The true values the release hands its measurements, in the plan's order."""
    drawn: list = []
    monkeypatch.setattr(Certified, "draw", lambda self, v: (drawn.append(v), v)[1])
    with Ledger(folder / f"ledger-{fmt}.sqlite") as ledger:
        run(the_plan, FileSource(path, fmt), ledger=ledger,
            engine=Engine(DuckDBBackend(threads=1)))
    monkeypatch.undo()
    return [float(np.ravel(v)[0]) for v in drawn]


def programs(path: Path, the_plan: Plan, folder: Path) -> list[float]:
    module = load_program(opendp_program(the_plan), "integer_sums", folder)
    drawn: dict = {}
    module.release(module.read_frame(str(path)), recorders(module, drawn),
                   rng=np.random.default_rng(0))
    return [float(drawn[("s", 0)]), float(drawn[("g", 0)][0])]


@pytest.mark.parametrize("upper", [2.0**62, 2.0**63])
@pytest.mark.parametrize("values", [[3, 5, 7], [3, None, 5, 7]])
def test_integer_sums_agree_on_release_and_program(tmp_path, monkeypatch, upper,
                                                   values) -> None:
    the_plan = plan(upper)
    totals = {}
    for fmt in ("parquet", "csv"):
        path = write(tmp_path, fmt, values)
        totals[fmt] = released(path, fmt, the_plan, tmp_path, monkeypatch)
        assert totals[fmt] == programs(path, the_plan, tmp_path), fmt
    if upper < 2.0**63:   # a typed integer column within 64 bits: summed exactly
        assert totals["parquet"] == [15.0, 15.0]
