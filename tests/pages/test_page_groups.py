"""AppTest of the Groups page: every figure shown against an independent computation.

The keep-probability curve against the Laplace and Gaussian closed forms written here and a
simulation of the mechanism as the page sets it up; the threshold and δ against their closed
forms; a group one person makes is kept with probability at most the δ shown; true counts,
sums and means against pandas; declared keys keep their zeros; a tiny Parquet file with a
person id; bad inputs keep the controls.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dashboard import datasets
from dashboard.person import PrivacyUnit
from tests.conftest import open_app
from tests.pages.test_page_tables import array, figures

ADULT = "Adult (UCI census income)"


def private_groups(at, **settings):
    at.toggle(key="groups_public").set_value(False)
    at.run()
    for key, value in settings.items():
        next(w for w in (*at.selectbox, *at.select_slider) if w.key == key).set_value(value)
    at.run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    return at


def text(at) -> str:
    return " ".join(m.value for m in at.markdown)


def shown_threshold(at) -> float:
    found = re.search(r"noisy count is at least ([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)", text(at))
    return float(found.group(1))


def shown_delta(at) -> float:
    return float(re.search(r"δ = ([0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\*\*", text(at)).group(1))


def curve(at):
    fig = figures(at)[0]
    trace = fig["data"][0]
    return array(trace["x"]), array(trace["y"])


def test_laplace_curve_threshold_and_delta_against_closed_forms():
    at = private_groups(open_app("groups.py", dataset=ADULT))
    threshold = 1 + math.log(1 / (2 * 1e-6))         # T = r + b·ln(k/(2δ)), b = 1
    assert shown_threshold(at) == pytest.approx(threshold, abs=5e-3)
    assert shown_delta(at) >= 1e-6 * (1 - 1e-9) and shown_delta(at) <= 1.01e-6
    n, p = curve(at)
    t = threshold
    closed = np.where(n <= t, 0.5 * np.exp(-(t - n)), 1 - 0.5 * np.exp(-(n - t)))
    np.testing.assert_allclose(p, closed, rtol=1e-6, atol=1e-12)
    # the mechanism as the page sets it up: n + Laplace(1) >= T, 400,000 draws per size
    rng = np.random.default_rng(3)
    noise = rng.laplace(0.0, 1.0 + 1e-12, size=400_000)
    for size in (10, 13, 14, 15, 18):
        simulated = np.mean(size + noise >= t)
        exact = p[n == size][0]
        assert abs(simulated - exact) <= 5 * math.sqrt(exact * (1 - exact) / noise.size) + 1e-9
    # one person's group (1 row) is kept with probability at most the δ shown
    assert p[n == 1][0] <= shown_delta(at)


def test_gaussian_curve_against_scipy_and_one_person_below_delta():
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_noise").set_value("gaussian")
    at.run()
    at = private_groups(at, groups_delta=1e-5)
    sigma = 1 / math.sqrt(2 * 0.5)                   # ρ = 0.5, r = k = 1
    threshold = 1 + sigma * stats.norm.isf(1e-5)
    assert shown_threshold(at) == pytest.approx(threshold, abs=5e-3)
    n, p = curve(at)
    # the threshold sits a hair above the closed form: the margin for OpenDP's rounding
    # raises T − r by at most 2^-20 of itself. Read it back off the curve's middle point.
    middle = int(np.argmin(np.abs(p - 0.5)))
    used = n[middle] + sigma * stats.norm.isf(p[middle])
    assert threshold <= used + 1e-9 and used - 1 <= (threshold - 1) * (1 + 2.0**-20) + 1e-9
    np.testing.assert_allclose(p, stats.norm.sf((used - n) / sigma), rtol=1e-6, atol=1e-12)
    assert p[n == 1][0] <= shown_delta(at)
    assert shown_delta(at) <= 1e-5 * 1.001


def test_table_true_counts_kept_and_dropped():
    at = private_groups(open_app("groups.py", dataset=ADULT), groups_by="occupation")
    table = next(d.value for d in at.dataframe)
    frame = datasets.load_builtin(ADULT).frame
    truth = frame["occupation"].value_counts()
    truth = truth[truth > 0]
    assert dict(zip(table["Group"], table["True count"], strict=True)) == {
        str(k): float(v) for k, v in truth.items()}
    t = shown_threshold(at)
    kept = table["Released"] == "kept"
    assert np.all(table.loc[kept, "Noisy count"] >= t - 1e-9)
    assert np.all(table.loc[~kept, "Noisy count"] < t + 1e-9)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Released (simulated)"] == f"{int(kept.sum()):,}"
    assert metrics["Dropped by the threshold"] == f"{int((~kept).sum()):,}"


def test_public_keys_keep_zero_groups_and_means_match_pandas():
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_by").set_value("native_country")
    at.selectbox(key="groups_statistic").set_value("mean")
    at.run()
    at.selectbox(key="groups_column").set_value("age")
    at.run()
    assert not at.exception and not at.error
    table = next(d.value for d in at.dataframe)
    loaded = datasets.load_builtin(ADULT)
    declared = loaded.domains["native_country"].categories
    assert list(table["Group"]) == list(declared)           # every declared key, in order
    frame = loaded.frame
    for key, row in table.set_index("Group").iterrows():
        ages = frame.loc[frame["native_country"] == key, "age"].dropna().clip(17, 90)
        assert row["True count"] == len(ages)
        if len(ages):
            assert row["True mean"] == pytest.approx(ages.mean())
    assert "δ = 0" in text(at) and "Released" not in table.columns
    # budget split: ε/2 on the counts, ε/2 on the sums; sum sensitivity max(|17|, |90|) = 90
    assert "for ε = 0.5" in text(at) and "scale 180" in text(at)


def test_person_unit_on_a_parquet_file(tmp_path, monkeypatch):
    frame = pd.DataFrame({"pid": [1, 1, 1, 2, 3, 3, 4, 5],
                          "town": ["a", "a", "b", "a", "c", "c", "a", "d"]})
    frame.to_parquet(tmp_path / "visits.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app("groups.py", dataset="file:visits.parquet")
    key = at.session_state["dataset"].key
    at.session_state["privacy_unit_by_dataset"] = {key: PrivacyUnit("pid", 2, 2)}
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # r = 2 rows in each of k = 2 groups: Laplace scale k·r/ε = 4, T = r + b·ln(k/(2δ))
    threshold = 2 + 4 * math.log(2 / (2 * 1e-6))
    assert shown_threshold(at) == pytest.approx(threshold, abs=5e-3)
    assert "L1 = 4" in text(at) and "pid" in text(at)
    n, p = curve(at)
    # a group one person makes holds at most r = 2 rows; k such groups: k·P(kept) <= δ shown
    assert 2 * p[n == 2][0] <= shown_delta(at)
    table = next(d.value for d in at.dataframe)
    # after bounds (2 rows per person per group): a = 2 (pid 1) + 1 + 1, b = 1, c = 2, d = 1
    assert dict(zip(table["Group"], table["True count"], strict=True)) == {
        "a": 4.0, "b": 1.0, "c": 2.0, "d": 1.0}


def test_bad_bounds_say_so_and_keep_the_controls():
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_statistic").set_value("sum")
    at.run()
    at.number_input(key="groups_lower").set_value(100.0)
    at.number_input(key="groups_upper").set_value(10.0)
    at.run()
    assert any("lower bound must be below" in e.value for e in at.error)
    assert not at.exception
    assert at.number_input(key="groups_lower").value == 100.0
    assert at.selectbox(key="groups_statistic").value == "sum"


def test_no_categorical_or_numeric_column_says_so(tmp_path, monkeypatch):
    pd.DataFrame({"day": pd.to_datetime(["2024-01-01", "2024-01-02"])}).to_parquet(
        tmp_path / "days.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app("groups.py", dataset="file:days.parquet")
    assert not at.exception and any("no categorical or numeric column" in i.value
                                    for i in at.info)


def test_a_numeric_column_without_bounds_asks_for_bin_edges(tmp_path, monkeypatch):
    pd.DataFrame({"x": [1.0, 2.0]}).to_parquet(tmp_path / "numbers.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app("groups.py", dataset="file:numbers.parquet")
    assert not at.exception
    assert at.selectbox(key="groups_by").value == "x (in bins)"
    assert any("bin edges must be" in e.value for e in at.error)
    assert any("type the edges" in c.value for c in at.caption)


def test_groups_found_privately_without_a_group_bound_say_what_to_set():
    """A person-level unit with no bound on groups per person: the plan panel said
    "max_groups must be an integer, got NoneType". It now says what to set, and where: the
    group bound of the Data page's privacy unit, or the keys in its declared schema. The
    page simulates what a release draws, and a release cannot draw this query: the page
    says so in its error and keeps the controls."""
    at = open_app("groups.py", dataset=datasets.BUILTIN_DATASETS[3])   # clinic visits
    key = at.session_state["dataset"].key
    at.session_state["privacy_unit_by_dataset"] = {key: PrivacyUnit("patient_id", 5)}
    at.toggle(key="groups_public").set_value(False).run()
    assert not at.exception
    panel = " ".join(e.value for e in at.error).replace("\\", "")
    assert "NoneType" not in panel
    assert at.toggle(key="groups_public").value is False
    assert "Max groups per person" in panel and "Declared schema" in panel, panel
    assert not [b for b in at.button if b.key == "groups_add_to_plan"]


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
def test_groups_found_privately_are_offered_and_certified_at_the_default_delta(noise):
    """δ = 1e-6 by default: the threshold the page shows is one OpenDP's map accepts, so the
    panel offers the query (the margin was 2^-48, and OpenDP read δ above 1e-6)."""
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_noise").set_value(noise)
    at.run()
    at = private_groups(at)
    assert [b for b in at.button if b.key == "groups_add_to_plan"]
    assert not at.warning, [w.value for w in at.warning]


def noisy_chart(at) -> dict:
    return next(f for f in figures(at)
                if f["layout"]["title"]["text"].startswith("True and noisy"))


def shown_scale(at, what: str = "Counts") -> float:
    return float(re.search(rf"\*\*{what}:\*\* \w+ noise of scale ([0-9.e+-]+) ", text(at))[1])


def shown_alpha(at) -> float:
    said = r"95% of the releases this page draws land within ±([0-9.,]+) of the true"
    return float(re.search(said, text(at))[1]
                 .replace(",", ""))


def chart_traces(fig: dict) -> dict[str, dict]:
    return {t["name"].split(":")[0]: t for t in fig["data"]}


def check_band(at, alpha: float, noise: str, what: str = "Counts") -> None:
    """The chart's band and the sentence's α against ``alpha`` (a closed form written by the
    caller) and against a simulation of the noise at the scale the page states."""
    traces = chart_traces(noisy_chart(at))
    band, error = traces["±α"], traces["Error of this release"]
    assert band["yaxis"] == error["yaxis"] == "y2"
    np.testing.assert_allclose(array(band["base"]), -alpha, rtol=1e-9)
    np.testing.assert_allclose(array(band["y"]), 2 * alpha, rtol=1e-9)
    assert alpha <= shown_alpha(at) <= alpha * (1 + 1e-3)      # rounded up, 4 digits
    scale = shown_scale(at, what)
    draws = 400_000
    rng = np.random.default_rng(7)
    noise_draws = (rng.normal(0, scale, draws) if noise == "gaussian"
                   else rng.laplace(0, scale, draws))
    share = float(np.mean(np.abs(noise_draws) <= alpha))
    assert abs(share - 0.95) < 5 * math.sqrt(0.95 * 0.05 / draws), share


def test_default_chart_draws_noisy_against_true_with_the_exact_band():
    """Issue 21 item 15: by default (public keys) a chart of noisy against true per group with
    the ±α band: α = b·ln 20 for Laplace (b = 1/ε, count sensitivity 1), σ·Φ⁻¹(0.975) for
    Gaussian (σ = 1/√(2ρ)), and ε/2 on the sums of a mean (sensitivity 90: b = 180)."""
    at = open_app("groups.py", dataset=ADULT)
    assert at.toggle(key="groups_public").value
    epsilon = at.select_slider(key="groups_epsilon").value
    check_band(at, math.log(20) / epsilon, "laplace")
    table = next(d.value for d in at.dataframe)
    traces = chart_traces(noisy_chart(at))
    assert traces["True value"]["x"] == list(table["Group"])
    np.testing.assert_array_equal(array(traces["True value"]["y"]), table["True count"])
    np.testing.assert_allclose(array(traces["One simulated release"]["y"]), table["Noisy count"])
    np.testing.assert_allclose(array(traces["Error of this release"]["y"]),
                               table["Noisy count"] - table["True count"], atol=1e-9)

    at.selectbox(key="groups_noise").set_value("gaussian").run()
    rho = at.select_slider(key="groups_rho").value
    check_band(at, stats.norm.ppf(0.975) / math.sqrt(2 * rho), "gaussian")

    at.selectbox(key="groups_noise").set_value("laplace").run()
    at.selectbox(key="groups_statistic").set_value("mean").run()
    at.selectbox(key="groups_column").set_value("age").run()
    assert not at.exception and not at.error
    check_band(at, 90 / (epsilon / 2) * math.log(20), "laplace", what="Sums")
    assert "The chart shows the sums" in text(at)


def test_groups_found_privately_chart_only_the_released_ones():
    """Tiny countries fall below the threshold: no noisy value for them; with more than 40
    countries the chart draws the 40 largest."""
    at = private_groups(open_app("groups.py", dataset=ADULT), groups_by="native_country",
                        groups_epsilon=0.1)   # threshold about 132 rows
    table = next(d.value for d in at.dataframe).set_index("Group")
    traces = chart_traces(noisy_chart(at))
    drawn = table.loc[[html.unescape(x) for x in traces["True value"]["x"]]]   # SVG-escaped
    assert len(drawn) == min(40, len(table))
    assert drawn["True count"].min() >= table["True count"].nlargest(len(drawn)).min()
    noisy = array(traces["One simulated release"]["y"])
    kept = (drawn["Released"] == "kept").to_numpy()
    assert (~kept).any() and kept.any()
    assert np.isnan(noisy[~kept]).all()
    np.testing.assert_allclose(noisy[kept], drawn.loc[kept, "Noisy count"])


def test_a_mean_found_privately_is_simulated_as_the_plan_query_added():
    """A mean per group found privately: the threshold on ε/2 (b = 1/(ε/2)), the mean's sum
    and count on ε/4 each (sum sensitivity 90 for age in [17, 90]); the page shows the three
    parts and Add to plan offers the query (the panel refused it, the page drew another)."""
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_statistic").set_value("mean").run()
    at.selectbox(key="groups_column").set_value("age").run()
    at = private_groups(at)
    epsilon = at.select_slider(key="groups_epsilon").value
    assert shown_scale(at) == pytest.approx(2 / epsilon, rel=1e-4)
    assert shown_scale(at, "Sums") == pytest.approx(90 / (epsilon / 4), rel=1e-4)
    counts = re.search(r"\*\*The mean's counts:\*\* \w+ noise of scale ([0-9.e+-]+) ", text(at))
    assert float(counts[1]) == pytest.approx(1 / (epsilon / 4), rel=1e-4)
    threshold = 1 + 2 / epsilon * math.log(1 / (2e-6))        # shown to 4 digits
    assert shown_threshold(at) == pytest.approx(threshold, rel=5e-4)
    table = next(d.value for d in at.dataframe)
    mean = np.clip(table["Noisy sum"] / np.maximum(table["Noisy count"], 1), 17, 90)
    np.testing.assert_allclose(table["Noisy mean (clamped to the bounds)"], mean)
    assert [b for b in at.button if b.key == "groups_add_to_plan"]


def test_a_sum_over_public_keys_draws_only_the_sums():
    """The release of a sum per group over public keys draws the sums alone, on the whole ε
    (Add to plan gave it half, as the page spent the other half on counts the release never
    drew): no noisy count is simulated beside them."""
    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_statistic").set_value("sum").run()
    at.selectbox(key="groups_column").set_value("age").run()
    assert not at.exception and not at.error
    epsilon = at.select_slider(key="groups_epsilon").value
    assert "**Counts:**" not in text(at)
    assert shown_scale(at, "Sums") == pytest.approx(90 / epsilon, rel=1e-4)
    assert f"for ε = {epsilon:g}" in text(at)
    table = next(d.value for d in at.dataframe)
    assert "Noisy count" not in table and "Noisy sum" in table


def test_each_released_group_shows_its_interval():
    """Issue 22: groups found privately (Laplace, ε = 1 on the threshold: b = 1): each kept
    group's interval is its noisy count ± ln 20, conditional on being kept, and the page
    says so; a dropped group has none. A mean of age in [17, 90] over public keys (Laplace,
    ε/2 each: b = 180 on the sum, 2 on the count) from its noisy sum and count at 2.5 % each."""
    at = private_groups(open_app("groups.py", dataset=ADULT), groups_by="occupation")
    table = next(d.value for d in at.dataframe)
    kept = table["Released"] == "kept"
    noisy = table.loc[kept, "Noisy count"]
    np.testing.assert_allclose(table.loc[kept, "Lower 95%"], noisy - math.log(20), atol=1e-9)
    np.testing.assert_allclose(table.loc[kept, "Upper 95%"], noisy + math.log(20), atol=1e-9)
    assert table.loc[~kept, ["Lower 95%", "Upper 95%"]].isna().all().all()
    captions = " ".join(c.value for c in at.caption)
    assert "95% interval for each released group's true count" in captions
    assert "holds given that the group was kept" in captions

    at = open_app("groups.py", dataset=ADULT)
    at.selectbox(key="groups_by").set_value("workclass")
    at.selectbox(key="groups_statistic").set_value("mean")
    at.run()
    at.selectbox(key="groups_column").set_value("age")
    at.run()
    assert not at.exception and not at.error
    assert "scale 180" in text(at)
    table = next(d.value for d in at.dataframe)
    half_sum, half_count = 180 * math.log(40), 2 * math.log(40)
    s_low, s_high = table["Noisy sum"] - half_sum, table["Noisy sum"] + half_sum
    c_low = np.maximum(table["Noisy count"] - half_count, 1.0)
    c_high = np.maximum(table["Noisy count"] + half_count, c_low)
    low = np.clip(np.minimum(s_low / c_low, s_low / c_high), 17, 90)
    high = np.clip(np.maximum(s_high / c_low, s_high / c_high), 17, 90)
    np.testing.assert_allclose(table["Lower 95%"], low, rtol=1e-12)
    np.testing.assert_allclose(table["Upper 95%"], high, rtol=1e-12)
    shown = table["Noisy mean (clamped to the bounds)"]
    assert ((table["Lower 95%"] <= shown) & (shown <= table["Upper 95%"])).all()
    assert "from the group's noisy sum and noisy count" in " ".join(c.value for c in at.caption)
