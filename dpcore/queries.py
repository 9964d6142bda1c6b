"""What a query's true answer carries: its value, what one person can change about it, and
the mechanisms a bounded mean can use for its two parts.

The queries themselves are answered by the engine (``engine.queries``, ``dashboard.data``);
their pandas reference, with the noisy mean, is ``tests/queries_reference.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from dpcore.checks import check_positive, finite_array
from dpcore.mechanisms import CATALOGUE

__all__ = ["QueryAnswer", "MEAN_MECHANISMS"]

#: Mechanisms the noisy mean can use for its two parts (the noisy sum and the noisy count):
#: every kind of the catalogue that needs no public answer range (the sum's range would
#: depend on the private count).
MEAN_MECHANISMS = tuple(kind for kind, spec in CATALOGUE.items() if not spec.needs_range)


@dataclass(frozen=True, eq=False)
class QueryAnswer:
    """The true answer to a query and what one person can change about it.

    Neighbouring datasets differ by adding or removing one row (one row = one person); the
    sensitivities are the largest L1 and L2 change of ``true_value`` between any two neighbours.
    ``true_value`` is stored as a read-only float64 array (0-d for scalar queries).
    Equality is identity (``eq=False``): two answers holding arrays have no single truth value.
    """

    true_value: NDArray[np.float64]
    l1_sensitivity: float
    l2_sensitivity: float
    integer_valued: bool
    labels: tuple[str, ...] | None = None
    column_labels: tuple[str, ...] | None = None
    description: str = ""
    clamped_rows: int = 0
    #: rows left out because the value was missing (NaN/None): they change no answer
    missing_rows: int = 0
    #: the declared bounds of a bounded sum (None for counts): ``noisy_mean`` clamps to them
    lower: float | None = None
    upper: float | None = None

    def __post_init__(self) -> None:
        # A copy (the caller's array stays writable), finite: NaN is no answer to noise.
        value = np.array(finite_array("true_value", self.true_value))
        value.setflags(write=False)
        object.__setattr__(self, "true_value", value)
        object.__setattr__(
            self, "l1_sensitivity", check_positive("l1_sensitivity", self.l1_sensitivity)
        )
        object.__setattr__(
            self, "l2_sensitivity", check_positive("l2_sensitivity", self.l2_sensitivity)
        )
