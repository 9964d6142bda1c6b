"""The exported OpenDP program sums decimals as the release does (README, "Float sums"):
each clamped summand a multiple of 2^-shift, the multiples added exactly, each total rounded
once, so one row more moves what it hands OpenDP by at most Δ plus that rounding, and a
total is the correctly rounded sum (``math.fsum``) of summands on the grid.

Run through the generated program itself (its measurements replaced by recorders of their
true input, ``recorders``), on text cells as a CSV gives them, one row per person (the rows
summed in the file's order). Before, its sum, mean and variance summed with ``np.sum``
(pairwise: after a first row of 1, the 15 values of −2^-54 in its first accumulator of
eight each rounded back to 1, a move of Δ + 2^-50) and its sums by group with
``np.bincount`` (plain: all 4,096 of them, Δ + 2^-42), where one rounding allows 2^-53.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from plan.kinds.variance import Variance
from plan.model import Bounds, Categories, Dataset, GroupBy, Noise, Plan, PlanQuery, Sum
from release.programs import opendp_program
from tests.release.test_program_stability import recorders
from tests.release_fixtures import load_program

#: (a column, its neighbour with one row more), bounds ±1 (Δ = 1).
PLAIN = ([-(2.0**-54)] * 4096, [1.0] + [-(2.0**-54)] * 4096)
X = 2.0**-60
#: Clamped to ±1 they cancel but for 2^-60 + 2^-61.
CANCELS = [5.0, X, -1.0, -7.0, 1.0, 2.0**-61]


def program(tmp_path):
    laplace = Noise("laplace", "pure", epsilon=1.0)
    bounds = Bounds(-1.0, 1.0, "public")
    plan = Plan(Dataset("v"), (
        PlanQuery("sum", "Sum", Sum("x", bounds), laplace),
        PlanQuery("by", "Sum by group", GroupBy("k", "sum", "x", bounds, Categories(
            ("a", "b"), "public", "test declaration")), laplace),
        PlanQuery("var", "Variance", Variance("x", Bounds(-1.0, 3.0, "public")), laplace)))
    return load_program(opendp_program(plan), "float_sums", tmp_path)


def true_inputs(module, values: list[float]) -> dict:
    """What the program hands each measurement: the column as a CSV's text cells."""
    frame = pd.DataFrame({"x": [repr(v) for v in values], "k": ["a"] * len(values)},
                         dtype=object)
    drawn: dict = {}
    module.release(frame, recorders(module, drawn), rng=np.random.default_rng(0))
    return drawn


def test_the_programs_sums_move_by_the_bound_and_one_rounding(tmp_path) -> None:
    module = program(tmp_path)
    one, other = (true_inputs(module, column) for column in PLAIN)
    for a, b in ((one[("sum", 0)], other[("sum", 0)]),
                 (one[("by", 0)][0], other[("by", 0)][0])):
        assert abs(b - a) <= 1.0 + (math.ulp(a) + math.ulp(b)) / 2, b - a - 1.0


def test_the_programs_sums_are_rounded_once(tmp_path) -> None:
    module = program(tmp_path)
    drawn = true_inputs(module, CANCELS)
    clamped = [min(max(v, -1.0), 1.0) for v in CANCELS]
    assert drawn[("sum", 0)] == drawn[("by", 0)][0] == math.fsum(clamped) == X + X / 2
    assert drawn[("by", 0)][1] == 0.0
    # summands half-way between two multiples of 2^-61 round to even, as on the engines
    drawn = true_inputs(module, [2.0**-62, 3 * 2.0**-62])
    assert drawn[("sum", 0)] == drawn[("by", 0)][0] == 2.0**-60
    # a variance's sums, of deviations from the centre 1 (2, 2^-52, -2: a plain sum loses
    # 2^-52 in 2) and of their squares (4, then 2^-52 each: lost in 4)
    drawn = true_inputs(module, [3.0, 1.0 + 2.0**-52, -1.0])
    assert drawn[("var", 1)] == 2.0**-52
    column = [3.0] + [1.0 + 2.0**-26] * 64
    drawn = true_inputs(module, column)
    assert drawn[("var", 2)] == math.fsum((v - 1.0) ** 2 for v in column) == 4.0 + 2.0**-46
