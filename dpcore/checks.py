"""Validation helpers for dpcore's public boundary.

Each helper checks one parameter, names it in the message, raises ``TypeError`` for a wrong
type and ``ValueError`` for a wrong value, and is written so that NaN fails every check.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: Largest number of float64 elements one simulation block may hold (2**22 ≈ 4.2 million
#: elements = 32 MiB per float64 array). Samplers and Monte Carlo loops chunk their trials so
#: that no temporary array is larger than this, whatever number of trials is asked for.
MAX_BLOCK_ELEMENTS = 2**22

#: Largest number of trials any simulation accepts (chunked, so memory stays bounded).
MAX_TRIALS = 10**9

#: Most noise draws (trials × values per trial) one call may simulate. Memory is bounded by
#: chunking whatever the request; this bounds time (about 10-30 s of sampling here), so a
#: request for, say, 10^8 trials over 1,000 candidates is refused at once with a clear message
#: instead of running for half an hour.
MAX_DRAWS = 10**9

#: Most elements a function may return as one array (2**27 = 1 GiB of float64). Charts need
#: summaries, not every draw: larger simulations go through the chunked summary functions.
MAX_RETURNED_ELEMENTS = 2**27


def check_real(name: str, value: object) -> float:
    """Return ``value`` as a float, raising ``TypeError`` unless it is a real number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    try:
        return float(value)
    except OverflowError:  # an int beyond float64 (10**400) is no finite number either
        raise ValueError(f"{name} must be finite, got an integer too large for a float "
                         f"({int(value).bit_length()} bits)") from None


def check_finite(name: str, value: object) -> float:
    """A finite real number (NaN and ±inf rejected)."""
    x = check_real(name, value)
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def check_positive(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A finite real number > 0 (or >= 0 when ``allow_zero``)."""
    x = check_real(name, value)
    ok = (0 <= x < math.inf) if allow_zero else (0 < x < math.inf)
    if not ok:
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be finite and {bound}, got {x}")
    return x


def check_delta(name: str, value: object, *, allow_zero: bool = True) -> float:
    """A probability in [0, 1) (or (0, 1) when zero is not allowed)."""
    x = check_real(name, value)
    ok = (0 <= x < 1) if allow_zero else (0 < x < 1)
    if not ok:
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must lie in {interval}, got {x}")
    return x


def check_probability_open(name: str, value: object) -> float:
    """A probability strictly between 0 and 1 (e.g. a failure probability beta)."""
    return check_delta(name, value, allow_zero=False)


def check_bounds(lower: object, upper: object) -> tuple[float, float]:
    """Finite bounds with lower < upper."""
    lo = check_finite("lower", lower)
    hi = check_finite("upper", upper)
    if not lo < hi:
        raise ValueError(f"lower must be < upper, got lower={lo}, upper={hi}")
    return lo, hi


def check_int(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer (Python or numpy, not bool) in [minimum, maximum]."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    n = int(value)
    if n < minimum or (maximum is not None and n > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be >= {minimum}{upper}, got {_count(n)}")
    return n


def check_trials(trials: object) -> int | None:
    """``None`` (one release) or a positive integer number of simulated releases."""
    if trials is None:
        return None
    return check_int("trials", trials, minimum=1, maximum=MAX_TRIALS)


def check_rng(rng: object) -> np.random.Generator:
    """Only ``numpy.random.Generator`` is accepted: no global state, no legacy RandomState."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def check_progress(progress: object) -> Callable[[float], object]:
    """A progress callback (``None`` for none): a callable taking the share done, in [0, 1]."""
    if progress is None:
        return lambda share: None
    if not callable(progress):
        raise TypeError(f"progress must be callable as progress(share) or None, got "
                        f"{type(progress).__name__}")
    return progress


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """One of a fixed set of strings."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return value


def numeric_array(name: str, values: ArrayLike) -> NDArray[np.float64]:
    """``values`` as a float64 array (NaN and ±inf kept); ``TypeError`` unless numeric."""
    if values is None:
        raise TypeError(f"{name} must be numeric array-like, got None")
    try:
        raw = np.asarray(values)
        # Complex numbers would silently lose their imaginary part, and text ("1.0") is not a
        # number: both are wrong types, not values to convert.
        if raw.dtype.kind not in "biufO":
            raise TypeError(f"got dtype {raw.dtype}")
        return np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric array-like: {exc}") from None
    except OverflowError:  # a Python int beyond float64 (10**400): a value, not a type
        raise ValueError(f"{name} must contain only finite numbers (an integer is beyond "
                         "float64)") from None


def finite_array(name: str, values: ArrayLike, *, min_size: int = 0) -> NDArray[np.float64]:
    """``values`` as a float64 array with only finite entries."""
    arr = numeric_array(name, values)
    if arr.size < min_size:
        raise ValueError(f"{name} must have at least {min_size} element(s), got {arr.size}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers (no NaN or inf)")
    return arr


def _count(n: int) -> str:
    """``n`` with thousands separators; Python refuses to print an int of more than 4300
    digits, so a huge one is described by its size instead."""
    return f"{n:,}" if n.bit_length() <= 256 else f"an integer of {n.bit_length()} bits"


def check_returned_size(trials: int, elements_per_trial: int) -> None:
    """Refuse, before allocating, an output array of more than MAX_RETURNED_ELEMENTS."""
    size = trials * max(1, elements_per_trial)
    if size > MAX_RETURNED_ELEMENTS:
        raise ValueError(
            f"trials × values per trial = {_count(size)} results would not fit the "
            f"{MAX_RETURNED_ELEMENTS:,}-element memory bound for one array: ask for at most "
            f"{max(1, MAX_RETURNED_ELEMENTS // max(1, elements_per_trial)):,} trials"
        )


def trial_chunks(trials: int, elements_per_trial: int) -> list[int]:
    """Chunk sizes for ``trials`` so that chunk × elements_per_trial <= MAX_BLOCK_ELEMENTS."""
    draws = trials * max(1, elements_per_trial)
    if draws > MAX_DRAWS:
        raise ValueError(
            f"trials × values per trial = {_count(trials)} × {_count(elements_per_trial)} = "
            f"{_count(draws)} noise "
            f"draws, more than the {MAX_DRAWS:,} one simulation may use: ask for at most "
            f"{max(1, MAX_DRAWS // max(1, elements_per_trial)):,} trials"
        )
    per_chunk = max(1, MAX_BLOCK_ELEMENTS // max(1, elements_per_trial))
    full, rest = divmod(trials, per_chunk)
    return [per_chunk] * full + ([rest] if rest else [])
