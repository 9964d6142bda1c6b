"""Synthetic data (issue 23, first version): the work behind the Synthetic data page, no widgets.

The engine counts the full contingency table of the chosen columns (``engine.JointCells``:
categories as declared, numeric columns through their declared bin edges, each column with
one more code for a missing or undeclared value, under the privacy unit's truncation); the raw
rows never reach pandas. OpenDP's ``opendp.extras.mbi`` (imported here only, lazily) needs a
polars LazyFrame of rows, so it gets the smallest form it accepts: one row of small integer
codes per counted row, rebuilt from the cells with ``np.repeat`` (no values, no ids).

Utility (for the steward's eyes, not private: it reads the real table) compares the synthetic
rows with the real cells: every 1-way and 2-way marginal's total-variation distance, Cramér's
V real against synthetic, and a workload of random 3-way counting queries answered by the
synthetic rows against the same 3-way marginals measured directly (Laplace for ε, Gaussian
for ρ) with the same budget split evenly over them.

"Add to plan" adds the page's choices as one plan query of kind "synthetic"
(:func:`plan_query`): what a release draws, its budget certified by OpenDP's map.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dashboard.datasets import LoadedDataset
from dpcore.contributions import PrivacyUnit
from engine import Contribution, JointAggregate, JointCells
from plan import model
from plan.build import build
from plan.kinds.synthetic import Synthetic, SyntheticColumn

#: Most cells (declared categories, or bins) a column may have on this page.
MAX_SYNTHETIC_CATEGORIES = 100
#: Mirror-descent iterations of the model fit (fewer: faster, rougher).
DEFAULT_ITERS = 300
#: The label of a column's extra code in the synthetic rows.
OTHER = "(missing or other)"

Algorithm = Literal["AIM", "MST"]
Measure = Literal["epsilon", "rho"]
#: "one-way": every 1-way marginal (measured as a fixed workload); "pairs": the chosen 2-way
#: marginals are AIM's workload; "auto": the algorithm selects (AIM up to 3-way, MST a tree).
MarginalChoice = Literal["one-way", "pairs", "auto"]


class SynthesisError(ValueError):
    """A choice the page refuses, in words a user can act on (names quoted raw: the page
    escapes them)."""


@dataclass(frozen=True)
class Columns:
    """The chosen columns with their public cells: ``labels[i]`` names column i's codes
    (categories, or bins as intervals, then :data:`OTHER`)."""

    names: tuple[str, ...]
    query: JointCells
    labels: tuple[tuple[str, ...], ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.query.shape


def offered_columns(loaded: LoadedDataset) -> list[str]:
    """Columns with declared categories or declared bin edges (the only public cells)."""
    return [c for c, d in loaded.domains.items() if c not in loaded.hidden and (
        (d.kind == "categorical" and d.categories) or (d.kind == "numeric" and d.bins))]


def choose_columns(loaded: LoadedDataset, names: list[str], unit: PrivacyUnit, *,
                   limit: int = MAX_SYNTHETIC_CATEGORIES, seed: int = 0) -> Columns:
    """The chosen columns' query, from the declared schema alone (no data is read): a column
    without declared categories or bins, or with more than ``limit`` cells, is refused by name.
    """
    if len(names) < 2:
        raise SynthesisError("Choose at least two columns.")
    domains, binned, labels = [], [], []
    for name in names:
        domain = loaded.domains.get(name)
        if domain is not None and domain.kind == "categorical" and domain.categories:
            cells: tuple = tuple(domain.categories)
            domains.append(cells)
            binned.append(False)
            labels.append((*cells, OTHER))
        elif domain is not None and domain.kind == "numeric" and domain.bins:
            edges = tuple(domain.bins)
            cells = tuple(f"[{a:g}, {b:g})" for a, b in zip(edges, edges[1:], strict=False))
            domains.append(edges)
            binned.append(True)
            labels.append((*cells, OTHER))
        else:
            raise SynthesisError(f"Column '{name}' has no declared categories or bin edges: "
                                 "declare them in the schema (Data page) to use it here.")
        if len(cells) > limit:
            raise SynthesisError(f"Column '{name}' has {len(cells):,} categories: at most "
                                 f"{limit:,} are allowed here (the tables grow as their "
                                 "product).")
    contribution = None
    if unit.person_column is not None:
        contribution = Contribution(unit.person_column, unit.max_rows, seed=seed)
    query = JointCells(tuple(names), tuple(domains), tuple(binned), contribution)
    return Columns(tuple(names), query, tuple(labels))


def plan_query(loaded: LoadedDataset, unit: PrivacyUnit, *, names: list[str], measure: Measure,
               budget: float, algorithm: Algorithm, marginals: MarginalChoice,
               pairs: list[tuple[int, int]], rows: int, iters: int = DEFAULT_ITERS
               ) -> model.PlanQuery:
    """The page's synthetic table as one query of the release plan: the chosen columns with
    their declared categories or bin edges (and where each comes from), the algorithm, the
    marginals (with "pairs", the chosen ``pairs`` of column indices), the rows, and the
    page's ε (pure DP) or ρ (zCDP), under the page's privacy unit."""
    from dashboard.analysis.plan_entries import categories_of, plan_unit
    from dashboard.data.schema import origin_of

    columns = []
    for name in names:   # declared cells only (the page's choose_columns refused the rest)
        domain = loaded.domains.get(name)
        if domain is not None and domain.kind == "numeric" and domain.bins:
            edges = model.Grid(tuple(float(e) for e in domain.bins), origin_of(domain),
                               str(domain.source or ""))
            columns.append(SyntheticColumn(name, edges=edges))
        else:
            columns.append(SyntheticColumn(name, categories_of(loaded, name, None)))
    budget = {"epsilon": float(budget)} if measure == "epsilon" else {"rho": float(budget)}
    spec = Synthetic(tuple(columns), algorithm, int(rows),
                     "pure" if measure == "epsilon" else "zcdp", marginals=marginals,
                     iters=int(iters), pairs=tuple((names[a], names[b]) for a, b in pairs)
                     if marginals == "pairs" else (), **budget)
    label = f"Synthetic table of {', '.join(names)}"
    if len(label) > 120:   # long column names: the plan's label stays short
        label = f"Synthetic table of {len(names)} columns"
    query = model.PlanQuery("q", label, spec, None, "synthetic")
    query.check("query")
    build(query, plan_unit(unit))   # the unit's refusals (the person-id column), by name
    return query


def joint_cells(loaded: LoadedDataset, columns: Columns) -> JointAggregate:
    """The real table's non-empty cells, counted by the engine."""
    return loaded.relation.answer(columns.query)


# --------------------------------------------------------------------------------------------
# Generation


def _algorithm(dp, algorithm: Algorithm, marginals: MarginalChoice,
               pairs: list[tuple[int, int]], names: list[str], iters: int):
    from mbi.estimation import mirror_descent

    estimator = functools.partial(mirror_descent, iters=iters)
    if marginals == "one-way":
        # AIM has nothing to select when its workload is the 1-way marginals it measures first
        return dp.mbi.Fixed(queries=[dp.mbi.Count((n,)) for n in names], estimator=estimator)
    if algorithm == "MST":
        return dp.mbi.MST(estimator=estimator)
    if marginals == "pairs":
        if not pairs:
            raise SynthesisError("Choose at least one pair of columns to preserve.")
        return dp.mbi.AIM(queries=[dp.mbi.Count((names[a], names[b])) for a, b in pairs],
                          estimator=estimator)
    return dp.mbi.AIM(estimator=estimator)


def generate(cells: JointAggregate, shape: tuple[int, ...], *, measure: Measure, budget: float,
             max_rows: int, algorithm: Algorithm, marginals: MarginalChoice = "auto",
             pairs: list[tuple[int, int]] | None = None, rows: int = 1000,
             iters: int = 300) -> NDArray[np.int64]:
    """Synthetic rows (codes, one column per chosen column) drawn by OpenDP's mbi.

    ``max_rows``: the rows one person may add after truncation (1: one row per person).
    OpenDP draws its own noise (not seeded); the rows are sampled with numpy's global state.
    """
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    if not budget > 0:
        raise SynthesisError("The budget must be positive.")
    k = len(shape)
    names = [f"c{i}" for i in range(k)]   # the user's names never reach polars or OpenDP
    records = np.repeat(cells.codes, cells.counts, axis=0).astype(np.uint32).reshape(-1, k)
    frame = pl.LazyFrame({n: pl.Series(n, records[:, i], dtype=pl.UInt32)
                          for i, n in enumerate(names)})
    loss = dp.loss_of(epsilon=budget) if measure == "epsilon" else dp.loss_of(rho=budget)
    context = dp.Context.compositor(data=frame, privacy_unit=dp.unit_of(contributions=max_rows),
                                    privacy_loss=loss)
    query = context.query(**{measure: budget})
    chosen = _algorithm(dp, algorithm, marginals, pairs or [], names, iters)
    if not cells.counts.sum():
        raise SynthesisError("The table is empty: there are no rows to learn from.")
    try:
        table = query.contingency_table(keys={n: list(range(s)) for n, s in zip(
            names, shape, strict=True)}, algorithm=chosen).release()
    except dp.OpenDPException as exc:
        raise SynthesisError(f"OpenDP refused: {str(exc).strip()[:300]}") from exc
    synthetic = table.synthesize(rows=rows)
    # the model's extra (null) key holds no real row: read it as the missing-or-other code
    return np.stack([synthetic[n].fill_null(s - 1).to_numpy().astype(np.int64)
                     for n, s in zip(names, shape, strict=True)], axis=1)


def synthetic_frame(codes: NDArray[np.int64], columns: Columns) -> pd.DataFrame:
    """The synthetic rows with their labels (categories, bins as intervals)."""
    return pd.DataFrame({name: np.asarray(labels, dtype=object)[codes[:, i]]
                         for i, (name, labels) in enumerate(zip(columns.names, columns.labels,
                                                                strict=True))})


# --------------------------------------------------------------------------------------------
# Utility (not private: reads the real table)


def marginal(codes: NDArray[np.int64], weights: NDArray[np.int64] | None,
             shape: tuple[int, ...], axes: tuple[int, ...]) -> NDArray[np.float64]:
    """The marginal over ``axes`` of rows (``weights`` None) or weighted cells."""
    sizes = [shape[a] for a in axes]
    flat = np.ravel_multi_index(tuple(codes[:, a] for a in axes), sizes) if len(codes) else (
        np.zeros(0, dtype=np.int64))
    counts = np.bincount(flat, weights=weights, minlength=int(np.prod(sizes)))
    return counts.astype(np.float64).reshape(sizes)


def tv_distance(p: NDArray[np.float64], q: NDArray[np.float64]) -> float:
    """Total-variation distance of two tables of counts, each normalised (an empty one is
    uniform)."""
    def normal(x):
        total = x.sum()
        return x / total if total > 0 else np.full(x.shape, 1.0 / x.size)
    return float(0.5 * np.abs(normal(p) - normal(q)).sum())


def tv_table(cells: JointAggregate, synthetic: NDArray[np.int64], columns: Columns
             ) -> pd.DataFrame:
    """Every 1-way and 2-way marginal's TV distance, real against synthetic."""
    shape, names = columns.shape, columns.names
    out = []
    axes_list = [(i,) for i in range(len(shape))] + list(itertools.combinations(
        range(len(shape)), 2))
    for axes in axes_list:
        real = marginal(cells.codes, cells.counts, shape, axes)
        synth = marginal(synthetic, None, shape, axes)
        out.append({"marginal": " × ".join(names[a] for a in axes), "way": len(axes),
                    "TV distance": tv_distance(real, synth)})
    return pd.DataFrame(out)


def tv_pairs(table: pd.DataFrame, columns: Columns) -> pd.DataFrame:
    """The 2-way TV distances as a square matrix (the diagonal: the 1-way ones)."""
    names = list(columns.names)
    values = table["TV distance"].to_numpy()
    k = len(names)
    matrix = np.zeros((k, k))
    matrix[np.arange(k), np.arange(k)] = values[:k]
    a, b = np.triu_indices(k, 1)
    matrix[a, b] = values[k:]
    matrix[b, a] = values[k:]
    return pd.DataFrame(matrix, index=names, columns=names)


def cramers_v(table: NDArray[np.float64]) -> float:
    """Cramér's V of a 2-way table of counts (rows and columns without counts left out)."""
    table = table[table.sum(axis=1) > 0][:, table.sum(axis=0) > 0]
    n = table.sum()
    if n == 0 or min(table.shape) < 2:
        return 0.0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(((table - expected) ** 2 / expected).sum())
    return float(np.sqrt(chi2 / n / (min(table.shape) - 1)))


def association(codes: NDArray[np.int64], weights: NDArray[np.int64] | None,
                columns: Columns) -> pd.DataFrame:
    """Cramér's V of every pair of columns (1 on the diagonal)."""
    k = len(columns.names)
    matrix = np.eye(k)
    for a, b in itertools.combinations(range(k), 2):
        matrix[a, b] = matrix[b, a] = cramers_v(marginal(codes, weights, columns.shape, (a, b)))
    return pd.DataFrame(matrix, index=list(columns.names), columns=list(columns.names))


@dataclass(frozen=True)
class Workload:
    """Random 3-way conjunctions (``axes[q]`` columns equal to ``values[q]``) as fractions of
    the rows: the real answer, the synthetic rows', and the directly measured marginals'."""

    axes: NDArray[np.int64]
    values: NDArray[np.int64]
    real: NDArray[np.float64]
    synthetic: NDArray[np.float64]
    direct: NDArray[np.float64]

    @property
    def synthetic_error(self) -> float:
        return float(np.abs(self.synthetic - self.real).mean())

    @property
    def direct_error(self) -> float:
        return float(np.abs(self.direct - self.real).mean())


def workload(cells: JointAggregate, synthetic: NDArray[np.int64], shape: tuple[int, ...], *,
             measure: Measure, budget: float, max_rows: int, queries: int = 200,
             marginals: int = 10, rng: np.random.Generator) -> Workload:
    """Compare synthetic answers with ``marginals`` random 3-way marginals measured directly
    (the budget split evenly; sensitivity ``max_rows`` in L1 and L2), on ``queries`` random
    conjunctions drawn within them."""
    k = len(shape)
    if k < 3:
        raise SynthesisError("The workload of 3-way queries needs at least three columns.")
    triples = np.array(list(itertools.combinations(range(k), 3)))
    triples = triples[rng.permutation(len(triples))[:marginals]]
    m = len(triples)
    which = rng.integers(0, m, queries)
    axes = triples[which]
    values = np.stack([rng.integers(0, np.asarray(shape)[axes[:, j]]) for j in range(3)], 1)
    real = np.zeros(queries)
    synth = np.zeros(queries)
    direct = np.zeros(queries)
    if measure == "epsilon":
        def noise(size):
            return rng.laplace(0.0, max_rows * m / budget, size)
    else:
        def noise(size):
            return rng.normal(0.0, max_rows / np.sqrt(2 * budget / m), size)
    for t, triple in enumerate(triples):   # one loop step per marginal, not per row
        sel = which == t
        idx = tuple(values[sel].T)
        r = marginal(cells.codes, cells.counts, shape, tuple(triple))
        s = marginal(synthetic, None, shape, tuple(triple))
        d = np.clip(r + noise(r.shape), 0.0, None)
        real[sel] = r[idx] / max(r.sum(), 1.0)
        synth[sel] = s[idx] / max(s.sum(), 1.0)
        direct[sel] = d[idx] / max(d.sum(), 1.0)
    return Workload(axes, values, real, synth, direct)
