"""The queries the engine answers and the small aggregates it returns: frozen dataclasses.

A query names columns by the user's names and carries its declarations (bounds, categories,
contribution bounds); a backend compiles it once and returns an aggregate — a few numbers or
short numpy arrays, never rows. The semantics are those of the pandas reference
(``tests/queries_reference.py``): a missing value is NULL or NaN; ±inf is a value (clamped like
any other); every declared category keeps its cell, zeros included; values outside the declared
categories are counted, not dropped silently.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Contribution", "CountRows", "BoundedSum", "CategoryCounts", "CategoryTable", "Binned",
    "GroupedSum", "JointCells", "JointAggregate",
    "RowsPerPerson", "PersonCells", "DistinctValues", "Profile", "NumericBins", "FirstRows",
    "Query",
    "CountAggregate", "SumAggregate", "HistogramAggregate", "TableAggregate",
    "GroupedSumAggregate", "RowsPerPersonAggregate", "CellsAggregate", "DistinctAggregate",
    "ColumnProfile",
    "ProfileAggregate", "BinsAggregate", "RowsAggregate", "Aggregate", "CategoryKind",
    "category_kind", "MAX_POINTS",
]

#: Most points (bin edges, quantile candidates) a binned query may have.
MAX_POINTS = 100_000

#: What declared categories are: text, numbers (integer codes or reals) or booleans.
CategoryKind = Literal["text", "number", "boolean"]


def check_int(name: str, value: object, *, minimum: int = 1,
              maximum: int | None = None) -> int:
    """An integer (Python or numpy, not bool) in [minimum, maximum], else TypeError or
    ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    n = int(value)
    if n < minimum or (maximum is not None and n > maximum):
        upper = "" if maximum is None else f" and <= {maximum:,}"
        raise ValueError(f"{name} must be >= {minimum:,}{upper}, got {n:,}")
    return n


def check_bounds(lower: object, upper: object) -> tuple[float, float]:
    """Finite bounds with lower < upper (NaN fails), else TypeError or ValueError."""
    out = []
    for name, value in (("lower", lower), ("upper", upper)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
        if not math.isfinite(float(value)):
            raise ValueError(f"{name} must be finite, got {value}")
        out.append(float(value))
    if not out[0] < out[1]:
        raise ValueError(f"lower must be < upper, got lower={out[0]}, upper={out[1]}")
    return out[0], out[1]


def _check_name(name: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a column name (a string), got {type(value).__name__}")
    return value


def _plain(value: object) -> object:
    """A numpy scalar as the Python value it holds (a query must hash and repr stably)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_categories(name: str, categories: object) -> tuple[object, ...]:
    if isinstance(categories, (str, bytes)) or not hasattr(categories, "__iter__"):
        raise TypeError(f"{name} must be a list of category values, got "
                        f"{type(categories).__name__}")
    values = tuple(_plain(c) for c in categories)  # type: ignore[union-attr]
    if not values:
        raise ValueError(f"{name} must contain at least one category")
    category_kind(name, values)
    if len(set(values)) != len(values) or len({repr(v) for v in values}) != len(values):
        raise ValueError(f"{name} must not repeat a category")
    return values


def category_kind(name: str, categories: tuple[object, ...]) -> CategoryKind:
    """Whether ``categories`` are all text, all (finite) numbers or all booleans."""
    if all(isinstance(c, str) for c in categories):
        return "text"
    if all(isinstance(c, bool) for c in categories):
        return "boolean"
    if all(isinstance(c, numbers.Real) and not isinstance(c, bool) for c in categories):
        if not all(math.isfinite(float(c)) for c in categories):
            raise ValueError(f"{name} must not contain NaN or infinite numbers")
        return "number"
    raise TypeError(f"{name} must be all strings, all numbers or all booleans, got "
                    f"{sorted({type(c).__name__ for c in categories})}")


# --------------------------------------------------------------------------------------------
# Contribution bounds (a person with many rows)


@dataclass(frozen=True)
class Contribution:
    """Bounds on what one person adds, applied before anything is computed.

    Rows with the same value in ``person`` belong to one person; rows whose person id is
    missing are left out (``missing_person_rows`` in the aggregate).

    The unit's truncation is one per plan: each person's rows are ranked once, and every
    query under the same bounds reads the same kept rows — the person's rows of rank at most
    ``max_rows`` — whatever it reads of them (a sum then adds those that have a value, a
    histogram counts those in a declared cell), as OpenDP's and Tumult's truncation do. A
    person's rows are sorted by their own content — first every column's value as a number,
    in order (a number as itself, a text as the number it reads as, rule 4 of
    ``engine.cells``; missing or not a number first), then every integer column's exact
    value, every boolean as its text (``false``, ``true``: a boolean is no number, and the
    same column in a CSV is text) and every text that reads as no number as written, then
    every text that reads as a number as written, in order; columns of other types left
    out — and the positions
    ranked by ``md5(seed | row | person id | position)``. With
    ``max_groups`` (histograms, crosstabs, sums by group) the groups' rule comes on top: a
    person keeps at most ``max_groups`` cells, ranked by ``md5(seed | group | person id |
    cell text)``, and in each kept cell at most ``max_rows`` rows, those of lowest rank.

    A cell's text is a pure function of its own value, never of its position among the
    categories (which, for keys found in the data, other people's keys change): ``text:``
    and a string as a JSON literal (ASCII); ``number:`` and a number (a whole number within
    ±2^63 as an integer, any other as ``repr`` of its float); ``bool:true`` or
    ``bool:false``; ``row text|column text`` for a crosstab's cell; a binned cell's
    interval (``below:number:0``, ``bin:[number:0,number:5)``, ``equal:number:5``,
    ``between:number:0,number:5``). The choice depends on one person's rows only (and the
    seed), and DuckDB and Spark make the same choice for integer and text person ids.
    """

    person: str
    max_rows: int
    max_groups: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        _check_name("person", self.person)
        object.__setattr__(self, "max_rows", check_int("max_rows", self.max_rows, minimum=1))
        if self.max_groups is not None:
            object.__setattr__(self, "max_groups",
                               check_int("max_groups", self.max_groups, minimum=1))
        object.__setattr__(self, "seed", check_int("seed", self.seed, minimum=0))


def _check_whole(whole: object, lower: float, upper: float) -> None:
    if not isinstance(whole, bool):
        raise TypeError(f"whole must be a bool, got {type(whole).__name__}")
    if whole and not (float(lower).is_integer() and float(upper).is_integer()
                      and abs(lower) < 2**63 and abs(upper) < 2**63):
        raise ValueError(f"whole sums need whole bounds within ±2^63, got [{lower}, {upper}]")


def _check_contribution(value: object) -> None:
    if value is not None and not isinstance(value, Contribution):
        raise TypeError(f"contribution must be a Contribution or None, got "
                        f"{type(value).__name__}")


# --------------------------------------------------------------------------------------------
# Queries


@dataclass(frozen=True)
class CountRows:
    """The number of rows (with ``contribution``: at most ``max_rows`` per person)."""

    contribution: Contribution | None = None

    def __post_init__(self) -> None:
        _check_contribution(self.contribution)
        if self.contribution is not None and self.contribution.max_groups is not None:
            raise ValueError("max_groups applies to histograms and crosstabs, not to a count")


@dataclass(frozen=True)
class BoundedSum:
    """The sum of ``column`` clamped to ``[lower, upper]``, and how many values it adds.

    The aggregate's ``rows`` (non-missing values summed) is the mean's count: a bounded mean
    is this one query. With ``whole`` each clamped value is rounded to the nearest whole
    number (ties to even) before it is summed, so the total is exact in integers whatever the
    column holds (whole-number noise needs it; the bounds must then be whole). A value is read
    per row: a number, or text that reads as one; anything else is missing.
    """

    column: str
    lower: float
    upper: float
    contribution: Contribution | None = None
    whole: bool = False
    #: what is summed is (clamped value − ``centre``), squared when ``squared``: the moments a
    #: variance is made of (a sum of squared deviations from the bounds' midpoint)
    centre: float = 0.0
    squared: bool = False

    def __post_init__(self) -> None:
        _check_name("column", self.column)
        _check_whole(self.whole, self.lower, self.upper)
        if not isinstance(self.squared, bool):
            raise TypeError(f"squared must be a bool, got {type(self.squared).__name__}")
        if isinstance(self.centre, bool) or not isinstance(self.centre, numbers.Real) or (
                not math.isfinite(self.centre)):
            raise ValueError(f"centre must be a finite number, got {self.centre!r}")
        object.__setattr__(self, "centre", float(self.centre))
        if self.whole and (self.squared or self.centre != 0.0):
            raise ValueError("a whole sum sums the clamped values themselves (no centre, not "
                             "squared)")
        lower, upper = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        _check_contribution(self.contribution)
        if self.contribution is not None and self.contribution.max_groups is not None:
            raise ValueError("max_groups applies to histograms and crosstabs, not to a sum")


@dataclass(frozen=True)
class CategoryCounts:
    """Counts of ``column`` over every declared category, zeros kept."""

    column: str
    categories: tuple[object, ...]
    contribution: Contribution | None = None

    def __post_init__(self) -> None:
        _check_name("column", self.column)
        object.__setattr__(self, "categories", _check_categories("categories", self.categories))
        _check_contribution(self.contribution)


@dataclass(frozen=True)
class CategoryTable:
    """Counts of (``row``, ``column``) over every declared category pair, zeros kept."""

    row: str
    column: str
    row_categories: tuple[object, ...]
    column_categories: tuple[object, ...]
    contribution: Contribution | None = None

    def __post_init__(self) -> None:
        _check_name("row", self.row)
        _check_name("column", self.column)
        object.__setattr__(self, "row_categories",
                           _check_categories("row_categories", self.row_categories))
        object.__setattr__(self, "column_categories",
                           _check_categories("column_categories", self.column_categories))
        _check_contribution(self.contribution)


def _check_points(points: object) -> tuple[float, ...]:
    if isinstance(points, (str, bytes)) or not hasattr(points, "__iter__"):
        raise TypeError(f"points must be a list of numbers, got {type(points).__name__}")
    values = []
    for p in points:  # type: ignore[union-attr]
        if isinstance(p, bool) or not isinstance(_plain(p), numbers.Real):
            raise TypeError(f"points must be numbers, got {type(p).__name__}")
        values.append(float(p))
    if not values:
        raise ValueError("points must hold at least one number")
    if len(values) > MAX_POINTS:
        raise ValueError(f"points must hold at most {MAX_POINTS:,} numbers")
    if not all(math.isfinite(v) for v in values):
        raise ValueError("points must be finite numbers")
    if any(b <= a for a, b in zip(values, values[1:], strict=False)):
        raise ValueError("points must be strictly increasing")
    return tuple(values)


@dataclass(frozen=True)
class Binned:
    """Counts of a numeric ``column`` in the cells that sorted ``points`` cut the line into.

    ``cells="bins"``: the points are bin edges e₀ < … < e_k and the bins [e₀, e₁), …,
    [e_{k−1}, e_k] (the last closed, as ``numpy.histogram``); with ``outside="separate"``
    the cells are (below e₀, the k bins, above e_k), with ``"clamp"`` values outside go to
    the first or last bin. ``cells="ranks"``: 2m + 1 cells for m points, cell 2j holding the
    values strictly between p_{j−1} and p_j and cell 2j + 1 the values equal to p_j — enough
    for #{x < p} and #{x > p} at every point (a quantile's scores). Missing values (NULL,
    NaN) are in no cell; ±inf are below or above. With ``contribution`` each person keeps at
    most ``max_rows`` rows (in each of at most ``max_groups`` cells, when given).
    """

    column: str
    points: tuple[float, ...]
    cells: Literal["bins", "ranks"] = "bins"
    outside: Literal["separate", "clamp"] = "separate"
    contribution: Contribution | None = None

    def __post_init__(self) -> None:
        _check_name("column", self.column)
        object.__setattr__(self, "points", _check_points(self.points))
        if self.cells not in ("bins", "ranks"):
            raise ValueError(f"cells must be 'bins' or 'ranks', got {self.cells!r}")
        if self.outside not in ("separate", "clamp"):
            raise ValueError(f"outside must be 'separate' or 'clamp', got {self.outside!r}")
        if self.cells == "bins" and len(self.points) < 2:
            raise ValueError("points must hold at least two bin edges")
        _check_contribution(self.contribution)

    @property
    def size(self) -> int:
        """How many cells the aggregate's counts hold."""
        m = len(self.points)
        if self.cells == "ranks":
            return 2 * m + 1
        return m + 1 if self.outside == "separate" else m - 1


@dataclass(frozen=True)
class GroupedSum:
    """Per declared category of ``key``: the sum of ``column`` clamped to ``[lower, upper]``
    and how many values it adds (a mean by group is this one query).

    Rows whose value is missing add nothing and are not counted; rows whose key is missing or
    outside the categories are counted apart. With ``contribution`` each person keeps at
    most ``max_rows`` values in each group (in at most ``max_groups`` groups when given, else
    ``max_rows`` values in all).
    """

    key: str
    categories: tuple[object, ...]
    column: str
    lower: float
    upper: float
    contribution: Contribution | None = None
    whole: bool = False

    def __post_init__(self) -> None:
        _check_name("key", self.key)
        _check_name("column", self.column)
        _check_whole(self.whole, self.lower, self.upper)
        object.__setattr__(self, "categories", _check_categories("categories", self.categories))
        lower, upper = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        _check_contribution(self.contribution)


@dataclass(frozen=True)
class JointCells:
    """The full contingency table of several columns, as its non-empty cells.

    ``domains[i]`` declares column ``columns[i]``: a tuple of categories, or (with
    ``binned[i]``) a numeric column's bin edges e₀ < … < e_k, its k bins numpy's with values
    outside clamped into the first or last bin. A row's code in a column is its category's or
    bin's 0-based position; a missing value, or one outside the categories, has the code
    ``len(categories)`` (``k`` for bins): one cell "missing or other" per column, so every row
    is in exactly one cell. With ``contribution`` each person keeps at most ``max_rows`` rows,
    ranked by ``md5(seed | row | person id | position)`` among the person's rows sorted by
    their cell (``max_groups`` does not apply: a person's rows are whole records).
    """

    columns: tuple[str, ...]
    domains: tuple[tuple[object, ...], ...]
    binned: tuple[bool, ...]
    contribution: Contribution | None = None

    def __post_init__(self) -> None:
        if isinstance(self.columns, str):
            raise TypeError("columns must be a list of column names, got a string")
        columns = tuple(_check_name("columns", c) for c in self.columns)
        if not columns:
            raise ValueError("columns must name at least one column")
        if len(set(columns)) != len(columns):
            raise ValueError("columns must not repeat a column")
        binned = tuple(self.binned)
        domains = tuple(self.domains)
        if len(binned) != len(columns) or len(domains) != len(columns):
            raise ValueError("columns, domains and binned must have the same length")
        if not all(isinstance(b, bool) for b in binned):
            raise TypeError("binned must hold booleans")
        domains = tuple(_check_points(d) if b else _check_categories(f"domains of {c!r}", d)
                        for c, d, b in zip(columns, domains, binned, strict=True))
        if any(b and len(d) < 2 for d, b in zip(domains, binned, strict=True)):
            raise ValueError("bin edges must hold at least two numbers")
        object.__setattr__(self, "columns", columns)
        object.__setattr__(self, "domains", domains)
        object.__setattr__(self, "binned", binned)
        _check_contribution(self.contribution)
        if self.contribution is not None and self.contribution.max_groups is not None:
            raise ValueError("max_groups does not apply to joint cells (whole records)")

    @property
    def shape(self) -> tuple[int, ...]:
        """Each column's number of codes (its cells and the "missing or other" cell)."""
        return tuple(len(d) if b else len(d) + 1 for d, b in zip(self.domains, self.binned,
                                                                  strict=True))


@dataclass(frozen=True)
class RowsPerPerson:
    """How many people have 1, 2, 3, … rows, given the person-id column."""

    person: str

    def __post_init__(self) -> None:
        _check_name("person", self.person)


@dataclass(frozen=True)
class PersonCells:
    """Who contributes how much, for choosing bounds (``dpcore.contributions.ContributionCells``):
    per person (and category), the rows and the sum of the clamped values, gathered in cells.

    Rows without a person id are left out; so are, from the cells, with ``column``, rows
    without a value (a value is read row by row as a number) and, with ``categories``, rows
    outside them; but every row with a person id counts in its person's rows (``person_rows``):
    the unit's one truncation ranks all of a person's rows, and those a query does not read
    take kept slots too. Without ``column`` each row counts 1 (a count); with ``categories``
    the rows of ``column`` are counted per category (a histogram); otherwise ``column``'s
    values are summed, clamped to [``lower``, ``upper``] when given (a sum).
    """

    person: str
    column: str | None = None
    lower: float | None = None
    upper: float | None = None
    categories: tuple[object, ...] | None = None

    def __post_init__(self) -> None:
        _check_name("person", self.person)
        if self.column is not None:
            _check_name("column", self.column)
        if (self.lower is None) != (self.upper is None):
            raise ValueError("lower and upper must be given together (or neither)")
        if self.lower is not None:
            object.__setattr__(self, "lower", check_bounds(self.lower, self.upper)[0])
            object.__setattr__(self, "upper", float(self.upper))
        if self.categories is not None:
            if self.column is None or self.lower is not None:
                raise ValueError("categories need a column and no bounds (a histogram)")
            object.__setattr__(self, "categories",
                               _check_categories("categories", self.categories))
        elif self.lower is not None and self.column is None:
            raise ValueError("lower and upper clamp a column's values: give the column too")


@dataclass(frozen=True)
class DistinctValues:
    """The distinct non-missing values of ``column`` (sorted), at most ``limit`` of them
    (``None``: all of them).

    For categories read off the data (which leaks which values exist: the caller flags it),
    for the keys partition selection noises (all of them: how many there are is not
    public), and, with ``exclude``, for examples of values outside declared categories.
    Every key (``limit`` None) of a text, number or boolean column is its canonical key, a
    text (``engine.cells.cell_key``): a typed 12, 12.0 and a CSV's ``12``, ``0012``,
    `` 12 `` are ``"12"``, a double 1.5 ``"1.5"`` (as DuckDB writes it; a CSV's ``1.50`` is
    ``"1.50"``, rule 5), ±inf ``"inf"``, ``"-inf"``, -0.0 ``"0"``, a typed boolean
    ``"false"``, ``"true"`` (as a CSV written in lower case holds them: a pandas CSV's groups
    are its texts ``"False"``, ``"True"`` and R's ``"FALSE"``, ``"TRUE"``, two texts matching
    only as written, rule 6, so under max groups it may keep other groups); NaN and missing
    cells no key. So partition selection finds, ranks (``Contribution``: ``text:"12"``) and
    labels (``12``) a column's groups alike in a Parquet file, a frame and the same table's CSV.
    """

    column: str
    limit: int | None = 1000
    exclude: tuple[object, ...] = ()

    def __post_init__(self) -> None:
        _check_name("column", self.column)
        if self.limit is not None:
            object.__setattr__(self, "limit", check_int("limit", self.limit, minimum=1))
        if self.exclude:
            object.__setattr__(self, "exclude", _check_categories("exclude", self.exclude))
        else:
            object.__setattr__(self, "exclude", ())


@dataclass(frozen=True)
class Profile:
    """Per column: missing cells, distinct non-missing values, and a numeric column's minimum
    and maximum; and the number of rows. One scan, for the data owner's Data page (these
    figures are read off the data: never public bounds)."""


@dataclass(frozen=True)
class NumericBins:
    """Counts of a numeric column in ``bins`` equal-width bins over ``[lower, upper]``.

    A value lands in bin ``floor((x - lower) * bins / (upper - lower))``; ``upper`` itself in
    the last bin (as ``numpy.histogram``). Values below ``lower`` or above ``upper`` (±inf
    included) are counted apart; NULL and NaN are missing. For charts of a column's
    distribution on the Data page.
    """

    column: str
    lower: float
    upper: float
    bins: int

    def __post_init__(self) -> None:
        _check_name("column", self.column)
        lower, upper = check_bounds(self.lower, self.upper)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)
        object.__setattr__(self, "bins", check_int("bins", self.bins, minimum=1,
                                                   maximum=10_000))


@dataclass(frozen=True)
class FirstRows:
    """The first ``limit`` rows of ``columns`` (every column when empty), as a small frame.

    The one query that returns rows: for the data owner's preview on the Data page and for
    training a model in memory on a file small enough (the caller bounds ``limit``). In file
    order for DuckDB; Spark gives some ``limit`` rows.
    """

    limit: int
    columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "limit", check_int("limit", self.limit, minimum=0,
                                                    maximum=10_000_000))
        if isinstance(self.columns, str):
            raise TypeError("columns must be a list of column names, got a string")
        object.__setattr__(self, "columns",
                           tuple(_check_name("columns", c) for c in self.columns))


Query = (CountRows | BoundedSum | CategoryCounts | CategoryTable | Binned | GroupedSum
         | JointCells | RowsPerPerson | PersonCells | DistinctValues | Profile | NumericBins
         | FirstRows)


def query_key(query: Query) -> str:
    """A stable text key for a query (its repr: floats round-trip, strings are quoted)."""
    if not isinstance(query, CountRows | BoundedSum | CategoryCounts | CategoryTable | Binned
                      | GroupedSum | JointCells | RowsPerPerson | PersonCells | DistinctValues
                      | Profile | NumericBins | FirstRows):
        raise TypeError(f"query must be an engine query, got {type(query).__name__}")
    return repr(query)


# --------------------------------------------------------------------------------------------
# Aggregates


def _frozen_ints(values: object) -> NDArray[np.int64]:
    array = np.array(values, dtype=np.int64)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, eq=False)
class CountAggregate:
    """``rows`` counted; with contribution bounds, the rows dropped to meet them."""

    rows: int
    missing_person_rows: int = 0
    dropped_rows: int = 0


@dataclass(frozen=True, eq=False)
class SumAggregate:
    """The clamped sum and its bookkeeping.

    ``total`` is not finite when the sum overflows float64. ``rows`` counts the values summed
    (non-missing, kept), ``missing`` the rows whose value is missing, ``clamped`` the summed
    values the bounds changed. ``exact`` says the sum was computed in integers (an integer
    column with whole-number bounds): then ``total`` is the exact sum rounded once.
    """

    total: float
    rows: int
    missing: int
    clamped: int
    exact: bool
    missing_person_rows: int = 0
    dropped_rows: int = 0


@dataclass(frozen=True, eq=False)
class HistogramAggregate:
    """``counts[i]`` rows with the i-th declared category; rows outside them and missing."""

    counts: NDArray[np.int64]
    outside: int
    missing: int
    missing_person_rows: int = 0
    dropped_rows: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _frozen_ints(self.counts))


@dataclass(frozen=True, eq=False)
class TableAggregate:
    """``counts[i, j]`` rows with the i-th row and j-th column category.

    ``row_outside`` and ``column_outside`` count rows whose (present) value is outside that
    column's declared categories, ``missing`` rows with a missing value in either column (a
    row can be in both kinds).
    """

    counts: NDArray[np.int64]
    row_outside: int
    column_outside: int
    missing: int
    missing_person_rows: int = 0
    dropped_rows: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _frozen_ints(self.counts))


@dataclass(frozen=True, eq=False)
class JointAggregate:
    """The non-empty cells of a :class:`JointCells`: ``codes[r]`` (one code per column) holds
    ``counts[r]`` rows; ``missing_person_rows`` rows had no person id, ``dropped_rows`` rows
    were over a person's ``max_rows``."""

    codes: NDArray[np.int64]
    counts: NDArray[np.int64]
    missing_person_rows: int = 0
    dropped_rows: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "codes", _frozen_ints(self.codes))
        object.__setattr__(self, "counts", _frozen_ints(self.counts))


@dataclass(frozen=True, eq=False)
class GroupedSumAggregate:
    """``totals[i]`` (the clamped sum) and ``rows[i]`` (values summed) of the i-th category.

    ``outside`` counts rows with a present value whose key is outside the categories,
    ``missing_key`` those whose key is missing, ``missing`` rows whose value is missing.
    ``exact`` as in :class:`SumAggregate`; a total is not finite when it overflows float64.
    """

    totals: NDArray[np.float64]
    rows: NDArray[np.int64]
    outside: int
    missing_key: int
    missing: int
    clamped: int
    exact: bool
    missing_person_rows: int = 0
    dropped_rows: int = 0

    def __post_init__(self) -> None:
        totals = np.array(self.totals, dtype=np.float64)
        totals.setflags(write=False)
        object.__setattr__(self, "totals", totals)
        object.__setattr__(self, "rows", _frozen_ints(self.rows))


@dataclass(frozen=True, eq=False)
class RowsPerPersonAggregate:
    """``people[i]`` people have exactly ``rows[i]`` rows (``rows`` ascending, no zeros)."""

    rows: NDArray[np.int64]
    people: NDArray[np.int64]
    missing_person_rows: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", _frozen_ints(self.rows))
        object.__setattr__(self, "people", _frozen_ints(self.people))

    @property
    def total_people(self) -> int:
        return int(self.people.sum())

    @property
    def max_rows(self) -> int:
        """The most rows one person has (0 when no row has a person id)."""
        return int(self.rows[-1]) if self.rows.size else 0

    def kept_rows(self, max_rows: int) -> int:
        """Rows left when each person keeps at most ``max_rows`` (a count's true answer)."""
        max_rows = check_int("max_rows", max_rows, minimum=1)
        return int(np.sum(np.minimum(self.rows, max_rows) * self.people))


@dataclass(frozen=True, eq=False)
class CellsAggregate:
    """The cells of :class:`PersonCells`, sorted by (group, rows, person_rows, person_groups):
    ``persons[i]`` (person, group) pairs with ``rows[i]`` rows in ``group[i]`` (the 0-based
    position in the query's categories; 0 without them), whose persons have ``person_rows[i]``
    rows in all (those the query does not read too) and rows in ``person_groups[i]`` groups;
    the sum over those pairs of each pair's clamped sum, of its square, of the pair's sum of
    squared clamped values and of its sum before clamping. ``left_out``: rows without a
    person id, a value or a category (in no cell)."""

    group: NDArray[np.int64]
    rows: NDArray[np.int64]
    person_rows: NDArray[np.int64]
    person_groups: NDArray[np.int64]
    persons: NDArray[np.int64]
    value_sum: NDArray[np.float64]
    value_sum_squares: NDArray[np.float64]
    value_squares: NDArray[np.float64]
    raw_value_sum: NDArray[np.float64]
    left_out: int

    def __post_init__(self) -> None:
        for name in ("group", "rows", "person_rows", "person_groups", "persons"):
            object.__setattr__(self, name, _frozen_ints(getattr(self, name)))
        for name in ("value_sum", "value_sum_squares", "value_squares", "raw_value_sum"):
            array = np.array(getattr(self, name), dtype=np.float64)
            array.setflags(write=False)
            object.__setattr__(self, name, array)


@dataclass(frozen=True, eq=False)
class DistinctAggregate:
    """Up to ``limit`` distinct values (all without a limit), sorted; ``more`` says whether
    others exist."""

    values: tuple[object, ...]
    more: bool


@dataclass(frozen=True)
class ColumnProfile:
    """One column of a :class:`ProfileAggregate`: ``minimum``/``maximum`` are None for a
    column that is not numeric or has no value (±inf count as values)."""

    name: str
    kind: str
    missing: int
    distinct: int
    minimum: float | None
    maximum: float | None


@dataclass(frozen=True, eq=False)
class ProfileAggregate:
    """The number of rows and one :class:`ColumnProfile` per column, in the source's order."""

    rows: int
    columns: tuple[ColumnProfile, ...]


@dataclass(frozen=True, eq=False)
class BinsAggregate:
    """``counts[i]`` values in the i-th bin; ``below``/``above`` the range; ``missing``."""

    counts: NDArray[np.int64]
    below: int
    above: int
    missing: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "counts", _frozen_ints(self.counts))


@dataclass(frozen=True, eq=False)
class RowsAggregate:
    """A few rows as a pandas frame with the user's column names."""

    frame: object  # pandas.DataFrame (not imported here: queries stay numpy-only)


Aggregate = (CountAggregate | SumAggregate | HistogramAggregate | TableAggregate
             | GroupedSumAggregate | RowsPerPersonAggregate | CellsAggregate | DistinctAggregate
             | ProfileAggregate | BinsAggregate | RowsAggregate | JointAggregate)


@dataclass(frozen=True)
class ColumnInfo:
    """A column as the engine sees it: the user's name, a kind, the backend's type name.

    ``kind`` is ``"integer"``, ``"float"`` (floating point or decimal), ``"text"``,
    ``"boolean"`` or ``"other"`` (dates, lists, …: not offered to any query).
    """

    name: str
    kind: Literal["integer", "float", "text", "boolean", "other"]
    type_name: str = field(default="", compare=False)

    @property
    def numeric(self) -> bool:
        return self.kind in ("integer", "float")
