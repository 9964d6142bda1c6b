"""The Synthetic data page's analysis (dashboard/analysis/synthetic.py): column choice from the
declared schema, generation with OpenDP's mbi, and utility against the real table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard.analysis import synthetic as sy
from dashboard.data.builtins import load_builtin
from dashboard.data.model import ColumnDomain, LoadedDataset
from dpcore.contributions import PrivacyUnit

ADULT = "Adult (UCI census income)"
ONE_ROW = PrivacyUnit()


def _loaded(frame: pd.DataFrame, domains: dict) -> LoadedDataset:
    return LoadedDataset("t", frame, domains, [], "test", key="test:synthetic")


def test_a_column_with_too_many_categories_is_refused_by_name_before_reading():
    cats = tuple(f"c{i}" for i in range(10_000))

    class NoData(LoadedDataset):
        @property
        def relation(self):                      # reading any data fails the test
            raise AssertionError("data was read")

    loaded = NoData("t", None, {"big 'one'": ColumnDomain("categorical", categories=cats),
                                "s": ColumnDomain("categorical", categories=("a", "b"))},
                    [], "test")
    with pytest.raises(sy.SynthesisError, match="Column 'big 'one'' has 10,000 categories"):
        sy.choose_columns(loaded, ["s", "big 'one'"], ONE_ROW)
    with pytest.raises(sy.SynthesisError, match="'x' has no declared categories"):
        sy.choose_columns(loaded, ["s", "x"], ONE_ROW)


def test_hostile_names_and_an_empty_column_are_counted():
    names = ["*bold* | `x`", "<b>$1</b>\n", "len"]
    frame = pd.DataFrame({names[0]: ["a", "b", "a", "b"], names[1]: [None] * 4,
                          names[2]: [1.0, 5.0, 7.0, 2.0]})
    domains = {names[0]: ColumnDomain("categorical", categories=("a", "b")),
               names[1]: ColumnDomain("categorical", categories=("u", "v")),
               names[2]: ColumnDomain("numeric", lower=0, upper=10, bins=(0.0, 4.0, 10.0))}
    loaded = _loaded(frame, domains)
    assert sy.offered_columns(loaded) == names
    columns = sy.choose_columns(loaded, names, ONE_ROW)
    assert columns.shape == (3, 3, 3)
    cells = sy.joint_cells(loaded, columns)
    dense = sy.marginal(cells.codes, cells.counts, columns.shape, (0, 1, 2))
    expected = np.zeros((3, 3, 3))
    expected[0, 2, 0] = 1      # a, missing, [0, 4)
    expected[1, 2, 1] = 1      # b, missing, [4, 10)
    expected[0, 2, 1] = 1
    expected[1, 2, 0] = 1
    assert np.array_equal(dense, expected)
    frame_out = sy.synthetic_frame(np.array([[0, 2, 1], [1, 0, 0]]), columns)
    assert list(frame_out.columns) == names
    assert frame_out.iloc[0].tolist() == ["a", sy.OTHER, "[4, 10)"]


def test_an_empty_table_is_refused_before_opendp():
    cells = type("Cells", (), {"codes": np.zeros((0, 2), dtype=np.int64),
                               "counts": np.zeros(0, dtype=np.int64)})()
    with pytest.raises(sy.SynthesisError, match="no rows"):
        sy.generate(cells, (2, 2), measure="epsilon", budget=1.0, max_rows=1,
                    algorithm="MST")


def test_tv_and_cramers_v_on_known_tables():
    assert sy.tv_distance(np.array([1.0, 0.0]), np.array([0.0, 3.0])) == 1.0
    assert sy.tv_distance(np.array([1.0, 1.0]), np.array([2.0, 2.0])) == 0.0
    assert sy.tv_distance(np.array([3.0, 1.0]), np.array([1.0, 1.0])) == pytest.approx(0.25)
    assert sy.cramers_v(np.array([[5.0, 0.0], [0.0, 5.0]])) == pytest.approx(1.0)
    assert sy.cramers_v(np.array([[5.0, 5.0], [5.0, 5.0]])) == pytest.approx(0.0)
    assert sy.cramers_v(np.array([[5.0, 0.0], [0.0, 0.0]])) == 0.0   # one row, one column


def test_workload_direct_error_shrinks_with_budget_and_synthetic_copy_is_exact():
    rng = np.random.default_rng(1)
    shape = (3, 4, 5, 2)
    codes = np.stack([rng.integers(0, s, 5_000) for s in shape], 1)
    flat, counts = np.unique(codes, axis=0, return_counts=True)
    cells = type("Cells", (), {"codes": flat, "counts": counts})()
    errors = []
    for budget in (0.01, 10.0):
        w = sy.workload(cells, codes, shape, measure="epsilon", budget=budget, max_rows=1,
                        queries=300, rng=np.random.default_rng(2))
        assert w.synthetic_error == 0.0              # the real rows as "synthetic" ones
        errors.append(w.direct_error)
    assert errors[0] > 10 * errors[1] > 0
    # a triple's true fraction, counted independently
    w = sy.workload(cells, codes, shape, measure="rho", budget=1.0, max_rows=1, queries=5,
                    rng=np.random.default_rng(3))
    a = w.axes[0]
    assert w.real[0] == pytest.approx(np.mean(np.all(codes[:, a] == w.values[0], axis=1)))


def _adult_columns():
    loaded = load_builtin(ADULT)
    names = ["age", "workclass", "education", "marital_status", "relationship", "race", "sex",
             "income"]
    return loaded, sy.choose_columns(loaded, names, ONE_ROW)


@pytest.mark.slow
def test_one_way_tv_shrinks_as_epsilon_grows_on_adult():
    loaded, columns = _adult_columns()
    cells = sy.joint_cells(loaded, columns)
    assert cells.counts.sum() == len(loaded.frame)
    mean_tv = {}
    for eps in (0.01, 10.0):
        tvs = []
        for _ in range(3):          # three draws: OpenDP's noise is its own, not seeded
            codes = sy.generate(cells, columns.shape, measure="epsilon", budget=eps,
                                max_rows=1, algorithm="AIM", marginals="one-way",
                                rows=5_000, iters=100)
            table = sy.tv_table(cells, codes, columns)
            tvs.append(table.loc[table["way"] == 1, "TV distance"].mean())
        mean_tv[eps] = np.mean(tvs)
    assert mean_tv[10.0] < mean_tv[0.01] / 2
    assert mean_tv[10.0] < 0.05


@pytest.mark.slow
def test_mst_generates_rows_in_the_declared_cells():
    loaded, columns = _adult_columns()
    cells = sy.joint_cells(loaded, columns)
    codes = sy.generate(cells, columns.shape, measure="rho", budget=0.5, max_rows=1,
                        algorithm="MST", rows=2_000, iters=100)
    assert codes.shape == (2_000, 8)
    assert (codes >= 0).all() and (codes < np.asarray(columns.shape)).all()
