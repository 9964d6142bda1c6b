"""One reading of every cell on every path (issue 31, items 2–4; ``engine.cells``): the Data
page (an upload's relation), an upload's release (its cells), the data folder and the command
line (a CSV file through DuckDB, ``release.run`` and ``python -m release``) read the same
people, the same groups, the same cells and the same identity.

Expected values are written by hand from the rule, never produced by the code under test.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

from dashboard.data.upload import load_upload
from dashboard.release_panel import content_hash_of, source_of
from engine import Engine, FileSource
from engine.cells import is_missing, read_cells
from engine.duckdb_backend import DuckDBBackend, csv_text_reader
from engine.queries import (
    CategoryCounts,
    Contribution,
    CountRows,
    DistinctValues,
    RowsPerPerson,
)
from plan.build import build_plan
from plan.identity import content_digest
from plan.model import (
    Categories,
    Count,
    Dataset,
    Histogram,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
)
from tests.release_fixtures import capture_draws

#: Person 12 written five ways (one person, five rows) and ten other people with one row
#: each; its group key written "0012" once and "12" four times (one group).
FIVE = "\n".join(["pid,code"]
                 + [f"{pid},{code}" for pid, code in
                    [("12", "0012"), ("012", "12"), ("12.0", "12"), ("1.2e1", "12"),
                     (" 12", "12")]]
                 + [f"p{i},7" for i in range(1, 11)]) + "\n"
PEOPLE, ROWS = 11, 15


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return DuckDBBackend(threads=1)


@pytest.fixture()
def five(tmp_path):
    """(the upload, the same bytes as a data-folder / command-line file)."""
    path = tmp_path / "five.csv"
    path.write_text(FIVE)
    return load_upload(FIVE.encode(), "five.csv"), FileSource(path, "csv")


def _sources(loaded, file):
    """Every reading path's source: the page's relation, the upload's release, the file."""
    return {"page": loaded.relation.source, "upload release": source_of(loaded),
            "data folder / command line": file}


def test_five_spellings_are_one_person_on_every_path(duck, five) -> None:
    loaded, file = five
    for path, source in _sources(loaded, file).items():
        sizes = duck.run(source, RowsPerPerson("pid"))
        assert int(sizes.people.sum()) == PEOPLE, path
        assert dict(zip(sizes.rows.tolist(), sizes.people.tolist(), strict=True)) == {
            1: 10, 5: 1}, path
        kept = duck.run(source, CountRows(Contribution("pid", 1)))
        assert kept.rows == PEOPLE, path           # max rows 1: one row per person
        assert kept.dropped_rows == ROWS - PEOPLE, path


def test_two_spellings_of_a_key_are_one_group_on_every_path(duck, five) -> None:
    loaded, file = five
    for path, source in _sources(loaded, file).items():
        keys = duck.run(source, DistinctValues("code", limit=None))   # partition selection's
        assert sorted(str(k) for k in keys.values) == ["12", "7"], path
        counts = duck.run(source, CategoryCounts("code", (12, 7)))
        assert counts.counts.tolist() == [5, 10], path
        counts = duck.run(source, CategoryCounts("code", ("0012", "7")))
        assert counts.counts.tolist() == [5, 10], path


def _plan() -> Plan:
    return Plan(Dataset("five"), (
        PlanQuery("count", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("codes", "Codes", Histogram("code", Categories((12, 7), "public")),
                  Noise("laplace", "pure", epsilon=1.0)),
    ), PrivacyUnit("pid", 1))


def test_the_real_releases_read_one_person(tmp_path, monkeypatch, five) -> None:
    """``release.run`` on the upload's cells and on the file, and ``python -m release`` on
    the file: the count with max rows 1 keeps 11 rows (one per person), the histogram 1 row
    of group 12 and 10 of group 7, and all three are one dataset (one identity)."""
    from release import Ledger, run
    from release.cli import main

    loaded, file = five
    drawn = capture_draws(monkeypatch)
    plan = _plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        up = run(plan, source_of(loaded), ledger=ledger, engine=Engine(DuckDBBackend()),
                 content_hash=content_hash_of(loaded))
        cli = run(plan, file, ledger=ledger, engine=Engine(DuckDBBackend()))
    assert up.dataset.content_hash == cli.dataset.content_hash
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan.to_json())
    code = main(["--plan", str(plan_path), "--data", str(file.path), "--ledger",
                 str(tmp_path / "cli.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"])
    assert code == 0
    assert len(drawn) == 6
    for count, codes in (drawn[0:2], drawn[2:4], drawn[4:6]):
        assert float(np.asarray(count).sum()) == PEOPLE
        assert np.asarray(codes, dtype=float).tolist() == [1.0, 10.0]


# --------------------------------------------------------------------------------------------
# Malformed records (item 3): the same cells out of every reader, never a refusal

MALFORMED = {
    "bad bytes, short, long, blank, quotes": (
        b"id,x,y\n1,a,b\n2,\xff\xfe,c\n3,short\n4,l,o,ng\n\n5,\"q,uo\",z\n6,\"a\"\"b\",w\n"
        b"7,\"multi\nline\",v\n8,\xef\xbf\xbd,u\n9, NA ,\n",
        [["1", "a", "b"], ["3", "short", None], ["4", "l", "o"], ["5", "q,uo", "z"],
         ["6", 'a"b', "w"], ["7", "multi\nline", "v"], ["9", None, None]]),
    "a byte-order mark and Windows line ends": (
        b"\xef\xbb\xbfid,x,y\r\n1,2,3\r\n\r\n4,,6\r\n",
        [["1", "2", "3"], ["4", None, "6"]]),
    "semicolons, a bad byte in the last record": (
        b"id;x\n1;1,5\n2;2\n3;\x80\n",
        [["1", "1,5"], ["2", "2"]]),
    "a quote never closed": (
        b'id,x\n1,a\n2,"open\n3,b\n',
        [["1", "a"], ["2", "open\n3,b"]]),
    # a bad byte in a field past the header's width goes with that field: the record is
    # kept (read_cells, which the exported programs embed, used to drop it)
    "a bad byte in a field that is cut off": (
        b"pid,x\n1,5\n2,6,\xff\n3,7\n4,8,\xef\xbf\xbd,z\n",
        [["1", "5"], ["2", "6"], ["3", "7"], ["4", "8"]]),
    "blank lines before the header, a row of empty fields": (
        b"\n\nid,x\n1,2\n,\n3,4\n",
        [["1", "2"], [None, None], ["3", "4"]]),
    # one column: DuckDB kept each blank line as a record of one missing cell (with two
    # columns or more it skips it); a line of spaces or a quoted empty field is a record
    "one column, blank lines inside and after": (
        b'age\n1\n\n2\n \n""\n3\n\n\n',
        [["1"], ["2"], [None], [None], ["3"]]),
    "one column, Windows line ends and blank lines": (
        b"age\r\n\r\n1\r\n2\r\n\r\n3\r\n\r\n",
        [["1"], ["2"], ["3"]]),
}


def _normal(rows) -> list[list[object]]:
    return [[None if is_missing(c) else c for c in row] for row in rows]


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_records_read_alike_on_every_path(tmp_path, duck, name) -> None:
    data, expected = MALFORMED[name]
    path = tmp_path / "m.csv"
    path.write_bytes(data)
    _, python = read_cells(data)
    assert _normal(python.to_numpy().tolist()) == expected
    reader, params, _ = csv_text_reader(FileSource(path, "csv"))
    con = duck._cursor()
    try:
        from_duckdb = con.execute(f"SELECT * FROM {reader}", params).fetchall()
    finally:
        con.close()
    assert _normal(from_duckdb) == expected
    loaded = load_upload(data, "m.csv")
    assert _normal(loaded.cells.to_numpy().tolist()) == expected
    # one identity: the upload's and the file's digests are of the same cells
    assert content_hash_of(loaded) == content_digest(FileSource(path, "csv"))


def test_a_malformed_record_never_refuses_the_command_line(tmp_path, monkeypatch) -> None:
    """The review's case: a record with a bad UTF-8 byte deep in the file made ``python -m
    release`` refuse ("cannot be read to identify it: CSV Error on Line: 202")."""
    from release.cli import main

    drawn = capture_draws(monkeypatch)
    lines = [f"p{i},{i % 3}" for i in range(400)]
    data = ("pid,code\n" + "\n".join(lines[:200])).encode() + b"\np-bad,\xff\n" + (
        "\n".join(lines[200:]) + "\n").encode()
    path = tmp_path / "bad.csv"
    path.write_bytes(data)
    plan = Plan(Dataset("bad"), (
        PlanQuery("count", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),),
        PrivacyUnit("pid", 1))
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan.to_json())
    code = main(["--plan", str(plan_path), "--data", str(path), "--ledger",
                 str(tmp_path / "l.sqlite"), "--out", str(tmp_path / "out"), "--budget", "5"])
    assert code == 0
    assert float(np.asarray(drawn[0]).sum()) == 400      # the bad record left out


# --------------------------------------------------------------------------------------------
# One identity (item 4)


@pytest.mark.parametrize("cell", ["1,500", "2,5", "inf", "?", "1e400", " 7 "])
def test_an_upload_and_its_file_have_one_identity(tmp_path, cell) -> None:
    """The upload used to be identified by its typed frame ("1,500" read as 1500, "inf"
    as missing, one "?" turning a column to text), the file by its cells: two budgets."""
    text = "pid,amount\n" + "".join(f"p{i},{i}\n" for i in range(30)) + f'px,"{cell}"\n'
    path = tmp_path / "a.csv"
    path.write_text(text)
    loaded = load_upload(text.encode(), "a.csv")
    assert content_hash_of(loaded) == content_digest(FileSource(path, "csv"))


def test_a_parquet_folder_is_the_files_spark_reads(tmp_path, duck) -> None:
    """Spark leaves out a folder's ``_extra.parquet`` (a name starting with _ is hidden to
    it); DuckDB's release and the digest read it, so one folder had two contents. Now no
    path reads it: the count and the identity are the folder's without it."""
    import pandas as pd

    folder = tmp_path / "table"
    folder.mkdir()
    pd.DataFrame({"x": [1, 2, 3]}).to_parquet(folder / "part-0.parquet")
    before = content_digest(FileSource(folder, "parquet"))
    pd.DataFrame({"x": [9] * 5}).to_parquet(folder / "_extra.parquet")
    (folder / ".staging").mkdir()
    pd.DataFrame({"x": [8]}).to_parquet(folder / ".staging" / "part-9.parquet")
    source = FileSource(folder, "parquet")
    assert duck.run(source, CountRows()).rows == 3
    assert content_digest(source) == before


# --------------------------------------------------------------------------------------------
# Every query kind: an upload's page answers are its release's (the review's "trust" item)

#: An upload whose cells its typed frame read otherwise than its release did: " 12,500" (no
#: number by rule 4; the upload read its thousands separator), "1e3" (1000 either way),
#: "inf" (a number a bound clamps; the frame set it to missing), "unknown" (missing), padded
#: " blue " and "red " (the keys "blue" and "red"), "N/A" (missing), and a record of empty
#: cells (a row of the release; the frame left it out).
ODD = ("pid,amount,team,band\n"
       + "".join(f"p{i},{i},red,{'ab'[i % 2]}\n" for i in range(40))
       + 'q1," 12,500", blue , a\nq2,1e3,blue,b \nq3,inf,N/A,a\nq4,unknown,red ,N/A\n,,,\n')


@pytest.fixture()
def odd(tmp_path):
    """(the upload through the page's own reader, the same bytes as a data-folder file)."""
    path = tmp_path / "odd.csv"
    path.write_text(ODD)
    return load_upload(ODD.encode(), "odd.csv"), FileSource(path, "csv")


def test_an_uploads_page_answers_are_the_rules(odd) -> None:
    """The pages' true answers (``dashboard.data.true_answers``, over the upload's relation),
    written by hand from the cells by the rule of ``engine.cells``: 45 records; amount clamped to
    [0, 20000] is 0 + … + 39 = 780, 1e3 = 1000 and inf → 20000 (21780 over 42 values;
    " 12,500", "unknown" and the empty cell missing); team red 41, blue 2 (N/A and empty
    missing); team × band red/a 20, red/b 20, blue/a 1, blue/b 1. Before, the page read the
    typed frame: 44 rows and a sum of 14280 (12,500 read as a number, inf as missing)."""
    from dashboard.data import true_answers

    loaded, _ = odd
    relation = loaded.relation
    assert float(true_answers.count(relation).true_value) == 45
    total = true_answers.bounded_sum(relation, "amount", lower=0.0, upper=20000.0)
    assert float(total.true_value) == 21780 and total.missing_rows == 3
    mean_sum, mean_count = true_answers.bounded_mean_parts(relation, "amount", lower=0.0,
                                                           upper=20000.0)
    assert (float(mean_sum.true_value), float(mean_count.true_value)) == (21780, 42)
    counts = true_answers.histogram(relation, "team", categories=("red", "blue"))
    assert counts.true_value.tolist() == [41, 2] and counts.missing_rows == 2
    table = true_answers.crosstab(relation, "team", "band", row_categories=("red", "blue"),
                                  column_categories=("a", "b"))
    assert table.true_value.tolist() == [[20, 20], [1, 1]]


def _every_kind_aggregates(source, unit) -> list:
    from release.run import _plan_aggregates
    from tests.release.test_stability import every_kind_plan

    return _plan_aggregates(build_plan(every_kind_plan(unit)),
                            Engine(DuckDBBackend(threads=1)), source)


@pytest.fixture()
def odd_people(tmp_path):
    """``test_stability.people(0)`` (the columns and keys of its every-kind plan) written as
    a CSV with odd cells, uploaded through the page's reader and kept as a file."""
    from tests.release.test_stability import people

    frame = people(0).astype(object)
    odd = {"x": ["1e1", " 12,500", "inf", "unknown", " 3 ", "-inf", "N/A", "7.5"],
           "key": [" k03", "k04 ", "N/A", "K05", "k06", "", "k07", "k08"],
           "colour": [" red", "blue ", "NA", "red", "green", "red", "", "blue"]}
    for column, cells in odd.items():
        frame.loc[: len(cells) - 1, column] = cells
    text = frame.to_csv(index=False)
    path = tmp_path / "people.csv"
    path.write_text(text)
    return load_upload(text.encode(), "people.csv"), FileSource(path, "csv")


@pytest.mark.parametrize("unit", [PrivacyUnit(), PrivacyUnit("pid", 2, 2)],
                         ids=["one row per person", "person id"])
def test_every_kind_reads_an_upload_on_the_page_as_its_release_and_the_file(odd_people,
                                                                             unit) -> None:
    """Every query kind a plan holds (``test_stability.every_kind_plan``: the engine queries
    a release answers, the ones the pages simulate) gives the same aggregates on the page's
    relation of the upload, on the upload's release (its cells) and on the same bytes as a
    data-folder file or on the command line."""
    loaded, file = odd_people
    page = _every_kind_aggregates(loaded.relation.source, unit)
    for path, source in (("upload release", source_of(loaded)),
                         ("data folder / command line", file)):
        other = _every_kind_aggregates(source, unit)
        for mine, theirs in zip(page, other, strict=True):
            np.testing.assert_equal(_plain(mine), _plain(theirs), err_msg=path)


def _plain(value: Any) -> Any:
    """Aggregates as nested dicts, lists and arrays (``assert_equal`` compares those)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# --------------------------------------------------------------------------------------------
# A declared category counted on the page as in the release (review of s14-upload)

#: A column of scores declared categorical with the categories "1.5" and "2". By the rule
#: (``engine.cells``, rule 5) a cell is its canonical key: "2.0" is the key "2", but "1.50"
#: is no whole number and stays "1.50", which is not "1.5". By hand: "1.5" twice, "2" twice
#: ("2" and "2.0"); "1.50" and "3" outside.
SCORES = "score\n1.5\n1.50\n2\n2.0\n1.5\n3\n"


@pytest.mark.parametrize("word", ["", "unknown\n"], ids=["numbers", "one person's word"])
def test_a_declared_category_counts_on_the_page_as_in_the_release(tmp_path, word) -> None:
    """The Statistics page read the declared texts as numbers when the column's guessed type
    was numbers (every cell a number), so "1.50" counted as "1.5" on the page ([3, 2]) and not
    in the release ([2, 2]); one more person's "unknown" turned the column to text and the
    page's count of "1.5" for everyone else back to 2. Now the page, the upload's release and
    the same bytes as a data-folder file count [2, 2], with or without that person."""
    from dashboard.analysis.plan_entries import categories_of
    from dashboard.analysis.stats_plan import answer_query
    from dashboard.analysis.stats_query import page_spec
    from dashboard.data.model import ColumnDomain
    from dashboard.data.relation import Relation
    from release.run import _plan_aggregates

    text = SCORES + word
    path = tmp_path / "scores.csv"
    path.write_text(text)
    declared = {"score": ColumnDomain("categorical", categories=("1.5", "2"),
                                      source="codebook")}
    loaded = dataclasses.replace(load_upload(text.encode(), "scores.csv"), domains=declared)
    outside = 2 + (word != "")
    spec = page_spec(loaded, "histogram", "score", unit=None, seed=1)
    assert answer_query(loaded.relation, spec).true_value.tolist() == [2, 2]
    folder = Relation(FileSource(path, "csv"))     # the same file in the data folder
    assert answer_query(folder, spec).true_value.tolist() == [2, 2]
    plan = Plan(Dataset("scores"), (PlanQuery(
        "h", "Counts of score", Histogram("score", categories_of(loaded, "score", None)),
        Noise("laplace", "pure", epsilon=1.0)),), PrivacyUnit())
    for name, source in (("upload release", source_of(loaded)),
                         ("data folder", FileSource(path, "csv"))):
        counts = _plan_aggregates(build_plan(plan), Engine(DuckDBBackend(threads=1)),
                                  source)[0][0][0]
        assert (counts.counts.tolist(), counts.outside) == ([2, 2], outside), name


def test_one_persons_cell_never_changes_the_pages_count_of_the_others(tmp_path) -> None:
    """Stability of the page's true answer: adding one person whose score is "unknown" moves
    no count of a declared category (it falls outside). On main the page counted "1.5" 3
    times without that person and 2 times with them (the column's guessed type changed)."""
    from dashboard.analysis.stats_plan import answer_query
    from dashboard.analysis.stats_query import page_spec
    from dashboard.data.model import ColumnDomain
    from dashboard.data.relation import Relation

    declared = {"score": ColumnDomain("categorical", categories=("1.5", "2"),
                                      source="codebook")}
    found = {}
    for name, text in (("without", SCORES), ("with", SCORES + "unknown\n")):
        loaded = dataclasses.replace(load_upload(text.encode(), "s.csv"), domains=declared)
        spec = page_spec(loaded, "histogram", "score", unit=None, seed=1)
        path = tmp_path / f"{name}.csv"
        path.write_text(text)
        found[name] = (answer_query(loaded.relation, spec).true_value.tolist(),
                       answer_query(Relation(FileSource(path, "csv")), spec).true_value.tolist())
    assert found["with"] == found["without"] == ([2, 2], [2, 2])


#: Digits grouped by underscores, which engine.cells reads without them and DuckDB 1.5's own
#: cast misread: 21 digits before an underscore ten times too large, "+00_0_48" as 0, and
#: one in a fraction not at all. The key column spells 48 three ways.
UNDERSCORED = ("x,k\n100000000000000000000_0,+00_0_48\n12345678901234567890_1,4_8\n"
               "1_0,48\n.5_5,a\n+00_0_48,b\n")


def test_underscored_numbers_read_alike_on_every_path(duck, tmp_path) -> None:
    """The same bytes as an upload (the page's relation and its release) and as a data-folder
    file: one true sum and one key. By hand: 1e21 + 123456789012345678901 + 10 + 0.55 + 48
    clamped to [0, 2e21] (nothing clamped), five values; the keys 48 and a, b. On main the
    file read 1e22 and 1.2e21 (both clamped to 2e21), 0.55 as missing and +00_0_48 as 0."""
    from fractions import Fraction

    from engine.queries import BoundedSum

    path = tmp_path / "underscored.csv"
    path.write_text(UNDERSCORED)
    loaded = load_upload(UNDERSCORED.encode(), "underscored.csv")
    exact = (10**21 + 123456789012345678901 + 10 + Fraction(55, 100) + 48)
    for name, source in _sources(loaded, FileSource(path, "csv")).items():
        total = duck.run(source, BoundedSum("x", 0.0, 2e21))
        assert (total.rows, total.missing) == (5, 0), name
        assert total.total == pytest.approx(float(exact), rel=1e-15), name
        keys = duck.run(source, DistinctValues("k", limit=None))
        assert sorted(str(v) for v in keys.values) == ["48", "a", "b"], name
        counts = duck.run(source, CategoryCounts("k", ("48",)))
        assert counts.counts.tolist() == [3], name
