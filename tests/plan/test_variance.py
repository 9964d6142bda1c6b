"""The variance, a query kind added as one file (plan/kinds/variance.py) and one registry line:
its plan JSON, the engine's moments it reads, its sensitivities under the privacy unit, what
it spends, and a real release whose law is the law the simulator gives for the same parts
(the exported programs' variance: tests/test_release_programs.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from engine.queries import BoundedSum, Contribution
from plan.build import build
from plan.kinds import KINDS
from plan.kinds.variance import PART_NAMES, Variance, variance_of
from plan.model import Bounds, Dataset, Noise, Plan, PlanError, PlanQuery, PrivacyUnit
from release import Ledger, prepare, run

BOUNDS = Bounds(10.0, 90.0, "public", "ages")


def plan(noise: Noise | None = None, unit: PrivacyUnit | None = None) -> Plan:
    noise = noise or Noise("laplace", "pure", epsilon=1.0)
    return Plan(Dataset("people"), (PlanQuery("v", "Variance of age",
                                              Variance("age", BOUNDS), noise),),
                unit or PrivacyUnit())


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(8)
    age = rng.normal(45, 18, 4000)
    age[::50] = np.nan
    return pd.DataFrame({"age": age, "pid": rng.integers(0, 1500, 4000)})


def test_the_kind_is_registered_and_its_plan_reads_back():
    assert KINDS["variance"].spec is Variance
    assert Plan.from_json(plan().to_json()) == plan()
    whole = plan(Noise("geometric", "pure", epsilon=1.0))   # a valid plan file, but …
    with pytest.raises(PlanError, match=r"queries\[0\].mechanism.kind"):  # … not buildable
        build(whole.queries[0], PrivacyUnit(), path="queries[0]")


def test_the_engine_reads_the_moments_around_the_midpoint(frame):
    engine = DuckDBBackend(threads=1)
    x = np.clip(frame["age"].dropna().to_numpy(), 10, 90) - 50
    deviations = engine.run(FrameSource(frame), BoundedSum("age", 10, 90, centre=50.0))
    squares = engine.run(FrameSource(frame), BoundedSum("age", 10, 90, centre=50.0,
                                                        squared=True))
    assert deviations.rows == squares.rows == x.size
    assert deviations.total == pytest.approx(x.sum(), rel=1e-12)
    assert squares.total == pytest.approx((x * x).sum(), rel=1e-12)
    person = engine.run(FrameSource(frame), BoundedSum("age", 10, 90, Contribution("pid", 9),
                                                       centre=50.0, squared=True))
    assert person.total == pytest.approx((x * x).sum(), rel=1e-12)   # nobody has 9 rows
    with pytest.raises(ValueError, match="whole"):
        BoundedSum("age", 10, 90, whole=True, squared=True)


def test_sensitivities_and_what_it_spends():
    """Under 3 rows per person: the count r, the deviations r·h, the squares r·h² (h = 40);
    the three thirds of ε add up to at most ε, which is what the release records."""
    built = build(plan(unit=PrivacyUnit("pid", 3)).queries[0], PrivacyUnit("pid", 3))
    assert [p.name for p in built.parts] == list(PART_NAMES)
    assert [p.sensitivity for p in built.parts] == [3.0, 120.0, 4800.0]
    epsilons = [p.loss.epsilon for p in built.parts]
    assert sum(epsilons) <= 1.0 and sum(epsilons) == pytest.approx(1.0)
    assert prepare(plan(unit=PrivacyUnit("pid", 3))).spent.epsilon <= 1.0


def test_variance_of_post_processes_into_the_possible_range():
    h = 40.0
    assert variance_of(0.0, 5.0, 1e9, h) == h * h            # count floored at 1, clamped
    assert variance_of(100.0, 0.0, -5.0, h) == 0.0           # never negative
    np.testing.assert_allclose(variance_of(np.array([4.0, 4.0]), np.array([4.0, 0.0]),
                                           np.array([8.0, 8.0]), h), [1.0, 2.0])


@pytest.mark.slow
def test_a_real_release_draws_the_law_the_simulator_gives(tmp_path, frame):
    """200 releases with OpenDP (unseeded) against 20,000 simulated with dpcore's samplers on
    the very parts the plan builds: one law (two-sample KS, α = 1e-4); and both centred on
    the true variance of the clamped values within the noise."""
    engine = Engine(DuckDBBackend(threads=1))
    the_plan = plan(Noise("laplace", "pure", epsilon=0.5))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        released = [run(the_plan, FrameSource(frame), ledger=ledger, engine=engine)
                    .queries[0].rows[0][1] for _ in range(200)]
    built = build(the_plan.queries[0], PrivacyUnit())
    kind = KINDS["variance"]
    aggs = tuple(engine.answer(FrameSource(frame), q) for q in built.engine_queries)
    values = kind.part_values(built, aggs)
    rng = np.random.default_rng(3)
    noisy = tuple(part.mechanism.sample(value, trials=20_000, rng=rng)
                  for part, value in zip(built.parts, values, strict=True))
    simulated = kind.combine(built, noisy)
    assert stats.ks_2samp(released, simulated).pvalue > 1e-4
    truth = float(np.var(np.clip(frame["age"].dropna(), 10, 90)))
    assert abs(np.median(simulated) - truth) < 0.05 * truth
