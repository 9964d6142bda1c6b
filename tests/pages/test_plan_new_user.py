"""What a new user tripped on, on the Release plan page (issue 35 item 4), one test each: the
plan's JSON refused after a release had spent the budget; the riskiest query's sentence read as
the whole plan's."""

from __future__ import annotations

import json
import math

import pytest

from release import Ledger
from tests.pages.test_page_release import plan_of_two, release, set_budget
from tests.pages.test_releases_files import offered, served  # noqa: F401 (a fixture)


@pytest.fixture
def ledger_file(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(path))
    return path


def test_the_plan_can_still_be_downloaded_once_a_release_spent_the_budget(
        ledger_file, served):  # noqa: F811
    # A budget of 2.5 for a plan of two ε = 1 queries: after one release 0.5 is left, the plan
    # no longer fits and is refused; its JSON (public: queries, budgets) stays on offer.
    at = set_budget(plan_of_two(), 2.5)
    release(at)
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error if "This plan is refused" not in e.value] == []
    assert at.button(key="plan_release").disabled     # the release itself stays refused
    with Ledger(ledger_file) as ledger:
        assert len(ledger.releases()) == 1
    button = at.download_button(key="plan_download")
    assert not button.disabled
    plan = json.loads(offered(at, served, "plan_download"))
    assert [q["query"]["kind"] for q in plan["queries"]] == ["count", "crosstab"]
    at.run()   # and on the page's next run
    assert not at.exception, [e.value for e in at.exception]
    assert not at.download_button(key="plan_download").disabled


def test_the_riskiest_query_alone_is_not_described_as_the_whole_plan(ledger_file):
    at = plan_of_two()   # a count and a table of Adult, pure ε = 1 each
    whole = next(i.value for i in at.info if "an attacker who knows" in i.value)
    alone = next(c.value for c in at.caption if c.value.startswith("For comparison"))
    assert whole.startswith("After the whole plan, an attacker")
    assert "After the whole plan" not in alone
    assert "After that query alone, an attacker who knows everyone else's data" in alone
    # one ε = 1 query from a coin flip: at most e/(1 + e) = 73.106 %, shown rounded up
    assert f"at most {math.ceil(1000 * math.e / (1 + math.e)) / 10}% certainty" in alone
