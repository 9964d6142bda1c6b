"""Noisy statistics, simulated errors: binned into small histograms with their metrics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dashboard.analysis.stats_query import CONFIDENCE_OPTIONS
from dpcore.checks import check_int, check_trials, trial_chunks

#: Bins of the simulated error histogram.
ERROR_BINS = 60

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
    at_low, at_high : int
        Errors exactly at the clamped ends (``clamped_errors``): releases raised to the lower
        bound or lowered to the upper one (0 when nothing is clamped).
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
    at_low: int = 0
    at_high: int = 0

    @property
    def total(self) -> int:
        return self.releases * self.cells

    @property
    def share_outside(self) -> float:
        return (self.below + self.above) / self.total

    @property
    def share_clamped(self) -> tuple[float, float]:
        """(share at the lower bound, share at the upper bound) of all errors."""
        return self.at_low / self.total, self.at_high / self.total

    def density(self) -> NDArray[np.float64]:
        """Share of errors per bin divided by the bin width (comparable with a density)."""
        return self.counts / (self.total * np.diff(self.edges))


def summarise_errors(draw_errors: Callable[[int], NDArray], *, trials: int, cells: int,
                     edges: ArrayLike, confidences: Sequence[float] = CONFIDENCE_OPTIONS,
                     alphas: Mapping[float, ArrayLike] | None = None,
                     clamped_errors: tuple[float, float] | None = None) -> ErrorSummary:
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
    clamped_errors : (float, float), optional
        The errors of a release clamped to the lower and to the upper bound (bound − true
        value, one cell): how many errors equal each is counted.

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
    at_low = at_high = 0
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
        if clamped_errors is not None:
            at_low += int(np.count_nonzero(flat == clamped_errors[0]))
            at_high += int(np.count_nonzero(flat == clamped_errors[1]))
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
        at_low=at_low, at_high=at_high,
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
    #: The range the released value is clamped to (a mean's bounds), else None.
    clamped_to: tuple[float, float] | None = None
    #: Per confidence, (lower, upper) for the true value behind ``release`` from the noise's
    #: law and public parameters, as a release computes it (``analysis.intervals``); None
    #: where the query's kind gives none (a variance).
    intervals: dict[float, tuple[NDArray[np.float64], NDArray[np.float64]]] | None = None
    #: How the intervals are computed (a key of ``dpcore.intervals.METHODS``; "" for none).
    interval_method: str = ""
    #: (name, noisy value) of each part ``release`` is post-processed from, when it is made
    #: of several (a mean's noisy sum and count: the mechanism's own output)
    release_parts: tuple[tuple[str, float], ...] = ()

    def alpha_at(self, confidence: float) -> tuple[float, bool]:
        """(alpha, from_closed_form): the largest closed-form alpha over the cells, else the
        simulated quantile of |error|."""
        if self.alpha is not None:
            return float(np.max(self.alpha[confidence])), True
        return self.summary.abs_error_quantiles[confidence], False
