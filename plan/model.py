"""The release plan: frozen dataclasses for every part, and their JSON form (versioned).

A plan names the dataset, the privacy unit, the accounting, an optional total budget and the
queries, each with its declarations (bounds, categories, grids and where they come from), its
mechanism and an accuracy target. ``Plan.from_json`` refuses a bad field by its path.

The plan (:class:`Plan`, :class:`PlanQuery`) is here, above the query kinds (``plan.kinds``)
that it reads each query through; the fields it is made of are in ``plan.fields``, below the
kinds, and re-exported here, as are the kinds' dataclasses (``plan.model.Count``, …, by name).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from dpcore.contributions import UNIT_ORIGINS, PrivacyUnit  # noqa: F401 — re-exported
from plan.fields import (  # noqa: F401 — the plan's fields, re-exported by their names
    _FAMILIES,
    _ID,
    ACCOUNTING_METHODS,
    FORMAT,
    GROUP_STATISTICS,
    MAX_CATEGORIES,
    MAX_QUERIES,
    MAX_TEXT,
    ORIGINS,
    OUTSIDE,
    TARGET_KINDS,
    VERSION,
    Accounting,
    Bounds,
    Budget,
    BuiltOn,
    Categories,
    Category,
    Dataset,
    Grid,
    Noise,
    NoiseSpec,
    Origin,
    PlanError,
    SelectionNoise,
    Target,
    Threshold,
    _bounded_int,
    _category,
    _check_cells,
    _choice,
    _column,
    _declared,
    _declared_size,
    _drop_none,
    _f,
    _Fields,
    _integer,
    _json_type,
    _number,
    _positive,
    _probability,
    _text,
    _unit_from_fields,
    _version,
)
from plan.kinds import KINDS, SPECS, kind_of

__all__ = [
    "FORMAT", "VERSION", "ORIGINS", "ACCOUNTING_METHODS", "PlanError",
    "Dataset", "BuiltOn", "PrivacyUnit", "Accounting", "Budget", "Bounds", "Categories", "Grid",
    "UNIT_ORIGINS", "Noise", "SelectionNoise", "Threshold", "Target", "PlanQuery", "Plan",
    "NoiseSpec",
]


def __getattr__(name: str) -> Any:
    """``plan.model.Count`` and the other query dataclasses live in ``plan.kinds``."""
    if name == "QuerySpec":
        return tuple(SPECS.values())
    if not name.startswith("_") and name in SPECS:
        return SPECS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class PlanQuery:
    """One query of the plan: its id, label and page, what it computes, how it is noised,
    and (optionally) the accuracy it should reach.

    A group-by without declared keys also has a ``threshold`` (partition selection); its
    ``mechanism`` then noises the sums (``statistic`` sum or mean) and is None for counts (the
    threshold's noisy counts are released).
    """

    id: str
    label: str
    query: Any   # a query kind's dataclass (plan.kinds)
    mechanism: NoiseSpec | None
    page: str = "plan"
    threshold: Threshold | None = None
    target: Target | None = None

    def check(self, path: str) -> None:
        if not isinstance(self.id, str) or not _ID.match(self.id):
            raise PlanError(f"{path}.id", "must be 1 to 64 letters, digits, '.', '_' or '-' "
                            f"(starting with a letter or digit), got {self.id!r}")
        _text(self.label, f"{path}.label", empty=False)
        _text(self.page, f"{path}.page", empty=False)
        try:
            kind = kind_of(self.query)
        except TypeError:
            raise PlanError(f"{path}.query", f"must be a query, got "
                            f"{type(self.query).__name__}") from None
        self.query.check(f"{path}.query")
        kind.check_query(self, path)
        if self.target is not None:
            self.target.check(f"{path}.target")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({
            "id": self.id, "label": self.label, "page": self.page,
            "query": self.query.to_dict(),
            "mechanism": None if self.mechanism is None else self.mechanism.to_dict(),
            "threshold": None if self.threshold is None else self.threshold.to_dict(),
            "target": None if self.target is None else self.target.to_dict()})

    @staticmethod
    def from_fields(f: _Fields) -> PlanQuery:
        qf = f.obj("query")
        kind = KINDS[qf.choice("kind", tuple(KINDS))]
        query = kind.spec.from_fields(qf)
        qf.done()
        mf = f.obj("mechanism", required=False)
        mechanism = None
        if mf is not None:
            family = mf.choice("family", tuple(_FAMILIES))
            if family not in kind.families:
                taken = " or ".join(kind.families) or "no"
                raise PlanError(mf.at("family"), f"a {kind.name} query takes {taken} "
                                f"mechanism, got {family}")
            mechanism = _FAMILIES[family].from_fields(mf)
            mf.done()
        tf = f.obj("threshold", required=False)
        threshold = None
        if tf is not None:
            tf.raw("family", required=False)
            threshold = Threshold.from_fields(tf)
            tf.done()
        out = PlanQuery(f.text("id"), f.text("label"), query, mechanism,
                        f.text("page", required=False, default="plan"), threshold,
                        _declared(f, "target", Target, required=False))
        f.done()
        return out


@dataclass(frozen=True)
class Plan:
    """A release plan: the dataset, the privacy unit, the accounting, an optional total
    budget and the queries. Built valid or not at all (``PlanError`` naming the field)."""

    dataset: Dataset
    queries: tuple[PlanQuery, ...]
    privacy_unit: PrivacyUnit = field(default_factory=PrivacyUnit)
    accounting: Accounting = field(default_factory=Accounting)
    budget: Budget | None = None

    def __post_init__(self) -> None:
        for name, cls in (("dataset", Dataset), ("privacy_unit", PrivacyUnit),
                          ("accounting", Accounting)):
            if not isinstance(getattr(self, name), cls):
                raise PlanError(name, f"must be a {cls.__name__}")
        if self.budget is not None and not isinstance(self.budget, Budget):
            raise PlanError("budget", "must be a Budget or None")
        if not isinstance(self.queries, tuple) or not self.queries:
            raise PlanError("queries", "must hold at least one query")
        if len(self.queries) > MAX_QUERIES:
            raise PlanError("queries", f"must hold at most {MAX_QUERIES:,} queries")
        seen: set[str] = set()
        for i, query in enumerate(self.queries):
            if not isinstance(query, PlanQuery):
                raise PlanError(f"queries[{i}]", "must be a PlanQuery")
            query.check(f"queries[{i}]")
            if query.id in seen:
                raise PlanError(f"queries[{i}].id", f"repeats the id {query.id!r}")
            seen.add(query.id)
        self._check_unit()

    def _check_unit(self) -> None:
        seen: dict[str, int] = {}
        for i, q in enumerate(self.queries):
            kind = kind_of(q.query)
            if kind.unique and kind.name in seen:
                raise PlanError(f"queries[{i}]", f"a plan holds at most one {kind.name} "
                                "query")
            seen[kind.name] = i
            kind.check_unit(q, self.privacy_unit, f"queries[{i}]")

    def published(self) -> Plan:
        """The plan as a release publishes it: without the data's content hash (a function of
        the raw data, kept in the steward's ledger only) and without any target computed from
        the true data. Declarations read off the data stay, flagged by their origin."""
        queries = tuple(replace(q, target=None)
                        if q.target is not None and q.target.origin == "data" else q
                        for q in self.queries)
        return replace(self, dataset=replace(self.dataset, content_hash=None),
                       queries=queries)

    def query(self, query_id: str) -> PlanQuery:
        for q in self.queries:
            if q.id == query_id:
                return q
        raise KeyError(query_id)

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": VERSION, "dataset": self.dataset.to_dict(),
                "privacy_unit": self.privacy_unit.to_dict(),
                "accounting": self.accounting.to_dict(),
                "budget": None if self.budget is None else self.budget.to_dict(),
                "queries": [q.to_dict() for q in self.queries]}

    def to_json(self) -> str:
        """The plan as indented JSON (UTF-8 text, keys in a fixed order)."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, allow_nan=False)

    @staticmethod
    def from_dict(data: object) -> Plan:
        f = _Fields(data, "")
        fmt = f.raw("format")
        if fmt != FORMAT:
            raise PlanError("format", f"must be {FORMAT!r}: this is not an Epsilon Lab plan "
                            f"(got {fmt!r})")
        version = f.integer("version")
        if version != VERSION:
            newer = " (written by a newer Epsilon Lab)" if version > VERSION else ""
            raise PlanError("version", f"this Epsilon Lab reads plans of version {VERSION}, "
                            f"got {version}{newer}")
        dataset = Dataset.from_fields(f.obj("dataset"))
        unit_fields = f.obj("privacy_unit", required=False)
        unit = PrivacyUnit() if unit_fields is None else _unit_from_fields(unit_fields)
        acc_fields = f.obj("accounting", required=False)
        accounting = Accounting() if acc_fields is None else Accounting.from_fields(acc_fields)
        budget_fields = f.obj("budget", required=False)
        budget = None if budget_fields is None else Budget.from_fields(budget_fields)
        raw_queries = f.array("queries")
        queries = tuple(PlanQuery.from_fields(_Fields(q, f"queries[{i}]"))
                        for i, q in enumerate(raw_queries))
        f.done()
        return Plan(dataset, queries, unit, accounting, budget)

    @staticmethod
    def from_json(text: str | bytes) -> Plan:
        """Read a plan from JSON text; ``PlanError`` naming the field that is wrong."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8-sig")
            except UnicodeDecodeError as exc:
                raise PlanError("", f"the plan is not UTF-8 text ({exc.reason})") from None
        if not isinstance(text, str):
            raise TypeError(f"text must be str or bytes, got {type(text).__name__}")
        try:
            data = json.loads(text, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise PlanError("", f"the plan is not valid JSON: {exc.msg} at line {exc.lineno}, "
                            f"column {exc.colno}") from None
        return Plan.from_dict(data)


def _no_constant(name: str) -> None:
    raise PlanError("", f"the plan holds {name}, which is not a number JSON allows")
