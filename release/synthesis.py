"""A synthetic table's part (``plan.kinds.synthetic.MarginalSynthesis``) as OpenDP's
measurement: OpenDP's mbi contingency table (its AIM, MST or fixed workload) over columns of
small integer codes (named ``c0``, ``c1``, …: no user's name reaches polars or OpenDP), built
from the plan alone and its privacy map read at the privacy unit's distance (``max_rows``
rows). That certified figure is the part's loss: what the release composes and the ledger
records.

Invoked on the engine's cells (``engine.JointAggregate``: the non-empty cells and their
counts, never the raw rows), the measurement reads the cells themselves
(:mod:`release.mbi_cells`: OpenDP's algorithms measure each marginal as a sum over the cells,
so memory is bounded by the cells, not the rows — issue 34, item 3), measures with OpenDP's
own samplers (OS entropy) and fits the model, then draws the synthetic rows from the model
(post-processing: :func:`synthetic_rows`, with a generator of fresh OS entropy).

:func:`synthetic_rows` is mbi's randomized rounding with one fix: mbi 1.1.0's
``synthetic_data(method="round")`` gives a row its rank inside its parents' group by row order,
so two columns drawn from the same parents come out co-monotone (a spurious association that
grew with ε: issue 34). Here each rank is a uniformly random one, which keeps the rounding's
stratification (each group's count of a value is less than two rows from its expected count:
every stratum wholly inside the value's share of the group gives it a row, and each of the two
strata it shares at its ends gives one by chance) and draws the
columns independently given their parents, as the model says.

Memory (issue 34, item 4): jax keeps a compiled kernel for every operation and shape run
outside ``jit``. Inside a fit the selection's projections of the model onto its candidates
are computed in numpy (:func:`numpy_projection`: no kernel at all; AIM's candidates had piled
them up to 3.7 GB on Adult's 8 columns), and MST's fits also drop jax's kernels around each
estimation (:func:`release_jax_memory`), so the peak is one phase's, not the sum of all.
"""

from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import math
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine import JointAggregate
from plan.kinds.synthetic import MarginalSynthesis
from plan.parts import Loss, Part
from release.certified import Certified, dp
from release.errors import MapCheckFailed, Unsupported
from release.mbi_cells import cell_frame, make_cells_table

__all__ = ["certify_synthesis", "certified_loss", "fit_cells", "SynthesisMeasurement",
           "synthetic_rows"]


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
        """The synthetic rows' codes: the model fitted to ``cells`` (:meth:`fit`), then
        :func:`synthetic_rows` drawn with fresh OS entropy."""
        return synthetic_rows(self.fit(cells), self.spec.shape, self.spec.rows,
                              rng=np.random.default_rng())

    def fit(self, cells: Any) -> Any:
        """OpenDP's contingency table (noisy marginals and the model fitted to them) of
        ``cells``: the part that spends the budget."""
        names = _names(len(self.spec.shape))
        with lean_fit(self.spec):
            return self.measurement(cell_frame(cells.codes, cells.counts, names))


def _rounded_counts(weights: np.ndarray, total: int, *, rng: np.random.Generator
                    ) -> np.ndarray:
    """``total`` split over cells in proportion to ``weights``: each cell gets its share's
    integer part, and the rows left over go to distinct cells drawn with probability in
    proportion to the fractional parts (mbi's rounding: every count within one of its
    expectation, the sum exact)."""
    weights = np.clip(np.asarray(weights, dtype=np.float64), 0.0, None)
    mass = weights.sum()
    share = weights * (total / mass) if mass > 0 else np.full(weights.shape,
                                                               total / weights.size)
    fraction, whole = np.modf(share)
    counts = whole.astype(np.int64)
    extra = min(int(total - counts.sum()), int(np.count_nonzero(fraction)))
    if extra > 0:
        chosen = rng.choice(weights.size, extra, replace=False, p=fraction / fraction.sum())
        counts[chosen] += 1
    # float rounding can leave the sum a row off either way: the largest cell absorbs it
    counts[np.argmax(counts)] += total - counts.sum()
    return counts


def _random_ranks(groups: np.ndarray, sizes: np.ndarray, *, rng: np.random.Generator
                  ) -> np.ndarray:
    """Each row's rank inside its group, a uniformly random permutation of 0 … size − 1 in
    each group (the fix: mbi ranks by row order)."""
    order = np.lexsort((rng.random(len(groups)), groups))
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    ranks = np.empty(len(groups), dtype=np.int64)
    ranks[order] = np.arange(len(groups)) - starts[groups[order]]
    return ranks


def _draw_given_parents(joint: np.ndarray, parents: np.ndarray, *,
                        rng: np.random.Generator) -> np.ndarray:
    """One column's codes, each row's drawn from ``joint`` (the model's marginal over the
    parents then the column, parents flattened: shape (parent cells, values)) given its
    parents' cell (``parents``): stratified inside each parents' group by a random rank, so
    each group's count of a value is less than two rows from its expected count (module
    docstring)."""
    cells, values = joint.shape
    mass = joint.sum(axis=1, keepdims=True)
    cdf = np.divide(np.cumsum(joint, axis=1), mass, out=np.zeros(joint.shape),
                    where=mass > 0)
    # cdf rows end at exactly 1 (or 0 for a group without mass), so the rows offset by their
    # group's index make one sorted array that a single searchsorted reads
    cdf = np.minimum(cdf, 1.0)
    cdf[:, -1] = np.where(mass[:, 0] > 0, 1.0, 0.0)
    sizes = np.bincount(parents, minlength=cells)
    u = (_random_ranks(parents, sizes, rng=rng) + rng.random(len(parents))) / sizes[parents]
    flat = (np.arange(cells)[:, None] + cdf).ravel()
    index = np.searchsorted(flat, parents + u, side="right") - parents * values
    # past a group's last value (float ties, or a group without mass): its last value, as mbi
    return np.clip(index, 0, values - 1)


def synthetic_rows(table: Any, shape: tuple[int, ...], rows: int, *,
                   rng: np.random.Generator) -> np.ndarray:
    """``rows`` synthetic rows (codes, one column per column of ``shape``) drawn from the
    model of OpenDP's contingency table ``table`` (columns ``c0``, ``c1``, …), in random order.

    mbi's randomized rounding: columns in the junction tree's order, a root (the first, or
    the first of another connected part of the model) rounded from its marginal and shuffled,
    each next one from its marginal given the columns already drawn that share a clique of
    the junction tree with it, stratified inside each parents' group by a **random** rank
    (module docstring); the model's extra (null) key, which holds no declared cell, is read as the
    missing-or-other code (each column's last). Work and memory: O(rows × columns) plus the
    model's own marginals.
    """
    from mbi import junction_tree, marginal_oracles

    if not (isinstance(rows, int | np.integer) and rows >= 0):
        raise ValueError("rows must be a non-negative integer")
    model = table.model
    names = _names(len(shape))
    cliques = [set(c) for c in model.cliques]
    tree, elimination = junction_tree.make_junction_tree(model.domain, cliques)
    marginals = marginal_oracles.message_passing_stable(model.potentials.expand(
        list(tree.nodes)))
    drawn: dict[str, np.ndarray] = {}
    # a column's parents are the columns drawn before it that share a clique of the junction
    # tree with it, i.e. its neighbours in the triangulated graph: drawn in reverse elimination
    # order, they separate it from every other column drawn before, so drawing it given them
    # is drawing it given all of those. The model's own cliques miss the triangulation's
    # fill-in edges when its graph has a cycle of 4 or more columns (AIM's selections can make
    # one; mbi 1.1.0 reads the model's cliques): a column was then drawn given too few parents
    separating = [set(c) for c in tree.nodes]
    for column in elimination[::-1]:
        near = set().union(*(c for c in separating if column in c))
        parents = tuple(p for p in drawn if p in near)
        joint = np.asarray(marginals.project(parents + (column,)).datavector(flatten=False),
                           dtype=np.float64)
        if not parents:
            # a root (the first column, or the first of another connected part of the model,
            # e.g. AIM's single-column cliques) is rounded from its marginal; np.repeat lists
            # its values sorted, so each root is shuffled: two sorted roots side by side would
            # come out co-monotone, a spurious association the model does not hold
            drawn[column] = rng.permutation(np.repeat(np.arange(joint.size), _rounded_counts(
                joint, rows, rng=rng)))
            continue
        sizes = joint.shape[:-1]
        cell = np.ravel_multi_index(tuple(drawn[p] for p in parents), sizes)
        drawn[column] = _draw_given_parents(joint.reshape(-1, joint.shape[-1]), cell, rng=rng)
    codes = np.stack([np.minimum(drawn[n], s - 1) for n, s in zip(names, shape, strict=True)],
                     axis=1).astype(np.int64)
    # the roots are shuffled, so the rows' order is random already; one more permutation
    # costs little and keeps the order random whatever a later change to the drawing does
    return codes[rng.permutation(rows)]


#: A step of AIM's budget below this (ε or ρ) is float dust, not a step (issue 34, item 4).
AIM_DUST = 1e-12


def without_aim_dust() -> None:
    """Make OpenDP 0.16's AIM stop instead of taking a step of float dust.

    AIM spends its budget in growing steps and ends with the remainder, ``prior(d_out −
    d_spent)``; the float sum of the steps can leave 5.6·10⁻¹⁷ there, and calibrating a step
    that small fails ("scale (-0.5) must not be finite and non-negative"): under pure DP at
    ε = 1 on three or four small columns it failed every time, once the data had been read.
    A step below :data:`AIM_DUST` now ends AIM the way OpenDP's own code ends it when no
    marginal fits (its step builder returns None). Stopping early spends less, never more:
    the privacy filter OpenDP composes the steps under still certifies the whole budget, which
    is what the release records. Idempotent; OpenDP's AIM module is patched once per process.
    """
    import opendp.extras.mbi._aim as aim

    step = aim._make_aim_marginal
    if getattr(step, "without_dust", False):
        return

    @functools.wraps(step)
    def step_or_stop(*args, **kwargs):
        d_out = kwargs["d_out"] if "d_out" in kwargs else args[4]
        if not d_out >= AIM_DUST:
            return None
        return step(*args, **kwargs)

    step_or_stop.without_dust = True
    aim._make_aim_marginal = step_or_stop


#: How far the process's memory may grow while projecting before jax's kernels are dropped:
#: dropping them after every projection held MST on Adult's 8 columns to the same peak but
#: doubled its CPU (the kernels of one pair serve the next pairs of the same shapes).
KERNEL_SLACK_BYTES = 256 * 2**20
_resident_after_release = [0]


def _resident_bytes() -> int | None:
    """The process's resident memory (Linux's /proc; None elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def release_jax_memory() -> None:
    """Drop jax's compiled kernels and hand the freed memory back to the system.

    jax compiles a kernel for each operation and shape it runs outside ``jit`` and keeps them
    all: MST's scoring of its 28 pairs on Adult's 8 columns (each pair's projection of the
    model, mbi's variable elimination) left 0.65 GB of them, and AIM's rounds pile them up
    round after round (issue 34, item 4). Dropping them costs a recompilation where the same
    shape comes again. ``malloc_trim`` is glibc's (skipped where there is none)."""
    import jax

    jax.clear_caches()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
    _resident_after_release[0] = _resident_bytes() or 0


#: Whether the fit running in this context releases jax's memory (:func:`lean_fit`).
_LEAN = contextvars.ContextVar("lean_fit", default=False)
#: Whether the fit running in this context projects its models in numpy
#: (:func:`numpy_projection`, :func:`lean_fit`).
_NUMPY = contextvars.ContextVar("numpy_projections", default=False)


@contextlib.contextmanager
def lean_fit(spec: MarginalSynthesis):
    """Within: the fit of ``spec`` projects its models in numpy (:func:`numpy_projection`,
    both algorithms) and, for MST only, releases jax's memory around each estimation and
    after a projection in jax. AIM on Adult's 8 columns (ε = 1): 3.69 GB and 131 CPU s with
    mbi's projections, 1.07 GB and 30 s in numpy; MST 0.95 GB and 43 s, 0.96 GB and 20 s
    (``bench/bench_synthetic_memory.py``). Dropping jax's kernels around AIM's estimations
    made its rounds recompile them (3.4× its time), so AIM keeps them: each round's
    estimation is jitted anew for its cliques."""
    token = _LEAN.set(spec.algorithm == "MST")
    numpy_token = _NUMPY.set(True)
    try:
        yield
    finally:
        _NUMPY.reset(numpy_token)
        _LEAN.reset(token)
        _numpy_potentials[0] = None   # the fit's last model is not kept past it


def _estimate(*args, iters: int, **kwargs):
    """mbi's mirror descent with jax's memory released before (the selection's kernels) and
    after (the estimation's own) inside a lean fit (:func:`lean_fit`): the peak is one
    phase's, not the sum of all (issue 34)."""
    from mbi.estimation import mirror_descent

    lean = _LEAN.get()
    if lean:
        release_jax_memory()
    model = mirror_descent(*args, iters=iters, **kwargs)
    if lean:
        release_jax_memory()
    return model


def _logsumexp(values: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """jax's ``logsumexp`` in numpy, step for step: the largest value (0 where it is not
    finite) taken out before the exponential, so a group of −∞ gives −∞."""
    if not axes:
        return values
    peak = np.max(values, axis=axes, keepdims=True)
    peak = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore"):
        out = np.log(np.sum(np.exp(values - peak), axis=axes))
    return out + np.squeeze(peak, axis=axes)


def _aligned(attrs: tuple[str, ...], values: np.ndarray, to: tuple[str, ...]) -> np.ndarray:
    """``values`` over ``attrs`` with its axes moved into ``to``'s order and a length-1 axis
    for each attribute of ``to`` it lacks (numpy broadcasts them)."""
    order = sorted(range(len(attrs)), key=lambda i: to.index(attrs[i]))
    moved = np.transpose(values, order)
    shape = [1] * len(to)
    for i in order:
        shape[to.index(attrs[i])] = values.shape[i]
    return moved.reshape(shape)


def _factor_sum(factors: list[tuple[tuple[str, ...], np.ndarray]]
                ) -> tuple[tuple[str, ...], np.ndarray]:
    """The factors added left to right over their merged attributes (mbi's ``Factor`` sum:
    the first factor's attributes, then each next one's new ones, in that order)."""
    attrs: tuple[str, ...] = ()
    for names, _ in factors:
        attrs += tuple(a for a in names if a not in attrs)
    total: np.ndarray = np.zeros(())
    for names, values in factors:
        total = total + _aligned(names, values, attrs)
    shape = tuple(max(values.shape[names.index(a)] for names, values in factors
                      if a in names) for a in attrs)
    return attrs, np.broadcast_to(total, shape)


#: The last model's potentials and their numpy arrays, as one tuple (read and replaced whole,
#: so fits in two threads never mix them): the selection projects one model onto every
#: candidate, so its potentials are copied out of jax once per model, not once per candidate.
_numpy_potentials: list[Any] = [None]


def numpy_projection(model: Any, attrs: tuple[str, ...]) -> Any:
    """mbi's ``MarkovRandomField.project`` computed in numpy, as an mbi ``Factor`` holding a
    numpy array: the marginal the model holds summed down, or else mbi's variable elimination
    (its greedy order, its log-space sums, its normalization to the model's total).

    Why (issue 34, memory): jax runs these operations one by one and compiles and keeps a
    kernel for every operation and shape; the selection's projections of the model onto
    every candidate marginal (MST's 28 pairs, AIM's 92 candidates each round on Adult's 8
    columns) piled up gigabytes of them, and dropping them made AIM recompile them round
    after round (3.4× its time). numpy compiles nothing. Equal to mbi's own within float
    rounding (tested); the scores read the model only (public), so the selection's
    sensitivity is unchanged."""
    from mbi import Factor, junction_tree

    marginals = model.marginals
    if marginals.supports(attrs):
        parent = attrs if attrs in marginals.arrays else marginals.parent(attrs)
        held = marginals[parent]
        values = np.asarray(held.values, dtype=np.float64)
        names = tuple(held.domain.attributes)
        summed = np.sum(values, axis=tuple(i for i, a in enumerate(names) if a not in attrs))
        kept = tuple(a for a in names if a in attrs)
        return Factor(held.domain.project(attrs),
                      np.transpose(summed, [kept.index(a) for a in attrs]))
    potentials = model.potentials
    cached = _numpy_potentials[0]
    if cached is None or cached[0] is not potentials:
        cached = (potentials, [(tuple(f.domain.attributes),
                                np.asarray(f.values, dtype=np.float64))
                               for f in potentials.arrays.values()])
        _numpy_potentials[0] = cached
    psi = list(cached[1])
    domain = potentials.active_domain
    order, _ = junction_tree.greedy_order(domain, [names for names, _ in psi] + [attrs],
                                          elim=domain.invert(attrs))
    for z in order:
        touching = [f for f in psi if z in f[0]]
        psi = [f for f in psi if z not in f[0]]
        names, values = _factor_sum(touching)
        psi.append((tuple(a for a in names if a != z), _logsumexp(values,
                                                                 (names.index(z),))))
    names, values = _factor_sum([((), np.zeros(()))] + psi)
    target = potentials.domain.project(attrs)
    full = np.broadcast_to(_aligned(names, values, attrs), target.shape)
    log_total = np.log(float(model.total))
    normalized = full + log_total - _logsumexp(full, tuple(range(full.ndim)))
    return Factor(target, np.exp(normalized))


def lean_projections() -> None:
    """Release jax's memory after a projection of a model that its own marginals do not hold
    (mbi's variable elimination, run op by op: MST's and AIM's scores of every candidate
    marginal) once the process has grown by :data:`KERNEL_SLACK_BYTES` since the last
    release (where its memory cannot be read: after each), so the candidates' kernels do not
    pile up (issue 34, item 4). The projection's value is unchanged. Idempotent; mbi's model
    class is patched once per process."""
    from mbi import MarkovRandomField

    project = MarkovRandomField.project
    if getattr(project, "lean", False):
        return

    @functools.wraps(project)
    def lean_project(self, attrs):
        attrs = (attrs,) if isinstance(attrs, str) else tuple(attrs)
        if _NUMPY.get():
            return numpy_projection(self, attrs)
        if not _LEAN.get():
            return project(self, attrs)
        held = self.marginals.supports(attrs)
        out = project(self, attrs)
        resident = None if held else _resident_bytes()
        if not held and (resident is None
                         or resident - _resident_after_release[0] >= KERNEL_SLACK_BYTES):
            release_jax_memory()
        return out

    lean_project.lean = True
    MarkovRandomField.project = lean_project


def _algorithm(dp: Any, spec: MarginalSynthesis, names: list[str]) -> Any:
    without_aim_dust()
    lean_projections()
    estimator = functools.partial(_estimate, iters=spec.iters)
    # one column: its 1-way marginal is the whole table. MST has no pair to select (OpenDP
    # 0.16 divides its budget by zero selections and fails on an empty list of scores) and
    # AIM would spend part of it selecting the only candidate: measure the marginal instead
    if spec.marginals == "one-way" or len(names) == 1:
        return dp.mbi.Fixed(queries=[dp.mbi.Count((n,)) for n in names], estimator=estimator)
    if spec.marginals == "pairs":   # the chosen 2-way marginals are AIM's workload
        return dp.mbi.AIM(queries=[dp.mbi.Count((names[a], names[b])) for a, b in spec.pairs],
                          estimator=estimator)
    if spec.algorithm == "MST":
        return dp.mbi.MST(estimator=estimator)
    return dp.mbi.AIM(estimator=estimator)


#: What OpenDP 0.16's mbi raises when its split of the budget comes out a hair above the part
#: it was split for (MST under pure DP at ε = 3 on 7 columns: "0.14999999999999988 >
#: 0.14999999999999986"): a float rounding of the budget, not a property of the plan.
ROUNDING_FAILURE = "insufficient budget for query"
#: The budgets tried, as fractions of the plan's, while OpenDP fails on that rounding: the
#: measurement that runs is certified at its own figure (a hair below the plan's), which the
#: release composes and the ledger records.
BUDGET_NUDGES = (1.0, 1 - 1e-9, 1 - 1e-6, 1 - 1e-4)


def opendp_failure_in_words(exc: BaseException) -> str:
    """OpenDP's failure in one line: the innermost message of its chained error (an error in
    mbi's own Python code comes back wrapped in tracebacks with the server's paths), without
    a traceback or a path."""
    text = str(getattr(exc, "message", None) or exc)
    # the innermost of OpenDP's one-line errors (Variant("…")) and Python's own exception
    # lines ("ValueError: …", raised in mbi's Python code): the one written last
    found = [(m.start(), m.group(1)) for m in re.finditer(r'\b[A-Z][A-Za-z]*\("([^"\n]*)"\)',
                                                          text)]
    found += [(m.start(), m.group(1)) for m in re.finditer(
        r"^[ \t]*[\w.]*(?:Error|Exception): *(\S[^\n]*)$", text, flags=re.MULTILINE)]
    words = max(found)[1] if found else (text.strip().splitlines() or [""])[-1]
    words = re.sub(r"(?:[A-Za-z]:)?(?:[\\/][\w.\-]+){2,}", "…", words).strip()[:200]
    # never a sentence without a word (the chained error's last line is ")")
    return words if re.search(r"[A-Za-z]", words) else (
        f"OpenDP failed without saying why ({type(exc).__name__})")


def public_cells(shape: tuple[int, ...]) -> Any:
    """A public table of the plan's columns (no data): ``max(shape)`` rows, row i holding code
    i mod s in each column of s codes, so every code of every column occurs."""
    count = max(shape)
    codes = np.stack([np.arange(count) % s for s in shape], axis=1).astype(np.int64)
    return JointAggregate(codes, np.ones(count, dtype=np.int64))


def _build(spec: MarginalSynthesis, budget: float) -> tuple[Any, float]:
    """OpenDP's measurement of ``spec`` at ``budget``, taking the cells
    (:func:`release.mbi_cells.make_cells_table`), and its map at ``max_rows``; raises
    OpenDP's refusal."""
    # OpenDP through release.certified's lazy prelude: its first use turns the contrib
    # features on (mbi needs them), whether or not another part of the release used OpenDP
    dp.enable_features("contrib")
    names = _names(len(spec.shape))
    measure = dp.max_divergence() if spec.measure == "pure" else (
        dp.zero_concentrated_divergence())
    measurement = make_cells_table(spec.shape, measure, float(budget),
                                   _algorithm(dp, spec, names), max_rows=spec.max_rows)
    return measurement, float(measurement.map(spec.max_rows))


def fit_cells(spec: MarginalSynthesis, cells: Any) -> Any:
    """OpenDP's contingency table of ``cells`` by the measurement a release of ``spec`` runs
    (:func:`_build`): the Synthetic data page's fit, on the same code path. No trial on a
    public table (the page shows OpenDP's failure instead of charging anything); while OpenDP
    fails on its rounding of the budget (:data:`ROUNDING_FAILURE`), a hair less
    (:data:`BUDGET_NUDGES`), as a release. Raises ``ValueError`` with OpenDP's failure in
    words."""
    failure = ""
    for nudge in BUDGET_NUDGES:
        try:
            measurement, _ = _build(spec, spec.budget * nudge)
            return SynthesisMeasurement(measurement, spec).fit(cells)
        except (dp.OpenDPException, ValueError) as exc:
            failure = opendp_failure_in_words(exc)
            if ROUNDING_FAILURE not in failure:
                break
    raise ValueError(failure)


@functools.lru_cache(maxsize=32)
def _measurement(spec: MarginalSynthesis) -> tuple[Any, float] | str:
    """OpenDP's measurement of ``spec`` (mbi's contingency table, reading the cells) and its
    privacy map at ``max_rows`` rows per person, or OpenDP's refusal in words.

    Built from the plan alone, then **run once on a public table** (:func:`public_cells`):
    a failure that depends only on the plan (the schema, the budget, the algorithm) shows
    there, before any data is read and with nothing charged, instead of in a release that is
    charged for it (issue 34). While the failure is OpenDP's rounding of the budget
    (:data:`ROUNDING_FAILURE`), the budget is lowered by a hair (:data:`BUDGET_NUDGES`).
    A failure that depends on what the data holds can still happen in a release (AIM's
    rounds follow the data): a release records that as spent.

    Seconds to minutes of OpenDP's work (it calibrates every step, then fits), so cached by
    the public spec: a page asks on every rerun. Invoking the measurement draws afresh each
    time (OpenDP's samplers, fresh entropy), so a cached one releases as a new one would."""
    failure = ""
    for nudge in BUDGET_NUDGES:
        try:
            measurement, value = _build(spec, spec.budget * nudge)
        except (dp.OpenDPException, ValueError) as exc:
            return opendp_failure_in_words(exc)
        try:
            SynthesisMeasurement(measurement, spec).fit(public_cells(spec.shape))
        except Exception as exc:   # any failure on public data refuses the plan
            failure = opendp_failure_in_words(exc)
            if ROUNDING_FAILURE in failure:
                continue
            break
        else:
            return measurement, value
    return (f"it fails on a public table of the same columns, before any data is read "
            f"(nothing is spent): {failure}")


def certify_synthesis(query_id: str, part: Part) -> Any:
    """The part's OpenDP measurement (built from the plan alone) with the privacy its map
    certifies at ``max_rows`` rows per person; refused if that is above the plan's budget."""
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
