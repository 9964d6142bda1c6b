"""One scan (issue 37, item 3): a release and the plan's simulation read the plan's true
aggregates together, so DuckDB ranks each person's rows once for all the queries under the
unit (``DuckDBBackend.run_many``), not once per query. That each answer is the per-query
one is tests/engine/test_engine_one_scan.py's; that no neighbour moves them more than the
sensitivity is tests/release/test_stability.py's (which reads them the same way)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from dashboard.analysis.plan_simulation import simulate_plan
from engine import Engine
from engine.duckdb_backend import DuckDBBackend
from engine.sources import FrameSource
from plan.build import build_plan
from release import Ledger, run
from tests.release_fixtures import every_kind_plan, visits

#: the ranking of a person's rows (``duckdb_backend._kept``), in each statement that ranks
RANKING = "FROM bn WHERE n > $k"


@pytest.fixture
def rankings(monkeypatch) -> list[str]:
    """Every statement DuckDB runs that ranks a person's rows."""
    found: list[str] = []
    execute = DuckDBBackend._execute

    def spy(self, cursor, source, sql, params, **kwargs):
        if RANKING in sql:
            found.append(sql)
        return execute(self, cursor, source, sql, params, **kwargs)

    monkeypatch.setattr(DuckDBBackend, "_execute", spy)
    return found


def known_plan():
    """The fixtures' plan of every kind without the queries whose groups are found (their
    keyed queries are asked after the keys are read): four of its queries read the unit's
    kept rows (two sums, a sum by group with max groups, bins)."""
    plan = every_kind_plan()
    known = replace(plan, queries=tuple(q for q in plan.queries
                                        if q.id not in ("dx-found", "dx-cost")))
    assert not any(b.finds_groups for b in build_plan(known))
    return known


def test_a_release_ranks_once(rankings, tmp_path) -> None:
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(known_plan(), FrameSource(visits()), ledger=ledger,
            engine=Engine(DuckDBBackend(threads=1)))
    assert len(rankings) == 1


def test_a_simulated_release_ranks_once(rankings) -> None:
    simulate_plan(known_plan(), FrameSource(visits()), seed=1,
                  engine=Engine(DuckDBBackend(threads=1)))
    assert len(rankings) == 1


def test_one_query_at_a_time_ranks_for_each(rankings) -> None:
    """What the two tests above replace: each of the four queries ranks on its own."""
    engine, source = Engine(DuckDBBackend(threads=1)), FrameSource(visits())
    for built in build_plan(known_plan()):
        for query in built.engine_queries:
            engine.answer(source, query)
    assert len(rankings) == 4


def test_the_noisy_statistics_page_reads_a_variance_once(rankings) -> None:
    """The page's true inputs of a variance (two sums under the unit: of the deviations and
    of their squares) come from one ranking, and equal each sum read alone."""
    from dashboard import person
    from dashboard.analysis import statistics as stats
    from dashboard.analysis.stats_parts import parts_release
    from dashboard.choices import PrivacyChoice

    frame = visits()
    spec = stats.QuerySpec("variance", "age", 0.0, 90.0, None,
                           stats.contribution_for(person.PrivacyUnit("pid", 2), "variance", 3))
    shown = parts_release(frame, spec, PrivacyChoice("pure", "laplace", epsilon=0.5))
    assert len(shown.built.engine_queries) == 2
    assert len(rankings) == 1
    duck = DuckDBBackend(threads=1)
    alone = tuple(duck.run(FrameSource(frame), replace(q, contribution=spec.contribution))
                  for q in shown.built.engine_queries)
    assert len(rankings) == 3   # each alone ranks again
    expected = [float(v) for v in shown.built.kind.part_values(shown.built, alone)]
    assert list(shown.values) == pytest.approx(expected, rel=1e-13)
