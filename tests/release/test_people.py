"""The number of people (issue 36 item 5) on the release path: its true answer is the number
of distinct person ids (pandas' ``nunique``, rows without an id left out) whatever max rows;
its noise is OpenDP's at sensitivity 1 under the geometric, Laplace, Gaussian and discrete
Gaussian mechanisms, the accounting equal to OpenDP's own map of a measurement built here at
the closed-form scale; released, with its interval (the closed form) and its rule on the
card; refused by name without a person-id column; and both exported programs release it
(the OpenDP program in process; the Spark program under ``-m spark``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import opendp.prelude as dp
import pandas as pd
import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.kinds.people import People
from plan.model import Accounting, Count, Dataset, Noise, Plan, PlanError, PlanQuery, PrivacyUnit
from release import Ledger, prepare, run
from release.card import release_card
from release.programs import opendp_program, spark_program
from tests.release_fixtures import load_program

dp.enable_features("contrib")

EPSILON, RHO = 0.7, 0.3
#: (noise, the measurement's scale in closed form at sensitivity 1, its OpenDP input type)
NOISES = {
    "geometric": (Noise("geometric", "pure", epsilon=EPSILON), 1 / EPSILON, "i64"),
    "laplace": (Noise("laplace", "pure", epsilon=EPSILON), 1 / EPSILON, "float"),
    "gaussian": (Noise("gaussian", "zcdp", rho=RHO), 1 / math.sqrt(2 * RHO), "float"),
    "discrete_gaussian": (Noise("discrete_gaussian", "zcdp", rho=RHO),
                          1 / math.sqrt(2 * RHO), "i64"),
}


def visits(seed: int = 0) -> pd.DataFrame:
    """1 to 6 rows for each of 40 people, and rows with no person id (no one's)."""
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(40), rng.integers(1, 7, 40))
    frame = pd.DataFrame({"pid": pid.astype(object), "cost": rng.gamma(2.0, 50.0, pid.size)})
    orphans = pd.DataFrame({"pid": [None, None, None], "cost": [1.0, 2.0, 3.0]})
    return pd.concat([frame, orphans], ignore_index=True)


def people_plan(noise: Noise, max_rows: int = 3) -> Plan:
    """One number of people; a zCDP noise accounted in zCDP (its ρ read off as it is)."""
    accounting = Accounting("basic") if noise.measure == "pure" else Accounting("zcdp", 1e-6)
    return Plan(Dataset("visits"), (PlanQuery("people", "People", People(), noise),),
                PrivacyUnit("pid", max_rows), accounting)


def opendp_map(kind: str, scale: float) -> float:
    """OpenDP's own map at d_in = 1 of the measurement of ``kind`` at ``scale``."""
    _, _, atom = NOISES[kind]
    domain = dp.atom_domain(T=atom) if atom == "i64" else dp.atom_domain(T=atom, nan=False)
    make = dp.m.make_laplace if "gaussian" not in kind else dp.m.make_gaussian
    return make(domain, dp.absolute_distance(T=atom), scale=scale).map(1)


@pytest.mark.parametrize("max_rows", [1, 5])
@pytest.mark.parametrize("kind", list(NOISES))
def test_the_accounting_is_opendps_map_at_sensitivity_one_whatever_max_rows(kind, max_rows):
    noise, scale, _ = NOISES[kind]
    prepared = prepare(people_plan(noise, max_rows))
    (certified,), = prepared.certified
    assert certified.d_in == 1
    assert certified.opendp_scale == pytest.approx(scale, rel=1e-9)
    figure = opendp_map(kind, certified.opendp_scale)
    if noise.measure == "pure":
        assert figure <= EPSILON * (1 + 1e-9)
        assert prepared.spent.epsilon == pytest.approx(figure, rel=1e-9)
    else:
        assert figure <= RHO * (1 + 1e-9)
        assert prepared.spent.rho == pytest.approx(figure, rel=1e-9)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=1))


def test_released_with_its_interval_and_its_rule_on_the_card(tmp_path, engine):
    frame = visits()
    truth = frame["pid"].nunique()          # 40: the rows without an id are no one's
    plan = Plan(Dataset("visits"), (
        PlanQuery("people", "People", People(), Noise("geometric", "pure", epsilon=40.0)),
        PlanQuery("wide", "People", People(), Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("rows", "Rows", Count(), Noise("geometric", "pure", epsilon=40.0))),
        PrivacyUnit("pid", 2), Accounting("basic"))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(frame), ledger=ledger, engine=engine)
    by_id = {q.id: q for q in release.queries}
    # geometric at ε = 40 (scale 1/40): P(noise ≠ 0) ≈ 2e^-40
    assert by_id["people"].rows == (((), truth),)
    kept = int(frame.dropna(subset=["pid"]).groupby("pid").size().clip(upper=2).sum())
    assert by_id["rows"].rows == (((), kept),)   # the count of rows is the truncated rows'
    (lo, hi), = by_id["wide"].intervals
    assert hi - lo == pytest.approx(2 * 2.0 * math.log(1 / 0.05), rel=1e-9)  # 2 b ln(1/α)
    assert lo <= by_id["wide"].rows[0][1] <= hi
    assert by_id["wide"].interval_method == "exact"
    card = {q["id"]: q for q in release_card(release)["queries"]}
    assert card["people"]["mechanisms"][0]["sensitivity"] == 1
    rules = [r["rule"] for r in release_card(release)["data_handling"]
             if r["query"] == "people"]
    assert any("each person id is counted once" in r for r in rules), rules


def test_without_a_person_id_column_the_plan_is_refused_by_name():
    with pytest.raises(PlanError, match="person-id column"):
        Plan(Dataset("visits"), (PlanQuery("people", "People", People(),
                                           NOISES["laplace"][0]),), PrivacyUnit())


def test_a_persons_rows_never_move_it_by_more_than_one(engine):
    """Neighbours through the release path: each person removed moves the true answer by
    exactly 1, a newcomer with many rows by 1, at every max rows."""
    from plan.build import build_plan
    from release.run import _plan_aggregates

    frame = visits(3)

    def answer(data: pd.DataFrame, max_rows: int) -> int:
        built = build_plan(people_plan(NOISES["laplace"][0], max_rows))
        (aggs, _), = _plan_aggregates(built, engine, FrameSource(data))
        return aggs[0].total_people

    newcomer = pd.DataFrame({"pid": [999] * 9, "cost": np.arange(9.0)})
    for max_rows in (1, 4):
        base = answer(frame, max_rows)
        assert base == frame["pid"].nunique()
        for pid in (0, 17, 39):
            assert base - answer(frame[frame["pid"] != pid], max_rows) == 1
        assert answer(pd.concat([frame, newcomer], ignore_index=True), max_rows) - base == 1


@pytest.mark.parametrize("kind", ["geometric", "gaussian"])
def test_the_opendp_program_releases_it(tmp_path, kind):
    noise = {"geometric": Noise("geometric", "pure", epsilon=40.0),
             "gaussian": Noise("gaussian", "zcdp", rho=400.0)}[kind]
    plan = people_plan(noise, 2)
    program = load_program(opendp_program(plan), f"people_{kind}", tmp_path)
    frame = visits(1)
    out = program.release(frame, rng=np.random.default_rng(0))
    (query,) = out["queries"]
    (part,) = out["parts"]
    assert part["opendp_map"] == pytest.approx(
        {"epsilon": 40.0} if kind == "geometric" else {"rho": 400.0}, rel=1e-9)
    value = query["rows"][0][1]
    # geometric at ε = 40: exact; Gaussian at σ = 1/√800 ≈ 0.035: within 0.5
    assert abs(value - frame["pid"].nunique()) <= (0 if kind == "geometric" else 0.5)


@pytest.mark.spark
def test_the_spark_program_releases_it_with_the_plans_noise(tmp_path):
    frame = visits(2)
    frame.to_csv(tmp_path / "visits.csv", index=False)
    plan = people_plan(Noise("laplace", "pure", epsilon=EPSILON), 4)
    (tmp_path / "program.py").write_text(spark_program(plan), encoding="utf-8")
    done = subprocess.run([sys.executable, "program.py", "--data", "visits.csv", "--master",
                           "local[1]", "--out", "out.json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    (part,) = out["parts"]
    assert part["spent"] == [{"epsilon": EPSILON, "delta": 0.0}]
    # PipelineDP's Laplace at sensitivity 1 (not max rows 4): b = 1/ε, std b√2
    assert part["noise_std"] == [pytest.approx(math.sqrt(2) / EPSILON, rel=1e-9)]
    value = out["queries"][0]["rows"][0][1]
    assert abs(value - frame["pid"].nunique()) < 40 / EPSILON   # P(|Laplace| ≥ 40 b) ≈ e^-40
