"""Person-level privacy: the privacy unit, its contribution bounds, the sensitivities they give,
and what they cost.

Neighbours differ by all rows of one person; bounds cap what a person adds (rows, groups); the
rows beyond them are dropped at random, which biases the answer: bias and noise, side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import (
    MAX_BLOCK_ELEMENTS,
    check_bounds,
    check_choice,
    check_int,
    check_positive,
    check_returned_size,
    finite_array,
    numeric_array,
)

__all__ = [
    "MAX_BOUND",
    "NORMS",
    "ContributionBounds",
    "UNIT_ORIGINS",
    "PrivacyUnit",
    "Sensitivity",
    "count_sensitivity",
    "sum_sensitivity",
    "mean_sensitivities",
    "ContributionCells",
    "contribution_cells",
    "truncation_moments",
    "ErrorBreakdown",
    "error_breakdown",
    "MaxRowsSweep",
    "max_rows_sweep",
]

#: Largest contribution bound accepted (rows per person, groups per person): far beyond any
#: table the dashboard loads, and small enough that every product of bounds is exact in float64.
MAX_BOUND = 10**9

#: The sensitivity norms a noise can be calibrated to: L1 (Laplace, geometric), L2 (Gaussian).
NORMS = ("l1", "l2")


# ---------------------------------------------------------------------------------------------
# bounds and sensitivities


@dataclass(frozen=True)
class ContributionBounds:
    """How much one person may contribute, enforced before anything is computed.

    Parameters
    ----------
    max_rows : int
        With ``max_groups``: the most rows a person keeps in each group. Without it: the most
        rows a person keeps in all (a query without groups, or by groups with only a total
        bound, as Tumult's ``MaxRowsPerID``).
    max_groups : int or None
        The most groups a person keeps rows in (Tumult's ``MaxGroupsPerID``); ``None`` when
        only ``max_rows`` bounds the person.
    """

    max_rows: int
    max_groups: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "max_rows",
                           check_int("max_rows", self.max_rows, maximum=MAX_BOUND))
        if self.max_groups is not None:
            object.__setattr__(self, "max_groups",
                               check_int("max_groups", self.max_groups, maximum=MAX_BOUND))

    def describe(self) -> str:
        """The bounds in words, for a caption next to a sensitivity."""
        rows = "1 row" if self.max_rows == 1 else f"{self.max_rows:,} rows"
        if self.max_groups is None:
            return f"at most {rows} per person"
        groups = "1 group" if self.max_groups == 1 else f"{self.max_groups:,} groups"
        return f"at most {rows} per person in each of at most {groups}"


#: How a unit's bounds were chosen: from documentation ("public"), by the user ("typed"), read
#: off the data ("data": not covered by the guarantee), or drawn privately ("private": the
#: plan's max rows query, which charges the draws).
UNIT_ORIGINS = ("public", "typed", "data", "private")


@dataclass(frozen=True)
class PrivacyUnit:
    """Who the guarantee protects: the one privacy unit of the dashboard, the schema file, the
    plan file and the release.

    Parameters
    ----------
    person_column : str or None
        The person-id column: neighbours differ by all rows with the same value in it. None:
        one row is one person (then ``max_rows`` is 1 and ``max_groups`` None or 1).
    max_rows : int
        The most rows a person keeps in a scalar query (count, sum, mean, quantiles) and in
        each group of a grouped one (histogram, table, group-by, selection).
    max_groups : int or None
        The most groups a person keeps rows in; None: only ``max_rows`` rows in all, which
        may fall in as many groups.
    bounds_origin : {"public", "typed", "data", "private"}
        How the bounds were chosen (:data:`UNIT_ORIGINS`). It does not enter equality: the
        same bounds are the same unit for every computation.

    Its JSON form (:meth:`to_dict`, :meth:`from_dict`) is the same in the schema file and the
    plan file; ``"person"``, the schema file's spelling before, still reads.
    """

    person_column: str | None = None
    max_rows: int = 1
    max_groups: int | None = None
    bounds_origin: str = field(default="typed", compare=False)

    def __post_init__(self) -> None:
        if self.person_column is not None:
            if not isinstance(self.person_column, str):
                raise TypeError(f"person_column must be a column name or None, got "
                                f"{type(self.person_column).__name__}")
            if not self.person_column.strip():
                raise ValueError("person_column must not be empty (None: one row is one "
                                 "person)")
        bounds = ContributionBounds(self.max_rows, self.max_groups)  # names the bad field
        object.__setattr__(self, "max_rows", bounds.max_rows)
        object.__setattr__(self, "max_groups", bounds.max_groups)
        check_choice("bounds_origin", self.bounds_origin, UNIT_ORIGINS)
        if self.person_column is None and (self.max_rows != 1
                                           or self.max_groups not in (None, 1)):
            raise ValueError("max_rows: without a person-id column one row is one person: "
                             "max_rows must be 1 and max_groups empty")

    @property
    def per_row(self) -> bool:
        """True when one row is one person."""
        return self.person_column is None

    def bounds(self, *, grouped: bool = True) -> ContributionBounds:
        """The contribution bounds the sensitivities follow; a query without groups
        (``grouped`` False) is bounded by ``max_rows`` alone."""
        return ContributionBounds(self.max_rows, self.max_groups if grouped else None)

    def describe(self) -> str:
        """The unit in words, shown next to every sensitivity and written on a release."""
        if self.person_column is None:
            return "one row = one person"
        return f"one person = all rows with the same {self.person_column}; " + \
            self.bounds().describe()

    def to_dict(self) -> dict[str, object]:
        """The JSON form, in the schema file and the plan file alike."""
        return {"person_column": self.person_column, "max_rows": self.max_rows,
                "max_groups": self.max_groups, "bounds_origin": self.bounds_origin}

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> PrivacyUnit:
        """Read :meth:`to_dict`'s form (missing fields take their defaults, nulls too);
        ``"person"`` is read as ``"person_column"`` (schema files written before one
        spelling). Other keys are refused, naming them."""
        if not isinstance(raw, Mapping):
            raise TypeError(f"raw must be a JSON object, got {type(raw).__name__}")
        known = ("person_column", "person", "max_rows", "max_groups", "bounds_origin")
        unknown = sorted(str(k) for k in raw if k not in known)
        if unknown:
            raise ValueError(f"{unknown[0]} is not a field of a privacy unit (known: "
                             f"person_column, max_rows, max_groups, bounds_origin)")
        if raw.get("person_column") is not None and raw.get("person") is not None:
            raise ValueError("person_column: give the person-id column once (person_column; "
                             "person is its older spelling)")
        person = raw.get("person_column")
        person = raw.get("person") if person is None else person
        max_rows = raw.get("max_rows")
        origin = raw.get("bounds_origin")
        return cls(person, 1 if max_rows is None else max_rows, raw.get("max_groups"),
                   "typed" if origin is None else origin)


@dataclass(frozen=True)
class Sensitivity:
    """The most one person's rows can change a query's answer vector, in three norms.

    Neighbours: add or remove one person with all their rows (after contribution bounds).
    ``l1`` calibrates Laplace and geometric noise, ``l2`` Gaussian noise, ``linf`` bounds the
    change of any one entry (a group's count).
    """

    l1: float
    l2: float
    linf: float

    def __post_init__(self) -> None:
        for name in ("l1", "l2", "linf"):
            object.__setattr__(self, name, check_positive(name, getattr(self, name)))


def _at_least(value: float, exact: Fraction, what: str) -> float:
    """``value`` raised by ulps until it is >= ``exact``: a sensitivity never rounds down
    (noise calibrated to a rounded-down sensitivity would spend more than its epsilon)."""
    if not 0 < value < math.inf:
        raise ValueError(f"{what} overflows float64 (or is not positive)")
    while Fraction(value) < exact:
        value = math.nextafter(value, math.inf)
    if value == math.inf:
        raise ValueError(f"{what} overflows float64")
    return value


def _check_bounds_object(bounds: object) -> ContributionBounds:
    if not isinstance(bounds, ContributionBounds):
        raise TypeError(f"bounds must be ContributionBounds, got {type(bounds).__name__}")
    return bounds


def _scaled_sensitivity(bounds: ContributionBounds, magnitude: float, what: str) -> Sensitivity:
    """(k·r·M, √k·r·M, r·M) with k groups, r rows, M the most one row adds; k = 1 without a
    group bound. Each rounded up, never down."""
    r, k = bounds.max_rows, bounds.max_groups or 1
    m = Fraction(magnitude)
    l1 = _at_least(k * r * magnitude, k * r * m, f"the L1 sensitivity of {what}")
    linf = _at_least(r * magnitude, r * m, f"the L∞ sensitivity of {what}")
    # l2² >= k·r²·M²: compared exactly (the square root of k is irrational unless k is square).
    l2 = math.sqrt(k) * r * magnitude
    if not 0 < l2 < math.inf:
        raise ValueError(f"the L2 sensitivity of {what} overflows float64")
    while Fraction(l2) ** 2 < k * (r * m) ** 2:
        l2 = math.nextafter(l2, math.inf)
    return Sensitivity(l1=l1, l2=max(l2, linf), linf=linf)


def count_sensitivity(bounds: ContributionBounds) -> Sensitivity:
    """Sensitivity of a count, or of the counts by group (histogram), under person-level bounds.

    One person keeps at most r = ``max_rows`` rows in each of at most k = ``max_groups`` groups
    (k = 1 and r rows in total when ``max_groups`` is None). Removing the person lowers at most k
    counts by at most r each:

    .. math:: \\Delta_1 = k r, \\qquad \\Delta_2 = \\sqrt{k}\\, r, \\qquad \\Delta_\\infty = r.

    The L2 bound uses both bounds (the change vector has at most k entries, each at most r), as
    Tumult Analytics' group-by count with ``MaxGroupsPerID`` and ``MaxRowsPerGroupPerID``. With
    only a total bound r (``max_groups`` None) all three norms are r: the person's r rows may
    all fall in one group. For a query without groups use ``max_groups=None``.

    Parameters
    ----------
    bounds : ContributionBounds

    Returns
    -------
    Sensitivity

    References
    ----------
    R. J. Wilson, C. Y. Zhang, W. Lam, D. Desfontaines, D. Simmons-Marengo, B. Gipson.
    "Differentially Private SQL with Bounded User Contribution." PoPETs 2020(2).
    Tumult Labs. "Tumult Analytics: ``MaxGroupsPerID`` and ``MaxRowsPerGroupPerID``
    truncation", user guide, 2023.
    """
    return _scaled_sensitivity(_check_bounds_object(bounds), 1.0, "the count")


def _magnitude(lower: object, upper: object) -> float:
    lo, hi = check_bounds(lower, upper)
    return max(abs(lo), abs(hi))


def _sum_sensitivity(bounds: ContributionBounds, magnitude: float) -> Sensitivity:
    try:
        return _scaled_sensitivity(bounds, magnitude, "the sum")
    except ValueError as exc:
        raise ValueError(f"{exc}: max(|lower|, |upper|) = {magnitude:g} is too large for "
                         "these bounds") from None


def sum_sensitivity(bounds: ContributionBounds, *, lower: float, upper: float) -> Sensitivity:
    """Sensitivity of a sum of values clamped to [lower, upper], overall or by group.

    Each kept row adds a value of magnitude at most M = max(|lower|, |upper|), so the count's
    sensitivities (:func:`count_sensitivity`) scale by M:
    Δ₁ = k·r·M, Δ₂ = √k·r·M, Δ∞ = r·M.

    Parameters
    ----------
    bounds : ContributionBounds
    lower, upper : float
        The declared clamping bounds, lower < upper.

    Returns
    -------
    Sensitivity
    """
    bounds = _check_bounds_object(bounds)
    return _sum_sensitivity(bounds, _magnitude(lower, upper))


def mean_sensitivities(
    bounds: ContributionBounds, *, lower: float, upper: float
) -> tuple[Sensitivity, Sensitivity]:
    """The sensitivities of a mean's two parts: (the clamped sum, the count).

    A mean is released as a noisy sum over a noisy count, each with its own share of the
    budget; each part has the sensitivity of :func:`sum_sensitivity` and
    :func:`count_sensitivity` under the same bounds.
    """
    bounds = _check_bounds_object(bounds)
    magnitude = _magnitude(lower, upper)
    return _sum_sensitivity(bounds, magnitude), _scaled_sensitivity(bounds, 1.0, "the count")


# ---------------------------------------------------------------------------------------------
# contribution cells: the small aggregate the engine returns


def _whole_numbers(name: str, values: object, minimum: int) -> NDArray[np.float64]:
    arr = finite_array(name, values)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and (np.any(arr != np.floor(arr)) or np.any(arr < minimum)
                     or np.any(arr > 2.0**53)):
        raise ValueError(f"{name} must hold whole numbers between {minimum} and 2**53")
    return arr


@dataclass(frozen=True, eq=False)
class ContributionCells:
    """Who contributes how much, summarised in cells: what the tuning of bounds needs.

    One cell gathers the (person, group) pairs that share the group, the pair's row count n, the
    person's total row count N and the person's group count G; a query without groups has one
    group (0) and G = 1, and N = n unless the person has rows the query does not read (no
    value, no declared category), which take kept slots too. An engine returns it with one
    GROUP BY. For each cell:

    - ``group``: the group's index (0, 1, ...);
    - ``rows``: n, the rows each pair has (>= 1);
    - ``person_rows``: N, the rows each of those persons has in all (>= n): in every group,
      and those the query does not read (the unit's one truncation ranks all of them);
    - ``person_groups``: G, the groups each of those persons has rows in (1 <= G <= N);
    - ``persons``: how many pairs fall in the cell (>= 1);
    - ``value_sum``: the sum over the cell's pairs of the pair's clamped values, S = Σ C;
    - ``value_sum_squares``: Σ C², each pair's clamped sum squared, summed;
    - ``value_squares``: Σ Q, each pair's sum of squared clamped values, summed;
    - ``raw_value_sum``: the sum of the pairs' values before clamping.

    For a count every value is 1 (the defaults): S = persons·n, Σ C² = persons·n²,
    Σ Q = persons·n, and no clamping. Consistency is checked: Σ C² <= n·Σ Q (Cauchy–Schwarz
    within each pair) and (Σ C)² <= persons·Σ C².
    """

    group: NDArray[np.float64]
    rows: NDArray[np.float64]
    persons: NDArray[np.float64]
    person_rows: NDArray[np.float64] | None = None
    person_groups: NDArray[np.float64] | None = None
    value_sum: NDArray[np.float64] | None = None
    value_sum_squares: NDArray[np.float64] | None = None
    value_squares: NDArray[np.float64] | None = None
    raw_value_sum: NDArray[np.float64] | None = None

    def __post_init__(self) -> None:
        rows = _whole_numbers("rows", self.rows, 1)
        if rows.size == 0:
            raise ValueError("rows must hold at least one cell")
        fields: dict[str, NDArray[np.float64]] = {
            "group": _whole_numbers("group", self.group, 0),
            "rows": rows,
            "persons": _whole_numbers("persons", self.persons, 1),
        }
        fields["person_rows"] = (rows.copy() if self.person_rows is None
                                 else _whole_numbers("person_rows", self.person_rows, 1))
        fields["person_groups"] = (np.ones_like(rows) if self.person_groups is None
                                   else _whole_numbers("person_groups", self.person_groups, 1))
        persons = fields["persons"]
        defaults = {"value_sum": persons * rows, "value_sum_squares": persons * rows * rows,
                    "value_squares": persons * rows}
        for name, default in defaults.items():
            given = getattr(self, name)
            fields[name] = default if given is None else finite_array(name, given)
        raw = self.raw_value_sum
        fields["raw_value_sum"] = (fields["value_sum"].copy() if raw is None
                                   else finite_array("raw_value_sum", raw))
        for name, arr in fields.items():
            if arr.shape != rows.shape:
                raise ValueError(f"{name} must have one entry per cell ({rows.size}), got "
                                 f"shape {arr.shape}")
        if np.any(fields["person_rows"] < rows):
            raise ValueError("person_rows must be >= rows in every cell (a person's rows in "
                             "all groups include those in one)")
        if np.any(fields["person_groups"] > fields["person_rows"]):
            raise ValueError("person_groups must be <= person_rows in every cell (each group "
                             "holds at least one of the person's rows)")
        c2, q = fields["value_sum_squares"], fields["value_squares"]
        if np.any(c2 < 0) or np.any(q < 0):
            raise ValueError("value_sum_squares and value_squares must be >= 0")
        # Compared as square roots, which cannot overflow; the slack absorbs rounding.
        slack = 1 + 1e-9
        if np.any(np.sqrt(c2) > np.sqrt(rows) * np.sqrt(q) * slack + 1e-150):
            raise ValueError("value_sum_squares must be <= rows × value_squares in every "
                             "cell (Cauchy–Schwarz within each pair)")
        if np.any(np.abs(fields["value_sum"]) > np.sqrt(persons) * np.sqrt(c2) * slack
                  + 1e-150):
            raise ValueError("value_sum² must be <= persons × value_sum_squares in every "
                             "cell (Cauchy–Schwarz across pairs)")
        for name, arr in fields.items():
            arr = np.array(arr, dtype=np.float64)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)


def _codes(name: str, labels: object) -> tuple[NDArray[np.int64], int]:
    """Each label's index among the sorted distinct labels, and how many there are."""
    if labels is None or isinstance(labels, (str, bytes, dict)):
        raise TypeError(f"{name} must be a one-dimensional array of labels")
    arr = np.asarray(labels) if not isinstance(labels, pd.Series) else labels.to_numpy()
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.dtype.kind == "c":
        raise TypeError(f"{name} must hold labels (numbers or text), not complex numbers")
    if bool(pd.isna(arr).any()):
        raise ValueError(f"{name} must have no missing values (drop those rows first)")
    try:
        codes, uniques = pd.factorize(arr, sort=True)
    except TypeError:  # mixed labels that cannot be ordered: numbered as they first appear
        codes, uniques = pd.factorize(arr, sort=False)
    return codes.astype(np.int64), len(uniques)


def _rows_read(name: str, column: ArrayLike, read: NDArray[np.bool_]) -> NDArray:
    """``column``'s entries on the rows ``read`` marks (one entry per row required)."""
    arr = column.to_numpy() if isinstance(column, pd.Series) else np.asarray(column)
    if arr.shape != read.shape:
        raise ValueError(f"{name} must have one entry per row ({read.size}), got shape "
                         f"{arr.shape}")
    return arr[read]


def contribution_cells(
    persons: ArrayLike,
    *,
    groups: ArrayLike | None = None,
    values: ArrayLike | None = None,
    lower: float | None = None,
    upper: float | None = None,
    read: ArrayLike | None = None,
) -> ContributionCells:
    """The :class:`ContributionCells` of a table given as columns (one entry per row).

    What the engine computes in SQL, for small frames and tests. Groups are numbered in the
    sorted order of their labels. Without ``values`` the cells describe a count; with them, a
    sum of the values clamped to [lower, upper] (both or neither; neither: no clamping).
    ``read`` marks the rows the query reads (a value, a declared category); the others add
    to no cell but still count among their person's rows N, since the unit's one truncation
    ranks all of a person's rows and they take kept slots too.

    Parameters
    ----------
    persons : array_like, shape (rows,)
        The person id of each row (no missing values).
    groups : array_like, shape (rows,), optional
        The group of each row (no missing values); None for a query without groups.
    values : array_like, shape (rows,), optional
        Finite numbers to sum.
    lower, upper : float, optional
        Clamping bounds.
    read : array_like of bool, shape (rows,), optional
        True where the query reads the row (default: every row). ``groups`` and ``values``
        are looked at only there (elsewhere they may be missing).

    Returns
    -------
    ContributionCells
    """
    person, _ = _codes("persons", persons)
    if person.size == 0:
        raise ValueError("persons must hold at least one row")
    all_person_rows = np.bincount(person).astype(np.float64)
    if read is not None:
        mask = np.asarray(read)
        if mask.dtype != np.bool_ or mask.shape != person.shape:
            raise ValueError(f"read must be one boolean per row ({person.size})")
        if not mask.any():
            raise ValueError("read must keep at least one row")
        person = person[mask]
        groups = None if groups is None else _rows_read("groups", groups, mask)
        values = None if values is None else _rows_read("values", values, mask)
    n_rows = person.size
    if groups is None:
        group, n_groups = np.zeros(n_rows, dtype=np.int64), 1
    else:
        group, n_groups = _codes("groups", groups)
        if group.size != n_rows:
            raise ValueError(f"groups must have one entry per row ({n_rows}), got {group.size}")
    if values is None:
        if lower is not None or upper is not None:
            raise ValueError("lower and upper clamp values: give values too, or neither bound")
        raw = clamped = np.ones(n_rows)
    else:
        raw = finite_array("values", values)
        if raw.shape != (n_rows,):
            raise ValueError(f"values must have one entry per row ({n_rows}), got shape "
                             f"{raw.shape}")
        if (lower is None) != (upper is None):
            raise ValueError("lower and upper must be given together (or neither)")
        if lower is None:
            clamped = raw
        else:
            lo, hi = check_bounds(lower, upper)
            clamped = np.clip(raw, lo, hi)
    # pairs (person, group): n, C, Q and the raw sum of each
    pair_key = person * n_groups + group
    pair_ids, pair = np.unique(pair_key, return_inverse=True)
    pair_person, pair_group = np.divmod(pair_ids, n_groups)
    with np.errstate(over="ignore", invalid="ignore"):  # refused just below
        n = np.bincount(pair).astype(np.float64)
        c = np.bincount(pair, weights=clamped)
        q = np.bincount(pair, weights=clamped * clamped)
        raw_sum = np.bincount(pair, weights=raw)
        c2 = c * c
    if not all(np.all(np.isfinite(a)) for a in (c, q, raw_sum, c2)):
        raise ValueError("values are too large: their squares and sums overflow float64; "
                         "rescale them (e.g. thousands instead of units)")
    person_rows = all_person_rows[pair_person]
    person_groups = np.bincount(pair_person).astype(np.float64)[pair_person]
    # cells: pairs sharing (group, n, N, G)
    keys = np.stack([pair_group.astype(np.float64), n, person_rows, person_groups], axis=1)
    cell_keys, cell = np.unique(keys, axis=0, return_inverse=True)
    cell = cell.ravel()
    size = cell_keys.shape[0]
    return ContributionCells(
        group=cell_keys[:, 0], rows=cell_keys[:, 1], person_rows=cell_keys[:, 2],
        person_groups=cell_keys[:, 3], persons=np.bincount(cell, minlength=size).astype(float),
        value_sum=np.bincount(cell, weights=c, minlength=size),
        value_sum_squares=np.bincount(cell, weights=c2, minlength=size),
        value_squares=np.bincount(cell, weights=q, minlength=size),
        raw_value_sum=np.bincount(cell, weights=raw_sum, minlength=size),
    )


# ---------------------------------------------------------------------------------------------
# truncation: expected answer and its variance over the random choice of rows kept


def _check_cells(cells: object) -> ContributionCells:
    if not isinstance(cells, ContributionCells):
        raise TypeError(f"cells must be ContributionCells, got {type(cells).__name__}")
    return cells


def _check_max_rows(max_rows: object) -> tuple[NDArray[np.float64], bool]:
    """One bound or a 1-D sweep of bounds (whole numbers in [1, MAX_BOUND])."""
    if isinstance(max_rows, (bool, np.bool_)):
        raise TypeError("max_rows must be a whole number or an array of them, got bool")
    arr = numeric_array("max_rows", max_rows)
    if arr.ndim > 1:
        raise ValueError(f"max_rows must be one number or one-dimensional, got shape "
                         f"{arr.shape}")
    scalar = arr.ndim == 0
    arr = np.atleast_1d(arr)
    if arr.size == 0:
        raise ValueError("max_rows must hold at least one bound")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)) or np.any(arr < 1) \
            or np.any(arr > MAX_BOUND):
        raise ValueError(f"max_rows must hold whole numbers between 1 and {MAX_BOUND:,}")
    return arr, scalar


def _check_max_groups(max_groups: object) -> int | None:
    return None if max_groups is None else check_int("max_groups", max_groups,
                                                     maximum=MAX_BOUND)


def _inclusion(
    cells: ContributionCells, r: NDArray[np.float64], k: int | None
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """(γ, a, T) for the bounds r, shape (R, 1), against the cells' (C,).

    Without a group bound the person keeps m = min(r, N) of its N rows uniformly: γ = 1,
    a = m/N, T = N. With k groups the person keeps min(k, G) of its G groups uniformly
    (γ = min(1, k/G)) and m = min(r, n) of the n rows of each kept group: a = m/n, T = n.
    A row of the pair is kept with probability γ·a.
    """
    total = cells.person_rows if k is None else cells.rows
    share = np.ones_like(total) if k is None else np.minimum(1.0, k / cells.person_groups)
    kept_share = np.minimum(r, total) / total
    return share, kept_share, total


def _group_sums(cells: ContributionCells, per_cell: NDArray[np.float64],
                n_groups: int) -> NDArray[np.float64]:
    """Sum per group along the last axis: (R, C) -> (R, n_groups), one bincount for all."""
    bounds = per_cell.shape[0]
    index = (np.arange(bounds)[:, None] * n_groups + cells.group.astype(np.int64)).ravel()
    totals = np.bincount(index, weights=per_cell.ravel(), minlength=bounds * n_groups)
    return totals.reshape(bounds, n_groups)


def _moments(
    cells: ContributionCells, r: NDArray[np.float64], k: int | None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    n_groups = int(cells.group.max()) + 1
    check_returned_size(r.size, n_groups)
    mean = np.empty((r.size, n_groups))
    var = np.empty((r.size, n_groups))
    per_block = max(1, MAX_BLOCK_ELEMENTS // cells.rows.size)
    for start in range(0, r.size, per_block):  # memory: at most MAX_BLOCK_ELEMENTS per array
        block = r[start:start + per_block, None]
        gamma, a, total = _inclusion(cells, block, k)
        s, c2, q = cells.value_sum, cells.value_sum_squares, cells.value_squares
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # refused below
            # A simple random sample of m of T rows: its sum over the pair's rows has variance
            # a(1−a)/(T−1)·(T·Q − C²) (T·Q − C² >= 0: Cauchy–Schwarz; 0 for counts, exactly).
            spread = np.where(total > 1, a * (1 - a) / (total - 1), 0.0) * np.maximum(
                total * q - c2, 0.0)
            # the pair's group is kept with probability γ: E = γ·a·C,
            # Var = γ·Var(sample) + γ(1 − γ)·(a·C)²
            expected = gamma * a * s
            variance = gamma * spread + gamma * (1 - gamma) * a * a * c2
            mean[start:start + per_block] = _group_sums(cells, expected, n_groups)
            var[start:start + per_block] = _group_sums(cells, variance, n_groups)
    if not (np.all(np.isfinite(mean)) and np.all(np.isfinite(var))):
        raise ValueError("cells hold values too large: a group's sum or variance overflows "
                         "float64; rescale the values")
    return mean, np.maximum(var, 0.0)


def truncation_moments(
    cells: ContributionCells, *, max_rows: int | ArrayLike, max_groups: int | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and variance of each group's answer after random truncation to the bounds.

    The engine keeps, for each person independently and uniformly at random: with
    ``max_groups`` = k, min(k, G) of the person's G groups (γ = min(1, k/G)) and m = min(r, n)
    of the n rows in each kept group (T = n); without it, m = min(r, N) of the person's N rows
    (γ = 1, T = N). With a = m/T, a pair with clamped sum C and sum of squares Q adds

    .. math:: E = \\gamma a C, \\qquad \\mathrm{Var} = \\gamma\\,\\frac{a(1-a)}{T-1}
              (T Q - C^2) + \\gamma(1-\\gamma)\\,a^2 C^2

    (a simple random sample of m rows out of T, kept whole with probability γ), independently
    across persons, so cells and groups add up. Exact: no sampling. The group choice must be
    uniform over the person's groups (not, say, the groups of the first rows of a shuffle,
    which favours groups with more rows).

    Parameters
    ----------
    cells : ContributionCells
    max_rows : int or array_like of int, shape (R,)
        One bound r, or a sweep of bounds.
    max_groups : int, optional
        k; None for a bound on a person's rows in total.

    Returns
    -------
    mean, variance : ndarray, shape (n_groups,) or (R, n_groups)
        n_groups = the largest group index + 1.
    """
    cells = _check_cells(cells)
    r, scalar = _check_max_rows(max_rows)
    k = _check_max_groups(max_groups)
    mean, var = _moments(cells, r, k)
    return (mean[0], var[0]) if scalar else (mean, var)


# ---------------------------------------------------------------------------------------------
# the error of a release: bias (truncation, clamping) and noise


@dataclass(frozen=True, eq=False)
class ErrorBreakdown:
    """The error of a release, per group, split into what the bounds cost and the noise.

    Errors are against the true answer on all rows with unclamped values (``true_value``):
    ``bias = truncation_bias + clamping_bias`` (the released value's mean minus the truth),
    ``truncation_sd`` the spread from the random choice of rows kept, ``noise_sd`` the
    mechanism's, and ``rmse = sqrt(bias² + truncation_sd² + noise_sd²)``.
    """

    true_value: NDArray[np.float64]
    expected_value: NDArray[np.float64]
    truncation_bias: NDArray[np.float64]
    clamping_bias: NDArray[np.float64]
    bias: NDArray[np.float64]
    truncation_sd: NDArray[np.float64]
    noise_sd: NDArray[np.float64]
    rmse: NDArray[np.float64]


def _check_noise_sd(name: str, value: object) -> float:
    return check_positive(name, value, allow_zero=True)


def error_breakdown(
    cells: ContributionCells,
    *,
    max_rows: int,
    max_groups: int | None = None,
    noise_sd: float,
) -> ErrorBreakdown:
    """Bias from dropped rows and clamped values, and noise, for each group of one release.

    The truncation bias is the expected kept answer minus the clamped answer on all rows (≤ 0
    for counts); the clamping bias is the clamped answer on all rows minus the true one. Both
    come from :func:`truncation_moments` on ``cells`` (exact, no sampling). Computed from the
    raw data, these figures are not private themselves: they are for choosing bounds in
    simulation; a private route chooses ``max_rows`` from a DP quantile of rows per person
    (:func:`dpcore.quantiles.rows_quantile_probabilities`).

    Parameters
    ----------
    cells : ContributionCells
    max_rows : int
    max_groups : int, optional
        As in :func:`truncation_moments`.
    noise_sd : float
        The mechanism's noise standard deviation at these bounds (>= 0): e.g. √2·Δ₁/ε for
        Laplace, Δ₂/√(2ρ) for Gaussian, with Δ from :func:`count_sensitivity` or
        :func:`sum_sensitivity`.

    Returns
    -------
    ErrorBreakdown
        Arrays of shape (n_groups,).
    """
    cells = _check_cells(cells)
    r = check_int("max_rows", max_rows, maximum=MAX_BOUND)
    k = _check_max_groups(max_groups)
    sd = _check_noise_sd("noise_sd", noise_sd)
    mean, var = _moments(cells, np.array([float(r)]), k)
    mean, var = mean[0], var[0]
    n_groups = mean.size
    index = cells.group.astype(np.int64)
    clamped = np.bincount(index, weights=cells.value_sum, minlength=n_groups)
    true = np.bincount(index, weights=cells.raw_value_sum, minlength=n_groups)
    with np.errstate(over="ignore", invalid="ignore"):
        truncation = mean - clamped
        clamping = clamped - true
        bias = mean - true
        rmse = np.sqrt(bias * bias + var + sd * sd)
    if not (np.all(np.isfinite(rmse)) and np.all(np.isfinite(bias))):
        raise ValueError("the squared errors overflow float64: noise_sd or the values are too "
                         "large; rescale the values")
    return ErrorBreakdown(true_value=true, expected_value=mean, truncation_bias=truncation,
                          clamping_bias=clamping, bias=bias, truncation_sd=np.sqrt(var),
                          noise_sd=np.full(n_groups, sd), rmse=rmse)


@dataclass(frozen=True, eq=False)
class MaxRowsSweep:
    """Total error against the max-rows bound, and the best bound.

    One entry per candidate bound; with groups, each figure is the root mean square over the
    groups (the typical error of one group). ``bias`` is that of truncation and clamping
    together, ``noise_sd`` the mechanism's (it grows with the bound), ``rmse`` the total.
    """

    max_rows: NDArray[np.int64]
    bias: NDArray[np.float64]
    truncation_sd: NDArray[np.float64]
    noise_sd: NDArray[np.float64]
    rmse: NDArray[np.float64]
    best_max_rows: int


def max_rows_sweep(
    cells: ContributionCells,
    max_rows: ArrayLike,
    *,
    max_groups: int | None = None,
    unit_noise_sd: float,
    norm: str,
    magnitude: float = 1.0,
) -> MaxRowsSweep:
    """Total error of a release against the max-rows bound, with the best choice marked.

    For each candidate r the noise follows the sensitivity at r (Laplace and Gaussian noise
    scale linearly with it): noise sd = ``unit_noise_sd`` × Δ(r), with Δ the L1 (k·r·M) or L2
    (√k·r·M) sensitivity of :func:`count_sensitivity` / :func:`sum_sensitivity`, k = 1 without
    ``max_groups``. The bias and truncation spread come from :func:`truncation_moments`. The
    best bound minimises the RMSE (the smallest such bound on ties). Computed from the raw
    data, the curve is not private (see :func:`error_breakdown`).

    Parameters
    ----------
    cells : ContributionCells
    max_rows : array_like of int, shape (R,)
        Candidate bounds, whole numbers in [1, MAX_BOUND].
    max_groups : int, optional
    unit_noise_sd : float
        The noise standard deviation at sensitivity 1 (>= 0): √2/ε for Laplace, 1/√(2ρ) for
        zCDP Gaussian noise.
    norm : {"l1", "l2"}
        The sensitivity the noise is calibrated to.
    magnitude : float
        M, the most one row adds: 1 for a count, max(|lower|, |upper|) for a clamped sum.

    Returns
    -------
    MaxRowsSweep
    """
    cells = _check_cells(cells)
    r, _ = _check_max_rows(max_rows)
    k = _check_max_groups(max_groups)
    unit = _check_noise_sd("unit_noise_sd", unit_noise_sd)
    norm = check_choice("norm", norm, NORMS)
    magnitude = check_positive("magnitude", magnitude)
    mean, var = _moments(cells, r, k)
    index = cells.group.astype(np.int64)
    true = np.bincount(index, weights=cells.raw_value_sum, minlength=mean.shape[1])
    groups_factor = 1.0 if k is None else (float(k) if norm == "l1" else math.sqrt(k))
    with np.errstate(over="ignore", invalid="ignore"):
        bias = mean - true
        mean_square_bias = np.mean(bias * bias, axis=1)
        truncation_var = np.mean(var, axis=1)
        noise = unit * groups_factor * magnitude * r
        rmse = np.sqrt(mean_square_bias + truncation_var + noise * noise)
    if not np.all(np.isfinite(rmse)):
        raise ValueError("the squared errors overflow float64: unit_noise_sd or magnitude is "
                         "too large; rescale the values")
    best = int(np.argmin(rmse))
    return MaxRowsSweep(max_rows=r.astype(np.int64), bias=np.sqrt(mean_square_bias),
                        truncation_sd=np.sqrt(truncation_var), noise_sd=noise, rmse=rmse,
                        best_max_rows=int(r[best]))
