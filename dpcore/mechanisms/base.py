"""The mechanism base class and the spec every catalogue entry carries.

Shared helpers for calibrating a noise scale and checking values live here too; each mechanism
family's file holds its classes, its maths and its :class:`MechanismSpec`.
"""

from __future__ import annotations

import copy
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from dpcore import checks
from dpcore.checks import (
    check_delta,
    check_positive,
    check_probability_open,
    check_rng,
    check_trials,
    finite_array,
    numeric_array,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP, zcdp_epsilon

__all__ = ["AdditiveMechanism", "AuditCase", "MechanismSpec", "ReleaseRecipe", "MEASURES",
           "PARAMETERS", "check_mechanism"]

#: The privacy measures a mechanism can be calibrated to.
MEASURES = ("pure", "approx", "zcdp")

#: Every keyword a mechanism may take besides ``sensitivity``, with what it is in words.
PARAMETERS: Mapping[str, str] = MappingProxyType({
    "epsilon": "privacy budget ε",
    "delta": "failure probability δ",
    "rho": "zCDP budget ρ",
    "scale": "the noise scale itself",
    "lower": "lower end of the public answer range",
    "upper": "upper end of the public answer range",
    "gamma": "staircase shape γ in [0, 1]",
})

# A calibrated scale is nudged up by this factor until its privacy check passes, so that root
# finding tolerance can never leave a mechanism with less noise than its privacy claim needs.
_SAFETY_STEP = 1 + 2.0**-40

# Noise scales outside this range make the error density (~1/scale) or the variance (~scale²)
# of a mechanism overflow float64; no release needs them.
_SCALE_RANGE = (1e-300, 1e150)

# Integer mechanisms: true values within ±2**62 leave headroom so that adding noise never
# wraps around int64; scales above 1e12 would make integer noise leave exact float64 range.
_MAX_INTEGER_VALUE = 2**62
_MAX_INTEGER_SCALE = 1e12


# --------------------------------------------------------------------------------------------
# shared validation and calibration helpers
# --------------------------------------------------------------------------------------------


def _exactly_one(mechanism: str, **options: object) -> str:
    """Name of the single option that is not None; ValueError naming them all otherwise."""
    given = [name for name, value in options.items() if value is not None]
    if len(given) != 1:
        names = " or ".join(options)
        got = ", ".join(given) if given else "none"
        raise ValueError(f"{mechanism} needs exactly one of {names}; got {got}")
    return given[0]


def _real_points(name: str, x: ArrayLike) -> NDArray[np.float64]:
    """Points at which a distribution function is evaluated: numbers, ±inf allowed, no NaN."""
    arr = numeric_array(name, x)
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    return arr


def _check_integer_valued(name: str, value: object) -> int:
    """A positive whole number given as an int or an integral float (2 or 2.0, not 2.5)."""
    x = check_positive(name, value)
    if not x.is_integer():
        raise ValueError(f"{name} must be a whole number, got {x}")
    return int(x)


def _step_up(x: float) -> float:
    """x raised by _SAFETY_STEP, and by at least one ulp (a subnormal times 1 + 2^-40 rounds
    back to itself, which would loop forever)."""
    return max(x * _SAFETY_STEP, math.nextafter(x, math.inf))


def _scale_within(loss: Callable[[float], float], scale: float, budget: float) -> float:
    """``scale`` raised ulp by ulp until ``loss(scale) <= budget``.

    A scale computed as sensitivity / epsilon can round down, leaving the privacy loss the
    mechanism reports (and has) an ulp above the budget it was built for.
    """
    while 0 < scale < math.inf and loss(scale) > budget:
        scale = math.nextafter(scale, math.inf)
    return scale


def _pure_scales(sensitivity: float, epsilons: NDArray[np.float64]) -> NDArray[np.float64]:
    """The scales :func:`_epsilon_or_scale` gives at each epsilon: sensitivity / epsilon,
    raised ulp by ulp where the loss it claims (rounded up) would exceed epsilon. Only the
    grid points whose quotient needs it go through the exact check."""
    scale = sensitivity / epsilons
    # the float loss of the float scale: where it is below epsilon by more than rounding, the
    # exact loss is below epsilon too; the rest are settled exactly
    close = ~(sensitivity / scale < epsilons * (1 - 2.0**-50))
    for i in np.flatnonzero(close):
        eps = float(epsilons[i])
        scale[i] = _scale_within(lambda b: _loss_up(sensitivity, b), float(scale[i]), eps)
    return scale


def _loss_up(sensitivity: float, scale: float) -> float:
    """The pure-DP loss sensitivity / scale, rounded up: the float quotient, raised by an ulp
    when it rounded below the exact ratio, so that a claim never understates the loss."""
    loss = sensitivity / scale
    if 0 < loss < math.inf and Fraction(loss) < Fraction(sensitivity) / Fraction(scale):
        loss = math.nextafter(loss, math.inf)
    return loss


def _rho_up(sensitivity: float, scale: float) -> float:
    """The zCDP loss (sensitivity / scale)² / 2, rounded up likewise (0 or inf when it leaves
    float64; the caller refuses those)."""
    mu = sensitivity / scale
    rho = mu * mu / 2  # (Δ/σ)²/2, not Δ²/(2σ²): the squares alone may leave float64
    if 0 < rho < math.inf:
        exact = Fraction(sensitivity) ** 2 / (2 * Fraction(scale) ** 2)
        while Fraction(rho) < exact:
            rho = math.nextafter(rho, math.inf)
    return rho


def _epsilon_or_scale(mechanism: str, sensitivity: float, epsilon: object,
                      scale: object) -> tuple[str, float]:
    """("epsilon" or "scale", b) for the mechanisms with pure-DP loss sensitivity / b."""
    given = _exactly_one(mechanism, epsilon=epsilon, scale=scale)
    if given == "scale":
        return given, check_positive("scale", scale)
    eps = check_positive("epsilon", epsilon)
    return given, _scale_within(lambda b: _loss_up(sensitivity, b), sensitivity / eps, eps)


def _points_and_truth(x: ArrayLike, q: NDArray[np.float64]) -> list[NDArray[np.float64]]:
    """Evaluation points and true values broadcast together (ValueError naming both)."""
    points = _real_points("x", x)
    try:
        return np.broadcast_arrays(points, q)
    except ValueError:
        raise ValueError(f"x (shape {points.shape}) and true_value (shape {q.shape}) must "
                         "broadcast together") from None


def _shaped(arr: NDArray) -> NDArray:
    # A 0-d result becomes a numpy scalar (a float/int subclass); arrays pass through.
    return arr[()]


def _whole_values(name: str, values: ArrayLike, mechanism: str) -> NDArray[np.int64]:
    """True values of an integer mechanism: whole numbers within ±2**62, as int64."""
    try:
        arr = np.asarray(values)
    except ValueError:  # ragged nesting: finite_array words the TypeError
        arr = finite_array(name, values)
    if arr.dtype.kind not in "iu":
        if arr.dtype != np.float64:
            arr = finite_array(name, arr)
        # One cast and one comparison catch NaN, ±inf, fractions and magnitudes beyond
        # int64: none of them survives the round trip through int64.
        with np.errstate(invalid="ignore"):
            whole = arr.astype(np.int64)
        if not np.array_equal(whole, arr):
            finite_array(name, arr)  # raises the usual message for NaN or inf
            raise ValueError(f"{name} must be whole numbers for the {mechanism} mechanism")
        arr = whole
    # Headroom so that adding noise can never wrap around int64.
    if arr.size and not (-_MAX_INTEGER_VALUE <= arr.min() and arr.max()
                         <= _MAX_INTEGER_VALUE):
        raise ValueError(f"{name} must lie within ±2**62 for the {mechanism} mechanism")
    return arr.astype(np.int64, copy=False)


def _check_integer_scale(scale: float) -> None:
    if not scale <= _MAX_INTEGER_SCALE:
        raise ValueError(f"scale (from sensitivity and the privacy budget) = {scale:g} exceeds "
                         f"{_MAX_INTEGER_SCALE:g}, beyond which integer noise leaves exact "
                         "float64 range; use a larger epsilon or a smaller scale")


def _check_grid(epsilons: ArrayLike) -> NDArray[np.float64]:
    """A one-dimensional grid of epsilons, each finite and > 0."""
    grid = finite_array("epsilons", epsilons, min_size=1)
    if grid.ndim != 1:
        raise ValueError(f"epsilons must be a one-dimensional grid, got shape {grid.shape}")
    if not np.all(grid > 0):
        raise ValueError("epsilons must all be > 0")
    return grid


def _checked_grid(cls: type[AdditiveMechanism], epsilons: ArrayLike, sensitivity: float,
                  options: Mapping[str, float]) -> NDArray[np.float64]:
    """The grid of a closed-form sweep; building the mechanism at both ends validates the
    sensitivity, the options and every scale in between (scales are monotone in epsilon)."""
    grid = _check_grid(epsilons)
    for end in (grid.min(), grid.max()):
        cls(sensitivity=sensitivity, epsilon=float(end), **options)
    return grid


def _threshold_grid(low: float, high: float, count: int = 33) -> NDArray[np.float64]:
    """Evenly spaced audit thresholds over [low, high]."""
    return np.linspace(low, high, count)


def _half_integers(low: float, high: float, count: int = 41) -> NDArray[np.float64]:
    """Audit thresholds between the integers over [low, high], at most about ``count``."""
    step = max(1, math.ceil((high - low) / count))
    return np.arange(math.floor(low), math.ceil(high) + 1, step) + 0.5


# --------------------------------------------------------------------------------------------
# the spec
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class AuditCase:
    """A pair of neighbouring true values and the events {y > t}, {y < t} to audit them with.

    The thresholds are fixed from the mechanism's parameters before any sample is drawn, as a
    valid audit requires.
    """

    x: float
    x_prime: float
    thresholds: tuple[float, ...]


@dataclass(frozen=True)
class ReleaseRecipe:
    """How a real release draws a mechanism with OpenDP (``release.measurements``), named
    rather than imported (dpcore never imports OpenDP).

    Attributes
    ----------
    opendp
        The OpenDP constructor in ``opendp.measurements`` at the mechanism's own scale:
        "make_laplace" or "make_gaussian" (on integers for an integer-only kind).
    certifies
        What OpenDP's map gives for it: "epsilon" (pure DP) or "rho" (zCDP).
    clamp
        Post-processing: the noisy answer clamped to the answer range.
    pipeline_dp
        The ``pipeline_dp.NoiseKind`` the Spark program adds at the same scale (LAPLACE,
        GAUSSIAN), or None with ``pipeline_dp_reason``.
    """

    opendp: str
    certifies: str
    clamp: bool = False
    pipeline_dp: str | None = None
    pipeline_dp_reason: str = ""

    def __post_init__(self) -> None:
        if self.opendp not in ("make_laplace", "make_gaussian"):
            raise ValueError(f"opendp must be make_laplace or make_gaussian, got {self.opendp}")
        if self.certifies not in ("epsilon", "rho"):
            raise ValueError(f"certifies must be epsilon or rho, got {self.certifies}")
        if self.pipeline_dp not in (None, "LAPLACE", "GAUSSIAN"):
            raise ValueError(f"pipeline_dp must be LAPLACE or GAUSSIAN, got {self.pipeline_dp}")
        if (self.pipeline_dp is None) == (not self.pipeline_dp_reason):
            raise ValueError("give pipeline_dp or the reason PipelineDP cannot release it")


@dataclass(frozen=True, eq=False)
class MechanismSpec:
    """What the pages, the sweeps and the tests need to know about one kind of mechanism.

    Attributes
    ----------
    kind
        The key in the catalogue, as pages and URLs name the kind.
    label
        Its name for users ("Laplace").
    mechanism
        The class; ``make_mechanism`` calls it with ``sensitivity`` and the parameters.
    budgets
        Each privacy measure the mechanism can be calibrated to, with the keywords that set
        its budget: ``{"approx": ("epsilon", "delta"), "zcdp": ("rho",)}``.
    parameters
        Every keyword the class takes besides ``sensitivity`` (budgets, scale, bounds, γ).
    sensitivity_norm
        "L1" or "L2": which sensitivity of a query it is calibrated to.
    integer_only
        True when it needs whole-number answers and a whole-number sensitivity.
    needs_range
        True when it needs a public range [lower, upper] for the answer.
    true_value_in_range
        True when the true answer must itself lie in that range.
    scale_meaning
        What the noise scale is, in words.
    explanation
        One plain-language sentence on what the mechanism does.
    worst_case
        The neighbouring inputs (and events) an empirical audit should use, from a built
        mechanism: ``dpcore.audit`` runs on them without knowing the kind.
    sample_parameters
        Keyword arguments (sensitivity included) for the generic tests, like scipy's
        ``_distr_params``; the first set is the one audited.
    release
        How a real release draws it with OpenDP (:class:`ReleaseRecipe`), or None when no
        floating-point-safe sampler exists; then ``unreleasable`` says why and what to use.
    """

    kind: str
    label: str
    mechanism: type[AdditiveMechanism]
    budgets: Mapping[str, tuple[str, ...]]
    parameters: tuple[str, ...]
    sensitivity_norm: str
    integer_only: bool
    needs_range: bool
    true_value_in_range: bool
    scale_meaning: str
    explanation: str
    worst_case: Callable[[AdditiveMechanism], tuple[AuditCase, ...]]
    sample_parameters: tuple[Mapping[str, float], ...]
    release: ReleaseRecipe | None = None
    unreleasable: str = ""

    def __post_init__(self) -> None:
        # A spec that does not hang together is refused when the catalogue is built, not when
        # a page first asks for it.
        if not isinstance(self.mechanism, type) or not issubclass(self.mechanism,
                                                                  AdditiveMechanism):
            raise TypeError(f"{self.kind}: mechanism must be an AdditiveMechanism subclass")
        if not self.budgets or set(self.budgets) - set(MEASURES):
            raise ValueError(f"{self.kind}: budgets must be keyed by {', '.join(MEASURES)}")
        unknown = set(self.parameters) - set(PARAMETERS)
        if unknown:
            raise ValueError(f"{self.kind}: unknown parameters {sorted(unknown)}")
        if (self.release is None) == (not self.unreleasable):
            raise ValueError(f"{self.kind}: give how a release draws it (release), or why it "
                             "cannot be released (unreleasable)")
        for measure, keywords in self.budgets.items():
            if not keywords or set(keywords) - set(self.parameters):
                raise ValueError(f"{self.kind}: the {measure} budget {keywords} must be among "
                                 f"its parameters {self.parameters}")
        if not any("epsilon" in keywords for keywords in self.budgets.values()):
            raise ValueError(f"{self.kind}: some budget must be set by epsilon (the sweeps "
                             "calibrate every mechanism from epsilon)")
        if self.sensitivity_norm not in ("L1", "L2"):
            raise ValueError(f"{self.kind}: sensitivity_norm must be 'L1' or 'L2'")
        if self.needs_range != ({"lower", "upper"} <= set(self.parameters)):
            raise ValueError(f"{self.kind}: needs_range goes with the lower and upper "
                             "parameters")
        if self.true_value_in_range and not self.needs_range:
            raise ValueError(f"{self.kind}: true_value_in_range needs an answer range")
        if not self.sample_parameters or any("sensitivity" not in p
                                             for p in self.sample_parameters):
            raise ValueError(f"{self.kind}: sample_parameters must give at least one set, "
                             "each with a sensitivity")
        object.__setattr__(self, "budgets", MappingProxyType(dict(self.budgets)))

    @property
    def measures(self) -> tuple[str, ...]:
        """The privacy measures it can be calibrated to, e.g. ("pure", "approx")."""
        return tuple(self.budgets)

    def epsilon_budget(self) -> tuple[str, ...]:
        """The budget keywords when it is calibrated from epsilon: ("epsilon",) when it is
        pure DP, else ("epsilon", "delta")."""
        for measure in MEASURES:
            keywords = self.budgets.get(measure, ())
            if "epsilon" in keywords:
                return keywords
        raise AssertionError("checked in __post_init__")  # pragma: no cover

    def measure_of(self, given: tuple[str, ...] | list[str]) -> str:
        """The measure whose budget keywords are exactly ``given`` (ValueError otherwise)."""
        wanted = set(given)
        for measure, keywords in self.budgets.items():
            if set(keywords) == wanted:
                return measure
        options = ", or as ".join(" and ".join(k) for k in self.budgets.values())
        which = "not both" if len(self.budgets) == 2 else "one of them"
        raise ValueError(f"the {self.kind} mechanism takes its budget as {options} ({which}); "
                         f"got {' and '.join(sorted(wanted)) or 'none'}")


# --------------------------------------------------------------------------------------------
# the base class
# --------------------------------------------------------------------------------------------


class AdditiveMechanism(ABC):
    """Common shape of the catalogue's mechanisms: noisy value = true value + noise.

    Subclasses set ``_sensitivity`` and ``_scale`` in their constructor and implement the
    noise (``_fill_noise``, or ``_draw_into`` when the noise depends on the true value), the
    privacy guarantee and the maths of the error: its CDF and density, accuracy, bias,
    variance and mean absolute error.

    Noise comes from numpy's floating-point samplers (``dpcore.sampling``): right for
    simulating and showing what a mechanism does, but not hardened against attacks on the
    low-order bits of floating-point noise (Mironov 2012); a real release should use exact
    samplers such as OpenDP's.
    """

    #: Name shown to users.
    name: ClassVar[str] = ""
    #: True when the noisy values are integers (int64).
    integer_output: ClassVar[bool] = False
    #: The additive noise whose privacy-loss distribution this mechanism has at its ``scale``
    #: and ``sensitivity``, one of ``dpcore.accounting.NOISES``:
    #: ``dpcore.accounting`` builds the tight accounting from it. None: only ``privacy`` is
    #: known, and the accounting reads that guarantee.
    pld_noise: ClassVar[str | None] = None

    _sensitivity: float
    _scale: float

    @property
    def scale(self) -> float:
        """Noise scale: the Laplace b, the Gaussian sigma, the geometric scale (see the spec's
        ``scale_meaning``)."""
        return self._scale

    @property
    def sensitivity(self) -> float:
        """Largest change of the true value between neighbouring datasets."""
        return self._sensitivity

    @property
    @abstractmethod
    def privacy(self) -> PureDP | ApproxDP | ZCDP:
        """The privacy guarantee of one release."""

    @classmethod
    def pure_epsilon_bound(cls, epsilon: float, delta: float = 0.0) -> float | None:
        """A pure-DP epsilon that every mechanism of this class built from the budget
        (epsilon, delta) has, whatever its sensitivity and answer range; None when the class
        promises none.

        epsilon itself when delta is 0; None otherwise, unless the class knows better (the
        bounded Laplace is calibrated to be pure epsilon − ln(1 − delta)-DP). An accountant
        reads a zCDP rho = epsilon²/2 off it (:meth:`zcdp_bound`), without building the
        mechanism.
        """
        epsilon = check_positive("epsilon", epsilon)
        delta = check_delta("delta", delta)
        return epsilon if delta == 0 else None

    def zcdp_bound(self) -> ZCDP | None:
        """A rho-zCDP guarantee this mechanism has, or None when none is known.

        Its own rho under zCDP; epsilon²/2 for a pure epsilon (Bun & Steinke 2016) or for the
        pure epsilon its class promises at an (epsilon, delta) budget
        (:meth:`pure_epsilon_bound`). The Gaussian mechanisms give their exact rho. None too
        when epsilon²/2 leaves float64.
        """
        privacy = self.privacy
        if isinstance(privacy, ZCDP):
            return privacy
        pure = (privacy.epsilon if isinstance(privacy, PureDP)
                else type(self).pure_epsilon_bound(privacy.epsilon, privacy.delta))
        rho = None if pure is None else pure * pure / 2
        # (an epsilon whose square leaves float64 has no rho to give: none is known)
        return ZCDP(rho) if rho is not None and 0 < rho < math.inf else None

    def epsilon_for_delta(self, delta: float) -> float:
        """The smallest epsilon with (epsilon, delta)-DP that this mechanism is known to have.

        From its guarantee: a pure-DP epsilon holds at every delta; an (epsilon, delta) pair at
        every larger delta; rho-zCDP through the conversion of Canonne, Kamath & Steinke 2020
        (``measures.zcdp_epsilon``). Mechanisms with an exact privacy profile (the Gaussians)
        give it instead.
        """
        delta = check_delta("delta", delta)
        privacy = self.privacy
        if isinstance(privacy, PureDP):
            return privacy.epsilon
        if isinstance(privacy, ApproxDP):
            if delta < privacy.delta:
                raise ValueError(f"delta must be at least the mechanism's own delta "
                                 f"{privacy.delta:g}, got {delta:g}")
            return privacy.epsilon
        if delta == 0:
            raise ValueError("delta must be > 0 to read a zCDP guarantee as (epsilon, delta)")
        return zcdp_epsilon(privacy.rho, delta)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(sensitivity={self._sensitivity:g}, "
                f"scale={self._scale:.6g}) — {self.privacy.describe()}")

    def _check_scale(self, given: str) -> None:
        """Refuse a noise scale whose density, variance or privacy loss leaves float64.

        ``given`` names what the scale came from ("scale", "epsilon", "rho", ...).
        """
        source = "scale" if given == "scale" else f"the noise scale from sensitivity and {given}"
        low, high = _SCALE_RANGE
        if not low <= self._scale <= high:
            raise ValueError(f"{source} = {self._scale:g} is outside [{low:g}, {high:g}], beyond "
                             "which the noise density or variance overflows float64")
        if not 0 < self._sensitivity / self._scale < math.inf:
            raise ValueError(f"sensitivity / scale = {self._sensitivity:g} / {self._scale:g} "
                             "is no positive finite privacy loss: sensitivity and scale are too "
                             "far apart")

    def _noise_scaled(self, factor: float) -> AdditiveMechanism:
        """A copy whose noise is ``factor`` times this one's (the planted bug of an audit).

        Its own ``privacy`` is not the point: an audit compares it with this mechanism's.
        """
        clone = copy.copy(self)
        clone._scale = self._scale * factor
        clone._derive()
        return clone

    def _derive(self) -> None:
        """Recompute what the sampler derives from the scale (after ``_noise_scaled``)."""
        return None

    # -- as a part of a plan query (plan.parts): what the pages and the release ask ----------

    @property
    def answer_range(self) -> tuple[float, float] | None:
        """The public range its noisy answer is kept within (lower, upper), or None when its
        noise is unbounded (the clamped and bounded Laplace mechanisms have one)."""
        return None

    @property
    def integer_input(self) -> bool:
        """Whether a release draws it on whole numbers (its noise is whole numbers)."""
        return self.integer_output

    def simulate(self, value: ArrayLike, *, scale: float, rng: np.random.Generator) -> object:
        """One simulated release on ``value`` (a number or a list), as plain Python numbers
        shaped as OpenDP's measurement returns them. ``scale`` is the part's, which for a
        catalogue mechanism is its own: the noise is drawn at :attr:`scale`."""
        return np.asarray(self.sample(np.asarray(value), rng=rng)).tolist()

    # -- sampling ------------------------------------------------------------------------------

    def _check_values(self, values: ArrayLike, name: str = "values") -> NDArray:
        return finite_array(name, values)

    def _fill_noise(self, out: NDArray, shift: float | int, rng: np.random.Generator) -> None:
        """Fill the 1-D array ``out`` with shift + noise, in place."""
        raise NotImplementedError  # pragma: no cover (every class has this or _draw_into)

    def _finish(self, out: NDArray) -> None:
        """Post-processing of the noisy values, in place (the clamped mechanism clamps)."""
        return None

    def _draw_into(self, out: NDArray, base: NDArray, rng: np.random.Generator) -> None:
        """Fill ``out`` (shape ``(..., *base.shape)``) with base + noise.

        Noise that does not depend on the true value is drawn straight into the result, in
        cache-sized blocks; a single true value is added inside each block.
        """
        if out.size == 0:
            return
        flat = out.reshape(-1)
        if base.size == 1:
            self._fill_noise(flat, base.reshape(-1)[0], rng)
        else:
            self._fill_noise(flat, 0, rng)
            out += base
        self._finish(out)

    def sample(self, values: ArrayLike, *, rng: np.random.Generator,
               trials: int | None = None) -> NDArray:
        """Noisy versions of ``values``: one release, or ``trials`` simulated releases.

        Parameters
        ----------
        values : array_like
            True value(s): a scalar or an array of finite numbers.
        rng : numpy.random.Generator
            Source of randomness.
        trials : int, optional
            Number of independent releases to simulate. ``None`` (default) gives one release.

        Returns
        -------
        ndarray
            Shape ``values.shape`` when ``trials`` is None, else ``(trials, *values.shape)``
            (a numpy scalar for a scalar ``values`` and ``trials=None``). float64, or int64 when
            ``integer_output``.

        Notes
        -----
        The noise is written straight into the returned array, in blocks of at most
        ``min(2**15, MAX_BLOCK_ELEMENTS)`` elements (mechanisms whose noise depends on the
        true value work on chunks of whole trials of at most ``MAX_BLOCK_ELEMENTS`` =
        2**22 elements, 32 MiB of float64). The returned array is as large as asked for:
        at most ``MAX_RETURNED_ELEMENTS``.
        """
        rng = check_rng(rng)
        trials = check_trials(trials)
        base = self._check_values(values)
        shape = base.shape if trials is None else (trials, *base.shape)
        if trials is not None:
            checks.trial_chunks(trials, base.size)  # refuses work beyond MAX_DRAWS
            checks.check_returned_size(trials, base.size)
        out = np.empty(shape, dtype=np.int64 if self.integer_output else np.float64)
        self._draw_into(out, base, rng)
        return _shaped(out)

    # -- accuracy and error distribution -------------------------------------------------------

    def accuracy(self, beta: float, true_value: ArrayLike | None = None) -> float | NDArray:
        """Smallest alpha with P(|noisy − true| > alpha) <= beta (a (1 − beta) error bound).

        Parameters
        ----------
        beta : float
            Failure probability in (0, 1), e.g. 0.05 for a 95% bound.
        true_value : array_like, optional
            Needed only by the mechanisms with an answer range, whose error depends on where
            the true value sits between the bounds.
        """
        beta = check_probability_open("beta", beta)
        return self._accuracy(beta, true_value)

    @abstractmethod
    def _accuracy(self, beta: float, true_value: ArrayLike | None) -> float | NDArray:
        ...

    # -- intervals for the true value (dpcore.intervals) --------------------------------------

    def _interval_half_width(self, alpha: float) -> float:
        """A half-width a with P(|noisy − true| > a) <= alpha whatever the true value, from
        the noise's law and public parameters only: the accuracy, for noise that does not
        depend on the true value (the mechanisms with an answer range override it)."""
        return self._accuracy(alpha, None)

    def _interval_around(self, released: NDArray, half_width: float
                         ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """[released − a, released + a]: where the true value lies whenever the noise is at
        most a in size (the mechanisms with an answer range override it)."""
        released = np.asarray(released, dtype=np.float64)
        return released - half_width, released + half_width

    @abstractmethod
    def error_cdf(self, x: ArrayLike, true_value: ArrayLike | None = None) -> NDArray:
        """P(noisy − true <= x), vectorized in ``x``."""

    def error_breakpoints(self, true_value: ArrayLike | None = None) -> NDArray[np.float64]:
        """The errors at which the error's density has a kink, a jump or a point mass, sorted:
        where a chart or a quadrature of the density should put an edge.

        0 (the peak of the noise) by default; mechanisms with an answer range add the errors
        that reach its ends (``true_value`` a single number), the staircase its steps.
        """
        return np.array([0.0])

    # -- moments -------------------------------------------------------------------------------

    def bias(self, values: ArrayLike) -> NDArray:
        """E[noisy] − true value, shaped like ``values`` (zero for zero-mean noise)."""
        base = self._check_values(values)
        return _shaped(np.zeros(base.shape))

    @abstractmethod
    def variance(self, values: ArrayLike) -> NDArray:
        """Var[noisy], shaped like ``values``."""

    def mse(self, values: ArrayLike) -> NDArray:
        """Mean squared error E[(noisy − true)²] = variance + bias²."""
        return _shaped(np.asarray(self.variance(values) + np.square(self.bias(values))))

    @abstractmethod
    def mae(self, values: ArrayLike) -> NDArray:
        """Mean absolute error E|noisy − true|, shaped like ``values``."""

    # -- over many epsilons at once ------------------------------------------------------------

    @classmethod
    def sweep(cls, epsilons: ArrayLike, *, sensitivity: float, beta: float = 0.05,
              true_value: float | None = None, **options: float
              ) -> dict[str, NDArray[np.float64]]:
        """Scale, error bound, RMSE and MAE of this mechanism at every epsilon of a grid.

        Parameters
        ----------
        epsilons : array_like, shape (n,)
            Privacy budgets (each > 0).
        sensitivity : float
        beta : float
            Failure probability of the error bound ``alpha``.
        true_value : float, optional
            Required by the mechanisms with an answer range.
        **options
            The class's other keywords (delta, lower, upper, gamma, ...).

        Returns
        -------
        dict of str to ndarray, each shape (n,)
            ``scale``, ``alpha`` (as :meth:`accuracy`), ``rmse`` (sqrt of the MSE) and
            ``mae``.

        Notes
        -----
        This generic form builds the mechanism at each epsilon; classes with closed forms
        override it with vectorised formulas that give the same numbers (tested).
        """
        grid = _check_grid(epsilons)
        beta = check_probability_open("beta", beta)
        at = 0.0 if true_value is None else true_value
        built = [cls(sensitivity=sensitivity, epsilon=float(e), **options) for e in grid]
        return {
            "scale": np.array([m.scale for m in built], dtype=np.float64),
            "alpha": np.array([float(m.accuracy(beta, true_value)) for m in built]),
            "rmse": np.sqrt([float(m.mse(at)) for m in built]),
            "mae": np.array([float(m.mae(at)) for m in built], dtype=np.float64),
        }

    @classmethod
    def epsilon_for_accuracy(cls, alpha: float, beta: float, *, sensitivity: float,
                             **options: float) -> float | None:
        """The epsilon at which P(|error| > alpha) = beta, in closed form; None when the class
        has none (``utility.smallest_epsilon`` then searches).

        The answer is exact up to rounding; the caller confirms it on the built mechanism.
        """
        check_positive("alpha", alpha)
        check_probability_open("beta", beta)
        return None


def check_mechanism(name: str, value: object) -> AdditiveMechanism:
    """``value`` when it is a catalogue mechanism; TypeError naming ``name`` otherwise."""
    if not isinstance(value, AdditiveMechanism):
        raise TypeError(f"{name} must be a catalogue mechanism, got {type(value).__name__}")
    return value
