"""A column declared numeric is read by one rule on every path (issue 35 item 4; engine.cells
rule 4): a cell that is not a number — "unknown", "12,500" (no path reads thousands
separators) — is missing, "N/A" is missing. The command line and the exported OpenDP program
on the file the page test reads (tests/pages/test_declared_numeric.py): the sum each hands
the noise is 10 + 20 + … + 140 = 1,050, written by hand."""

from __future__ import annotations

import math

import numpy as np

from engine.cells import cell_numbers, not_numbers
from plan.model import Bounds, Count, Dataset, Noise, Plan, PlanQuery, PrivacyUnit, Sum
from release.programs import opendp_program
from tests.pages.test_declared_numeric import CSV
from tests.release.test_program_stability import true_inputs
from tests.release_fixtures import capture_draws, load_program

SUM = 10 * sum(range(1, 15))


def wage_plan() -> Plan:
    laplace = Noise("laplace", "pure", epsilon=1.0)
    return Plan(Dataset("wages"), (
        PlanQuery("n", "Rows", Count(), laplace),
        PlanQuery("wage", "Wages", Sum("wage", Bounds(0, 200, "public")), laplace),
    ), PrivacyUnit())


def test_the_rule_reads_words_and_separators_as_not_numbers():
    cells = ["10", " 20 ", "unknown", "12,500", "N/A", None, "-2", "1e3", "Unknown "]
    np.testing.assert_array_equal(cell_numbers(cells), [10, 20] + [math.nan] * 4
                                  + [-2, 1000, math.nan])
    assert not_numbers(cells).to_dict() == {"12,500": 1, "Unknown": 1, "unknown": 1}


def test_the_command_line_sums_the_numbers_only(tmp_path, monkeypatch):
    from release.cli import main

    drawn = capture_draws(monkeypatch)
    data = tmp_path / "wages.csv"
    data.write_bytes(CSV)
    plan = tmp_path / "plan.json"
    plan.write_text(wage_plan().to_json())
    assert main(["--plan", str(plan), "--data", str(data), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"]) == 0
    count, total = (float(np.asarray(d).sum()) for d in drawn)
    assert (count, total) == (20, SUM)


def test_the_exported_program_sums_the_numbers_only(tmp_path):
    program = load_program(opendp_program(wage_plan()), "wages_program", tmp_path)
    drawn = true_inputs(program, CSV, tmp_path, 0)
    assert float(np.asarray(drawn[("wage", 0)]).sum()) == SUM


def test_spark_reads_the_file_by_the_same_rule(shared_spark, tmp_path):
    """Spark, reading the file as a release on a cluster does: 14 numbers summed, the five
    other cells missing (DuckDB, the page's and the command line's engine, alike)."""
    from engine import BoundedSum, FileSource
    from engine.duckdb_backend import DuckDBBackend
    from engine.spark_backend import SparkBackend

    data = tmp_path / "wages.csv"
    data.write_bytes(CSV)
    for backend in (SparkBackend(session=shared_spark), DuckDBBackend(threads=1)):
        agg = backend.run(FileSource(data, "csv"), BoundedSum("wage", 0, 200))
        assert (agg.total, agg.rows, agg.missing) == (SUM, 14, 6), type(backend).__name__
