"""The Release plan page's check of what the plan was built on: the versions of the dataset's
declared schema and unit (``release.declarations``, by the data's content identity).

A plan records them with its first query (``plan_store.built_on``). When the store holds a
later schema or unit, the plan is stale: the page says what changed, in a sentence, and the
plan is not released (``release_panel.unit_refusal`` asks :func:`refusal`) until the user
rebuilds it under the current declarations (``plan_store.set_unit``, the mechanism of
"Rebuild the plan under this dataset's unit", bound to the current versions too) or confirms
it as built (bound to the current versions, with the ones it was built on kept as the record
of that confirmation). A plan that records no versions (saved before plans kept them) is not
stale.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from dashboard import plan_store
from dashboard.data_source import identity_of
from dashboard.plan_unit_panel import declared_schema
from dashboard.text import plain
from plan import model
from release.bound import changes, confirmed, is_stale, stale_reason
from release.declarations import Declarations, DeclarationsError, DeclarationStore

__all__ = ["built_on_now", "Stale", "stale", "refusal", "stale_section"]


def built_on_now(loaded, data_key: str) -> tuple[str, model.BuiltOn] | None:
    """The data's content identity and the versions of its declarations as they stand (0:
    never declared): what a plan built now is built on. None when either cannot be read
    (the plan then records nothing, as plans did before)."""
    try:
        dataset = identity_of(loaded, data_key).content_hash
        now = DeclarationStore().latest(dataset)
    except DeclarationsError:
        return None
    except Exception:  # noqa: BLE001 — e.g. DuckDB's expression limit on a very wide file
        return None
    return dataset, model.BuiltOn(**({"schema": 0, "unit": 0} if now is None
                                     else now.versions))


@dataclass(frozen=True)
class Stale:
    """A stale plan: the dataset, the versions it was built on, the declarations as they
    stand, and what changed in a sentence."""

    dataset: str
    recorded: model.BuiltOn
    now: Declarations | None
    sentence: str

    @property
    def unit_changed(self) -> bool:
        return self.now is not None and self.now.versions["unit"] > self.recorded.unit

    def built_words(self) -> str:
        """"schema v1", "unit v2" or "schema v1 and unit v2": what changed since."""
        now = self.now.versions if self.now is not None else {"schema": 0, "unit": 0}
        parts = [f"{what} v{getattr(self.recorded, what)}" for what in ("schema", "unit")
                 if now[what] > getattr(self.recorded, what)]
        return " and ".join(parts)


def stale(data_key: str) -> Stale | None:
    """The plan's staleness (None: not stale, or nothing recorded); ``DeclarationsError`` if
    the store cannot be read."""
    bound = plan_store.built_on(data_key)
    if bound is None:
        return None
    dataset, recorded = bound
    store = DeclarationStore()
    now = store.latest(dataset)
    if not is_stale(recorded, now, store=store, dataset=dataset,
                    plan_unit=plan_store.unit(data_key)):
        return None
    return Stale(dataset, recorded, now, changes(store, dataset, recorded, now))


def refusal(data_key: str) -> str:
    """Why the dataset's plan must not be released as it is because of what it was built on
    ("" if it may): its declarations changed since, or cannot be read to tell."""
    bound = plan_store.built_on(data_key)
    if bound is None:
        return ""
    try:
        return stale_reason(DeclarationStore(), *bound, plan_store.unit(data_key))
    except DeclarationsError as exc:
        return (f"the dataset's declarations cannot be read to check what the plan was built "
                f"on ({exc})")


def _rebuild(loaded, data_key: str, found: Stale, unit: model.PrivacyUnit) -> None:
    """The button's callback: the plan under the current unit and schema, bound to them."""
    now = found.now.versions if found.now is not None else {"schema": 0, "unit": 0}
    plan_store.set_unit(data_key, unit, built_on=(found.dataset, model.BuiltOn(**now)),
                        schema_json=declared_schema(loaded, unit))


def stale_section(loaded, data_key: str, plan_unit: model.PrivacyUnit) -> None:
    """Say that the plan is stale, what changed, and offer to rebuild it or confirm it as
    built (nothing drawn when it is not stale); ``plan_unit``: the plan's own unit."""
    try:
        found = stale(data_key)
    except DeclarationsError as exc:
        st.error(f"The dataset's declarations cannot be read, so this plan cannot be "
                 f"checked against them and is not released: {plain(exc, limit=400)}",
                 icon=":material/error:")
        return
    if found is None:
        return
    unit = ((found.now.privacy_unit or model.PrivacyUnit()) if found.unit_changed
            else plan_unit)
    missing = unit.person_column is not None and unit.person_column not in \
        loaded.relation.columns
    with st.container(border=True, key="plan_stale"):
        st.markdown("**Built on earlier declarations**")
        st.warning(f"This plan is stale: it was built on {found.built_words()} of this "
                   f"dataset's declarations. {plain(found.sentence, limit=600)} It is not "
                   "released until you rebuild it under the current declarations or confirm "
                   "it as built.", icon=":material/history:")
        rebuild, confirm = st.columns(2)
        rebuild.button("Rebuild the plan under the current declarations",
                       key="plan_stale_rebuild", disabled=missing,
                       on_click=_rebuild, args=(loaded, data_key, found, unit),
                       help=("The current unit's person-id column is not in this data."
                             if missing else
                             f"The plan is then built under {unit.describe()} and the "
                             "current schema. Its queries keep their budgets, targets and "
                             "their own bounds and categories: add a query again from its "
                             "page to use the new ones."))
        confirm.button(f"Release as built on {found.built_words()}", key="plan_stale_confirm",
                       on_click=plan_store.bind,
                       args=(data_key, (found.dataset, confirmed(found.recorded, found.now))),
                       help="The plan stays as it was built (its unit, its queries' "
                            "declarations) and is bound to the current versions, with a "
                            "record that you confirmed it.")
