"""Defaults that teach (issue 35): a session opening on a teaching page starts on a small dataset
where ε = 1 visibly moves the answer, says what to look at, and keeps Adult one click away; the
attacker game plays rounds and scores them."""

from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import datasets, teaching
from datasets_synthetic import teaching as tables
from tests.conftest import ROOT, fresh_plans

ADULT = datasets.BUILTIN_DATASETS[0]


def values(data) -> np.ndarray:
    """A trace's x or y: a list, or plotly's typed-array encoding {"dtype", "bdata"}."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
    return np.asarray(data, dtype=np.float64)


def opened_on(page: str, monkeypatch) -> AppTest:
    """A new session whose first page is ``page``, on a server without a fixed dataset."""
    monkeypatch.delenv(teaching.DEFAULT_ENV, raising=False)
    fresh_plans()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    if page:
        at.switch_page(f"app_pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize(("page", "expected"), [
    ("", tables.CLASS), ("statistics", tables.CLASS), ("choose_epsilon", tables.VILLAGE),
    ("selection", tables.RACE), ("attacker", tables.CLASS), ("tables", ADULT),
])
def test_each_teaching_page_opens_on_its_small_dataset_and_says_what_to_look_at(
        page, expected, monkeypatch):
    at = opened_on(page, monkeypatch)
    assert at.selectbox(key="dataset_choice").value == expected
    notes = [m.value for m in at.markdown if m.value.startswith("**Look at:**")]
    assert len(notes) == (0 if expected == ADULT else 1)


def test_adult_is_one_click_away(monkeypatch):
    at = opened_on("statistics", monkeypatch)
    at.button(key="teaching_open_adult").click().run()
    assert not at.exception
    assert at.selectbox(key="dataset_choice").value == ADULT
    assert not [m for m in at.markdown if m.value.startswith("**Look at:**")]


def test_a_server_can_fix_the_dataset_every_session_opens_on(monkeypatch):
    monkeypatch.setenv(teaching.DEFAULT_ENV, tables.VILLAGE)
    fresh_plans()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.switch_page("app_pages/selection.py")
    at.run()
    assert at.selectbox(key="dataset_choice").value == tables.VILLAGE


def test_the_noise_is_visible_on_the_class_but_not_on_adult(monkeypatch):
    """The page's own bars: at ε = 1 a count's noise (mean |error| about 1 person) is a
    sixth of the class's typical bar, and a few ten-thousandths of Adult's."""
    at = opened_on("statistics", monkeypatch)
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)
    true = next(t for t in bars["data"] if t.get("type") == "bar")
    heights = values(true["y"])
    # the favourite subjects as generated: 9, 7, 6, 5, 3 pupils
    assert sorted(heights.tolist(), reverse=True) == list(tables.SUBJECT_COUNTS)
    assert 1.0 / np.median(heights) > 0.1   # a typical error of 1 pupil is 1/6 of a bar
    at.button(key="teaching_open_adult").click().run()
    bars = json.loads(at.get("plotly_chart")[0].proto.spec)
    adult = values(next(t for t in bars["data"] if t.get("type") == "bar")["y"])
    assert 1.0 / np.median(adult) < 1e-3


def test_the_class_race_and_village_are_the_documented_tables():
    race = tables.close_race()["vote"].value_counts().reindex(tables.RACE_CANDIDATES)
    assert race.tolist() == [126, 125, 125, 124]
    pupils = tables.class_of_30()
    assert len(pupils) == 30
    assert pupils["class_rep_vote"].value_counts().reindex(
        tables.CLASS_CANDIDATES).tolist() == [11, 10, 9]
    assert len(tables.village_of_400()) == 400
    # the same on every run (fixed seeds)
    assert tables.class_of_30().equals(pupils)


def test_the_attacker_game_scores_every_round(monkeypatch):
    at = opened_on("attacker", monkeypatch)
    for _ in range(8):
        at.button(key="attack_guess_in").click().run()
    assert not at.exception
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    dots = {t["name"]: (t["x"][0], t["y"][0]) for t in figure["data"]
            if t.get("mode") == "markers"}
    # a player who always says "in" flags every round: 100 % hits and 100 % false alarms
    # (8 fair coins: both worlds came up, at seed 2026)
    assert dots["You"] == (1.0, 1.0)
    # the computer's long run sits on the pure ε = 1 corner: FPR 1/(1+e), TPR e/(1+e)
    long_run = next(v for k, v in dots.items() if k.startswith("The computer over"))
    corner = 1 / (1 + math.e)
    assert abs(long_run[0] - corner) < 0.03 and abs(long_run[1] - (1 - corner)) < 0.03
    assert "8 rounds" in figure["layout"]["title"]["text"]


def test_a_new_epsilon_starts_a_new_score(monkeypatch):
    at = opened_on("attacker", monkeypatch)
    at.button(key="attack_guess_out").click().run()
    at.button(key="attack_guess_out").click().run()
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert "2 rounds" in title
    at.selectbox(key="attack_mechanism").select("laplace").run()
    assert not at.exception
    title = json.loads(at.get("plotly_chart")[0].proto.spec)["layout"]["title"]["text"]
    assert "0 rounds" in title


def test_presentation_mode_from_the_url_hides_the_technical_panels(monkeypatch):
    monkeypatch.delenv(teaching.DEFAULT_ENV, raising=False)
    fresh_plans()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["present"] = "True"
    at.switch_page("app_pages/statistics.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.toggle(key="present").value is True
    styles = [h.proto.body for h in at.get("html")]
    assert any("font-size: 1.45rem" in s and "stCaptionContainer" in s for s in styles)
    assert at.get("plotly_chart")                             # the results are shown
    assert not [b for b in at.button if b.key and "plan" in b.key]   # the plan panel is not
    assert not [s for s in at.subheader if s.value == "Check the claim"]   # nor the audit
    # switched off: the panels are back, the style is gone
    at.toggle(key="present").set_value(False).run()
    assert not [h for h in at.get("html") if "1.45rem" in h.proto.body]
    assert [s for s in at.subheader if s.value == "Check the claim"]
    assert [b for b in at.button if b.key and "plan" in b.key]
