"""Noisy statistics: one count, sum, mean or histogram released with noise, many times over.

Plain functions (no Streamlit) plan a release and summarise simulated errors into small binned
histograms and metrics; ``query_facts`` and ``simulate_releases`` are the cached wrappers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import ArrayLike, NDArray

from dashboard import choices
from dashboard.choices import PrivacyChoice, mechanism_name
from dashboard.datasets import LoadedDataset, categorical_columns, numeric_columns
from dashboard.exports import SIMULATION, noise_stream, simulation_fields
from dashboard.shown import percent_down, up
from dpcore import queries
from dpcore._checks import check_int, check_trials, trial_chunks
from dpcore.mechanisms import AdditiveMechanism
from dpcore.queries import MEAN_MECHANISMS, QueryAnswer
from dpcore.risk import percent

#: The queries the page offers, in the user's words.
QUERIES = {
    "count": "Count of rows",
    "sum": "Sum of a column",
    "mean": "Mean of a column",
    "histogram": "Histogram: count per category",
}
#: Confidence levels offered for the "± alpha" error bound.
CONFIDENCE_OPTIONS = (0.5, 0.8, 0.9, 0.95, 0.99)
#: Shares of the mean's budget the noisy sum may take (the noisy count gets the rest).
SUM_SHARE_OPTIONS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
#: Bins of the simulated error histogram.
ERROR_BINS = 60
#: The error chart spans the errors of all but this share of releases (by the closed form):
#: wide enough to show the tails, narrow enough that the bulk fills many bins.
RANGE_BETA = 1e-3
#: Points at which the closed-form density is drawn.
DENSITY_POINTS = 401
#: A histogram column is the default when it has at most this many categories.
DEFAULT_MAX_CATEGORIES = 20
_RNG_OFFSET = 2  # this page's own random streams, apart from the other pages'


# --------------------------------------------------------------------------------------------
# What the user asks: queries, columns, bounds


@dataclass(frozen=True)
class QuerySpec:
    """A query as the user picked it: kind, column, clamping bounds, declared categories."""

    query: str
    column: str | None = None
    lower: float | None = None
    upper: float | None = None
    categories: tuple[str, ...] | None = None

    def describe(self) -> str:
        """e.g. 'mean of age' (the column name is the user's: escape it before display)."""
        if self.query == "count":
            return "number of rows"
        noun = {"sum": "sum", "mean": "mean", "histogram": "counts"}[self.query]
        return f"{noun} of {self.column}"


@dataclass(frozen=True)
class BoundsSuggestion:
    """Starting bounds for a numeric column and where they come from."""

    lower: float
    upper: float
    public: bool
    note: str
    origin: str = ""

    def shown_note(self, lower: float | None, upper: float | None) -> tuple[str, bool]:
        """(note, warn) under the bounds the user has now: the warning that the bounds come
        from the data holds only while they are the suggested ones."""
        if self.public or (lower, upper) == (self.lower, self.upper):
            return self.note, not self.public
        return (f"Your bounds [{lower:g}, {upper:g}] replace the suggestion read off the data "
                f"([{self.lower:g}, {self.upper:g}]): values outside are clamped. Type bounds "
                "you know without looking at the data."), False


#: Where a declaration comes from, in the parameters file.
TYPED = "typed by the user"
FROM_DATA_BOUNDS = ("the data: round numbers around its own minimum and maximum (they reveal "
                    "roughly how large the values are)")


def available_queries(loaded: LoadedDataset) -> list[str]:
    """The queries this dataset supports: count always, sum/mean and histogram by column type."""
    out = ["count"]
    if numeric_columns(loaded):
        out += ["sum", "mean"]
    if categorical_columns(loaded):
        out.append("histogram")
    return out


def columns_for(loaded: LoadedDataset, query: str) -> list[str]:
    """Columns a query can use: numeric for sum and mean, categorical for a histogram."""
    if query in ("sum", "mean"):
        return numeric_columns(loaded)
    if query == "histogram":
        return categorical_columns(loaded)
    return []


def _category_count(loaded: LoadedDataset, column: str) -> int:
    domain = loaded.domains.get(column)
    if domain is not None and domain.categories is not None:
        return len(domain.categories)
    return len(loaded.frame[column].cat.categories)


def default_column(loaded: LoadedDataset, query: str) -> str | None:
    """The column shown first: a public-range numeric column, or a mid-sized categorical one.

    For a histogram, the column with the most categories up to ``DEFAULT_MAX_CATEGORIES``
    (education on Adult): small categories next to large ones show how noise hits each.
    """
    columns = columns_for(loaded, query)
    if not columns:
        return None
    if query == "histogram":
        sizes = [_category_count(loaded, c) for c in columns]
        fitting = [s if s <= DEFAULT_MAX_CATEGORIES else -1 for s in sizes]
        return columns[int(np.argmax(fitting))]
    public = [c for c in columns if getattr(loaded.domains.get(c), "kind", "") == "numeric"]
    return (public or columns)[0]


def _round_up(x: float) -> float:
    """The smallest of 1, 2, 5 × 10^k that is >= x (x > 0)."""
    power = 10.0 ** math.floor(math.log10(x))
    for step in (1, 2, 5, 10):
        if step * power >= x:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - the loop always returns


def default_bounds(loaded: LoadedDataset, column: str) -> BoundsSuggestion:
    """The column's public range if known, else round numbers around the data's range.

    Round numbers around the data's minimum and maximum still leak (roughly how large the
    largest value is): the note says so, and the user should replace them.
    """
    domain = loaded.domains.get(column)
    if domain is not None and domain.kind == "numeric" and domain.from_data:
        unit = f" {domain.unit}" if domain.unit else ""
        note = (f"These bounds, [{domain.lower:g}, {domain.upper:g}]{unit}, are declared for "
                f"the column but read off the data ({domain.source}). A bound read off the "
                "data leaks: it says that someone has exactly that value. Type bounds you "
                "know without looking at the data for a release that is private in full.")
        return BoundsSuggestion(float(domain.lower), float(domain.upper), False, note)
    if domain is not None and domain.kind == "numeric":
        unit = f" {domain.unit}" if domain.unit else ""
        note = (f"Bounds from the column's public range [{domain.lower:g}, {domain.upper:g}]"
                f"{unit} — source: {domain.source}. Values outside are clamped. Bounds taken "
                "from the data itself (its minimum and maximum) would leak information "
                "about the people in it.")
        return BoundsSuggestion(float(domain.lower), float(domain.upper), True, note,
                                origin=f"the column's public range (source: {domain.source})")
    values = pd.to_numeric(loaded.frame[column], errors="coerce").to_numpy(dtype=float,
                                                                           na_value=np.nan)
    values = values[np.isfinite(values)]
    low = float(values.min()) if values.size else 0.0
    high = float(values.max()) if values.size else 1.0
    lower = 0.0 if low >= 0 else -_round_up(-low)
    upper = _round_up(high) if high > 0 else 0.0
    if upper <= lower:
        upper = lower + 1.0
    note = ("No public range is known for this column, so the bounds start at round numbers "
            "around the data's own minimum and maximum. Bounds taken from the data itself leak "
            "information about the people in it (here, roughly how large the largest value "
            "is): replace them with bounds you know without looking at the data.")
    return BoundsSuggestion(lower, upper, False, note, origin=FROM_DATA_BOUNDS)


def declared_categories(loaded: LoadedDataset, column: str) -> tuple[str, ...] | None:
    """The column's public category list, or None when the categories come from the data."""
    domain = loaded.domains.get(column)
    if domain is not None and domain.categories is not None:
        return tuple(domain.categories)
    return None


def default_answer_range(spec: QuerySpec, rows: int) -> tuple[float, float]:
    """A public range for the answer itself, needed by the bounded and clamped mechanisms.

    A count lies in [0, N] and a sum of values clamped to [L, U] in [N·min(L, 0), N·max(U, 0)],
    with N a round number at or above the number of rows (the built-in datasets publish their
    size; for an upload the user should type a size they could publish).
    """
    size = _round_up(max(rows, 1))
    if spec.query == "sum" and spec.lower is not None and spec.upper is not None:
        return size * min(spec.lower, 0.0), size * max(spec.upper, 0.0)
    return 0.0, size


def declaration_origins(loaded: LoadedDataset, spec: QuerySpec, *,
                        answer_range: tuple[float, float] | None,
                        upload: bool) -> dict[str, str]:
    """Where the clamping bounds and the answer range come from, for the parameters file:
    typed by the user, public knowledge, or the data (an upload's row count is its own)."""
    origins: dict[str, str] = {}
    bounds_from_data = False
    if spec.lower is not None and spec.column is not None:
        suggested = default_bounds(loaded, spec.column)
        if (spec.lower, spec.upper) == (suggested.lower, suggested.upper):
            origins["clamping_bounds_from"] = suggested.origin
            bounds_from_data = not suggested.public
        else:
            origins["clamping_bounds_from"] = TYPED
    if answer_range is not None:
        times = " times the clamping bounds" if spec.query == "sum" else ""
        if tuple(answer_range) != default_answer_range(spec, len(loaded.frame)):
            origins["answer_range_from"] = TYPED
        elif upload or bounds_from_data:
            origins["answer_range_from"] = ("the data: a round number at or above its number "
                                            f"of rows{times}")
        else:
            origins["answer_range_from"] = ("the dataset's published number of rows, rounded "
                                            f"up{times}")
    return origins


def answer_unit(loaded: LoadedDataset, spec: QuerySpec) -> str:
    """The unit of the answer and of its error: people, or the column's unit when known."""
    if spec.query in ("count", "histogram"):
        return "people"
    domain = loaded.domains.get(spec.column)
    return domain.unit if domain is not None and domain.unit else "the column's units"


def comparable_mechanisms(choice: PrivacyChoice, *, query: str,
                          integer_query: bool) -> list[str]:
    """The mechanisms valid at the same privacy measure, other than the one chosen."""
    options = choices.offered(choice.measure, integer_query=integer_query,
                              allowed=MEAN_MECHANISMS if query == "mean" else None)
    return [m for m in options if m != choice.mechanism]


def uses_answer_range(mechanisms: Sequence[str]) -> bool:
    """Whether any of these mechanisms needs a public range for the answer."""
    return choices.uses_answer_range(mechanisms)


# --------------------------------------------------------------------------------------------
# The release plan: the query's true answer and the mechanism(s) that add noise


def answer_query(frame: pd.DataFrame, spec: QuerySpec) -> QueryAnswer | tuple[QueryAnswer,
                                                                              QueryAnswer]:
    """The true answer with its sensitivity (for the mean: the sum and count parts)."""
    if spec.query == "count":
        return queries.count(frame)
    if spec.query == "sum":
        return queries.bounded_sum(frame, spec.column, lower=spec.lower, upper=spec.upper)
    if spec.query == "mean":
        return queries.bounded_mean_parts(frame, spec.column, lower=spec.lower,
                                          upper=spec.upper)
    if spec.query == "histogram":
        return queries.histogram(frame, spec.column, categories=spec.categories)
    raise ValueError(f"query must be one of {', '.join(QUERIES)}; got {spec.query!r}")


def _mean_budget(choice: PrivacyChoice) -> dict[str, float]:
    """The budget keywords ``queries.noisy_mean`` takes for this choice."""
    return choice.budget()


@dataclass(frozen=True, eq=False)
class ReleasePlan:
    """What one release is: the true answer and the noise added to it.

    ``release`` is what adds the noise: a mechanism of the catalogue for a count, sum or
    histogram, or a ``queries.NoisyMean`` for a mean (a noisy sum over a noisy count, its
    ``parts`` each with a share of the budget). Both have a ``privacy`` and ``parts``; only
    a mechanism has closed forms for its error (:attr:`closed_form`).
    """

    spec: QuerySpec
    choice: PrivacyChoice
    true_value: NDArray[np.float64]
    labels: tuple[str, ...] | None
    answer: QueryAnswer
    release: AdditiveMechanism | queries.NoisyMean
    count_answer: QueryAnswer | None = None
    sum_share: float = 0.5

    @property
    def closed_form(self) -> bool:
        """Whether the error has closed forms (a mechanism; a noisy mean is simulated)."""
        return isinstance(self.release, AdditiveMechanism)

    @property
    def parts(self) -> tuple[AdditiveMechanism, ...]:
        """The mechanisms that add noise: the one mechanism, or the mean's sum and count."""
        return (self.release,) if self.closed_form else self.release.parts

    @property
    def cells(self) -> int:
        return int(self.true_value.size)

    @property
    def integer_errors(self) -> bool:
        return self.closed_form and self.release.integer_output

    def _cells(self) -> NDArray[np.float64]:
        # Shape (1, cells): broadcasts against a column of error values x[:, None].
        return self.true_value.reshape(1, -1)

    def sample(self, trials: int | None, rng: np.random.Generator) -> NDArray[np.float64]:
        """Noisy releases: shape ``true_value.shape``, or ``(trials, *true_value.shape)``."""
        if self.closed_form:
            noisy = self.release.sample(self.true_value, rng=rng, trials=trials)
        else:
            noisy = self.release.sample(rng=rng, trials=trials)
        return np.asarray(noisy, dtype=np.float64)

    def accuracy(self, beta: float) -> NDArray[np.float64] | None:
        """Closed-form alpha per cell with P(|error| > alpha) <= beta; None for the mean."""
        if not self.closed_form:
            return None
        alpha = self.release.accuracy(beta, true_value=self.true_value)
        return np.broadcast_to(np.asarray(alpha, dtype=np.float64), self.true_value.shape)

    def error_cdf(self, x: ArrayLike) -> NDArray[np.float64] | None:
        """P(error <= x) for one cell drawn at random (the mixture over cells); None for a mean."""
        if not self.closed_form:
            return None
        x = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        cdf = self.release.error_cdf(x, true_value=self._cells())
        return np.broadcast_to(cdf, (x.shape[0], self.cells)).mean(axis=1)

    def error_density(self, x: ArrayLike) -> NDArray[np.float64] | None:
        """Density of the error (probability of each whole number for geometric noise)."""
        if not self.closed_form:
            return None
        x = np.asarray(x, dtype=np.float64).reshape(-1, 1)
        if self.integer_errors:
            pmf = self.release.error_pmf(x)
            return np.broadcast_to(pmf, (x.shape[0], 1)).mean(axis=1)
        pdf = self.release.error_pdf(x, true_value=self._cells())
        return np.broadcast_to(pdf, (x.shape[0], self.cells)).mean(axis=1)

    def analytic_bias(self) -> NDArray[np.float64] | None:
        if not self.closed_form:
            return None
        bias = self.release.bias(self.true_value)
        return np.broadcast_to(np.asarray(bias, dtype=np.float64), self.true_value.shape)

    def analytic_rmse(self) -> NDArray[np.float64] | None:
        if not self.closed_form:
            return None
        mse = np.asarray(self.release.mse(self.true_value), dtype=np.float64)
        return np.sqrt(np.broadcast_to(mse, self.true_value.shape))

    def error_span(self, beta: float = RANGE_BETA) -> tuple[float, float]:
        """The range of errors the chart shows: all but about ``beta`` of them.

        For the mean, the noisy sum and count each stay within their (beta/2)-accuracy,
        and then |(S + e_s)/(C + e_c) − S/C| = |e_s − m·e_c| / (C + e_c) is at most
        (alpha_s + |m|·alpha_c) / (C − alpha_c); the clamp keeps the mean in [lower, upper].
        """
        if self.closed_form:
            reach = float(np.max(self.accuracy(beta)))
            low, high = -reach, reach
            if self.choice.spec.needs_range:  # the output stays in [lower, upper]
                low = max(low, float(np.min(self.release.lower - self.true_value)))
                high = min(high, float(np.max(self.release.upper - self.true_value)))
        else:
            sum_mech, count_mech = self.parts
            count = float(self.count_answer.true_value)
            mean = float(self.true_value)
            alpha_sum, alpha_count = sum_mech.accuracy(beta / 2), count_mech.accuracy(beta / 2)
            lower, upper = self.answer.lower, self.answer.upper
            reach = upper - lower
            if count - alpha_count > 1:
                reach = min(reach, (alpha_sum + abs(mean) * alpha_count) / (count - alpha_count))
            low, high = max(-reach, lower - mean), min(reach, upper - mean)
        if not (math.isfinite(low) and math.isfinite(high) and high > low):
            low, high = -1.0, 1.0
        return low, high


def make_plan(frame: pd.DataFrame, spec: QuerySpec, choice: PrivacyChoice, *,
              answer_range: tuple[float, float] | None = None,
              sum_share: float = 0.5) -> ReleasePlan:
    """Compute the true answer and build the mechanism(s) for one release.

    Parameters
    ----------
    frame : pandas.DataFrame
        The data, one row per person.
    spec : QuerySpec
        The query; sum and mean need bounds, a histogram may declare its categories.
    choice : PrivacyChoice
        Measure, mechanism and privacy parameters (from ``controls.privacy_controls``).
    answer_range : (float, float), optional
        Public range of the answer, required by the bounded and clamped Laplace mechanisms.
    sum_share : float
        The mean's budget share for the noisy sum (the count gets the rest).

    Returns
    -------
    ReleasePlan
        The true answer (0-d, or one count per category) and the mechanism(s).

    Raises
    ------
    ValueError, TypeError
        From ``dpcore`` when bounds, parameters or the mechanism do not fit the query.
    """
    answered = answer_query(frame, spec)
    if spec.query == "mean":
        if choice.mechanism not in MEAN_MECHANISMS:
            raise ValueError(f"the mean is released with {', '.join(MEAN_MECHANISMS)} noise; "
                             f"got {choice.mechanism}")
        sum_answer, count_answer = answered
        if float(count_answer.true_value) == 0:
            raise ValueError(f"column {spec.column!r} has no values to average")
        # One release object: its parts are the very mechanisms it samples from, to show
        # each part's sensitivity and scale.
        release = queries.NoisyMean(sum_answer, count_answer, mechanism=choice.mechanism,
                                    sum_share=sum_share, **_mean_budget(choice))
        mean = float(np.clip(sum_answer.true_value / count_answer.true_value,
                             sum_answer.lower, sum_answer.upper))
        return ReleasePlan(spec, choice, np.array(mean), None, sum_answer, release,
                           count_answer=count_answer, sum_share=sum_share)
    lower = upper = None
    if choice.spec.needs_range:
        if answer_range is None:
            raise ValueError(f"the {choice.spec.label} mechanism needs a public "
                             "range for the answer")
        lower, upper = answer_range
    mechanism = choice.build(l1_sensitivity=answered.l1_sensitivity,
                             l2_sensitivity=answered.l2_sensitivity, lower=lower, upper=upper)
    true_value = np.asarray(answered.true_value, dtype=np.float64)
    if choice.spec.true_value_in_range:
        mechanism.bias(true_value)  # raises ValueError naming the range if the answer is outside
    return ReleasePlan(spec, choice, true_value, answered.labels, answered, mechanism)


# --------------------------------------------------------------------------------------------
# Simulated errors, binned


def error_bin_edges(low: float, high: float, *, integer: bool,
                    bins: int = ERROR_BINS) -> NDArray[np.float64]:
    """Equal-width bin edges over [low, high]; whole-number errors get bins centred on integers."""
    if not (math.isfinite(low) and math.isfinite(high) and high > low):
        raise ValueError(f"need finite low < high, got [{low}, {high}]")
    check_int("bins", bins)
    if not integer:
        return np.linspace(low, high, bins + 1)
    width = max(1, math.ceil((math.ceil(high) - math.floor(low) + 1) / bins))
    start = math.floor(low) - 0.5
    count = math.ceil((math.ceil(high) + 0.5 - start) / width)
    return start + width * np.arange(count + 1, dtype=np.float64)


@dataclass(frozen=True)
class ErrorSummary:
    """Simulated errors (noisy − true), binned, with their metrics; small enough to cache.

    Attributes
    ----------
    edges, counts : ndarray
        Bin edges and the number of errors per bin (all cells of all releases pooled).
    below, above : int
        Errors left and right of the bins.
    releases, cells : int
        Simulated releases and cells per release (1 for a count, sum or mean).
    rmse, mae, bias : float
        Root mean squared, mean absolute and mean error over every cell of every release.
    cell_rmse, cell_mae, cell_bias : ndarray
        The same per cell, shape ``(cells,)``.
    abs_error_quantiles : dict
        Confidence c → empirical c-quantile of |error| (``inverted_cdf``: the smallest error
        at least a share c of the errors do not exceed), from the first ``quantile_from``
        errors (the first block of releases: every release when there are at most
        MAX_BLOCK_ELEMENTS errors).
    within_alpha : dict
        Confidence c → share of errors within the closed-form ±alpha (empty without one).
    all_within : dict
        Confidence c → share of releases with every cell within ±(the largest alpha).
    """

    edges: NDArray[np.float64]
    counts: NDArray[np.int64]
    below: int
    above: int
    releases: int
    cells: int
    rmse: float
    mae: float
    bias: float
    cell_rmse: NDArray[np.float64]
    cell_mae: NDArray[np.float64]
    cell_bias: NDArray[np.float64]
    abs_error_quantiles: dict[float, float]
    quantile_from: int
    within_alpha: dict[float, float]
    all_within: dict[float, float] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.releases * self.cells

    @property
    def share_outside(self) -> float:
        return (self.below + self.above) / self.total

    def density(self) -> NDArray[np.float64]:
        """Share of errors per bin divided by the bin width (comparable with a density)."""
        return self.counts / (self.total * np.diff(self.edges))


def summarise_errors(draw_errors: Callable[[int], NDArray], *, trials: int, cells: int,
                     edges: ArrayLike, confidences: Sequence[float] = CONFIDENCE_OPTIONS,
                     alphas: Mapping[float, ArrayLike] | None = None) -> ErrorSummary:
    """Simulate ``trials`` releases block by block and keep only bins and metrics.

    Parameters
    ----------
    draw_errors : callable
        ``draw_errors(n)`` returns the errors of ``n`` fresh releases, shape ``(n, cells)``
        or ``(n,)`` for one cell. Called once per block of ``trial_chunks(trials, cells)``, so
        no block holds more than MAX_BLOCK_ELEMENTS errors.
    trials, cells : int
        Number of releases and of cells per release.
    edges : array_like
        Equal-width bin edges.
    confidences : sequence of float
        Levels at which the empirical quantile of |error| is kept.
    alphas : mapping, optional
        Confidence → closed-form alpha (scalar or per cell): the share of errors within it is
        counted.

    Returns
    -------
    ErrorSummary
        Bin counts, overflow counts and metrics; no raw errors are kept.
    """
    trials = check_trials(trials)
    cells = check_int("cells", cells)
    edges = np.asarray(edges, dtype=np.float64)
    alphas = {c: np.asarray(a, dtype=np.float64).reshape(-1) for c, a in (alphas or {}).items()}
    counts = np.zeros(edges.size - 1, dtype=np.int64)
    below = above = 0
    sums = np.zeros(cells)
    squares = np.zeros(cells)
    absolutes = np.zeros(cells)
    inside = dict.fromkeys(alphas, 0)
    every = dict.fromkeys(alphas, 0)
    quantiles: dict[float, float] = {}
    quantile_from = 0
    for n in trial_chunks(trials, cells):
        errors = np.asarray(draw_errors(n), dtype=np.float64).reshape(n, cells)
        flat = errors.reshape(-1)
        # Uniform bins: numpy's fast path for an integer bin count and a range.
        counts += np.histogram(flat, bins=counts.size, range=(edges[0], edges[-1]))[0]
        below += int(np.count_nonzero(flat < edges[0]))
        above += int(np.count_nonzero(flat > edges[-1]))
        sums += errors.sum(axis=0)
        squares += np.square(errors).sum(axis=0)
        size = np.abs(errors)
        absolutes += size.sum(axis=0)
        for c, alpha in alphas.items():
            inside[c] += int(np.count_nonzero(size <= alpha))
            every[c] += int(np.count_nonzero(np.all(size <= alpha.max(), axis=1)))
        if not quantiles:
            values = np.quantile(size.reshape(-1), list(confidences), method="inverted_cdf")
            quantiles = {c: float(v) for c, v in zip(confidences, values, strict=True)}
            quantile_from = size.size
    total = trials * cells
    return ErrorSummary(
        edges=edges, counts=counts, below=below, above=above, releases=trials, cells=cells,
        rmse=math.sqrt(squares.sum() / total), mae=float(absolutes.sum() / total),
        bias=float(sums.sum() / total), cell_rmse=np.sqrt(squares / trials),
        cell_mae=absolutes / trials, cell_bias=sums / trials,
        abs_error_quantiles=quantiles, quantile_from=quantile_from,
        within_alpha={c: k / total for c, k in inside.items()},
        all_within={c: k / trials for c, k in every.items()},
    )


# --------------------------------------------------------------------------------------------
# What the page shows for one mechanism


@dataclass(frozen=True)
class MechanismRun:
    """Everything the page draws for one mechanism: small arrays and sentences."""

    name: str
    label: str
    query: str
    true_value: NDArray[np.float64]
    labels: tuple[str, ...] | None
    release: NDArray[np.float64]
    summary: ErrorSummary
    alpha: dict[float, NDArray[np.float64]] | None
    density_x: NDArray[np.float64] | None
    density_y: NDArray[np.float64] | None
    integer_errors: bool
    analytic_bias: NDArray[np.float64] | None
    analytic_rmse: NDArray[np.float64] | None
    sensitivity: str
    scale: str
    explanation: str

    def alpha_at(self, confidence: float) -> tuple[float, bool]:
        """(alpha, from_closed_form): the largest closed-form alpha over the cells, else the
        simulated quantile of |error|."""
        if self.alpha is not None:
            return float(np.max(self.alpha[confidence])), True
        return self.summary.abs_error_quantiles[confidence], False


def fmt_value(x: float) -> str:
    """A number for the page: 48,842 · 1,234.5 · 269.6 · 2.996 · 0.01234; '—' if not finite."""
    x = float(x)
    if not math.isfinite(x):
        return "—"
    if abs(x) >= 1e5 or (x.is_integer() and abs(x) >= 1):
        return f"{x:,.0f}"
    if abs(x) >= 1e3:
        return f"{x:,.1f}"
    return f"{x:.4g}"


def _sensitivity_text(plan: ReleasePlan) -> tuple[str, str]:
    """(short sensitivity, why) for the add/remove-one-row neighbour relation."""
    spec, answer = plan.spec, plan.answer
    norm = plan.choice.spec.sensitivity_norm
    if spec.query == "count":
        return "1", "adding or removing one row changes the count by at most 1"
    if spec.query == "histogram":
        return "1", (f"adding or removing one row changes one category's count by 1 "
                     f"({norm} sensitivity 1; {SENSITIVITY_NORMS[norm]})")
    bound = fmt_value(answer.l1_sensitivity)
    why = (f"values are clamped to [{answer.lower:g}, {answer.upper:g}], so adding or removing "
           f"one row changes the sum by at most max(|lower|, |upper|) = {bound}")
    if spec.query == "sum":
        return bound, why
    return f"sum {bound}, count 1", why + ", and the count by at most 1"


def _scale_text(mechanism: AdditiveMechanism, choice: PrivacyChoice) -> str:
    """One line: the noise scale and where it comes from (from the kind's spec)."""
    return choices.scale_text(mechanism, choice, fmt_value).rstrip(".")


def describe_plan(plan: ReleasePlan) -> tuple[str, str, str]:
    """(sensitivity, noise scale, one-line explanation) as the page shows them.

    None of the three quotes the user's file (no column names), so they are safe as markdown.
    """
    sensitivity, why = _sensitivity_text(plan)
    if plan.closed_form:
        scale = fmt_value(plan.release.scale)
        noise = _scale_text(plan.release, plan.choice)
        return sensitivity, scale, f"Sensitivity {sensitivity}: {why}. Noise: {noise}."
    sum_mech, count_mech = plan.parts
    total = plan.release.privacy
    scale = f"sum {fmt_value(sum_mech.scale)}, count {fmt_value(count_mech.scale)}"
    explanation = (
        f"Sensitivity {sensitivity}: {why}. The mean is a noisy sum divided by a noisy count; "
        f"budget split: {plan.sum_share:.0%} to the sum ({sum_mech.privacy.describe()}, scale "
        f"{fmt_value(sum_mech.scale)}) and {1 - plan.sum_share:.0%} to the count "
        f"({count_mech.privacy.describe()}, scale {fmt_value(count_mech.scale)}); together "
        f"{total.describe()} by sequential composition.")
    return sensitivity, scale, explanation


#: The highest release number a page may show ("Draw another release" counts up from 1).
MAX_RELEASE = 10**9


def release_stream(release: int, stream: int = 0) -> list[int | str]:
    """The random stream of release number ``release`` of a seed: ``[seed, 2, 1, stream]`` for
    the first, ``[seed, 2, 1, stream, n]`` for release n > 1; ``stream`` tells the dataset and
    query apart (:func:`query_stream`)."""
    check_int("release", release, minimum=1, maximum=MAX_RELEASE)
    return ["seed", _RNG_OFFSET, 1, stream] + ([release] if release > 1 else [])


def draw_release(plan: ReleasePlan, *, seed: int, release: int,
                 stream: int = 0) -> NDArray[np.float64]:
    """Release number ``release`` of ``seed``: one noisy answer, from its own random stream
    (:func:`release_stream`), so every release of a seed can be drawn again."""
    parts = [seed if part == "seed" else part for part in release_stream(release, stream)]
    return np.asarray(plan.sample(None, np.random.default_rng(parts)), dtype=np.float64)


def run_mechanism(plan: ReleasePlan, *, trials: int, seed: int, stream: int = 0) -> MechanismRun:
    """Simulate ``trials`` releases of ``plan`` and one example release, from ``seed``.

    The simulations use the stream ``[seed, 2, 0, stream]`` and the example release
    ``[seed, 2, 1, stream]``, ``stream`` telling the dataset and query apart
    (:func:`release_stream`): two mechanisms run on one query with the same seed share their
    random numbers where they can (common random numbers make the comparison sharper).
    """
    low, high = plan.error_span()
    edges = error_bin_edges(low, high, integer=plan.integer_errors)
    alpha = None
    if plan.closed_form:
        alpha = {c: plan.accuracy(1 - c) for c in CONFIDENCE_OPTIONS}
    rng = np.random.default_rng([seed, _RNG_OFFSET, 0, stream])
    truth = plan.true_value.reshape(1, -1)

    def draw_errors(n: int) -> NDArray:
        return plan.sample(n, rng).reshape(n, -1) - truth

    summary = summarise_errors(draw_errors, trials=trials, cells=plan.cells, edges=edges,
                               alphas=alpha)
    release = draw_release(plan, seed=seed, release=1, stream=stream)
    density_x = density_y = None
    if plan.closed_form:
        if plan.integer_errors:
            density_x = np.arange(math.ceil(edges[0]), math.floor(edges[-1]) + 1, dtype=float)
            stride = max(1, density_x.size // DENSITY_POINTS)
            density_x = density_x[::stride]
        else:
            density_x = np.linspace(edges[0], edges[-1], DENSITY_POINTS)
        density_y = plan.error_density(density_x)
    sensitivity, scale, explanation = describe_plan(plan)
    return MechanismRun(
        name=mechanism_name(plan.choice.mechanism), label=plan.choice.label(),
        query=plan.spec.query, true_value=plan.true_value, labels=plan.labels,
        release=np.asarray(release, dtype=np.float64), summary=summary, alpha=alpha,
        density_x=density_x, density_y=density_y, integer_errors=plan.integer_errors,
        analytic_bias=plan.analytic_bias(), analytic_rmse=plan.analytic_rmse(),
        sensitivity=sensitivity, scale=scale, explanation=explanation,
    )


# --------------------------------------------------------------------------------------------
# Sentences and tables


def accuracy_sentence(run: MechanismRun, confidence: float) -> str:
    """e.g. '95% of releases are within ±2.996 of the true count (Laplace, closed form).'"""
    alpha, exact = run.alpha_at(confidence)
    what = {"count": "count", "sum": "sum", "mean": "mean", "histogram": "count"}[run.query]
    if exact and run.query == "histogram":
        cells = int(run.true_value.size)
        return (f"In each category, {confidence:.0%} of releases are within ±{up(alpha)} "
                f"of the true count ({run.name}, closed form). All {cells:,} categories at "
                f"once: at least {percent_down(confidence**cells)} of releases (independent noise "
                f"per category; {percent(run.summary.all_within[confidence])} of the "
                f"{run.summary.releases:,} simulated ones).")
    if exact:
        return (f"{confidence:.0%} of releases are within ±{up(alpha)} of the true "
                f"{what} ({run.name}, closed form).")
    return (f"{confidence:.0%} of the simulated releases were within ±{up(alpha)} of the "
            f"true {what} ({run.name}, Monte Carlo quantile: the noisy mean has no closed form).")


def error_chart_note(runs: Sequence[MechanismRun], confidence: float) -> str:
    """The plain-language caption under the error chart."""
    outside = max(run.summary.share_outside for run in runs)
    notes = [f"Bars: the simulated errors; line: the closed-form distribution; shaded: ±α at "
             f"{confidence:.0%}. {outside:.2%} of releases fall outside the chart."]
    if runs[0].query == "histogram":
        notes.append("Errors of every category are pooled.")
    if runs[0].query == "mean":
        notes.append("A noisy mean divides two noisy numbers and has no closed-form "
                     "distribution: only the simulation is shown, and ±α is its quantile.")
    if any(run.name == "Clamped Laplace" for run in runs):
        notes.append("Clamped releases pile up exactly at the bounds (a spike the line omits).")
    return " ".join(notes)


def metrics_table(runs: Sequence[MechanismRun], confidence: float) -> pd.DataFrame:
    """Metrics side by side, one column per mechanism (pooled over categories)."""

    def pooled(values: NDArray | None, *, root: bool = False) -> str:
        if values is None:
            return "— (no closed form)"
        if root:
            return fmt_value(math.sqrt(float(np.mean(np.square(values)))))
        return fmt_value(float(np.mean(values)))

    level = f"{confidence:.0%}"
    rows: dict[str, list[str]] = {}
    for run in runs:
        s = run.summary
        closed = run.alpha is not None
        within = s.within_alpha.get(confidence)
        column = {
            "Sensitivity (add/remove one row)": run.sensitivity,
            "Noise scale": run.scale,
            f"±α at {level}, closed form": (up(np.max(run.alpha[confidence])) if closed
                                            else "— (no closed form)"),
            f"±α at {level}, simulated quantile of |error|":
                fmt_value(s.abs_error_quantiles[confidence]),
            "Simulated releases within the closed-form ±α": (f"{within:.2%}" if within is not None
                                                            else "—"),
            "RMSE, simulated": fmt_value(s.rmse),
            "RMSE, closed form": pooled(run.analytic_rmse, root=True),
            "Mean absolute error, simulated": fmt_value(s.mae),
            "Bias, simulated": fmt_value(s.bias),
            "Bias, closed form": pooled(run.analytic_bias),
        }
        for key, value in column.items():
            rows.setdefault(key, []).append(value)
    return pd.DataFrame(rows, index=[r.label for r in runs]).T


def release_table(runs: Sequence[MechanismRun]) -> pd.DataFrame:
    """One release per mechanism next to the true counts, per category, with its error.

    The relative error is |noisy − true| / true in percent, empty where the true count is 0.
    """
    first = runs[0]
    table = pd.DataFrame({"Category": list(first.labels or ()), "True count": first.true_value})
    for run in runs:
        error = run.release - run.true_value
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(run.true_value > 0, 100 * np.abs(error) / run.true_value, np.nan)
        table[f"Noisy ({run.name})"] = np.round(run.release, 2)
        table[f"Error ({run.name})"] = np.round(error, 2)
        table[f"Relative error % ({run.name})"] = np.round(relative, 3)
    return table


def release_summary(run: MechanismRun) -> dict[str, str]:
    """One noisy release of a count, sum or mean, its absolute and relative error."""
    truth, noisy = float(run.true_value), float(run.release)
    error = abs(noisy - truth)
    relative = f"{error / abs(truth):.3%}" if truth != 0 else "— (true answer is 0)"
    return {f"One release ({run.name})": fmt_value(noisy), "Absolute error": fmt_value(error),
            "Relative error": relative}


# --------------------------------------------------------------------------------------------
# Cached wrappers (what the page calls)


@st.cache_data(show_spinner=False, max_entries=64)
def query_facts(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec) -> tuple[bool, int]:
    """(integer_valued, rows) of the query; raises ValueError/TypeError for bad bounds."""
    answered = answer_query(_frame, spec)
    answer = answered[0] if isinstance(answered, tuple) else answered
    return bool(answer.integer_valued), len(_frame)


@st.cache_data(show_spinner=False, max_entries=32)
def _simulate(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec, choice: PrivacyChoice, *,
              answer_range: tuple[float, float] | None, sum_share: float, trials: int,
              seed: int) -> MechanismRun:
    plan = make_plan(_frame, spec, choice, answer_range=answer_range, sum_share=sum_share)
    return run_mechanism(plan, trials=trials, seed=seed,
                         stream=query_stream(dataset_key, _frame, spec))


def query_stream(dataset_key: str, frame: pd.DataFrame, spec: QuerySpec) -> int:
    """The number mixed into the seed's streams for this dataset and query: the same seed
    draws other noise for another dataset, query, column or clamping range."""
    return noise_stream(dataset_key, frame, "statistics", spec.query, spec.column, spec.lower,
                        spec.upper)


@st.cache_data(show_spinner=False, max_entries=32)
def _release(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec, choice: PrivacyChoice, *,
             answer_range: tuple[float, float] | None, sum_share: float, seed: int,
             release: int) -> NDArray[np.float64]:
    plan = make_plan(_frame, spec, choice, answer_range=answer_range, sum_share=sum_share)
    return draw_release(plan, seed=seed, release=release,
                        stream=query_stream(dataset_key, _frame, spec))


def simulate_releases(frame: pd.DataFrame, dataset_key: str, spec: QuerySpec,
                      choice: PrivacyChoice, *, answer_range: tuple[float, float] | None,
                      sum_share: float, trials: int, seed: int, release: int = 1) -> MechanismRun:
    """Plan the release and simulate it (cached by every parameter, the dataset and the seed),
    showing release number ``release`` of the seed: drawing another one leaves the
    simulation as it is."""
    common = {"answer_range": answer_range, "sum_share": sum_share, "seed": seed}
    run = _simulate(frame, dataset_key, spec, choice, trials=trials, **common)
    if release == 1:
        return run
    return replace(run, release=_release(frame, dataset_key, spec, choice, release=release,
                                         **common))


# --------------------------------------------------------------------------------------------
# Downloads: the noisy release shown, and the parameters that produced it

NEIGHBOURS = "add/remove one row (one row = one person)"
#: The two sizes of a change to several released numbers at once, in plain words.
SENSITIVITY_NORMS = {
    "L1": "L1 adds up how much each released number can change, which "
          f"{choices.norm_names('L1')} noise is calibrated to",
    "L2": "L2 is the square root of the sum of the squared changes, which "
          f"{choices.norm_names('L2')} noise is calibrated to",
}


def _unique_header(name: str, taken: Sequence[str]) -> str:
    """``name``, suffixed until it differs from every header in ``taken`` (a user's column
    may be called like one of ours)."""
    while name in taken:
        name += " (category)"
    return name


def release_values(runs: Sequence[MechanismRun], spec: QuerySpec) -> pd.DataFrame:
    """The one noisy release the page shows, per mechanism (per category for a histogram).

    The true answer and the errors are left out on purpose: this file is a release, and a
    file that may be published must hold noisy values only. Values are full precision (the
    page rounds them for display).
    """
    noun = "count" if spec.query == "histogram" else spec.query
    noisy = {f"Noisy {noun} ({run.name})": np.asarray(run.release, dtype=np.float64).reshape(-1)
             for run in runs}
    if spec.query == "histogram":
        label = _unique_header(str(spec.column), list(noisy))
        first = pd.DataFrame({label: [str(c) for c in runs[0].labels or ()]})
    else:
        first = pd.DataFrame({"Query": [spec.describe()]})
    return pd.concat([first, pd.DataFrame(noisy)], axis=1)


def _privacy_fields(measure) -> dict:
    """A privacy measure as numbers (epsilon, delta or rho) and one sentence."""
    return {**{k: float(v) for k, v in asdict(measure).items()}, "guarantee": measure.describe()}


def _mechanism_fields(plan: ReleasePlan) -> dict:
    """Sensitivities, noise scale and privacy of one planned release (numbers, not text)."""
    kind = plan.choice.mechanism
    norm = plan.choice.spec.sensitivity_norm
    fields = {"mechanism": kind, "label": plan.choice.label(), "sensitivity_norm": norm,
              "noise_scale_meaning": plan.choice.spec.scale_meaning}
    if plan.closed_form:
        fields |= {"l1_sensitivity": float(plan.answer.l1_sensitivity),
                   "l2_sensitivity": float(plan.answer.l2_sensitivity),
                   "sensitivity": float(plan.release.sensitivity),
                   "noise_scale": float(plan.release.scale),
                   "privacy": _privacy_fields(plan.release.privacy)}
        if plan.choice.spec.needs_range:
            fields["answer_range"] = [float(plan.release.lower), float(plan.release.upper)]
        return fields
    # The mean: a noisy sum over a noisy count, each with its share of the budget.
    parts = {}
    for part, answer, mechanism in (("sum", plan.answer, plan.parts[0]),
                                    ("count", plan.count_answer, plan.parts[1])):
        parts[part] = {"l1_sensitivity": float(answer.l1_sensitivity),
                       "l2_sensitivity": float(answer.l2_sensitivity),
                       "sensitivity": float(mechanism.sensitivity),
                       "noise_scale": float(mechanism.scale),
                       "privacy": _privacy_fields(mechanism.privacy)}
    total = plan.release.privacy
    return fields | {"sum_share": float(plan.sum_share), **parts,
                     "privacy": _privacy_fields(total)}


def describe_release(plans: Sequence[ReleasePlan], *, dataset: str, trials: int,
                     stream: int = 0, release: int = 1) -> dict:
    """The parameters behind the page's release(s): dataset, query, measure, ε/δ/ρ, and per
    mechanism its sensitivities, noise scale and privacy; marked as a simulation, with the
    random stream the noise came from. The seed is added by the download."""
    first = plans[0]
    spec, choice = first.spec, first.choice
    random_stream = "numpy.random.default_rng([{}])".format(
        ", ".join(str(part) for part in release_stream(release, stream)))
    parameters = {
        "page": "Noisy statistics", "dataset": dataset, "query": spec.query,
        "description": spec.describe(), "column": spec.column,
        "clamping_bounds": None if spec.lower is None else [spec.lower, spec.upper],
        "neighbouring_datasets": NEIGHBOURS,
        "measure": choice.measure, "epsilon": choice.epsilon, "delta": choice.delta,
        "rho": choice.rho,
        "mechanisms": [_mechanism_fields(plan) for plan in plans],
        "simulated_releases": trials,
        "release_number": release,
        "release_random_stream": random_stream,
        SIMULATION: simulation_fields(random_stream),
    }
    if spec.query == "histogram":
        parameters["categories"] = [str(c) for c in first.labels or ()]
        parameters["categories_from"] = ("the column's public list" if spec.categories
                                         is not None else "the data (this reveals which "
                                                          "values occur)")
    return parameters


@st.cache_data(show_spinner=False, max_entries=32)
def release_parameters(_frame: pd.DataFrame, dataset_key: str, spec: QuerySpec,
                       choices: tuple[PrivacyChoice, ...], *, dataset: str,
                       answer_range: tuple[float, float] | None, sum_share: float,
                       trials: int, origins: Mapping[str, str] | None = None,
                       release: int = 1) -> dict:
    """Cached :func:`describe_release` for the page's choices (plans rebuilt, not simulated);
    ``origins`` (from :func:`declaration_origins`) says where bounds and ranges come from."""
    plans = [make_plan(_frame, spec, c, answer_range=answer_range, sum_share=sum_share)
             for c in choices]
    stream = query_stream(dataset_key, _frame, spec)
    return {**describe_release(plans, dataset=dataset, trials=trials, stream=stream,
                               release=release), **(origins or {})}
