"""The pandas reference of the queries and the noisy mean: what tests check the engine, the
plan and the pages against (no production code calls it; moved here from dpcore).

Count, sum, mean, histogram and crosstab under add/remove-one-row neighbours (one row = one
person), with their true answers (``dpcore.queries.QueryAnswer``) and sensitivities; the noisy
mean as two noisy parts over one budget (``NoisyMean``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dpcore.checks import (
    check_bounds,
    check_choice,
    check_delta,
    check_int,
    check_positive,
    check_probability_open,
    check_real,
    check_rng,
)
from dpcore.measures import Measure, compose, split_budget
from dpcore.mechanisms import CATALOGUE, AdditiveMechanism, make_mechanism
from dpcore.queries import MEAN_MECHANISMS, QueryAnswer

# ---------------------------------------------------------------------------------------------
# Validation of frames, columns and categories


def _check_frame(frame: object) -> pd.DataFrame:
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    return frame


def _column(frame: pd.DataFrame, column: object, name: str = "column") -> pd.Series:
    if column not in frame.columns:
        raise ValueError(
            f"{name} {column!r} is not in the data; available columns: "
            f"{', '.join(map(str, frame.columns))}"
        )
    return frame[column]


def _numeric_values(series: pd.Series, column: object) -> NDArray[np.float64]:
    dtype = series.dtype
    if not pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_complex_dtype(dtype):
        raise TypeError(
            f"column {column!r} must be numeric to be summed, got dtype {dtype}; "
            "convert it to numbers first"
        )
    return series.to_numpy(dtype=np.float64, na_value=np.nan)


def _is_integer_column(series: pd.Series) -> bool:
    return pd.api.types.is_integer_dtype(series.dtype) or pd.api.types.is_bool_dtype(series.dtype)


def _resolve_categories(
    series: pd.Series, categories: Sequence[object] | None, name: str
) -> list[object]:
    """The declared categories, or the column's own (pandas categories, else sorted values)."""
    if categories is None:
        if isinstance(series.dtype, pd.CategoricalDtype):
            resolved = list(series.dtype.categories)
        else:
            distinct = list(pd.unique(series.dropna()))
            try:
                resolved = sorted(distinct)
            except TypeError:  # mixed types cannot be ordered: order by their text instead
                resolved = sorted(distinct, key=str)
        if not resolved:
            raise ValueError(
                f"column {series.name!r} has no non-missing values to take {name} from; "
                f"declare {name}"
            )
        return resolved
    if isinstance(categories, (str, bytes)) or not isinstance(
        categories, (Sequence, pd.Index, pd.Series, np.ndarray)
    ):
        raise TypeError(
            f"{name} must be a list of category values, got {type(categories).__name__}"
        )
    resolved = list(categories)
    if not resolved:
        raise ValueError(f"{name} must contain at least one category")
    if any(pd.isna(c) for c in resolved):
        raise ValueError(f"{name} must not contain missing values (NaN/None)")
    labels = [str(c) for c in resolved]
    if len(set(labels)) != len(labels) or not pd.Index(resolved).is_unique:
        raise ValueError(f"{name} must not repeat a category, got {labels}")
    return resolved


def _category_codes(
    series: pd.Series, categories: list[object], name: str
) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """Position of each row's value in ``categories`` (-1 if missing) and the missing mask."""
    missing = series.isna().to_numpy()
    codes = pd.Index(categories).get_indexer(series).astype(np.intp)
    undeclared = (codes < 0) & ~missing
    if undeclared.any():
        examples = pd.unique(series[undeclared])[:5]
        raise ValueError(
            f"column {series.name!r} has {int(undeclared.sum())} row(s) whose value is not in "
            f"{name} (for example {', '.join(map(repr, examples))}); add these values to "
            f"{name} or filter those rows out first"
        )
    return codes, missing


# ---------------------------------------------------------------------------------------------
# Queries


def count(frame: pd.DataFrame) -> QueryAnswer:
    """The number of rows. Adding or removing one row changes it by 1 (L1 = L2 = 1)."""
    frame = _check_frame(frame)
    return QueryAnswer(
        true_value=np.array(float(len(frame))),
        l1_sensitivity=1.0,
        l2_sensitivity=1.0,
        integer_valued=True,
        description="number of rows",
    )


def count_where(frame: pd.DataFrame, column: str, value: object) -> QueryAnswer:
    """The number of rows whose ``column`` equals ``value`` (L1 = L2 = 1).

    Missing values never equal anything, so ``value=NaN`` counts no rows.
    """
    frame = _check_frame(frame)
    series = _column(frame, column)
    if pd.api.types.is_list_like(value):  # == would compare element by element, or fail
        raise TypeError(f"value must be a single value to count, got {type(value).__name__}")
    matches = int((series == value).fillna(False).to_numpy(dtype=bool).sum())
    return QueryAnswer(
        true_value=np.array(float(matches)),
        l1_sensitivity=1.0,
        l2_sensitivity=1.0,
        integer_valued=True,
        description=f"number of rows with {column} = {value!r}",
    )


def bounded_sum(frame: pd.DataFrame, column: str, *, lower: float, upper: float) -> QueryAnswer:
    """The sum of ``column`` with every value clamped to ``[lower, upper]``.

    Missing values (NaN/None) are dropped: such a row adds 0, so it changes nothing and the
    sensitivity holds; ``missing_rows`` says how many there were. A row adds a value in
    ``[lower, upper]`` once clamped, so adding or removing it changes the sum by at most

    .. math:: \\Delta_1 = \\Delta_2 = \\max(|\\text{lower}|, |\\text{upper}|).

    The bounds must be declared by the user or come from public knowledge: bounds taken from
    the data (its min and max) leak information about the people in it. ``clamped_rows``
    counts the values the bounds changed. The answer is marked integer-valued (so the
    geometric mechanism may be used) when the column has an integer dtype and both bounds are
    whole numbers.
    """
    frame = _check_frame(frame)
    lower, upper = check_bounds(lower, upper)
    series = _column(frame, column)
    values = _numeric_values(series, column)
    missing = np.isnan(values)
    present = values[~missing]
    clamped = np.clip(present, lower, upper)
    with np.errstate(over="ignore"):
        total = float(np.sum(clamped))
    if not math.isfinite(total):
        raise ValueError(f"the sum of {column} clamped to [lower, upper] = [{lower:g}, "
                         f"{upper:g}] overflows float64: narrow the bounds")
    sensitivity = max(abs(lower), abs(upper))
    integer_valued = _is_integer_column(series) and lower.is_integer() and upper.is_integer()
    return QueryAnswer(
        true_value=np.array(total),
        l1_sensitivity=sensitivity,
        l2_sensitivity=sensitivity,
        integer_valued=bool(integer_valued),
        description=f"sum of {column} clamped to [{lower:g}, {upper:g}]",
        clamped_rows=int(np.count_nonzero((present < lower) | (present > upper))),
        missing_rows=int(missing.sum()),
        lower=lower,
        upper=upper,
    )


def histogram(
    frame: pd.DataFrame, column: str, *, categories: Sequence[object] | None = None
) -> QueryAnswer:
    """Counts of ``column`` over every declared category, zeros included (L1 = L2 = 1).

    Adding or removing one row changes exactly one cell by 1, so both sensitivities are 1.
    Every declared category keeps its cell even when no row has it: dropping empty cells would
    reveal that nobody has that value.

    Values outside the declared ``categories`` raise ``ValueError`` (naming how many rows and a
    few of the values) rather than being dropped or lumped into an "other" cell, so that a
    published histogram always covers the rows the user thinks it covers; add the values to
    ``categories`` or filter the rows out first. Missing values (NaN/None) are not counted;
    ``missing_rows`` says how many there were.

    Warning: when ``categories`` is None they come from the column itself — its pandas
    categories, or else its sorted distinct values. Categories derived from the data leak which
    values exist (a category held by one person reveals that person); declare them from public
    knowledge for a real release.
    """
    frame = _check_frame(frame)
    series = _column(frame, column)
    cats = _resolve_categories(series, categories, "categories")
    codes, missing = _category_codes(series, cats, "categories")
    counts = np.bincount(codes[codes >= 0], minlength=len(cats)).astype(np.float64)
    return QueryAnswer(
        true_value=counts,
        l1_sensitivity=1.0,
        l2_sensitivity=1.0,
        integer_valued=True,
        labels=tuple(str(c) for c in cats),
        description=f"counts of {column} over {len(cats)} categories",
        missing_rows=int(missing.sum()),
    )


def crosstab(
    frame: pd.DataFrame,
    row: str,
    column: str,
    *,
    row_categories: Sequence[object] | None = None,
    column_categories: Sequence[object] | None = None,
) -> QueryAnswer:
    """A 2-d table of counts: rows by ``row``'s categories, columns by ``column``'s (L1 = L2 = 1).

    Every declared category pair keeps its cell, zeros included. One person is in exactly one
    cell, so adding or removing a row changes one cell by 1. Rows with a missing value in either
    column are not counted (``missing_rows``); values outside the declared categories raise
    ``ValueError``, as in :func:`histogram`. Categories left as None come from the data and
    leak which values exist (see :func:`histogram`).
    """
    frame = _check_frame(frame)
    row_series = _column(frame, row, "row")
    col_series = _column(frame, column, "column")
    row_cats = _resolve_categories(row_series, row_categories, "row_categories")
    col_cats = _resolve_categories(col_series, column_categories, "column_categories")
    row_codes, row_missing = _category_codes(row_series, row_cats, "row_categories")
    col_codes, col_missing = _category_codes(col_series, col_cats, "column_categories")
    counted = ~(row_missing | col_missing)
    cells = row_codes[counted] * len(col_cats) + col_codes[counted]
    table = np.bincount(cells, minlength=len(row_cats) * len(col_cats)).astype(np.float64)
    return QueryAnswer(
        true_value=table.reshape(len(row_cats), len(col_cats)),
        l1_sensitivity=1.0,
        l2_sensitivity=1.0,
        integer_valued=True,
        labels=tuple(str(c) for c in row_cats),
        column_labels=tuple(str(c) for c in col_cats),
        description=f"counts of {row} by {column}",
        missing_rows=int((~counted).sum()),
    )


def bounded_mean_parts(
    frame: pd.DataFrame, column: str, *, lower: float, upper: float
) -> tuple[QueryAnswer, QueryAnswer]:
    """The two parts of a bounded mean: (sum of clamped values, number of non-missing values).

    Both count the same rows (those where ``column`` is not missing), so the mean is the mean of
    the non-missing values clamped to ``[lower, upper]``. The count has sensitivity 1.
    """
    sum_answer = bounded_sum(frame, column, lower=lower, upper=upper)
    present = len(frame) - sum_answer.missing_rows
    count_answer = QueryAnswer(
        true_value=np.array(float(present)),
        l1_sensitivity=1.0,
        l2_sensitivity=1.0,
        integer_valued=True,
        description=f"number of non-missing values of {column}",
        missing_rows=sum_answer.missing_rows,
    )
    return sum_answer, count_answer


# ---------------------------------------------------------------------------------------------
# The noisy mean: two noisy parts, one budget


def _check_share(sum_share: object) -> float:
    share = check_real("sum_share", sum_share)
    if not 0 < share < 1:
        raise ValueError(f"sum_share must lie strictly between 0 and 1, got {share}")
    return share


@contextmanager
def _split_named(budget: str, total: float, share: float) -> Iterator[None]:
    """A part of the budget its mechanism refuses (a geometric scale beyond 1e12 from a tiny
    share) is reported with the split behind it: the user chose epsilon and sum_share, not
    the part."""
    try:
        yield
    except ValueError as exc:
        raise ValueError(f"{exc} (the sum gets sum_share = {share:g} of {budget} = {total:g}, "
                         "the count the rest)") from exc


def _check_scalar_answer(name: str, answer: object) -> QueryAnswer:
    if not isinstance(answer, QueryAnswer):
        raise TypeError(f"{name} must be a QueryAnswer, got {type(answer).__name__}")
    if answer.true_value.ndim != 0:
        raise ValueError(f"{name} must be a scalar query (a sum or a count)")
    return answer


class NoisyMean:
    """A noisy bounded mean, released as one object: a noisy sum over a noisy count.

    The budget is split between the two parts: the sum gets ``sum_share`` of it and the count
    the rest (``measures.split_budget``: the two parts never add up to more than the budget
    in exact arithmetic) — of epsilon for a pure-DP mechanism, of rho under zCDP, of both
    epsilon and delta under approximate DP. By sequential composition the mean then costs
    exactly the given budget (:attr:`privacy`). The sum's noise is calibrated to its L1 or L2
    sensitivity, ``max(|lower|, |upper|)``, as the mechanism's spec says; the count's to 1.

    Post-processing, which costs no privacy: the noisy count is floored at 1 before dividing
    (a count near zero would make the ratio explode or change sign), and the ratio is clamped
    to ``[lower, upper]``, where the true mean lies. Both make the estimate biased for small
    counts; at large counts the bias vanishes. There is no closed form for its error:
    :meth:`accuracy` simulates it.

    Parameters
    ----------
    sum_answer, count_answer : QueryAnswer
        From :func:`bounded_mean_parts`.
    mechanism : str
        A kind of :data:`MEAN_MECHANISMS`; an integer-only kind needs integer answers.
    epsilon, delta, rho : float, optional
        The budget, as the mechanism's spec takes it (epsilon; epsilon and delta; or rho).
    sum_share : float
        The sum's share of the budget, in (0, 1).
    """

    def __init__(self, sum_answer: QueryAnswer, count_answer: QueryAnswer, *, mechanism: str,
                 epsilon: float | None = None, delta: float | None = None,
                 rho: float | None = None, sum_share: float = 0.5) -> None:
        self._sum_answer = _check_scalar_answer("sum_answer", sum_answer)
        self._count_answer = _check_scalar_answer("count_answer", count_answer)
        kind = check_choice("mechanism", mechanism, MEAN_MECHANISMS)
        share = _check_share(sum_share)
        if sum_answer.lower is None or sum_answer.upper is None:
            raise ValueError("sum_answer must come from bounded_sum (it carries the bounds)")
        spec = CATALOGUE[kind]
        given = {name: value for name, value in (("epsilon", epsilon), ("delta", delta),
                                                  ("rho", rho)) if value is not None}
        spec.measure_of(tuple(given))  # the budget the kind takes, else ValueError naming it
        budget = {name: (check_delta(name, value, allow_zero=False) if name == "delta"
                         else check_positive(name, value)) for name, value in given.items()}
        if spec.integer_only and not (sum_answer.integer_valued
                                      and count_answer.integer_valued):
            raise ValueError(f"the {kind} mechanism needs integer answers: sum an integer "
                             "column with whole-number bounds, or use laplace")
        halves = {name: split_budget(value, share) for name, value in budget.items()}
        norm = "l2_sensitivity" if spec.sensitivity_norm == "L2" else "l1_sensitivity"
        first = next(iter(budget))
        with _split_named(first, budget[first], share):
            self._parts = tuple(
                make_mechanism(kind, sensitivity=getattr(answer, norm),
                               **{name: pair[i] for name, pair in halves.items()})
                for i, answer in enumerate((sum_answer, count_answer)))
        self._kind = kind

    @property
    def kind(self) -> str:
        """The catalogue kind both parts use."""
        return self._kind

    @property
    def parts(self) -> tuple[AdditiveMechanism, AdditiveMechanism]:
        """(the sum's mechanism, the count's mechanism): the very ones :meth:`sample` uses."""
        return self._parts

    @property
    def lower(self) -> float:
        return float(self._sum_answer.lower)

    @property
    def upper(self) -> float:
        return float(self._sum_answer.upper)

    @property
    def privacy(self) -> Measure:
        """The two parts composed: at most the budget given (never above it)."""
        return compose(*(part.privacy for part in self._parts))

    @property
    def true_value(self) -> float:
        """The mean the release estimates: the true sum over the true count (floored at 1, as
        the noisy count is), clamped to [lower, upper]."""
        count = max(float(self._count_answer.true_value), 1.0)
        mean = float(self._sum_answer.true_value) / count
        return float(np.clip(mean, self.lower, self.upper))

    def sample(self, *, rng: np.random.Generator, trials: int | None = None
               ) -> NDArray[np.float64]:
        """Noisy means: a 0-d array (``trials=None``) or shape ``(trials,)``."""
        rng = check_rng(rng)
        sum_mechanism, count_mechanism = self._parts
        noisy_sum = np.asarray(
            sum_mechanism.sample(self._sum_answer.true_value, rng=rng, trials=trials),
            dtype=np.float64)
        noisy_count = np.asarray(
            count_mechanism.sample(self._count_answer.true_value, rng=rng, trials=trials),
            dtype=np.float64)
        mean = noisy_sum / np.maximum(noisy_count, 1.0)
        return np.clip(mean, self.lower, self.upper)

    def accuracy(self, beta: float, *, rng: np.random.Generator,
                 trials: int = 100_000) -> float:
        """The simulated (1 − beta) error bound: the smallest alpha with at least a share
        1 − beta of ``trials`` simulated releases within alpha of :attr:`true_value`.

        A Monte Carlo estimate (no closed form exists): its own error shrinks like
        1/sqrt(trials · beta); fix ``rng``'s seed for reproducible numbers.
        """
        beta = check_probability_open("beta", beta)
        trials = check_int("trials", trials, minimum=1, maximum=10**8)
        errors = np.abs(self.sample(rng=rng, trials=trials) - self.true_value)
        return float(np.quantile(errors, 1 - beta, method="inverted_cdf"))


def mean_mechanisms(
    sum_answer: QueryAnswer,
    count_answer: QueryAnswer,
    *,
    mechanism: str,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    sum_share: float = 0.5,
) -> tuple[AdditiveMechanism, AdditiveMechanism]:
    """The sum's and the count's mechanisms of :func:`noisy_mean` (``NoisyMean(...).parts``).

    The very mechanisms it samples from: their scales and privacy are what a page shows.
    """
    return NoisyMean(sum_answer, count_answer, mechanism=mechanism, epsilon=epsilon,
                     delta=delta, rho=rho, sum_share=sum_share).parts


def noisy_mean(
    sum_answer: QueryAnswer,
    count_answer: QueryAnswer,
    *,
    mechanism: str,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    sum_share: float = 0.5,
    rng: np.random.Generator,
    trials: int | None = None,
) -> NDArray[np.float64]:
    """A noisy bounded mean: ``NoisyMean(...).sample(rng=rng, trials=trials)``.

    See :class:`NoisyMean` for the budget split and the post-processing. Returns a 0-d array
    (``trials=None``) or shape ``(trials,)``, one mean per simulated release.
    """
    rng = check_rng(rng)
    release = NoisyMean(sum_answer, count_answer, mechanism=mechanism, epsilon=epsilon,
                        delta=delta, rho=rho, sum_share=sum_share)
    return release.sample(rng=rng, trials=trials)


def mean_privacy(
    sum_answer: QueryAnswer,
    count_answer: QueryAnswer,
    *,
    mechanism: str,
    epsilon: float | None = None,
    delta: float | None = None,
    rho: float | None = None,
    sum_share: float = 0.5,
) -> Measure:
    """The total privacy of :func:`noisy_mean` with these settings (``NoisyMean(...).privacy``).

    ``PureDP`` for a pure-DP kind, ``ZCDP`` with rho, ``ApproxDP`` with epsilon and delta; it
    equals the given budget (up to rounding, never above it).
    """
    return NoisyMean(sum_answer, count_answer, mechanism=mechanism, epsilon=epsilon,
                     delta=delta, rho=rho, sum_share=sum_share).privacy
