"""One person moves each of a variance's sums by at most the sensitivity the plan declares
for it, on every path that computes them (DuckDB, Spark, the exported OpenDP program).

The plan declares h = (upper − lower)/2 for the sum of deviations and h·h for the sum of
squares (``plan/kinds/variance.py``), but each deviation is ``clamped − (lower + upper)/2``,
another float: with bounds [6.7, 9.5] the one row 9.5 deviates by 1.4000000000000004 > 1.4
and squares to 1.960000000000001 > 1.9599999999999997, so the neighbours [] and [9.5] moved
both sums by more than their Δ (on main and on the fixed-point sums alike). Now every path
clamps each deviation to the declared h (``engine.cells.deviation_bound``); rounding is
monotone, so its square stays within h·h. The sensitivities are read from the built plan.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from engine import FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.kinds.variance import KIND, Variance
from plan.model import Bounds, Dataset, Noise, Plan, PlanQuery, PrivacyUnit
from release.programs import opendp_program
from tests.release.test_program_stability import recorders
from tests.release_fixtures import load_program

#: Bounds whose computed deviation of ``upper`` or of ``lower`` exceeds the declared h.
BOUNDS = [(6.7, 9.5), (-73.1, -30.7), (-0.9, 21.6), (67.2, 88.9)]
LAPLACE = Noise("laplace", "pure", epsilon=1.0)


def query(lower: float, upper: float) -> PlanQuery:
    return PlanQuery("v", "Variance", Variance("x", Bounds(lower, upper, "public")), LAPLACE)


def declared(lower: float, upper: float) -> tuple[float, float]:
    """The plan's sensitivities of the sum of deviations and of squares."""
    parts = KIND.build(query(lower, upper), PrivacyUnit(), "queries[0]").parts
    return parts[1].sensitivity, parts[2].sensitivity


def engine_sums(backend, lower: float, upper: float, rows: list[float]) -> list[float]:
    source = FrameSource(pd.DataFrame({"x": pd.Series(rows, dtype=float)}))
    return [backend.run(source, q).total
            for q in KIND.engine_queries(query(lower, upper), PrivacyUnit())]


def check(sums) -> None:
    for lower, upper in BOUNDS:
        limits = declared(lower, upper)
        none = sums(lower, upper, [])
        for row in (lower, upper):
            one = sums(lower, upper, [row])
            for a, b, delta in zip(none, one, limits, strict=True):
                assert abs(b - a) <= delta, (lower, upper, row, b - a, delta)


def test_duckdb_variance_sums_move_by_the_declared_sensitivity() -> None:
    duck = DuckDBBackend(threads=1)
    check(lambda lo, hi, rows: engine_sums(duck, lo, hi, rows))


def test_spark_variance_sums_move_by_the_declared_sensitivity(shared_spark) -> None:
    from engine.spark_backend import SparkBackend

    spark = SparkBackend(session=shared_spark)
    check(lambda lo, hi, rows: engine_sums(spark, lo, hi, rows))


@pytest.mark.parametrize("bounds", BOUNDS)
def test_program_variance_sums_move_by_the_declared_sensitivity(tmp_path, bounds) -> None:
    lower, upper = bounds
    plan = Plan(Dataset("v"), (query(lower, upper),))
    module = load_program(opendp_program(plan), "variance_summands", tmp_path)

    def sums(lo: float, hi: float, rows: list[float]) -> list[float]:
        drawn: dict = {}
        frame = pd.DataFrame({"x": [repr(v) for v in rows]}, dtype=object)
        module.release(frame, recorders(module, drawn), rng=np.random.default_rng(0))
        return [drawn[("v", 1)], drawn[("v", 2)]]

    limits = declared(lower, upper)
    none = sums(lower, upper, [])
    for row in (lower, upper):
        for a, b, delta in zip(none, sums(lower, upper, [row]), limits, strict=True):
            assert abs(b - a) <= delta, (lower, upper, row, b - a, delta)
