"""A blank CSV (0 bytes, only blank lines or spaces) on the data-folder and command-line paths:
a plain message saying what is wrong and how to fix it, never DuckDB's parser text ("Parser
Error: syntax error at or near ...") nor a traceback. A CSV with a header row and no data rows
is an empty dataset: released (its counts 0), never refused on what the data holds.
"""

from __future__ import annotations

import pytest

from engine import CountRows, EngineError, FileSource
from engine.duckdb_backend import DuckDBBackend
from plan.model import Count, Dataset, Noise, Plan, PlanQuery

BLANK = {"empty": b"", "blank lines": b"\n\n\r\n", "spaces": b"  \n \t \n",
         "a byte-order mark only": b"\xef\xbb\xbf"}


def _says_what_and_how(text: str) -> None:
    assert "holds no header row" in text and "first row naming its columns" in text
    assert "Parser Error" not in text and "syntax error" not in text
    assert "Traceback" not in text


@pytest.mark.parametrize("what", sorted(BLANK))
def test_the_engine_says_the_file_has_no_header(tmp_path, what) -> None:
    path = tmp_path / "blank.csv"
    path.write_bytes(BLANK[what])
    with pytest.raises(EngineError) as raised:
        DuckDBBackend(threads=1).run(FileSource(path, "csv"), CountRows())
    _says_what_and_how(str(raised.value))


def _plan() -> Plan:
    return Plan(Dataset("blank"), (
        PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),))


@pytest.mark.parametrize("what", ["empty", "spaces"])
def test_the_command_line_says_the_file_has_no_header(tmp_path, capsys, what) -> None:
    from release.cli import main

    data = tmp_path / "blank.csv"
    data.write_bytes(BLANK[what])
    plan = tmp_path / "plan.json"
    plan.write_text(_plan().to_json())
    code = main(["--plan", str(plan), "--data", str(data), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"])
    err = capsys.readouterr().err
    assert code != 0
    _says_what_and_how(err)


def test_a_header_without_rows_is_released_with_a_count_of_zero(tmp_path, monkeypatch) -> None:
    """Refusing it would depend on the data (one person added makes it a dataset)."""
    from release.cli import main
    from release.measurements import Certified

    drawn = []
    monkeypatch.setattr(Certified, "draw", lambda self, value: drawn.append(value) or value)
    data = tmp_path / "header.csv"
    data.write_bytes(b"pid,age\n")
    plan = tmp_path / "plan.json"
    plan.write_text(_plan().to_json())
    assert main(["--plan", str(plan), "--data", str(data), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"]) == 0
    assert [float(v) for v in drawn] == [0.0]


@pytest.mark.parametrize("what", ["empty", "spaces"])
def test_the_opendp_program_refuses_a_file_without_a_header(tmp_path, capsys, what) -> None:
    """As the release refuses it (the file, not its data); on main a plan of counts only
    released the empty file."""
    from release.programs import opendp_program
    from tests.release_fixtures import load_program

    program = load_program(opendp_program(_plan()), f"blank_{what}", tmp_path)
    data = tmp_path / "blank.csv"
    data.write_bytes(BLANK[what])
    assert program.main(["--data", str(data)]) == 1
    assert "holds no header row" in capsys.readouterr().err


def test_a_first_row_of_delimiters_still_names_columns_by_position(tmp_path) -> None:
    """Not a blank file: its columns are named by position, as before (one record read)."""
    path = tmp_path / "commas.csv"
    path.write_bytes(b",,\n1,2,3\n")
    assert DuckDBBackend(threads=1).run(FileSource(path, "csv"), CountRows()).rows == 1


def test_the_spark_program_refuses_a_file_without_a_header(tmp_path) -> None:
    """Its header is read in Python from a local file (no Spark session needed here)."""
    from release.programs import spark_program
    from tests.release_fixtures import load_program

    program = load_program(spark_program(_plan()), "blank_spark", tmp_path)
    data = tmp_path / "blank.csv"
    data.write_bytes(BLANK["spaces"])
    with pytest.raises(program.Refused, match="holds no header row"):
        program.csv_header(None, str(data))


def test_a_first_line_of_spaces_before_rows_is_read_as_before(tmp_path, capsys) -> None:
    """Not a blank file: main read its first line of spaces as a header of one column
    (``column1``) and the 3 lines below as its records, on every path; the branch refused it
    as holding "only blank lines or spaces", which is untrue. Only a file whose every line is
    blank or spaces is refused (the cases above)."""
    from release.cli import main
    from release.programs import opendp_program, spark_program
    from tests.release_fixtures import load_program

    path = tmp_path / "spaces_first.csv"
    path.write_bytes(b"   \na,b\n1,2\n3,4\n")
    assert DuckDBBackend(threads=1).run(FileSource(path, "csv"), CountRows()).rows == 3
    program = load_program(opendp_program(_plan()), "spaces_first", tmp_path)
    assert len(program.read_frame(str(path))) == 3
    spark = load_program(spark_program(_plan()), "spaces_first_spark", tmp_path)
    assert spark.csv_header(None, str(path)) == (["   "], ",")
    plan = tmp_path / "plan.json"
    plan.write_text(_plan().to_json())
    assert main(["--plan", str(plan), "--data", str(path), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"]) == 0
