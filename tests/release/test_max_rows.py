"""Max rows chosen privately, for real (trust issue, item 3): the simulated draw of the DP
quantile of rows per person is seeded by the URL's seed — a function of the data — so a bound
taken from it is flagged as read off the data; a draw for the release is made by OpenDP with
fresh entropy, enters the plan as its max rows query, and every draw seen is charged in the
plan's totals and in the ledger."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.model import (
    Count,
    Dataset,
    MaxRows,
    Noise,
    Plan,
    PlanError,
    PlanQuery,
    PrivacyUnit,
)
from release import Ledger, prepare, run
from release.bounds import draw_max_rows, rank_counts
from release.card import release_card
from release.files import release_record
from tests.conftest import open_app

VISITS = "Clinic visits (synthetic)"


def _max_rows_plan(drawn: int = 4, epsilons=(0.1, 0.2)) -> Plan:
    return Plan(Dataset("people"), (
        PlanQuery("max-rows", "Max rows", MaxRows(0.9, 50, drawn, tuple(epsilons)), None),
        PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0))),
        PrivacyUnit("pid", drawn, None, "private"))


def test_every_draw_is_charged_and_the_drawn_value_is_released(tmp_path):
    frame = pd.DataFrame({"pid": np.repeat(np.arange(300), 3), "x": 1.0})
    plan = _max_rows_plan()
    assert prepare(plan).spent.epsilon == pytest.approx(1.3, abs=1e-12)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(frame), ledger=ledger,
                      engine=Engine(DuckDBBackend(threads=1)))
        [entry] = ledger.releases()
    assert entry.epsilon == pytest.approx(1.3, abs=1e-12)
    record = release_record(release)
    assert record["queries"][0]["values"] == [{"group": ["max rows"], "value": 4}]
    card = release_card(release)
    assert any("drawn before the release" in r["rule"] for r in card["data_handling"])
    assert not [i for i in card["not_covered_by_the_guarantee"] if i["query"] is None
                and "contribution bounds" in i["what"]]
    assert Plan.from_json(plan.to_json()) == plan


def test_a_plan_whose_unit_does_not_use_the_drawn_value_is_refused():
    with pytest.raises(PlanError, match="drew 4"):
        Plan(Dataset("people"), _max_rows_plan().queries, PrivacyUnit("pid", 5, None, "typed"))
    # private bounds without the query that charges them: flagged on the card
    from release.card import not_covered

    uncharged = Plan(Dataset("people"), _max_rows_plan().queries[1:],
                     PrivacyUnit("pid", 4, None, "private"))
    assert [i["what"] for i in not_covered(uncharged)] == [
        "contribution bounds (rows and groups per person)"]


@pytest.mark.slow
def test_the_real_draw_follows_opendps_quantile_law():
    """2,000 OpenDP draws (unseeded) at ε = 0.1 on people with 1..6 rows: the 50 % quantile's
    draws land where the exact exponential-noise law (permute-and-flip on OpenDP's scores
    tilted by one person's worth per row, computed here independently by enumerating the
    noisy argmin) puts them."""
    rows = np.array([1, 2, 3, 4, 5, 6])
    people = np.array([40, 30, 10, 10, 5, 5])
    frame = pd.DataFrame({"pid": np.repeat(np.arange(people.sum()),
                                           np.repeat(rows, people))})
    source, largest, eps = FrameSource(frame), 8, 0.1
    engine = Engine(DuckDBBackend(threads=1))
    draws = np.array([draw_max_rows(source, "pid", level=0.5, epsilon=eps, largest=largest,
                                    engine=engine) for _ in range(2000)])
    below, equal, total = rank_counts(rows, people, largest)
    greater = total - np.asarray(below) - np.asarray(equal)
    scores = np.abs(np.asarray(below) - np.asarray(greater)) / 2.0   # OpenDP's, q = 1/2
    scores += np.arange(largest) / 2.0     # the tilt: (c − 1)·max(q, 1 − q)
    # permute-and-flip with sensitivity 1/2 (one person moves a rank error by at most 1/2)
    rng = np.random.default_rng(7)
    noise = rng.exponential(scale=2 * 0.5 / eps, size=(400_000, largest))
    # negate: the best is the smallest score, i.e. the largest −score + noise
    expected = np.bincount(np.argmax(-scores + noise, axis=1), minlength=largest) / 400_000
    seen = np.bincount(draws - 1, minlength=largest)
    keep = expected * 2000 > 5
    chi2 = float(np.sum((seen[keep] - 2000 * expected[keep]) ** 2 / (2000 * expected[keep])))
    assert chi2 < 40, (seen, np.round(expected * 2000))
    assert len(set(draws.tolist())) > 1    # fresh entropy: not one seeded value


@pytest.mark.slow
def test_a_balanced_panels_real_draw_is_its_rows_per_person():
    """545 people × 8 rows, q = 0.99, ε = 1, candidates 1..100 (issue 21 item 11): OpenDP's
    draws are 8 with probability ≥ 0.91 (test_quantiles' closed form); untilted, 0.17."""
    frame = pd.DataFrame({"pid": np.repeat(np.arange(545), 8)})
    engine = Engine(DuckDBBackend(threads=1))
    draws = np.array([draw_max_rows(FrameSource(frame), "pid", level=0.99, epsilon=1.0,
                                    largest=100, engine=engine) for _ in range(200)])
    assert np.mean(draws == 8) > 0.8, np.bincount(draws)    # mean 0.95: 10 sd above 0.8


def _unit(at):
    return at.session_state["privacy_unit_by_dataset"][at.session_state["dataset"].key]


@pytest.mark.slow
def test_the_page_flags_the_simulated_draw_and_charges_the_real_one(tmp_path, monkeypatch,
                                                                    downloads):
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    at = open_app("statistics.py", dataset=VISITS)
    at.selectbox(key="stats_query").select("count").run()
    at.button(key="stats_use_private_rows").click().run()
    assert not at.exception
    assert _unit(at).bounds_origin == "data"
    at.button(key="stats_add_to_plan").click().run()
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception
    flagged = Plan.from_json(downloads["release-plan.json"])
    assert flagged.privacy_unit.bounds_origin == "data"     # was "typed"
    # two draws for real: both in the plan, the unit uses the last
    at.switch_page("app_pages/statistics.py").run()
    at.button(key="stats_draw_max_rows").click().run()
    at.button(key="stats_draw_max_rows").click().run()
    assert not at.exception
    unit = _unit(at)
    assert unit.bounds_origin == "private"
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception, [e.value for e in at.exception]
    plan = Plan.from_json(downloads["release-plan.json"])
    [drawn] = [q for q in plan.queries if isinstance(q.query, MaxRows)]
    assert drawn.query.epsilons == (0.1, 0.1) and drawn.query.drawn == unit.max_rows
    assert plan.privacy_unit.bounds_origin == "private"
    count = next(q for q in plan.queries if q.query.kind == "count")
    assert prepare(plan).spent.epsilon == pytest.approx(0.2 + count.mechanism.epsilon,
                                                        abs=1e-9)
    at.checkbox(key="plan_release_confirm").check().run()
    at.button(key="plan_release").click().run()
    assert not at.exception
    released = json.loads(downloads["release.json"])
    assert released["privacy_spent"]["epsilon"] == pytest.approx(
        0.2 + count.mechanism.epsilon, abs=1e-9)
    assert released["queries"][0]["values"] == [{"group": ["max rows"],
                                                 "value": unit.max_rows}]
