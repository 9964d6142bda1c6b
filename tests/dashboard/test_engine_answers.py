"""dashboard.data.engine_answers gives the QueryAnswer the pandas reference
(tests/queries_reference.py) gives on the same frame, field by field."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.data import engine_answers
from dashboard.datasets import load_builtin
from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from tests import engine_reference as ref
from tests import queries_reference as dp

FIELDS = ("l1_sensitivity", "l2_sensitivity", "integer_valued", "labels", "column_labels",
          "description", "clamped_rows", "missing_rows", "lower", "upper")


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=2))


def same(got, want) -> None:
    np.testing.assert_allclose(got.true_value, want.true_value, rtol=1e-12)
    assert got.true_value.shape == want.true_value.shape
    for name in FIELDS:
        assert getattr(got, name) == getattr(want, name), name


def test_adult_answers_equal_the_pandas_path(engine) -> None:
    loaded = load_builtin("Adult (UCI census income)")
    frame, domains = loaded.frame, loaded.domains
    source = FrameSource(frame, loaded.name, key="adult")
    same(engine_answers.count(engine, source), dp.count(frame))
    for column in ("age", "capital_gain", "hours_per_week"):
        lo, hi = domains[column].lower, domains[column].upper
        same(engine_answers.bounded_sum(engine, source, column, lower=lo, upper=hi),
             dp.bounded_sum(frame, column, lower=lo, upper=hi))
        for got, want in zip(engine_answers.bounded_mean_parts(engine, source, column, lower=lo,
                                                               upper=hi + 0.5),
                             dp.bounded_mean_parts(frame, column, lower=lo, upper=hi + 0.5),
                             strict=True):
            same(got, want)
    for column in ("education", "workclass", "native_country"):
        cats = domains[column].categories
        same(engine_answers.histogram(engine, source, column, categories=cats),
             dp.histogram(frame, column, categories=cats))
    rows, cols = domains["race"].categories, domains["sex"].categories
    same(engine_answers.crosstab(engine, source, "race", "sex", row_categories=rows,
                                 column_categories=cols),
         dp.crosstab(frame, "race", "sex", row_categories=rows, column_categories=cols))


def test_random_frame_answers_and_errors(engine) -> None:
    frame = ref.random_frame(4)
    source = FrameSource(frame)
    same(engine_answers.bounded_sum(engine, source, ref.SMALL, lower=-3, upper=3),
         dp.bounded_sum(frame, ref.SMALL, lower=-3, upper=3))
    with pytest.raises(ValueError, match=r"not in categories \(for example 'Red', 'purple'\)"):
        engine_answers.histogram(engine, source, ref.SEMI, categories=ref.DECLARED)
    with pytest.raises(ValueError, match="not in categories"):
        dp.histogram(frame, ref.SEMI, categories=list(ref.DECLARED))
    with pytest.raises(ValueError, match="column 'code' .* not in column_categories"):
        engine_answers.crosstab(engine, source, ref.WHO, ref.CODE,
                                row_categories=("ann", "bob", "ç\"'; --", "dee", "eve ☃"),
                                column_categories=ref.CODE_CATEGORIES)
    big = FrameSource(frame.assign(big=np.full(len(frame), 1e307)))
    with pytest.raises(ValueError, match="overflows float64"):
        engine_answers.bounded_sum(engine, big, "big", lower=0, upper=1e308)
