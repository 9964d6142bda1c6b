"""OpenDP's mbi measured from the engine's cell counts (``release.mbi_cells``, issue 34 item 3):
the marginals of a cell frame are the rows' marginals (against numpy on the expanded rows and
OpenDP's own function on the rows), the certified ε or ρ equals OpenDP's own
``make_contingency_table`` map for the same configuration and the closed form of its budget
split, the 1-way noise is OpenDP's scale, and a fit's memory does not grow with the rows (a
release of 10⁷ rows in four cells: on main the rows were rebuilt, 916 MB traced).
"""

from __future__ import annotations

import functools
import tracemalloc

import numpy as np
import pytest

from engine import JointAggregate

opendp = pytest.importorskip("opendp.prelude")
pytest.importorskip("mbi")


@pytest.fixture(scope="module")
def dp():
    opendp.enable_features("contrib")
    return opendp


def _rows(shape, n, seed):
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, shape, size=(n, len(shape)))
    rows[:, 1] = np.where(rng.random(n) < 0.7, rows[:, 0] % shape[1], rows[:, 1])
    return rows


def _opendp_table(dp, shape, measure, d_out, algorithm, max_rows):
    """OpenDP's own measurement of the rows (as the release built it before this change)."""
    import polars as pl
    from opendp.extras.polars import make_stable_lazyframe

    names = [f"c{i}" for i in range(len(shape))]
    domain = dp.lazyframe_domain([dp.series_domain(n, dp.atom_domain(T="u32")) for n in names])
    stable = make_stable_lazyframe(domain, dp.symmetric_distance(),
                                   lazyframe=pl.LazyFrame(schema={n: pl.UInt32 for n in names}),
                                   MO="FrameDistance<SymmetricDistance>")
    table, scale, _ = dp.mbi.make_contingency_table(
        stable.output_domain, stable.output_metric, measure, stable.map(max_rows), d_out,
        keys={n: list(range(s)) for n, s in zip(names, shape, strict=True)},
        algorithm=algorithm)
    return stable >> table, scale


def _algorithms(dp, names, iters=20):
    from mbi.estimation import mirror_descent

    estimator = functools.partial(mirror_descent, iters=iters)
    return {"MST": dp.mbi.MST(estimator=estimator), "AIM": dp.mbi.AIM(estimator=estimator),
            "AIM pairs": dp.mbi.AIM(queries=[dp.mbi.Count((names[0], names[2]))],
                                    estimator=estimator),
            "Fixed": dp.mbi.Fixed(queries=[dp.mbi.Count((n,)) for n in names],
                                  estimator=estimator)}


def test_a_cell_frames_marginals_are_the_rows_marginals(dp):
    """Through OpenDP's make_stable_marginals (as AIM, MST and Fixed call it): the cell frame
    gives each clique's table of the expanded rows (numpy's count of the rows: independent),
    and a frame of rows still gets OpenDP's own function, with the same result."""
    import polars as pl
    from opendp.extras.mbi import _utilities
    from opendp.extras.polars import Bound

    from release.mbi_cells import cell_frame, reading_cells

    reading_cells()
    shape = (3, 4, 2)
    rows = _rows(shape, 5_000, 1)
    codes, counts = np.unique(rows, axis=0, return_counts=True)
    names = ["c0", "c1", "c2"]
    domain = dp.lazyframe_domain([dp.series_domain(n, dp.atom_domain(bounds=(0, s), T="u32"))
                                  for n, s in zip(names, shape, strict=True)])
    cliques = [("c0",), ("c1", "c2"), ("c2", "c0", "c1")]
    marginals = _utilities.make_stable_marginals(
        domain, dp.frame_distance(dp.symmetric_distance()), dp.l1_distance(T="u32"), cliques)
    of_cells = marginals(cell_frame(codes, counts, names))
    of_rows = marginals(pl.LazyFrame({n: pl.Series(n, rows[:, i].astype(np.uint32))
                                      for i, n in enumerate(names)}))
    for clique in cliques:
        axes = [names.index(c) for c in clique]
        sizes = tuple(shape[a] + 1 for a in axes)   # bounds (0, s): s + 1 codes
        expected = np.zeros(sizes, dtype=np.int64)
        np.add.at(expected, tuple(rows[:, a] for a in axes), 1)
        assert of_cells[clique].dtype == np.int32
        np.testing.assert_array_equal(of_cells[clique], expected)
        np.testing.assert_array_equal(of_rows[clique], expected)
    # OpenDP's stability map, unchanged: k rows per person move each marginal by k
    assert marginals.map([Bound(per_group=3)]) == {c: 3 for c in cliques}


def test_a_column_of_the_data_named_like_the_cells_count_is_read_as_data(dp):
    """Found in review: once the wrapper is in place, OpenDP's own mbi path (any user of OpenDP
    in the process) on data whose domain declares a column named like the cell frame's count
    read that column as weights (one row counted 99 times under a stability map of 1 a row).
    A column the domain declares is data: the marginal counts the row once."""
    import polars as pl
    from opendp.extras.mbi import _utilities
    from opendp.extras.polars import Bound

    from release.mbi_cells import COUNT, reading_cells

    reading_cells()
    domain = dp.lazyframe_domain([dp.series_domain("a", dp.atom_domain(bounds=(0, 3), T="u32")),
                                  dp.series_domain(COUNT, dp.atom_domain(bounds=(0, 100),
                                                                         T="u32"))])
    marginals = _utilities.make_stable_marginals(
        domain, dp.frame_distance(dp.symmetric_distance()), dp.l1_distance(T="u32"), [("a",)])
    one_row = pl.LazyFrame({"a": pl.Series([1], dtype=pl.UInt32),
                            COUNT: pl.Series([99], dtype=pl.UInt32)})
    np.testing.assert_array_equal(marginals(one_row)[("a",)], [0, 1, 0, 0])
    assert marginals.map([Bound(per_group=1)]) == {("a",): 1}


@pytest.mark.parametrize("algorithm", ["MST", "AIM", "Fixed"])
@pytest.mark.parametrize("measure,d_out,max_rows", [("pure", 3.0, 4), ("zcdp", 0.5, 1)])
def test_the_certified_privacy_is_opendps_own_map(dp, algorithm, measure, d_out, max_rows):
    """The new measurement's map at max_rows equals OpenDP's make_contingency_table's (the
    release's figure before this change) and the closed form of its split: half the budget
    on the 1-way marginals and the rest (two floats below, OpenDP's ``prior``) on the
    algorithm, summed by the adaptive composition; a fixed workload spends it all at once."""
    from release.mbi_cells import make_cells_table

    shape = (3, 2, 4)
    names = ["c0", "c1", "c2"]
    chosen = _algorithms(dp, names)[algorithm]
    m = dp.max_divergence() if measure == "pure" else dp.zero_concentrated_divergence()
    ours = make_cells_table(shape, m, d_out, chosen, max_rows=max_rows)
    theirs, _ = _opendp_table(dp, shape, m, d_out, chosen, max_rows)
    if algorithm == "Fixed":
        closed = d_out
    else:
        half = d_out * 0.5
        closed = half + float(np.nextafter(np.nextafter(d_out - half, 0), 0))
    assert ours.map(max_rows) == theirs.map(max_rows) == closed
    # a person with more rows than the measurement was built for is refused, as OpenDP's
    with pytest.raises(dp.OpenDPException):
        ours.map(max_rows + 1)


@pytest.mark.slow   # two small fits of OpenDP's MST
@pytest.mark.parametrize("measure", ["pure", "zcdp"])
def test_the_one_way_marginals_are_measured_at_opendps_scale(dp, measure):
    """One fit of MST on cells: its 1-way measurements carry the standard deviation of the
    noise scale OpenDP's make_contingency_table finds for the same budget (its polars path),
    and sum to the rows' total within that noise."""
    from opendp.extras.mbi._utilities import get_std

    from release.mbi_cells import cell_frame, make_cells_table

    shape = (3, 2, 4)
    names = ["c0", "c1", "c2"]
    rows = _rows(shape, 3_000, 2)
    codes, counts = np.unique(rows, axis=0, return_counts=True)
    chosen = _algorithms(dp, names, iters=10)["MST"]
    m = dp.max_divergence() if measure == "pure" else dp.zero_concentrated_divergence()
    _, scale = _opendp_table(dp, shape, m, 1.0, chosen, 2)
    table = make_cells_table(shape, m, 1.0, chosen, max_rows=2)(
        cell_frame(codes, counts, names))
    oneway = [lm for lm in table.marginals.flatten() if len(lm.clique) == 1]
    assert sorted(lm.clique for lm in oneway) == [(n,) for n in names]
    for lm in oneway:
        assert lm.stddev == pytest.approx(get_std(m, scale), rel=1e-12)
        # the noise of s + 1 cells: 8 standard deviations of their sum is far out
        cells = shape[names.index(lm.clique[0])] + 1
        assert abs(float(np.sum(lm.noisy_measurement)) - 3_000) <= 8 * lm.stddev * cells ** 0.5


@pytest.mark.slow   # one small fit of OpenDP's MST
def test_a_fit_of_ten_million_rows_in_four_cells_stays_small():
    """The release's measurement fits 10⁷ rows held in 4 cells with a few MB of Python and
    numpy memory (traced): memory follows the cells, not the rows. Before (main at 506915c),
    the fit rebuilt one row of codes per counted row (2 × 10⁷ int64 codes, then their copies
    for polars): 916 MB traced, this test's failure there."""
    from plan.kinds.synthetic import MarginalSynthesis
    from release.synthesis import SynthesisMeasurement, _measurement

    spec = MarginalSynthesis("MST", "auto", (2, 3), "zcdp", 1.0, 1, 100, 20)
    measurement, _ = _measurement(spec)   # built, and tried on a public table: outside the trace
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 2]])
    counts = np.array([4_000_000, 1_000_000, 2_000_000, 3_000_000])
    tracemalloc.start()
    try:
        table = SynthesisMeasurement(measurement, spec).fit(JointAggregate(codes, counts))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 32 * 2**20, f"{peak / 2**20:.0f} MB traced"
    (pair,) = [lm for lm in table.marginals.flatten() if lm.clique == ("c0", "c1")]
    measured = np.asarray(pair.noisy_measurement).reshape(3, 4)[:2, :3]   # null keys last
    np.testing.assert_allclose(measured, [[4e6, 1e6, 0], [2e6, 0, 3e6]],
                               atol=8 * pair.stddev)


@pytest.mark.slow   # one small mirror-descent fit (jax compiles it)
def test_a_fit_and_a_projection_the_model_does_not_hold_leave_no_compiled_kernels(
        dp, monkeypatch):
    """Issue 34 item 4: jax keeps a compiled kernel for each operation and shape run outside
    jit; MST's scores of Adult's 28 pairs (each pair projected by variable elimination) left
    0.65 GB of them, and AIM piles them up round after round. The release's estimator and
    its models' projections now drop them (jax's cache of per-operation kernels is empty
    after each, the projections' allowance of growth set to 0 here; on main 5 after the
    fit, 17 after one projection), and the projection is unchanged: an independent model's
    pair is the outer product of its 1-way marginals."""
    from jax._src.dispatch import xla_primitive_callable
    from mbi import Domain, LinearMeasurement

    import release.synthesis
    from plan.kinds.synthetic import MarginalSynthesis
    from release.synthesis import _algorithm, lean_fit

    monkeypatch.setattr(release.synthesis, "KERNEL_SLACK_BYTES", 0, raising=False)

    spec = MarginalSynthesis("MST", "auto", (3, 4, 2), "zcdp", 1.0, 1, 10, 50)
    algorithm = _algorithm(dp, spec, ["a", "b", "c"])   # as a release builds it
    shares = {"a": [0.1, 0.2, 0.7], "b": [0.25] * 4, "c": [0.4, 0.6]}
    measured = [LinearMeasurement(100 * np.array(v), (n,), 1.0) for n, v in shares.items()]
    with lean_fit(spec):   # as SynthesisMeasurement.fit runs an MST fit
        model = algorithm.estimator(Domain(("a", "b", "c"), (3, 4, 2)), measured)
        assert xla_primitive_callable.cache_info().currsize == 0
        pair = np.asarray(model.project(("a", "b")).datavector(flatten=False))
        assert xla_primitive_callable.cache_info().currsize == 0
    np.testing.assert_allclose(pair, 100 * np.outer(shares["a"], shares["b"]), rtol=1e-3)
