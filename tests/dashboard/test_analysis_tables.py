"""Tests for dashboard.analysis.tables: columns, budget split, simulation of table releases.

Expected values come from closed forms (mean absolute noise), from pandas crosstabs computed
here, and from properties each post-processing step promises; one planted bug must be caught.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.analysis import tables
from dashboard.controls import PrivacyChoice
from dpcore import Gaussian, Geometric, Laplace
from dpcore.checks import MAX_BLOCK_ELEMENTS
from dpcore.measures import ZCDP, ApproxDP, PureDP


@pytest.fixture(scope="module")
def census():
    return datasets.load_builtin("Synthetic census", census_rows=1000)


@pytest.fixture(scope="module")
def adult():
    return datasets.load_builtin("Adult (UCI census income)")


def _upload(frame: pd.DataFrame) -> datasets.LoadedDataset:
    return datasets.LoadedDataset("mine.csv", frame, {}, [], "Uploaded file mine.csv")


# --- columns and categories -------------------------------------------------------------------


def test_default_axes_of_the_builtin_datasets(census, adult):
    assert tables.default_axes(census, tables.table_columns(census)) == ("Occupation", "Sex")
    assert tables.default_axes(adult, tables.table_columns(adult)) == ("education", "sex")
    iris = datasets.load_builtin("Iris")
    assert tables.table_columns(iris) == ["species"]
    assert tables.default_axes(iris, tables.table_columns(iris)) is None


def test_default_axes_of_an_upload_prefer_small_columns_in_file_order():
    frame = pd.DataFrame({
        "id": pd.Categorical([f"p{i}" for i in range(40)]),          # 40 categories
        "x": np.arange(40),
        "colour": pd.Categorical(["red", "blue"] * 20),
        "size": pd.Categorical(["S", "M", "L", "XL"] * 10),
    })
    loaded = _upload(frame)
    columns = tables.table_columns(loaded)
    assert columns == ["id", "colour", "size"]
    assert tables.default_axes(loaded, columns) == ("colour", "size")


def test_declared_categories_come_from_the_public_domain_for_builtin_data(census):
    cats, from_data = tables.declared_categories(census, "Occupation")
    assert cats == ("Statistician", "Economist", "Geographer", "IT Specialist",
                    "Unicorn Wrangler")
    assert from_data is False
    upload = _upload(pd.DataFrame({"c": pd.Categorical(["b", "a", "b"])}))
    assert tables.declared_categories(upload, "c") == (("a", "b"), True)


def test_true_table_keeps_true_zeros_and_matches_pandas(census):
    frame = census.frame[census.frame["Occupation"] != "Unicorn Wrangler"]
    rows, _ = tables.declared_categories(census, "Occupation")
    cols, _ = tables.declared_categories(census, "Sex")
    answer = tables.true_table(frame, "Occupation", "Sex", row_categories=rows,
                               column_categories=cols)
    expected = pd.crosstab(frame["Occupation"].astype(str), frame["Sex"].astype(str))
    expected = expected.reindex(index=list(rows), columns=list(cols), fill_value=0)
    np.testing.assert_array_equal(answer.true_value, expected.to_numpy())
    assert answer.true_value.shape == (5, 2)
    np.testing.assert_array_equal(answer.true_value[4], [0, 0])   # the unicorn wranglers
    assert answer.l1_sensitivity == answer.l2_sensitivity == 1.0


# --- budget -----------------------------------------------------------------------------------


@pytest.mark.parametrize("choice, kind", [
    (PrivacyChoice("pure", "geometric", epsilon=1.0), PureDP),
    (PrivacyChoice("pure", "laplace", epsilon=0.3), PureDP),
    (PrivacyChoice("approx", "gaussian", epsilon=1.0, delta=1e-6), ApproxDP),
    (PrivacyChoice("zcdp", "gaussian", rho=0.5), ZCDP),
])
@pytest.mark.parametrize("share", [0.05, 0.2, 0.5])
def test_separate_total_spends_exactly_the_budget(choice, kind, share):
    table, total, privacy, _ = tables.build_mechanisms(choice, rescale=True,
                                                       total_source="separate",
                                                       total_share=share)
    assert isinstance(table.privacy, kind) and isinstance(total.privacy, kind)
    t_choice, s_choice = tables.split_budget(choice, share)
    names = {PureDP: ("epsilon",), ApproxDP: ("epsilon", "delta"), ZCDP: ("rho",)}[kind]
    for name in names:
        budget, table_part, total_part = (getattr(c, name) for c in (choice, t_choice, s_choice))
        assert table_part + total_part <= budget            # never more than the budget
        assert table_part + total_part == pytest.approx(budget, rel=1e-12)
        assert total_part == pytest.approx(share * budget, rel=1e-12)
        # the mechanisms are calibrated to these parts (their reported privacy is recomputed
        # from the noise scale, so it may differ in the last bit)
        if kind is not ApproxDP:
            assert getattr(table.privacy, name) == pytest.approx(table_part, rel=1e-12)
            assert getattr(total.privacy, name) == pytest.approx(total_part, rel=1e-12)
    if kind is ApproxDP:
        assert (table.privacy.epsilon, table.privacy.delta) == (t_choice.epsilon, t_choice.delta)
        assert (total.privacy.epsilon, total.privacy.delta) == (s_choice.epsilon, s_choice.delta)
    assert "sequential composition" in privacy


def test_without_a_separate_total_the_whole_budget_goes_to_the_table():
    choice = PrivacyChoice("pure", "geometric", epsilon=0.7)
    for rescale, source in ((False, "separate"), (True, "cells"), (False, "cells")):
        table, total, _, _ = tables.build_mechanisms(choice, rescale=rescale,
                                                     total_source=source, total_share=0.2)
        assert total is None
        assert isinstance(table, Geometric) and table.privacy.epsilon == pytest.approx(0.7)


def test_planted_bug_overspending_split_is_caught(monkeypatch):
    """A split that gives the total its share on top of the whole budget must fail the test."""
    monkeypatch.setattr(tables.measures, "split_budget",
                        lambda total, share: (total * share, total))
    with pytest.raises(AssertionError):
        test_separate_total_spends_exactly_the_budget(
            PrivacyChoice("pure", "laplace", epsilon=1.0), PureDP, 0.2)


def test_split_budget_rejects_shares_outside_0_1():
    choice = PrivacyChoice("pure", "laplace", epsilon=1.0)
    for share in (0.0, 1.0, -0.1, float("nan")):
        with pytest.raises(ValueError, match="total_share"):
            tables.split_budget(choice, share)


# --- simulation -------------------------------------------------------------------------------

TRUE = np.array([[30.0, 28.0], [25.0, 31.0], [20.0, 19.0], [18.0, 21.0], [0.0, 2.0]])


def _mean_abs_noise(mechanism) -> float:
    """E|Z| in closed form for each mechanism (independent of dpcore's own moments)."""
    if isinstance(mechanism, Geometric):
        r = math.exp(-1 / mechanism.scale)
        return 2 * r / (1 - r * r)        # 2 (1-r)/(1+r) * sum_k k r^k
    if isinstance(mechanism, Laplace):
        return mechanism.scale
    if isinstance(mechanism, Gaussian):
        return mechanism.scale * math.sqrt(2 / math.pi)
    raise AssertionError(mechanism)


def _noise_variance(mechanism) -> float:
    """Var Z in closed form."""
    if isinstance(mechanism, Geometric):
        r = math.exp(-1 / mechanism.scale)
        return 2 * r / (1 - r) ** 2
    if isinstance(mechanism, Laplace):
        return 2 * mechanism.scale**2
    return mechanism.scale**2


@pytest.mark.parametrize("mechanism", [
    Geometric(sensitivity=1, epsilon=1.0),
    Laplace(sensitivity=1.0, epsilon=0.5),
    Gaussian(sensitivity=1.0, rho=0.5),
])
def test_mean_l1_error_before_post_processing_matches_closed_form(mechanism):
    trials = 20_000
    out = tables.simulate_release(TRUE, table_mechanism=mechanism, clip=False, round=False,
                                  rescale=False, trials=trials, rng=np.random.default_rng(11))
    expected = TRUE.size * _mean_abs_noise(mechanism)
    # per-trial L1 error: a sum of 10 iid |Z|, and Var|Z| <= E[Z²] <= 4 (E|Z|)² for these laws
    # (ratios 2, 2.54 and pi/2 for Laplace, this geometric and the Gaussian)
    sd = math.sqrt(TRUE.size * 4 * _mean_abs_noise(mechanism) ** 2)
    tolerance = 5 * sd / math.sqrt(trials)         # 5 standard errors: false alarm < 1e-6
    assert out["l1_before"].mean() == pytest.approx(expected, abs=tolerance)
    # the table's total carries the noise of all 10 cells: RMS error sqrt(10 Var Z)
    rms_total = out["steps"]["No post-processing"][2]
    assert rms_total == pytest.approx(math.sqrt(TRUE.size * _noise_variance(mechanism)),
                                      rel=0.05)   # 20,000 draws: the RMS is within ~1.5 %
    # no post-processing: published = noisy, so the errors coincide
    np.testing.assert_array_equal(out["l1_after"], out["l1_before"])
    np.testing.assert_array_equal(out["example_published"], out["example_noisy"])


def test_clipping_never_increases_the_error_of_a_table_of_counts():
    out = tables.simulate_release(TRUE, table_mechanism=Laplace(sensitivity=1.0, epsilon=0.2),
                                  clip=True, round=False, rescale=False, trials=5_000,
                                  rng=np.random.default_rng(3))
    assert np.all(out["l1_after"] <= out["l1_before"] + 1e-9)
    assert np.any(out["l1_after"] < out["l1_before"])      # some negatives were clipped
    assert out["example_published"].min() >= 0
    steps = out["steps"]
    assert steps["Clip negatives to 0"][0] < steps["No post-processing"][0]
    assert steps["Clip negatives to 0"][1] > 0              # clipping biases the total upwards
    assert steps["No post-processing"][0] == pytest.approx(out["l1_before"].mean())


@pytest.mark.parametrize("round_", [True, False])
def test_rescaling_to_the_sum_of_the_noisy_cells(round_):
    out = tables.simulate_release(TRUE, table_mechanism=Laplace(sensitivity=1.0, epsilon=0.5),
                                  clip=False, round=round_, rescale=True, trials=2_000,
                                  rng=np.random.default_rng(5))
    noisy, published = out["example_noisy"], out["example_published"]
    assert out["example_total"] == pytest.approx(noisy.sum())   # post-processing of the cells
    assert published.min() >= 0                                  # rescaling clips first
    if round_:
        np.testing.assert_array_equal(published, np.rint(published))
        assert published.sum() == np.rint(noisy.sum())
    else:
        assert published.sum() == pytest.approx(noisy.sum())


def test_rescaling_to_a_separate_noisy_total():
    choice = PrivacyChoice("pure", "laplace", epsilon=1.0)
    table, total, _, _ = tables.build_mechanisms(choice, rescale=True, total_source="separate",
                                                 total_share=0.2)
    out = tables.simulate_release(TRUE, table_mechanism=table, total_mechanism=total,
                                  clip=True, round=True, rescale=True, trials=20_000,
                                  rng=np.random.default_rng(8))
    assert out["example_total"] != pytest.approx(out["example_noisy"].sum())
    assert out["example_published"].sum() == np.rint(out["example_total"])
    # the rescaled table sums to the separate total: Laplace of scale 1 / (0.2 * 1) = 5, so its
    # RMS error is 5 sqrt(2); the cells' own sum would have RMS sqrt(10 * 2 * 1.25**2) = 5.6
    assert total.scale == pytest.approx(5.0) and table.scale == pytest.approx(1.25)
    rms_total = out["steps"]["Clip, rescale to the noisy total"][2]
    assert rms_total == pytest.approx(5 * math.sqrt(2), rel=0.05)


@pytest.mark.slow
def test_simulation_in_several_chunks_fills_every_trial():
    cells = np.full((41, 16), 3.0)
    trials = MAX_BLOCK_ELEMENTS // cells.size + 5               # two chunks
    out = tables.simulate_release(cells, table_mechanism=Geometric(sensitivity=1, epsilon=1.0),
                                  clip=True, round=True, rescale=False, trials=trials,
                                  rng=np.random.default_rng(2), compare_trials=1_000)
    assert out["l1_before"].shape == out["l1_after"].shape == (trials,)
    assert np.all(np.isfinite(out["l1_before"])) and np.all(out["l1_before"] >= 0)
    assert np.all(out["l1_after"] <= out["l1_before"])
    assert out["compare_trials"] == 1_000
    expected = cells.size * _mean_abs_noise(Geometric(sensitivity=1, epsilon=1.0))
    assert out["l1_before"].mean() == pytest.approx(expected, rel=0.01)


def test_work_caps():
    assert tables.simulated_trials(10_000, 10) == 10_000
    assert tables.simulated_trials(1_000_000, 10) == 1_000_000
    assert tables.simulated_trials(1_000_000, 656) == tables.MAX_SIMULATED_CELLS // 656
    assert tables.simulated_trials(1_000_000, 10**6) == 1_000
    assert tables.step_trials(10_000, 656) == tables.MAX_STEP_CELLS // 656


def test_shared_histogram_of_whole_numbers_centres_bins_on_integers():
    a = np.array([0.0, 1, 1, 2, 5])
    b = np.array([3.0, 3, 4])
    edges, (ha, hb) = tables.shared_histogram(a, b)
    np.testing.assert_allclose(edges[:2], [-0.5, 0.5])
    assert ha.sum() == pytest.approx(1) and hb.sum() == pytest.approx(1)
    assert ha[1] == pytest.approx(0.4) and hb[3] == pytest.approx(2 / 3)
    edges, (hc,) = tables.shared_histogram(np.array([0.25, 0.5, 3.75]))
    assert len(edges) == 61 and hc.sum() == pytest.approx(1)
    # fractions next to whole numbers (Laplace noise before, rounding after): integer bins,
    # each holding the same number of whole numbers (the span 0..299 makes 100 bins of 3)
    whole = np.arange(299.0)
    edges, (hf, hw) = tables.shared_histogram(whole + 0.3, whole, bins=100)
    np.testing.assert_allclose(np.diff(edges), 3.0)
    np.testing.assert_allclose(edges % 1, 0.5)
    np.testing.assert_allclose(hw[:99], 3 / 299)
    assert hf.sum() == pytest.approx(1)


def test_cell_errors_leave_relative_error_blank_where_the_truth_is_zero():
    absolute, relative = tables.cell_errors([[10, 0]], [[12, 3]])
    np.testing.assert_array_equal(absolute, [[2, 3]])
    assert relative[0, 0] == pytest.approx(20.0) and np.isnan(relative[0, 1])


def test_release_summary_reports_the_example_errors(census):
    rows, _ = tables.declared_categories(census, "Occupation")
    cols, _ = tables.declared_categories(census, "Sex")
    release = tables.table_release.__wrapped__(
        census.frame, "k", "Occupation", "Sex", rows, cols,
        PrivacyChoice("pure", "laplace", epsilon=0.5), True, True, False, "cells", 0.2, 3_000, 1)
    l1 = np.abs(release.example_published - release.true).sum()
    assert release.example_errors["l1_after"] == pytest.approx(l1)
    assert release.example_errors["relative_after"] == pytest.approx(100 * l1 / 1000)
    assert release.trials == release.requested_trials == 3_000
    frame = release.labelled(release.true, "Occupation", "Sex")
    assert list(frame.index) == list(rows) and frame.to_numpy().sum() == 1000
    quantiles = release.quantile_table()
    assert quantiles.loc["Published", "50% quantile"] == pytest.approx(
        release.after.quantiles[0.5])
    views = tables.table_views(release)
    assert list(views) == ["True", "Noisy", "Published", "Absolute error", "Relative error"]
    counts = [views[n] for n in ("True", "Noisy", "Published")]
    assert len({(v.zmin, v.zmax) for v in counts}) == 1  # one colour scale for the counts
    assert counts[0].zmin <= min(float(v.values.min()) for v in counts)
    assert counts[0].zmax >= max(float(v.values.max()) for v in counts)
    np.testing.assert_allclose(views["Absolute error"].values,
                               np.abs(release.example_published - release.true))
    assert views["Relative error"].is_error and not views["Published"].is_error


# --- intervals for the true counts (issue 22) ---------------------------------------------------


def _geometric_half_width(epsilon: float, alpha: float) -> int:
    """Two-sided geometric noise, p = e^(−ε): P(|Z| > a) = 2p^(a+1)/(1 + p); the smallest
    whole a with that at most alpha."""
    p = math.exp(-epsilon)
    a = math.ceil(math.log(alpha * (1 + p) / 2) / math.log(p)) - 1
    assert 2 * p ** (a + 1) / (1 + p) <= alpha < 2 * p ** a / (1 + p)
    return a


def test_cell_intervals_are_the_closed_form_and_cover_per_cell_or_all_at_once():
    """A 2 × 2 table with geometric noise at ε = 1: per cell ±a at 5 %, all four cells at once
    ±a' at 5 %/4 (Bonferroni); over 20,000 fixed-seed releases each per-cell interval covers
    its cell 95 % of the time, the simultaneous ones cover all four at once 95 % of the time,
    and per-cell intervals do not (the planted mistake of calling them simultaneous)."""
    choice = PrivacyChoice("pure", "geometric", epsilon=1.0)
    built = tables.table_built("r", "c", ("a", "b"), ("x", "y"), choice, None)
    truth = np.array([[0.0, 3.0], [40.0, 7.0]])
    noisy = built.parts[0].mechanism.sample(truth, rng=np.random.default_rng(11), trials=20_000)
    se = math.sqrt(0.95 * 0.05 / 20_000)
    covered = {}
    for simultaneous, alpha in ((False, 0.05), (True, 0.05 / 4)):
        low, high = tables.noisy_cell_intervals(built, noisy, simultaneous=simultaneous)
        half = _geometric_half_width(1.0, alpha)
        np.testing.assert_array_equal(low, noisy - half)
        np.testing.assert_array_equal(high, noisy + half)
        covered[simultaneous] = (low <= truth) & (truth <= high)
    assert np.all(covered[False].mean(axis=0) >= 0.95 - 4 * se)
    assert covered[True].all(axis=(1, 2)).mean() >= 0.95 - 4 * se
    assert covered[False].all(axis=(1, 2)).mean() < 0.95 - 4 * se


def test_published_intervals_follow_clipping_and_rounding_but_not_rescaling():
    """Laplace noise (b = 2): clipping and rounding move the ends as they move a cell, so the
    published cell stays inside; rescaling leaves the noisy cell's interval, clipped at 0."""
    choice = PrivacyChoice("pure", "laplace", epsilon=0.5)
    built = tables.table_built("r", "c", ("a", "b"), ("x", "y", "z"), choice, None)
    truth = np.array([[0.0, 1.0, 2.0], [30.0, 0.0, 5.0]])
    noisy = built.parts[0].mechanism.sample(truth, rng=np.random.default_rng(3))
    half = 2 * math.log(20)
    intervals = {both: tables.noisy_cell_intervals(built, noisy, simultaneous=both)
                 for both in (False, True)}
    np.testing.assert_allclose(intervals[False][0], noisy - half, rtol=0, atol=1e-9)
    release = tables.TableRelease(
        ("a", "b"), ("x", "y", "z"), truth, noisy, np.rint(np.maximum(noisy, 0)), None, {},
        np.zeros(2), np.zeros(1), np.zeros(1), None, None, pd.DataFrame(), 1, 1, 1, "", "",
        example_intervals=intervals)
    low, high = tables.published_intervals(release, simultaneous=False, clip=True, round=True,
                                           rescale=False)
    np.testing.assert_array_equal(low, np.rint(np.maximum(noisy - half, 0)))
    np.testing.assert_array_equal(high, np.rint(np.maximum(noisy + half, 0)))
    assert np.all((low <= release.example_published) & (release.example_published <= high))
    low, high = tables.published_intervals(release, simultaneous=False, clip=False, round=False,
                                           rescale=True)
    np.testing.assert_allclose(low, np.maximum(noisy - half, 0), rtol=0, atol=1e-9)
    np.testing.assert_allclose(high, np.maximum(noisy + half, 0), rtol=0, atol=1e-9)
    frame = tables.interval_frame(release, "r", "c", simultaneous=True, clip=False,
                                  round=False, rescale=False)
    assert list(frame.columns) == ["r", "c", "Noisy count", "Published count", "Lower 95%",
                                   "Upper 95%"]
    half_all = 2 * math.log(20 * 6)   # Laplace at 5 % / 6 cells: b·ln(6/0.05)
    np.testing.assert_allclose(frame["Upper 95%"] - frame["Noisy count"], half_all, rtol=1e-12)
