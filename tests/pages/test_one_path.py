"""Noisy statistics simulates a mean and a variance from the very parts a release draws.

The page builds its query as the plan's query (``dashboard.analysis.stats_parts``) and
``plan.build`` gives it the parts; these tests check it against the release itself, never
against the page's own code: the parts Add to plan enters (names, scales, budgets), the law
of real releases (``release.run``, OpenDP's samplers) against the page's simulation, the
page's "95 % of releases are within ±α" against real releases, and the variance offered on
the page end to end (every measure and mechanism it offers → Add to plan → release).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from dashboard import datasets, person
from dashboard.analysis import plan_entries
from dashboard.analysis import statistics as stats
from dashboard.choices import PrivacyChoice
from dashboard.release_panel import source_of
from engine import Engine
from engine.duckdb_backend import DuckDBBackend
from plan import model
from plan.build import build
from release import Ledger, run
from tests.conftest import open_app
from tests.release.test_releasable import mechanism_cases, release_every

SEED = 4
CHOICES = (PrivacyChoice("pure", "laplace", epsilon=0.5),
           PrivacyChoice("approx", "gaussian", epsilon=0.8, delta=1e-6),
           PrivacyChoice("zcdp", "gaussian", rho=0.2))


@pytest.fixture(scope="module")
def loaded():
    """An upload: ages (some missing, some outside the bounds), at most 2 rows per person."""
    rng = np.random.default_rng(11)
    pid = np.repeat(np.arange(700), 2)[:1300]
    age = rng.normal(48, 20, pid.size).round(1)
    age[::37] = np.nan
    team = rng.choice(["red", "blue", "green", "gold"], pid.size)
    csv = pd.DataFrame({"pid": pid, "age": age, "team": team}).to_csv(index=False).encode()
    return datasets.load_upload(csv, "people.csv")


UNIT = person.PrivacyUnit("pid", 2)


def page_plan(loaded, query: str, choice: PrivacyChoice, share: float = 0.5):
    spec = stats.QuerySpec(query, "age", 10.0, 90.0, None,
                           stats.contribution_for(UNIT, query, SEED))
    return stats.make_plan(loaded.relation, spec, choice, sum_share=share)


def added(loaded, query: str, choice: PrivacyChoice, share: float = 0.5) -> model.PlanQuery:
    """What Add to plan enters for the page's settings."""
    return plan_entries.statistics_query(loaded, UNIT, query=query, column="age", lower=10.0,
                                         upper=90.0, categories=None, choice=choice,
                                         sum_share=share)


@pytest.mark.parametrize("query,share", [("mean", 0.5), ("mean", 0.3), ("variance", 0.5)])
@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: f"{c.measure}-{c.mechanism}")
def test_the_page_draws_the_parts_add_to_plan_enters(loaded, query, share, choice):
    shown = page_plan(loaded, query, choice, share)
    entered = build(added(loaded, query, choice, share), plan_entries.plan_unit(UNIT))
    assert shown.part_names == tuple(p.name for p in entered.parts)
    for mechanism, part in zip(shown.parts, entered.parts, strict=True):
        assert type(mechanism) is type(part.mechanism)
        assert mechanism.scale == part.mechanism.scale
        assert mechanism.sensitivity == part.sensitivity
        assert mechanism.privacy == part.mechanism.privacy
    # the parts' sensitivities under 2 rows per person, from the bounds alone
    h = 40.0
    expected = {"mean": (2 * 90.0, 2.0), "variance": (2.0, 2 * h, 2 * h * h)}[query]
    assert tuple(p.sensitivity for p in entered.parts) == pytest.approx(expected)


def test_the_true_variance_is_the_variance_of_the_clamped_values(loaded):
    shown = page_plan(loaded, "variance", CHOICES[0])
    ages = loaded.frame["age"].dropna().clip(10, 90)    # every person has ≤ 2 rows: all kept
    assert float(shown.true_value) == pytest.approx(float(np.var(ages)), rel=1e-9)
    assert shown.release.values == pytest.approx(
        (ages.size, float(np.sum(ages - 50)), float(np.sum((ages - 50) ** 2))), rel=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("query", ["mean", "variance"])
def test_real_releases_follow_the_law_the_page_shows(tmp_path, loaded, query):
    """300 releases by ``release.run`` (OpenDP, unseeded) of what Add to plan enters, against
    the page's 20,000 simulated ones: one law (KS), and the page's sentence "95 % of releases
    are within ±α" holds for the real ones (binomial, two-sided)."""
    choice = PrivacyChoice("pure", "laplace", epsilon=0.05)
    shown = page_plan(loaded, query, choice)
    run_ = stats.run_mechanism(shown, trials=20_000, seed=SEED)
    alpha, exact = run_.alpha_at(0.95)
    assert not exact          # the page says: a Monte Carlo quantile
    sentence = stats.accuracy_sentence(run_, 0.95)
    assert f"true {query}" in sentence
    query_ = added(loaded, query, choice)
    the_plan = model.Plan(model.Dataset("people"), (query_,), plan_entries.plan_unit(UNIT),
                          model.Accounting("pld", 1e-5))
    engine = Engine(DuckDBBackend(threads=1))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        real = np.array([run(the_plan, source_of(loaded), ledger=ledger, engine=engine)
                         .queries[0].rows[0][1] for _ in range(300)])
    simulated = shown.sample(20_000, np.random.default_rng(99))
    assert scipy_stats.ks_2samp(real, simulated).pvalue > 1e-4
    within = int(np.sum(np.abs(real - float(shown.true_value)) <= alpha))
    assert scipy_stats.binomtest(within, real.size, 0.95).pvalue > 1e-4


@pytest.mark.slow
def test_the_variance_is_offered_on_the_page_and_released_as_added(tmp_path):
    at = open_app("statistics.py")
    at.selectbox(key="stats_query").set_value("variance").run()
    at.selectbox(key="stats_column").set_value("age").run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    said = " ".join(m.value for m in at.markdown)
    assert "of the true variance" in said and "Monte Carlo" in said
    explanation = " ".join(c.value for c in at.caption)
    assert "a third of the budget each" in explanation
    # no closed-form line is drawn for a variance: the caption does not speak of one
    assert "Bars: the simulated errors; shaded" in explanation
    assert "line: the closed-form" not in explanation
    cases = mechanism_cases(at, "stats")
    kinds = {label.split("/")[1] for label, _ in cases}
    assert kinds == {"laplace", "gaussian", "staircase"}   # no range, on real numbers
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        problems, exempt = release_every(at, "stats", cases, ledger)
    assert problems == []
    # staircase noise has no floating-point-safe OpenDP sampler: the page says so first
    assert sorted(exempt) == sorted(label for label, _ in cases if "staircase" in label)


@pytest.mark.slow
def test_choose_epsilon_sweeps_the_variance_set_up_on_noisy_statistics(loaded):
    """The variance set up on Noisy statistics: Choose epsilon sweeps it (simulated, as the
    page simulates it: from the plan's parts), and its smallest ε for a target is where the
    page's own simulation at that ε meets it."""
    from dashboard.analysis.epsilon_question import statistics_query
    from dashboard.analysis.epsilon_sweep import mechanism_curves, query_numbers, smallest_for
    from dashboard.analysis.epsilon_view import sensitivity_note

    saved = {"stats_query": "variance", "stats_column": "age", "stats_lower": 10.0,
             "stats_upper": 90.0}
    shown = statistics_query(loaded, saved, loaded.key)
    assert (shown.kind, shown.what) == ("variance", "variance of age")
    assert set(shown.mechanisms) == {"laplace", "gaussian", "staircase"}
    numbers = query_numbers(loaded.relation, shown)
    ages = loaded.frame["age"].dropna().clip(10, 90)
    assert float(numbers.true_value) == pytest.approx(float(np.var(ages)), rel=1e-9)
    assert "count 1, deviations 40, squares 1,600" in sensitivity_note(shown, numbers)
    beta, alpha = 0.05, 20.0
    curves = mechanism_curves(loaded.relation, shown, "laplace", beta=beta,
                              delta=1e-6, seed=SEED)
    found = smallest_for(loaded.relation, shown, "laplace", alpha=alpha, beta=beta,
                         delta=1e-6, curves=curves)
    # the page at that ε (a little above, a little below): its own 95 % error against α
    spec = stats.QuerySpec("variance", "age", 10.0, 90.0)
    for factor, meets in ((1.15, True), (0.85, False)):
        plan = stats.make_plan(loaded.relation, spec,
                               PrivacyChoice("pure", "laplace", epsilon=found.epsilon * factor))
        errors = np.abs(plan.sample(40_000, np.random.default_rng(5)) - plan.true_value)
        assert bool(np.quantile(errors, 1 - beta) <= alpha) is meets


def test_a_histogram_with_whole_noise_under_a_group_bound_is_released_as_shown(tmp_path, loaded):
    """Discrete Gaussian noise on counts whose L2 sensitivity is √2 (max groups 2): the page
    calibrates it to the whole number above (2), as the release now does — before, Add to plan
    refused what the page showed ("sensitivity must be a whole number")."""
    unit = person.PrivacyUnit("pid", 1, 2)
    choice = PrivacyChoice("zcdp", "discrete_gaussian", rho=0.5)
    spec = stats.QuerySpec("histogram", "team", None, None, None,
                           stats.contribution_for(unit, "histogram", SEED))
    shown = stats.make_plan(loaded.relation, spec, choice)
    assert shown.release.sensitivity == 2.0
    query = plan_entries.statistics_query(loaded, unit, query="histogram", column="team",
                                          lower=None, upper=None, categories=shown.labels,
                                          choice=choice)
    entered = build(query, plan_entries.plan_unit(unit))
    assert entered.parts[0].mechanism.scale == shown.release.scale
    the_plan = model.Plan(model.Dataset("people"), (query,), plan_entries.plan_unit(unit),
                          model.Accounting("pld", 1e-5))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        result = run(the_plan, source_of(loaded), ledger=ledger,
                     engine=Engine(DuckDBBackend(threads=1)))
    assert [row[0] for row in result.queries[0].rows] == [(str(t),) for t in shown.labels]


@pytest.mark.parametrize("choice", CHOICES + (PrivacyChoice("pure", "geometric", epsilon=0.7),
                                              PrivacyChoice("zcdp", "discrete_gaussian",
                                                            rho=0.3)),
                         ids=lambda c: f"{c.measure}-{c.mechanism}")
def test_the_tables_page_draws_the_part_add_to_plan_enters(loaded, choice):
    """Noisy tables under 1 row per person in at most 2 cells: the page's table mechanism is
    the part of what Add to plan enters (scale, sensitivity, privacy)."""
    from dashboard.analysis import tables

    unit = person.PrivacyUnit("pid", 1, 2)
    bound = person.contribution(unit, seed=SEED)
    rows, columns = ("red", "blue", "green", "gold"), ("0", "1")
    frame = loaded.frame.assign(adult=(loaded.frame["age"] >= 18).astype(int).astype(str))
    release = tables.table_release(frame, "t", "team", "adult", rows, columns, choice,
                                   False, False, False, "sum", 0.5, 1000, SEED, bound)
    shown = tables.plan_table("team", "adult", rows, columns, choice, bound)
    query = plan_entries.tables_query(loaded, unit, row="team", column="adult",
                                      row_categories=rows, column_categories=columns,
                                      choice=choice)
    part = build(query, plan_entries.plan_unit(unit)).parts[0]
    assert (shown.scale, shown.sensitivity, shown.privacy) == (
        part.mechanism.scale, part.sensitivity, part.mechanism.privacy)
    assert release.noise.endswith(f"scale {part.mechanism.scale:.4g} on every cell")
