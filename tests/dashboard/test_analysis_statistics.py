"""Tests of dashboard.analysis.statistics: release plans, binned error summaries, defaults.

Expected values come from closed forms written here or from numpy applied directly to the same
random stream, never from the code under test.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from dashboard import datasets
from dashboard.analysis import statistics as stats
from dashboard.analysis import stats_wording
from dashboard.controls import PrivacyChoice
from dpcore import Geometric, Laplace
from dpcore.checks import MAX_BLOCK_ELEMENTS
from dpcore.measures import PureDP

ADULT, IRIS, CENSUS = datasets.BUILTIN_DATASETS[:3]


@pytest.fixture(scope="module")
def adult():
    return datasets.load_builtin(ADULT)


@pytest.fixture(scope="module")
def small_frame():
    return pd.DataFrame({
        "age": pd.array([20, 35, 50, 64, 90, 17, 41, None], dtype="Int64").astype("float64"),
        "group": pd.Categorical(["a", "b", "a", "c", "a", "b", "a", "a"],
                                categories=["a", "b", "c", "d"]),
    })


def pure(mechanism: str, epsilon: float = 1.0) -> PrivacyChoice:
    return PrivacyChoice("pure", mechanism, epsilon=epsilon)


# --------------------------------------------------------------------------------------------
# summarise_errors: bins and metrics against numpy on the same stream


@pytest.mark.parametrize("cells", [1, 16])
def test_binned_counts_sum_to_trials(cells):
    mech = Laplace(sensitivity=1.0, epsilon=0.5)
    truth = np.arange(cells, dtype=float) * 10
    rng = np.random.default_rng(7)
    edges = stats.error_bin_edges(-5.0, 5.0, integer=False)
    summary = stats.summarise_errors(
        lambda n: mech.sample(truth, rng=rng, trials=n).reshape(n, -1) - truth,
        trials=3_001, cells=cells, edges=edges)
    assert summary.counts.sum() + summary.below + summary.above == 3_001 * cells
    assert summary.below > 0 and summary.above > 0  # scale 2: ±5 leaves ~8% outside
    assert summary.counts.size == stats.ERROR_BINS


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["laplace", "geometric"])
def test_metrics_match_direct_numpy_on_same_seed(kind):
    # 300,000 releases of 16 cells need two blocks of MAX_BLOCK_ELEMENTS: the block-by-block
    # summary must equal numpy applied to one big draw from the same seed.
    cells, trials, seed = 16, 300_000, 11
    mech = Laplace(sensitivity=1.0, epsilon=0.8) if kind == "laplace" else (
        Geometric(sensitivity=1, epsilon=0.8))
    truth = np.linspace(0, 150, cells).round()
    edges = stats.error_bin_edges(-6.0, 6.0, integer=kind == "geometric")
    alpha95 = mech.accuracy(0.05)
    rng = np.random.default_rng(seed)
    summary = stats.summarise_errors(
        lambda n: mech.sample(truth, rng=rng, trials=n) - truth,
        trials=trials, cells=cells, edges=edges, confidences=(0.5, 0.95),
        alphas={0.95: alpha95})

    errors = mech.sample(truth, rng=np.random.default_rng(seed), trials=trials) - truth
    flat = errors.ravel()
    assert summary.rmse == pytest.approx(np.sqrt(np.mean(flat**2)), rel=1e-12)
    assert summary.mae == pytest.approx(np.mean(np.abs(flat)), rel=1e-12)
    assert summary.bias == pytest.approx(np.mean(flat), rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(summary.cell_rmse, np.sqrt(np.mean(errors**2, axis=0)),
                               rtol=1e-12)
    np.testing.assert_allclose(summary.cell_bias, errors.mean(axis=0), rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(summary.counts, np.histogram(flat, bins=edges)[0])
    assert summary.below == np.count_nonzero(flat < edges[0])
    assert summary.above == np.count_nonzero(flat > edges[-1])
    assert summary.within_alpha[0.95] == pytest.approx(np.mean(np.abs(flat) <= alpha95))
    # Quantiles come from the first block: MAX_BLOCK_ELEMENTS // cells releases.
    first = np.abs(errors[: MAX_BLOCK_ELEMENTS // cells]).ravel()
    assert summary.quantile_from == first.size < flat.size
    for c in (0.5, 0.95):
        assert summary.abs_error_quantiles[c] == np.quantile(first, c, method="inverted_cdf")


def test_laplace_rmse_matches_closed_form_at_1e5_trials(adult):
    # RMSE of Laplace(b) noise is sqrt(2)·b. With 1e5 draws the relative standard error of
    # the RMSE is sqrt(Var(X²)/4)/(E X² sqrt(n)) = sqrt(5)/(2 sqrt(1e5)) ≈ 0.35%: 3% is > 8 SE.
    epsilon = 0.5
    spec = stats.QuerySpec("sum", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(adult.frame, spec, pure("laplace", epsilon))
    run = stats.run_mechanism(plan, trials=100_000, seed=3)
    scale = 90 / epsilon
    assert run.summary.rmse == pytest.approx(math.sqrt(2) * scale, rel=0.03)
    assert float(run.analytic_rmse) == pytest.approx(math.sqrt(2) * scale, rel=1e-12)
    # The closed-form 95% bound b·ln(20) holds for 95% of releases (binomial SE 0.07%).
    assert run.alpha[0.95] == pytest.approx(scale * math.log(20))
    assert run.summary.within_alpha[0.95] == pytest.approx(0.95, abs=0.004)


CHOICES = [
    pure("laplace"),
    pure("geometric", 0.7),
    PrivacyChoice("approx", "gaussian", epsilon=1.0, delta=1e-6),
    PrivacyChoice("zcdp", "gaussian", rho=0.1),
    pure("bounded_laplace", 0.3),
    pure("clamped_laplace", 0.3),
]


@pytest.mark.parametrize("choice", CHOICES, ids=lambda c: f"{c.measure}-{c.mechanism}")
def test_analytic_density_integrates_to_about_one_over_bins(small_frame, choice):
    spec = stats.QuerySpec("histogram", "group")
    plan = stats.make_plan(small_frame, spec, choice, answer_range=(0.0, 10.0))
    low, high = plan.error_span()
    edges = stats.error_bin_edges(low, high, integer=plan.integer_errors)
    if plan.integer_errors:
        ks = np.arange(math.ceil(edges[0]), math.floor(edges[-1]) + 1)
        mass = plan.error_density(ks).sum()
    else:
        xs = np.linspace(edges[0], edges[-1], 200_001)
        mass = np.trapezoid(plan.error_density(xs), xs)
    # P(lo <= error <= hi): the first bin includes its left edge, where clamped noise may put
    # a point mass, so the CDF is taken just left of it.
    cdf_mass = float(np.diff(plan.error_cdf([np.nextafter(edges[0], -np.inf), edges[-1]]))[0])
    # The chart spans all but RANGE_BETA = 0.1% of errors; clamped noise puts point masses
    # at the bounds, which the density leaves out and the CDF counts.
    assert 1 - 2 * stats.RANGE_BETA <= cdf_mass <= 1 + 1e-12
    if choice.mechanism == "clamped_laplace":
        assert mass < cdf_mass
    else:
        assert mass == pytest.approx(cdf_mass, abs=2e-4)


def test_laplace_bins_mass_matches_independent_closed_form(small_frame):
    # Laplace(b): P(|E| <= R) = 1 − e^{−R/b}; the chart spans R = b·ln(1/RANGE_BETA).
    plan = stats.make_plan(small_frame, stats.QuerySpec("count"), pure("laplace", 0.25))
    low, high = plan.error_span()
    b = 1 / 0.25
    assert high == pytest.approx(b * math.log(1 / stats.RANGE_BETA)) and low == -high
    edges = stats.error_bin_edges(low, high, integer=False)
    shares = np.diff(plan.error_cdf(edges))
    assert shares.sum() == pytest.approx(1 - math.exp(-high / b), abs=1e-12)


def test_simulated_histogram_fits_closed_form_bins(small_frame):
    # Chi-square goodness of fit of 50,000 simulated Laplace errors to the closed-form bin
    # probabilities (plus the two overflow cells). Fixed seed; the test fails for a wrong scale:
    # a 5% larger b gives a chi-square statistic far beyond the 0.1% critical value.
    plan = stats.make_plan(small_frame, stats.QuerySpec("count"), pure("laplace", 1.0))
    run = stats.run_mechanism(plan, trials=50_000, seed=5)
    s = run.summary
    cdf = plan.error_cdf(s.edges)
    expected = np.concatenate([[cdf[0]], np.diff(cdf), [1 - cdf[-1]]]) * s.total
    observed = np.concatenate([[s.below], s.counts, [s.above]])
    statistic, p_value = scipy_stats.chisquare(observed, expected)
    assert p_value > 1e-3, statistic
    wrong = Laplace(sensitivity=1.0, scale=1.05).error_cdf(s.edges)
    wrong_expected = np.concatenate([[wrong[0]], np.diff(wrong), [1 - wrong[-1]]]) * s.total
    assert scipy_stats.chisquare(observed, wrong_expected).pvalue < 1e-3


# --------------------------------------------------------------------------------------------
# Plans: the mean, bounded mechanisms, edges


def test_mean_plan_splits_the_budget_and_spans_its_errors(adult):
    spec = stats.QuerySpec("mean", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(adult.frame, spec, pure("laplace", 1.0), sum_share=0.3)
    sum_mech, count_mech = plan.parts
    assert sum_mech.scale == pytest.approx(90 / 0.3) and count_mech.scale == pytest.approx(1 / 0.7)
    # shown parts = the parts sampled: at most the budget, exactly (1.0·0.3 rounds up)
    assert Fraction(sum_mech.privacy.epsilon) + Fraction(count_mech.privacy.epsilon) <= 1
    ages = adult.frame["age"].clip(17, 90)
    assert float(plan.true_value) == pytest.approx(ages.mean(), rel=1e-12)
    assert plan.accuracy(0.05) is None and plan.error_density([0.0]) is None
    run = stats.run_mechanism(plan, trials=20_000, seed=1)
    assert run.summary.share_outside < 2 * stats.RANGE_BETA
    sensitivity, scale, text = stats.describe_plan(plan)
    assert sensitivity == "sum 90, count 1"
    assert "30% to the sum" in text and PureDP(1.0).describe() in text
    assert "no closed form" in stats.accuracy_sentence(run, 0.95)


def test_mean_rejects_bounded_mechanisms(small_frame):
    spec = stats.QuerySpec("mean", "age", lower=0.0, upper=100.0)
    with pytest.raises(ValueError, match="mean"):
        stats.make_plan(small_frame, spec, pure("clamped_laplace"), answer_range=(0, 100))


def test_bounded_laplace_outside_answer_range_raises(small_frame):
    spec = stats.QuerySpec("count")  # 8 rows
    with pytest.raises(ValueError, match="lower, upper"):
        stats.make_plan(small_frame, spec, pure("bounded_laplace"), answer_range=(0.0, 5.0))
    with pytest.raises(ValueError, match="range"):
        stats.make_plan(small_frame, spec, pure("bounded_laplace"), answer_range=None)


def test_bad_bounds_raise_value_error(small_frame):
    with pytest.raises(ValueError, match="lower must be < upper"):
        stats.make_plan(small_frame, stats.QuerySpec("sum", "age", lower=90.0, upper=17.0),
                        pure("laplace"))


def test_integer_bins_are_centred_on_whole_numbers():
    edges = stats.error_bin_edges(-3.2, 4.9, integer=True)
    centres = (edges[:-1] + edges[1:]) / 2
    np.testing.assert_array_equal(centres, np.round(centres))
    assert centres[0] <= -4 and centres[-1] >= 5
    wide = stats.error_bin_edges(-500.0, 500.0, integer=True)
    assert np.all(np.diff(wide) == 17) and wide.size - 1 <= stats.ERROR_BINS + 1
    with pytest.raises(ValueError):
        stats.error_bin_edges(1.0, 1.0, integer=False)


def test_run_is_reproducible_from_seed(small_frame):
    plan = stats.make_plan(small_frame, stats.QuerySpec("count"), pure("laplace"))
    a = stats.run_mechanism(plan, trials=1_000, seed=4)
    b = stats.run_mechanism(plan, trials=1_000, seed=4)
    c = stats.run_mechanism(plan, trials=1_000, seed=5)
    np.testing.assert_array_equal(a.summary.counts, b.summary.counts)
    assert float(a.release) == float(b.release) != float(c.release)


# --------------------------------------------------------------------------------------------
# Defaults and options


@pytest.mark.parametrize(("name", "histogram_column", "numeric_column"), [
    (ADULT, "education", "age"), (IRIS, "species", "sepal_length"), (CENSUS, "Married", "Age"),
])
def test_default_columns(name, histogram_column, numeric_column):
    loaded = datasets.load_builtin(name)
    assert stats.default_column(loaded, "histogram") == histogram_column
    assert stats.default_column(loaded, "mean") == numeric_column
    assert stats.available_queries(loaded) == ["count", "sum", "mean", "variance", "histogram"]


def test_default_bounds_public_domain_or_leak_warning(adult):
    public = stats.default_bounds(adult, "age")
    assert (public.lower, public.upper, public.public) == (17.0, 90.0, True)
    assert "leak" in public.note
    guess = stats.default_bounds(adult, "fnlwgt")  # no public domain: round numbers + warning
    largest = adult.frame["fnlwgt"].max()
    round_numbers = sorted(m * 10**k for k in range(12) for m in (1, 2, 5))
    assert guess.public is False and guess.lower == 0
    assert guess.upper == min(r for r in round_numbers if r >= largest)
    assert "leak" in guess.note


def test_default_answer_range():
    assert stats.default_answer_range(stats.QuerySpec("count"), 48_842) == (0.0, 50_000.0)
    assert stats.default_answer_range(stats.QuerySpec("histogram", "x"), 150) == (0.0, 200.0)
    spec = stats.QuerySpec("sum", "x", lower=-3.0, upper=10.0)
    assert stats.default_answer_range(spec, 1000) == (-3000.0, 10_000.0)


def test_comparable_mechanisms():
    assert "gaussian" not in stats.comparable_mechanisms(pure("laplace"), query="count",
                                                         integer_query=True)
    approx = PrivacyChoice("approx", "laplace", epsilon=1.0, delta=1e-6)
    assert "gaussian" in stats.comparable_mechanisms(approx, query="count", integer_query=True)
    # a real-valued mean: no whole-number kind, no kind needing an answer range; the
    # staircase is pure ε-DP, so (ε, 0)-DP, and is offered under approximate DP too
    assert stats.comparable_mechanisms(approx, query="mean", integer_query=False) == [
        "gaussian", "staircase"]
    zcdp_whole = PrivacyChoice("zcdp", "discrete_gaussian", rho=0.5)
    assert stats.comparable_mechanisms(zcdp_whole, query="count", integer_query=True) == [
        "gaussian"]
    zcdp = PrivacyChoice("zcdp", "gaussian", rho=0.5)
    assert stats.comparable_mechanisms(zcdp, query="count", integer_query=True) == [
        "discrete_gaussian"]
    assert stats.comparable_mechanisms(zcdp, query="sum", integer_query=False) == []


def test_metrics_table_side_by_side(small_frame):
    spec = stats.QuerySpec("count")
    runs = [stats.run_mechanism(stats.make_plan(small_frame, spec, pure(kind)), trials=2_000,
                                seed=1) for kind in ("laplace", "geometric")]
    table = stats.metrics_table(runs, 0.95)
    assert list(table.columns) == [r.label for r in runs]
    assert table.loc["±α at 95%, closed form"].tolist() == [
        stats.fmt_value(math.log(20)), stats.fmt_value(Geometric(sensitivity=1,
                                                                 epsilon=1.0).accuracy(0.05))]


def test_upload_without_domains_uses_data_categories_and_round_bounds():
    csv = b"income,<b>team</b>\n1200,red\n3400,blue\n560,red\n8700,green\n"
    loaded = datasets.load_upload(csv, "people.csv")
    income, team = loaded.frame.columns
    assert stats.available_queries(loaded) == ["count", "sum", "mean", "variance", "histogram"]
    assert stats.declared_categories(loaded, team) is None  # categories from the data
    bounds = stats.default_bounds(loaded, income)
    assert (bounds.lower, bounds.upper, bounds.public) == (0.0, 10_000.0, False)
    plan = stats.make_plan(loaded.frame, stats.QuerySpec("histogram", team), pure("laplace"))
    assert plan.labels == ("blue", "green", "red")
    np.testing.assert_array_equal(plan.true_value, [1, 1, 2])
    run = stats.run_mechanism(plan, trials=1_000, seed=2)
    table = stats.release_table([run])
    assert table["Category"].tolist() == ["blue", "green", "red"]
    # counts read whole (issue 21 item 8: '8025.35 people'); the error is the whole count's
    whole = np.floor(run.release + 0.5)   # the release is not at a half: nearest either way
    np.testing.assert_array_equal(table["Noisy (Laplace)"], whole)
    assert table["Noisy (Laplace)"].dtype.kind == "i" and table["True count"].dtype.kind == "i"
    np.testing.assert_array_equal(table["Error (Laplace)"], whole - [1, 1, 2])
    np.testing.assert_allclose(table["Relative error % (Laplace)"],
                               np.round(100 * np.abs(whole - [1, 1, 2]) / [1, 1, 2], 3))


# --------------------------------------------------------------------------------------------
# A released mean is clamped to its bounds: its spikes, its bias, its largest error


def released_iris_means(epsilon: float, draws: int, seed: int) -> tuple[np.ndarray, float]:
    """An independent simulation of what a release of Iris' mean sepal length in [0, 10]
    draws: clamp((S + Laplace(10/(ε/2))) / max(C + Laplace(1/(ε/2)), 1), 0, 10), the budget
    split in halves; and the true mean S/C."""
    values = datasets.load_builtin(IRIS).frame["sepal_length"].dropna().clip(0, 10)
    total, count = float(values.sum()), float(values.size)
    rng = np.random.default_rng(seed)
    noisy_sum = total + rng.laplace(0, 10 / (epsilon / 2), draws)
    noisy_count = np.maximum(count + rng.laplace(0, 1 / (epsilon / 2), draws), 1)
    return np.clip(noisy_sum / noisy_count, 0, 10), total / count


def iris_mean_run(epsilon: float, trials: int):
    spec = stats.QuerySpec("mean", "sepal_length", lower=0.0, upper=10.0)
    plan = stats.make_plan(datasets.load_builtin(IRIS).frame, spec, pure("laplace", epsilon))
    return stats.run_mechanism(plan, trials=trials, seed=11)


def test_a_clamped_mean_counts_its_clamped_releases_and_their_bias():
    """Iris' mean at ε = 0.1: the page's simulated bias, and its shares of releases clamped to
    0 and to 10, against an independent simulation of clamp(mean + noise) (issue 21 item 9:
    the page said 'zero bias for Laplace noise' beside a bias of 0.13, and left the spikes at
    both ends of the chart unexplained)."""
    from dashboard.analysis.stats_wording import bias_row

    trials = 200_000
    run = iris_mean_run(0.1, trials)
    released, truth = released_iris_means(0.1, 2_000_000, seed=5)
    assert float(run.true_value) == pytest.approx(truth, rel=1e-12)
    errors = released - truth
    standard_error = math.sqrt(errors.var() / trials + errors.var() / released.size)
    assert abs(errors.mean()) > 10 * standard_error           # the clamped mean is biased
    assert abs(run.summary.bias - errors.mean()) < 5 * standard_error
    for shown, share in zip(run.summary.share_clamped,
                            (np.mean(released == 0), np.mean(released == 10)), strict=True):
        assert share > stats_wording.CLAMPED_SHOWN
        assert abs(shown - share) < 5 * math.sqrt(share * (1 - share) / trials)
    table = stats.metrics_table([run], 0.95)
    assert bias_row(run) in table.index and "clamped to [0, 10]" in bias_row(run)
    note = stats.error_chart_note([run], 0.95)
    assert "releases hit a bound and are clamped to [0, 10]" in note
    assert "the spikes at both ends of the chart" in note
    said = stats.metrics_note([run])
    assert "zero for" not in said and "biased whatever the noise" in said


def test_a_mean_whose_error_bound_is_set_by_the_bounds_says_so():
    """The simulated ±α of a clamped mean is the distance to a bound when the quantile falls
    on the releases clamped there: at ε = 0.1 the nearer bound 10 (4.157 from the true mean;
    errors up to 5.843 remain possible), at ε = 0.01 the farther bound 0: every release is
    within it, the largest error possible."""
    _, truth = released_iris_means(0.1, 1, seed=0)
    near = stats.accuracy_sentence(iris_mean_run(0.1, 20_000), 0.95)
    # ±α is rounded up to 4 significant digits
    assert f"within ±{math.ceil((10 - truth) * 1e3) / 1e3:.3f} of the true mean" in near
    assert "the distance from the true mean to the bound 10" in near
    assert "largest error possible" not in near
    far = stats.accuracy_sentence(iris_mean_run(0.01, 20_000), 0.95)
    assert far.startswith(f"The error is at most ±{math.ceil(truth * 1e3) / 1e3:.3f} — the "
                          "largest error possible given the bounds [0, 10]")
    assert "every release of the mean is within it" in far
    # Without clamped releases at the quantile, the sentence is the plain one.
    plain = stats.accuracy_sentence(iris_mean_run(10.0, 20_000), 0.95)
    assert plain.startswith("95% of the simulated releases were within") and "bound" not in plain
    assert "clamped" not in stats.error_chart_note([iris_mean_run(10.0, 20_000)], 0.95)


def test_one_release_of_a_count_reads_whole(small_frame):
    plan = stats.make_plan(small_frame, stats.QuerySpec("count"), pure("laplace", 0.25))
    run = stats.run_mechanism(plan, trials=100, seed=4)
    shown = stats.release_summary(run)
    noisy = shown["One release (Laplace)"]
    assert noisy.lstrip("-").replace(",", "").isdigit(), noisy
    assert int(noisy.replace(",", "")) == int(np.floor(float(run.release) + 0.5))
    error = abs(int(noisy.replace(",", "")) - float(run.true_value))
    assert shown["Absolute error"] == f"{error:,.0f}"


def test_only_a_count_reads_no_column():
    """The page's column picker is drawn by the query's kind (a number of rows or of people
    of the whole table reads none), not by comparing its name."""
    from dashboard.kinds import ADAPTERS

    assert {q: stats.reads_column(q) for q in ADAPTERS} == {
        "count": False, "sum": True, "mean": True, "variance": True, "histogram": True,
        "people": False}


# --------------------------------------------------------------------------------------------
# Intervals for the true value (issue 22): the kind's, against closed forms written here, and
# their coverage over releases of the mechanism the page simulates (fixed seed)

COVERAGE_DRAWS = 20_000
LN = math.log


def _coverage(low, high, truth) -> tuple[float, float]:
    """(share of releases whose interval holds ``truth``, its standard error at 95 %)."""
    share = float(np.mean((low <= truth) & (truth <= high)))
    return share, math.sqrt(0.95 * 0.05 / low.size)


def _mean_closed_form(noisy_sum, noisy_count, sum_scale, count_scale, alpha, lower, upper):
    """Laplace: each part within b·ln(2/α) (α/2 each), the count at least 1, the ratio's
    corners, clipped to the bounds."""
    s_low = noisy_sum - sum_scale * LN(2 / alpha)
    s_high = noisy_sum + sum_scale * LN(2 / alpha)
    c_low = np.maximum(noisy_count - count_scale * LN(2 / alpha), 1.0)
    c_high = np.maximum(noisy_count + count_scale * LN(2 / alpha), c_low)
    low = np.minimum(s_low / c_low, s_low / c_high)
    high = np.maximum(s_high / c_low, s_high / c_high)
    return np.clip(low, lower, upper), np.clip(high, lower, upper)


@pytest.mark.parametrize("mechanism", ["laplace", "geometric"])
def test_count_interval_is_the_closed_form_and_covers(small_frame, mechanism):
    """ε = 1: Laplace b = 1, noisy ± ln 20, each end rounded as the page rounds the count;
    geometric p = e^(−1): the smallest whole a with 2p^(a+1)/(1 + p) ≤ 5 %."""
    plan = stats.make_plan(small_frame, stats.QuerySpec("count"), pure(mechanism))
    (noisy,) = plan.sample_parts(COVERAGE_DRAWS, np.random.default_rng(20261127))
    low, high = stats.release_interval(plan, (noisy,), 0.05)
    if mechanism == "laplace":
        half = LN(20)
    else:
        p = math.exp(-1)
        half = math.ceil(LN(0.05 * (1 + p) / 2) / LN(p)) - 1
        assert 2 * p ** (half + 1) / (1 + p) <= 0.05 < 2 * p ** half / (1 + p)
    np.testing.assert_array_equal(low, np.round(noisy - half))
    np.testing.assert_array_equal(high, np.round(noisy + half))
    share, se = _coverage(low, high, 8.0)   # eight rows
    assert share >= 0.95 - 4 * se
    # a planted bug: the half-width at 10 % covers visibly less (Laplace: about 90 %)
    if mechanism == "laplace":
        narrow, _ = _coverage(np.round(noisy - LN(10)), np.round(noisy + LN(10)), 8.0)
        assert narrow < 0.95 - 4 * se


def test_sum_interval_is_the_closed_form_and_covers_at_the_level(small_frame):
    """A sum of age clamped to [17, 90] at ε = 1: b = 90, noisy ± 90 ln 20, exactly 95 %."""
    spec = stats.QuerySpec("sum", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(small_frame, spec, pure("laplace"))
    (noisy,) = plan.sample_parts(COVERAGE_DRAWS, np.random.default_rng(5))
    low, high = stats.release_interval(plan, (noisy,), 0.05)
    np.testing.assert_allclose(low, noisy - 90 * LN(20), rtol=0, atol=1e-9)
    np.testing.assert_allclose(high, noisy + 90 * LN(20), rtol=0, atol=1e-9)
    share, se = _coverage(low, high, 317.0)   # 20 + 35 + 50 + 64 + 90 + 17 + 41
    assert abs(share - 0.95) < 4 * se


@pytest.mark.parametrize("share", [0.5, 0.3])
def test_mean_interval_is_the_closed_form_and_covers(small_frame, share):
    """A mean of age in [17, 90] at ε = 1: the sum's Laplace b = 90/(ε·share), the count's
    1/(ε·(1 − share)); the interval from the release's own noisy sum and count."""
    spec = stats.QuerySpec("mean", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(small_frame, spec, pure("laplace"), sum_share=share)
    noisy_sum, noisy_count = plan.sample_parts(COVERAGE_DRAWS, np.random.default_rng(9))
    low, high = stats.release_interval(plan, (noisy_sum, noisy_count), 0.05)
    want_low, want_high = _mean_closed_form(noisy_sum, noisy_count, 90 / share,
                                            1 / (1 - share), 0.05, 17.0, 90.0)
    np.testing.assert_allclose(low, want_low, rtol=1e-12)
    np.testing.assert_allclose(high, want_high, rtol=1e-12)
    released = plan.released((noisy_sum, noisy_count))
    assert np.all((low <= released) & (released <= high))
    covered, se = _coverage(low, high, 317.0 / 7)
    assert covered >= 0.95 - 4 * se


def test_the_shown_release_carries_its_own_interval(small_frame):
    """Release n's interval is computed from release n's noise, not release 1's."""
    spec = stats.QuerySpec("sum", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(small_frame, spec, pure("laplace"))
    for n in (1, 2, 7):
        shown = stats.shown_release(plan, seed=3, release=n)
        low, high = shown.intervals[0.95]
        assert float(shown.release) == float(stats.draw_release(plan, seed=3, release=n))
        assert float(low) == pytest.approx(float(shown.release) - 90 * LN(20), abs=1e-9)
        assert float(high) == pytest.approx(float(shown.release) + 90 * LN(20), abs=1e-9)


def _variance_closed_form(count, deviations, squares, epsilon, alpha, half):
    """Laplace, each part at ε/3 (count b = 3/ε, deviations 3h/ε, squares 3h²/ε), each within
    b·ln(3/α) (α/3 each); S₁/n and S₂/n by their corners with n at least 1, (S₁/n)² by its
    extremes (0 when S₁/n may be 0), S₂/n − (S₁/n)² from the ends, clipped to [0, h²]."""
    reach = LN(3 / alpha)
    n_low = np.maximum(count - 3 / epsilon * reach, 1.0)
    n_high = np.maximum(count + 3 / epsilon * reach, n_low)
    d_low, d_high = deviations - 3 * half / epsilon * reach, deviations + 3 * half / epsilon * reach
    s_low = squares - 3 * half**2 / epsilon * reach
    s_high = squares + 3 * half**2 / epsilon * reach
    m_low = np.minimum(d_low / n_low, d_low / n_high)
    m_high = np.maximum(d_high / n_low, d_high / n_high)
    q_low = np.minimum(s_low / n_low, s_low / n_high)
    q_high = np.maximum(s_high / n_low, s_high / n_high)
    top = np.maximum(m_low**2, m_high**2)
    bottom = np.where((m_low <= 0) & (m_high >= 0), 0.0, np.minimum(m_low**2, m_high**2))
    return np.clip(q_low - top, 0, half**2), np.clip(q_high - bottom, 0, half**2)


@pytest.mark.parametrize("epsilon", [1.0, 30.0])
def test_variance_interval_is_the_closed_form_and_covers(small_frame, epsilon):
    """A variance of age in [17, 90] (h = 36.5): the interval from the release's own three
    noisy parts, as the variance kind computes it; at ε = 30 it says something."""
    spec = stats.QuerySpec("variance", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(small_frame, spec, pure("laplace", epsilon))
    noisy = plan.sample_parts(COVERAGE_DRAWS, np.random.default_rng(11))
    low, high = stats.release_interval(plan, noisy, 0.05)
    want_low, want_high = _variance_closed_form(*noisy, epsilon, 0.05, 36.5)
    np.testing.assert_allclose(low, want_low, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(high, want_high, rtol=1e-9, atol=1e-9)
    released = plan.released(noisy)
    assert np.all((low <= released + 1e-9) & (released - 1e-9 <= high))
    covered, se = _coverage(low, high, float(np.var([20, 35, 50, 64, 90, 17, 41])))
    assert covered >= 0.95 - 4 * se
    if epsilon > 1:
        assert float(np.median(high - low)) < 36.5**2 / 4


def test_a_variance_shows_its_interval_and_its_parts(small_frame):
    spec = stats.QuerySpec("variance", "age", lower=17.0, upper=90.0)
    plan = stats.make_plan(small_frame, spec, pure("laplace", 30.0))
    run = stats.run_mechanism(plan, trials=1_000, seed=2)
    assert set(run.intervals) == set(stats.CONFIDENCE_OPTIONS)
    count, deviations, squares = (value for _, value in run.release_parts)
    want_low, want_high = _variance_closed_form(count, deviations, squares, 30.0, 0.05, 36.5)
    low, high = run.intervals[0.95]
    assert (float(low), float(high)) == pytest.approx((want_low, want_high), rel=1e-9)
    said = stats.interval_sentence(run, 0.95)
    assert "95% interval for the true variance" in said and "yet" not in said
    assert "noisy count" in said and "noisy sum of squared deviations" in said
    assert "98.33% interval" in said and "conservative" in said


def test_the_interval_methods_the_pages_tell_apart_are_dpcores():
    from dashboard.analysis import intervals
    from dpcore.intervals import METHODS

    assert {intervals.RATIO, intervals.SPREAD, intervals.CONDITIONAL,
            intervals.KEPT} <= set(METHODS)
    assert intervals.has_method("mean, kept", intervals.KEPT)
    assert not intervals.has_method("per cell", intervals.RATIO)


def test_interval_ends_are_shown_rounded_outwards():
    """Four significant digits (whole numbers kept whole): the low end down, the high end up,
    so the interval shown holds the one computed."""
    from dashboard.analysis.intervals import interval_text

    assert interval_text(38.62349, 38.66001) == "38.62 – 38.67"
    assert interval_text(-3.14159, 2.71828) == "-3.142 – 2.719"
    assert interval_text(1887057.4, 1887597.2) == "1,887,057 – 1,887,598"
    assert interval_text(-math.inf, 5.0) == "−∞ – 5"
