"""Property tests: bad input everywhere in dpcore, never a NaN, an overflow, a hang or a crash.

Every public function, class and method is fed random valid and invalid values; each call must
return finite, well-shaped output or raise ValueError/TypeError naming the offending parameter.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
import pkgutil
import re
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from fractions import Fraction
from typing import NamedTuple

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.extra import numpy as hnp
from scipy.optimize import brentq
from scipy.special import log_ndtr

import dpcore
from dpcore import (
    _checks,
    additive,
    audit,
    contributions,
    figures,
    learning,
    measures,
    partition,
    postprocess,
    quantiles,
    queries,
    risk,
    selection,
    utility,
)
from dpcore.measures import ZCDP, ApproxDP, PureDP

# Hundreds of examples per test; derandomized, without deadline or database by the profile in
# conftest.py (timing on a shared CI machine is not a property; bench/ measures speed, and
# runaway work is caught by bounded_time() below). The file runs in about a minute.
PROPERTY = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])


# ============================================================================================
# the oracle
# ============================================================================================

#: Names "module.function", "module.Class" and "module.Class.method" declared as covered by
#: the property tests below (checked against the real public API in test_every_public_...).
COVERED: set[str] = set()


def covers(*names: str):
    """Declare which public names a property test exercises."""
    def mark(test):
        COVERED.update(names)
        return test
    return mark


class Arg(NamedTuple):
    """A generated argument and what it is: "nice", "extreme" (valid but at the edge of
    float64) or "bad" (invalid: must be refused with a message naming the parameter)."""

    value: object
    tag: str


@contextmanager
def strict_numerics():
    """numpy overflow, division by zero and invalid operations raise; every warning raises.

    Underflow is allowed: exp(-1000) = 0 is the right float64 answer, not a smell. Library
    deprecation warnings are not dpcore's doing and are ignored.
    """
    with np.errstate(divide="raise", over="raise", invalid="raise", under="ignore"), \
            warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        # documented and intended: labels read from the data are treated as public
        warnings.filterwarnings("ignore", message="classes were read", category=UserWarning)
        yield


def attempt(call: Callable[[], object]) -> tuple[object, Exception | None]:
    """(result, None), or (None, the ValueError/TypeError raised). Anything else — an
    OverflowError, ZeroDivisionError, FloatingPointError, a warning, RuntimeError — escapes and
    fails the test."""
    with strict_numerics():
        try:
            result = call()
        except (ValueError, TypeError) as exc:
            count_outcome("refused")
            return None, exc
    count_outcome("returned")
    return result, None


def count_outcome(outcome: str) -> None:
    """--hypothesis-show-statistics reports how often each outcome came up (inside @given)."""
    try:
        event(outcome)
    except InvalidArgument:  # a plain test, outside Hypothesis
        pass


def names(error: Exception, name: str) -> bool:
    """Does the message name the parameter (as a word: "k" is not found inside "kind")?"""
    return re.search(rf"(?<![A-Za-z_]){re.escape(name)}(?![A-Za-z_])", str(error)) is not None


def judge(call: Callable[[], object], args: dict[str, Arg],
          aliases: dict[str, tuple[str, ...]] | None = None) -> object | None:
    """Run ``call`` and hold it to the contract; return its result when it succeeded.

    - some argument bad: ValueError/TypeError, naming it when it is the only bad one;
    - all nice: success;
    - all valid, some extreme: success, or ValueError/TypeError naming an extreme argument
      (e.g. "scale = sensitivity/epsilon overflows").

    ``aliases`` gives other words that name an argument (a query answer's "sensitivity").
    """
    aliases = aliases or {}

    def named(error: Exception, name: str) -> bool:
        return any(names(error, n) for n in (name, *aliases.get(name, ())))

    bad = [n for n, a in args.items() if a.tag == "bad"]
    extreme = [n for n, a in args.items() if a.tag == "extreme"]
    result, error = attempt(call)
    shown = {n: a.value for n, a in args.items()}
    if bad:
        assert error is not None, f"accepted invalid {bad}: {shown!r} -> {result!r}"
        if len(bad) == 1:
            assert named(error, bad[0]), f"message does not name {bad[0]!r}: {error!r}"
        return None
    if error is not None:
        assert extreme, f"refused valid input {shown!r}: {error!r}"
        assert any(named(error, n) for n in extreme), (
            f"message names none of the extreme arguments {extreme}: {error!r}")
        return None
    return result


def assert_finite(value: object, where: str = "result") -> None:
    """Every number inside ``value`` (arrays, dicts, tuples, dataclasses) is finite."""
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        return
    if isinstance(value, numbers.Number):
        assert math.isfinite(value), f"{where} = {value!r}"
    elif isinstance(value, np.ndarray):
        if value.dtype.kind in "fc":
            assert np.all(np.isfinite(value)), f"{where} has non-finite entries: {value!r}"
        elif value.dtype.kind == "O":
            for i, item in enumerate(value.ravel()):
                assert_finite(item, f"{where}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_finite(item, f"{where}[{key!r}]")
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            assert_finite(item, f"{where}[{i}]")
    elif is_dataclass(value):
        for field in fields(value):
            assert_finite(getattr(value, field.name), f"{where}.{field.name}")


def ok(call: Callable[[], object], args: dict[str, Arg],
       aliases: dict[str, tuple[str, ...]] | None = None) -> object | None:
    """``judge``, then every number in the result finite."""
    result = judge(call, args, aliases)
    assert_finite(result)
    return result


#: A call that should finish in well under a second taking this long has run away (a refusal
#: that came after the work, an unbounded loop). Not a speed test: a hang guard.
RUNAWAY_SECONDS = 60.0


@contextmanager
def bounded_time():
    """Context manager failing when the block runs for minutes instead of (sub)seconds."""
    start = time.perf_counter()
    yield
    elapsed = time.perf_counter() - start
    assert elapsed < RUNAWAY_SECONDS, f"took {elapsed:.0f} s: the work was not bounded"


# ============================================================================================
# strategies
# ============================================================================================

NAN, INF = math.nan, math.inf
TINY = 5e-324  # smallest subnormal
HUGE = 1.7976931348623157e308  # largest float64
#: Wrong types for a scalar parameter: TypeError (or ValueError) naming it.
JUNK = [None, "1", "nan", b"1", [1.0], (0.5,), {}, object(), True, False, np.bool_(True),
        1 + 2j, np.array([0.5, 0.5]), np.array(0.5), pd.NA]
JUNK_NOT_NONE = [j for j in JUNK if j is not None]
NON_FINITE = [NAN, INF, -INF, np.float64(NAN), np.float32(INF)]
# Integers beyond float64 (10**400) and beyond int64 (2**63).
HUGE_INTS = [2**63, 10**30, 10**400, -(10**400)]


def tagged(nice=None, extreme=None, bad=None) -> st.SearchStrategy[Arg]:
    """Nice values five times as often as the others: with many parameters per call, a good
    share of examples is still fully valid, and many have exactly one bad parameter."""
    branches = []
    if nice is not None:
        branches += [nice.map(lambda v: Arg(v, "nice"))] * 5
    if extreme is not None:
        branches.append(extreme.map(lambda v: Arg(v, "extreme")))
    if bad is not None:
        branches.append(bad.map(lambda v: Arg(v, "bad")))
    return st.one_of(branches)


def numpy_scalars(strategy: st.SearchStrategy[float]) -> st.SearchStrategy:
    return st.one_of(strategy, strategy.map(np.float64))


def positive(lo: float = 1e-3, hi: float = 1e3, *, zero_ok: bool = False) -> st.SearchStrategy:
    """epsilon, sensitivity, scale, rho, alpha, mu: finite and > 0 (>= 0 when ``zero_ok``)."""
    nice = st.one_of(numpy_scalars(st.floats(lo, hi)), st.integers(max(1, math.ceil(lo)),
                     max(1, int(hi))), st.sampled_from([np.int64(2), np.float32(0.5)]))
    extreme = st.one_of(
        st.sampled_from([TINY, 2.2250738585072014e-308, 1e-300, 1e-100, 1e-12, 1e12, 1e100,
                         1e300, HUGE, 2**63, 10**30]),
        st.floats(min_value=TINY, max_value=HUGE),
    )
    bad_values = [*NON_FINITE, -1.0, -1e-300, -HUGE, -(2**63), 10**400, -(10**400), *JUNK]
    if not zero_ok:
        bad_values += [0.0, -0.0, 0, np.float64(0.0)]
    return tagged(nice, extreme, st.one_of(st.sampled_from(bad_values),
                                           st.floats(max_value=-TINY)))


def probability(*, zero_ok: bool, nice_hi: float = 0.5) -> st.SearchStrategy:
    """delta (``zero_ok``: [0, 1)), beta, confidence, target, prior (open (0, 1))."""
    nice_values = st.floats(1e-9, nice_hi)
    if zero_ok:
        nice_values = st.one_of(nice_values, st.just(0.0))
    extreme = st.sampled_from([TINY, 1e-300, 1e-100, 0.999999, 1 - 2**-53])
    bad = st.sampled_from([1.0, 1.5, 2, -1e-300, -0.5, *NON_FINITE, *HUGE_INTS, *JUNK]
                          + ([] if zero_ok else [0.0, 0]))
    return tagged(numpy_scalars(nice_values), extreme, bad)


def finite_real() -> st.SearchStrategy:
    """bounds, true values: any finite real."""
    return tagged(
        numpy_scalars(st.floats(-1e3, 1e3)),
        st.one_of(st.sampled_from([HUGE, -HUGE, 1e300, -1e300, TINY, -TINY, 2**63]),
                  st.floats(allow_nan=False, allow_infinity=False)),
        st.sampled_from([*NON_FINITE, 10**400, *JUNK]),
    )


def counts(lo: int = 1, hi: int = 5, *, also_bad=()) -> st.SearchStrategy:
    """k, n_categories, table_ndim: small whole numbers (int or numpy int)."""
    nice = st.one_of(st.integers(lo, hi), st.integers(lo, hi).map(np.int64))
    bad = st.sampled_from([lo - 1, -1, -(2**63), 1.0, 2.5, NAN, INF, True, "2", None,
                           np.float64(2.0), *also_bad])
    return tagged(nice, None, bad)


#: trials / samples / repetitions that must be refused at once (far beyond the work bounds).
HUGE_TRIALS = [2**27 + 1, 10**9 + 1, 2**40, 2**63, 10**30, 10**400]


def trial_counts(*, none_ok: bool = True, hi: int = 20) -> st.SearchStrategy:
    nice = st.one_of(st.integers(1, hi), st.integers(1, hi).map(np.int64))
    if none_ok:
        nice = st.one_of(nice, st.none())
    bad = st.sampled_from([0, -1, -(2**63), *HUGE_TRIALS, 2.0, NAN, True, "10",
                           *([] if none_ok else [None])])
    return tagged(nice, None, bad)


def rngs() -> st.SearchStrategy:
    return tagged(
        st.integers(0, 2**32).map(np.random.default_rng),
        None,
        st.sampled_from([None, 0, "rng", np.random.RandomState(0), np.random.PCG64(0)]),
    )


def choices(options: tuple[str, ...]) -> st.SearchStrategy:
    bad = [o.upper() for o in options] + ["", " ", "other", None, 1, b"laplace",
                                          options[0] + " "]
    return tagged(st.sampled_from(options), None, st.sampled_from(bad))


def flags() -> st.SearchStrategy:
    return tagged(st.sampled_from([True, False, np.True_, np.False_]), None,
                  st.sampled_from([1, 0, "yes", "False", None, 1.0]))


# -- arrays ------------------------------------------------------------------------------------

NICE_ELEMENTS = st.floats(-1e3, 1e3)
EDGE_ELEMENTS = st.sampled_from([0.0, -0.0, TINY, -TINY, 1e-300, 1e300, -1e300, HUGE, -HUGE])
NON_FINITE_ELEMENTS = st.sampled_from([NAN, INF, -INF])


def float_arrays(elements: st.SearchStrategy, *, min_dims: int = 1, max_dims: int = 1,
                 min_side: int = 0, max_side: int = 5) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(np.float64,
                      hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side,
                                       max_side=max_side),
                      elements=elements)


#: Array-likes that are not numeric: TypeError or ValueError naming the parameter.
JUNK_ARRAYS = [None, "abc", ["a", "b"], [[1.0], [1.0, 2.0]], [None, 1.0], [1 + 1j],
               np.array([1 + 2j]), np.array(["1.0"]), {"a": 1.0}, object(), [object()]]


def numeric_or_none(value: object) -> np.ndarray | None:
    """``value`` as a float64 array if numpy converts it cleanly (no complex, no objects)."""
    if value is None or isinstance(value, (str, bytes, dict)):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            raw = np.asarray(value)
            if raw.dtype.kind not in "biuf":
                return None
            return raw.astype(np.float64)
    except (TypeError, ValueError, Warning):
        return None


def any_arrays(*, min_dims: int = 0, max_dims: int = 2, max_side: int = 4) -> st.SearchStrategy:
    """Vectors, scalars, tables and junk; whether they are valid is decided by the test."""
    elements = st.one_of(NICE_ELEMENTS, NICE_ELEMENTS, EDGE_ELEMENTS, NON_FINITE_ELEMENTS)
    return st.one_of(
        float_arrays(NICE_ELEMENTS, min_dims=1, max_dims=1, max_side=max_side),
        float_arrays(elements, min_dims=min_dims, max_dims=max_dims, max_side=max_side),
        st.lists(NICE_ELEMENTS, max_size=max_side),
        st.lists(st.integers(-100, 100), max_size=max_side).map(np.array),
        NICE_ELEMENTS,
        st.sampled_from(JUNK_ARRAYS),
    )


def array_tag(value: object, *, ndim: int | None = None, min_size: int = 0,
              nice_abs: float = 1e6) -> str:
    """"bad" unless a finite numeric array of the right dimension and size; "extreme" when
    some magnitude exceeds ``nice_abs``."""
    arr = numeric_or_none(value)
    if arr is None or (ndim is not None and arr.ndim != ndim) or arr.size < min_size:
        return "bad"
    if not np.all(np.isfinite(arr)):
        return "bad"
    return "extreme" if arr.size and np.max(np.abs(arr)) > nice_abs else "nice"


# ============================================================================================
# the public API is covered
# ============================================================================================


def public_api() -> set[str]:
    """Every public function and class of every dpcore module, and every public method or
    property those classes define (inherited ones too, when a dpcore class defines them)."""
    found: set[str] = set()
    for info in pkgutil.iter_modules(dpcore.__path__):
        module = importlib.import_module(f"dpcore.{info.name}")
        exported = getattr(module, "__all__", None)
        if exported is None:  # dpcore._checks: its public callables
            exported = [n for n, v in vars(module).items()
                        if not n.startswith("_") and (inspect.isfunction(v) or inspect.isclass(v))
                        and v.__module__ == module.__name__]
        for name in exported:
            value = getattr(module, name)
            if not (inspect.isfunction(value) or inspect.isclass(value)):
                continue  # constants and type aliases
            found.add(f"{info.name}.{name}")
            if inspect.isclass(value):
                for attr in dir(value):
                    if attr.startswith("_"):
                        continue
                    owner = next(c for c in value.__mro__ if attr in vars(c))
                    static = vars(owner)[attr]
                    if owner.__module__.startswith("dpcore") and (
                            inspect.isfunction(static) or isinstance(static, property)):
                        found.add(f"{info.name}.{name}.{attr}")
    return found


def test_every_public_name_of_dpcore_has_a_property_test():
    api = public_api()
    assert len(api) > 100  # the enumeration itself works (functions, classes and methods)
    missing = sorted(api - COVERED)
    assert not missing, f"public dpcore names without a property test: {missing}"
    stale = sorted(COVERED - api)
    assert not stale, f"covered names that are not public dpcore API: {stale}"


# ============================================================================================
# dpcore._checks
# ============================================================================================

ANY_SCALAR = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([TINY, -TINY, 1e-300, HUGE, -HUGE, 0.0, -0.0, 0.5, 1.0, 1 - 2**-53]),
    st.integers(-(10**6), 10**6),
    st.sampled_from([*HUGE_INTS, 2**63 - 1, -(2**63), 10**9, 10**9 + 1]),
    st.integers(-(10**6), 10**6).map(np.int64),
    st.floats(allow_nan=True, allow_infinity=True).map(np.float64),
    st.sampled_from([np.float32(0.25), np.float32(NAN), np.uint64(2**64 - 1), np.int8(-3)]),
    st.sampled_from(JUNK),
)


def as_real(value: object) -> float | None:
    """The float a real-number parameter holds, or None for a wrong type."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral) and abs(int(value)) > HUGE:
        return INF if value > 0 else -INF  # beyond float64: not a finite number
    return float(value)


@covers("_checks.check_real", "_checks.check_finite", "_checks.check_positive",
        "_checks.check_delta", "_checks.check_probability_open")
@PROPERTY
@given(value=ANY_SCALAR)
def test_real_number_checks(value):
    x = as_real(value)
    expectations = {
        _checks.check_real: x is not None and not math.isinf(x) or x is not None and isinstance(
            value, float),
        _checks.check_finite: x is not None and math.isfinite(x),
        _checks.check_positive: x is not None and 0 < x < INF,
        lambda n, v: _checks.check_positive(n, v, allow_zero=True): x is not None
        and 0 <= x < INF,
        _checks.check_delta: x is not None and 0 <= x < 1,
        lambda n, v: _checks.check_delta(n, v, allow_zero=False): x is not None and 0 < x < 1,
        _checks.check_probability_open: x is not None and 0 < x < 1,
    }
    for check, valid in expectations.items():
        result, error = attempt(lambda c=check: c("widget", value))
        if valid:
            assert error is None, (check, value, error)
            assert isinstance(result, float) and (result == x or math.isnan(x))
        else:
            assert error is not None, (check, value, result)
            assert names(error, "widget"), error


@covers("_checks.check_bounds")
@PROPERTY
@given(lower=ANY_SCALAR, upper=ANY_SCALAR)
def test_bounds_check(lower, upper):
    lo, hi = as_real(lower), as_real(upper)
    result, error = attempt(lambda: _checks.check_bounds(lower, upper))
    lower_ok = lo is not None and math.isfinite(lo)
    upper_ok = hi is not None and math.isfinite(hi)
    if lower_ok and upper_ok and lo < hi:
        assert error is None and result == (lo, hi)
    else:
        assert error is not None
        if not lower_ok:
            assert names(error, "lower") or not upper_ok
        if lower_ok and not upper_ok:
            assert names(error, "upper")


@covers("_checks.check_int", "_checks.check_trials")
@PROPERTY
@given(value=ANY_SCALAR, minimum=st.integers(-5, 5), span=st.one_of(st.none(),
                                                                     st.integers(0, 10**9)))
def test_integer_checks(value, minimum, span):
    maximum = None if span is None else minimum + span
    is_int = isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
    valid = is_int and minimum <= int(value) and (maximum is None or int(value) <= maximum)
    result, error = attempt(lambda: _checks.check_int("widget", value, minimum=minimum,
                                                      maximum=maximum))
    if valid:
        assert error is None and type(result) is int and result == int(value)
    else:
        assert error is not None and names(error, "widget")
    trials_valid = value is None or is_int and 1 <= int(value) <= _checks.MAX_TRIALS
    result, error = attempt(lambda: _checks.check_trials(value))
    if trials_valid:
        assert error is None and result == (None if value is None else int(value))
    else:
        assert error is not None and names(error, "trials")


@covers("_checks.check_rng", "_checks.check_choice")
@PROPERTY
@given(rng=rngs(), choice=choices(("laplace", "gaussian")))
def test_rng_and_choice_checks(rng, choice):
    result = judge(lambda: _checks.check_rng(rng.value), {"rng": rng})
    assert rng.tag == "bad" or result is rng.value
    result = judge(lambda: _checks.check_choice("noise", choice.value, ("laplace", "gaussian")),
                   {"noise": choice})
    assert choice.tag == "bad" or result == choice.value


@covers("_checks.finite_array", "_checks.numeric_array")
@PROPERTY
@given(values=any_arrays(max_dims=3), min_size=st.integers(0, 3))
def test_finite_array(values, min_size):
    tag = array_tag(values, min_size=min_size)
    result = ok(lambda: _checks.finite_array("widget", values, min_size=min_size),
                {"widget": Arg(values, "bad" if tag == "bad" else "nice")})
    if result is not None:
        assert result.dtype == np.float64 and result.size >= min_size
        np.testing.assert_array_equal(result, numeric_or_none(values))
    raw, error = attempt(lambda: _checks.numeric_array("widget", values))
    if error is not None:
        assert names(error, "widget") and numeric_or_none(values) is None
    else:  # NaN and inf pass through unchanged; objects such as None inside a list become NaN
        assert raw.dtype == np.float64 and raw.shape == np.shape(values)
        if numeric_or_none(values) is not None:
            np.testing.assert_array_equal(raw, numeric_or_none(values))


WORK_SIZES = st.one_of(st.integers(0, 10**7), st.sampled_from([
    0, 1, 2**22, 2**22 + 1, 2**27, 2**27 + 1, 10**9, 10**9 + 1, 2**63, 10**30, 10**400]))


@covers("_checks.trial_chunks", "_checks.check_returned_size")
@PROPERTY
@given(trials=WORK_SIZES, elements=WORK_SIZES)
def test_work_bounds_refuse_at_once_and_chunk_within_the_block(trials, elements):
    per_trial = max(1, elements)
    with bounded_time():
        chunks, error = attempt(lambda: _checks.trial_chunks(trials, elements))
    if trials * per_trial > _checks.MAX_DRAWS:
        assert error is not None and names(error, "trials")
    else:
        assert error is None
        assert sum(chunks) == trials and all(c >= 1 for c in chunks)
        assert all(c * per_trial <= max(_checks.MAX_BLOCK_ELEMENTS, per_trial) for c in chunks)
    _, error = attempt(lambda: _checks.check_returned_size(trials, elements))
    assert (error is not None) == (trials * per_trial > _checks.MAX_RETURNED_ELEMENTS)
    if error is not None:
        assert names(error, "trials")


# ============================================================================================
# dpcore.measures
# ============================================================================================


def measure_args() -> st.SearchStrategy[Arg]:
    """A privacy measure (built from valid, possibly extreme, parameters) or junk."""
    def build(kind, a, b):
        try:
            if kind == "pure":
                return PureDP(a)
            if kind == "approx":
                return ApproxDP(a, b)
            return ZCDP(a)
        except ValueError:
            return None

    def kinds(values):
        return st.builds(build, st.sampled_from(["pure", "approx", "zcdp"]), values,
                         st.one_of(st.just(0.0), st.floats(1e-12, 0.5))).filter(
            lambda m: m is not None)

    return tagged(kinds(st.floats(1e-3, 10.0)),
                  kinds(st.sampled_from([TINY, 1e-300, 1e-30, 1e30, 1e300, HUGE])),
                  st.sampled_from([None, 1.0, "pure", (1.0, 1e-6), object()]))


#: A privacy measure is named by its parameters in messages.
MEASURE_WORDS = {"privacy": ("epsilon", "delta", "rho"), "measure": ("epsilon", "delta", "rho")}


@covers("measures.PureDP", "measures.PureDP.to_zcdp", "measures.PureDP.to_approx",
        "measures.PureDP.describe", "measures.ZCDP", "measures.ZCDP.to_zcdp",
        "measures.ZCDP.to_approx", "measures.ZCDP.describe")
@PROPERTY
@given(epsilon=positive(), rho=positive(), delta=probability(zero_ok=True))
def test_pure_dp_and_zcdp(epsilon, rho, delta):
    pure = ok(lambda: PureDP(epsilon.value), {"epsilon": epsilon})
    if pure is not None:
        assert pure.epsilon == as_real(epsilon.value)
        converted = ok(pure.to_zcdp, {"epsilon": epsilon})
        if converted is not None:  # rho = eps²/2, computed here in exact rational arithmetic
            assert converted.rho == pytest.approx(pure.epsilon**2 / 2 if pure.epsilon < 1e150
                                                  else converted.rho, rel=1e-15)
        approx = ok(lambda: pure.to_approx(delta.value), {"delta": delta})
        assert approx is None or (approx.epsilon, approx.delta) == (pure.epsilon,
                                                                     as_real(delta.value))
        assert "nan" not in pure.describe()
    zcdp = ok(lambda: ZCDP(rho.value), {"rho": rho})
    if zcdp is not None:
        assert zcdp.to_zcdp() is zcdp and "nan" not in zcdp.describe()
        open_delta = delta if as_real(delta.value) != 0.0 else Arg(0.0, "bad")
        approx = ok(lambda: zcdp.to_approx(open_delta.value), {"delta": open_delta, "rho": rho})
        if approx is not None:
            d = approx.delta
            assert approx.epsilon >= 0
            # never looser than the classic rho + 2 sqrt(rho log 1/delta) (Bun & Steinke 2016)
            classic = zcdp.rho + 2 * math.sqrt(zcdp.rho * math.log(1 / d))
            assert approx.epsilon <= classic * (1 + 1e-8) + 2e-8


@covers("measures.ApproxDP", "measures.ApproxDP.to_approx", "measures.ApproxDP.describe")
@PROPERTY
@given(epsilon=positive(zero_ok=True), delta=probability(zero_ok=True),
       wider=probability(zero_ok=True))
def test_approximate_dp(epsilon, delta, wider):
    approx = ok(lambda: ApproxDP(epsilon.value, delta.value), {"epsilon": epsilon,
                                                               "delta": delta})
    if approx is None:
        return
    assert approx.to_approx() is approx and "nan" not in approx.describe()
    if wider.value is None:  # None: the guarantee as it is
        assert approx.to_approx(None) is approx
        return
    w = as_real(wider.value) if wider.tag != "bad" else None
    # Reading a guarantee at a smaller delta than its own is refused, naming delta.
    target = wider if w is None or w >= approx.delta else Arg(wider.value, "bad")
    result = ok(lambda: approx.to_approx(wider.value), {"delta": target})
    assert result is None or (result.epsilon, result.delta) == (approx.epsilon, w)


@covers("measures.compose")
@PROPERTY
@given(parts=st.lists(measure_args(), max_size=4))
def test_compose(parts):
    values = [p.value for p in parts]
    result, error = attempt(lambda: measures.compose(*values))
    assert_finite(result)
    if error is not None:
        assert any(names(error, n) for n in ("measures", "epsilon", "delta", "rho")), error
        return
    assert values and all(type(v) is type(values[0]) for v in values)
    assert type(result) is type(values[0])
    for field in fields(result):  # the composed budget is the sum, to rounding
        total = math.fsum(getattr(v, field.name) for v in values)
        assert getattr(result, field.name) == pytest.approx(total, rel=1e-12)


@covers("measures.advanced_composition")
@PROPERTY
@given(measure=measure_args(),
       k=tagged(st.integers(1, 10**6), st.sampled_from([2**53, 2**63, 10**30, 10**400]),
                st.sampled_from([0, -1, 1.0, 2.5, NAN, True, "3", None])),
       delta_prime=probability(zero_ok=False))
def test_advanced_composition(measure, k, delta_prime):
    m = measure.value
    result, error = attempt(lambda: measures.advanced_composition(m, k.value, delta_prime.value))
    assert_finite(result)
    bad = [name for name, arg in (("measure", measure), ("k", k), ("delta_prime", delta_prime))
           if arg.tag == "bad"]
    if isinstance(m, ZCDP):
        bad.append("measure")
    if bad:
        assert error is not None and (len(bad) > 1 or names(error, bad[0])), (bad, error)
    elif error is not None:
        # refused only when the composed budget leaves float64 or delta reaches 1
        assert k.tag == "extreme" or m.epsilon > 1e3 or m.epsilon < 1e-100 or getattr(
            m, "delta", 0) > 0, error
        assert any(names(error, n) for n in ("k", "epsilon", "delta")), error
    else:
        assert result.epsilon > 0 and as_real(delta_prime.value) <= result.delta < 1


@covers("risk.percent")
@PROPERTY
@given(p=probability(zero_ok=True, nice_hi=1.0))
def test_percent(p):
    if type(p.value) is float and p.value == 1.0:
        p = Arg(1.0, "nice")  # certainty is a probability too (probability() excludes it)
    text = ok(lambda: risk.percent(p.value), {"p": p})
    if text is not None:
        assert text.endswith("%")
        assert (text == "100%") == (float(p.value) >= 1.0)  # a bound never reads as certainty
        if text[0].isdigit():
            assert float(text.rstrip("%")) == pytest.approx(100 * float(p.value), abs=0.51)


@covers("figures.upper", "figures.lower")
@PROPERTY
@given(x=finite_real(), digits=st.sampled_from([Arg(3, "nice"), Arg(4, "nice"), Arg(1, "nice"),
                                                 Arg(0, "bad"), Arg(16, "bad"),
                                                 Arg(2.5, "bad"), Arg("3", "bad")]))
def test_figures_round_in_the_safe_direction(x, digits):
    if isinstance(x.value, (float, np.floating)) and np.isinf(x.value):
        x = Arg(x.value, "nice")  # an unbounded loss (no noise) is shown as ∞
    up = ok(lambda: figures.upper(x.value, digits.value), {"x": x, "digits": digits})
    down = ok(lambda: figures.lower(x.value, digits.value), {"x": x, "digits": digits})
    if up is not None and x.tag != "bad":
        value = float(x.value)
        if math.isinf(value):
            assert up == down == ("∞" if value > 0 else "−∞")
            return
        assert float(up) >= value and float(down) <= value  # shown loss ≥ true ≥ shown guarantee
        if 0 < abs(value) < 1e307:
            assert float(up) == pytest.approx(value, rel=10.0 ** (1 - digits.value))
            assert float(down) == pytest.approx(value, rel=10.0 ** (1 - digits.value))


@covers("figures.percent_upper", "figures.percent_lower")
@PROPERTY
@given(p=probability(zero_ok=True, nice_hi=1.0))
def test_figures_percentages(p):
    if type(p.value) is float and p.value == 1.0:
        p = Arg(1.0, "nice")  # certainty is a probability too (probability() excludes it)
    up = ok(lambda: figures.percent_upper(p.value), {"p": p})
    down = ok(lambda: figures.percent_lower(p.value), {"p": p})
    if up is not None:
        value = float(p.value)
        assert up.endswith("%") and down.endswith("%")
        assert (up == "100%") == (value == 1.0) == (down == "100%")  # never certainty by rounding
        for text, at_least in ((up, True), (down, False)):
            number = text.rstrip("%")
            if number[0].isdigit():
                shown = float(number) / 100
                assert (shown >= value * (1 - 1e-15)) if at_least else (shown <= value)
                assert shown == pytest.approx(value, rel=0.01, abs=1e-12)


@covers("measures.split_budget")
@PROPERTY
@given(total=positive(), share=probability(zero_ok=False, nice_hi=0.99))
def test_split_budget(total, share):
    if share.tag != "bad" and not 0 < float(share.value) < 1:
        share = Arg(share.value, "bad")  # (0, 1) open: a share of 1 leaves nothing
    parts = ok(lambda: measures.split_budget(total.value, share.value),
               {"total": total, "share": share})
    if parts is not None:
        first, rest = parts
        assert first >= 0 and rest >= 0
        assert Fraction(first) + Fraction(rest) <= Fraction(float(total.value))
        assert first + rest == pytest.approx(float(total.value), rel=1e-15)


@covers("measures.zcdp_epsilon")
@PROPERTY
@given(rho=positive(), delta=probability(zero_ok=False))
def test_zcdp_epsilon(rho, delta):
    eps = ok(lambda: measures.zcdp_epsilon(rho.value, delta.value), {"rho": rho, "delta": delta})
    if eps is not None:
        r, d = as_real(rho.value), as_real(delta.value)
        # (the CKS search is over Renyi orders 1 + e^t, t in [-20, 25]: beyond them, at absurd
        # rho, it stays valid but conservative by up to ~1e-8 relative or 2e-8 absolute)
        assert 0 <= eps <= (r + 2 * math.sqrt(r * math.log(1 / d))) * (1 + 1e-8) + 2e-8


# ============================================================================================
# dpcore.additive
# ============================================================================================

MECHANISM_METHODS = ("accuracy", "bias", "error_cdf", "integer_output", "mse", "name", "privacy",
                     "sample", "scale", "sensitivity", "variance")


def method_names(cls_name: str, *extra: str) -> list[str]:
    return [f"additive.{cls_name}"] + [f"additive.{cls_name}.{m}" for m in
                                       (*MECHANISM_METHODS, *extra)
                                       if not m.startswith("integer") and m != "name"]


def points_tag(value: object) -> str:
    """Evaluation points of a distribution function: numbers, ±inf allowed, NaN not."""
    arr = numeric_or_none(value)
    if arr is None or np.isnan(arr).any():
        return "bad"
    return "extreme" if arr.size and np.max(np.abs(arr)) > 1e6 else "nice"


def domain_tag(mech: additive.AdditiveMechanism, value: object) -> str:
    """Whether ``value`` is a valid true value (or array of them) for this mechanism."""
    tag = array_tag(value)
    if tag == "bad":
        return tag
    arr = numeric_or_none(value)
    if isinstance(mech, additive.Geometric) and (
            not np.all(arr == np.floor(arr)) or arr.size and np.max(np.abs(arr)) > 2**62):
        return "bad"
    if isinstance(mech, additive.BoundedLaplace) and arr.size and (
            arr.min() < mech.lower or arr.max() > mech.upper):
        return "bad"
    if isinstance(mech, additive.ClampedLaplace):
        with np.errstate(over="ignore"):  # a distance to a bound beyond float64
            if not np.all(np.isfinite(arr - mech.lower) & np.isfinite(mech.upper - arr)):
                return "bad"
    return tag


def mse_tag(mech: additive.AdditiveMechanism, value: object, tag: str) -> str:
    """A clamped Laplace's bias is about a true value's distance to the bounds: beyond ~1e154
    outside them its square (the MSE) overflows float64 and is refused."""
    if tag == "bad" or not isinstance(mech, additive.ClampedLaplace) or not np.size(value):
        return tag
    arr = numeric_or_none(value)
    far = np.max(np.maximum(mech.lower - arr, arr - mech.upper))
    return "bad" if far > 1e155 else "extreme" if far > 1e153 else tag


def points_in(mech: additive.AdditiveMechanism) -> st.SearchStrategy:
    """Arrays mixing arbitrary values with ones inside the mechanism's domain."""
    inside = st.floats(-1e3, 1e3)
    if isinstance(mech, additive._BoundedDomain):
        inside = st.floats(mech.lower, mech.upper)
    if isinstance(mech, additive.Geometric):
        inside = st.integers(-1000, 1000).map(float)
    return st.one_of(inside, float_arrays(inside, min_dims=0, max_dims=2, max_side=3),
                     any_arrays())


def exercise_mechanism(mech: additive.AdditiveMechanism, data, context: dict[str, Arg]) -> None:
    """Call every public method of a constructed mechanism with random arguments."""
    assert_finite(mech.scale)
    assert_finite(mech.sensitivity)
    assert mech.scale > 0 and mech.sensitivity > 0
    privacy = mech.privacy
    assert isinstance(privacy, (PureDP, ApproxDP, ZCDP))
    assert "nan" not in repr(mech)
    bounded = isinstance(mech, additive._BoundedDomain)

    values = data.draw(points_in(mech), label="values")
    trials, rng = data.draw(trial_counts(), label="trials"), data.draw(rngs(), label="rng")
    args = {**context, "values": Arg(values, domain_tag(mech, values)), "trials": trials,
            "rng": rng}
    out = ok(lambda: mech.sample(values, rng=rng.value, trials=trials.value), args)
    if out is not None:
        shape = np.shape(values) if trials.value is None else (int(trials.value),
                                                               *np.shape(values))
        assert np.shape(out) == shape
        assert np.asarray(out).dtype == (np.int64 if mech.integer_output else np.float64)
        if bounded:
            assert np.all((mech.lower <= out) & (out <= mech.upper))

    beta = data.draw(probability(zero_ok=False), label="beta")
    truth = data.draw(points_in(mech), label="true_value") if bounded else None
    truth_arg = Arg(truth, domain_tag(mech, truth) if bounded else "nice")
    alpha = ok(lambda: mech.accuracy(beta.value, truth), {**context, "beta": beta,
                                                          "true_value": truth_arg})
    if alpha is not None:
        assert np.all(np.asarray(alpha) >= 0)
        if bounded:
            assert np.shape(alpha) == np.shape(truth)

    x = data.draw(st.one_of(any_arrays(), st.sampled_from([INF, -INF, [-INF, 0.0, INF]])),
                  label="x")
    x_arg = Arg(x, points_tag(x))
    if bounded and truth_arg.tag != "bad" and x_arg.tag != "bad":
        try:
            np.broadcast_shapes(np.shape(x), np.shape(truth))
        except ValueError:
            x_arg = Arg(x, "bad")  # x and true_value must broadcast together
    curve_args = {**context, "x": x_arg, "true_value": truth_arg}
    cdf = ok(lambda: mech.error_cdf(x, truth), curve_args)
    if cdf is not None:
        assert np.all((0 <= cdf) & (cdf <= 1))
        grid = np.sort(np.ravel(np.asarray(x, dtype=np.float64)))
        t = np.full(grid.shape, np.ravel(truth)[0]) if bounded and np.size(truth) else truth
        if not bounded or np.size(truth):
            along = np.ravel(mech.error_cdf(grid, t))
            assert np.all(np.diff(along) >= -1e-12), "the error CDF must not decrease"
    density = getattr(mech, "error_pmf", None) or mech.error_pdf
    pdf = ok(lambda: density(x) if isinstance(mech, additive.Geometric) else density(x, truth),
             {**curve_args, "k": x_arg})
    assert pdf is None or np.all(np.asarray(pdf) >= 0)

    moments_at = data.draw(points_in(mech), label="moments_at")
    moment_args = {**context, "values": Arg(moments_at, domain_tag(mech, moments_at))}
    bias = ok(lambda: mech.bias(moments_at), moment_args)
    variance = ok(lambda: mech.variance(moments_at), moment_args)
    mse = ok(lambda: mech.mse(moments_at), {**moment_args, "values": Arg(
        moments_at, mse_tag(mech, moments_at, moment_args["values"].tag))})
    if variance is not None:
        assert np.shape(bias) == np.shape(variance) == np.shape(moments_at)
        assert np.all(np.asarray(variance) >= 0)
    if mse is not None:
        assert np.shape(mse) == np.shape(moments_at)
        assert np.all(np.asarray(mse) >= np.asarray(variance) * (1 - 1e-12))


def built_mechanism(build: Callable[[], object], args: dict[str, Arg]):
    mech = judge(build, args)
    if mech is not None:
        assert isinstance(mech, additive.AdditiveMechanism)
    return mech


def exactly_one_of(**options: Arg) -> st.SearchStrategy[tuple[dict[str, object], dict]]:
    """Keyword arguments giving exactly one option (mostly), or none, or two (refused)."""
    names_ = list(options)

    def pick(chosen: list[str]):
        kwargs = {n: options[n].value for n in chosen}
        # An option passed as None is one not given (seed 40: epsilon=1, scale=None is valid).
        given = [n for n in chosen if options[n].value is not None]
        tags = {n: options[n] for n in given}
        if len(given) != 1:  # "needs exactly one of ...": the message names the options
            tags = {names_[0]: Arg(None, "bad")}
        return kwargs, tags

    picks = st.one_of(*[st.just([n]) for n in names_ for _ in range(3)], st.just([]),
                      st.just(names_[:2]))
    return picks.map(pick)


@covers(*method_names("Laplace", "error_pdf"))
@PROPERTY
@given(sensitivity=positive(), epsilon=positive(), scale=positive(), data=st.data())
def test_laplace(sensitivity, epsilon, scale, data):
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    args = {"sensitivity": sensitivity, **tags}
    mech = built_mechanism(lambda: additive.Laplace(sensitivity=sensitivity.value, **kwargs),
                           args)
    if mech is not None:
        exercise_mechanism(mech, data, args)


@covers(*method_names("Gaussian", "error_pdf", "delta_for_epsilon", "epsilon_for_delta",
                      "zcdp"))
@PROPERTY
@given(sensitivity=positive(), epsilon=positive(), delta=probability(zero_ok=False),
       rho=positive(), scale=positive(), data=st.data())
def test_gaussian(sensitivity, epsilon, delta, rho, scale, data):
    chosen = data.draw(st.sampled_from([("pair",), ("rho",), ("scale",)] * 3
                                       + [(), ("pair", "rho")]), label="options")
    kwargs: dict[str, object] = {}
    tags: dict[str, Arg] = {}
    if "pair" in chosen:
        kwargs.update(epsilon=epsilon.value, delta=delta.value)
        tags.update(epsilon=epsilon, delta=delta)
    for name, arg in (("rho", rho), ("scale", scale)):
        if name in chosen:
            kwargs[name], tags[name] = arg.value, arg
    if len(chosen) != 1:  # "needs exactly one of epsilon and delta or rho or scale"
        tags = {"epsilon": Arg(None, "bad")}
    args = {"sensitivity": sensitivity, **tags}
    mech = built_mechanism(lambda: additive.Gaussian(sensitivity=sensitivity.value, **kwargs),
                           args)
    if mech is None:
        return
    exercise_mechanism(mech, data, args)
    rho_out = ok(lambda: mech.zcdp, args)
    assert rho_out is None or rho_out.rho > 0
    at = data.draw(positive(zero_ok=True), label="epsilon_at")
    d = ok(lambda: mech.delta_for_epsilon(at.value), {**args, "epsilon": at})
    assert d is None or 0 <= d <= 1
    level = data.draw(probability(zero_ok=False), label="delta_at")
    e = ok(lambda: mech.epsilon_for_delta(level.value), {**args, "delta": level})
    if e is not None:
        assert e >= 0
        assert mech.delta_for_epsilon(e) <= as_real(level.value) * (1 + 1e-9)


def whole_sensitivity() -> st.SearchStrategy[Arg]:
    return tagged(st.one_of(st.integers(1, 20), st.sampled_from([2.0, np.int64(3)])),
                  st.sampled_from([2**63, 10**30, 1e300]),
                  st.sampled_from([1.5, 0, -1, 0.0, NAN, INF, 10**400, *JUNK]))


@covers(*method_names("Geometric", "error_pmf"))
@PROPERTY
@given(sensitivity=whole_sensitivity(), epsilon=positive(), scale=positive(), data=st.data())
def test_geometric(sensitivity, epsilon, scale, data):
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    args = {"sensitivity": sensitivity, **tags}
    mech = built_mechanism(lambda: additive.Geometric(sensitivity=sensitivity.value, **kwargs),
                           args)
    if mech is not None:
        exercise_mechanism(mech, data, args)


def ordered(lower: Arg, upper: Arg) -> tuple[Arg, Arg]:
    """Two nice bounds in increasing order (so that most examples are valid)."""
    if lower.tag == upper.tag == "nice" and as_real(lower.value) > as_real(upper.value):
        return upper, lower
    return lower, upper


def bounds_args(lower: Arg, upper: Arg) -> dict[str, Arg]:
    """lower >= upper, or a width beyond float64 (both valid) is refused, naming both."""
    if lower.tag != "bad" and upper.tag != "bad":
        lo, hi = as_real(lower.value), as_real(upper.value)
        if not lo < hi or hi - lo == INF:
            return {"lower": lower, "upper": Arg(upper.value, "bad")}
    return {"lower": lower, "upper": upper}


@covers(*method_names("BoundedLaplace", "error_pdf", "effective_epsilon", "lower", "upper"))
@PROPERTY
@given(sensitivity=positive(), lower=finite_real(), upper=finite_real(), epsilon=positive(),
       delta=probability(zero_ok=True), scale=positive(), data=st.data())
def test_bounded_laplace(sensitivity, lower, upper, epsilon, delta, scale, data):
    lower, upper = ordered(lower, upper)
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    if "scale" in kwargs and delta.tag != "bad" and as_real(delta.value) != 0:
        delta = Arg(delta.value, "bad")  # a mechanism built from scale reports pure DP
    args = {"sensitivity": sensitivity, **bounds_args(lower, upper), "delta": delta, **tags}
    if args["lower"].tag != "bad" and args["upper"].tag != "bad" and (
            as_real(upper.value) - as_real(lower.value) < 1e-290):
        # A domain 2e-308 wide (both bounds nice) makes the calibrated scale, which shrinks
        # with the width, leave float64's range: at the edge of float64, refused naming them.
        args["upper"] = Arg(upper.value, "extreme")
    mech = built_mechanism(lambda: additive.BoundedLaplace(
        sensitivity=sensitivity.value, lower=lower.value, upper=upper.value, delta=delta.value,
        **kwargs), args)
    if mech is None:
        return
    exercise_mechanism(mech, data, args)
    assert mech.effective_epsilon > 0 and math.isfinite(mech.effective_epsilon)
    if "epsilon" in kwargs:  # never less private than claimed
        claimed = as_real(epsilon.value) - math.log1p(-mech.privacy.__dict__.get("delta", 0.0))
        assert mech.effective_epsilon <= claimed * (1 + 1e-9)


@covers(*method_names("ClampedLaplace", "error_pdf", "point_masses", "lower", "upper"))
@PROPERTY
@given(sensitivity=positive(), lower=finite_real(), upper=finite_real(), epsilon=positive(),
       scale=positive(), data=st.data())
def test_clamped_laplace(sensitivity, lower, upper, epsilon, scale, data):
    lower, upper = ordered(lower, upper)
    kwargs, tags = data.draw(exactly_one_of(epsilon=epsilon, scale=scale), label="options")
    args = {"sensitivity": sensitivity, **bounds_args(lower, upper), **tags}
    mech = built_mechanism(lambda: additive.ClampedLaplace(
        sensitivity=sensitivity.value, lower=lower.value, upper=upper.value, **kwargs), args)
    if mech is None:
        return
    exercise_mechanism(mech, data, args)
    truth = data.draw(points_in(mech), label="true_value")
    masses = ok(lambda: mech.point_masses(truth),
                {**args, "true_value": Arg(truth, domain_tag(mech, truth))})
    if masses is not None:
        at_lower, at_upper = (np.asarray(m) for m in masses)
        assert np.all((0 <= at_lower) & (at_upper >= 0) & (at_lower + at_upper <= 1 + 1e-12))


@covers("additive.make_mechanism", "additive.AdditiveMechanism",
        *[f"additive.AdditiveMechanism.{m}" for m in MECHANISM_METHODS
          if m not in ("integer_output", "name")])
@PROPERTY
@given(kind=choices(additive.MECHANISM_KINDS), sensitivity=whole_sensitivity(),
       extra=st.dictionaries(st.sampled_from(["epsilon", "delta", "rho", "scale", "lower",
                                              "upper"]),
                             st.one_of(st.floats(0.1, 10.0), st.sampled_from([NAN, -1.0, 0.0,
                                                                              "x", None])),
                             max_size=2),
       use_extra=st.integers(0, 3), data=st.data())
def test_make_mechanism(kind, sensitivity, extra, use_extra, data):
    suits = {"laplace": {"epsilon": 1.0}, "gaussian": {"epsilon": 1.0, "delta": 1e-6},
             "geometric": {"scale": 2.0}, "bounded_laplace": {"epsilon": 1.0, "lower": -1.0,
                                                              "upper": 1.0},
             "clamped_laplace": {"scale": 0.5, "lower": 0.0, "upper": 10.0}}
    given_ = dict(suits.get(kind.value, {}))
    if use_extra == 0:  # a quarter of the time, options drawn at random on top
        given_.update(extra)
    if kind.value != "geometric" and isinstance(sensitivity.value, float) and (
            sensitivity.value == 1.5):
        sensitivity = Arg(1.5, "nice")  # only the geometric mechanism needs a whole number
    mech, error = attempt(lambda: additive.make_mechanism(kind.value,
                                                          sensitivity=sensitivity.value,
                                                          **given_))
    if error is not None:
        assert any(names(error, n) for n in ("kind", "sensitivity", "epsilon", "delta", "rho",
                                             "scale", "lower", "upper")), error
        return
    assert kind.tag != "bad" and sensitivity.tag != "bad"
    assert isinstance(mech, additive.AdditiveMechanism)
    exercise_mechanism(mech, data, {"sensitivity": sensitivity,
                                    **{n: Arg(v, "nice") for n, v in given_.items()}})


# ============================================================================================
# dpcore.selection
# ============================================================================================


def score_vectors() -> st.SearchStrategy:
    """Score vectors: ordinary, all equal, with float64's extremes, and invalid ones (empty,
    2-D, NaN/inf, junk)."""
    return st.one_of(
        float_arrays(NICE_ELEMENTS, min_side=1, max_side=6),
        st.builds(lambda n, v: np.full(n, v), st.integers(1, 6),
                  st.one_of(NICE_ELEMENTS, EDGE_ELEMENTS)),
        float_arrays(st.one_of(NICE_ELEMENTS, EDGE_ELEMENTS), min_side=1, max_side=6),
        st.lists(st.integers(-5, 5), min_size=1, max_size=6),
        any_arrays(),
    )


def scores_arg(scores: object, name: str = "scores") -> dict[str, Arg]:
    return {name: Arg(scores, array_tag(scores, ndim=1, min_size=1))}


def k_arg(k: Arg, scores: object) -> Arg:
    """k > d (or k for invalid scores, which are refused first) is out of range."""
    arr = numeric_or_none(scores)
    if k.tag == "nice" and arr is not None and arr.ndim == 1 and int(k.value) > arr.size:
        return Arg(k.value, "bad")
    return k


def check_indices(out: object, d: int, trials: object) -> None:
    if trials is None:
        assert isinstance(out, int) and 0 <= out < d
    else:
        assert out.shape == (int(trials),) and out.dtype == np.int64
        assert np.all((0 <= out) & (out < d))


@covers("selection.report_noisy_max", "selection.noisy_top_k")
@PROPERTY
@given(scores=score_vectors(), k=counts(1, 7), scale=positive(), noise=choices(
    selection.NOISE_TYPES), negate=flags(), trials=trial_counts(), rng=rngs())
def test_report_noisy_max_and_top_k(scores, k, scale, noise, negate, trials, rng):
    common = {"scale": scale, "noise": noise, "negate": negate, "trials": trials, "rng": rng}
    args = {**scores_arg(scores), **common}
    with bounded_time():  # huge trials are refused before any work
        out = ok(lambda: selection.report_noisy_max(
            scores, scale=scale.value, noise=noise.value, negate=negate.value,
            trials=trials.value, rng=rng.value), args)
    if out is not None:
        check_indices(out, np.size(scores), trials.value)
    k = k_arg(k, scores)
    with bounded_time():
        top = ok(lambda: selection.noisy_top_k(
            scores, k.value, scale=scale.value, noise=noise.value, negate=negate.value,
            trials=trials.value, rng=rng.value), {**args, "k": k})
    if top is not None:
        rows = top.reshape(-1, int(k.value))
        assert top.shape == ((int(k.value),) if trials.value is None
                             else (int(trials.value), int(k.value)))
        assert np.all((0 <= rows) & (rows < np.size(scores)))
        assert all(len(set(row)) == len(row) for row in rows.tolist()), "repeated index"


@covers("selection.exponential_mechanism", "selection.permute_and_flip")
@PROPERTY
@given(utilities=score_vectors(), epsilon=positive(), sensitivity=positive(),
       monotonic=flags(), trials=trial_counts(), rng=rngs())
def test_exponential_mechanism_and_permute_and_flip(utilities, epsilon, sensitivity, monotonic,
                                                    trials, rng):
    args = {**scores_arg(utilities, "utilities"), "epsilon": epsilon,
            "sensitivity": sensitivity, "monotonic": monotonic, "trials": trials, "rng": rng}
    for select in (selection.exponential_mechanism, selection.permute_and_flip):
        with bounded_time():
            out = ok(lambda s=select: s(utilities, epsilon=epsilon.value,
                                        sensitivity=sensitivity.value, monotonic=monotonic.value,
                                        trials=trials.value, rng=rng.value), args)
        if out is not None:
            check_indices(out, np.size(utilities), trials.value)
            u = np.sort(np.asarray(utilities, dtype=np.float64))
            if trials.value is not None and u.size > 1:
                with np.errstate(over="ignore"):
                    lead = (u[-1] - u[-2]) * as_real(epsilon.value) / as_real(
                        sensitivity.value)
                if lead > 4e3:  # thousands of noise scales ahead: the best always wins
                    assert np.all(out == np.argmax(np.asarray(utilities)))


@covers("selection.selection_probabilities", "selection.prob_best_selected",
        "selection.expected_score_gap")
@PROPERTY
@given(scores=score_vectors(), scale=positive(), noise=choices(selection.NOISE_TYPES),
       negate=flags())
def test_selection_probabilities(scores, scale, noise, negate):
    args = {**scores_arg(scores), "scale": scale, "noise": noise, "negate": negate}
    kwargs = {"scale": scale.value, "noise": noise.value, "negate": negate.value}
    probs = ok(lambda: selection.selection_probabilities(scores, **kwargs), args)
    best = ok(lambda: selection.prob_best_selected(scores, **kwargs), args)
    gap = ok(lambda: selection.expected_score_gap(scores, **kwargs), args)
    if probs is None:
        return
    s = np.asarray(scores, dtype=np.float64)
    s = -s if negate.value else s
    assert probs.shape == s.shape
    assert np.all((0 <= probs) & (probs <= 1)) and probs.sum() == pytest.approx(1.0, abs=1e-9)
    order = np.argsort(s, kind="stable")  # a higher score is never less likely
    assert np.all(np.diff(probs[order]) >= -1e-9)
    for value in np.unique(s):  # equal scores, equal chances
        tied = probs[s == value]
        assert np.ptp(tied) <= 1e-9
    assert 1 / s.size - 1e-9 <= best <= 1
    with np.errstate(over="ignore"):
        spread = float(np.ptp(s))
    assert gap >= 0 and (not math.isfinite(spread) or gap <= spread * (1 + 1e-9))


@covers("selection.prob_top_k_recovered")
@PROPERTY
@given(scores=score_vectors(), k=counts(1, 7), scale=positive(),
       noise=choices(selection.NOISE_TYPES), negate=flags(),
       trials=trial_counts(none_ok=False, hi=50), rng=rngs())
def test_prob_top_k_recovered(scores, k, scale, noise, negate, trials, rng):
    k = k_arg(k, scores)
    args = {**scores_arg(scores), "k": k, "scale": scale, "noise": noise, "negate": negate,
            "trials": trials, "rng": rng}
    with bounded_time():
        p = ok(lambda: selection.prob_top_k_recovered(
            scores, k.value, scale=scale.value, noise=noise.value, negate=negate.value,
            trials=trials.value, rng=rng.value), args)
    if p is not None:
        assert 0 <= p <= 1
        if int(k.value) == np.size(scores):
            assert p == 1.0  # choosing every candidate always recovers the top-k set


@covers("selection.noisy_max_privacy", "selection.noisy_max_scale")
@PROPERTY
@given(scale=positive(), sensitivity=positive(), noise=choices(selection.NOISE_TYPES),
       monotonic=flags(), k=tagged(st.integers(1, 100), st.sampled_from([2**63, 10**30, 10**400]),
                                   st.sampled_from([0, -1, 1.5, True, None, "1"])),
       measure=choices(("pure", "zcdp")))
def test_noisy_max_privacy_and_scale(scale, sensitivity, noise, monotonic, k, measure):
    args = {"scale": scale, "sensitivity": sensitivity, "noise": noise,
            "monotonic": monotonic, "k": k, "measure": measure}
    privacy = ok(lambda: selection.noisy_max_privacy(
        scale.value, sensitivity=sensitivity.value, noise=noise.value,
        monotonic=monotonic.value, k=k.value, measure=measure.value), args)
    if privacy is None:
        return
    assert isinstance(privacy, PureDP if measure.value == "pure" else ZCDP)
    c = 1 if monotonic.value else 2
    eps_round = c * as_real(sensitivity.value) / as_real(scale.value)
    if measure.value == "pure" and int(k.value) < 2**53:
        assert privacy.epsilon == pytest.approx(int(k.value) * eps_round, rel=1e-12)
    del args["scale"], args["measure"]
    back = ok(lambda: selection.noisy_max_scale(
        privacy, sensitivity=sensitivity.value, noise=noise.value, monotonic=monotonic.value,
        k=k.value), args)
    budget = privacy.epsilon if isinstance(privacy, PureDP) else privacy.rho
    # The inverse, where the budget carries full precision: a subnormal one keeps few bits
    # (seed 26: sensitivity 5e-324 / scale 1.5 reads epsilon 5e-324, whose scale is 1.0).
    if back is not None and budget >= np.finfo(float).tiny:
        assert back == pytest.approx(as_real(scale.value), rel=1e-9)
    wrong = ok(lambda: selection.noisy_max_scale(ApproxDP(1.0, 1e-6), noise=noise.value),
               {"privacy": Arg(None, "bad"), "noise": noise})
    assert wrong is None


# ============================================================================================
# dpcore.queries
# ============================================================================================

COLUMN_KINDS = ("int", "float", "bool", "text", "mixed", "category", "nullable", "complex",
                "dates")


@st.composite
def frames(draw) -> pd.DataFrame:
    """Small frames with a column of each kind, missing values, inf and float64's extremes."""
    n = draw(st.integers(0, 6))
    floats = st.one_of(NICE_ELEMENTS, EDGE_ELEMENTS, NON_FINITE_ELEMENTS)
    words = st.sampled_from(["a", "b", "c", None])
    columns = {
        "int": draw(st.lists(st.integers(-(2**62), 2**62), min_size=n, max_size=n)),
        "float": draw(st.lists(floats, min_size=n, max_size=n)),
        "bool": draw(st.lists(st.booleans(), min_size=n, max_size=n)),
        "text": draw(st.lists(words, min_size=n, max_size=n)),
        "mixed": draw(st.lists(st.one_of(words, st.integers(0, 3), st.just(NAN)), min_size=n,
                               max_size=n)),
    }
    frame = pd.DataFrame(columns)
    frame["int"] = frame["int"].astype(np.int64)
    frame["category"] = pd.Categorical(frame["text"], categories=["a", "b", "c", "d"])
    frame["nullable"] = pd.array(draw(st.lists(st.one_of(st.integers(-5, 5), st.none()),
                                               min_size=n, max_size=n)), dtype="Int64")
    frame["complex"] = np.array(draw(st.lists(NICE_ELEMENTS, min_size=n, max_size=n)),
                                dtype=float) * (1 + 1j)
    frame["dates"] = pd.to_datetime(np.arange(n), unit="D")
    return frame


def column_names() -> st.SearchStrategy[Arg]:
    return tagged(st.sampled_from(COLUMN_KINDS), None,
                  st.sampled_from(["missing", "", None, 0, ("int",), "INT"]))


def frame_args() -> st.SearchStrategy[Arg]:
    return tagged(frames(), None, st.sampled_from([None, {"int": [1, 2]}, [[1, 2]],
                                                   np.ones((2, 2)), "frame"]))


def category_lists() -> st.SearchStrategy[Arg]:
    """Declared categories: None (from the data), lists (maybe missing some values), or junk."""
    return tagged(
        st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c", "d", 0, 1, 2, 3, True]),
                                      min_size=1, max_size=5, unique_by=str)),
        None,
        st.sampled_from(["abc", [], ["a", "a"], ["a", None], ["a", NAN], {"a": 1}, 3,
                         ["1", 1]]),
    )


def column_arg(frame: Arg, column: Arg, *, numeric: bool) -> Arg:
    """A column that is present but not numeric is refused when numbers are needed."""
    if frame.tag == "bad" or column.tag == "bad":
        return column
    if column.value not in frame.value.columns:
        return Arg(column.value, "bad")
    dtype = frame.value[column.value].dtype
    if numeric and not (pd.api.types.is_numeric_dtype(dtype)
                        and not pd.api.types.is_complex_dtype(dtype)):
        return Arg(column.value, "bad")
    return column


@covers("queries.QueryAnswer")
@PROPERTY
@given(true_value=any_arrays(), l1=positive(), l2=positive())
def test_query_answer(true_value, l1, l2):
    answer = ok(lambda: queries.QueryAnswer(true_value=true_value, l1_sensitivity=l1.value,
                                            l2_sensitivity=l2.value, integer_valued=False),
                {"true_value": Arg(true_value, array_tag(true_value)), "l1_sensitivity": l1,
                 "l2_sensitivity": l2})
    if answer is not None:
        assert answer.true_value.dtype == np.float64 and not answer.true_value.flags.writeable
        np.testing.assert_array_equal(answer.true_value, numeric_or_none(true_value))
        if isinstance(true_value, np.ndarray):
            assert true_value.flags.writeable  # the caller's array is copied, not frozen


@covers("queries.count", "queries.count_where")
@PROPERTY
@given(frame=frame_args(), column=column_names(),
       value=tagged(st.sampled_from(["a", 1, 0.5, NAN, None, True, pd.NA, np.int64(2)]), None,
                    st.sampled_from([(1, 2), [1], {"a"}, np.array([1.0])])))
def test_count_and_count_where(frame, column, value):
    answer = ok(lambda: queries.count(frame.value), {"frame": frame})
    if answer is not None:
        assert float(answer.true_value) == len(frame.value)
        assert answer.l1_sensitivity == answer.l2_sensitivity == 1
    matches = ok(lambda: queries.count_where(frame.value, column.value, value.value),
                 {"frame": frame, "column": column, "value": value})
    if matches is not None:
        assert 0 <= float(matches.true_value) <= len(frame.value)
        assert float(matches.true_value).is_integer()


@covers("queries.bounded_sum", "queries.bounded_mean_parts")
@PROPERTY
@given(frame=frame_args(), column=st.one_of(
           st.sampled_from(["int", "float", "bool", "nullable"]),
           st.sampled_from(COLUMN_KINDS + ("missing", None))).map(lambda c: Arg(c, "nice")),
       lower=finite_real(), upper=finite_real())
def test_bounded_sum_and_mean_parts(frame, column, lower, upper):
    if lower.tag == upper.tag == "nice" and as_real(lower.value) > as_real(upper.value):
        lower, upper = upper, lower  # mostly valid bounds
    args = {"frame": frame, "column": column_arg(frame, column, numeric=True), "lower": lower,
            "upper": upper}
    if lower.tag != "bad" and upper.tag != "bad" and not as_real(lower.value) < as_real(
            upper.value):
        args["upper"] = Arg(upper.value, "bad")  # any finite lower < upper will do for a sum
    answer = ok(lambda: queries.bounded_sum(frame.value, column.value, lower=lower.value,
                                            upper=upper.value), args)
    parts = ok(lambda: queries.bounded_mean_parts(frame.value, column.value, lower=lower.value,
                                                  upper=upper.value), args)
    if answer is None:
        assert parts is None
        return
    lo, hi = as_real(lower.value), as_real(upper.value)
    values = frame.value[column.value].to_numpy(dtype=np.float64, na_value=np.nan)
    present = values[~np.isnan(values)]
    assert answer.missing_rows == values.size - present.size
    assert answer.clamped_rows == np.count_nonzero((present < lo) | (present > hi))
    n = present.size
    total = float(answer.true_value)
    assert lo * n - 1e-9 * abs(lo * n) - 1e-300 <= total <= hi * n + 1e-9 * abs(hi * n) + 1e-300
    assert answer.l1_sensitivity == max(abs(lo), abs(hi))
    sum_part, count_part = parts
    assert float(sum_part.true_value) == total and float(count_part.true_value) == n


@covers("queries.histogram", "queries.crosstab")
@PROPERTY
@given(frame=frame_args(), row=column_names(), column=column_names(),
       row_categories=category_lists(), column_categories=category_lists())
def test_histogram_and_crosstab(frame, row, column, row_categories, column_categories):
    result, error = attempt(lambda: queries.histogram(frame.value, column.value,
                                                      categories=column_categories.value))
    assert_finite(result)
    if error is not None:
        assert any(names(error, n) for n in ("frame", "column", "categories")), error
    else:
        assert frame.tag == column.tag == column_categories.tag == "nice"
        assert result.true_value.ndim == 1 and len(result.labels) == result.true_value.size
        assert result.true_value.sum() == len(frame.value) - result.missing_rows
        assert np.all(result.true_value >= 0)
    table, error = attempt(lambda: queries.crosstab(
        frame.value, row.value, column.value, row_categories=row_categories.value,
        column_categories=column_categories.value))
    assert_finite(table)
    if error is not None:
        assert any(names(error, n) for n in ("frame", "row", "column", "row_categories",
                                             "column_categories")), error
    else:
        assert table.true_value.shape == (len(table.labels), len(table.column_labels))
        assert table.true_value.sum() == len(frame.value) - table.missing_rows


@st.composite
def sum_and_count(draw) -> tuple[Arg, Arg]:
    """A bounded sum and count from a frame, or junk in their place."""
    frame = draw(frames())
    lower = draw(st.one_of(st.floats(-1e3, 0), st.integers(-100, 0).map(float),
                           st.sampled_from([-1e300, -TINY])))
    upper = draw(st.one_of(st.floats(1e-3, 1e3), st.integers(1, 100).map(float),
                           st.sampled_from([1e300, TINY])))
    column = draw(st.sampled_from(["int", "float", "bool", "nullable"]))
    total, how_many = queries.bounded_mean_parts(frame, column, lower=lower, upper=upper)
    edge = max(abs(lower), abs(upper)) > 1e6 or min(abs(upper), abs(lower) or 1) < 1e-6
    tag = "extreme" if edge else "nice"
    junk = draw(st.sampled_from([None, 1.0, "sum", queries.histogram(frame, "bool")
                                 if len(frame) else None]))
    which = draw(st.sampled_from(["both", "both", "both", "sum_junk", "count_junk",
                                  "count_for_sum"]))
    if which == "sum_junk":
        return Arg(junk, "bad"), Arg(how_many, "nice")
    if which == "count_junk":
        return Arg(total, tag), Arg(junk, "bad")
    if which == "count_for_sum":  # a count carries no bounds: sum_answer is refused
        return Arg(how_many, "bad"), Arg(how_many, "nice")
    return Arg(total, tag), Arg(how_many, "nice")


@covers("queries.noisy_mean", "queries.mean_privacy", "queries.mean_mechanisms")
@PROPERTY
@given(parts=sum_and_count(), mechanism=choices(queries.MEAN_MECHANISMS),
       epsilon=positive(), delta=probability(zero_ok=False), rho=positive(),
       sum_share=probability(zero_ok=False, nice_hi=0.99), budget=st.sampled_from(
           ["fits", "fits", "fits", "fits", "epsilon", "epsilon and delta", "rho", "none",
            "all"]), gaussian_rho=st.booleans(), trials=trial_counts(), rng=rngs())
def test_noisy_mean_and_mean_privacy(parts, mechanism, epsilon, delta, rho, sum_share, budget,
                                     gaussian_rho, trials, rng):
    sum_answer, count_answer = parts
    if budget == "fits":
        budget = "epsilon" if mechanism.value != "gaussian" else (
            "rho" if gaussian_rho else "epsilon and delta")
    kwargs: dict[str, object] = {}
    args = {"sum_answer": sum_answer, "count_answer": count_answer, "mechanism": mechanism,
            "sum_share": sum_share}
    given_ = {"epsilon": ("epsilon",), "epsilon and delta": ("epsilon", "delta"),
              "rho": ("rho",), "none": (), "all": ("epsilon", "delta", "rho")}[budget]
    for name in given_:
        arg = {"epsilon": epsilon, "delta": delta, "rho": rho}[name]
        kwargs[name] = arg.value
        args[name] = arg
    needs = {"laplace": ("epsilon",), "geometric": ("epsilon",),
             "gaussian": ("epsilon", "delta") if "rho" not in given_ or len(given_) == 3
             else ("rho",)}.get(mechanism.value)
    for name in set(given_) ^ set(needs or given_):  # a part of the budget missing or extra
        args[name] = Arg(kwargs.get(name), "bad")
    if mechanism.value == "geometric" and sum_answer.tag != "bad" and not (
            sum_answer.value.integer_valued):
        args["mechanism"] = Arg(mechanism.value, "bad")
    if mechanism.value == "geometric" and all(args.get(n, Arg(0, "bad")).tag != "bad" for n in (
            "sum_answer", "count_answer", "epsilon", "sum_share", "mechanism")):
        # A nice epsilon (1e-3) times a nice sum_share (1e-9) leaves the sum a scale beyond
        # the geometric mechanism's 1e12 (int64 sampling): refused, naming the split.
        eps, share = np.float64(as_real(epsilon.value)), as_real(sum_share.value)
        with np.errstate(divide="ignore", over="ignore"):  # (a subnormal epsilon's part: 0)
            widest = max(sum_answer.value.l1_sensitivity / (eps * share),
                         1 / (eps * (1 - share)))
        if widest > additive._MAX_GEOMETRIC_SCALE * (1 - 1e-9):
            args["sum_share"] = Arg(sum_share.value, "extreme")
    privacy = ok(lambda: queries.mean_privacy(sum_answer.value, count_answer.value,
                                              mechanism=mechanism.value,
                                              sum_share=sum_share.value, **kwargs), args,
                 {"sum_answer": ("sensitivity", "lower", "upper")})
    built = ok(lambda: queries.mean_mechanisms(sum_answer.value, count_answer.value,
                                               mechanism=mechanism.value,
                                               sum_share=sum_share.value, **kwargs), args,
               {"sum_answer": ("sensitivity", "lower", "upper")})
    assert (built is None) == (privacy is None)
    if built is not None:  # the parts noisy_mean samples from compose to mean_privacy
        assert measures.compose(*(m.privacy for m in built)) == privacy
    with bounded_time():
        mean, error = attempt(lambda: queries.noisy_mean(
            sum_answer.value, count_answer.value, mechanism=mechanism.value,
            sum_share=sum_share.value, rng=rng.value, trials=trials.value, **kwargs))
    assert_finite(mean)
    if privacy is None or any(a.tag == "bad" for a in (trials, rng)):
        assert mean is None and error is not None
        return
    assert error is None, error
    lo, hi = sum_answer.value.lower, sum_answer.value.upper
    assert mean.shape == (() if trials.value is None else (int(trials.value),))
    assert np.all((lo <= mean) & (mean <= hi))
    # the two halves compose to exactly the budget, never more
    if isinstance(privacy, PureDP):
        assert privacy.epsilon <= as_real(epsilon.value)
    elif isinstance(privacy, ZCDP):
        assert privacy.rho <= as_real(rho.value)
    else:
        assert privacy.epsilon <= as_real(epsilon.value)
        assert privacy.delta <= as_real(delta.value)


# ============================================================================================
# dpcore.postprocess
# ============================================================================================

TABLE_ELEMENTS = st.one_of(NICE_ELEMENTS, NICE_ELEMENTS, EDGE_ELEMENTS,
                           st.integers(-3, 3).map(float))


@st.composite
def tables(draw) -> tuple[object, object, object, bool]:
    """(noisy, total, table_ndim, consistent): consistent triples, or anything at all."""
    if draw(st.booleans()):
        noisy = draw(float_arrays(TABLE_ELEMENTS, min_dims=1, max_dims=3, min_side=1,
                                  max_side=4))
        table_ndim = draw(st.integers(1, noisy.ndim))
        lead = noisy.shape[:noisy.ndim - table_ndim]
        total = draw(st.one_of(
            st.floats(0, 1e4), st.sampled_from([0.0, -5.0, 1e300, TINY]),
            hnp.arrays(np.float64, lead, elements=st.floats(-10, 1e4))))
        explicit = draw(st.booleans()) or np.ndim(total) not in (0, len(lead))
        return noisy, total, table_ndim if explicit or np.ndim(total) == 0 else None, True
    noisy = draw(any_arrays(max_dims=3))
    total = draw(st.one_of(finite_real().map(lambda a: a.value), any_arrays()))
    table_ndim = draw(st.one_of(st.none(), st.integers(-1, 4), st.sampled_from([1.0, "1",
                                                                                True])))
    return noisy, total, table_ndim, False


def per_table_target(noisy: np.ndarray, total: object, table_ndim: int | None) -> np.ndarray:
    total = np.asarray(total, dtype=np.float64)
    table_ndim = noisy.ndim - total.ndim if table_ndim is None else table_ndim
    lead = noisy.shape[:noisy.ndim - table_ndim]
    return np.broadcast_to(np.maximum(total, 0.0), lead), tuple(range(len(lead), noisy.ndim))


def table_outcome(call: Callable[[], object], consistent: bool, edge: bool) -> object | None:
    """Finite output, or a ValueError/TypeError naming one of the arguments (always allowed
    for arbitrary input; for consistent input only at float64's edges)."""
    result, error = attempt(call)
    assert_finite(result)
    if error is not None:
        assert not consistent or edge, error
        assert any(names(error, n) for n in ("noisy", "total", "table_ndim")), error
    return result


@covers("postprocess.clip_negative", "postprocess.round_counts")
@PROPERTY
@given(noisy=any_arrays(max_dims=3))
def test_clip_and_round(noisy):
    args = {"noisy": Arg(noisy, array_tag(noisy))}
    clipped = ok(lambda: postprocess.clip_negative(noisy), args)
    rounded = ok(lambda: postprocess.round_counts(noisy), args)
    if clipped is not None:
        assert clipped.shape == np.shape(noisy) and np.all(clipped >= 0)
        assert np.all(rounded == np.floor(rounded)) and np.all(np.abs(rounded - noisy) <= 0.5)


@covers("postprocess.rescale_to_total", "postprocess.round_to_total", "postprocess.publish")
@PROPERTY
@given(case=tables(), clip=flags(), round_=flags())
def test_rescale_round_and_publish(case, clip, round_):
    noisy, total, table_ndim, consistent = case
    edge = consistent and (np.max(np.abs(noisy)) > 1e200 or np.max(np.abs(total)) > 1e200)
    scaled = table_outcome(lambda: postprocess.rescale_to_total(noisy, total,
                                                                table_ndim=table_ndim),
                           consistent, edge)
    if scaled is not None:
        target, axes = per_table_target(np.asarray(noisy, dtype=float), total, table_ndim)
        assert scaled.shape == np.shape(noisy) and np.all(scaled >= 0)
        np.testing.assert_allclose(scaled.sum(axis=axes), target, rtol=1e-9, atol=1e-300)
    rounded = table_outcome(lambda: postprocess.round_to_total(noisy, total,
                                                               table_ndim=table_ndim),
                            consistent, edge)
    if rounded is not None:
        target, axes = per_table_target(np.asarray(noisy, dtype=float), np.rint(total),
                                        table_ndim)
        assert np.all(rounded >= 0) and np.all(rounded == np.floor(rounded))
        exact = target < 2**52  # integer sums are exact only below 2**53
        assert np.array_equal(rounded.sum(axis=axes)[exact], target[exact])
    flags_bad = [name for name, a in (("clip", clip), ("round", round_)) if a.tag == "bad"
                 or not isinstance(a.value, bool)]
    for with_total in (None, total):
        published, error = attempt(lambda t=with_total: postprocess.publish(
            noisy, clip=clip.value, round=round_.value, total=t, table_ndim=table_ndim))
        assert_finite(published)
        if flags_bad:
            assert error is not None and any(names(error, n) for n in flags_bad), error
        elif error is not None:
            assert any(names(error, n) for n in ("noisy", "total", "table_ndim", "clip")), error
        elif clip.value:
            assert np.all(published >= 0)


@covers("postprocess.table_errors")
@PROPERTY
@given(true=any_arrays(), published=any_arrays(max_dims=3), trials=st.integers(0, 3))
def test_table_errors(true, published, trials):
    candidates = [published]
    if numeric_or_none(true) is not None:  # also a well-shaped release of the same table
        candidates.append(np.broadcast_to(np.asarray(true, dtype=float), (trials,
                                                                          *np.shape(true))) + 1)
    for released in candidates:
        errors, error = attempt(lambda r=released: postprocess.table_errors(true, r))
        if error is not None:
            assert any(names(error, n) for n in ("true", "published")), error
            continue
        assert np.all(np.isfinite(errors["l1_error"])) and np.all(errors["l1_error"] >= 0)
        relative = errors["relative_l1_error_percent"]
        if np.any(np.asarray(true, dtype=float) != 0):
            assert np.all(np.isfinite(relative)) and np.all(relative >= 0)
        else:  # documented: no relative error against an all-zero table
            assert np.all(np.isnan(relative))


# ============================================================================================
# dpcore.risk
# ============================================================================================


def probability_arrays(*, closed: bool) -> st.SearchStrategy:
    """Priors (open interval) or false-positive rates (closed) as scalars or arrays, with
    invalid ones among them."""
    inside = st.floats(0, 1, exclude_min=not closed, exclude_max=not closed)
    edges = st.sampled_from([TINY, 1e-300, 0.5, 1 - 2**-53] + ([0.0, 1.0] if closed else []))
    return st.one_of(inside, edges, float_arrays(st.one_of(inside, edges), min_dims=0,
                                                 max_dims=2, max_side=4), any_arrays())


def probability_tag(value: object, *, closed: bool) -> str:
    arr = numeric_or_none(value)
    if arr is None:
        return "bad"
    inside = (0 <= arr) & (arr <= 1) if closed else (0 < arr) & (arr < 1)
    return "nice" if np.all(inside) else "bad"


def zcdp_only(privacy: Arg, delta: Arg) -> Arg:
    """delta applies only to zCDP (and must then be in (0, 1)); None is "not given"."""
    if delta.value is None:
        return Arg(None, "nice")
    if privacy.tag != "bad" and not isinstance(privacy.value, ZCDP):
        return Arg(delta.value, "bad")
    return delta


@covers("risk.max_posterior", "risk.PosteriorBound", "risk.describe_risk")
@PROPERTY
@given(privacy=measure_args(), prior=probability_arrays(closed=False),
       delta=st.one_of(*[st.none().map(lambda v: Arg(v, "nice"))] * 3,
                       probability(zero_ok=False)))
def test_max_posterior_and_describe_risk(privacy, prior, delta):
    args = {"privacy": privacy, "prior": Arg(prior, probability_tag(prior, closed=False)),
            "delta": zcdp_only(privacy, delta)}
    bound = ok(lambda: risk.max_posterior(privacy.value, prior, delta=delta.value), args,
               MEASURE_WORDS)
    if bound is not None:
        assert isinstance(bound, risk.PosteriorBound)
        p = np.asarray(prior, dtype=np.float64)
        posterior = np.asarray(bound.posterior)
        assert posterior.shape == p.shape
        assert np.all((p * (1 - 1e-12) <= posterior) & (posterior <= 1))
        assert 0 <= bound.certainty_probability < 1 and bound.epsilon >= 0
    # (the tag first: np.ndim raises on a ragged prior, which is already tagged bad)
    if args["prior"].tag != "bad" and np.ndim(prior) != 0:
        args["prior"] = Arg(prior, "bad")  # a sentence needs one number
    sentence = ok(lambda: risk.describe_risk(privacy.value, prior, delta=delta.value), args,
                  MEASURE_WORDS)
    if sentence is not None:
        assert isinstance(sentence, str) and "nan" not in sentence.lower()
        assert "inf" not in sentence.replace("information", "")


@covers("risk.tradeoff", "risk.gaussian_tradeoff", "risk.advantage")
@PROPERTY
@given(privacy=measure_args(), fpr=probability_arrays(closed=True), mu=positive(),
       use_mu=st.booleans(), search=st.integers(0, 3))
def test_tradeoff_and_advantage(privacy, fpr, mu, use_mu, search):
    fpr_arg = Arg(fpr, probability_tag(fpr, closed=True))
    if use_mu:  # gaussian_mu instead of a measure: privacy must then be None
        both = Arg(privacy.value, "bad") if privacy.value is not None else Arg(None, "nice")
        tpr = ok(lambda: risk.tradeoff(privacy.value, fpr, gaussian_mu=mu.value),
                 {"privacy": both, "fpr": fpr_arg, "gaussian_mu": mu},
                 {"gaussian_mu": ("mu",)})
        gain = ok(lambda: risk.advantage(privacy.value, gaussian_mu=mu.value),
                  {"privacy": both, "gaussian_mu": mu})
        direct = ok(lambda: risk.gaussian_tradeoff(mu.value, fpr), {"mu": mu, "fpr": fpr_arg})
        assert tpr is None or direct is None or np.array_equal(tpr, direct)
    else:
        tpr = ok(lambda: risk.tradeoff(privacy.value, fpr), {"privacy": privacy, "fpr": fpr_arg},
                 MEASURE_WORDS)
        gain = None
        # The zCDP advantage is a numerical search of 0.1-0.3 s: a quarter of the zCDP
        # examples run it, to keep this test within its time.
        if not isinstance(privacy.value, ZCDP) or search == 0:
            gain = ok(lambda: risk.advantage(privacy.value), {"privacy": privacy},
                      MEASURE_WORDS)
    if gain is not None:
        assert 0 <= gain <= 1
    if tpr is not None:
        alpha = np.asarray(fpr, dtype=np.float64)
        assert np.shape(tpr) == alpha.shape
        assert np.all((alpha <= tpr) & (tpr <= 1))
        order = np.argsort(alpha, axis=None)  # a looser test never catches fewer
        assert np.all(np.diff(np.ravel(tpr)[order]) >= -1e-9)
        if gain is not None:  # the advantage is the largest gap TPR − FPR
            assert np.all(np.asarray(tpr) - alpha <= gain + 1e-6)


# ============================================================================================
# dpcore.utility
# ============================================================================================

#: Simulation sizes beyond what one call may draw (MAX_DRAWS): refused at once.
OVER_BUDGET_TRIALS = [10**9 + 1, 2**40, 2**63, 10**30, 10**400]


def sweep_trials() -> st.SearchStrategy[Arg]:
    return tagged(st.integers(1, 30), None,
                  st.sampled_from([0, -1, 2.0, NAN, True, None, "5", *OVER_BUDGET_TRIALS]))


def epsilon_grids() -> st.SearchStrategy:
    return st.one_of(
        float_arrays(st.floats(1e-3, 1e3), min_side=1, max_side=3),
        float_arrays(st.one_of(st.floats(1e-3, 1e3), st.sampled_from(
            [TINY, 1e-300, 1e-10, 1e10, 1e300, HUGE])), min_side=1, max_side=3),
        st.floats(1e-3, 1e3).map(lambda e: [e]),
        st.sampled_from([[], [0.0], [-1.0], [NAN], [INF], [[1.0]], 1.0, "1", None]),
    )


def grid_tag(grid: object) -> str:
    tag = array_tag(grid, ndim=1, min_size=1, nice_abs=1e3)
    arr = numeric_or_none(grid)
    if tag != "bad" and not np.all(arr > 0):
        return "bad"
    if tag == "nice" and np.min(arr) < 1e-3:
        return "extreme"
    return tag


@st.composite
def mechanism_settings(draw, kinds=additive.MECHANISM_KINDS):
    """A mechanism kind with its options, mostly as it needs them; each option's Arg says
    whether it is missing (required), superfluous or invalid."""
    kind = draw(choices(kinds))
    k = kind.value if kind.tag == "nice" else "laplace"
    needs = {"gaussian": {"delta"}, "bounded_laplace": {"lower", "upper", "true_value"},
             "clamped_laplace": {"lower", "upper", "true_value"}}.get(k, set())
    allowed = needs | {"true_value"} | ({"delta"} if k == "bounded_laplace" else set())
    lower = draw(tagged(st.floats(-100, 0), st.sampled_from([-1e300, -TINY]),
                        st.sampled_from([NAN, INF, "0"])))
    upper = draw(tagged(st.floats(1, 100), st.sampled_from([1e300, HUGE]),
                        st.sampled_from([NAN, -INF, None])))
    truth = draw(tagged(st.floats(0, 1), st.sampled_from([0.0, -5.0, 1e3]),
                        st.sampled_from([NAN, [1.0, 2.0], "x"])))
    delta = draw(probability(zero_ok=k == "bounded_laplace"))
    options, args = {}, {"kind": kind}
    for name, arg in (("lower", lower), ("upper", upper), ("true_value", truth),
                      ("delta", delta)):
        # needed: nearly always given; allowed: half the time; not applicable: rarely
        chance = 9 if name in needs else 5 if name in allowed else 1
        present = draw(st.integers(0, 9)) < chance
        if not present:
            if name in needs:
                args[name] = Arg(None, "bad")  # required but missing
            continue
        options[name] = arg.value
        args[name] = arg if name in allowed else Arg(arg.value, "bad")
        if arg.value is None:  # None is "not given"
            args[name] = Arg(None, "bad" if name in needs else "nice")
    given_ok = [n in options and args[n].tag != "bad" for n in ("lower", "upper", "true_value")]
    if k == "bounded_laplace" and all(given_ok) and not (
            options["lower"] <= options["true_value"] <= options["upper"]):
        args["true_value"] = Arg(options["true_value"], "bad")  # outside the domain
    return options, args


def sensitivity_for(kind: Arg, sensitivity: Arg) -> Arg:
    """The geometric mechanism needs a whole-number sensitivity."""
    if kind.value == "geometric" and sensitivity.tag != "bad" and not as_real(
            sensitivity.value).is_integer():
        return Arg(sensitivity.value, "bad")
    return sensitivity


def check_relative(result: dict[str, np.ndarray], key: str, truth: float) -> None:
    """relative_<m> = <m> / |truth| is finite, or inf (documented) exactly where that ratio is
    beyond float64: a true value of 0, or one so near 0 (1e-308) that the ratio overflows."""
    log_huge = math.log(HUGE)
    for measure, relative in zip(np.ravel(result[key.removeprefix("relative_")]),
                                 np.ravel(result[key]), strict=True):
        if measure == 0:
            assert relative == 0, (key, truth)
            continue
        excess = INF if truth == 0 else math.log(measure) - math.log(abs(truth)) - log_huge
        if abs(excess) > 1e-12:  # (either is right within rounding of the boundary)
            assert relative == INF if excess > 0 else math.isfinite(relative), (
                key, measure, truth, relative)


@covers("utility.error_sweep")
@PROPERTY
@given(setting=mechanism_settings(), epsilons=epsilon_grids(), sensitivity=positive(),
       beta=probability(zero_ok=False), l2=st.one_of(st.none(), st.floats(0.1, 10)))
def test_error_sweep(setting, epsilons, sensitivity, beta, l2):
    options, args = setting
    args = {**args, "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "sensitivity": sensitivity_for(args["kind"], sensitivity), "beta": beta}
    result = judge(lambda: utility.error_sweep(
        args["kind"].value, epsilons=epsilons, sensitivity=sensitivity.value, beta=beta.value,
        l2_sensitivity=l2, **options), args, {"epsilons": ("epsilon", "scale")})
    if result is None:
        return
    n = np.size(epsilons)
    for key, value in result.items():
        assert value.shape == (n,), key
        if key.startswith("relative_"):
            check_relative(result, key, float(options["true_value"]))
        else:
            assert_finite(value, key)
    assert np.all(result["alpha"] >= 0) and np.all(result["scale"] > 0)
    assert np.all(result["mae"] <= result["rmse"] * (1 + 1e-9))  # Jensen: E|e| <= sqrt(E e²)


def releases() -> st.SearchStrategy[tuple[Callable, str]]:
    """Releases for monte_carlo_sweep: a Laplace release, and ones that break its contract."""
    def good(eps, n, rng, truth):
        return truth + rng.laplace(0.0, 1.0 / eps, (n, *np.shape(truth)))

    broken = {
        "wrong_shape": lambda eps, n, rng, truth: np.zeros((n + 1, *np.shape(truth))),
        "nan": lambda eps, n, rng, truth: np.full((n, *np.shape(truth)), NAN),
        "text": lambda eps, n, rng, truth: np.full((n, *np.shape(truth)), "x"),
        "none": lambda eps, n, rng, truth: None,
    }
    return st.one_of(st.just((good, "nice")), st.just((good, "nice")),
                     st.sampled_from([(f, "bad") for f in broken.values()]))


@covers("utility.monte_carlo_sweep")
@PROPERTY
@given(release=releases(), epsilons=epsilon_grids(), true_value=any_arrays(max_side=3),
       trials=sweep_trials(), beta=probability(zero_ok=False), rng=rngs())
def test_monte_carlo_sweep(release, epsilons, true_value, trials, beta, rng):
    make, release_tag = release
    truth = numeric_or_none(true_value)

    def simulate(eps, n, gen):
        return make(eps, n, gen, truth)

    args = {"release": Arg(simulate, release_tag), "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "true_value": Arg(true_value, array_tag(true_value, min_size=1)), "trials": trials,
            "beta": beta, "rng": rng}
    with bounded_time():
        result = judge(lambda: utility.monte_carlo_sweep(
            simulate, epsilons=epsilons, true_value=true_value, trials=trials.value,
            rng=rng.value, beta=beta.value), args,
            {"epsilons": ("release",), "true_value": ("release",)})
    if result is None:
        return
    for key, value in result.items():
        if key.startswith("relative_"):
            check_relative(result, key, float(truth))
        else:
            assert_finite(value, key)
    assert np.all(result["p05"] <= result["median"]) and np.all(result["median"] <= result["p95"])
    # (squares of errors below 1e-154 underflow: RMSE may then read 0 while MAE does not)
    assert np.all(result["mae"] <= result["rmse"] * (1 + 1e-9) + 1e-150)


@covers("utility.monte_carlo_error_sweep")
@PROPERTY
@given(setting=mechanism_settings(), epsilons=epsilon_grids(), sensitivity=positive(),
       trials=sweep_trials(), rng=rngs())
def test_monte_carlo_error_sweep(setting, epsilons, sensitivity, trials, rng):
    options, args = setting
    truth = options.pop("true_value", 0.5)
    if truth is None:
        truth = 0.5  # always given here
    if args.get("true_value", Arg(0, "nice")).tag == "bad" and array_tag(truth) != "bad":
        args["true_value"] = Arg(truth, "nice")  # here an array of true values is fine too
        if args["kind"].value == "bounded_laplace" and all(
                args.get(n, Arg(0, "bad")).tag != "bad" for n in ("lower", "upper")) and not (
                np.all((options["lower"] <= np.asarray(truth)) & (
                    np.asarray(truth) <= options["upper"]))):
            args["true_value"] = Arg(truth, "bad")
    args = {**args, "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "sensitivity": sensitivity_for(args["kind"], sensitivity), "trials": trials,
            "rng": rng}
    if args["kind"].value == "geometric" and args.get("true_value", Arg(0, "nice")).tag != "bad":
        truth = float(np.round(truth)) if np.ndim(truth) == 0 else truth
    with bounded_time():
        result = judge(lambda: utility.monte_carlo_error_sweep(
            args["kind"].value, epsilons=epsilons, sensitivity=sensitivity.value,
            true_value=truth, trials=trials.value, rng=rng.value, **options), args,
            {"epsilons": ("epsilon", "scale"), "true_value": ("values",)})
    if result is not None:
        assert all(np.shape(v) == (np.size(epsilons),) for v in result.values())
        # as in test_monte_carlo_sweep: squares of errors below 1e-154 underflow (seed 21: a
        # clamped Laplace at lower = -5e-324 gave MAE 5e-324 and RMSE 0)
        assert np.all(result["mae"] <= result["rmse"] * (1 + 1e-9) + 1e-150)


@covers("utility.selection_sweep")
@PROPERTY
@given(scores=score_vectors(), noise=choices(selection.NOISE_TYPES), epsilons=epsilon_grids(),
       sensitivity=positive(), monotonic=flags(), measure=choices(("pure", "zcdp")),
       k=counts(1, 4), negate=flags(), trials=sweep_trials(), rng=rngs())
def test_selection_sweep(scores, noise, epsilons, sensitivity, monotonic, measure, k, negate,
                         trials, rng):
    k = k_arg(k, scores)
    args = {**scores_arg(scores), "noise": noise, "epsilons": Arg(epsilons, grid_tag(epsilons)),
            "sensitivity": sensitivity, "monotonic": monotonic, "measure": measure, "k": k,
            "negate": negate}
    if k.tag != "bad" and int(k.value) > 1:  # simulated: trials and rng matter
        args.update(trials=trials, rng=rng)
    with bounded_time():
        result = judge(lambda: utility.selection_sweep(
            scores, noise=noise.value, epsilons=epsilons, sensitivity=sensitivity.value,
            monotonic=monotonic.value, measure=measure.value, k=k.value, negate=negate.value,
            trials=trials.value, rng=rng.value), args,
            {"epsilons": ("epsilon", "rho", "scale"), "sensitivity": ("scale",)})
    if result is not None:
        assert_finite(result)
        p = result["p_correct"]
        assert p.shape == (np.size(epsilons),) and np.all((0 <= p) & (p <= 1))
        assert np.all(result["scale"] > 0)


@covers("utility.smallest_epsilon", "utility.SmallestEpsilon")
@PROPERTY
@given(setting=mechanism_settings(), sensitivity=positive(), alpha=positive(),
       beta=probability(zero_ok=False))
def test_smallest_epsilon(setting, sensitivity, alpha, beta):
    options, args = setting
    args = {**args, "sensitivity": sensitivity_for(args["kind"], sensitivity), "alpha": alpha,
            "beta": beta}
    kind = args["kind"].value
    result, error = attempt(lambda: utility.smallest_epsilon(
        kind, sensitivity=sensitivity.value, alpha=alpha.value, beta=beta.value, **options))
    bad = [n for n, a in args.items() if a.tag == "bad"]
    if bad:
        assert error is not None and (len(bad) > 1 or names(error, bad[0])), (bad, error)
        return
    if error is not None:
        # No epsilon up to 1e3 meets an error bound too tight for the noise: refused naming
        # alpha (or the extreme parameter that made it so).
        assert any(names(error, n) for n in ("alpha", "epsilon", *args)), error
        return
    assert isinstance(result, utility.SmallestEpsilon)
    low, high = utility.EPSILON_RANGE
    assert low <= result.epsilon <= high
    assert result.met_at_lower_end == (result.epsilon == low)
    mech = additive.make_mechanism(kind, sensitivity=sensitivity.value, epsilon=result.epsilon,
                                   **{n: v for n, v in options.items() if n != "true_value"})
    assert mech.accuracy(beta.value, options.get("true_value")) <= as_real(alpha.value)


@covers("utility.smallest_epsilon_for_selection")
@PROPERTY
@given(scores=score_vectors(), noise=choices(selection.NOISE_TYPES), sensitivity=positive(),
       monotonic=flags(), target=probability(zero_ok=False, nice_hi=0.99), negate=flags())
def test_smallest_epsilon_for_selection(scores, noise, sensitivity, monotonic, target, negate):
    args = {**scores_arg(scores), "noise": noise, "sensitivity": sensitivity,
            "monotonic": monotonic, "target": target, "negate": negate}
    result, error = attempt(lambda: utility.smallest_epsilon_for_selection(
        scores, noise=noise.value, sensitivity=sensitivity.value, monotonic=monotonic.value,
        target=target.value, negate=negate.value))
    bad = [n for n, a in args.items() if a.tag == "bad"]
    if bad:
        assert error is not None and (len(bad) > 1 or names(error, bad[0])), (bad, error)
    elif error is not None:  # the best score's lead is too small even at epsilon = 1e3
        assert any(names(error, n) for n in ("target", *args)), error
    else:
        low, high = utility.EPSILON_RANGE
        assert low <= result.epsilon <= high
        assert result.met_at_lower_end == (result.epsilon == low)


# ============================================================================================
# dpcore.learning
# ============================================================================================


@st.composite
def classification_data(draw):
    """Declared bounds, training and test rows (some outside the bounds) and labels."""
    d = draw(st.integers(1, 3))
    lower = np.array(draw(st.lists(st.floats(-100, 0), min_size=d, max_size=d)))
    upper = lower + np.array(draw(st.lists(st.floats(0.1, 100), min_size=d, max_size=d)))
    labels = draw(st.sampled_from([[0, 1], [0, 1, 2], ["a", "b"]]))

    def rows(n):
        return (draw(hnp.arrays(np.float64, (n, d), elements=st.floats(-200, 200))),
                np.array(draw(st.lists(st.sampled_from(labels), min_size=n, max_size=n))))

    x_train, y_train = rows(draw(st.integers(1, 8)))
    x_test, y_test = rows(draw(st.integers(1, 5)))
    return [tuple(pair) for pair in zip(lower, upper, strict=True)], labels, (x_train, y_train,
                                                                             x_test, y_test)


def feature_bounds(good: list) -> st.SearchStrategy[Arg]:
    d = len(good)
    return tagged(
        st.sampled_from([good, {f"f{i}": b for i, b in enumerate(good)}]),
        st.sampled_from([[(-1e150, 1e150)] * d, [(0.0, 1e-150)] * d, [(-1e300, 1e300)] * d,
                         [(-HUGE, HUGE)] * d, [(0.0, 1e-300)] * d]),
        st.sampled_from([[], [(1.0, 1.0)] * d, [(NAN, 1.0)] * d, [(0.0, INF)] * d, "ab",
                         [(0.0, 1.0, 2.0)] * d, [("0", 1.0)] * d, None, 3]),
    )


def too_wide_or_narrow(bounds: Arg) -> Arg:
    """Bounds whose half-width squared leaves float64 are refused (extreme → bad)."""
    if bounds.tag == "extreme":
        lo, hi = bounds.value[0]
        half = hi / 2 - lo / 2
        if not 0 < half * half < INF:
            return Arg(bounds.value, "bad")
    return bounds


def no_spread(model: learning.PrivateGaussianNB, x: np.ndarray, y: np.ndarray) -> bool:
    """Would the non-private (scikit-learn) model have a zero variance?"""
    clamped = np.clip(np.asarray(x, dtype=float), model.lower, model.upper)
    smoothing = model.var_smoothing * np.var(clamped, axis=0).max()
    return any(np.any(np.var(clamped[y == label], axis=0) + smoothing <= 0)
               for label in np.unique(y))


def rows_arg(X: object, d: int, name: str = "X") -> Arg:
    arr = numeric_or_none(X)
    ok_shape = arr is not None and arr.ndim == 2 and arr.shape[1] == d and arr.shape[0] >= 1
    return Arg(X, "nice" if ok_shape and np.all(np.isfinite(arr)) else "bad")


@covers("learning.PrivateGaussianNB", "learning.PrivateGaussianNB.fit",
        "learning.PrivateGaussianNB.predict", "learning.PrivateGaussianNB.predict_joint_log_proba",
        "learning.PrivateGaussianNB.score", "learning.PrivateGaussianNB.privacy")
@PROPERTY
@given(case=classification_data(), epsilon=st.one_of(positive(), st.just(Arg(None, "nice"))),
       noise=choices(("laplace", "bounded_laplace")), var_smoothing=positive(zero_ok=True),
       declared=st.sampled_from(["none", "all", "more", "fewer", "junk"]), rng=rngs(),
       data=st.data())
def test_private_gaussian_nb(case, epsilon, noise, var_smoothing, declared, rng, data):
    good_bounds, labels, (x_train, y_train, x_test, y_test) = case
    epsilon = Arg(None, "nice") if epsilon.value is None else epsilon  # None: not private
    bounds = too_wide_or_narrow(data.draw(feature_bounds(good_bounds), label="bounds"))
    d = len(good_bounds)
    classes = {"none": Arg(None, "nice"), "all": Arg(labels, "nice"),
               "more": Arg([*labels, labels[0] * 3], "nice"),
               # (bad when y_train has a label outside it: y = [1] against classes [0] too)
               "fewer": Arg(labels[:1], "bad" if set(y_train.tolist()) - set(labels[:1])
                            else "nice"),
               "junk": Arg([[1, 2], "a"], "bad")}[declared]
    x = data.draw(st.one_of(st.just(x_train), st.just(x_train), any_arrays(max_dims=2)),
                  label="X")
    x_arg = rows_arg(x, d)
    if x_arg.tag != "bad" and np.shape(x)[0] != y_train.size:
        x_arg = Arg(x, "bad")  # one label per row
    model = ok(lambda: learning.PrivateGaussianNB(
        epsilon=epsilon.value, bounds=bounds.value, noise=noise.value,
        var_smoothing=var_smoothing.value, classes=classes.value),
        {"epsilon": epsilon, "bounds": bounds, "noise": noise, "var_smoothing": var_smoothing,
         "classes": classes if declared == "junk" else Arg(None, "nice")})
    if model is None:
        return
    assert model.privacy is None or model.privacy.epsilon == as_real(epsilon.value)
    private = epsilon.value is not None
    fit_args = {"X": x_arg, "classes": classes, "rng": rng if private else Arg(None, "nice"),
                "bounds": Arg(bounds.value, "nice" if bounds.tag == "nice" else "extreme")}
    if not private and classes.tag != "bad" and x_arg.tag != "bad":
        # Non-private: rows in every declared class. (Declared, deduplicated: "more" repeats
        # label 0 for [0, 1] (0 * 3), seed 27; without classes they are read from y.)
        if set(classes.value or ()) - set(y_train.tolist()):
            fit_args["classes"] = Arg(classes.value, "bad")
        elif no_spread(model, x, y_train):
            fit_args["X"] = Arg(x, "bad")
    fitted = ok(lambda: model.fit(x, y_train, rng=rng.value), fit_args,
                {"classes": ("class", "y")})
    if fitted is None:
        return
    k = model.classes_.size
    assert np.all(model.class_prior_ >= 0) and model.class_prior_.sum() == pytest.approx(1.0)
    assert np.all(model.var_ > 0) and model.theta_.shape == model.var_.shape == (k, d)
    lower, upper = np.array(good_bounds).T if bounds.tag == "nice" and isinstance(
        bounds.value, list) else (None, None)
    if lower is not None:  # means lie within the declared bounds
        assert np.all((lower - 1e-9 <= model.theta_) & (model.theta_ <= upper + 1e-9))
    test_rows = data.draw(st.one_of(st.just(x_test), any_arrays(max_dims=2)), label="X_test")
    test_arg = rows_arg(test_rows, d)
    jll = ok(lambda: model.predict_joint_log_proba(test_rows), {"X": test_arg})
    if jll is not None:
        assert jll.shape == (np.shape(test_rows)[0], k)
        predicted = model.predict(test_rows)
        assert set(predicted.tolist()) <= set(model.classes_.tolist())
        if np.shape(test_rows)[0] == y_test.size:
            assert 0 <= model.score(test_rows, y_test) <= 1


@covers("learning.accuracy_vs_epsilon")
@PROPERTY
@given(case=classification_data(), epsilons=epsilon_grids(),
       noise=choices(("laplace", "bounded_laplace")),
       repetitions=tagged(st.integers(1, 5), None, st.sampled_from(
           [0, -1, 10**6 + 1, 2**63, 10**400, 2.0, None])),
       huge=st.sampled_from([None, None, None, 10**6, 10**5]),
       seed=tagged(st.integers(0, 2**64), st.sampled_from([2**200]),
                   st.sampled_from([-1, 1.5, None, "1", True])),
       declare=st.booleans())
def test_accuracy_vs_epsilon(case, epsilons, noise, repetitions, huge, seed, declare):
    good_bounds, labels, (x_train, y_train, x_test, y_test) = case
    if huge is not None:  # allowed by the bound on repetitions, but too much work for the data
        repetitions = Arg(huge, "nice")
    classes = labels if declare or set(labels) <= set(y_train.tolist()) else None
    args = {"epsilons": Arg(epsilons, grid_tag(epsilons)), "noise": noise,
            "repetitions": repetitions, "seed": seed, "classes": Arg(classes, "nice")}
    if classes is not None and set(classes) - set(y_train.tolist()):
        args["classes"] = Arg(classes, "bad")  # the baseline needs rows in each class
    elif no_spread(learning.PrivateGaussianNB(epsilon=None, bounds=good_bounds), x_train,
                   y_train):
        args["X"] = Arg(x_train, "bad")  # no baseline without spread
    with bounded_time():
        result, error = attempt(lambda: learning.accuracy_vs_epsilon(
            x_train, y_train, x_test, y_test, epsilons=epsilons, bounds=good_bounds,
            noise=noise.value, repetitions=repetitions.value, seed=seed.value,
            classes=classes))
    assert_finite(result)
    bad = [n for n, a in args.items() if a.tag == "bad"]
    if error is not None:
        assert bad or huge is not None or args["epsilons"].tag == "extreme", error
        if len(bad) == 1:
            assert names(error, bad[0]) or bad == ["classes"] and names(error, "class"), error
        elif huge is not None and not bad:
            # a subnormal epsilon in the grid is refused first, by name, before the work bound
            assert names(error, "repetitions") or names(error, "epsilon"), error
        return
    assert not bad, (bad, result)
    n = np.size(epsilons)
    assert result["accuracies"].shape == (n, int(repetitions.value))
    for key in ("median", "p05", "p95"):
        assert np.all((0 <= result[key]) & (result[key] <= 1))
    assert 0 <= result["baseline"] <= 1


# ============================================================================================
# dpcore.audit
# ============================================================================================


def event_lists() -> st.SearchStrategy[Arg]:
    return tagged(
        st.one_of(st.lists(st.floats(-5, 5), min_size=1, max_size=3).map(audit.threshold_events),
                  st.integers(1, 4).map(audit.category_events)),
        None,
        st.sampled_from([[], "y > 0", None, [("y > 0",)], [(1, lambda y: y > 0)],
                         [("not one per sample", lambda y: True)], 3]),
    )


@covers("audit.threshold_events", "audit.category_events")
@PROPERTY
@given(thresholds=any_arrays(max_dims=2),
       n=tagged(st.integers(1, 50), None, st.sampled_from(
           [0, -1, 1.5, True, None, "3", 10**9, 2**63, 10**400])))
def test_event_builders(thresholds, n):
    with bounded_time():
        events = ok(lambda: audit.threshold_events(thresholds),
                    {"thresholds": Arg(thresholds, array_tag(thresholds, min_size=1))})
    if events is not None:
        assert len(events) == 2 * np.size(thresholds)
        outputs = np.linspace(-10, 10, 7)
        for description, predicate in events:
            assert isinstance(description, str) and predicate(outputs).shape == (7,)
    with bounded_time():  # 10**9 categories must be refused, not built one closure at a time
        categories = ok(lambda: audit.category_events(n.value), {"n_categories": n})
    if categories is not None:
        assert len(categories) == int(n.value)
        hits = np.array([predicate(np.arange(int(n.value))) for _, predicate in categories])
        assert np.array_equal(hits, np.eye(int(n.value), dtype=bool))


@covers("audit.audit_samples", "audit.AuditResult")
@PROPERTY
@given(outputs_x=any_arrays(min_dims=1, max_dims=2, max_side=6),
       shift=st.floats(-3, 3), events=event_lists(), delta=probability(zero_ok=True),
       confidence=probability(zero_ok=False, nice_hi=0.999))
def test_audit_samples(outputs_x, shift, events, delta, confidence):
    numeric = numeric_or_none(outputs_x)
    outputs_xprime = outputs_x if numeric is None else numeric + shift
    # Outputs may be anything the events can read (text too), with samples along axis 0.
    try:
        shape = np.shape(outputs_x) if isinstance(outputs_x, (list, np.ndarray)) else ()
    except ValueError:  # ragged
        shape = ()
    tag = "nice" if len(shape) >= 1 and shape[0] >= 1 and numeric is not None and (
        numeric.size > 0) else "bad"
    if numeric is None and len(shape) >= 1 and shape[0] >= 1 and np.prod(shape) > 0:
        return  # non-numeric outputs: whether an event can read them is the event's business
    args = {"outputs_x": Arg(outputs_x, tag), "events": events, "delta": delta,
            "confidence": confidence}
    result = ok(lambda: audit.audit_samples(outputs_x, outputs_xprime, events.value,
                                            delta=delta.value, confidence=confidence.value),
                args, {"events": ("event",), "outputs_x": ("outputs", "outputs_xprime")})
    if result is not None:
        assert isinstance(result, audit.AuditResult)
        assert result.epsilon_lower_bound >= 0 and result.samples == numeric.shape[0]
        assert 0 <= result.p_hat <= 1 and 0 <= result.q_hat <= 1
        if shift == 0:  # identical samples prove nothing
            assert result.epsilon_lower_bound == 0


@covers("audit.audit_mechanism")
@PROPERTY
@given(x=st.floats(-5, 5), samples=tagged(
    st.integers(1, 2000), None, st.sampled_from([0, -1, 1.5, None, *OVER_BUDGET_TRIALS])),
       events=event_lists(), delta=probability(zero_ok=True),
       confidence=probability(zero_ok=False, nice_hi=0.999), rng=rngs(),
       release_kind=st.sampled_from(["laplace", "laplace", "wrong_count", "scalar", "none"]))
def test_audit_mechanism(x, samples, events, delta, confidence, rng, release_kind):
    def release(data, gen, n):
        if release_kind == "wrong_count":
            return np.zeros(n + 1)
        if release_kind == "scalar":
            return 0.0
        if release_kind == "none":
            return None
        return data + gen.laplace(0.0, 1.0, n)

    args = {"samples": samples, "events": events, "delta": delta, "confidence": confidence,
            "rng": rng, "release": Arg(release, "nice" if release_kind == "laplace" else "bad")}
    with bounded_time():
        result = ok(lambda: audit.audit_mechanism(
            release, np.array(x), np.array(x + 1.0), events=events.value,
            samples=samples.value, delta=delta.value, confidence=confidence.value,
            rng=rng.value), args, {"events": ("event",)})
    if result is not None:
        assert result.samples == int(samples.value) and result.epsilon_lower_bound >= 0
        # Laplace(1) on neighbours 1 apart is 1-DP: a valid audit proves more with probability
        # at most 1 − confidence. At a low confidence (0.03 is valid input) the bound exceeds 1
        # most of the time, as it may: checked only from 0.99 on, where it fails on at most 1%
        # of such examples (fewer: the Bonferroni correction over events is conservative).
        if as_real(confidence.value) >= 0.99:
            assert result.epsilon_lower_bound <= 1.0 + 1e-9


# ============================================================================================
# regressions: each bug the properties above found, pinned by one example
# ============================================================================================


def refused(call: Callable[[], object], name: str, error: type = ValueError) -> None:
    """``call`` raises ``error`` naming ``name`` (under strict numerics, so no warning first)."""
    result, caught = attempt(call)
    assert isinstance(caught, error), (result, caught)
    assert names(caught, name), caught


def finite(call: Callable[[], object]) -> object:
    result, caught = attempt(call)
    assert caught is None, caught
    assert_finite(result)
    return result


GAUSS = additive.Gaussian(sensitivity=1.0, scale=1.0)
LAPLACE = additive.Laplace(sensitivity=1.0, scale=1.0)
BOUNDED = additive.BoundedLaplace(sensitivity=1.0, lower=0.0, upper=1.0, epsilon=1.0)
CLAMPED = additive.ClampedLaplace(sensitivity=1.0, lower=0.0, upper=1.0, scale=1e-3)
FAR_CLAMPED = additive.ClampedLaplace(sensitivity=1.0, lower=1e308, upper=1.5e308, scale=1.0)
HUGE_FRAME = pd.DataFrame({"x": [HUGE, HUGE], "g": ["a", "b"]})
ROWS, LABELS = np.array([[0.0], [1.0], [0.5], [0.2]]), np.array([0, 1, 0, 1])


def nan_release(eps, n, gen):
    return np.full((n, 1), NAN)


def gaussian_accuracy_at_tiny_beta():
    # was inf (beta/2 underflowed); the root of log Φ(−z) = log(beta/2), found here directly
    z = brentq(lambda t: float(log_ndtr(-t)) - (math.log(TINY) - math.log(2)), 1.0, 60.0,
               xtol=1e-14)
    assert finite(lambda: GAUSS.accuracy(TINY)) == pytest.approx(z, rel=1e-12)


def exponential_mechanism_breaks_ties_at_random():
    # 0·inf = NaN logits made every tie pick index 0; now ties are broken at random
    picks = finite(lambda: selection.exponential_mechanism(
        [0.0, 0.0, 0.0], epsilon=1.0, sensitivity=TINY, trials=300,
        rng=np.random.default_rng(0)))
    assert set(picks.tolist()) == {0, 1, 2}


def relative_error_beyond_float64_is_inf():
    # alpha = ln 8 = 2.08 over |true value| 1.1e-308 is beyond float64: inf, as against a 0
    result, _ = attempt(lambda: utility.error_sweep(
        "laplace", epsilons=[1.0], sensitivity=1.0, beta=0.125,
        true_value=1.1125369292536007e-308))
    assert_finite({k: v for k, v in result.items() if not k.startswith("relative_")})
    assert result["relative_alpha"].tolist() == [INF]
    assert result["relative_mae"] == pytest.approx(1.0 / 1.1125369292536007e-308)


def fitted_model():
    model = learning.PrivateGaussianNB(epsilon=1.0, bounds=[(0.0, 1.0)], classes=[0, 1])
    return model.fit(ROWS, LABELS, rng=np.random.default_rng(0))


#: (what was wrong, check): each check fails on the code before the fix (verified against the
#: previous commit) and passes after it.
REGRESSIONS = {
    # dpcore._checks
    "check_real(10**400): OverflowError": lambda: refused(
        lambda: _checks.check_real("epsilon", 10**400), "epsilon"),
    "finite_array(complex array): imaginary part dropped": lambda: refused(
        lambda: _checks.finite_array("values", np.array([1 + 2j])), "values", TypeError),
    "finite_array(10**400): OverflowError": lambda: refused(
        lambda: _checks.finite_array("total", [10**400]), "total"),
    "finite_array(['1.0']): text read as a number": lambda: refused(
        lambda: _checks.finite_array("values", ["1.0"]), "values", TypeError),
    # dpcore.measures
    "PureDP(1e200).to_zcdp(): OverflowError": lambda: refused(
        lambda: PureDP(1e200).to_zcdp(), "epsilon"),
    "PureDP(1e-200).to_zcdp(): 'rho must be > 0'": lambda: refused(
        lambda: PureDP(1e-200).to_zcdp(), "epsilon"),
    "ZCDP(1.8e308).to_approx(): named epsilon": lambda: refused(
        lambda: ZCDP(HUGE).to_approx(0.5), "rho"),
    "compose(PureDP(1e308) twice): OverflowError": lambda: refused(
        lambda: measures.compose(PureDP(1e308), PureDP(1e308)), "epsilon"),
    "advanced_composition(epsilon=800): OverflowError": lambda: refused(
        lambda: measures.advanced_composition(PureDP(800.0), 1, 1e-6), "epsilon"),
    "advanced_composition(k=10**400): OverflowError": lambda: refused(
        lambda: measures.advanced_composition(PureDP(1.0), 10**400, 1e-6), "k"),
    "advanced_composition(delta_prime=5e-324): log(1/delta') = inf": lambda: (
        finite(lambda: measures.advanced_composition(PureDP(0.1), 10, TINY)).epsilon
        == pytest.approx(0.1 * math.sqrt(20 * -math.log(TINY)) + math.expm1(0.1), rel=1e-12)),
    # dpcore.additive
    "Laplace(sensitivity=1e300, epsilon=1e-300): scale inf": lambda: refused(
        lambda: additive.Laplace(sensitivity=1e300, epsilon=1e-300), "epsilon"),
    "Laplace(sensitivity=5e-324, epsilon=2): scale 0": lambda: refused(
        lambda: additive.Laplace(sensitivity=TINY, epsilon=2.0), "epsilon"),
    "Laplace(scale=1e200).variance(): OverflowError": lambda: refused(
        lambda: additive.Laplace(sensitivity=1.0, scale=1e200).variance(0.0), "scale"),
    "Gaussian(5e-324, rho=5e-324).zcdp: ZeroDivisionError": lambda: (
        finite(lambda: additive.Gaussian(sensitivity=TINY, rho=TINY).zcdp.rho) == TINY),
    "Gaussian(5e-324, epsilon=1, delta=1e-9): hung forever": lambda: refused(
        lambda: additive.Gaussian(sensitivity=TINY, epsilon=1.0, delta=1e-9), "epsilon"),
    "Gaussian(epsilon=1e100): RuntimeError, root not bracketed": lambda: (
        finite(lambda: additive.Gaussian(sensitivity=1.0, epsilon=1e100, delta=0.5)).privacy
        .epsilon == 1e100),
    "Gaussian.delta_for_epsilon(1e300): NaN": lambda: (
        finite(lambda: GAUSS.delta_for_epsilon(1e300)) == 0.0),
    "Gaussian.accuracy(5e-324): inf": gaussian_accuracy_at_tiny_beta,
    "Laplace.accuracy(5e-324): inf": lambda: (
        finite(lambda: LAPLACE.accuracy(TINY)) == pytest.approx(-math.log(TINY))),
    "Geometric.accuracy(5e-324): inf": lambda: (
        finite(lambda: additive.Geometric(sensitivity=1, scale=1.0).accuracy(TINY)) > 700),
    "Laplace(scale=0.5).error_cdf(±1.8e308): overflow warning": lambda: (
        finite(lambda: additive.Laplace(sensitivity=1.0, scale=0.5).error_cdf([-HUGE, HUGE]))
        .tolist() == [0.0, 1.0]),
    "Laplace.error_cdf(complex array): imaginary part dropped": lambda: refused(
        lambda: LAPLACE.error_cdf(np.array([1 + 1j])), "x", TypeError),
    "Geometric.sample(ragged): numpy's message": lambda: refused(
        lambda: additive.Geometric(sensitivity=1, scale=1.0).sample(
            [[1], [1, 2]], rng=np.random.default_rng(0)), "values", TypeError),
    "BoundedLaplace.accuracy(true_value=2): named values": lambda: refused(
        lambda: BOUNDED.accuracy(0.05, 2.0), "true_value"),
    "BoundedLaplace.error_cdf(x, true_value) mismatch: numpy's message": lambda: refused(
        lambda: BOUNDED.error_cdf([0.0, 1.0, 2.0], [0.5, 0.5]), "x"),
    "ClampedLaplace(lower=-1.8e308, upper=1.8e308): width inf": lambda: refused(
        lambda: additive.ClampedLaplace(sensitivity=1.0, lower=-HUGE, upper=HUGE, epsilon=1.0),
        "upper"),
    "ClampedLaplace.bias(-1e306) at scale 1e-3: NaN (inf − inf)": lambda: (
        finite(lambda: CLAMPED.bias(-1e306)) == pytest.approx(1e306)),
    "ClampedLaplace.bias beyond float64: inf": lambda: refused(
        lambda: FAR_CLAMPED.bias(-1e308), "values"),
    "Geometric.error_cdf(±1.8e308) at scale 0.5: overflow warning": lambda: (
        finite(lambda: additive.Geometric(sensitivity=1, scale=0.5).error_cdf([-HUGE, HUGE]))
        .tolist() == [0.0, 1.0]),
    "Geometric.error_pmf(1.8e308) at scale 0.5: overflow warning": lambda: (
        finite(lambda: additive.Geometric(sensitivity=1, scale=0.5).error_pmf([HUGE]))
        .tolist() == [0.0]),
    "Gaussian(epsilon=9e307, delta=0.5): rho overflow named sensitivity and scale": lambda: (
        refused(lambda: additive.Gaussian(sensitivity=1.0, epsilon=8.988465674327692e307,
                                          delta=0.5), "epsilon")),
    "BoundedLaplace(sensitivity=5e-324, epsilon=2): 'math domain error'": lambda: refused(
        lambda: additive.BoundedLaplace(sensitivity=TINY, lower=0.0, upper=1.0, epsilon=2.0),
        "sensitivity"),
    "BoundedLaplace(epsilon=5e-324): ZeroDivisionError": lambda: refused(
        lambda: additive.BoundedLaplace(sensitivity=1.0, lower=0.0, upper=1.0, epsilon=TINY),
        "epsilon"),
    "advanced_composition(PureDP(5e-324), 1, 0.999999): epsilon rounded down to 0": lambda: (
        measures.advanced_composition(PureDP(TINY), 1, 0.999999).epsilon > 0),
    "BoundedLaplace(lower=0, upper=5e-324, scale=1): 0/0 in its masses": lambda: refused(
        lambda: additive.BoundedLaplace(sensitivity=1.0, lower=0.0, upper=TINY, scale=1.0),
        "upper"),
    "BoundedLaplace(upper=5e-324, delta=0.5, scale=1): named the width, not delta": lambda: (
        refused(lambda: additive.BoundedLaplace(sensitivity=1.0, lower=0.0, upper=TINY,
                                                delta=0.5, scale=1.0), "delta")),
    "BoundedLaplace(width 1e-120, epsilon=4e203): math domain error": lambda: refused(
        lambda: additive.BoundedLaplace(sensitivity=1.0, lower=0.0, upper=9.67e-121,
                                        epsilon=3.9e203), "epsilon"),
    "Laplace(sensitivity=1, epsilon=3.7).privacy: epsilon an ulp above 3.7": lambda: (
        additive.Laplace(sensitivity=1.0, epsilon=3.7).privacy.epsilon <= 3.7),
    "Gaussian(sensitivity=1, rho=0.3).zcdp: rho an ulp above 0.3": lambda: (
        additive.Gaussian(sensitivity=1.0, rho=0.3).zcdp.rho <= 0.3),
    "ClampedLaplace.mse(1e300) on [0, 10]: inf (bias squared)": lambda: refused(
        lambda: additive.ClampedLaplace(sensitivity=1.0, lower=0.0, upper=10.0,
                                        epsilon=1.0).mse([1e300]), "values"),
    # dpcore.selection
    "noisy_max_scale(PureDP(0.3), k=3): its privacy an ulp above 0.3": lambda: (
        selection.noisy_max_privacy(selection.noisy_max_scale(
            PureDP(0.3), noise="laplace", k=3), noise="laplace", k=3).epsilon <= 0.3),
    "exponential_mechanism(sensitivity=5e-324): ties always index 0":
        exponential_mechanism_breaks_ties_at_random,
    "report_noisy_max([±1.8e308], scale=1e300): overflow to inf": lambda: (
        finite(lambda: selection.report_noisy_max(
            [HUGE, -HUGE], scale=1e300, noise="laplace", trials=5,
            rng=np.random.default_rng(0))).tolist() == [0] * 5),
    "noisy_top_k([±1.8e308, 0], scale=1e300): overflow to inf": lambda: (
        finite(lambda: selection.noisy_top_k(
            [HUGE, -HUGE, 0.0], 3, scale=1e300, noise="laplace",
            rng=np.random.default_rng(0))).tolist() == [0, 2, 1]),
    "noisy_max_privacy(scale=5e-324): named epsilon": lambda: refused(
        lambda: selection.noisy_max_privacy(TINY, noise="laplace"), "scale"),
    "noisy_max_privacy(k=10**400): OverflowError": lambda: refused(
        lambda: selection.noisy_max_privacy(1.0, noise="laplace", k=10**400), "k"),
    "noisy_max_privacy(zcdp, scale=1e-200): OverflowError": lambda: refused(
        lambda: selection.noisy_max_privacy(1e-200, noise="gumbel", measure="zcdp"), "scale"),
    "noisy_max_scale(k=10**400): OverflowError": lambda: refused(
        lambda: selection.noisy_max_scale(ZCDP(1.0), noise="laplace", k=10**400), "k"),
    "selection_probabilities(laplace, gap 1.8e308): overflow in the series": lambda: (
        finite(lambda: selection.selection_probabilities(
            [0.0, HUGE], scale=1.0, noise="laplace", negate=True))
        == pytest.approx([1.0, 0.0], abs=1e-12)),
    "selection_probabilities(laplace, [0, 5e-324]): zero-width panel": lambda: (
        finite(lambda: selection.selection_probabilities(
            [0.0, TINY], scale=1.0, noise="laplace")) == pytest.approx([0.5, 0.5])),
    "expected_score_gap([1e300, -1.8e308]): overflow": lambda: (
        finite(lambda: selection.expected_score_gap(
            [1e300, -HUGE], scale=1.0, noise="laplace")) == 0.0),
    # dpcore.queries
    "count_where(value=('a', 'b')): pandas' broadcasting error": lambda: refused(
        lambda: queries.count_where(HUGE_FRAME, "g", ("a", "b")), "value", TypeError),
    "bounded_sum overflowing float64: true value inf": lambda: refused(
        lambda: queries.bounded_sum(HUGE_FRAME, "x", lower=0.0, upper=HUGE), "lower"),
    "QueryAnswer(true_value=None): NaN": lambda: refused(
        lambda: queries.QueryAnswer(true_value=None, l1_sensitivity=1.0, l2_sensitivity=1.0,
                                    integer_valued=True), "true_value", TypeError),
    "mean_privacy(laplace, epsilon=3.7): 3.7000000000000006, above the budget": lambda: (
        queries.mean_privacy(*queries.bounded_mean_parts(
            pd.DataFrame({"x": [0, 1]}), "x", lower=0, upper=1), mechanism="laplace",
            epsilon=3.7).epsilon <= 3.7),
    "mean_privacy(geometric, epsilon=0.004, sum_share=1e-9): sum_share not named": lambda: (
        refused(lambda: queries.mean_privacy(*queries.bounded_mean_parts(
            pd.DataFrame({"x": [0]}), "x", lower=0, upper=4), mechanism="geometric",
            epsilon=0.00390625, sum_share=1e-9), "sum_share")),
    # dpcore.postprocess
    "rescale_to_total([1e300], 3e-277): 0 (underflow)": lambda: (
        finite(lambda: postprocess.rescale_to_total([1e300], 3e-277)).tolist() == [3e-277]),
    "rescale_to_total([1e308, 1e308], 10): zeros (sum overflow)": lambda: (
        finite(lambda: postprocess.rescale_to_total([1e308, 1e308], 10.0)).tolist()
        == [5.0, 5.0]),
    "rescale_to_total([0, 0, 0], 1.8e308): cells summing to inf": lambda: refused(
        lambda: postprocess.rescale_to_total([0.0, 0.0, 0.0], HUGE), "total"),
    "table_errors(true total beyond float64): relative error 0": lambda: (
        finite(lambda: postprocess.table_errors([HUGE, HUGE], [HUGE, 0.0]))[
            "relative_l1_error_percent"] == pytest.approx(50.0)),
    "table_errors(L1 beyond float64): inf": lambda: refused(
        lambda: postprocess.table_errors([HUGE], [-HUGE]), "published"),
    # dpcore.risk
    "max_posterior(prior=5e-324): posterior 0, below the prior": lambda: (
        finite(lambda: risk.max_posterior(PureDP(1.0), TINY)).posterior >= TINY),
    "describe_risk(prior=ragged list): numpy's message": lambda: refused(
        lambda: risk.describe_risk(PureDP(1.0), [[1.0], [1.0, 2.0]]), "prior", TypeError),
    "tradeoff(ZCDP(1e300), fpr=0): NaN": lambda: (
        finite(lambda: risk.tradeoff(ZCDP(1e300), [0.0, 0.5])).tolist() == [0.0, 1.0]),
    "tradeoff(fpr=complex array): imaginary part dropped": lambda: refused(
        lambda: risk.tradeoff(PureDP(1.0), np.array([0.5 + 1j])), "fpr", TypeError),
    # dpcore.utility
    "error_sweep(gaussian, beta=5e-324): alpha inf": lambda: (
        finite(lambda: utility.error_sweep("gaussian", epsilons=[1.0], sensitivity=1.0,
                                           beta=TINY, delta=1e-6))["alpha"][0] > 0),
    "error_sweep(gaussian, upper=1): silently ignored": lambda: refused(
        lambda: utility.error_sweep("gaussian", epsilons=[1.0], sensitivity=1.0, delta=1e-6,
                                    upper=1.0), "upper"),
    "error_sweep(laplace, sensitivity=5e-324): scale 0 reported": lambda: refused(
        lambda: utility.error_sweep("laplace", epsilons=[2.0], sensitivity=TINY), "epsilon"),
    "error_sweep(clamped_laplace, true value 1e306 outside): MSE and MAE overflow": lambda: (
        refused(lambda: utility.error_sweep(
            "clamped_laplace", epsilons=[2e3], sensitivity=1.0, lower=0.0, upper=1.0,
            true_value=-1e306), "values")),
    "error_sweep(bounded_laplace, true value outside, epsilon 1e300): named epsilon": lambda: (
        refused(lambda: utility.error_sweep(
            "bounded_laplace", epsilons=[1e300], sensitivity=0.5, lower=0.0, upper=1.0,
            true_value=-5.0), "true_value")),
    "monte_carlo_error_sweep(same): named epsilon": lambda: refused(
        lambda: utility.monte_carlo_error_sweep(
            "bounded_laplace", epsilons=[1e300], sensitivity=0.5, lower=0.0, upper=1.0,
            true_value=-5.0, trials=3, rng=np.random.default_rng(0)), "true_value"),
    "error_sweep(true_value=1.1e-308): relative error overflow warning":
        relative_error_beyond_float64_is_inf,
    "error_sweep(geometric, epsilon=746): log(0), r underflowed": lambda: (
        finite(lambda: utility.error_sweep("geometric", epsilons=[746.0], sensitivity=1,
                                           beta=0.5))["alpha"].tolist() == [0.0]),
    "selection_sweep(negate=1, epsilon=5e-324): named the scale, not negate": lambda: refused(
        lambda: utility.selection_sweep([0.0], noise="laplace", epsilons=[TINY], negate=1),
        "negate", TypeError),
    "smallest_epsilon_for_selection(scores=0.0, sensitivity=1.8e304): named the scale":
        lambda: refused(lambda: utility.smallest_epsilon_for_selection(
            0.0, noise="laplace", sensitivity=1.797693134862316e304, target=0.5), "scores"),
    # P(|Z| > 62) = 2 r^63 / (1 + r) = 2**-1074 with r = e^-t: 63 t = 1075 ln 2 − ln(1 + r)
    "smallest_epsilon(geometric, alpha=62, beta=5e-324): RuntimeError (subnormal tail)":
        lambda: finite(lambda: utility.smallest_epsilon("geometric", sensitivity=1.0,
                                                        alpha=62.0, beta=TINY)).epsilon
        == pytest.approx((1075 * math.log(2) - math.log1p(math.exp(-11.83))) / 63, rel=1e-6),
    "smallest_epsilon(sensitivity=5e-324): an epsilon no mechanism has": lambda: refused(
        lambda: utility.smallest_epsilon("laplace", sensitivity=TINY, alpha=1.0, beta=0.5),
        "sensitivity"),
    "check_int(10**5000): Python refuses to print the number": lambda: refused(
        lambda: _checks.check_int("trials", 10**5000, maximum=10), "trials"),
    "smallest_epsilon(gaussian, alpha=5e-324): named scale": lambda: refused(
        lambda: utility.smallest_epsilon("gaussian", sensitivity=1.0, alpha=TINY, beta=0.5,
                                         delta=0.5), "alpha"),
    "monte_carlo_sweep(release gives NaN): NaN summaries": lambda: refused(
        lambda: utility.monte_carlo_sweep(nan_release, epsilons=[1.0], true_value=[0.0],
                                          trials=3, rng=np.random.default_rng(0)), "release"),
    "monte_carlo_sweep(true_value=[]): IndexError": lambda: refused(
        lambda: utility.monte_carlo_sweep(nan_release, epsilons=[1.0], true_value=[],
                                          trials=3, rng=np.random.default_rng(0)),
        "true_value"),
    "monte_carlo_sweep(2 epsilons × 6e8 trials): 1.2e9 draws": lambda: refused(
        lambda: utility.monte_carlo_sweep(nan_release, epsilons=[1.0, 2.0], true_value=0.0,
                                          trials=6 * 10**8, rng=np.random.default_rng(0)),
        "trials"),
    "selection_sweep(0-d scores, k=2): named k": lambda: refused(
        lambda: utility.selection_sweep(np.array(1.0), noise="laplace", epsilons=[1.0], k=2,
                                        rng=np.random.default_rng(0)), "scores"),
    # dpcore.learning
    "PrivateGaussianNB(bounds ±1e300): -inf likelihoods": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=1.0, bounds=[(-1e300, 1e300)]), "bounds"),
    "PrivateGaussianNB(bounds (0, 1e-300)): 0/0": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=1.0, bounds=[(0.0, 1e-300)]), "bounds"),
    "PrivateGaussianNB(epsilon=5e-324): failed at fit, 'got 0.0'": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=TINY, bounds=[(0.0, 1.0)]), "epsilon"),
    "PrivateGaussianNB.predict([[1e300]]): class 0 by overflow": lambda: refused(
        lambda: fitted_model().predict([[1e300]]), "X"),
    "PrivateGaussianNB(epsilon=None).fit(one row): NaN likelihoods": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=None, bounds=[(0.0, 1.0)]).fit([[0.5]], [0]),
        "X"),
    "PrivateGaussianNB(classes=[1, None]): numpy's message": lambda: refused(
        lambda: learning.PrivateGaussianNB(epsilon=None, bounds=[(0.0, 1.0)], classes=[1, None]),
        "classes", TypeError),
    "accuracy_vs_epsilon(repetitions=10**6, bounded): minutes of work": lambda: refused(
        lambda: learning.accuracy_vs_epsilon(
            ROWS, LABELS, ROWS, LABELS, epsilons=[1.0], bounds=[(0.0, 1.0)],
            noise="bounded_laplace", repetitions=10**6, seed=0, classes=[0, 1]),
        "repetitions"),
    "accuracy_vs_epsilon(epsilons=1.0): a lone number taken as a grid": lambda: refused(
        lambda: learning.accuracy_vs_epsilon(ROWS, LABELS, ROWS, LABELS, epsilons=1.0,
                                             bounds=[(0.0, 1.0)], seed=0, classes=[0, 1]),
        "epsilons"),
    "accuracy_vs_epsilon(epsilons='1'): numpy's message": lambda: refused(
        lambda: learning.accuracy_vs_epsilon(ROWS, LABELS, ROWS, LABELS, epsilons="1",
                                             bounds=[(0.0, 1.0)], seed=0, classes=[0, 1]),
        "epsilons", TypeError),
    # dpcore.audit
    "category_events(10**9): a billion closures": lambda: refused(
        lambda: audit.category_events(10**9), "n_categories"),
    "audit_mechanism(samples=6e8): 1.2e9 draws over both sides": lambda: refused(
        lambda: audit.audit_mechanism(
            lambda data, gen, n: np.zeros(n), np.zeros(1), np.ones(1),
            events=audit.threshold_events([0.5]), samples=6 * 10**8,
            rng=np.random.default_rng(0)), "samples"),
    "audit_samples(ragged outputs): numpy's message": lambda: refused(
        lambda: audit.audit_samples([[1], [1, 2]], [[1], [1, 2]], audit.category_events(2)),
        "outputs_x", TypeError),
    "audit_samples(outputs of shape (2, 0)): IndexError": lambda: refused(
        lambda: audit.audit_samples(np.zeros((2, 0)), np.zeros((2, 0)),
                                    audit.category_events(2)), "outputs"),
}


@pytest.mark.parametrize("check", REGRESSIONS.values(), ids=REGRESSIONS.keys())
def test_regression(check):
    with bounded_time():  # some of these hung or ran for minutes before
        outcome = check()
    assert outcome is None or outcome is True or bool(outcome)


# ============================================================================================
# person-level privacy: dpcore.contributions, dpcore.partition, dpcore.quantiles
# (one block, kept together so that it can move to its own file)
# ============================================================================================


def bound_counts(*, optional: bool = False) -> st.SearchStrategy[Arg]:
    """max_rows, max_groups: whole numbers in [1, 10**9] (None too when ``optional``)."""
    nice = st.one_of(st.integers(1, 12), st.integers(1, 12).map(np.int64))
    if optional:
        nice = st.one_of(nice, st.none())
    bad = [0, -1, 10**9 + 1, 2**63, 10**400, 1.5, 2.0, NAN, True, "3", np.float64(2.0)]
    return tagged(nice, st.sampled_from([10**9, 10**6, np.int64(10**9)]),
                  st.sampled_from(bad + ([] if optional else [None])))


def ordered_bounds(lower: Arg, upper: Arg) -> tuple[Arg, Arg]:
    """Mostly lower < upper; equal or crossed finite bounds are bad (named: upper)."""
    if lower.tag == upper.tag == "nice" and as_real(lower.value) > as_real(upper.value):
        lower, upper = upper, lower
    if lower.tag != "bad" and upper.tag != "bad" and not as_real(lower.value) < as_real(
            upper.value):
        upper = Arg(upper.value, "bad")
    return lower, upper


@covers("contributions.ContributionBounds", "contributions.ContributionBounds.describe",
        "contributions.Sensitivity", "contributions.count_sensitivity",
        "contributions.sum_sensitivity", "contributions.mean_sensitivities")
@PROPERTY
@given(max_rows=bound_counts(), max_groups=bound_counts(optional=True), lower=finite_real(),
       upper=finite_real(), l1=positive(), l2=positive(), linf=positive())
def test_contribution_bounds_and_sensitivities(max_rows, max_groups, lower, upper, l1, l2,
                                               linf):
    sens = ok(lambda: contributions.Sensitivity(l1=l1.value, l2=l2.value, linf=linf.value),
              {"l1": l1, "l2": l2, "linf": linf})
    if sens is not None:
        assert (sens.l1, sens.l2, sens.linf) == tuple(as_real(a.value) for a in (l1, l2, linf))
    assert ok(lambda: contributions.count_sensitivity((3, 2)),
              {"bounds": Arg((3, 2), "bad")}) is None
    bounds = ok(lambda: contributions.ContributionBounds(max_rows.value, max_groups.value),
                {"max_rows": max_rows, "max_groups": max_groups})
    if bounds is None:
        return
    r, k = bounds.max_rows, bounds.max_groups or 1
    assert isinstance(r, int) and f"{r:,} row" in bounds.describe()
    count = ok(lambda: contributions.count_sensitivity(bounds), {})
    assert count.l1 == k * r and count.linf == r
    assert Fraction(count.l2) ** 2 >= k * r * r and count.linf <= count.l2 <= count.l1
    lower, upper = ordered_bounds(lower, upper)
    args = {"lower": lower, "upper": upper}
    total = ok(lambda: contributions.sum_sensitivity(bounds, lower=lower.value,
                                                     upper=upper.value), args)
    parts = ok(lambda: contributions.mean_sensitivities(bounds, lower=lower.value,
                                                        upper=upper.value), args)
    if total is None:
        assert parts is None
        return
    m = Fraction(max(abs(as_real(lower.value)), abs(as_real(upper.value))))
    assert Fraction(total.l1) >= k * r * m and Fraction(total.linf) >= r * m
    assert Fraction(total.l2) ** 2 >= k * (r * m) ** 2
    assert total.l1 <= k * r * float(m) * (1 + 1e-15)  # rounded up by ulps, no more
    assert parts[0] == total and parts[1] == count


@st.composite
def person_tables(draw) -> dict[str, Arg]:
    """Rows as columns: persons, groups, values, lower, upper — valid, extreme or bad."""
    n = draw(st.integers(1, 10))
    ids = st.one_of(st.integers(0, 4), st.sampled_from(["ann", "bo", "cy"]))
    kind = draw(st.sampled_from(["ints", "ints", "text", "missing", "junk", "2d", "empty"]))
    if kind == "ints":
        persons = Arg(np.array(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))),
                      "nice")
    elif kind == "text":
        persons = Arg(draw(st.lists(ids, min_size=n, max_size=n)), "nice")
    else:
        persons = Arg({"missing": [1, None, 2], "junk": "abc", "2d": np.zeros((2, 2)),
                       "empty": []}[kind], "bad")
    length = len(persons.value) if kind in ("ints", "text") else 3
    group_kind = draw(st.sampled_from(["none", "none", "ints", "text", "short", "missing"]))
    groups = {"none": Arg(None, "nice"),
              "ints": Arg(draw(st.lists(st.integers(0, 3), min_size=length,
                                        max_size=length)), "nice"),
              "text": Arg(draw(st.lists(st.sampled_from(["x", "y"]), min_size=length,
                                        max_size=length)), "nice"),
              "short": Arg([0] * (length + 1), "bad"),
              "missing": Arg([None] * length, "bad")}[group_kind]
    value_kind = draw(st.sampled_from(["none", "nice", "nice", "edge", "nonfinite", "short"]))
    elements = {"nice": NICE_ELEMENTS, "edge": st.one_of(NICE_ELEMENTS, EDGE_ELEMENTS),
                "nonfinite": NON_FINITE_ELEMENTS}
    if value_kind == "none":
        values = Arg(None, "nice")
    elif value_kind == "short":
        values = Arg([1.0] * (length + 2), "bad")
    else:
        arr = np.array(draw(st.lists(elements[value_kind], min_size=length, max_size=length)))
        values = Arg(arr, array_tag(arr, nice_abs=1e3))
    clamp = draw(st.sampled_from(["none", "both", "both", "lower only"]))
    lower, upper = Arg(None, "nice"), Arg(None, "nice")
    if clamp != "none":
        lower, upper = ordered_bounds(draw(finite_real()), draw(finite_real()))
        if clamp == "lower only":
            upper = Arg(None, "bad")
        if value_kind == "none":  # bounds without values
            lower = Arg(lower.value, "bad")
    return {"persons": persons, "groups": groups, "values": values, "lower": lower,
            "upper": upper}


def bound_sweeps() -> st.SearchStrategy[Arg]:
    nice = st.one_of(st.lists(st.integers(1, 8), min_size=1, max_size=5),
                     st.lists(st.integers(1, 8), min_size=1, max_size=5).map(np.array),
                     st.integers(1, 8))
    bad = st.sampled_from([[], [0], [1.5], [[1, 2]], [NAN], "1", True, None, [10**9 + 1],
                           [-3]])
    return tagged(nice, st.sampled_from([[10**9], [1, 10**9]]), bad)


@covers("contributions.ContributionCells", "contributions.contribution_cells",
        "contributions.truncation_moments", "contributions.ErrorBreakdown",
        "contributions.error_breakdown", "contributions.MaxRowsSweep",
        "contributions.max_rows_sweep")
@PROPERTY
@given(table=person_tables(), sweep=bound_sweeps(), max_rows=bound_counts(),
       max_groups=bound_counts(optional=True), noise_sd=positive(zero_ok=True),
       unit=positive(zero_ok=True), norm=choices(contributions.NORMS), magnitude=positive())
def test_contribution_cells_truncation_and_errors(table, sweep, max_rows, max_groups, noise_sd,
                                                  unit, norm, magnitude):
    cells = ok(lambda: contributions.contribution_cells(
        table["persons"].value, groups=table["groups"].value, values=table["values"].value,
        lower=table["lower"].value, upper=table["upper"].value), table)
    if cells is None:
        return
    assert isinstance(cells, contributions.ContributionCells)
    # the cells' own consistency checks accept what the builder makes
    again = ok(lambda: contributions.ContributionCells(
        group=cells.group, rows=cells.rows, persons=cells.persons,
        person_rows=cells.person_rows, person_groups=cells.person_groups,
        value_sum=cells.value_sum, value_sum_squares=cells.value_sum_squares,
        value_squares=cells.value_squares, raw_value_sum=cells.raw_value_sum), {})
    np.testing.assert_array_equal(again.value_sum, cells.value_sum)
    assert cells.persons.sum() >= 1 and np.all(cells.rows >= 1)
    clamped = np.bincount(cells.group.astype(int), weights=cells.value_sum)
    moments = ok(lambda: contributions.truncation_moments(
        cells, max_rows=sweep.value, max_groups=max_groups.value),
        {"max_rows": sweep, "max_groups": max_groups, "cells": Arg(cells, "nice")})
    if moments is not None:
        mean, var = moments
        assert mean.shape == var.shape and mean.shape[-1] == clamped.size
        assert np.all(var >= 0)
        if np.ndim(sweep.value) == 1 and np.asarray(sweep.value)[-1] >= 10**9 and (
                max_groups.value is None or int(max_groups.value) >= 10**6):
            np.testing.assert_allclose(mean[-1], clamped, rtol=1e-9, atol=1e-9)  # nothing cut
    result = ok(lambda: contributions.error_breakdown(
        cells, max_rows=max_rows.value, max_groups=max_groups.value, noise_sd=noise_sd.value),
        {"max_rows": max_rows, "max_groups": max_groups, "noise_sd": noise_sd,
         "cells": Arg(cells, "nice")}, aliases={"cells": ("values",)})
    if result is not None:
        assert isinstance(result, contributions.ErrorBreakdown)
        np.testing.assert_allclose(result.bias, result.truncation_bias + result.clamping_bias,
                                   rtol=1e-9, atol=1e-9 * (1 + np.max(np.abs(clamped))))
        assert np.all(result.rmse >= np.abs(result.bias) * (1 - 1e-12))
        assert np.all(result.rmse >= result.noise_sd * (1 - 1e-12))
    swept = ok(lambda: contributions.max_rows_sweep(
        cells, sweep.value, max_groups=max_groups.value, unit_noise_sd=unit.value,
        norm=norm.value, magnitude=magnitude.value),
        {"max_rows": sweep, "max_groups": max_groups, "unit_noise_sd": unit, "norm": norm,
         "magnitude": magnitude, "cells": Arg(cells, "nice")})
    if swept is not None:
        assert isinstance(swept, contributions.MaxRowsSweep)
        assert swept.best_max_rows in swept.max_rows.tolist()
        assert swept.rmse[swept.max_rows.tolist().index(swept.best_max_rows)] == swept.rmse.min()
    assert ok(lambda: contributions.truncation_moments("cells", max_rows=1),
              {"cells": Arg("cells", "bad")}) is None


# -- partition selection -----------------------------------------------------------------------


def scale_tag(scale: float) -> str:
    return "nice" if 1e-6 <= scale <= 1e6 else "extreme"


@covers("partition.partition_scale", "partition.partition_threshold",
        "partition.partition_delta", "partition.partition_privacy", "partition.PartitionPrivacy",
        "partition.PartitionPrivacy.to_approx", "partition.keep_probability",
        "partition.release_partitions", "partition.PartitionRelease")
@PROPERTY
@given(noise=choices(partition.PARTITION_NOISES), budget=positive(), max_rows=bound_counts(),
       max_groups=bound_counts(), delta=probability(zero_ok=False),
       delta_noise=probability(zero_ok=True), counts=any_arrays(), threshold=finite_real(),
       trials=trial_counts(), rng=rngs())
def test_partition_selection(noise, budget, max_rows, max_groups, delta, delta_noise, counts,
                             threshold, trials, rng):
    name = "rho" if noise.value == "gaussian" else "epsilon"
    bounds = {"max_rows": max_rows, "max_groups": max_groups}
    kwargs = {"max_rows": max_rows.value, "max_groups": max_groups.value}
    if noise.tag == "bad":
        assert ok(lambda: partition.partition_scale(noise=noise.value, epsilon=1.0),
                  {"noise": noise}) is None
        return
    scale = ok(lambda: partition.partition_scale(noise=noise.value, **{name: budget.value},
                                                 **kwargs), {name: budget, **bounds})
    wrong = "epsilon" if name == "rho" else "rho"
    assert ok(lambda: partition.partition_scale(noise=noise.value, **{wrong: 1.0}),
              {wrong: Arg(1.0, "bad")}) is None
    counts_arg = Arg(counts, array_tag(counts, min_size=0))
    if counts_arg.tag != "bad" and (np.any(numeric_or_none(counts) < 0)
                                    or numeric_or_none(counts).ndim > 1):
        counts_arg = Arg(counts, "bad")
    common = {"noise": noise, "scale": Arg(scale, "nice")}
    if scale is None:  # a scale of our own, to test the rest
        scale = 2.0
        common["scale"] = Arg(scale, "nice")
    else:
        common["scale"] = Arg(scale, scale_tag(scale))
        if common["scale"].tag == "nice":  # the privacy spent is within the budget asked
            loss = partition.partition_privacy(noise=noise.value, scale=scale,
                                               threshold=int(max_rows.value) + 100 * scale,
                                               **kwargs).measure
            assert (loss.rho if name == "rho" else loss.epsilon) <= as_real(budget.value)
    t = ok(lambda: partition.partition_threshold(noise=noise.value, scale=scale,
                                                 delta=delta.value, **kwargs),
           {**common, "delta": delta, **bounds})
    if t is not None:
        spent = ok(lambda: partition.partition_delta(t, noise=noise.value, scale=scale,
                                                     **kwargs), {**common, **bounds})
        if spent is not None:
            assert spent <= as_real(delta.value)
    spent = ok(lambda: partition.partition_delta(threshold.value, noise=noise.value,
                                                 scale=scale, **kwargs),
               {**common, "threshold": threshold, **bounds})
    if spent is not None:
        assert 0 <= spent <= 1
    too_low = threshold
    if spent is not None and spent >= 1:  # a one-person group is almost surely released
        too_low = Arg(threshold.value, "bad")
    privacy = ok(lambda: partition.partition_privacy(noise=noise.value, scale=scale,
                                                     threshold=threshold.value, **kwargs),
                 {**common, "threshold": too_low, **bounds})
    if privacy is not None:
        assert isinstance(privacy, partition.PartitionPrivacy) and privacy.delta == spent
        extra = delta_noise.tag
        if extra != "bad" and ((name == "rho" and as_real(delta_noise.value) == 0)
                               or privacy.delta + as_real(delta_noise.value) >= 1):
            extra = "bad"
        approx = ok(lambda: privacy.to_approx(delta_noise.value),
                    {"delta_noise": Arg(delta_noise.value, extra)})
        if approx is not None:
            assert approx.delta >= privacy.delta
    keep = ok(lambda: partition.keep_probability(counts, threshold=threshold.value,
                                                 noise=noise.value, scale=scale),
              {**common, "counts": counts_arg, "threshold": threshold})
    if keep is not None:
        assert keep.shape == np.shape(counts) and np.all((0 <= keep) & (keep <= 1))
        flat, probs = np.ravel(numeric_or_none(counts)), np.ravel(keep)
        order = np.argsort(flat, kind="stable")
        assert np.all(np.diff(probs[order]) >= -1e-12)  # more rows, more likely kept
    if counts_arg.tag != "bad" and numeric_or_none(counts).ndim == 0:
        counts_arg = Arg(counts, "bad")  # a release needs one count per group
    with bounded_time():
        out = ok(lambda: partition.release_partitions(
            counts, threshold=threshold.value, noise=noise.value, scale=scale,
            trials=trials.value, rng=rng.value),
            {**common, "counts": counts_arg, "threshold": threshold, "trials": trials,
             "rng": rng})
    if out is not None:
        assert isinstance(out, partition.PartitionRelease)
        groups = np.size(counts)
        assert out.kept.shape == ((groups,) if trials.value is None
                                  else (int(trials.value), groups))
        np.testing.assert_array_equal(out.kept, out.noisy_counts >= as_real(threshold.value))


# -- quantiles ---------------------------------------------------------------------------------


def quantile_levels() -> st.SearchStrategy[Arg]:
    return tagged(numpy_scalars(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.5, 1.0]))),
                  st.sampled_from([TINY, 1 - 2**-53]),
                  st.sampled_from([-0.1, 1.5, NAN, INF, 10**400, *JUNK]))


def multiplicities(values: object) -> st.SearchStrategy[Arg]:
    """None, whole numbers >= 0 of the values' length, or bad ones."""
    size = np.size(values) if numeric_or_none(values) is not None else 2
    good = st.lists(st.integers(0, 4), min_size=size, max_size=size)
    wrong = max(size, 1)  # an empty list of the right length would be valid
    return tagged(st.one_of(st.none(), good), None,
                  st.sampled_from([[1.5] * wrong, [-1] * wrong, [1] * (size + 1), "a",
                                   [NAN] * wrong]))


@covers("quantiles.quantile_sensitivity", "quantiles.rank_errors",
        "quantiles.quantile_probabilities", "quantiles.true_quantile",
        "quantiles.quantile_accuracy", "quantiles.expected_rank_error")
@PROPERTY
@given(values=any_arrays(), candidates=score_vectors(), q=quantile_levels(),
       epsilon=positive(), max_rows=bound_counts(), alpha=any_arrays(), data=st.data())
def test_quantile_distribution(values, candidates, q, epsilon, max_rows, alpha, data):
    counts = data.draw(multiplicities(values))
    sens = ok(lambda: quantiles.quantile_sensitivity(q.value, max_rows=max_rows.value),
              {"q": q, "max_rows": max_rows})
    if sens is not None:
        assert max_rows.value * 0.5 <= sens <= max_rows.value
    args = {"values": Arg(values, array_tag(values, ndim=1)),
            "candidates": Arg(candidates, array_tag(candidates, ndim=1, min_size=1)),
            "q": q, "counts": counts}
    errors = ok(lambda: quantiles.rank_errors(values, candidates, q.value,
                                              counts=counts.value), args)
    full = {**args, "epsilon": epsilon, "max_rows": max_rows}
    kwargs = {"epsilon": epsilon.value, "max_rows": max_rows.value, "counts": counts.value}
    probs = ok(lambda: quantiles.quantile_probabilities(values, candidates, q.value, **kwargs),
               full)
    rank = ok(lambda: quantiles.expected_rank_error(values, candidates, q.value, **kwargs),
              full)
    if errors is None or probs is None:
        assert probs is None and rank is None
        return
    assert np.all(errors >= 0) and probs.shape == errors.shape
    assert np.all(probs >= 0) and probs.sum() == pytest.approx(1.0, abs=1e-9)
    assert probs[np.argmin(errors)] == probs.max()  # the best candidate is the most likely
    assert errors.min() - 1e-9 <= rank <= errors.max() + 1e-9
    present = numeric_or_none(values).size > 0 and (
        counts.value is None or np.sum(counts.value) > 0)
    truth_args = {"values": Arg(values, "nice" if present else "bad"), "q": q,
                  "counts": Arg(counts.value, "nice" if present else "bad")}
    truth = ok(lambda: quantiles.true_quantile(values, q.value, counts=counts.value),
               truth_args)
    if truth is None:
        return
    assert truth in numeric_or_none(values).tolist()
    alpha_tag = points_tag(alpha)
    if alpha_tag != "bad" and (np.any(numeric_or_none(alpha) < 0)
                               or not np.all(np.isfinite(numeric_or_none(alpha)))):
        alpha_tag = "bad"
    accuracy = ok(lambda: quantiles.quantile_accuracy(values, candidates, q.value, alpha,
                                                      **kwargs),
                  {**full, "alpha": Arg(alpha, alpha_tag)})
    if accuracy is not None:
        assert accuracy.shape == np.shape(alpha)
        assert np.all((0 <= accuracy) & (accuracy <= 1))


@covers("quantiles.sample_quantile", "quantiles.split_quantile_budget",
        "quantiles.private_quantiles")
@PROPERTY
@given(values=any_arrays(), candidates=score_vectors(), q=quantile_levels(),
       qs=any_arrays(max_side=3), epsilon=positive(), n_quantiles=counts(1, 5),
       trials=trial_counts(), rng=rngs())
def test_quantile_sampling(values, candidates, q, qs, epsilon, n_quantiles, trials, rng):
    share = ok(lambda: quantiles.split_quantile_budget(epsilon.value, n_quantiles.value),
               {"epsilon": epsilon, "n_quantiles": n_quantiles})
    if share is not None:
        assert 0 < share and math.fsum([share] * int(n_quantiles.value)) <= as_real(
            epsilon.value)
    args = {"values": Arg(values, array_tag(values, ndim=1)),
            "candidates": Arg(candidates, array_tag(candidates, ndim=1, min_size=1)),
            "epsilon": epsilon, "trials": trials, "rng": rng}
    with bounded_time():
        out = ok(lambda: quantiles.sample_quantile(values, candidates, q.value,
                                                   epsilon=epsilon.value, trials=trials.value,
                                                   rng=rng.value), {**args, "q": q})
    grid = set(np.ravel(numeric_or_none(candidates)).tolist()) if out is not None else set()
    if out is not None:
        assert set(np.ravel(out).tolist()) <= grid
        assert np.shape(out) == (() if trials.value is None else (int(trials.value),))
    levels = numeric_or_none(qs)
    qs_tag = array_tag(qs, ndim=1, min_size=1)
    if qs_tag != "bad" and (np.any(levels < 0) or np.any(levels > 1)):
        qs_tag = "bad"
    with bounded_time():
        many = ok(lambda: quantiles.private_quantiles(values, candidates, qs,
                                                      epsilon=epsilon.value,
                                                      trials=trials.value, rng=rng.value),
                  {**args, "qs": Arg(qs, qs_tag)})
    if many is not None:
        m = levels.size
        assert many.shape == ((m,) if trials.value is None else (int(trials.value), m))


def row_histograms() -> st.SearchStrategy[Arg]:
    nice = st.lists(st.integers(1, 40), min_size=1, max_size=6)
    bad = st.sampled_from([[], [0], [1.5], [-2], [NAN], "1", None, [[1, 2]]])
    return tagged(nice, st.sampled_from([[10**6, 1], [10**12]]), bad)


@covers("quantiles.rows_quantile_probabilities", "quantiles.sample_max_rows")
@PROPERTY
@given(rows=row_histograms(), q=quantile_levels(), epsilon=positive(),
       largest=tagged(st.integers(1, 60), st.sampled_from([quantiles.MAX_ROWS_CANDIDATE]),
                      st.sampled_from([0, -1, quantiles.MAX_ROWS_CANDIDATE + 1, 1.5, None,
                                       True])),
       trials=trial_counts(), rng=rngs(), data=st.data())
def test_rows_quantile(rows, q, epsilon, largest, trials, rng, data):
    persons = data.draw(multiplicities(rows.value if rows.tag != "bad" else [1]))
    if rows.tag == "bad" or (persons.tag == "nice" and persons.value is not None
                             and len(persons.value) != len(rows.value)):
        persons = Arg(persons.value, "nice" if rows.tag == "bad" else "bad")
    args = {"rows": rows, "persons": persons, "q": q, "epsilon": epsilon, "largest": largest}
    probs = ok(lambda: quantiles.rows_quantile_probabilities(
        rows.value, persons.value, q.value, epsilon=epsilon.value, largest=largest.value),
        args)
    if probs is not None:
        assert probs.shape == (int(largest.value),) and probs.sum() == pytest.approx(1.0)
    with bounded_time():
        drawn = ok(lambda: quantiles.sample_max_rows(
            rows.value, persons.value, q.value, epsilon=epsilon.value, largest=largest.value,
            trials=trials.value, rng=rng.value), {**args, "trials": trials, "rng": rng})
    if drawn is not None:
        assert np.all((1 <= np.asarray(drawn)) & (np.asarray(drawn) <= int(largest.value)))


def edge_lists() -> st.SearchStrategy[Arg]:
    nice = st.lists(st.floats(-1e3, 1e3), min_size=2, max_size=6, unique=True).map(sorted)
    extreme = st.sampled_from([[-HUGE, 0.0, HUGE], [0.0, TINY], [-1e300, 1e300]])
    bad = st.sampled_from([[1.0], [], [2.0, 1.0], [0.0, 0.0], [0.0, NAN], [[0.0, 1.0]], "a",
                           None, [0.0, INF]])
    return tagged(nice, extreme, bad)


@covers("quantiles.bin_indices", "quantiles.bin_labels", "quantiles.binned_counts")
@PROPERTY
@given(values=any_arrays(), edges=edge_lists(), outside=choices(quantiles.OUTSIDE))
def test_binned_histograms(values, edges, outside):
    values_tag = "bad" if numeric_or_none(values) is None else "nice"
    args = {"values": Arg(values, values_tag), "edges": edges, "outside": outside}
    cells = ok(lambda: quantiles.bin_indices(values, edges.value, outside=outside.value), args)
    labels = ok(lambda: quantiles.bin_labels(edges.value, outside=outside.value),
                {"edges": edges, "outside": outside})
    totals = ok(lambda: quantiles.binned_counts(values, edges.value, outside=outside.value),
                args)
    if cells is None:
        return
    x = numeric_or_none(values)
    size = len(edges.value) - 1 + (2 if outside.value == "separate" else 0)
    assert cells.shape == np.shape(values) and len(labels) == size
    assert np.all((cells >= -1) & (cells < size))
    np.testing.assert_array_equal(cells == -1, np.isnan(x))
    assert totals.shape == (size,) and totals.sum() == np.count_nonzero(~np.isnan(x))
