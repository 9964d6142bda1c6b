"""The privacy unit a dataset is explored under: one row = one person, or a person-id column
with contribution bounds.

Declared once per dataset (on the Data page) and read by every query page, so that every
sensitivity on screen is the one for the unit the user chose. Kept in the session (never in
the URL: a person-id column's name is not derived from values, but the bounds a user tunes
on their own data are session-only like the rest of issue 9's rule).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from dpcore.contributions import ContributionBounds
from engine.queries import Contribution

__all__ = ["PrivacyUnit", "ONE_ROW", "current_unit", "set_unit", "start_with", "neighbours"]

_KEY = "privacy_unit_by_dataset"   # state.UNITS (state cannot import this module)


@dataclass(frozen=True)
class PrivacyUnit:
    """Who is protected: ``person`` None means one row = one person (bounds are 1 row).

    ``max_rows``: the most rows a person keeps (per group when ``max_groups`` is set);
    ``max_groups``: the most groups a person keeps rows in (None: only ``max_rows``).
    ``origin``: how max rows was chosen — typed, read off the data (the simulated private
    draw is seeded, so it is), or private (drawn for real: the plan's max rows query). It
    does not enter equality: the same bounds are the same unit for every computation.
    """

    person: str | None = None
    max_rows: int = 1
    max_groups: int | None = None
    origin: str = field(default="typed", compare=False)

    def __post_init__(self) -> None:
        # ContributionBounds validates the numbers (ValueError naming the field)
        ContributionBounds(self.max_rows, self.max_groups)
        if self.person is None and (self.max_rows != 1 or self.max_groups is not None):
            raise ValueError("without a person-id column each row is one person: "
                             "max_rows must be 1 and max_groups unset")

    @property
    def per_row(self) -> bool:
        """True when one row is one person."""
        return self.person is None

    def bounds(self) -> ContributionBounds:
        """The contribution bounds the sensitivities follow (dpcore.contributions)."""
        return ContributionBounds(self.max_rows, self.max_groups)

    def contribution(self, seed: int) -> Contribution | None:
        """The engine's truncation for this unit (None: nothing to bound); ``seed`` fixes
        which rows a person keeps in a simulation."""
        if self.person is None:
            return None
        return Contribution(self.person, self.max_rows, self.max_groups, seed)

    def describe(self) -> str:
        """The unit in words, shown next to every sensitivity."""
        if self.person is None:
            return "one row = one person"
        return f"one person = all rows with the same {self.person}; " + self.bounds().describe()


ONE_ROW = PrivacyUnit()


def current_unit(data_key: str) -> PrivacyUnit:
    """The unit declared for the dataset ``data_key`` (``state.dataset_key()``); one row =
    one person until the user declares otherwise."""
    return st.session_state.get(_KEY, {}).get(data_key, ONE_ROW)


def set_unit(data_key: str, unit: PrivacyUnit) -> None:
    """Declare the unit for ``data_key`` (the Data page does; tests may)."""
    units = dict(st.session_state.get(_KEY, {}))
    units[data_key] = unit
    st.session_state[_KEY] = units


def start_with(data_key: str, unit: PrivacyUnit) -> None:
    """Declare ``unit`` for ``data_key`` unless the user has declared one already (a
    built-in whose rows are not people starts from its person id)."""
    if data_key not in st.session_state.get(_KEY, {}):
        set_unit(data_key, unit)


def neighbours(unit: PrivacyUnit) -> str:
    """What neighbouring datasets are under ``unit``, in one sentence."""
    if unit.per_row:
        return "Neighbouring datasets differ by adding or removing one row."
    return (f"Neighbouring datasets differ by adding or removing one person: every row with "
            f"the same {unit.person}. Rows beyond the bounds are dropped before anything is "
            "computed (which ones is random per person).")
