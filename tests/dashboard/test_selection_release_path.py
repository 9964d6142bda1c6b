"""The Selection page's pick among a column's counts is the release's: its mechanism is the part
``plan.build`` gives the query Add to plan enters, and its simulation draws that part's law.

Scales and sensitivities are the closed forms written here; selection frequencies are checked
against closed-form probabilities (softmax for Gumbel noise, two-candidate formulas for
exponential and Laplace noise), never against the page's own code.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets, person
from dashboard.analysis import plan_entries
from dashboard.analysis.selection_choices import NOISES
from dashboard.analysis.selection_maths import shortfall_bounds, summarise_selection
from dashboard.analysis.selection_privacy import data_mechanism, teaching_mechanism
from dashboard.analysis.selection_scores import numbered_labels
from dashboard.analysis.selection_wording import shortfall_sentence
from dashboard.number_text import up
from dpcore.selection import noisy_top_k, report_noisy_max
from plan.build import build
from plan.parts import NoisyMax

ONE_ROW = person.PrivacyUnit()
UNITS = {"one row": (ONE_ROW, 1.0), "3 rows per person": (person.PrivacyUnit("pid", 3), 3.0),
         "2 rows in 2 groups": (person.PrivacyUnit("pid", 2, 2), 2.0)}
TEAMS = ("red", "blue", "green", "gold")


@pytest.fixture(scope="module")
def loaded():
    """An upload of 1,200 rows, up to 3 per person, a team each."""
    rng = np.random.default_rng(7)
    pid = np.repeat(np.arange(400), 3)
    team = rng.choice(TEAMS, pid.size, p=[0.4, 0.3, 0.2, 0.1])
    csv = pd.DataFrame({"pid": pid, "team": team}).to_csv(index=False).encode()
    return datasets.load_upload(csv, "teams.csv")


def expected_scale(noise: str, measure: str, level: float, delta: float, k: int,
                   monotonic: bool = True) -> float:
    """Report noisy max's scale from its privacy map: ε = k·cΔ/b under pure DP; under zCDP
    ρ = k·(cΔ/b)²/8 for Gumbel noise (bounded range), ρ = (k·cΔ/b)²/2 otherwise (the pure-DP
    figure of the k picks, as OpenDP certifies them); c = 1 for monotonic scores, 2 else."""
    c = 1 if monotonic else 2
    if measure == "pure":
        return k * c * delta / level
    if noise == "gumbel":
        return c * delta * math.sqrt(k / (8 * level))
    return k * c * delta / math.sqrt(2 * level)


def shown(loaded, unit, *, noise="exponential", measure="pure", level=1.0, k=1, negate=False,
          monotonic=True) -> NoisyMax:
    return data_mechanism(loaded, unit, column="team", labels=TEAMS, declared=False,
                          noise=noise, measure=measure, level=level, k=k, negate=negate,
                          monotonic=monotonic)


@pytest.mark.parametrize("unit_name", list(UNITS))
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("measure, level", [("pure", 0.7), ("zcdp", 0.02)])
@pytest.mark.parametrize("noise", NOISES)
def test_the_page_draws_the_part_add_to_plan_enters(loaded, noise, measure, level, k,
                                                    unit_name):
    unit, delta = UNITS[unit_name]
    mechanism = shown(loaded, unit, noise=noise, measure=measure, level=level, k=k)
    entered = plan_entries.selection_query(
        loaded, unit, column="team", labels=TEAMS, declared=False, noise=noise,
        measure=measure, level=level, k=k, negate=False, monotonic=True, probability=None)
    part = build(entered, plan_entries.plan_unit(unit)).parts[0]
    assert mechanism == part.mechanism
    # against closed forms: the unit's max rows is the most one person moves a count
    assert (mechanism.noise, mechanism.measure, mechanism.k) == (noise, measure, k)
    assert part.sensitivity == mechanism.sensitivity == delta
    assert mechanism.monotonic and not mechanism.negate
    assert mechanism.scale == pytest.approx(expected_scale(noise, measure, level, delta, k),
                                            rel=1e-12)
    budget = mechanism.privacy.epsilon if measure == "pure" else mechanism.privacy.rho
    assert budget == pytest.approx(level, rel=1e-12)


@pytest.mark.parametrize("negate, monotonic", [(True, True), (False, False), (True, False)])
def test_settings_no_release_draws_keep_the_plans_sensitivity(loaded, negate, monotonic):
    """Smallest-first or not-monotonic picks: the plan's sensitivity (3 rows per person),
    recalibrated by the same map (twice the scale when not monotonic)."""
    unit, delta = UNITS["3 rows per person"]
    mechanism = shown(loaded, unit, noise="gumbel", measure="pure", level=0.5, k=2,
                      negate=negate, monotonic=monotonic)
    assert (mechanism.sensitivity, mechanism.negate, mechanism.monotonic) == (
        delta, negate, monotonic)
    assert mechanism.scale == pytest.approx(
        expected_scale("gumbel", "pure", 0.5, delta, 2, monotonic), rel=1e-12)


def test_a_query_the_plan_cannot_build_says_why(loaded):
    with pytest.raises(ValueError, match="^k must be a whole number from 1 to the number of "
                                         "candidates"):
        shown(loaded, ONE_ROW, k=5)   # 4 candidates


def _first_pick_frequencies(scores, mechanism, *, trials, seed):
    summary = summarise_selection(scores, numbered_labels(len(scores)),
                                  mechanism=mechanism, level=1.0, trials=trials,
                                  seed=seed)
    assert summary.trials == trials and summary.mechanism is mechanism
    return summary


@pytest.mark.parametrize("k", [1, 2])
def test_gumbel_picks_follow_the_exponential_mechanisms_closed_form(loaded, k):
    """Gumbel noise is the exponential mechanism: the first pick has P(i) ∝ exp(s_i/b), with
    b = kΔ/ε = 2k at ε = 1 under 2 rows per person; 5 standard errors per candidate (a false
    alarm has probability below 4 × 6e-7)."""
    unit, _ = UNITS["2 rows in 2 groups"]
    scores = (8.0, 6.0, 5.0, 1.0)
    mechanism = shown(loaded, unit, noise="gumbel", k=k)
    summary = _first_pick_frequencies(scores, mechanism, trials=40_000, seed=3)
    weights = np.exp(np.array(scores) / (2.0 * k))
    law = weights / weights.sum()
    np.testing.assert_allclose(summary.exact, law, rtol=1e-9)
    se = np.sqrt(law * (1 - law) / summary.trials)
    assert np.all(np.abs(summary.empirical - law) <= 5 * se)
    # power: the law at the scale of one row per person (b = k) is far outside the bands
    wrong = np.exp(np.array(scores) / k) / np.exp(np.array(scores) / k).sum()
    assert np.max(np.abs(summary.empirical - wrong) / se) > 10


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
def test_two_candidate_picks_follow_their_closed_forms(loaded, noise):
    """Two counts g apart at scale b = Δ/ε = 3 (3 rows per person, ε = 1): permute-and-flip
    picks the smaller with probability e^(−g/b)/2; Laplace noise with P(L₁ − L₂ > g) =
    e^(−g/b)(1 + g/(2b))/2."""
    unit, delta = UNITS["3 rows per person"]
    mechanism = shown(loaded, unit, noise=noise)
    g, b = 4.0, 3.0
    assert mechanism.scale == pytest.approx(b, rel=1e-12)
    runner_up = (math.exp(-g / b) / 2 if noise == "exponential"
                 else math.exp(-g / b) * (1 + g / (2 * b)) / 2)
    summary = _first_pick_frequencies((10.0, 10.0 - g), mechanism, trials=40_000, seed=5)
    assert summary.exact[1] == pytest.approx(runner_up, rel=1e-9)
    se = math.sqrt(runner_up * (1 - runner_up) / summary.trials)
    assert abs(summary.empirical[1] - runner_up) <= 5 * se


# --------------------------------------------------------------------------------------------
# Issue 22: the pick's shortfall from the top count, next to the simulated pick(s)

def closed_shortfall(noise: str, b: float, candidates: int, alpha: float) -> float:
    """The union bound (m − 1)·P(Z − Z' > E/b) = α solved here: Gumbel noise (logistic
    difference) E = b·ln((m − 1)/α − 1); exponential noise (Laplace difference)
    E = b·ln((m − 1)/(2α)); Laplace noise: the root of (2 + t)e^(−t)/4 = α/(m − 1), t = E/b,
    by bisection (a loop over 200 halvings, not samples)."""
    p = alpha / (candidates - 1)
    if noise == "gumbel":
        return b * math.log(1 / p - 1)
    if noise == "exponential":
        return b * math.log(1 / (2 * p))
    low, high = 0.0, 100.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if (2 + mid) * math.exp(-mid) / 4 > p else (low, mid)
    return b * high


def shortfalls_over(scores, chosen, negate):
    """Each release's shortfall at each rank: the best score among the candidates not picked
    before that rank minus the score picked at it (scores negated when picking the smallest)."""
    oriented = -np.asarray(scores, dtype=float) if negate else np.asarray(scores, dtype=float)
    chosen = np.asarray(chosen).reshape(len(chosen), -1)
    rows = np.arange(chosen.shape[0])[:, None]
    out = []
    for r in range(chosen.shape[1]):   # k ranks
        left = np.ones((chosen.shape[0], oriented.size), dtype=bool)
        left[rows, chosen[:, :r]] = False
        best = np.where(left, oriented, -np.inf).max(axis=1)
        out.append(best - oriented[chosen[:, r]])
    return np.stack(out, axis=1)


@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("noise", NOISES)
def test_a_picks_shortfall_bound_is_the_kinds_and_the_closed_form(loaded, noise, k):
    """A pick among the 4 teams' counts, 3 rows per person at ε = 1: b = 3k; rank r's bound
    over the 4 − r + 1 candidates left, as the selection kind's release computes it."""
    from dashboard.analysis.intervals import simulated_parts

    unit, delta = UNITS["3 rows per person"]
    mechanism = shown(loaded, unit, noise=noise, k=k)
    bounds = shortfall_bounds(mechanism, len(TEAMS))
    b = expected_scale(noise, "pure", 1.0, delta, k)
    want = [closed_shortfall(noise, b, len(TEAMS) - r, 0.05) for r in range(k)]
    np.testing.assert_allclose(bounds, want, rtol=1e-9)
    entered = plan_entries.selection_query(
        loaded, unit, column="team", labels=TEAMS, declared=False, noise=noise,
        measure="pure", level=1.0, k=k, negate=False, monotonic=True, probability=None)
    built = build(entered, plan_entries.plan_unit(unit))
    kind = built.kind.intervals(built, simulated_parts(built), [((), 0.0)] * k, 0.05)
    assert [high for _, high in kind] == pytest.approx(list(bounds), rel=1e-12)
    assert all(low == 0 for low, _ in kind)


@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize("k", [1, 2])
@pytest.mark.parametrize("noise", NOISES)
def test_simulated_picks_fall_short_by_more_than_the_bound_at_most_alpha(loaded, noise, k,
                                                                          negate):
    """20,000 fixed-seed picks by the page's sampler (its scale, k and direction) among
    close scores: each rank's shortfall exceeds its bound in at most 5 % of them (+ 4
    standard errors; the union bound is conservative), and the noise does move the picks."""
    unit, _ = UNITS["2 rows in 2 groups"]
    scores = (8.0, 6.0, 5.0, 1.0, 7.0)
    mechanism = shown(loaded, unit, noise=noise, k=k, negate=negate)
    bounds = shortfall_bounds(mechanism, len(scores))
    rng = np.random.default_rng(2211)
    trials = 20_000
    if k == 1:
        chosen = report_noisy_max(scores, scale=mechanism.scale, noise=noise,
                                  negate=negate, trials=trials, rng=rng)
    else:
        chosen = noisy_top_k(scores, k, scale=mechanism.scale, noise=noise,
                             negate=negate, trials=trials, rng=rng)
    short = shortfalls_over(scores, chosen, negate)
    assert np.all(short.max(axis=0) > 0)
    margin = 4 * math.sqrt(0.05 * 0.95 / trials)
    assert np.all(np.mean(short > bounds, axis=0) <= 0.05 + margin)


def test_the_shortfall_sentence_says_the_bound_per_rank():
    mechanism = teaching_mechanism(noise="gumbel", measure="pure", level=1.0,
                                   sensitivity=1.0, monotonic=True, k=2, negate=True)
    said = shortfall_sentence(mechanism, 4, source="typed")
    b = 2.0   # k·Δ/ε
    first, second = (up(closed_shortfall("gumbel", b, m, 0.05)) for m in (4, 3))
    assert said.startswith("With 95 % for each rank on its own, the candidate picked at "
                           "each rank has a true score within E of the smallest true score")
    assert f"rank 1 within {first}, rank 2 within {second}" in said
    assert "A release drawing this noise at this scale states the same bound." in said
    one = teaching_mechanism(noise="laplace", measure="pure", level=1.0, sensitivity=1.0,
                             monotonic=True, k=1, negate=False)
    said = shortfall_sentence(one, 4, source="data")
    assert said.startswith(f"With 95 %, the chosen category's true count is within "
                           f"{up(closed_shortfall('laplace', 1.0, 4, 0.05))} of the top "
                           "true count")
    assert "A release drawing this noise at this scale states the same bound." in said
