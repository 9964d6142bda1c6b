"""The Release plan page's privacy-unit check: a plan is shown and released under the unit it
was built under (``plan_store.unit``), never under whatever unit the session holds now.

When the two differ (a reload starts from one row = one person; the Data page changed it), or
the plan does not say which unit it was built under (saved before plans kept it), the page
says so and offers to adopt the plan's unit for the dataset or to rebuild the plan under the
session's; a release is held while the plan's unit is unknown or names a column the data lacks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from dashboard import person, plan_store
from dashboard.text import plain
from plan import model

__all__ = ["PlanUnit", "plan_unit_of", "unit_section"]


@dataclass(frozen=True)
class PlanUnit:
    """The unit a plan is shown and released under, and how it stands against the session's.

    ``unit``: the plan's own (the session's when the plan does not say); ``recorded``: the
    plan says which unit it was built under; ``held``: why a release must wait ("" if not).
    """

    unit: model.PrivacyUnit
    session: model.PrivacyUnit
    recorded: bool
    held: str

    @property
    def differs(self) -> bool:
        """The plan's unit is not the one the session's query pages use."""
        return self.recorded and self.unit != self.session


def plan_unit_of(built_under: model.PrivacyUnit | None, session: model.PrivacyUnit,
                 columns: Sequence[str]) -> PlanUnit:
    """How a plan built under ``built_under`` (None: not recorded) is shown and released on a
    dataset with ``columns`` while the session holds ``session``: under its own unit; a
    release is held when that unit is unknown, or its person-id column is not in the data.
    Public information only (the plan, the unit, the column names)."""
    if built_under is None:
        return PlanUnit(session, session, False,
                        "the plan does not say which privacy unit it was built under: choose "
                        "it under 'Privacy unit' above")
    held = ""
    if built_under.person_column is not None and built_under.person_column not in columns:
        held = (f"the plan was built under its own privacy unit, whose person-id column "
                f"{built_under.person_column!r} is not in this dataset: load the data it was "
                "made for, or rebuild the plan under this dataset's unit")
    return PlanUnit(built_under, session, True, held)


def unit_section(loaded, data_key: str, checked: PlanUnit) -> None:
    """Say how the plan's unit stands against the session's and offer the two ways to make
    them one (nothing is drawn when they already are)."""
    if checked.recorded and not checked.differs:
        return
    session = plain(checked.session.describe())
    with st.container(border=True, key="plan_unit_check"):
        st.markdown("**Privacy unit**")
        if not checked.recorded:
            st.warning("This plan was saved before plans kept their privacy unit: it does not "
                       "say which unit it was built under. It is shown under this dataset's "
                       f"unit in this session ({session}); it can be released once you "
                       "confirm that unit.", icon=":material/warning:")
            st.button(plain(f"Build the plan under {checked.session.describe()}", limit=200),
                      key="plan_unit_rebuild", on_click=plan_store.set_unit,
                      args=(data_key, checked.session))
            return
        st.warning(f"This plan was built under its own privacy unit: "
                   f"**{plain(checked.unit.describe())}**. This dataset's unit in this session "
                   f"(Data page, query pages) is **{session}**. The plan is shown, and would "
                   "be released, under its own unit: every accuracy and budget below is "
                   "under it.", icon=":material/person_alert:")
        adopt, rebuild = st.columns(2)
        missing = (checked.unit.person_column is not None
                   and checked.unit.person_column not in loaded.relation.columns)
        adopt.button("Use the plan's unit for this dataset", key="plan_unit_adopt",
                     disabled=missing, on_click=person.set_unit,
                     args=(data_key, checked.unit),
                     help=("The plan's person-id column is not in this dataset." if missing
                           else "The Data page and every query page then use the plan's "
                                "unit too."))
        rebuild.button(plain(f"Rebuild the plan under {checked.session.describe()}",
                             limit=200), key="plan_unit_rebuild",
                       on_click=plan_store.set_unit, args=(data_key, checked.session),
                       help="The queries keep their budgets and targets; their accuracy, "
                            "and what a release protects, follow this unit.")
