"""The privacy unit a dataset is explored under: one row = one person, or a person-id column
with contribution bounds.

Declared once per dataset (on the Data page) and read by every query page, so that every
sensitivity on screen is the one for the unit the user chose. Kept in the session (never in
the URL: a person-id column's name is not derived from values, but the bounds a user tunes
on their own data are session-only like the rest of issue 9's rule).
"""

from __future__ import annotations

import streamlit as st

from dpcore.contributions import PrivacyUnit
from plan.parts import contribution

# PrivacyUnit is dpcore's (the one unit of the schema file, the plan and the release);
# contribution(unit, seed=...) is the engine's truncation for it (plan.parts: one place).
__all__ = ["PrivacyUnit", "ONE_ROW", "contribution", "current_unit", "set_unit", "start_with",
           "neighbours"]

_KEY = "privacy_unit_by_dataset"   # state.UNITS (state cannot import this module)


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
            f"the same {unit.person_column}. Rows beyond the bounds are dropped before anything is "
            "computed (which ones is random per person).")
