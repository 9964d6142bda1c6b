"""Choose epsilon's selection curve is that of the Selection page's mechanism: for a pick among
a column's counts, the part ``plan.build`` gives the release (its sensitivity from the privacy
unit, its scale from report noisy max's privacy map); for typed scores, the declared
sensitivity.

Sensitivities and scales are the closed forms written here; P(correct) is checked against a
direct numpy simulation of the release's part, never against the page's own code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets, person
from dashboard.analysis import plan_entries
from dashboard.analysis.epsilon_question import selection_question
from dashboard.analysis.epsilon_sweep import SELECTION_GRID, selection_curve
from dashboard.analysis.selection_choices import NOISES
from plan.build import build

TEAMS = ("red", "blue", "green", "gold")
KEY = "upload:epsilon-selection-teams"
UNITS = {"one row": (person.PrivacyUnit(), 1.0),
         "3 rows per person": (person.PrivacyUnit("pid", 3), 3.0)}


@pytest.fixture(scope="module")
def teams():
    """1,200 rows, 3 per person, a team each."""
    rng = np.random.default_rng(7)
    pid = np.repeat(np.arange(400), 3)
    team = rng.choice(TEAMS, pid.size, p=[0.4, 0.3, 0.2, 0.1])
    return pd.DataFrame({"pid": pid, "team": team})


@pytest.fixture(scope="module")
def loaded(teams):
    return datasets.load_upload(teams.to_csv(index=False).encode(), "teams.csv")


def released_part(loaded, unit, *, noise: str, epsilon: float, k: int):
    """The part a release of the Selection page's pick draws (Add to plan's query, built)."""
    query = plan_entries.selection_query(
        loaded, unit, column="team", labels=TEAMS, declared=False, noise=noise,
        measure="pure", level=epsilon, k=k, negate=False, monotonic=True, probability=None)
    return build(query, plan_entries.plan_unit(unit)).parts[0]


@pytest.mark.parametrize("unit_name", list(UNITS))
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("noise", NOISES)
def test_the_curve_sweeps_the_releases_part(loaded, unit_name, k, noise):
    unit, max_rows = UNITS[unit_name]
    saved = {"sel_source": "data", "sel_column": "team", "sel_noise": noise, "sel_k": k}
    question = selection_question(loaded, saved, KEY, 0, unit=unit)
    assert (question.noise, question.k) == (noise, k)
    # counts are monotonic; one person moves a count by at most max rows per person
    assert question.sensitivity == max_rows
    sweep, _ = selection_curve(question, 0.9, seed=0)
    epsilons = np.asarray(SELECTION_GRID)
    np.testing.assert_allclose(sweep["epsilon"], epsilons)
    np.testing.assert_allclose(sweep["scale"], k * max_rows / epsilons, rtol=1e-12)
    for i in (0, 25, 50):
        part = released_part(loaded, unit, noise=noise, epsilon=float(epsilons[i]), k=k)
        assert (part.sensitivity, part.mechanism.k) == (max_rows, k)
        assert sweep["scale"][i] == part.mechanism.scale


@pytest.mark.slow
def test_typed_scores_take_the_declared_sensitivity(loaded):
    saved = {"sel_source": "typed", "sel_scores_text": "1, 5, 2", "sel_sensitivity": 2.5,
             "sel_noise": "laplace"}
    question = selection_question(loaded, saved, KEY, 0, unit=UNITS["3 rows per person"][0])
    assert question.sensitivity == 2.5 and question.monotonic is False
    sweep, _ = selection_curve(question, 0.9, seed=0)
    # scores that may move in opposite directions: b = 2Δ/ε
    np.testing.assert_allclose(sweep["scale"], 2 * 2.5 / np.asarray(SELECTION_GRID),
                               rtol=1e-12)


@pytest.mark.slow
def test_p_correct_is_that_of_the_releases_part(loaded, teams):
    unit, max_rows = UNITS["3 rows per person"]
    saved = {"sel_source": "data", "sel_column": "team", "sel_noise": "laplace"}
    question = selection_question(loaded, saved, KEY, 0, unit=unit)
    sweep, _ = selection_curve(question, 0.9, seed=0)
    i = int(np.flatnonzero((sweep["p_correct"] > 0.3) & (sweep["p_correct"] < 0.9))[0])
    epsilon = float(sweep["epsilon"][i])
    part = released_part(loaded, unit, noise="laplace", epsilon=epsilon, k=1)
    # every person has exactly 3 rows: nothing is truncated, the counts are pandas'
    counts = teams["team"].value_counts().reindex(list(TEAMS)).to_numpy(dtype=float)
    trials = 200_000
    rng = np.random.default_rng(2026)
    noisy = counts + rng.laplace(scale=part.mechanism.scale, size=(trials, counts.size))
    right = float(np.mean(np.argmax(noisy, axis=1) == np.argmax(counts)))
    p = float(sweep["p_correct"][i])
    assert abs(right - p) < 4 * np.sqrt(p * (1 - p) / trials)
