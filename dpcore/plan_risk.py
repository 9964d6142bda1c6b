"""What an attacker can learn from a whole release plan: its trade-off curve and belief bounds.

Read off the plan's composed privacy-loss distribution (``dpcore.accounting``); exact for plans
of Gaussian noise only (μ-GDP, μ² = Σ μᵢ²).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, logit

from dpcore import safe_rounding
from dpcore.accounting import (
    MIN_PLD_DELTA,
    Loss,
    NoiseLoss,
    ThresholdLoss,
    _composed_pld,
    _discretization,
    _zcdp_only,
    privacy_losses,
)
from dpcore.checks import check_delta
from dpcore.measures import ApproxDP, PureDP
from dpcore.risk import (
    DEFAULT_FAILURE,
    PosteriorBound,
    _probability_array,
    gaussian_tradeoff,
    max_posterior,
    percent,
)

__all__ = ["plan_gaussian_mu", "plan_tradeoff", "plan_loss_tail", "plan_max_posterior",
           "describe_plan_risk"]


def plan_gaussian_mu(releases: Iterable[object]) -> float | None:
    """μ of a plan of Gaussian noise only: μ = sqrt(Σ (Δᵢ/σᵢ)²), the plan being exactly μ-GDP
    (Dong, Roth & Su 2022, Corollary 3.3); None when some release is not Gaussian noise."""
    losses = privacy_losses(releases)
    if not losses or not all(isinstance(x, NoiseLoss) and x.noise == "gaussian"
                             for x in losses):
        return None
    ratios = np.array([x.sensitivity / x.scale for x in losses])
    top = ratios.max()  # scaled, so that the squares stay in float64
    return float(top * math.sqrt(math.fsum((ratios / top) ** 2)))


def _dense(losses: tuple[Loss, ...], connect_dots: bool):
    """(losses, probabilities, infinity mass) of the plan's pessimistic PLD, loss ascending.

    dp_accounting 0.6.0 keeps these in the PMF's private fields (there is no public accessor);
    tests/dpcore/test_plan_risk.py pins them against its public ``get_delta_for_epsilon``.
    """
    interval = _discretization(losses, None)
    pld = _composed_pld(losses, interval, connect_dots)
    pmf = pld._pmf_remove.to_dense_pmf()  # symmetric: every PLD built here is
    grid = (np.arange(pmf.size) + pmf._lower_loss) * pmf._discretization
    return grid, np.clip(np.asarray(pmf._probs, dtype=np.float64), 0.0, None), \
        float(pmf._infinity_mass)


def _curve(losses: tuple[Loss, ...]) -> tuple[NDArray, NDArray]:
    """Vertices (FPR, TPR) of the Neyman–Pearson curve of the plan's dominating PLD: outputs
    ranked by privacy loss, highest first; Q's mass of an output is e^{−loss} times P's."""
    grid, probs, infinite = _dense(losses, True)
    grid, probs = grid[::-1], probs[::-1]
    with np.errstate(over="ignore", under="ignore"):
        fpr = np.concatenate([[0.0], np.cumsum(probs * np.exp(-grid)), [1.0]])
    tpr = np.concatenate([[infinite], infinite + np.cumsum(probs), [1.0]])
    fpr, tpr = np.minimum(fpr, 1.0), np.minimum(tpr, 1.0)
    last = np.ones(fpr.size, dtype=bool)  # of equal FPRs, the last (highest TPR) counts
    last[:-1] = fpr[1:] != fpr[:-1]
    return fpr[last], np.maximum.accumulate(tpr)[last]


def plan_tradeoff(releases: Iterable[object], fpr: ArrayLike) -> float | NDArray[np.float64]:
    """The highest true-positive rate any membership test against the whole plan can reach,
    at each false-positive rate.

    Gaussian noise only: exactly Φ(Φ⁻¹(FPR) + μ) (:func:`plan_gaussian_mu`). Otherwise the
    curve of the plan's composed PLD: the pair it describes dominates the plan, so its best
    tests trace a curve above the plan's (an upper bound, tight to the discretisation).

    Returns
    -------
    float or ndarray
        TPR with the shape of ``fpr``.
    """
    losses = privacy_losses(releases)
    alpha = _probability_array("fpr", fpr, open_interval=False)
    mu = plan_gaussian_mu(losses)
    if mu is not None:
        return gaussian_tradeoff(mu, alpha)
    if not losses:
        tpr = alpha.copy()
    else:
        x, y = _curve(losses)
        tpr = np.maximum(np.interp(alpha, x, y), alpha)
    return float(tpr) if alpha.ndim == 0 else tpr


def _exact_tail(losses: tuple[Loss, ...]) -> bool:
    """Whether the plan's PLD (privacy buckets, rounded up) bounds its loss law itself, not
    only its hockey-stick curve: noise of a known law and thresholds only."""
    return all(isinstance(x, ThresholdLoss) or (isinstance(x, NoiseLoss) and not _zcdp_only(x))
               for x in losses)


def _pure_cap(losses: tuple[Loss, ...]) -> float | None:
    """Σε when every release is pure DP (the loss never exceeds it), else None."""
    total = []
    for x in losses:
        if isinstance(x, PureDP) or (isinstance(x, ApproxDP) and x.delta == 0):
            total.append(x.epsilon)
        elif isinstance(x, NoiseLoss) and x.epsilon is not None:
            total.append(x.epsilon)
        else:
            return None
    return math.nextafter(math.fsum(total), math.inf)


def _loss_bound(losses: tuple[Loss, ...], failure: float) -> tuple[float, float]:
    """(s, f): the plan's privacy loss exceeds s with probability at most f <= failure.

    Two bounds, the smaller s kept: (1) for noise of known law, the tail P(L > s) read off
    the PLD built with every loss rounded up (a stochastic upper bound of the true loss);
    (2) for any plan, from its dominating PLD's privacy profile δ(ε):
    P(L > ε + t) <= δ(ε) / (1 − e^{−t}) (issue 9's correction), i.e. s = ε − ln(1 − δ(ε)/f)
    at the best ε of the loss grid.
    """
    grid, probs, infinite = _dense(losses, True)
    best = (math.inf, failure)
    # (2) the profile bound, vectorised over the grid: δ(l_k) from suffix sums (plus a margin
    # for their round-off, so that it never reads smaller)
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        upper_mass = np.cumsum(probs[::-1])[::-1]
        lower_mass = np.cumsum((probs * np.exp(-grid))[::-1])[::-1]
        beyond = np.concatenate([upper_mass[1:], [0.0]])
        beyond_q = np.concatenate([lower_mass[1:], [0.0]])
        profile = infinite + beyond - np.exp(grid) * beyond_q
        profile = np.clip(np.where(np.isfinite(profile), profile, 1.0), 0.0, 1.0) + 1e-15
        usable = profile < failure
        s = np.where(usable, grid - np.log1p(-np.where(usable, profile, 0.0) / failure),
                     np.inf)
    if np.any(np.isfinite(s)):
        best = (float(np.min(s)), failure)
    # (1) the loss tail itself
    if _exact_tail(losses):
        grid, probs, infinite = _dense(losses, False)
        tail = infinite + np.concatenate([np.cumsum(probs[::-1])[::-1][1:], [0.0]])
        met = np.flatnonzero(tail <= failure)
        if met.size and grid[met[0]] < best[0]:
            best = (float(grid[met[0]]), float(tail[met[0]]))
    return best


def _check_failure(failure: object) -> float:
    failure = check_delta("failure", failure, allow_zero=False)
    if failure < MIN_PLD_DELTA:
        raise ValueError(f"failure = {failure:g} is below {MIN_PLD_DELTA:g}, the smallest "
                         "probability the composed distribution resolves")
    return failure


def plan_loss_tail(releases: Iterable[object], *, failure: float = DEFAULT_FAILURE
                   ) -> tuple[float, float]:
    """(s, f): the whole plan's privacy loss passes s with probability f, at most ``failure``.

    Gaussian noise only: exactly, L ~ N(μ²/2, μ²). Pure DP only: s is at most Σε, with f = 0
    there. Otherwise :func:`_loss_bound` on the composed PLD; s is inf when unbounded losses
    (thresholds) alone have probability above ``failure``.
    """
    losses = privacy_losses(releases)
    failure = _check_failure(failure)
    if not losses:
        return 0.0, 0.0
    mu = plan_gaussian_mu(losses)
    if mu is not None:
        bound = max_posterior(None, 0.5, delta=failure, gaussian_mu=mu)
        return bound.epsilon, bound.failure_probability
    s, f = _loss_bound(losses, failure)
    cap = _pure_cap(losses)
    # (the grid rounds losses up by up to a step or two: Σε itself, never passed, is better)
    if cap is not None and cap <= s + 2 * _discretization(losses, None):
        return cap, 0.0
    return s, f


def plan_max_posterior(releases: Iterable[object], prior: ArrayLike, *,
                       failure: float = DEFAULT_FAILURE) -> PosteriorBound:
    """The most an attacker's belief that Alice is in the data can rise after the whole plan.

    Posterior log-odds = prior log-odds + the privacy loss L; L <= s except with probability
    f (:func:`plan_loss_tail`), so the belief stays below expit(logit(prior) + s) except with
    probability f — the chance when Alice is in the data, the larger of the two cases.

    Returns
    -------
    PosteriorBound
        ``posterior`` with the shape of ``prior`` (1.0 when s is inf), the true
        ``failure_probability`` f and the loss s as ``epsilon``.
    """
    prior_arr = _probability_array("prior", prior, open_interval=True)
    s, f = plan_loss_tail(releases, failure=failure)
    if math.isinf(s):
        posterior = np.ones_like(prior_arr)
        f = 0.0  # a belief never passes 1
    else:
        posterior = np.maximum(expit(logit(prior_arr) + s), prior_arr)
    out = float(posterior) if prior_arr.ndim == 0 else posterior
    return PosteriorBound(out, float(f), float(s))


def describe_plan_risk(releases: Iterable[object], prior: float = 0.5, *,
                       failure: float = DEFAULT_FAILURE, after: str = "the whole plan") -> str:
    """One plain sentence on what the whole plan lets an attacker learn about one person.

    The belief bound of :func:`plan_max_posterior`, rounded up, with its failure probability
    (rounded up) when there is one. ``after`` names what ``releases`` are, as the sentence
    starts ("After the whole plan, …"; "After that query alone, …" for one query of a plan).
    """
    if np.ndim(_probability_array("prior", prior, open_interval=True)) != 0:
        raise TypeError("prior must be a single number for a sentence")
    if not isinstance(after, str) or not after.strip():
        raise TypeError("after must be a non-empty string naming what is released")
    bound = plan_max_posterior(releases, prior, failure=failure)
    start = (f"After {after}, an attacker who knows everyone else's data and starts at "
             f"{percent(float(prior))} ")
    if math.isinf(bound.epsilon) or float(expit(-(logit(float(prior)) + bound.epsilon))) < 1e-12:
        return start + "can become essentially certain that Alice is in the data."
    sentence = (start + f"can reach at most {safe_rounding.percent_upper(float(bound.posterior))} "
                "certainty that Alice is in the data")
    if bound.failure_probability <= 0:
        return sentence + "."
    return (sentence + f", except with probability at most "
            f"{safe_rounding.upper(bound.failure_probability, 2)}.")
