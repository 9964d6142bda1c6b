"""AppTest interaction tests for the "Choose epsilon" page: the curve, the target sentence and
marker, the risk panel, and the queries carried over from the other pages.

Expected numbers are computed here, from closed forms or from dpcore on independently built
inputs — never read back from the page.
"""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pytest
from scipy.stats import norm

from dashboard.datasets import BUILTIN_DATASETS, load_builtin
from dpcore import Gaussian, queries
from dpcore.measures import PureDP
from dpcore.selection import noisy_max_scale, prob_best_selected
from dpcore.utility import smallest_epsilon, smallest_epsilon_for_selection

PAGE = "choose_epsilon.py"
ADULT = BUILTIN_DATASETS[0]


def figure(at, index: int = 0) -> dict:
    return json.loads(at.get("plotly_chart")[index].proto.spec)


def trace(fig: dict, name: str, *, prefix: bool = False) -> dict:
    found = [t for t in fig["data"]
             if (t.get("name", "").startswith(name) if prefix else t.get("name") == name)]
    assert len(found) == 1, [t.get("name") for t in fig["data"]]
    return found[0]


def values(data) -> np.ndarray:
    """A trace's x or y: a list, or plotly's typed-array encoding {"dtype", "bdata"}."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
    return np.asarray(data, dtype=float)


def shown_epsilon(sentence: str) -> float:
    """The number after 'ε ≥ ' in a target sentence (markdown escapes removed)."""
    match = re.search(r"ε ≥ ≈? ?([0-9.e\-+\\]+)", sentence)
    assert match, sentence
    return float(match.group(1).replace("\\", ""))


def sentence_for(at, mechanism: str) -> str:
    found = [s.value for s in at.success if s.value.startswith(f"With {mechanism} noise")]
    assert len(found) == 1, [s.value for s in at.success]
    return found[0]


def no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def page(app):
    at = app(PAGE)
    no_exception(at)
    return at


def test_smoke_defaults(page):
    assert page.title[0].value == "Choose epsilon"
    assert len(page.get("plotly_chart")) == 2
    curve = figure(page, 0)
    assert curve["layout"]["xaxis"]["type"] == "log"
    names = [t["name"] for t in curve["data"]]
    assert "Laplace" in names and "Gaussian" in names
    # Unvisited statistics page: a count of the current dataset (Adult, 48,842 rows).
    assert "count of rows" in page.markdown[0].value


def test_target_sentence_and_marker_match_smallest_epsilon(page):
    page.number_input(key="choose_target_count_abs").set_value(25.0)
    page.selectbox(key="choose_confidence").select(0.99)
    page.run()
    no_exception(page)
    # Laplace: P(|Z| > a) = exp(-a ε / Δ) <= β  ⇔  ε >= ln(1/β)/a, Δ = 1 for a count.
    closed_form = math.log(100) / 25
    exact = smallest_epsilon("laplace", sensitivity=1.0, alpha=25.0, beta=0.01).epsilon
    assert exact == pytest.approx(closed_form, rel=1e-12)
    shown = shown_epsilon(sentence_for(page, "Laplace"))
    assert exact <= shown <= exact * 1.01  # rounded up to 3 significant digits, never down
    assert "±25" in sentence_for(page, "Laplace") and "99%" in sentence_for(page, "Laplace")
    gauss = smallest_epsilon("gaussian", sensitivity=1.0, alpha=25.0, beta=0.01,
                             delta=1e-6).epsilon
    # Independently: at that ε the analytic Gaussian's 99% bound is the target.
    sigma = Gaussian(sensitivity=1.0, epsilon=gauss, delta=1e-6).scale
    assert sigma * norm.ppf(0.995) == pytest.approx(25.0, rel=1e-6)
    assert gauss <= shown_epsilon(sentence_for(page, "Gaussian")) <= gauss * 1.01
    fig = figure(page, 0)
    assert trace(fig, "Smallest ε meeting the target (Laplace)", prefix=True)["x"] == [
        pytest.approx(exact, rel=1e-12)]
    assert trace(fig, "Smallest ε meeting the target (Gaussian)", prefix=True)["x"] == [
        pytest.approx(gauss, rel=1e-12)]
    assert trace(fig, "Target")["y"] == [25.0, 25.0]


def test_curve_is_the_closed_form(page):
    fig = figure(page, 0)
    line = trace(fig, "Laplace")
    eps = values(line["x"])
    # 95% error bound of Laplace noise with Δ = 1: ln(20)/ε.
    assert values(line["y"]) == pytest.approx(math.log(20) / eps, rel=1e-12)
    assert eps.min() == pytest.approx(0.01) and eps.max() == pytest.approx(10)
    simulated = trace(fig, "Laplace (simulated)")
    sim_eps = values(simulated["x"])
    # 20,000 simulated errors per point: the sample 95% quantile is within 6% (> 4 SE).
    assert values(simulated["y"]) == pytest.approx(math.log(20) / sim_eps,
                                                                    rel=0.06)


def test_moving_epsilon_moves_the_marker(page):
    for eps in (0.1, 3.3, 1.0):
        page.select_slider(key="choose_epsilon").set_value(eps)
        page.run()
        no_exception(page)
        assert trace(figure(page, 0), "Current ε", prefix=True)["x"] == [eps, eps]
        assert f"ε = {eps:g}" in page.subheader[0].value


def test_risk_line_at_epsilon_one(page):
    page.select_slider(key="choose_epsilon").set_value(1.0)
    page.run()
    # Pure ε-DP: posterior odds <= e^ε × prior odds; at prior 1/2 that is e/(1 + e).
    expected = math.e / (1 + math.e)
    assert f"{100 * expected:.1f}%" == "73.1%"
    first = page.info[0].value
    assert "starts at 50%" in first and "73.1%" in first
    table = page.dataframe[0].value
    for prior, shown in zip((0.01, 0.1, 0.5), table.iloc[:, 1], strict=True):
        posterior = math.e * prior / (math.e * prior + 1 - prior)
        assert float(shown.rstrip("%")) == pytest.approx(100 * posterior, rel=5e-3)  # 3 digits


def test_tradeoff_chart_has_diagonal_and_exact_gaussian_curve(page):
    page.select_slider(key="choose_epsilon").set_value(0.47)
    page.run()
    fig = figure(page, 1)
    diagonal = trace(fig, "Blind guess", prefix=True)
    assert diagonal["x"] == [0, 1] and diagonal["y"] == [0, 1]
    pure = trace(fig, "Any ε-DP", prefix=True)
    fpr = values(pure["x"])
    expected = np.minimum(1, np.minimum(math.exp(0.47) * fpr, 1 - math.exp(-0.47) * (1 - fpr)))
    assert values(pure["y"]) == pytest.approx(expected, abs=1e-12)
    gdp = trace(fig, "The Gaussian mechanism itself", prefix=True)
    mu = 1 / Gaussian(sensitivity=1.0, epsilon=0.47, delta=1e-6).scale
    inner = (fpr > 0) & (fpr < 1)
    assert values(gdp["y"])[inner] == pytest.approx(
        norm.cdf(norm.ppf(fpr[inner]) + mu), abs=1e-12)


def test_unreachable_target_warns_without_exception(page):
    page.multiselect(key="choose_mechanisms_statistics").set_value(["laplace", "clamped_laplace"])
    page.run()
    page.number_input(key="choose_target_count_abs").set_value(1e-6)
    page.run()
    no_exception(page)
    warnings = " ".join(w.value for w in page.warning)
    assert "Laplace" in warnings and "1000" in warnings


def test_statistics_sum_relative_target(app):
    at = app("statistics.py")
    at.selectbox(key="stats_query").select("sum")
    at.run()
    at.switch_page(f"app_pages/{PAGE}")
    at.run()
    no_exception(at)
    assert at.toggle(key="choose_relative_sum").value is True
    at.number_input(key="choose_target_sum_pct").set_value(2.0)
    at.run()
    frame = load_builtin(ADULT).frame
    truth = queries.bounded_sum(frame, "age", lower=17, upper=90)
    alpha = 0.02 * float(truth.true_value)
    exact = smallest_epsilon("laplace", sensitivity=90.0, alpha=alpha, beta=0.05).epsilon
    assert exact == pytest.approx(90 * math.log(20) / alpha, rel=1e-12)
    assert exact <= shown_epsilon(sentence_for(at, "Laplace")) <= exact * 1.01
    line = trace(figure(at, 0), "Laplace")
    eps = values(line["x"])
    assert values(line["y"]) == pytest.approx(
        100 * 90 * math.log(20) / eps / float(truth.true_value), rel=1e-9)


def test_statistics_mean_is_simulated_only(app):
    at = app("statistics.py")
    at.selectbox(key="stats_query").select("mean")
    at.run()
    at.switch_page(f"app_pages/{PAGE}")
    at.run()
    no_exception(at)
    names = [t["name"] for t in figure(at, 0)["data"]]
    assert "Laplace (simulated)" in names and "Laplace" not in names
    assert "no closed form" in sentence_for(at, "Laplace")


def test_tables_query(page):
    page.radio(key="choose_source").set_value("tables")
    page.run()
    no_exception(page)
    assert "education × sex" in page.markdown[0].value.replace("\\", "")
    sentence = sentence_for(page, "Geometric")
    assert "each cell" in sentence
    # per cell, not all 32 (16 education levels × 2) at once: those hold in ≥ 0.95^32
    assert f"all 32 at once in at least {100 * 0.95**32:.3g}%" in sentence, sentence
    # Geometric noise, m = floor(10) + 1 = 11: 2 r^11 / (1 + r) = 0.05 with r = e^{-ε}.
    eps = shown_epsilon(sentence)
    r = math.exp(-eps)
    assert 2 * r**11 / (1 + r) <= 0.05
    r_lower = math.exp(-eps / 1.01)
    assert 2 * r_lower**11 / (1 + r_lower) > 0.05


def test_selection_query(page):
    page.radio(key="choose_source").set_value("selection")
    page.run()
    no_exception(page)
    page.number_input(key="choose_target_selection").set_value(80.0)
    page.run()
    no_exception(page)
    loaded = load_builtin(ADULT)
    counts = queries.histogram(loaded.frame, "education",
                               categories=list(loaded.domains["education"].categories))
    scores = counts.true_value
    exact = smallest_epsilon_for_selection(scores, noise="laplace", monotonic=True,
                                           target=0.8).epsilon
    shown = shown_epsilon(sentence_for(page, "Laplace"))
    assert exact <= shown <= exact * 1.01
    # Plug back independently of the solver: the probability at the shown ε reaches 80%.
    scale = noisy_max_scale(PureDP(shown), noise="laplace", monotonic=True)
    assert prob_best_selected(scores, scale=scale, noise="laplace") >= 0.8
    assert trace(figure(page, 0), "Smallest ε meeting the target", prefix=True)["x"] == [
        pytest.approx(exact, rel=1e-12)]


def test_selection_curves_overlay_the_noises(page):
    """Several noises at the same ε: one exact curve and one smallest ε each."""
    page.radio(key="choose_source").set_value("selection")
    page.run()
    page.multiselect(key="choose_noises").set_value(["laplace", "exponential", "gumbel"])
    page.number_input(key="choose_target_selection").set_value(80.0)
    page.run()
    no_exception(page)
    loaded = load_builtin(ADULT)
    scores = queries.histogram(loaded.frame, "education",
                               categories=list(loaded.domains["education"].categories)
                               ).true_value
    fig = figure(page, 0)
    for noise, name in (("laplace", "Laplace"), ("exponential", "Exponential"),
                        ("gumbel", "Gumbel")):
        exact = smallest_epsilon_for_selection(scores, noise=noise, monotonic=True,
                                               target=0.8).epsilon
        assert exact <= shown_epsilon(sentence_for(page, name)) <= exact * 1.01
        curve = next(t for t in fig["data"] if t.get("name", "").startswith(name))
        epsilons = np.asarray(values(curve["x"]), float)
        at = np.argmin(np.abs(epsilons - 1e-3))
        scale = noisy_max_scale(PureDP(float(epsilons[at])), noise=noise, monotonic=True)
        expected = 100 * prob_best_selected(scores, scale=scale, noise=noise)
        assert float(np.asarray(values(curve["y"]), float)[at]) == pytest.approx(expected,
                                                                                  rel=1e-9)


def test_selection_question_reads_the_selection_pages_settings():
    """Typed scores are monotonic only when declared so on their own toggle (the counts'
    toggle says nothing about them); simulated bids are the ones the Selection page used."""
    from dashboard.analysis import selection as sel
    from dashboard.analysis.epsilon import selection_question

    loaded = load_builtin(ADULT)
    typed = {"sel_source": "typed", "sel_scores_text": "1, 5, 2", "sel_monotonic": True}
    question = selection_question(loaded, typed, "builtin:Adult", 0)
    assert question.scores == (1.0, 5.0, 2.0) and question.monotonic is False
    question = selection_question(loaded, {**typed, "sel_monotonic_typed": True},
                                  "builtin:Adult", 0)
    assert question.monotonic is True
    assert selection_question(loaded, {}, "builtin:Adult", 0).monotonic is True  # counts
    pricing = {"sel_source": "pricing", "sel_highest": 4.0, "sel_step": 0.5,
               "sel_simulated_bids": True}
    revenue = sel.revenue_curve(sel.simulated_bids(4.0, 7), sel.price_grid(4.0, 0.5))
    question = selection_question(loaded, pricing, "builtin:Adult", 7)
    np.testing.assert_allclose(question.scores, revenue)
    typed_bids = sel.revenue_curve(sel.parse_bids(sel.EXAMPLE_BIDS), sel.price_grid(4.0, 0.5))
    assert not np.allclose(revenue, typed_bids)  # the two sources really differ


def test_dataset_without_a_table(app):
    at = app()
    at.selectbox(key="dataset_choice").select("Iris")
    at.run()
    at.switch_page(f"app_pages/{PAGE}")
    at.run()
    at.radio(key="choose_source").set_value("tables")
    at.run()
    no_exception(at)
    assert any("too few categorical columns" in i.value for i in at.info)


def test_shown_epsilon_is_rounded_up_and_urls_are_never_evaluated():
    from dashboard.analysis.epsilon import ceil_significant
    from dashboard.controls import parse_list

    assert ceil_significant(0.29957322735539907) == 0.3
    assert ceil_significant(0.8161805748803257) == 0.817
    assert ceil_significant(0.3) == 0.3  # already 3 digits: unchanged, not 0.301
    assert ceil_significant(12.31) == 12.4
    rng = np.random.default_rng(0)
    for x in 10.0 ** rng.uniform(-5, 3, 200):
        shown = ceil_significant(x)
        assert x <= shown <= x * 1.01
    assert parse_list("['laplace', 'gaussian']") == ["laplace", "gaussian"]
    assert parse_list("__import__('os').system('true')") == ["__import__('os').system('true')"]


def test_posterior_table_never_rounds_a_bound_to_certainty():
    from dashboard.analysis.epsilon import risk_summary

    table = risk_summary(8.2, delta=None, pure=True).posteriors
    column = next(c for c in table.columns if c.startswith("Highest belief"))
    # prior 50%: posterior odds e^8.2, so 1 − p = 1/(1 + e^8.2) ≈ 2.7e-4 — not certainty
    exact = 100 / (1 + math.exp(-8.2))
    shown = table[column].tolist()[2]
    assert shown != "100%" and float(shown.rstrip("%")) == pytest.approx(exact, abs=0.005)


def test_risk_panel_reads_a_zcdp_query_as_rho(app):
    """A statistics query under zCDP: the risk panel adds that ρ's trade-off curve, its belief
    bound (through the CKS conversion at δ = 1e-6) and its sentence."""
    from dpcore import risk
    from dpcore.measures import ZCDP

    at = app()
    at.switch_page("app_pages/statistics.py")
    at.run()
    at.selectbox(key="stats_measure").select("zcdp").run()
    at.select_slider(key="stats_rho").set_value(0.0242).run()
    at.switch_page(f"app_pages/{PAGE}")
    at.run()
    no_exception(at)
    assert at.toggle(key="choose_show_rho").value is True
    assert at.select_slider(key="choose_rho").value == 0.0242
    assert any("ρ = 0.0242" in c.value for c in at.caption)
    fig = json.loads(next(e for e in at.get("plotly_chart")
                          if e.proto.id.endswith("-choose_tradeoff")).proto.spec)
    curve = next(t for t in fig["data"] if t.get("name", "").startswith("Any ρ-zCDP"))
    x, y = np.asarray(values(curve["x"]), float), np.asarray(values(curve["y"]), float)
    np.testing.assert_allclose(y, risk.tradeoff(ZCDP(0.0242), x), rtol=1e-9)
    table = next(d.value for d in at.dataframe if "Attacker's prior" in d.value.columns)
    column = next(c for c in table.columns if "ρ = 0.0242" in c)
    epsilon = ZCDP(0.0242).to_approx(1e-6).epsilon  # belief bound at the converted ε
    exact = 1 / (1 + math.exp(-epsilon))          # prior 50%
    assert float(table[column].tolist()[2].rstrip("%")) == pytest.approx(100 * exact, abs=0.05)
    assert any("ρ" in i.value or "zCDP" in i.value for i in at.info)
