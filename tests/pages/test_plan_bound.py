"""A plan is bound to the declarations it was built on (issue 32 item 5).

The dataset's schema is declared in the server's store (version 1), a plan is built (it
records schema v1, unit v0), the schema is declared again (version 2: the bounds of age
change). The Release plan page marks the plan stale with what changed, in a sentence, and does
not release it until it is rebuilt under the current declarations, or confirmed as built
(then bound to the current versions, with the ones it was built on kept as the record).
"""

from __future__ import annotations

import json
import os

import pytest

from dashboard.data.builtins import DATA_DIR
from dashboard.plan_library import PlanLibrary
from plan import model
from plan.identity import content_digest
from release.declarations import DeclarationStore
from tests.conftest import open_app

BUILT = "release_plan_built_on_by_dataset"


def schema(upper: int) -> str:
    return json.dumps({"columns": {"age": {"role": "numeric", "origin": "public",
                                           "lower": 17, "upper": upper, "integer": True}}})


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def told(at) -> list[str]:
    """The page's warnings, as read (the page escapes Markdown)."""
    return [w.value.replace("\\", "").replace("\u2060", "") for w in at.warning]


@pytest.fixture(scope="module")
def adult():
    return content_digest(DATA_DIR / "adult.csv.gz")


def stale_plan(adult):
    """Schema v1 declared; a count planned on Adult; schema v2 declared since."""
    at = open_app()   # a fresh plans file and a fresh declarations file
    store = DeclarationStore(os.environ["EPSILON_LAB_DECLARATIONS"])
    store.declare(adult, names=["Adult"], schema=schema(90))
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_query").set_value("count").run()
    at.button(key="stats_add_to_plan").click().run()
    no_problem(at)
    key = at.session_state["dataset"].key
    assert at.session_state[BUILT][key] == (adult, model.BuiltOn(1, 0))
    store.declare(adult, schema=schema(120), reason="the census's own documentation")
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    return at, key


def release(at):
    at.checkbox(key="plan_release_confirm").check().run()
    at.button(key="plan_release").click().run()
    no_problem(at)
    return at


def test_a_stale_plan_is_marked_and_held_until_rebuilt(adult):
    at, key = stale_plan(adult)
    [stale] = [t for t in told(at) if "This plan is stale" in t]
    today = DeclarationStore(os.environ["EPSILON_LAB_DECLARATIONS"]).latest(adult).schema.date
    assert "built on schema v1 of this dataset's declarations" in stale, stale
    assert f"The schema changed on {today}: the bounds of age changed." in stale, stale
    assert at.button(key="plan_release").disabled
    assert any("cannot be released as it is" in t and "changed since" in t for t in told(at))
    labels = [b.label for b in at.button]
    assert "Release as built on schema v1" in labels

    at.button(key="plan_stale_rebuild").click().run()
    no_problem(at)
    assert not [t for t in told(at) if "This plan is stale" in t]
    assert at.session_state[BUILT][key] == (adult, model.BuiltOn(2, 0))
    [saved] = PlanLibrary(os.environ["EPSILON_LAB_PLANS"]).plans(key)
    assert saved.built_on() == (adult, model.BuiltOn(2, 0))
    release(at)
    assert any("Released and recorded" in s.value for s in at.success)


def test_a_stale_plan_confirmed_as_built_is_released_with_the_record(adult):
    at, key = stale_plan(adult)
    at.button(key="plan_stale_confirm").click().run()
    no_problem(at)
    assert not [t for t in told(at) if "This plan is stale" in t]
    confirmed = model.BuiltOn(2, 0, confirmed_from=(1, 0))
    assert at.session_state[BUILT][key] == (adult, confirmed)
    [saved] = PlanLibrary(os.environ["EPSILON_LAB_PLANS"]).plans(key)
    assert saved.built_on() == (adult, confirmed)
    release(at)
    assert any("Released and recorded" in s.value for s in at.success)
    outcome = at.session_state["last_release_by_dataset"][key]
    published = json.loads(outcome["release"].plan.published().to_json())
    assert published["dataset"]["declarations"] == {
        "schema": 2, "unit": 0, "confirmed_from": {"schema": 1, "unit": 0}}


def test_a_plan_that_records_nothing_is_not_stale(adult):
    """A plan saved before plans kept their versions: nothing to compare, nothing said."""
    at = open_app()
    store = DeclarationStore(os.environ["EPSILON_LAB_DECLARATIONS"])
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_query").set_value("count").run()
    at.button(key="stats_add_to_plan").click().run()
    key = at.session_state["dataset"].key
    at.session_state[BUILT][key] = None     # as a plan of before opens
    store.declare(adult, schema=schema(120))
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    assert not [t for t in told(at) if "This plan is stale" in t]
    release(at)
    assert any("Released and recorded" in s.value for s in at.success)
