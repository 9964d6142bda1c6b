"""Saved plans (dashboard.plan_library): save, load, list, duplicate, delete; a save from a
version another window saved over is refused (PlanConflict), nothing overwritten; what a plan
was built on is kept; no true value is stored; a damaged, foreign or locked file gives a clear
PlanLibraryError; a plans file written before plans kept their declarations still works."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from dashboard import plan_library
from dashboard.plan_library import PlanConflict, PlanLibrary, PlanLibraryError
from plan.examples import adult_plan
from plan.model import BuiltOn, MaxRows, PlanQuery, Target

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
    saved = library.save(first.id, queries, dataset="adult", name="Census counts",
                         expected_version=1)
    assert saved.version == 2
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


def test_two_saves_from_the_same_version_the_second_is_refused(library, queries):
    """Issue 32 item 6: two windows save from version 1; the first writes version 2, the
    second is refused with the stored plan, and nothing of it is written (it was "a later
    save wins" before)."""
    plan = library.create("adult", "Shared", queries[:1])
    in_b = library.save(plan.id, queries[:2], dataset="adult", name="Shared",
                        expected_version=1)   # window B saves version 2
    before = library.path.read_bytes()
    with pytest.raises(PlanConflict) as refused:
        library.save(plan.id, queries[:3], dataset="adult", name="Mine",
                     expected_version=1)       # window A still had version 1
    assert refused.value.stored == in_b and refused.value.stored.version == 2
    stored = library.get(plan.id)
    assert (stored.version, stored.name, stored.queries()) == (2, "Shared", queries[:2])
    assert library.path.read_bytes() == before
    again = library.save(plan.id, queries[:3], dataset="adult", name="Shared",
                         expected_version=2)   # from the stored version: saved
    assert again.version == 3 and library.get(plan.id).queries() == queries[:3]


def test_a_plan_deleted_meanwhile_is_saved_anew(library, queries):
    plan = library.create("adult", "Gone", queries[:1])
    library.delete(plan.id)
    again = library.save(plan.id, queries[:2], dataset="adult", name="Gone",
                         expected_version=1)
    assert again.id != plan.id
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


def _max_rows(drawn: int, epsilons: tuple[float, ...]) -> PlanQuery:
    return PlanQuery("max-rows", "Max rows", MaxRows(0.9, 50, drawn, epsilons), None)


def test_a_version_set_aside_keeps_its_max_rows_draws(queries):
    """Tab A drew max rows (its draws were seen: they must be charged); tab B's version, from
    before, is kept instead (saved as a copy, or A reloads B's): the draws stay charged."""
    drawn = _max_rows(4, (0.1, 0.2))
    kept = plan_library.keep_drawn(queries[:1], (drawn, *queries[:2]))
    assert [q.id for q in kept] == ["max-rows", queries[0].id]
    assert kept[0].query.epsilons == (0.1, 0.2)
    assert plan_library.keep_drawn(queries[:1], queries[:2]) == queries[:1]   # nothing drawn
    # both drew after a common first draw: the kept value, every draw charged
    mine, theirs = _max_rows(5, (0.1, 0.3)), _max_rows(4, (0.1, 0.2, 0.4))
    [merged] = plan_library.keep_drawn((mine,), (theirs,))
    assert (merged.query.drawn, merged.query.epsilons) == (5, (0.1, 0.3, 0.2, 0.4))
    # the kept one already charges every draw of the other: unchanged
    assert plan_library.keep_drawn((theirs,), (_max_rows(4, (0.1, 0.2)),)) == (theirs,)


def test_what_changed_in_words(queries):
    a, b, c = queries[:3]
    assert plan_library.what_changed((a, b), (a, c)) == f"added {c.label}; removed {b.label}"
    edited = replace(b, target=Target("error", alpha=123.0, beta=0.05))
    assert plan_library.what_changed((a, b), (a, edited)) == f"changed {b.label}"
    assert plan_library.what_changed((a,), (a,)) == ""


def test_what_a_plan_was_built_on_is_kept(library, queries):
    built = ("sha256:" + "ab" * 32, BuiltOn(2, 1, (1, 1)))
    saved = library.create("adult", "Bound", queries[:1], built_on=built)
    assert library.get(saved.id).built_on() == built
    again = library.save(saved.id, queries[:2], dataset="adult", name="Bound",
                         expected_version=1, built_on=built)
    assert library.get(again.id).built_on() == built
    assert library.duplicate(saved.id).built_on() == built
    assert library.create("adult", "Unbound", queries[:1]).built_on() is None


def test_a_plans_file_of_before_opens_and_keeps_working(tmp_path, queries):
    """A plans file as today's main writes it (no versions in its plans) opens; its plan has
    no versions recorded, and it is saved on."""
    path = tmp_path / "plans.sqlite"
    text = ('{"format": "epsilon-lab-saved-plan", "privacy_unit": {"person_column": null, '
            '"max_rows": 1, "max_groups": null, "bounds_origin": "typed"}, "queries": []}')
    with sqlite3.connect(path) as c:
        c.execute("CREATE TABLE plans_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        c.execute("CREATE TABLE plans (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT "
                  "NOT NULL, name TEXT NOT NULL, plan_json TEXT NOT NULL, version INTEGER "
                  "NOT NULL, updated TEXT NOT NULL)")
        c.execute("INSERT INTO plans_meta VALUES ('format', 'epsilon-lab-plans')")
        c.execute("INSERT INTO plans (dataset, name, plan_json, version, updated) VALUES "
                  "('adult', 'Old', ?, 3, '2026-11-01T10:00:00+00:00')", (text,))
    library = PlanLibrary(path)
    [old] = library.plans("adult")
    assert (old.name, old.version, old.queries(), old.built_on()) == ("Old", 3, (), None)
    saved = library.save(old.id, queries[:1], dataset="adult", name="Old",
                         expected_version=3)
    assert saved.version == 4 and library.get(old.id).queries() == queries[:1]
