"""One rule for a long record on every path that reads a CSV (``engine.cells``, rule 2): a
record whose kept fields hold more than ``cells.MAX_RECORD_CHARS`` characters together is
dropped, every other one read — by DuckDB (the data folder, ``release.run``, ``python -m
release``), the upload, the exported OpenDP program and Spark (the engine and the Spark
program) alike, never a traceback.

Before, the programs' ``csv`` module (and the upload's) refused a field over 131,072
characters (``_csv.Error``), and DuckDB dropped a record over 2,000,000 bytes as written,
whatever it held, so the same bytes gave other true answers on other paths. Expected values
are written by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dashboard.data.upload import load_upload
from dashboard.release_panel import content_hash_of, source_of
from engine import BoundedSum, CountRows, Engine, FileSource
from engine.cells import MAX_RECORD_CHARS, read_cells
from engine.duckdb_backend import DuckDBBackend
from plan.identity import content_digest
from plan.model import Plan
from release.programs import opendp_program, spark_program
from tests.release_fixtures import (
    capture_draws,
    count_and_sum_plan,
    load_program,
    release_and_cli_sums,
)

L = MAX_RECORD_CHARS


def _note(pid: str, amount: int, total: int, letter: str = "x", more: str = "") -> str:
    """A note that makes the record's kept fields hold ``total`` characters together."""
    return letter * (total - len(pid) - len(str(amount)) - len(more))


#: 10 quotes among L - 12 characters: as written (quoted, each quote doubled) the record is
#: 12 bytes longer than the characters it holds, which are counted.
QUOTED = '"' + '""' * 10 + "w" * (L - 10 - len("p4") - len("13")) + '"'
HALF = "b" * (L // 2)

#: (person, note, more, amount, a field past the header or None, kept by the rule)
RECORDS = [
    ("p1", "x" * 200_000, "", 5, None, True),             # over the csv module's default
    ("p2", _note("p2", 7, L), "", 7, None, True),          # exactly L characters
    ("p3", _note("p3", 11, L + 1), "", 11, None, False),   # one over: dropped
    ("p4", QUOTED, "", 13, None, True),                    # L characters, L + 12 as written
    ("p5", _note("p5", 17, L, "\u00e9"), "", 17, None, True),  # L characters, 2 L bytes
    ("p6", _note("p6", 19, L + 1, "a", HALF), HALF, 19, None, False),  # two fields: L + 1
    ("p7", "short", "", 23, None, True),
    ("p8", "s", "", 29, "e" * 300_000, True),              # past the header: never counted
]
KEPT = [r for r in RECORDS if r[5]]
COUNT = len(KEPT)                                          # 6
TOTAL = 5 + 7 + 13 + 17 + 23 + 29                          # 94


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
    return count_and_sum_plan("long")


def test_the_python_reading_keeps_every_record_within_the_limit(data) -> None:
    raw, _ = data
    header, frame = read_cells(raw)
    assert header == ["pid", "note", "more", "amount"]
    assert frame["c0"].tolist() == [r[0] for r in KEPT]
    chars = frame.apply(lambda column: column.str.len().fillna(0)).sum(axis=1)
    assert chars.tolist() == [200_003, L, L, L, 9, 5]


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
    assert any(f"2 rows hold more than {L:,} characters" in w for w in loaded.warnings)
    # one identity: the upload's and the file's digests are of the same records
    assert content_hash_of(loaded) == content_digest(FileSource(path, "csv"))


def test_the_release_and_the_command_line_read_the_same_records(data, tmp_path,
                                                                monkeypatch) -> None:
    _, path = data
    assert release_and_cli_sums(_plan(), path, tmp_path, monkeypatch) == [COUNT, TOTAL] * 2


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
    """The limit is read at each use (a test's smaller one holds on every path): at 200,003,
    p1's record of exactly 200,003 characters is read, the records of p2 to p6 are dropped,
    and p8's 300,000 characters past the header count for nothing."""
    import engine.cells as cells

    raw, path = data
    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", 200_003)
    _, frame = read_cells(raw)
    assert frame["c0"].tolist() == ["p1", "p7", "p8"]
    total = DuckDBBackend(threads=1).run(FileSource(path, "csv"),
                                         BoundedSum("amount", 0.0, 100.0))
    assert (total.total, total.rows) == (5 + 23 + 29, 3)
    program = load_program(opendp_program(_plan()), "long_fields_low", tmp_path)
    monkeypatch.setattr(program, "MAX_RECORD_CHARS", 200_003)
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


def test_a_wide_file_is_released_and_digested(tmp_path, monkeypatch) -> None:
    """1,500 columns: on the branch before this fix the length filter summed the fields in an
    expression nested one level per column, past DuckDB's depth limit (1000), and every read
    of a file of 989 columns or more failed (main reads 3,000). With the limit lowered to
    2,000 the record of 1,500 fields of 2 characters (3,001 with its amount) is dropped and
    those of 1 character (1,501) are read: every column is counted."""
    import engine.cells as cells
    from release import Ledger, run

    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", 2_000)
    names = ["amount"] + [f"f{i}" for i in range(1, 1500)]
    records = [(5, "v"), (7, "w"), (11, "vv"), (13, "v")]
    lines = [",".join(names)] + [",".join([str(a)] + [cell] * 1499) for a, cell in records]
    path, kept = tmp_path / "wide.csv", tmp_path / "kept.csv"
    path.write_text("\n".join(lines) + "\n")
    kept.write_text("\n".join(lines[:3] + lines[4:]) + "\n")   # the dropped record left out
    duck = DuckDBBackend(threads=1)
    source = FileSource(path, "csv")
    total = duck.run(source, BoundedSum("amount", 0.0, 100.0))
    assert (total.total, total.rows) == (5 + 7 + 13, 3)
    # the digest is of the records read: the same as the file without the dropped one
    assert content_digest(source) == content_digest(FileSource(kept, "csv"))
    drawn = capture_draws(monkeypatch)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(_plan(), source, ledger=ledger, engine=Engine(duck))
    assert [float(np.asarray(v).sum()) for v in drawn] == [3, 5 + 7 + 13]


@pytest.mark.spark
def test_spark_reads_a_file_of_3000_columns(shared_spark, tmp_path, monkeypatch) -> None:
    """Spark's filter was nested a level per column (the U+FFFD test on main, the length sum
    on the branch) and failed to plan on 3,000 columns ("An error occurred while calling
    filter"); one flat concatenation reads it, every column counted: with the limit at 4,000
    the record of 2,999 fields of 2 characters is dropped, those of 1 are read."""
    import engine.cells as cells
    from engine.spark_backend import SparkBackend

    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", 4_000)
    names = ["amount"] + [f"f{i}" for i in range(1, 3000)]
    records = [(5, "v"), (11, "vv"), (13, "v")]
    path = tmp_path / "wide.csv"
    path.write_text("\n".join([",".join(names)] + [",".join([str(a)] + [cell] * 2999)
                                                   for a, cell in records]) + "\n")
    total = SparkBackend(session=shared_spark).run(FileSource(path, "csv"),
                                                   BoundedSum("amount", 0.0, 100.0))
    assert (total.total, total.rows) == (5 + 13, 2)
    program = load_program(spark_program(_plan()), "wide_spark", tmp_path)
    monkeypatch.setattr(program, "MAX_RECORD_CHARS", 4_000)
    rows = program.read_spark(shared_spark, str(path)).collect()
    assert sorted(int(r[0]) for r in rows) == [5, 13]


def _unnamed_extra(limit: int) -> bytes:
    """Every record carries a field past the header (the upload names it 'column 4'); p1's
    three kept fields hold limit - 1 characters, limit + 1 with that field."""
    note = "x" * (limit - 1 - len("p1") - len("5"))
    return ("\n".join(["pid,note,amount", "p0,a,1,zz", f"p1,{note},5,zz", "p2,b,3,zz"])
            + "\n").encode()


def _past_the_uploads_columns(limit: int) -> bytes:
    """502 columns, the upload loads 500: the second record's 502nd field (within the
    header) holds the limit alone, so the record holds limit + 501 characters."""
    names = ["amount"] + [f"c{i}" for i in range(501)]
    records = [[str(a)] + ["v"] * 500 + [last] for a, last in ((1, "s"), (5, "x" * limit))]
    return ("\n".join(",".join(r) for r in [names, *records]) + "\n").encode()


def _quoted_crlf(limit: int) -> bytes:
    """p1's note, quoted, holds a CRLF (2 characters as read on every path): its record holds
    limit + 1 characters (limit if the CRLF were counted as 1)."""
    note = '"a\r\nb' + "x" * (limit + 1 - len("p1") - len("5") - 4) + '"'
    return ("\n".join(["pid,note,amount", "p0,a,1", f"p1,{note},5"]) + "\n").encode()


@pytest.mark.parametrize("case, amounts", [
    (_unnamed_extra, [1, 5, 3]), (_past_the_uploads_columns, [1]), (_quoted_crlf, [1])])
def test_the_upload_counts_a_record_as_the_rule_does(case, amounts, monkeypatch,
                                                     tmp_path) -> None:
    """The upload's release and the exported program (and the data folder) drop the same
    records. On the branch before this fix the upload counted its own columns (the field past
    the header it names 'column 4'; only the 500 columns it loads) and the text with its line
    breaks made LF (a quoted CRLF 1 character), so it dropped p1 in the first case and kept
    the long records of the other two."""
    import engine.cells as cells

    limit = 1_000
    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", limit)
    raw = case(limit)
    path = tmp_path / "case.csv"
    path.write_bytes(raw)
    duck = DuckDBBackend(threads=1)
    for what, source in {"data folder": FileSource(path, "csv"),
                         "upload (release)": source_of(load_upload(raw, "case.csv"))}.items():
        total = duck.run(source, BoundedSum("amount", 0.0, 100.0))
        assert (total.total, total.rows) == (sum(amounts), len(amounts)), what
    program = load_program(opendp_program(_plan()), f"upload_{case.__name__}", tmp_path)
    monkeypatch.setattr(program, "MAX_RECORD_CHARS", limit)
    assert program.read_frame(str(path))["amount"].tolist() == [str(a) for a in amounts]


#: (a field's text as written, whether it is a missing marker as DuckDB's reader reads it:
#: the whole field, any letter case, quoted or not; white space around it makes it none)
MARKER_FIELDS = [("NULL", True), ('"#N/A"', True), ("nan", True), ("<na>", True),
                 (" NULL", False), ("x", False)]


def _marker_record(field: str, limit: int) -> bytes:
    """p1's kept fields hold limit + 1 characters as read, one of them ``field``: over the
    limit if the field counts its letters, within it if it counts 0."""
    text = field.strip('"')
    note = "a" * (limit + 1 - len("p1") - len("5") - len(text))
    return f"pid,note,amount,flag\np0,s,1,\np1,{note},5,{field}\n".encode()


@pytest.mark.parametrize("field, marker", MARKER_FIELDS)
def test_a_missing_marker_counts_no_characters_on_every_path(field, marker, monkeypatch,
                                                             tmp_path) -> None:
    """DuckDB's reader makes a field that is a missing marker NULL (nullstr) before its
    length filter, which counts it 0 characters; on the branch before this fix the rule
    (read_cells, the programs, the upload) counted its letters, so p1's record was kept by
    the data folder's release and dropped by the upload and the OpenDP program. Now every
    path counts such a field 0 (p1 kept), and any other field its letters (p1 dropped)."""
    import engine.cells as cells

    limit = 1_000
    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", limit)
    raw = _marker_record(field, limit)
    amounts = [1, 5] if marker else [1]
    path = tmp_path / "marker.csv"
    path.write_bytes(raw)
    assert read_cells(raw)[1]["c2"].tolist() == [str(a) for a in amounts]
    duck = DuckDBBackend(threads=1)
    for what, source in {"data folder": FileSource(path, "csv"),
                         "upload (release)": source_of(load_upload(raw, "marker.csv"))}.items():
        total = duck.run(source, BoundedSum("amount", 0.0, 100.0))
        assert (total.total, total.rows) == (sum(amounts), len(amounts)), what
    program = load_program(opendp_program(_plan()), "marker_program", tmp_path)
    monkeypatch.setattr(program, "MAX_RECORD_CHARS", limit)
    assert program.read_frame(str(path))["amount"].tolist() == [str(a) for a in amounts]


@pytest.mark.spark
def test_spark_counts_a_missing_marker_as_no_characters(shared_spark, monkeypatch,
                                                        tmp_path) -> None:
    """As DuckDB and engine.cells count it (the test above): Spark's engine and the Spark
    program counted a marker's letters before this fix and dropped p1's record."""
    import engine.cells as cells
    from engine.spark_backend import SparkBackend

    limit = 1_000
    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", limit)
    program = load_program(spark_program(_plan()), "marker_spark", tmp_path)
    monkeypatch.setattr(program, "MAX_RECORD_CHARS", limit)
    for i, (field, marker) in enumerate(MARKER_FIELDS):
        path = tmp_path / f"marker{i}.csv"
        path.write_bytes(_marker_record(field, limit))
        amounts = [1, 5] if marker else [1]
        total = SparkBackend(session=shared_spark).run(FileSource(path, "csv"),
                                                       BoundedSum("amount", 0.0, 100.0))
        assert (total.total, total.rows) == (sum(amounts), len(amounts)), field
        rows = program.read_spark(shared_spark, str(path)).collect()
        assert sorted(int(r[0]) for r in rows) == amounts, field


def test_records_too_long_counts_in_chunks_with_the_same_answers(monkeypatch) -> None:
    """The upload's count of each record (``records_too_long``) reads the records in chunks:
    across chunk ends (3 records a chunk here), short records among them, a blank line and a
    limit of 10, its answers are each record's own."""
    import engine.cells as cells

    monkeypatch.setattr(cells, "MAX_RECORD_CHARS", 10)
    monkeypatch.setattr(cells, "_COUNT_CHUNK", 3)
    # (record, over 10 characters over the header's 2 columns)
    records = [("a,bbbbbbbbb", False), ("a,bbbbbbbbbb", True), ("a", False), ("", None),
               ("aaaaa,bbbbbb,ccc", True), ("aaaaa,bbbbb,cccccccc", False),
               ("NULL,bbbbbbbbbb", False), ('"x\r\ny",bbbbbbb', True), ("q,w", False)]
    text = "h1,h2\r\n" + "\r\n".join(r for r, _ in records) + "\r\n"
    expected = [over for _, over in records if over is not None]
    assert cells.records_too_long(text, ",").tolist() == expected
    assert cells.records_too_long(text, ",", 4).tolist() == expected[:4]


def test_records_too_long_does_not_hold_every_record() -> None:
    """Its memory is bounded by a chunk, not the file: on the branch before this fix it built
    every record's fields as lists at once, a peak of about 29 times a 5 MB text of short
    records (an upload of 25.7 MiB went from 690 MB to 1,187 MB); now about 5 times (most of
    it the csv reader's own copy of the text, 4 bytes a character)."""
    import tracemalloc

    from engine.cells import records_too_long

    text = "pid,note,amount\n" + "".join(f"p{i},ab,{i % 7}\n" for i in range(400_000))
    tracemalloc.start()
    try:
        over = records_too_long(text, ",")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert over.size == 400_000 and not over.any()
    assert peak < 8 * len(text), peak / len(text)
