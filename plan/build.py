"""From a plan query to what computes and noises it: engine queries, dpcore mechanisms,
sensitivities under the privacy unit, and the privacy each part is planned to spend.

Nothing here reads data: a partition selection's groups come from the engine at release
time (:meth:`Built.keyed_queries`). The simulator and the release both start from here, so a
release noises each query with the very scale the plan shows.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

from dpcore.contributions import (
    ContributionBounds,
    Sensitivity,
    count_sensitivity,
    mean_sensitivities,
    sum_sensitivity,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP, split_budget
from dpcore.mechanisms import CATALOGUE, AdditiveMechanism, make_mechanism
from dpcore.partition import (
    PartitionPrivacy,
    partition_privacy,
    partition_scale,
    partition_threshold,
)
from dpcore.quantiles import quantile_sensitivity, split_quantile_budget
from dpcore.queries import MEAN_MECHANISMS
from dpcore.selection import noisy_max_privacy, noisy_max_scale
from engine.queries import (
    Binned,
    BoundedSum,
    Contribution,
    Count,
    Crosstab,
    DistinctValues,
    GroupedSum,
    Histogram,
)
from engine.queries import Query as EngineQuery
from plan import model
from plan.model import Noise, Plan, PlanError, PlanQuery, PrivacyUnit, SelectionNoise, Threshold

__all__ = ["Loss", "NoisyMax", "PartitionThreshold", "Part", "Built", "build", "build_plan",
           "max_rows_draw"]


@dataclass(frozen=True)
class Loss:
    """One privacy cost as its mechanism states it.

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
        if isinstance(measure, PureDP):
            return Loss(epsilon=measure.epsilon, delta=delta)
        if isinstance(measure, ApproxDP):
            return Loss(epsilon=measure.epsilon, delta=measure.delta + delta)
        return Loss(rho=measure.rho, delta=delta, read_at=read_at)

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


@dataclass(frozen=True, eq=False)
class Part:
    """One noised piece of a query: ``name`` ("value", "sum", "count", "groups", "q=0.5"),
    its mechanism, the sensitivity its noise is calibrated to, and its planned loss."""

    name: str
    mechanism: AdditiveMechanism | NoisyMax | PartitionThreshold
    sensitivity: float
    loss: Loss

    @property
    def scale(self) -> float:
        return self.mechanism.scale


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

    @property
    def mechanism(self) -> AdditiveMechanism | NoisyMax | PartitionThreshold:
        """The first part's mechanism (the only one, except for means and grouped sums)."""
        return self.parts[0].mechanism

    @property
    def losses(self) -> tuple[Loss, ...]:
        return tuple(part.loss for part in self.parts)

    @property
    def finds_groups(self) -> bool:
        return isinstance(self.query.query, model.GroupBy) and self.query.query.keys is None

    def keyed_queries(self, keys: tuple[object, ...]) -> tuple[EngineQuery, ...]:
        """The engine queries of a partition selection over the ``keys`` found."""
        q = self.query.query
        if not isinstance(q, model.GroupBy):
            raise TypeError("only a group-by has keys")
        contribution = _contribution(self.unit, grouped=True)
        counts = Histogram(q.key, keys, contribution)
        if q.statistic == "count":
            return (counts,)
        return (counts, GroupedSum(q.key, keys, q.column, q.bounds.lower, q.bounds.upper,
                                   contribution, whole=_whole(self.query.mechanism,
                                                              q.bounds)))


# --------------------------------------------------------------------------------------------
# helpers


@contextmanager
def _field(path: str) -> Iterator[None]:
    """A dpcore ValueError/TypeError raised while building becomes a PlanError at ``path``."""
    try:
        yield
    except PlanError:
        raise
    except (ValueError, TypeError) as exc:
        raise PlanError(path, str(exc)) from None


def _contribution(unit: PrivacyUnit, *, grouped: bool) -> Contribution | None:
    if unit.person_column is None:
        return None
    return Contribution(unit.person_column, unit.max_rows,
                        unit.max_groups if grouped else None)


def _whole(noise: Noise | None, bounds: model.Bounds) -> bool:
    """Whether a sum is computed in whole numbers (each clamped value rounded, ties to even):
    when its noise is whole-number noise and its bounds are whole, so that the answer is a
    whole number whatever the column holds (a rule on each row, never a refusal)."""
    return (isinstance(noise, Noise) and CATALOGUE[noise.kind].integer_only
            and float(bounds.lower).is_integer() and float(bounds.upper).is_integer()
            and abs(bounds.lower) < 2**63 and abs(bounds.upper) < 2**63)


def _bounds(unit: PrivacyUnit, *, grouped: bool) -> ContributionBounds:
    return ContributionBounds(unit.max_rows, unit.max_groups if grouped else None)


def _norm(kind: str, sensitivity: Sensitivity) -> float:
    return sensitivity.l2 if CATALOGUE[kind].sensitivity_norm == "L2" else sensitivity.l1


def _additive(noise: Noise, sensitivity: Sensitivity, path: str,
              budget: dict[str, float] | None = None) -> Part:
    """A catalogue mechanism at this sensitivity, with the noise's budget (or ``budget``)."""
    options = {name: getattr(noise, name) for name in ("lower", "upper", "gamma")
               if getattr(noise, name) is not None}
    given = noise.budget() if budget is None else budget
    norm = _norm(noise.kind, sensitivity)
    with _field(path):
        mechanism = make_mechanism(noise.kind, sensitivity=norm, **given, **options)
    return Part("value", mechanism, norm, Loss.of(mechanism.privacy, read_at=noise.delta))


def _split_parts(noise: Noise, share: float, sensitivities: tuple[Sensitivity, Sensitivity],
                 path: str, query_path: str) -> tuple[Part, Part]:
    """A mean's two parts, as ``dpcore.queries.NoisyMean`` builds them: the sum gets
    ``share`` of every budget keyword (``measures.split_budget``), the count the rest."""
    if noise.kind not in MEAN_MECHANISMS:
        raise PlanError(f"{path}.kind", f"a mean takes a mechanism without an answer range "
                        f"({', '.join(MEAN_MECHANISMS)}), got {noise.kind}")
    halves = {}
    with _field(f"{query_path}.sum_share"):
        for name, value in noise.budget().items():
            halves[name] = split_budget(value, share)
    read_at = None if noise.delta is None or noise.measure != "zcdp" else split_budget(
        noise.delta, share)
    parts = []
    for i, (name, sens) in enumerate(zip(("sum", "count"), sensitivities, strict=True)):
        part = _additive(noise, sens, path, {k: pair[i] for k, pair in halves.items()})
        loss = part.loss if read_at is None else Loss.of(part.mechanism.privacy,
                                                         read_at=read_at[i])
        parts.append(Part(name, part.mechanism, part.sensitivity, loss))
    return parts[0], parts[1]


def _noisy_max(noise: SelectionNoise, *, sensitivity: float, monotonic: bool, k: int,
               negate: bool, epsilon: float | None, rho: float | None, path: str) -> NoisyMax:
    target = PureDP(epsilon) if noise.measure == "pure" else ZCDP(rho)
    with _field(path):
        scale = noisy_max_scale(target, sensitivity=sensitivity, noise=noise.noise,
                                monotonic=monotonic, k=k)
        privacy = noisy_max_privacy(scale, sensitivity=sensitivity, noise=noise.noise,
                                    monotonic=monotonic, k=k, measure=noise.measure)
    return NoisyMax(noise.noise, noise.measure, scale, sensitivity, monotonic, k, negate,
                    privacy)


def _threshold(threshold: Threshold, unit: PrivacyUnit, path: str) -> Part:
    r = unit.max_rows
    k = 1 if unit.person_column is None else unit.max_groups
    with _field(path):
        scale = partition_scale(noise=threshold.noise, max_rows=r, max_groups=k,
                                epsilon=threshold.epsilon, rho=threshold.rho)
        level = partition_threshold(noise=threshold.noise, scale=scale, delta=threshold.delta,
                                    max_rows=r, max_groups=k)
        privacy = partition_privacy(noise=threshold.noise, scale=scale, threshold=level,
                                    max_rows=r, max_groups=k)
    mechanism = PartitionThreshold(threshold.noise, scale, level, r, k, privacy)
    loss = Loss.of(privacy.measure, delta=privacy.delta, read_at=threshold.delta_noise)
    linf = count_sensitivity(ContributionBounds(r, k))
    return Part("groups", mechanism, linf.l2 if threshold.noise == "gaussian" else linf.l1,
                loss)


# --------------------------------------------------------------------------------------------
# build


def build(query: PlanQuery, unit: PrivacyUnit, *, path: str = "query") -> Built:
    """The engine queries, mechanisms and sensitivities of one plan query.

    Raises
    ------
    PlanError
        A mechanism cannot be built as planned (an integer-only kind on fractional bounds, a
        budget too small for float64, …), naming the field under ``path``.
    """
    q = query.query
    qp, mp = f"{path}.query", f"{path}.mechanism"
    noise = query.mechanism
    if isinstance(q, model.Count):
        sens = count_sensitivity(_bounds(unit, grouped=False))
        return Built(query, unit, (Count(_contribution(unit, grouped=False)),),
                     (_additive(noise, sens, mp),), sens)
    if isinstance(q, model.Sum | model.Mean):
        engine = BoundedSum(q.column, q.bounds.lower, q.bounds.upper,
                            _contribution(unit, grouped=False),
                            whole=_whole(noise, q.bounds))
        of = sum_sensitivity if isinstance(q, model.Sum) else mean_sensitivities
        with _field(f"{qp}.bounds"):
            sens = of(_bounds(unit, grouped=False), lower=q.bounds.lower, upper=q.bounds.upper)
        if isinstance(q, model.Sum):
            return Built(query, unit, (engine,), (_additive(noise, sens, mp),), sens)
        return Built(query, unit, (engine,), _split_parts(noise, q.sum_share, sens, mp, qp),
                     sens[0])
    if isinstance(q, model.Histogram | model.Crosstab):
        sens = count_sensitivity(_bounds(unit, grouped=True))
        contribution = _contribution(unit, grouped=True)
        if isinstance(q, model.Crosstab):
            engine: EngineQuery = Crosstab(q.row, q.column, q.row_categories.values,
                                           q.column_categories.values, contribution)
        elif q.categories is not None:
            engine = Histogram(q.column, q.categories.values, contribution)
        else:
            engine = Binned(q.column, q.edges.values, "bins", q.outside, contribution)
        return Built(query, unit, (engine,), (_additive(noise, sens, mp),), sens)
    if isinstance(q, model.GroupBy):
        return _build_group_by(query, q, unit, path)
    if isinstance(q, model.Quantiles):
        return _build_quantiles(query, q, unit, path)
    if isinstance(q, model.MaxRows):
        return _build_max_rows(query, q, unit, path)
    if isinstance(q, model.Selection):
        sens = count_sensitivity(_bounds(unit, grouped=True))
        selection = noise
        mechanism = _noisy_max(selection, sensitivity=sens.linf, monotonic=True, k=q.k,
                               negate=False, epsilon=selection.epsilon, rho=selection.rho,
                               path=mp)
        engine = Histogram(q.column, q.candidates.values, _contribution(unit, grouped=True))
        loss = Loss.of(mechanism.privacy, read_at=selection.delta)
        return Built(query, unit, (engine,), (Part("choice", mechanism, sens.linf, loss),),
                     sens)
    raise PlanError(qp, f"unknown query {type(q).__name__}")  # pragma: no cover


def _build_group_by(query: PlanQuery, q: model.GroupBy, unit: PrivacyUnit,
                    path: str) -> Built:
    qp, mp = f"{path}.query", f"{path}.mechanism"
    grouped = _bounds(unit, grouped=True)
    contribution = _contribution(unit, grouped=True)
    parts: list[Part] = []
    if q.keys is None:
        parts.append(_threshold(query.threshold, unit, f"{path}.threshold"))
        # Every key the data holds: how many there are is not public, so no cap can refuse
        # (a refusal would disclose it) or cut the list (one person's key would push out
        # another's). The threshold is drawn over chunks of keys (release.run).
        engine: tuple[EngineQuery, ...] = (DistinctValues(q.key, limit=None),)
    elif q.statistic == "count":
        engine = (Histogram(q.key, q.keys.values, contribution),)
    else:
        engine = (GroupedSum(q.key, q.keys.values, q.column, q.bounds.lower, q.bounds.upper,
                             contribution, whole=_whole(query.mechanism, q.bounds)),)
    if q.statistic == "count":
        sens = count_sensitivity(grouped)
        if q.keys is not None:
            parts.append(_additive(query.mechanism, sens, mp))
    elif q.statistic == "sum":
        with _field(f"{qp}.bounds"):
            sens = sum_sensitivity(grouped, lower=q.bounds.lower, upper=q.bounds.upper)
        part = _additive(query.mechanism, sens, mp)
        parts.append(Part("sum", part.mechanism, part.sensitivity, part.loss))
    else:
        with _field(f"{qp}.bounds"):
            both = mean_sensitivities(grouped, lower=q.bounds.lower, upper=q.bounds.upper)
        parts.extend(_split_parts(query.mechanism, q.sum_share, both, mp, qp))
        sens = both[0]
    return Built(query, unit, engine, tuple(parts), sens)


def _build_quantiles(query: PlanQuery, q: model.Quantiles, unit: PrivacyUnit,
                     path: str) -> Built:
    mp = f"{path}.mechanism"
    noise: SelectionNoise = query.mechanism
    m = len(q.levels)
    with _field(mp):
        if noise.measure == "pure":
            each_eps, each_rho = split_quantile_budget(noise.epsilon, m), None
        else:
            each_eps, each_rho = None, _share_down(noise.rho, m)
    read_at = None if noise.delta is None else _share_down(noise.delta, m)
    parts = []
    for level in q.levels:
        with _field(f"{path}.query.levels"):
            sens = quantile_sensitivity(level, max_rows=unit.max_rows)
        mechanism = _noisy_max(noise, sensitivity=sens, monotonic=False, k=1, negate=True,
                               epsilon=each_eps, rho=each_rho, path=mp)
        parts.append(Part(f"q={level:g}", mechanism, sens,
                          Loss.of(mechanism.privacy, read_at=read_at)))
    engine = Binned(q.column, q.candidates.values, "ranks", "separate",
                    _contribution(unit, grouped=False))
    top = quantile_sensitivity(max(q.levels, key=lambda v: abs(v - 0.5)),
                               max_rows=unit.max_rows)
    return Built(query, unit, (engine,), tuple(parts), Sensitivity(top, top, top))


def max_rows_draw(level: float, epsilon: float, *, path: str = "query") -> Part:
    """One draw of a DP quantile of rows per person: report noisy max with exponential
    noise (ε-DP) over the candidates' rank errors, each person adding one value (their number
    of rows), so the sensitivity is max(q, 1 − q) whatever the bounds."""
    with _field(f"{path}.query.level"):
        sens = quantile_sensitivity(level, max_rows=1)
    mechanism = _noisy_max(model.SelectionNoise("exponential", "pure", epsilon=epsilon),
                           sensitivity=sens, monotonic=False, k=1, negate=True,
                           epsilon=epsilon, rho=None, path=f"{path}.query.epsilons")
    return Part("draw", mechanism, sens, Loss.of(mechanism.privacy))


def _build_max_rows(query: PlanQuery, q: model.MaxRows, unit: PrivacyUnit,
                    path: str) -> Built:
    """Every draw the planner saw, each a part with its ε; nothing is computed at release
    (the value was drawn before, and is the unit's max rows)."""
    parts = tuple(replace(max_rows_draw(q.level, eps, path=path), name=f"draw {i + 1}")
                  for i, eps in enumerate(q.epsilons))
    top = parts[0].sensitivity
    return Built(query, unit, (), parts, Sensitivity(top, top, top))


def _share_down(total: float, m: int) -> float:
    """total / m, lowered until m shares add up to at most total."""
    share = total / m
    while share > 0 and math.fsum([share] * m) > total:
        share = math.nextafter(share, 0.0)
    if not share > 0:
        raise PlanError("", f"{total:g} split {m} ways underflows float64")
    return share


def build_plan(plan: Plan) -> tuple[Built, ...]:
    """Every query of the plan built (``PlanError`` naming the first one that cannot be)."""
    return tuple(build(q, plan.privacy_unit, path=f"queries[{i}]")
                 for i, q in enumerate(plan.queries))
