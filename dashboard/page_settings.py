"""One typed record of each query page's saved settings (no widgets here).

Noisy statistics, Noisy tables and Selection keep their controls' values for the session
(``state.SAVED``, and the URL). Choose epsilon reads another page's query through these
records, and "Use this ε" writes another page's settings through them: the session keys of a
page's controls are named once, here, next to the field they hold, instead of as bare strings
in every page that reads them.

A record holds the remembered values as they are (None when never set); the reader checks
them against what the dataset offers, as the page itself does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class _Saved:
    """A page's remembered values, one field per control (``KEYS``: field → session key)."""

    KEYS: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def from_saved(cls, saved: Mapping[str, Any]):
        """The record of the values in ``saved`` (the session's remembered controls)."""
        return cls(**{name: saved.get(key) for name, key in cls.KEYS.items()})

    @classmethod
    def key(cls, name: str) -> str:
        """The session key of field ``name`` (KeyError for a field the record has not)."""
        return cls.KEYS[name]

    @classmethod
    def settings(cls, **values: Any) -> dict[str, Any]:
        """Remembered values to write for the page (``controls.set_for_another_page``)."""
        return {cls.KEYS[name]: value for name, value in values.items()}

    def at_key(self, key: str) -> Any:
        """The value held for session key ``key`` (a key chosen at run time by the page)."""
        return getattr(self, next(name for name, k in self.KEYS.items() if k == key))


def _privacy_keys(prefix: str) -> dict[str, str]:
    return {"measure": f"{prefix}_measure", "mechanism": f"{prefix}_mechanism",
            "epsilon": f"{prefix}_epsilon", "delta": f"{prefix}_delta", "rho": f"{prefix}_rho"}


@dataclass(frozen=True)
class StatisticsQuery(_Saved):
    """The Noisy statistics page: its query, bounds, mechanisms and budget."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "query": "stats_query", "column": "stats_column", "lower": "stats_lower",
        "upper": "stats_upper", "compare": "stats_compare", "share": "stats_share",
        "answer_lower": "stats_answer_lower", "answer_upper": "stats_answer_upper",
        **_privacy_keys("stats")}

    query: Any = None
    column: Any = None
    lower: Any = None
    upper: Any = None
    compare: Any = None
    share: Any = None
    answer_lower: Any = None
    answer_upper: Any = None
    measure: Any = None
    mechanism: Any = None
    epsilon: Any = None
    delta: Any = None
    rho: Any = None


@dataclass(frozen=True)
class TablesQuery(_Saved):
    """The Noisy tables page: its crosstab, post-processing of the total, and budget."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "row": "tables_row", "column": "tables_column", "rescale": "tables_rescale",
        "total_source": "tables_total_source", "total_share": "tables_total_share",
        **_privacy_keys("tables")}

    row: Any = None
    column: Any = None
    rescale: Any = None
    total_source: Any = None
    total_share: Any = None
    measure: Any = None
    mechanism: Any = None
    epsilon: Any = None
    delta: Any = None
    rho: Any = None


@dataclass(frozen=True)
class SelectionQuery(_Saved):
    """The Selection page: where its scores come from, its noise, k and privacy level."""

    KEYS: ClassVar[Mapping[str, str]] = {
        "source": "sel_source", "column": "sel_column", "negate": "sel_negate",
        "scores_text": "sel_scores_text", "sensitivity": "sel_sensitivity",
        "highest": "sel_highest", "step": "sel_step", "simulated_bids": "sel_simulated_bids",
        "bids_text": "sel_bids_text", "noise": "sel_noise", "k": "sel_k",
        "measure": "sel_measure", "pure_level": "sel_pure_level",
        "zcdp_level": "sel_zcdp_level", "monotonic": "sel_monotonic",
        "monotonic_typed": "sel_monotonic_typed"}

    @classmethod
    def level_key(cls, measure: str) -> str:
        """The session key of the privacy level under ``measure`` ("pure": ε, "zcdp": ρ)."""
        return cls.KEYS[f"{measure}_level"]

    source: Any = None
    column: Any = None
    negate: Any = None
    scores_text: Any = None
    sensitivity: Any = None
    highest: Any = None
    step: Any = None
    simulated_bids: Any = None
    bids_text: Any = None
    noise: Any = None
    k: Any = None
    measure: Any = None
    pure_level: Any = None
    zcdp_level: Any = None
    monotonic: Any = None
    monotonic_typed: Any = None
