"""Empirical privacy audits: a statistically valid lower bound on a mechanism's epsilon.

Sample a mechanism on two neighbouring inputs, count fixed events, bound the probability ratio.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore.checks import (
    MAX_DRAWS,
    _count,
    check_delta,
    check_int,
    check_probability_open,
    check_progress,
    check_rng,
    finite_array,
    trial_chunks,
)

__all__ = [
    "MAX_EVENTS",
    "Event",
    "AuditResult",
    "threshold_events",
    "category_events",
    "audit_samples",
    "audit_mechanism",
]

#: Most categories :func:`category_events` builds (one closure and one pass over the samples
#: each): beyond that, building and counting the events would take minutes.
MAX_EVENTS = 10**5

#: An event: (description, predicate mapping outputs with samples on the leading axis to a
#: boolean array with one entry per sample).
Event = tuple[str, Callable[[NDArray], NDArray[np.bool_]]]


@dataclass(frozen=True)
class AuditResult:
    """The outcome of an audit: the best lower bound on epsilon and the event behind it.

    ``p_hat`` is the empirical probability of the event on the numerator side and ``q_hat`` on
    the denominator side: P[M(x) ∈ E] and P[M(x′) ∈ E] for the direction "x vs x′", the other
    way round for "x′ vs x" (the direction is part of ``event``).
    """

    epsilon_lower_bound: float
    event: str
    p_hat: float
    q_hat: float
    samples: int
    confidence: float


def _as_array(name: str, values: object) -> NDArray:
    """Any array-like (numbers, labels, ...); ragged nesting is a TypeError naming it."""
    try:
        return np.asarray(values)
    except ValueError as exc:
        raise TypeError(f"{name} must be array-like with samples on the first axis: "
                        f"{exc}") from None


def _first_coordinate(outputs: NDArray) -> NDArray:
    outputs = np.asarray(outputs)
    if outputs.ndim <= 1:
        return outputs
    return outputs.reshape(outputs.shape[0], -1)[:, 0]


def threshold_events(thresholds: ArrayLike) -> list[Event]:
    """The events {y > t} and {y < t} for each threshold t.

    For vector outputs the events look at the first coordinate. Choose the thresholds before
    sampling (from the mechanism's scale, not from the samples) or the bound is not valid.
    """
    grid = finite_array("thresholds", thresholds, min_size=1).ravel()
    events: list[Event] = []
    for t in grid.tolist():
        events.append((f"y > {t:.6g}", lambda y, t=t: _first_coordinate(y) > t))
        events.append((f"y < {t:.6g}", lambda y, t=t: _first_coordinate(y) < t))
    return events


def category_events(n_categories: int) -> list[Event]:
    """The events {y == i} for i in range(n_categories) (outputs are integer indices).

    For vector outputs the events look at the first coordinate. At most
    :data:`MAX_EVENTS` categories: each event is counted by its own pass over the samples.
    """
    n = check_int("n_categories", n_categories, minimum=1, maximum=MAX_EVENTS)
    return [(f"y == {i}", lambda y, i=i: _first_coordinate(y) == i) for i in range(n)]


def _check_events(events: object) -> list[Event]:
    if isinstance(events, (str, bytes)) or not isinstance(events, Sequence):
        raise TypeError(f"events must be a sequence of (description, predicate) pairs, got "
                        f"{type(events).__name__}")
    if len(events) == 0:
        raise ValueError("events must contain at least one event")
    for event in events:
        if (not isinstance(event, tuple) or len(event) != 2 or not isinstance(event[0], str)
                or not callable(event[1])):
            raise TypeError("each event must be a (description, predicate) pair")
    return list(events)


def _event_counts(outputs: NDArray, events: list[Event]) -> NDArray[np.int64]:
    """How many samples (leading axis) fall in each event: one vectorized predicate per event."""
    n = outputs.shape[0]
    counts = np.empty(len(events), dtype=np.int64)
    for j, (description, predicate) in enumerate(events):
        hits = np.asarray(predicate(outputs))
        if hits.shape != (n,):
            raise ValueError(f"event {description!r} must give one boolean per sample, shape "
                             f"({n},), got shape {hits.shape}")
        counts[j] = np.count_nonzero(hits)
    return counts


def _clopper_pearson(
    successes: NDArray[np.int64], n: int, alpha: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """One-sided Clopper–Pearson bounds, each holding with probability >= 1 - alpha.

    lower = Beta(alpha; k, n - k + 1) quantile (0 when k = 0);
    upper = Beta(1 - alpha; k + 1, n - k) quantile (1 when k = n), taken with ``isf`` for
    accuracy at tiny alpha. The upper bound is > 0 for every k, so log(upper) is finite.
    """
    from scipy.stats import beta as beta_distribution  # slow to import: on first use

    k = np.asarray(successes, dtype=np.float64)
    safe_low = np.maximum(k, 1.0)  # parameters must be > 0 even where np.where discards them
    lower = np.where(k > 0, beta_distribution.ppf(alpha, safe_low, n - k + 1), 0.0)
    safe_high = np.maximum(n - k, 1.0)
    upper = np.where(k < n, beta_distribution.isf(alpha, k + 1, safe_high), 1.0)
    return lower, upper


def _audit_counts(
    counts_x: NDArray[np.int64],
    counts_xprime: NDArray[np.int64],
    samples: int,
    descriptions: list[str],
    delta: float,
    confidence: float,
) -> AuditResult:
    # 2 directions per event, each using one lower and one upper one-sided bound: the union
    # bound over all 4·len(events) one-sided bounds gives the family-wise confidence.
    alpha = (1.0 - confidence) / (4 * len(descriptions))
    low_x, up_x = _clopper_pearson(counts_x, samples, alpha)
    low_xp, up_xp = _clopper_pearson(counts_xprime, samples, alpha)
    numerator = np.concatenate([low_x, low_xp]) - delta
    denominator = np.concatenate([up_xp, up_x])
    with np.errstate(divide="ignore"):
        bounds = np.where(numerator > 0,
                          np.log(np.maximum(numerator, np.finfo(float).tiny))
                          - np.log(denominator),
                          -np.inf)
    best = int(np.argmax(bounds))
    n_events = len(descriptions)
    description = descriptions[best % n_events]
    if best < n_events:
        label = f"{description} (x vs x′)"
        p_count, q_count = counts_x[best], counts_xprime[best]
    else:
        label = f"{description} (x′ vs x)"
        p_count, q_count = counts_xprime[best - n_events], counts_x[best - n_events]
    return AuditResult(
        epsilon_lower_bound=max(float(bounds[best]), 0.0),
        event=label,
        p_hat=float(p_count) / samples,
        q_hat=float(q_count) / samples,
        samples=samples,
        confidence=confidence,
    )


def _check_audit_parameters(delta: object, confidence: object) -> tuple[float, float]:
    return check_delta("delta", delta), check_probability_open("confidence", confidence)


def audit_samples(
    outputs_x: NDArray,
    outputs_xprime: NDArray,
    events: Sequence[Event],
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
) -> AuditResult:
    """A lower bound on epsilon from outputs of a mechanism on two neighbouring inputs.

    For each event E and each direction, with p = P[M(x) ∈ E] and q = P[M(x′) ∈ E],
    (epsilon, delta)-DP requires p <= e^epsilon q + delta, so

    .. math:: \\varepsilon \\ge \\log\\frac{p - \\delta}{q}.

    p and q are replaced by a one-sided Clopper–Pearson lower bound on p and upper bound on q,
    each at level (1 - confidence) / (4·len(events)) — a Bonferroni correction over
    len(events) × 2 directions × 2 bounds — so that, with probability at least ``confidence``,
    every bound computed holds at once and the maximum reported is a valid lower bound on the
    mechanism's epsilon. An event with p_lower - delta <= 0 gives no bound (0). The result is
    never negative.

    What it proves: a bound above the claimed epsilon proves (at this confidence) that the
    mechanism does not satisfy its claim — a bug. A bound below the claim does *not* prove the
    mechanism private: only the chosen events and inputs were tried.

    The events must be fixed before the outputs are seen (choosing them from the samples
    invalidates the confidence). Both sides must hold the same number of samples (leading
    axis).

    References
    ----------
    C. J. Clopper, E. S. Pearson. "The use of confidence or fiducial limits illustrated in the
    case of the binomial." Biometrika 26(4), 1934.
    Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer. "Detecting Violations of Differential
    Privacy." CCS 2018.
    M. Jagielski, J. Ullman, A. Oprea. "Auditing Differentially Private Machine Learning: How
    Private is Private SGD?" NeurIPS 2020.
    """
    delta, confidence = _check_audit_parameters(delta, confidence)
    events = _check_events(events)
    out_x = _as_array("outputs_x", outputs_x)
    out_xp = _as_array("outputs_xprime", outputs_xprime)
    if out_x.ndim == 0 or out_xp.ndim == 0:
        raise ValueError("outputs must have the samples along a leading axis")
    samples = out_x.shape[0]
    if out_xp.shape[0] != samples:
        raise ValueError(f"outputs_x and outputs_xprime must hold the same number of samples, "
                         f"got {samples} and {out_xp.shape[0]}")
    if samples == 0:
        raise ValueError("outputs must hold at least one sample")
    if out_x.size == 0 or out_xp.size == 0:  # shape (samples, 0): nothing for events to read
        raise ValueError("outputs must hold at least one value per sample")
    return _audit_counts(
        _event_counts(out_x, events), _event_counts(out_xp, events), samples,
        [d for d, _ in events], delta, confidence,
    )


def audit_mechanism(
    release: Callable[[NDArray, np.random.Generator, int], NDArray],
    x: ArrayLike,
    x_prime: ArrayLike,
    *,
    events: Sequence[Event],
    samples: int = 10**6,
    delta: float = 0.0,
    confidence: float = 0.95,
    rng: np.random.Generator,
    progress: Callable[[float], object] | None = None,
) -> AuditResult:
    """Run ``release`` ``samples`` times on each of ``x`` and ``x_prime`` and audit the outputs.

    ``release(data, rng, n)`` must return ``n`` outputs of the mechanism on ``data``, samples
    along the leading axis. The samples are drawn in chunks (sized from the size of ``x``,
    taken as the size of one output) and only the event counts are kept, so memory stays
    bounded whatever ``samples`` is. See :func:`audit_samples` for the bound, its confidence
    and what it does and does not prove; the events are arguments, hence fixed before sampling.

    ``progress``, if given, is called after each chunk with the share of all the samples (both
    sides) drawn so far, rising to 1.0; it does not touch the random stream, so the result is
    the same with or without it.
    """
    if not callable(release):
        raise TypeError("release must be callable as release(data, rng, n)")
    progress = check_progress(progress)
    rng = check_rng(rng)
    samples = check_int("samples", samples, minimum=1)
    delta, confidence = _check_audit_parameters(delta, confidence)
    events = _check_events(events)
    data_x, data_xp = _as_array("x", x), _as_array("x_prime", x_prime)
    # Both sides together within the work bound of one call, refused before any sampling.
    per_output = max(1, data_x.size, data_xp.size)
    if 2 * samples * per_output > MAX_DRAWS:
        raise ValueError(f"samples = {_count(samples)} on each side × {per_output:,} values "
                         f"per output is more than the {MAX_DRAWS:,} draws one audit may make: "
                         f"ask for at most {max(1, MAX_DRAWS // (2 * per_output)):,} samples")
    counts = {"x": np.zeros(len(events), dtype=np.int64),
              "x'": np.zeros(len(events), dtype=np.int64)}
    drawn = 0
    for side, data in (("x", data_x), ("x'", data_xp)):
        for chunk in trial_chunks(samples, max(1, data.size)):
            outputs = _as_array("the release's outputs", release(data, rng, chunk))
            if outputs.ndim == 0 or outputs.shape[0] != chunk or outputs.size == 0:
                raise ValueError(f"release must return {chunk} outputs along the leading axis, "
                                 f"got shape {outputs.shape}")
            counts[side] += _event_counts(outputs, events)
            drawn += chunk
            progress(drawn / (2 * samples))
    return _audit_counts(counts["x"], counts["x'"], samples, [d for d, _ in events], delta,
                         confidence)

