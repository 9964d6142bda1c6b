"""Saved plans (dashboard.plan_library): save, load, list, duplicate, delete; a later save
wins and reports the version it replaced; no true value is stored; a damaged, foreign or
locked file gives a clear PlanLibraryError."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from dashboard import plan_library
from dashboard.plan_library import PlanLibrary, PlanLibraryError
from plan.examples import adult_plan
from plan.model import Target

#: A selection target "read off the data" with a value no query holds otherwise.
PLANTED = 0.7342159


@pytest.fixture
def library(tmp_path):
    return PlanLibrary(tmp_path / "plans.sqlite", timeout=0.2)


@pytest.fixture
def queries():
    return adult_plan().queries


def test_save_load_list_duplicate_delete(library, queries):
    first = library.create("adult", "Census counts", queries[:2])
    assert (first.version, first.name, first.dataset) == (1, "Census counts", "adult")
    assert library.get(first.id).queries() == queries[:2]
    other = library.create("adult", "Means", queries[2:3])
    library.create("visits", "Elsewhere", queries[:1])
    assert [p.name for p in library.plans("adult")] == ["Means", "Census counts"]
    assert library.latest("adult").id == other.id
    saved, replaced = library.save(first.id, queries, dataset="adult", name="Census counts",
                                   expected_version=1)
    assert (saved.version, replaced) == (2, None)
    assert library.get(first.id).queries() == queries
    assert library.latest("adult").id == first.id    # the most recently saved
    copy = library.duplicate(first.id)
    assert copy.name == "Census counts (copy)" and copy.id != first.id
    assert copy.queries() == queries and copy.version == 1
    assert library.rename(copy.id, "Copy").name == "Copy"
    library.delete(first.id)
    assert library.get(first.id) is None
    assert sorted(p.name for p in library.plans("adult")) == ["Copy", "Means"]
    assert library.latest("nothing saved") is None


def test_an_empty_plan_is_saved(library):
    empty = library.create("adult", "New plan", ())
    assert library.get(empty.id).queries() == () and library.get(empty.id).size == 0


def test_a_stale_save_still_saves_and_says_which_version_it_replaced(library, queries):
    plan = library.create("adult", "Shared", queries[:1])
    in_b, _ = library.save(plan.id, queries[:2], dataset="adult", name="Shared",
                           expected_version=1)   # tab B saves version 2
    in_a, replaced = library.save(plan.id, queries[:3], dataset="adult", name="Shared",
                                  expected_version=1)   # tab A still had version 1
    assert in_a.version == 3
    assert replaced is not None and replaced.version == 2
    assert replaced.queries() == queries[:2]
    assert library.get(plan.id).queries() == queries[:3]   # the later save wins


def test_a_plan_deleted_meanwhile_is_saved_anew(library, queries):
    plan = library.create("adult", "Gone", queries[:1])
    library.delete(plan.id)
    again, replaced = library.save(plan.id, queries[:2], dataset="adult", name="Gone",
                                   expected_version=1)
    assert replaced is None and again.id != plan.id
    assert library.get(again.id).queries() == queries[:2]


def test_no_true_value_is_stored(library, queries):
    """A target computed from the true data (origin "data") never reaches the file."""
    planted = tuple(replace(q, target=Target("selection", probability=PLANTED,
                                             origin="data"))
                    if q.id == "top-occupation" else q for q in queries)
    assert str(PLANTED) in repr(planted)          # the plant is there to be found
    saved = library.create("adult", "Planted", planted)
    library.save(saved.id, planted, dataset="adult", name="Planted", expected_version=1)
    stored = library.path.read_bytes()
    assert str(PLANTED).encode() not in stored
    assert b"top-occupation" in stored               # the query itself is saved
    loaded = library.get(saved.id).queries()
    assert next(q for q in loaded if q.id == "top-occupation").target is None


def test_a_typed_target_is_kept(library, queries):
    saved = library.create("adult", "Typed", queries)
    assert [q.target for q in library.get(saved.id).queries()] == [q.target for q in queries]


def test_a_damaged_file_gives_a_clear_message(tmp_path):
    path = tmp_path / "plans.sqlite"
    path.write_bytes(b"this is not a database" * 200)
    with pytest.raises(PlanLibraryError, match="damaged or is not a SQLite file"):
        PlanLibrary(path).plans("adult")
    assert path.read_bytes() == b"this is not a database" * 200   # left untouched


def test_another_database_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE songs (title TEXT)")
    with pytest.raises(PlanLibraryError, match="something else"):
        PlanLibrary(path).plans("adult")


def test_a_locked_file_gives_a_clear_message(library, queries):
    library.plans("adult")   # created
    holder = sqlite3.connect(library.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(PlanLibraryError, match="locked by another process"):
            library.create("adult", "Blocked", queries[:1])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert library.plans("adult") == []


def test_the_path_defaults_beside_the_ledger(tmp_path, monkeypatch):
    monkeypatch.delenv(plan_library.PLANS_ENV, raising=False)
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "books" / "ledger.sqlite"))
    assert plan_library.plans_path() == tmp_path / "books" / "plans.sqlite"
    monkeypatch.setenv(plan_library.PLANS_ENV, str(tmp_path / "mine.sqlite"))
    assert plan_library.plans_path() == tmp_path / "mine.sqlite"


def test_a_plans_file_inside_the_repository_is_refused():
    with pytest.raises(PlanLibraryError, match="inside the repository"):
        plan_library.plans_path(plan_library._REPOSITORY / "plans.sqlite")


def test_a_file_removed_while_in_use_is_created_afresh(library, queries):
    library.create("adult", "Before", queries[:1])
    library.path.unlink()
    assert library.plans("adult") == []
    assert library.create("adult", "After", queries[:1]).name == "After"


def test_a_stale_save_keeps_max_rows_drawn_in_another_tab(library, queries):
    """Tab A drew max rows (its draws were seen: they must be charged); tab B, still on the
    version before, saves its edit over it. The later save wins, but the max rows query
    stays, first, with every draw's ε (found by the privacy review: it was dropped)."""
    from plan.model import MaxRows, PlanQuery

    drawn = PlanQuery("max-rows", "Max rows", MaxRows(0.9, 50, 4, (0.1, 0.2)), None)
    first = library.create("adult", "Plan", queries[:2])
    library.save(first.id, (drawn, *queries[:2]), dataset="adult", name="Plan",
                 expected_version=first.version)                      # tab A
    saved, replaced = library.save(first.id, queries[:1], dataset="adult", name="Plan",
                                   expected_version=first.version)    # tab B, stale
    assert replaced is not None
    assert [q.id for q in saved.queries()] == ["max-rows", queries[0].id]
    assert saved.queries()[0].query.epsilons == (0.1, 0.2)
    again, _ = library.save(first.id, queries[:1], dataset="adult", name="Plan",
                            expected_version=saved.version)           # not stale: as asked
    assert [q.id for q in again.queries()] == [queries[0].id]
