"""Empirical privacy audits (dpcore.audit) of person-level releases, each with a planted bug.

1. A count where a person may have up to k = 4 rows, Laplace noise at ε = 1, audited on the
   worst-case neighbours: the dataset with a person holding k rows, and without them (the count
   moves by k). Calibrated to count_sensitivity (Δ = k) the audit's lower bound stays below ε;
   the planted bug Δ = 1 (one row = one person) has true loss k·ε = 4 and is caught (seen
   here: bound 0.990 for the correct calibration, 3.98 for the bug).
2. Partition selection, δ = 0.01 (large, so that δ-sized rates are measurable with 10^6 samples):
   a group only one person makes, with r = 5 rows, is released with probability at most δ and
   never without the person. Audited at the stated δ, the bound is 0 (ε claimed 1). The planted
   bug — the threshold computed for one row per person (max_rows = 1) — releases the group
   2-6 δ of the time, and the bound log((p − δ)/q) jumps to 7.8 (Laplace), 7.6 (discrete
   Laplace), 9.3 (Gaussian) > ε.

Audit setting: 10^6 samples per side, events fixed before sampling, 95 % family-wise confidence.
A bound above the claim proves a bug; a bound below it does not prove privacy.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.audit import audit_mechanism, threshold_events
from dpcore.contributions import ContributionBounds, count_sensitivity
from dpcore.partition import (
    PARTITION_NOISES,
    partition_delta,
    partition_privacy,
    partition_scale,
    partition_threshold,
    release_partitions,
)

SAMPLES = 10**6
EPSILON = 1.0
K = 4  # rows one person may have


def person_count_release(sensitivity: float):
    """Truncate to K rows per person, count, add Laplace noise of scale sensitivity/ε."""
    def release(person_ids, rng, n):
        _, rows = np.unique(person_ids, return_counts=True)
        count = np.minimum(rows, K).sum()
        return count + rng.laplace(0.0, sensitivity / EPSILON, size=n)
    return release


# others: 30 persons with 1-3 rows; the worst-case neighbour adds a person with K rows
OTHERS = np.repeat(np.arange(1, 31), np.tile([1, 2, 3], 10))
WITH_PERSON = np.r_[OTHERS, np.zeros(K + 3, dtype=int)]  # K + 3 rows, K kept


def count_events():
    base = float(np.minimum(np.unique(OTHERS, return_counts=True)[1], K).sum())
    # thresholds around and beyond the two true counts, in units of the correct scale K/ε
    return threshold_events(base + K * np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0]))


def test_person_level_count_survives_the_audit():
    sensitivity = count_sensitivity(ContributionBounds(max_rows=K)).l1
    assert sensitivity == K
    result = audit_mechanism(person_count_release(sensitivity), WITH_PERSON, OTHERS,
                             events=count_events(), samples=SAMPLES,
                             rng=np.random.default_rng(1))
    assert result.epsilon_lower_bound <= EPSILON, result
    assert result.epsilon_lower_bound > 0.8 * EPSILON, result  # the audit sees the loss


def test_planted_row_level_sensitivity_is_caught():
    result = audit_mechanism(person_count_release(1.0), WITH_PERSON, OTHERS,
                             events=count_events(), samples=SAMPLES,
                             rng=np.random.default_rng(2))
    assert result.epsilon_lower_bound > 2 * EPSILON, result


# --- partition selection ------------------------------------------------------------------------

DELTA = 0.01
ROWS = 5
KEPT = [("group released", lambda y: y[:, 0] == 1), ("group dropped", lambda y: y[:, 0] == 0)]


def partition_release(noise: str, scale: float, threshold: float):
    """Outputs (released?, noisy count) of the person's group; a dataset without the group
    (count NaN) never releases it."""
    def release(count, rng, n):
        if np.isnan(count[0]):
            return np.zeros((n, 2))
        out = release_partitions(count, threshold=threshold, noise=noise, scale=scale,
                                 trials=n, rng=rng)
        return np.c_[out.kept[:, 0], np.where(out.kept[:, 0], out.noisy_counts[:, 0], 0.0)]
    return release


def calibrated(noise: str, *, threshold_rows: int = ROWS) -> tuple[float, float]:
    budget = {"rho": EPSILON**2 / 2} if noise == "gaussian" else {"epsilon": EPSILON}
    scale = partition_scale(noise=noise, max_rows=ROWS, **budget)
    return scale, partition_threshold(noise=noise, scale=scale, delta=DELTA,
                                      max_rows=threshold_rows)


@pytest.mark.parametrize("noise", PARTITION_NOISES)
def test_partition_selection_survives_the_audit(noise):
    scale, threshold = calibrated(noise)
    privacy = partition_privacy(noise=noise, scale=scale, threshold=threshold, max_rows=ROWS)
    assert privacy.delta <= DELTA
    result = audit_mechanism(partition_release(noise, scale, threshold), [float(ROWS)],
                             [np.nan], events=KEPT, samples=SAMPLES, delta=privacy.delta,
                             rng=np.random.default_rng(3))
    assert result.epsilon_lower_bound <= EPSILON, result
    # the group alone is released about δ of the time: the audit without δ sees it at once
    undelta = audit_mechanism(partition_release(noise, scale, threshold), [float(ROWS)],
                              [np.nan], events=KEPT, samples=10**5,
                              rng=np.random.default_rng(4))
    assert undelta.p_hat == pytest.approx(privacy.delta, rel=0.15)


@pytest.mark.parametrize("noise", PARTITION_NOISES)
def test_planted_low_threshold_is_caught(noise):
    scale, low = calibrated(noise, threshold_rows=1)  # the bug: bounds forgotten
    stated = partition_delta(low, noise=noise, scale=scale)  # what the buggy code would say
    assert stated <= DELTA
    result = audit_mechanism(partition_release(noise, scale, low), [float(ROWS)], [np.nan],
                             events=KEPT, samples=SAMPLES, delta=stated,
                             rng=np.random.default_rng(5))
    assert result.epsilon_lower_bound > 3 * EPSILON, result
