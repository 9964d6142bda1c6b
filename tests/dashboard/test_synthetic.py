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
from engine import JointAggregate

ADULT = "Adult (UCI census income)"
ONE_ROW = PrivacyUnit()


def _loaded(frame: pd.DataFrame, domains: dict, key: str = "test:synthetic") -> LoadedDataset:
    return LoadedDataset("t", frame, domains, [], "test", key=key)


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


# --------------------------------------------------------------------------------------------
# The classifier: naive Bayes on codes, trained on real or synthetic rows, tested on held-out


def _cells(codes, counts) -> JointAggregate:
    return JointAggregate(np.asarray(codes, dtype=np.int64), np.asarray(counts, dtype=np.int64))


def _product_cells(shape, weights_per_column):
    """Every cell of ``shape``, its count the product of the columns' weights (independent)."""
    grid = np.stack(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij"), -1)
    codes = grid.reshape(-1, len(shape))
    counts = np.ones(len(codes), dtype=np.int64)
    for j, w in enumerate(weights_per_column):
        counts *= np.asarray(w)[codes[:, j]]
    return _cells(codes, counts)


def test_a_target_that_is_a_function_of_a_feature_is_predicted_exactly():
    # columns: x (3 values), an independent z (2 values), target y = x mod 2
    shape = (3, 2, 2)
    base = _product_cells((3, 2), [[40, 25, 10], [30, 50]])
    codes = np.column_stack([base.codes, base.codes[:, 0] % 2])
    real = _cells(codes, base.counts)
    # synthetic rows follow the same rule with other proportions
    rng = np.random.default_rng(5)
    x = rng.integers(0, 3, 400)
    synthetic = np.column_stack([x, rng.integers(0, 2, 400), x % 2])
    acc = sy.held_out_accuracy(real, real, synthetic, shape, target=2)
    assert acc.train_on_real == 1.0 and acc.train_on_synthetic == 1.0
    # the commonest y: x in {0, 2} gives y = 0 (50 of every 75 rows' x weight)
    assert acc.majority == pytest.approx(50 / 75)
    assert acc.test_rows == acc.train_rows == int(base.counts.sum())


def test_a_target_independent_of_the_features_is_predicted_at_the_majority_rate():
    # y takes 0 in 70% of the rows whatever the other two columns hold
    cells = _product_cells((3, 4, 2), [[1, 2, 3], [4, 1, 1, 2], [70, 30]])
    rows = np.repeat(cells.codes, cells.counts, axis=0)
    acc = sy.held_out_accuracy(cells, cells, rows, (3, 4, 2), target=2)
    assert acc.majority == pytest.approx(0.7)
    assert acc.train_on_real == pytest.approx(0.7)
    assert acc.train_on_synthetic == pytest.approx(0.7)


def test_counts_weigh_the_cells_like_repeated_rows():
    # x = 0 holds y = 0 five times and y = 1 once; x = 1 holds y = 1 four times, y = 0 once
    train = _cells([[0, 0], [0, 1], [1, 1], [1, 0]], [5, 1, 4, 1])
    model = sy.fit_naive_bayes(train.codes, train.counts, (2, 2), target=1)
    rows = sy.fit_naive_bayes(np.repeat(train.codes, train.counts, axis=0), None, (2, 2), 1)
    assert np.allclose(model.log_prior, rows.log_prior)
    assert np.allclose(model.log_likelihood[0], rows.log_likelihood[0])
    assert model.predict(np.array([[0, 9], [1, 9]])).tolist() == [0, 1]
    # add-one smoothing: P(x = 0 | y = 0) = (5 + 1) / (6 + 2)
    assert np.exp(model.log_likelihood[0][0, 0]) == pytest.approx(6 / 8)
    # swapped counts swap the predictions
    swapped = sy.fit_naive_bayes(train.codes, train.counts[[1, 0, 3, 2]], (2, 2), 1)
    assert swapped.predict(np.array([[0, 0], [1, 0]])).tolist() == [1, 0]
    # accuracy is a share of the test rows, weighted by their counts: 3 of 4 right
    test = _cells([[0, 0], [0, 1]], [3, 1])
    assert sy.accuracy(model, test) == 0.75
    assert np.isnan(sy.accuracy(model, _cells(np.zeros((0, 2)), [])))


def test_the_split_thins_every_cell_and_keeps_every_row_once():
    cells = _cells([[0, 0], [0, 1], [1, 1]], [10_000, 3, 0])
    train, test = sy.split_rows(cells, rng=np.random.default_rng(0))
    again, _ = sy.split_rows(cells, rng=np.random.default_rng(0))
    assert np.array_equal(train.counts, again.counts)
    whole = (sy.marginal(train.codes, train.counts, (2, 2), (0, 1))
             + sy.marginal(test.codes, test.counts, (2, 2), (0, 1)))
    assert np.array_equal(whole, [[10_000, 3], [0, 0]])
    assert (train.counts > 0).all() and (test.counts > 0).all()
    # 7,000 expected of the big cell, sd 46: within 5 sd
    assert abs(train.counts[0] - 7_000) < 5 * np.sqrt(10_000 * 0.21)
    with pytest.raises(ValueError, match="train_share"):
        sy.split_rows(cells, rng=np.random.default_rng(0), train_share=1.0)


# --------------------------------------------------------------------------------------------
# The sweep over budgets and generations


def _small_columns(rows: int = 600, *, seed: int = 0, flip: float = 0.0,
                   names: tuple[str, ...] = ("x", "z", "y")):
    """Three columns: x (4 values), y = x mod 2 (a share ``flip`` flipped), z independent."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, rows)
    y = (x % 2) ^ (rng.random(rows) < flip)
    frame = pd.DataFrame({"x": np.array(list("abcd"))[x], "z": np.array(["u", "v"])[
        rng.integers(0, 2, rows)], "y": np.array(["even", "odd"])[y]})
    domains = {"x": ColumnDomain("categorical", categories=tuple("abcd")),
               "z": ColumnDomain("categorical", categories=("u", "v")),
               "y": ColumnDomain("categorical", categories=("even", "odd"))}
    loaded = _loaded(frame, domains, key=f"test:synthetic-sweep-{rows}-{seed}-{flip}")
    columns = sy.choose_columns(loaded, list(names), ONE_ROW)
    return sy.joint_cells(loaded, columns), columns


def test_the_sweep_measures_each_generation_as_the_single_figures_do(monkeypatch):
    cells, columns = _small_columns()
    calls = []

    def fake_generate(train, shape, *, measure, budget, max_rows, algorithm, rows, iters):
        # rows drawn from the training cells, noisier at a smaller budget (deterministic)
        rng = np.random.default_rng([len(calls), int(budget * 1000)])
        p = train.counts + rng.exponential(1 / budget, len(train.counts)) * 50
        codes = train.codes[rng.choice(len(p), rows, p=p / p.sum())]
        calls.append((train, budget, codes, algorithm, iters, rows))
        return codes

    monkeypatch.setattr(sy, "generate", fake_generate)
    seen = []
    result = sy.sweep(cells, columns, target=2, measure="epsilon", budgets=(0.3, 1.0, 3.0),
                      generations=2, max_rows=1, algorithm="MST", rows=300, iters=7,
                      split_seed=11, workload_seed=12, progress=lambda d, t: seen.append((d, t)))
    assert seen == [(i, 6) for i in range(1, 7)]
    assert result.one_way_tv.shape == (3, 2) and result.train_on_synthetic.shape == (3, 2)
    assert [c[1] for c in calls] == [0.3, 0.3, 1.0, 1.0, 3.0, 3.0]
    assert {(c[3], c[4], c[5]) for c in calls} == {("MST", 7, 300)}
    train, test = sy.split_rows(cells, rng=np.random.default_rng(11))
    assert result.train_rows + result.test_rows == cells.counts.sum()
    for i, (seen_train, budget, codes, *_) in enumerate(calls):
        b, g = divmod(i, 2)
        # fitted to the training part only
        assert np.array_equal(seen_train.codes, train.codes)
        assert np.array_equal(seen_train.counts, train.counts)
        table = sy.tv_table(train, codes, columns)
        assert result.one_way_tv[b, g] == table["TV distance"][:3].mean()
        assert result.two_way_tv[b, g] == table["TV distance"][3:].mean()
        w = sy.workload(train, codes, columns.shape, measure="epsilon", budget=budget,
                        max_rows=1, rng=np.random.default_rng([12, g]))
        assert result.workload_synthetic[b, g] == w.synthetic_error
        assert result.workload_direct[b, g] == w.direct_error
        acc = sy.held_out_accuracy(train, test, codes, columns.shape, 2)
        assert result.train_on_synthetic[b, g] == acc.train_on_synthetic
        assert (result.train_on_real, result.majority) == (acc.train_on_real, acc.majority)
    assert np.isfinite(result.workload_direct).all()


def test_a_failed_generation_in_the_sweep_is_named(monkeypatch):
    cells, columns = _small_columns()

    def failing(train, shape, *, budget, **_):
        if budget > 2:
            raise sy.SynthesisError("OpenDP refused: too little data")
        return np.repeat(train.codes, train.counts, axis=0)

    monkeypatch.setattr(sy, "generate", failing)
    with pytest.raises(sy.SynthesisError, match="Generation 1 of 2 at ρ = 5 failed: OpenDP "
                                                "refused: too little data"):
        sy.sweep(cells, columns, target=2, measure="rho", budgets=(0.5, 5.0), generations=2,
                 max_rows=1, algorithm="MST", rows=50, split_seed=0, workload_seed=0)
    with pytest.raises(sy.SynthesisError, match="at least one budget"):
        sy.sweep(cells, columns, target=2, measure="rho", budgets=(), generations=2,
                 max_rows=1, algorithm="MST", rows=50, split_seed=0, workload_seed=0)


def test_two_columns_sweep_without_a_workload(monkeypatch):
    two_cells, two = _small_columns(names=("x", "y"))
    monkeypatch.setattr(sy, "generate", lambda train, shape, **_: np.repeat(
        train.codes, train.counts, axis=0))
    result = sy.sweep(two_cells, two, target=1, measure="epsilon", budgets=(1.0,),
                      generations=1, max_rows=1, algorithm="MST", rows=50, split_seed=0,
                      workload_seed=0)
    assert result.one_way_tv[0, 0] == 0.0 and result.two_way_tv[0, 0] == 0.0
    assert np.isnan(result.workload_synthetic).all() and np.isnan(result.workload_direct).all()


@pytest.mark.slow      # six model fits: minutes on a loaded machine
def test_tstr_accuracy_and_one_way_tv_improve_from_small_to_large_epsilon():
    """150 rows, y = x mod 2 in 95% of them. At ε = 10 MST keeps the dependency (accuracy
    0.98 in every generation when measured); at ε = 0.1 its noise hides it in most (measured:
    0.39 to 0.49 over three generations; with 300 rows, 0.59 to 0.86)."""
    cells, columns = _small_columns(rows=150, seed=3, flip=0.05)
    result = sy.sweep(cells, columns, target=2, measure="epsilon", budgets=(0.1, 10.0),
                      generations=3, max_rows=1, algorithm="MST", rows=2_000, iters=100,
                      split_seed=1, workload_seed=2)
    assert result.train_on_synthetic.shape == (2, 3)
    low, high = result.train_on_synthetic.mean(1)
    assert high > low
    assert high > 0.9 and result.train_on_real > 0.9
    tv_low, tv_high = result.one_way_tv.mean(1)
    assert tv_high < tv_low / 3
