"""One simulated draw of a release plan, for the simulation report: every query built as a
release builds it (``plan.build``), its true aggregates computed as a release computes them,
and each part drawn once with seeded numpy where a release draws it with OpenDP.

The kinds' own ``draw`` turns the noisy parts into rows, as in a release: a part here answers
what a kind asks of a ``release.measurements.Certified`` (``part``, ``integer``,
``opendp_scale``, ``draw``). Nothing is certified by OpenDP, recorded or charged: the values
are a simulation, not a release (seeded noise can be repeated, so they protect no one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine import Engine, engine_from_env
from engine.sources import Source
from plan.build import Built, Part, build_plan
from plan.model import Plan
from release.run import _plan_aggregates

__all__ = ["SimulatedPart", "simulated_part", "simulated_parts", "simulate_plan"]


@dataclass(frozen=True, eq=False)
class SimulatedPart:
    """One part of a query drawn with numpy's ``rng`` instead of its OpenDP measurement:
    whole-number input where the release's measurement takes whole numbers (``integer``), and
    the scale in the units of the scores it draws on (``opendp_scale``: a quantile's scores
    are its rank errors times the level's denominator, as OpenDP's are)."""

    part: Part
    integer: bool
    opendp_scale: float
    rng: np.random.Generator | None = None
    note: str = ""

    def draw(self, value: Any) -> Any:
        """One simulated release of this part on ``value`` (a number, a list, or a dict of
        counts for partition selection), shaped as the OpenDP measurement returns it: the
        part's mechanism draws itself (``plan.parts.PartMechanism.simulate``)."""
        simulate = getattr(self.part.mechanism, "simulate", None)
        if simulate is None:
            raise TypeError(f"no simulation for the part {self.part.name!r} "
                            f"({type(self.part.mechanism).__name__})")
        return simulate(value, scale=self.opendp_scale, rng=self.rng)


def simulated_part(part: Part, rng: np.random.Generator | None = None) -> SimulatedPart:
    """``part`` as its measurement hands it to the kind: whole-number input, the scale in the
    units of the scores it draws on; drawn with ``rng`` (None: to read its interval only)."""
    return SimulatedPart(part, part.mechanism.integer_input, part.score_scale, rng)


def simulated_parts(built: Built, rng: np.random.Generator | None = None
                    ) -> tuple[SimulatedPart, ...]:
    """Every part of ``built``, in its order, drawn with ``rng`` (None: to read the kind's
    intervals only, as a page does for the values it drew itself)."""
    return tuple(simulated_part(part, rng) for part in built.parts)


def simulate_plan(plan: Plan, source: Source, *, seed: int, engine: Engine | None = None
                  ) -> dict[str, Sequence[tuple[Sequence[Any], Any]]]:
    """One simulated release of ``plan`` on ``source``: each query's rows ``(group, value)``
    by its id, as ``release.package.simulation_package`` takes them. The same ``seed`` gives
    the same draw (a float sum is exact and rounded once, whatever the engine's order of
    addition: ``engine.cells.fixed_point_sums``); the true aggregates go no further than the
    draw."""
    engine = engine if engine is not None else engine_from_env()
    rng = np.random.default_rng(seed)
    values: dict[str, Sequence[tuple[Sequence[Any], Any]]] = {}
    plan_built = build_plan(plan)
    # all read first, as a release does (one ranking of each person's rows per unit)
    inputs = _plan_aggregates(plan_built, engine, source)
    for built, (aggs, keys) in zip(plan_built, inputs, strict=True):
        _, rows = built.kind.draw(built, simulated_parts(built, rng), aggs, keys)
        del aggs
        values[built.query.id] = rows
    return values
