"""The budget split of a release plan that meets every accuracy target at the least privacy loss.

Targets: ±α at confidence 1 − β for a catalogue mechanism, P(correct selection) >= p for report
noisy max, a quantile's rank error at a confidence. And the dual: the split of a total budget
that maximises the worst ratio of target to achieved accuracy. Both against an even split.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from dpcore.accounting import ACCOUNTANTS, MIN_PLD_DELTA, account
from dpcore.checks import (
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_probability_open,
    finite_array,
)
from dpcore.measures import PureDP
from dpcore.mechanisms import CATALOGUE, make_mechanism, spec_for
from dpcore.quantiles import quantile_probabilities, rank_errors
from dpcore.selection import NOISE_TYPES, _check_flag, noisy_max_scale, prob_best_selected
from dpcore.utility import (
    EPSILON_RANGE,
    _bisect_log,
    smallest_epsilon,
    smallest_epsilon_for_selection,
)

__all__ = ["AccuracyTarget", "SelectionTarget", "QuantileTarget", "Allocation",
           "target_release", "target_ratio", "smallest_target_epsilon", "allocate",
           "allocate_budget"]

# The dual's search over the common relaxation factor λ (targets relaxed λ-fold): its range
# and the relative width at which the bisection stops.
_RELAX_RANGE = (1e-3, 1e3)
_RELAX_RTOL = 1e-4


@dataclass(frozen=True)
class AccuracyTarget:
    """P(|noisy − true| > alpha) <= beta for a catalogue mechanism.

    ``options`` are the mechanism's other parameters (delta for the Gaussians, lower and upper
    for the bounded kinds); ``true_value`` is needed by the kinds with an answer range.
    """

    mechanism: str
    sensitivity: float
    alpha: float
    beta: float
    true_value: float | None = None
    options: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        spec = spec_for(check_choice("mechanism", self.mechanism, tuple(CATALOGUE)))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "alpha", check_positive("alpha", self.alpha))
        object.__setattr__(self, "beta", check_probability_open("beta", self.beta))
        if not isinstance(self.options, Mapping):
            raise TypeError(f"options must be a mapping of parameter names to values, got "
                            f"{type(self.options).__name__}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        # building it once at ε = 1 checks the kind's options and the sensitivity
        make_mechanism(spec.kind, sensitivity=self.sensitivity, epsilon=1.0, **self.options)


@dataclass(frozen=True)
class SelectionTarget:
    """P(report noisy max picks a best candidate) >= probability (pure DP, ε = c·Δ/scale)."""

    scores: tuple[float, ...]
    noise: str
    probability: float
    sensitivity: float = 1.0
    monotonic: bool = False
    negate: bool = False

    def __post_init__(self) -> None:
        scores = finite_array("scores", self.scores, min_size=1)
        if scores.ndim != 1:
            raise ValueError(f"scores must be one-dimensional, got shape {scores.shape}")
        object.__setattr__(self, "scores", tuple(scores.tolist()))
        object.__setattr__(self, "noise", check_choice("noise", self.noise, NOISE_TYPES))
        object.__setattr__(self, "probability",
                           check_probability_open("probability", self.probability))
        object.__setattr__(self, "sensitivity", check_positive("sensitivity", self.sensitivity))
        object.__setattr__(self, "monotonic", _check_flag("monotonic", self.monotonic))
        object.__setattr__(self, "negate", _check_flag("negate", self.negate))


@dataclass(frozen=True)
class QuantileTarget:
    """The released q-quantile (exponential mechanism over ``candidates``) is within
    ``rank_error`` ranks of the true one with probability at least ``probability``."""

    values: tuple[float, ...]
    candidates: tuple[float, ...]
    q: float
    rank_error: float
    probability: float
    max_rows: int = 1

    def __post_init__(self) -> None:
        values = finite_array("values", self.values, min_size=1)
        candidates = finite_array("candidates", self.candidates, min_size=1)
        errors = rank_errors(values, candidates, self.q)  # checks q and both arrays
        object.__setattr__(self, "values", tuple(values.ravel().tolist()))
        object.__setattr__(self, "candidates", tuple(candidates.ravel().tolist()))
        object.__setattr__(self, "q", float(self.q))
        rank = check_positive("rank_error", self.rank_error, allow_zero=True)
        object.__setattr__(self, "rank_error", rank)
        object.__setattr__(self, "probability",
                           check_probability_open("probability", self.probability))
        object.__setattr__(self, "max_rows", check_int("max_rows", self.max_rows))
        if not errors.min() <= rank:
            raise ValueError(f"rank_error = {rank:g} is below the best candidate's own rank "
                             f"error {errors.min():g}: no ε reaches it; add candidates or "
                             "raise rank_error")


Target = AccuracyTarget | SelectionTarget | QuantileTarget


def _check_target(target: object) -> Target:
    if not isinstance(target, AccuracyTarget | SelectionTarget | QuantileTarget):
        raise TypeError(f"targets must be AccuracyTarget, SelectionTarget or QuantileTarget, "
                        f"got {type(target).__name__}")
    return target


def _check_epsilon(epsilon: object) -> float:
    eps = check_positive("epsilon", epsilon)
    low, high = EPSILON_RANGE
    if not low <= eps <= high:
        raise ValueError(f"epsilon must lie in [{low:g}, {high:g}], got {eps:g}")
    return eps


def _check_relax(relax: object) -> float:
    relax = check_positive("relax", relax)
    if not _RELAX_RANGE[0] <= relax <= _RELAX_RANGE[1]:
        raise ValueError(f"relax must lie in [{_RELAX_RANGE[0]:g}, {_RELAX_RANGE[1]:g}], got "
                         f"{relax:g}")
    return relax


def target_release(target: Target, epsilon: float) -> object:
    """The release that ``target``'s query makes at ``epsilon`` (in :data:`EPSILON_RANGE`):
    the catalogue mechanism calibrated to it (with the target's options, so a Gaussian at
    (ε, its δ)); for a selection or a quantile, its pure-DP guarantee."""
    target = _check_target(target)
    eps = _check_epsilon(epsilon)
    if isinstance(target, AccuracyTarget):
        return make_mechanism(target.mechanism, sensitivity=target.sensitivity, epsilon=eps,
                              **target.options)
    return PureDP(eps)


def _selection_p(target: SelectionTarget, eps: float) -> float:
    scale = noisy_max_scale(PureDP(eps), sensitivity=target.sensitivity, noise=target.noise,
                            monotonic=target.monotonic)
    return prob_best_selected(np.asarray(target.scores), scale=scale, noise=target.noise,
                              negate=target.negate)


def _quantile_rank(target: QuantileTarget, eps: float) -> float:
    """The smallest rank error reached with probability >= the target's, at ``eps``."""
    errors = rank_errors(target.values, target.candidates, target.q)
    probs = quantile_probabilities(target.values, target.candidates, target.q, epsilon=eps,
                                   max_rows=target.max_rows)
    order = np.argsort(errors, kind="stable")
    covered = np.cumsum(probs[order])
    # the last candidate counts whatever its rounding: the whole grid has probability 1
    index = min(int(np.searchsorted(covered, target.probability * (1 - 1e-12))),
                errors.size - 1)
    return float(errors[order][index])


def target_ratio(target: Target, epsilon: float) -> float:
    """How well ``target`` is met at ``epsilon``: target over achieved (>= 1: met).

    Accuracy: alpha over the mechanism's (1 − beta) error bound; selection: the allowed
    failure 1 − p over the actual chance of a wrong pick; quantile: the allowed rank error
    over the one reached with the target probability. inf when achieved exactly (0 error).
    """
    target = _check_target(target)
    eps = _check_epsilon(epsilon)
    if isinstance(target, AccuracyTarget):
        mech = target_release(target, eps)
        achieved = float(np.max(mech.accuracy(target.beta, target.true_value)))
        return target.alpha / achieved if achieved > 0 else math.inf
    if isinstance(target, SelectionTarget):
        wrong = 1.0 - _selection_p(target, eps)
        return (1.0 - target.probability) / wrong if wrong > 0 else math.inf
    achieved = _quantile_rank(target, eps)
    return target.rank_error / achieved if achieved > 0 else math.inf


def smallest_target_epsilon(target: Target, *, relax: float = 1.0) -> float:
    """The smallest ε in :data:`EPSILON_RANGE` at which ``target`` relaxed ``relax``-fold is
    met: alpha·relax; a wrong pick's chance (1 − p)·relax; rank error·relax.

    Accuracy and selection through ``dpcore.utility`` (closed forms or a bisection, confirmed
    on the mechanism); a quantile by bisection on log ε of its exact probabilities (the
    chance of a rank error within the target grows with ε). ValueError when no ε up to 1e3
    meets it.
    """
    target = _check_target(target)
    relax = _check_relax(relax)
    if isinstance(target, AccuracyTarget):
        try:
            return smallest_epsilon(target.mechanism, sensitivity=target.sensitivity,
                                    alpha=target.alpha * relax, beta=target.beta,
                                    true_value=target.true_value, **target.options).epsilon
        except ValueError as error:
            raise ValueError(f"relax = {relax:g} asks for alpha = {target.alpha * relax:g}: "
                             f"{error}; raise relax or the target's alpha") from error
    low, high = EPSILON_RANGE
    if isinstance(target, SelectionTarget):
        wanted = 1.0 - (1.0 - target.probability) * relax
        if not wanted > 0:
            return low
        return smallest_epsilon_for_selection(
            np.asarray(target.scores), noise=target.noise, sensitivity=target.sensitivity,
            monotonic=target.monotonic, target=wanted, negate=target.negate).epsilon
    allowed = target.rank_error * relax

    def met(eps: float) -> bool:
        return _quantile_rank(target, eps) <= allowed

    if met(low):
        return low
    if not met(high):
        raise ValueError(f"no epsilon up to {high:g} keeps the quantile within {allowed:g} "
                         f"ranks with probability {target.probability:g}; raise rank_error")
    return _bisect_log(met, low, high)


@dataclass(frozen=True)
class Allocation:
    """A budget split of a plan, and the even split it is compared with.

    Attributes
    ----------
    accountant, delta
        How the plan is accounted.
    epsilons
        Each query's ε (the Gaussians' at the δ of their options).
    releases
        The plan at those ε (:func:`target_release`).
    total
        The plan's ε under the accountant.
    ratios
        Each target's :func:`target_ratio` at its ε (>= 1: met).
    even_epsilon, even_total, even_ratios
        The same for the even split: every query at one ε.
    """

    accountant: str
    delta: float
    epsilons: tuple[float, ...]
    releases: tuple[object, ...]
    total: float
    ratios: tuple[float, ...]
    even_epsilon: float
    even_total: float
    even_ratios: tuple[float, ...]

    @property
    def worst_ratio(self) -> float:
        """The smallest target ratio of the split (>= 1: every target met)."""
        return min(self.ratios) if self.ratios else math.inf

    @property
    def even_worst_ratio(self) -> float:
        """The smallest target ratio of the even split."""
        return min(self.even_ratios) if self.even_ratios else math.inf


def _check_targets(targets: object) -> tuple[Target, ...]:
    if isinstance(targets, (str, bytes, Mapping)) or not isinstance(targets, Sequence):
        raise TypeError(f"targets must be a sequence of targets, got {type(targets).__name__}")
    if not targets:
        raise ValueError("targets must hold at least one target")
    return tuple(_check_target(t) for t in targets)


def _check_plan_delta(delta: object, accountant: str) -> float:
    delta = check_delta("delta", delta, allow_zero=False)
    if accountant == "pld" and delta < MIN_PLD_DELTA:
        raise ValueError(f"delta = {delta:g} is below {MIN_PLD_DELTA:g}, the smallest δ the "
                         "PLD accountant resolves")
    return delta


def _plan_total(targets: tuple[Target, ...], epsilons: Sequence[float], accountant: str,
                delta: float, fixed: tuple[object, ...] = ()) -> tuple[tuple[object, ...], float]:
    releases = tuple(target_release(t, e) for t, e in zip(targets, epsilons, strict=True))
    return releases, account(releases + fixed, delta=delta, accountant=accountant).epsilon


def _check_fixed(fixed: object) -> tuple[object, ...]:
    if isinstance(fixed, (str, bytes, Mapping)) or not isinstance(fixed, Sequence):
        raise TypeError(f"fixed must be a sequence of releases, got {type(fixed).__name__}")
    return tuple(fixed)


def allocate(targets: Sequence[Target], *, accountant: str, delta: float,
             fixed: Sequence[object] = ()) -> Allocation:
    """The split meeting every target with the smallest total privacy loss.

    Method: each query's target is met exactly when its noise is at most some level, and
    every accountant's total (basic, advanced, zCDP, PLD) grows with each query's privacy
    loss — more noise on one query is a post-processing of its release, so the plan with it
    is dominated. The feasible splits are a box of noise levels and the total is monotone in
    each coordinate, so the least total is at the box's corner: each query at the smallest ε
    that meets its own target (:func:`smallest_target_epsilon`). Under basic composition this
    is each query at its own smallest ε, under zCDP at its smallest ρ; under advanced and PLD
    accounting the same corner minimises the composed ε (tested against a random search).

    The even split gives every query the same ε: the largest any one needs.

    ``fixed`` are releases of the plan that keep their budget (queries without a target the
    split can judge): they count in every total, and the corner stays the least total (the
    accountants are monotone in each release whatever the others are).
    """
    targets = _check_targets(targets)
    fixed = _check_fixed(fixed)
    accountant = check_choice("accountant", accountant, ACCOUNTANTS)
    delta = _check_plan_delta(delta, accountant)
    epsilons = tuple(smallest_target_epsilon(t) for t in targets)
    releases, total = _plan_total(targets, epsilons, accountant, delta, fixed)
    even = max(epsilons)
    _, even_total = _plan_total(targets, [even] * len(targets), accountant, delta, fixed)
    return Allocation(accountant, delta, epsilons, releases, total,
                      tuple(target_ratio(t, e) for t, e in zip(targets, epsilons, strict=True)),
                      even, even_total, tuple(target_ratio(t, even) for t in targets))


def _corner(targets: tuple[Target, ...], relax: float) -> tuple[float, ...] | None:
    """Each query's smallest ε for its target relaxed ``relax``-fold (None: unreachable)."""
    try:
        return tuple(smallest_target_epsilon(t, relax=relax) for t in targets)
    except ValueError:
        return None


def allocate_budget(targets: Sequence[Target], *, accountant: str, epsilon: float,
                    delta: float, fixed: Sequence[object] = ()) -> Allocation:
    """The split of a total budget (ε, δ) that maximises the worst target ratio.

    Method: relax every target by one factor λ (alpha·λ, (1 − p)·λ, rank error·λ). For each
    λ the least total meeting the relaxed targets is the corner of :func:`allocate`, and it
    falls as λ grows; a bisection on log λ finds the smallest λ whose corner fits the budget.
    Any split within the budget whose worst ratio were above 1/λ would meet the targets
    relaxed less than λ-fold with at least the corner's total — more than the budget — so the
    corner at that λ maximises the worst ratio (to the bisection's 1e-4 relative width).

    The even split gives every query the largest common ε that fits the budget. ``fixed``
    releases keep their budget and count in every total (as in :func:`allocate`).

    Raises
    ------
    ValueError
        When the budget cannot meet even targets relaxed 1000-fold (``epsilon`` named).
    """
    targets = _check_targets(targets)
    fixed = _check_fixed(fixed)
    accountant = check_choice("accountant", accountant, ACCOUNTANTS)
    budget = check_positive("epsilon", epsilon)
    delta = _check_plan_delta(delta, accountant)

    def within(epsilons: Sequence[float]) -> bool:
        try:
            return _plan_total(targets, epsilons, accountant, delta, fixed)[1] <= budget
        except ValueError:  # a plan too large to account in float64 does not fit
            return False

    def fits(relax: float) -> bool:
        eps = _corner(targets, relax)
        return eps is not None and within(eps)

    low, high = _RELAX_RANGE
    if not fits(high):
        raise ValueError(f"epsilon = {budget:g} is too small for these targets even relaxed "
                         f"{high:g}-fold under {accountant} accounting; raise the budget")
    relax = low if fits(low) else _bisect_relax(fits, low, high)
    epsilons = _corner(targets, relax)
    releases, total = _plan_total(targets, epsilons, accountant, delta, fixed)

    def even_fits(eps: float) -> bool:
        return within([eps] * len(targets))

    e_low, e_high = EPSILON_RANGE
    if even_fits(e_high):
        even = e_high
    elif not even_fits(e_low):
        even = math.nan
    else:
        even = _largest(even_fits, e_low, e_high)
    if math.isnan(even):
        even_total, even_ratios = math.inf, tuple(0.0 for _ in targets)
    else:
        even_total = _plan_total(targets, [even] * len(targets), accountant, delta, fixed)[1]
        even_ratios = tuple(target_ratio(t, even) for t in targets)
    ratios = tuple(target_ratio(t, e) for t, e in zip(targets, epsilons, strict=True))
    if relax == low and min(even_ratios) > min(ratios):
        # A budget that meets every target tightened 1/low-fold: the relaxation stops there,
        # and the even split (every query at the largest ε searched) does better still.
        epsilons, ratios = (even,) * len(targets), even_ratios
        releases, total = _plan_total(targets, epsilons, accountant, delta, fixed)
    return Allocation(accountant, delta, epsilons, releases, total, ratios,
                      even, even_total, even_ratios)


def _bisect_relax(fits, low: float, high: float) -> float:
    """The smallest λ in (low, high] with fits(λ), for fits monotone (False at low)."""
    log_lo, log_hi = math.log(low), math.log(high)
    while log_hi - log_lo > _RELAX_RTOL:
        mid = 0.5 * (log_lo + log_hi)
        if fits(math.exp(mid)):
            log_hi = mid
        else:
            log_lo = mid
    return math.exp(log_hi) if fits(math.exp(log_hi)) else high


def _largest(fits, low: float, high: float) -> float:
    """The largest ε in [low, high) with fits(ε), for fits monotone (True at low)."""
    log_lo, log_hi = math.log(low), math.log(high)
    while log_hi - log_lo > _RELAX_RTOL:
        mid = 0.5 * (log_lo + log_hi)
        if fits(math.exp(mid)):
            log_lo = mid
        else:
            log_hi = mid
    return math.exp(log_lo) if fits(math.exp(log_lo)) else low
