"""What every query kind is: the :class:`QueryKind` base with its defaults, and the helpers the
kinds share to draw a release from its parts.

A kind's file holds its plan dataclass (JSON included) and one :class:`QueryKind` that says
what computes it (engine queries), what noises it (:mod:`plan.parts`), how a release draws it
from those parts and turns the noisy parts into released rows, how the card words the way it
reads the data, and what a program needs to release it. Nothing outside ``plan.kinds`` asks
which kind a query is.

Drawing is done through each part's measurement (a ``release.measurements.Certified``:
``draw(value)`` and ``integer``), so the kinds never import OpenDP.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from dpcore.intervals import noise_interval
from dpcore.partition import PARTITION_LAWS
from plan.fields import PlanError, PrivacyUnit

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["QueryKind", "Rows", "Intervals", "as_input", "number", "mean_of", "means_of",
           "draw_threshold", "WHOLE_LIMIT", "THRESHOLD_CHUNK", "declared_rule",
           "drawn_mechanism", "additive_intervals", "threshold_intervals"]

#: Released rows: (group labels, value) pairs; the group is empty for a single number.
Rows = tuple[tuple[tuple[str, ...], Any], ...]
#: One (lower, upper) per released row for its true value, or None where there is none.
Intervals = tuple[tuple[float, float] | None, ...]


#: Whole-number totals handed to OpenDP's integer samplers are saturated here: far inside
#: the 64-bit range (noise is added in 64 bits), and a public constant, so saturating is a
#: 1-Lipschitz map of the total that no data can turn into a refusal.
WHOLE_LIMIT = 2**62
#: Keys handed to partition selection's threshold measurement at a time.
THRESHOLD_CHUNK = 50_000


def _whole(value: float | int) -> int:
    if isinstance(value, float) and math.isnan(value):  # pragma: no cover — sums are not NaN
        raise ValueError("a whole-number total is NaN")
    return int(min(max(value, -WHOLE_LIMIT), WHOLE_LIMIT))


def _saturated(value: float) -> float:
    """A sum that overflows float64 is released as the largest float (what clamping the total
    does), never refused."""
    return min(max(float(value), -sys.float_info.max), sys.float_info.max)


def as_input(part: Any, value: Any) -> Any:
    """The true aggregate in the measurement's input type: whole numbers (saturated at
    ±:data:`WHOLE_LIMIT`) for a part over whole numbers, finite floats (saturated) else."""
    if isinstance(value, list | tuple | np.ndarray):
        return [as_input(part, v) for v in value]
    return _whole(value) if part.integer else _saturated(value)


def number(value: Any) -> Any:
    """A released number as JSON writes it: int for whole-number noise, float else."""
    return int(value) if isinstance(value, int | np.integer) else float(value)


def means_of(noisy_sum: Any, noisy_count: Any, lower: float, upper: float
             ) -> np.ndarray:
    """Post-processing of a mean: the noisy count floored at 1, the ratio clamped to the
    bounds. Vectorized over releases (any shape, broadcast)."""
    count = np.maximum(np.asarray(noisy_count, dtype=np.float64), 1.0)
    return np.clip(np.asarray(noisy_sum, dtype=np.float64) / count, lower, upper)


def mean_of(noisy_sum: Any, noisy_count: Any, lower: float, upper: float) -> float:
    """One released mean (:func:`means_of` of one noisy sum and count)."""
    return float(means_of(float(noisy_sum), float(noisy_count), lower, upper))


def draw_threshold(part: Any, counts: dict[str, Any]) -> dict[str, Any]:
    """Partition selection's measurement drawn over ``counts`` in chunks of
    :data:`THRESHOLD_CHUNK` keys; the noisy counts of the keys it keeps.

    It adds independent noise to each key's count and keeps the keys whose noisy count clears
    the threshold: disjoint chunks get independent noise with the same law as one draw over
    all keys, so the joint output (hence the privacy the map of one draw states) is unchanged;
    only the memory a draw holds is bounded, whatever the number of keys found.
    """
    kept: dict[str, Any] = {}
    items = iter(counts.items())
    while chunk := dict(itertools.islice(items, THRESHOLD_CHUNK)):
        kept |= part.draw(chunk)
    return kept


def drawn_mechanism(part: Any) -> Any:
    """The part's catalogue mechanism at the scale its measurement drew with (OpenDP's scale
    can be a few ulps above the plan's: the interval is read at the larger)."""
    mechanism = part.part.mechanism
    if part.opendp_scale > mechanism.scale:
        mechanism = mechanism._noise_scaled(part.opendp_scale / mechanism.scale)
    return mechanism


def _pairs(low: np.ndarray, high: np.ndarray) -> Intervals:
    return tuple((float(lo), float(hi)) for lo, hi in zip(low.reshape(-1), high.reshape(-1),
                                                          strict=True))


def additive_intervals(part: Any, values: Sequence[Any], alpha: float) -> Intervals:
    """(lower, upper) at 1 − ``alpha`` for each released value of an additive part, from its
    mechanism's law and scale alone (``dpcore.intervals.noise_interval``), each on its own."""
    if not len(values):
        return ()
    low, high = noise_interval(drawn_mechanism(part), np.asarray(values, dtype=np.float64),
                               alpha)
    return _pairs(low, high)


def threshold_intervals(part: Any, values: Sequence[Any], alpha: float) -> Intervals:
    """(lower, upper) at 1 − ``alpha`` for the noisy counts partition selection released,
    from the law of its noise on each count (before selection: given that a group was kept,
    its noise was more likely upwards, and the interval is conditional on being kept)."""
    if not len(values):
        return ()
    gate = part.part.mechanism
    noise = PARTITION_LAWS[gate.noise](sensitivity=1.0, scale=part.opendp_scale)
    low, high = noise_interval(noise, np.asarray(values, dtype=np.float64), alpha)
    return _pairs(low, high)


def declared_rule(column: str, what: str = "the declared categories") -> str:
    """The card's rule for values outside a declared list."""
    return (f"rows whose {column!r} is missing or not one of {what} are not counted (never "
            "refused: what the data holds goes through the mechanism)")


class QueryKind:
    """One kind of plan query. Subclasses set the class attributes and write ``build`` and
    ``draw``; the rest has defaults a kind overrides where it differs.

    Attributes
    ----------
    name : str
        The ``kind`` in the plan's JSON.
    spec : type
        The plan dataclass (``check``, ``to_dict``, ``from_fields``).
    families : tuple of str
        The mechanism families it takes ("noise", "selection"; none: its noise is fixed).
    statistic : str
        What the release files call its values.
    target : str or None
        The accuracy target kind its page proposes ("error", "selection", "rank").
    """

    name: ClassVar[str]
    spec: ClassVar[type]
    families: ClassVar[tuple[str, ...]] = ("noise",)
    statistic: ClassVar[str] = ""
    target: ClassVar[str | None] = "error"
    #: at most one query of this kind in a plan
    unique: ClassVar[bool] = False
    #: its answer is one number per cell (a category, a pair of categories): errors are read
    #: per cell
    per_cell: ClassVar[bool] = False
    #: one number post-processed from several noisy parts (:meth:`part_values`,
    #: :meth:`combine`): its error has no closed form, a page simulates it
    made_of_parts: ClassVar[bool] = False
    #: its error reads best as a share of the true value (a sum's scale is the data's)
    relative_error: ClassVar[bool] = False
    #: its answer is a number of rows (a count, counts per cell): a page shows it whole
    counts_rows: ClassVar[bool] = False
    #: its budget is split between a noisy sum and a noisy count by the plan's
    #: ``sum_share`` (a mean): see :meth:`splits_by_share`
    split_by_share: ClassVar[bool] = False
    #: its released value is clamped to the column's bounds (post-processing of a mean)
    clamps_to_bounds: ClassVar[bool] = False
    #: its sums are of deviations from the bounds' midpoint and of their squares (a variance)
    centred: ClassVar[bool] = False
    #: its parts can be drawn with numpy (a page simulates its accuracy, the simulation
    #: report draws it); a synthetic table's cannot (OpenDP measures marginals and fits a
    #: model): a page says so instead
    simulated: ClassVar[bool] = True

    def splits_by_share(self, spec: Any) -> bool:
        """Whether this query's budget is split by ``sum_share`` (:attr:`split_by_share`;
        a group-by's, by its statistic)."""
        return self.split_by_share

    # -- the plan --------------------------------------------------------------------------

    def columns(self, spec: Any) -> tuple[str, ...]:
        """The columns the query reads (never the person-id column)."""
        names = [getattr(spec, n, None) for n in ("column", "row", "key")]
        return tuple(n for n in names if n is not None)

    def declarations(self, spec: Any) -> list[tuple[str, Any]]:
        """(what, declaration) for each bound, category list and grid (for the card)."""
        return []

    def finds_groups(self, spec: Any) -> bool:
        """Whether its groups are found at release by partition selection."""
        return False

    def needs_mechanism(self, spec: Any) -> bool:
        return bool(self.families)

    def check_query(self, query: PlanQuery, path: str) -> None:
        """What a plan query of this kind must hold beyond its spec (mechanism, threshold)."""
        if query.threshold is not None:
            raise PlanError(f"{path}.threshold", "applies only to a group-by without declared "
                            "keys")
        self._check_mechanism(query, path)

    def _check_mechanism(self, query: PlanQuery, path: str) -> None:
        if not self.needs_mechanism(query.query):
            if query.mechanism is not None:
                raise PlanError(f"{path}.mechanism", f"a {self.name} query takes no mechanism "
                                "(its noise is fixed)")
            return
        if query.mechanism is None:
            raise PlanError(f"{path}.mechanism", "is required")
        if query.mechanism.family not in self.families:
            raise PlanError(f"{path}.mechanism.family", f"a {self.name} query takes a "
                            f"{' or '.join(self.families)} mechanism, got "
                            f"{query.mechanism.family}")
        query.mechanism.check(f"{path}.mechanism")

    def check_unit(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> None:
        """What the privacy unit must allow (the person-id column is no query's column)."""
        if unit.person_column is None:
            return
        for name in ("column", "row", "key"):
            if getattr(query.query, name, None) == unit.person_column:
                raise PlanError(f"{path}.query.{name}", "is the person-id column: releasing "
                                "statistics of it is not private")

    # -- building and drawing ---------------------------------------------------------------

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Any:
        """The query made concrete (``plan.parts.Built``): engine queries, parts."""
        raise NotImplementedError

    def keyed_queries(self, built: Any, keys: tuple[object, ...]) -> tuple[Any, ...]:
        raise TypeError(f"a {self.name} query finds no groups")

    def draw(self, built: Any, certified: Sequence[Any], aggs: tuple, keys: tuple
             ) -> tuple[str, Rows]:
        """(statistic, released rows): every part drawn on its true aggregate by its
        measurement (``certified``, in the order of ``built.parts``), post-processed.

        The default is for a kind of one number made of additive parts
        (:meth:`part_values`, :meth:`combine`): what a page simulates from the same parts."""
        noisy = self.draw_parts(built, certified, aggs)
        return self.statistic_of(built.query.query), (((), float(self.combine(built, noisy))),)

    def draw_parts(self, built: Any, certified: Sequence[Any], aggs: tuple) -> tuple:
        """Each part's noisy value, drawn on its true input (:meth:`part_values`)."""
        return tuple(part.draw(as_input(part, value))
                     for part, value in zip(certified, self.part_values(built, aggs),
                                            strict=True))

    # -- intervals ---------------------------------------------------------------------------

    def release(self, built: Any, certified: Sequence[Any], aggs: tuple, keys: tuple,
                alpha: float) -> tuple[str, Rows, Intervals]:
        """(statistic, released rows, an interval for each row's true value at 1 − alpha).

        The intervals are computed from the released values and public parameters only
        (:meth:`intervals`); a kind whose interval needs its parts' noisy values (a mean)
        overrides this."""
        statistic, rows = self.draw(built, certified, aggs, keys)
        return statistic, rows, self.intervals(built, certified, rows, alpha)

    def intervals(self, built: Any, certified: Sequence[Any], rows: Rows, alpha: float
                  ) -> Intervals:
        """The (1 − alpha) interval of each released row (None: this kind gives none)."""
        return tuple(None for _ in rows)

    def interval_method(self, spec: Any) -> str:
        """How its intervals are computed, a key of ``dpcore.intervals.METHODS`` ("" for
        none)."""
        return ""

    def interval_method_of(self, built: Any) -> str:
        """How ``built``'s intervals are computed (keys of ``dpcore.intervals.METHODS`` joined
        by ", "): :meth:`interval_method`, where a part's noise is kept within a public
        answer range (a clamped or bounded mechanism) read "range" — conservative — rather
        than "exact", or with ", range" added."""
        method = self.interval_method(built.query.query)
        ranged = any(p.mechanism.answer_range is not None for p in built.parts)
        if not method or not ranged:
            return method
        return "range" if method == "exact" else f"{method}, range"

    # -- one number made of parts (a mean, a variance): the release and the pages alike ------

    def part_values(self, built: Any, aggs: tuple) -> tuple[float, ...]:
        """The true input of each of ``built.parts`` (in their order), from the engine's
        aggregates of ``built.engine_queries``."""
        raise NotImplementedError(f"a {self.name} query is not one number made of parts")

    def combine(self, built: Any, noisy: Sequence[Any]) -> np.ndarray:
        """The released statistic from its parts' noisy values: post-processing, vectorized
        over releases (each part's values of one shape, broadcast). A page simulates a
        release as ``combine`` of its parts drawn with seeded numpy; a release, of its parts
        drawn by OpenDP."""
        raise NotImplementedError(f"a {self.name} query is not one number made of parts")

    # -- words and programs -----------------------------------------------------------------

    def statistic_of(self, spec: Any) -> str:
        return self.statistic or self.name

    def rules(self, query: PlanQuery) -> list[str]:
        """How the query reads the data, from the plan alone (the release card)."""
        return []

    def program_record(self, spec: Any) -> dict[str, Any]:
        """What the exported programs read for this query (plain data)."""
        return {}

    def microdata(self, spec: Any, rows: Rows) -> tuple[tuple[str, ...], np.ndarray] | None:
        """(header, records: one row per record, one column per header) when its released
        rows are records to publish as a table of their own (a synthetic table's rows); None
        for statistics."""
        return None

    def opendp_program_reason(self, spec: Any) -> str:
        """Why the exported OpenDP program cannot release it ("" when it can)."""
        return ""

    def spark_reason(self, spec: Any) -> str:
        """Why the PipelineDP program cannot release it ("" when it can)."""
        return (f"PipelineDP has no {self.name} with the plan's mechanism; export the OpenDP "
                "program for it, or drop it from the Spark plan")
