"""Tests for dpcore.partition: thresholds, exact keep probabilities and δ, cross-checked.

Closed forms; scipy's Laplace, discrete Laplace and normal survival functions; simulation
(fixed seeds, tolerances in standard errors); OpenDP 0.16's privacy maps and its real release.
OpenDP 0.16 under-reports δ by one integer step for integer counts (opendp/opendp#2922): the
tests show its release keeping a one-person group more often than its map says, and our δ
bounding that rate.
"""

from __future__ import annotations

import math

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import stats

from dpcore.measures import ZCDP, ApproxDP, PureDP, zcdp_epsilon
from dpcore.partition import (
    PARTITION_NOISES,
    PartitionPrivacy,
    keep_probability,
    partition_delta,
    partition_privacy,
    partition_scale,
    partition_threshold,
    release_partitions,
)

dp.enable_features("contrib")

BOUNDS = [(1, 1), (3, 2), (5, 4)]


def budget(noise: str) -> dict:
    return {"rho": 0.5} if noise == "gaussian" else {"epsilon": 1.0}


def setup(noise: str, r: int, k: int, delta: float = 1e-6) -> tuple[float, float]:
    scale = partition_scale(noise=noise, max_rows=r, max_groups=k, **budget(noise))
    return scale, partition_threshold(noise=noise, scale=scale, delta=delta, max_rows=r,
                                      max_groups=k)


# --- closed forms ---------------------------------------------------------------------------------


def test_laplace_threshold_closed_form():
    # ε = 1, one row per person in one group: b = 1, T = 1 + ln(1 / (2δ)), a hair above it:
    # the margin for OpenDP's rounding (3·2^-53 per group out of δ = 1e-6: 3.3e-10 in ln)
    scale, threshold = setup("laplace", 1, 1)
    assert scale == pytest.approx(1.0, rel=1e-13)
    assert threshold == pytest.approx(1 + math.log(1 / 2e-6), rel=1e-9)
    assert threshold >= 1 + math.log(1 / 2e-6)
    # person-level: b = k·r/ε, T = r + b·ln(k / (2δ))
    scale, threshold = setup("laplace", 3, 2)
    assert scale == pytest.approx(6.0, rel=1e-13)
    assert threshold == pytest.approx(3 + 6 * math.log(2 / 2e-6), rel=1e-9)


def test_gaussian_threshold_closed_form():
    # ρ = 0.5: σ = √k·r/√(2ρ) = √k·r; T = r + σ·Φ⁻¹(1 − δ/k)
    scale, threshold = setup("gaussian", 3, 2)
    assert scale == pytest.approx(3 * math.sqrt(2), rel=1e-13)
    # raised by the margin for OpenDP's float32 tail (T − r read 2^-21 short, erfc 3 float32
    # ulps over): T − r by a relative 2^-20 at most
    closed = 3 + scale * stats.norm.isf(1e-6 / 2)
    assert closed <= threshold <= 3 + (closed - 3) * (1 + 2.0**-20)


def test_discrete_laplace_threshold_is_the_smallest_integer():
    scale, threshold = setup("discrete_laplace", 3, 2)
    assert threshold == int(threshold)
    # the closed form of the tail, and the integer just below would cost more than δ
    tail = lambda j: math.exp(-j / scale) / (1 + math.exp(-1 / scale))  # noqa: E731
    assert 2 * tail(threshold - 3) <= 1e-6 < 2 * tail(threshold - 4)


@pytest.mark.parametrize("noise", PARTITION_NOISES)
@pytest.mark.parametrize(("r", "k"), BOUNDS)
def test_keep_probability_matches_scipy(noise, r, k):
    scale, threshold = setup(noise, r, k)
    n = np.arange(0, int(threshold) + 30)
    got = keep_probability(n, threshold=threshold, noise=noise, scale=scale)
    if noise == "laplace":
        expected = stats.laplace.sf(threshold - n, scale=scale)
    elif noise == "gaussian":
        expected = stats.norm.sf(threshold - n, scale=scale)
    else:  # P(Z >= j) = P(Z > j − 1), Z ~ dlaplace(a = 1/b)
        expected = stats.dlaplace.sf(np.ceil(threshold - n) - 1, 1 / scale)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-300)


@pytest.mark.parametrize("noise", PARTITION_NOISES)
@pytest.mark.parametrize(("r", "k"), BOUNDS)
def test_delta_is_k_times_the_keep_probability_of_a_one_person_group(noise, r, k):
    """A group only one person has holds at most r rows: kept with probability ≤ δ/k, and the
    person has at most k such groups."""
    scale, threshold = setup(noise, r, k)
    delta = partition_delta(threshold, noise=noise, scale=scale, max_rows=r, max_groups=k)
    alone = keep_probability(np.arange(r + 1), threshold=threshold, noise=noise, scale=scale)
    assert np.all(np.diff(alone) >= 0)  # more rows, more likely kept: r is the worst
    assert k * alone[-1] <= delta <= 1e-6
    assert delta == pytest.approx(k * alone[-1], rel=1e-12)
    assert delta > 1e-6 / 3  # the threshold is not needlessly high (integer steps of b = 1)


def test_privacy_and_its_approximate_dp_reading():
    scale, threshold = setup("laplace", 3, 2)
    privacy = partition_privacy(noise="laplace", scale=scale, threshold=threshold, max_rows=3,
                                max_groups=2)
    assert isinstance(privacy.measure, PureDP)
    assert privacy.measure.epsilon == pytest.approx(1.0, rel=1e-12)
    assert privacy.measure.epsilon <= 1.0  # the scale was rounded so the target holds
    assert privacy.to_approx() == ApproxDP(privacy.measure.epsilon, privacy.delta)
    g_scale, g_threshold = setup("gaussian", 3, 2)
    g = partition_privacy(noise="gaussian", scale=g_scale, threshold=g_threshold, max_rows=3,
                          max_groups=2)
    assert isinstance(g.measure, ZCDP) and g.measure.rho <= 0.5
    approx = g.to_approx(1e-6)
    assert approx.epsilon == pytest.approx(zcdp_epsilon(0.5, 1e-6), rel=1e-9)
    assert approx.delta == pytest.approx(g.delta + 1e-6, rel=1e-12)
    with pytest.raises(ValueError, match="delta_noise"):
        g.to_approx()
    with pytest.raises(ValueError, match="threshold"):
        partition_privacy(noise="laplace", scale=1.0, threshold=-50.0)
    with pytest.raises(TypeError, match="measure"):
        PartitionPrivacy(measure=ApproxDP(1.0, 0.0), delta=0.0)


def test_parameters_are_validated():
    with pytest.raises(ValueError, match="rho"):
        partition_scale(noise="gaussian", epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        partition_scale(noise="laplace", rho=1.0)
    with pytest.raises(ValueError, match="noise"):
        partition_scale(noise="geometric", epsilon=1.0)
    with pytest.raises(ValueError, match="max_groups"):
        partition_scale(noise="laplace", epsilon=1.0, max_groups=0)
    with pytest.raises(ValueError, match="delta"):
        partition_threshold(noise="laplace", scale=1.0, delta=0.0)
    with pytest.raises(ValueError, match="counts"):
        keep_probability([-1.0], threshold=3.0, noise="laplace", scale=1.0)
    with pytest.raises(ValueError, match="counts"):
        release_partitions(3.0, threshold=3.0, noise="laplace", scale=1.0,
                           rng=np.random.default_rng(0))


# --- simulation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("noise", PARTITION_NOISES)
def test_keep_probabilities_match_simulation(noise):
    """200,000 simulated releases of groups of sizes 0..T+8: each kept share within 5 standard
    errors (+1e-6) of the exact probability. Power: an off-by-one threshold moves the
    probabilities at n ≈ T by about 0.1-0.2, hundreds of standard errors."""
    scale = partition_scale(noise=noise, **({"rho": 0.05} if noise == "gaussian"
                                            else {"epsilon": 0.3}))
    threshold = partition_threshold(noise=noise, scale=scale, delta=1e-3)
    counts = np.arange(0, int(threshold) + 9, dtype=float)
    trials = 200_000
    release = release_partitions(counts, threshold=threshold, noise=noise, scale=scale,
                                 trials=trials, rng=np.random.default_rng(11))
    assert release.kept.shape == release.noisy_counts.shape == (trials, counts.size)
    np.testing.assert_array_equal(release.kept, release.noisy_counts >= threshold)
    p = keep_probability(counts, threshold=threshold, noise=noise, scale=scale)
    se = np.sqrt(p * (1 - p) / trials)
    assert np.all(np.abs(release.kept.mean(axis=0) - p) <= 5 * se + 1e-6)
    if noise == "discrete_laplace":
        assert np.all(release.noisy_counts == np.round(release.noisy_counts))


@pytest.mark.parametrize("noise", PARTITION_NOISES)
def test_a_one_person_group_is_kept_at_most_delta_simulated(noise):
    """δ = 0.01 so that the rate is measurable: 10^6 releases of a group of r = 2 rows (one
    person, k = 3 groups): kept share ≤ δ/k + 5 standard errors, and close to it."""
    r, k, delta = 2, 3, 0.01
    scale = partition_scale(noise=noise, max_rows=r, max_groups=k, **budget(noise))
    threshold = partition_threshold(noise=noise, scale=scale, delta=delta, max_rows=r,
                                    max_groups=k)
    stated = partition_delta(threshold, noise=noise, scale=scale, max_rows=r, max_groups=k)
    trials = 10**6
    release = release_partitions([float(r)], threshold=threshold, noise=noise, scale=scale,
                                 trials=trials, rng=np.random.default_rng(5))
    rate = release.kept.mean()
    se = math.sqrt(stated / k / trials)
    assert rate <= stated / k + 5 * se
    assert rate == pytest.approx(stated / k, abs=5 * se)


def test_one_release_has_one_row_of_results():
    release = release_partitions([0.0, 1e6], threshold=10.0, noise="laplace", scale=1.0,
                                 rng=np.random.default_rng(0))
    assert release.kept.tolist() == [False, True]
    assert release.noisy_counts.shape == (2,)


# --- OpenDP 0.16 ----------------------------------------------------------------------------------


def opendp_float_threshold(noise: str, scale: float, threshold: float):
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=float, nan=False))
    if noise == "gaussian":
        metric = dp.l02inf_distance(dp.absolute_distance(T=float))
        return dp.m.make_gaussian_threshold(domain, metric, scale=scale, threshold=threshold)
    metric = dp.l01inf_distance(dp.absolute_distance(T=float))
    return dp.m.make_laplace_threshold(domain, metric, scale=scale, threshold=threshold)


def opendp_integer_threshold(scale: float, threshold: int):
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=int))
    metric = dp.l01inf_distance(dp.absolute_distance(T=int))
    return dp.m.make_laplace_threshold(domain, metric, scale=scale, threshold=threshold)


@pytest.mark.parametrize("noise", ["laplace", "gaussian"])
@pytest.mark.parametrize(("r", "k"), BOUNDS)
def test_privacy_matches_opendp_map_on_float_counts(noise, r, k):
    """OpenDP's map at d_in = (k groups, L1 k·r or L2 √k·r, L∞ r) gives the same ε (ρ) and δ
    for continuous noise. OpenDP rounds its own figures up a little (its Gaussian tail goes
    through float32): agreement to 1e-5."""
    scale, threshold = setup(noise, r, k)
    ours = partition_privacy(noise=noise, scale=scale, threshold=threshold, max_rows=r,
                             max_groups=k)
    norm = math.sqrt(k) * r if noise == "gaussian" else float(k * r)
    loss, delta = opendp_float_threshold(noise, scale, threshold).map((k, norm, float(r)))
    ours_loss = ours.measure.rho if noise == "gaussian" else ours.measure.epsilon
    assert ours_loss == pytest.approx(loss, rel=1e-12)
    assert ours.delta == pytest.approx(delta, rel=1e-5)


@pytest.mark.parametrize(("r", "k"), BOUNDS)
def test_opendp_integer_map_is_one_step_short_of_ours(r, k):
    """For integer counts OpenDP 0.16 releases a count >= T but computes δ as P(Z > T − r), the
    mass at T − r left out (opendp/opendp#2922): its δ at threshold T − 1 equals ours at T."""
    scale, threshold = setup("discrete_laplace", r, k)
    t = int(threshold)
    ours = partition_delta(t, noise="discrete_laplace", scale=scale, max_rows=r, max_groups=k)
    eps, opendp_delta = opendp_integer_threshold(scale, t).map((k, k * r, r))
    _, opendp_delta_below = opendp_integer_threshold(scale, t - 1).map((k, k * r, r))
    assert eps == pytest.approx(k * r / scale, rel=1e-12)
    assert ours == pytest.approx(opendp_delta_below, rel=1e-9)
    assert ours == pytest.approx(opendp_delta * math.exp(1 / scale), rel=1e-9)  # one step


@pytest.mark.slow
def test_keep_probabilities_match_opendp_release():
    """OpenDP's real release (discrete Laplace on integer counts, scale 2, threshold 9) on
    5,000 groups of each size n = 0..14 in one map: the kept share of each size is within
    5 standard errors of our exact probability."""
    scale, threshold = 2.0, 9
    sizes = np.arange(15)
    per_size = 5_000
    counts = {f"{n}-{i}": int(n) for n in sizes for i in range(per_size)}
    released = opendp_integer_threshold(scale, threshold)(counts)
    kept = np.zeros(sizes.size)
    for key in released:
        kept[int(key.split("-")[0])] += 1
    share = kept / per_size
    p = keep_probability(sizes, threshold=threshold, noise="discrete_laplace", scale=scale)
    se = np.sqrt(p * (1 - p) / per_size)
    assert np.all(np.abs(share - p) <= 5 * se + 1e-6), (share, p)


@pytest.mark.slow
def test_opendp_releases_a_one_person_group_more_often_than_its_delta():
    """One person, one row (d_in = 1), threshold 6, scale 2: OpenDP's map says δ = 0.031 but its
    release keeps such a group 5.1 % of the time, as our δ = 0.0511 says. 50,000 one-person
    groups in one release: the share is about 20 standard errors above OpenDP's figure."""
    scale, threshold = 2.0, 6
    release = opendp_integer_threshold(scale, threshold)
    _, opendp_delta = release.map((1, 1, 1))
    ours = partition_delta(threshold, noise="discrete_laplace", scale=scale)
    groups = 50_000
    share = len(release({f"user{i}": 1 for i in range(groups)})) / groups
    se = math.sqrt(ours * (1 - ours) / groups)
    assert share == pytest.approx(ours, abs=5 * se)
    assert share > opendp_delta + 10 * se
    assert ours == pytest.approx(math.exp(-5 / 2) / (1 + math.exp(-1 / 2)), rel=1e-12)


@pytest.mark.parametrize("noise", PARTITION_NOISES)
def test_opendps_map_accepts_every_planned_threshold(noise):
    """300 configurations (ε or ρ from 0.01 to 10, δ from 1e-3 to 1e-12, up to 100 rows in up
    to 1,000 groups): at dpcore's scale and threshold, OpenDP's own map — read at the d_in a
    release reads it at — gives δ <= the planned δ and ε (ρ) <= dpcore's. The threshold used
    to meet δ with a 2^-48 margin, and OpenDP's outward rounding (δ quantised to 2^-53 per
    group, the Gaussian tail through float32) read 1.0000000000287557e-06 > 1e-06: most
    configurations were refused at release."""
    from dpcore.contributions import ContributionBounds, count_sensitivity

    rng = np.random.default_rng(48)
    refused = []
    for _ in range(300):
        r = int(rng.choice([1, 1, 2, 3, 5, 10, 100]))
        k = int(rng.choice([1, 1, 2, 3, 7, 20, 1000]))
        delta = float(rng.choice([1e-3, 1e-5, 1e-6, 1e-6, 1e-7, 1e-9, 1e-12]))
        level = float(np.exp(rng.uniform(math.log(0.01), math.log(10))))
        kw = {"rho": level} if noise == "gaussian" else {"epsilon": level}
        scale = partition_scale(noise=noise, max_rows=r, max_groups=k, **kw)
        threshold = partition_threshold(noise=noise, scale=scale, delta=delta, max_rows=r,
                                        max_groups=k)
        ours = partition_privacy(noise=noise, scale=scale, threshold=threshold, max_rows=r,
                                 max_groups=k)
        if noise == "discrete_laplace":
            loss, opendp_delta = opendp_integer_threshold(scale, int(threshold)).map(
                (k, k * r, r))
        else:
            norm = (count_sensitivity(ContributionBounds(r, k)).l2 if noise == "gaussian"
                    else float(k * r))
            loss, opendp_delta = opendp_float_threshold(noise, scale, threshold).map(
                (k, norm, float(r)))
        ours_loss = ours.measure.rho if noise == "gaussian" else ours.measure.epsilon
        if not (opendp_delta <= delta and ours.delta <= delta and loss <= ours_loss <= level):
            refused.append((r, k, delta, level, opendp_delta, loss))
    assert not refused, f"{len(refused)} of 300 refused, e.g. {refused[:3]}"


def test_a_delta_below_what_float64_can_certify_is_refused():
    """OpenDP's map cannot read δ below about k·2^-53 (each group's 1 − δ₁ rounds down by up
    to 2^-53): such a δ is refused, naming delta, rather than planned and refused later."""
    with pytest.raises(ValueError, match="delta = 1e-13 is too small for 1,000 groups"):
        partition_threshold(noise="laplace", scale=1.0, delta=1e-13, max_groups=1000)
    assert partition_threshold(noise="laplace", scale=1.0, delta=1e-12, max_groups=1000) > 0
