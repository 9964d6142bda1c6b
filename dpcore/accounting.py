"""Accounting of a release plan four ways: basic, advanced, zCDP and privacy-loss distributions.

A plan is a sequence of releases (catalogue mechanisms, noisy means, selection, quantile and
partition-selection guarantees, or a :class:`Loss` as a plan states it); each is read as
privacy losses, which the accountants compose.
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np
from scipy.special import expit

from dpcore.checks import check_choice, check_delta, check_positive
from dpcore.measures import ZCDP, ApproxDP, PureDP, zcdp_epsilon
from dpcore.mechanisms.base import _loss_up, _rho_up
from dpcore.mechanisms.discrete_gaussian import DiscreteGaussian
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.partition import PartitionPrivacy, partition_privacy
from dpcore.safe_rounding import lower, upper

__all__ = [
    "ACCOUNTANTS",
    "ACCOUNTANT_LABELS",
    "NOISES",
    "DISCRETIZATION",
    "MIN_PLD_DELTA",
    "Loss",
    "NoiseLoss",
    "ThresholdLoss",
    "AccountedTotal",
    "PlanAccounting",
    "BudgetCheck",
    "Release",
    "privacy_losses",
    "partition_losses",
    "noise_law",
    "compose_pld",
    "account",
    "account_plan",
    "check_budget",
]

#: The accountants, in the order a page lists them.
ACCOUNTANTS = ("basic", "advanced", "zcdp", "pld")
#: Each accountant in words.
ACCOUNTANT_LABELS = {"basic": "basic composition", "advanced": "advanced composition",
                     "zcdp": "zCDP composition", "pld": "privacy-loss distributions"}
#: Noise laws whose privacy-loss distribution is built from the noise itself.
NOISES = ("laplace", "gaussian", "discrete_laplace", "discrete_gaussian")
#: Width of the privacy-loss grid of the PLD accountant (coarser only when a plan's losses
#: span more than ``_MAX_PLD_POINTS`` such steps). With connect-the-dots discretisation it
#: moves a 20-release plan's ε by about 1e-5 against a grid ten times finer.
DISCRETIZATION = 1e-3
#: The smallest δ the PLD accountant reads: the composed distribution is computed by FFT,
#: whose round-off (about 1e-16 per grid point) a smaller δ would not resolve.
MIN_PLD_DELTA = 1e-12

# Grid points the composed privacy loss may span (a dense array of float64: 16 MB).
_MAX_PLD_POINTS = 2_000_000
# The discrete Gaussian's PLD is built from its law up to this σ (dp_accounting sums the law
# over ±12σ); beyond it the discrete Gaussian enters through its ρ-zCDP guarantee.
_DG_PLD_SIGMA = 1e4
# A zCDP guarantee's PLD is built from its privacy profile down to this δ; the rest of the
# distribution is counted as an unbounded loss (pessimistic).
_ZCDP_FLOOR = 1e-30
_ZCDP_LINES = 4000
_RENYI_ORDERS = 1.0 + np.exp(np.linspace(-20.0, 25.0, 451))
# The advanced accountant tries these shares of the free δ for its δ' (the rest goes to the
# releases that have no δ of their own); the smallest ε wins, each being a valid guarantee.
_DELTA_PRIME_SHARES = (0.1, 0.25, 0.5, 0.75, 0.9)
_ROUND_UP = 1 + 2.0**-48


def _up(x: float) -> float:
    """x raised by a few ulps: a total computed with a handful of float operations."""
    return math.nextafter(x * _ROUND_UP, math.inf) if x > 0 else x


# ----------------------------------------------------------------------------------------------
# what a release costs


@dataclass(frozen=True)
class Loss:
    """One privacy cost as its mechanism states it: the one loss type of the plan, the
    release and the accountants.

    Exactly one of ``epsilon`` (pure or approximate DP) and ``rho`` (zCDP); ``delta`` the δ
    of an (ε, δ) guarantee or the δ a threshold spends outright; ``read_at`` the δ at which a
    ρ is read as (ε, δ) under basic or advanced accounting (the plan gives it).
    """

    epsilon: float | None = None
    rho: float | None = None
    delta: float = 0.0
    read_at: float | None = None

    def __post_init__(self) -> None:
        if (self.epsilon is None) == (self.rho is None):
            raise ValueError("a Loss holds exactly one of epsilon and rho")

    @staticmethod
    def of(measure: PureDP | ApproxDP | ZCDP, *, read_at: float | None = None,
           delta: float = 0.0) -> Loss:
        """The loss of a guarantee, plus ``delta`` spent outright (a threshold's)."""
        if not isinstance(measure, (PureDP, ApproxDP, ZCDP)):
            raise TypeError(f"measure must be a PureDP, ApproxDP or ZCDP guarantee, got "
                            f"{type(measure).__name__}")
        if isinstance(measure, PureDP):
            return Loss(epsilon=measure.epsilon, delta=delta)
        if isinstance(measure, ApproxDP):
            return Loss(epsilon=measure.epsilon, delta=measure.delta + delta)
        return Loss(rho=measure.rho, delta=delta, read_at=read_at)

    def measures(self) -> tuple[PureDP | ApproxDP | ZCDP | ThresholdLoss, ...]:
        """The loss as the accountants compose it: ε alone → PureDP, ε with δ → ApproxDP,
        ρ → ZCDP, and a ρ's (or a zero ε's) own δ → a :class:`ThresholdLoss` (what
        partition selection's threshold spends outright); a zero ε with no δ is nothing."""
        if self.rho is not None:
            extra = (ThresholdLoss(self.delta),) if self.delta > 0 else ()
            return (ZCDP(self.rho), *extra)
        if self.delta > 0:
            return ((ApproxDP(self.epsilon, self.delta),) if self.epsilon > 0
                    else (ThresholdLoss(self.delta),))
        return (PureDP(self.epsilon),) if self.epsilon > 0 else ()

    def to_dict(self) -> dict[str, float]:
        out: dict[str, float] = {}
        if self.epsilon is not None:
            out["epsilon"] = self.epsilon
        if self.rho is not None:
            out["rho"] = self.rho
        out["delta"] = self.delta
        if self.read_at is not None:
            out["rho_read_at_delta"] = self.read_at
        return out


@dataclass(frozen=True)
class NoiseLoss:
    """A release whose privacy loss is that of additive noise of a known law.

    Parameters
    ----------
    noise : {"laplace", "gaussian", "discrete_laplace", "discrete_gaussian"}
    scale : float
        Laplace b; Gaussian σ; discrete Laplace s with P(z) ∝ e^{−|z|/s}; discrete Gaussian σ.
    sensitivity : float
        The L1 sensitivity for the Laplace noises, L2 for the Gaussian; a whole number for the
        discrete noises. For a vector query (a histogram) the PLD of one coordinate moved by
        the whole norm is used: exact for the Gaussian (only the L2 norm matters), an upper
        bound for the Laplace noises (a shift spread over coordinates loses less; tested),
        and for the discrete Gaussian the one-coordinate case its own (ε, δ) profile assumes.
    """

    noise: str
    scale: float
    sensitivity: float

    def __post_init__(self) -> None:
        noise = check_choice("noise", self.noise, NOISES)
        scale = check_positive("scale", self.scale)
        sensitivity = check_positive("sensitivity", self.sensitivity)
        discrete = noise.startswith("discrete")
        if discrete and not sensitivity.is_integer():
            raise ValueError(f"sensitivity must be a whole number for {noise} noise, got "
                             f"{sensitivity:g}")
        if discrete and not scale <= 1e12:
            raise ValueError(f"scale = {scale:g} is beyond 1e12, where whole-number noise "
                             "leaves exact float64 range")
        ratio = sensitivity / scale
        if not 1e-150 < ratio < 1e150:
            raise ValueError(f"sensitivity / scale = {sensitivity:g} / {scale:g} is too far "
                             "from 1 for float64 accounting: sensitivity and scale are too far "
                             "apart")
        object.__setattr__(self, "noise", noise)
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "sensitivity", sensitivity)

    @property
    def epsilon(self) -> float | None:
        """The pure-DP ε = sensitivity / scale of the Laplace noises (rounded up); None for
        the Gaussian ones, which have no pure ε."""
        if self.noise in ("laplace", "discrete_laplace"):
            return _loss_up(self.sensitivity, self.scale)
        return None

    @property
    def rho(self) -> float:
        """The zCDP ρ: (sensitivity / scale)² / 2 for the Gaussian noises, ε²/2 for the Laplace
        ones (pure DP implies it), rounded up."""
        eps = self.epsilon
        if eps is None:
            return _rho_up(self.sensitivity, self.scale)
        return _up(eps * eps / 2)

    def epsilon_for_delta(self, delta: float) -> float:
        """The smallest ε with (ε, δ)-DP: the pure ε of the Laplace noises, the exact privacy
        profile of the Gaussian ones (as the catalogue's classes compute it)."""
        delta = check_delta("delta", delta, allow_zero=self.epsilon is not None)
        if self.epsilon is not None:
            return self.epsilon
        cls = Gaussian if self.noise == "gaussian" else DiscreteGaussian
        return cls(sensitivity=self.sensitivity, scale=self.scale).epsilon_for_delta(delta)


@dataclass(frozen=True)
class ThresholdLoss:
    """An event of probability at most ``delta`` on which a release reveals the person
    outright, and no privacy loss otherwise: what partition selection's threshold adds to the
    noise on its counts (a group only that person makes is released)."""

    delta: float

    def __post_init__(self) -> None:
        # (0 is allowed: a threshold so high that its probability underflows float64)
        object.__setattr__(self, "delta", check_delta("delta", self.delta))


#: What the accountants compose: a noise of a known law, a threshold, or a guarantee.
Composable = NoiseLoss | ThresholdLoss | PureDP | ApproxDP | ZCDP
_LOSS_TYPES = (NoiseLoss, ThresholdLoss, PureDP, ApproxDP, ZCDP)
_MEASURES = (PureDP, ApproxDP, ZCDP, PartitionPrivacy)


@runtime_checkable
class StatesItsLosses(Protocol):
    """A release that says how the accountants compose it (a plan's part: report noisy max
    as its guarantee, partition selection as its noise and its threshold's δ)."""

    def losses(self) -> tuple[Composable, ...]: ...


@runtime_checkable
class StatesItsNoise(Protocol):
    """Additive noise that states its law (``pld_noise``, one of :data:`NOISES`, or None when
    only its guarantee ``privacy`` is known) at its ``scale`` and ``sensitivity``: a catalogue
    mechanism. (``privacy`` is read only when there is no law: it may take a computation.)"""

    pld_noise: str | None
    scale: float
    sensitivity: float


@runtime_checkable
class MadeOfParts(Protocol):
    """A release of several noisy parts (a :class:`~dpcore.queries.NoisyMean`)."""

    parts: tuple[Release, ...]


@runtime_checkable
class HasPrivacy(Protocol):
    """A release known by its guarantee alone."""

    privacy: PureDP | ApproxDP | ZCDP | PartitionPrivacy


#: What :func:`privacy_losses` reads: a loss the accountants compose, a plan's :class:`Loss`,
#: a partition selection's guarantee, or a release that states its losses, its noise, its
#: parts or its guarantee.
Release = (Composable | Loss | PartitionPrivacy | StatesItsLosses | StatesItsNoise
           | MadeOfParts | HasPrivacy)


def _losses_of(release: Release, depth: int) -> tuple[Composable, ...]:
    # the accountants' own events by type; any other release by what it states, never by its
    # class: a new part type states its losses()
    if isinstance(release, _LOSS_TYPES):
        return (release,)
    if isinstance(release, Loss):
        return release.measures()
    if isinstance(release, PartitionPrivacy):
        extra = (ThresholdLoss(release.delta),) if release.delta > 0 else ()
        return (release.measure, *extra)
    if isinstance(release, StatesItsLosses):
        return release.losses()
    if isinstance(release, StatesItsNoise):
        if release.pld_noise is not None:
            return (NoiseLoss(release.pld_noise, release.scale, release.sensitivity),)
        return (release.privacy,)
    if isinstance(release, MadeOfParts) and isinstance(release.parts, tuple) and (
            release.parts and depth < 4):  # a noisy mean: its sum and count
        return tuple(loss for part in release.parts for loss in _losses_of(part, depth + 1))
    if isinstance(release, HasPrivacy) and isinstance(release.privacy, _MEASURES):
        return _losses_of(release.privacy, depth + 1)
    raise TypeError(f"releases must hold catalogue mechanisms, noisy means, privacy measures "
                    f"(PureDP, ApproxDP, ZCDP, PartitionPrivacy) or privacy losses; got "
                    f"{type(release).__name__}")


def privacy_losses(releases: Iterable[Release]) -> tuple[Composable, ...]:
    """The privacy losses of a plan's releases, as the accountants compose them.

    A catalogue mechanism whose class names its ``pld_noise`` (Laplace, clamped Laplace,
    geometric, Gaussian, discrete Gaussian) is a :class:`NoiseLoss`; the others (bounded
    Laplace, staircase) count by their ``privacy`` guarantee. Anything with ``parts`` (a
    :class:`~dpcore.queries.NoisyMean`) counts as its parts; a :class:`PureDP` (a selection, a
    quantile), :class:`ApproxDP` or :class:`ZCDP` guarantee as itself; a
    :class:`~dpcore.partition.PartitionPrivacy` as its noise's guarantee plus a
    :class:`ThresholdLoss` of its δ; a :class:`Loss` as its :meth:`Loss.measures`; a release
    that states its ``losses()`` (a plan's part: ``plan.parts``) as those; anything else with
    such a ``privacy`` as that.
    """
    if isinstance(releases, (str, bytes, dict)) or not isinstance(releases, Iterable):
        raise TypeError(f"releases must be a sequence of releases, got "
                        f"{type(releases).__name__}")
    return tuple(loss for release in releases for loss in _losses_of(release, 0))


def partition_losses(*, noise: str, scale: float, threshold: float, max_rows: int = 1,
                     max_groups: int = 1) -> tuple[NoiseLoss, ThresholdLoss]:
    """The privacy losses of partition selection when its noise is known: tighter than its
    :class:`~dpcore.partition.PartitionPrivacy` guarantee under the PLD accountant.

    A person moves at most k = ``max_groups`` counts by r = ``max_rows`` each: the counts'
    noise is a :class:`NoiseLoss` at L1 sensitivity k·r (Laplace noises) or L2 sensitivity
    √k·r (Gaussian). Groups only that person makes are released with probability at most
    δ = :func:`~dpcore.partition.partition_delta`, and never without them: a
    :class:`ThresholdLoss`. The release is then, with probability at most δ, anything; else a
    post-processing of the noisy counts — dominated by the two composed, in every accountant.
    """
    privacy = partition_privacy(noise=noise, scale=scale, threshold=threshold,
                                max_rows=max_rows, max_groups=max_groups)
    r, k = int(max_rows), int(max_groups)
    if noise == "gaussian":
        sensitivity = _up(r * math.sqrt(k))
    else:
        sensitivity = float(k * r)
    return NoiseLoss(noise, float(scale), sensitivity), ThresholdLoss(privacy.delta)


def noise_law(noise: str | None, scale: float, sensitivity: float, *, vector: bool = False,
              epsilon: float | None = None, rho: float | None = None) -> tuple[NoiseLoss, ...]:
    """A release's noise as the accountants compose it, when a privacy-loss distribution
    represents it exactly: ``(NoiseLoss,)``, else ``()`` (the release then counts by its
    certificate).

    ``noise`` is a mechanism class's ``pld_noise`` (None: no such law). The sensitivity is
    raised to what a certificate of the release implies, ``epsilon``·scale for a Laplace
    noise or √(2·``rho``)·scale for a Gaussian one, should the certifier count more than
    ``sensitivity`` (OpenDP rounds a float input to its sampling lattice): the law is never
    read at a distance below the one certified. Left out: a whole-number noise at a
    fractional sensitivity, a discrete Gaussian on a ``vector`` (its loss under a shift spread
    over coordinates is not the one-coordinate PLD's), and laws beyond float64 accounting.
    """
    if noise is None or (vector and noise == "discrete_gaussian"):
        return ()
    if not noise.startswith("discrete"):
        implied = (epsilon * scale if epsilon is not None
                   else math.sqrt(2 * rho) * scale if rho is not None else 0.0)
        sensitivity = max(sensitivity, math.nextafter(implied, math.inf) if implied else 0.0)
    elif not float(sensitivity).is_integer():
        return ()
    try:
        return (NoiseLoss(noise, scale, sensitivity),)
    except ValueError:
        return ()


# ----------------------------------------------------------------------------------------------
# basic, advanced and zCDP composition


class AccountedTotal(NamedTuple):
    """The whole plan's privacy under one accountant.

    Attributes
    ----------
    accountant
        One of :data:`ACCOUNTANTS`.
    epsilon
        The plan's ε at ``delta`` (rounded up); inf when the accountant cannot meet ``delta``
        (``note`` says why).
    delta
        The δ it is read at.
    note
        Why ε is inf, or an empty string.
    """

    accountant: str
    epsilon: float
    delta: float
    note: str


def _fixed_and_flexible(losses: tuple[Composable, ...]
                        ) -> tuple[list[float], list[float], list[Composable]]:
    """(the ε of each release with one, their own δs, the releases whose ε depends on the δ
    they are given: Gaussian noises and zCDP guarantees)."""
    epsilons, deltas, flexible = [], [], []
    for loss in losses:
        if isinstance(loss, ThresholdLoss):
            deltas.append(loss.delta)
        elif isinstance(loss, ApproxDP):
            epsilons.append(loss.epsilon)
            deltas.append(loss.delta)
        elif isinstance(loss, PureDP):
            epsilons.append(loss.epsilon)
        elif isinstance(loss, NoiseLoss) and loss.epsilon is not None:
            epsilons.append(loss.epsilon)
        else:
            flexible.append(loss)
    return epsilons, deltas, flexible


def _room(delta: float, deltas: list[float]) -> float:
    """δ less the releases' own δs (rounded down: never more room than there is)."""
    own = math.fsum(deltas)
    room = delta - own
    return math.nextafter(room, -math.inf) if deltas and room > 0 else room


def _own_delta_note(deltas: list[float], delta: float) -> str:
    return (f"the releases' own δ add up to {upper(math.fsum(deltas), 3)}, leaving no room "
            f"within δ = {upper(delta, 3)}; raise δ or the thresholds")


def _flexible_epsilons(flexible: list[Composable], delta_each: float) -> list[float]:
    """Each flexible release's ε at δ = ``delta_each`` (identical ones computed once)."""
    out = []
    for loss, count in Counter(flexible).items():
        if isinstance(loss, ZCDP):
            eps = zcdp_epsilon(loss.rho, delta_each)
        else:
            eps = loss.epsilon_for_delta(delta_each)
        out.extend([eps] * count)
    return out


def _share(room: float, parts: int) -> float:
    """room / parts, lowered until parts of it add up to no more than room."""
    each = room / parts
    while each > 0 and each * parts > room:
        each = math.nextafter(each, 0.0)
    return each


def _total(values: list[float]) -> float:
    try:
        return _up(math.fsum(values))
    except OverflowError:
        return math.inf


def _basic(losses: tuple[Composable, ...], delta: float) -> AccountedTotal:
    epsilons, deltas, flexible = _fixed_and_flexible(losses)
    room = _room(delta, deltas)
    if room < 0 or (flexible and room <= 0):
        return AccountedTotal("basic", math.inf, delta, _own_delta_note(deltas, delta))
    if flexible:
        epsilons = epsilons + _flexible_epsilons(flexible, _share(room, len(flexible)))
    return AccountedTotal("basic", _total(epsilons), delta, "")


def _kov(epsilons: list[float], delta_prime: float) -> float:
    """Kairouz, Oh & Viswanath's heterogeneous composition (2017, Theorem 3.5): the ε of
    (ε_i, δ_i)-DP releases composed, at δ' plus 1 − Π(1 − δ_i) <= δ' + Σδ_i.

    .. math:: \\min\\Big\\{\\sum\\varepsilon_i,\\; \\sum\\varepsilon_i\\tanh\\frac{\\varepsilon_i}2
              + \\sqrt{2\\sum\\varepsilon_i^2\\ln\\Big(e + \\frac{\\sqrt{\\sum\\varepsilon_i^2}}
              {\\delta'}\\Big)},\\; \\sum\\varepsilon_i\\tanh\\frac{\\varepsilon_i}2
              + \\sqrt{2\\sum\\varepsilon_i^2\\ln\\frac1{\\delta'}}\\Big\\}

    ((e^ε − 1)/(e^ε + 1) = tanh(ε/2)).
    """
    e = np.asarray([x for x in epsilons if x > 0], dtype=np.float64)
    total = _total(list(e))
    if e.size == 0 or not delta_prime > 0 or not math.isfinite(total):
        return total
    with np.errstate(over="ignore"):
        square = math.fsum(e * e)
        drift = math.fsum(e * np.tanh(e / 2))
    if not math.isfinite(square):
        return total
    second = drift + math.sqrt(2 * square * math.log(math.e + math.sqrt(square) / delta_prime))
    third = drift + math.sqrt(2 * square * -math.log(delta_prime))
    return min(total, _up(second), _up(third))


def _advanced(losses: tuple[Composable, ...], delta: float) -> AccountedTotal:
    epsilons, deltas, flexible = _fixed_and_flexible(losses)
    room = _room(delta, deltas)
    if room < 0 or (flexible and room <= 0):
        return AccountedTotal("advanced", math.inf, delta, _own_delta_note(deltas, delta))
    if not flexible:
        return AccountedTotal("advanced", _kov(epsilons, room), delta, "")
    best = math.inf
    for share in _DELTA_PRIME_SHARES:
        delta_prime = room * share
        each = _share(room - delta_prime, len(flexible))
        if not each > 0:
            continue
        best = min(best, _kov(epsilons + _flexible_epsilons(flexible, each), delta_prime))
    return AccountedTotal("advanced", best, delta, "")


def _rho_of(loss: Composable) -> tuple[float, float]:
    """(ρ, δ₀): the release is δ₀-approximately ρ-zCDP. (ε, δ)-DP gives ρ = ε²/2 with
    δ₀ = δ (its ε-DP part, Bun & Steinke 2016); a threshold gives ρ = 0 with its δ."""
    if isinstance(loss, ThresholdLoss):
        return 0.0, loss.delta
    if isinstance(loss, ZCDP):
        return loss.rho, 0.0
    if isinstance(loss, NoiseLoss):
        return loss.rho, 0.0
    eps = loss.epsilon
    return _up(eps * eps / 2) if eps < 1e154 else math.inf, getattr(loss, "delta", 0.0)


def _zcdp(losses: tuple[Composable, ...], delta: float) -> AccountedTotal:
    pairs = [_rho_of(loss) for loss in losses]
    rho = _total([p[0] for p in pairs])
    deltas = [p[1] for p in pairs if p[1] > 0]
    room = _room(delta, deltas)
    if room <= 0 and rho > 0 or room < 0:
        return AccountedTotal("zcdp", math.inf, delta, _own_delta_note(deltas, delta))
    if rho == 0:
        return AccountedTotal("zcdp", 0.0, delta, "")
    if not math.isfinite(rho):
        return AccountedTotal("zcdp", math.inf, delta, "the plan's ρ overflows float64")
    try:
        return AccountedTotal("zcdp", zcdp_epsilon(rho, room), delta, "")
    except ValueError:  # ρ so large that its ε overflows
        return AccountedTotal("zcdp", math.inf, delta, "the plan's ρ is too large for float64")


# ----------------------------------------------------------------------------------------------
# privacy-loss distributions


@functools.cache
def _pld():
    """dp_accounting's PLD module, imported on first use (it takes a while to load)."""
    from dp_accounting.pld import common, privacy_loss_distribution

    return privacy_loss_distribution, common


def _zcdp_loss_reach(rho: float) -> float:
    return zcdp_epsilon(rho, _ZCDP_FLOOR)


def _loss_span(loss: Composable) -> float:
    """How wide (in privacy loss) the release's PLD is, about: what the grid must cover."""
    if isinstance(loss, ThresholdLoss):
        return 0.0
    if isinstance(loss, NoiseLoss):
        if loss.epsilon is not None:
            return 2 * loss.epsilon
        mu = loss.sensitivity / loss.scale
        if loss.noise == "discrete_gaussian" and loss.scale > _DG_PLD_SIGMA:
            return 2 * _zcdp_loss_reach(loss.rho)
        return mu * mu + 26 * mu + 1.0
    if isinstance(loss, ZCDP):
        return 2 * _zcdp_loss_reach(loss.rho) if loss.rho < 1e150 else math.inf
    return 2 * loss.epsilon


def _discretization(losses: tuple[Composable, ...], given: float | None) -> float:
    with np.errstate(over="ignore"):
        span = math.fsum(_loss_span(loss) for loss in losses)
    if not span < 1e12:
        raise ValueError("releases: the plan's privacy loss is too large for PLD accounting "
                         "(its ε is in the thousands of billions); use basic composition")
    if given is None:
        return max(DISCRETIZATION, span / _MAX_PLD_POINTS)
    interval = check_positive("discretization", given)
    if span / interval > 4 * _MAX_PLD_POINTS or not interval <= 1.0:
        raise ValueError(f"discretization = {interval:g} is too fine for this plan (or above "
                         f"1): its losses span {span:.4g}; use at least "
                         f"{span / (4 * _MAX_PLD_POINTS):.3g}")
    return interval


def _lower_envelope(intercepts: np.ndarray, slopes: np.ndarray, losses: np.ndarray):
    """The lower envelope over [0, 1] of the lines y = c + s·x: its vertices x, the value at
    0, and for each segment its slope and the privacy loss that slope stands for."""
    order = np.lexsort((intercepts, -slopes))  # slope down, then the lower line first
    c, s, loss = intercepts[order], slopes[order], losses[order]
    first = np.ones(s.size, dtype=bool)
    first[1:] = s[1:] != s[:-1]
    c, s, loss = c[first], s[first], loss[first]
    hull: list[int] = []
    for i in range(s.size):  # over the lines (at most a few thousand), not over samples
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b is never the lowest if the new line meets a no later than b does
            if (c[i] - c[a]) * (s[a] - s[b]) <= (c[b] - c[a]) * (s[a] - s[i]):
                hull.pop()
            else:
                break
        hull.append(i)
    c, s, loss = c[hull], s[hull], loss[hull]
    breaks = (c[1:] - c[:-1]) / (s[:-1] - s[1:])
    inside = breaks[(breaks > 0) & (breaks < 1)]
    vertices = np.concatenate([[0.0], inside, [1.0]])
    active = np.searchsorted(breaks, 0.5 * (vertices[:-1] + vertices[1:]))
    at_zero = float(c[np.searchsorted(breaks, 0.0, side="right")])
    return vertices, at_zero, s[active], loss[active]


def _zcdp_pld(rho: float, interval: float):
    """A PLD that dominates every ρ-zCDP release.

    Each ε >= 0 with δ(ε) = min over Rényi orders of the Canonne–Kamath–Steinke bound is an
    (ε, δ) guarantee of every ρ-zCDP release, so every membership test against one has
    TPR <= δ + e^ε·FPR and TPR <= 1 − e^{−ε}(1 − δ − FPR). The lower envelope U of these lines
    over a grid of ε is concave, starts at U(0) = δ(ε_max) and ends at U(1) = 1; the pair of
    distributions whose best tests trace U exactly (one outcome per segment, of privacy loss
    log slope; U(0) at infinite loss) has a trade-off curve above every ρ-zCDP release's, so
    it dominates them, and PLDs of dominating pairs compose (Zhu, Dong & Wang 2022). Losses
    are rounded up to the grid.
    """
    # (beyond ε = 700 the slopes e^ε leave float64; the envelope's start, δ at the last ε,
    # then counts the rest as unbounded loss: still an upper bound)
    reach = min(_zcdp_loss_reach(rho), 700.0)
    count = int(min(_ZCDP_LINES, max(2, math.ceil(reach / interval) + 1)))
    eps = np.linspace(0.0, reach, count)
    a = _RENYI_ORDERS[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        log_delta = (a - 1) * (a * rho - eps[:, None]) + (a - 1) * np.log1p(-1 / a) - np.log(a)
    delta = np.minimum(1.0, np.exp(np.nanmin(log_delta, axis=1)))
    intercepts = np.concatenate([delta, 1.0 - np.exp(-eps) * (1.0 - delta), [1.0]])
    slopes = np.concatenate([np.exp(eps), np.exp(-eps), [0.0]])
    losses = np.concatenate([eps, -eps, [-np.inf]])
    vertices, at_zero, seg_slopes, seg_losses = _lower_envelope(intercepts, slopes, losses)
    mass = seg_slopes * np.diff(vertices)
    keep = (mass > 0) & np.isfinite(seg_losses)
    index = np.ceil(seg_losses[keep] / interval).astype(np.int64)
    pmf: dict[int, float] = {}
    for i, m in zip(index.tolist(), mass[keep].tolist(), strict=True):
        pmf[i] = pmf.get(i, 0.0) + m
    module, _ = _pld()
    return module.PrivacyLossDistribution.create_from_rounded_probability(
        pmf, at_zero, interval, pessimistic_estimate=True)


def _from_guarantee(epsilon: float, delta: float, interval: float):
    """The randomized-response pair of an (ε, δ) guarantee, which dominates every release
    with it: loss ε with probability (1 − δ)/(1 + e^{−ε}), −ε with (1 − δ)/(1 + e^ε), and
    unbounded with δ. As dp_accounting's ``from_privacy_parameters``, with the masses
    computed by the logistic function, which does not overflow at large ε."""
    module, _ = _pld()
    pmf: dict[int, float] = {}
    for loss, mass in ((epsilon, float(expit(epsilon))), (-epsilon, float(expit(-epsilon)))):
        index = math.ceil(loss / interval)
        pmf[index] = pmf.get(index, 0.0) + (1 - delta) * mass
    return module.PrivacyLossDistribution.create_from_rounded_probability(
        pmf, delta, interval, pessimistic_estimate=True)


@functools.lru_cache(maxsize=1024)
def _single_pld(loss: Composable, interval: float, connect_dots: bool):
    """The pessimistic PLD of one release (cached: a page recomputes the same rows)."""
    module, _ = _pld()
    options = {"pessimistic_estimate": True, "value_discretization_interval": interval,
               "use_connect_dots": connect_dots}
    if isinstance(loss, NoiseLoss):
        if loss.noise == "laplace":
            return module.from_laplace_mechanism(loss.scale, sensitivity=loss.sensitivity,
                                                 **options)
        if loss.noise == "gaussian":
            return module.from_gaussian_mechanism(loss.scale, sensitivity=loss.sensitivity,
                                                  **options)
        if loss.noise == "discrete_laplace":
            return module.from_discrete_laplace_mechanism(
                1.0 / loss.scale, sensitivity=int(loss.sensitivity), **options)
        if loss.scale <= _DG_PLD_SIGMA:
            return module.from_discrete_gaussian_mechanism(
                loss.scale, sensitivity=int(loss.sensitivity), **options)
        return _zcdp_pld(loss.rho, interval)
    if isinstance(loss, ThresholdLoss):
        return _from_guarantee(0.0, loss.delta, interval)
    if isinstance(loss, ZCDP):
        return _zcdp_pld(loss.rho, interval)
    return _from_guarantee(loss.epsilon, getattr(loss, "delta", 0.0), interval)


@functools.lru_cache(maxsize=1024)
def _repeated_pld(loss: Composable, count: int, interval: float, connect_dots: bool):
    single = _single_pld(loss, interval, connect_dots)
    return single if count == 1 else single.self_compose(count)


def _zcdp_only(loss: Composable) -> bool:
    """A release that enters the PLD through its ρ alone."""
    return isinstance(loss, ZCDP) or (isinstance(loss, NoiseLoss) and loss.noise ==
                                      "discrete_gaussian" and loss.scale > _DG_PLD_SIGMA)


def _composed_pld(losses: tuple[Composable, ...], interval: float, connect_dots: bool = True):
    """The PLD of the plan: the releases known only by their ρ composed first by zCDP (their
    ρ add up: tighter than composing their PLDs), identical releases self-composed (one FFT
    power), then the groups composed; every step pessimistic, so its ε at any δ is an upper
    bound."""
    rhos = [loss.rho for loss in losses if _zcdp_only(loss)]
    if rhos:
        losses = (*(loss for loss in losses if not _zcdp_only(loss)), ZCDP(_total(rhos)))
    result = None
    for loss, count in Counter(losses).items():
        part = _repeated_pld(loss, count, interval, connect_dots)
        result = part if result is None else result.compose(part)
    return result


def _check_pld_delta(delta: object) -> float:
    delta = check_delta("delta", delta, allow_zero=False)
    if delta < MIN_PLD_DELTA:
        raise ValueError(f"delta = {delta:g} is below {MIN_PLD_DELTA:g}, the smallest δ the "
                         "PLD accountant resolves")
    return delta


def compose_pld(releases: Iterable[object], *, delta: float,
                discretization: float | None = None, connect_dots: bool = True) -> float:
    """The plan's ε at ``delta`` from its privacy-loss distribution: the tight accountant.

    Each release's PLD is built by Google's ``dp_accounting`` with pessimistic rounding
    (connect-the-dots), from its noise when :func:`privacy_losses` knows it (Laplace,
    Gaussian, discrete Laplace, discrete Gaussian), else from its guarantee: a pure ε or an
    (ε, δ) pair as the randomized-response pair, which dominates every release with that
    guarantee; a ρ-zCDP guarantee as the pair of :func:`_zcdp_pld`; a threshold as an
    unbounded loss of probability δ. The PLDs are composed by FFT; the result is an upper
    bound on the plan's smallest ε at ``delta``, and never above basic composition's (which
    it is replaced by when the grid's rounding costs more than the distribution saves, as for
    a single pure-DP release whose ε is not on the grid).

    Parameters
    ----------
    releases : iterable
        The plan, as :func:`privacy_losses` reads it.
    delta : float
        In [:data:`MIN_PLD_DELTA`, 1).
    discretization : float, optional
        The loss grid's width; by default :data:`DISCRETIZATION`, coarser for plans whose
        losses span more than two million steps.
    connect_dots : bool
        True (the pages' default): a noise's PLD is discretised by connect-the-dots, which
        dominates the exact one and is the tighter. False: each privacy loss is rounded up to
        the grid (Meiser & Mohammadi's pessimistic rounding), which can only overstate ε,
        by at most one grid step per release: what a release records
        (``release.accounting.certified_spent``).

    Returns
    -------
    float
        ε (0.0 for an empty plan; inf when unbounded losses alone have probability above
        ``delta``, as when partition-selection thresholds spend more than it).

    References
    ----------
    S. Meiser, E. Mohammadi. "Tight on Budget? Tight Bounds for r-Fold Approximate
    Differential Privacy." CCS 2018. V. Doroshenko, B. Ghazi, P. Kamath, R. Kumar,
    P. Manurangsi. "Connect the Dots: Tighter Discrete Approximations of Privacy Loss
    Distributions." PETS 2022. Y. Zhu, J. Dong, Y.-X. Wang. "Optimal Accounting of
    Differential Privacy via Characteristic Function." AISTATS 2022.
    """
    losses = privacy_losses(releases)
    delta = _check_pld_delta(delta)
    interval = _discretization(losses, discretization)
    if not losses:
        return 0.0
    eps = float(_composed_pld(losses, interval, connect_dots).get_epsilon_for_delta(delta))
    eps = _up(eps) if math.isfinite(eps) else math.inf
    # The grid rounds each loss up by up to one step; for a few pure-DP releases that can
    # cost more than the distribution saves. Basic composition's ε is then the tighter of
    # two valid bounds at the same δ, and is what this accountant reports.
    return min(eps, _basic(losses, delta).epsilon)


def _pld_total(losses: tuple[Composable, ...], delta: float) -> AccountedTotal:
    eps = compose_pld(losses, delta=delta)
    note = ("" if math.isfinite(eps) else "unbounded losses (partition thresholds, δ of "
            "releases) alone have probability above δ; raise δ or the thresholds")
    return AccountedTotal("pld", eps, delta, note)


_ACCOUNT = {"basic": _basic, "advanced": _advanced, "zcdp": _zcdp, "pld": _pld_total}


def account(releases: Iterable[object], *, delta: float, accountant: str) -> AccountedTotal:
    """The plan's ε at ``delta`` under one accountant.

    - ``basic``: the releases' ε add up. Releases with an (ε, δ) guarantee or a threshold
      keep their own δ; the δ left is shared evenly among those whose ε depends on it
      (Gaussian noise, at its exact privacy profile; zCDP guarantees, by the CKS conversion).
    - ``advanced``: Kairouz, Oh & Viswanath's heterogeneous bound (:func:`_kov`) over the
      same per-release ε, with δ' the best of a few shares of the δ left.
    - ``zcdp``: the ρ add up (pure ε gives ε²/2; an (ε, δ) guarantee is δ-approximately
      ε²/2-zCDP, its δ kept), then the optimal conversion to ε at the δ left.
    - ``pld``: :func:`compose_pld`.
    """
    losses = privacy_losses(releases)
    accountant = check_choice("accountant", accountant, ACCOUNTANTS)
    delta = (_check_pld_delta(delta) if accountant == "pld"
             else check_delta("delta", delta, allow_zero=False))
    if not losses:
        return AccountedTotal(accountant, 0.0, delta, "")
    try:
        return _ACCOUNT[accountant](losses, delta)
    except (ValueError, OverflowError, IndexError) as error:  # a loss beyond float64
        if "releases" in str(error):
            raise
        raise ValueError(f"releases: the plan's privacy loss is too large for {accountant} "
                         f"accounting in float64 ({error})") from None


@dataclass(frozen=True)
class PlanAccounting:
    """A plan accounted four ways at one δ (see :func:`account`)."""

    basic: AccountedTotal
    advanced: AccountedTotal
    zcdp: AccountedTotal
    pld: AccountedTotal

    def of(self, accountant: str) -> AccountedTotal:
        """The total under ``accountant``."""
        return getattr(self, check_choice("accountant", accountant, ACCOUNTANTS))

    @property
    def tightest(self) -> AccountedTotal:
        """The smallest ε of the four (each is a valid guarantee at the same δ)."""
        return min((self.basic, self.advanced, self.zcdp, self.pld), key=lambda t: t.epsilon)

    def saving(self, over: str = "basic") -> float:
        """How much smaller the PLD's ε is than the ``over`` accountant's (negative when that
        one is tighter; nan when both are inf)."""
        other = self.of(over).epsilon
        with np.errstate(invalid="ignore"):
            return float(np.float64(other) - np.float64(self.pld.epsilon))


def account_plan(releases: Iterable[object], *, delta: float) -> PlanAccounting:
    """The plan accounted four ways at ``delta``: basic, advanced, zCDP and PLD."""
    losses = privacy_losses(releases)
    _check_pld_delta(delta)
    return PlanAccounting(*(account(losses, delta=delta, accountant=name)
                            for name in ACCOUNTANTS))


class BudgetCheck(NamedTuple):
    """Whether a plan fits a total budget under an accountant.

    Attributes
    ----------
    fits
        True when the plan's ε at the budget's δ is at most the budget's ε.
    spent
        The plan's ε under the accountant (inf when it cannot meet δ).
    left
        The budget's ε less ``spent`` (negative when over).
    reason
        Why it does not fit, in words (empty when it fits).
    """

    fits: bool
    spent: float
    left: float
    reason: str


def check_budget(releases: Iterable[object], *, epsilon: float, delta: float,
                 accountant: str) -> BudgetCheck:
    """Does the plan fit the total budget (ε, δ) under ``accountant``? With the reason when not.

    Figures in the reason round the way that is safe: what the plan spends up, the budget
    and what is left down.
    """
    epsilon = check_positive("epsilon", epsilon)
    total = account(releases, delta=delta, accountant=accountant)
    spent = total.epsilon
    left = epsilon - spent
    if spent <= epsilon:
        return BudgetCheck(True, spent, left, "")
    label = ACCOUNTANT_LABELS[total.accountant]
    if not math.isfinite(spent):
        reason = f"Under {label} the plan cannot meet δ = {upper(total.delta)}: {total.note}."
    else:
        reason = (f"Under {label} the plan spends ε = {upper(spent, 4)} at δ = "
                  f"{upper(total.delta)}, more than the budget ε = {lower(epsilon, 4)}: "
                  "remove a release, give releases more noise, or choose a tighter "
                  "accountant.")
    return BudgetCheck(False, spent, left, reason)
