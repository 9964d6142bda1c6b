"""One rule for a long field on every path that reads a CSV (``engine.cells``, rule 2): a record
with a kept field longer than ``cells.MAX_FIELD_CHARS`` characters is dropped, every shorter one
read — by DuckDB (the data folder, ``release.run``, ``python -m release``), the upload, the
exported OpenDP program and Spark (the engine and the Spark program) alike, never a traceback.

Before, the programs' ``csv`` module refused a field over 131,072 characters (``_csv.Error``),
and DuckDB dropped a record over 2,000,000 bytes as written, whatever its fields, so the same
bytes gave other true answers on other paths. Expected values are written by hand.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from dashboard.data.upload import load_upload
from dashboard.release_panel import source_of
from engine import BoundedSum, CountRows, Engine, FileSource
from engine.cells import MAX_FIELD_CHARS, read_cells
from engine.duckdb_backend import DuckDBBackend
from plan.model import Bounds, Count, Dataset, Noise, Plan, PlanQuery, Sum
from release.programs import opendp_program, spark_program
from tests.release_fixtures import load_program

L = MAX_FIELD_CHARS
#: A field of exactly L characters, 10 of them quotes: as written (quoted, each quote doubled)
#: it is L + 12 bytes long, yet it holds L characters and is read.
QUOTED = '"' + '""' * 10 + "w" * (L - 10) + '"'

#: (person, note, more, amount, extra field past the header or None); kept or not by the rule.
RECORDS = [
    ("p1", "x" * 200_000, "", 5, None, True),         # 200 KB: over the csv module's default
    ("p2", "y" * L, "", 7, None, True),               # exactly L characters
    ("p3", "z" * (L + 1), "", 11, None, False),       # one character over: dropped
    ("p4", QUOTED, "", 13, None, True),               # L characters, L + 12 bytes as written
    ("p5", "\u00e9" * L, "", 17, None, True),          # L characters, 2 L bytes in UTF-8
    ("p6", "a" * L, "b" * L, 19, None, True),         # two fields of L: a line over 2 MB
    ("p7", "short", "", 23, None, True),
    ("p8", "s", "", 29, "e" * (L + 1), True),          # a long field past the header is cut
]
KEPT = [r for r in RECORDS if r[5]]
COUNT = len(KEPT)                                      # 7
TOTAL = 5 + 7 + 13 + 17 + 19 + 23 + 29                  # 113


def csv_bytes() -> bytes:
    lines = ["pid,note,more,amount"]
    for pid, note, more, amount, extra, _ in RECORDS:
        lines.append(",".join([pid, note, more, str(amount)] + ([extra] if extra else [])))
    return ("\n".join(lines) + "\n").encode("utf-8")


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> tuple[bytes, Path]:
    raw = csv_bytes()
    path = tmp_path_factory.mktemp("long") / "long.csv"
    path.write_bytes(raw)
    return raw, path


def _plan() -> Plan:
    return Plan(Dataset("long"), (
        PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("amount", "Total amount", Sum("amount", Bounds(0, 100, "public")),
                  Noise("laplace", "pure", epsilon=1.0)),
    ))


def test_the_python_reading_keeps_every_record_within_the_limit(data) -> None:
    raw, _ = data
    header, frame = read_cells(raw)
    assert header == ["pid", "note", "more", "amount"]
    assert frame["c0"].tolist() == [r[0] for r in KEPT]
    assert frame["c1"].str.len().tolist() == [len(r[1]) if r[0] != "p4" else L for r in KEPT]


def test_duckdb_and_the_upload_give_the_same_true_answers(data) -> None:
    raw, path = data
    duck = DuckDBBackend(threads=1)
    loaded = load_upload(raw, "long.csv")
    for what, source in {"data folder": FileSource(path, "csv"),
                         "upload (page)": loaded.relation.source,
                         "upload (release)": source_of(loaded)}.items():
        assert duck.run(source, CountRows()).rows == COUNT, what
        total = duck.run(source, BoundedSum("amount", 0.0, 100.0))
        assert (total.total, total.rows) == (TOTAL, COUNT), what
    assert any("longer than" in w and "left out" in w for w in loaded.warnings)


def _capture(monkeypatch) -> list[Any]:
    from release.measurements import Certified

    drawn: list[Any] = []

    def record(self, value):  # the true input of every draw, returned without noise
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    return drawn


def test_the_release_and_the_command_line_read_the_same_records(data, tmp_path,
                                                                monkeypatch) -> None:
    from release import Ledger, run
    from release.cli import main

    _, path = data
    drawn = _capture(monkeypatch)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(_plan(), FileSource(path, "csv"), ledger=ledger, engine=Engine(DuckDBBackend()))
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(_plan().to_json())
    assert main(["--plan", str(plan_path), "--data", str(path), "--ledger",
                 str(tmp_path / "cli.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"]) == 0
    assert [float(np.asarray(v).sum()) for v in drawn] == [COUNT, TOTAL] * 2


def test_the_opendp_program_gives_the_same_true_answers(data, tmp_path) -> None:
    """On main the program's ``csv`` module raised ``_csv.Error`` on the 200 KB field."""
    _, path = data
    program = load_program(opendp_program(_plan()), "long_fields_program", tmp_path)
    drawn: dict = {}

    def recorder(key):
        def record(value):
            drawn[key] = value
            return value
        return record

    measurements = [[recorder((q["id"], i)) for i, _ in enumerate(q["parts"])]
                    for q in program.QUERIES]
    program.release(program.read_frame(str(path)), measurements,
                    rng=np.random.default_rng(0))
    assert float(np.asarray(drawn[("n", 0)]).sum()) == COUNT
    assert float(np.asarray(drawn[("amount", 0)]).sum()) == TOTAL


def test_a_lower_limit_holds_on_every_python_and_duckdb_path(data, monkeypatch,
                                                             tmp_path) -> None:
    """The limit is read at each use (a test's smaller one holds on every path): at 200,000,
    p1's field of exactly 200,000 characters is read, the records of p2 to p6 are dropped."""
    import engine.cells as cells

    raw, path = data
    monkeypatch.setattr(cells, "MAX_FIELD_CHARS", 200_000)
    _, frame = read_cells(raw)
    assert frame["c0"].tolist() == ["p1", "p7", "p8"]
    total = DuckDBBackend(threads=1).run(FileSource(path, "csv"),
                                         BoundedSum("amount", 0.0, 100.0))
    assert (total.total, total.rows) == (5 + 23 + 29, 3)
    program = load_program(opendp_program(_plan()), "long_fields_low", tmp_path)
    monkeypatch.setattr(program, "MAX_FIELD_CHARS", 200_000)
    assert program.read_frame(str(path))["amount"].tolist() == ["5", "23", "29"]


@pytest.mark.spark
def test_spark_gives_the_same_true_answers(data, shared_spark, tmp_path) -> None:
    """The engine's Spark backend and the exported Spark program read the same records."""
    from engine.spark_backend import SparkBackend

    _, path = data
    spark = SparkBackend(session=shared_spark)
    source = FileSource(path, "csv")
    assert spark.run(source, CountRows()).rows == COUNT
    total = spark.run(source, BoundedSum("amount", 0.0, 100.0))
    assert (total.total, total.rows) == (TOTAL, COUNT)
    program = load_program(spark_program(_plan()), "long_fields_spark", tmp_path)
    rows = program.read_spark(shared_spark, str(path)).collect()
    assert sorted(int(r[0]) for r in rows) == sorted(r[3] for r in KEPT)
