"""Synthetic data (issue 23, first version): the work behind the Synthetic data page, no widgets.

The engine counts the full contingency table of the chosen columns (``engine.JointCells``:
categories as declared, numeric columns through their declared bin edges, each column with
one more code for a missing or undeclared value, under the privacy unit's truncation); the raw
rows never reach pandas. The fit is a release's (``release.synthesis``): OpenDP's mbi
algorithms reading those cells (no row is rebuilt: memory bounded by the cells).

Utility (for the steward's eyes, not private: it reads the real table) compares the synthetic
rows with the real cells: every 1-way and 2-way marginal's total-variation distance, Cramér's
V real against synthetic, and a workload of random 3-way counting queries answered by the
synthetic rows against the same 3-way marginals measured directly (Laplace for ε, Gaussian
for ρ) with the same budget split evenly over them; a categorical naive Bayes classifier of one
column trained on the real rows and on synthetic rows, both tested on the same held-out real
rows; and the sweep of these figures over a few budgets and several generations at each.

"Add to plan" adds the page's choices as one plan query of kind "synthetic"
(:func:`plan_query`): what a release draws, its budget certified by OpenDP's map.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dashboard.analysis.plan_entries import categories_of, plan_unit
from dashboard.data.schema import origin_of
from dashboard.datasets import LoadedDataset
from dpcore.contributions import PrivacyUnit
from engine import Contribution, JointAggregate, JointCells
from plan import model
from plan.build import build
from plan.kinds.synthetic import MarginalSynthesis, Synthetic, SyntheticColumn
from release.synthesis import fit_cells, synthetic_rows

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


def fit(cells: JointAggregate, shape: tuple[int, ...], *, measure: Measure, budget: float,
        max_rows: int, algorithm: Algorithm, marginals: MarginalChoice = "auto",
        pairs: list[tuple[int, int]] | None = None, iters: int = 300):
    """OpenDP's contingency table (noisy marginals, the model fitted to them) of ``cells``:
    what spends the budget, by the measurement a release runs (``release.synthesis``: OpenDP's
    algorithms reading the cells, not rows). OpenDP draws its own noise (not seeded)."""
    if not budget > 0:
        raise SynthesisError("The budget must be positive.")
    if marginals == "pairs" and algorithm == "AIM" and not pairs:
        raise SynthesisError("Choose at least one pair of columns to preserve.")
    if not cells.counts.sum():
        raise SynthesisError("The table is empty: there are no rows to learn from.")
    # the pairs are AIM's workload (the page offers them for AIM only)
    chosen = marginals if marginals != "pairs" or algorithm == "AIM" else "auto"
    spec = MarginalSynthesis(algorithm, chosen, tuple(int(s) for s in shape),
                             "pure" if measure == "epsilon" else "zcdp", float(budget),
                             int(max_rows), 0, int(iters),
                             tuple(pairs or ()) if chosen == "pairs" else ())
    try:
        return fit_cells(spec, cells)
    except ValueError as exc:
        raise SynthesisError(f"OpenDP's {algorithm} could not fit this table ({exc}). Try "
                             "another budget, fewer columns, or MST.") from None


def generate(cells: JointAggregate, shape: tuple[int, ...], *, measure: Measure, budget: float,
             max_rows: int, algorithm: Algorithm, marginals: MarginalChoice = "auto",
             pairs: list[tuple[int, int]] | None = None, rows: int = 1000,
             iters: int = 300, rng: np.random.Generator | None = None) -> NDArray[np.int64]:
    """Synthetic rows (codes, one column per chosen column): the model :func:`fit` to the
    cells, then ``rows`` rows drawn from it as a release draws them
    (``release.synthesis.synthetic_rows``: a faithful sample of the model, in random order).

    ``max_rows``: the rows one person may add after truncation (1: one row per person).
    OpenDP draws its own noise (not seeded); the rows are drawn with ``rng`` (None: fresh OS
    entropy, as a release).
    """
    table = fit(cells, shape, measure=measure, budget=budget, max_rows=max_rows,
                algorithm=algorithm, marginals=marginals, pairs=pairs, iters=iters)
    return synthetic_rows(table, shape, int(rows),
                          rng=rng if rng is not None else np.random.default_rng())


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


# --------------------------------------------------------------------------------------------
# A classifier trained on synthetic rows, tested on held-out real rows (not private)

#: The share of each real cell's rows kept for training (the rest is held out for testing).
TRAIN_SHARE = 0.7


def split_rows(cells: JointAggregate, *, rng: np.random.Generator,
               train_share: float = TRAIN_SHARE) -> tuple[JointAggregate, JointAggregate]:
    """The real rows split once into a training and a held-out part: each cell's count thinned
    binomially (each row kept for training with probability ``train_share``); cells left empty
    are dropped from a part."""
    if not 0 < train_share < 1:
        raise ValueError("train_share must be between 0 and 1")
    counts = np.asarray(cells.counts, dtype=np.int64)
    train = rng.binomial(counts, train_share).astype(np.int64)
    test = counts - train
    return (JointAggregate(cells.codes[train > 0], train[train > 0]),
            JointAggregate(cells.codes[test > 0], test[test > 0]))


@dataclass(frozen=True)
class NaiveBayes:
    """A categorical naive Bayes classifier of column ``target`` from the other columns' codes,
    with Laplace (add-one) smoothing: ``log_prior[y]`` and, per other column j,
    ``log_likelihood[j][x, y]`` = log P(column j = x | target = y) (None at the target)."""

    target: int
    log_prior: NDArray[np.float64]
    log_likelihood: tuple[NDArray[np.float64] | None, ...]

    def predict(self, codes: NDArray[np.int64]) -> NDArray[np.int64]:
        """The most probable target code of each row of codes (ties: the lowest code)."""
        codes = np.asarray(codes, dtype=np.int64).reshape(-1, len(self.log_likelihood))
        scores = np.broadcast_to(self.log_prior, (len(codes), len(self.log_prior))).copy()
        for j, table in enumerate(self.log_likelihood):   # one step per column, not per row
            if table is not None:
                scores += table[codes[:, j]]
        return np.argmax(scores, axis=1)


def fit_naive_bayes(codes: NDArray[np.int64], weights: NDArray[np.int64] | None,
                    shape: tuple[int, ...], target: int, *,
                    smoothing: float = 1.0) -> NaiveBayes:
    """Categorical naive Bayes of column ``target`` fitted to rows (``weights`` None) or to
    cells holding ``weights`` rows each; every count gets ``smoothing`` added (Laplace)."""
    if not 0 <= target < len(shape):
        raise ValueError("target must be one of the columns")
    if not smoothing > 0:
        raise ValueError("smoothing must be positive")
    codes = np.asarray(codes, dtype=np.int64).reshape(-1, len(shape))
    prior = marginal(codes, weights, shape, (target,)) + smoothing
    tables: list[NDArray[np.float64] | None] = []
    for j in range(len(shape)):
        if j == target:
            tables.append(None)
            continue
        joint = marginal(codes, weights, shape, (j, target)) + smoothing
        tables.append(np.log(joint / joint.sum(axis=0, keepdims=True)))
    return NaiveBayes(target, np.log(prior / prior.sum()), tuple(tables))


def accuracy(model: NaiveBayes, cells: JointAggregate) -> float:
    """The share of the cells' rows whose target the model predicts right (NaN: no rows)."""
    total = int(np.sum(cells.counts))
    if total == 0:
        return float("nan")
    right = model.predict(cells.codes) == np.asarray(cells.codes)[:, model.target]
    return float(np.sum(np.asarray(cells.counts)[right]) / total)


@dataclass(frozen=True)
class HeldOutAccuracy:
    """Accuracy on the held-out real rows (a share of them) of naive Bayes trained on the real
    training rows, on synthetic rows, and of always guessing the training rows' commonest
    target value."""

    train_on_real: float
    train_on_synthetic: float
    majority: float
    train_rows: int
    test_rows: int


def held_out_accuracy(train: JointAggregate, test: JointAggregate,
                      synthetic: NDArray[np.int64], shape: tuple[int, ...],
                      target: int) -> HeldOutAccuracy:
    """Train on real (``train``) and train on synthetic (``synthetic`` rows), both tested on the
    same held-out real rows (``test``), with the majority-class baseline."""
    real = fit_naive_bayes(train.codes, train.counts, shape, target)
    synth = fit_naive_bayes(synthetic, None, shape, target)
    commonest = int(np.argmax(marginal(train.codes, train.counts, shape, (target,))))
    test_rows = int(np.sum(test.counts))
    hits = np.sum(np.asarray(test.counts)[np.asarray(test.codes)[:, target] == commonest])
    return HeldOutAccuracy(accuracy(real, test), accuracy(synth, test),
                           float(hits / test_rows) if test_rows else float("nan"),
                           int(np.sum(train.counts)), test_rows)


# --------------------------------------------------------------------------------------------
# Utility against the budget: several generations at each of a few budgets (not private)

#: The sweep's default budgets: ε, and ρ = ε²/2 (what ε-DP gives in zCDP), rounded.
SWEEP_BUDGETS: dict[str, tuple[float, ...]] = {"epsilon": (0.3, 1.0, 3.0),
                                               "rho": (0.05, 0.5, 5.0)}
#: Mirror-descent iterations of each of the sweep's fits (cheaper than the page's own fit).
SWEEP_ITERS = 100


@dataclass(frozen=True)
class Sweep:
    """The utility figures of ``generations`` synthetic tables at each budget, each fitted to
    the real training rows: arrays of shape (budgets, generations). TV distances and workload
    errors compare with the training rows (what the generator saw), accuracy is on the
    held-out rows; the workload figures are NaN with fewer than three columns."""

    measure: Measure
    budgets: NDArray[np.float64]
    one_way_tv: NDArray[np.float64]
    two_way_tv: NDArray[np.float64]
    workload_synthetic: NDArray[np.float64]
    workload_direct: NDArray[np.float64]
    train_on_synthetic: NDArray[np.float64]
    train_on_real: float
    majority: float
    train_rows: int
    test_rows: int

    @property
    def generations(self) -> int:
        return self.one_way_tv.shape[1]


def sweep(cells: JointAggregate, columns: Columns, *, target: int, measure: Measure,
          budgets: tuple[float, ...], generations: int, max_rows: int, algorithm: Algorithm,
          rows: int, iters: int = SWEEP_ITERS, split_seed: int | tuple[int, ...],
          workload_seed: int, progress=None) -> Sweep:
    """Generate ``generations`` tables at each budget (OpenDP's noise, unseeded) from the real
    training rows (:func:`split_rows` with ``split_seed``) and measure each as the single
    figures do: :func:`tv_table`, :func:`workload` (``rng`` seeded by ``(workload_seed, g)``
    for generation g, the same queries at every budget) and :func:`held_out_accuracy`.

    ``progress(done, total)`` is called after each fit. A failed fit raises
    :class:`SynthesisError` naming the budget and the generation.
    """
    from opendp.mod import OpenDPException  # what mbi's sampler may raise as well

    if not budgets or not all(b > 0 for b in budgets):
        raise SynthesisError("Choose at least one budget; every budget must be positive.")
    if not 1 <= generations <= 100:
        raise SynthesisError("The number of generations must be between 1 and 100.")
    shape = columns.shape
    train, test = split_rows(cells, rng=np.random.default_rng(split_seed))
    size = (len(budgets), generations)
    figures = {name: np.full(size, np.nan) for name in (
        "one_way_tv", "two_way_tv", "workload_synthetic", "workload_direct", "tstr")}
    reference = None
    symbol = "ε" if measure == "epsilon" else "ρ"
    for (b, budget), g in itertools.product(enumerate(budgets), range(generations)):
        try:          # one fit per step: seconds to minutes each
            codes = generate(train, shape, measure=measure, budget=budget, max_rows=max_rows,
                             algorithm=algorithm, rows=rows, iters=iters)
        except (ValueError, RuntimeError, OpenDPException) as exc:
            raise SynthesisError(f"Generation {g + 1} of {generations} at {symbol} = "
                                 f"{budget:g} failed: {exc}") from exc
        table = tv_table(train, codes, columns)
        figures["one_way_tv"][b, g] = table.loc[table["way"] == 1, "TV distance"].mean()
        if len(shape) > 1:
            figures["two_way_tv"][b, g] = table.loc[table["way"] == 2, "TV distance"].mean()
        if len(shape) >= 3:
            w = workload(train, codes, shape, measure=measure, budget=budget,
                         max_rows=max_rows, rng=np.random.default_rng([workload_seed, g]))
            figures["workload_synthetic"][b, g] = w.synthetic_error
            figures["workload_direct"][b, g] = w.direct_error
        reference = held_out_accuracy(train, test, codes, shape, target)
        figures["tstr"][b, g] = reference.train_on_synthetic
        if progress is not None:
            progress(b * generations + g + 1, len(budgets) * generations)
    return Sweep(measure, np.asarray(budgets, dtype=np.float64), figures["one_way_tv"],
                 figures["two_way_tv"], figures["workload_synthetic"],
                 figures["workload_direct"], figures["tstr"], reference.train_on_real,
                 reference.majority, reference.train_rows, reference.test_rows)
