"""From a plan query to what computes and noises it: its kind (``plan.kinds``) builds the
engine queries, the noised parts with their mechanisms (``plan.parts``), and its sensitivity
under the privacy unit.

Nothing here reads data: a partition selection's groups come from the engine at release
time (:meth:`plan.parts.Built.keyed_queries`). The simulator and the release both start
from here, so a release noises each query with the very scale the plan shows.
"""

from __future__ import annotations

from plan.kinds import kind_of
from plan.kinds.max_rows import max_rows_draw
from plan.model import Plan, PlanError, PlanQuery, PrivacyUnit
from plan.parts import Built, Loss, NoisyMax, Part, PartitionThreshold

__all__ = ["Loss", "NoisyMax", "PartitionThreshold", "Part", "Built", "build", "build_plan",
           "max_rows_draw"]


def build(query: PlanQuery, unit: PrivacyUnit, *, path: str = "query") -> Built:
    """The engine queries, mechanisms and sensitivities of one plan query.

    Raises
    ------
    PlanError
        A mechanism cannot be built as planned (an integer-only kind on fractional bounds, a
        budget too small for float64, …), naming the field under ``path``; a query that is
        not of a known kind.
    """
    try:
        kind = kind_of(query.query)
    except TypeError as exc:
        raise PlanError(f"{path}.query", str(exc)) from None
    return kind.build(query, unit, path)


def build_plan(plan: Plan) -> tuple[Built, ...]:
    """Every query of the plan built (``PlanError`` naming the first one that cannot be)."""
    return tuple(build(q, plan.privacy_unit, path=f"queries[{i}]")
                 for i, q in enumerate(plan.queries))
