"""What an attacker can learn at a given privacy level: posterior belief bounds, trade-off curves.

"Alice" is one person; the attacker knows every other row and tests "Alice in" against "out".
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, logit, ndtr, ndtri

from dpcore import safe_rounding
from dpcore.checks import (
    MAX_BLOCK_ELEMENTS,
    check_delta,
    check_positive,
    check_real,
    numeric_array,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP

__all__ = [
    "DEFAULT_FAILURE",
    "DEFAULT_ZCDP_DELTA",
    "TAIL_MARGIN",
    "PosteriorBound",
    "max_posterior",
    "exceed_probability",
    "tradeoff",
    "gaussian_tradeoff",
    "advantage",
    "describe_risk",
    "percent",
    "attacker_in_words",
]

#: The failure probability at which a zCDP guarantee, or the Gaussian mechanism's exact
#: privacy loss, is read as a belief bound (when none is given).
DEFAULT_FAILURE = 1e-6
#: The same default under its former name.
DEFAULT_ZCDP_DELTA = DEFAULT_FAILURE
#: t in P(L > epsilon + t) <= delta / (1 - e^-t): the belief bound of an (epsilon, delta)
#: guarantee sits at epsilon + ln 2 and fails with probability at most 2 delta.
TAIL_MARGIN = math.log(2.0)

# Renyi orders searched for the zCDP trade-off envelope, as t = log(alpha - 1): the same range as
# dpcore.measures.zcdp_epsilon, so every order its conversion can pick is covered.
_LOG_ORDER_GRID = np.linspace(-20.0, 25.0, 451)
_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
_GOLDEN_STEPS = 80


class PosteriorBound(NamedTuple):
    """The most an attacker's belief that Alice is in the data can reach, and how sure that is.

    Attributes
    ----------
    posterior
        Bound on the attacker's belief (a probability). It holds for every output under pure
        DP; otherwise it holds except on an event of probability ``failure_probability``.
    failure_probability
        The chance that the belief passes ``posterior`` (at most this; exact for the Gaussian
        mechanism). It is the chance when Alice is in the data; when she is not, it is
        smaller, so it also bounds the chance over the attacker's own prior. 0 for pure DP.
    epsilon
        The privacy loss the bound is read at: posterior log-odds = prior log-odds + epsilon.
    """

    posterior: float | NDArray[np.float64]
    failure_probability: float
    epsilon: float


def _check_measure(privacy: object) -> PureDP | ApproxDP | ZCDP:
    if not isinstance(privacy, (PureDP, ApproxDP, ZCDP)):
        raise TypeError(
            f"privacy must be a PureDP, ApproxDP or ZCDP measure, got {type(privacy).__name__}"
        )
    return privacy


def _probability_array(name: str, values: ArrayLike, *, open_interval: bool) -> NDArray:
    """``values`` as a float64 array of probabilities; NaN fails both comparisons below."""
    arr = numeric_array(name, values)
    inside = (0 < arr) & (arr < 1) if open_interval else (0 <= arr) & (arr <= 1)
    if not np.all(inside):
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise ValueError(f"{name} must lie in {interval} (no NaN), got {arr[~inside].ravel()[:3]}")
    return arr


def _as_output(arr: NDArray, like: NDArray) -> float | NDArray[np.float64]:
    return float(arr) if like.ndim == 0 else arr


def _privacy_or_mu(privacy: object, gaussian_mu: float | None) -> PureDP | ApproxDP | ZCDP | float:
    """The guarantee, or the Gaussian mechanism's mu (then ``privacy`` must be None)."""
    if gaussian_mu is not None:
        if privacy is not None:
            raise ValueError("give either privacy or gaussian_mu, not both")
        return check_positive("gaussian_mu", gaussian_mu)
    return _check_measure(privacy)


def _loss_bound(guarantee: PureDP | ApproxDP | ZCDP | float,
                delta: float | None) -> tuple[float, float]:
    """(s, f): the privacy loss L exceeds s with probability at most f (Alice in).

    Pure DP: L <= epsilon always. (epsilon, delta)-DP: for the set S where L > epsilon + t,
    P_in(S) <= e^epsilon P_out(S) + delta and P_out(S) <= e^-(epsilon + t) P_in(S), so
    P_in(S) <= delta / (1 - e^-t); t = ln 2 gives 2 delta. rho-zCDP: E_in[e^{(a-1)L}] <=
    e^{(a-1) a rho} for every order a > 1, and Markov's inequality at the best order gives
    P(L > rho + 2 sqrt(rho ln(1/f))) <= f. The Gaussian mechanism (mu-GDP): L ~ N(mu²/2, mu²)
    exactly, so s = mu²/2 + mu Phi^-1(1 - f), floored at 0 (a bound below the prior says
    nothing more).
    """
    if isinstance(guarantee, (PureDP, ApproxDP)):
        if delta is not None:
            raise ValueError(
                "delta is only the failure probability of a zCDP or Gaussian reading; "
                f"a {type(guarantee).__name__} measure carries its own"
            )
        own = getattr(guarantee, "delta", 0.0)
        if own == 0.0:
            return guarantee.epsilon, 0.0
        return guarantee.epsilon + TAIL_MARGIN, min(1.0, own / -math.expm1(-TAIL_MARGIN))
    failure = DEFAULT_FAILURE if delta is None else delta
    failure = check_delta("delta", failure, allow_zero=False)
    if isinstance(guarantee, ZCDP):
        rho = guarantee.rho
        loss, name = rho + 2.0 * math.sqrt(rho) * math.sqrt(-math.log(failure)), "rho"
    else:
        mu = guarantee
        loss, name = max(0.0, 0.5 * mu * mu - mu * float(ndtri(failure))), "gaussian_mu"
    if not math.isfinite(loss):  # capping it would claim a bound that does not hold
        raise ValueError(f"{name} is too large: the privacy loss bound overflows float64")
    return loss, failure


def max_posterior(
    privacy: PureDP | ApproxDP | ZCDP | None, prior: ArrayLike, *, delta: float | None = None,
    gaussian_mu: float | None = None,
) -> PosteriorBound:
    """The most an attacker's belief that Alice is in the data can rise from ``prior``.

    After an output y, the attacker's posterior odds are the prior odds times the likelihood
    ratio, e^L with L the privacy loss of y. A bound s on L that fails with probability f
    gives the belief bound

    .. math:: \\Pr[\\text{in} \\mid y] \\le
              \\frac{p\\,e^{s}}{p\\,e^{s} + 1 - p}

    except with probability f:

    - pure DP: s = epsilon, f = 0 (L <= epsilon for every output);
    - (epsilon, delta)-DP: s = epsilon + ln 2, f = 2 delta, from
      P(L > epsilon + t) <= delta / (1 - e^-t). The guarantee does *not* make L > epsilon a
      delta-rare event: the Gaussian mechanism calibrated to (1, 1e-6) has P(L > 1) = 2.0e-5;
      and this f is tight (a two-output (epsilon, delta)-DP mechanism reaches the bound with
      probability exactly 2 delta);
    - rho-zCDP: s = rho + 2 sqrt(rho ln(1/f)) with f = ``delta`` (default
      :data:`DEFAULT_FAILURE`), the Renyi-divergence tail bound;
    - the Gaussian mechanism itself (``gaussian_mu`` = sensitivity / sigma): L ~ N(mu²/2, mu²)
      exactly, so s = mu²/2 + mu Phi^-1(1 - f) and the belief passes the bound with
      probability exactly f = ``delta`` (default :data:`DEFAULT_FAILURE`).

    f is the probability when Alice is in the data; when she is not, the probability is
    smaller (by at least e^-s), so f also bounds it over the attacker's prior.

    Parameters
    ----------
    privacy
        The guarantee of the release; ``None`` when ``gaussian_mu`` is given.
    prior
        The attacker's belief before the release, scalar or array, each in (0, 1).
    delta
        Only for zCDP and ``gaussian_mu``: the failure probability to read the bound at, in
        (0, 1).
    gaussian_mu
        The Gaussian mechanism's sensitivity / sigma: its exact statement instead.

    Returns
    -------
    PosteriorBound
        ``(posterior, failure_probability, epsilon)``; ``posterior`` has the shape of
        ``prior`` (a float for a scalar prior), ``epsilon`` is s.

    References
    ----------
    L. Wasserman, S. Zhou. "A statistical framework for differential privacy." JASA 2010.
    M. Bun, T. Steinke. "Concentrated Differential Privacy." TCC 2016 (the zCDP tail bound).
    J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." JRSS-B 2022.
    """
    guarantee = _privacy_or_mu(privacy, gaussian_mu)
    prior_arr = _probability_array("prior", prior, open_interval=True)
    loss, failure = _loss_bound(guarantee, delta)
    # Posterior log-odds = prior log-odds + loss; expit keeps it finite at any loss.
    # It is never below the prior (loss >= 0): the maximum only undoes rounding, as for a
    # subnormal prior, where expit underflows to 0.
    posterior = np.maximum(expit(logit(prior_arr) + loss), prior_arr)
    return PosteriorBound(_as_output(posterior, prior_arr), float(failure), float(loss))


def exceed_probability(
    privacy: PureDP | ApproxDP | ZCDP | None, prior: ArrayLike, belief: ArrayLike, *,
    gaussian_mu: float | None = None,
) -> float | NDArray[np.float64]:
    """The most often an attacker starting at ``prior`` can end above ``belief``.

    The belief passes b exactly when the privacy loss passes s = logit(b) - logit(p). From the
    guarantee alone: pure DP, 0 for s >= epsilon (else 1: nothing is promised);
    (epsilon, delta)-DP, delta / (1 - e^-(s - epsilon)) for s > epsilon; rho-zCDP,
    exp(-(s - rho)² / (4 rho)) for s > rho; each capped at 1. For the Gaussian mechanism
    (``gaussian_mu``) the exact probability, Phi(-(s - mu²/2) / mu). All are the probability
    when Alice is in the data, the larger of the two cases (see :func:`max_posterior`).

    Parameters
    ----------
    privacy
        The guarantee; ``None`` when ``gaussian_mu`` is given.
    prior
        Beliefs before the release, in (0, 1); broadcast against ``belief``.
    belief
        The beliefs to pass, in [0, 1].
    gaussian_mu
        The Gaussian mechanism's sensitivity / sigma.

    Returns
    -------
    float or NDArray
        Probabilities with the broadcast shape (a float when both inputs are scalars).
    """
    guarantee = _privacy_or_mu(privacy, gaussian_mu)
    prior_arr = _probability_array("prior", prior, open_interval=True)
    belief_arr = _probability_array("belief", belief, open_interval=False)
    try:
        prior_arr, belief_arr = np.broadcast_arrays(prior_arr, belief_arr)
    except ValueError:
        raise ValueError(f"prior and belief must broadcast together, got shapes "
                         f"{np.shape(prior_arr)} and {np.shape(belief_arr)}") from None
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        s = logit(belief_arr) - logit(prior_arr)   # +inf at belief 1, -inf at belief 0
        if isinstance(guarantee, PureDP) or (
                isinstance(guarantee, ApproxDP) and guarantee.delta == 0.0):
            chance = np.where(s >= guarantee.epsilon, 0.0, 1.0)
        elif isinstance(guarantee, ApproxDP):
            t = s - guarantee.epsilon
            chance = np.where(t > 0, guarantee.delta / -np.expm1(-np.where(t > 0, t, 1.0)),
                              1.0)
        elif isinstance(guarantee, ZCDP):
            rho = guarantee.rho
            gap = np.where(s > rho, s - rho, 0.0)
            chance = np.where(s > rho, np.exp(-(gap / (2.0 * math.sqrt(rho))) ** 2), 1.0)
        else:
            mu = guarantee
            chance = ndtr(-(s / mu - 0.5 * mu))  # -inf at s = +inf: ndtr gives 0
    # A belief of 1 is never passed; NaN cannot arise from valid input but would read as 1.
    chance = np.where(belief_arr >= 1.0, 0.0, np.where(np.isnan(chance), 1.0, chance))
    chance = np.clip(chance, 0.0, 1.0)
    return _as_output(chance, belief_arr)


def _approx_tradeoff(epsilon: float, delta: float, fpr: NDArray) -> NDArray:
    with np.errstate(divide="ignore", over="ignore"):
        # e^eps·fpr computed as exp(eps + log fpr): finite at fpr = 0 for any epsilon.
        low_fpr_side = delta + np.exp(epsilon + np.log(fpr))
    high_fpr_side = 1.0 - math.exp(-epsilon) * (1.0 - delta - fpr)
    tpr = np.minimum(1.0, np.minimum(low_fpr_side, high_fpr_side))
    return np.maximum(tpr, fpr)  # a coin flip reaches TPR = FPR; guard against rounding only


def _zcdp_constraint_values(rho: float, fpr: NDArray, t: NDArray) -> tuple[NDArray, NDArray]:
    """Both (epsilon, delta)-constraints of Renyi order a = 1 + e^t, minimised over epsilon >= 0.

    The Canonne-Kamath-Steinke conversion at order a gives the family
    delta_a(eps) = C_a e^{-(a-1) eps}, log C_a = (a-1)(a rho + log(a-1)) - a log a, and
    zcdp_epsilon(rho, delta) is the inverse of inf_a delta_a. Each member bounds
    TPR <= delta_a(eps) + e^eps fpr and TPR <= 1 - e^-eps (1 - fpr - delta_a(eps)); both are
    convex in eps, with closed-form minimisers. Where the minimiser is interior the values are
        g1 = fpr^{(a-1)/a} e^{(a-1) rho},   g2 = 1 - (1 - fpr)^{a/(a-1)} e^{-a rho}
    (the Renyi probability-preservation bounds); where it would be negative, eps = 0 and both
    equal fpr + C_a.
    """
    a = 1.0 + np.exp(t)
    am1 = np.exp(t)
    # Overflow to inf at huge rho is harmless: an infinite bound constrains nothing.
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        log_c = am1 * (a * rho + t) - a * np.log(a)
        log_fpr = np.log(fpr)
        log_tnr = np.log1p(-fpr)
        eps1 = np.log(am1 / a) + am1 * rho - log_fpr / a
        eps2 = a * rho + np.log(am1 / a) - log_tnr / am1
        at_zero = fpr + np.exp(log_c)
        # fpr^{(a-1)/a} e^{(a-1) rho} is 0 at fpr = 0 even where e^{(a-1) rho} overflows
        # (the exponent would be -inf + inf = NaN).
        interior = np.where(fpr == 0, 0.0, np.exp((am1 / a) * log_fpr + am1 * rho))
        g1 = np.where(eps1 >= 0, interior, at_zero)
        g2 = np.where(eps2 >= 0, -np.expm1((a / am1) * log_tnr - a * rho), at_zero)
    return g1, g2


def _golden_minimum(func, lo: NDArray, hi: NDArray) -> NDArray:
    """Vectorized golden-section search: the smallest value of func seen on each [lo, hi]."""
    x1 = hi - _GOLDEN * (hi - lo)
    x2 = lo + _GOLDEN * (hi - lo)
    f1, f2 = func(x1), func(x2)
    best = np.minimum(f1, f2)
    for _ in range(_GOLDEN_STEPS):
        left = f1 <= f2  # the minimum lies in [lo, x2]
        hi = np.where(left, x2, hi)
        lo = np.where(left, lo, x1)
        new_x1 = np.where(left, hi - _GOLDEN * (hi - lo), x2)
        new_x2 = np.where(left, x1, lo + _GOLDEN * (hi - lo))
        f_new = func(np.where(left, new_x1, new_x2))
        f1, f2 = np.where(left, f_new, f2), np.where(left, f1, f_new)
        x1, x2 = new_x1, new_x2
        best = np.minimum(best, f_new)
    return best


def _zcdp_tradeoff(rho: float, fpr: NDArray) -> NDArray:
    flat = fpr.ravel()
    tpr = np.empty_like(flat)
    grid = _LOG_ORDER_GRID
    step = grid[1] - grid[0]
    block = max(1, MAX_BLOCK_ELEMENTS // (4 * grid.size))
    for start in range(0, flat.size, block):
        alpha = flat[start:start + block, None]
        g1, g2 = _zcdp_constraint_values(rho, alpha, grid[None, :])
        best = []
        for which, values in enumerate((g1, g2)):
            i = np.argmin(values, axis=1)
            lo = grid[np.maximum(i - 1, 0)] - (i == 0) * step
            hi = grid[np.minimum(i + 1, grid.size - 1)]
            refined = _golden_minimum(
                lambda t, w=which, al=alpha[:, 0]: _zcdp_constraint_values(rho, al, t)[w],
                lo.astype(np.float64), hi.astype(np.float64),
            )
            best.append(np.minimum(values[np.arange(values.shape[0]), i], refined))
        tpr[start:start + block] = np.minimum(best[0], best[1])
    tpr = np.minimum(1.0, np.maximum(tpr, flat))
    return tpr.reshape(fpr.shape)


def gaussian_tradeoff(mu: float, fpr: ArrayLike) -> float | NDArray[np.float64]:
    """Highest TPR of any membership test against a mu-Gaussian-DP release, at each ``fpr``.

    .. math:: \\mathrm{TPR}(\\alpha) = \\Phi(\\Phi^{-1}(\\alpha) + \\mu)

    The Gaussian mechanism with noise standard deviation sigma and sensitivity Delta is exactly
    mu-GDP with mu = Delta / sigma: the curve is reached by thresholding the output.

    References
    ----------
    J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." JRSS-B 2022 (arXiv 1905.02383).
    """
    mu = check_positive("mu", mu)
    alpha = _probability_array("fpr", fpr, open_interval=False)
    tpr = np.maximum(ndtr(ndtri(alpha) + mu), alpha)
    return _as_output(tpr, alpha)


def tradeoff(
    privacy: PureDP | ApproxDP | ZCDP | None,
    fpr: ArrayLike,
    *,
    gaussian_mu: float | None = None,
) -> float | NDArray[np.float64]:
    """The highest true-positive rate any membership test can reach at each false-positive rate.

    A test that says "Alice is in" on some set of outputs has a false-positive rate (FPR: it
    says "in" when she is out) and a true-positive rate (TPR: it says "in" when she is in);
    differential privacy is exactly a limit on the (FPR, TPR) pairs any test can reach.

    Pure and approximate DP (Kairouz, Oh & Viswanath 2015, Section 2: the privacy region is
    exactly the set of (FPR, FNR) with FPR + e^eps FNR >= 1 - delta and e^eps FPR + FNR >= 1 -
    delta; FNR = 1 - TPR):

    .. math:: \\mathrm{TPR}(\\alpha) = \\min\\{1,\\; e^\\varepsilon\\alpha + \\delta,\\;
              1 - e^{-\\varepsilon}(1 - \\delta - \\alpha)\\}

    (delta = 0 for pure DP). It starts at TPR(0) = delta and never falls below TPR = FPR.

    zCDP: the exact envelope (pointwise minimum) of the curves above over its privacy profile
    (epsilon(delta), delta), delta in (0, 1), from the Canonne-Kamath-Steinke conversion that
    ``ZCDP.to_approx`` uses. The minimum over delta is taken exactly over epsilon (closed form)
    and numerically over the Renyi order (grid plus golden-section refinement). It is what the
    zCDP guarantee alone implies; a particular zCDP mechanism may be safer (the Gaussian
    mechanism with rho = mu²/2 reaches only :func:`gaussian_tradeoff`).

    Parameters
    ----------
    privacy
        The guarantee; ``None`` when ``gaussian_mu`` is given.
    fpr
        False-positive rates in [0, 1], scalar or array.
    gaussian_mu
        When given, return the exact mu-Gaussian-DP curve instead (:func:`gaussian_tradeoff`);
        then ``privacy`` must be ``None``.

    Returns
    -------
    float or NDArray
        TPR with the shape of ``fpr``.

    References
    ----------
    P. Kairouz, S. Oh, P. Viswanath. "The Composition Theorem for Differential Privacy." 2015.
    L. Wasserman, S. Zhou. "A statistical framework for differential privacy." JASA 2010.
    C. L. Canonne, G. Kamath, T. Steinke. "The Discrete Gaussian for Differential Privacy." 2020.
    J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." JRSS-B 2022.
    """
    if gaussian_mu is not None:
        if privacy is not None:
            raise ValueError("give either privacy or gaussian_mu, not both")
        return gaussian_tradeoff(gaussian_mu, fpr)
    privacy = _check_measure(privacy)
    alpha = _probability_array("fpr", fpr, open_interval=False)
    if isinstance(privacy, ZCDP):
        tpr = _zcdp_tradeoff(privacy.rho, alpha)
    else:
        tpr = _approx_tradeoff(privacy.epsilon, getattr(privacy, "delta", 0.0), alpha)
    return _as_output(tpr, alpha)


def advantage(
    privacy: PureDP | ApproxDP | ZCDP | None, *, gaussian_mu: float | None = None
) -> float:
    """The largest TPR − FPR any membership test can reach (the attacker's advantage).

    Pure DP: tanh(epsilon/2) = (e^eps − 1)/(e^eps + 1); approximate DP: delta + (1 − delta)
    tanh(epsilon/2), both at the kink FPR = (1 − delta)/(e^eps + 1) of the trade-off curve;
    mu-GDP: 2 Phi(mu/2) − 1; zCDP: the maximum of its envelope minus FPR, found numerically
    (the envelope is concave, so TPR − FPR is unimodal).

    References
    ----------
    P. Kairouz, S. Oh, P. Viswanath. "The Composition Theorem for Differential Privacy." 2015.
    J. Dong, A. Roth, W. J. Su. "Gaussian Differential Privacy." JRSS-B 2022.
    """
    if gaussian_mu is not None:
        if privacy is not None:
            raise ValueError("give either privacy or gaussian_mu, not both")
        return float(2.0 * ndtr(check_positive("gaussian_mu", gaussian_mu) / 2.0) - 1.0)
    privacy = _check_measure(privacy)
    if not isinstance(privacy, ZCDP):
        delta = getattr(privacy, "delta", 0.0)
        return float(delta + (1.0 - delta) * math.tanh(privacy.epsilon / 2.0))
    grid = np.linspace(0.0, 1.0, 1001)
    gaps = _zcdp_tradeoff(privacy.rho, grid) - grid
    i = int(np.argmax(gaps))
    from scipy.optimize import minimize_scalar  # slow to import: on first use
    result = minimize_scalar(
        lambda a: -float(_zcdp_tradeoff(privacy.rho, np.array([a]))[0] - a),
        bounds=(grid[max(i - 1, 0)], grid[min(i + 1, grid.size - 1)]),
        method="bounded", options={"xatol": 1e-12},
    )
    return float(max(gaps[i], -result.fun))


def percent(p: float) -> str:
    """A probability as a percentage, with enough digits that a bound never reads as certainty.

    0.9997 reads "99.97%", not the "100%" of three significant digits; only 1 reads "100%".
    """
    p = check_real("p", p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"p must be a probability in [0, 1], got {p}")
    if p >= 1.0:
        return "100%"
    if 1.0 - p < 1e-12:  # 12 decimals would round it to 100
        return "more than 99.9999999999%"
    if 1.0 - p < 0.01:
        # Near 100%, show the distance to certainty with two significant digits: 99.9955%.
        decimals = min(12, math.ceil(-math.log10(1.0 - p)) - 1)
        return f"{100 * p:.{decimals}f}".rstrip("0").rstrip(".") + "%"
    if p < 1e-5:
        return "less than 0.001%"
    return f"{100 * p:.3g}%"


def _probability_text(p: float) -> str:
    """A failure probability rounded up to two significant digits: 2e-06, 2.1e-05, 0.05."""
    return f"{float(safe_rounding.upper(p, 2)):.2g}"


def describe_risk(
    privacy: PureDP | ApproxDP | ZCDP | None, prior: float = 0.5, *, delta: float | None = None,
    gaussian_mu: float | None = None,
) -> str:
    """One plain-language sentence on what an attacker can learn about one person.

    The belief bound of :func:`max_posterior`, rounded up, with its failure probability
    (rounded up) when there is one.

    >>> describe_risk(PureDP(1.0))  # doctest: +ELLIPSIS
    "An attacker who knows everyone else's data and starts at 50% ... at most 73.2% certainty..."

    Parameters
    ----------
    privacy
        The guarantee of the release; ``None`` with ``gaussian_mu``.
    prior
        The attacker's starting belief that Alice is in the data, in (0, 1).
    delta
        Only for zCDP and ``gaussian_mu``: the failure probability (default 1e-6).
    gaussian_mu
        The Gaussian mechanism's sensitivity / sigma: its exact privacy loss instead.
    """
    # the prior first (a ragged list too), so that its message is not preempted by privacy's
    if np.ndim(_probability_array("prior", prior, open_interval=True)) != 0:
        raise TypeError("prior must be a single number for a sentence")
    bound = max_posterior(privacy, prior, delta=delta, gaussian_mu=gaussian_mu)
    complement = float(expit(-(logit(float(prior)) + bound.epsilon)))  # 1 − posterior, exact
    if complement < 1e-12:
        reach = "can become essentially certain (above 99.9999999999%)"
    else:
        reach = f"can reach at most {safe_rounding.percent_upper(float(bound.posterior))} certainty"
    sentence = (
        f"An attacker who knows everyone else's data and starts at {percent(float(prior))} "
        f"{reach} that Alice is in the data"
    )
    failure = bound.failure_probability
    if failure <= 0:
        return sentence + "."
    if gaussian_mu is not None:
        return (sentence + f", except with probability {_probability_text(failure)} (the "
                "Gaussian mechanism's exact privacy loss)" + ".")
    if isinstance(privacy, ZCDP):
        return (sentence + f", except with probability at most {_probability_text(failure)} "
                f"(ρ = {safe_rounding.upper(privacy.rho, 4)} keeps the privacy loss below "
                f"{safe_rounding.upper(bound.epsilon)} but for that chance).")
    return (sentence + f", except with probability at most {_probability_text(failure)} (2δ: "
            "with δ > 0 the belief can pass the ε-only bound more often than δ).")


#: The Welcome page's attacker starts at a coin flip on "is Alice in the data?"; the sentence
#: compares ε with these, from very private to barely private.
ATTACKER_PRIOR = 0.5
OTHER_EPSILONS = (0.1, 5.0)


def _epsilon_label(epsilon: float) -> str:
    """ε in six significant digits, never below ε (a privacy loss shown rounds up)."""
    text = f"{epsilon:g}"
    return text if float(text) >= epsilon else f"{float(safe_rounding.upper(epsilon, 6)):g}"


def attacker_in_words(epsilon: float = 1.0) -> str:
    """Markdown: the most an attacker who starts 50/50 can believe after one ε-DP release, at
    ``epsilon`` and at :data:`OTHER_EPSILONS` (the Welcome page's sentence; the release report
    prints the same one). Beliefs round up.

    >>> attacker_in_words(1.0)  # doctest: +ELLIPSIS
    "**What an attacker can learn:** ... **at most 73.2% sure** after one release at ε = 1, ..."
    """
    epsilon = check_positive("epsilon", epsilon)

    def belief(e: float) -> str:
        posterior = max_posterior(PureDP(e), ATTACKER_PRIOR).posterior
        return safe_rounding.percent_upper(float(posterior))

    others = "; ".join(f"at ε = {_epsilon_label(e)}, {belief(e)}" for e in OTHER_EPSILONS)
    return (
        f"**What an attacker can learn:** someone who knows everybody else's data and starts "
        f"50/50 on whether you are in it ends **at most {belief(epsilon)} "
        f"sure** after one release at ε = {_epsilon_label(epsilon)}, whatever it shows "
        f"({others}). Releases about the same people add up: the Release plan page totals them.")
