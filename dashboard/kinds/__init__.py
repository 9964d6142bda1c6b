"""The query kinds the pages offer, each in one file (its page adapter), looked up by name.

A kind's page adapter (:class:`~dashboard.kinds.base.PageKind`) holds its label and when a
page offers it, the controls it needs, ``page_query`` — the one conversion from a page's
settings to the plan's query —, its true answer and its words; its plan kind
(``plan.kinds``) holds the rest. Everything on the page side looks a kind up here: a new
kind is one file (and its tests), found after the adapters listed below
(``plan.kinds.found_in``).
"""

from __future__ import annotations

from dashboard.datasets import LoadedDataset
from dashboard.kinds import count, histogram, mean, sum, variance
from dashboard.kinds.base import Declared, PageKind, PageSettings
from dpcore.contributions import PrivacyUnit
from plan.kinds import found_in

__all__ = ["ADAPTERS", "PageKind", "PageSettings", "Declared", "adapter_of", "offered",
           "per_group"]

#: Every page adapter by its kind's name, in the order the Noisy statistics page offers them.
_LISTED = (count.PAGE, sum.PAGE, mean.PAGE, variance.PAGE, histogram.PAGE)
ADAPTERS: dict[str, PageKind] = {a.name: a for a in (
    *_LISTED, *found_in(__name__, __path__, "PAGE", PageKind, _LISTED))}


def adapter_of(name: str) -> PageKind:
    """The page adapter of the kind ``name``; ValueError for a kind no page offers."""
    adapter = ADAPTERS.get(name)
    if adapter is None:
        raise ValueError(f"query must be one of {', '.join(ADAPTERS)}; got {name!r}")
    return adapter


def offered(loaded: LoadedDataset, unit: PrivacyUnit | None = None) -> list[str]:
    """The kinds the Noisy statistics page offers for ``loaded`` under the privacy ``unit``
    (None: one row = one person), in order."""
    return [name for name, adapter in ADAPTERS.items() if adapter.offered_on(loaded, unit)]


def per_group() -> dict[str, str]:
    """The kinds the Groups page offers as the statistic per group, with their labels."""
    return {name: a.group_label for name, a in ADAPTERS.items() if a.group_label}
