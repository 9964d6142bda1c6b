"""The Release plan page's privacy-unit check: a plan is shown and released under the unit it
was built under (``plan_store.unit``), never under whatever unit the session holds now; and
its declared-schema check (``plan_store.declared``: the schema it was built on).

When the two differ (a reload starts from one row = one person; the Data page changed it), or
the plan does not say which unit it was built under (saved before plans kept it), the page
says so and offers to adopt the plan's unit for the dataset or to rebuild the plan under the
session's; a release is held while the plan's unit is unknown or names a column the data lacks.
The same for the declared schema, except that nothing is held: the plan's queries carry their
own declarations, which a release uses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from dashboard import person, plan_store, state
from dashboard.data import schema
from dashboard.text import plain
from plan import model

_SCHEMA_ERROR = "plan_schema_adopt_error"   # why the plan's schema could not be declared

__all__ = ["PlanUnit", "plan_unit_of", "unit_section", "declared_schema", "schema_differences",
           "schema_section"]


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


# -- the declared schema -------------------------------------------------------------------------

def declared_schema(loaded, unit: model.PrivacyUnit) -> str:
    """What a plan built now is built on, as schema JSON: the public and typed declarations
    of ``loaded`` (as the pages see it) and its ignored columns. Declarations read off the data
    are left out (the plans file holds no value computed from the data; they are read again
    with the data), and so is the person id (the plan keeps its unit on its own)."""
    domains = {c: d for c, d in loaded.domains.items() if schema.origin_of(d) != "data"}
    ignored = frozenset(loaded.hidden - {unit.person_column})
    return schema.to_json(schema.Schema(domains, ignored))


def _columns(schema_json: str) -> dict:
    return json.loads(schema_json).get("columns", {})


def schema_differences(built_on: str | None, now: str, *, skip: Sequence[str] = ()
                       ) -> list[str]:
    """The columns whose declaration differs between the schema a plan was built on
    (``built_on``; None: not recorded, nothing to compare) and the session's (``now``),
    but the ``skip`` ones (the person-id columns: the unit check speaks of them)."""
    if built_on is None:
        return []
    before, after = _columns(built_on), _columns(now)
    return sorted(c for c in before.keys() | after.keys()
                  if c not in skip and before.get(c) != after.get(c))


def _adopt_schema(loaded, data_key: str, built_on: str) -> None:
    """Declare the plan's schema for the dataset (the Data page shows it)."""
    try:
        declared = schema.from_json(built_on, list(loaded.relation.columns))
    except schema.SchemaError as exc:
        st.session_state[_SCHEMA_ERROR] = str(exc)
        return
    state.declare_schema(data_key, schema.Schema(declared.domains, declared.ignored,
                                                 person.current_unit(data_key)))


def schema_section(loaded, data_key: str, checked: PlanUnit, built_on: str | None) -> None:
    """Say which declarations differ from the ones the plan was built on, and offer to declare
    the plan's again or to keep the plan on the session's (nothing drawn when they agree)."""
    now = declared_schema(loaded, checked.session)
    differ = schema_differences(built_on, now, skip=[
        c for c in (checked.unit.person_column, checked.session.person_column) if c])
    failed = st.session_state.pop(_SCHEMA_ERROR, None)
    if not differ:
        return
    with st.container(border=True, key="plan_schema_check"):
        st.markdown("**Declared schema**")
        columns = ", ".join(differ[:8]) + (f" and {len(differ) - 8} more"
                                          if len(differ) > 8 else "")
        st.warning(f"The schema declared for this dataset in this session differs from the "
                   f"one this plan was built on, for {plain(columns, limit=300)}. The plan "
                   "keeps its queries' own declarations (categories and bounds, each with "
                   "its origin) and is released with them; the query pages show this "
                   "session's.", icon=":material/rule:")
        if failed:
            st.error(f"The plan's schema could not be declared: {plain(failed, limit=400)}",
                     icon=":material/error:")
        adopt, keep = st.columns(2)
        adopt.button("Declare the plan's schema for this dataset", key="plan_schema_adopt",
                     on_click=_adopt_schema, args=(loaded, data_key, built_on),
                     help="The Data page and every query page then use the declarations "
                          "the plan was built on.")
        keep.button("Keep the plan on this session's schema", key="plan_schema_keep",
                    on_click=plan_store.set_declared, args=(data_key, now),
                    help="Records this session's schema as the plan's. Its queries keep "
                         "their own declarations: add a query again from its page to "
                         "use the new ones.")
