"""Every release is kept (issue 32 item 4): the files a release publishes are stored byte for
byte with its ledger entry (checked against the recorded values hash), append-only like the
rest, read back identical; a ledger of layout 1 (tests/release/data/ledger_layout1.sqlite,
written by main before this) is upgraded in place and keeps working; ``python -m release
fetch N`` writes release N's files byte for byte."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest

from engine.sources import FrameSource
from plan.identity import DatasetIdentity
from release import Ledger, LedgerError, run
from release import cli as cli_module
from release.cli import BAD_DATA, BAD_LEDGER, BAD_PLAN, main
from release.files import release_json as published_json
from release.ledger import (
    FAILED_DRAW,
    NOT_KEPT_BEFORE,
    NOT_KEPT_FAILED,
    NOT_KEPT_LOST,
    SCHEMA_VERSION,
)
from release.package import keep_files, package_name, release_files
from tests.release_fixtures import every_kind_plan, visits

ADULT = DatasetIdentity("adult", "sha256:" + "a" * 64)
LAYOUT1 = Path(__file__).parent / "data" / "ledger_layout1.sqlite"


def values_hash_of(values: list) -> str:
    """The values hash of ``[{"id", "rows"}]`` computed here, as the ledger's docstring
    defines it (canonical JSON, sorted keys, no spaces)."""
    text = json.dumps(values, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


VALUES = [{"id": "n", "rows": [[[], 41.5]]}, {"id": "dx", "rows": [[["A"], 3], [["B"], -1]]}]


def release_json(entry: int, values: list = VALUES, claimed: str | None = None) -> bytes:
    """A release.json as release.files writes it (the fields the ledger checks)."""
    queries = [{"id": q["id"], "values": [{"group": g, "value": v} for g, v in q["rows"]]}
               for q in values]
    return json.dumps({"format": "epsilon-lab-release", "ledger_entry": entry,
                       "queries": queries,
                       "values_sha256": claimed or values_hash_of(values)}).encode()


def recorded(ledger: Ledger, values_hash: str = values_hash_of(VALUES)) -> int:
    return ledger.record_release(ADULT, epsilon=0.5, delta=0.0, accounting="basic",
                                 values_hash=values_hash, plan_json="{}",
                                 implementation="test").id


def files_rows(path: Path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT * FROM release_files ORDER BY rowid").fetchall()
    finally:
        con.close()


# --- the ledger keeps them -------------------------------------------------------------------


def test_files_are_kept_and_returned_byte_for_byte_in_their_order(tmp_path):
    odd = bytes(range(256)) * 3   # every byte value, no text encoding on the way
    with Ledger(tmp_path / "l.sqlite") as ledger:
        entry = recorded(ledger)
        files = {"release.json": release_json(entry), "z.bin": odd, "a.csv": b"\xef\xbb\xbfx\n",
                 "empty.txt": b""}
        ledger.store_files(entry, files)
        back = ledger.release_files(entry)
        assert back == files and list(back) == list(files)
        assert ledger.file_names() == {entry: tuple(files)}
        assert ledger.verify() == []
    rows = files_rows(tmp_path / "l.sqlite")
    assert [(r[1], r[2]) for r in rows] == [(n, hashlib.sha256(d).hexdigest())
                                           for n, d in files.items()]


@pytest.mark.parametrize("bad", ["claimed", "values", "entry", "missing", "not json"])
def test_files_whose_release_json_is_not_the_recorded_release_are_refused(tmp_path, bad):
    """The claimed hash, the hash of the values listed, and the entry number must all be the
    ledger's; nothing is stored otherwise."""
    other = [{"id": "n", "rows": [[[], 41.0]]}]
    with Ledger(tmp_path / "l.sqlite") as ledger:
        entry = recorded(ledger)
        document = {"claimed": release_json(entry, claimed=values_hash_of(other)),
                    # the claim is right, a value was changed
                    "values": release_json(entry, other, claimed=values_hash_of(VALUES)),
                    "entry": release_json(entry + 1),
                    "not json": b"\x00 not a release"}.get(bad)
        files = {"release.csv": b"x"} | ({} if document is None else
                                         {"release.json": document})
        with pytest.raises(LedgerError, match="not kept"):
            ledger.store_files(entry, files)
        assert ledger.release_files(entry) == {} and ledger.file_names() == {}
        # the right one is then kept
        ledger.store_files(entry, {"release.json": release_json(entry)})
        assert ledger.file_names() == {entry: ("release.json",)}


def test_files_are_kept_once_never_for_a_failed_draw_nor_a_budget_entry(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        budget = ledger.set_budget(ADULT, 5.0).id
        failed = recorded(ledger, FAILED_DRAW)
        entry = recorded(ledger)
        with pytest.raises(LedgerError, match="draw failed"):
            ledger.store_files(failed, {"release.json": release_json(failed)})
        with pytest.raises(LedgerError, match="no release"):
            ledger.store_files(budget, {"release.json": release_json(budget)})
        ledger.store_files(entry, {"release.json": release_json(entry), "a.csv": b"1"})
        with pytest.raises(LedgerError, match="already"):
            ledger.store_files(entry, {"release.json": release_json(entry), "b.csv": b"2"})
        with pytest.raises(ValueError, match="plain file names"):
            ledger.store_files(entry, {"../x": b"", "release.json": release_json(entry)})
        assert ledger.release_files(entry) == {"release.json": release_json(entry),
                                               "a.csv": b"1"}
        releases = {r.id: r for r in ledger.releases()}
        assert ledger.why_no_files(releases[failed]) == NOT_KEPT_FAILED
        assert ledger.verify() == []


@pytest.mark.parametrize("sql", [
    "UPDATE release_files SET bytes = x'00'", "UPDATE release_files SET name = 'x'",
    "DELETE FROM release_files"])
def test_sql_around_the_api_cannot_change_or_remove_a_kept_file(tmp_path, sql):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        entry = recorded(ledger)
        ledger.store_files(entry, {"release.json": release_json(entry), "a.csv": b"1,2\n"})
    before = files_rows(path)
    con = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        con.execute(sql)
    con.close()
    assert files_rows(path) == before


def test_a_kept_file_changed_past_the_triggers_shows_and_is_not_served(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        entry = recorded(ledger)
        ledger.store_files(entry, {"release.json": release_json(entry), "a.csv": b"1,2\n"})
    con = sqlite3.connect(path)
    con.execute("DROP TRIGGER release_files_no_update")
    con.execute("UPDATE release_files SET bytes = x'312c330a' WHERE name = 'a.csv'")
    con.commit()
    con.close()
    with Ledger(path) as ledger:
        assert ledger.verify() == [f"entry {entry}: its kept file a.csv does not match its hash"]
        with pytest.raises(LedgerError, match="a.csv"):
            ledger.release_files(entry)


# --- a ledger written before releases kept their files ----------------------------------------


def test_a_layout_1_ledger_from_main_is_upgraded_in_place_and_keeps_working(tmp_path):
    """ledger_layout1.sqlite was written by main's code (how: make_ledger_layout1.py beside
    it): a budget of 2, a release of 0.5, a failed draw of 0.25."""
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(LAYOUT1.read_bytes())
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM ledger_meta WHERE key = 'schema'").fetchone() == ("1",)
    entries = con.execute("SELECT * FROM entries ORDER BY id").fetchall()
    con.close()
    with Ledger(path) as ledger:
        assert ledger.verify() == []
        old = ledger.releases()
        assert [(r.epsilon, r.values_hash == FAILED_DRAW) for r in old] == [(0.5, False),
                                                                           (0.25, True)]
        assert [ledger.why_no_files(r) for r in old] == [NOT_KEPT_BEFORE, NOT_KEPT_FAILED]
        assert ledger.file_names() == {} and ledger.release_files(old[0].id) == {}
        with pytest.raises(LedgerError, match="not this release's"):   # its hash is not these
            ledger.store_files(old[0].id, {"release.json": release_json(old[0].id)})
        assert ledger.status(ADULT).remaining_epsilon == 1.25
        entry = recorded(ledger)
        ledger.store_files(entry, {"release.json": release_json(entry)})
        assert ledger.verify() == []
    con = sqlite3.connect(path)
    meta = dict(con.execute("SELECT key, value FROM ledger_meta").fetchall())
    assert meta["schema"] == str(SCHEMA_VERSION) and meta["files_from"] == str(len(entries) + 1)
    # the old rows are unchanged; the columns added since (who made them) are empty
    assert [r[:-2] for r in con.execute("SELECT * FROM entries ORDER BY id").fetchall()
            ][:len(entries)] == entries
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):   # its trigger is back
        con.execute("UPDATE ledger_meta SET value = '1' WHERE key = 'schema'")
    con.close()
    with Ledger(path) as ledger:   # opened again: nothing to upgrade, the same answers
        assert [ledger.why_no_files(r) for r in ledger.releases()[:2]] == [NOT_KEPT_BEFORE,
                                                                          NOT_KEPT_FAILED]
        assert ledger.file_names() == {entry: ("release.json",)}
        assert ledger.verify() == []


def test_a_copy_of_the_ledger_file_holds_the_files(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        entry = recorded(ledger)
        ledger.store_files(entry, {"release.json": release_json(entry), "b": b"\x01"})
    copy = tmp_path / "elsewhere" / "copy.sqlite"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    with Ledger(copy) as ledger:
        assert ledger.release_files(entry)["b"] == b"\x01"


# --- real releases ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kept(tmp_path_factory):
    """A release of every kind, its files kept: (ledger path, release, files built)."""
    path = tmp_path_factory.mktemp("kept") / "ledger.sqlite"
    with Ledger(path) as ledger:
        released = run(every_kind_plan(), FrameSource(visits()), ledger=ledger)
        files, problem = keep_files(released, ledger)
    assert problem == ""
    return path, released, files


@pytest.mark.slow   # a real release of every kind
def test_a_real_release_of_every_kind_is_kept_whole(kept):
    path, released, files = kept
    entry = released.record.id
    package = package_name(entry)
    assert list(files)[-1] == package == f"release-{entry}.zip"
    assert {"release.csv", "release.json", "card.json", "plan.json", "report.html"} <= set(files)
    with zipfile.ZipFile(io.BytesIO(files[package])) as archive:   # the same bytes inside
        assert {n: archive.read(n) for n in archive.namelist()} == {
            n: d for n, d in files.items() if n != package}
    with Ledger(path) as ledger:
        assert ledger.release_files(entry) == files
        assert ledger.verify() == []
    record = json.loads(files["release.json"])
    assert record["values_sha256"] == released.values_hash == values_hash_of(
        [q.values_record() for q in released.queries])


@pytest.mark.slow   # a real release
def test_files_that_cannot_be_kept_leave_the_release_recorded_and_say_so(tmp_path,
                                                                          monkeypatch):
    def broken(self, release_id, files):
        raise LedgerError("the disk is full")

    with Ledger(tmp_path / "l.sqlite") as ledger:
        released = run(every_kind_plan(), FrameSource(visits()), ledger=ledger)
        monkeypatch.setattr(Ledger, "store_files", broken)
        files, problem = keep_files(released, ledger)
        assert set(files) == set(release_files(released))   # this run's files, all there
        assert files["release.json"] == published_json(released)
        assert f"release #{released.record.id} is recorded" in problem
        assert "the disk is full" in problem
        [record] = ledger.releases()
        assert ledger.why_no_files(record) == NOT_KEPT_LOST


# --- python -m release fetch -----------------------------------------------------------------


@pytest.fixture(scope="module")
def released_by_cli(tmp_path_factory):
    """``python -m release`` on every_kind_plan's data: (ledger, --out folder, --package)."""
    root = tmp_path_factory.mktemp("cli")
    plan, data = root / "plan.json", root / "visits.csv"
    plan.write_text(every_kind_plan().to_json())
    visits().to_csv(data, index=False)
    ledger, out, package = root / "ledger.sqlite", root / "out", root / "package.zip"
    code = main(["--plan", str(plan), "--data", str(data), "--ledger", str(ledger),
                 "--out", str(out), "--package", str(package)])
    assert code == 0
    return ledger, out, package


@pytest.mark.slow   # a real release
def test_fetch_writes_what_the_release_wrote_byte_for_byte(released_by_cli, tmp_path, capsys):
    ledger, out, package = released_by_cli
    with Ledger(ledger) as book:
        [record] = book.releases()
    fetched = tmp_path / "fetched"
    assert main(["fetch", str(record.id), "--ledger", str(ledger), "--out", str(fetched)]) == 0
    assert f"release #{record.id}" in capsys.readouterr().out
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(["release.csv", "release.json", "card.json"])   # as before
    for name in written:
        assert (fetched / name).read_bytes() == (out / name).read_bytes()
    assert (fetched / f"release-{record.id}.zip").read_bytes() == package.read_bytes()
    with zipfile.ZipFile(package) as archive:
        for name in archive.namelist():
            assert (fetched / name).read_bytes() == archive.read(name)


@pytest.mark.slow   # a real release
def test_fetch_refuses_clearly(released_by_cli, tmp_path, capsys):
    ledger, _, _ = released_by_cli
    assert main(["fetch", "99", "--ledger", str(ledger), "--out", str(tmp_path / "o")]) == (
        BAD_PLAN)
    assert "has no release #99" in capsys.readouterr().err
    blocked = tmp_path / "a file"
    blocked.write_text("")
    assert main(["fetch", "1", "--ledger", str(ledger), "--out", str(blocked / "o")]) == BAD_DATA
    assert "could not be written" in capsys.readouterr().err
    assert main(["fetch", "1", "--ledger", str(tmp_path / "none.sqlite"), "--out",
                 str(tmp_path / "o")]) == BAD_LEDGER
    assert "there is no ledger" in capsys.readouterr().err
    assert not (tmp_path / "none.sqlite").exists() and not (tmp_path / "o").exists()


def test_fetch_of_a_release_without_files_says_why(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite"
    path.write_bytes(LAYOUT1.read_bytes())
    for entry, why in ((2, NOT_KEPT_BEFORE), (3, NOT_KEPT_FAILED)):
        assert main(["fetch", str(entry), "--ledger", str(path), "--out",
                     str(tmp_path / "o")]) == BAD_PLAN
        assert why in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_the_release_command_is_unchanged_by_the_fetch_subcommand(capsys):
    assert main(["--plan", "p.json"]) == BAD_PLAN
    assert "give --data, --out" in capsys.readouterr().err
    assert cli_module.main(["--example-plan"]) == 0


def test_the_fetch_command_a_page_quotes_names_the_ledger_unless_it_is_the_default(
        tmp_path, monkeypatch):
    """``--out DIR`` always (it is required); ``--ledger`` for any ledger but the default one,
    quoted for a shell (a space in the path)."""
    from release.cli import fetch_command
    from release.ledger import default_path

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "home" / "data"))
    assert fetch_command(3, default_path()) == "python -m release fetch 3 --out DIR"
    mine = tmp_path / "my ledgers" / "ledger.sqlite"
    assert fetch_command(3, mine) == f"python -m release fetch 3 --ledger '{mine}' --out DIR"
