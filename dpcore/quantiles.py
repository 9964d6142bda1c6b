"""Quantiles by report noisy min over a public grid of candidates, with exact accuracy.

OpenDP 0.16's quantile scores (ties and all) with its sensitivity, and the exact law of what a
release draws from them (Gumbel noise: the exponential mechanism; exponential noise:
permute-and-flip); also binned histograms of a numeric column over declared bin edges.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import (
    check_choice,
    check_finite,
    check_int,
    check_positive,
    check_real,
    check_rng,
    check_trials,
    finite_array,
    numeric_array,
)
from dpcore.measures import ZCDP, PureDP
from dpcore.selection import (
    NOISE_TYPES,
    noisy_max_scale,
    report_noisy_max,
    selection_probabilities,
)

__all__ = [
    "MAX_CANDIDATES",
    "MAX_QUANTILES",
    "MAX_ROWS_CANDIDATE",
    "MAX_BINS",
    "OUTSIDE",
    "ALPHA_DENOMINATOR",
    "quantile_fraction",
    "quantile_scores",
    "candidate_counts",
    "quantile_sensitivity",
    "quantile_scale",
    "rank_errors",
    "quantile_probabilities",
    "quantile_law",
    "probability_within",
    "true_quantile",
    "quantile_accuracy",
    "expected_rank_error",
    "sample_quantile",
    "split_quantile_budget",
    "private_quantiles",
    "max_rows_scores",
    "rows_quantile_probabilities",
    "sample_max_rows",
    "bin_indices",
    "bin_labels",
    "binned_counts",
]

#: Most candidates one quantile may score (each costs a few float64 per call).
MAX_CANDIDATES = 10**7
#: Most bins a binned histogram may have.
MAX_BINS = 10**5
#: What happens to values outside the bin edges: counted apart in a bin below and a bin
#: above ("separate"), or put in the first and last bin ("clamp").
OUTSIDE = ("separate", "clamp")

#: Most quantiles released together (each is one exponential mechanism over the candidates).
MAX_QUANTILES = 1000
#: Largest candidate for a DP quantile of rows per person (candidates 1..K).
MAX_ROWS_CANDIDATE = 10**5

# The largest max_rows (rows per person) a quantile's sensitivity is scaled by.
_MAX_ROWS = 10**9
#: OpenDP 0.16 reads a quantile level q as the fraction num/den: q itself when q's own
#: denominator is below this, else q·10^4 truncated, over 10^4 (:func:`quantile_fraction`).
ALPHA_DENOMINATOR = 10_000
_U64_MAX = 2**64 - 1


# ---------------------------------------------------------------------------------------------
# validation


def _check_values(values: ArrayLike, name: str = "values") -> NDArray[np.float64]:
    arr = finite_array(name, values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return arr


def _check_candidates(candidates: ArrayLike) -> NDArray[np.float64]:
    arr = finite_array("candidates", candidates, min_size=1)
    if arr.ndim != 1:
        raise ValueError(f"candidates must be one-dimensional, got shape {arr.shape}")
    if arr.size > MAX_CANDIDATES:
        raise ValueError(f"candidates must hold at most {MAX_CANDIDATES:,} values, got "
                         f"{arr.size:,}")
    return arr


def _check_q(q: object, name: str = "q") -> float:
    value = check_real(name, q)
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must lie in [0, 1], got {value}")
    return value


def _check_weights(counts: ArrayLike | None, size: int, name: str = "counts",
                   of: str = "values") -> NDArray[np.float64] | None:
    """Multiplicities of the values (whole numbers >= 0), or None for one each."""
    if counts is None:
        return None
    arr = finite_array(name, counts)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have one entry per entry of {of} ({size}), got shape "
                         f"{arr.shape}")
    if np.any(arr < 0) or np.any(arr != np.floor(arr)) or np.any(arr > 2.0**53):
        raise ValueError(f"{name} must hold whole numbers >= 0 (how many have each of {of})")
    return arr


def _check_max_rows(max_rows: object) -> int:
    return check_int("max_rows", max_rows, maximum=_MAX_ROWS)


# ---------------------------------------------------------------------------------------------
# OpenDP's scores, their sensitivity, and the noise scale


def quantile_fraction(q: float) -> tuple[int, int]:
    """(num, den): the fraction OpenDP 0.16's ``make_quantile_score_candidates`` reads the level
    ``q`` as, and scores with.

    q itself when its denominator (q is a binary fraction) is below :data:`ALPHA_DENOMINATOR`
    (1/2, 1/4, 0, 1 …); else q·10^4 truncated to an integer, over 10^4 (0.3 → 3000/10000,
    1/3 → 3333/10000, 0.12345 → 1234/10000). The release scores with q' = num/den, so does
    the page.
    """
    q = _check_q(q)
    exact = Fraction(q)
    if exact.denominator < ALPHA_DENOMINATOR:
        return exact.numerator, exact.denominator
    return int(q * float(ALPHA_DENOMINATOR)), ALPHA_DENOMINATOR


def _whole_counts(name: str, counts: ArrayLike) -> NDArray[np.int64]:
    arr = finite_array(name, counts)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr != np.floor(arr)) or np.any(arr > 2.0**53):
        raise ValueError(f"{name} must hold whole numbers from 0 to 2^53")
    return arr.astype(np.int64)


def quantile_scores(below: ArrayLike, equal: ArrayLike, total: int, q: float
                    ) -> NDArray[np.uint64]:
    """OpenDP 0.16's score of each candidate, ``|(den − num)·#{x < c} − num·#{x > c}|`` with
    q' = num/den (:func:`quantile_fraction`): the output of ``make_quantile_score_candidates``
    on the rows, from the counts below and equal to each candidate and the number of values.

    0 for a perfect candidate; a value equal to a candidate counts on neither side. As in
    OpenDP, each count is first capped at (2^64 − 1) // den, so nothing overflows 64 bits.

    Parameters
    ----------
    below : array_like, shape (m,)
        #{x < c} for each candidate c (whole numbers).
    equal : array_like, shape (m,)
        #{x = c} for each candidate.
    total : int
        n, the number of values (>= below + equal).
    q : float
        0 <= q <= 1.

    Returns
    -------
    ndarray of uint64, shape (m,)
    """
    num, den = quantile_fraction(q)
    lt = _whole_counts("below", below)
    eq = _whole_counts("equal", equal)
    if eq.shape != lt.shape:
        raise ValueError(f"equal must have one entry per candidate ({lt.size}), got shape "
                         f"{eq.shape}")
    n = check_int("total", total, minimum=0, maximum=2**62)
    if np.any(lt + eq > n):
        raise ValueError("total must be at least below + equal for every candidate")
    limit = np.uint64(_U64_MAX // den)
    lt_capped = np.minimum(lt.astype(np.uint64), limit)
    gt_capped = np.minimum((n - lt - eq).astype(np.uint64), limit)
    left = np.uint64(den - num) * lt_capped
    right = np.uint64(num) * gt_capped
    return np.where(left >= right, left - right, right - left)


def candidate_counts(values: ArrayLike, candidates: ArrayLike, *,
                     counts: ArrayLike | None = None
                     ) -> tuple[NDArray[np.float64], NDArray[np.float64], float]:
    """(#{x < c}, #{x = c}, n) for each candidate c: what :func:`quantile_scores` reads.

    Sort once and ``searchsorted`` twice (O((n + m) log n), no loop over candidates).
    ``counts`` gives how many rows have each value (whole numbers >= 0); None for one each.
    """
    x = _check_values(values)
    c = _check_candidates(candidates)
    w = _check_weights(counts, x.size)
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    left = np.searchsorted(sorted_x, c, side="left")
    right = np.searchsorted(sorted_x, c, side="right")
    if w is None:
        cumulative = np.arange(x.size + 1, dtype=np.float64)
    else:
        cumulative = np.concatenate([[0.0], np.cumsum(w[order])])
    return cumulative[left], cumulative[right] - cumulative[left], float(cumulative[-1])


def quantile_sensitivity(q: float, *, max_rows: int = 1) -> float:
    """Sensitivity of the rank error (:func:`rank_errors`) under add/remove of one person.

    OpenDP's stability map of its scores at r = ``max_rows`` rows per person (symmetric
    distance r) is r·max(num, den − num) (:func:`quantile_fraction`): a row moves #{x < c} or
    #{x > c} by 1. Over den, in the units of the rank error: r·max(q', 1 − q') — for a level
    OpenDP reads exactly, r·max(q, 1 − q) (½ for the median). Rounded up to a float, never
    below the exact value (OpenDP's map, over den).

    Parameters
    ----------
    q : float
        The quantile, 0 <= q <= 1.
    max_rows : int
        Rows one person may contribute (1: one row per person).

    Returns
    -------
    float
    """
    num, den = quantile_fraction(q)
    r = _check_max_rows(max_rows)
    exact = Fraction(r * max(num, den - num), den)
    sensitivity = float(exact)
    if Fraction(sensitivity) < exact:
        sensitivity = math.nextafter(sensitivity, math.inf)
    return sensitivity


def rank_errors(
    values: ArrayLike, candidates: ArrayLike, q: float, *, counts: ArrayLike | None = None
) -> NDArray[np.float64]:
    """How far each candidate c is from the q-quantile, in ranks: OpenDP's score over den,

    .. math:: |(1 - q')\\,\\#\\{x < c\\} - q'\\,\\#\\{x > c\\}|, \\qquad q' = num/den,

    which is |#{x < c} − q'·n| when no value equals c; values equal to c count on neither
    side (with many ties, the candidate they sit on scores best).

    Parameters
    ----------
    values : array_like, shape (n,)
        The column's values (finite).
    candidates : array_like, shape (m,)
        The public grid (any order; results follow it).
    q : float
        0 <= q <= 1.
    counts : array_like, shape (n,), optional
        How many rows have each value (whole numbers >= 0); None for one each.

    Returns
    -------
    ndarray of float64, shape (m,)
    """
    below, equal, total = candidate_counts(values, candidates, counts=counts)
    _, den = quantile_fraction(q)
    scores = quantile_scores(below, equal, int(total), q)
    return scores.astype(np.float64) / den


def _privacy(epsilon: float | None, rho: float | None) -> PureDP | ZCDP:
    """The quantile's budget: ε (pure DP) or ρ (zCDP), exactly one."""
    if (epsilon is None) == (rho is None):
        raise ValueError("give exactly one of epsilon (pure DP) and rho (zCDP)")
    if rho is None:
        return PureDP(check_positive("epsilon", epsilon))
    return ZCDP(check_positive("rho", rho))


def quantile_scale(
    q: float,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
) -> float:
    """The noise scale (in rank-error units) that one quantile's report noisy min spends
    ``epsilon`` (pure DP) or ``rho`` (zCDP) with: :func:`dpcore.selection.noisy_max_scale`
    at the :func:`quantile_sensitivity`, not monotonic, k = 1 — as a plan builds it.

    Pure DP, any noise: 2Δ/ε. zCDP with Gumbel noise: 2Δ/√(8ρ); with exponential or Laplace
    noise: 2Δ/√(2ρ).
    """
    privacy = _privacy(epsilon, rho)
    noise = check_choice("noise", noise, NOISE_TYPES)
    sensitivity = quantile_sensitivity(q, max_rows=max_rows)
    try:
        return noisy_max_scale(privacy, sensitivity=sensitivity, noise=noise, monotonic=False)
    except ValueError:
        name, value = ("epsilon", epsilon) if rho is None else ("rho", rho)
        raise ValueError(f"{name} = {value:g} is too small: the noise scale 2Δ/{name} "
                         "overflows float64") from None


def quantile_probabilities(
    values: ArrayLike,
    candidates: ArrayLike,
    q: float,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
    counts: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """The exact distribution of the released q-quantile over the candidates: the law of
    argmin(rank error + noise·b), what a release draws.

    The rank errors are OpenDP's scores over den (:func:`rank_errors`), b is
    :func:`quantile_scale` (2Δ/ε under pure DP) and the noise is

    - ``"gumbel"``: the exponential mechanism, closed form

      .. math:: P(c) \\propto \\exp\\Big(-\\frac{\\varepsilon\\,\\mathrm{err}(c)}{2\\Delta}\\Big);

    - ``"exponential"``: permute-and-flip (report noisy max with exponential noise), by
      :func:`dpcore.selection.selection_probabilities`' quadrature;
    - ``"laplace"``: report noisy max with Laplace noise, likewise.

    This is the law of OpenDP 0.16's ``make_quantile_score_candidates`` followed by
    ``make_noisy_max(negate=True)`` at scale den·b (Gumbel under zCDP, exponential noise
    under pure DP), and of :func:`sample_quantile`. Computed in log space: a huge ε·n gives
    the argmin exactly and no NaN.

    Parameters
    ----------
    values : array_like, shape (n,)
        One value per row (finite); with ``max_rows`` = 1, one row per person.
    candidates : array_like, shape (m,)
        The public grid, chosen without looking at the data.
    q : float
        0 <= q <= 1 (0.5 for the median).
    epsilon, rho : float
        The budget of this quantile: ε > 0 (pure DP) or ρ > 0 (zCDP), exactly one.
    noise : {"gumbel", "exponential", "laplace"}
        The noise on the rank errors (default: the exponential mechanism's Gumbel noise).
    max_rows : int
        r: rows one person may contribute (after truncation).
    counts : array_like, shape (n,), optional
        Multiplicities of the values (see :func:`rank_errors`).

    Returns
    -------
    ndarray of float64, shape (m,)
        Sums to 1 (to rounding).

    References
    ----------
    F. McSherry, K. Talwar. "Mechanism Design via Differential Privacy." FOCS 2007.
    A. Smith. "Privacy-Preserving Statistical Estimation with Optimal Convergence Rates."
    STOC 2011.
    R. McKenna, D. Sheldon. "Permute-and-Flip." NeurIPS 2020. arXiv:2010.12603.
    """
    below, equal, total = candidate_counts(values, candidates, counts=counts)
    return quantile_law(below, equal, int(total), q, epsilon=epsilon, rho=rho, noise=noise,
                        max_rows=max_rows)


def quantile_law(
    below: ArrayLike,
    equal: ArrayLike,
    total: int,
    q: float,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
) -> NDArray[np.float64]:
    """:func:`quantile_probabilities` from the counts below and equal to each candidate and
    the number of values (what the engine's rank cells give, and a release scores from):
    the law of argmin(:func:`quantile_scores` / den + noise · :func:`quantile_scale`)."""
    _, den = quantile_fraction(q)
    errors = quantile_scores(below, equal, total, q).astype(np.float64) / den
    scale = quantile_scale(q, epsilon=epsilon, rho=rho, noise=noise, max_rows=max_rows)
    return selection_probabilities(errors, scale=scale, noise=noise, negate=True)


def probability_within(candidates: ArrayLike, probabilities: ArrayLike, center: float,
                       alpha: ArrayLike) -> NDArray[np.float64]:
    """P(|released − center| <= α) for each α, from the candidates' probabilities: sorted
    candidates, cumulative sums, two ``searchsorted`` (no loop over α)."""
    c = _check_candidates(candidates)
    probs = finite_array("probabilities", probabilities)
    if probs.shape != c.shape:
        raise ValueError(f"probabilities must have one entry per candidate ({c.size}), got "
                         f"shape {probs.shape}")
    center = check_finite("center", center)
    a = finite_array("alpha", alpha)
    if np.any(a < 0):
        raise ValueError("alpha must be >= 0")
    order = np.argsort(c, kind="stable")
    sorted_c = c[order]
    cumulative = np.concatenate([[0.0], np.cumsum(probs[order])])
    with np.errstate(over="ignore", invalid="ignore"):
        low, high = center - a, center + a  # ±inf beyond float64 still order correctly
    start = np.searchsorted(sorted_c, low, side="left")
    stop = np.searchsorted(sorted_c, high, side="right")
    return np.clip(cumulative[stop] - cumulative[start], 0.0, 1.0)


def true_quantile(values: ArrayLike, q: float, *, counts: ArrayLike | None = None) -> float:
    """The q-quantile of the values: the smallest x with #{values <= x} >= q·n.

    The inverse of the empirical distribution function (numpy's ``method="inverted_cdf"``; for
    the median of an even number of values, the lower middle one); q = 0 gives the minimum.
    """
    x = _check_values(values)
    q = _check_q(q)
    w = _check_weights(counts, x.size)
    if w is None:
        w = np.ones_like(x)
    keep = w > 0
    x, w = x[keep], w[keep]
    if x.size == 0:
        raise ValueError("values must hold at least one value with a count > 0 (counts "
                         "are all 0, or there are no values)")
    order = np.argsort(x, kind="stable")
    x, cumulative = x[order], np.cumsum(w[order])
    n = cumulative[-1]
    index = int(np.searchsorted(cumulative, q * n, side="left"))
    return float(x[min(index, x.size - 1)])


def quantile_accuracy(
    values: ArrayLike,
    candidates: ArrayLike,
    q: float,
    alpha: ArrayLike,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
    counts: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """P(|released − true quantile| <= α), exactly, for each α.

    The sum of :func:`quantile_probabilities` over the candidates within α of
    :func:`true_quantile` (sorted candidates, cumulative sums, two ``searchsorted``: no loop
    over α). A grid that misses the true quantile by more than α gives 0.

    Parameters
    ----------
    values, candidates, q, epsilon, rho, noise, max_rows, counts
        As in :func:`quantile_probabilities`.
    alpha : array_like
        Half-widths α >= 0 in the values' units (one number or an array).

    Returns
    -------
    ndarray of float64, the shape of ``alpha``
    """
    probs = quantile_probabilities(values, candidates, q, epsilon=epsilon, rho=rho, noise=noise,
                                   max_rows=max_rows, counts=counts)
    truth = true_quantile(values, q, counts=counts)
    return probability_within(candidates, probs, truth, alpha)


def expected_rank_error(
    values: ArrayLike,
    candidates: ArrayLike,
    q: float,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
    counts: ArrayLike | None = None,
) -> float:
    """The expected rank error (:func:`rank_errors`) of the released quantile, exactly (the
    arguments of :func:`quantile_probabilities`)."""
    errors = rank_errors(values, candidates, q, counts=counts)
    probs = quantile_probabilities(values, candidates, q, epsilon=epsilon, rho=rho,
                                   noise=noise, max_rows=max_rows, counts=counts)
    return float(np.dot(probs, errors))


def sample_quantile(
    values: ArrayLike,
    candidates: ArrayLike,
    q: float,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
    counts: ArrayLike | None = None,
    trials: int | None = None,
    rng: np.random.Generator,
) -> float | NDArray[np.float64]:
    """Release the q-quantile: the candidate with the smallest rank error plus noise.

    Same arguments as :func:`quantile_probabilities`, whose distribution this samples (by
    drawing the noise: :func:`dpcore.selection.report_noisy_max` on the rank errors, negated,
    at :func:`quantile_scale`). ``trials`` independent releases on a leading axis, or one.

    Returns
    -------
    float or ndarray of float64, shape (trials,)
        The released candidate value(s).
    """
    errors = rank_errors(values, candidates, q, counts=counts)
    trials = check_trials(trials)
    rng = check_rng(rng)
    scale = quantile_scale(q, epsilon=epsilon, rho=rho, noise=noise, max_rows=max_rows)
    grid = np.asarray(candidates, dtype=np.float64)
    index = report_noisy_max(errors, scale=scale, noise=noise, negate=True, trials=trials,
                             rng=rng)
    return float(grid[index]) if trials is None else grid[index]


def split_quantile_budget(epsilon: float, n_quantiles: int) -> float:
    """ε (or ρ) for each of ``n_quantiles`` quantiles released together: ε / n_quantiles.

    Each quantile is an independent ε/m-DP report noisy min on the same data; by sequential
    composition the m releases together are ε-DP (ρ-zCDP composes the same way). The share is
    rounded down so that m shares never add up to more than the total.
    """
    epsilon = check_positive("epsilon", epsilon)
    m = check_int("n_quantiles", n_quantiles, maximum=MAX_QUANTILES)
    share = epsilon / m
    while share > 0 and math.fsum([share] * m) > epsilon:
        share = math.nextafter(share, 0.0)
    if not share > 0:
        raise ValueError(f"epsilon = {epsilon:g} split {m} ways underflows float64")
    return share


def private_quantiles(
    values: ArrayLike,
    candidates: ArrayLike,
    qs: ArrayLike,
    *,
    epsilon: float | None = None,
    rho: float | None = None,
    noise: str = "gumbel",
    max_rows: int = 1,
    counts: ArrayLike | None = None,
    trials: int | None = None,
    rng: np.random.Generator,
) -> NDArray[np.float64]:
    """Release several quantiles at once, ε (or ρ) split equally (:func:`split_quantile_budget`).

    Each q in ``qs`` is released by :func:`sample_quantile` with ε / len(qs); the exact
    distribution of each is :func:`quantile_probabilities` at that share. The releases are
    independent, so they need not come out in increasing order.

    Returns
    -------
    ndarray of float64, shape (len(qs),) or (trials, len(qs))
    """
    levels = finite_array("qs", qs, min_size=1)
    if levels.ndim != 1:
        raise ValueError(f"qs must be one-dimensional, got shape {levels.shape}")
    if np.any(levels < 0) or np.any(levels > 1):
        raise ValueError("qs must lie in [0, 1]")
    privacy = _privacy(epsilon, rho)
    if isinstance(privacy, PureDP):
        budget = {"epsilon": split_quantile_budget(privacy.epsilon, levels.size)}
    else:
        budget = {"rho": split_quantile_budget(privacy.rho, levels.size)}
    trials = check_trials(trials)
    rng = check_rng(rng)
    columns = [sample_quantile(values, candidates, float(q), **budget, noise=noise,
                               max_rows=max_rows, counts=counts, trials=trials, rng=rng)
               for q in levels]
    return np.array(columns, dtype=np.float64) if trials is None else np.stack(columns, axis=1)


# ---------------------------------------------------------------------------------------------
# a private max_rows: a DP quantile of rows per person


def _rows_histogram(rows: ArrayLike, persons: ArrayLike | None) -> tuple[NDArray, NDArray]:
    n = finite_array("rows", rows, min_size=1)
    if n.ndim != 1 or np.any(n < 1) or np.any(n != np.floor(n)):
        raise ValueError("rows must be a one-dimensional array of whole numbers >= 1 (rows "
                         "per person)")
    weights = _check_weights(persons, n.size, "persons", "rows")
    return n, np.ones_like(n) if weights is None else weights


def max_rows_scores(below: ArrayLike, equal: ArrayLike, total: int, q: float
                    ) -> NDArray[np.uint64]:
    """The scores of candidates c = 1..K for max rows: OpenDP's quantile scores
    (:func:`quantile_scores`) plus a public tilt, (c − 1)·max(num, den − num) — one person's
    worth (the scores' sensitivity) per row of the bound.

    Why: above everyone's rows (or below them), every candidate has the same quantile score,
    so the q-quantile alone draws uniformly among them — on a balanced panel where everyone
    has 8 rows, anything from 9 to the cap at a high q or a small ε. The tilt prefers the
    smaller of the candidates the data can hardly tell apart; where the data do tell them
    apart it moves the choice by at most about a person per row. The tilt does not depend on
    the data: neighbouring scores still differ by at most the sensitivity, so the report
    noisy max on them spends the same ε. Each sum saturates at 2^64 − 1 (1-Lipschitz).

    Parameters
    ----------
    below, equal : array_like, shape (K,)
        #{people with fewer than c rows}, #{people with exactly c rows}, for c = 1..K.
    total : int
        The number of people.
    q : float
        0 <= q <= 1.

    Returns
    -------
    ndarray of uint64, shape (K,)
    """
    scores = quantile_scores(below, equal, total, q)
    num, den = quantile_fraction(q)
    tilt = np.arange(scores.size, dtype=np.uint64) * np.uint64(max(num, den - num))
    return np.minimum(scores, np.uint64(_U64_MAX) - tilt) + tilt


def _max_rows_errors(rows: ArrayLike, persons: ArrayLike | None, q: float, largest: object
                     ) -> NDArray[np.float64]:
    """:func:`max_rows_scores` of candidates 1..``largest`` over den (rank units)."""
    n, w = _rows_histogram(rows, persons)
    k = check_int("largest", largest, maximum=MAX_ROWS_CANDIDATE)
    below, equal, total = candidate_counts(n, np.arange(1.0, k + 1.0), counts=w)
    _, den = quantile_fraction(q)
    return max_rows_scores(below, equal, int(total), q).astype(np.float64) / den


def rows_quantile_probabilities(
    rows: ArrayLike,
    persons: ArrayLike,
    q: float,
    *,
    epsilon: float,
    largest: int,
    noise: str = "exponential",
) -> NDArray[np.float64]:
    """Exact distribution of a DP q-quantile of rows per person, over candidates 1..K.

    For choosing ``max_rows`` privately: each person adds one value (their row count), so the
    sensitivity is max(q, 1 − q) under add/remove of a person, whatever their rows. Input is
    the histogram the engine returns: ``persons[i]`` persons have ``rows[i]`` rows. The
    candidates c = 1..K (K = ``largest``) are scored as a release scores them
    (:func:`max_rows_scores`: OpenDP's quantile scores, tilted towards fewer rows); a person
    with more than K rows counts above every candidate. ``noise``: exponential noise (ε-DP,
    what ``release.bounds.draw_max_rows`` draws) by default.

    Returns
    -------
    ndarray of float64, shape (K,)
        P(released = c) for c = 1..K.
    """
    errors = _max_rows_errors(rows, persons, q, largest)
    scale = quantile_scale(q, epsilon=epsilon, noise=noise)
    return selection_probabilities(errors, scale=scale, noise=noise, negate=True)


def sample_max_rows(
    rows: ArrayLike,
    persons: ArrayLike,
    q: float,
    *,
    epsilon: float,
    largest: int,
    trials: int | None = None,
    noise: str = "exponential",
    rng: np.random.Generator,
) -> int | NDArray[np.int64]:
    """Simulate a DP q-quantile of rows per person (candidates 1..K): a private ``max_rows``.

    Samples :func:`rows_quantile_probabilities` (seeded: a simulation, not a private draw).
    """
    errors = _max_rows_errors(rows, persons, q, largest)
    trials = check_trials(trials)
    rng = check_rng(rng)
    scale = quantile_scale(q, epsilon=epsilon, noise=noise)
    index = report_noisy_max(errors, scale=scale, noise=noise, negate=True, trials=trials,
                             rng=rng)
    return int(index) + 1 if trials is None else np.asarray(index).astype(np.int64) + 1


# ---------------------------------------------------------------------------------------------
# binned histograms


def _check_edges(edges: ArrayLike) -> NDArray[np.float64]:
    e = finite_array("edges", edges, min_size=2)
    if e.ndim != 1:
        raise ValueError(f"edges must be one-dimensional, got shape {e.shape}")
    if np.any(np.diff(e) <= 0):
        raise ValueError("edges must be strictly increasing")
    if e.size - 1 > MAX_BINS:
        raise ValueError(f"edges must make at most {MAX_BINS:,} bins, got {e.size - 1:,}")
    return e


def bin_indices(values: ArrayLike, edges: ArrayLike, *, outside: str = "separate"
                ) -> NDArray[np.int64]:
    """The bin of each value over declared edges e₀ < e₁ < … < e_k.

    Bins are [e₀, e₁), [e₁, e₂), …, [e_{k−1}, e_k] — the last one closed, as in
    ``numpy.histogram`` — so a value on an inner edge goes to the bin it starts.

    - ``outside="separate"`` (default): k + 2 cells, 0 = below e₀, 1..k = the bins,
      k + 1 = above e_k. Nothing is moved silently and nothing is dropped: the two outer
      cells are released like the others (each row still falls in exactly one cell).
    - ``outside="clamp"``: k cells; a value below e₀ goes to the first bin, above e_k to the
      last (as clamping does for sums).

    A missing value (NaN) gets −1: counted in no cell. ±inf go below/above.

    Returns
    -------
    ndarray of int64, the shape of ``values``
    """
    x = numeric_array("values", values)
    e = _check_edges(edges)
    outside = check_choice("outside", outside, OUTSIDE)
    k = e.size - 1
    cell = np.searchsorted(e, x, side="right")  # 0 below e0, i for [e_{i-1}, e_i), k+1 above
    cell = np.where(x == e[-1], k, cell)         # the last bin is closed on the right
    if outside == "clamp":
        cell = np.clip(cell, 1, k) - 1
    return np.where(np.isnan(x), -1, cell).astype(np.int64)


def bin_labels(edges: ArrayLike, *, outside: str = "separate") -> tuple[str, ...]:
    """Labels of the cells of :func:`bin_indices`: "[0, 10)", …, "[90, 100]", and "< 0",
    "> 100" for the outer cells when ``outside="separate"``."""
    e = _check_edges(edges)
    outside = check_choice("outside", outside, OUTSIDE)
    text = [f"{v:g}" for v in e.tolist()]
    bins = [f"[{a}, {b})" for a, b in zip(text[:-2], text[1:-1], strict=True)]
    bins.append(f"[{text[-2]}, {text[-1]}]")
    if outside == "separate":
        return (f"< {text[0]}", *bins, f"> {text[-1]}")
    return tuple(bins)


def binned_counts(values: ArrayLike, edges: ArrayLike, *, outside: str = "separate"
                  ) -> NDArray[np.float64]:
    """How many values fall in each cell of :func:`bin_indices` (missing values in none).

    Each row is in at most one cell, so under add/remove of one row the counts have L1 and L2
    sensitivity 1 (with person-level bounds, see :mod:`dpcore.contributions`).
    """
    cells = bin_indices(values, edges, outside=outside)
    e = np.asarray(edges, dtype=np.float64)
    size = e.size - 1 + (2 if outside == "separate" else 0)
    present = cells.ravel()
    present = present[present >= 0]
    return np.bincount(present, minlength=size).astype(np.float64)
