"""A synthetic table whose marginals are chosen pairs of columns (AIM's workload, as the Synthetic
data page offers it): the plan holds the pairs by name (JSON round trip, refusals on the plan
alone), the built part by column index, and the release's OpenDP measurement measures exactly
those 2-way marginals; its certified loss is the plan's budget."""

from __future__ import annotations

import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.build import build_plan
from plan.kinds.synthetic import Synthetic, SyntheticColumn
from plan.model import (
    Accounting,
    Categories,
    Dataset,
    Grid,
    Plan,
    PlanError,
    PlanQuery,
    PrivacyUnit,
)
from release import Ledger, prepare, run
from tests.release.test_synthetic_release import COLOURS, EDGES, HOSTILE, people

ROWS = 25


def columns() -> tuple[SyntheticColumn, ...]:
    return (SyntheticColumn(HOSTILE, Categories(COLOURS, "public", "test")),
            SyntheticColumn("x", edges=Grid(EDGES, "public", "test")),
            SyntheticColumn("y", Categories(("a", "b"), "public", "test")))


def spec(pairs=((HOSTILE, "y"),), algorithm: str = "AIM", marginals: str = "pairs"
         ) -> Synthetic:
    """Under zCDP (ρ = 0.5): OpenDP 0.16's AIM under pure DP at ε = 1 can fail while it
    draws, when its last step's budget is too small for its binary search."""
    return Synthetic(columns(), algorithm, ROWS, "zcdp", rho=0.5, marginals=marginals,
                     iters=20, pairs=pairs)


def plan(query: Synthetic | None = None) -> Plan:
    return Plan(Dataset("people"), (PlanQuery("syn", "Synthetic", query or spec(), None),),
                PrivacyUnit(), Accounting("zcdp", 1e-6))


def test_the_pairs_round_trip_through_json_and_build_as_column_indices():
    made = plan()
    assert Plan.from_json(made.to_json()) == made
    (built,) = build_plan(made)
    assert built.parts[0].mechanism.pairs == ((0, 2),)
    assert "'y'" in built.kind.rules(made.queries[0])[1]


@pytest.mark.parametrize(("query", "words"), [
    (spec(algorithm="MST"), r"marginals: chosen pairs are AIM's workload"),
    (spec(pairs=()), r"pairs: must hold at least one pair"),
    (spec(pairs=((HOSTILE, "nope"),)), r"pairs\[0\]: must be two different columns"),
    (spec(pairs=(("y", "y"),)), r"pairs\[0\]: must be two different columns"),
    (spec(pairs=((HOSTILE, "y"), ("y", HOSTILE))), r"pairs\[1\]: repeats a pair"),
    (spec(marginals="auto"), r"pairs: applies only with marginals 'pairs'"),
])
def test_pairs_the_plan_cannot_hold_are_refused_by_name(query, words):
    with pytest.raises(PlanError, match=words):
        plan(query)


@pytest.mark.slow   # OpenDP certifies AIM's map: seconds
def test_the_release_measures_exactly_the_chosen_two_way_marginals():
    """OpenDP's AIM gets the chosen pairs as its workload (the columns by code name), and
    its map certifies at most the plan's ρ, from the plan alone."""
    import opendp.prelude as dp

    from release.synthesis import _algorithm

    (built,) = build_plan(plan(spec(pairs=(("x", "y"), (HOSTILE, "x")))))
    dp.enable_features("contrib")
    algorithm = _algorithm(dp, built.parts[0].mechanism, ["c0", "c1", "c2"])
    assert isinstance(algorithm, dp.mbi.AIM)
    assert [q.by for q in algorithm.queries] == [("c1", "c2"), ("c0", "c1")]
    (certified,) = prepare(plan()).certified[0]
    rho = float(certified.measurement.map(1))
    assert certified.certified.rho == rho and 0.5 * (1 - 1e-9) < rho <= 0.5


@pytest.mark.slow
def test_a_release_with_chosen_pairs_draws_the_rows(tmp_path):
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan(), FrameSource(people().assign(y="a")), ledger=ledger,
                      engine=Engine(DuckDBBackend(threads=1)))
        [record] = ledger.releases()
    assert record.epsilon == release.spent.epsilon and release.spent.rho <= 0.5
    assert sum(count for _, count in release.queries[0].rows) == ROWS
