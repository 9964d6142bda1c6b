"""Tests for dpcore.contributions: person-level sensitivities and the error the bounds cost.

Sensitivities are checked by brute force on small frames (every person removed in turn, after
an independent truncation written here) and shown to be reached; truncation moments against an
exhaustive enumeration of every way the rows could be dropped and against a Monte Carlo of a
real random truncation; the error breakdown and the tuning sweep against the same enumeration.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from dpcore.contributions import (
    ContributionBounds,
    ContributionCells,
    PrivacyUnit,
    Sensitivity,
    contribution_cells,
    count_sensitivity,
    error_breakdown,
    max_rows_sweep,
    mean_sensitivities,
    sum_sensitivity,
    truncation_moments,
)

dp.enable_features("contrib")

# --- closed forms ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("r", "k", "expected"), [
    (1, None, (1, 1, 1)),
    (3, None, (3, 3, 3)),
    (3, 4, (12, 6, 3)),
    (5, 1, (5, 5, 5)),
    (2, 9, (18, 6, 2)),
])
def test_count_sensitivity_closed_forms(r, k, expected):
    s = count_sensitivity(ContributionBounds(max_rows=r, max_groups=k))
    assert (s.l1, s.l2, s.linf) == expected


@pytest.mark.parametrize(("r", "k"), [(1, 2), (3, 2), (7, 5), (10**6, 3), (1, 10**9 - 1)])
def test_l2_sensitivity_never_rounds_down(r, k):
    """sqrt(k)·r is irrational for non-square k: the float returned is >= it, by <= 2 ulps."""
    s = count_sensitivity(ContributionBounds(max_rows=r, max_groups=k))
    assert Fraction(s.l2) ** 2 >= k * r * r
    assert s.l2 == pytest.approx(math.sqrt(k) * r, rel=4e-16)


def test_sum_and_mean_sensitivities_scale_by_the_largest_magnitude():
    bounds = ContributionBounds(max_rows=4, max_groups=9)
    s = sum_sensitivity(bounds, lower=-5.0, upper=2.0)
    assert (s.l1, s.l2, s.linf) == (9 * 4 * 5.0, 3 * 4 * 5.0, 4 * 5.0)
    part_sum, part_count = mean_sensitivities(bounds, lower=0.0, upper=100.0)
    assert (part_sum.l1, part_count.l1, part_count.l2) == (3600.0, 36.0, 12.0)
    with pytest.raises(ValueError, match="lower"):
        sum_sensitivity(bounds, lower=1.0, upper=1.0)
    with pytest.raises(ValueError, match="overflows"):
        sum_sensitivity(ContributionBounds(10**9, 10**9), lower=0.0, upper=1e300)


@pytest.mark.parametrize("r", [1, 3, 7])
def test_total_bound_matches_opendp_maps(r):
    """A person with at most r rows is r record changes under OpenDP's symmetric distance:
    make_count_by maps it to (l0, l1, l∞) = (r, r, r), hence L2 <= sqrt(l1·l∞) = r, and
    make_sum over integers in [L, U] to r·max(|L|, |U|) — our bounds without max_groups.
    (OpenDP's float sum reads U − L for bounds of both signs, a float-arithmetic allowance.)"""
    by_key = dp.t.make_count_by(dp.vector_domain(dp.atom_domain(T=str)),
                                dp.symmetric_distance(), TV=int)
    l0, l1, linf = by_key.map(r)
    ours = count_sensitivity(ContributionBounds(r))
    assert (ours.l1, ours.linf) == (l1, linf) and ours.l2 == math.sqrt(l1 * linf)
    total = dp.t.make_sum(dp.vector_domain(dp.atom_domain(bounds=(-5, 2))),
                          dp.symmetric_distance())
    assert sum_sensitivity(ContributionBounds(r), lower=-5, upper=2).l1 == total.map(r)


def test_bounds_validate_and_describe():
    assert ContributionBounds(1).describe() == "at most 1 row per person"
    assert (ContributionBounds(3, 2).describe()
            == "at most 3 rows per person in each of at most 2 groups")
    with pytest.raises(ValueError, match="max_rows"):
        ContributionBounds(0)
    with pytest.raises(TypeError, match="max_groups"):
        ContributionBounds(2, 1.5)
    with pytest.raises(TypeError, match="bounds"):
        count_sensitivity((3, 2))
    with pytest.raises(ValueError, match="l2"):
        Sensitivity(l1=1.0, l2=math.nan, linf=1.0)


def test_the_privacy_unit_its_bounds_and_its_json_form():
    unit = PrivacyUnit("pid", 3, 2, "private")
    assert unit.to_dict() == {"person_column": "pid", "max_rows": 3, "max_groups": 2,
                              "bounds_origin": "private"}
    assert unit.bounds() == ContributionBounds(3, 2)
    assert unit.bounds(grouped=False) == ContributionBounds(3)
    assert unit.describe() == ("one person = all rows with the same pid; at most 3 rows per "
                               "person in each of at most 2 groups")
    assert PrivacyUnit().describe() == "one row = one person" and PrivacyUnit().per_row
    # the same bounds are the same unit, however they were chosen
    assert unit == PrivacyUnit("pid", 3, 2, "typed")
    # the schema file's older spelling reads as the one spelling
    old = PrivacyUnit.from_dict({"person": "pid", "max_rows": 3, "max_groups": 2})
    assert old == unit and old.bounds_origin == "typed"
    assert PrivacyUnit.from_dict({}) == PrivacyUnit()
    assert PrivacyUnit(None, 1, 1).per_row   # plan files may say max_groups 1 for one row
    with pytest.raises(ValueError, match="max_rows"):
        PrivacyUnit(None, 3)
    with pytest.raises(ValueError, match="person_column"):
        PrivacyUnit("  ")
    with pytest.raises(ValueError, match="bounds_origin"):
        PrivacyUnit("pid", bounds_origin="guessed")
    with pytest.raises(ValueError, match="person_column"):
        PrivacyUnit.from_dict({"person": "a", "person_column": "b"})
    with pytest.raises(ValueError, match="persons"):
        PrivacyUnit.from_dict({"persons": "pid"})


def test_one_privacy_unit_class_everywhere():
    from dashboard.data import schema
    from dashboard.person import PrivacyUnit as PageUnit
    from plan.model import PrivacyUnit as PlanUnit

    assert PageUnit is PlanUnit is PrivacyUnit
    assert schema.Schema().unit == PrivacyUnit()


# --- brute force: remove every person in turn -----------------------------------------------------


def truncate(frame: pd.DataFrame, r: int, k: int | None) -> pd.DataFrame:
    """Keep at most k groups per person (the first in label order) and r rows per person per
    group; with k None, r rows per person in all. Any per-person rule would do: removing a
    person leaves the others' kept rows unchanged, which is all the sensitivity needs."""
    if k is None:
        return frame.groupby("person", sort=False).head(r)
    first_groups = (frame[["person", "group"]].drop_duplicates().sort_values(["person", "group"])
                    .groupby("person").head(k))
    kept = frame.merge(first_groups, on=["person", "group"])
    return kept.groupby(["person", "group"], sort=False).head(r)


def answers(frame: pd.DataFrame, groups: list, lower: float, upper: float) -> dict:
    clamped = frame.assign(value=frame["value"].clip(lower, upper))
    by_group = clamped.groupby("group")["value"]
    return {
        "count": np.array([len(frame)], dtype=float),
        "sum": np.array([clamped["value"].sum()]),
        "counts": by_group.size().reindex(groups, fill_value=0).to_numpy(dtype=float),
        "sums": by_group.sum().reindex(groups, fill_value=0.0).to_numpy(dtype=float),
    }


def random_frame(seed: int, persons: int = 8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 9, size=persons)
    person = np.repeat(np.arange(persons), rows)
    return pd.DataFrame({"person": person,
                         "group": rng.integers(0, 4, size=person.size),
                         "value": rng.normal(2.0, 6.0, size=person.size).round(2)})


BOUNDS = [(1, None), (3, None), (1, 1), (2, 2), (3, 2), (2, 4)]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("r", "k"), BOUNDS)
def test_no_person_moves_an_answer_more_than_the_sensitivity(seed, r, k):
    frame = random_frame(seed)
    lower, upper = -3.0, 7.0
    groups = sorted(frame["group"].unique())
    full = answers(truncate(frame, r, k), groups, lower, upper)
    bounds = ContributionBounds(r, k)
    scalar = ContributionBounds(r, None)  # the ungrouped queries: r rows in all
    declared = {"count": count_sensitivity(scalar),
                "sum": sum_sensitivity(scalar, lower=lower, upper=upper),
                "counts": count_sensitivity(bounds),
                "sums": sum_sensitivity(bounds, lower=lower, upper=upper)}
    for person in frame["person"].unique():
        others = answers(truncate(frame[frame["person"] != person], r, k), groups, lower,
                         upper)
        for name, sens in declared.items():
            if name in ("count", "sum") and k is not None:
                continue  # the scalar queries are truncated without a group bound
            change = full[name] - others[name]
            assert np.sum(np.abs(change)) <= sens.l1 + 1e-9, (name, person)
            assert np.sqrt(np.sum(change**2)) <= sens.l2 + 1e-9, (name, person)
            assert np.max(np.abs(change)) <= sens.linf + 1e-9, (name, person)


@pytest.mark.parametrize(("r", "k"), [(3, 2), (2, 4), (4, None), (1, 3)])
def test_the_sensitivity_is_reached(r, k):
    """A person with r rows of the largest magnitude in each of k groups moves the answers by
    exactly the declared L1, L2 and L∞ sensitivities: the bounds are tight."""
    lower, upper = -8.0, 3.0
    groups = list(range(max(k or 1, 2)))
    heavy = [(0, g, lower) for g in range(k or 1) for _ in range(r + 2)]  # more than r rows
    light = [(1, g, 1.0) for g in groups]
    frame = pd.DataFrame(heavy + light, columns=["person", "group", "value"])
    full = answers(truncate(frame, r, k), groups, lower, upper)
    without = answers(truncate(frame[frame["person"] != 0], r, k), groups, lower, upper)
    for name, sens in [("counts", count_sensitivity(ContributionBounds(r, k))),
                       ("sums", sum_sensitivity(ContributionBounds(r, k), lower=lower,
                                                upper=upper))]:
        change = full[name] - without[name]
        assert np.sum(np.abs(change)) == pytest.approx(sens.l1, rel=1e-12)
        assert np.sqrt(np.sum(change**2)) == pytest.approx(sens.l2, rel=1e-12)
        assert np.max(np.abs(change)) == pytest.approx(sens.linf, rel=1e-12)


def test_brute_force_catches_a_row_level_sensitivity():
    """The check above can fail: sensitivity 1 (one row = one person) on a frame where a person
    has 3 rows is exceeded when that person is removed."""
    frame = pd.DataFrame({"person": [0, 0, 0, 1], "group": [0, 0, 0, 0], "value": 1.0})
    full = answers(truncate(frame, 3, None), [0], 0.0, 1.0)["count"]
    without = answers(truncate(frame[frame["person"] != 0], 3, None), [0], 0.0, 1.0)["count"]
    assert abs(full - without)[0] == 3 > count_sensitivity(ContributionBounds(1)).l1


# --- cells ----------------------------------------------------------------------------------------


def cells_by_pandas(frame: pd.DataFrame, lower=None, upper=None) -> pd.DataFrame:
    """The cells, computed independently with pandas group-bys."""
    f = frame.copy()
    f["c"] = f["value"] if lower is None else f["value"].clip(lower, upper)
    pairs = f.groupby(["person", "group"]).agg(n=("c", "size"), C=("c", "sum"),
                                               Q=("c", lambda v: float(np.sum(v * v))),
                                               raw=("value", "sum")).reset_index()
    per_person = f.groupby("person").agg(N=("c", "size"), G=("group", "nunique"))
    pairs = pairs.join(per_person, on="person")
    pairs["C2"] = pairs["C"] ** 2
    return (pairs.groupby(["group", "n", "N", "G"])
            .agg(persons=("person", "size"), S=("C", "sum"), C2=("C2", "sum"), Q=("Q", "sum"),
                 raw=("raw", "sum")).reset_index())


@pytest.mark.parametrize("seed", range(4))
def test_contribution_cells_match_a_pandas_group_by(seed):
    frame = random_frame(seed, persons=30)
    cells = contribution_cells(frame["person"], groups=frame["group"], values=frame["value"],
                               lower=-2.0, upper=5.0)
    expected = cells_by_pandas(frame, -2.0, 5.0)
    got = pd.DataFrame({"group": cells.group, "n": cells.rows, "N": cells.person_rows,
                        "G": cells.person_groups, "persons": cells.persons,
                        "S": cells.value_sum, "C2": cells.value_sum_squares,
                        "Q": cells.value_squares, "raw": cells.raw_value_sum})
    got = got.sort_values(["group", "n", "N", "G"]).reset_index(drop=True)
    for column in expected.columns:
        np.testing.assert_allclose(got[column].to_numpy(float),
                                   expected[column].to_numpy(float), rtol=1e-12, atol=1e-12)


def test_cells_default_to_a_count_and_check_consistency():
    cells = ContributionCells(group=[0, 0], rows=[1, 3], persons=[5, 2])
    np.testing.assert_array_equal(cells.value_sum, [5, 6])
    np.testing.assert_array_equal(cells.value_sum_squares, [5, 18])
    np.testing.assert_array_equal(cells.value_squares, [5, 6])
    assert not cells.rows.flags.writeable
    with pytest.raises(ValueError, match="Cauchy"):
        ContributionCells(group=[0], rows=[2], persons=[1], value_sum=[2.0],
                          value_sum_squares=[9.0], value_squares=[1.0])
    with pytest.raises(ValueError, match="person_rows"):
        ContributionCells(group=[0], rows=[3], persons=[1], person_rows=[2])
    with pytest.raises(ValueError, match="persons"):
        ContributionCells(group=[0], rows=[3], persons=[0])
    with pytest.raises(ValueError, match="persons"):
        contribution_cells([1, None, 2])
    with pytest.raises(ValueError, match="lower"):
        contribution_cells([1, 2], values=[1.0, 2.0], lower=0.0)


# --- truncation: exhaustive enumeration -----------------------------------------------------------


def enumerate_truncation(frame: pd.DataFrame, r: int, k: int | None, lower, upper,
                         n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of each group's kept clamped sum over every equally likely outcome of
    the random truncation, person by person (persons are independent)."""
    mean, var = np.zeros(n_groups), np.zeros(n_groups)
    value = frame["value"].clip(lower, upper).to_numpy()
    group = frame["group"].to_numpy()
    for _, rows in frame.groupby("person").indices.items():
        outcomes, weights = [], []
        if k is None:
            for kept in itertools.combinations(rows, min(r, len(rows))):
                outcomes.append(np.bincount(group[list(kept)], value[list(kept)], n_groups))
                weights.append(1.0)
        else:
            own = sorted(set(group[rows]))
            chosen_sets = list(itertools.combinations(own, min(k, len(own))))
            for chosen in chosen_sets:
                per_group = [list(itertools.combinations(rows[group[rows] == g],
                                                         min(r, int(np.sum(group[rows] == g)))))
                             for g in chosen]
                ways = math.prod(len(p) for p in per_group)
                for pick in itertools.product(*per_group):
                    kept = [i for part in pick for i in part]
                    outcomes.append(np.bincount(group[kept], value[kept], n_groups))
                    weights.append(1.0 / (len(chosen_sets) * ways))
        o, w = np.array(outcomes), np.array(weights) / np.sum(weights)
        mu = w @ o
        mean += mu
        var += w @ (o - mu) ** 2
    return mean, var


def small_frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(100 + seed)
    rows = rng.integers(1, 6, size=5)
    person = np.repeat(np.arange(5), rows)
    return pd.DataFrame({"person": person, "group": rng.integers(0, 3, size=person.size),
                         "value": rng.normal(3.0, 5.0, size=person.size).round(1)})


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("r", "k"), [(1, None), (2, None), (4, None), (1, 1), (2, 1), (1, 2),
                                      (2, 2), (3, 3)])
def test_truncation_moments_match_exhaustive_enumeration(seed, r, k):
    frame = small_frame(seed)
    lower, upper = -1.0, 6.0
    cells = contribution_cells(frame["person"], groups=frame["group"], values=frame["value"],
                               lower=lower, upper=upper)
    n_groups = int(frame["group"].max()) + 1
    mean, var = truncation_moments(cells, max_rows=r, max_groups=k)
    exact_mean, exact_var = enumerate_truncation(frame, r, k, lower, upper, n_groups)
    np.testing.assert_allclose(mean, exact_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var, exact_var, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("r", [1, 2, 4])
def test_rows_the_query_does_not_read_take_kept_slots(seed, r):
    """Under the unit's one truncation a person keeps min(r, N) of ALL their N rows, and rows
    without a value (or outside the categories) add nothing: the moments of the cells built
    with ``read`` match the enumeration where those rows are kept like any other, with
    value 0. Without ``read`` (the rows dropped first) a person's N would be too small."""
    frame = small_frame(seed)
    read = np.random.default_rng(seed).random(len(frame)) < 0.6
    read[0] = True
    lower, upper = -1.0, 6.0
    groups = frame["group"].astype(object).where(read, None)      # missing where not read
    values = frame["value"].where(read, np.nan)
    cells = contribution_cells(frame["person"], groups=groups, values=values, lower=lower,
                               upper=upper, read=read)
    _, code = np.unique(frame["group"][read], return_inverse=True)
    padded = frame.assign(group=0, value=0.0)          # unread rows: kept slots adding 0
    padded.loc[read, "group"] = code
    padded.loc[read, "value"] = frame["value"][read]
    n_groups = int(code.max()) + 1
    mean, var = truncation_moments(cells, max_rows=r)
    exact_mean, exact_var = enumerate_truncation(padded, r, None, lower, upper, n_groups)
    np.testing.assert_allclose(mean, exact_mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(var, exact_var, rtol=1e-10, atol=1e-10)
    with pytest.raises(ValueError, match="read"):
        contribution_cells(frame["person"], read=read[:-1])
    with pytest.raises(ValueError, match="values"):
        contribution_cells(frame["person"], values=values[:-1], read=read)


def ranks_within(block: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each run (row of ``keys``), each item's rank among the items of its block when the
    items are ordered by their random key: items with rank < r are the r kept."""
    order = np.argsort(block + keys, axis=1)  # block ids are integers, keys in [0, 1)
    starts = np.searchsorted(np.sort(block), block)  # first position of each item's block
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(block.size)[None, :], axis=1)
    return ranks - starts[None, :]


def simulate_truncation(frame: pd.DataFrame, r: int, k: int, runs: int,
                        rng: np.random.Generator, *, uniform_groups: bool = True) -> np.ndarray:
    """What an engine does, ``runs`` times at once: each person's groups in random order, keep
    the first k; each pair's rows in random order, keep the first r. Returns each run's kept
    sum per group, shape (runs, groups). ``uniform_groups=False`` is a plausible engine bug:
    the groups of the person's first rows after a row shuffle (favouring groups with more
    rows)."""
    person, group = frame["person"].to_numpy(), frame["group"].to_numpy()
    pair_ids, pair = np.unique(person * 1000 + group, return_inverse=True)
    pair_person = pair_ids // 1000
    row_keys = rng.random((runs, pair.size))
    row_rank = ranks_within(pair, row_keys)
    if uniform_groups:
        pair_keys = rng.random((runs, pair_ids.size))
    else:  # a pair's key is that of its first row in the shuffle
        pair_keys = np.ones((runs, pair_ids.size))
        np.minimum.at(pair_keys, (np.arange(runs)[:, None], pair[None, :]), row_keys)
        pair_keys = np.minimum(pair_keys, 1 - 1e-12)
    pair_rank = ranks_within(pair_person, pair_keys)
    kept = (row_rank < r) & (pair_rank[:, pair] < k)
    one_hot = np.eye(int(group.max()) + 1)[group]
    return (kept * frame["value"].to_numpy()) @ one_hot


def simulated_frame() -> pd.DataFrame:
    frame = random_frame(7, persons=12)
    frame["value"] = frame["value"].clip(-2.0, 6.0)
    return frame


def test_truncation_moments_match_a_simulated_random_truncation():
    """20,000 random truncations of a 12-person frame: each group's mean kept sum is within
    4.5 standard errors of the exact mean, and the variance within 6 % (its standard error here
    is about 1 %). Power: see the next test."""
    frame = simulated_frame()
    cells = contribution_cells(frame["person"], groups=frame["group"], values=frame["value"])
    mean, var = truncation_moments(cells, max_rows=2, max_groups=2)
    runs = 20_000
    sums = simulate_truncation(frame, 2, 2, runs, np.random.default_rng(3))
    se = np.sqrt(var / runs)
    assert np.all(np.abs(sums.mean(axis=0) - mean) <= 4.5 * se)
    np.testing.assert_allclose(sums.var(axis=0), var, rtol=0.06)


def test_the_simulation_detects_a_row_weighted_group_choice():
    """The check above can fail: an engine that keeps the groups of a person's first rows after
    a row shuffle differs from the uniform-choice formula by many standard errors."""
    frame = simulated_frame()
    cells = contribution_cells(frame["person"], groups=frame["group"], values=frame["value"])
    mean, var = truncation_moments(cells, max_rows=2, max_groups=2)
    runs = 20_000
    sums = simulate_truncation(frame, 2, 2, runs, np.random.default_rng(3),
                               uniform_groups=False)
    assert np.max(np.abs(sums.mean(axis=0) - mean) / np.sqrt(var / runs)) > 10


# --- the error breakdown and the sweep ------------------------------------------------------------


def test_count_truncation_bias_is_the_rows_beyond_the_bound():
    """For a count without groups, the bias is −Σ max(0, n_p − r), from the histogram of rows per
    person, computed here directly."""
    rows = np.array([1, 1, 1, 2, 3, 7, 150])
    person = np.repeat(np.arange(rows.size), rows)
    cells = contribution_cells(person)
    for r in (1, 2, 5, 150, 200):
        result = error_breakdown(cells, max_rows=r, noise_sd=0.0)
        assert result.truncation_bias[0] == -np.sum(np.maximum(rows - r, 0))
        assert result.clamping_bias[0] == 0 and result.truncation_sd[0] == 0
        assert result.true_value[0] == rows.sum()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("r", "k"), [(1, None), (2, None), (1, 2), (2, 1)])
def test_error_breakdown_matches_brute_force(seed, r, k):
    """Bias and RMSE against the raw truth, from the enumeration: E[(kept + noise − truth)²] =
    E[(kept − truth)²] + noise_sd² over every equally likely truncation."""
    frame = small_frame(seed)
    lower, upper = 0.0, 4.0
    n_groups = int(frame["group"].max()) + 1
    cells = contribution_cells(frame["person"], groups=frame["group"], values=frame["value"],
                               lower=lower, upper=upper)
    noise_sd = 1.7
    result = error_breakdown(cells, max_rows=r, max_groups=k, noise_sd=noise_sd)
    truth = frame.groupby("group")["value"].sum().reindex(range(n_groups), fill_value=0)
    clamped_all = frame["value"].clip(lower, upper).groupby(frame["group"]).sum().reindex(
        range(n_groups), fill_value=0)
    mean, var = enumerate_truncation(frame, r, k, lower, upper, n_groups)
    np.testing.assert_allclose(result.true_value, truth, rtol=1e-12)
    np.testing.assert_allclose(result.clamping_bias, clamped_all - truth, atol=1e-12)
    np.testing.assert_allclose(result.truncation_bias, mean - clamped_all, atol=1e-12)
    np.testing.assert_allclose(result.bias, result.truncation_bias + result.clamping_bias,
                               atol=1e-12)
    mse = (mean - truth) ** 2 + var + noise_sd**2
    np.testing.assert_allclose(result.rmse, np.sqrt(mse), rtol=1e-12)


def test_max_rows_sweep_matches_breakdowns_and_marks_the_best():
    """Each point of the sweep equals error_breakdown with the noise of count_sensitivity at that
    bound (an independent route to the noise); the best is the argmin. Data: 200 persons with
    1 row, 20 with 3, 2 with 120 — at ε = 1 Laplace the best bound is small, not 120."""
    rows = np.r_[np.ones(200, int), np.full(20, 3), np.full(2, 120)]
    cells = contribution_cells(np.repeat(np.arange(rows.size), rows))
    candidates = np.arange(1, 131)
    unit = math.sqrt(2) / 1.0  # Laplace at ε = 1: sd = √2·Δ/ε
    sweep = max_rows_sweep(cells, candidates, unit_noise_sd=unit, norm="l1")
    expected = [error_breakdown(cells, max_rows=int(r),
                                noise_sd=unit * count_sensitivity(ContributionBounds(int(r))).l1)
                .rmse[0] for r in candidates]
    np.testing.assert_allclose(sweep.rmse, expected, rtol=1e-12)
    assert sweep.best_max_rows == candidates[int(np.argmin(expected))]
    # bias² + noise² by hand at r = 3: 2 persons drop 117 rows each, noise sd 3√2
    at3 = sweep.rmse[2]
    assert at3 == pytest.approx(math.sqrt(234**2 + 18), rel=1e-12)
    assert sweep.best_max_rows < 120


def test_max_rows_sweep_with_groups_uses_the_norm():
    frame = random_frame(2, persons=20)
    cells = contribution_cells(frame["person"], groups=frame["group"])
    for norm, factor in (("l1", 3.0), ("l2", math.sqrt(3))):
        sweep = max_rows_sweep(cells, [1, 2, 4], max_groups=3, unit_noise_sd=0.5, norm=norm)
        np.testing.assert_allclose(sweep.noise_sd, 0.5 * factor * np.array([1, 2, 4]))
        for i, r in enumerate([1, 2, 4]):
            result = error_breakdown(cells, max_rows=r, max_groups=3,
                                     noise_sd=sweep.noise_sd[i])
            assert sweep.rmse[i] == pytest.approx(math.sqrt(np.mean(result.rmse**2)),
                                                  rel=1e-12)
