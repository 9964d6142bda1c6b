"""The shared oracle of the property tests: tagged arguments, the judge, strategies.

Every public function, class and method of dpcore is fed random valid and invalid values;
each call must return finite, well-shaped output or raise ValueError/TypeError naming the
offending parameter. The test files beside this one hold the properties, one per dpcore
module; test_public_api.py checks that every public name has one.
"""

from __future__ import annotations

import math
import numbers
import re
import time
import warnings
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import fields, is_dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.extra import numpy as hnp

from dpcore.measures import ZCDP, ApproxDP, PureDP

# Hundreds of examples per test; derandomized, without deadline or database by the profile in
# conftest.py (timing on a shared CI machine is not a property; bench/ measures speed, and
# runaway work is caught by bounded_time() below). The file runs in about a minute.
PROPERTY = settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])



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

    - some argument bad: ValueError/TypeError, naming it when it is the only bad one (or
      naming an extreme argument, which may be refused first: a sweep over ε = 5e-324 with
      β = 1 may say that the scale overflows before it reads β);
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
            assert named(error, bad[0]) or any(named(error, n) for n in extreme), (
                f"message does not name {bad[0]!r} (nor an extreme argument): {error!r}")
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



#: Simulation sizes beyond what one call may draw (MAX_DRAWS): refused at once.
OVER_BUDGET_TRIALS = [10**9 + 1, 2**40, 2**63, 10**30, 10**400]



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



def run_regression(check: Callable[[], object]) -> None:
    """Run one pinned regression: it must hold, and finish (some of these hung before)."""
    with bounded_time():
        outcome = check()
    assert outcome is None or outcome is True or bool(outcome)
