"""A mean per group found privately, as the Groups page simulates it and Add to plan adds
it, is released for real (issue 20, "one path"): the threshold's part, then the mean's sum
and count, each at the scale the page drew with."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dashboard import datasets
from dashboard.analysis import groups as ga
from dashboard.person import ONE_ROW
from tests.conftest import open_app
from tests.release.test_releasable import ADULT, ledger, no_problem, released, take_added

__all__ = ["ledger"]   # the fixture the test below takes


@pytest.mark.slow
def test_a_mean_found_privately_is_released_as_the_page_simulates_it(ledger):  # noqa: F811
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_statistic").set_value("mean").run()
    at.selectbox(key="groups_column").set_value("age").run()
    at.toggle(key="groups_public").set_value(False).run()
    no_problem(at)
    spec = ga.GroupsSpec((at.selectbox(key="groups_by").value,), "mean", "age", 17.0, 90.0,
                         False, "laplace", at.select_slider(key="groups_epsilon").value, 1e-6)
    page = ga.page_built(datasets.load_builtin(ADULT), spec, ONE_ROW)
    query, reason = take_added(at, "groups")
    assert reason is None and replace(query, id="q") == page.query   # the plan names it
    [outcome] = released(query, at, ledger).queries
    assert [(p["part"], p["scale"]) for p in outcome.parts] == [
        (p.name, p.scale) for p in page.parts] and [p.name for p in page.parts] == [
        "groups", "sum", "count"]
    assert outcome.rows, "the largest groups clear the threshold"
    assert all(17.0 <= value <= 90.0 for _, value in outcome.rows)
