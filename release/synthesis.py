"""A synthetic table's part (``plan.kinds.synthetic.MarginalSynthesis``) as OpenDP's
measurement: ``opendp.extras.mbi.make_contingency_table`` over columns of small integer codes
(named ``c0``, ``c1``, …: no user's name reaches polars or OpenDP), built from the plan alone
and its privacy map read at the privacy unit's distance (``max_rows`` rows). That certified
figure is the part's loss: what the release composes and the ledger records.

Invoked on the engine's cells (``engine.JointAggregate``: the non-empty cells and their
counts, never the raw rows), the measurement rebuilds one row of codes per counted row
(``np.repeat``), lets OpenDP measure the marginals with its own samplers (OS entropy) and fit
the model, then draws the synthetic rows from the model (post-processing: mbi's sampler,
numpy's global generator, which no code here seeds).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from plan.kinds.synthetic import MarginalSynthesis
from plan.parts import Loss, Part
from release.errors import MapCheckFailed, Unsupported

__all__ = ["certify_synthesis", "certified_loss", "SynthesisMeasurement"]


def _names(k: int) -> list[str]:
    return [f"c{i}" for i in range(k)]


@dataclass(frozen=True, eq=False)
class SynthesisMeasurement:
    """OpenDP's measurement of a synthetic table, taking the engine's cells: ``map`` is
    OpenDP's privacy map, a call returns the synthetic rows' codes (one column per column)."""

    measurement: Any
    spec: MarginalSynthesis

    def map(self, d_in: Any) -> Any:
        return self.measurement.map(d_in)

    def __call__(self, cells: Any) -> np.ndarray:
        import polars as pl

        shape = self.spec.shape
        k = len(shape)
        names = _names(k)
        codes = np.asarray(cells.codes, dtype=np.int64).reshape(-1, k)
        counts = np.asarray(cells.counts, dtype=np.int64)
        records = np.repeat(codes, counts, axis=0)
        frame = pl.LazyFrame({n: pl.Series(n, records[:, i].astype(np.uint32),
                                           dtype=pl.UInt32) for i, n in enumerate(names)})
        table = self.measurement(frame)
        synthetic = table.synthesize(rows=self.spec.rows)
        # the model's extra (null) key holds no declared cell: the missing-or-other code
        return np.stack([synthetic[n].fill_null(s - 1).to_numpy().astype(np.int64)
                         for n, s in zip(names, shape, strict=True)], axis=1)


def _algorithm(dp: Any, spec: MarginalSynthesis, names: list[str]) -> Any:
    from mbi.estimation import mirror_descent

    estimator = functools.partial(mirror_descent, iters=spec.iters)
    if spec.marginals == "one-way":
        return dp.mbi.Fixed(queries=[dp.mbi.Count((n,)) for n in names], estimator=estimator)
    if spec.marginals == "pairs":   # the chosen 2-way marginals are AIM's workload
        return dp.mbi.AIM(queries=[dp.mbi.Count((names[a], names[b])) for a, b in spec.pairs],
                          estimator=estimator)
    if spec.algorithm == "MST":
        return dp.mbi.MST(estimator=estimator)
    return dp.mbi.AIM(estimator=estimator)


@functools.lru_cache(maxsize=32)
def _measurement(spec: MarginalSynthesis) -> tuple[Any, float] | str:
    """OpenDP's measurement of ``spec`` (the stable lazyframe, then mbi's contingency table)
    and its privacy map at ``max_rows`` rows per person, or OpenDP's refusal in words. Built
    from the plan alone, which takes OpenDP seconds (it calibrates every step), so both are
    cached by the public spec: a page asks on every rerun. Invoking the measurement draws
    afresh each time (OpenDP's samplers, fresh entropy), so a cached one releases as a new one
    would."""
    import polars as pl

    # OpenDP through release.measurements' lazy prelude: its first use turns the contrib
    # features on (mbi and make_stable_lazyframe need them), whether or not another part of
    # the release used OpenDP before
    from release.measurements import dp

    dp.enable_features("contrib")
    from opendp.extras.polars import make_stable_lazyframe

    names = _names(len(spec.shape))
    domain = dp.lazyframe_domain([dp.series_domain(n, dp.atom_domain(T="u32"))
                                  for n in names])
    stable = make_stable_lazyframe(domain, dp.symmetric_distance(),
                                   lazyframe=pl.LazyFrame(schema={n: pl.UInt32 for n in names}),
                                   MO="FrameDistance<SymmetricDistance>")
    measure = dp.max_divergence() if spec.measure == "pure" else (
        dp.zero_concentrated_divergence())
    d_in = spec.max_rows
    try:
        table, _, _ = dp.mbi.make_contingency_table(
            stable.output_domain, stable.output_metric, measure, stable.map(d_in),
            float(spec.budget), keys={n: list(range(s)) for n, s in zip(
                names, spec.shape, strict=True)},
            algorithm=_algorithm(dp, spec, names))
        measurement = stable >> table
        return measurement, float(measurement.map(d_in))
    except (dp.OpenDPException, ValueError) as exc:
        return str(exc).strip()[:300]


def certify_synthesis(query_id: str, part: Part) -> Any:
    """The part's OpenDP measurement (built from the plan alone) with the privacy its map
    certifies at ``max_rows`` rows per person; refused if that is above the plan's budget."""
    from release.measurements import Certified

    spec: MarginalSynthesis = part.mechanism
    d_in = spec.max_rows
    built = _measurement(spec)
    if isinstance(built, str):
        raise Unsupported(f"query {query_id!r} ({part.name}): OpenDP's mbi refused it: "
                          f"{built}")
    measurement, value = built
    planned = part.loss
    figure = planned.epsilon if spec.measure == "pure" else planned.rho
    if not (math.isfinite(value) and value <= figure):
        raise MapCheckFailed(
            f"query {query_id!r} ({part.name}): OpenDP's privacy map gives "
            f"{'ε' if spec.measure == 'pure' else 'ρ'} = {value!r}, above the plan's "
            f"{figure!r}; nothing was drawn")
    certified = Loss(epsilon=value) if spec.measure == "pure" else Loss(
        rho=value, read_at=planned.read_at)
    return Certified(part, SynthesisMeasurement(measurement, spec), d_in, certified, planned,
                     float("nan"), True)


def certified_loss(part: Part) -> Loss:
    """The privacy OpenDP's map certifies for a synthetic table's part, from the plan alone
    (no data): the figure a release composes and the ledger records (OpenDP's work cached by
    :func:`_measurement`). Raises as :func:`certify_synthesis`."""
    return certify_synthesis("synthetic", part).certified
