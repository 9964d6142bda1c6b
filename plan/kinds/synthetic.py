"""A synthetic table: rows drawn from a model fitted by OpenDP's marginal-based inference
(``opendp.extras.mbi``: AIM, MST, the 1-way marginals, or AIM on chosen pairs of columns) to
noisy marginals of declared columns.

Its columns are declared (categories, or bin edges: public), each with one more cell for a
value that is missing or not declared. The engine counts the full contingency table of those
cells (``engine.JointCells``, each person's rows truncated to ``max_rows`` from their own
rows alone); OpenDP measures the marginals, fits the model and the release publishes the
synthetic rows drawn from it (post-processing).

Its privacy is not a catalogue mechanism's: it is OpenDP's own privacy map of the whole
measurement, read at the privacy unit's distance (``max_rows`` rows), and that certified
figure is what the release composes and the ledger records (``release.synthesis``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from dpcore.contributions import count_sensitivity
from engine.queries import JointCells
from plan.fields import (
    Categories,
    Grid,
    PlanError,
    PrivacyUnit,
    _bounded_int,
    _check_cells,
    _choice,
    _column,
    _declared,
    _f,
    _Fields,
    _number,
    _positive,
    _probability,
)
from plan.kinds.base import QueryKind
from plan.parts import Built, Loss, Part, contribution

if TYPE_CHECKING:   # annotations only: the plan reads its queries through the kinds
    from plan.model import PlanQuery

__all__ = ["Synthetic", "SyntheticColumn", "MarginalSynthesis", "KIND", "ALGORITHMS",
           "MARGINALS", "MAX_CATEGORIES", "MAX_ROWS_RELEASED", "OTHER", "column_labels"]

#: The algorithms OpenDP's mbi offers here.
ALGORITHMS = ("AIM", "MST")
#: "one-way": every 1-way marginal (a fixed workload); "auto": the algorithm selects;
#: "pairs": the chosen 2-way marginals are AIM's workload.
MARGINALS = ("one-way", "auto", "pairs")
#: Most cells (categories, or bins) a column may declare: the tables grow as their product.
MAX_CATEGORIES = 100
#: Most synthetic rows a release draws.
MAX_ROWS_RELEASED = 1_000_000
#: Most mirror-descent iterations of the model fit (the fit's time grows with them).
MAX_ITERS = 10_000
#: The label of a column's extra cell (a value missing or not declared).
OTHER = "(missing or other)"
MEASURES = ("pure", "zcdp")


@dataclass(frozen=True)
class SyntheticColumn:
    """One column of the synthetic table: its declared ``categories`` or bin ``edges``."""

    name: str
    categories: Categories | None = None
    edges: Grid | None = None

    def check(self, path: str) -> None:
        _column(self.name, f"{path}.name")
        _check_cells(self.categories, self.edges, path)
        cells = self.cells
        if cells > MAX_CATEGORIES:
            raise PlanError(f"{path}.categories" if self.edges is None else f"{path}.edges",
                            f"column {self.name!r} has {cells:,} categories: at most "
                            f"{MAX_CATEGORIES:,} are allowed in a synthetic table (its tables "
                            "grow as their product)")

    @property
    def cells(self) -> int:
        """Its declared cells (categories, or bins), without the missing-or-other cell."""
        if self.categories is not None:
            return len(self.categories.values)
        return len(self.edges.values) - 1

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.categories is not None:
            out["categories"] = self.categories.to_dict()
        else:
            out["edges"] = self.edges.to_dict()
        return out

    @staticmethod
    def from_fields(f: _Fields) -> SyntheticColumn:
        out = SyntheticColumn(f.text("name"),
                              _declared(f, "categories", Categories, required=False),
                              _declared(f, "edges", Grid, required=False))
        f.done()
        return out


@dataclass(frozen=True)
class Synthetic:
    """``rows`` synthetic rows of ``columns``, from a model that ``algorithm`` fits to noisy
    marginals (``marginals``; with "pairs", AIM's workload is the 2-way marginals of
    ``pairs``), under ``measure`` ("pure": ε; "zcdp": ρ, read as (ε, δ) at ``delta`` under
    basic or advanced accounting)."""

    columns: tuple[SyntheticColumn, ...]
    algorithm: str
    rows: int
    measure: str
    epsilon: float | None = None
    rho: float | None = None
    delta: float | None = None
    marginals: str = "auto"
    iters: int = 300
    pairs: tuple[tuple[str, str], ...] = ()
    kind: Literal["synthetic"] = field(default="synthetic", init=False)

    def check(self, path: str) -> None:
        if not isinstance(self.columns, tuple) or len(self.columns) < 2:
            raise PlanError(f"{path}.columns", "must hold at least two columns")
        names = []
        for i, column in enumerate(self.columns):
            column.check(f"{path}.columns[{i}]")
            names.append(column.name)
        if len(set(names)) != len(names):
            raise PlanError(f"{path}.columns", "must not repeat a column")
        _choice(self.algorithm, ALGORITHMS, f"{path}.algorithm")
        _choice(self.marginals, MARGINALS, f"{path}.marginals")
        self._check_pairs(names, path)
        _bounded_int(self.rows, f"{path}.rows")
        if self.rows > MAX_ROWS_RELEASED:
            raise PlanError(f"{path}.rows", f"must be at most {MAX_ROWS_RELEASED:,}, got "
                            f"{self.rows:,}")
        _bounded_int(self.iters, f"{path}.iters")
        if self.iters > MAX_ITERS:
            raise PlanError(f"{path}.iters", f"must be at most {MAX_ITERS:,}, got "
                            f"{self.iters:,}")
        _choice(self.measure, MEASURES, f"{path}.measure")
        if self.measure == "pure":
            if self.epsilon is None:
                raise PlanError(f"{path}.epsilon", "is required under pure DP")
            if self.rho is not None or self.delta is not None:
                raise PlanError(f"{path}.rho", "a pure-DP synthetic table is set by epsilon "
                                "alone")
            _positive(_number(self.epsilon, f"{path}.epsilon"), f"{path}.epsilon")
        else:
            if self.rho is None:
                raise PlanError(f"{path}.rho", "is required under zCDP")
            if self.epsilon is not None:
                raise PlanError(f"{path}.epsilon", "a zCDP synthetic table is set by rho")
            _positive(_number(self.rho, f"{path}.rho"), f"{path}.rho")
            if self.delta is not None:
                _probability(_number(self.delta, f"{path}.delta"), f"{path}.delta")

    def _check_pairs(self, names: list[str], path: str) -> None:
        if self.marginals != "pairs":
            if self.pairs:
                raise PlanError(f"{path}.pairs", "applies only with marginals 'pairs'")
            return
        if self.algorithm != "AIM":
            raise PlanError(f"{path}.marginals", "chosen pairs are AIM's workload: set "
                            "algorithm AIM, or marginals 'auto' or 'one-way'")
        if not isinstance(self.pairs, tuple) or not self.pairs:
            raise PlanError(f"{path}.pairs", "must hold at least one pair of the table's "
                            "columns")
        seen = set()
        for i, pair in enumerate(self.pairs):
            if not (isinstance(pair, tuple) and len(pair) == 2
                    and all(isinstance(n, str) and n in names for n in pair)
                    and pair[0] != pair[1]):
                raise PlanError(f"{path}.pairs[{i}]", "must be two different columns of the "
                                "table")
            if frozenset(pair) in seen:
                raise PlanError(f"{path}.pairs[{i}]", "repeats a pair")
            seen.add(frozenset(pair))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def shape(self) -> tuple[int, ...]:
        """Each column's codes: its declared cells and the missing-or-other cell."""
        return tuple(c.cells + 1 for c in self.columns)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "columns": [c.to_dict() for c in self.columns],
                               "algorithm": self.algorithm, "marginals": self.marginals,
                               "rows": self.rows, "iters": self.iters, "measure": self.measure}
        for name in ("epsilon", "rho", "delta"):
            if getattr(self, name) is not None:
                out[name] = _f(getattr(self, name))
        if self.pairs:
            out["pairs"] = [list(p) for p in self.pairs]
        return out

    @staticmethod
    def from_fields(f: _Fields) -> Synthetic:
        columns = f.array("columns")
        read = tuple(SyntheticColumn.from_fields(_Fields(c, f"{f.at('columns')}[{i}]"))
                     for i, c in enumerate(columns or []))
        iters = f.integer("iters", required=False)
        pairs = tuple(tuple(p) if isinstance(p, list) else p
                      for p in f.array("pairs", required=False) or [])
        return Synthetic(read, f.choice("algorithm", ALGORITHMS), f.integer("rows"),
                         f.choice("measure", MEASURES), f.number("epsilon", required=False),
                         f.number("rho", required=False), f.number("delta", required=False),
                         f.choice("marginals", MARGINALS, required=False, default="auto"),
                         300 if iters is None else iters, pairs)


@dataclass(frozen=True)
class MarginalSynthesis:
    """What a release measures: OpenDP's mbi over ``shape`` codes per column, with the
    ``algorithm`` on ``marginals``, at ``budget`` (ε or ρ, by ``measure``), for ``max_rows``
    rows per person, then ``rows`` synthetic rows drawn from the fitted model; ``pairs``:
    the chosen 2-way marginals (column indices) when ``marginals`` is "pairs".

    It has no noise scale of its own (OpenDP splits the budget among the marginals it
    measures): ``scale`` is NaN, and its privacy is OpenDP's map."""

    algorithm: str
    marginals: str
    shape: tuple[int, ...]
    measure: str
    budget: float
    max_rows: int
    rows: int
    iters: int
    pairs: tuple[tuple[int, int], ...] = ()

    #: OpenDP measures the marginals and fits the model: nothing is kept within a range,
    #: its input is the cells' counts (whole numbers)
    answer_range = None
    integer_input = True

    @property
    def scale(self) -> float:
        return float("nan")

    @property
    def name(self) -> str:
        return f"OpenDP's {self.algorithm}"

    @property
    def described(self) -> str:
        """The mechanism as the ledger records it."""
        return f"marginal-based synthesis ({self.algorithm}, marginals: {self.marginals})"

    @property
    def opendp_constructor(self) -> str:
        return "opendp.extras.mbi.make_contingency_table, then synthesize"

    def simulate(self, value: Any, *, scale: float, rng: np.random.Generator) -> Any:
        raise TypeError("no simulation for a synthetic table: OpenDP fits its model (the "
                        "Synthetic data page releases it)")


def column_labels(spec: Synthetic) -> tuple[tuple[str, ...], ...]:
    """Each column's label of each code: its categories (or bins "[a, b)", values outside
    the edges in the end bins), then :data:`OTHER`."""
    out = []
    for c in spec.columns:
        if c.categories is not None:
            cells = tuple(str(v) for v in c.categories.values)
        else:
            edges = c.edges.values
            cells = tuple(f"[{a:g}, {b:g})" for a, b in zip(edges, edges[1:], strict=False))
        out.append((*cells, OTHER))
    return tuple(out)


class SyntheticKind(QueryKind):
    name = "synthetic"
    spec = Synthetic
    families = ()
    statistic = "synthetic rows"
    target = None
    simulated = False

    def columns(self, spec: Synthetic) -> tuple[str, ...]:
        return spec.names

    def declarations(self, spec: Synthetic) -> list[tuple[str, Any]]:
        return [(f"{'categories' if c.categories is not None else 'bin edges'} of {c.name!r}",
                 c.categories if c.categories is not None else c.edges) for c in spec.columns]

    def check_unit(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> None:
        if unit.person_column is not None and unit.person_column in query.query.names:
            i = query.query.names.index(unit.person_column)
            raise PlanError(f"{path}.query.columns[{i}].name", "is the person-id column: "
                            "releasing it is not private")

    def engine_query(self, spec: Synthetic, unit: PrivacyUnit) -> JointCells:
        domains = tuple(tuple(c.categories.values) if c.categories is not None
                        else tuple(float(v) for v in c.edges.values) for c in spec.columns)
        binned = tuple(c.categories is None for c in spec.columns)
        return JointCells(spec.names, domains, binned, contribution(unit, grouped=False))

    def build(self, query: PlanQuery, unit: PrivacyUnit, path: str) -> Built:
        spec: Synthetic = query.query
        self.check_unit(query, unit, path)
        budget = spec.epsilon if spec.measure == "pure" else spec.rho
        pairs = tuple((spec.names.index(a), spec.names.index(b)) for a, b in spec.pairs)
        mechanism = MarginalSynthesis(spec.algorithm, spec.marginals, spec.shape,
                                      spec.measure, float(budget), unit.max_rows, spec.rows,
                                      spec.iters, pairs)
        loss = Loss(epsilon=spec.epsilon) if spec.measure == "pure" else Loss(
            rho=spec.rho, read_at=spec.delta)
        sensitivity = count_sensitivity(unit.bounds(grouped=False))
        part = Part("synthetic table", mechanism, float(unit.max_rows), loss, integer=True)
        return Built(query, unit, (self.engine_query(spec, unit),), (part,), sensitivity, kind=self)

    def draw(self, built: Built, certified, aggs: tuple, keys: tuple):
        """The synthetic rows, as the count of each distinct row drawn (its labels): the
        part's measurement takes the engine's cells and returns the rows' codes."""
        codes = np.asarray(certified[0].draw(aggs[0]), dtype=np.int64)
        return self.statistic, synthetic_rows(built.query.query, codes)

    def rules(self, query: PlanQuery) -> list[str]:
        spec: Synthetic = query.query
        return [f"each row is read as one cell of {', '.join(repr(n) for n in spec.names)}: "
                "a value missing or not declared (a category not listed) is read as the "
                f"column's cell {OTHER!r}; a number outside the bin edges is counted in the "
                "first or last bin (never refused: what the data holds goes through the "
                "mechanism)",
                f"OpenDP's {spec.algorithm} (opendp.extras.mbi, marginals: {spec.marginals}"
                + ("" if not spec.pairs else ": " + ", ".join(
                    f"{a!r} × {b!r}" for a, b in spec.pairs))
                + f") measures noisy marginals of those cells and fits a model; {spec.rows:,} "
                "synthetic rows are drawn from the model (post-processing: mbi's randomized "
                "rounding with a random rank inside each group, numpy's generator with fresh "
                "entropy) and written in a shuffled order"]

    def microdata(self, spec: Synthetic, rows) -> tuple[tuple[str, ...], np.ndarray]:
        """The synthetic rows, one record per row drawn (each distinct row repeated its
        count), in a shuffled order: an array of labels, one column per column.

        The released rows are a multiset (distinct rows, sorted, with their counts); written
        out in that order the file's first lines would all be one row (issue 34), so a reader
        taking its head would get a biased sample. The order is a permutation seeded by the
        released rows themselves (post-processing of released values: the same file every
        time it is written, in the package as on disk)."""
        import hashlib

        k = len(spec.columns)
        if not rows:
            return spec.names, np.empty((0, k), dtype=object)
        groups = np.array([group for group, _ in rows], dtype=object).reshape(len(rows), k)
        counts = np.asarray([count for _, count in rows], dtype=np.int64)
        records = np.repeat(groups, counts, axis=0)
        seed = hashlib.sha256(repr(tuple(rows)).encode("utf-8")).digest()
        order = np.random.default_rng(list(seed)).permutation(len(records))
        return spec.names, records[order]

    def opendp_program_reason(self, spec: Synthetic) -> str:
        return ("the exported OpenDP program has no synthetic tables; release it here or with "
                "python -m release")

    def spark_reason(self, spec: Synthetic) -> str:
        return ("PipelineDP has no synthetic tables; release it with python -m release (DuckDB, "
                "or Spark with EPSILON_LAB_ENGINE=spark)")


def synthetic_rows(spec: Synthetic, codes: np.ndarray) -> tuple:
    """Released rows of synthetic codes: one per distinct row drawn (its labels, in the
    columns' order) with the number of times it was drawn, in the order of the codes."""
    if not len(codes):
        return ()
    unique, counts = np.unique(codes.reshape(len(codes), -1), axis=0, return_counts=True)
    labels = column_labels(spec)
    names = [np.asarray(lab, dtype=object)[unique[:, j]] for j, lab in enumerate(labels)]
    groups = zip(*(n.astype(str).tolist() for n in names), strict=True)
    return tuple(zip(groups, counts.tolist(), strict=True))


KIND = SyntheticKind()
