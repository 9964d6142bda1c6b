"""A plan bound to the declarations it was built on (issue 32 item 5), without the pages:
when it is stale, what changed in a sentence (written out by hand here), and the command line,
which refuses a stale plan file (exit REFUSED, one line) and releases it as built with
``--confirm-stale``; a plan file of before (no versions) loads and is released as before."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest

from plan.identity import content_digest
from plan.model import BuiltOn, Count, Dataset, Noise, Plan, PlanQuery, PrivacyUnit
from release import Ledger
from release.bound import changes, checked_plan, confirmed, is_stale, stale_reason
from release.cli import REFUSED, main
from release.declarations import DeclarationStore

ID = "sha256:" + "0a" * 32
PANEL = PrivacyUnit("nr", max_rows=8)


def schema(**columns) -> str:
    return json.dumps({"columns": columns})


WAGE = {"role": "numeric", "origin": "typed", "lower": 0, "upper": 10, "integer": False}
SEX = {"role": "categorical", "origin": "public", "categories": ["F", "M"]}


@pytest.fixture
def store(tmp_path):
    return DeclarationStore(tmp_path / "declarations.sqlite")


def test_stale_only_when_the_store_holds_a_later_version(store):
    assert not is_stale(None, None)                       # nothing recorded: never stale
    assert not is_stale(BuiltOn(0, 0), None)              # nothing declared since
    now = store.declare(ID, schema=schema(wage=WAGE))
    assert not is_stale(None, now)
    assert is_stale(BuiltOn(0, 0), now) and is_stale(BuiltOn(0, 5), now)
    assert not is_stale(BuiltOn(1, 0), now) and not is_stale(BuiltOn(3, 0), now)
    assert confirmed(BuiltOn(0, 0), now) == BuiltOn(1, 0, (0, 0))


def test_what_changed_in_one_sentence(store):
    first = store.declare(ID, schema=schema(wage=WAGE, sex=SEX, year=WAGE))
    built = BuiltOn(**first.versions)
    assert built == BuiltOn(1, 0) and not is_stale(built, first)
    now = store.declare(ID, unit=PANEL, schema=schema(
        wage=WAGE | {"upper": 20}, sex=SEX | {"categories": ["F", "M", "X"]},
        year={"role": "ignore"}, age=WAGE))
    assert is_stale(built, now) and now.versions == {"schema": 2, "unit": 1}
    day = now.unit.date
    assert changes(store, ID, built, now) == (
        f"The privacy unit changed on {day} from one row = one person to one person = all "
        f"rows with the same nr, at most 8 rows per person; the schema changed on {day}: "
        "age was declared; the role of year changed; the bounds of wage changed; the "
        "categories of sex changed.")
    assert stale_reason(store, ID, built).startswith(
        "the plan was built on schema v1 and unit v0 of this dataset's declarations, which "
        "changed since. The privacy unit changed")
    assert stale_reason(store, ID, BuiltOn(2, 1)) == ""   # built on what stands
    assert stale_reason(store, ID, None) == ""
    # declared back to what it was: still a later version, said as such
    again = store.declare(ID, unit=None)
    assert changes(store, ID, BuiltOn(2, 0), again) == (
        f"The privacy unit was declared again on {day} (as it was).")


@pytest.fixture
def panel(tmp_path):
    """A small panel file, a plan file built on its declarations v1/v1, and their store."""
    data = tmp_path / "panel.csv"
    pd.DataFrame({"nr": [1, 1, 2, 3, 3, 3], "wage": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]}).to_csv(
        data, index=False)
    plan = Plan(Dataset("panel", "file:panel.csv", declarations=BuiltOn(1, 1)),
                (PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),),
                PrivacyUnit("nr", max_rows=3))
    path = tmp_path / "plan.json"
    path.write_text(plan.to_json())
    store = DeclarationStore(tmp_path / "declarations.sqlite")
    identity = content_digest(data)
    store.declare(identity, unit=PrivacyUnit("nr", max_rows=3), schema=schema(wage=WAGE))
    return data, path, store, identity


def run_cli(tmp_path, data, plan, *more):
    return main(["--plan", str(plan), "--data", str(data), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(tmp_path / "out"), *more])


def test_the_command_line_refuses_a_stale_plan_and_confirm_stale_releases_it(
        tmp_path, panel, capsys, monkeypatch):
    monkeypatch.delenv("EPSILON_LAB_DECLARATIONS", raising=False)   # beside --ledger
    data, plan, store, identity = panel
    assert run_cli(tmp_path, data, plan) == 0          # built on what stands: released
    capsys.readouterr()
    store.declare(identity, schema=schema(wage=WAGE | {"upper": 50}))
    assert run_cli(tmp_path, data, plan) == REFUSED
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("refused: the plan was built on schema v1 "
                                                   "and unit v1"), err
    assert "the bounds of wage changed" in err and "--confirm-stale" in err
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        assert len(ledger.releases()) == 1             # the refusal recorded nothing
    assert run_cli(tmp_path, data, plan, "--confirm-stale") == 0
    released = json.loads((tmp_path / "out" / "release.json").read_text())
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        assert len(ledger.releases()) == 2
    text = json.dumps(released)
    assert '"confirmed_from": {"schema": 1, "unit": 1}' in text, text[:2000]


def test_a_plan_file_without_versions_loads_and_is_released_as_before(tmp_path, panel,
                                                                       monkeypatch):
    monkeypatch.delenv("EPSILON_LAB_DECLARATIONS", raising=False)
    data, plan_path, store, identity = panel
    old = json.loads(plan_path.read_text())
    del old["dataset"]["declarations"]                # as plan files of before are
    plan_path.write_text(json.dumps(old))
    plan = Plan.from_json(plan_path.read_bytes())
    assert plan.dataset.declarations is None
    assert plan.to_json() == json.dumps(old, indent=2, ensure_ascii=False)   # byte for byte
    store.declare(identity, schema=schema(wage=WAGE | {"upper": 50}))
    assert checked_plan(plan, identity, store.path) == (plan, "")
    assert run_cli(tmp_path, data, plan_path) == 0


def test_confirming_binds_to_the_current_versions(panel):
    data, plan_path, store, identity = panel
    plan = Plan.from_json(plan_path.read_bytes())
    store.declare(identity, schema=schema(wage=WAGE | {"upper": 50}))
    same, why = checked_plan(plan, identity, store.path)
    assert same == plan and "which changed since" in why
    bound, why = checked_plan(plan, identity, store.path, confirm=True)
    assert why == "" and bound.dataset.declarations == BuiltOn(2, 1, (1, 1))
    assert bound == replace(plan, dataset=replace(plan.dataset,
                                                  declarations=BuiltOn(2, 1, (1, 1))))
    # a declarations file never created: nothing declared, nothing stale
    assert checked_plan(plan, identity, data.parent / "none.sqlite") == (plan, "")
    assert not (data.parent / "none.sqlite").exists()


def test_a_later_version_that_declares_the_same_again_is_not_stale(store):
    """The plan page itself can change the dataset's unit to the plan's own (max rows drawn
    for the plan, "use the plan's unit"); the app then saves it as a new version. A plan
    built before that is not stale: it is built on exactly what stands."""
    built = BuiltOn(**store.declare(ID, schema=schema(wage=WAGE)).versions)
    now = store.declare(ID, unit=PANEL)                       # the plan page's unit
    assert is_stale(built, now)                               # by version alone
    assert not is_stale(built, now, store=store, dataset=ID, plan_unit=PANEL)
    assert stale_reason(store, ID, built, PANEL) == ""
    assert stale_reason(store, ID, built, PrivacyUnit("nr", max_rows=2)) != ""
    # the schema written again with the same columns (another source text): no change
    again = store.declare(ID, schema=json.dumps({"source": "re-typed",
                                                 "columns": {"wage": WAGE}}))
    assert again.versions["schema"] == 2
    assert not is_stale(built, again, store=store, dataset=ID, plan_unit=PANEL)
    changed = store.declare(ID, schema=schema(wage=WAGE | {"upper": 11}))
    assert is_stale(built, changed, store=store, dataset=ID, plan_unit=PANEL)
