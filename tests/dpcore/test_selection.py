"""Tests for dpcore.selection: privacy maps against OpenDP 0.16, exact selection probabilities
against closed forms, scipy quadrature and Monte Carlo, numerical stability and validation.

Statistical tests use fixed seeds and a tolerance of 5 standard errors per compared frequency.
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import opendp.prelude as dp
import pytest
from scipy import integrate, special

from dpcore.measures import ZCDP, ApproxDP, PureDP
from dpcore.selection import (
    NOISE_TYPES,
    expected_score_gap,
    exponential_mechanism,
    noisy_max_privacy,
    noisy_max_scale,
    noisy_top_k,
    permute_and_flip,
    prob_best_selected,
    prob_top_k_recovered,
    report_noisy_max,
    selection_probabilities,
)

dp.enable_features("contrib")

SCORE_VECTORS = [
    np.array([0.0, 2.0, 4.0, 6.0]),
    np.array([1.0, 1.0, 0.0, 1.0]),            # a three-way tie for best
    np.array([5.0, 5.0, 0.5, -2.0, 5.25]),     # near ties and a tie
]


# ----------------------------------------------------------------------------------------------
# independent references (never the code under test)


def permute_and_flip_brute_force(scores, scale):
    """McKenna & Sheldon's permute-and-flip, exactly: average over all orders of the candidates
    of P(candidate r is the first accepted), acceptance probability p_j = exp((s_j - max)/b)."""
    s = np.asarray(scores, dtype=float)
    p = np.exp((s - s.max()) / scale)
    d = s.size
    out = np.zeros(d)
    perms = list(itertools.permutations(range(d)))
    for perm in perms:
        reach = 1.0
        for r in perm:
            out[r] += reach * p[r]
            reach *= 1 - p[r]
    return out / len(perms)


# Noise densities and CDFs written out (scipy.stats is too slow inside quad's integrand).
LAPLACE = (lambda u: 0.5 * np.exp(-np.abs(u)),
           lambda u: np.where(u < 0, 0.5 * np.exp(np.minimum(u, 0)),
                              1 - 0.5 * np.exp(-np.maximum(u, 0))))
EXPONENTIAL = (lambda u: np.where(u >= 0, np.exp(-np.maximum(u, 0)), 0.0),
               lambda u: np.where(u >= 0, -np.expm1(-np.maximum(u, 0)), 0.0))


def quad_probabilities(scores, scale, dist):
    """P(i) = ∫ f(z - s_i) Π_{j≠i} F(z - s_j) dz by scipy.integrate.quad, split at every score."""
    s = np.asarray(scores, dtype=float) / scale
    pdf, cdf = dist
    lo = s.min() - 60 if dist is LAPLACE else s.max()
    hi = s.max() + 60
    points = sorted({float(v) for v in s if lo < v < hi}) or None
    out = []
    for i in range(s.size):
        others = np.delete(s, i)

        def integrand(z, i=i, others=others):
            return float(pdf(z - s[i]) * np.prod(cdf(z - others)))

        value, _ = integrate.quad(integrand, lo, hi, points=points, limit=500,
                                  epsabs=1e-14, epsrel=1e-12)
        out.append(value)
    return np.array(out)


def raw_noisy_argmax(scores, scale, noise, trials, rng):
    """Plain numpy report noisy max, written out here for an independent Monte Carlo."""
    d = len(scores)
    draw = {"laplace": lambda size: rng.laplace(0, scale, size),
            "exponential": lambda size: rng.exponential(scale, size),
            "gumbel": lambda size: rng.gumbel(0, scale, size)}[noise]
    counts = np.zeros(d)
    rows = max(1, 2**22 // d)
    for start in range(0, trials, rows):
        n = min(rows, trials - start)
        counts += np.bincount(np.argmax(scores + draw((n, d)), axis=1), minlength=d)
    return counts / trials


def assert_within_se(freq, probs, n, z=5.0):
    se = np.sqrt(np.maximum(probs * (1 - probs), 1e-12) / n)
    assert np.all(np.abs(freq - probs) <= z * se), (freq, probs, (freq - probs) / se)


# ----------------------------------------------------------------------------------------------
# privacy maps against OpenDP 0.16


def opendp_map(scale, sensitivity, monotonic, k, measure):
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)),
             dp.linf_distance(T=float, monotonic=monotonic))
    odp_measure = dp.max_divergence() if measure == "pure" else dp.zero_concentrated_divergence()
    if k == 1:
        m = dp.m.make_noisy_max(*space, odp_measure, scale=scale)
    else:
        m = dp.m.make_noisy_top_k(*space, odp_measure, k=k, scale=scale)
    return m.map(sensitivity)


# In OpenDP 0.16 the output measure chooses the noise: MaxDivergence -> exponential noise
# (permute-and-flip, peeled for top-k), ZeroConcentratedDivergence -> Gumbel noise (one-shot
# top-k). test_opendp_measure_chooses_noise below checks this from OpenDP's outputs.
OPENDP_NOISE = {"pure": "exponential", "zcdp": "gumbel"}


@pytest.mark.parametrize("measure", ["pure", "zcdp"])
@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_privacy_map_matches_opendp(measure, monotonic, k):
    for scale, sensitivity in itertools.product([0.37, 1.0, 4.0], [0.5, 1.0, 3.0]):
        ours = noisy_max_privacy(scale, sensitivity=sensitivity, noise=OPENDP_NOISE[measure],
                                 monotonic=monotonic, k=k, measure=measure)
        theirs = opendp_map(scale, sensitivity, monotonic, k, measure)
        value = ours.epsilon if measure == "pure" else ours.rho
        assert isinstance(ours, PureDP if measure == "pure" else ZCDP)
        # OpenDP rounds its float arithmetic outward: equal up to a few ulps.
        assert value == pytest.approx(theirs, rel=1e-12)


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("k", [1, 3])
def test_privacy_map_closed_forms(monotonic, k):
    c = 1.0 if monotonic else 2.0
    scale, sens = 2.5, 0.7
    eps = k * c * sens / scale
    for noise in NOISE_TYPES:
        # Pure DP: the same map for every noise (OpenDP's Gumbel pure map is the exponential
        # mechanism's, which equals the exponential-noise map).
        pure = noisy_max_privacy(scale, sensitivity=sens, noise=noise, monotonic=monotonic, k=k)
        assert pure.epsilon == pytest.approx(eps, rel=1e-15)
    gumbel = noisy_max_privacy(scale, sensitivity=sens, noise="gumbel", monotonic=monotonic,
                               k=k, measure="zcdp")
    assert gumbel.rho == pytest.approx(k * (c * sens / scale) ** 2 / 8, rel=1e-15)
    for noise in ("laplace", "exponential"):
        # Only what the pure-DP figure of the k picks implies: (k * eps_1)^2 / 2, as OpenDP
        # certifies it -- never the bounded-range eps^2/8 (OpenDP issue #2911).
        rho = noisy_max_privacy(scale, sensitivity=sens, noise=noise, monotonic=monotonic, k=k,
                                measure="zcdp").rho
        assert rho == pytest.approx((k * c * sens / scale) ** 2 / 2, rel=1e-15)
        assert rho == pytest.approx(4 * k * gumbel.rho, rel=1e-15)
        assert rho == pytest.approx(PureDP(eps).to_zcdp().rho, rel=1e-15)


@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_exponential_noise_under_zcdp_is_what_opendp_certifies(monotonic, k):
    """Permute-and-flip under zCDP: OpenDP 0.16 certifies make_noisy_max / make_noisy_top_k
    with exponential noise as kε₁-DP only, and a release charges that figure turned into zCDP
    (ρ = ε²/2). dpcore's ρ is that figure (it was k·ε₁²/2, half of it at k = 2: the page
    offered top-2 at a ρ the release refused)."""
    for scale, sensitivity in itertools.product([0.37, 1.0, 4.0], [0.5, 1.0, 3.0]):
        ours = noisy_max_privacy(scale, sensitivity=sensitivity, noise="exponential",
                                 monotonic=monotonic, k=k, measure="zcdp").rho
        epsilon = opendp_map(scale, sensitivity, monotonic, k, "pure")
        assert ours == pytest.approx(epsilon * epsilon / 2, rel=1e-12)


@pytest.mark.slow
def test_opendp_measure_chooses_noise():
    """OpenDP's MaxDivergence noisy max has the exponential-noise selection law, and its
    zCDP one the Gumbel (softmax) law. Scores (0, 2), scale 1: P(index 1) is 1 - e^-2/2 =
    0.9323 for exponential noise and e^2/(1 + e^2) = 0.8808 for Gumbel noise, 12 standard
    errors apart at 4000 releases. OpenDP draws from the OS, so this test is not seeded; at 5
    SE it fails by chance with probability < 1e-6."""
    n = 4000
    p_exponential = 1 - math.exp(-2) / 2
    p_gumbel = math.exp(2) / (1 + math.exp(2))
    space = (dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float))
    for measure, p_true, p_other in ((dp.max_divergence(), p_exponential, p_gumbel),
                                     (dp.zero_concentrated_divergence(), p_gumbel,
                                      p_exponential)):
        release = dp.m.make_noisy_max(*space, measure, scale=1.0)
        freq = np.mean([release([0.0, 2.0]) for _ in range(n)])
        se = math.sqrt(p_true * (1 - p_true) / n)
        assert abs(freq - p_true) <= 5 * se
        assert abs(freq - p_other) > 5 * se
    # And our exact probabilities are the two laws.
    assert selection_probabilities([0, 2], scale=1, noise="exponential")[1] == pytest.approx(
        p_exponential, abs=1e-14)
    assert selection_probabilities([0, 2], scale=1, noise="gumbel")[1] == pytest.approx(
        p_gumbel, abs=1e-14)


@pytest.mark.parametrize("noise", NOISE_TYPES)
@pytest.mark.parametrize("monotonic", [False, True])
@pytest.mark.parametrize("k", [1, 4])
def test_scale_round_trips(noise, monotonic, k):
    for privacy in (PureDP(0.3), PureDP(2.0), ZCDP(0.05), ZCDP(1.5)):
        scale = noisy_max_scale(privacy, sensitivity=1.7, noise=noise, monotonic=monotonic, k=k)
        measure = "pure" if isinstance(privacy, PureDP) else "zcdp"
        back = noisy_max_privacy(scale, sensitivity=1.7, noise=noise, monotonic=monotonic, k=k,
                                 measure=measure)
        assert type(back) is type(privacy)
        value = back.epsilon if measure == "pure" else back.rho
        target = privacy.epsilon if measure == "pure" else privacy.rho
        assert value == pytest.approx(target, rel=1e-12)


def test_scale_closed_forms():
    # Exponential / Laplace under zCDP go through eps = sqrt(2 rho).
    assert noisy_max_scale(ZCDP(0.5), noise="laplace") == pytest.approx(2.0, rel=1e-15)
    assert noisy_max_scale(ZCDP(0.5), noise="exponential", monotonic=True) == pytest.approx(1.0)
    # ... for all k picks together: eps = k * c * sens / b = sqrt(2 rho) -> b = k * c * sens
    assert noisy_max_scale(ZCDP(0.5), noise="exponential", k=2, sensitivity=3) == (
        pytest.approx(12.0, rel=1e-15))
    # Gumbel under zCDP: rho = (2/b)^2/8 -> b = 2 / sqrt(8 rho).
    assert noisy_max_scale(ZCDP(0.125), noise="gumbel") == pytest.approx(2.0, rel=1e-15)
    assert noisy_max_scale(PureDP(1.0), noise="gumbel", sensitivity=3, k=2) == pytest.approx(12)
    with pytest.raises(TypeError, match="privacy"):
        noisy_max_scale(ApproxDP(1.0, 1e-6), noise="gumbel")


# ----------------------------------------------------------------------------------------------
# exact selection probabilities


@pytest.mark.parametrize("noise, dist", [("laplace", LAPLACE), ("exponential", EXPONENTIAL)])
@pytest.mark.parametrize("scores", [
    [0.0, 2.0, 4.0, 6.0], [1.0, 1.0, 0.0], [3.0, 3.0, 3.0, 3.0, -1.0], [0.0],
    [0.0, 0.01, 0.02, 5.0, 5.001], [0.0, 100.0], [-7.5, 2.25, 0.5],
])
@pytest.mark.parametrize("scale", [0.3, 1.0, 2.5])
def test_probabilities_match_quadrature(noise, dist, scores, scale):
    ours = selection_probabilities(scores, scale=scale, noise=noise)
    reference = quad_probabilities(scores, scale, dist)
    np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-9)
    assert ours.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("scores", SCORE_VECTORS + [np.array([0.0, -0.3, -1.0, -4.0, 2.0])])
@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_exponential_probabilities_are_permute_and_flip(scores, scale):
    np.testing.assert_allclose(selection_probabilities(scores, scale=scale, noise="exponential"),
                               permute_and_flip_brute_force(scores, scale), rtol=0, atol=1e-13)


def test_exponential_two_candidates_closed_form():
    # Lower score wins iff E_low - E_high > gap: probability e^{-gap/b} / 2.
    for gap, b in ((0.0, 1.0), (1.0, 1.0), (3.0, 0.5), (0.1, 7.0)):
        probs = selection_probabilities([0.0, gap], scale=b, noise="exponential")
        assert probs[0] == pytest.approx(math.exp(-gap / b) / 2, abs=1e-14)


def test_exponential_probabilities_large_tied_vector():
    # 1000 candidates: the exact integral ∫_0^1 q_i Π_{j≠i}(1 - q_j t) dt is a polynomial of
    # degree 999, integrated exactly by 501-node Gauss-Legendre (here, in the test).
    rng = np.random.default_rng(11)
    scores = np.concatenate([np.zeros(250), rng.normal(0, 0.05, 500), -rng.exponential(2, 250)])
    q = np.exp(scores - scores.max())
    t, w = np.polynomial.legendre.leggauss(501)
    t, w = (t + 1) / 2, w / 2
    logs = np.log1p(-np.outer(t, q))
    exact = (w[:, None] * q * np.exp(logs.sum(axis=1, keepdims=True) - logs)).sum(axis=0)
    np.testing.assert_allclose(selection_probabilities(scores, scale=1.0, noise="exponential"),
                               exact, rtol=0, atol=1e-12)


@pytest.mark.parametrize("scores", SCORE_VECTORS)
def test_gumbel_probabilities_are_softmax(scores):
    for scale, negate in ((0.7, False), (3.0, True)):
        sign = -1 if negate else 1
        np.testing.assert_allclose(
            selection_probabilities(scores, scale=scale, noise="gumbel", negate=negate),
            special.softmax(sign * scores / scale), rtol=1e-13, atol=1e-15)


@pytest.mark.slow
def test_laplace_many_candidates():
    # 3000 candidates (about 1200 distinct scores, many ties): sums to 1 and agrees with a
    # 20_000-trial Monte Carlo on the 20 likeliest candidates within 5 SE. (Speed, at 10^4
    # candidates: the benchmark.)
    rng = np.random.default_rng(5)
    scores = np.round(rng.normal(0, 3, 3000), 2)
    probs = selection_probabilities(scores, scale=1.0, noise="laplace")
    assert probs.sum() == pytest.approx(1.0, abs=1e-10)
    assert np.all(probs >= 0)
    n = 20_000
    freq = raw_noisy_argmax(scores, 1.0, "laplace", n, rng)
    top = np.argsort(probs)[-20:]
    assert_within_se(freq[top], probs[top], n)


@pytest.mark.parametrize("noise", NOISE_TYPES)
@pytest.mark.parametrize("negate", [False, True])
@pytest.mark.parametrize("case", range(len(SCORE_VECTORS)))
def test_probabilities_match_monte_carlo(noise, negate, case):
    """Exact probabilities vs an independent 10^6-trial plain-numpy Monte Carlo (5 SE)."""
    scores = SCORE_VECTORS[case]
    scale = 1.5
    n = 10**6
    rng = np.random.default_rng(100 + case)
    probs = selection_probabilities(scores, scale=scale, noise=noise, negate=negate)
    freq = raw_noisy_argmax(-scores if negate else scores, scale, noise, n, rng)
    assert_within_se(freq, probs, n)
    assert probs.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("noise", NOISE_TYPES)
@pytest.mark.parametrize("negate", [False, True])
def test_report_noisy_max_frequencies(noise, negate):
    """report_noisy_max itself against independent closed forms (Laplace: quad), 5 SE."""
    scores = np.array([0.0, 2.0, 4.0, 6.0])
    scale, n = 2.0, 400_000
    oriented = -scores if negate else scores
    reference = {"gumbel": lambda: special.softmax(oriented / scale),
                 "exponential": lambda: permute_and_flip_brute_force(oriented, scale),
                 "laplace": lambda: quad_probabilities(oriented, scale, LAPLACE)}[noise]()
    rng = np.random.default_rng(7)
    winners = report_noisy_max(scores, scale=scale, noise=noise, negate=negate, trials=n,
                               rng=rng)
    assert winners.dtype == np.int64 and winners.shape == (n,)
    assert_within_se(np.bincount(winners, minlength=4) / n, reference, n)
    single = report_noisy_max(scores, scale=scale, noise=noise, rng=rng)
    assert isinstance(single, int) and 0 <= single < 4


def test_report_noisy_max_chunks_many_trials():
    # d = 100: trial_chunks gives blocks of 41943 trials, so 100_001 trials span 3 blocks.
    scores = np.zeros(100)
    scores[17] = 50.0
    winners = report_noisy_max(scores, scale=1.0, noise="gumbel", trials=100_001,
                               rng=np.random.default_rng(0))
    assert winners.shape == (100_001,)
    assert np.all(winners == 17)


# ----------------------------------------------------------------------------------------------
# exponential mechanism, permute-and-flip, stability


@pytest.mark.parametrize("monotonic", [False, True])
def test_exponential_mechanism_matches_softmax(monotonic):
    utilities = np.array([3.0, 1.0, 0.0, 2.5, 3.0])
    epsilon, sensitivity, n = 1.2, 1.5, 500_000
    c = 1 if monotonic else 2
    expected = special.softmax(epsilon * utilities / (c * sensitivity))
    picks = exponential_mechanism(utilities, epsilon=epsilon, sensitivity=sensitivity,
                                  monotonic=monotonic, trials=n, rng=np.random.default_rng(3))
    assert_within_se(np.bincount(picks, minlength=5) / n, expected, n)


@pytest.mark.parametrize("monotonic", [False, True])
def test_permute_and_flip_matches_its_definition(monotonic):
    utilities = np.array([3.0, 1.0, 0.0, 2.5, 3.0])
    epsilon, sensitivity, n = 1.2, 1.5, 500_000
    c = 1 if monotonic else 2
    expected = permute_and_flip_brute_force(utilities, c * sensitivity / epsilon)
    picks = permute_and_flip(utilities, epsilon=epsilon, sensitivity=sensitivity,
                             monotonic=monotonic, trials=n, rng=np.random.default_rng(4))
    assert_within_se(np.bincount(picks, minlength=5) / n, expected, n)


@pytest.mark.parametrize("mechanism", [exponential_mechanism, permute_and_flip])
def test_stable_at_huge_epsilon_times_utility(mechanism):
    rng = np.random.default_rng(9)
    with np.errstate(over="raise", invalid="raise"):  # overflow or NaN fails the test
        # epsilon·utility = 1e6: a naive exp(eps*u/2) overflows.
        picks = mechanism([0.0, 0.5, 1.0, 0.999], epsilon=1e6, sensitivity=1.0, trials=1000,
                          rng=rng)
        assert np.all(picks == 2)
        picks = mechanism([1e6, 1e6 - 100, 0.0, -1e6], epsilon=1.0, sensitivity=1.0,
                          trials=1000, rng=rng)
        assert np.all(picks == 0)
        one = mechanism([2e6, 0.0, 1e6], epsilon=1.0, sensitivity=1.0, rng=rng)
        assert one == 0
    # Scores so far apart that their difference overflows float64: still no NaN.
    picks = mechanism([-1.7e308, 1.7e308], epsilon=1.0, sensitivity=1.0, trials=100, rng=rng)
    assert np.all(picks == 1)


@pytest.mark.parametrize("noise", NOISE_TYPES)
def test_probabilities_stable_at_extremes(noise):
    with np.errstate(over="raise", invalid="raise"):
        probs = selection_probabilities([0.0, 0.5, 1.0], scale=1e-6, noise=noise)
        np.testing.assert_allclose(probs, [0.0, 0.0, 1.0], rtol=0, atol=1e-12)
        probs = selection_probabilities([1e6, 0.0, 1e6 - 1.0], scale=1.0, noise=noise)
        assert np.all(np.isfinite(probs)) and probs[1] == 0.0 and probs[0] > probs[2] > 0
    probs = selection_probabilities([1.7e308, -1.7e308, 0.0], scale=1e-300, noise=noise)
    np.testing.assert_allclose(probs, [1.0, 0.0, 0.0], rtol=0, atol=1e-12)
    assert report_noisy_max([0.0, 0.5, 1.0], scale=1e-6, noise=noise,
                            rng=np.random.default_rng(0)) == 2


# ----------------------------------------------------------------------------------------------
# noisy top-k


def gumbel_top2_law(x):
    """Exponential mechanism without replacement: P(i then j) = w_i/W · w_j/(W - w_i)."""
    w = np.exp(x - x.max())
    return {(i, j): w[i] / w.sum() * w[j] / (w.sum() - w[i])
            for i in range(x.size) for j in range(x.size) if i != j}


def peeling_top2_law(x, first_round):
    """Two sequential rounds: P(i then j) = P_1(i) · P_2(j | i removed)."""
    law = {}
    p1 = first_round(x)
    for i in range(x.size):
        rest = [j for j in range(x.size) if j != i]
        p2 = first_round(x[rest])
        for pos, j in enumerate(rest):
            law[(i, j)] = p1[i] * p2[pos]
    return law


@pytest.mark.parametrize("noise", NOISE_TYPES)
def test_noisy_top_k_law(noise):
    scores = np.array([0.0, 1.0, 2.0, 2.0])
    scale, n = 1.0, 300_000
    law = {"gumbel": lambda: gumbel_top2_law(scores / scale),
           "exponential": lambda: peeling_top2_law(
               scores, lambda x: permute_and_flip_brute_force(x, scale)),
           "laplace": lambda: peeling_top2_law(
               scores, lambda x: quad_probabilities(x, scale, LAPLACE))}[noise]()
    picks = noisy_top_k(scores, 2, scale=scale, noise=noise, trials=n,
                        rng=np.random.default_rng(21))
    assert picks.shape == (n, 2) and picks.dtype == np.int64
    assert np.all(picks[:, 0] != picks[:, 1])
    codes = picks[:, 0] * 4 + picks[:, 1]
    freq = np.bincount(codes, minlength=16) / n
    pairs = sorted(law)
    assert_within_se(freq[[i * 4 + j for i, j in pairs]], np.array([law[p] for p in pairs]), n)


@pytest.mark.parametrize("noise", NOISE_TYPES)
def test_noisy_top_k_shapes_and_order(noise):
    rng = np.random.default_rng(2)
    scores = np.arange(6.0) * 100
    assert noisy_top_k(scores, 3, scale=1.0, noise=noise, rng=rng).tolist() == [5, 4, 3]
    assert noisy_top_k(scores, 3, scale=1.0, noise=noise, negate=True,
                       rng=rng).tolist() == [0, 1, 2]
    full = noisy_top_k(np.zeros(6), 6, scale=1.0, noise=noise, trials=50, rng=rng)
    assert full.shape == (50, 6)
    assert np.all(np.sort(full, axis=1) == np.arange(6))
    # k = 1 has the report-noisy-max law: the same first draw from the same seed.
    a = noisy_top_k(scores, 1, scale=300.0, noise=noise, trials=20,
                    rng=np.random.default_rng(8))[:, 0]
    b = report_noisy_max(scores, scale=300.0, noise=noise, trials=20,
                         rng=np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)


# ----------------------------------------------------------------------------------------------
# helpers


def test_prob_best_selected_with_ties():
    scores = np.array([3.0, 3.0, 0.0])
    expected = 2 * math.exp(3) / (2 * math.exp(3) + 1)
    assert prob_best_selected(scores, scale=1.0, noise="gumbel") == pytest.approx(expected)
    expected_min = 1 / (1 + 2 * math.exp(-3))
    assert prob_best_selected(scores, scale=1.0, noise="gumbel",
                              negate=True) == pytest.approx(expected_min)
    # Exponential noise, two candidates: the lower one wins with probability e^{-gap/b}/2.
    assert prob_best_selected([0.0, 1.0], scale=1.0, noise="exponential") == pytest.approx(
        1 - math.exp(-1) / 2, abs=1e-14)
    assert prob_best_selected([2.0, 2.0], scale=1.0, noise="laplace") == pytest.approx(1.0)


def test_expected_score_gap():
    scores = np.array([0.0, 2.0, 4.0, 6.0])
    soft = special.softmax(scores / 2.0)
    assert expected_score_gap(scores, scale=2.0, noise="gumbel") == pytest.approx(
        np.dot(soft, 6.0 - scores), rel=1e-13)
    soft_min = special.softmax(-scores / 2.0)
    assert expected_score_gap(scores, scale=2.0, noise="gumbel", negate=True) == pytest.approx(
        np.dot(soft_min, scores), rel=1e-13)
    pf = permute_and_flip_brute_force(scores, 2.0)
    assert expected_score_gap(scores, scale=2.0, noise="exponential") == pytest.approx(
        np.dot(pf, 6.0 - scores), rel=1e-12)
    lap = quad_probabilities(scores, 2.0, LAPLACE)
    assert expected_score_gap(scores, scale=2.0, noise="laplace") == pytest.approx(
        np.dot(lap, 6.0 - scores), abs=1e-9)
    assert expected_score_gap([1.0], scale=1.0, noise="laplace") == 0.0


def test_prob_top_k_recovered():
    scores = np.array([0.0, 1.0, 2.0, 3.0])
    law = gumbel_top2_law(scores)
    exact = law[(2, 3)] + law[(3, 2)]
    n = 40_000
    estimate = prob_top_k_recovered(scores, 2, scale=1.0, noise="gumbel", trials=n,
                                    rng=np.random.default_rng(31))
    assert abs(estimate - exact) <= 5 * math.sqrt(exact * (1 - exact) / n)
    # Ties at the k-th score: any of the tied candidates completes a true top-2 set.
    tied = np.array([5.0, 3.0, 3.0, -10.0])
    law = gumbel_top2_law(tied)
    exact = sum(p for (i, j), p in law.items() if {i, j} in ({0, 1}, {0, 2}))
    estimate = prob_top_k_recovered(tied, 2, scale=1.0, noise="gumbel", trials=n,
                                    rng=np.random.default_rng(32))
    assert abs(estimate - exact) <= 5 * math.sqrt(exact * (1 - exact) / n)
    assert prob_top_k_recovered(tied, 4, scale=1.0, noise="laplace", trials=10,
                                rng=np.random.default_rng(0)) == 1.0


# ----------------------------------------------------------------------------------------------
# validation

RNG = np.random.default_rng(0)
OK = {"scale": 1.0, "noise": "gumbel", "rng": RNG}


@pytest.mark.parametrize("call, error, match", [
    (lambda: report_noisy_max([], **OK), ValueError, "scores"),
    (lambda: report_noisy_max([1.0, np.nan], **OK), ValueError, "scores"),
    (lambda: report_noisy_max([1.0, np.inf], **OK), ValueError, "scores"),
    (lambda: report_noisy_max([[1.0, 2.0]], **OK), ValueError, "scores"),
    (lambda: report_noisy_max(["a"], **OK), TypeError, "scores"),
    (lambda: report_noisy_max([1.0], scale=0.0, noise="gumbel", rng=RNG), ValueError, "scale"),
    (lambda: report_noisy_max([1.0], scale=np.nan, noise="gumbel", rng=RNG), ValueError,
     "scale"),
    (lambda: report_noisy_max([1.0], scale=np.inf, noise="gumbel", rng=RNG), ValueError,
     "scale"),
    (lambda: report_noisy_max([1.0], scale="1", noise="gumbel", rng=RNG), TypeError, "scale"),
    (lambda: report_noisy_max([1.0], scale=1.0, noise="normal", rng=RNG), ValueError, "noise"),
    (lambda: report_noisy_max([1.0], scale=1.0, noise=None, rng=RNG), TypeError, "noise"),
    (lambda: report_noisy_max([1.0], **OK, trials=0), ValueError, "trials"),
    (lambda: report_noisy_max([1.0], **OK, trials=2.5), TypeError, "trials"),
    (lambda: report_noisy_max([1.0], scale=1.0, noise="gumbel", rng=np.random.RandomState(0)),
     TypeError, "rng"),
    (lambda: report_noisy_max([1.0], scale=1.0, noise="gumbel", rng=None), TypeError, "rng"),
    (lambda: report_noisy_max([1.0], **OK, negate="yes"), TypeError, "negate"),
    (lambda: noisy_top_k([1.0, 2.0], 3, **OK), ValueError, "k"),
    (lambda: noisy_top_k([1.0, 2.0], 0, **OK), ValueError, "k"),
    (lambda: noisy_top_k([1.0, 2.0], 1.0, **OK), TypeError, "k"),
    (lambda: noisy_max_privacy(-1.0, noise="gumbel"), ValueError, "scale"),
    (lambda: noisy_max_privacy(1.0, sensitivity=np.nan, noise="gumbel"), ValueError,
     "sensitivity"),
    (lambda: noisy_max_privacy(1.0, noise="gumbel", k=0), ValueError, "k"),
    (lambda: noisy_max_privacy(1.0, noise="gumbel", measure="approx"), ValueError, "measure"),
    (lambda: noisy_max_privacy(1.0, noise="gumbel", monotonic=1), TypeError, "monotonic"),
    (lambda: noisy_max_scale(1.0, noise="gumbel"), TypeError, "privacy"),
    (lambda: noisy_max_scale(PureDP(1.0), noise="gumbel", sensitivity=0), ValueError,
     "sensitivity"),
    (lambda: exponential_mechanism([1.0], epsilon=0.0, sensitivity=1.0, rng=RNG), ValueError,
     "epsilon"),
    (lambda: exponential_mechanism([1.0], epsilon=np.nan, sensitivity=1.0, rng=RNG),
     ValueError, "epsilon"),
    (lambda: permute_and_flip([1.0], epsilon=1.0, sensitivity=np.inf, rng=RNG), ValueError,
     "sensitivity"),
    (lambda: permute_and_flip([np.nan], epsilon=1.0, sensitivity=1.0, rng=RNG), ValueError,
     "utilities"),
    (lambda: selection_probabilities([1.0], scale=-2.0, noise="laplace"), ValueError, "scale"),
    (lambda: selection_probabilities([], scale=1.0, noise="laplace"), ValueError, "scores"),
    (lambda: prob_top_k_recovered([1.0, 2.0], 2, **OK, trials=0), ValueError, "trials"),
])
def test_validation(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("noise", NOISE_TYPES)
@pytest.mark.parametrize("measure", ["pure", "zcdp"])
def test_noisy_max_scale_never_spends_more_than_the_target(noise, measure):
    """The inverse rounds: its scale is raised until noisy_max_privacy confirms the target."""
    rng = np.random.default_rng(21)
    checked = 0
    for _ in range(1000):
        budget, sensitivity = 10 ** rng.uniform(-3, 1.5), 10 ** rng.uniform(-2, 2)
        k, monotonic = int(rng.integers(1, 6)), bool(rng.integers(2))
        target = PureDP(budget) if measure == "pure" else ZCDP(budget)
        try:
            scale = noisy_max_scale(target, sensitivity=sensitivity, noise=noise,
                                    monotonic=monotonic, k=k)
        except ValueError:
            continue  # this noise does not give that measure: refused, not miscalibrated
        spent = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise,
                                  monotonic=monotonic, k=k, measure=measure)
        spent_value = spent.epsilon if measure == "pure" else spent.rho
        assert spent_value <= budget
        assert spent_value == pytest.approx(budget, rel=1e-14)
        checked += 1
    assert checked > 900


def test_noise_units_never_round_the_budget_up():
    """ε/(cΔ) and 1/scale are rounded down, so the noise is never a hair short of its claim."""
    from fractions import Fraction

    from dpcore.selection import _ratio_at_most, _standardized_logits

    rng = np.random.default_rng(31)
    rounded_up = 0
    for _ in range(3000):
        epsilon, sensitivity = 10 ** rng.uniform(-3, 1.5), 10 ** rng.uniform(-2, 2)
        monotonic = bool(rng.integers(2))
        c_delta = (1 if monotonic else 2) * sensitivity
        rounded_up += Fraction(epsilon / c_delta) * Fraction(c_delta) > Fraction(epsilon)
        # the logit of a score one below the best is −factor
        factor = -_standardized_logits([0.0, -1.0], epsilon, sensitivity, monotonic)[1]
        assert Fraction(factor) * Fraction(c_delta) <= Fraction(epsilon)
        assert factor >= math.nextafter(epsilon / c_delta, 0.0)
        inverse = _ratio_at_most(1.0, sensitivity)
        assert Fraction(inverse) * Fraction(sensitivity) <= 1
    assert rounded_up > 300  # plain division does round up often


@pytest.mark.parametrize("measure", ["pure", "zcdp"])
def test_noisy_max_privacy_never_reads_below_the_exact_loss(measure):
    """ε = k·c·Δ/scale (ρ = k·(c·Δ/scale)²/8 or /2) rounded up, never down: at ε = 0.37 the
    float quotient 2/scale rounded down to 0.37 while the exact loss, and OpenDP's map, were
    0.37000000000000005 — a claim one ulp below the loss, and a real release refused."""
    rng = np.random.default_rng(5)
    below = 0
    for _ in range(2000):
        budget, sensitivity = 10 ** rng.uniform(-3, 1.5), 10 ** rng.uniform(-2, 2)
        k, monotonic = int(rng.integers(1, 6)), bool(rng.integers(2))
        noise = NOISE_TYPES[int(rng.integers(3))]
        target = PureDP(budget) if measure == "pure" else ZCDP(budget)
        scale = noisy_max_scale(target, sensitivity=sensitivity, noise=noise,
                                monotonic=monotonic, k=k)
        spent = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise,
                                  monotonic=monotonic, k=k, measure=measure)
        c = Fraction(1 if monotonic else 2)
        ratio = c * Fraction(sensitivity) / Fraction(scale)
        if measure == "pure":
            exact, claimed = k * ratio, spent.epsilon
        else:
            exact = k * ratio * ratio / (8 if noise == "gumbel" else 2)
            claimed = spent.rho
        below += Fraction(claimed) < exact
        assert Fraction(claimed) >= exact
        assert Fraction(budget) >= exact  # the scale spends at most the target, exactly
    assert below == 0
