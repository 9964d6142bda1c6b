"""The Release plan page's "Saved plans" (issue 22 item 3): every edit is saved, a new session
opens the latest plan, plans are named, opened, duplicated, deleted (after a confirmation),
another tab's save is announced and never written over (issue 32 item 6: the later tab is
told what changed and offers to reload the saved plan or save its own as a copy), and a
damaged plans file leaves the session's plan working."""

from __future__ import annotations

import re

from dashboard.plan_library import PlanLibrary
from plan.examples import adult_plan
from tests.conftest import open_app

PLANS = "release_plan_by_dataset"


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def add_count(at) -> None:
    """Add a count; a second one with "Add a second" (the plan already holds one)."""
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_query").set_value("count").run()
    second = [b for b in at.button if b.key == "stats_add_to_plan_second"]
    (second[0] if second else at.button(key="stats_add_to_plan")).click().run()
    no_problem(at)


def queries(at) -> list[str]:
    return [e.query.id for e in at.session_state[PLANS].get(at.session_state["dataset"].key,
                                                            ())]


def test_a_new_session_opens_the_saved_plan(tmp_path):
    path = tmp_path / "plans.sqlite"
    first = open_app("statistics.py", plans=path)
    add_count(first)
    add_count(first)
    saved = PlanLibrary(path).plans(first.session_state["dataset"].key)
    assert [p.size for p in saved] == [2]
    again = open_app("plan.py", plans=path)   # a reload, a new tab or a restarted server
    no_problem(again)
    assert queries(again) == queries(first) and len(queries(again)) == 2
    assert any("Untitled plan" in e.label for e in again.expander)


def test_name_new_open_duplicate_and_delete(tmp_path):
    path = tmp_path / "plans.sqlite"
    at = open_app("statistics.py", plans=path)
    add_count(at)
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    library = PlanLibrary(path)
    key = at.session_state["dataset"].key
    next(t for t in at.text_input if t.label == "Plan name").set_value("Counts *bold*").run()
    no_problem(at)
    [counts] = library.plans(key)
    assert counts.name == "Counts *bold*" and counts.size == 1

    at.button(key="saved_plan_new").click().run()
    no_problem(at)
    assert queries(at) == []
    assert any("The plan is empty" in i.value for i in at.info)
    assert sorted(p.name for p in library.plans(key)) == ["Counts *bold*", "New plan"]

    at.button(key=f"saved_plan_open_{counts.id}").click().run()
    no_problem(at)
    assert len(queries(at)) == 1

    at.button(key=f"saved_plan_duplicate_{counts.id}").click().run()
    no_problem(at)
    names = sorted(p.name for p in library.plans(key))
    assert names == ["Counts *bold*", "Counts *bold* (copy)", "New plan"]
    assert len(queries(at)) == 1

    at.button(key=f"saved_plan_delete_{counts.id}").click().run()
    no_problem(at)
    assert any("Delete the plan" in w.value for w in at.warning)
    assert library.get(counts.id) is not None          # not before the confirmation
    at.button(key="saved_plan_delete_confirm").click().run()
    no_problem(at)
    assert library.get(counts.id) is None
    assert sorted(p.name for p in library.plans(key)) == ["Counts *bold* (copy)", "New plan"]


def conflict_told(at) -> list[str]:
    """The conflict's sentence, as read (the page escapes Markdown and breaks links)."""
    told = [w.value.replace("\\", "").replace("\u2060", "") for w in at.warning]
    return [t for t in told if "changed in another tab or window" in t]


def test_another_tab_saves_and_this_tab_says_so(tmp_path):
    """B saves; A, which changed nothing, is told (what B added) and still shows its own
    version until it reloads; the saved plan is B's."""
    path = tmp_path / "plans.sqlite"
    tab_a = open_app("statistics.py", plans=path)
    add_count(tab_a)
    tab_b = open_app("statistics.py", plans=path)
    assert len(queries(tab_b)) == 1
    add_count(tab_b)                                   # B saves version 2
    tab_a.switch_page("app_pages/plan.py").run()      # A's next run
    no_problem(tab_a)
    [told] = conflict_told(tab_a)
    assert "added Number of rows" in told and "still shows the version before" in told, told
    assert len(queries(tab_a)) == 1
    tab_a.button(key="plan_conflict_reload").click().run()
    no_problem(tab_a)
    assert queries(tab_a) == queries(tab_b) and not conflict_told(tab_a)


def test_two_tabs_edit_one_plan_the_later_save_is_refused(tmp_path):
    """Issue 32 item 6: A and B edit the same saved plan (version 2). B adds a query and
    saves; A, still on version 2, adds one too: A's save is refused (the stored plan stays
    B's), A is told when and what B changed and is offered both ways. "Save mine as a copy"
    makes a second saved plan holding A's queries, B's untouched. In a second round on the
    copy, "Reload the saved plan" drops A's unsaved change and shows the saved one, which A
    then edits on."""
    path = tmp_path / "plans.sqlite"
    tab_a = open_app("statistics.py", plans=path)
    add_count(tab_a)
    add_count(tab_a)
    key = tab_a.session_state["dataset"].key
    library = PlanLibrary(path)
    [plan] = library.plans(key)
    tab_b = open_app("statistics.py", plans=path)
    assert queries(tab_b) == queries(tab_a)
    add_count(tab_b)                                  # B saves version 3 (three counts)
    before = library.get(plan.id)
    assert before.version == 3

    tab_a.button(key="stats_add_to_plan_second").click().run()   # A, from version 2
    no_problem(tab_a)
    assert library.get(plan.id) == before             # nothing written over B's
    [told] = conflict_told(tab_a)
    assert f"'{plan.name}'" in told and before.updated_hhmm in told, told
    assert "added Number of rows" in told and "Your change in this tab is not saved" in told, told
    labels = [b.label for b in tab_a.button]
    assert "Reload the saved plan" in labels and "Save mine as a copy" in labels
    mine = queries(tab_a)
    assert len(mine) == 3

    tab_a.button(key="plan_conflict_copy").click().run()
    no_problem(tab_a)
    assert not conflict_told(tab_a)
    plans = {p.name: p for p in library.plans(key)}
    assert set(plans) == {plan.name, f"{plan.name} (copy)"}
    copy = plans[f"{plan.name} (copy)"]
    assert [q.id for q in copy.queries()] == mine == queries(tab_a)
    assert plans[plan.name] == before                  # B's stays as B saved it

    # another tab trims the copy to one query; A, on the copy's version 1, adds one more
    library.save(copy.id, copy.queries()[:1], dataset=key, name=copy.name,
                 expected_version=copy.version)
    tab_a.button(key="stats_add_to_plan_second").click().run()
    no_problem(tab_a)
    assert len(queries(tab_a)) == 4 and len(library.get(copy.id).queries()) == 1
    [told] = conflict_told(tab_a)
    assert "removed Number of rows" in told, told
    tab_a.button(key="plan_conflict_reload").click().run()
    no_problem(tab_a)
    assert queries(tab_a) == [q.id for q in library.get(copy.id).queries()]
    assert not conflict_told(tab_a)
    add_count(tab_a)                                   # saved, from the reloaded version
    assert len(library.get(copy.id).queries()) == 2 and not conflict_told(tab_a)


def test_a_damaged_plans_file_keeps_the_session_plan(tmp_path):
    path = tmp_path / "plans.sqlite"
    path.write_bytes(b"not a database" * 300)
    at = open_app("statistics.py", plans=path)
    add_count(at)
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    assert len(queries(at)) == 1
    warned = [w.value for w in at.warning if "Plans are not being saved" in w.value]
    assert warned and "damaged or is not a SQLite file" in warned[0], warned
    assert path.read_bytes() == b"not a database" * 300


def test_an_action_in_a_stale_tab_is_not_written_over_the_other_tabs_version(tmp_path):
    """B adds a query; A, not rerun since, adds one too (a callback): A is told, A keeps its
    own plan unsaved, and the saved plan is B's (it was "applied to B's version" before)."""
    path = tmp_path / "plans.sqlite"
    tab_a = open_app("statistics.py", plans=path)
    add_count(tab_a)
    tab_b = open_app("statistics.py", plans=path)
    add_count(tab_b)
    tab_a.button(key="stats_add_to_plan_second").click().run()   # A holds one count already
    no_problem(tab_a)
    assert conflict_told(tab_a)
    assert len(queries(tab_a)) == 2
    key = tab_a.session_state["dataset"].key
    [saved] = PlanLibrary(path).plans(key)
    assert [q.id for q in saved.queries()] == queries(tab_b)


def test_a_selection_is_saved_without_its_true_counts_or_data_target(tmp_path):
    """The Selection page's query keeps, in the session, the true counts and a target read
    off them: neither reaches the plans file."""
    path = tmp_path / "plans.sqlite"
    at = open_app("selection.py", plans=path)
    at.button(key="sel_add_to_plan").click().run()
    no_problem(at)
    key = at.session_state["dataset"].key
    [entry] = at.session_state[PLANS][key]
    scores = [float(s) for s in entry.context["scores"]]
    assert entry.query.target is not None and entry.query.target.origin == "data"
    [saved] = PlanLibrary(path).plans(key)
    numbers = {float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", saved.plan_json)}
    assert max(scores) > 100 and max(scores) not in numbers
    assert entry.query.target.probability not in numbers
    assert str(entry.query.target.probability).encode() not in path.read_bytes()
    assert saved.queries()[0].target is None and saved.queries()[0].id == entry.query.id


def test_an_imported_plan_is_saved(tmp_path):
    path = tmp_path / "plans.sqlite"
    at = open_app("plan.py", plans=path)
    plan = adult_plan()
    at.file_uploader(key="plan_import").set_value(("plan.json", plan.to_json().encode(),
                                                    "application/json")).run()
    assert not at.exception, [e.value for e in at.exception]
    [saved] = PlanLibrary(path).plans(at.session_state["dataset"].key)
    assert saved.queries() == plan.queries


def test_max_rows_drawn_in_either_tab_stay_charged_whichever_is_kept(tmp_path):
    """The rule of plan.kinds.max_rows (every draw the planner saw is charged) where a
    version is set aside: A reloads B's plan, yet A's unsaved max rows draw stays in it
    (saved); B's draw stays in a copy A saves of its own plan."""
    from dashboard.plan_store import Entry
    from plan.model import MaxRows, PlanQuery

    path = tmp_path / "plans.sqlite"
    tab_a = open_app("statistics.py", plans=path)
    add_count(tab_a)
    key = tab_a.session_state["dataset"].key
    library = PlanLibrary(path)
    [plan] = library.plans(key)
    tab_b = open_app("statistics.py", plans=path)
    add_count(tab_b)                                    # B saves version 2
    mine = PlanQuery("max-rows", "Max rows", MaxRows(0.9, 50, 4, (0.25,)), None)
    tab_a.session_state[PLANS][key] = (Entry(mine), *tab_a.session_state[PLANS][key])
    tab_a.run()                                         # A: a draw of its own, unsaved
    assert conflict_told(tab_a)
    tab_a.button(key="plan_conflict_reload").click().run()
    no_problem(tab_a)
    saved = library.get(plan.id).queries()
    assert [q.id for q in saved] == ["max-rows", *queries(tab_b)]
    assert saved[0].query.epsilons == (0.25,) and queries(tab_a) == [q.id for q in saved]

    # B, now behind, drew nothing; the stored plan holds A's draw: B's copy keeps it
    tab_b.button(key="stats_add_to_plan_second").click().run()
    no_problem(tab_b)
    assert conflict_told(tab_b)
    tab_b.button(key="plan_conflict_copy").click().run()
    no_problem(tab_b)
    copy = next(p for p in library.plans(key) if p.name.endswith("(copy)"))
    assert copy.queries()[0].query.epsilons == (0.25,)
    assert [q.id for q in copy.queries()] == queries(tab_b)
