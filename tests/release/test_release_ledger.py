"""The ledger: append-only, one budget per dataset (name + content hash), over-budget releases
refused with nothing recorded, corrupt and locked files named and left intact, its path kept
out of the repository, and eight processes racing for a budget that fits five."""

from __future__ import annotations

import dataclasses
import multiprocessing
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from plan.identity import DatasetIdentity, content_digest
from release import Ledger, LedgerError, OverBudget
from release import ledger as ledger_module
from release import paths as paths_module
from release.ledger import LEDGER_ENV, default_path, ledger_path
from tests.release_fixtures import RACE_EPSILON, race_worker

REPO = Path(__file__).resolve().parents[2]
ADULT = DatasetIdentity("adult", "sha256:" + "a" * 64)
OTHER = DatasetIdentity("adult", "sha256:" + "b" * 64)


def record(ledger: Ledger, epsilon: float, delta: float = 0.0,
           dataset: DatasetIdentity = ADULT):
    return ledger.record_release(dataset, epsilon=epsilon, delta=delta, accounting="basic",
                                 values_hash="sha256:" + "0" * 64, plan_json="{}",
                                 implementation="test")


def rows(path: Path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        return con.execute("SELECT * FROM entries ORDER BY id").fetchall()
    finally:
        con.close()


# --- append-only ------------------------------------------------------------------------------


def test_the_api_has_no_way_to_change_or_remove_an_entry(tmp_path):
    public = {n for n in dir(Ledger) if not n.startswith("_")}
    assert public == {"close", "datasets", "releases", "status", "verify", "set_budget",
                      "record_release", "knows_legacy_identities", "store_files",
                      "release_files", "file_names", "why_no_files", "allotments",
                      "allotment", "set_allotment", "check_may_release"}
    with Ledger(tmp_path / "l.sqlite") as ledger:
        entry = record(ledger, 0.5)
        with pytest.raises(dataclasses.FrozenInstanceError):
            entry.epsilon = 0.0  # type: ignore[misc]
        assert ledger.releases()[0].epsilon == 0.5


@pytest.mark.parametrize("sql", [
    "UPDATE entries SET epsilon = 0", "DELETE FROM entries",
    "UPDATE datasets SET content_hash = 'x'", "DELETE FROM datasets",
    "UPDATE ledger_meta SET value = 'x'", "DELETE FROM ledger_meta"])
def test_sql_around_the_api_cannot_change_a_row_either(tmp_path, sql):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(ADULT, 2.0)
        record(ledger, 0.5)
    before = rows(path)
    con = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        con.execute(sql)
    con.close()
    assert rows(path) == before
    with Ledger(path) as ledger:
        assert ledger.verify() == []


def test_an_edit_made_past_the_triggers_shows_in_verify(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(ADULT, 1.0)
        record(ledger, 0.5)
        record(ledger, 0.5)
    con = sqlite3.connect(path)
    con.execute("DROP TRIGGER entries_no_update")
    con.execute("UPDATE entries SET epsilon = 0.1 WHERE kind = 'release'")
    con.commit()
    con.close()
    with Ledger(path) as ledger:
        problems = ledger.verify()
    assert len(problems) == 2 and all("does not match its hash" in p for p in problems)


# --- budgets ----------------------------------------------------------------------------------


def test_the_budget_is_set_once_per_dataset_and_a_new_hash_is_a_new_dataset(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        first = ledger.set_budget(ADULT, 1.0, only_if_new=True, reason="first --budget")
        assert first is not None and first.epsilon == 1.0
        assert ledger.set_budget(ADULT, 9.0, only_if_new=True) is None
        assert ledger.status(ADULT).budget.epsilon == 1.0
        # the same name with other content (the file changed) is another dataset
        assert ledger.status(OTHER).budget is None
        assert ledger.set_budget(OTHER, 3.0, only_if_new=True).epsilon == 3.0
        assert ledger.status(ADULT).budget.epsilon == 1.0
        assert [s.dataset for s in ledger.datasets()] == [ADULT, OTHER]


def test_over_budget_is_refused_and_nothing_is_recorded(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(ADULT, 1.0, delta=1e-6)
        record(ledger, 0.5)
        record(ledger, 0.25, delta=5e-7)
        before = rows(path)
        with pytest.raises(OverBudget, match=r"ε = 0.25 left of 1 .*nothing was recorded"):
            record(ledger, 0.2500000000000001)
        with pytest.raises(OverBudget, match="δ"):
            record(ledger, 0.125, delta=6e-7)
        assert rows(path) == before
        # exactly the rest fits (the check is exact, not in floats)
        record(ledger, 0.25, delta=5e-7)
        status = ledger.status(ADULT)
        assert (status.releases, status.spent_epsilon, status.remaining_epsilon) == (3, 1.0,
                                                                                     0.0)
        with pytest.raises(OverBudget):
            record(ledger, 2.0**-1074)
        assert ledger.verify() == []


def test_a_budget_event_later_holds_and_releases_on_other_datasets_do_not_count(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.set_budget(ADULT, 0.5)
        record(ledger, 0.5, dataset=OTHER)
        record(ledger, 0.5)
        with pytest.raises(OverBudget):
            record(ledger, 0.1)
        ledger.set_budget(ADULT, 0.75, reason="raised by the steward")
        record(ledger, 0.25)
        assert Fraction(ledger.status(ADULT).spent_epsilon) == Fraction(3, 4)
        assert ledger.verify() == []


# --- damaged and locked files -----------------------------------------------------------------


def test_a_file_that_is_not_sqlite_is_named_and_left_untouched(tmp_path):
    path = tmp_path / "l.sqlite"
    path.write_bytes(b"these are my notes, not a ledger\n" * 200)
    before = path.read_bytes()
    with pytest.raises(LedgerError, match="damaged or is not a SQLite file.*left untouched"):
        Ledger(path)
    assert path.read_bytes() == before


def test_a_damaged_ledger_is_named_and_nothing_is_lost(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(ADULT, 100.0)
        for _ in range(200):
            record(ledger, 0.25)
    data = bytearray(path.read_bytes())
    page = 4096
    data[2 * page:2 * page + 64] = b"\xff" * 64  # scribble over a page of the entries
    path.write_bytes(bytes(data))
    with pytest.raises(LedgerError, match="integrity check|damaged"):
        Ledger(path)
    assert path.read_bytes() == bytes(data)


def test_another_programs_database_is_not_taken_over(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE customers (id INTEGER)")
    con.commit()
    con.close()
    with pytest.raises(LedgerError, match="not an Epsilon Lab ledger"):
        Ledger(path)
    con = sqlite3.connect(path)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    con.close()
    assert tables == {"customers"}


def test_a_locked_ledger_says_so_and_records_nothing(tmp_path):
    path = tmp_path / "l.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(ADULT, 2.0)
        record(ledger, 0.5)
    before = rows(path)
    ledger = Ledger(path, timeout=0.2)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(LedgerError, match="locked by another process.*Nothing was "
                                              "recorded"):
            record(ledger, 0.5)
        with pytest.raises(LedgerError, match="locked"):
            Ledger(path, timeout=0.2)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert rows(path) == before
    record(ledger, 0.5)  # the lock gone, the same ledger object works again
    assert ledger.status(ADULT).releases == 2 and ledger.verify() == []
    ledger.close()


# --- where the ledger lives -------------------------------------------------------------------


def test_the_default_path_is_the_users_data_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setattr(paths_module.sys, "platform", "linux")
    expected = tmp_path / "home" / ".local" / "share" / "epsilon-lab" / "ledger.sqlite"
    assert default_path() == expected == ledger_path()
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert ledger_path() == tmp_path / "xdg" / "epsilon-lab" / "ledger.sqlite"
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "chosen.sqlite"))
    assert ledger_path() == tmp_path / "chosen.sqlite"
    assert ledger_path(tmp_path / "given.sqlite") == tmp_path / "given.sqlite"
    with Ledger() as ledger:
        assert ledger.path == tmp_path / "chosen.sqlite"
    assert (tmp_path / "chosen.sqlite").exists()


def test_the_ledger_is_never_inside_the_repository(monkeypatch, tmp_path):
    for inside in (REPO / "ledger.sqlite", REPO / "data" / "x" / "l.sqlite"):
        with pytest.raises(LedgerError, match="inside the repository"):
            ledger_path(inside)
        monkeypatch.setenv(LEDGER_ENV, str(inside))
        with pytest.raises(LedgerError, match=f"set {LEDGER_ENV}"):
            Ledger()
    # a home folder inside the repository would put the default there: refused as well
    monkeypatch.delenv(LEDGER_ENV)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(REPO / "home"))
    monkeypatch.setattr(paths_module.sys, "platform", "linux")
    with pytest.raises(LedgerError, match="inside the repository"):
        ledger_path()
    assert not (REPO / "home").exists() and not (REPO / "ledger.sqlite").exists()


# --- concurrency ------------------------------------------------------------------------------


@pytest.mark.slow
def test_eight_processes_racing_for_a_budget_that_fits_five(tmp_path, monkeypatch):
    """Each process runs release.run on the same file; the budget (5 × the plan's ε) is set
    first; all eight release at once. Exactly five are recorded, three refused.

    A spawned process re-runs the parent's ``__main__`` from its path: after an AppTest in
    the same test process that is app.py, which a bare interpreter cannot run (the children
    died before the barrier and the queue waited empty, in full runs only). The children
    import what they need; they never run the parent's main script."""
    main = sys.modules["__main__"]
    monkeypatch.delattr(main, "__file__", raising=False)
    monkeypatch.setattr(main, "__spec__", None, raising=False)
    data = tmp_path / "people.csv"
    data.write_text("x\n" + "1\n" * 50)
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget(DatasetIdentity("race", content_digest(data)), 5 * RACE_EPSILON)
    ctx = multiprocessing.get_context("spawn")
    barrier, results = ctx.Barrier(8), ctx.Queue()
    workers = [ctx.Process(target=race_worker, args=(str(path), str(data), barrier, results))
               for _ in range(8)]
    for w in workers:
        w.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=30)
    assert sorted(outcomes) == ["recorded"] * 5 + ["refused"] * 3, outcomes
    with Ledger(path) as ledger:
        status = ledger.status(DatasetIdentity("race", content_digest(data)))
        assert status.releases == 5 and status.remaining_epsilon == 0.0
        assert [r.epsilon for r in ledger.releases()] == [RACE_EPSILON] * 5
        assert ledger.verify() == []
    assert len(rows(path)) == 6  # the budget and five releases


# --- budget changes are visible (issue 31 item 8) ---------------------------------------------


def test_a_budget_set_below_what_was_spent_reads_over_budget_by_not_zero_left(tmp_path):
    """A budget of 5 with 4.36 spent, then lowered to 1: main said "ε = 0 left of 1"; it is
    over budget by 4.36 − 1 = 3.36 (and by δ the same way)."""
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.set_budget(ADULT, 5.0, delta=1e-5)
        record(ledger, 4.36, delta=4e-6)
        ledger.set_budget(ADULT, 1.0, delta=1e-6, reason="the owner withdrew consent")
        status = ledger.status(ADULT)
        assert Fraction(status.remaining_epsilon) == Fraction(1.0) - Fraction(4.36)
        assert ledger_module.left_in_words(status.remaining_epsilon) == (
            "over budget by ε = 3.36")
        assert ledger_module.left_in_words(status.remaining_delta, "δ", digits=3) == (
            "over budget by δ = 3e-06")
        with pytest.raises(OverBudget, match=r"is over budget by ε = 3\.36 \(its budget is 1\)"
                           ) as refused:
            record(ledger, 0.01)
        assert "0 left" not in str(refused.value)
    assert ledger_module.left_in_words(0.25) == "ε = 0.25 left"
    assert ledger_module.left_in_words(None) == "no limit"


def test_every_budget_event_is_kept_as_a_change_with_its_time_reason_and_spend(tmp_path):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.set_budget(ADULT, 1.0, reason="first budget")
        record(ledger, 0.5)
        ledger.set_budget(ADULT, 3.0, delta=1e-6, reason="board approved 3")
        record(ledger, 0.25, delta=1e-7)
        ledger.set_budget(ADULT, 3.0, reason="a Gaussian plan needs δ")
        ledger.set_budget(ADULT, 2.0, delta=1e-5, reason="tightened")
        record(ledger, 0.5, dataset=OTHER)   # another dataset's spend does not count
        history = ledger.status(ADULT).history
        assert [c.change for c in history] == [
            "set", "ε raised, δ cap set", "δ cap removed", "ε lowered, δ cap set"]
        assert [c.reason for c in history] == [
            "first budget", "board approved 3", "a Gaussian plan needs δ", "tightened"]
        assert [c.spent_epsilon for c in history] == [0.0, 0.5, 0.75, 0.75]
        assert [c.spent_delta for c in history] == [0.0, 0.0, 1e-7, 1e-7]
        assert [(c.epsilon, c.delta) for c in history] == [
            (1.0, None), (3.0, 1e-6), (3.0, None), (2.0, 1e-5)]
        assert all(a.time < b.time and a.entry < b.entry
                   for a, b in zip(history, history[1:], strict=False))
        assert ledger.status(OTHER).history == ()


@pytest.mark.parametrize("reason", ["", "   \n ", "x" * 301])
def test_a_budget_event_needs_a_reason_of_one_short_line(tmp_path, reason):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        with pytest.raises(ValueError, match="reason"):
            ledger.set_budget(ADULT, 1.0, reason=reason)
        assert ledger.status(ADULT).budget is None
        ledger.set_budget(ADULT, 1.0, reason="  agreed\nwith the owner ")
        assert ledger.status(ADULT).history[0].reason == "agreed with the owner"


def test_a_ledger_written_by_main_opens_and_keeps_working(tmp_path):
    """tests/release/data/ledger_main.sqlite was written by main's ledger (704547c; how:
    make_ledger_main.py beside it). It opens unchanged, its budget events read as changes,
    and it takes new events and releases with its chain intact."""
    path = tmp_path / "ledger.sqlite"
    path.write_bytes((Path(__file__).parent / "data" / "ledger_main.sqlite").read_bytes())
    adult = DatasetIdentity("adult", "sha256:" + "a" * 64)
    iris = DatasetIdentity("iris", "sha256:" + "c" * 64)
    with Ledger(path) as ledger:
        assert ledger.verify() == []
        history = ledger.status(adult).history
        assert [c.change for c in history] == ["set", "ε raised, δ cap set", "δ cap removed"]
        assert [c.spent_epsilon for c in history] == [0.0, 0.75, 0.75]
        assert {c.reason for c in history} == {"set on the Release plan page"}
        [first] = ledger.status(iris).history
        assert (first.change, first.reason) == ("set (with a δ cap)",
                                                "set by the first release's --budget")
        ledger.set_budget(adult, 0.5, reason="closed after an incident")
        assert ledger_module.left_in_words(ledger.status(adult).remaining_epsilon) == (
            "over budget by ε = 0.25")
        record(ledger, 0.5, dataset=iris)
        assert ledger.status(iris).spent_epsilon == 1.0
        assert ledger.verify() == []
