"""AppTest interaction tests of the Selection page: numbers on screen against independent ones.

Counts come from pandas, the noise scale from the privacy-map formula written here.
"""

from __future__ import annotations

import base64
import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dpcore.selection import prob_best_selected, selection_probabilities
from tests.conftest import open_app

PAGE = "selection.py"


def chart(at, key: str) -> dict:
    """The figure JSON of the plotly chart whose widget key is ``key``."""
    for element in at.get("plotly_chart"):
        if element.proto.id.endswith(f"-{key}"):
            return json.loads(element.proto.spec)
    raise AssertionError(f"no chart with key {key}")


def values(data) -> np.ndarray | list:
    """A trace's x or y: a list, or plotly's typed-array encoding {"dtype", "bdata"}."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
    return data


def trace(fig: dict, name_start: str) -> dict:
    return next(t for t in fig["data"] if t.get("name", "").startswith(name_start))


def pick_sentence(at) -> str:
    return next(m.value for m in at.markdown if "of the time" in m.value)


def shown_percentage(sentence: str) -> float:
    match = re.search(r"(?:is picked|is the first pick) (?:more than |less than )?([\d.]+)%",
                      sentence)
    assert match, sentence
    return float(match.group(1))


def adult_education_counts() -> np.ndarray:
    frame = pd.read_csv(datasets.DATA_DIR / "adult.csv.gz", usecols=["education"])
    return frame["education"].value_counts().to_numpy(dtype=float)


@pytest.fixture
def page():
    """The Selection page with defaults (Adult)."""
    at = open_app(PAGE)
    assert at.selectbox(key="dataset_choice").value == datasets.BUILTIN_DATASETS[0]
    return at

def test_defaults_render_two_charts_and_the_privacy_map(page):
    assert page.title[0].value == "Selection"
    fig = chart(page, "sel_chart")
    assert len(fig["data"][0]["x"]) == 16                # Adult: 16 education levels
    assert fig["data"][0]["x"][0] == "HS-grad"
    assert chart(page, "sel_curve")["layout"]["xaxis"]["type"] == "log"
    text = " ".join(m.value for m in page.markdown)
    assert "b = Δ/ε = 1/1 = **1**" in text and "ε = 1 (pure DP)" in text
    assert not page.error


@pytest.mark.parametrize("epsilon", [1.0, 0.00027])
def test_caption_percentage_equals_prob_best_selected(page, epsilon):
    page.select_slider(key="sel_pure_level").set_value(epsilon).run()
    counts = adult_education_counts()
    # the default noise, exponential (permute-and-flip: what a release draws), monotonic
    # counts (sensitivity 1), pure DP: ε = Δ/b, so b = 1/ε.
    expected = prob_best_selected(counts, scale=1.0 / epsilon, noise="exponential")
    sentence = pick_sentence(page)
    assert "HS\\-grad" in sentence
    assert shown_percentage(sentence) == pytest.approx(100 * expected, abs=0.05)
    if epsilon == 1.0:
        assert "100%" in sentence
    else:
        assert 0.5 < expected < 0.99   # a setting where the answer is genuinely uncertain


def test_switching_noise_changes_the_chart(page):
    page.select_slider(key="sel_pure_level").set_value(0.00027).run()
    before = chart(page, "sel_chart")
    curve_before = chart(page, "sel_curve")
    page.selectbox(key="sel_noise").select("gumbel").run()
    assert not page.exception
    after = chart(page, "sel_chart")
    assert not np.allclose(values(before["data"][0]["y"]), values(after["data"][0]["y"]))
    # Gumbel noise of scale 1/ε is the softmax of the counts / scale.
    counts = np.sort(adult_education_counts())[::-1]
    weights = np.exp((counts - counts.max()) * 0.00027)
    np.testing.assert_allclose(values(after["data"][0]["y"]), weights / weights.sum(), rtol=1e-9)
    widths = {t["name"]: t["line"]["width"] for t in chart(page, "sel_curve")["data"]
              if t.get("line", {}).get("width")}
    assert widths["Gumbel noise"] > widths["exponential noise"]
    assert curve_before != chart(page, "sel_curve")
    assert page.query_params["sel_noise"] == "gumbel"      # mirrored in the URL


def test_typed_scores_give_four_candidates(page):
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input("0, 2, 4, 6").run()
    assert not page.exception and not page.error
    fig = chart(page, "sel_chart")
    assert fig["data"][0]["x"] == ["#1", "#2", "#3", "#4"]
    exact = values(fig["data"][0]["y"])
    # Typed scores are not monotonic unless declared so: ε = 2Δ/b, so b = 2 at ε = 1
    # (the default noise: exponential, permute-and-flip).
    np.testing.assert_allclose(exact, selection_probabilities([0, 2, 4, 6], scale=2.0,
                                                              noise="exponential"), rtol=1e-9)
    assert exact.sum() == pytest.approx(1.0)


def test_monotonic_is_off_for_typed_scores_until_declared(page):
    """Counts are monotonic (the toggle starts on); switching to typed scores must not carry
    that over: their toggle starts off, and turning it on halves the noise."""
    assert page.toggle(key="sel_monotonic").value is True
    page.selectbox(key="sel_source").select("typed").run()
    assert page.toggle(key="sel_monotonic_typed").value is False
    text = " ".join(m.value for m in page.markdown)
    assert "b = 2Δ/ε = 2/1 = **2**" in text, text
    page.toggle(key="sel_monotonic_typed").set_value(True).run()
    assert not page.exception
    assert "b = Δ/ε = 1/1 = **1**" in " ".join(m.value for m in page.markdown)
    exact = values(chart(page, "sel_chart")["data"][0]["y"])
    np.testing.assert_allclose(exact, selection_probabilities([0, 2, 4, 6], scale=1.0,
                                                              noise="exponential"), rtol=1e-9)
    page.selectbox(key="sel_source").select("data").run()
    assert page.toggle(key="sel_monotonic").value is True


def test_bad_typed_scores_show_an_error_and_no_exception(page):
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input("a, b").run()
    assert not page.exception
    assert page.error and "is not a number" in page.error[0].value
    assert not page.get("plotly_chart")
    assert page.title[0].value == "Selection"           # the page itself still renders


@pytest.mark.parametrize("text, blamed", [
    ("1e308, 0, 1", "the score '1e308' (number 1) is too large"),
    ("1,5, 2,5, 3,5", "may be decimal commas"),
])
def test_typed_scores_errors_blame_the_scores(page, text, blamed):
    """Scores of 1e308 overflowed inside the selection, and the message blamed the settings."""
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input(text).run()
    assert not page.exception
    errors = [e.value for e in page.error]
    assert len(errors) == 1 and blamed in errors[0].replace("\\", ""), errors
    assert "settings" not in errors[0]
    assert not page.get("plotly_chart")


def test_typed_scores_with_decimal_commas_give_three_candidates(page):
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input("1,5; 2,5; 3,5").run()
    assert not page.exception and not page.error
    fig = chart(page, "sel_chart")
    assert fig["data"][0]["x"] == ["#1", "#2", "#3"]
    np.testing.assert_allclose(values(fig["data"][0]["y"]), selection_probabilities(
        [1.5, 2.5, 3.5], scale=2.0, noise="exponential"), rtol=1e-9)


def test_negate_selects_the_minimum(page):
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input("5, 1, 7, 3").run()
    page.toggle(key="sel_negate").set_value(True).run()
    assert not page.exception
    exact = values(chart(page, "sel_chart")["data"][0]["y"])
    assert int(np.argmax(exact)) == 1                   # the score 1
    assert "lowest score" in pick_sentence(page)


def test_top_k_shows_its_chart(page):
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input("0, 2, 4, 6, 8").run()
    page.selectbox(key="sel_k").select(2).run()
    assert not page.exception
    fig = chart(page, "sel_top_k")
    assert "true top 2" in fig["layout"]["title"]["text"]
    assert {t["name"] for t in fig["data"]} >= {"Laplace noise", "exponential noise",
                                                "Gumbel noise"}
    assert trace(chart(page, "sel_chart"), "Among the 2 picks")
    # ε = k·2Δ/b for two picks of scores not declared monotonic: b = 4.
    assert "b = k·2Δ/ε = 4/1 = **4**" in " ".join(m.value for m in page.markdown)


@pytest.mark.slow
def test_pricing_example_shows_revenue_and_zcdp_gumbel_scale(page):
    page.selectbox(key="sel_source").select("pricing").run()
    # the pricing example starts on the exponential mechanism (Gumbel noise)…
    assert page.selectbox(key="sel_noise").value == "gumbel"
    page.selectbox(key="sel_noise").select("laplace").run()
    page.selectbox(key="sel_source").select("typed").run()
    assert page.selectbox(key="sel_noise").value == "exponential"  # …the others on exponential
    page.selectbox(key="sel_source").select("pricing").run()
    assert page.selectbox(key="sel_noise").value == "gumbel"
    page.selectbox(key="sel_measure").select("zcdp").run()
    page.selectbox(key="sel_noise").select("gumbel").run()
    assert not page.exception and not page.error
    fig = chart(page, "sel_chart")
    revenue = trace(fig, "Revenue at this price")
    prices, revenues = values(revenue["x"]), values(revenue["y"])
    assert prices.size == 400
    assert revenues[int(np.argmin(np.abs(prices - 1.0)))] == pytest.approx(4.0)
    assert revenues[int(np.argmin(np.abs(prices - 3.01)))] == pytest.approx(3.01)
    # Gumbel under ρ = 0.5, monotonic, Δ = 4 (the highest price): b = Δ·√(1/(8ρ)) = 2.
    text = " ".join(m.value for m in page.markdown)
    assert "**2**" in text and "ρ = 0.5 (zCDP)" in text


def test_sidebar_dataset_switch_uses_its_categorical_columns(page):
    page.selectbox(key="dataset_choice").select("Iris").run()
    assert not page.exception and not page.error
    assert page.selectbox(key="sel_column").value == "species"
    fig = chart(page, "sel_chart")
    assert sorted(fig["data"][0]["x"]) == ["setosa", "versicolor", "virginica"]
    # 50 flowers of each species: a three-way tie, so the best is always "picked".
    assert "one of the 3 candidates tied" in pick_sentence(page)
    assert "100%" in pick_sentence(page)


def test_a_tie_is_said_plainly_where_epsilon_changes_nothing(page):
    """Issue 21 item 14: Iris's species are a three-way tie (50 each, counted here), which
    shows 100% at every ε; the page says so and how to see ε matter. A partial tie says that
    any of the tied counts; no tie, no note."""
    page.selectbox(key="dataset_choice").select("Iris").run()
    counts = datasets.load_builtin("Iris").frame["species"].value_counts()
    assert counts.nunique() == 1 and len(counts) == 3
    [note] = [i.value for i in page.info if "tie" in i.value]
    assert "all 3 candidates have the same score" in note and "100% at every" in note
    assert "type scores" in note
    # one click to a case where ε matters: the default typed scores 0, 2, 4, 6
    page.button(key="sel_show_untied").click().run()
    assert page.selectbox(key="sel_source").value == "typed"
    curves = [values(t["y"]).astype(float) for t in chart(page, "sel_curve")["data"]
              if "lines" in t.get("mode", "")]
    assert curves and all(c.min() < 0.5 and c.max() > 0.99 for c in curves)   # ε matters
    assert not [i.value for i in page.info if "tie" in i.value]
    page.selectbox(key="sel_source").set_value("typed").run()
    page.text_input(key="sel_scores_text").set_value("1, 6, 6, 2").run()
    [note] = [i.value for i in page.info if "tie" in i.value]
    assert "2 candidates share the highest score" in note and "any of the tied" in note
    page.text_input(key="sel_scores_text").set_value("1, 6, 5, 2").run()
    assert not [i.value for i in page.info if "tie" in i.value]


def test_the_level_picking_the_best_90_percent_rounds_up(page):
    """The caption's "picked at least 90% of the time from ε ≈ x upwards" must hold at the x
    shown: with Gumbel noise (the exponential mechanism) and counts (monotonic, Δ = 1),
    P(best) = softmax(ε·counts)[best], computed here in log space."""
    page.selectbox(key="sel_noise").select("gumbel").run()
    assert not page.exception, [e.value for e in page.exception]
    caption = next(c.value for c in page.caption if "at least 90% of the time" in c.value)
    epsilon = float(re.search(r"from ε ≈ ([\d.e+-]+) upwards", caption)[1])
    counts = np.sort(adult_education_counts())[::-1]
    logits = epsilon * (counts - counts[0])
    assert 1 / np.sum(np.exp(logits)) >= 0.9


def test_permute_and_flip_and_monotonic_are_explained_where_they_appear(page):
    noise = page.selectbox(key="sel_noise")
    assert "Permute-and-flip (exponential noise)" in noise.options
    assert noise.value == "exponential"   # the default: what a release draws under pure DP
    assert "no OpenDP measurement" in noise.help
    assert "permute-and-flip" in noise.help and "random order" in noise.help
    assert "exponential mechanism" in noise.help
    monotonic = next(t for t in page.toggle if t.label == "Scores are monotonic")
    assert "moves every score the same way" in monotonic.help


def test_an_unreleasable_noise_says_why_before_it_is_added_and_offers_the_releasable_one(page):
    """Report noisy max with Laplace noise has no OpenDP measurement: the panel says so before
    anything is added (no "Add to plan"), and offers exponential noise at the same ε, which
    it adds. (It used to add the Laplace query, which the release then refused.)"""
    page.selectbox(key="sel_noise").select("laplace").run()
    assert not page.exception
    assert not [b for b in page.button if b.key == "sel_add_to_plan"]
    warning = " ".join(w.value for w in page.warning).replace("\\", "")
    assert "Not releasable as set" in warning and "Laplace noise has no OpenDP" in warning
    [alternative] = [b for b in page.button if b.key.startswith("sel_add_alternative")]
    assert "Permute-and-flip (exponential noise)" in alternative.label.replace("\\", "")
    alternative.click().run()
    assert not page.exception
    key = page.session_state["dataset"].key
    [entry] = page.session_state["release_plan_by_dataset"][key]
    assert entry.query.mechanism.noise == "exponential"
    assert entry.query.mechanism.epsilon == 1.0


def test_typed_scores_and_bids_say_they_are_not_releasable(page):
    """Only a column's counts can be released; the teaching sources say so, the data does not."""
    def said(at) -> bool:
        return any(c.value.startswith("Not releasable") or " Not releasable: " in c.value
                   for c in at.caption)

    assert not said(page)
    page.selectbox(key="sel_source").select("typed").run()
    assert said(page) and not page.exception
    page.selectbox(key="sel_source").select("pricing").run()
    assert said(page) and not page.exception


def test_a_person_unit_gives_the_plans_part_on_the_page_and_in_the_plan():
    """Clinic visits, at most 3 rows per patient in at most 2 categories: a count moves by at
    most Δ = 3. Gumbel noise, two picks sharing ρ = 0.5: ρ = k(Δ/b)²/8, so b = Δ·√(k/(8ρ)) =
    3·√0.5. The page shows that scale and Add to plan enters the query whose built part has it."""
    from dashboard.person import PrivacyUnit
    from plan.build import build

    at = open_app(PAGE, dataset=datasets.BUILTIN_DATASETS[3])
    key = at.session_state["dataset"].key
    unit = PrivacyUnit("patient_id", 3, 2)
    at.session_state["privacy_unit_by_dataset"] = {key: unit}
    at.selectbox(key="sel_measure").select("zcdp")
    at.selectbox(key="sel_noise").select("gumbel")
    at.run()
    at.selectbox(key="sel_k").select(2).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    scale = 3 * math.sqrt(2 / (8 * 0.5))
    [shown] = [m.value for m in at.metric if m.label == "Noise scale b"]
    assert shown == f"{scale:.4g}"
    at.button(key="sel_add_to_plan").click().run()
    [entry] = at.session_state["release_plan_by_dataset"][key]
    part = build(entry.query, unit).parts[0]
    assert (part.sensitivity, part.mechanism.k) == (3.0, 2)
    assert part.mechanism.scale == pytest.approx(scale, rel=1e-12)


def test_the_pick_shows_its_shortfall_bound_next_to_it(page):
    """Issue 22: Adult's 16 education counts, permute-and-flip at b = 1/ε = 1: the union
    bound 15·P(Z − Z' > E) = 5 % on the Laplace law of two exponential noises' difference,
    e^(−E)/2 = 0.05/15, E = ln 150, shown rounded up; per rank for a top-2 of typed scores
    (not monotonic: b = k·2Δ/ε = 4) over 5, then 4 candidates."""
    said = next(c.value for c in page.caption if c.value.startswith("With 95 %"))
    shown = float(re.search(r"true count is within ([\d.]+) of the top true count", said)[1])
    assert math.log(150) <= shown < math.log(150) + 1e-3
    assert "A release drawing this noise at this scale states the same bound" in said
    page.selectbox(key="sel_source").select("typed").run()
    page.text_input(key="sel_scores_text").input("0, 2, 4, 6, 8").run()
    page.selectbox(key="sel_k").select(2).run()
    assert not page.exception
    said = next(c.value for c in page.caption if c.value.startswith("With 95 %"))
    ranks = [float(x) for x in re.findall(r"rank \d within ([\d.]+)", said)]
    want = [4 * math.log(m / 0.1) for m in (4, 3)]
    assert len(ranks) == 2 and all(w <= r < w + 1e-2 for r, w in zip(ranks, want, strict=True))
    assert "A release drawing this noise at this scale states the same bound" in said
