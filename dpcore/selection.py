"""Private selection: report noisy max, noisy top-k, the exponential mechanism, permute-and-flip.

Also their privacy maps (and inverses) and the exact probability that each candidate is selected.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import (
    MAX_BLOCK_ELEMENTS,
    MAX_TRIALS,
    check_choice,
    check_int,
    check_positive,
    check_returned_size,
    check_rng,
    check_trials,
    finite_array,
    trial_chunks,
)
from dpcore.measures import ZCDP, PureDP
from dpcore.sampling import standard_exponential, standard_gumbel, standard_laplace

__all__ = [
    "NOISE_TYPES",
    "NOISE_LABELS",
    "report_noisy_max",
    "noisy_top_k",
    "noisy_max_privacy",
    "noisy_max_scale",
    "exponential_mechanism",
    "permute_and_flip",
    "selection_probabilities",
    "prob_best_selected",
    "prob_top_k_recovered",
    "expected_score_gap",
]

#: The noise distributions report noisy max can add to the scores.
NOISE_TYPES = ("laplace", "exponential", "gumbel")
#: One name per noise, everywhere (pickers, sentences, the release plan, a release's
#: description): the mechanism it makes, then its noise. Exponential noise is permute-and-flip
#: and Gumbel noise the exponential mechanism, so neither is called "exponential" alone.
NOISE_LABELS = {
    "laplace": "Report noisy max (Laplace noise)",
    "exponential": "Permute-and-flip (exponential noise)",
    "gumbel": "Exponential mechanism (Gumbel noise)",
}
_MEASURES = ("pure", "zcdp")

# Quadrature for selection_probabilities, in units of the noise scale. Beyond WINDOW scale
# units from the best score the integrands are below e^-40 (see the private helpers), so the
# truncation error is ~1e-17. Panels have GL_NODES Gauss-Legendre nodes each and are at most
# LAPLACE_PANEL wide (the exponential-noise integrand is entire in z, so wider panels do); where
# a probability is non-negligible the log-integrand has derivatives of order tens, so this is
# accurate to ~1e-14 (checked against scipy.integrate.quad and exact forms in the tests).
_WINDOW = 40.0
_LAPLACE_PANEL = 0.25
_EXPONENTIAL_PANEL = 1.0
_GL_NODES = 10
# Terms kept in the series log(1 - a) = -sum a^n / n and a / (1 - a) = sum a^n, a <= 1/2:
# the remainder is below 2^-60 ≈ 9e-19 per candidate.
_SERIES_TERMS = 60
# Gaps (in noise scales) beyond which selection_probabilities treats a candidate as never
# selected; its probability underflows to 0 long before.
_NEVER = 1e3


# ----------------------------------------------------------------------------------------------
# validation


def _check_flag(name: str, value: object) -> bool:
    """A plain bool (numpy bools too): a truthy string or number is a likely mistake."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return bool(value)


def _check_scores(scores: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    arr = finite_array(name, scores, min_size=1)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a one-dimensional vector, got shape {arr.shape}")
    return arr


def _oriented(scores: ArrayLike, negate: object, name: str = "scores") -> NDArray[np.float64]:
    """The scores to maximise: negated when the smallest score is wanted."""
    arr = _check_scores(scores, name)
    return -arr if _check_flag("negate", negate) else arr


def _folds(k: int) -> float:
    """k as a float (a count of rounds beyond float64, such as 10**400, is refused)."""
    try:
        return float(k)
    except OverflowError:
        raise ValueError(f"k is too large ({k.bit_length()} bits)") from None


def _positive_finite(value: float, what: str) -> float:
    """A privacy loss or noise scale computed from valid inputs, if float64 can hold it."""
    if not 0 < value < math.inf:
        raise ValueError(f"{what} = {value:g} is no positive finite number in float64")
    return value


# ----------------------------------------------------------------------------------------------
# sampling

# Candidates more than this many noise scales below the best are tied there: each is selected
# with probability below e^-(1e300) anyway, and the floor keeps noisy values finite, leaving
# -inf free to mark candidates already chosen.
_FAR_BELOW = -1e300


def _ratio_at_most(numerator: float, denominator: float) -> float:
    """numerator / denominator, rounded down: the float quotient lowered by an ulp when it
    rounded up, so that noise in units of 1/quotient is never less than the exact amount
    (a factor of ε/(cΔ) or 1/scale that rounded up would spend a hair more than ε)."""
    quotient = numerator / denominator
    if 0 < quotient < math.inf and math.isfinite(denominator) and (
            Fraction(quotient) * Fraction(denominator) > Fraction(numerator)):
        quotient = math.nextafter(quotient, 0.0)
    return quotient


def _gaps_in_noise_units(values: NDArray[np.float64], factor: float) -> NDArray[np.float64]:
    """(values − max)·factor, factor = 1/scale: the best at 0, the rest in [_FAR_BELOW, 0].

    Adding standard noise to these never overflows, whatever the scores and the scale; the
    argmax is that of values + scale·noise.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        gaps = (values - values.max()) * factor
    # NaN is 0·inf (the best, when factor overflowed) or inf·0 (a gap beyond float64 times a
    # factor that underflowed): both are gaps of 0 in the limit.
    return np.maximum(np.where(np.isnan(gaps), 0.0, gaps), _FAR_BELOW)


#: Standard noise of each type, from dpcore.sampling's exact samplers (a Laplace draw is a
#: random sign times an exponential one, a Gumbel draw −log of an exponential one).
_SAMPLERS: dict[str, Callable[..., NDArray[np.float64]]] = {
    "laplace": standard_laplace,
    "exponential": standard_exponential,
    "gumbel": standard_gumbel,
}


def _draw_noise(
    noise: str, scale: float, size: tuple[int, int], rng: np.random.Generator
) -> NDArray[np.float64]:
    draws = _SAMPLERS[noise](size, rng=rng)
    if scale != 1.0:
        draws *= scale
    return draws


def _noisy_argmax(
    values: NDArray[np.float64], scale: float, noise: str, trials: int | None,
    rng: np.random.Generator,
) -> int | NDArray[np.int64]:
    """argmax(values + noise), once or for ``trials`` independent draws (chunked)."""
    d = values.size
    if trials is None:
        noisy = values + _draw_noise(noise, scale, (1, d), rng)[0]
        return int(np.argmax(noisy))
    chunks = trial_chunks(trials, d)  # refuses oversized work before anything is allocated
    check_returned_size(trials, 1)
    winners = np.empty(trials, dtype=np.int64)
    start = 0
    for chunk in chunks:
        noisy = _draw_noise(noise, scale, (chunk, d), rng)
        noisy += values
        winners[start:start + chunk] = np.argmax(noisy, axis=1)
        start += chunk
    return winners


def report_noisy_max(
    scores: ArrayLike,
    *,
    scale: float,
    noise: str,
    negate: bool = False,
    trials: int | None = None,
    rng: np.random.Generator,
) -> int | NDArray[np.int64]:
    """Index of the largest score after adding independent noise of the given scale to each.

    Parameters
    ----------
    scores : array_like, shape (d,)
        One finite score per candidate (d >= 1).
    scale : float
        Noise scale b > 0 (Laplace b, exponential mean b, Gumbel scale b). Use
        :func:`noisy_max_scale` to get it from a privacy target.
    noise : {"laplace", "exponential", "gumbel"}
        Noise distribution. Exponential noise is permute-and-flip (McKenna & Sheldon 2021);
        Gumbel noise is the exponential mechanism.
    negate : bool
        Select the smallest score instead.
    trials : int, optional
        Number of independent releases to simulate; ``None`` for one release.
    rng : numpy.random.Generator

    Returns
    -------
    int or ndarray of int64, shape (trials,)

    References
    ----------
    C. Dwork, A. Roth. *The Algorithmic Foundations of Differential Privacy*, 2014, §3.3.
    R. McKenna, D. Sheldon. "Permute-and-Flip: A new mechanism for differentially private
    selection." NeurIPS 2020. arXiv:2010.12603.
    """
    values = _oriented(scores, negate)
    scale = check_positive("scale", scale)
    noise = check_choice("noise", noise, NOISE_TYPES)
    trials = check_trials(trials)
    rng = check_rng(rng)
    gaps = _gaps_in_noise_units(values, _ratio_at_most(1.0, scale))
    return _noisy_argmax(gaps, 1.0, noise, trials, rng)


def _top_k_block(
    values: NDArray[np.float64], k: int, scale: float, noise: str, chunk: int,
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """Ordered top-k indices for ``chunk`` independent releases, shape (chunk, k)."""
    d = values.size
    if noise == "gumbel":
        # One shot: the k largest of one noisy vector, in decreasing order. Equivalent to k
        # rounds of the exponential mechanism without replacement (Durfee & Rogers 2019).
        noisy = _draw_noise(noise, scale, (chunk, d), rng)
        noisy += values
        top = np.argpartition(-noisy, k - 1, axis=1)[:, :k]
        order = np.argsort(-np.take_along_axis(noisy, top, axis=1), axis=1, kind="stable")
        return np.take_along_axis(top, order, axis=1)
    # Peeling: k rounds of report noisy max with fresh noise, each over the candidates not yet
    # chosen. With exponential noise each round is permute-and-flip (as OpenDP peels).
    chosen = np.empty((chunk, k), dtype=np.int64)
    taken = np.zeros((chunk, d), dtype=bool)
    rows = np.arange(chunk)
    for r in range(k):
        noisy = _draw_noise(noise, scale, (chunk, d), rng)
        noisy += values
        noisy[taken] = -np.inf
        winner = np.argmax(noisy, axis=1)
        chosen[:, r] = winner
        taken[rows, winner] = True
    return chosen


def noisy_top_k(
    scores: ArrayLike,
    k: int,
    *,
    scale: float,
    noise: str,
    negate: bool = False,
    trials: int | None = None,
    rng: np.random.Generator,
) -> NDArray[np.int64]:
    """The indices of the k largest noisy scores, best first.

    Laplace and exponential noise peel: k rounds of report noisy max, each with fresh noise
    over the candidates not chosen yet. Gumbel noise is one shot: the top k of one noisy
    vector, which has the same distribution as peeling the exponential mechanism.

    Parameters
    ----------
    scores : array_like, shape (d,)
    k : int
        Number of candidates to select, 1 <= k <= d.
    scale, noise, negate, trials, rng
        As in :func:`report_noisy_max`.

    Returns
    -------
    ndarray of int64, shape (k,) or (trials, k)
        Distinct indices in the order they were selected.

    References
    ----------
    D. Durfee, R. Rogers. "Practical Differentially Private Top-k Selection with
    Pay-what-you-get Composition." NeurIPS 2019. arXiv:1905.04273.
    """
    values = _oriented(scores, negate)
    k = check_int("k", k, minimum=1, maximum=values.size)
    scale = check_positive("scale", scale)
    noise = check_choice("noise", noise, NOISE_TYPES)
    trials = check_trials(trials)
    rng = check_rng(rng)
    values, scale = _gaps_in_noise_units(values, _ratio_at_most(1.0, scale)), 1.0
    if trials is None:
        return _top_k_block(values, k, scale, noise, 1, rng)[0]
    chunks = trial_chunks(trials, values.size)
    check_returned_size(trials, k)
    out = np.empty((trials, k), dtype=np.int64)
    start = 0
    for chunk in chunks:
        out[start:start + chunk] = _top_k_block(values, k, scale, noise, chunk, rng)
        start += chunk
    return out


# ----------------------------------------------------------------------------------------------
# privacy maps


def _range_factor(monotonic: bool) -> float:
    # A change of at most `sensitivity` in every score moves the gap between two scores by up to
    # 2·sensitivity, or by at most 1·sensitivity when all scores move in the same direction.
    return 1.0 if monotonic else 2.0


def noisy_max_privacy(
    scale: float,
    *,
    sensitivity: float = 1.0,
    noise: str,
    monotonic: bool = False,
    k: int = 1,
    measure: str = "pure",
) -> PureDP | ZCDP:
    """Privacy loss of report noisy max (k = 1) or noisy top-k with noise of the given scale.

    With c = 2 (c = 1 for monotonic scores, where all scores of a neighbouring dataset move
    in one direction) and Δ the L∞ sensitivity of the score vector:

    - pure DP, any noise: ε = k · c·Δ / scale;
    - zCDP, Gumbel noise (exponential mechanism, which is ε-bounded-range): ρ = k · (c·Δ /
      scale)² / 8;
    - zCDP, Laplace or exponential noise: what the pure-DP figure implies, ρ = ε² / 2 with
      ε = k · c·Δ / scale, i.e. ρ = k² · (c·Δ / scale)² / 2. The bounded-range ε²/8 rule does
      not apply to them. (Composing the k rounds in zCDP would give the smaller k · ε₁² / 2,
      but OpenDP 0.16 certifies the k picks of ``make_noisy_top_k`` as one kε₁-DP
      measurement, and a release records OpenDP's certificate: a page that charged k·ε₁²/2
      offered what the release refused. For k = 1 the two agree.)

    These agree with OpenDP 0.16's ``make_noisy_max`` / ``make_noisy_top_k`` (MaxDivergence
    → exponential noise, ZeroConcentratedDivergence → Gumbel noise), the pure-DP map turned
    into zCDP by ρ = ε²/2 for exponential noise (as ``release.measurements`` certifies it).

    Parameters
    ----------
    scale : float
        Noise scale > 0.
    sensitivity : float
        L∞ sensitivity Δ > 0 of the score vector (the most any one score can change).
    noise : {"laplace", "exponential", "gumbel"}
    monotonic : bool
        True when, between neighbouring datasets, all scores change in the same direction.
    k : int
        Number of selected candidates (1 for report noisy max).
    measure : {"pure", "zcdp"}

    Returns
    -------
    PureDP or ZCDP

    References
    ----------
    M. Cesar, R. Rogers. "Bounding, Concentrating, and Truncating: Unifying Privacy Loss
    Composition for Data Analytics." ALT 2021. arXiv:2004.07223.
    R. McKenna, D. Sheldon. "Permute-and-Flip." NeurIPS 2020. arXiv:2010.12603.
    """
    scale = check_positive("scale", scale)
    sensitivity = check_positive("sensitivity", sensitivity)
    noise = check_choice("noise", noise, NOISE_TYPES)
    monotonic = _check_flag("monotonic", monotonic)
    k = check_int("k", k, minimum=1)
    measure = check_choice("measure", measure, _MEASURES)
    c = _range_factor(monotonic)
    eps_round = c * sensitivity / scale
    # Products, not **: a float power raises OverflowError where a product gives inf.
    if measure == "pure":
        epsilon = _positive_finite(_folds(k) * eps_round, "epsilon = k·c·sensitivity / scale")
        exact = k * Fraction(c) * Fraction(sensitivity) / Fraction(scale)
        return PureDP(_at_least_exact(epsilon, exact))
    ratio = Fraction(c) * Fraction(sensitivity) / Fraction(scale)
    if noise == "gumbel":
        per_round = eps_round * eps_round / 8
        rho = _positive_finite(_folds(k) * per_round, "rho from k, sensitivity and scale")
        return ZCDP(_at_least_exact(rho, k * ratio * ratio / 8))
    # the k picks as one kε₁-DP measurement (OpenDP's map), then ρ = ε²/2
    epsilon = _folds(k) * eps_round
    rho = _positive_finite(epsilon * epsilon / 2, "rho from k, sensitivity and scale")
    return ZCDP(_at_least_exact(rho, k * k * ratio * ratio / 2))


def _at_least_exact(value: float, exact: Fraction) -> float:
    """``value`` raised ulp by ulp until it is at least ``exact``: a loss computed in floats
    can round below the exact one, and a privacy figure must never read smaller than it is
    (nor smaller than OpenDP's map, which rounds outward)."""
    while Fraction(value) < exact:
        value = math.nextafter(value, math.inf)
    return _positive_finite(value, "the privacy loss")


def noisy_max_scale(
    privacy: PureDP | ZCDP,
    *,
    sensitivity: float = 1.0,
    noise: str,
    monotonic: bool = False,
    k: int = 1,
) -> float:
    """The noise scale at which :func:`noisy_max_privacy` equals ``privacy`` (its inverse).

    Pure DP: scale = k·c·Δ / ε. zCDP with Gumbel noise: scale = c·Δ·sqrt(k / (8ρ)); with
    Laplace or exponential noise, through ε = sqrt(2ρ) for the k picks: scale = k·c·Δ / ε.
    (c = 2, or 1 for monotonic scores.)
    """
    if not isinstance(privacy, PureDP | ZCDP):
        raise TypeError(f"privacy must be PureDP or ZCDP, got {type(privacy).__name__}")
    sensitivity = check_positive("sensitivity", sensitivity)
    noise = check_choice("noise", noise, NOISE_TYPES)
    monotonic = _check_flag("monotonic", monotonic)
    k = check_int("k", k, minimum=1)
    range_sens = _range_factor(monotonic) * sensitivity
    folds = _folds(k)
    if isinstance(privacy, PureDP):
        scale = folds * range_sens / privacy.epsilon
        measure, budget = "pure", privacy.epsilon
    elif noise == "gumbel":
        scale = range_sens * math.sqrt(folds / (8 * privacy.rho))
        measure, budget = "zcdp", privacy.rho
    else:
        scale = folds * range_sens / math.sqrt(2 * privacy.rho)
        measure, budget = "zcdp", privacy.rho
    scale = _positive_finite(scale, "the noise scale from k, sensitivity and privacy")
    # Rounding can leave the privacy of this scale an ulp above the target: raise the scale
    # until noisy_max_privacy itself confirms the target.
    while True:
        spent = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise,
                                  monotonic=monotonic, k=k, measure=measure)
        if (spent.epsilon if measure == "pure" else spent.rho) <= budget:
            return scale
        scale = math.nextafter(scale, math.inf)


# ----------------------------------------------------------------------------------------------
# the exponential mechanism and permute-and-flip, from epsilon


def _standardized_logits(
    utilities: ArrayLike, epsilon: float, sensitivity: float, monotonic: bool
) -> NDArray[np.float64]:
    """ε·(u − max u)/(cΔ): shifted so the best is 0, so nothing overflows however large ε·u."""
    u = _check_scores(utilities, "utilities")
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    monotonic = _check_flag("monotonic", monotonic)
    # Subtract before multiplying: u − max is <= 0, so a huge product cannot overflow upwards.
    factor = _ratio_at_most(epsilon, _range_factor(monotonic) * sensitivity)
    return _gaps_in_noise_units(u, factor)


def exponential_mechanism(
    utilities: ArrayLike,
    *,
    epsilon: float,
    sensitivity: float,
    monotonic: bool = False,
    trials: int | None = None,
    rng: np.random.Generator,
) -> int | NDArray[np.int64]:
    """Sample index i with probability proportional to exp(ε·u_i / (2Δ)) (ε·u_i/Δ if monotonic).

    Sampled by the Gumbel-max trick on the log-weights (shifted by their maximum), so it never
    exponentiates: ε·u of 1e6 or more works without overflow or NaN. ε-DP.

    Parameters
    ----------
    utilities : array_like, shape (d,)
    epsilon : float
        Privacy loss ε > 0.
    sensitivity : float
        L∞ sensitivity Δ > 0 of the utilities.
    monotonic : bool
        True when all utilities move in one direction between neighbouring datasets.
    trials : int, optional
    rng : numpy.random.Generator

    Returns
    -------
    int or ndarray of int64, shape (trials,)

    References
    ----------
    F. McSherry, K. Talwar. "Mechanism Design via Differential Privacy." FOCS 2007.
    """
    logits = _standardized_logits(utilities, epsilon, sensitivity, monotonic)
    trials = check_trials(trials)
    rng = check_rng(rng)
    return _noisy_argmax(logits, 1.0, "gumbel", trials, rng)


def permute_and_flip(
    utilities: ArrayLike,
    *,
    epsilon: float,
    sensitivity: float,
    monotonic: bool = False,
    trials: int | None = None,
    rng: np.random.Generator,
) -> int | NDArray[np.int64]:
    """Permute-and-flip selection (McKenna & Sheldon 2020), ε-DP.

    Implemented, vectorized, as its equivalent form: report noisy max with exponential noise of
    scale 2Δ/ε (Δ/ε when monotonic) — McKenna & Sheldon show the two have the same output
    distribution. Works on utilities shifted by their maximum, so ε·u of 1e6 is fine.

    Parameters
    ----------
    utilities, epsilon, sensitivity, monotonic, trials, rng
        As in :func:`exponential_mechanism`.

    Returns
    -------
    int or ndarray of int64, shape (trials,)

    References
    ----------
    R. McKenna, D. Sheldon. "Permute-and-Flip: A new mechanism for differentially private
    selection." NeurIPS 2020. arXiv:2010.12603.
    """
    logits = _standardized_logits(utilities, epsilon, sensitivity, monotonic)
    trials = check_trials(trials)
    rng = check_rng(rng)
    return _noisy_argmax(logits, 1.0, "exponential", trials, rng)


# ----------------------------------------------------------------------------------------------
# exact selection probabilities


def _log1mexp(v: NDArray[np.float64]) -> NDArray[np.float64]:
    """log(1 − e^v) for v < 0, accurate at both ends (Mächler 2012)."""
    with np.errstate(divide="ignore"):
        near_zero = v > -math.log(2)
        return np.where(
            near_zero,
            np.log(-np.expm1(np.where(near_zero, v, -1.0))),
            np.log1p(-np.exp(np.where(near_zero, -1.0, v))),
        )


def _gauss_legendre_grid(breakpoints: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
    """Nodes (increasing) and weights of composite Gauss-Legendre over sorted breakpoints."""
    edges = np.unique(breakpoints)
    lo, hi = edges[:-1], edges[1:]
    t, w = np.polynomial.legendre.leggauss(_GL_NODES)
    half = (hi - lo)[:, None] / 2
    nodes = (lo[:, None] + half * (t + 1)).ravel()
    weights = (half * w).ravel()
    return nodes, weights


def _softmax(x: NDArray[np.float64]) -> NDArray[np.float64]:
    w = np.exp(x - x.max())
    return w / w.sum()


def _exponential_noise_probabilities(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(i) for noise Exp(1) on standardized scores x (max 0).

    The best noisy value is at least max x = 0, so
    P(i) = ∫_0^∞ e^{x_i − z} Π_{j≠i} (1 − e^{x_j − z}) dz, an entire function of z with no
    kinks (for z >= 0 every factor is in its smooth branch). Beyond z = 40 the integrand is
    below e^{-40}. Products are taken in log space: log Π_{j} once per node, minus the own term.
    (Substituting t = e^{-z} gives ∫_0^1 q_i Π_{j≠i}(1 − q_j t) dt, q = e^x, the
    permute-and-flip formula.)
    """
    d = x.size
    edges = np.arange(0.0, _WINDOW + _EXPONENTIAL_PANEL, _EXPONENTIAL_PANEL)
    nodes, weights = _gauss_legendre_grid(edges)
    probs = np.zeros(d)
    rows = max(1, MAX_BLOCK_ELEMENTS // d)
    for start in range(0, nodes.size, rows):
        z = nodes[start:start + rows, None]
        w = weights[start:start + rows, None]
        gap = x[None, :] - z  # < 0 at every node
        log_cdf = _log1mexp(gap)
        log_all = log_cdf.sum(axis=1, keepdims=True)
        probs += (w * np.exp(gap + log_all - log_cdf)).sum(axis=0)
    return probs


def _laplace_noise_probabilities(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(i) for noise Laplace(1) on standardized scores x (max 0), in O((nodes + d)·60) time.

    P(i) = ∫ f(z − x_i) Π_{j≠i} F(z − x_j) dz = ∫ h(z − x_i) R(z) dz with R = Π_j F(z − x_j)
    (the CDF of the best noisy score) and h = f/F = 1 for u < 0, a/(1 − a) = Σ_n a^n for u >= 0,
    a = e^{-u}/2 <= 1/2. So with sorted scores and sorted quadrature nodes z_k (weights w_k):

        P(i) = Σ_{z_k < x_i} w_k R_k + Σ_n 2^{-n} e^{n x_i} Σ_{z_k > x_i} w_k R_k e^{-n z_k}

    — a prefix sum and, per n, a suffix log-sum-exp. Likewise log R(z) = Σ_{x_j > z}(z − x_j −
    log 2) − Σ_n (2^{-n}/n) e^{-n z} Σ_{x_j <= z} e^{n x_j}, from suffix sums and prefix
    log-sum-exps over the sorted scores. Every score within the window is a breakpoint of the
    quadrature, so h's kink at x_i and R's at every x_j fall on panel edges. Outside
    [-40, 40] the integrands are below e^{-40}.
    """
    d = x.size
    xs = np.sort(x)
    in_window = xs[xs > -_WINDOW]
    ticks = np.arange(-_WINDOW, _WINDOW + _LAPLACE_PANEL, _LAPLACE_PANEL)
    nodes, weights = _gauss_legendre_grid(np.concatenate([ticks, in_window]))

    # log R at the nodes. Nodes never coincide with a score in the window (scores are panel
    # edges), so "above" and "below" are unambiguous.
    below = np.searchsorted(xs, nodes, side="right")  # how many scores are <= z
    with np.errstate(over="ignore"):  # only sums reaching far below the window can overflow
        suffix = np.concatenate([np.cumsum(xs[::-1])[::-1], [0.0]])  # summed from the top down
    log_r = (d - below) * (nodes - math.log(2)) - suffix[below]
    for n in range(1, _SERIES_TERMS + 1):
        prefix_lse = np.concatenate([[-np.inf], np.logaddexp.accumulate(n * xs)])
        log_r -= 2.0**-n / n * np.exp(prefix_lse[below] - n * nodes)

    # P(i), evaluated for the sorted scores and then put back in the caller's order.
    mass = weights * np.exp(log_r)
    split = np.searchsorted(nodes, xs)  # first node above each score
    probs = np.concatenate([[0.0], np.cumsum(mass)])[split]
    with np.errstate(divide="ignore"):  # a panel between two scores 1 ulp apart has weight 0
        log_mass = np.log(weights) + log_r
    with np.errstate(under="ignore"):
        for n in range(1, _SERIES_TERMS + 1):
            terms = (log_mass - n * nodes)[::-1]
            suffix_lse = np.concatenate([np.logaddexp.accumulate(terms)[::-1], [-np.inf]])
            probs += 2.0**-n * np.exp(n * xs + suffix_lse[split])
    out = np.empty(d)
    out[np.argsort(x, kind="stable")] = probs
    return out


_PROBABILITIES: dict[str, Callable[[NDArray[np.float64]], NDArray[np.float64]]] = {
    "gumbel": _softmax,
    "exponential": _exponential_noise_probabilities,
    "laplace": _laplace_noise_probabilities,
}


def selection_probabilities(
    scores: ArrayLike, *, scale: float, noise: str, negate: bool = False
) -> NDArray[np.float64]:
    """Exact probability that :func:`report_noisy_max` selects each candidate.

    - Gumbel noise: softmax(score / scale) (the exponential mechanism), closed form.
    - Exponential noise: P(i) = ∫_0^1 q_i Π_{j≠i}(1 − q_j t) dt with q_j = e^{(s_j − max s)/b}
      (the permute-and-flip probability), integrated in z = −log t by composite
      Gauss-Legendre quadrature with log-space products.
    - Laplace noise: P(i) = ∫ f(z − s_i) Π_{j≠i} F(z − s_j) dz by composite Gauss-Legendre
      quadrature with every score as a panel edge, evaluated through series expansions in
      time linear in the number of nodes and candidates (after a sort).

    Both integrals are accurate to about 1e-12 (tests check 1e-9 against scipy's ``quad`` and
    exact forms); 10^4 candidates take well under a second (see bench/bench_selection.py).

    Parameters
    ----------
    scores : array_like, shape (d,)
    scale : float
        Noise scale b > 0.
    noise : {"laplace", "exponential", "gumbel"}
    negate : bool
        Probabilities of selecting the smallest score instead.

    Returns
    -------
    ndarray, shape (d,)
        Non-negative, summing to 1.

    References
    ----------
    R. McKenna, D. Sheldon. "Permute-and-Flip." NeurIPS 2020. arXiv:2010.12603.
    """
    values = _oriented(scores, negate)
    scale = check_positive("scale", scale)
    noise = check_choice("noise", noise, NOISE_TYPES)
    # Standardize: scores in noise-scale units, best at 0. A candidate more than _NEVER scales
    # below the best has probability below e^-745, which is 0 in float64 for every noise:
    # flooring its gap there is exact, and keeps the series below from overflowing.
    with np.errstate(over="ignore"):
        x = np.maximum((values - values.max()) / scale, -_NEVER)
    return np.clip(_PROBABILITIES[noise](x), 0.0, 1.0)


def prob_best_selected(
    scores: ArrayLike, *, scale: float, noise: str, negate: bool = False
) -> float:
    """Probability that report noisy max selects a best candidate (any of them, if tied)."""
    values = _oriented(scores, negate)
    probs = selection_probabilities(values, scale=scale, noise=noise)
    return float(min(1.0, probs[values == values.max()].sum()))


def expected_score_gap(
    scores: ArrayLike, *, scale: float, noise: str, negate: bool = False
) -> float:
    """E[best score − selected score] for report noisy max (>= 0; for ``negate``, selected −
    smallest), from the exact selection probabilities."""
    values = _oriented(scores, negate)
    probs = selection_probabilities(values, scale=scale, noise=noise)
    with np.errstate(over="ignore"):
        gaps = values.max() - values
    if np.isinf(gaps).any():  # scores spanning more than float64 (±1e308): halve first
        gap = 2 * float(np.dot(probs, values.max() / 2 - values / 2))
    else:
        gap = float(np.dot(probs, gaps))
    if not gap < math.inf:
        raise ValueError("the expected gap between the best and the selected score overflows "
                         "float64: scores span too much at this scale")
    return max(0.0, gap)


def prob_top_k_recovered(
    scores: ArrayLike,
    k: int,
    *,
    scale: float,
    noise: str,
    negate: bool = False,
    trials: int = 10_000,
    rng: np.random.Generator,
) -> float:
    """Monte Carlo estimate of P(the k selected candidates are a true top-k set), order ignored.

    Exact values need a (k-1)-fold integral, so this simulates ``trials`` releases of
    :func:`noisy_top_k`; the standard error is at most 0.5/sqrt(trials) (0.005 at the default).
    Fix ``rng``'s seed for reproducible numbers. With ties at the k-th score, any k candidates
    whose scores are the k largest scores (as a multiset) count as recovered.
    """
    values = _oriented(scores, negate)
    k = check_int("k", k, minimum=1, maximum=values.size)
    trials = check_int("trials", trials, minimum=1, maximum=MAX_TRIALS)
    chosen = noisy_top_k(values, k, scale=scale, noise=noise, trials=trials, rng=rng)
    true_top = np.sort(values)[values.size - k:]
    return float(np.mean(np.all(np.sort(values[chosen], axis=1) == true_top, axis=1)))
