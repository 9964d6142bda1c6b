"""The declared schema of a dataset: per column a role, its public domain, and where each
declaration comes from — and its JSON form, the same as ``NAME.schema.json`` beside a file
in the data folder::

    {"format": "epsilon-lab-schema", "version": 1, "source": "...",
     "privacy_unit": {"person_column": "patient_id", "max_rows": 5, "max_groups": null,
                      "bounds_origin": "typed"},
     "columns": {
        "age": {"role": "numeric", "lower": 0, "upper": 120, "integer": true,
                "unit": "years", "bins": [0, 18, 65, 120], "origin": "public",
                "source": "the survey's codebook"},
        "flag": {"role": "categorical", "categories": [0, 1], "origin": "typed"},
        "patient_id": {"role": "person id"},
        "notes": {"role": "ignore"}}}

Origins: ``public`` (documentation), ``typed`` (by the user), ``data`` (read off the data:
not covered by the guarantee, flagged wherever it is used). The files written before roles
existed (columns with lower/upper or categories only) read the same, and so do those whose
privacy unit spells its person-id column ``"person"`` (``dpcore.contributions.PrivacyUnit``'s
JSON form, the plan file's too, says ``"person_column"``). No widgets here.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from dashboard.data.model import MAX_CATEGORIES, ColumnDomain, LoadedDataset
from dpcore.contributions import PrivacyUnit

FORMAT = "epsilon-lab-schema"
VERSION = 1
ROLES = ("categorical", "numeric", "person id", "ignore")
ORIGINS = ("public", "typed", "data")
#: Where the source text of a typed or data-read declaration starts (the origin is read back
#: from it: ColumnDomain keeps ``from_data`` and a source).
TYPED = "Typed by the user"
FROM_DATA = "READ OFF THE DATA"
#: Largest schema file read.
MAX_SCHEMA_BYTES = 2 * 2**20
MAX_TEXT = 300


class SchemaError(ValueError):
    """A schema that cannot be read; the message names the column and says how to fix it."""


@dataclass(frozen=True)
class Schema:
    """What is declared about a dataset: domains, hidden columns (ignored, or the person id)
    and the privacy unit (its person-id column with its bounds)."""

    domains: dict[str, ColumnDomain] = field(default_factory=dict)
    ignored: frozenset[str] = frozenset()
    unit: PrivacyUnit = PrivacyUnit()
    source: str = ""

    @property
    def person(self) -> str | None:
        """The person-id column (None: one row is one person)."""
        return self.unit.person_column

    def role(self, column: str) -> str | None:
        if column == self.person:
            return "person id"
        if column in self.ignored:
            return "ignore"
        domain = self.domains.get(column)
        return None if domain is None else domain.kind


def origin_of(domain: ColumnDomain) -> str:
    """public, typed or data, as the domain's flag and source say."""
    if domain.from_data:
        return "data"
    return "typed" if domain.source.startswith(TYPED) else "public"


def with_origin(domain: ColumnDomain, origin: str, said: str = "") -> ColumnDomain:
    """The domain with ``origin`` written into its flag and source."""
    if origin not in ORIGINS:
        raise SchemaError(f"origin must be one of {', '.join(ORIGINS)}, got {origin!r}")
    text = said.strip()
    # A source read back from a schema file (to_json writes the whole source) already starts
    # with this origin's words: written again, a file read back would not be the file saved
    # (the kept declarations restored after a reload would differ from a plan's). Stripped
    # as often as they repeat: files written before this fix heal when read.
    prefix = {"data": FROM_DATA, "typed": TYPED}.get(origin)
    while prefix and (text == prefix or text.startswith(prefix + ":")):
        text = text[len(prefix) + 1:].strip()
    text = text[:MAX_TEXT]
    if origin == "data":
        source = FROM_DATA + (f": {text}" if text else ": bounds or categories taken from the "
                              "data itself, not covered by the privacy guarantee")
    elif origin == "typed":
        source = TYPED + (f": {text}" if text else "")
    else:
        source = text or "public documentation"
    return replace(domain, source=source, from_data=origin == "data")


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SchemaError(f"{what} must be a finite number, got {value!r}")
    return float(value)


def _label(value: object, column: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise SchemaError(f"{column}: categories must be text or numbers, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else str(value)   # a text exactly as written


#: What makes a category need quotes in the typed list: a separator (comma, line break), a
#: double quote, or spaces at either end (an unquoted item loses those).
_NEEDS_QUOTES = re.compile(r'[,"\r\n]')
#: One item of a typed list: spaces, then a quoted text (``""`` inside for one quote) or an
#: unquoted one up to the next separator, then spaces.
_QUOTED = re.compile(r'"((?:[^"]|"")*)"[^\S\r\n]*')
_UNQUOTED = re.compile(r"[^,\r\n]*")
_SEPARATOR = re.compile(r",|\r\n|\r|\n")


def quoted_category(category: str) -> str:
    """One category as typed in a list: as it is, or in double quotes (a quote inside
    doubled) when it holds a comma, a quote or a line break, has spaces at either end, or is
    empty — so that ``parse_categories`` reads it back byte for byte."""
    if category and category == category.strip() and not _NEEDS_QUOTES.search(category):
        return category
    return '"' + category.replace('"', '""') + '"'


def format_categories(categories: Iterable[object]) -> str:
    """Categories as one typed list, separated by ", " (``parse_categories`` reads it back
    to the same texts)."""
    return ", ".join(quoted_category(str(c)) for c in categories)


def _split_categories(text: str, column: str) -> list[str | None]:
    """The items of a typed list, in order (None for a blank one, which is ignored)."""
    items: list[str | None] = []
    at, end = 0, len(text)
    while True:
        while at < end and text[at] in " \t":
            at += 1
        if at < end and text[at] == '"':
            quoted = _QUOTED.match(text, at)
            if quoted is None:
                raise SchemaError(f"{column}: a category opens a double quote that is never "
                                  "closed: close it (a quote inside a quoted category is "
                                  'typed twice, "")')
            items.append(quoted.group(1).replace('""', '"'))
            at = quoted.end()
            if at < end and not _SEPARATOR.match(text, at):
                raise SchemaError(f"{column}: a quoted category is followed by more text: "
                                  "put the whole category inside the quotes, then a comma")
        else:
            unquoted = _UNQUOTED.match(text, at)
            items.append(unquoted.group(0).strip() or None)
            at = unquoted.end()
        separator = _SEPARATOR.match(text, at)
        if separator is None:
            return items
        at = separator.end()


def parse_categories(text: str, column: str = "column") -> tuple[str, ...]:
    """Categories typed or pasted: separated by commas or line breaks, blanks ignored, spaces
    around an item dropped. A category that holds a comma, a double quote or a line break, or
    keeps spaces at either end, is typed in double quotes (a quote inside written twice):
    ``"Craftsmen, Foremen_and_kindred", Laborers_and_farmers`` is two categories; a quoted
    one is kept exactly as typed (``format_categories`` writes this form)."""
    cats = tuple(c for c in _split_categories(text, column) if c is not None)
    if not cats:
        raise SchemaError(f"{column}: type at least one category (separated by commas)")
    if len(set(cats)) != len(cats):
        repeated = sorted({c for c in cats if cats.count(c) > 1})[:3]
        raise SchemaError(f"{column}: the categories repeat {format_categories(repeated)}: "
                          "list each once")
    if len(cats) > MAX_CATEGORIES:
        raise SchemaError(f"{column}: at most {MAX_CATEGORIES:,} categories")
    return cats


def parse_bins(text: str, column: str = "column") -> tuple[float, ...] | None:
    """Bin edges typed as numbers separated by commas (empty: no bins)."""
    # a typographic minus (U+2212, a dash) is a minus sign, as in a typed bound
    text = text.translate(str.maketrans({c: "-" for c in "\u2212\u2012\u2013\u2014\ufe63\uff0d"}))
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    if not parts:
        return None
    try:
        edges = tuple(float(p) for p in parts)
    except ValueError:
        raise SchemaError(f"{column}: bin edges must be numbers separated by commas") from None
    if len(edges) < 2 or not all(math.isfinite(e) for e in edges) or any(
            b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise SchemaError(f"{column}: bin edges must be at least two finite numbers in "
                          "increasing order")
    return edges


def column_domain(column: str, spec: dict) -> ColumnDomain | None:
    """One column's declaration from its JSON object (None for roles without a domain)."""
    if not isinstance(spec, dict):
        raise SchemaError(f"{column}: the declaration must be an object")
    role = spec.get("role")
    if role is None:   # the older files: the fields say what it is
        role = "categorical" if "categories" in spec else "numeric"
    if role not in ROLES:
        raise SchemaError(f"{column}: role must be one of {', '.join(ROLES)}, got {role!r}")
    if role in ("person id", "ignore"):
        return None
    origin = spec.get("origin", "public")
    said = spec.get("source", "")
    said = said if isinstance(said, str) else ""
    if role == "categorical":
        cats = spec.get("categories")
        if not isinstance(cats, list) or not cats:
            raise SchemaError(f"{column}: a categorical column needs a non-empty list of "
                              "categories")
        labels = tuple(_label(c, column) for c in cats)
        if len(set(labels)) != len(labels):
            raise SchemaError(f"{column}: the categories repeat: list each once")
        if len(labels) > MAX_CATEGORIES:
            raise SchemaError(f"{column}: at most {MAX_CATEGORIES:,} categories")
        return with_origin(ColumnDomain("categorical", categories=labels), origin, said)
    lower = _number(spec.get("lower"), f"{column}: lower")
    upper = _number(spec.get("upper"), f"{column}: upper")
    if not lower < upper:
        raise SchemaError(f"{column}: lower ({lower:g}) must be below upper ({upper:g})")
    bins = spec.get("bins")
    if bins is not None:
        if not isinstance(bins, list):
            raise SchemaError(f"{column}: bins must be a list of bin edges")
        bins = parse_bins(", ".join(repr(_number(b, f"{column}: a bin edge")) for b in bins),
                          column)
    unit = spec.get("unit", "")
    domain = ColumnDomain("numeric", lower, upper, integer=spec.get("integer") is True,
                          unit=unit[:40] if isinstance(unit, str) else "", bins=bins)
    return with_origin(domain, origin, said)


def from_json(text: str | bytes, columns: list[str]) -> Schema:
    """Read a schema file; every error names the column (SchemaError)."""
    if isinstance(text, bytes):
        if len(text) > MAX_SCHEMA_BYTES:
            raise SchemaError(f"The file is larger than {MAX_SCHEMA_BYTES // 2**20} MB: a "
                              "schema is a few kilobytes. Check that it is the right file.")
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise SchemaError("The file is not UTF-8 text: save it as UTF-8 JSON.") from None
    try:
        raw = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        where = f" (line {exc.lineno}, column {exc.colno})" if hasattr(exc, "lineno") else ""
        raise SchemaError(f"The file is not valid JSON{where}: fix it, or download a schema "
                          "from this page to start from.") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("columns", {}), dict):
        raise SchemaError('A schema is a JSON object with "columns": {name: declaration}.')
    unknown = [c for c in raw.get("columns", {}) if c not in columns]
    if unknown:
        raise SchemaError(f"The schema declares columns the data does not have: "
                          f"{', '.join(map(repr, unknown[:5]))}. Remove them or load the "
                          "matching data.")
    domains: dict[str, ColumnDomain] = {}
    ignored, person = set(), None
    for column, spec in raw.get("columns", {}).items():
        domain = column_domain(column, spec)
        if domain is not None:
            domains[column] = domain
        elif spec.get("role") == "ignore":
            ignored.add(column)
        elif person is None:
            person = column
        else:
            raise SchemaError(f"{column}: only one column can be the person id ({person} "
                              "already is)")
    said = raw.get("source", "")
    return Schema(domains, frozenset(ignored), _unit(raw.get("privacy_unit"), person, columns),
                  said[:MAX_TEXT] if isinstance(said, str) else "")


def _unit(raw: object, person: str | None, columns: list[str]) -> PrivacyUnit:
    """The file's privacy unit (``PrivacyUnit.from_dict``: ``person_column``, or ``person``
    in older files); its person-id column defaults to the column whose role is person id."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise SchemaError('"privacy_unit" must be an object with person_column, max_rows, '
                          'max_groups')
    for name in ("max_rows", "max_groups"):
        value = raw.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise SchemaError(f"privacy_unit: {name} must be a whole number ≥ 1")
    if raw.get("person_column") is None and raw.get("person") is None:
        raw = {**raw, "person_column": person}
    named = raw.get("person_column") or raw.get("person")
    if named is not None and named not in columns:
        raise SchemaError(f"privacy_unit: the person-id column {named!r} is not in the data")
    try:
        return PrivacyUnit.from_dict(raw)
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"privacy_unit: {exc}") from None


#: A whole number as JSON writes it: what ``_category_value`` turns back into a number.
_INTEGER_TEXT = re.compile(r"0|-?[1-9][0-9]*")


def _category_value(label: str) -> object:
    """An integer code (``"2"``, ``"-1"``) as a JSON number, every other text as it is: one
    that only reads as a number (``"012"``, ``"1.0"``, ``" 12"``) keeps its spelling."""
    return int(label) if _INTEGER_TEXT.fullmatch(label) else label


def to_json(schema: Schema, *, dataset: str = "") -> str:
    """The schema as JSON (origins written out; integer-coded categories stay numbers)."""
    columns: dict[str, dict] = {}
    for column, domain in schema.domains.items():
        entry: dict = {"role": domain.kind, "origin": origin_of(domain)}
        if domain.kind == "categorical":
            entry["categories"] = [_category_value(c) for c in domain.categories]
        else:
            entry |= {"lower": domain.lower, "upper": domain.upper, "integer": domain.integer}
            if domain.unit:
                entry["unit"] = domain.unit
            if domain.bins is not None:
                entry["bins"] = list(domain.bins)
        if domain.source:
            entry["source"] = domain.source
        columns[column] = entry
    for column in sorted(schema.ignored):
        columns[column] = {"role": "ignore"}
    if schema.person is not None:
        columns[schema.person] = {"role": "person id"}
    out = {"format": FORMAT, "version": VERSION, "dataset": dataset,
           "source": schema.source or "declared in Epsilon Lab",
           "privacy_unit": None if schema.person is None else schema.unit.to_dict(),
           "columns": columns}
    return json.dumps(out, indent=2, ensure_ascii=False)


def applied(loaded: LoadedDataset, schema: Schema | None, person: str | None) -> LoadedDataset:
    """The dataset the pages see: its shipped domains overridden by ``schema``'s, ignored
    columns and the privacy unit's ``person`` column hidden from the query columns. The
    engine relation is shared (nothing is scanned again)."""
    if schema is None and person is None:
        return loaded
    # the session's schema replaces what the data came with (its table lists those too)
    schema = schema or Schema(dict(loaded.domains), loaded.hidden)
    domains = {c: d for c, d in loaded.domains.items()
               if c not in schema.ignored and c != person}
    domains |= {c: d for c, d in schema.domains.items() if c != person}
    hidden = frozenset(schema.ignored | ({person} if person else set()))
    out = replace(loaded, domains=domains, hidden=hidden)
    if "relation" in loaded.__dict__:   # the cached engine relation (a cached_property)
        out.__dict__["relation"] = loaded.__dict__["relation"]
    return out


def of_dataset(loaded: LoadedDataset, unit: PrivacyUnit) -> Schema:
    """What the dataset declares now (its domains, hidden columns) with the session's unit."""
    return Schema(dict(loaded.domains), frozenset(loaded.hidden - {unit.person_column}), unit)
