"""The fields a plan is made of, below the query kinds that read them: how a plan's JSON is
read (``PlanError`` naming the field, ``_Fields``), the dataset, the accounting and the budget,
the declarations (bounds, categories, grids and where they come from), the mechanisms and the
accuracy targets.

``plan.model`` holds the plan itself (``Plan``, ``PlanQuery``), which reads each query through
its kind (``plan.kinds``), and re-exports everything here; the kinds import from here, so that
neither imports the other both ways.
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from dpcore.contributions import UNIT_ORIGINS, PrivacyUnit
from dpcore.intervals import DEFAULT_ALPHA
from dpcore.mechanisms import CATALOGUE
from dpcore.partition import PARTITION_NOISES
from dpcore.selection import NOISE_TYPES

__all__ = [
    "FORMAT", "VERSION", "ORIGINS", "ACCOUNTING_METHODS", "PlanError",
    "Dataset", "BuiltOn", "PrivacyUnit", "Accounting", "Budget", "Bounds", "Categories", "Grid",
    "UNIT_ORIGINS", "Noise", "SelectionNoise", "Threshold", "Target", "NoiseSpec",
]

#: What a plan file says it is, and the version of its layout this code reads and writes.
FORMAT = "epsilon-lab-plan"
VERSION = 1

#: Where a declaration comes from: public documentation, typed by the user, or read from the
#: data. The last one is not covered by the privacy guarantee and is flagged everywhere.
ORIGINS = ("public", "typed", "data")
# A privacy unit's bounds may also be drawn privately (the plan's max rows query):
# dpcore.contributions.UNIT_ORIGINS, re-exported with PrivacyUnit.
#: How the queries of a plan are composed into one privacy figure.
ACCOUNTING_METHODS = ("basic", "advanced", "zcdp", "pld")
#: Statistics of a group-by query.
GROUP_STATISTICS = ("count", "sum", "mean")
#: What happens to values outside bin edges (as ``dpcore.quantiles.OUTSIDE``).
OUTSIDE = ("separate", "clamp")
#: Kinds of accuracy target.
TARGET_KINDS = ("error", "selection", "rank")
#: A query id: letters, digits, dash, underscore, dot (it names rows of the released files).
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
#: Caps that keep a plan file and its release small.
MAX_QUERIES = 10_000
MAX_CATEGORIES = 100_000
MAX_TEXT = 500

Origin = Literal["public", "typed", "data"]
Category = str | int | float | bool


class PlanError(ValueError):
    """A plan that cannot be read or built; ``field`` is the path of the bad part
    (``queries[2].mechanism.epsilon``), and the message starts with it."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        self.reason = message
        super().__init__(f"{field}: {message}" if field else message)


# --------------------------------------------------------------------------------------------
# reading JSON values with the path of each field


class _Fields:
    """The fields of one JSON object, read one by one; unknown keys are refused at the end."""

    def __init__(self, value: object, path: str) -> None:
        if not isinstance(value, Mapping):
            raise PlanError(path, f"must be a JSON object, got {_json_type(value)}")
        self.value = value
        self.path = path
        self.seen: set[str] = set()

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def raw(self, key: str, *, required: bool = True) -> Any:
        self.seen.add(key)
        if key not in self.value or self.value[key] is None:
            if required:
                raise PlanError(self.at(key), "is required")
            return None
        return self.value[key]

    def text(self, key: str, *, required: bool = True, default: str = "") -> str:
        value = self.raw(key, required=required)
        if value is None:
            return default
        return _text(value, self.at(key))

    def choice(self, key: str, choices: Sequence[str], *, required: bool = True,
               default: str | None = None) -> str:
        value = self.raw(key, required=required)
        if value is None:
            return default  # type: ignore[return-value]
        return _choice(value, choices, self.at(key))

    def number(self, key: str, *, required: bool = True) -> float | None:
        value = self.raw(key, required=required)
        return None if value is None else _number(value, self.at(key))

    def integer(self, key: str, *, required: bool = True) -> int | None:
        value = self.raw(key, required=required)
        return None if value is None else _integer(value, self.at(key))

    def obj(self, key: str, *, required: bool = True) -> _Fields | None:
        value = self.raw(key, required=required)
        return None if value is None else _Fields(value, self.at(key))

    def array(self, key: str, *, required: bool = True) -> list | None:
        value = self.raw(key, required=required)
        if value is None:
            return None
        if not isinstance(value, list):
            raise PlanError(self.at(key), f"must be a JSON array, got {_json_type(value)}")
        return value

    def done(self) -> None:
        unknown = sorted(set(map(str, self.value)) - self.seen)
        if unknown:
            raise PlanError(self.at(unknown[0]), "is not a field of this part of the plan "
                            f"(known: {', '.join(sorted(self.seen))})")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, numbers.Number):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def _text(value: object, path: str, *, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise PlanError(path, f"must be a string, got {_json_type(value)}")
    if len(value) > MAX_TEXT:
        raise PlanError(path, f"must be at most {MAX_TEXT} characters, got {len(value)}")
    if not empty and not value.strip():
        raise PlanError(path, "must not be empty")
    return value


def _choice(value: object, choices: Sequence[str], path: str) -> str:
    if not isinstance(value, str) or value not in choices:
        raise PlanError(path, f"must be one of {', '.join(choices)}; got {value!r}")
    return value


def _number(value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise PlanError(path, f"must be a number, got {_json_type(value)}")
    try:
        x = float(value)
    except OverflowError:
        raise PlanError(path, "must be a finite number") from None
    if not math.isfinite(x):
        raise PlanError(path, f"must be a finite number, got {x}")
    return x


def _integer(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise PlanError(path, f"must be a whole number, got {_json_type(value)}")
    return int(value)


def _positive(value: float | None, path: str) -> None:
    if value is not None and not value > 0:
        raise PlanError(path, f"must be > 0, got {value}")


def _probability(value: float | None, path: str, *, zero: bool = False) -> None:
    if value is not None and not ((0 <= value < 1) if zero else (0 < value < 1)):
        raise PlanError(path, f"must lie in {'[0, 1)' if zero else '(0, 1)'}, got {value}")


def _category(value: object, path: str) -> Category:
    if isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _number(value, path)
    raise PlanError(path, f"must be a string, a number or a boolean, got {_json_type(value)}")


def _drop_none(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if v is not None}


def _f(value: float | None) -> float | None:
    """A number as JSON writes it back after reading (floats), so the text round-trips."""
    return None if value is None else float(value)


# --------------------------------------------------------------------------------------------
# the dataset, the privacy unit, the accounting, the budget


@dataclass(frozen=True)
class BuiltOn:
    """The versions of the dataset's declarations a plan was built on (the numbered schema
    and unit events of ``release.declarations``; 0: never declared). ``confirmed_from``: the
    versions it had been built on when a steward confirmed it, as built, under these ones
    (None: built or rebuilt under them). Public facts: a count of the steward's changes."""

    schema: int = 0
    unit: int = 0
    confirmed_from: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        for name in ("schema", "unit"):
            _version(getattr(self, name), f"dataset.declarations.{name}")
        if self.confirmed_from is not None:
            if not isinstance(self.confirmed_from, tuple) or len(self.confirmed_from) != 2:
                raise PlanError("dataset.declarations.confirmed_from",
                                "must be the schema and unit versions")
            for name, value in zip(("schema", "unit"), self.confirmed_from, strict=True):
                _version(value, f"dataset.declarations.confirmed_from.{name}")

    @property
    def versions(self) -> dict[str, int]:
        """As ``release.declarations.Declarations.versions`` gives them."""
        return {"schema": self.schema, "unit": self.unit}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": self.schema, "unit": self.unit}
        if self.confirmed_from is not None:
            out["confirmed_from"] = {"schema": self.confirmed_from[0],
                                     "unit": self.confirmed_from[1]}
        return out

    @staticmethod
    def from_fields(f: _Fields) -> BuiltOn:
        schema, unit = f.integer("schema"), f.integer("unit")
        before = f.obj("confirmed_from", required=False)
        confirmed = None
        if before is not None:
            confirmed = (before.integer("schema"), before.integer("unit"))
            before.done()
        f.done()
        return BuiltOn(schema, unit, confirmed)


def _version(value: object, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PlanError(path, f"must be a whole number, got {_json_type(value)}")
    if not 0 <= int(value) <= 10**9:
        raise PlanError(path, f"must be between 0 and 10^9, got {value}")


@dataclass(frozen=True)
class Dataset:
    """The data a plan is for.

    ``name`` is how the ledger and the release files call it; ``origin`` where it comes from
    (``file:data/adult.csv.gz``, ``builtin:adult``, ``upload:visits.csv``,
    ``spark-table:db.visits``); ``content_hash`` (``sha256:…``, see :mod:`plan.identity`)
    pins the exact data: a release on other data is refused. None accepts any data under
    this name (a plan run every month on the month's file). ``declarations``: the versions of
    the dataset's declared schema and unit the plan was built on (None: not recorded, a plan
    written before plans kept them; the JSON then has no such key).
    """

    name: str
    origin: str = ""
    content_hash: str | None = None
    declarations: BuiltOn | None = None

    def __post_init__(self) -> None:
        _text(self.name, "dataset.name", empty=False)
        _text(self.origin, "dataset.origin")
        if self.content_hash is not None and not re.fullmatch(
                r"sha256:[0-9a-f]{64}", _text(self.content_hash, "dataset.content_hash")):
            raise PlanError("dataset.content_hash", "must be 'sha256:' and 64 hexadecimal "
                            f"digits, got {self.content_hash!r}")
        if self.declarations is not None and not isinstance(self.declarations, BuiltOn):
            raise PlanError("dataset.declarations", "must be a BuiltOn or None")

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "origin": self.origin, "content_hash": self.content_hash}
        if self.declarations is not None:   # absent, not null: older plans stay byte for byte
            out["declarations"] = self.declarations.to_dict()
        return out

    @staticmethod
    def from_fields(f: _Fields) -> Dataset:
        built = f.obj("declarations", required=False)
        out = Dataset(f.text("name"), f.text("origin", required=False),
                      f.raw("content_hash", required=False),
                      None if built is None else BuiltOn.from_fields(built))
        f.done()
        return out


def _unit_from_fields(f: _Fields) -> PrivacyUnit:
    """The plan file's privacy unit (``dpcore.contributions.PrivacyUnit``'s JSON form, read
    with each field's path; ``person``, the schema file's older spelling, reads too)."""
    person = f.raw("person_column", required=False)
    legacy = f.raw("person", required=False)
    if person is not None and legacy is not None:
        raise PlanError(f.at("person"), "gives the person-id column a second time: keep "
                        "person_column")
    key = "person_column" if legacy is None else "person"
    person = legacy if person is None else person
    if person is not None:
        _text(person, f.at(key), empty=False)
    max_rows = f.integer("max_rows", required=False)
    max_groups = f.integer("max_groups", required=False)
    for name, value in (("max_rows", max_rows), ("max_groups", max_groups)):
        if value is not None:
            _bounded_int(value, f.at(name))
    origin = f.choice("bounds_origin", UNIT_ORIGINS, required=False, default="typed")
    f.done()
    try:
        return PrivacyUnit(person, 1 if max_rows is None else max_rows, max_groups, origin)
    except ValueError as exc:   # one row is one person, with bounds
        raise PlanError(f.at("max_rows"), str(exc).removeprefix("max_rows: ")) from None


def _bounded_int(value: object, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise PlanError(path, f"must be a whole number, got {_json_type(value)}")
    if not 1 <= int(value) <= 10**9:
        raise PlanError(path, f"must be between 1 and 10^9, got {value}")


@dataclass(frozen=True)
class Accounting:
    """How the queries compose: ``method`` (basic, advanced, zcdp, pld) and ``delta``, the δ
    at which a total ε is read (zCDP, advanced, PLD; 0 is allowed for a pure-DP plan under
    basic composition). ``alpha``: each released value comes with a (1 − alpha) interval
    for the noise (``dpcore.intervals``; 5 % by default, which plan files need not write)."""

    method: str = "basic"
    delta: float = 0.0
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        _choice(self.method, ACCOUNTING_METHODS, "accounting.method")
        _number(self.delta, "accounting.delta")
        _probability(self.delta, "accounting.delta", zero=True)
        _number(self.alpha, "accounting.alpha")
        _probability(self.alpha, "accounting.alpha")
        if self.method != "basic" and self.delta == 0:
            raise PlanError("accounting.delta", f"{self.method} accounting reads its total ε "
                            "at a δ > 0: give one (e.g. 1e-6)")

    def to_dict(self) -> dict[str, Any]:
        out = {"method": self.method, "delta": _f(self.delta)}
        if self.alpha != DEFAULT_ALPHA:  # the default is left out: older files read the same
            out["alpha"] = _f(self.alpha)
        return out

    @staticmethod
    def from_fields(f: _Fields) -> Accounting:
        delta = f.number("delta", required=False)
        alpha = f.number("alpha", required=False)
        out = Accounting(f.choice("method", ACCOUNTING_METHODS),
                         0.0 if delta is None else delta,
                         DEFAULT_ALPHA if alpha is None else alpha)
        f.done()
        return out


@dataclass(frozen=True)
class Budget:
    """The plan's total privacy budget: ε, and δ when the plan spends one."""

    epsilon: float
    delta: float | None = None

    def __post_init__(self) -> None:
        _number(self.epsilon, "budget.epsilon")
        _positive(self.epsilon, "budget.epsilon")
        if self.delta is not None:
            _number(self.delta, "budget.delta")
            _probability(self.delta, "budget.delta", zero=True)

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"epsilon": _f(self.epsilon), "delta": _f(self.delta)})

    @staticmethod
    def from_fields(f: _Fields) -> Budget:
        out = Budget(f.number("epsilon"), f.number("delta", required=False))
        f.done()
        return out


# --------------------------------------------------------------------------------------------
# declarations


@dataclass(frozen=True)
class Bounds:
    """Clamping bounds [lower, upper] of a column, and where they come from."""

    lower: float
    upper: float
    origin: Origin = "typed"
    source: str = ""

    def check(self, path: str) -> None:
        _number(self.lower, f"{path}.lower")
        _number(self.upper, f"{path}.upper")
        if not self.lower < self.upper:
            raise PlanError(f"{path}.upper", f"must be > lower = {self.lower:g}, got "
                            f"{self.upper:g}")
        _choice(self.origin, ORIGINS, f"{path}.origin")
        _text(self.source, f"{path}.source")

    def to_dict(self) -> dict[str, Any]:
        return {"lower": _f(self.lower), "upper": _f(self.upper), "origin": self.origin,
                "source": self.source}

    @staticmethod
    def from_fields(f: _Fields) -> Bounds:
        out = Bounds(f.number("lower"), f.number("upper"),
                     f.choice("origin", ORIGINS),  # type: ignore[arg-type]
                     f.text("source", required=False))
        f.done()
        return out


def _declared_size(values: object, path: str, minimum: int, noun: str) -> None:
    """Declared values: a tuple of ``minimum`` to ``MAX_CATEGORIES`` of them."""
    if not isinstance(values, tuple) or len(values) < minimum:
        raise PlanError(f"{path}.values", "must hold at least one category" if noun ==
                        "categories" else f"must hold at least {minimum} number(s)")
    if len(values) > MAX_CATEGORIES:
        raise PlanError(f"{path}.values", f"must hold at most {MAX_CATEGORIES:,} {noun}, "
                        f"got {len(values):,}")


@dataclass(frozen=True)
class Categories:
    """Declared category values (text, numbers or booleans), and where they come from."""

    values: tuple[Category, ...]
    origin: Origin = "typed"
    source: str = ""

    def check(self, path: str) -> None:
        _declared_size(self.values, path, 1, "categories")
        kinds = set()
        for i, value in enumerate(self.values):
            _category(value, f"{path}.values[{i}]")
            kinds.add("boolean" if isinstance(value, bool) else
                      "text" if isinstance(value, str) else "number")
        if len(kinds) > 1:
            raise PlanError(f"{path}.values", "must be all text, all numbers or all "
                            f"booleans, got {' and '.join(sorted(kinds))}")
        if len({repr(v) for v in self.values}) != len(self.values) or len(
                set(self.values)) != len(self.values):
            raise PlanError(f"{path}.values", "must not repeat a category")
        _choice(self.origin, ORIGINS, f"{path}.origin")
        _text(self.source, f"{path}.source")

    def to_dict(self) -> dict[str, Any]:
        return {"values": list(self.values), "origin": self.origin, "source": self.source}

    @staticmethod
    def from_fields(f: _Fields) -> Categories:
        values = f.array("values")
        out = Categories(tuple(_category(v, f"{f.at('values')}[{i}]")
                               for i, v in enumerate(values or [])),
                         f.choice("origin", ORIGINS),  # type: ignore[arg-type]
                         f.text("source", required=False))
        f.done()
        return out


@dataclass(frozen=True)
class Grid:
    """Strictly increasing numbers: bin edges, or the candidates of a quantile."""

    values: tuple[float, ...]
    origin: Origin = "typed"
    source: str = ""

    def check(self, path: str, *, minimum: int = 1) -> None:
        _declared_size(self.values, path, minimum, "numbers")
        for i, value in enumerate(self.values):
            _number(value, f"{path}.values[{i}]")
        if any(b <= a for a, b in zip(self.values, self.values[1:], strict=False)):
            raise PlanError(f"{path}.values", "must be strictly increasing")
        _choice(self.origin, ORIGINS, f"{path}.origin")
        _text(self.source, f"{path}.source")

    def to_dict(self) -> dict[str, Any]:
        return {"values": [float(v) for v in self.values], "origin": self.origin,
                "source": self.source}

    @staticmethod
    def from_fields(f: _Fields) -> Grid:
        values = f.array("values")
        out = Grid(tuple(_number(v, f"{f.at('values')}[{i}]")
                         for i, v in enumerate(values or [])),
                   f.choice("origin", ORIGINS),  # type: ignore[arg-type]
                   f.text("source", required=False))
        f.done()
        return out


def _check_cells(categories: Categories | None, edges: Grid | None, path: str) -> None:
    """A column's declared cells: exactly one of categories or bin edges (two at least)."""
    if (categories is None) == (edges is None):
        raise PlanError(f"{path}.categories", "give either categories or bin edges (not both)")
    if categories is not None:
        categories.check(f"{path}.categories")
    else:
        edges.check(f"{path}.edges", minimum=2)


def _declared(f: _Fields, key: str, cls: type, *, required: bool = True) -> Any:
    sub = f.obj(key, required=required)
    return None if sub is None else cls.from_fields(sub)


def _column(value: object, path: str) -> str:
    return _text(value, path, empty=False)


# --------------------------------------------------------------------------------------------
# the mechanisms


@dataclass(frozen=True)
class Noise:
    """An additive mechanism of the catalogue (``dpcore.mechanisms``) with its budget.

    ``measure`` is pure (ε), approx (ε, δ) or zcdp (ρ). Under basic or advanced accounting
    a zCDP mechanism also needs ``delta``: the δ at which its ρ is read as (ε, δ).
    ``lower``/``upper`` are the public answer range of the kinds that need one (and
    ``range_origin`` where it comes from: "data" when it was read off the data, e.g. a round
    number above an upload's row count), ``gamma`` the staircase's shape.
    """

    kind: str
    measure: str
    epsilon: float | None = None
    delta: float | None = None
    rho: float | None = None
    lower: float | None = None
    upper: float | None = None
    gamma: float | None = None
    range_origin: Origin = "typed"
    family: Literal["noise"] = field(default="noise", init=False)

    def check(self, path: str) -> None:
        _choice(self.kind, tuple(CATALOGUE), f"{path}.kind")
        spec = CATALOGUE[self.kind]
        _choice(self.measure, spec.measures, f"{path}.measure")
        needed = set(spec.budgets[self.measure])
        for name in ("epsilon", "delta", "rho"):
            value = getattr(self, name)
            if value is not None:
                _number(value, f"{path}.{name}")
            if name in needed and value is None:
                raise PlanError(f"{path}.{name}", f"is required by the {self.kind} mechanism "
                                f"under {self.measure} DP")
        if self.measure == "zcdp" and self.epsilon is not None:
            raise PlanError(f"{path}.epsilon", "a zCDP mechanism is set by rho, not epsilon")
        if self.measure != "zcdp" and self.rho is not None:
            raise PlanError(f"{path}.rho", f"rho is for zCDP, not {self.measure} DP")
        if self.measure == "pure" and self.delta is not None:
            raise PlanError(f"{path}.delta", "a pure-DP mechanism has no delta")
        _positive(self.epsilon, f"{path}.epsilon")
        _positive(self.rho, f"{path}.rho")
        _probability(self.delta, f"{path}.delta")
        for name in ("lower", "upper", "gamma"):
            value = getattr(self, name)
            if value is not None:
                _number(value, f"{path}.{name}")
                if name not in spec.parameters:
                    raise PlanError(f"{path}.{name}", f"does not apply to the {self.kind} "
                                    "mechanism")
        _choice(self.range_origin, ORIGINS, f"{path}.range_origin")
        if spec.needs_range:
            if self.lower is None or self.upper is None:
                raise PlanError(f"{path}.lower", f"the {self.kind} mechanism needs the public "
                                "answer range (lower and upper)")
            if not self.lower < self.upper:
                raise PlanError(f"{path}.upper", "must be > lower")

    def budget(self) -> dict[str, float]:
        """The keywords that set the mechanism's budget (epsilon; epsilon and delta; rho)."""
        spec = CATALOGUE[self.kind]
        return {name: getattr(self, name) for name in spec.budgets[self.measure]}

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"family": self.family, "kind": self.kind, "measure": self.measure,
                           "epsilon": _f(self.epsilon), "delta": _f(self.delta),
                           "rho": _f(self.rho), "lower": _f(self.lower),
                           "upper": _f(self.upper), "gamma": _f(self.gamma),
                           "range_origin": (None if self.range_origin == "typed"
                                            else self.range_origin)})

    @staticmethod
    def from_fields(f: _Fields) -> Noise:
        return Noise(f.choice("kind", tuple(CATALOGUE)), f.text("measure"),
                     *(f.number(name, required=False)
                       for name in ("epsilon", "delta", "rho", "lower", "upper", "gamma")),
                     f.choice("range_origin", ORIGINS, required=False,
                              default="typed"))  # type: ignore[arg-type]


@dataclass(frozen=True)
class SelectionNoise:
    """Noise for a selection or a quantile: report noisy max with ``noise`` (laplace;
    exponential = permute-and-flip; gumbel = the exponential mechanism), budget ε (pure) or
    ρ (zcdp), and the δ at which ρ is read as (ε, δ) under basic or advanced accounting."""

    noise: str
    measure: str = "pure"
    epsilon: float | None = None
    rho: float | None = None
    delta: float | None = None
    family: Literal["selection"] = field(default="selection", init=False)

    def check(self, path: str) -> None:
        _choice(self.noise, NOISE_TYPES, f"{path}.noise")
        _choice(self.measure, ("pure", "zcdp"), f"{path}.measure")
        budget = "epsilon" if self.measure == "pure" else "rho"
        other = "rho" if budget == "epsilon" else "epsilon"
        if getattr(self, budget) is None:
            raise PlanError(f"{path}.{budget}", f"is required under {self.measure} DP")
        if getattr(self, other) is not None:
            raise PlanError(f"{path}.{other}", f"does not apply under {self.measure} DP")
        _positive(_number(getattr(self, budget), f"{path}.{budget}"), f"{path}.{budget}")
        if self.delta is not None:
            _probability(_number(self.delta, f"{path}.delta"), f"{path}.delta")
            if self.measure == "pure":
                raise PlanError(f"{path}.delta", "a pure-DP selection has no delta")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"family": self.family, "noise": self.noise, "measure": self.measure,
                           "epsilon": _f(self.epsilon), "rho": _f(self.rho),
                           "delta": _f(self.delta)})

    @staticmethod
    def from_fields(f: _Fields) -> SelectionNoise:
        return SelectionNoise(f.choice("noise", NOISE_TYPES),
                              f.choice("measure", ("pure", "zcdp"), required=False,
                                       default="pure"),
                              f.number("epsilon", required=False),
                              f.number("rho", required=False),
                              f.number("delta", required=False))


@dataclass(frozen=True)
class Threshold:
    """Partition selection (``dpcore.partition``): noise on each group's count, ε (Laplace
    noises) or ρ (Gaussian), and the δ the threshold spends; groups whose noisy count is below
    the threshold are not released. Under basic or advanced accounting Gaussian noise also
    needs ``delta_noise``, the δ at which its ρ is read as (ε, δ)."""

    noise: str
    delta: float
    epsilon: float | None = None
    rho: float | None = None
    delta_noise: float | None = None
    family: Literal["threshold"] = field(default="threshold", init=False)

    def check(self, path: str) -> None:
        _choice(self.noise, PARTITION_NOISES, f"{path}.noise")
        _probability(_number(self.delta, f"{path}.delta"), f"{path}.delta")
        budget = "rho" if self.noise == "gaussian" else "epsilon"
        other = "epsilon" if budget == "rho" else "rho"
        if getattr(self, budget) is None:
            raise PlanError(f"{path}.{budget}", f"is required with {self.noise} noise")
        if getattr(self, other) is not None:
            raise PlanError(f"{path}.{other}", f"does not apply to {self.noise} noise")
        _positive(_number(getattr(self, budget), f"{path}.{budget}"), f"{path}.{budget}")
        if self.delta_noise is not None:
            _probability(_number(self.delta_noise, f"{path}.delta_noise"),
                         f"{path}.delta_noise")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"family": self.family, "noise": self.noise,
                           "epsilon": _f(self.epsilon), "rho": _f(self.rho),
                           "delta": _f(self.delta), "delta_noise": _f(self.delta_noise)})

    @staticmethod
    def from_fields(f: _Fields) -> Threshold:
        return Threshold(f.choice("noise", PARTITION_NOISES), f.number("delta"),
                         f.number("epsilon", required=False), f.number("rho", required=False),
                         f.number("delta_noise", required=False))


NoiseSpec = Noise | SelectionNoise | Threshold
_FAMILIES: dict[str, Any] = {"noise": Noise, "selection": SelectionNoise,
                             "threshold": Threshold}


@dataclass(frozen=True)
class Target:
    """An accuracy target: ``error`` (±alpha with probability at least 1 − beta),
    ``selection`` (the true best chosen with probability at least ``probability``) or
    ``rank`` (a quantile within ``alpha`` ranks with probability at least 1 − beta).

    ``origin`` "data" marks a target computed from the true data (a page's "what you see
    now" default for a selection): a planning aid that no published file carries."""

    kind: str
    alpha: float | None = None
    beta: float | None = None
    probability: float | None = None
    origin: Origin = "typed"

    @property
    def by_probability(self) -> bool:
        """A ``selection`` target: a probability of picking the true best (no ±alpha)."""
        return self.kind == "selection"

    def check(self, path: str) -> None:
        _choice(self.kind, TARGET_KINDS, f"{path}.kind")
        _choice(self.origin, ORIGINS, f"{path}.origin")
        if self.kind == "selection":
            if self.probability is None:
                raise PlanError(f"{path}.probability", "is required for a selection target")
            _probability(_number(self.probability, f"{path}.probability"),
                         f"{path}.probability")
            for name in ("alpha", "beta"):
                if getattr(self, name) is not None:
                    raise PlanError(f"{path}.{name}", "does not apply to a selection target")
        else:
            for name in ("alpha", "beta"):
                if getattr(self, name) is None:
                    raise PlanError(f"{path}.{name}", f"is required for an {self.kind} target")
            _positive(_number(self.alpha, f"{path}.alpha"), f"{path}.alpha")
            _probability(_number(self.beta, f"{path}.beta"), f"{path}.beta")
            if self.probability is not None:
                raise PlanError(f"{path}.probability", f"does not apply to an {self.kind} "
                                "target")

    def to_dict(self) -> dict[str, Any]:
        return _drop_none({"kind": self.kind, "alpha": _f(self.alpha), "beta": _f(self.beta),
                           "probability": _f(self.probability),
                           "origin": None if self.origin == "typed" else self.origin})

    @staticmethod
    def from_fields(f: _Fields) -> Target:
        out = Target(f.choice("kind", TARGET_KINDS), f.number("alpha", required=False),
                     f.number("beta", required=False), f.number("probability", required=False),
                     f.choice("origin", ORIGINS, required=False,
                              default="typed"))  # type: ignore[arg-type]
        f.done()
        return out
