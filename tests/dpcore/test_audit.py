"""Tests for dpcore.audit: the bound itself, and its power on a planted bug.

The audit's own correctness is checked against scipy's exact binomial intervals and against
randomized response, whose epsilon is known exactly; a planted bug (Laplace noise 0.8× too
small) is caught. Every mechanism of the catalogue is audited in tests/dpcore/mechanisms/.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from dpcore import Laplace
from dpcore.audit import (
    AuditResult,
    audit_mechanism,
    audit_samples,
    category_events,
    threshold_events,
)

SAMPLES = 10**6  # per side

# --- the bound --------------------------------------------------------------------------------


def _outputs_with(k: int, n: int) -> np.ndarray:
    """n outputs of which exactly k equal 1 (the event below)."""
    out = np.zeros(n, dtype=int)
    out[:k] = 1
    return out


ONE_EVENT = [("y == 1", lambda y: y == 1)]


@pytest.mark.parametrize(
    ("k_x", "k_xprime", "n", "delta"),
    [
        (700, 300, 1000, 0.0),
        (300, 700, 1000, 0.0),  # the bound comes from the other direction
        (1000, 0, 1000, 0.0),  # k = n and k = 0: the one-sided limits are 1 and 0
        (5000, 4000, 10_000, 0.01),
        (12, 3, 50, 0.0),
    ],
)
def test_bound_matches_clopper_pearson_from_scipy_binomtest(k_x, k_xprime, n, delta):
    confidence = 0.9
    # One event, 2 directions, a lower and an upper one-sided bound each: Bonferroni gives
    # (1 - confidence) / 4 per one-sided bound = one tail of a two-sided exact interval at
    # level 1 - (1 - confidence) / 2.
    level = 1 - (1 - confidence) / 2
    ci_x = binomtest(k_x, n).proportion_ci(confidence_level=level, method="exact")
    ci_xp = binomtest(k_xprime, n).proportion_ci(confidence_level=level, method="exact")
    candidates = [0.0]
    if ci_x.low - delta > 0:
        candidates.append(math.log((ci_x.low - delta) / ci_xp.high))
    if ci_xp.low - delta > 0:
        candidates.append(math.log((ci_xp.low - delta) / ci_x.high))
    expected = max(candidates)

    result = audit_samples(_outputs_with(k_x, n), _outputs_with(k_xprime, n), ONE_EVENT,
                           delta=delta, confidence=confidence)
    assert result.epsilon_lower_bound == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert result.samples == n
    assert result.confidence == confidence


def test_result_names_the_event_and_direction():
    result = audit_samples(_outputs_with(300, 1000), _outputs_with(700, 1000), ONE_EVENT)
    assert isinstance(result, AuditResult)
    assert result.event == "y == 1 (x′ vs x)"
    assert result.p_hat == 0.7
    assert result.q_hat == 0.3
    result = audit_samples(_outputs_with(700, 1000), _outputs_with(300, 1000), ONE_EVENT)
    assert result.event == "y == 1 (x vs x′)"
    assert (result.p_hat, result.q_hat) == (0.7, 0.3)


def test_identical_outputs_give_a_zero_bound():
    outputs = np.arange(1000) % 3
    result = audit_samples(outputs, outputs, category_events(3))
    assert result.epsilon_lower_bound == 0.0


def test_delta_removes_a_bound_that_rests_on_rare_events():
    # 50 hits in 1000 against 0: a bound near log(0.036 / 0.0046) ≈ 2 without delta, nothing
    # once delta exceeds the lower bound on p (≈ 0.036)
    out_x, out_xp = _outputs_with(50, 1000), _outputs_with(0, 1000)
    assert audit_samples(out_x, out_xp, ONE_EVENT).epsilon_lower_bound > 1.5
    assert audit_samples(out_x, out_xp, ONE_EVENT, delta=0.05).epsilon_lower_bound == 0.0


def test_more_events_cost_confidence_per_event():
    # The Bonferroni correction: the same counts give a smaller bound among more events.
    out_x, out_xp = _outputs_with(700, 1000), _outputs_with(300, 1000)
    alone = audit_samples(out_x, out_xp, ONE_EVENT).epsilon_lower_bound
    padded = ONE_EVENT + [(f"never {i}", lambda y: y > 5) for i in range(20)]
    assert audit_samples(out_x, out_xp, padded).epsilon_lower_bound < alone


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_randomized_response_bound_is_close_to_but_below_its_exact_epsilon(epsilon):
    # Randomized response on one bit reports the truth with p = e^ε / (1 + e^ε): its privacy
    # loss is exactly ε, attained by the event {y == 1}.
    p_truth = math.exp(epsilon) / (1 + math.exp(epsilon))

    def release(bit, rng, n):
        tells_truth = rng.random(n) < p_truth
        return np.where(tells_truth, bit, 1 - bit)

    result = audit_mechanism(release, 1, 0, events=category_events(2), samples=SAMPLES,
                             rng=np.random.default_rng(11))
    assert result.epsilon_lower_bound < epsilon
    # measured gaps: 0.003-0.011 (the CP interval widths at 10^6 samples)
    assert result.epsilon_lower_bound > epsilon - 0.03
    assert result.samples == SAMPLES


def test_threshold_events_are_strict_and_read_the_first_coordinate():
    events = threshold_events([0.5, 2])
    assert [d for d, _ in events] == ["y > 0.5", "y < 0.5", "y > 2", "y < 2"]
    scalar = np.array([0.0, 0.5, 1.0, 3.0])
    np.testing.assert_array_equal(events[0][1](scalar), [False, False, True, True])
    np.testing.assert_array_equal(events[1][1](scalar), [True, False, False, False])
    vectors = np.array([[3.0, -9.0], [0.0, 9.0]])
    np.testing.assert_array_equal(events[2][1](vectors), [True, False])


def test_category_events_compare_indices():
    events = category_events(3)
    assert [d for d, _ in events] == ["y == 0", "y == 1", "y == 2"]
    np.testing.assert_array_equal(events[2][1](np.array([2, 0, 2])), [True, False, True])


def test_audit_mechanism_chunks_and_matches_audit_samples():
    # x of 2**21 elements makes chunks of 2 samples (MAX_BLOCK_ELEMENTS = 2**22): 5 samples
    # are drawn as 2 + 2 + 1 per side; the counts must equal one audit of all the outputs.
    big = np.zeros(2**21)
    calls = []

    def release(data, rng, n):
        calls.append(n)
        return rng.random(n)

    events = threshold_events([0.25, 0.5, 0.75])
    chunked = audit_mechanism(release, big, big, events=events, samples=5,
                              rng=np.random.default_rng(3))
    assert calls == [2, 2, 1, 2, 2, 1]
    rng = np.random.default_rng(3)
    whole = audit_samples(rng.random(5), rng.random(5), events)
    assert chunked == whole


def test_progress_reports_each_chunk_and_leaves_the_result_alone():
    # The same 2 + 2 + 1 chunks per side: the shares drawn after each, over 10 samples in all.
    big = np.zeros(2**21)
    shares = []

    def release(data, rng, n):
        return rng.random(n)

    events = threshold_events([0.25, 0.5, 0.75])
    watched = audit_mechanism(release, big, big, events=events, samples=5,
                              rng=np.random.default_rng(3), progress=shares.append)
    assert shares == [0.2, 0.4, 0.5, 0.7, 0.9, 1.0]
    assert watched == audit_mechanism(release, big, big, events=events, samples=5,
                                      rng=np.random.default_rng(3))
    with pytest.raises(TypeError, match="progress"):
        audit_mechanism(release, big, big, events=events, samples=5,
                        rng=np.random.default_rng(3), progress="bar")


# --- validation -------------------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.0, 1.0, float("nan"), 1.5])
def test_bad_confidence(confidence):
    with pytest.raises(ValueError, match="confidence"):
        audit_samples(np.zeros(3), np.zeros(3), ONE_EVENT, confidence=confidence)


@pytest.mark.parametrize("delta", [1.0, -0.1, float("nan")])
def test_bad_delta(delta):
    with pytest.raises(ValueError, match="delta"):
        audit_samples(np.zeros(3), np.zeros(3), ONE_EVENT, delta=delta)


def test_bad_samples_events_and_rng():
    with pytest.raises(ValueError, match="same number"):
        audit_samples(np.zeros(3), np.zeros(4), ONE_EVENT)
    with pytest.raises(ValueError, match="at least one event"):
        audit_samples(np.zeros(3), np.zeros(3), [])
    with pytest.raises(TypeError, match="event"):
        audit_samples(np.zeros(3), np.zeros(3), [lambda y: y > 0])
    with pytest.raises(ValueError, match="one boolean per sample"):
        audit_samples(np.zeros(3), np.zeros(3), [("bad", lambda y: np.array([True]))])
    with pytest.raises(ValueError, match="thresholds"):
        threshold_events([1.0, np.nan])
    with pytest.raises(ValueError, match="n_categories"):
        category_events(0)
    release = lambda data, rng, n: rng.random(n)  # noqa: E731
    with pytest.raises(TypeError, match="rng"):
        audit_mechanism(release, 0, 1, events=ONE_EVENT, samples=10, rng=np.random.RandomState(0))
    with pytest.raises(ValueError, match="samples"):
        audit_mechanism(release, 0, 1, events=ONE_EVENT, samples=0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="release must return"):
        audit_mechanism(lambda data, rng, n: rng.random(n + 1), 0, 1, events=ONE_EVENT,
                        samples=10, rng=np.random.default_rng(0))


# --- a mechanism audited through its spec ---------------------------------------------------
# (Every kind of the catalogue is audited on its spec's worst-case neighbours, honest and with
# a planted bug, in tests/dpcore/mechanisms/test_catalogue.py; the naive bounded Laplace in
# tests/dpcore/mechanisms/test_bounded.py.)


def _release(mechanism):
    def release(data, rng, n):
        return mechanism.sample(data, rng=rng, trials=n)

    return release


def _audit(mechanism, x, x_prime, thresholds, *, delta=0.0, seed=0):
    # The thresholds are fixed here, from the mechanism's scale, before any sample is drawn.
    return audit_mechanism(_release(mechanism), np.float64(x), np.float64(x_prime),
                           events=threshold_events(thresholds), samples=SAMPLES, delta=delta,
                           rng=np.random.default_rng(seed))


# --- power: a planted bug is caught -----------------------------------------------------------


@pytest.mark.parametrize("epsilon", [1.0, 2.0])
def test_planted_bug_laplace_with_too_little_noise_is_caught(epsilon):
    # The bug: noise of scale 0.8/ε while claiming ε; the real epsilon is 1.25 ε.
    buggy = Laplace(sensitivity=1.0, scale=0.8 / epsilon)
    honest_scale = 1.0 / epsilon
    thresholds = np.arange(-4 * honest_scale, 5 * honest_scale, honest_scale / 2)
    result = _audit(buggy, 0.0, 1.0, thresholds, seed=7)
    # measured with this seed: 1.241 for ε = 1 (margin 0.24) and 2.482 for ε = 2 (margin
    # 0.48); over seeds 0-19 the smallest bounds were 1.234 and 2.474
    assert result.epsilon_lower_bound > epsilon  # the audit proves the claim false
    assert result.epsilon_lower_bound < 1.25 * epsilon  # and stays a valid lower bound
