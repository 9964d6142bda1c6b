"""A boolean column declared with categories reads the same from Parquet and from CSV
(``engine.cells`` rule 6): a declared ``True`` counts a typed True (Parquet, a frame) and a
CSV's ``true``, ``True`` and ``TRUE`` (as Arrow, DuckDB and Spark, pandas and R write it); a
declared text ``"true"`` counts a typed True and a CSV's ``true``. Before, a text column with
declared booleans, or a boolean column with declared texts, matched nothing: the same plan
released every count as 0 on one format and the counts on the other.

Checked on DuckDB, the pandas reference (``tests/engine_reference.py``), the exported OpenDP
program and the Spark program's shared ``cells``, and Spark (``-m spark``), against hand
counts of :data:`TABLE`; and partition selection's groups of a boolean (found, ranked
under max groups and labelled as the CSV's ``"false"``, ``"true"``) against the reference.
A declared text with no key ("", "NA", " ") counts no cell in the program, as on DuckDB; the
reference reads each boolean cell whatever its column's dtype.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine import (
    CategoryCounts,
    CategoryTable,
    Contribution,
    DistinctValues,
    FileSource,
    FrameSource,
    GroupedSum,
)
from engine.duckdb_backend import DuckDBBackend
from plan.model import (
    Accounting,
    Bounds,
    Crosstab,
    Dataset,
    GroupBy,
    Histogram,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
)
from release.programs import opendp_program, spark_program
from tests import engine_reference as ref
from tests.release_fixtures import cats, load_program

#: Seven rows: the flag True in rows 1, 3, 4, 6 (x 1 + 3 + 4 + 6 = 14), False in rows 2, 5
#: (x 2 + 5 = 7), missing in row 7; by c: (True, a) 3, (True, b) 1, (False, a) 1, (False, b) 1.
TABLE = pd.DataFrame({"p": [1, 1, 2, 3, 4, 5, 6],
                      "flag": pd.array([True, False, True, True, False, True, None],
                                       dtype="boolean"),
                      "c": ["a", "b", "a", "b", "a", "a", "b"],
                      "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]})
COUNTS = [4, 2]
TOTALS = [14.0, 7.0]
TABLE_COUNTS = [[3, 1], [1, 1]]
#: How a boolean is written in a CSV: Arrow, DuckDB and Spark; pandas; R.
SPELLINGS = {"lower": ("true", "false"), "pandas": ("True", "False"), "r": ("TRUE", "FALSE")}
BOOLEANS = (True, False)
TEXTS = ("true", "false")


def text_table(spelling: str) -> pd.DataFrame:
    """:data:`TABLE` with the flag as a CSV writer spells it (a missing flag empty)."""
    yes, no = SPELLINGS[spelling]
    flag = TABLE["flag"].astype(object).map({True: yes, False: no}).where(
        TABLE["flag"].notna(), None)
    return TABLE.assign(flag=flag.astype(object))


def sources(folder: Path) -> dict[str, object]:
    """The same table as a Parquet file (a typed boolean), a frame, and three CSVs."""
    TABLE.to_parquet(folder / "t.parquet", index=False)
    out: dict[str, object] = {"parquet": FileSource(folder / "t.parquet", "parquet"),
                              "frame": FrameSource(TABLE)}
    for spelling in SPELLINGS:
        path = folder / f"{spelling}.csv"
        text_table(spelling).to_csv(path, index=False)
        out[f"{spelling} csv"] = FileSource(path, "csv")
    return out


def answers(backend, source, categories) -> tuple[list, list, list]:
    """(histogram counts, grouped sum totals, crosstab counts) of the flag."""
    histogram = backend.run(source, CategoryCounts("flag", categories))
    grouped = backend.run(source, GroupedSum("flag", categories, "x", 0.0, 10.0))
    table = backend.run(source, CategoryTable("flag", "c", categories, ("a", "b")))
    return (histogram.counts.tolist(), grouped.totals.tolist(), table.counts.tolist())


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=1)


def test_declared_booleans_count_the_same_rows_in_parquet_and_every_csv(duck, tmp_path):
    """Declared True, False (as the page declares them for a typed column): on main every
    CSV gave 0 and 0 (the CSV's column is text); now each format gives the hand counts."""
    for name, source in sources(tmp_path).items():
        histogram = duck.run(source, CategoryCounts("flag", BOOLEANS))
        assert (histogram.outside, histogram.missing) == (0, 1), name
        assert answers(duck, source, BOOLEANS) == (COUNTS, TOTALS, TABLE_COUNTS), name


def test_declared_texts_count_a_typed_boolean_as_its_key(duck, tmp_path):
    """Declared "true", "false" (as the page declares them for a CSV's text column): on main
    the Parquet file and the frame gave 0 and 0; now they count as the CSV that writes
    "true" does. A CSV spelling "True" or "TRUE" is text against text, matched as written
    (rule 6): its cells are outside the declared texts."""
    found = sources(tmp_path)
    for name in ("parquet", "frame", "lower csv"):
        assert answers(duck, found[name], TEXTS) == (COUNTS, TOTALS, TABLE_COUNTS), name
        upper = ("TRUE", "False")   # a declared text in any letter case is the boolean
        if name != "lower csv":
            assert answers(duck, found[name], upper) == (COUNTS, TOTALS, TABLE_COUNTS), name
    for name in ("pandas csv", "r csv"):
        histogram = duck.run(found[name], CategoryCounts("flag", TEXTS))
        assert (histogram.counts.tolist(), histogram.outside) == ([0, 0], 6), name


@pytest.mark.parametrize("spelling", list(SPELLINGS))
@pytest.mark.parametrize("categories", [BOOLEANS, ("TRUE", "false")])
def test_the_reference_follows_the_rule(spelling, categories):
    """The pandas reference reads a boolean against a text by the text in lower case: the
    hand counts for the typed table (pandas' nullable booleans) and, with declared
    booleans, for each CSV's text (on main: zeros for both mixes)."""
    frames = [TABLE] + ([text_table(spelling)] if categories == BOOLEANS else [])
    for frame in frames:
        histogram = ref.histogram(frame, "flag", categories)
        assert (histogram["counts"].tolist(), histogram["missing"]) == (COUNTS, 1)
        assert ref.grouped_sum(frame, "flag", categories, "x", 0.0, 10.0)[
            "totals"].tolist() == TOTALS
        assert ref.crosstab(frame, "flag", "c", categories, ("a", "b"))[
            "counts"].tolist() == TABLE_COUNTS


def both_flags(folder: Path) -> dict[str, object]:
    """40 people with one row of each flag (max groups 1 keeps one): Parquet, frame, CSV."""
    frame = pd.DataFrame({"p": np.repeat(np.arange(40), 2), "flag": np.tile(BOOLEANS, 40)})
    frame.to_parquet(folder / "both.parquet", index=False)
    frame.assign(flag=frame["flag"].map({True: "true", False: "false"})).to_csv(
        folder / "both.csv", index=False)
    return {"parquet": FileSource(folder / "both.parquet", "parquet"),
            "frame": FrameSource(frame), "csv": FileSource(folder / "both.csv", "csv")}


def selected_groups(backend, source, seed: int) -> tuple[tuple, list]:
    """(the keys partition selection finds, their counts under max groups 1)."""
    keys = backend.run(source, DistinctValues("flag", limit=None)).values
    query = CategoryCounts("flag", keys, Contribution("p", 2, 1, seed=seed))
    return tuple(keys), backend.run(source, query).counts.tolist()


def reference_groups(seed: int) -> list:
    """The reference's kept counts of the CSV's text keys "false", "true" (each person's
    one group chosen by the md5 of its text ``text:"false"`` or ``text:"true"``)."""
    frame = pd.DataFrame({"p": np.repeat(np.arange(40), 2), "flag": np.tile(TEXTS[::-1], 40)})
    keys = TEXTS[::-1]
    codes = ref.cell_codes(frame["flag"], keys)
    return ref.bounded_cells(codes, frame, "p", 2, 2, 1, seed, ref.texts(keys)).tolist()


@pytest.mark.parametrize("seed", range(3))
def test_partition_selection_finds_and_keeps_a_booleans_groups_as_on_its_csv(duck, tmp_path,
                                                                                seed):
    """Groups found in the data: a typed boolean's keys were True, False (ranked by
    ``bool:true``, labelled "True"), its CSV's "false", "true" (ranked by ``text:"true"``),
    so under max groups 1 the two kept other groups (seed 0: 20, 20 against 22, 18) and
    released other labels. Now every format finds "false", "true" and keeps the reference's
    counts (each person's rows: one of each, so each count is at most 40 and they sum to 40).
    """
    expected = reference_groups(seed)
    assert sum(expected) == 40
    for name, source in both_flags(tmp_path).items():
        assert selected_groups(duck, source, seed) == (TEXTS[::-1], expected), name


PRECISE = Noise("laplace", "pure", epsilon=1e6)


def flag_plan(categories: tuple) -> Plan:
    return Plan(Dataset("flags"), (
        PlanQuery("h", "Flags", Histogram("flag", cats(*categories)), PRECISE),
        PlanQuery("s", "Sum by flag", GroupBy("flag", "sum", "x", Bounds(0.0, 10.0, "public"),
                                              keys=cats(*categories)), PRECISE),
        PlanQuery("t", "Flag by c", Crosstab("flag", "c", cats(*categories), cats("a", "b")),
                  PRECISE),
    ), PrivacyUnit(), Accounting("basic"))


@pytest.mark.parametrize("categories", [BOOLEANS, TEXTS])
def test_the_opendp_program_counts_as_the_release(tmp_path, categories):
    """The exported OpenDP program on the Parquet file and on the CSVs: the hand counts for
    declared booleans on every file, and for declared texts on the Parquet file and the CSV
    that writes "true" (on main: zeros on the CSVs with booleans, on Parquet with texts)."""
    from tests.release.test_program_stability import recorders

    sources(tmp_path)
    program = load_program(opendp_program(flag_plan(categories)),
                           f"opendp_flags_{categories[0]}", tmp_path)
    files = ["t.parquet", "lower.csv"] + (
        ["pandas.csv", "r.csv"] if categories == BOOLEANS else [])
    for name in files:
        inputs: dict = {}
        program.release(program.read_frame(str(tmp_path / name)), recorders(program, inputs),
                        rng=np.random.default_rng(0))
        assert np.asarray(inputs[("h", 0)], dtype=float).tolist() == COUNTS, name
        assert np.asarray(inputs[("s", 0)], dtype=float).tolist() == TOTALS, name
        assert np.asarray(inputs[("t", 0)], dtype=float).ravel().tolist() == [
            3, 1, 1, 1], name


def test_the_spark_programs_cells_read_each_batch_by_the_rule(tmp_path):
    """The Spark program's ``cells`` (each Spark partition's pandas batch): a batch of typed
    booleans (object beside a missing cell) and of each CSV's text, the flag's cell indexes
    by hand (True 0, False 1, missing or outside -1)."""
    program = load_program(spark_program(flag_plan(BOOLEANS)), "spark_flags", tmp_path)
    expected = [0, 1, 0, 0, 1, 0, -1]
    typed = pd.Series([True, False, True, True, False, True, None], dtype=object)
    assert program.cells(typed, list(BOOLEANS)).tolist() == expected
    assert program.cells(typed, list(TEXTS)).tolist() == expected
    for spelling in SPELLINGS:
        text = text_table(spelling)["flag"]
        assert program.cells(text, list(BOOLEANS)).tolist() == expected, spelling
    assert program.cells(text_table("lower")["flag"], list(TEXTS)).tolist() == expected


@pytest.mark.spark
def test_spark_counts_declared_booleans_as_duckdb(shared_spark, tmp_path):
    """The Spark engine on the Parquet file and the CSVs: the hand counts for declared
    booleans everywhere and declared texts on the typed column (on main: zeros)."""
    from engine.spark_backend import SparkBackend

    spark = SparkBackend(session=shared_spark)
    found = sources(tmp_path)
    for name in ("parquet", "lower csv", "pandas csv", "r csv"):
        assert answers(spark, found[name], BOOLEANS) == (COUNTS, TOTALS, TABLE_COUNTS), name
    assert answers(spark, found["parquet"], TEXTS) == (COUNTS, TOTALS, TABLE_COUNTS)
    expected = reference_groups(0)
    for name, source in both_flags(tmp_path).items():
        assert selected_groups(spark, source, 0) == (TEXTS[::-1], expected), name


@pytest.mark.parametrize("categories, counts, totals, table", [
    (("true", "NA"), [4, 0], [14.0, 0.0], [3, 1, 0, 0]),
    (("true", ""), [4, 0], [14.0, 0.0], [3, 1, 0, 0]),
    ((" ", "false"), [0, 2], [0.0, 7.0], [0, 0, 1, 1]),
])
def test_a_declared_category_with_no_key_counts_no_cell_in_the_program(duck, tmp_path,
                                                                        categories, counts,
                                                                        totals, table):
    """A declared text with no key ("NA", "", " ": engine.cells rule 5) matches no cell on
    DuckDB. The program made it None, as it makes a missing cell and a typed boolean no
    declared text spells, so it counted those: ("true", "NA") gave [4, 4] on the Parquet file
    (False and missing) and [4, 2] on the CSV (missing). Now the program's true answers are
    the release's (DuckDB) on both files, and the hand counts."""
    from tests.release.test_program_stability import recorders

    found = sources(tmp_path)
    program = load_program(opendp_program(flag_plan(categories)),
                           f"opendp_no_key_{abs(hash(categories))}", tmp_path)
    for name, file in (("parquet", "t.parquet"), ("lower csv", "lower.csv")):
        inputs: dict = {}
        program.release(program.read_frame(str(tmp_path / file)), recorders(program, inputs),
                        rng=np.random.default_rng(0))
        got = tuple(np.asarray(inputs[(q, 0)], dtype=float).ravel().tolist() for q in "hst")
        histogram, grouped, crossed = answers(duck, found[name], categories)
        assert got == (histogram, grouped, [v for row in crossed for v in row]), name
        assert got == (counts, totals, table), name


def test_a_declared_empty_text_counts_no_cell_of_a_text_column_in_the_program(duck,
                                                                               tmp_path):
    """A text column with missing, empty and blank cells and declared "", "a": DuckDB counts
    no cell as "" (none has a key) and the two "a"; the program counted every cell with no
    key as "" (3 on the Parquet file: None, "", " "; on main too)."""
    from tests.release.test_program_stability import recorders

    frame = pd.DataFrame({"p": [1, 2, 3, 4, 5, 6], "c": ["a", "", None, "b", " a ", " "]})
    frame.to_parquet(tmp_path / "c.parquet", index=False)
    frame.to_csv(tmp_path / "c.csv", index=False)
    plan = Plan(Dataset("c"), (PlanQuery("h", "C", Histogram("c", cats("", "a")), PRECISE),),
                PrivacyUnit(), Accounting("basic"))
    program = load_program(opendp_program(plan), "opendp_empty_text", tmp_path)
    for file, kind in (("c.parquet", "parquet"), ("c.csv", "csv")):
        inputs: dict = {}
        program.release(program.read_frame(str(tmp_path / file)), recorders(program, inputs),
                        rng=np.random.default_rng(0))
        release = duck.run(FileSource(tmp_path / file, kind), CategoryCounts("c", ("", "a")))
        got = np.asarray(inputs[("h", 0)], dtype=float).tolist()
        assert got == release.counts.tolist() == [0, 2], file


#: The flag as a Parquet file written without pandas' metadata reads: object, booleans
#: beside None (pandas' bool dtype cannot hold the missing cell).
OBJECT_FLAGS = TABLE.assign(flag=pd.Series([True, False, True, True, False, True, None],
                                           dtype=object))


@pytest.mark.parametrize("categories, counts, outside", [
    (TEXTS, COUNTS, 0), (BOOLEANS, COUNTS, 0), (("TRUE", "false"), COUNTS, 0),
    (("TRUE", "true"), [4, 0], 2), (("yes", "false"), [0, 2], 4),
])
def test_the_reference_reads_each_boolean_cell_whatever_the_columns_dtype(duck, categories,
                                                                         counts, outside):
    """The reference decided "boolean" by the column's dtype: an object column of booleans
    beside None gave [0, 0] for declared "true", "false" (DuckDB on the same frame: the
    counts); and two declared texts of one boolean ("TRUE", "true") raised pandas'
    InvalidIndexError. Now each boolean cell is the first declared text that is it, on the
    typed and the object column alike, as DuckDB counts the same frame (hand counts)."""
    for frame in (TABLE, OBJECT_FLAGS):
        histogram = ref.histogram(frame, "flag", categories)
        assert (histogram["counts"].tolist(), histogram["outside"],
                histogram["missing"]) == (counts, outside, 1)
        release = duck.run(FrameSource(frame), CategoryCounts("flag", categories))
        assert (release.counts.tolist(), release.outside) == (counts, outside)
