"""The Spark program reads its data by the one rule, as the release does (found in review):

- a mean's count (and a mean by group's counts) is the kept rows that have a value, and a
  person's groups are chosen among the cells where they have one, as the release counts and
  chooses them on DuckDB and on Spark (the OpenDP program had the first bug, fixed at
  f753504); the Spark program counted every kept row, so its means were pulled towards 0;
- the unit's ranking (each person's rows ordered by a keyed hash of their own cells) hashes
  each cell by itself (a text as written, a typed number or boolean as its canonical key,
  ``engine.cells.cell_key``), never as the dtype pandas guesses for the batch it is in: the
  Spark program builds one frame per Spark partition, where a column of whole numbers is
  int64, or float64 beside another person's missing cell, or object beside a text, and each
  hashed one cell differently, so a person's kept rows changed with other people's cells
  (and with the file's format).

Checked on small hand-made data (missing values, a text in a column of numbers, a person with
more rows than max rows) against hand-computed values, the pandas reference
(tests/engine_reference.py) and the release's true inputs on DuckDB and on the Spark engine.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from plan.kinds.variance import Variance
from plan.model import (
    Accounting,
    Bounds,
    Categories,
    Dataset,
    GroupBy,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Sum,
)
from release.programs import spark_program
from tests import engine_reference as ref

#: Person 1: a value and a row without one; 3: no value; 4: four rows (max rows 3) that all
#: read as 7; 5: a text in the column of numbers; 6: a value in "b" only (max groups 1: "b").
CSV = (b"p,x,c\n1,10,a\n1,,b\n2,10,b\n3,,a\n4,7,a\n4,7.0,a\n4,07,a\n4, 7 ,a\n5,oops,b\n"
       b"5,20,b\n6,NA,a\n6,30,b\n")
#: The same rows as numbers (None: no value) and canonical ids, for the pandas reference.
NUMBERS = pd.DataFrame({
    "p": ["1", "1", "2", "3", "4", "4", "4", "4", "5", "5", "6", "6"],
    "x": [10.0, None, 10.0, None, 7.0, 7.0, 7.0, 7.0, None, 20.0, None, 30.0],
    "c": ["a", "b", "b", "a", "a", "a", "a", "a", "b", "b", "a", "b"]})
UNIT = PrivacyUnit("p", 3, 1)
BOUNDS = Bounds(0.0, 100.0, "public")
#: So large an ε that PipelineDP's noise is below 0.05 on every released value here.
PRECISE = Noise("laplace", "pure", epsilon=1e6)


def load(text: str, name: str, folder: Path) -> Any:
    path = folder / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cats(*values: object) -> Categories:
    return Categories(tuple(values), "public", "test declaration")


def means_plan() -> Plan:
    return Plan(Dataset("means"), (
        PlanQuery("m", "Mean", Mean("x", BOUNDS), PRECISE),
        PlanQuery("g", "Mean by group", GroupBy("c", "mean", "x", BOUNDS, keys=cats("a", "b")),
                  PRECISE),
        PlanQuery("v", "Variance", Variance("x", BOUNDS), PRECISE),
    ), UNIT, Accounting("basic"))


def release_inputs(plan: Plan, path: Path, engine: Any, folder: Path,
                   monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The true value the release hands each part's measurement (``release.run`` with its
    draws recorded instead of noised), in the plan's order."""
    from engine import FileSource
    from release import Ledger, run
    from release.measurements import Certified

    drawn: list[Any] = []

    def record(self, value):
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    with Ledger(folder / f"ledger-{engine.backend.name}.sqlite") as ledger:
        run(plan, FileSource(path, "csv"), ledger=ledger, engine=engine)
    return drawn


@pytest.mark.slow
def test_the_spark_programs_means_count_the_kept_rows_that_have_a_value(
        shared_spark, tmp_path, monkeypatch):
    """Mean 91 / 7 = 13 (persons 1 to 6 keep 1, 1, 0, 3, 1, 1 values: 10, 10, 21, 20, 30);
    by group "a" 31 / 4 and "b" 60 / 3 (person 1's group is "a", person 6's "b": their only
    cells with a value); variance of 10, 10, 7, 7, 7, 20, 30: 464 / 7. Before, the program
    counted 11 rows for the mean (13 * 7 / 11 = 8.27) and each person's one group was drawn
    among the cells with or without a value."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend
    from engine.spark_backend import SparkBackend

    path = tmp_path / "means.csv"
    path.write_bytes(CSV)
    plan = means_plan()
    # the pandas reference (independent of engine.cells and of the programs)
    total = ref.bounded_sum_per_person(NUMBERS, "x", 0.0, 100.0, "p", 3, 0)
    by_group = ref.bounded_grouped_sum(NUMBERS, "c", ("a", "b"), "x", 0.0, 100.0, "p", 3, 1, 0)
    assert (total["total"], total["rows"]) == (91.0, 7)
    assert by_group["totals"].tolist() == [31.0, 60.0] and by_group["rows"].tolist() == [4, 3]
    # the release's true inputs, on DuckDB and on the Spark engine
    sums_and_counts = [91.0, 7, [31.0, 60.0], [4, 3]]
    for engine in (Engine(DuckDBBackend(threads=1)),
                   Engine(SparkBackend(session=shared_spark))):
        inputs = release_inputs(plan, path, engine, tmp_path, monkeypatch)
        assert [np.asarray(v, dtype=float).tolist() for v in inputs[:4]] == sums_and_counts
        assert inputs[4] == 7                              # the variance's count
    # the Spark program, run on the same file
    program = load(spark_program(plan), "spark_means", tmp_path)
    out = program.release(shared_spark, str(path))
    rows = {q["id"]: q["rows"] for q in out["queries"]}
    assert rows["m"] == [[[], pytest.approx(13.0, abs=0.05)]]
    assert rows["g"] == [[["a"], pytest.approx(7.75, abs=0.05)],
                         [["b"], pytest.approx(20.0, abs=0.05)]]
    assert rows["v"] == [[[], pytest.approx(464 / 7, abs=0.05)]]


def cell_spellings() -> dict[str, pd.DataFrame]:
    """Person "x"'s four rows (values 1 to 4) in frames as a Spark partition holds them:
    whole numbers alone (int64), beside person "y"'s missing value (float64), beside "y"'s
    text (object), and as a CSV's text cells."""
    alone = pd.DataFrame({"p": ["x"] * 4, "v": [1, 2, 3, 4]})
    missing = pd.DataFrame({"p": ["x"] * 4 + ["y"], "v": [1, 2, 3, 4, None]})
    text = pd.DataFrame({"p": ["x"] * 4 + ["y"], "v": [1, 2, 3, 4, "oops"]})
    written = pd.DataFrame({"p": ["x"] * 4, "v": ["1", "2", "3", "4"]})
    assert [str(f["v"].dtype) for f in (alone, missing, text)] == ["int64", "float64",
                                                                   "object"]
    return {"alone": alone, "missing": missing, "text": text, "written": written}


def x_order(program: Any, frame: pd.DataFrame, seed: int) -> list[float]:
    """Person "x"'s values in the order of their rank (the program's ``ranked``)."""
    out = program.ranked(frame, np.random.default_rng(seed))
    mine = out[out["__person__"] == "x"].sort_values("__rank__")
    return [float(v) for v in mine["v"]]


def test_the_ranking_hashes_each_cell_as_the_rule_reads_it(tmp_path):
    """Person "x"'s rows ranked under the same secret whatever the batch they are in: alone
    (int64), beside another person's missing cell (float64) or text (object), or as text
    cells (a CSV's): the same order each time, for each of 12 secrets (before: the order
    changed with the batch's dtype for most secrets)."""
    plan = Plan(Dataset("v"), (PlanQuery("s", "Sum", Sum("v", BOUNDS), PRECISE),),
                PrivacyUnit("p", 1))
    program = load(spark_program(plan), "spark_ranking", tmp_path)
    frames = cell_spellings()
    orders = set()
    for seed in range(12):
        seen = {name: x_order(program, frame, seed) for name, frame in frames.items()}
        assert len({tuple(v) for v in seen.values()}) == 1, (seed, seen)
        orders.add(tuple(seen["alone"]))
    assert len(orders) > 1        # the order is drawn: not the same one for every secret


@pytest.mark.slow
def test_the_spark_program_keeps_the_same_rows_whatever_the_partition_holds(
        shared_spark, tmp_path):
    """One truncation per release (max rows 1) on a Parquet file, read by the program's own
    ``read_spark`` in one Spark partition: person "x"'s kept row under a given secret is the
    same whether or not person "y", whose value is missing, is in the file (the partition's
    column of whole numbers is int64 without "y", float64 with it), and the same as in the
    CSV of the same rows (text cells), for each of 6 secrets."""
    plan = Plan(Dataset("v"), (PlanQuery("s", "Sum", Sum("v", BOUNDS), PRECISE),),
                PrivacyUnit("p", 1))
    program = load(spark_program(plan), "spark_partition", tmp_path)
    x = pd.DataFrame({"p": ["x"] * 4, "v": pd.array([1, 2, 3, 4], dtype="Int64")})
    y = pd.DataFrame({"p": ["y"], "v": pd.array([None], dtype="Int64")})
    x.to_parquet(tmp_path / "x.parquet", index=False)
    pd.concat([x, y]).to_parquet(tmp_path / "xy.parquet", index=False)
    (tmp_path / "xy.csv").write_text("p,v\nx,1\nx,2\nx,3\nx,4\ny,\n", encoding="utf-8")
    query = program.QUERIES[0]
    kept = set()
    for seed in range(6):
        seen = {}
        for name in ("x.parquet", "xy.parquet", "xy.csv"):
            rdd = program.read_spark(shared_spark, str(tmp_path / name)).coalesce(1)
            records = program.spark_rows(program.ranked_rdd(rdd, seed=seed), query,
                                         ranked=True).collect()
            seen[name] = sorted(r for r in records if r[0] == "x")
        assert len({tuple(v) for v in seen.values()}) == 1, (seed, seen)
        (record,) = seen["x.parquet"]
        assert record[2] in (1.0, 2.0, 3.0, 4.0) and not math.isnan(record[2])
        kept.add(record[2])
    assert len(kept) > 1


def test_the_opendp_program_chooses_a_persons_groups_among_those_with_a_value(
        tmp_path, monkeypatch):
    """The shared code's choice of a person's groups (max groups 1), in the OpenDP program:
    person 1's group is "a" and person 6's "b", their only cells with a value, as the release
    on DuckDB chooses them; every true input the program hands OpenDP is the release's, for
    each of 8 secrets (before: one of the two cells drawn, so person 1's 10 was in no group,
    or person 6's 30, in about 3 secrets of 4)."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend
    from release.programs import opendp_program
    from tests.release.test_program_stability import recorders

    path = tmp_path / "means.csv"
    path.write_bytes(CSV)
    plan = means_plan()
    expected = release_inputs(plan, path, Engine(DuckDBBackend(threads=1)), tmp_path,
                              monkeypatch)
    assert [np.asarray(v, dtype=float).tolist() for v in expected[:4]] == [
        91.0, 7, [31.0, 60.0], [4, 3]]
    program = load(opendp_program(plan), "opendp_groups", tmp_path)
    for seed in range(8):
        drawn: dict = {}
        program.release(program.read_frame(str(path)), recorders(program, drawn),
                        rng=np.random.default_rng(seed))
        got = [drawn[(q["id"], i)] for q in program.QUERIES for i in range(len(q["parts"]))]
        assert [np.asarray(v, dtype=float).tolist() for v in got] == [
            np.asarray(v, dtype=float).tolist() for v in expected], seed


def test_declared_booleans_match_each_boolean_cell_whatever_its_batch_holds(
        tmp_path, monkeypatch):
    """Declared booleans (a histogram over True, False) on a Parquet column of booleans with
    a missing cell: the programs' shared ``cells`` matched booleans only in a column of
    pandas' bool dtype, which the missing cell turns to object (in a whole Parquet file for
    the OpenDP program, in a Spark partition for the Spark program): no row was in a declared
    cell. Now each cell that is a boolean matches, as the release on DuckDB counts them
    (3 true, 2 false); a text "true" is still no boolean."""
    from engine import Engine, FileSource
    from engine.duckdb_backend import DuckDBBackend
    from plan.model import Histogram
    from release import Ledger, run
    from release.measurements import Certified
    from release.programs import opendp_program
    from tests.release.test_program_stability import recorders

    path = tmp_path / "flags.parquet"
    # written as Spark writes it (no pandas metadata): pandas reads it back as object
    pq.write_table(pa.table({"flag": pa.array([True, False, True, None, True, False])}), path)
    assert pd.read_parquet(path)["flag"].dtype == object
    plan = Plan(Dataset("flags"), (
        PlanQuery("h", "Flags", Histogram("flag", cats(True, False)), PRECISE),),
        PrivacyUnit(), Accounting("basic"))
    drawn: list[Any] = []
    monkeypatch.setattr(Certified, "draw", lambda self, value: drawn.append(value) or value)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(plan, FileSource(path, "parquet"), ledger=ledger,
            engine=Engine(DuckDBBackend(threads=1)))
    assert np.asarray(drawn[0], dtype=float).tolist() == [3.0, 2.0]
    program = load(opendp_program(plan), "opendp_flags", tmp_path)
    inputs: dict = {}
    program.release(program.read_frame(str(path)), recorders(program, inputs),
                    rng=np.random.default_rng(0))
    assert np.asarray(inputs[("h", 0)], dtype=float).tolist() == [3.0, 2.0]
    spark = load(spark_program(plan), "spark_flags", tmp_path)
    batch = pd.Series([True, None, False, np.True_, "true"], dtype=object)
    assert spark.cells(batch, [True, False]).tolist() == [0, -1, 1, 0, -1]
    assert spark.cells(pd.Series([True, False]), [True, False]).tolist() == [0, 1]


@pytest.mark.slow
def test_a_grouped_querys_records_are_the_same_on_every_evaluation(shared_spark, tmp_path):
    """Max groups 1: 24 people with a value in both "a" and "b". The records of a mean by
    group, read twice from the same ranked rows (a query's SUM and COUNT each read them; Spark
    evaluates them again if their cache is dropped), keep each person's same group both
    times, and the groups differ between people (before: each evaluation drew a new secret
    for the choice in each partition, so the SUM and the COUNT could read other groups)."""
    plan = Plan(Dataset("v"), (
        PlanQuery("g", "Mean by group", GroupBy("c", "mean", "x", BOUNDS, keys=cats("a", "b")),
                  PRECISE),), PrivacyUnit("p", 1, 1))
    program = load(spark_program(plan), "spark_groups_once", tmp_path)
    rows = [(str(p), str(p), c) for p in range(24) for c in ("a", "b")]
    kept = program.ranked_rdd(shared_spark.sparkContext.parallelize(rows, 2), seed=4)
    records = program.spark_rows(kept, program.QUERIES[0], ranked=True)
    first, second = sorted(records.collect()), sorted(records.collect())
    assert first == second
    assert len(first) == 24 and {c for _, c, _ in first} == {0, 1}
