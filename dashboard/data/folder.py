"""The server's data folder (``EPSILON_LAB_DATA``) as datasets of the sidebar's list.

Every CSV, CSV.gz and Parquet file and Parquet folder directly in the folder is offered by
its file name; an entry that cannot be offered safely (a link out of the folder, a dangling
link, an unreadable file) is not listed, and the sidebar says why. ``NAME.schema.json``
beside a file holds its public declarations::

    {"source": "where the file comes from",
     "columns": {"age": {"lower": 0, "upper": 120, "unit": "years", "integer": true,
                         "source": "the survey's codebook"},
                 "sex": {"categories": ["F", "M"], "source": "the survey's codebook"}}}

A declaration that cannot be used is left out with a warning naming it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dashboard.data import schema as sc
from dashboard.data.model import ColumnDomain, LoadedDataset
from dpcore.contributions import PrivacyUnit
from engine import DATA_ENV, DataFile, DataFolderError, EngineError, list_data_folder
from engine.sources import csv_without_rows

#: Prefix of a data-folder dataset's value in the sidebar's list (and the URL).
CHOICE_PREFIX = "file:"


@dataclass(frozen=True)
class Listing:
    """The data folder's offered files, the entries left out (with why), and a folder-wide
    problem (the folder is missing or unreadable)."""

    files: tuple[DataFile, ...] = ()
    left_out: tuple[str, ...] = ()
    problem: str | None = None


def listing() -> Listing:
    """What ``EPSILON_LAB_DATA`` offers now (read afresh: files come and go)."""
    try:
        entries = list_data_folder()
    except DataFolderError as exc:
        return Listing(problem=str(exc))
    files = tuple(e for e in entries if e.problem is None)
    left_out = tuple(e.problem for e in entries if e.problem is not None)
    return Listing(files, left_out)


def choice_of(entry: DataFile) -> str:
    return CHOICE_PREFIX + entry.name


def is_file_choice(choice: object) -> bool:
    return isinstance(choice, str) and choice.startswith(CHOICE_PREFIX)


def shown_name(choice: str) -> str:
    """How the list shows a choice: a file by its name, marked as the data folder's."""
    return f"{choice[len(CHOICE_PREFIX):]} · data folder" if is_file_choice(choice) else choice


def _megabytes(size: int) -> str:
    return f"{size / 2**20:,.1f} MB" if size >= 2**20 else f"{size / 1024:,.0f} kB"


def schema_file_name(entry: DataFile) -> str:
    """The name of the declarations file read for ``entry`` (``NAME.schema.json``, with
    NAME the file's name without .csv/.csv.gz/.parquet, else its full name)."""
    stem = entry.name
    for suffix in (".csv.gz", ".csv", ".parquet"):
        if stem.lower().endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    first = f"{stem}.schema.json"
    return first if (entry.path.parent / first).exists() else f"{entry.name}.schema.json"


def load_data_file(entry: DataFile) -> LoadedDataset:
    """The dataset of one data-folder entry: the file is not read here (the engine scans it
    when a page asks), its declarations come from ``NAME.schema.json``.

    Raises
    ------
    EngineError
        The file vanished or changed into something that cannot be opened.
    """
    source = entry.source()
    version = source.version
    domains, warnings, ignored, unit = read_schema(entry.schema, schema_file_name(entry))
    if entry.schema_problem:
        warnings.insert(0, f"The declarations beside {entry.name} were not read: "
                           f"{entry.schema_problem} Fix the file; until then nothing about "
                           "the columns is declared public.")
    if source.format == "csv" and not source.is_folder and csv_without_rows(source):
        # said to the file's owner here (no header at all raised EngineError above); a
        # release still runs on it: an empty dataset is a dataset, its counts 0
        warnings.insert(0, f"{entry.name} has a header row but no data rows, so every count "
                           "is 0. Add one row per person below the column names, or choose "
                           "another file.")
    provenance = (entry.schema or {}).get("source")
    kind = "Parquet folder" if entry.folder else (
        "Parquet file" if entry.format == "parquet" else "CSV file")
    text = (f"{kind} {entry.name} ({_megabytes(entry.size)}) in the server's data folder "
            f"({DATA_ENV}), scanned where it lies: never loaded whole into memory.")
    if isinstance(provenance, str) and provenance.strip():
        text += f" Source: {provenance.strip()[:300]}"
    return LoadedDataset(entry.name, None, domains, warnings, text,
                         key=f"file:{entry.name}:{version}", file=source, hidden=ignored,
                         declared_unit=unit)


def domains_from_schema(schema: dict | None, name: str
                        ) -> tuple[dict[str, ColumnDomain], list[str]]:
    """Public column domains declared in the schema file called ``name``, and warnings for
    those left out. Every domain's source says it comes from that file."""
    return read_schema(schema, name)[:2]


def read_schema(schema: dict | None, name: str
                ) -> tuple[dict[str, ColumnDomain], list[str], frozenset[str],
                           PrivacyUnit | None]:
    """(domains, warnings, ignored columns, declared privacy unit) of a schema file: each
    column read on its own (``dashboard.data.schema``), a bad one left out with a warning."""
    if not schema:
        return {}, [], frozenset(), None
    columns = schema.get("columns", {})
    if not isinstance(columns, dict):
        return {}, [f"{name}: 'columns' must be an object of column names."], frozenset(), None
    domains: dict[str, ColumnDomain] = {}
    warnings: list[str] = []
    ignored: set[str] = set()
    person = None
    for column, spec in columns.items():
        try:
            domain = sc.column_domain(str(column), spec)
        except (TypeError, ValueError) as exc:
            warnings.append(f"{name}: the declaration of column {column!r} is left out ({exc}).")
            continue
        if domain is not None:
            said = domain.source if sc.origin_of(domain) != "public" else \
                f"public declaration in {name}" + (f": {domain.source}" if domain.source and
                                                   domain.source != "public documentation"
                                                   else "")
            domains[str(column)] = replace(domain, source=said[:300])
        elif spec.get("role") == "ignore":
            ignored.add(str(column))
        else:
            person = person or str(column)
    unit = schema.get("privacy_unit")
    unit = dict(unit) if isinstance(unit, dict) else {}
    # the person-id column: "person_column" ("person" in files written before one spelling)
    named = [unit.pop(key, None) for key in ("person_column", "person")]
    person = next((n for n in named if isinstance(n, str)), person)
    if person is None:
        return domains, warnings, frozenset(ignored), None
    try:
        declared = PrivacyUnit.from_dict({**unit, "person_column": person})
    except (TypeError, ValueError):
        warnings.append(f"{name}: the privacy unit's bounds must be whole numbers ≥ 1; "
                        f"{person} is the person id with at most 1 row per person.")
        declared = PrivacyUnit(person)
    return domains, warnings, frozenset(ignored), declared


__all__ = ["CHOICE_PREFIX", "Listing", "listing", "choice_of", "is_file_choice",
           "shown_name", "load_data_file", "domains_from_schema", "EngineError"]
