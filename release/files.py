"""The release as files: a CSV of the released values and a JSON of the values and their privacy.

Spreadsheet-safe as the dashboard's exports: a text cell a spreadsheet would run as a formula
is escaped with a leading quote. Files are written whole or not at all (a temporary file
renamed into place).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from dpcore.intervals import CHOICE_ERROR, INTERVAL_OF, METHODS
from dpcore.safe_rounding import upper
from plan.kinds import kind_of
from release.run import Release

__all__ = ["FORMULA_TRIGGERS", "escape_cell", "release_csv", "release_json", "release_record",
           "release_level", "interval_description", "interval_of", "write_bytes",
           "microdata_files", "is_choice", "choice_error"]

#: A cell starting with one of these is run as a formula by Excel, LibreOffice and Sheets
#: (the same rule as ``dashboard.exports``).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: ``lower`` and ``upper`` bound the true value behind a released number only; a released
#: choice (a category, a grid value) has no error of its own: its choice's bound is in the
#: last two columns (``choice error at most``, a number; ``choice error``, what it bounds),
#: so a rank error in rows is never read as bounds on a value.
_HEADER = ("Query id", "Query", "Statistic", "Group", "Value", "Release", "lower", "upper",
           "level", "choice error at most", "choice error")


def escape_cell(value: Any) -> Any:
    """Text that a spreadsheet would treat as a formula, prefixed with a single quote."""
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def release_csv(release: Release) -> bytes:
    """One row per released value (UTF-8 with BOM, text quoted, formulas escaped)."""
    stream = io.StringIO()
    writer = csv.writer(stream, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
    writer.writerow(_HEADER)
    tag = (f"private release #{release.record.id} ({release.record.time}), recorded in the "
           "ledger")
    level = release_level(release)
    for q in release.queries:
        choice = is_choice(q.interval_method)
        of = interval_of(q.interval_method)
        for i, (group, value) in enumerate(q.rows):
            interval = q.interval(i)
            bounds = (["", "", "", "", ""] if interval is None else
                      ["", "", level, interval[1], of] if choice else
                      [*interval, level, "", ""])
            writer.writerow([escape_cell(q.id), escape_cell(q.label), escape_cell(q.statistic),
                             escape_cell(" × ".join(group)), escape_cell(value), tag, *bounds])
    return stream.getvalue().encode("utf-8-sig")


def microdata_files(release: Release) -> dict[str, bytes]:
    """``rows-<query id>.csv`` for each query whose released rows are records (a synthetic
    table): its declared columns, one line per released record (UTF-8 with BOM, text quoted,
    formulas escaped). Released values only."""
    out = {}
    for pq, q in zip(release.plan.queries, release.queries, strict=True):
        table = kind_of(pq.query).microdata(pq.query, q.rows)
        if table is None:
            continue
        header, records = table
        stream = io.StringIO()
        writer = csv.writer(stream, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")
        writer.writerow([escape_cell(h) for h in header])
        escape = np.frompyfunc(escape_cell, 1, 1)
        writer.writerows(escape(records).tolist() if len(records) else [])
        out[f"rows-{q.id}.csv"] = stream.getvalue().encode("utf-8-sig")
    return out


def release_level(release: Release) -> float:
    """The level 1 − alpha of every interval of the release (the plan's alpha)."""
    return 1 - release.plan.accounting.alpha


def interval_description(method: str) -> str:
    """How an interval was computed, in words (``dpcore.intervals.METHODS``)."""
    return "; ".join(METHODS[m] for m in method.split(", ")) if method else ""


def interval_of(method: str) -> str:
    """What intervals of ``method`` bound: the true value behind the released one, or for a
    released choice (a category, a grid value) its shortfall (``dpcore.intervals.INTERVAL_OF``);
    "" for none."""
    if not method:
        return ""
    return "; ".join(INTERVAL_OF[m] for m in method.split(", ") if m in INTERVAL_OF) or (
        "true value")


def is_choice(method: str) -> bool:
    """Whether intervals of ``method`` bound a released choice's error (a selection's
    shortfall, a quantile's excess rank error) rather than the released value's true value."""
    return any(m in INTERVAL_OF for m in method.split(", ")) if method else False


def choice_error(method: str, at_most: float) -> str:
    """A released choice's bound in words for a table cell ("rank error ≤ 273.7 rows above
    the grid's best"), its number rounded up: never an interval, so that it cannot be read as
    bounds on the released value. "" when ``method`` is not a choice's."""
    words = [CHOICE_ERROR[m] for m in method.split(", ") if m in CHOICE_ERROR]
    return "; ".join(w.format(upper(at_most, 4)) for w in words)


def _value_record(group: tuple, value: Any, interval: tuple | None, level: float,
                  method: str = "") -> dict[str, Any]:
    """A released value: with ``lower``/``upper`` when its interval is of its true value, or
    with ``choice_error`` (the bound's upper end, its level, what it bounds, and the two in
    words; it runs from 0) when the value is a choice: a choice's bound is never given as
    lower and upper."""
    out = {"group": list(group), "value": value}
    if interval is None:
        return out
    of = interval_of(method)
    if is_choice(method):
        return out | {"choice_error": {"at_most": interval[1], "level": level, "of": of,
                                       "in_words": choice_error(method, interval[1])}}
    return out | {"lower": interval[0], "upper": interval[1], "level": level, "of": of}


#: The setting naming the organisation a release's files say released it (unset: none).
RELEASED_BY_ENV = "EPSILON_LAB_RELEASED_BY"
RELEASED_BY_LIMIT = 120


def released_by() -> str | None:
    """The organisation the published files name as the releaser (``EPSILON_LAB_RELEASED_BY``,
    one line, at most 120 characters), None when unset. The files never name the person who
    released (the ledger records them; the Releases page shows them): this is the steward's
    choice of a name to publish."""
    text = " ".join(os.environ.get(RELEASED_BY_ENV, "").split())[:RELEASED_BY_LIMIT]
    return text or None


def release_record(release: Release) -> dict[str, Any]:
    """The release as a JSON-able dict: values, what they cost, and how to check them.

    Nothing in it is a function of the data but the released values: no digest of the data
    (the ledger keeps the data's identity), no true value, and the plan as published
    (:meth:`plan.model.Plan.published`)."""
    spent = release.spent
    level = release_level(release)
    by = released_by()
    return _json_safe({
        "format": "epsilon-lab-release",
        "version": 1,
        "private_release": True,
        "released_at": release.record.time,
        **({} if by is None else {"released_by": by}),
        "ledger_entry": release.record.id,
        "dataset": {"name": release.dataset.name, "origin": release.plan.dataset.origin},
        "privacy_unit": release.plan.privacy_unit.describe(),
        "privacy_spent": spent.to_dict(),
        "accounting": {"method": spent.method, "requested": spent.requested,
                       "delta": release.plan.accounting.delta, "note": spent.note},
        "planned": release.planned.to_dict(),
        "queries": [{"id": q.id, "label": q.label, "statistic": q.statistic,
                     "values": [_value_record(group, value, q.interval(i), level,
                                              q.interval_method)
                                for i, (group, value) in enumerate(q.rows)],
                     "parts": list(q.parts), "notes": list(q.notes),
                     "interval": _interval_record(q, level)}
                    for q in release.queries],
        "values_sha256": release.values_hash,
        "implementation": release.implementation,
        "plan": release.plan.published().to_dict(),
    })


def _interval_record(q: Any, level: float) -> dict[str, Any] | None:
    """The level and method of a query's intervals (None when it has none)."""
    if not q.interval_method:
        return None
    return {"level": level, "method": q.interval_method,
            "of": interval_of(q.interval_method),
            "description": interval_description(q.interval_method)}


def release_json(release: Release) -> bytes:
    return json.dumps(release_record(release), indent=2, ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all: a temporary file beside it, renamed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
