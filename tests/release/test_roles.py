"""Roles (release.access, release.roles): what each role allows, who acts, the roles store and
its command line. The allowed sets and sentences are written out by hand from issue 33."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from release import access, roles
from release.access import LOCAL, OPERATOR, AccessDenied, AccessError, Action, Person, Role
from release.roles import Roles, RolesError
from tests.conftest import ROOT

ISSUER = "https://id.example.org"
STEWARD = Person(ISSUER, "sub-ann", "ann@example.org", "Ann", True)
ANALYST = Person(ISSUER, "sub-bob", "bob@example.org", "Bob", True)
VIEWER = Person(ISSUER, "sub-cy", "cy@example.org", "Cy", True)


@pytest.fixture
def path(tmp_path, monkeypatch):
    """A roles file with a steward, an analyst and a viewer (added by the operator), and sign-in
    on."""
    monkeypatch.setenv(access.AUTH_ENV, "oidc")
    where = tmp_path / "roles.sqlite"
    with Roles(where) as store:
        store.add("Ann@Example.org", "steward", by=OPERATOR)
        store.add("bob@example.org", Role.ANALYST, by=OPERATOR)
        store.add(" cy@example.org ", "viewer", by=OPERATOR)
    return where


def test_what_each_role_allows():
    viewer = {a for a in Action if access.allowed(Role.VIEWER, a)}
    analyst = {a for a in Action if access.allowed(Role.ANALYST, a)}
    steward = {a for a in Action if access.allowed(Role.STEWARD, a)}
    assert viewer == {Action.VIEW_RELEASES}
    assert analyst == {Action.EXPLORE, Action.SAVE_PLAN, Action.RELEASE_WITHIN_ALLOTMENT,
                       Action.SUBMIT_PLAN, Action.VIEW_RELEASES}
    assert steward == set(Action)
    assert {"keep_data", "declare", "set_budget", "allot", "release",
            "release_within_allotment", "submit_plan", "view_releases",
            "manage_roles"} <= {a.value for a in Action}
    assert not any(access.allowed(None, a) for a in Action)


def test_a_refusal_says_who_may():
    assert access.denied_message(Action.SET_BUDGET) == "Only a steward can change the budget."
    assert access.denied_message(Action.MANAGE_ROLES) == (
        "Only a steward can manage people and roles.")


@pytest.mark.parametrize(("value", "on"), [(None, False), ("", False), ("off", False),
                                           ("OFF", False), ("oidc", True), (" OIDC ", True)])
def test_sign_in_is_off_unless_set(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv(access.AUTH_ENV, raising=False)
    else:
        monkeypatch.setenv(access.AUTH_ENV, value)
    assert access.sign_in_on() is on


def test_a_mistyped_setting_opens_nothing(monkeypatch):
    monkeypatch.setenv(access.AUTH_ENV, "on")
    with pytest.raises(AccessError, match="EPSILON_LAB_AUTH must be 'oidc'"):
        access.sign_in_on()
    with pytest.raises(AccessError):
        access.current()


def test_who_acts(monkeypatch):
    monkeypatch.delenv(access.AUTH_ENV, raising=False)
    assert access.current() == LOCAL
    assert roles.role_of(LOCAL) is Role.STEWARD
    monkeypatch.setenv(access.AUTH_ENV, "oidc")
    assert access.current() is None   # nobody bound: allowed nothing
    assert roles.role_of(LOCAL) is None   # the local user is nobody once sign-in is on
    assert roles.role_of(OPERATOR) is Role.STEWARD
    with access.acting_as(ANALYST):
        assert access.current() == ANALYST
    assert access.current() is None


def test_the_store_keeps_roles_by_email(path):
    with Roles(path) as store:
        members = store.members()
    assert [(m.email, m.role) for m in members] == [
        ("ann@example.org", Role.STEWARD), ("bob@example.org", Role.ANALYST),
        ("cy@example.org", Role.VIEWER)]
    assert not any(m.signed_in for m in members)
    assert [roles.role_of(p, path) for p in (STEWARD, ANALYST, VIEWER)] == [
        Role.STEWARD, Role.ANALYST, Role.VIEWER]
    assert roles.role_of(Person(ISSUER, "sub-zed", "zed@example.org"), path) is None


def test_a_viewers_and_an_analysts_allowed_actions(path):
    assert {a for a in Action if roles.may(VIEWER, a, path)} == {Action.VIEW_RELEASES}
    assert not roles.may(ANALYST, Action.SET_BUDGET, path)
    assert roles.may(ANALYST, Action.RELEASE_WITHIN_ALLOTMENT, path)
    with pytest.raises(AccessDenied, match="Only a steward can change the budget"):
        roles.require(ANALYST, Action.SET_BUDGET, path)
    roles.require(STEWARD, Action.SET_BUDGET, path)


def test_an_unknown_role_and_a_bad_email_are_refused(path):
    with Roles(path) as store:
        with pytest.raises(RolesError, match="Unknown role: choose steward, analyst or viewer"):
            store.add("dee@example.org", "admin", by=OPERATOR)
        with pytest.raises(RolesError, match="Unknown role"):
            store.change("bob@example.org", "owner", by=OPERATOR)
        for bad in ("", "dee", "dee@", "@example.org", "a b@example.org", "a@b@c",
                    "x" * 250 + "@example.org"):
            with pytest.raises(RolesError, match="Give one email address"):
                store.add(bad, "viewer", by=OPERATOR)
        with pytest.raises(RolesError, match="has a role already"):
            store.add("BOB@example.org", "viewer", by=OPERATOR)
        with pytest.raises(RolesError, match="has no role"):
            store.change("dee@example.org", "viewer", by=OPERATOR)
        assert len(store.members()) == 3


def test_the_last_steward_stays(path):
    with Roles(path) as store:
        with pytest.raises(RolesError, match="last steward"):
            store.remove("ann@example.org", by=STEWARD)
        with pytest.raises(RolesError, match="last steward"):
            store.change("ann@example.org", "analyst", by=OPERATOR)
        store.change("bob@example.org", "steward", by=STEWARD)
        store.remove("ann@example.org", by=ANALYST)   # Bob is a steward now
        assert [(m.email, m.role) for m in store.members()] == [
            ("bob@example.org", Role.STEWARD), ("cy@example.org", Role.VIEWER)]
        with pytest.raises(RolesError, match="last steward"):
            store.change("bob@example.org", "viewer", by=ANALYST)
        assert store.members()[0].changed_by == "ann@example.org"   # who made Bob a steward


def test_only_a_steward_manages_roles(path):
    with Roles(path) as store:
        for who in (ANALYST, VIEWER, LOCAL, None, Person(ISSUER, "x", "x@example.org")):
            with pytest.raises(AccessDenied, match="Only a steward can manage"):
                store.add("dee@example.org", "viewer", by=who)
            with pytest.raises(AccessDenied):
                store.change("cy@example.org", "steward", by=who)
            with pytest.raises(AccessDenied):
                store.remove("cy@example.org", by=who)
        store.change("cy@example.org", "analyst", by=STEWARD)
        assert roles.role_of(VIEWER, path) is Role.ANALYST


def test_the_subject_names_a_person_after_their_first_sign_in(path):
    with Roles(path) as store:
        store.recognise(VIEWER)
        [cy] = [m for m in store.members() if m.email == "cy@example.org"]
        assert (cy.issuer, cy.subject, cy.signed_in) == (ISSUER, "sub-cy", True)
    # the same email given later to someone else at the provider carries no role
    assert roles.role_of(Person(ISSUER, "sub-other", "cy@example.org", "", True), path) is None
    # the person keeps the role under another email
    assert roles.role_of(Person(ISSUER, "sub-cy", "cy@new.example.org"), path) is Role.VIEWER


def test_an_unverified_email_matches_nobody(path):
    assert roles.role_of(Person(ISSUER, "sub-x", "ann@example.org", "", False), path) is None
    assert roles.role_of(Person(ISSUER, "sub-x", "ANN@example.org", "", None), path) is (
        Role.STEWARD)


def test_no_store_no_role(tmp_path, monkeypatch):
    monkeypatch.setenv(access.AUTH_ENV, "oidc")
    missing = tmp_path / "none" / "roles.sqlite"
    assert roles.role_of(STEWARD, missing) is None
    assert not missing.exists()   # asking creates nothing


def test_where_the_roles_are_kept(tmp_path, monkeypatch):
    monkeypatch.delenv(roles.ROLES_ENV, raising=False)
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "l" / "ledger.sqlite"))
    assert roles.roles_path() == tmp_path / "l" / "roles.sqlite"
    monkeypatch.setenv(roles.ROLES_ENV, str(tmp_path / "r.sqlite"))
    assert roles.roles_path() == tmp_path / "r.sqlite"
    with pytest.raises(RolesError, match="inside the repository"):
        roles.roles_path(ROOT / "roles.sqlite")


def test_another_file_is_not_taken_for_a_roles_file(tmp_path):
    other = tmp_path / "ledger.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE releases (id INTEGER)")
    db.close()
    with pytest.raises(RolesError, match="is not a roles file"):
        Roles(other)
    with sqlite3.connect(other) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
    db.close()
    assert tables == {"releases"}


def test_the_command_line_makes_the_first_steward(tmp_path, monkeypatch, capsys):
    where = tmp_path / "roles.sqlite"
    monkeypatch.setenv(roles.ROLES_ENV, str(where))
    assert roles.main(["list"]) == 0
    assert "Nobody has a role yet" in capsys.readouterr().out
    assert roles.main(["add-steward", "Ann@Example.org"]) == 0
    assert roles.main(["add", "bob@example.org", "analyst"]) == 0
    assert roles.main(["add", "cy@example.org", "boss"]) == 1
    assert "Unknown role" in capsys.readouterr().err
    assert roles.main(["remove", "ann@example.org"]) == 1
    assert "last steward" in capsys.readouterr().err
    assert roles.main(["set-role", "bob@example.org", "viewer"]) == 0
    capsys.readouterr()
    assert roles.main(["list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in listed] == [["steward", "ann@example.org"],
                                                     ["viewer", "bob@example.org"]]
    assert roles.main(["--roles", str(tmp_path / "other.sqlite"), "add", "x@example.org",
                       "viewer"]) == 0
    with Roles(where) as store:
        assert len(store.members()) == 2


def test_python_dash_m(tmp_path):
    env = {"EPSILON_LAB_ROLES": str(tmp_path / "roles.sqlite"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "release.roles", "add-steward",
                           "ann@example.org"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    done = subprocess.run([sys.executable, "-m", "release.roles", "remove", "ann@example.org"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 1
    assert done.stderr.startswith("error: ann@example.org is the last steward")
    assert "Traceback" not in done.stderr
