"""Partition selection over a number column finds, ranks and labels its groups alike in a
Parquet file, a frame and the same table's CSV (``engine.cells`` rule 6): every key it finds
(``DistinctValues(limit=None)``) is the cell's canonical key (``engine.cells.cell_key``), a
text, whatever the column's type: a typed integer 12, a double 12.0 and a CSV's ``12``,
``0012``, `` 12 `` and ``12.0`` are the one group ``"12"``, ranked under max groups by
``text:"12"`` and released as ``12``. Before, a typed column's keys were numbers (ranked by
``number:12``) and its CSV's texts, so under max groups 1 the two kept other groups (seed 0:
18, 22 against 24, 16).

Checked on DuckDB against the pandas reference (``tests/engine_reference.py``, each
person's one group chosen by the md5 of its key's text), on the release itself (the same
labels from Parquet and CSV) and on Spark (``-m spark``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine import (
    CategoryCounts,
    Contribution,
    DistinctValues,
    Engine,
    FileSource,
    FrameSource,
)
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref

PEOPLE = 40


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=1)


def two_codes(folder: Path, typed: list, written: dict[str, list[str]]) -> dict[str, object]:
    """40 people with one row of each of two codes (max groups 1 keeps one): the typed codes
    as Parquet and a frame, and each list of written cells as a CSV (its column is text)."""
    frame = pd.DataFrame({"p": np.repeat(np.arange(PEOPLE), 2), "code": typed * PEOPLE})
    frame.to_parquet(folder / "codes.parquet", index=False)
    out: dict[str, object] = {"parquet": FileSource(folder / "codes.parquet", "parquet"),
                              "frame": FrameSource(frame)}
    for name, cells in written.items():
        path = folder / f"{name}.csv"
        path.write_text("p,code\n" + "".join(f"{p},{cells[i % 2]}\n"
                                             for p in range(PEOPLE) for i in range(2)))
        out[f"{name} csv"] = FileSource(path, "csv")
    return out


def selected_groups(backend, source, seed: int) -> tuple[tuple, list]:
    """(the keys partition selection finds, their counts under max groups 1)."""
    keys = backend.run(source, DistinctValues("code", limit=None)).values
    query = CategoryCounts("code", keys, Contribution("p", 2, 1, seed=seed))
    return tuple(keys), backend.run(source, query).counts.tolist()


def reference_groups(keys: tuple[str, str], seed: int) -> list:
    """The reference's kept counts of the text keys (a CSV written with exactly these
    texts): each person's one group chosen by the md5 of ``text:"<key>"``."""
    frame = pd.DataFrame({"p": np.repeat(np.arange(PEOPLE), 2), "code": list(keys) * PEOPLE})
    codes = ref.cell_codes(frame["code"], keys)
    return ref.bounded_cells(codes, frame, "p", 2, 2, 1, seed, ref.texts(keys)).tolist()


#: (typed codes, CSV spellings of them, the keys found: each code's canonical key by hand).
CASES = {
    "integer": ([1, 2], {"plain": ["1", "2"], "padded": ["0001", " 2 "], "decimal": ["1.0",
                                                                                  "2e0"]},
                ("1", "2")),
    "double": ([12.0, 2.0], {"plain": ["12", "2"], "as written": ["12.0", "2.0"]},
               ("12", "2")),
    "fraction": ([1.5, -2.25], {"plain": ["1.5", "-2.25"]}, ("-2.25", "1.5")),
    "int64 ends": ([2**63 - 1, -2**63], {"plain": [str(2**63 - 1), str(-2**63)]},
                   ("-9223372036854775808", "9223372036854775807")),
    "negative zero": ([-0.0, 7.0], {"plain": ["-0", "7"], "zero": ["0.0", "7"]},
                      ("0", "7")),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("case", list(CASES))
def test_partition_selection_keeps_a_number_columns_groups_as_on_its_csv(duck, tmp_path,
                                                                        case, seed):
    """Every format finds the same keys (texts) and keeps the reference's counts (each
    person: one row of each code, so each count is at most 40 and they sum to 40); on main
    the Parquet file and the frame found numbers and kept other groups."""
    typed, written, keys = CASES[case]
    expected = reference_groups(keys, seed)
    assert sum(expected) == PEOPLE
    for name, source in two_codes(tmp_path, typed, written).items():
        assert selected_groups(duck, source, seed) == (keys, expected), name


def test_missing_and_nan_keys_are_no_group(duck, tmp_path):
    """A missing cell and NaN have no key (rule 5): no group, on every format; a typed 3.0
    and the CSV's "3", "03" are one group."""
    frame = pd.DataFrame({"p": range(6), "code": [3.0, np.nan, None, 3.0, 4.5, -0.0]})
    frame.to_parquet(tmp_path / "m.parquet", index=False)
    (tmp_path / "m.csv").write_text("p,code\n0,3\n1,NaN\n2,\n3,03\n4,4.5\n5,-0.0\n")
    for source in (FileSource(tmp_path / "m.parquet", "parquet"), FrameSource(frame),
                   FileSource(tmp_path / "m.csv", "csv")):
        keys = duck.run(source, DistinctValues("code", limit=None)).values
        assert tuple(keys) == ("0", "3", "4.5")
        assert duck.run(source, CategoryCounts("code", keys)).counts.tolist() == [1, 2, 1]


def decimal_codes(folder: Path) -> dict[str, object]:
    """A Parquet DECIMAL(4, 2) code column (1.50, 12.00, missing) and its CSV as written."""
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq

    codes = [Decimal("1.50"), Decimal("12.00"), None, Decimal("1.50")]
    pq.write_table(pa.table({"p": [1, 2, 3, 4], "code": pa.array(codes, pa.decimal128(4, 2))}),
                   folder / "dec.parquet")
    (folder / "dec.csv").write_text("p,code\n1,1.5\n2,12.00\n3,\n4,1.5\n")
    return {"parquet": FileSource(folder / "dec.parquet", "parquet"),
            "csv": FileSource(folder / "dec.csv", "csv")}


def test_a_decimal_columns_keys_are_its_doubles_keys(duck, tmp_path):
    """A DECIMAL is keyed as its double (``cell_key``): 1.50 is "1.5", 12.00 is "12", as
    the CSV's 1.5 and 12.00; the counts by those keys 2 and 1."""
    for name, source in decimal_codes(tmp_path).items():
        keys = duck.run(source, DistinctValues("code", limit=None)).values
        assert tuple(keys) == ("1.5", "12"), name
        assert duck.run(source, CategoryCounts("code", keys)).counts.tolist() == [2, 1], name


def test_one_persons_rows_move_only_their_own_kept_group(duck, tmp_path):
    """Stability of the ranking by key text: with one person's rows removed, the counts
    under max rows 2 and max groups 1 move in one group and by at most 2 (the other people
    keep the same groups: each person's ranking hashes their own keys alone), for a typed
    integer key and for its CSV."""
    rng = np.random.default_rng(5)
    sizes = rng.integers(1, 6, 30)
    frame = pd.DataFrame({"p": np.repeat(np.arange(30), sizes),
                          "code": rng.integers(-3, 9, int(sizes.sum()))})

    def counts(table: pd.DataFrame, name: str, keys: tuple) -> np.ndarray:
        table.to_csv(tmp_path / f"{name}.csv", index=False)
        query = CategoryCounts("code", keys, Contribution("p", 2, 1, seed=1))
        return np.array([duck.run(source, query).counts for source in (
            FrameSource(table), FileSource(tmp_path / f"{name}.csv", "csv"))])

    keys = duck.run(FrameSource(frame), DistinctValues("code", limit=None)).values
    assert keys == tuple(sorted(str(k) for k in set(frame["code"])))   # texts, text order
    base = counts(frame, "base", keys)
    assert (base[0] == base[1]).all()
    for person in range(30):
        change = np.abs(counts(frame[frame["p"] != person], f"n{person}", keys) - base)
        assert (change.sum(axis=1) <= 2).all() and (np.count_nonzero(change, axis=1) <= 1).all()


def test_a_release_finds_and_keeps_number_groups_alike_from_parquet_and_csv(
        tmp_path, duck, monkeypatch):
    """One plan (partition selection of a sum by a double code, max groups 1) released on
    the Parquet file and on its CSV: the threshold is drawn on the same true counts, the
    reference's, under the same names, and the same labels are released ("12", "2"; on
    main the Parquet file's were "12.0", "2.0", its counts other groups')."""
    from plan.model import (
        Bounds,
        Dataset,
        GroupBy,
        Noise,
        Plan,
        PlanQuery,
        PrivacyUnit,
        Threshold,
    )
    from release import Ledger, run
    from release.measurements import Certified

    seen: list[dict] = []
    draw = Certified.draw

    def spy(self, value):
        if isinstance(value, dict):      # the threshold's draw: {key's name: true count}
            seen.append(dict(value))
        return draw(self, value)

    monkeypatch.setattr(Certified, "draw", spy)
    people = 400
    frame = pd.DataFrame({"p": np.repeat(np.arange(people), 2), "code": [12.0, 2.0] * people,
                          "x": 1.0})
    frame.to_parquet(tmp_path / "r.parquet", index=False)
    frame.to_csv(tmp_path / "r.csv", index=False)
    plan = Plan(Dataset("codes"), (
        PlanQuery("g", "Sum by code", GroupBy("code", "sum", "x", Bounds(0, 1)),
                  Noise("laplace", "pure", epsilon=1.0),
                  threshold=Threshold("discrete_laplace", 1e-7, epsilon=1.0)),),
        PrivacyUnit("p", 2, 1))
    texts = pd.DataFrame({"p": frame["p"], "code": ["12", "2"] * people})
    keys = ("12", "2")
    counts = ref.bounded_cells(ref.cell_codes(texts["code"], keys), texts, "p", 2, 2, 1, 0,
                               ref.texts(keys)).tolist()
    assert sum(counts) == people
    for i, name in enumerate(("r.parquet", "r.csv")):
        seen.clear()
        with Ledger(tmp_path / f"ledger{i}.sqlite") as ledger:
            release = run(plan, FileSource(tmp_path / name, name.split(".")[1]),
                          ledger=ledger, engine=Engine(duck))
        assert [float(c) for c in seen[0].values()] == counts, name
        assert list(seen[0]) == list(keys), name
        # each code is kept by about 200 people: both clear a threshold of a few tens
        assert {g for g, _ in release.queries[0].rows} == {("12",), ("2",)}, name


@pytest.mark.spark
def test_spark_finds_and_keeps_a_number_columns_groups_as_duckdb(shared_spark, tmp_path):
    """The Spark engine on the Parquet file (a typed integer) and its padded CSV: the keys
    "1", "2" and the reference's kept counts (on main: 1, 2 and other groups)."""
    from engine.spark_backend import SparkBackend

    spark = SparkBackend(session=shared_spark)
    typed, written, keys = CASES["integer"]
    expected = reference_groups(keys, 0)
    found = two_codes(tmp_path, typed, {"padded": written["padded"]})
    for name in ("parquet", "padded csv"):
        assert selected_groups(spark, found[name], 0) == (keys, expected), name
    for name, source in decimal_codes(tmp_path).items():   # Spark wrote "1.50", "12.00"
        assert spark.run(source, DistinctValues("code", limit=None)).values == ("1.5", "12"), \
            name


def hard_doubles() -> list[float]:
    """Doubles whose shortest text Java 17 does not write (2^60), float32-sized ones, the
    extremes and 1000 random doubles (random bits: every exponent; and uniform ones)."""
    rng = np.random.default_rng(0)
    bits = rng.integers(0, 2**63, 500, dtype=np.int64).view(np.float64)
    spread = [float(x) for x in bits if np.isfinite(x)]
    uniform = (rng.uniform(-1e6, 1e6, 500) * 10.0 ** rng.integers(-8, 8, 500)).tolist()
    return [2.0**60, 0.1 + 0.2, 1e-05, 5e-324, 1.7976931348623157e308, 123456.789, 1e16,
            1.0000000000000002e16, -0.0, 0.1, 1.5e-4, 2.0**53 + 2, -2.5e-7, 9.999999747378752e-06,
            2.2250738585072014e-308, 1e-310] + spread + uniform


@pytest.mark.spark
def test_spark_keys_doubles_floats_and_uint64_ids_as_duckdb(shared_spark, tmp_path):
    """Spark's key of a double is Python's repr (``engine.cells.cell_key``) for every hard
    double (on s18-numkeys before: Java's 1.15292150460684698E18 for 2^60); a float32
    column's keys are its doubles' (0.10000000149011612, not 0.1); a Parquet UINT64 person
    id above 2^53 (Spark's DECIMAL(20,0)) is one person per id, as in DuckDB (before: 40
    people as one, counts 0, 1, 0)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine.cells import cell_key
    from engine.queries import ColumnInfo
    from engine.spark_backend import SparkBackend, _person_text

    values = hard_doubles()
    df = shared_spark.createDataFrame(pd.DataFrame({"i": np.arange(len(values)),
                                                    "x": values}))
    got = dict(df.select("i", _person_text(df["x"], ColumnInfo("x", "float", "double"))
                         .alias("k")).collect())
    wrong = [(v, got[i], cell_key(v)) for i, v in enumerate(values) if got[i] != cell_key(v)]
    assert not wrong, wrong[:5]

    duck = DuckDBBackend(threads=1)
    spark = SparkBackend(session=shared_spark)
    floats = pa.array([0.1, 2.5, 1e-5, 3.0] * 20, pa.float32())
    pq.write_table(pa.table({"p": np.arange(80) // 2, "code": floats}), tmp_path / "f.parquet")
    source = FileSource(tmp_path / "f.parquet", "parquet")
    expected = tuple(sorted({cell_key(float(x)) for x in floats.to_numpy()}))
    assert expected == ("0.10000000149011612", "2.5", "3", "9.999999747378752e-06")
    assert spark.run(source, DistinctValues("code", limit=None)).values == expected
    assert selected_groups(spark, source, 0) == selected_groups(duck, source, 0)

    ids = np.repeat(np.arange(PEOPLE, dtype=np.uint64) + np.uint64(2**60), 3)
    pq.write_table(pa.table({"p": pa.array(ids, pa.uint64()),
                             "g": np.tile(["a", "b", "c"], PEOPLE)}), tmp_path / "u.parquet")
    source = FileSource(tmp_path / "u.parquet", "parquet")
    query = CategoryCounts("g", ("a", "b", "c"), Contribution("p", 1, 1, seed=0))
    counts = spark.run(source, query).counts.tolist()
    assert sum(counts) == PEOPLE      # one row kept per person: 40 people
    assert counts == duck.run(source, query).counts.tolist()
