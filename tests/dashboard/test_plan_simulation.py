"""One simulated draw of a plan (dashboard.analysis.plan_simulation): each part stands where a
release's OpenDP measurement stands (same input type, same scale in the same units), the rows
come out shaped as a release's, seeded, and OpenDP is never asked."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.analysis.plan_simulation import SimulatedPart, simulate_plan, simulated_parts
from engine.sources import FrameSource
from plan.build import build_plan
from release import Ledger, run
from release.measurements import certify
from tests.release_fixtures import every_kind_plan, visits

#: Queries whose groups are found by partition selection (which groups is random).
FOUND = ("dx-found", "dx-cost")


@pytest.fixture(scope="module")
def frame():
    return visits()


@pytest.fixture(scope="module")
def released(frame, tmp_path_factory):
    with Ledger(tmp_path_factory.mktemp("ledger") / "ledger.sqlite") as ledger:
        return run(every_kind_plan(), FrameSource(frame), ledger=ledger)


def test_each_part_takes_the_input_and_scale_of_the_release_measurement():
    rng = np.random.default_rng(0)
    for built in build_plan(every_kind_plan()):
        for simulated, certified in zip(simulated_parts(built, rng), certify(built),
                                        strict=True):
            assert simulated.part is certified.part
            assert simulated.integer == certified.integer, built.query.id
            # OpenDP's scale may be a few ulps above the plan's (a quantile's, in its
            # scores' units: the level's denominator times the plan's)
            assert simulated.opendp_scale == pytest.approx(certified.opendp_scale,
                                                           rel=1e-12), built.query.id


def test_the_rows_are_shaped_as_a_release_and_seeded(frame, released):
    simulated = simulate_plan(every_kind_plan(), FrameSource(frame), seed=5)
    assert list(simulated) == [q.id for q in released.queries]
    for q in released.queries:
        rows = simulated[q.id]
        assert {type(v) for _, v in rows} == {type(v) for _, v in q.rows}, q.id
        if q.id not in FOUND:
            assert [g for g, _ in rows] == [g for g, _ in q.rows], q.id
    again = simulate_plan(every_kind_plan(), FrameSource(frame), seed=5)
    for qid, rows in simulated.items():
        assert [g for g, _ in again[qid]] == [g for g, _ in rows], qid
        # a float sum is exact and rounded once (engine.cells.fixed_point_sums): the same
        # to the last digit whatever order the engine's threads add the rows in
        assert [v for _, v in again[qid]] == [v for _, v in rows], qid
    assert simulate_plan(every_kind_plan(), FrameSource(frame), seed=6)["n"] != simulated["n"]


def test_no_opendp_measurement_is_made_or_drawn(frame, monkeypatch):
    import release.measurements as measurements

    def refuse(*args, **kwargs):
        raise AssertionError("a simulation asked OpenDP")

    for name in ("certify", "_additive", "_noisy_max", "_threshold"):
        monkeypatch.setattr(measurements, name, refuse)
    values = simulate_plan(every_kind_plan(), FrameSource(frame), seed=1)
    assert set(values) == {q.id for q in every_kind_plan().queries}


def test_partition_selection_keeps_the_counts_that_clear_its_threshold():
    built = next(b for b in build_plan(every_kind_plan()) if b.query.id == "dx-found")
    [gate] = simulated_parts(built, np.random.default_rng(3))
    threshold = gate.part.mechanism.threshold
    assert threshold > 10   # δ = 1e-7 at ε = 1: far above a count of 0
    kept = gate.draw({"big": 10**6, "none": 0})
    assert list(kept) == ["big"]
    assert isinstance(kept["big"], int)   # discrete Laplace: whole noisy counts
    assert abs(kept["big"] - 10**6) < 40 * gate.part.mechanism.scale   # P ≈ e^-40 else
    assert gate.draw({}) == {}


def test_a_part_without_a_simulation_is_refused():
    from plan.parts import Part

    part = Part("odd", object(), 1.0, None)
    with pytest.raises(TypeError, match="no simulation"):
        SimulatedPart(part, False, 1.0, np.random.default_rng(0)).draw(1)
