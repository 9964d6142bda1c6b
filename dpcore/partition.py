"""Partition selection: release a group only if its noisy count clears a threshold.

The threshold from ε (or ρ), δ and the contribution bounds; the exact probability that a group of
n rows is kept; the δ it costs; and simulated releases.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtr, ndtri

from dpcore.checks import (
    check_choice,
    check_delta,
    check_finite,
    check_int,
    check_positive,
    check_returned_size,
    check_rng,
    check_trials,
    finite_array,
    trial_chunks,
)
from dpcore.contributions import MAX_BOUND
from dpcore.measures import ZCDP, ApproxDP, PureDP, zcdp_epsilon
from dpcore.mechanisms.gaussian import Gaussian
from dpcore.mechanisms.geometric import Geometric
from dpcore.mechanisms.laplace import Laplace

__all__ = [
    "PARTITION_NOISES",
    "PARTITION_LAWS",
    "PartitionPrivacy",
    "PartitionRelease",
    "partition_scale",
    "partition_delta",
    "partition_threshold",
    "partition_privacy",
    "keep_probability",
    "release_partitions",
]

#: Noises partition selection can add to the counts: continuous Laplace and Gaussian (what
#: simulations add), and the discrete Laplace OpenDP adds to integer counts in a real release.
PARTITION_NOISES = ("laplace", "discrete_laplace", "gaussian")
#: The catalogue's mechanism class with the law of each noise on a count (its intervals:
#: ``plan.kinds.base``), built as ``PARTITION_LAWS[noise](sensitivity=1.0, scale=scale)``.
PARTITION_LAWS = {"laplace": Laplace, "discrete_laplace": Geometric, "gaussian": Gaussian}

# A survival probability or delta computed in float64 is within a few ulps of the exact value;
# privacy figures are raised by this factor (and an ulp) so that they never round down.
_ROUND_UP = 1 + 2.0**-48


def _up(x: float) -> float:
    return min(1.0, math.nextafter(x * _ROUND_UP, math.inf)) if x > 0 else 0.0


# ----------------------------------------------------------------------------------------------
# validation


def _check_noise(noise: object) -> str:
    return check_choice("noise", noise, PARTITION_NOISES)


def _check_contribution(max_rows: object, max_groups: object) -> tuple[int, int]:
    return (check_int("max_rows", max_rows, maximum=MAX_BOUND),
            check_int("max_groups", max_groups, maximum=MAX_BOUND))


def _check_threshold(threshold: object) -> float:
    return check_finite("threshold", threshold)


def _step_until(value: float, too_small, noise: str, scale: float, what: str) -> float:
    """Raise ``value`` until ``too_small(value)`` is False: by one integer for discrete noise,
    else by a relative 2^-50, doubling the step each time (float rounding needs a step or two;
    the doubling bounds the loop whatever happens)."""
    step = 1.0 if noise == "discrete_laplace" else max(abs(value), scale) * 2.0**-50
    step = max(step, float(np.spacing(value)))
    for _ in range(2000):
        if not too_small(value):
            return value
        value += step
        step *= 2
        if not math.isfinite(value):
            break
    raise ValueError(f"{what} is beyond float64 for this scale")


# ----------------------------------------------------------------------------------------------
# the noise's survival function P(Z >= t) and its inverse, vectorised


def _discrete_tail(j: NDArray[np.float64], scale: float) -> NDArray[np.float64]:
    """P(Z >= j) for integer j >= 1, Z discrete Laplace with P(z) ∝ exp(−|z|/scale):
    e^{−j/b} / (1 + e^{−1/b})."""
    return np.exp(-j / scale) / (1.0 + math.exp(-1.0 / scale))


def _survival(t: NDArray[np.float64], noise: str, scale: float) -> NDArray[np.float64]:
    """P(Z >= t) for the noise Z of the given scale, elementwise."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore", under="ignore"):
        if noise == "gaussian":
            return ndtr(-t / scale)
        if noise == "laplace":
            # ½e^{−t/b} for t >= 0, 1 − ½e^{t/b} below: each branch evaluated where it is small
            half_tail = 0.5 * np.exp(-np.abs(t) / scale)
            return np.where(t >= 0, half_tail, 1.0 - half_tail)
        j = np.ceil(t)  # Z is an integer: Z >= t iff Z >= ceil(t)
        upper = _discrete_tail(np.maximum(j, 1.0), scale)
        lower = 1.0 - _discrete_tail(np.maximum(1.0 - j, 1.0), scale)  # P(Z >= j), j <= 0
        return np.where(j >= 1, upper, lower)


def _inverse_survival(p: float, noise: str, scale: float) -> float:
    """The smallest t with P(Z >= t) <= p (an integer for discrete noise), 0 < p < 1."""
    if noise == "gaussian":
        t = -scale * float(ndtri(p))
    elif noise == "laplace":
        t = -scale * math.log(2 * p) if p <= 0.5 else scale * math.log(2 * (1 - p))
    else:
        norm = 1.0 + math.exp(-1.0 / scale)
        if p <= 1.0 / norm:  # the answer is >= 1: e^{−j/b} <= p·norm
            t = max(1.0, -scale * math.log(p * norm))
        else:  # j <= 0: 1 − e^{−(1−j)/b}/norm <= p
            t = 1.0 + scale * math.log((1 - p) * norm)
        if math.isfinite(t):
            t = float(math.ceil(t))
    if not math.isfinite(t):
        raise ValueError("the threshold is beyond float64 for this scale and delta: lower "
                         "the scale")
    return _step_until(t, lambda v: float(_survival(np.array(v), noise, scale)) > p, noise,
                       scale, "the threshold")


# ----------------------------------------------------------------------------------------------
# privacy


def partition_scale(
    *,
    noise: str,
    max_rows: int = 1,
    max_groups: int = 1,
    epsilon: float | None = None,
    rho: float | None = None,
) -> float:
    """The noise scale that spends ``epsilon`` (Laplace noises) or ``rho`` (Gaussian) on the
    counts, when one person keeps at most ``max_rows`` rows in each of ``max_groups`` groups.

    Laplace and discrete Laplace: scale b = k·r / ε (L1 sensitivity k·r). Gaussian: standard
    deviation σ = √k·r / √(2ρ) (L2 sensitivity √k·r, ρ-zCDP). Rounded so the privacy spent
    never exceeds the target.

    Parameters
    ----------
    noise : {"laplace", "discrete_laplace", "gaussian"}
    max_rows : int
        r, the most rows one person keeps in a group (>= 1).
    max_groups : int
        k, the most groups one person keeps rows in (>= 1).
    epsilon : float
        For Laplace noises: ε > 0 (give ``rho`` for Gaussian noise instead).
    rho : float
        For Gaussian noise: ρ > 0.

    Returns
    -------
    float
    """
    noise = _check_noise(noise)
    r, k = _check_contribution(max_rows, max_groups)
    if noise == "gaussian":
        if epsilon is not None:
            raise ValueError("epsilon is for Laplace noise: give rho for Gaussian noise")
        if rho is None:
            raise ValueError("rho is required for Gaussian noise")
        rho = check_positive("rho", rho)
        scale, budget, what = r * math.sqrt(k / (2 * rho)), rho, "rho"
    else:
        if rho is not None:
            raise ValueError("rho is for Gaussian noise: give epsilon for Laplace noise")
        if epsilon is None:
            raise ValueError("epsilon is required for Laplace noise")
        epsilon = check_positive("epsilon", epsilon)
        scale, budget, what = k * r / epsilon, epsilon, "epsilon"
    scale *= 1 + 2.0**-46  # the loss is rounded up by 2^-48: start just above it
    if not (0 < scale < math.inf and 0 < _noise_privacy(noise, scale, r, k) < math.inf):
        raise ValueError(f"{what} is too small or too large: the noise scale is no positive "
                         "finite number in float64")
    for _ in range(64):
        if _noise_privacy(noise, scale, r, k) <= budget:
            return scale
        scale = math.nextafter(scale * (1 + 2.0**-50), math.inf)
    raise ValueError(f"{what} = {budget:g} has no noise scale in float64")  # pragma: no cover


def _noise_privacy(noise: str, scale: float, r: int, k: int) -> float:
    """ε = k·r/b (Laplace noises) or ρ = k·r²/(2σ²) (Gaussian), rounded up."""
    if noise == "gaussian":
        ratio = r / scale
        return math.nextafter(k * ratio * ratio / 2 * _ROUND_UP, math.inf)
    return math.nextafter(k * r / scale * _ROUND_UP, math.inf)


def partition_delta(
    threshold: float,
    *,
    noise: str,
    scale: float,
    max_rows: int = 1,
    max_groups: int = 1,
) -> float:
    """The δ partition selection costs: k · P(Z ≥ T − r), rounded up (at most 1).

    A group that only one person's rows make (the others lack it) holds at most r rows of that
    person; releasing it at all reveals the person, which happens with probability
    P(r + Z ≥ T) = P(Z ≥ T − r), and the person can make at most k such groups. This is the
    δ of OpenDP's ``make_laplace_threshold`` / ``make_gaussian_threshold`` map with
    d_in = (k, k·r, r) and of Rogers (2023); for integer counts and discrete noise OpenDP 0.16
    reports P(Z > T − r) instead, one integer step too small (opendp/opendp#2922): this
    function counts the mass at T − r too.

    Parameters
    ----------
    threshold : float
        T: a group is kept when its noisy count is >= T.
    noise : {"laplace", "discrete_laplace", "gaussian"}
    scale : float
        Laplace scale b, or Gaussian standard deviation σ.
    max_rows, max_groups : int
        r and k, as in :func:`partition_scale`.

    Returns
    -------
    float

    References
    ----------
    R. Rogers. "A Unifying Privacy Analysis Framework for Unknown Domain Algorithms in
    Differential Privacy." arXiv:2309.09170, 2023.
    S. Gopi, P. Gulhane, J. Kulkarni, J. H. Shen, M. Shokouhi, S. Yekhanin. "Differentially
    Private Set Union." ICML 2020.
    """
    threshold = _check_threshold(threshold)
    noise = _check_noise(noise)
    scale = check_positive("scale", scale)
    r, k = _check_contribution(max_rows, max_groups)
    tail = float(_survival(np.array(threshold - r), noise, scale))
    return _up(k * tail)


def _outward_delta(threshold: float, noise: str, scale: float, r: int, k: int) -> float:
    """An upper bound on the δ that any evaluation rounding each step outward, as OpenDP 0.16's
    threshold maps do, can report for this threshold (always >= :func:`partition_delta`).

    OpenDP computes one group's tail δ₁ and then 1 − (1 − δ₁)^k, in float64:

    - δ₁: for Laplace noises a float64 exp of −(T − r)/b and a division, each rounded up
      (relative error below 2^-50; dpcore's own tail, its argument computed in float64,
      is within (T − r)/b · 2^-52 <= 745 · 2^-52 < 2^-42 of the exact one: a factor
      1 + 2^-40 covers both). For integer counts OpenDP's δ₁ is one step short of dpcore's
      (opendp/opendp#2922), so dpcore's tail bounds it too. For Gaussian noise OpenDP rounds
      t = (T − r)/(σ√2) down to float32 (t·(1 − 2^-22) at worst) and takes erfc(t) to 3
      float32 ulps (a factor 1 + 3·2^-23): the tail at (T − r)(1 − 2^-21), times 1 + 2^-20.
      (On floats OpenDP counts on a grid of 2^-1074: the shift it adds to T − r is far
      inside these factors.)
    - 1 − δ₁ rounded down is at least 1 − δ₁ − 2^-53 (the spacing of floats below 1);
      raising it to the power k with any k roundings down loses at most k·2^-52; and
      1 − (1 − x)^k <= k·x. So δ <= (k·(δ₁ + 2^-53) + k·2^-52), rounded up once more.
    """
    gap = threshold - r
    if noise == "gaussian":
        tail = float(_survival(np.array(gap * (1 - 2.0**-21) if gap > 0 else gap), noise,
                               scale)) * (1 + 2.0**-20)
    else:
        tail = float(_survival(np.array(gap), noise, scale)) * (1 + 2.0**-40)
    total = (k * (tail + 2.0**-53) + k * 2.0**-52) * (1 + 2.0**-50)
    return min(1.0, math.nextafter(total, math.inf))


def partition_threshold(
    *,
    noise: str,
    scale: float,
    delta: float,
    max_rows: int = 1,
    max_groups: int = 1,
) -> float:
    """The smallest threshold T whose δ is at most ``delta``, both as dpcore counts it
    (:func:`partition_delta`) and as OpenDP's map may read it after its outward rounding.

    Laplace: T = r + b·ln(k / (2δ)) (when δ/k <= ½); discrete Laplace: the smallest integer T
    with k·e^{−(T−r)/b}/(1 + e^{−1/b}) <= δ; Gaussian: T = r + σ·Φ⁻¹(1 − δ/k). Then raised
    until :func:`partition_delta` (rounded up) and a bound on every outward-rounded reading of
    it (OpenDP 0.16's, which quantises each group's δ to 2^-53 and takes the Gaussian tail
    through float32; see ``_outward_delta``) are at most ``delta``: a release's map check
    never refuses the threshold the page shows. The margin moves T by about 2^-20 of σ for
    Gaussian noise and by far less for the others, unless δ/k nears 2^-52.

    Parameters
    ----------
    noise, scale, max_rows, max_groups
        As in :func:`partition_delta`.
    delta : float
        The δ the threshold may spend, 0 < δ < 1; at least 3k·2^-53 (no float64 evaluation of
        OpenDP's map can certify less for k groups).

    Returns
    -------
    float
    """
    noise = _check_noise(noise)
    scale = check_positive("scale", scale)
    delta = check_delta("delta", delta, allow_zero=False)
    r, k = _check_contribution(max_rows, max_groups)
    floor = _outward_delta(math.inf, noise, scale, r, k)   # what rounding alone costs
    if not floor < delta:
        raise ValueError(f"delta = {delta:g} is too small for {k:,} groups per person: "
                         f"OpenDP's float64 arithmetic cannot certify less than about "
                         f"{floor:.2g}; raise delta or lower max_groups")
    # aim below what is left of delta/k after the rounding terms, so that the bound fits
    per_group = (delta / (1 + 2.0**-48) - floor) / k / _ROUND_UP / (1 + 2.0**-40)
    if not per_group > 0:
        raise ValueError(f"delta = {delta:g} over {k:,} groups underflows float64")
    threshold = r + _inverse_survival(per_group, noise, scale)
    if not math.isfinite(threshold):
        raise ValueError("the threshold is beyond float64: scale is too large")

    def too_small(t: float) -> bool:
        return (partition_delta(t, noise=noise, scale=scale, max_rows=r, max_groups=k) > delta
                or _outward_delta(t, noise, scale, r, k) > delta)

    return _step_until(threshold, too_small, noise, scale, "the threshold")


@dataclass(frozen=True)
class PartitionPrivacy:
    """What partition selection spends: the noise on the released counts, and the threshold's δ.

    ``measure`` is PureDP(ε) for Laplace noises and ZCDP(ρ) for Gaussian noise; ``delta`` is
    the probability, at most, that a group only one person makes is released. Together:
    (ε, δ)-DP, or δ-approximate ρ-zCDP (Bun & Steinke 2016), hence (ε(ρ, δ′), δ + δ′)-DP for
    every δ′ > 0 (:meth:`to_approx`).
    """

    measure: PureDP | ZCDP
    delta: float

    def __post_init__(self) -> None:
        if not isinstance(self.measure, PureDP | ZCDP):
            raise TypeError(f"measure must be PureDP or ZCDP, got "
                            f"{type(self.measure).__name__}")
        object.__setattr__(self, "delta", check_delta("delta", self.delta))

    def to_approx(self, delta_noise: float = 0.0) -> ApproxDP:
        """(ε, δ + δ′)-DP. Laplace noise: ε itself (δ′ may be 0). Gaussian noise: ε from ρ at
        δ′ = ``delta_noise`` > 0 (the CKS 2020 conversion)."""
        extra = check_delta("delta_noise", delta_noise)
        total = self.delta + extra
        if not total < 1:
            raise ValueError(f"delta + delta_noise must be < 1, got {total:g}")
        if isinstance(self.measure, PureDP):
            return ApproxDP(self.measure.epsilon, _up(total) if extra else self.delta)
        if extra == 0:
            raise ValueError("delta_noise must be > 0 to read a zCDP guarantee as (ε, δ)")
        return ApproxDP(zcdp_epsilon(self.measure.rho, extra), min(_up(total), 1 - 2**-53))


def partition_privacy(
    *,
    noise: str,
    scale: float,
    threshold: float,
    max_rows: int = 1,
    max_groups: int = 1,
) -> PartitionPrivacy:
    """The privacy of partition selection with this noise, scale and threshold.

    Laplace noises: ε = k·r/b; Gaussian: ρ = k·r²/(2σ²) (rounded up); δ from
    :func:`partition_delta`. A threshold so low that δ reaches 1 is refused.

    Parameters
    ----------
    noise, scale, threshold, max_rows, max_groups
        As in :func:`partition_delta`.

    Returns
    -------
    PartitionPrivacy
    """
    noise = _check_noise(noise)
    scale = check_positive("scale", scale)
    threshold = _check_threshold(threshold)
    r, k = _check_contribution(max_rows, max_groups)
    delta = partition_delta(threshold, noise=noise, scale=scale, max_rows=r, max_groups=k)
    if not delta < 1:
        raise ValueError(f"threshold = {threshold:g} is too low: a group one person makes is "
                         "released almost surely (delta = 1); raise it")
    loss = _noise_privacy(noise, scale, r, k)
    if not 0 < loss < math.inf:
        raise ValueError("scale is too small or too large: the privacy loss of the noise is "
                         "no positive finite number in float64")
    measure = ZCDP(loss) if noise == "gaussian" else PureDP(loss)
    return PartitionPrivacy(measure=measure, delta=delta)


# ----------------------------------------------------------------------------------------------
# accuracy and simulation


def _check_counts(counts: ArrayLike) -> NDArray[np.float64]:
    arr = finite_array("counts", counts)
    if arr.ndim > 1:
        raise ValueError(f"counts must be one number or one-dimensional, got shape {arr.shape}")
    if np.any(arr < 0):
        raise ValueError("counts must be >= 0 (rows in a group after contribution bounds)")
    return arr


def keep_probability(
    counts: ArrayLike,
    *,
    threshold: float,
    noise: str,
    scale: float,
) -> NDArray[np.float64]:
    """The exact probability that a group of n rows is released: P(n + Z ≥ T).

    Closed forms, vectorised over n: Laplace ½e^{−(T−n)/b} (n <= T) or 1 − ½e^{(T−n)/b};
    discrete Laplace, with j = ⌈T − n⌉, e^{−j/b}/(1 + e^{−1/b}) for j >= 1 and
    1 − e^{−(1−j)/b}/(1 + e^{−1/b}) for j <= 0; Gaussian Φ((n − T)/σ).

    Parameters
    ----------
    counts : array_like
        n >= 0 for each group (after contribution bounds), one number or a vector.
    threshold, noise, scale
        As in :func:`partition_delta`.

    Returns
    -------
    ndarray of float64, the shape of ``counts``
    """
    n = _check_counts(counts)
    threshold = _check_threshold(threshold)
    noise = _check_noise(noise)
    scale = check_positive("scale", scale)
    with np.errstate(over="ignore", invalid="ignore"):
        gap = threshold - n
    if not np.all(np.isfinite(gap)):
        raise ValueError("threshold − counts overflows float64: counts or threshold too large")
    return _survival(gap, noise, scale)


@dataclass(frozen=True, eq=False)
class PartitionRelease:
    """Simulated releases: which groups were kept, and their noisy counts.

    Arrays of shape (groups,) for one release or (trials, groups), in the order of the counts
    given. ``noisy_counts`` holds every group's noisy count, kept or not: only those with
    ``kept`` True are published; the others are shown only to explain what was dropped.
    """

    kept: NDArray[np.bool_]
    noisy_counts: NDArray[np.float64]


def _draw(noise: str, scale: float, size: tuple[int, ...],
          rng: np.random.Generator) -> NDArray[np.float64]:
    if noise == "laplace":
        return rng.laplace(0.0, scale, size=size)
    if noise == "gaussian":
        return rng.normal(0.0, scale, size=size)
    # discrete Laplace: the difference of two geometric variables on {1, 2, ...} with success
    # probability 1 − e^{−1/b} has P(z) ∝ e^{−|z|/b}
    if scale > 2.0**40:  # the geometric's mean leaves int64; the steps are 1e-12 of the scale
        return np.round(rng.laplace(0.0, scale, size=size))
    p = -math.expm1(-1.0 / scale)
    first = rng.geometric(p, size=size).astype(np.float64)
    return first - rng.geometric(p, size=size)


def release_partitions(
    counts: ArrayLike,
    *,
    threshold: float,
    noise: str,
    scale: float,
    trials: int | None = None,
    rng: np.random.Generator,
) -> PartitionRelease:
    """Simulate partition selection: add noise to every group's count, keep those >= T.

    Parameters
    ----------
    counts : array_like, shape (groups,)
        Each group's count after contribution bounds (>= 0).
    threshold, noise, scale
        As in :func:`partition_delta`.
    trials : int, optional
        Independent releases to simulate (on a leading axis); None for one.
    rng : numpy.random.Generator

    Returns
    -------
    PartitionRelease
    """
    n = _check_counts(counts)
    if n.ndim != 1:
        raise ValueError("counts must be one-dimensional (one count per group)")
    threshold = _check_threshold(threshold)
    noise = _check_noise(noise)
    scale = check_positive("scale", scale)
    trials = check_trials(trials)
    rng = check_rng(rng)
    runs = 1 if trials is None else trials
    chunks = trial_chunks(runs, n.size)
    check_returned_size(runs, n.size)
    noisy = np.empty((runs, n.size))
    start = 0
    with np.errstate(over="ignore", invalid="ignore"):  # refused just below
        for chunk in chunks:
            noisy[start:start + chunk] = n + _draw(noise, scale, (chunk, n.size), rng)
            start += chunk
    if not np.all(np.isfinite(noisy)):
        raise ValueError("scale is too large: noisy counts overflow float64")
    kept = noisy >= threshold
    if trials is None:
        return PartitionRelease(kept=kept[0], noisy_counts=noisy[0])
    return PartitionRelease(kept=kept, noisy_counts=noisy)
