"""Choosing the privacy unit's max rows privately, for real: one draw of a DP quantile of rows
per person with OpenDP's sampler (fresh entropy, never seeded).

The draw is shown to the planner and enters the plan as its max rows query
(``plan.model.MaxRows``), which charges every draw in the plan's totals, its budget guard and
the ledger when the plan is released. The simulator's seeded draw is not this: a bound taken
from it is read off the data (a deterministic function of the data and the URL's seed).
"""

from __future__ import annotations

import numpy as np

from dpcore.quantiles import max_rows_scores
from engine import Engine, EngineError, engine_from_env
from engine.queries import RowsPerPerson
from engine.sources import Source
from plan.build import max_rows_draw
from release.errors import DataMismatch
from release.measurements import certify_max_rows

__all__ = ["rank_counts", "draw_max_rows"]


def rank_counts(rows: np.ndarray, people: np.ndarray, largest: int
                ) -> tuple[list[int], list[int], int]:
    """(below, equal, total) for candidates 1..``largest``: how many people have fewer rows
    than each candidate, exactly as many, and how many people there are (``people[i]``
    people have ``rows[i]`` rows)."""
    rows = np.asarray(rows, dtype=np.int64)
    people = np.asarray(people, dtype=np.int64)
    at = np.zeros(largest + 2, dtype=np.int64)
    np.add.at(at, np.minimum(rows, largest + 1), people)   # beyond the cap: above them all
    equal = at[1:largest + 1]
    below = np.cumsum(at)[:largest]                       # people with < c rows, c = 1..
    return [int(v) for v in below], [int(v) for v in equal], int(people.sum())


def draw_max_rows(source: Source, person: str, *, level: float, epsilon: float,
                  largest: int, engine: Engine | None = None) -> int:
    """One private draw of max rows: the ``level``-quantile of rows per person over
    candidates 1..``largest``, ε-DP, by OpenDP's report noisy max (exponential noise) on
    OpenDP's quantile scores tilted towards fewer rows (``dpcore.quantiles.max_rows_scores``:
    a public tilt, the same sensitivity); its map is checked against ε before anything is
    drawn.

    Raises
    ------
    release.errors.MapCheckFailed
        OpenDP's map reads above ε (nothing drawn).
    DataMismatch
        The person-id column is not in the data.
    """
    part = max_rows_draw(level, epsilon)
    certified = certify_max_rows(part)                 # before the data is read
    engine = engine if engine is not None else engine_from_env()

    try:
        agg = engine.answer(source, RowsPerPerson(person))
    except EngineError as exc:
        raise DataMismatch(str(exc)) from None
    below, equal, total = rank_counts(agg.rows, agg.people, largest)
    scores = max_rows_scores(below, equal, total, level)
    index = int(certified.draw([int(v) for v in scores]))
    return index + 1
