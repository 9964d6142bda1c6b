"""AppTest interaction tests of the "Noisy statistics" page.

Numbers on screen are checked against closed forms and pandas computed here, not copied from
the app.
"""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pytest

from dashboard import datasets
from dpcore import Laplace
from tests.conftest import open_app

ADULT, IRIS, CENSUS = datasets.BUILTIN_DATASETS[:3]
SENTENCE = re.compile(r"(\d+)% of (?:the simulated )?releases (?:are|were) within ±([\d,.]+)")


def values(data) -> np.ndarray:
    """A plotly JSON array: a list, or plotly's base64 typed array {'dtype', 'bdata'}."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"])
    return np.asarray(data)


def figures(at) -> dict[str, dict]:
    """The page's plotly figures by the start of their title."""
    out = {}
    for element in at.get("plotly_chart"):
        spec = json.loads(element.proto.spec)
        out[spec["layout"]["title"]["text"].split(" ")[0]] = spec
    return out


def error_figure(at) -> dict:
    return figures(at)["Error"]


def simulated_spread(figure: dict, name_start: str = "") -> float:
    """Standard deviation of the simulated error histogram drawn in the figure."""
    bars = [t for t in figure["data"] if t["type"] == "bar" and t["name"].endswith("simulated")
            and t["name"].startswith(name_start)]
    x, y, width = (values(bars[0][k]).astype(float) for k in ("x", "y", "width"))
    weights = y * width
    mean = np.sum(weights * x) / weights.sum()
    return float(np.sqrt(np.sum(weights * (x - mean) ** 2) / weights.sum()))


def alpha_sentences(at) -> list[tuple[float, float]]:
    """(confidence, alpha) of each '95% of releases are within ±alpha' sentence on the page."""
    found = []
    for element in at.markdown:
        match = SENTENCE.search(element.value)
        if match:
            found.append((int(match[1]) / 100, float(match[2].replace(",", ""))))
    return found


@pytest.fixture
def stats_page():
    """The Noisy statistics page with defaults (Adult)."""
    at = open_app("statistics.py")
    assert at.selectbox(key="dataset_choice").value == ADULT
    return at

def test_defaults_render_histogram_of_education(stats_page):
    at = stats_page
    assert at.title[0].value == "Noisy statistics"
    assert at.selectbox(key="stats_query").value == "histogram"
    assert at.selectbox(key="stats_column").value == "education"
    figs = figures(at)
    assert set(figs) == {"True", "Error", "Typical"}
    bars = figs["True"]
    assert bars["layout"]["barmode"] == "group"
    # The true counts, computed here with pandas, in the public category order.
    adult = datasets.load_builtin(ADULT)
    order = adult.domains["education"].categories
    expected = adult.frame["education"].value_counts().reindex(list(order)).to_numpy()
    truth = next(t for t in bars["data"] if t["name"] == "True count")
    assert truth["x"] == list(order)
    np.testing.assert_array_equal(values(truth["y"]), expected)
    noisy = next(t for t in bars["data"] if t["name"].startswith("One noisy release"))
    # Error bars: ± the 95% Laplace bound b·ln(20) with b = 1/ε = 1.
    np.testing.assert_allclose(values(noisy["error_y"]["array"]), math.log(20), rtol=1e-12)
    assert not at.error


def test_default_bars_show_each_error_at_a_readable_scale(stats_page):
    """Issue 21 item 14: on Adult at ε = 1 the noisy and true bars look the same (counts in
    the thousands, errors of a few people); a second row draws noisy − true per bar and its
    ±α band on an axis of its own."""
    bars = figures(stats_page)["True"]
    truth = next(t for t in bars["data"] if t["name"] == "True count")
    noisy = next(t for t in bars["data"] if t["name"].startswith("One noisy release"))
    error = next(t for t in bars["data"] if t["name"].startswith("Error of this release"))
    band = next(t for t in bars["data"] if t["name"].startswith("±α"))
    assert error["yaxis"] == band["yaxis"] == "y2" and truth.get("yaxis", "y") == "y"
    expected = values(noisy["y"]).astype(float) - values(truth["y"]).astype(float)
    np.testing.assert_allclose(values(error["y"]), expected, atol=1e-9)
    # The band: −α … +α with α = b·ln(20), b = 1/ε = 1 (Laplace, 95%), not the top row's
    # scale of thousands.
    alpha = math.log(20)
    np.testing.assert_allclose(values(band["base"]), -alpha, rtol=1e-12)
    np.testing.assert_allclose(values(band["y"]), 2 * alpha, rtol=1e-12)
    assert values(truth["y"]).max() > 1000 * alpha
    assert "noisy − true" in bars["layout"]["yaxis2"]["title"]["text"]


def test_alpha_sentence_matches_laplace_accuracy(stats_page):
    at = stats_page
    at.select_slider(key="stats_epsilon").set_value(2.2).run()
    [(confidence, alpha)] = alpha_sentences(at)
    assert confidence == 0.95
    assert alpha == pytest.approx(Laplace(sensitivity=1.0, epsilon=2.2).accuracy(0.05), rel=1e-3)
    # The bound is per category; all 16 education levels at once hold far less often:
    # 0.95^16 ≈ 44% with independent noise per cell, and so in the simulation.
    sentence = next(m.value for m in at.markdown if "categories at once" in m.value)
    assert "In each category" in sentence and "All 16 categories at once" in sentence
    match = re.search(r"at least ([\d.]+)% of releases .*?; ([\d.]+)% of the ([\d,]+) simul",
                      sentence)
    assert match, sentence
    assert float(match[1]) == pytest.approx(100 * 0.95**16, abs=0.05)
    simulated, releases = float(match[2]) / 100, int(match[3].replace(",", ""))
    assert abs(simulated - 0.95**16) < 5 * math.sqrt(0.95**16 * (1 - 0.95**16) / releases)
    # A sum of age clamped to [17, 90]: sensitivity 90.
    at.selectbox(key="stats_query").select("sum").run()
    at.selectbox(key="stats_confidence").select(0.8).run()
    assert not at.exception, [e.value for e in at.exception]
    [(confidence, alpha)] = alpha_sentences(at)
    assert confidence == 0.8
    assert alpha == pytest.approx(90 / 2.2 * math.log(1 / 0.2), rel=1e-3)


def test_larger_epsilon_shrinks_the_simulated_spread(stats_page):
    at = stats_page
    spreads = {}
    for epsilon in (1.0, 4.7):
        at.select_slider(key="stats_epsilon").set_value(epsilon).run()
        assert not at.exception, [e.value for e in at.exception]
        figure = error_figure(at)
        spreads[epsilon] = simulated_spread(figure)
        # Closed-form Laplace(b = 1/ε): standard deviation √2·b; the chart cuts the 0.1% tails,
        # which lowers it by about 1.6%.
        assert spreads[epsilon] == pytest.approx(math.sqrt(2) / epsilon, rel=0.06)
        line = next(t for t in figure["data"] if t["name"].endswith("closed form"))
        # The closed-form density peaks at 0 with 1/(2b) = ε/2.
        assert values(line["y"]).max() == pytest.approx(epsilon / 2, rel=1e-9)
    assert spreads[4.7] < spreads[1.0] / 4


def test_switching_mechanism_changes_the_chart(stats_page):
    at = stats_page
    before = error_figure(at)
    at.selectbox(key="stats_mechanism").select("geometric").run()
    assert not at.exception, [e.value for e in at.exception]
    after = error_figure(at)
    assert after != before
    bars = next(t for t in after["data"] if t["type"] == "bar")
    assert bars["name"].startswith("Geometric")
    centres = values(bars["x"])
    np.testing.assert_array_equal(centres, np.round(centres))  # bins on whole numbers
    line = next(t for t in after["data"] if t["name"].endswith("closed form"))
    assert "markers" in line["mode"]


def test_comparison_overlays_two_mechanisms(stats_page):
    at = stats_page
    at.selectbox(key="stats_query").select("count").run()
    at.selectbox(key="stats_measure").select("approx").run()
    assert "Gaussian" in at.selectbox(key="stats_compare").options
    at.selectbox(key="stats_compare").select("gaussian").run()
    assert not at.exception, [e.value for e in at.exception]
    figure = error_figure(at)
    names = {t["name"] for t in figure["data"]}
    assert {"Laplace: simulated", "Gaussian: simulated", "Gaussian: closed form"} <= names
    table = at.dataframe[-1].value
    assert len(table.columns) == 2
    assert len(alpha_sentences(at)) == 2
    # Gaussian under pure DP is not offered.
    at.selectbox(key="stats_measure").select("pure").run()
    assert "Gaussian" not in at.selectbox(key="stats_compare").options


def test_switching_dataset_changes_columns_and_resets_bounds(stats_page):
    at = stats_page
    adult_columns = at.selectbox(key="stats_column").options
    assert "education" in adult_columns
    at.selectbox(key="dataset_choice").select(IRIS).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="stats_column").options == ["species"]
    assert "Typical" in figures(at)
    at.selectbox(key="stats_query").select("mean").run()
    assert at.selectbox(key="stats_column").value == "sepal_length"
    assert (at.number_input(key="stats_lower").value,
            at.number_input(key="stats_upper").value) == (0.0, 10.0)
    at.selectbox(key="dataset_choice").select(CENSUS).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="stats_column").value == "Age"
    assert (at.number_input(key="stats_lower").value,
            at.number_input(key="stats_upper").value) == (0.0, 120.0)
    assert "Error" in figures(at)
    [(_, alpha)] = alpha_sentences(at)
    assert "no closed form" in " ".join(m.value for m in at.markdown)


def test_bad_bounds_show_an_error_not_an_exception(stats_page):
    at = stats_page
    at.selectbox(key="stats_query").select("sum").run()
    at.number_input(key="stats_lower").set_value(95.0).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.error and "lower" in at.error[0].value
    assert not at.get("plotly_chart")
    at.number_input(key="stats_lower").set_value(20.0).run()
    assert not at.error and "Error" in figures(at)


def test_bounded_laplace_on_histogram_uses_answer_range(stats_page):
    at = stats_page
    at.selectbox(key="stats_mechanism").select("bounded_laplace").run()
    assert not at.exception, [e.value for e in at.exception]
    # Adult has 48,842 rows: the answer range starts at [0, 50,000].
    assert at.number_input(key="stats_answer_upper").value == 50_000.0
    assert "Error" in figures(at)
    at.number_input(key="stats_answer_upper").set_value(100.0).run()  # below the true counts
    assert not at.exception, [e.value for e in at.exception]
    assert at.error


def test_settings_are_mirrored_in_the_url(stats_page):
    at = stats_page
    at.select_slider(key="stats_epsilon").set_value(0.47).run()
    at.selectbox(key="stats_query").select("count").run()
    assert at.query_params["stats_epsilon"] == "0.47"
    assert at.query_params["stats_query"] == "count"


def test_bounds_round_up_and_guarantees_round_down(stats_page):
    """At 50% the Laplace bound is b·ln 2 = 0.693147… (b = 1/ε = 1): it once read ±0.6931,
    smaller than true; "at least" 0.5^16 = 0.00152587…% once read 0.00153%, more than true."""
    at = stats_page
    at.selectbox(key="stats_confidence").select(0.5).run()
    assert not at.exception, [e.value for e in at.exception]
    [(confidence, alpha)] = alpha_sentences(at)
    assert confidence == 0.5 and alpha >= math.log(2)
    sentence = next(m.value for m in at.markdown if "categories at once" in m.value)
    at_least = float(re.search(r"at least ([\d.]+)% of releases", sentence)[1])
    assert at_least <= 100 * 0.5**16
    table = next(d.value for d in at.dataframe if "±α at 50%, closed form" in d.value.index)
    assert float(table.loc["±α at 50%, closed form"].iloc[0]) >= math.log(2)


def test_a_bound_read_off_the_data_is_flagged_not_called_public(stats_page):
    """capital_loss's upper bound 4,356 is Adult's own maximum: the note is a warning that
    says so, never "the column's public range"."""
    at = stats_page
    at.selectbox(key="stats_query").select("sum").run()
    at.selectbox(key="stats_column").select("capital_loss").run()
    assert not at.exception, [e.value for e in at.exception]
    assert (at.number_input(key="stats_lower").value, at.number_input(key="stats_upper").value) \
        == (0, 4356)
    warnings = " ".join(w.value for w in at.warning)
    assert "read off the data" in warnings and "4356" in warnings
    assert not any("public range" in c.value for c in at.caption)
    # A documented bound (capital_gain: the CPS top-code 99,999) is still called public.
    at.selectbox(key="stats_column").select("capital_gain").run()
    assert any("public range [0, 99999]" in c.value for c in at.caption)
    assert "read off the data" not in " ".join(w.value for w in at.warning)


def test_l1_and_l2_sensitivity_are_explained_where_they_appear(stats_page):
    at = stats_page   # a histogram with Laplace noise: "L1 sensitivity 1"
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "L1 sensitivity 1" in shown and "L1 adds up how much each released number" in shown
    at.selectbox(key="stats_measure").select("approx").run()
    at.selectbox(key="stats_mechanism").select("gaussian").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "L2 sensitivity 1" in shown and "square root of the sum of the squared" in shown


def test_a_clamped_mean_explains_its_spikes_its_bound_and_its_bias():
    """Iris' mean sepal length in [0, 10] at ε = 0.1 (issue 21 item 9): the error chart's
    note says which share of releases is clamped to the bounds (the spikes at both ends), the
    ±4.157 is the distance to the bound 10 (not a noise figure), and the table's bias is the
    released, clamped mean's — against an independent simulation of clamp(mean + noise)."""
    at = open_app("statistics.py", dataset=IRIS)
    at.selectbox(key="stats_query").select("mean").run()
    at.select_slider(key="stats_epsilon").set_value(0.1).run()
    at.selectbox(key="stats_trials").select(100_000).run()
    assert not at.exception, [e.value for e in at.exception]
    values = datasets.load_builtin(IRIS).frame["sepal_length"].dropna().clip(0, 10)
    total, count = float(values.sum()), float(values.size)
    rng = np.random.default_rng(2)
    draws = 1_000_000
    noisy_count = np.maximum(count + rng.laplace(0, 1 / 0.05, draws), 1)
    released = np.clip((total + rng.laplace(0, 10 / 0.05, draws)) / noisy_count, 0, 10)
    errors = released - total / count
    captions = " ".join(c.value for c in at.caption)
    match = re.search(r"([\d.]+)% of the Laplace releases hit a bound and are clamped to "
                      r"\[0, 10\] \(([\d.]+)% to 0, ([\d.]+)% to 10\): the spikes at both ends",
                      captions)
    assert match, captions
    for shown, share in zip(match.groups(), (np.mean((released == 0) | (released == 10)),
                                             np.mean(released == 0), np.mean(released == 10)),
                            strict=True):
        assert float(shown) / 100 == pytest.approx(share, abs=4 * math.sqrt(share / 100_000))
    said = " ".join(m.value for m in at.markdown)
    distance = math.ceil((10 - total / count) * 1e3) / 1e3
    assert (f"within ±{distance:.3f} of the true mean: ±{distance:.3f} is the distance from "
            "the true mean to the bound 10") in said
    table = at.dataframe[-1].value
    [row] = [name for name in table.index if name.startswith("Bias of the released value")]
    assert "clamped to [0, 10]" in row
    bias = float(table.loc[row].iloc[0])
    spread = math.sqrt(errors.var() / 100_000 + errors.var() / draws)
    assert bias == pytest.approx(errors.mean(), abs=5 * spread)
    assert abs(errors.mean()) > 10 * spread   # not zero: the clamped mean is biased
    assert "zero for" not in captions


def test_each_simulated_release_shows_its_interval(stats_page):
    """Issue 22: next to the release, its 95 % interval for the true answer (per category of
    a histogram; Laplace b = 1/ε = 1: the true count is within the noisy one ± ln 20)."""
    at = stats_page
    table = next(d.value for d in at.dataframe if any(c.startswith("Lower 95%")
                                                      for c in d.value.columns))
    low = table[next(c for c in table.columns if c.startswith("Lower 95%"))]
    high = table[next(c for c in table.columns if c.startswith("Upper 95%"))]
    noisy = table[next(c for c in table.columns if c.startswith("Noisy"))]
    assert (low <= noisy).all() and (noisy <= high).all()
    # the ends of noisy ± ln 20 ≈ ±3.0, each rounded as the count is
    assert set((high - low).tolist()) <= {5, 6}
    assert ((low <= table["True count"]) & (table["True count"] <= high)).mean() > 0.5
    at.selectbox(key="stats_query").select("sum").run()
    assert not at.exception, [e.value for e in at.exception]
    low, high = shown_interval(at, "sum")
    # a sum of age clamped to [17, 90] at ε = 1: b = 90, half-width 90 ln 20 (the ends shown
    # whole, rounded outwards)
    width = 2 * 90 * math.log(20)
    assert width <= high - low < width + 2


INTERVAL = re.compile(r"95% interval for the true (\w+): (-?[\d,.]+) – (-?[\d,.]+)")


def shown_interval(at, noun: str) -> tuple[float, float]:
    """The ends of the page's '95% interval for the true <noun>: low – high' sentence."""
    for caption in at.caption:
        match = INTERVAL.search(caption.value)
        if match and match[1] == noun:
            return float(match[2].replace(",", "")), float(match[3].replace(",", ""))
    raise AssertionError(f"no interval for the {noun}: {[c.value for c in at.caption]}")


def shown_number(text: str) -> float:
    return float(text.replace(",", ""))


def test_a_mean_shows_its_interval_from_its_noisy_sum_and_count(stats_page):
    """Issue 22: the mean of age in [17, 90] at ε = 1 (half to the sum: Laplace b = 180 on
    the sum, b = 2 on the count), each part within b·ln 40 (97.5 %), the ratio's extremes
    with the count at least 1, clipped to the bounds; the ends shown rounded outwards."""
    at = stats_page
    at.selectbox(key="stats_query").select("mean").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key="stats_column").value == "age"
    assert (at.number_input(key="stats_lower").value,
            at.number_input(key="stats_upper").value) == (17.0, 90.0)
    low, high = shown_interval(at, "mean")
    sentence = next(c.value for c in at.caption if "interval for the true mean" in c.value)
    noisy_sum, noisy_count = (shown_number(x) for x in re.search(
        r"noisy sum ([\d,.]+) and the noisy count ([\d,.]+)", sentence).groups())
    assert "97.5% interval" in sentence and "conservative" in sentence
    s_low, s_high = noisy_sum - 180 * math.log(40), noisy_sum + 180 * math.log(40)
    c_low = max(noisy_count - 2 * math.log(40), 1.0)
    c_high = noisy_count + 2 * math.log(40)
    want_low = min(max(min(s_low / c_low, s_low / c_high), 17.0), 90.0)
    want_high = min(max(max(s_high / c_low, s_high / c_high), 17.0), 90.0)
    # two decimals shown (four significant digits), the low end rounded down, the high up;
    # the noisy sum and count are shown rounded (to 1 and 0.1: 1e-5 on the mean at most)
    assert low <= want_low + 1e-4 and want_low - low < 0.01 + 1e-4
    assert want_high - 1e-4 <= high and high - want_high < 0.01 + 1e-4
    released = shown_number(next(m.value for m in at.metric
                                 if m.label.startswith("One release")))
    assert low <= released <= high


def test_another_release_shows_its_own_interval(stats_page):
    """The interval moves with the release drawn: release 2's is around release 2's sum."""
    at = stats_page
    at.selectbox(key="stats_query").select("sum").run()
    at.button(key="stats_release_next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    released = shown_number(next(m.value for m in at.metric
                                 if m.label.startswith("One release")))
    low, high = shown_interval(at, "sum")
    # b = 90: released ± 90 ln 20, the sum shown whole and the ends rounded outwards
    assert (low + high) / 2 == pytest.approx(released, abs=1.5)
    assert 2 * 90 * math.log(20) <= high - low < 2 * 90 * math.log(20) + 2


def test_a_variance_shows_its_interval_from_its_three_noisy_parts(stats_page):
    """Issue 22: the variance of age in [17, 90] (h = 36.5) at ε = 1, each part at ε/3
    (Laplace b = 3, 3h, 3h²) within b·ln 60 (98.33 %); S₂/n − (S₁/n)² by interval
    arithmetic with n at least 1, clipped to [0, h²]; the ends shown rounded outwards."""
    at = stats_page
    at.selectbox(key="stats_query").select("variance").run()
    assert not at.exception, [e.value for e in at.exception]
    low, high = shown_interval(at, "variance")
    sentence = next(c.value for c in at.caption if "interval for the true variance" in c.value)
    assert "98.33% interval" in sentence and "conservative" in sentence
    count, deviations, squares = (shown_number(x) for x in re.search(
        r"noisy count (-?[\d,.]+), the noisy sum of deviations (-?[\d,.]+) and the noisy "
        r"sum of squared deviations (-?[\d,.]+)", sentence).groups())
    reach, half = math.log(60), 36.5
    n_low = max(count - 3 * reach, 1.0)
    n_high = max(count + 3 * reach, n_low)
    d_low, d_high = deviations - 3 * half * reach, deviations + 3 * half * reach
    s_low, s_high = squares - 3 * half**2 * reach, squares + 3 * half**2 * reach
    m = [d / n for d in (d_low, d_high) for n in (n_low, n_high)]
    q = [s / n for s in (s_low, s_high) for n in (n_low, n_high)]
    square_low = 0.0 if min(m) <= 0 <= max(m) else min(x * x for x in m)
    want_low = min(max(min(q) - max(x * x for x in m), 0.0), half**2)
    want_high = min(max(max(q) - square_low, 0.0), half**2)
    # the parts are shown to four significant digits: the ends move by a few units at most
    assert low == pytest.approx(want_low, abs=5) and high == pytest.approx(want_high, abs=5)
    assert low <= want_high and 0 <= low <= high <= half**2
