"""A sum of decimals is rounded once, on DuckDB and on Spark (README, "Float sums").

Each clamped summand becomes a multiple of 2^-shift (shift from the public bounds), the
multiples are added exactly and the total is rounded to float64 once
(``engine.cells.fixed_point_sums``). So one row more moves a total by at most the bound Δ
plus that one rounding, and a total is ``math.fsum`` of the clamped summands (the correctly
rounded sum) whenever they lie on the grid, as every value below does.

Before, DuckDB summed with ``fsum`` (Kahan's compensated sum) and Spark with a plain float
``sum``: on one thread, or one partition, in the rows' order, the neighbours below moved a
total by Δ + 2^-50 (Kahan: a running sum of 1 absorbs 2^-60 and its compensation is lost in
the next −1) and by Δ + 2^-42 (plain: 4,096 values of −2^-54 each rounded back to 1), where
one rounding allows 2^-53; and ``CANCELS`` summed to 2^-61 on both, not 2^-60 + 2^-61.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from engine import BoundedSum, Contribution, FrameSource, GroupedSum
from engine.duckdb_backend import DuckDBBackend

X = 2.0**-60
#: (a column, its neighbour with one row more), bounds ±1 (Δ = 1), rows in the order summed.
#: Kahan: each (1, X, −1) loses X (0 for 2^-50); sorted, the neighbour's total is 1 + 2^-50.
KAHAN = ([1.0, X, -1.0] * 1024, [X] * 1024 + [1.0] * 1024 + [-1.0] * 1024 + [1.0])
#: Plain: after a first row of 1, each −2^-54 rounds back to 1 (ties to even).
PLAIN = ([-(2.0**-54)] * 4096, [1.0] + [-(2.0**-54)] * 4096)
#: A column whose clamped values cancel: its exact sum is 2^-60 + 2^-61.
CANCELS = [5.0, X, -1.0, -7.0, 1.0, 2.0**-61]
#: Half-way between two multiples of 2^-61 (bounds ±1): 2^-62 rounds to 0 and 3·2^-62 to
#: 2^-60, ties to even on every path (half away from zero would give 3·2^-61).
TIES = [2.0**-62, 3 * 2.0**-62]
#: Deviations from the centre 1 of bounds [-2, 4] (a variance's): 3, 2^-52, −3, ...
DEVIATES = [4.0, 1.0 + 2.0**-52, -2.0] * 64


def frame(values: list[float]) -> FrameSource:
    n = len(values)
    return FrameSource(pd.DataFrame({"x": values, "k": ["a"] * n,
                                     "p": [str(i) for i in range(n)]}))


def queries(lower: float, upper: float) -> dict:
    """The sum of each compiled form: alone, per group, under a person unit (the kept rows),
    per group under it, each a function of an aggregate to its total."""
    unit = Contribution("p", 1)
    return {
        "sum": (BoundedSum("x", lower, upper), lambda a: a.total),
        "grouped": (GroupedSum("k", ("a", "b"), "x", lower, upper), lambda a: a.totals[0]),
        "sum, unit": (BoundedSum("x", lower, upper, unit), lambda a: a.total),
        "grouped, unit": (GroupedSum("k", ("a", "b"), "x", lower, upper, unit),
                          lambda a: a.totals[0]),
    }


def allowed_move(bound: float, one: float, other: float) -> float:
    """Δ plus one rounding of each total: exact totals at most Δ apart, each rounded to
    nearest (half an ulp), move at most this far."""
    return bound + (math.ulp(one) + math.ulp(other)) / 2


def check_path(backend, name: str) -> None:
    query, total = queries(-1.0, 1.0)[name]
    for column, neighbour in (KAHAN, PLAIN):
        one = total(backend.run(frame(column), query))
        other = total(backend.run(frame(neighbour), query))
        assert abs(other - one) <= allowed_move(1.0, one, other), (name, other - one - 1)
    clamped = [min(max(v, -1.0), 1.0) for v in CANCELS]
    assert total(backend.run(frame(CANCELS), query)) == math.fsum(clamped) == X + X / 2
    assert total(backend.run(frame(TIES), query)) == 2.0**-60


def check_moments(backend) -> None:
    """A variance's sums (deviations from the centre, and their squares) are rounded once."""
    for squared in (False, True):
        query = BoundedSum("x", -2.0, 4.0, centre=1.0, squared=squared)
        deviations = [min(max(v, -2.0), 4.0) - 1.0 for v in DEVIATES]
        expected = math.fsum(d * d if squared else d for d in deviations)
        assert backend.run(frame(DEVIATES), query).total == expected


@pytest.fixture(scope="module")
def duck():
    return DuckDBBackend(threads=1)   # one thread: the rows summed in their order


@pytest.mark.parametrize("name", list(queries(-1.0, 1.0)))
def test_duckdb_sums_move_by_the_bound_and_one_rounding(duck, name) -> None:
    check_path(duck, name)


def test_duckdb_moments_are_rounded_once(duck) -> None:
    check_moments(duck)


@pytest.fixture(scope="module")
def spark(shared_spark):
    from engine.spark_backend import SparkBackend

    return SparkBackend(session=shared_spark)


@pytest.mark.parametrize("name", list(queries(-1.0, 1.0)))
def test_spark_sums_move_by_the_bound_and_one_rounding(spark, name) -> None:
    check_path(spark, name)


def test_spark_moments_are_rounded_once(spark) -> None:
    check_moments(spark)


def test_the_total_is_the_exact_sum_of_the_grid_rounded_once() -> None:
    """The rule itself, against exact rationals: the shift puts the bound just under 2^62
    multiples, each summand moves by at most half a step (never beyond the bound), and the
    total is the correctly rounded sum of the rounded summands, per cell."""
    from fractions import Fraction

    from engine.cells import fixed_point_sums, sum_shift, summand_bound

    rng = np.random.default_rng(5)
    for bound in (1.0, 0.1, 3.0e-300, 2.0**-1070, 7.5e300, 250_000.0):
        shift = sum_shift(bound)
        step = Fraction(2) ** -shift
        assert 2**61 <= Fraction(bound) / step < 2**62
        values = np.concatenate([rng.uniform(-bound, bound, 500), [bound, -bound, 0.0],
                                 rng.uniform(-bound, bound, 50) * 2.0**-70])
        cells = rng.integers(0, 3, values.size)
        got = fixed_point_sums(values, shift, cells, 3)
        for c in range(3):
            exact = sum((round(Fraction(v) / step) * step for v in values[cells == c]),
                        Fraction(0))
            assert got[c] == float(exact)
            assert abs(exact - sum(map(Fraction, values[cells == c]), Fraction(0))) <= (
                step / 2 * int((cells == c).sum()))
    assert summand_bound(-2.0, 4.0, 1.0, True) == 9.0


def test_totals_beyond_float64_read_as_infinite(duck) -> None:
    """A total past float64's largest is ±inf (the page's clear message about it stays)."""
    big = 1.5e308
    assert duck.run(frame([big, big]), BoundedSum("x", -big, big)).total == math.inf
    assert duck.run(frame([-big, -big]), BoundedSum("x", -big, big)).total == -math.inf


def test_squares_past_float64_are_summed_as_floats(duck) -> None:
    """A variance's squares whose bound is no float64 (a half-width above 10^154, or below
    10^-162, whose square underflows to 0) fall back to a float sum, never an error."""
    tiny = BoundedSum("x", 0.0, 1e-200, centre=5e-201, squared=True)
    assert duck.run(frame([1e-200, 0.0]), tiny).total == 0.0
    huge = BoundedSum("x", -1e200, 1e200, centre=0.0, squared=True)
    assert duck.run(frame([1e200, 0.0]), huge).total == math.inf
