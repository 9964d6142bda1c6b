"""Choose epsilon sweeps the query the pages build: its sensitivities, scales and smallest ε are
those of ``plan.build``'s parts of the Noisy statistics or Noisy tables query.

Expected values are closed forms written here (Laplace scale = sensitivity / ε, a mean's and a
variance's budget shares, a whole-number sensitivity rounded up) or fixed-seed simulations with
numpy of the law a release draws, never the code under test.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.analysis.epsilon_question import statistics_query, tables_query
from dashboard.analysis.epsilon_sweep import (
    GRID,
    mechanism_curves,
    query_numbers,
    release_part,
    smallest_for,
)
from dashboard.analysis.epsilon_view import target_sentence
from dpcore import safe_rounding
from dpcore.contributions import PrivacyUnit

SEED, DELTA, BETA = 3, 1e-6, 0.05
KEY = "upload:people"


@pytest.fixture(scope="module")
def loaded():
    """An upload: ages (some missing, some outside [0, 100]), two rows per person id."""
    rng = np.random.default_rng(21)
    pid = np.repeat(np.arange(400), 2)
    age = rng.normal(45, 25, pid.size).round(1)
    age[::29] = np.nan
    team = rng.choice(["red", "blue", "green"], pid.size)
    size = rng.choice(["S", "M", "L", "XL"], pid.size)
    csv = pd.DataFrame({"pid": pid, "age": age, "team": team,
                        "size": size}).to_csv(index=False).encode()
    return datasets.load_upload(csv, "people.csv")


def statistics(loaded, unit=None, **saved):
    keys = {"query": "stats_query", "column": "stats_column", "lower": "stats_lower",
            "upper": "stats_upper", "mechanism": "stats_mechanism", "share": "stats_share"}
    return statistics_query(loaded, {keys[k]: v for k, v in saved.items()}, KEY, unit=unit,
                            seed=SEED)


def clamped(loaded, lower: float, upper: float) -> pd.Series:
    return loaded.frame["age"].dropna().clip(lower, upper)


def test_count_sensitivity_scale_and_smallest_epsilon(loaded):
    query = statistics(loaded, query="count", mechanism="laplace")
    assert query.kind == "count" and not query.per_cell and not query.relative_by_default
    numbers = query_numbers(loaded.relation, query)
    assert (numbers.l1, numbers.l2, float(numbers.true_value)) == (1.0, 1.0, 800.0)
    curves = mechanism_curves(loaded.relation, query, "laplace", beta=BETA, delta=DELTA,
                              seed=SEED)
    np.testing.assert_allclose(curves.exact["scale"], 1 / np.array(GRID), rtol=1e-12)
    # P(|Laplace(1/ε)| > α) = exp(-αε) = β
    alpha = 10.0
    found = smallest_for(loaded.relation, query, "laplace", alpha=alpha, beta=BETA,
                         delta=DELTA)
    assert found.epsilon == pytest.approx(math.log(1 / BETA) / alpha, rel=1e-6)
    sentence = target_sentence(query, "laplace", found, beta=BETA, delta=DELTA,
                               target_value=alpha, relative=False, true_value=800.0)
    assert f"ε ≥ {safe_rounding.upper(found.epsilon)} keeps the count within ±10" in sentence
    # the release's mechanism at that ε (plan.build's part), drawn with a fixed seed
    for factor, share in ((1.0, (0.947, 0.953)), (0.9, (0.92, 0.94))):
        part = query.built("laplace", found.epsilon * factor, DELTA).parts[0]
        assert part.scale == pytest.approx(1 / (found.epsilon * factor), rel=1e-12)
        noisy = part.mechanism.sample(800.0, rng=np.random.default_rng(8), trials=200_000)
        within = float(np.mean(np.abs(noisy - 800.0) <= alpha))
        assert share[0] <= within <= share[1]


@pytest.mark.parametrize("unit, rows", [(None, 1), (PrivacyUnit("pid", 2), 2)])
def test_sum_sensitivity_is_the_plans_under_the_privacy_unit(loaded, unit, rows):
    query = statistics(loaded, unit, query="sum", column="age", lower=0.0, upper=100.0,
                       mechanism="laplace")
    assert query.kind == "sum" and query.relative_by_default
    numbers = query_numbers(loaded.relation, query)
    assert numbers.l1 == 100.0 * rows   # each person moves the sum by at most rows × 100
    assert release_part(query, "laplace", DELTA).sensitivity == 100.0 * rows
    curves = mechanism_curves(loaded.relation, query, "laplace", beta=BETA, delta=DELTA,
                              seed=SEED)
    np.testing.assert_allclose(curves.exact["scale"], 100.0 * rows / np.array(GRID),
                               rtol=1e-12)


def test_whole_number_noise_is_calibrated_to_the_whole_sensitivity_a_release_uses(loaded):
    """A histogram under at most 2 categories per person: L2 = √2, which discrete Gaussian
    noise on counts takes rounded up to 2 in a release; Choose epsilon's curve is that
    mechanism's (before, it was calibrated to √2: a smaller error than any release has)."""
    unit = PrivacyUnit("pid", 1, 2)
    query = statistics(loaded, unit, query="histogram", column="team",
                       mechanism="discrete_gaussian")
    assert query.per_cell and "discrete_gaussian" in query.mechanisms
    numbers = query_numbers(loaded.relation, query)
    assert (numbers.l1, numbers.l2) == pytest.approx((2.0, math.sqrt(2)))
    assert release_part(query, "discrete_gaussian", DELTA).sensitivity == 2.0
    curves = mechanism_curves(loaded.relation, query, "discrete_gaussian", beta=BETA,
                              delta=DELTA, seed=SEED)
    at = [0, 20, 40]
    scales = [query.built("discrete_gaussian", GRID[i], DELTA).parts[0].scale for i in at]
    np.testing.assert_allclose(curves.exact["scale"][at], scales, rtol=1e-9)


def test_mean_parts_and_smallest_epsilon_against_a_simulation(loaded):
    query = statistics(loaded, query="mean", column="age", lower=0.0, upper=100.0,
                       mechanism="laplace", share=0.3)
    assert query.kind == "mean" and query.made_of_parts and query.sum_share == 0.3
    eps = 0.7
    sum_part, count_part = query.built("laplace", eps, DELTA).parts
    assert sum_part.scale == pytest.approx(100.0 / (0.3 * eps), rel=1e-9)
    assert count_part.scale == pytest.approx(1.0 / (0.7 * eps), rel=1e-9)
    ages = clamped(loaded, 0.0, 100.0)
    total, count, truth = float(ages.sum()), float(ages.size), float(ages.mean())
    numbers = query_numbers(loaded.relation, query)
    assert float(numbers.true_value) == pytest.approx(truth, rel=1e-12)
    alpha = 2.0
    curves = mechanism_curves(loaded.relation, query, "laplace", beta=BETA, delta=DELTA,
                              seed=SEED)
    found = smallest_for(loaded.relation, query, "laplace", alpha=alpha, beta=BETA,
                         delta=DELTA, curves=curves)
    sentence = target_sentence(query, "laplace", found, beta=BETA, delta=DELTA,
                               target_value=alpha, relative=False, true_value=truth)
    assert f"ε ≥ ≈ {safe_rounding.upper(found.epsilon)} keeps the mean of age within ±2" in sentence
    # the release's law, written here: noisy sum / noisy count (floored at 1), clamped
    rng = np.random.default_rng(12)
    for factor, meets in ((1.25, True), (0.8, False)):
        e = found.epsilon * factor
        noisy_sum = total + rng.laplace(0.0, 100.0 / (0.3 * e), 100_000)
        noisy_count = np.maximum(count + rng.laplace(0.0, 1.0 / (0.7 * e), 100_000), 1.0)
        errors = np.abs(np.clip(noisy_sum / noisy_count, 0.0, 100.0) - truth)
        assert bool(np.quantile(errors, 1 - BETA) <= alpha) is meets


def test_variance_parts_are_the_plans(loaded):
    query = statistics(loaded, query="variance", column="age", lower=10.0, upper=90.0,
                       mechanism="laplace")
    assert query.made_of_parts and query.relative_by_default
    eps = 0.9
    parts = query.built("laplace", eps, DELTA).parts
    # a third of ε each; sensitivities 1, h = 40 and h² = 1600 (h half the bounds' width)
    assert [p.sensitivity for p in parts] == [1.0, 40.0, 1600.0]
    np.testing.assert_allclose([p.scale for p in parts],
                               [3 / eps, 40 * 3 / eps, 1600 * 3 / eps], rtol=1e-9)
    numbers = query_numbers(loaded.relation, query)
    assert float(numbers.true_value) == pytest.approx(float(np.var(clamped(loaded, 10, 90))),
                                                      rel=1e-9)


@pytest.mark.parametrize("separate, cells_share", [(False, 1.0), (True, 0.8)])
def test_table_scale_is_the_plans_at_the_cells_share(loaded, separate, cells_share):
    saved = {"tables_row": "team", "tables_column": "size", "tables_mechanism": "laplace"}
    if separate:
        saved |= {"tables_rescale": True, "tables_total_source": "separate",
                  "tables_total_share": 0.2}
    query = tables_query(loaded, saved)
    assert query.kind == "crosstab" and query.per_cell and not query.made_of_parts
    numbers = query_numbers(loaded.relation, query)
    assert (numbers.l1, numbers.l2, numbers.true_value.size) == (1.0, 1.0, 12)
    assert release_part(query, "laplace", DELTA).sensitivity == 1.0
    curves = mechanism_curves(loaded.relation, query, "laplace", beta=BETA, delta=DELTA,
                              seed=SEED)
    np.testing.assert_allclose(curves.exact["scale"],
                               1 / (cells_share * np.array(GRID)), rtol=1e-9)
    # a per-cell ±α: exp(-α ε_cells) = β, ε_cells = cells_share × the total ε
    found = smallest_for(loaded.relation, query, "laplace", alpha=5.0, beta=BETA,
                         delta=DELTA)
    assert found.epsilon == pytest.approx(math.log(1 / BETA) / 5.0 / cells_share, rel=1e-9)



def test_a_query_the_plan_refuses_falls_back_to_the_count(loaded):
    """Bounds of ±1e308: the variance's half-width squared overflows, and plan.build refuses
    the page's query; Choose epsilon then shows the count (it used to sweep the refused
    variance)."""
    query = statistics(loaded, query="variance", column="age", lower=-1e308, upper=1e308,
                       mechanism="laplace")
    assert query.kind == "count" and "no query set up" in query.note
    assert query_numbers(loaded.relation, query).l1 == 1.0
