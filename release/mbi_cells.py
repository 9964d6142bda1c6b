"""OpenDP's mbi contingency table measured from the engine's cell counts, not from rows
(issue 34, item 3): memory and time bounded by the non-empty cells, whatever the rows.

OpenDP 0.16's ``make_contingency_table`` takes a polars LazyFrame of rows; every count it
measures is a marginal (``group_by(clique).agg(len)``) of those rows, which is a sum over the
engine's cells. Here OpenDP's own algorithms (``dp.mbi.AIM``, ``MST``, ``Fixed``: their budget
split, selection by report-noisy-max, scores, noise calibration, adaptive composition and
estimation, unchanged) run on a **cell frame**: one row per non-empty cell, its codes and its
count in :data:`COUNT`. The adapter is one function: OpenDP's ``make_stable_marginals`` (the one
place where AIM, MST and Fixed read the data) keeps its domains and its stability map (OpenDP's
per-marginal sensitivity of the rows), and when handed a cell frame computes each marginal as
the count-weighted sum of its cells (numpy ``bincount``) — the same table the rows give
(tested). A LazyFrame of rows still takes OpenDP's own path.

:func:`make_cells_table` mirrors ``make_contingency_table`` for the case used here (every
column keyed, no cuts, no prior table, no δ): half the budget (by default) measures the 1-way
marginals at one noise scale found by OpenDP's binary search (OpenDP measures them with
``make_private_lazyframe``; here with the same discrete noise through OpenDP's
``make_noise_marginals``: the same scale, the same map), the rest goes to the algorithm,
composed by OpenDP's adaptive composition. Its privacy map, read at the rows' symmetric
distance through OpenDP's own stable-lazyframe and index maps, is the figure the release
records; it equals OpenDP's map of ``make_contingency_table`` for the same configuration
(tested).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["COUNT", "cell_frame", "make_cells_table", "marginals_of_cells"]

#: The cell frame's column holding each cell's count of rows (not a column of the table: the
#: table's columns are named c0, c1, …, and OpenDP reserves "len").
COUNT = "__rows_in_cell"


def cell_frame(codes: np.ndarray, counts: np.ndarray, names: list[str]) -> Any:
    """The polars LazyFrame of the non-empty cells: column ``names[i]`` holds the i-th code
    (u32), :data:`COUNT` the cell's rows. Cells with no rows are dropped (they add nothing to
    any marginal)."""
    import polars as pl

    codes = np.asarray(codes, dtype=np.int64).reshape(-1, len(names))
    counts = np.asarray(counts, dtype=np.int64)
    kept = counts > 0
    columns = {n: pl.Series(n, codes[kept, i].astype(np.uint32), dtype=pl.UInt32)
               for i, n in enumerate(names)}
    columns[COUNT] = pl.Series(COUNT, counts[kept].astype(np.uint64), dtype=pl.UInt64)
    return pl.LazyFrame(columns)


def marginals_of_cells(frame: Any, cliques: list[tuple[str, ...]],
                       cardinalities: dict[str, int]) -> dict[tuple[str, ...], np.ndarray]:
    """Each clique's marginal of the rows a cell frame stands for, as OpenDP's
    ``make_stable_marginals`` computes it from the rows: an i32 array of the clique's shape,
    counts clipped to i32's largest. Work and memory: O(cells × columns) per clique."""
    data = frame.collect()
    counts = data[COUNT].to_numpy().astype(np.float64)   # exact: row counts stay below 2^53
    top = np.iinfo(np.int32).max
    out = {}
    for clique in cliques:
        sizes = tuple(int(cardinalities[c]) for c in clique)
        index = np.ravel_multi_index(tuple(data[c].to_numpy().astype(np.int64)
                                           for c in clique), sizes)
        total = np.bincount(index, weights=counts, minlength=int(np.prod(sizes)))
        out[clique] = np.minimum(total, top).astype(np.int32).reshape(sizes)
    return out


def _reading_cells(original):
    """OpenDP's ``make_stable_marginals``, which also reads a cell frame (module docstring)."""
    from opendp._internal import _make_transformation
    from opendp.extras.mbi._utilities import get_cardinalities

    @functools.wraps(original)
    def make_stable_marginals(input_domain, input_metric, output_inner_metric, cliques):
        rows = original(input_domain, input_metric, output_inner_metric, cliques)
        cardinalities = get_cardinalities(input_domain)
        # a cell frame's count is never a column of the domain it is measured under; where
        # the domain declares a column of that name it is data (one row each, as OpenDP reads)
        cells = COUNT not in input_domain.columns

        def function(data):
            if cells and COUNT in data.collect_schema().names():
                return marginals_of_cells(data, list(cliques), cardinalities)
            return rows(data)

        # OpenDP's domains and OpenDP's stability map: what is certified does not change
        return _make_transformation(*rows.input_space, *rows.output_space, function=function,
                                    stability_map=rows.map)

    make_stable_marginals.reads_cells = True
    return make_stable_marginals


def reading_cells() -> None:
    """Let OpenDP's AIM, MST and Fixed read a cell frame (idempotent; once per process). The
    rows' path is unchanged: a LazyFrame without :data:`COUNT` goes to OpenDP's function."""
    import opendp.extras.mbi._aim as aim
    import opendp.extras.mbi._fixed as fixed
    import opendp.extras.mbi._mst as mst
    import opendp.extras.mbi._utilities as utilities

    if getattr(utilities.make_stable_marginals, "reads_cells", False):
        return
    patched = _reading_cells(utilities.make_stable_marginals)
    for module in (utilities, aim, fixed, mst):
        module.make_stable_marginals = patched


def make_cells_table(shape: tuple[int, ...], measure: Any, d_out: float, algorithm: Any, *,
                     max_rows: int) -> Any:
    """OpenDP's measurement of a contingency table of ``shape`` codes (columns c0, c1, …, every
    code keyed) that takes a cell frame (:func:`cell_frame`) and returns OpenDP's
    ``ContingencyTable``; its input metric is the symmetric distance of the rows the cells
    stand for. ``measure``: OpenDP's max divergence or zCDP; ``d_out``: its budget, spent when
    one person adds or removes up to ``max_rows`` rows (what the noise is calibrated to)."""
    import mbi
    import opendp.prelude as dp
    import polars as pl
    from opendp._internal import _make_transformation, _new_pure_function
    from opendp.combinators import make_adaptive_composition
    from opendp.domains import _lazyframe_from_domain
    from opendp.extras.mbi import _utilities
    from opendp.extras.mbi._table import ContingencyTable, _get_null_index, _with_null
    from opendp.extras.mbi._utilities import (
        ONEWAY_UNKEYED,
        Marginals,
        get_associated_metric,
        make_noise_marginals,
        prior,
    )
    from opendp.mod import binary_search_chain
    from opendp.transformations import make_stable_lazyframe

    reading_cells()   # before OpenDP's make_stable_marginals is looked up (below)
    names = [f"c{i}" for i in range(len(shape))]
    rows_domain = dp.lazyframe_domain([dp.series_domain(n, dp.atom_domain(T="u32"))
                                       for n in names])
    stable = make_stable_lazyframe(rows_domain, dp.symmetric_distance(),
                                   lazyframe=pl.LazyFrame(schema={n: pl.UInt32 for n in names}),
                                   MO="FrameDistance<SymmetricDistance>")
    input_domain, input_metric = stable.output_space
    # OpenDP's index transformation (its keys, each with a null key appended): built for its
    # output domain (codes bounded by the keys, so the marginals' shapes) and its map; the cell
    # frame already holds those indices, so it is never invoked
    keys = {n: _with_null(pl.Series(n, list(range(s)), dtype=pl.UInt32))
            for n, s in zip(names, shape, strict=True)}
    t_index = make_stable_lazyframe(
        input_domain, input_metric,
        _lazyframe_from_domain(input_domain).with_columns(
            pl.col(n).replace_strict(keys[n], pl.Series(range(len(keys[n])), dtype=pl.UInt32),
                                     default=_get_null_index(keys[n], len(keys[n]) - 1))
            .clip(0, len(keys[n]) - 1) for n in names),
        MO="FrameDistance<SymmetricDistance>")
    index_domain, index_metric = t_index.output_space

    def to_index_bounds(d_in):
        return t_index.map(stable.map(d_in))

    front = _make_transformation(stable.input_domain, stable.input_metric, index_domain,
                                 index_metric, function=lambda frame: frame,
                                 stability_map=to_index_bounds)
    d_in = to_index_bounds(max_rows)
    # OpenDP's split (make_contingency_table, every column keyed)
    if algorithm.oneway == ONEWAY_UNKEYED:
        d_multiway, d_mids, m_oneway = d_out, [d_out], None
    else:
        split = 0.5 if algorithm.oneway_split is None else algorithm.oneway_split
        d_oneway = d_out * split
        d_multiway = float(prior(prior(d_out - d_oneway)))
        d_mids = [d_oneway, d_multiway]
        oneway = [(n,) for n in names]
        t_oneway = _utilities.make_stable_marginals(
            index_domain, index_metric, get_associated_metric(measure), oneway)
        m_oneway = binary_search_chain(
            lambda s: t_oneway >> make_noise_marginals(*t_oneway.output_space, measure,
                                                       oneway, scale=s),
            d_in=d_in, d_out=d_oneway, T=float)
    composition = make_adaptive_composition(index_domain, index_metric, measure, d_in, d_mids)

    def postprocess(qbl):
        marginals = Marginals()
        if m_oneway is not None:
            marginals = marginals.add(*qbl(m_oneway))
        domain = mbi.Domain.fromdict({n: len(keys[n]) for n in names})
        model = (algorithm.estimator(domain, marginals.flatten(), potentials=None)
                 if algorithm.needs_model else None)
        m_marginals = algorithm.make_marginals(
            input_domain=index_domain, input_metric=index_metric, output_measure=measure,
            d_in=d_in, d_out=d_multiway, marginals=marginals, model=model)
        marginals, model = qbl(m_marginals)
        return ContingencyTable(keys=dict(keys), cuts={}, marginals=marginals, model=model)

    return front >> composition >> _new_pure_function(postprocess)
