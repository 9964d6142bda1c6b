"""The declared schema as the Data page's editable table, and back (no widgets here).

One row per column: its type (as the engine reads it), role, categories, bounds, bin edges,
origin and source. ``to_table`` fills it from a :class:`~dashboard.data.schema.Schema`;
``from_table`` reads the edited table back, collecting every problem with the row it is in.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dashboard.data.model import ColumnDomain
from dashboard.data.schema import (
    FROM_DATA,
    TYPED,
    Schema,
    SchemaError,
    format_categories,
    origin_of,
    parse_bins,
    parse_categories,
    with_origin,
)
from dpcore.contributions import PrivacyUnit

NOT_DECLARED = "not declared"
ROLE_CHOICES = (NOT_DECLARED, "categorical", "numeric", "person id", "ignore")
COLUMNS = ("column", "type", "role", "categories", "lower", "upper", "integer", "unit",
           "bins", "origin", "source")


def _source_text(domain: ColumnDomain) -> str:
    origin = origin_of(domain)
    text = domain.source
    prefix = {"typed": TYPED, "data": FROM_DATA}.get(origin)
    if prefix is not None and text.startswith(prefix):   # with_origin writes it back
        text = text[len(prefix):].lstrip(": ")
    return text


def to_table(declared: Schema, columns: list[str], kinds: dict[str, str]) -> pd.DataFrame:
    """The editable table of ``declared`` over the data's ``columns``."""
    rows = []
    for column in columns:
        domain = declared.domains.get(column)
        role = declared.role(column) or NOT_DECLARED
        row = {"column": column, "type": kinds.get(column, ""), "role": role, "categories": "",
               "lower": "", "upper": "", "integer": False, "unit": "", "bins": "",
               "origin": "typed", "source": ""}
        if domain is not None:
            row |= {"origin": origin_of(domain), "source": _source_text(domain)}
            if domain.kind == "categorical":
                row["categories"] = format_categories(domain.categories)
            else:
                row |= {"lower": bound_text(domain.lower), "upper": bound_text(domain.upper),
                        "integer": domain.integer, "unit": domain.unit,
                        "bins": "" if domain.bins is None else
                        ", ".join(f"{e:g}" for e in domain.bins)}
        rows.append(row)
    # bounds are text cells holding what was typed (a number set by code too): object
    return pd.DataFrame(rows, columns=list(COLUMNS)).astype({"lower": object, "upper": object})


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) \
        else str(value)


#: Minus signs a bound may be typed or pasted with (a typographic minus U+2212 from a
#: codebook, dashes, full-width forms): read as "-". The editor's number cells dropped
#: them, so a pasted "−2" became 2 (issue 35 item 4): the bounds are text cells read here.
MINUS_SIGNS = str.maketrans({c: "-" for c in "\u2212\u2012\u2013\u2014\ufe63\uff0d"})


def bound_text(value: float) -> str:
    """A bound as its cell shows it: a whole number without ".0", any other as Python
    writes it (read back to the same double)."""
    number = float(value)
    if not math.isfinite(number):
        return ""
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def read_bound(value: object) -> float:
    """A bound typed in a cell (text or a number), NaN when it is none: spaces removed, any
    minus sign read as one (``MINUS_SIGNS``)."""
    if isinstance(value, str):
        value = value.strip().translate(MINUS_SIGNS).replace(" ", "")
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _bound(value: object, what: str) -> float:
    number = read_bound(value)
    if not math.isfinite(number):
        raise SchemaError(f"{what}: type a number")
    return number


def from_table(table: pd.DataFrame, *, max_rows: int = 1,
               max_groups: int | None = None) -> tuple[Schema, list[str]]:
    """The schema the edited table declares, and the problems found (one per bad row; the
    rows with a problem are left as they were declared before: not applied)."""
    domains: dict[str, ColumnDomain] = {}
    ignored: set[str] = set()
    people: list[str] = []
    problems: list[str] = []
    for row in table.to_dict("records"):
        column, role = str(row["column"]), _text(row.get("role")) or NOT_DECLARED
        origin = _text(row.get("origin")) or "typed"
        said = _text(row.get("source"))
        try:
            if role == "categorical":
                cats = parse_categories(_text(row.get("categories")), column)
                domains[column] = with_origin(ColumnDomain("categorical", categories=cats),
                                              origin, said)
            elif role == "numeric":
                lower = _bound(row.get("lower"), f"{column}: lower bound")
                upper = _bound(row.get("upper"), f"{column}: upper bound")
                if not lower < upper:
                    raise SchemaError(f"{column}: the lower bound ({lower:g}) must be below the "
                                      f"upper bound ({upper:g})")
                domains[column] = with_origin(ColumnDomain(
                    "numeric", lower, upper, integer=bool(row.get("integer")),
                    unit=_text(row.get("unit"))[:40],
                    bins=parse_bins(_text(row.get("bins")), column)), origin, said)
            elif role == "person id":
                people.append(column)
            elif role == "ignore":
                ignored.add(column)
        except (SchemaError, ValueError) as exc:
            problems.append(str(exc))
    if len(people) > 1:
        problems.append(f"Only one column can be the person id: {', '.join(people)} are "
                        "marked. Keep one.")
        people = people[:1]
    person = people[0] if people else None
    unit = PrivacyUnit() if person is None else PrivacyUnit(person, max_rows, max_groups)
    return Schema(domains, frozenset(ignored), unit), problems


def filled_from_data(table: pd.DataFrame, profile: pd.DataFrame,
                     categories: dict[str, tuple[str, ...]]) -> pd.DataFrame:
    """The table with every undeclared column declared from the data itself (origin data):
    numeric columns get their minimum and maximum, others their distinct values (written by
    ``format_categories``: a value holding a comma is one category, quoted)."""
    out = table.copy()
    facts = profile.set_index("column")
    for i, row in out.iterrows():
        if row["role"] != NOT_DECLARED:
            continue
        column = row["column"]
        if column in categories:
            out.loc[i, ["role", "categories"]] = ["categorical",
                                                  format_categories(categories[column])]
        elif column in facts.index and math.isfinite(facts.loc[column, "min"]) and \
                facts.loc[column, "max"] > facts.loc[column, "min"]:
            out.loc[i, ["role", "lower", "upper"]] = ["numeric",
                                                      bound_text(facts.loc[column, "min"]),
                                                      bound_text(facts.loc[column, "max"])]
        else:
            continue
        out.loc[i, ["origin", "source"]] = ["data", "filled in from the data on the Data page"]
    return out


def _typed(column: pd.Series) -> np.ndarray:
    """Which cells of ``column`` hold something typed (not empty, not NaN)."""
    text = column.astype(object).where(column.notna(), "").astype(str).str.strip()
    return (text != "").to_numpy()


#: The cells that make a declaration: editing one by hand makes the row's declaration typed.
DECLARING = ("categories", "lower", "upper", "bins")
HAND_EDITED = "typed on the Data page (it was read off the data)"


def _differs(now: pd.Series, then: pd.Series) -> np.ndarray:
    """Which cells changed, NaN equal to NaN and empty text (numbers compared as numbers)."""
    def shown(column: pd.Series) -> pd.Series:
        numbers = pd.to_numeric(column, errors="coerce")
        text = column.astype(object).where(column.notna(), "").astype(str).str.strip()
        return numbers.map(repr).where(numbers.notna(), text)
    return (shown(now.reset_index(drop=True)) != shown(then.reset_index(drop=True))).to_numpy()


def with_hand_edits(table: pd.DataFrame, before: pd.DataFrame) -> pd.DataFrame:
    """The edited ``table`` with origin "typed" on each row whose origin was "data" and whose
    bounds, categories or bin edges were edited by hand (a number typed over one read off the
    data is the user's, not the data's), unless the origin or source was edited too.
    ``before`` is the table as drawn, row for row."""
    out = table.copy()
    edited = np.zeros(len(out), dtype=bool)
    for cell in DECLARING:
        edited |= _differs(out[cell], before[cell])
    was_data = (before["origin"].to_numpy() == "data") & (out["origin"].to_numpy() == "data")
    said_again = _differs(out["source"], before["source"])
    retyped = edited & was_data & ~said_again
    out.loc[retyped, "origin"] = "typed"
    out.loc[retyped, "source"] = HAND_EDITED
    return out


def with_implied_roles(table: pd.DataFrame, before: pd.DataFrame) -> tuple[pd.DataFrame,
                                                                           list[str]]:
    """The edited ``table`` with a role for each row that was and still is "not declared" but
    has bounds or categories typed in: numeric for bounds or bin edges, categorical for
    categories (so what was typed is applied, not silently dropped), and the problems (a row
    with both cannot be guessed: it stays undeclared). ``before`` is the table as drawn; a
    row set back to "not declared" by hand stays so."""
    out = table.copy()
    undeclared = ((out["role"].fillna(NOT_DECLARED) == NOT_DECLARED).to_numpy()
                  & (before["role"].to_numpy() == NOT_DECLARED))
    bounds = _typed(out["lower"]) | _typed(out["upper"]) | _typed(out["bins"])
    categories = _typed(out["categories"])
    out.loc[undeclared & bounds & ~categories, "role"] = "numeric"
    out.loc[undeclared & categories & ~bounds, "role"] = "categorical"
    problems = [f"{column}: both categories and bounds are typed: choose its role "
                "(categorical or numeric)"
                for column in out.loc[undeclared & bounds & categories, "column"]]
    return out, problems


def _described(declared: Schema, column: str) -> str:
    role = declared.role(column)
    domain = declared.domains.get(column)
    if role == "numeric" and domain is not None:
        edges = "" if domain.bins is None else \
            ", bin edges " + ", ".join(f"{e:g}" for e in domain.bins)
        return f"numeric from {domain.lower:g} to {domain.upper:g}{edges}"
    if role == "categorical" and domain is not None:
        cats = domain.categories or ()
        more = ", …" if len(cats) > 6 else ""
        return f"categories {format_categories(cats[:6])}{more}"
    return {"person id": "the person id", "ignore": "ignored"}.get(role or "", "not declared")


def changes(before: Schema, after: Schema, columns: list[str]) -> list[str]:
    """What applying ``after`` over ``before`` changes, one "column: what it is now" per
    column whose role or declaration changed (in the data's column order)."""
    return [f"{column}: {_described(after, column)}" for column in columns
            if before.role(column) != after.role(column)
            or before.domains.get(column) != after.domains.get(column)]
