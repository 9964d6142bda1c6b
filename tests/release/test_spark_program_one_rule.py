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
  (and with the file's format);
- (second review) a 64-bit integer stays whole: the Spark program's frame of each partition
  guessed its dtypes, so a person id past 2^53 beside a missing id became a rounded float64
  and one person two privacy ids; the OpenDP program read Parquet with pandas, whose int64
  column with a missing cell is float64 (keys and ids rounded); a Parquet DECIMAL cell is
  its number (it was none) and keyed as its double, as DuckDB reads it; a boolean cell
  matches the declared text that is its key in lower case, as DuckDB matches it (s18,
  ``engine.cells`` rule 6; before, neither matched any).

Checked on small hand-made data (missing values, a text in a column of numbers, a person with
more rows than max rows) against hand-computed values, the pandas reference
(tests/engine_reference.py) and the release's true inputs on DuckDB and on the Spark engine.
"""

from __future__ import annotations

import decimal
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
    Count,
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
from tests.release_fixtures import cats, load_program

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


def means_plan() -> Plan:
    return Plan(Dataset("means"), (
        PlanQuery("m", "Mean", Mean("x", BOUNDS), PRECISE),
        PlanQuery("g", "Mean by group", GroupBy("c", "mean", "x", BOUNDS, keys=cats("a", "b")),
                  PRECISE),
        PlanQuery("v", "Variance", Variance("x", BOUNDS), PRECISE),
    ), UNIT, Accounting("basic"))


def release_inputs(plan: Plan, path: Path, engine: Any, folder: Path,
                   monkeypatch: pytest.MonkeyPatch, fmt: str = "csv") -> list[Any]:
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
        run(plan, FileSource(path, fmt), ledger=ledger, engine=engine)
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
    program = load_program(spark_program(plan), "spark_means", tmp_path)
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
    program = load_program(spark_program(plan), "spark_ranking", tmp_path)
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
    program = load_program(spark_program(plan), "spark_partition", tmp_path)
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
    program = load_program(opendp_program(plan), "opendp_groups", tmp_path)
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
    (3 true, 2 false); a text "true" is the boolean true too (engine.cells, rule 6)."""
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
    program = load_program(opendp_program(plan), "opendp_flags", tmp_path)
    inputs: dict = {}
    program.release(program.read_frame(str(path)), recorders(program, inputs),
                    rng=np.random.default_rng(0))
    assert np.asarray(inputs[("h", 0)], dtype=float).tolist() == [3.0, 2.0]
    spark = load_program(spark_program(plan), "spark_flags", tmp_path)
    batch = pd.Series([True, None, False, np.True_, "true"], dtype=object)
    assert spark.cells(batch, [True, False]).tolist() == [0, -1, 1, 0, 0]
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
    program = load_program(spark_program(plan), "spark_groups_once", tmp_path)
    rows = [(str(p), str(p), c) for p in range(24) for c in ("a", "b")]
    kept = program.ranked_rdd(shared_spark.sparkContext.parallelize(rows, 2), seed=4)
    records = program.spark_rows(kept, program.QUERIES[0], ranked=True)
    first, second = sorted(records.collect()), sorted(records.collect())
    assert first == second
    assert len(first) == 24 and {c for _, c, _ in first} == {0, 1}


# ------------------------------------------------------------------------------------------
# 64-bit integers, decimals and booleans as the release reads them (second review)

#: A person id past 2^53: as a double it is 1234567890123456768 (1.2345678901234568e+18).
BIG = 1234567890123456789


class ListRDD:
    """The few RDD methods ``ranked_rdd`` and ``spark_rows`` call, over a list of partitions
    (each a list of rows): the programs' per-partition code run without a JVM."""

    def __init__(self, partitions: list[list[Any]]):
        self.partitions = partitions

    def getNumPartitions(self) -> int:  # noqa: N802 (Spark's name)
        return len(self.partitions)

    def mapPartitions(self, f, preservesPartitioning=False):  # noqa: N802, N803
        return ListRDD([list(f(iter(p))) for p in self.partitions])

    def partitionBy(self, n, partitionFunc):  # noqa: N802, N803 (pyspark: key's hash % n)
        out: list[list[Any]] = [[] for _ in range(n)]
        for key, value in (pair for p in self.partitions for pair in p):
            out[partitionFunc(key) % n].append((key, value))
        return ListRDD(out)

    def glom(self):
        return ListRDD([[list(p)] for p in self.partitions])

    def zipWithIndex(self):  # noqa: N802
        items = iter(range(sum(len(p) for p in self.partitions)))
        return ListRDD([[(x, next(items)) for x in p] for p in self.partitions])

    def map(self, f):
        return ListRDD([[f(x) for x in p] for p in self.partitions])

    def flatMap(self, f):  # noqa: N802
        return ListRDD([[y for x in p for y in f(x)] for p in self.partitions])

    def collect(self) -> list[Any]:
        return [x for p in self.partitions for x in p]


#: Person BIG's 6 rows, 3 in each of two Spark partitions; the first also holds a row with
#: no person id (a count reads the person column only).
BIG_IDS = [[BIG, BIG, BIG, None], [BIG, BIG, BIG]]


def count_plan() -> Plan:
    return Plan(Dataset("ids"), (PlanQuery("n", "People", Count(), PRECISE),),
                PrivacyUnit("p", 1), Accounting("basic"))


def test_the_spark_program_keeps_a_64_bit_person_id_whole_in_every_partition(tmp_path):
    """Max rows 1, a count: person 1234567890123456789 has 3 rows in each of two partitions,
    one of which also holds a row with no person id. The program's frame of each partition
    guessed its dtypes: beside the missing id the column was float64 and the id rounded to
    1.2345678901234568e+18, so the person had two privacy ids (two kept rows: a count of 2,
    sensitivity 1 broken). Now one record, under the id's exact text, for each of 6
    secrets (the program's own ``ranked_rdd`` and ``spark_rows``, without a JVM)."""
    program = load_program(spark_program(count_plan()), "spark_big_ids", tmp_path)
    # as Spark hands a Parquet BIGINT column's cells: Python ints, None when missing
    frames = ListRDD([[(p,) for p in ids] for ids in BIG_IDS])
    for seed in range(6):
        kept = program.ranked_rdd(frames, seed=seed)
        records = program.spark_rows(kept, program.QUERIES[0], ranked=True).collect()
        assert records == [("1234567890123456789", 0, 0.0)], seed


def test_the_opendp_program_reads_a_parquet_64_bit_integer_exactly(tmp_path, monkeypatch):
    """A Parquet BIGINT column with a missing cell, which pandas reads as float64:
    - a sum by declared keys "1234567890123456789" and "7" of x = 1, 2 (and 3 for the
      missing key): 1 and 2, as the release on DuckDB (before: 0 and 2, the key read as
      1.2345678901234568e+18);
    - a count of people, ids 2^53 and 2^53 + 1 and a missing one, max rows 1: 2, as on
      DuckDB (before: 1, both ids read as 2^53)."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend
    from release.programs import opendp_program
    from tests.release.test_program_stability import recorders

    keys = tmp_path / "keys.parquet"
    pq.write_table(pa.table({"k": pa.array([BIG, 7, None], pa.int64()),
                             "x": pa.array([1.0, 2.0, 3.0])}), keys)
    ids = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"p": pa.array([2**53, 2**53 + 1, None], pa.int64())}), ids)
    assert pd.read_parquet(keys)["k"].dtype == np.float64      # what the program read
    by_key = Plan(Dataset("keys"), (PlanQuery("s", "Sum", GroupBy(
        "k", "sum", "x", Bounds(0.0, 10.0, "public"), keys=cats(str(BIG), "7")), PRECISE),),
        PrivacyUnit(), Accounting("basic"))
    for plan, path, expected in ((by_key, keys, [1.0, 2.0]), (count_plan(), ids, 2.0)):
        duck = release_inputs(plan, path, Engine(DuckDBBackend(threads=1)), tmp_path,
                              monkeypatch, "parquet")
        assert np.asarray(duck[0], dtype=float).tolist() == expected
        program = load_program(opendp_program(plan), f"opendp_{path.stem}", tmp_path)
        inputs: dict = {}
        program.release(program.read_frame(str(path)), recorders(program, inputs),
                        rng=np.random.default_rng(0))
        assert np.asarray(inputs[(plan.queries[0].id, 0)], dtype=float).tolist() == expected


def test_a_decimal_cell_is_its_number_and_its_key(tmp_path, monkeypatch):
    """Parquet DECIMAL cells (pandas and Spark hand them as decimal.Decimal): a sum by group
    of decimal(5,2) 1.50 and 2.00 in "a", 3.25 in "b" is 3.5 and 3.25 in the OpenDP program,
    as on DuckDB (before: 0 and 0, a decimal read as no number); a decimal is keyed as its
    double, as DuckDB keys a DECIMAL column (1.50 is "1.5", 12.00 is "12")."""
    from engine import Engine
    from engine.cells import cell_key, cell_number
    from engine.duckdb_backend import DuckDBBackend
    from release.programs import opendp_program
    from tests.release.test_program_stability import recorders

    assert cell_number(decimal.Decimal("1.50")) == 1.5
    assert cell_number(decimal.Decimal("-0.25")) == -0.25
    assert [cell_key(decimal.Decimal(t)) for t in ("1.50", "12.00", "-3")] == [
        "1.5", "12", "-3"]
    path = tmp_path / "decimals.parquet"
    pq.write_table(pa.table({
        "g": ["a", "a", "b"],
        "x": pa.array([decimal.Decimal(t) for t in ("1.50", "2.00", "3.25")],
                      pa.decimal128(5, 2)),
        "k": pa.array([decimal.Decimal(t) for t in ("1.50", "12.00", "1.5")],
                      pa.decimal128(5, 2))}), path)
    plan = Plan(Dataset("decimals"), (
        PlanQuery("s", "Sum", GroupBy("g", "sum", "x", Bounds(0.0, 10.0, "public"),
                                      keys=cats("a", "b")), PRECISE),
        PlanQuery("h", "By key", GroupBy("k", "sum", "x", Bounds(0.0, 10.0, "public"),
                                         keys=cats("1.5", "12")), PRECISE),
    ), PrivacyUnit(), Accounting("basic"))
    expected = [[3.5, 3.25], [4.75, 2.0]]
    duck = release_inputs(plan, path, Engine(DuckDBBackend(threads=1)), tmp_path,
                          monkeypatch, "parquet")
    assert [np.asarray(v, dtype=float).tolist() for v in duck] == expected
    program = load_program(opendp_program(plan), "opendp_decimals", tmp_path)
    inputs: dict = {}
    program.release(program.read_frame(str(path)), recorders(program, inputs),
                    rng=np.random.default_rng(0))
    assert [np.asarray(inputs[(q, 0)], dtype=float).tolist() for q in ("s", "h")] == expected


def test_declared_texts_match_a_boolean_cell_by_its_key(tmp_path, monkeypatch):
    """Texts "true" and "false" declared for a Parquet column of booleans: each boolean
    matches the declared text that is its key in lower case (engine.cells, rule 6), on DuckDB
    and in the programs alike (4 and 2, hand-summed: true rows 1 + 3, false row 2), as the
    same table's CSV counts them. (Before s18 both matched none: 0 and 0.) A text cell still
    matches a declared text only by its key as written: " false " is "false", "TRUE" is no
    "true"."""
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend
    from release.programs import opendp_program
    from tests.release.test_program_stability import recorders

    path = tmp_path / "flags.parquet"
    pq.write_table(pa.table({"g": pa.array([True, False, True, None]),
                             "x": pa.array([1.0, 2.0, 3.0, 4.0])}), path)
    plan = Plan(Dataset("flags"), (PlanQuery("s", "Sum", GroupBy(
        "g", "sum", "x", Bounds(0.0, 10.0, "public"), keys=cats("true", "false")), PRECISE),),
        PrivacyUnit(), Accounting("basic"))
    duck = release_inputs(plan, path, Engine(DuckDBBackend(threads=1)), tmp_path,
                          monkeypatch, "parquet")
    assert np.asarray(duck[0], dtype=float).tolist() == [4.0, 2.0]
    program = load_program(opendp_program(plan), "opendp_text_flags", tmp_path)
    inputs: dict = {}
    program.release(program.read_frame(str(path)), recorders(program, inputs),
                    rng=np.random.default_rng(0))
    assert np.asarray(inputs[("s", 0)], dtype=float).tolist() == [4.0, 2.0]
    batch = pd.Series([True, "true", None, " false ", np.False_, "TRUE"], dtype=object)
    assert program.cells(batch, ["true", "false"]).tolist() == [0, 0, -1, 1, 1, -1]
    assert program.cells(pd.Series([True, False]), ["true", "false"]).tolist() == [0, 1]
    # declared booleans: any text whose key in lower case is "true" / "false" ("TRUE" too)
    assert program.cells(batch, [True, False]).tolist() == [0, 0, -1, 1, 1, 0]


@pytest.mark.slow
def test_the_spark_program_counts_a_64_bit_person_once(shared_spark, tmp_path):
    """End to end on Spark: two Parquet files read by the program's own ``read_spark`` (one
    Spark partition each), person 1234567890123456789 with 3 rows in each and a row with no
    person id in the first; max rows 1, a count at ε = 10^6: one record, and a released
    count within 0.05 of 1 (before: two privacy ids, a count of 2)."""
    program = load_program(spark_program(count_plan()), "spark_big_count", tmp_path)
    files = []
    for i, ids in enumerate(BIG_IDS):
        files.append(tmp_path / f"part-{i}.parquet")
        pq.write_table(pa.table({"p": pa.array(ids, pa.int64()),
                                 "x": pa.array(range(len(ids)), pa.int64())}), files[-1])
    first, second = (program.read_spark(shared_spark, str(f)).coalesce(1) for f in files)
    frames = first.union(second)
    assert [len(p) for p in frames.glom().collect()] == [4, 3]
    kept = program.ranked_rdd(frames, seed=3)
    query = program.QUERIES[0]
    assert program.spark_rows(kept, query, ranked=True).collect() == [
        ("1234567890123456789", 0, 0.0)]
    rows, _ = program.release_query(shared_spark.sparkContext, kept, query, True)
    assert rows == [[[], pytest.approx(1.0, abs=0.05)]]
