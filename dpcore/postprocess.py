"""Post-processing of noisy answers: non-negativity, rounding, matching a total, table errors.

Post-processing never costs privacy; every function is vectorized over trials (leading axis).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import check_int, finite_array

__all__ = [
    "clip_negative",
    "round_counts",
    "rescale_to_total",
    "round_to_total",
    "publish",
    "table_errors",
]


def clip_negative(noisy: ArrayLike) -> NDArray[np.float64]:
    """Noisy values with negatives set to 0 (a count cannot be negative).

    Clipping removes impossible values and lowers the error of every negative cell, but biases
    small counts upwards.
    """
    return np.maximum(finite_array("noisy", noisy), 0.0)


def round_counts(noisy: ArrayLike) -> NDArray[np.float64]:
    """Noisy values rounded to the nearest integer (halves to even), as float64.

    Float64 keeps one dtype with the other steps and holds any count up to 2**53 exactly.
    """
    return np.rint(finite_array("noisy", noisy))


def _table_layout(
    cells: NDArray[np.float64], total: NDArray[np.float64], table_ndim: int | None
) -> tuple[tuple[int, ...], tuple[int, ...], NDArray[np.float64]]:
    """(shape of the leading trial axes, table axes, total broadcast to the trial axes)."""
    if cells.ndim == 0:
        raise ValueError("noisy must be a table (at least 1-d), got a scalar")
    if table_ndim is None:
        table_ndim = cells.ndim - total.ndim
    table_ndim = check_int("table_ndim", table_ndim, minimum=1, maximum=cells.ndim)
    lead_shape = cells.shape[: cells.ndim - table_ndim]
    if cells.size == 0:
        raise ValueError("noisy must have at least one cell per table")
    try:
        per_table = np.broadcast_to(total, lead_shape)
    except ValueError:
        raise ValueError(
            f"total of shape {total.shape} does not match the {len(lead_shape)} leading trial "
            f"axes {lead_shape} of noisy (shape {cells.shape}, table_ndim={table_ndim})"
        ) from None
    axes = tuple(range(cells.ndim - table_ndim, cells.ndim))
    return lead_shape, axes, per_table


def rescale_to_total(
    noisy: ArrayLike, total: ArrayLike, *, table_ndim: int | None = None
) -> NDArray[np.float64]:
    """Non-negative cells scaled so that each table sums to ``total``.

    The table is the last ``table_ndim`` axes of ``noisy``; the axes before them are trials.
    By default ``table_ndim = noisy.ndim - total.ndim``: a scalar total makes all of ``noisy``
    one table, a total of shape ``(trials,)`` gives each trial's table its own (noisy) total.
    Pass ``table_ndim`` to apply one total to every trial.

    Negative cells are set to 0 first (scaling needs non-negative cells) and a negative total
    counts as 0. A table whose cells are all 0 has no proportions to keep: the total is then
    spread evenly over its cells.
    """
    cells = clip_negative(noisy)
    total_arr = np.maximum(finite_array("total", total), 0.0)
    lead_shape, axes, per_table = _table_layout(cells, total_arr, table_ndim)
    target = per_table.reshape(lead_shape + (1,) * len(axes))
    # Shares first, each table divided by its largest cell: the sum cannot overflow (1e308
    # twice), and share × target cannot underflow where target / sum would.
    peak = cells.max(axis=axes, keepdims=True)
    positive = peak > 0
    shares = cells / np.where(positive, peak, 1.0)
    sums = shares.sum(axis=axes, keepdims=True)
    n_cells = int(np.prod([cells.shape[a] for a in axes]))
    scaled = np.where(positive, shares / np.where(positive, sums, 1.0) * target,
                      target / n_cells)
    # Cells rounded up by an ulp each can sum past float64's largest value when the total is
    # within a few ulps of it: a table that "sums to total" must not sum to inf.
    with np.errstate(over="ignore"):
        if not np.all(np.isfinite(scaled.sum(axis=axes))):
            raise ValueError(f"total = {np.max(per_table):g} is too close to the largest "
                             f"float64: the rescaled cells would sum to inf")
    return scaled


def round_to_total(
    noisy: ArrayLike, total: ArrayLike, *, table_ndim: int | None = None
) -> NDArray[np.float64]:
    """Non-negative integer cells that sum exactly to the rounded total.

    The total is rounded to the nearest integer (a negative total counts as 0), the cells are
    rescaled to it (:func:`rescale_to_total`), then rounded by the largest-remainder method:
    every cell is rounded down and the units still missing go, one each, to the cells with the
    largest fractional parts (ties to the earlier cell). Plain rounding would not keep the sum.
    Axes as in :func:`rescale_to_total`.
    """
    cells = clip_negative(noisy)
    total_arr = np.rint(np.maximum(finite_array("total", total), 0.0))
    lead_shape, axes, target = _table_layout(cells, total_arr, table_ndim)
    scaled = rescale_to_total(cells, total_arr, table_ndim=len(axes))
    flat = scaled.reshape(lead_shape + (-1,))
    floors = np.floor(flat)
    missing_units = np.clip(np.rint(target - floors.sum(axis=-1)), 0, flat.shape[-1])
    # Rank of each cell by fractional part, largest first, within its own table.
    order = np.argsort(floors - flat, axis=-1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(flat.shape[-1]), order.shape),
                      axis=-1)
    rounded = floors + (rank < missing_units[..., None])
    return rounded.reshape(scaled.shape)


def publish(
    noisy: ArrayLike,
    *,
    clip: bool = True,
    round: bool = True,  # shadows the builtin: it is the user's word for the step
    total: ArrayLike | None = None,
    table_ndim: int | None = None,
) -> NDArray[np.float64]:
    """Noisy counts made publishable by the chosen steps, always in this order:

    1. clip negative cells to 0 (``clip``);
    2. when ``total`` is given, rescale the cells so each table sums to it
       (:func:`rescale_to_total`; this needs non-negative cells, so it requires ``clip``);
    3. round to integers (``round``): to the nearest integer without a total
       (:func:`round_counts`), by the largest-remainder method with one, so that the
       integers still sum exactly to the rounded total (:func:`round_to_total`).

    Clipping comes first because rescaling needs non-negative cells, and rounding comes last
    so that it is not undone by the other steps. The total may itself be a noisy count (it
    then costs its own budget) or a public figure.
    """
    if not isinstance(clip, bool) or not isinstance(round, bool):
        raise TypeError("clip and round must be True or False")
    if total is None:
        values = finite_array("noisy", noisy)
        if clip:
            values = clip_negative(values)
        return round_counts(values) if round else values
    if not clip:
        raise ValueError("rescaling to a total needs non-negative cells: use clip=True with "
                         "total, or total=None")
    if round:
        return round_to_total(noisy, total, table_ndim=table_ndim)
    return rescale_to_total(noisy, total, table_ndim=table_ndim)


def table_errors(true: ArrayLike, published: ArrayLike) -> dict[str, NDArray[np.float64]]:
    """The L1 error of each published table against the true one.

    ``published`` has shape ``true.shape`` or ``(trials, *true.shape)``. Returns

    - ``"l1_error"``: the sum over cells of ``|published - true|``, per trial;
    - ``"relative_l1_error_percent"``: that error as a percentage of the true table's total
      (the sum of its absolute cells); NaN when the true total is 0.

    Each value is a 0-d array (one table) or has shape ``(trials,)``.
    """
    truth = finite_array("true", true)
    released = finite_array("published", published)
    table_shape = truth.shape
    if released.shape[released.ndim - truth.ndim:] != table_shape or released.ndim < truth.ndim:
        raise ValueError(
            f"published must have shape {table_shape} or (trials, *{table_shape}), "
            f"got {released.shape}"
        )
    axes = tuple(range(released.ndim - truth.ndim, released.ndim))
    magnitude = np.abs(truth)
    with np.errstate(over="ignore"):
        l1 = np.abs(released - truth).sum(axis=axes)
        true_total = float(magnitude.sum())
    if not np.all(np.isfinite(l1)):
        raise ValueError("published is so far from true that the L1 error overflows float64")
    if true_total > 0:
        # Relative to the largest |cell| (a sum of shares <= 1 cannot overflow), then percent.
        peak = float(magnitude.max())
        with np.errstate(over="ignore"):
            relative = 100.0 * (l1 / peak) / float((magnitude / peak).sum())
        if not np.all(np.isfinite(relative)):
            raise ValueError(f"the relative error of published against true (total "
                             f"{true_total:g}) overflows float64")
    else:
        relative = np.full_like(np.asarray(l1, dtype=np.float64), np.nan)
    return {
        "l1_error": np.asarray(l1, dtype=np.float64),
        "relative_l1_error_percent": np.asarray(relative, dtype=np.float64),
    }
