"""What the bounds cost (issue 12, item 3): the breakdown against brute force on a small frame
(every subset of kept rows enumerated), the engine's seeded truncation against the exact mean,
the breakdown on rows without a value against the pandas reference's one truncation averaged
over seeds, and the page's section under a person-id unit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.analysis import bounds_cost as bc
from dashboard.analysis import statistics as stats
from dashboard.choices import PrivacyChoice
from dashboard.data.model import LoadedDataset
from dashboard.data.relation import Relation
from dashboard.person import PrivacyUnit, contribution
from tests.conftest import open_app
from tests.engine_reference import row_ranks

VALUES = pd.DataFrame({"pid": [1, 1, 1, 1, 2, 3, 3],
                       "kind": ["a", "a", "b", "c", "a", "b", "b"],
                       "value": [10.0, 20.0, 30.0, 40.0, 5.0, 1.0, 2.0]})
LAPLACE = PrivacyChoice("pure", "laplace", epsilon=1.0)


def loaded(frame: pd.DataFrame, key: str) -> LoadedDataset:
    return LoadedDataset("small", frame, {}, [], "test", key=key)


def spec(query: str, r: int, k: int | None = None, **fields) -> stats.QuerySpec:
    return stats.QuerySpec(query, contribution=stats.contribution_for(
        PrivacyUnit("pid", r, k), query, 0), **fields)


def brute_force_sum(frame: pd.DataFrame, r: int, lower: float, upper: float):
    """Exact mean and variance of the truncated clamped sum: every person keeps a uniformly
    random subset of min(r, n) of their n rows, independently; enumerate the subsets."""
    mean = var = 0.0
    for _, rows in frame.groupby("pid"):
        v = rows["value"].clip(lower, upper).to_numpy()
        m = min(r, len(v))
        sums = np.array([v[list(c)].sum() for c in itertools.combinations(range(len(v)), m)])
        mean += sums.mean()
        var += sums.var()
    return mean, var


def test_count_breakdown_matches_brute_force():
    data = loaded(VALUES, "k-count")
    cost = bc.bounds_cost(data, "k-count", spec("count", 2), LAPLACE, None)
    b = cost.breakdown
    kept = VALUES.groupby("pid").size().clip(upper=2).sum()
    assert b.truncation_bias[0] == pytest.approx(kept - len(VALUES))   # 5 − 7
    assert b.truncation_sd[0] == pytest.approx(0)    # a count keeps min(r, n) whatever rows
    assert b.noise_sd[0] == pytest.approx(math.sqrt(2) * 2)   # Laplace scale Δ/ε = 2
    assert b.rmse[0] == pytest.approx(math.sqrt(4 + 8))


@pytest.mark.parametrize("r", [1, 2, 3])
def test_sum_breakdown_matches_enumeration(r):
    data = loaded(VALUES, f"k-sum-{r}")
    s = spec("sum", r, column="value", lower=0.0, upper=25.0)
    cost = bc.bounds_cost(data, f"k-sum-{r}", s, LAPLACE, None)
    b = cost.breakdown
    mean, var = brute_force_sum(VALUES, r, 0.0, 25.0)
    clamped_all = VALUES["value"].clip(0, 25).sum()
    assert b.true_value[0] == pytest.approx(VALUES["value"].sum())
    assert b.expected_value[0] == pytest.approx(mean)
    assert b.truncation_bias[0] == pytest.approx(mean - clamped_all)
    assert b.clamping_bias[0] == pytest.approx(clamped_all - VALUES["value"].sum())
    assert b.truncation_sd[0] == pytest.approx(math.sqrt(var))
    # the sensitivity r·25 sets Laplace noise of scale 25r: sd √2·25r
    assert b.noise_sd[0] == pytest.approx(math.sqrt(2) * 25 * r)


@pytest.mark.slow
def test_the_engines_truncation_averages_to_the_exact_mean():
    relation = Relation.of_frame(VALUES, "small", key="k-engine")
    answers = [stats.answer_query(relation, stats.QuerySpec(
        "sum", "value", 0.0, 25.0, contribution=contribution(PrivacyUnit("pid", 2), seed=seed)))
        .true_value for seed in range(300)]
    mean, var = brute_force_sum(VALUES, 2, 0.0, 25.0)
    # 300 seeds: the mean within 4 standard errors of the exact one
    assert float(np.mean(answers)) == pytest.approx(mean, abs=4 * math.sqrt(var / 300))
    assert float(np.var(answers)) == pytest.approx(var, rel=0.35)


#: Rows without a value (value) or outside the categories (kind "d" or none): under the unit's
#: one truncation they take kept slots like any other row (issue 37).
GAPS = pd.DataFrame({"pid": [1, 1, 1, 1, 1, 2, 2, 2, 3, 3, 4],
                     "kind": ["a", "a", "b", "d", None, "a", "b", "d", "b", "b", "a"],
                     "value": [10.0, 20.0, np.nan, 40.0, np.nan, 5.0, np.nan, 7.0, 1.0, 2.0,
                               3.0]})


def enumerated_sum_mean(frame: pd.DataFrame, r: int, lower: float, upper: float) -> float:
    """Exact mean of the truncated clamped sum when each person keeps a uniformly random
    min(r, n) of ALL their n rows (a row without a value adds 0): every subset enumerated."""
    mean = 0.0
    for _, rows in frame.groupby("pid"):
        v = rows["value"].clip(lower, upper).fillna(0.0).to_numpy()
        m = min(r, len(v))
        mean += np.mean([v[list(c)].sum() for c in itertools.combinations(range(len(v)), m)])
    return mean


def test_rows_without_a_value_take_kept_slots_in_the_breakdown():
    """The predicted bias of dropped rows is what the one truncation really drops: the pandas
    reference's kept rows (``row_ranks`` <= max rows, then those with a value or in a
    category), averaged over 2,000 seeds, within 4 standard errors, and the enumeration of
    every kept subset of each person's rows exactly. Before, a person's rows counted only
    those with a value (or in a category): person 1 kept 2 of their 3 values (bias −18.3 for
    the sum instead of −37)."""
    r, lower, upper, categories = 2, 0.0, 25.0, ("a", "b", "c")
    data = loaded(GAPS, "k-gaps-sum")
    sum_cost = bc.bounds_cost(data, "k-gaps-sum",
                              spec("sum", r, column="value", lower=lower, upper=upper),
                              LAPLACE, None).breakdown
    data = loaded(GAPS, "k-gaps-hist")
    hist = bc.bounds_cost(data, "k-gaps-hist",
                          spec("histogram", 1, column="kind", categories=categories),
                          LAPLACE, None)
    assert hist.labels == ("a", "b")                      # "c" has no row
    clamped = GAPS["value"].clip(lower, upper)
    has_value = GAPS["value"].notna().to_numpy()
    cells = [(GAPS["kind"] == c).to_numpy() for c in hist.labels]
    seeds = 2000
    kept_sums, kept_counts = np.empty(seeds), np.empty((seeds, len(cells)))
    for seed in range(seeds):
        ranks = row_ranks(GAPS, "pid", seed)
        kept = (ranks > 0) & (ranks <= r)
        kept_sums[seed] = clamped[kept & has_value].sum()
        one = (ranks > 0) & (ranks <= 1)                   # the histogram's max rows = 1
        kept_counts[seed] = [np.sum(one & c) for c in cells]
    dropped_sum = kept_sums - clamped.sum()
    se = dropped_sum.std() / math.sqrt(seeds)
    assert abs(sum_cost.truncation_bias[0] - dropped_sum.mean()) < 4 * se
    assert sum_cost.truncation_bias[0] == pytest.approx(
        enumerated_sum_mean(GAPS, r, lower, upper) - clamped.sum())
    # by hand: persons keep 2/5 of 55, 2/3 of 12, then 3 and 3: 36 kept of 73
    assert sum_cost.truncation_bias[0] == pytest.approx(36 - 73)
    dropped_counts = kept_counts - np.array([c.sum() for c in cells])
    se = dropped_counts.std(axis=0) / math.sqrt(seeds)
    assert np.all(np.abs(hist.breakdown.truncation_bias - dropped_counts.mean(axis=0)) < 4 * se)
    # by hand: a: 2/5 + 1/3 + 1 of 4 rows, b: 1/5 + 1/3 + 1 of 4
    assert hist.breakdown.truncation_bias == pytest.approx(
        [2 / 5 + 1 / 3 + 1 - 4, 1 / 5 + 1 / 3 + 1 - 4])


def test_the_sweep_marks_the_smallest_total_error():
    data = loaded(VALUES, "k-sweep")
    cost = bc.bounds_cost(data, "k-sweep", spec("count", 2), LAPLACE, None)
    sweep = cost.sweep
    assert list(sweep.max_rows) == [1, 2, 3, 4]
    # count: bias −Σ max(n − r, 0), noise √2·r: totals √(bias² + 2r²)
    n = VALUES.groupby("pid").size().to_numpy()
    expected = [math.sqrt(np.maximum(n - r, 0).sum() ** 2 + 2 * r * r) for r in range(1, 5)]
    assert sweep.rmse == pytest.approx(expected)
    assert sweep.best_max_rows == 1 + int(np.argmin(expected))


def test_histogram_breakdown_rows_are_the_categories():
    data = loaded(VALUES, "k-hist")
    s = spec("histogram", 1, 2, column="kind", categories=("a", "b", "c", "d"))
    cost = bc.bounds_cost(data, "k-hist", s, LAPLACE, None)
    table = cost.table()
    assert list(table["Category"]) == ["a", "b", "c"]   # d has no row
    assert list(table["True answer (all rows, unclamped)"]) == [3, 3, 1]


def test_private_choice_is_an_exact_distribution():
    data = loaded(VALUES, "k-private")
    chosen = bc.private_max_rows(data, "k-private", "pid", 0.5, 1.0, 10, 7)
    assert chosen.probabilities.sum() == pytest.approx(1.0)
    assert 1 <= chosen.drawn <= 10 and chosen.within(1, 10) == pytest.approx(1.0)
    # the median of (4, 1, 2) rows is 2: the likeliest candidate
    assert int(np.argmax(chosen.probabilities)) + 1 == 2


def test_the_statistics_page_shows_the_cost_and_the_private_route():
    at = open_app("statistics.py", dataset=datasets.BUILTIN_DATASETS[3])
    at.selectbox(key="stats_query").select("count")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("not private" in w.value for w in at.warning)
    titles = [str(c.proto.spec) for c in at.get("plotly_chart")]
    assert any("NOT private" in t for t in titles)
    assert any("Max rows chosen privately" in t for t in titles)
    button = next(b for b in at.button if b.label.startswith("Use max rows = "))
    chosen = int(button.label.split("= ")[1].split(" ")[0].replace(",", ""))
    button.click()
    at.run()
    key = at.session_state["dataset"].key
    unit = at.session_state["privacy_unit_by_dataset"][key]
    assert unit.max_rows == chosen and unit.bounds_origin == "data"   # a seeded draw: read off data
    assert not at.exception


def test_the_panel_asks_the_page_adapter_whether_it_breaks_an_answer_down(monkeypatch):
    """A count of rows whose page adapter says the unit's max rows do not move it the way the
    panel models (a count of people) is not broken down, though its plan kind counts rows;
    the count, the sum and the histogram still are, a mean is not."""
    from dashboard import kinds

    assert bc.supported(spec("count", 2))
    assert bc.supported(spec("sum", 2, column="value", lower=0.0, upper=50.0))
    assert bc.supported(spec("histogram", 2, 1, column="kind"))
    assert not bc.supported(spec("mean", 2, column="value", lower=0.0, upper=50.0))
    assert not bc.supported(stats.QuerySpec("count"))   # one row = one person

    class Unmoved(type(kinds.ADAPTERS["count"])):
        breaks_down = False

    monkeypatch.setitem(kinds.ADAPTERS, "count", Unmoved())
    assert not bc.supported(spec("count", 2))
