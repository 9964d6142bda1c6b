"""Synthetic rows are a faithful sample of the fitted model (issue 34): every pair of columns'
2-way marginal of the drawn rows against the model's own projection (mbi's ``project``,
variable elimination: an independent computation), within sampling error (a chi-square bound),
on models with strong and with no associations, in random row order; and at large ε the
marginals OpenDP measured come out as the real ones.

mbi 1.1.0's ``synthetic_data(method="round")`` ranked a row inside its parents' group by row
order, so sibling columns came out co-monotone: the same check refuses its rows (the planted
bug). The fits (MST, AIM; the page's path and the release's) are small and marked slow.
"""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats

from engine import JointAggregate
from release.synthesis import synthetic_rows

#: The chance that a faithful sampler fails one model's check (split over its pairs).
ALPHA = 1e-4
#: Rows drawn for a check: enough that a Cramér's V of 0.1 between two 3-value columns
#: (chi-square 200 on 4 degrees of freedom) stands far above the bound (about 30).
ROWS = 20_000
#: The fewest rows a cell of the chi-square may expect: cells expecting fewer are pooled, and
#: the pool itself must expect as many. At the tail the checks read (α / pairs ≈ 10⁻⁵) the
#: chi-square law needs more than Cochran's usual 5: over 120,000 i.i.d. draws of the pairs of
#: 10 real AIM fits, p < 1.67·10⁻⁵ came out at a rate of 5.0·10⁻⁵ with 5 and 1.7·10⁻⁵ with 20.
MIN_EXPECTED = 20


def _folded(values: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A model array over codes 0 … s (s: the model's extra null key) folded as the rows
    read it: the null key counts as the last declared code s − 1."""
    for axis, size in enumerate(shape):
        head = np.take(values, np.arange(size - 1), axis=axis)
        tail = np.take(values, np.arange(size - 1, values.shape[axis]), axis=axis).sum(
            axis=axis, keepdims=True)
        values = np.concatenate([head, tail], axis=axis)
    return values


def _pair_counts(codes: np.ndarray, shape: tuple[int, ...], a: int, b: int) -> np.ndarray:
    flat = np.ravel_multi_index((codes[:, a], codes[:, b]), (shape[a], shape[b]))
    return np.bincount(flat, minlength=shape[a] * shape[b]).reshape(shape[a], shape[b])


def _chi_square_excess(observed: np.ndarray, probabilities: np.ndarray, alpha: float) -> float:
    """Pearson's chi-square of ``observed`` counts against ``probabilities`` (normalised here)
    over the bound a multinomial sample exceeds with probability ``alpha``, as a ratio (above
    1: refused). Cells expecting fewer than :data:`MIN_EXPECTED` rows are pooled into one,
    smallest first, and the pool takes the next smallest cells until it expects that many
    itself (Cochran's rule: every cell of the statistic does); a row in a cell of
    probability 0 is refused outright."""
    observed = observed.ravel().astype(np.float64)
    p = np.clip(probabilities.ravel().astype(np.float64), 0.0, None)
    p = p / p.sum()
    if np.any(observed[p == 0] > 0):
        return float("inf")
    expected = p * observed.sum()
    # Pooling only the small cells left a pool of one cell where a fit puts a trace of mass
    # (both columns' unused missing-or-other code: 0.02 rows expected at 20,000): one row
    # there adds (1 − 0.02)² / 0.02 ≈ 48, the whole bound, and rows land there 2 % of the
    # time: on 10 real AIM fits, i.i.d. rows failed the check in 8 of 200 draws and ours in 2
    order = np.argsort(expected, kind="stable")
    ranked = expected[order]
    small = int(np.count_nonzero(ranked < MIN_EXPECTED))
    pooled = min(max(small, int(np.searchsorted(np.cumsum(ranked), MIN_EXPECTED)) + 1),
                 ranked.size) if small else 0
    obs = np.append(observed[order][pooled:], observed[order][:pooled].sum())
    exp = np.append(ranked[pooled:], ranked[:pooled].sum())
    keep = exp > 0
    statistic = float(((obs[keep] - exp[keep]) ** 2 / exp[keep]).sum())
    return statistic / float(stats.chi2.ppf(1 - alpha, max(int(keep.sum()) - 1, 1)))


def unfaithful_pairs(codes: np.ndarray, model, shape: tuple[int, ...]) -> list[tuple]:
    """The pairs whose rows' 2-way marginal is further from the model's projection than
    sampling explains (Bonferroni over the pairs), with the excess ratio."""
    pairs = list(itertools.combinations(range(len(shape)), 2))
    out = []
    for a, b in pairs:
        expected = _folded(np.asarray(model.project((f"c{a}", f"c{b}")).datavector(
            flatten=False), dtype=np.float64), (shape[a], shape[b]))
        excess = _chi_square_excess(_pair_counts(codes, shape, a, b), expected,
                                    ALPHA / len(pairs))
        if excess > 1:
            out.append((a, b, round(excess, 1)))
    return out


def test_the_bound_holds_its_alpha_on_iid_draws_with_a_nearly_empty_cell():
    """i.i.d. rows fail the check at its α only, even where a cell expects a trace of a row:
    a pair as AIM fits it (3 × 3 declared values, the missing-or-other row and column
    expecting 8 rows each, their corner 0.02) at 20,000 rows, 2,000 multinomial draws at
    α = 10⁻³. A calibrated check refuses about 2 (more than 10: chance 8·10⁻⁶); pooling only
    the cells under 5 made the corner a cell of its own, and its 2 % of draws with a row
    there were each refused (about 40)."""
    p = np.full((4, 4), 4e-4)
    p[:3, :3] = (1 - p[3].sum() - p[:3, 3].sum()) / 9
    p[3, 3] = 1e-6
    draws = np.random.default_rng(34).multinomial(ROWS, p.ravel() / p.sum(), size=2000)
    refused = sum(_chi_square_excess(d, p, 1e-3) > 1 for d in draws)
    assert refused <= 10


def _model(shape: tuple[int, ...], cliques: list[tuple[int, ...]], strength: float, seed: int):
    """A Markov random field over columns c0, c1, … (each with the extra null key, as OpenDP's
    tables have) with log-potentials ``strength`` × standard normal on ``cliques``
    (strength 0: every column independent and uniform)."""
    from mbi import CliqueVector, Domain, Factor, MarkovRandomField, marginal_oracles

    rng = np.random.default_rng(seed)
    domain = Domain([f"c{i}" for i in range(len(shape))], [s + 1 for s in shape])
    named = [tuple(f"c{i}" for i in clique) for clique in cliques]
    arrays = {c: Factor(domain.project(c), strength * rng.standard_normal(
        domain.project(c).shape)) for c in named}
    potentials = CliqueVector(domain, named, arrays)
    return MarkovRandomField(potentials=potentials,
                             marginals=marginal_oracles.message_passing_stable(potentials),
                             total=1.0)


SHAPE = (3, 4, 3, 3, 2, 3)
#: A tree with siblings (c0's three children, c3's two: MST's shape) and one with a 3-way
#: clique (AIM's), each with strong associations and with none.
MODELS = {
    "tree, strong": (SHAPE, [(0, 1), (0, 2), (0, 3), (3, 4), (3, 5)], 2.0),
    "tree, none": (SHAPE, [(0, 1), (0, 2), (0, 3), (3, 4), (3, 5)], 0.0),
    "triples, strong": (SHAPE, [(0, 1, 2), (1, 2, 3), (0, 4), (0, 5)], 1.5),
    "triples, none": (SHAPE, [(0, 1, 2), (1, 2, 3), (0, 4), (0, 5)], 0.0),
    # AIM's fits leave a column it never selected with a pair in a clique of its own (Adult's
    # 8 columns at ε = 1: race): a second root, drawn from its 1-way marginal. Both roots
    # came out sorted, so they were co-monotone (the planted bug: c6 × c7's TV 0.096 against
    # the model's projection on such a fit, i.i.d. rows' 0.007)
    "triples and a lone column, strong": (SHAPE, [(0, 1, 2), (1, 2, 3), (0, 4), (5,)], 1.5),
    "triples and a lone column, none": (SHAPE, [(0, 1, 2), (1, 2, 3), (0, 4), (5,)], 0.0),
    # a cycle of pairs (AIM's selections can close one): the junction tree's cliques hold the
    # triangulation's fill-in edges, the model's own do not, and a column drawn given only
    # its neighbours in the model's cliques was drawn given too few parents (the planted bug:
    # 8 pairs beyond the bound, the worst 29 times over)
    "a cycle of six pairs, strong": (SHAPE, [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0)],
                                     2.0),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_the_rows_are_a_faithful_sample_of_the_model(name):
    shape, cliques, strength = MODELS[name]
    model = _model(shape, cliques, strength, seed=34)
    codes = synthetic_rows(SimpleNamespace(model=model), shape, ROWS,
                           rng=np.random.default_rng(1))
    assert codes.shape == (ROWS, len(shape)) and codes.dtype == np.int64
    assert unfaithful_pairs(codes, model, shape) == []


@pytest.mark.parametrize("name", list(MODELS))
def test_mbi_rounding_by_row_order_is_refused(name):
    """The planted bug: mbi 1.1.0's own rounding (what releases used) fails the check."""
    shape, cliques, strength = MODELS[name]
    model = _model(shape, cliques, strength, seed=34)
    # mbi draws with numpy's global state, not seeded here (no global seeding): its worst
    # pair is 100–1,000 times over the bound in each model (measured), so this never passes
    frame = model.synthetic_data(ROWS, method="round").df
    codes = np.stack([np.minimum(frame[f"c{i}"].to_numpy(), s - 1)
                      for i, s in enumerate(shape)], axis=1)
    assert unfaithful_pairs(codes, model, shape) != []


def test_the_rounding_keeps_the_first_columns_marginal_exact_and_the_rows_shuffled():
    """The first column drawn is rounded from its marginal (each count within one row of its
    expectation); the rows come out in random order, not sorted by it."""
    shape, cliques, strength = MODELS["tree, strong"]
    model = _model(shape, cliques, strength, seed=34)
    rows = 1001
    codes = synthetic_rows(SimpleNamespace(model=model), shape, rows,
                           rng=np.random.default_rng(2))
    for column in range(len(shape)):
        expected = _folded(np.asarray(model.project((f"c{column}",)).datavector(),
                                      dtype=np.float64), (shape[column],))
        counts = np.bincount(codes[:, column], minlength=shape[column])
        # the root: |count − expectation| < 1 in every cell; any column: within sampling
        assert _chi_square_excess(counts, expected, 1e-4) <= 1
    roots = [c for c in range(len(shape))
             if np.all(np.abs(np.bincount(codes[:, c], minlength=shape[c]) - rows * _folded(
                 np.asarray(model.project((f"c{c}",)).datavector(), dtype=np.float64),
                 (shape[c],))) < 1)]
    assert roots
    # sorted rows would hold at most (cells − 1) changes of value in the root column
    changes = np.count_nonzero(np.diff(codes[:, roots[0]]))
    assert changes > rows / 3


def test_no_rows_and_bad_row_counts():
    shape, cliques, strength = MODELS["tree, none"]
    table = SimpleNamespace(model=_model(shape, cliques, strength, seed=0))
    assert synthetic_rows(table, shape, 0, rng=np.random.default_rng(0)).shape == (0, 6)
    for rows in (-1, 2.5):
        with pytest.raises(ValueError, match="rows"):
            synthetic_rows(table, shape, rows, rng=np.random.default_rng(0))


# --------------------------------------------------------------------------------------------
# Real fits: the page's path (dashboard.analysis.synthetic) and the release's


def _cells(associated: bool, seed: int = 7, rows: int = 3000) -> tuple[JointAggregate, tuple]:
    """Real rows over four declared columns (3, 3, 2, 3 categories; one more code each for
    missing or other, never used): strongly associated (c1 and c2 follow c0, c3 follows c1),
    or independent."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, rows)
    if associated:
        b = np.where(rng.random(rows) < 0.8, a, rng.integers(0, 3, rows))
        c = np.where(rng.random(rows) < 0.85, (a > 0).astype(int), rng.integers(0, 2, rows))
        d = np.where(rng.random(rows) < 0.8, 2 - b, rng.integers(0, 3, rows))
    else:
        b, c, d = rng.integers(0, 3, rows), rng.integers(0, 2, rows), rng.integers(0, 3, rows)
    codes, counts = np.unique(np.stack([a, b, c, d], axis=1), axis=0, return_counts=True)
    return JointAggregate(codes.astype(np.int64), counts.astype(np.int64)), (4, 4, 3, 4)


def _check_page_rows(monkeypatch, table, cells, shape):
    """The page's generate() on ``table`` (its fit replaced by the one made): faithful rows."""
    from dashboard.analysis import synthetic as sy

    monkeypatch.setattr(sy, "fit", lambda *args, **kwargs: table)
    codes = sy.generate(cells, shape, measure="rho", budget=1.0, max_rows=1,
                        algorithm="MST", rows=ROWS, rng=np.random.default_rng(3))
    assert unfaithful_pairs(codes, table.model, shape) == []


@pytest.mark.slow   # two fits of OpenDP's MST on four small columns: seconds each
@pytest.mark.parametrize("associated", [True, False])
def test_mst_rows_on_the_page_are_a_faithful_sample(monkeypatch, associated):
    from dashboard.analysis import synthetic as sy

    cells, shape = _cells(associated)
    table = sy.fit(cells, shape, measure="epsilon", budget=1.0, max_rows=1, algorithm="MST",
                   iters=100)
    _check_page_rows(monkeypatch, table, cells, shape)


@pytest.mark.slow   # OpenDP's AIM: tens of seconds each
@pytest.mark.parametrize("associated", [True, False])
def test_aim_rows_on_the_page_are_a_faithful_sample(monkeypatch, associated):
    from dashboard.analysis import synthetic as sy

    cells, shape = _cells(associated)
    table = sy.fit(cells, shape, measure="rho", budget=1.0, max_rows=1, algorithm="AIM",
                   iters=100)
    _check_page_rows(monkeypatch, table, cells, shape)


@pytest.mark.slow   # OpenDP builds and certifies the measurement, then fits: seconds
@pytest.mark.parametrize("algorithm", ["MST", "AIM"])
def test_a_release_draws_a_faithful_sample_of_its_fitted_model(monkeypatch, algorithm):
    """The release's measurement (built from a plan as a release builds it): its rows follow
    the model it fitted (the fit made once, then the measurement's own call draws)."""
    from plan.build import build_plan
    from plan.kinds.synthetic import Synthetic, SyntheticColumn
    from plan.model import Accounting, Categories, Dataset, Plan, PlanQuery, PrivacyUnit
    from release import prepare
    from release.synthesis import SynthesisMeasurement

    cells, shape = _cells(True)
    columns = tuple(SyntheticColumn(f"v{i}", Categories(tuple(f"k{j}" for j in range(s - 1)),
                                                        "public", "test"))
                    for i, s in enumerate(shape))
    spec = Synthetic(columns, algorithm, ROWS, "zcdp", rho=1.0, iters=100)
    plan = Plan(Dataset("d"), (PlanQuery("syn", "Synthetic", spec, None),), PrivacyUnit(),
                Accounting("zcdp", 1e-6))
    build_plan(plan)
    (certified,) = prepare(plan).certified[0]
    measurement: SynthesisMeasurement = certified.measurement
    table = measurement.fit(cells)
    monkeypatch.setattr(SynthesisMeasurement, "fit", lambda self, _cells: table)
    # the measurement draws with fresh OS entropy; a fixed seed here, so the test's α is
    # spent once (a full run failed once at an excess of 1.0; 0 of 50 seeded draws did)
    fresh = np.random.default_rng
    monkeypatch.setattr(np.random, "default_rng",
                        lambda seed=None: fresh(5 if seed is None else seed))
    codes = measurement(cells)
    monkeypatch.setattr(np.random, "default_rng", fresh)
    assert codes.shape == (ROWS, len(shape))
    assert unfaithful_pairs(codes, table.model, shape) == []


@pytest.mark.slow   # two fits at a large budget
@pytest.mark.parametrize("algorithm", ["MST", "AIM"])
def test_at_large_epsilon_the_measured_marginals_are_the_real_ones(algorithm):
    """At ρ = 10⁴ OpenDP's noise is negligible against 3,000 rows: every marginal it measured
    comes out of the synthetic rows as in the real rows, within the synthetic rows' sampling
    error (the real proportions as the chi-square's law). With mbi's rounding by row order
    the pairs MST measured came out right too: what it broke were the pairs not measured (the
    faithful-sample tests above)."""
    from dashboard.analysis import synthetic as sy

    cells, shape = _cells(True)
    table = sy.fit(cells, shape, measure="rho", budget=1e4, max_rows=1, algorithm=algorithm,
                   iters=300)
    codes = synthetic_rows(table, shape, ROWS, rng=np.random.default_rng(4))
    measured = [tuple(int(n[1:]) for n in clique) for clique in table.marginals.cliques()]
    assert any(len(clique) >= 2 for clique in measured)
    for clique in measured:
        real = sy.marginal(cells.codes, cells.counts, shape, clique)
        synthetic = sy.marginal(codes, None, shape, clique)
        # the fit (300 mirror-descent steps) leaves a trace of mass on cells the real rows
        # leave empty (the missing-or-other codes): measured about 1 row in 1,000 (MST: 5 in
        # 20,000; AIM: 23), asked under 1 in 200 ...
        assert synthetic[real == 0].sum() <= ROWS / 200, clique
        # ... and the rest follows the real proportions within sampling error
        assert _chi_square_excess(synthetic[real > 0], real[real > 0],
                                  ALPHA / len(measured)) <= 1, clique
