"""Roles enforced where things are written (issue 33 item 4): every function that writes the
ledger or a store asks the acting person's role (``release.access.current()``) and refuses an
analyst or a viewer what their role does not allow with the store's own error (also an
``AccessDenied``), saying who may; a steward (and the command line, acting as the operator)
may. Allotments: an analyst releases within what a steward gave them, counted against both
the allotment and the dataset's budget. Who did what is recorded in the ledger and the
declarations (item 5)."""

from __future__ import annotations

import json
import sqlite3

import pytest

from dashboard import plan_library
from dashboard.data import kept
from dashboard.datasets import load_upload
from plan.examples import adult_plan
from plan.identity import DatasetIdentity, content_digest
from release import access
from release.access import OPERATOR, AccessDenied, Person, Role
from release.declarations import DeclarationsDenied, DeclarationStore
from release.errors import OverBudget
from release.ledger import Ledger, LedgerDenied, LedgerError
from release.roles import Roles, RolesError
from tests.release.test_kept_files import VALUES, release_json, values_hash_of

ISSUER = "https://login.example.org"
STEWARD = Person(ISSUER, "sub-ann", "ann@example.org", "Ann", True)
ANALYST = Person(ISSUER, "sub-bob", "bob@example.org", "Bob", True)
VIEWER = Person(ISSUER, "sub-cy", "cy@example.org", "Cy", True)
STRANGER = Person(ISSUER, "sub-dee", "dee@example.org", "Dee", True)   # no role at all
ADULT = DatasetIdentity("adult", "sha256:" + "a" * 64)
DATA = b"id,age\n1,30\n2,41\n3,27\n"


@pytest.fixture
def server(tmp_path, monkeypatch):
    """Sign-in on; the ledger, the roles, the declarations, the plans and the data folder in
    ``tmp_path``; a steward, an analyst and a viewer (added by the operator)."""
    monkeypatch.setenv(access.AUTH_ENV, "oidc")
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv("EPSILON_LAB_ROLES", str(tmp_path / "roles.sqlite"))
    monkeypatch.setenv("EPSILON_LAB_DECLARATIONS", str(tmp_path / "declarations.sqlite"))
    monkeypatch.setenv("EPSILON_LAB_PLANS", str(tmp_path / "plans.sqlite"))
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path / "data"))
    with Roles() as store:
        store.add("ann@example.org", Role.STEWARD, by=OPERATOR)
        store.add("bob@example.org", Role.ANALYST, by=OPERATOR)
        store.add("cy@example.org", Role.VIEWER, by=OPERATOR)
    return tmp_path


def _release(ledger: Ledger, epsilon: float = 0.5, delta: float = 0.0) -> int:
    return ledger.record_release(ADULT, epsilon=epsilon, delta=delta, accounting="basic",
                                 values_hash=values_hash_of(VALUES), plan_json="{}",
                                 implementation="test").id


def _identity(data: bytes) -> str:
    return content_digest(load_upload(data, "f.csv").cells)


QUERY = adult_plan().queries[0]


def _writes(tmp_path):
    """Every function that writes the ledger or a store, as name → a call of it (set up as a
    steward beforehand where it needs something to act on)."""
    with access.acting_as(OPERATOR):
        with Ledger() as ledger:
            ledger.set_budget(ADULT, 10.0, reason="set")
            entry = _release(ledger)
        plan = plan_library.PlanLibrary().create("d", "p", (QUERY,))
        kept_path = kept.keep_upload(DATA, "k.csv", _identity(DATA))

    def ledger_call(name):
        def call():
            with Ledger() as ledger:
                if name == "set_budget":
                    ledger.set_budget(ADULT, 5.0, reason="lowered")
                elif name == "record_release":
                    _release(ledger, 0.1)
                elif name == "store_files":
                    ledger.store_files(entry, {"release.json": release_json(entry)})
                elif name == "set_allotment":
                    ledger.set_allotment(ADULT, "bob@example.org", 1.0)
        return call

    lib = plan_library.PlanLibrary
    return {
        "ledger.set_budget": (ledger_call("set_budget"), LedgerError),
        "ledger.record_release": (ledger_call("record_release"), LedgerError),
        "ledger.store_files": (ledger_call("store_files"), LedgerError),
        "ledger.set_allotment": (ledger_call("set_allotment"), LedgerError),
        "declarations.declare": (lambda: DeclarationStore().declare(
            "d", schema='{"columns": []}'), RuntimeError),
        "plans.create": (lambda: lib().create("d", "q", (QUERY,)),
                         plan_library.PlanLibraryError),
        "plans.save": (lambda: lib().save(plan.id, (QUERY,), dataset="d", name="p",
                                          expected_version=lib().get(plan.id).version),
                       plan_library.PlanLibraryError),
        "plans.rename": (lambda: lib().rename(plan.id, "r"), plan_library.PlanLibraryError),
        "plans.duplicate": (lambda: lib().duplicate(plan.id), plan_library.PlanLibraryError),
        "plans.delete": (lambda: lib().delete(plan.id), plan_library.PlanLibraryError),
        "plans.submit": (lambda: lib().submit(plan.id), plan_library.PlanLibraryError),
        "plans.move": (lambda: lib().move("d", "e"), plan_library.PlanLibraryError),
        "kept.keep_upload": (lambda: kept.keep_upload(b"id,age\n9,9\n", "n.csv",
                                                      _identity(b"id,age\n9,9\n")),
                             kept.KeepError),
        "kept.remove_kept": (lambda: kept.remove_kept(kept_path), kept.KeepError),
    }


# What each role may write (a steward: everything).
ANALYST_MAY = {"plans.create", "plans.save", "plans.rename", "plans.duplicate", "plans.delete",
               "plans.submit",
               # the files of a release (checked against the values the ledger recorded)
               "ledger.store_files"}
VIEWER_MAY: set[str] = set()
ALL = ["ledger.set_budget", "ledger.record_release", "ledger.store_files",
       "ledger.set_allotment", "declarations.declare", "plans.create", "plans.save",
       "plans.rename", "plans.duplicate", "plans.delete", "plans.submit", "plans.move",
       "kept.keep_upload",
       "kept.remove_kept"]


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize(("person", "may"), [(ANALYST, ANALYST_MAY), (VIEWER, VIEWER_MAY),
                                             (STRANGER, set()), (None, set())],
                         ids=["analyst", "viewer", "no role", "nobody"])
def test_each_write_is_refused_to_a_role_that_may_not_and_allowed_to_one_that_may(
        server, name, person, may):
    call, error = _writes(server)[name]
    if name in may:
        with access.acting_as(person):
            call()
        return
    with access.acting_as(person):
        with pytest.raises(error) as refused:
            call()
    assert isinstance(refused.value, AccessDenied), refused.value
    assert str(refused.value).startswith(("Only a steward", "You have no allotment")), \
        refused.value


@pytest.mark.parametrize("name", ALL)
def test_a_steward_may_do_each_write(server, name):
    call, _ = _writes(server)[name]
    with access.acting_as(STEWARD):
        call()


def test_a_refused_write_leaves_the_files_unchanged(server):
    writes = _writes(server)
    files = ["ledger.sqlite", "declarations.sqlite", "plans.sqlite", "data/k.csv"]
    before = {f: (server / f).read_bytes() for f in files}
    with access.acting_as(VIEWER):
        for name in ALL:
            with pytest.raises(AccessDenied):
                writes[name][0]()
    assert {f: (server / f).read_bytes() for f in files} == before
    assert sorted(p.name for p in (server / "data").iterdir()) == ["k.csv"]


def test_the_roles_store_refuses_an_analyst_and_a_viewer(server):
    with Roles() as store:
        for person in (ANALYST, VIEWER):
            with pytest.raises(AccessDenied, match="Only a steward can manage people"):
                store.add("eve@example.org", Role.VIEWER, by=person)
            with pytest.raises(AccessDenied):
                store.change("cy@example.org", Role.ANALYST, by=person)
            with pytest.raises(AccessDenied):
                store.remove("cy@example.org", by=person)
        store.add("eve@example.org", Role.VIEWER, by=STEWARD)
        assert store.role_of(Person(ISSUER, "sub-eve", "eve@example.org")) is Role.VIEWER
    with pytest.raises(RolesError):   # not a permission matter: the last steward stays
        with Roles() as store:
            store.remove("ann@example.org", by=STEWARD)


def test_recording_names_is_anyone_who_may_explore_declaring_is_a_stewards(server):
    """Opening data records the names it was opened under (an analyst may); its schema and
    unit are a steward's."""
    with access.acting_as(ANALYST):
        assert DeclarationStore().declare("d", names=["a.csv"]).names == ("a.csv",)
        with pytest.raises(DeclarationsDenied, match="Only a steward can declare"):
            DeclarationStore().declare("d", unit=None, schema='{"columns": []}')
    with access.acting_as(VIEWER), pytest.raises(DeclarationsDenied):
        DeclarationStore().declare("d", names=["b.csv"])


def test_sign_in_off_the_single_local_user_may_write_everything(server, monkeypatch):
    monkeypatch.delenv(access.AUTH_ENV)
    for name in ALL:
        _writes(server)[name][0]()


def test_the_command_line_acts_as_the_operator(server, monkeypatch):
    """Nobody bound with sign-in on is nobody, except ``python -m release``, which acts as
    the operator (a steward) and is recorded as such."""
    with pytest.raises(LedgerDenied, match="Only a steward can change the budget"):
        with Ledger() as ledger:
            ledger.set_budget(ADULT, 1.0, reason="x")
    from release import cli

    seen = []
    monkeypatch.setattr(cli, "_main", lambda argv: seen.append(access.current()) or 0)
    assert cli.main([]) == 0 and seen == [OPERATOR]


# --- allotments ------------------------------------------------------------------------------


def test_an_analyst_releases_within_their_allotment_only(server):
    with access.acting_as(STEWARD), Ledger() as ledger:
        ledger.set_budget(ADULT, 3.0, delta=1e-5, reason="set")
    with access.acting_as(ANALYST), Ledger() as ledger:
        with pytest.raises(LedgerDenied, match="no allotment"):
            ledger.check_may_release(ADULT, 0.1, 0.0)
        with pytest.raises(LedgerDenied, match="no allotment"):
            _release(ledger, 0.1)
    with access.acting_as(STEWARD), Ledger() as ledger:
        given = ledger.set_allotment(ADULT, "Bob@Example.org", 1.0, delta=1e-6)
        assert (given.analyst, given.epsilon, given.remaining_epsilon) == (
            "bob@example.org", 1.0, 1.0)
        _release(ledger, 1.5)   # the steward's own release: the dataset's budget only
    with access.acting_as(ANALYST), Ledger() as ledger:
        _release(ledger, 0.75)
        ledger.check_may_release(ADULT, 0.25, 0.0)
        with pytest.raises(LedgerDenied, match="Beyond your allotment"):
            ledger.check_may_release(ADULT, 0.5, 0.0)
        with pytest.raises(LedgerDenied, match="Beyond your allotment"):
            _release(ledger, 0.5)   # 0.75 + 0.5 > 1, though the dataset has 0.75 left
        with pytest.raises(LedgerDenied, match="Beyond your allotment"):
            _release(ledger, 0.1, delta=2e-6)   # δ beyond the allotment's 1e-6
        assert ledger.allotment(ADULT, "bob@example.org").spent_epsilon == 0.75
        # exactly what is left of the allotment: 0.75 + 0.25 = 1 in exact arithmetic
        _release(ledger, 0.25)
        assert ledger.allotment(ADULT, "bob@example.org").remaining_epsilon == 0.0
    with access.acting_as(STEWARD), Ledger() as ledger:
        ledger.set_allotment(ADULT, "bob@example.org", 2.0)
        assert ledger.status(ADULT).remaining_epsilon == pytest.approx(0.5)   # 3 − 1.5 − 1
    with access.acting_as(ANALYST), Ledger() as ledger:
        # the allotment has 1 left, the dataset 0.5: the dataset's budget holds too
        with pytest.raises(OverBudget):
            _release(ledger, 0.75)
        assert len(ledger.releases()) == 3 and ledger.verify() == []


def test_allotments_are_append_only(server):
    with access.acting_as(STEWARD), Ledger() as ledger:
        ledger.set_allotment(ADULT, "bob@example.org", 1.0)
    con = sqlite3.connect(server / "ledger.sqlite")
    for sql in ("UPDATE allotments SET epsilon = 9", "DELETE FROM allotments"):
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            con.execute(sql)
    con.close()


# --- who did what (item 5) -------------------------------------------------------------------


def test_the_ledger_records_who_made_each_entry(server):
    with access.acting_as(STEWARD), Ledger() as ledger:
        event = ledger.set_budget(ADULT, 3.0, reason="set")
        ledger.set_allotment(ADULT, "bob@example.org", 1.0)
    with access.acting_as(ANALYST), Ledger() as ledger:
        record = ledger.record_release(ADULT, epsilon=0.5, delta=0.0, accounting="basic",
                                       values_hash="sha256:x", plan_json="{}",
                                       implementation="test")
    with access.acting_as(OPERATOR), Ledger() as ledger:
        ledger.set_budget(ADULT, 4.0, reason="raised")
        assert (event.by, record.by) == ("ann@example.org", "bob@example.org")
        assert [r.by for r in ledger.releases()] == ["bob@example.org"]
        history = ledger.status(ADULT).history
        assert history[0].by == "ann@example.org"
        assert history[1].by.startswith("command line (") and "@" in history[1].by
        assert "by" not in history[0].to_dict()   # what a card publishes names nobody
        assert ledger.verify() == []
    con = sqlite3.connect(server / "ledger.sqlite")
    rows = con.execute("SELECT by_subject, by_email FROM entries ORDER BY id").fetchall()
    con.close()
    assert rows[:2] == [("sub-ann", "ann@example.org"), ("sub-bob", "bob@example.org")]


def test_who_is_part_of_the_hash_chain(server):
    with access.acting_as(STEWARD), Ledger() as ledger:
        ledger.set_budget(ADULT, 3.0, reason="set")
    con = sqlite3.connect(server / "ledger.sqlite")
    con.execute("DROP TRIGGER entries_no_update")
    con.execute("UPDATE entries SET by_email = 'someone@else.org'")
    con.commit()
    con.close()
    with access.acting_as(STEWARD), Ledger() as ledger:
        assert ledger.verify() == ["entry 1: its content does not match its hash"]


def test_declarations_record_who_declared(server, monkeypatch):
    with access.acting_as(STEWARD):
        state = DeclarationStore().declare("d", schema='{"columns": []}')
    assert state.schema.who == "ann@example.org (sub-ann)"
    monkeypatch.delenv(access.AUTH_ENV)
    state = DeclarationStore().declare("d", schema=None)
    assert state.schema is None or state.schema.who == "local"
    assert DeclarationStore().history("d")[-1].who == "local"


# --- published files name no person ----------------------------------------------------------


def test_a_package_names_no_person_unless_an_organisation_is_set(server, monkeypatch):
    """Released by a signed-in steward: the ledger records who; the package's bytes (the zip
    and each file in it) hold neither their subject nor their email. With
    EPSILON_LAB_RELEASED_BY set, release.json, card.json and the report name that
    organisation, still no person."""
    import io
    import zipfile

    from engine.sources import FrameSource
    from release import run
    from release.package import release_package
    from tests.release.test_package import program_plan
    from tests.release_fixtures import visits

    def package(by: str | None) -> tuple[bytes, dict[str, bytes]]:
        if by is None:
            monkeypatch.delenv("EPSILON_LAB_RELEASED_BY", raising=False)
        else:
            monkeypatch.setenv("EPSILON_LAB_RELEASED_BY", by)
        with access.acting_as(STEWARD), Ledger() as ledger:
            released = run(program_plan(), FrameSource(visits()), ledger=ledger)
            assert ledger.releases()[-1].by == "ann@example.org"
        data = release_package(released)
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return data, {n: archive.read(n) for n in archive.namelist()}

    for by in (None, "Statistics Office"):
        data, members = package(by)
        for blob in (data, *members.values()):
            for secret in (b"sub-ann", b"ann@example.org"):
                assert secret not in blob
        record = json.loads(members["release.json"])
        card = json.loads(members["card.json"])
        if by is None:
            assert "released_by" not in record and "released_by" not in card["product"]
            assert b"Released by" not in members["report.html"]
        else:
            assert record["released_by"] == card["product"]["released_by"] == by
            assert b"<th>Released by</th><td>Statistics Office</td>" in members["report.html"]


# --- plans: who saved, submitted for a steward ----------------------------------------------


def test_a_plan_records_who_saved_it_and_a_save_withdraws_its_submission(server):
    lib = plan_library.PlanLibrary()
    with access.acting_as(ANALYST):
        plan = lib.create("d", "p", (QUERY,))
        assert plan.saved_by == "bob@example.org (sub-bob)"
        submitted = lib.submit(plan.id)
        assert submitted.submitted_by == "bob@example.org (sub-bob)" and submitted.submitted
        assert [p.id for p in lib.submitted("d")] == [plan.id] and lib.submitted("e") == []
    with access.acting_as(STEWARD):
        changed = lib.save(plan.id, (), dataset="d", name="p", expected_version=1)
        assert changed.saved_by == "ann@example.org (sub-ann)" and not changed.submitted
        assert lib.submitted("d") == [] and lib.get(plan.id).submitted_by == ""


def test_an_older_plans_file_gets_the_new_columns_in_place(server):
    path = server / "old-plans.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE plans_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO plans_meta VALUES ('format', 'epsilon-lab-plans')")
    con.execute("CREATE TABLE plans (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT "
                "NULL, name TEXT NOT NULL, plan_json TEXT NOT NULL, version INTEGER NOT NULL, "
                "updated TEXT NOT NULL)")
    text = plan_library.queries_json((QUERY,))
    con.execute("INSERT INTO plans (dataset, name, plan_json, version, updated) VALUES "
                "('d', 'old', ?, 3, '2026-01-01T00:00:00')", (text,))
    con.commit()
    con.close()
    lib = plan_library.PlanLibrary(path)
    [old] = lib.plans("d")
    assert (old.name, old.version, old.saved_by, old.submitted_by) == ("old", 3, "", "")
    with access.acting_as(ANALYST):
        assert lib.submit(old.id).submitted_by.startswith("bob@example.org")


def test_a_kept_file_records_who_kept_it_also_in_an_older_record_table(server):
    store = DeclarationStore()
    with store.connection("an older table", write=True) as c:   # before kept_by
        c.execute("CREATE TABLE kept_files (path TEXT PRIMARY KEY, dataset TEXT NOT NULL, "
                  "name TEXT NOT NULL, kept TEXT NOT NULL)")
        c.execute("INSERT INTO kept_files VALUES ('/x/old.csv', 'd', 'old.csv', 't')")
    with access.acting_as(STEWARD):
        path = kept.keep_upload(DATA, "k.csv", _identity(DATA))
    rows = store.read("reading", "SELECT name, kept_by FROM kept_files ORDER BY name")
    assert rows == [("k.csv", "ann@example.org (sub-ann)"), ("old.csv", "")]
    assert kept.kept_dataset(path) == _identity(DATA)


# --- layout 2 → 3 --------------------------------------------------------------------------


def test_a_layout_2_ledger_gets_who_and_allotments_in_place(server):
    """ledger_layout2.sqlite was written by the ledger before this change (how:
    make_ledger_layout2.py beside it): a budget of 2, a release of 0.5 with its files. It opens
    upgraded in place: its rows unchanged with nobody recorded, its chain verifies, and new
    entries record who; the layout is the only meta row changed, its trigger back."""
    from pathlib import Path

    path = server / "ledger.sqlite"
    path.write_bytes((Path(__file__).parent / "data" / "ledger_layout2.sqlite").read_bytes())
    con = sqlite3.connect(path)
    assert con.execute("SELECT value FROM ledger_meta WHERE key = 'schema'").fetchone() == ("2",)
    entries = con.execute("SELECT * FROM entries ORDER BY id").fetchall()
    meta = dict(con.execute("SELECT key, value FROM ledger_meta").fetchall())
    con.close()
    with access.acting_as(STEWARD), Ledger(path) as ledger:
        assert ledger.verify() == []
        [old] = ledger.releases()
        assert (old.epsilon, old.by) == (0.5, "") and ledger.file_names() == {
            old.id: ("release.json",)}
        assert [c.by for c in ledger.status(ADULT).history] == [""]
        assert ledger.status(ADULT).remaining_epsilon == 1.5
        ledger.set_allotment(ADULT, "bob@example.org", 1.0)
        assert _release(ledger, 0.25) == old.id + 1
        assert ledger.releases()[-1].by == "ann@example.org" and ledger.verify() == []
    con = sqlite3.connect(path)
    after = dict(con.execute("SELECT key, value FROM ledger_meta").fetchall())
    assert after == {**meta, "schema": "3"}
    assert con.execute("SELECT * FROM entries ORDER BY id").fetchall()[:len(entries)] == [
        (*row, "", "") for row in entries]
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        con.execute("UPDATE ledger_meta SET value = '2' WHERE key = 'schema'")
    con.close()
    with access.acting_as(ANALYST), Ledger(path) as ledger:   # opened again: nothing to do
        _release(ledger, 0.5)
        assert ledger.allotment(ADULT, "bob@example.org").spent_epsilon == 0.5
