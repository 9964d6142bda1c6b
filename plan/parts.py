"""The pieces every query kind is built from: a privacy loss (``dpcore.accounting.Loss``,
re-exported), the noised parts with their mechanisms (catalogue mechanisms, report noisy max,
partition selection's threshold), a query made concrete (:class:`Built`), and the helpers
the kinds share to build them.

A kind (``plan.kinds``) says which parts its query has; a part carries what a release needs
to draw it (its mechanism, sensitivity, size, whether its input is whole numbers), so that
``release`` never branches on a query's kind; and each type of mechanism answers for itself
(:class:`PartMechanism`: its losses, name, simulation), so that nothing branches on its type.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from dpcore.accounting import Composable, Loss, partition_losses
from dpcore.contributions import ContributionBounds, Sensitivity, count_sensitivity
from dpcore.measures import ZCDP, PureDP, split_budget
from dpcore.mechanisms import CATALOGUE, make_mechanism
from dpcore.partition import (
    PARTITION_LAWS,
    PartitionPrivacy,
    partition_privacy,
    partition_scale,
    partition_threshold,
    release_partitions,
)
from dpcore.quantiles import quantile_fraction
from dpcore.queries import MEAN_MECHANISMS
from dpcore.selection import (
    NOISE_LABELS,
    noisy_max_privacy,
    noisy_max_scale,
    noisy_top_k,
    report_noisy_max,
)
from engine.queries import Contribution
from engine.queries import Query as EngineQuery
from plan.fields import Bounds, Noise, PlanError, PrivacyUnit, SelectionNoise, Threshold

if TYPE_CHECKING:   # annotations only: the plan and the kinds are built on this module
    from plan.kinds.base import QueryKind
    from plan.model import PlanQuery

__all__ = ["Loss", "PartMechanism", "NoisyMax", "PartitionThreshold", "Part", "Built", "field",
           "contribution", "contribution_bounds", "whole_sum", "additive", "split_parts",
           "noisy_max", "threshold", "share_down"]


class PartMechanism(Protocol):
    """What every part's mechanism answers, so that no code asks which type it is (OpenDP's
    measurement carries its map the same way): a catalogue mechanism
    (``dpcore.mechanisms.AdditiveMechanism``), :class:`NoisyMax`, :class:`PartitionThreshold`
    or a synthetic table (``plan.kinds.synthetic.MarginalSynthesis``).

    Its losses: ``dpcore.accounting.privacy_losses`` reads it (a catalogue mechanism by its
    noise law or guarantee, the others by their ``losses()``); how a release draws it: the
    certifier registered for its type (``release.measurements.CERTIFIERS``), which also names
    its OpenDP constructor and how the ledger describes it.
    """

    @property
    def scale(self) -> float:
        """Its noise scale (NaN when it has none of its own)."""

    @property
    def name(self) -> str:
        """Its name for users ("Laplace", "Permute-and-flip (exponential noise)")."""

    @property
    def answer_range(self) -> tuple[float, float] | None:
        """The public range its noisy answer is kept within, or None."""

    @property
    def integer_input(self) -> bool:
        """Whether its measurement takes whole numbers."""

    def simulate(self, value: Any, *, scale: float, rng: np.random.Generator) -> Any:
        """One release on ``value`` drawn with numpy's ``rng`` at ``scale`` (the part's
        :attr:`Part.score_scale`), shaped as its OpenDP measurement returns it; TypeError
        when it cannot be simulated."""


@dataclass(frozen=True)
class NoisyMax:
    """Report noisy max (or top-k) over a score vector: ``noise`` of ``scale`` added to each
    score; ``sensitivity`` the most one person moves any score; ``negate`` picks the smallest
    (a quantile's rank error). ``privacy`` from ``dpcore.selection.noisy_max_privacy``."""

    noise: str
    measure: str
    scale: float
    sensitivity: float
    monotonic: bool
    k: int
    negate: bool
    privacy: PureDP | ZCDP

    #: a release picks among the scores; nothing is kept within a range, all whole numbers
    answer_range = None
    integer_input = True

    @property
    def name(self) -> str:
        return NOISE_LABELS[self.noise]

    @property
    def described(self) -> str:
        """The mechanism as the ledger records it."""
        return self.name

    @property
    def opendp_constructor(self) -> str:
        return "make_noisy_max" if self.k == 1 else "make_noisy_top_k"

    def losses(self) -> tuple[Composable, ...]:
        """What the accountants compose: its guarantee."""
        return (self.privacy,)

    def privacy_under(self, measure: str) -> PureDP | ZCDP:
        """Its guarantee read in ``measure`` ("pure" or "zcdp"): the same noise at the same
        scale."""
        return noisy_max_privacy(self.scale, sensitivity=self.sensitivity, noise=self.noise,
                                 monotonic=self.monotonic, k=self.k, measure=measure)

    def simulate(self, value: Any, *, scale: float, rng: np.random.Generator) -> Any:
        """The index picked (the indices, for top-k) among the scores ``value``."""
        if self.k == 1:
            return int(report_noisy_max(value, scale=scale, noise=self.noise,
                                        negate=self.negate, rng=rng))
        return noisy_top_k(value, self.k, scale=scale, noise=self.noise, negate=self.negate,
                           rng=rng).tolist()


@dataclass(frozen=True)
class PartitionThreshold:
    """Partition selection: ``noise`` of ``scale`` on each group's count, groups below
    ``threshold`` dropped; ``privacy`` from ``dpcore.partition.partition_privacy``."""

    noise: str
    scale: float
    threshold: float
    max_rows: int
    max_groups: int
    privacy: PartitionPrivacy

    answer_range = None

    @property
    def name(self) -> str:
        """The name of the noise on the counts ("Laplace")."""
        return PARTITION_LAWS[self.noise].name

    @property
    def integer_input(self) -> bool:
        return self.noise == "discrete_laplace"

    @property
    def described(self) -> str:
        """The mechanism as the ledger records it."""
        return f"partition selection ({self.noise} noise, threshold {self.threshold:g})"

    @property
    def opendp_constructor(self) -> str:
        return "make_gaussian_threshold" if self.noise == "gaussian" else (
            "make_laplace_threshold")

    def losses(self) -> tuple[Composable, ...]:
        """What the accountants compose: the counts' noise and the threshold's δ
        (``dpcore.accounting.partition_losses``), tighter than its guarantee."""
        return partition_losses(noise=self.noise, scale=self.scale, threshold=self.threshold,
                                max_rows=self.max_rows, max_groups=self.max_groups)

    def simulate(self, value: Any, *, scale: float, rng: np.random.Generator) -> Any:
        """The groups of ``value`` (a dict of counts) whose noisy count clears the threshold,
        with those counts (whole numbers for whole-number noise)."""
        names = list(value)
        if not names:
            return {}
        drawn = release_partitions([value[n] for n in names], threshold=self.threshold,
                                   noise=self.noise, scale=scale, rng=rng)
        kept = np.flatnonzero(drawn.kept)
        counts = drawn.noisy_counts[kept]
        counts = counts.astype(np.int64) if self.integer_input else counts
        return dict(zip((names[i] for i in kept), counts.tolist(), strict=True))


@dataclass(frozen=True, eq=False)
class Part:
    """One noised piece of a query: ``name`` ("value", "sum", "count", "groups", "q=0.5"),
    its mechanism, the sensitivity its noise is calibrated to, and its planned loss.

    What a release needs to build its measurement, so that it never asks which query kind
    the part belongs to: ``size`` the public number of cells of a vector (None: one number;
    -1: the groups found at release), ``integer`` whether its true input is whole numbers
    (counts; sums rounded per row for whole-number noise), and for a noisy arg-min of rank
    errors the ``quantile`` level and ``score_rows`` (the values one person adds).
    """

    name: str
    mechanism: PartMechanism
    sensitivity: float
    loss: Loss
    size: int | None = None
    integer: bool = False
    quantile: float | None = None
    score_rows: int = 1

    @property
    def scale(self) -> float:
        return self.mechanism.scale

    @property
    def score_scale(self) -> float:
        """The scale in the units of the values it draws on, as its OpenDP measurement takes
        it: a quantile's scores are its rank errors times the level's denominator."""
        if self.quantile is None:
            return self.mechanism.scale
        return self.mechanism.scale * quantile_fraction(self.quantile)[1]


@dataclass(frozen=True, eq=False)
class Built:
    """A plan query made concrete.

    ``engine_queries`` compute its true aggregate (for partition selection: the distinct keys;
    :meth:`keyed_queries` then gives the queries over the keys found). ``parts`` are the
    noised pieces with their mechanisms, in the order they are drawn. ``sensitivity`` is the
    statistic's sensitivity under the privacy unit (add/remove one person, after the
    contribution bounds).
    """

    query: PlanQuery
    unit: PrivacyUnit
    engine_queries: tuple[EngineQuery, ...]
    parts: tuple[Part, ...]
    sensitivity: Sensitivity
    #: The query's kind (``plan.kinds``): what computes, draws and words it. The kind that
    #: builds it passes itself (the kinds build on this module, which cannot look them up).
    kind: QueryKind

    @property
    def mechanism(self) -> PartMechanism:
        """The first part's mechanism (the only one, except for means and grouped sums)."""
        return self.parts[0].mechanism

    @property
    def losses(self) -> tuple[Loss, ...]:
        return tuple(part.loss for part in self.parts)


    @property
    def finds_groups(self) -> bool:
        return self.kind.finds_groups(self.query.query)

    def keyed_queries(self, keys: tuple[object, ...]) -> tuple[EngineQuery, ...]:
        """The engine queries over the ``keys`` found (partition selection)."""
        return self.kind.keyed_queries(self, keys)


# --------------------------------------------------------------------------------------------
# helpers the kinds share


@contextmanager
def field(path: str) -> Iterator[None]:
    """A dpcore ValueError/TypeError raised while building becomes a PlanError at ``path``."""
    try:
        yield
    except PlanError:
        raise
    except (ValueError, TypeError) as exc:
        raise PlanError(path, str(exc)) from None


def contribution(unit: PrivacyUnit, *, grouped: bool = True,
                 seed: int = 0) -> Contribution | None:
    """The engine's truncation for ``unit`` (None: one row is one person, nothing to bound):
    the one place a privacy unit becomes the engine's input. A query without groups
    (``grouped`` False) keeps ``max_rows`` rows in all; ``seed`` fixes which rows a person
    keeps (a release draws with seed 0; the pages' simulations with theirs)."""
    if unit.person_column is None:
        return None
    return Contribution(unit.person_column, unit.max_rows,
                        unit.max_groups if grouped else None, seed)


def whole_sum(noise: Noise | None, bounds: Bounds) -> bool:
    """Whether a sum is computed in whole numbers (each clamped value rounded, ties to even):
    when its noise is whole-number noise and its bounds are whole, so that the answer is a
    whole number whatever the column holds (a rule on each row, never a refusal)."""
    return (isinstance(noise, Noise) and CATALOGUE[noise.kind].integer_only
            and float(bounds.lower).is_integer() and float(bounds.upper).is_integer()
            and abs(bounds.lower) < 2**63 and abs(bounds.upper) < 2**63)


def contribution_bounds(unit: PrivacyUnit, *, grouped: bool) -> ContributionBounds:
    return unit.bounds(grouped=grouped)


def _norm(kind: str, sensitivity: Sensitivity) -> float:
    return sensitivity.l2 if CATALOGUE[kind].sensitivity_norm == "L2" else sensitivity.l1


def additive(noise: Noise, sensitivity: Sensitivity, path: str,
             budget: dict[str, float] | None = None, *, name: str = "value",
             size: int | None = None, integer: bool = False) -> Part:
    """A catalogue mechanism at this sensitivity, with the noise's budget (or ``budget``):
    a part named ``name`` over ``size`` cells (None: one number) of whole numbers or not."""
    options = {name: getattr(noise, name) for name in ("lower", "upper", "gamma")
               if getattr(noise, name) is not None}
    given = noise.budget() if budget is None else budget
    norm = _norm(noise.kind, sensitivity)
    if CATALOGUE[noise.kind].integer_only and integer:
        # whole-number noise on whole numbers (counts): a whole sensitivity, rounded up (a
        # larger one is still a valid bound; an L2 of √k·r is not whole)
        norm = float(math.ceil(norm))
    with field(path):
        mechanism = make_mechanism(noise.kind, sensitivity=norm, **given, **options)
    return Part(name, mechanism, norm, Loss.of(mechanism.privacy, read_at=noise.delta),
                size=size, integer=integer)


def split_parts(noise: Noise, share: float, sensitivities: tuple[Sensitivity, Sensitivity],
                path: str, query_path: str, *, size: int | None = None,
                whole: bool = False) -> tuple[Part, Part]:
    """A mean's two parts, as ``dpcore.queries.NoisyMean`` builds them: the sum gets
    ``share`` of every budget keyword (``measures.split_budget``), the count the rest
    (``size`` cells each; the sum in whole numbers when ``whole``)."""
    if noise.kind not in MEAN_MECHANISMS:
        raise PlanError(f"{path}.kind", f"a mean takes a mechanism without an answer range "
                        f"({', '.join(MEAN_MECHANISMS)}), got {noise.kind}")
    halves = {}
    with field(f"{query_path}.sum_share"):
        for name, value in noise.budget().items():
            halves[name] = split_budget(value, share)
    read_at = None if noise.delta is None or noise.measure != "zcdp" else split_budget(
        noise.delta, share)
    parts = []
    for i, (name, sens) in enumerate(zip(("sum", "count"), sensitivities, strict=True)):
        part = additive(noise, sens, path, {k: pair[i] for k, pair in halves.items()},
                        name=name, size=size, integer=whole or name == "count")
        loss = part.loss if read_at is None else Loss.of(part.mechanism.privacy,
                                                         read_at=read_at[i])
        parts.append(Part(name, part.mechanism, part.sensitivity, loss, size=size,
                          integer=part.integer))
    return parts[0], parts[1]


def noisy_max(noise: SelectionNoise, *, sensitivity: float, monotonic: bool, k: int,
               negate: bool, epsilon: float | None, rho: float | None, path: str) -> NoisyMax:
    target = PureDP(epsilon) if noise.measure == "pure" else ZCDP(rho)
    with field(path):
        scale = noisy_max_scale(target, sensitivity=sensitivity, noise=noise.noise,
                                monotonic=monotonic, k=k)
        privacy = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise.noise,
                                    monotonic=monotonic, k=k, measure=noise.measure)
    return NoisyMax(noise.noise, noise.measure, scale, sensitivity, monotonic, k, negate,
                    privacy)


def threshold(spec: Threshold, unit: PrivacyUnit, path: str) -> Part:
    """Partition selection's part: noise on each group's count, groups below the threshold
    dropped (the groups are found at release: size -1)."""
    r = unit.max_rows
    k = 1 if unit.person_column is None else unit.max_groups
    with field(path):
        scale = partition_scale(noise=spec.noise, max_rows=r, max_groups=k,
                                epsilon=spec.epsilon, rho=spec.rho)
        level = partition_threshold(noise=spec.noise, scale=scale, delta=spec.delta,
                                    max_rows=r, max_groups=k)
        privacy = partition_privacy(noise=spec.noise, scale=scale, threshold=level,
                                    max_rows=r, max_groups=k)
    mechanism = PartitionThreshold(spec.noise, scale, level, r, k, privacy)
    loss = Loss.of(privacy.measure, delta=privacy.delta, read_at=spec.delta_noise)
    linf = count_sensitivity(ContributionBounds(r, k))
    return Part("groups", mechanism, linf.l2 if spec.noise == "gaussian" else linf.l1,
                loss, size=-1, integer=True)


def share_down(total: float, m: int) -> float:
    """total / m, lowered until m shares add up to at most total."""
    share = total / m
    while share > 0 and math.fsum([share] * m) > total:
        share = math.nextafter(share, 0.0)
    if not share > 0:
        raise PlanError("", f"{total:g} split {m} ways underflows float64")
    return share


