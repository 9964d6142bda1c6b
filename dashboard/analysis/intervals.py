"""Intervals for the true value behind a simulated release, computed as a release computes
them: by the query's kind (``QueryKind.intervals``, ``plan.kinds.base.additive_intervals`` /
``threshold_intervals``) or the dpcore function the kind calls (``mean_interval``), from the
built parts' laws and the simulated noisy values only (issue 22).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dashboard.analysis.plan_simulation import SimulatedPart, simulated_part, simulated_parts
from dashboard.number_text import down, up
from dpcore.intervals import mean_interval, variance_interval
from plan.build import Built, Part

__all__ = ["SimulatedPart", "simulated_part", "simulated_parts", "as_arrays", "kind_intervals",
           "mean_intervals", "variance_intervals", "method_of", "has_method", "RATIO",
           "SPREAD", "CONDITIONAL", "KEPT", "interval_text"]

Interval = tuple[NDArray[np.float64], NDArray[np.float64]]

#: Keys of ``dpcore.intervals.METHODS`` a page words or computes apart: an interval read off
#: a noisy sum over a noisy count (``mean_interval``), one read off a noisy count, sum of
#: deviations and sum of squares (``variance_interval``), and a group found by partition
#: selection's, conditional on being kept (its count the selection's own) or kept (its
#: value's noise drawn apart).
RATIO, SPREAD, CONDITIONAL, KEPT = "mean", "variance", "conditional", "kept"


def as_arrays(pairs: Sequence[tuple[float, float] | None], shape: tuple[int, ...]
              ) -> Interval | None:
    """A kind's (lower, upper) pairs as two arrays of ``shape``; None where it gives none."""
    if not len(pairs) or any(pair is None for pair in pairs):
        return None
    both = np.asarray(pairs, dtype=np.float64).reshape(*shape, 2)
    return both[..., 0], both[..., 1]


def method_of(built: Built) -> str:
    """How the kind computes its intervals (a key of ``dpcore.intervals.METHODS``, "" for
    none): a page takes the same path as the release."""
    return built.kind.interval_method(built.query.query)


def has_method(method: str, key: str) -> bool:
    """Whether an interval method (keys of ``dpcore.intervals.METHODS`` joined by ", ")
    includes ``key``."""
    return key in method.split(", ")


def kind_intervals(built: Built, released: ArrayLike, alpha: float) -> Interval | None:
    """(lower, upper) at 1 − ``alpha`` for each released number (any shape: one number, the
    cells of a histogram or table), from the kind's own ``intervals`` on the built parts;
    None where the kind gives none."""
    values = np.asarray(released, dtype=np.float64)
    rows = tuple(((), value) for value in values.reshape(-1).tolist())
    pairs = built.kind.intervals(built, simulated_parts(built), rows, alpha)
    return as_arrays(pairs, values.shape)


def mean_intervals(sum_part: Part, noisy_sum: ArrayLike, count_part: Part,
                   noisy_count: ArrayLike, *, lower: float, upper: float, alpha: float
                   ) -> Interval:
    """A mean's (lower, upper) at 1 − ``alpha`` from its noisy sum and count (the mechanism's
    own output), as the mean kind computes it: ``dpcore.intervals.mean_interval`` on the
    parts' mechanisms (conservative: alpha split between the two)."""
    return mean_interval(sum_part.mechanism, noisy_sum, count_part.mechanism, noisy_count,
                         lower=lower, upper=upper, alpha=alpha)


def variance_intervals(parts: Sequence[Part], noisy_parts: Sequence[ArrayLike], *,
                       lower: float, upper: float, alpha: float) -> Interval:
    """A variance's (lower, upper) at 1 − ``alpha`` from its noisy count, sum of deviations
    and sum of squared deviations (the mechanisms' own output, in the order the kind builds
    them), as the variance kind computes it: ``dpcore.intervals.variance_interval`` on the
    parts' mechanisms, h = (``upper`` − ``lower``)/2 (conservative: alpha split in three)."""
    count, deviations, squares = (part.mechanism for part in parts)
    noisy_count, noisy_deviations, noisy_squares = noisy_parts
    return variance_interval(count, noisy_count, deviations, noisy_deviations, squares,
                             noisy_squares, half_width=(upper - lower) / 2, alpha=alpha)


def interval_text(low: float, high: float, digits: int = 4) -> str:
    """An interval for a page: its ends rounded outwards ("1,180 – 1,240"), so the interval
    shown holds the one computed."""
    return f"{down(low, digits)} – {up(high, digits)}"
