"""The Releases page's tables, from the ledger's records (no widgets here)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import pandas as pd

from dpcore.intervals import DEFAULT_ALPHA
from dpcore.safe_rounding import lower, upper
from release.ledger import FAILED_DRAW

__all__ = ["datasets_table", "history_table", "budget_history_table", "files_in_words"]


def _short(content_hash: str | None) -> str:
    if not content_hash:
        return "—"
    return content_hash[:19] + "…" if len(content_hash) > 20 else content_hash


def _left(left: float | None, digits: int = 6) -> str | None:
    """What is left of a budget as the Release plan page's budget panel reads it: rounded
    down to 6 digits (ε figures read the same on both pages; issue 21 item 7), or "over
    budget by …" (rounded up) when the budget was set below what was spent."""
    if left is None:
        return None
    return f"over budget by {upper(-left, digits)}" if left < 0 else lower(left, digits)


def datasets_table(statuses: Sequence) -> pd.DataFrame:
    """One row per dataset (one content, whatever its names): its budget and when it was
    set, what its releases spent (ε and δ added up) and what is left."""
    rows = [{"Dataset": ", ".join(s.names or (s.dataset.name,)),
             "Content hash": _short(s.dataset.content_hash),
             "Budget ε": None if s.budget is None else lower(s.budget.epsilon, 6),
             "Budget δ": None if s.budget is None else s.budget.delta,
             "Budget set": "" if s.budget is None else f"{s.budget.time} ({s.budget.reason})",
             "Spent ε": upper(s.spent_epsilon, 6), "Spent δ": s.spent_delta,
             "Left ε": _left(s.remaining_epsilon), "Left δ": _left(s.remaining_delta, 3),
             "Releases": s.releases}
            for s in statuses]
    return pd.DataFrame(rows, columns=["Dataset", "Content hash", "Budget ε", "Budget δ",
                                       "Budget set", "Spent ε", "Spent δ", "Left ε", "Left δ",
                                       "Releases"])


def budget_history_table(statuses: Sequence) -> pd.DataFrame:
    """Every budget event of every dataset, oldest first: when, what changed (set, raised,
    lowered, δ cap removed), the budget it set, what had been spent then, why, and who
    changed it."""
    rows = [{"Dataset": ", ".join(s.names or (s.dataset.name,)), "Entry": c.entry,
             "Time": c.time, "Change": c.change, "Budget ε": lower(c.epsilon, 6),
             "δ cap": "no cap" if c.delta is None else f"{c.delta:.3g}",
             "Spent ε before": upper(c.spent_epsilon, 6),
             "Reason": c.reason or "no reason recorded", "Changed by": _by(c.by)}
            for s in statuses for c in s.history]
    return pd.DataFrame(rows, columns=["Dataset", "Entry", "Time", "Change", "Budget ε",
                                       "δ cap", "Spent ε before", "Reason", "Changed by"])


#: Who made an entry recorded before the ledger kept it (layout 3).
NOT_RECORDED = "not recorded (before the ledger kept who)"


def _by(who: str) -> str:
    """Who made a ledger entry, for the pages only (never in a release's published files)."""
    return who or NOT_RECORDED


def _interval_level(plan: dict) -> str | None:
    """The level of a release's intervals, from its plan's alpha ("95%" by default)."""
    accounting = plan.get("accounting")
    alpha = accounting.get("alpha", DEFAULT_ALPHA) if isinstance(accounting, dict) else (
        DEFAULT_ALPHA)
    return f"{1 - alpha:.0%}" if isinstance(alpha, int | float) and 0 < alpha < 1 else None


def files_in_words(names: Sequence[str], why_none: str) -> str:
    """A release's kept files in a table cell: "kept: 9 files (release-3.zip, …)", or why
    there are none (``Ledger.why_no_files``)."""
    if not names:
        return why_none
    package = [n for n in names if n.endswith(".zip")]
    return f"kept: {len(names)} files" + (f" ({package[0]} and each file)" if package else "")


def history_table(records: Sequence, files: Mapping[int, str] | None = None) -> pd.DataFrame:
    """One row per release, newest first, with the level of its values' intervals (their
    intervals are in the release's files), and with ``files`` (entry → words,
    :func:`files_in_words`) whether its files are kept in the ledger."""
    rows = []
    for r in reversed(list(records)):
        try:
            plan = json.loads(r.plan_json)
            queries = len(plan.get("queries", []))
            level = _interval_level(plan)
        except (ValueError, AttributeError):
            queries = level = None
        rows.append({"Entry": r.id, "Time": r.time, "Dataset": r.dataset.name,
                     "Queries": queries, "ε": upper(r.epsilon, 6), "δ": r.delta,
                     "Accounting": r.accounting, "Interval level": level,
                     "Values hash": ("none: the draw failed (spent, nothing published)"
                                     if r.values_hash == FAILED_DRAW
                                     else _short(r.values_hash)),
                     "Files": (files or {}).get(r.id), "Released by": _by(r.by)})
    columns = ["Entry", "Time", "Dataset", "Released by", "Queries", "ε", "δ", "Accounting",
               "Interval level", "Values hash"] + ([] if files is None else ["Files"])
    return pd.DataFrame(rows, columns=columns)
