"""Intervals of a real release (issue 22): computed from the mechanisms' laws, public
parameters and released values only — their widths are the closed forms whatever the data —
and written to release.csv (lower, upper, level), release.json and the card."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.model import (
    Accounting,
    Bounds,
    Budget,
    Count,
    Dataset,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Sum,
)
from release import Ledger, run
from release.card import release_card
from release.files import release_csv, release_record
from tests.release.test_release_run import _truth_frame
from tests.release_fixtures import cats

Z_975 = 1.959963984540054  # the standard normal's 97.5 % quantile


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=1))


def _plan(alpha: float = 0.05) -> Plan:
    queries = (
        PlanQuery("rows", "Rows", Count(), Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("income", "Income", Sum("income", Bounds(0, 100_000)),
                  Noise("gaussian", "zcdp", rho=0.05, delta=1e-7)),
        PlanQuery("region", "Regions", Histogram("region", cats("north", "south", "east")),
                  Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("age", "Mean age", Mean("age", Bounds(18, 90)),
                  Noise("laplace", "pure", epsilon=0.5)),
    )
    return Plan(Dataset("people"), queries, PrivacyUnit(), Accounting(alpha=alpha),
                Budget(epsilon=20.0))


def _released(tmp_path, engine, frame, alpha=0.05):
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        return run(_plan(alpha), FrameSource(frame), ledger=ledger, engine=engine)


def _widths(release):
    return {q.id: [hi - lo for lo, hi in q.intervals] for q in release.queries}


def test_widths_are_the_closed_forms_on_neighbouring_datasets(tmp_path, engine):
    frame = _truth_frame()
    neighbour = frame.drop(index=17)   # one person (one row) fewer
    laplace = 2 * (1 / 0.5) * math.log(1 / 0.05)          # 2 b ln(1/alpha), b = 1/ε
    gaussian = 2 * (100_000 / math.sqrt(2 * 0.05)) * Z_975  # 2 σ z, σ = Δ/√(2ρ)
    for i, data in enumerate((frame, neighbour)):
        release = _released(tmp_path / str(i), engine, data)
        widths = _widths(release)
        assert widths["rows"] == pytest.approx([laplace], rel=1e-9)
        assert widths["income"] == pytest.approx([gaussian], rel=1e-9)
        assert widths["region"] == pytest.approx([laplace] * 3, rel=1e-9)
        by_id = {q.id: q for q in release.queries}
        for q in release.queries:  # each interval holds its released value
            assert len(q.intervals) == len(q.rows)
            assert all(lo <= v <= hi for (_, v), (lo, hi) in zip(q.rows, q.intervals,
                                                                  strict=True))
        (low, high), = by_id["age"].intervals
        assert 18 <= low <= high <= 90
        assert by_id["age"].interval_method == "mean"
        assert by_id["region"].interval_method == "per cell"


def test_the_files_and_the_card_give_each_value_its_interval(tmp_path, engine):
    release = _released(tmp_path, engine, _truth_frame(), alpha=0.1)
    rows = list(csv.DictReader(io.StringIO(release_csv(release).decode("utf-8-sig"))))
    assert len(rows) == 1 + 1 + 3 + 1
    for row in rows:
        assert float(row["level"]) == pytest.approx(0.9)
        assert float(row["lower"]) <= float(row["Value"]) <= float(row["upper"])
        assert row["choice error at most"] == row["choice error"] == ""
    count = next(r for r in rows if r["Query id"] == "rows")
    width = float(count["upper"]) - float(count["lower"])
    assert width == pytest.approx(2 * 2 * math.log(10), rel=1e-9)   # alpha = 0.1
    record = release_record(release)
    for q in record["queries"]:
        assert q["interval"]["level"] == pytest.approx(0.9)
        assert {"group", "value", "lower", "upper", "level"} <= set(q["values"][0])
    mean = next(q for q in record["queries"] if q["id"] == "age")
    assert "split" in mean["interval"]["description"]
    card = release_card(release)
    assert card["intervals"]["level"] == pytest.approx(0.9)
    assert {q["interval"]["method"] for q in card["queries"]} == {"exact", "per cell", "mean"}
    assert json.loads(json.dumps(card))  # JSON-able


def test_the_plans_alpha_is_read_and_written():
    plan = _plan(alpha=0.1)
    again = Plan.from_json(plan.to_json())
    assert again.accounting.alpha == 0.1
    default = json.loads(_plan().to_json())
    assert "alpha" not in default["accounting"]  # a plan written before alpha reads the same
    assert Plan.from_json(json.dumps(default)).accounting.alpha == 0.05
    from plan.model import PlanError

    with pytest.raises(PlanError, match="accounting.alpha"):
        Accounting(alpha=1.5)


def test_every_kind_says_how_its_intervals_hold(tmp_path, engine):
    from tests.release_fixtures import every_kind_plan, visits

    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(every_kind_plan(), FrameSource(visits()), ledger=ledger, budget=50.0,
                      engine=engine)
    methods = {q.id: q.interval_method for q in release.queries}
    # cost: clamped Laplace, an answer range: conservative ("range"), not "exact"
    assert methods == {"n": "exact", "cost": "range", "age": "mean", "dx": "per cell",
                       "ages": "per cell", "dx-sex": "per cell",
                       "dx-found": "per cell, conditional",
                       "dx-cost": "per cell, kept",
                       "sex-age": "mean", "age-q": "rank", "top-dx": "shortfall"}
    choices = {"age-q", "top-dx"}   # their intervals bound a shortfall, from 0
    for q in release.queries:
        assert len(q.intervals) == len(q.rows)
        for (_, value), interval in zip(q.rows, q.intervals, strict=True):
            assert interval is not None
            if q.id in choices:
                assert interval[0] == 0.0 < interval[1]
            else:
                assert interval[0] <= value <= interval[1]
    card = release_card(release)
    found = next(q for q in card["queries"] if q["id"] == "dx-found")
    assert "conditional on the group being kept" in found["interval"]["description"]
    assert "may cover less" in found["interval"]["description"]
    cost = next(q for q in card["queries"] if q["id"] == "dx-cost")
    assert "holds at the stated level for each group kept" in cost["interval"]["description"]


# --------------------------------------------------------------------------------------------
# the kinds made of several parts or of a choice: variance, selection, quantiles


def _variance_plan() -> Plan:
    from plan.kinds.variance import Variance

    return Plan(Dataset("people"), (
        PlanQuery("age-var", "Age variance", Variance("age", Bounds(18, 90)),
                  Noise("laplace", "pure", epsilon=1.0)),), PrivacyUnit(), Accounting(),
        Budget(epsilon=20.0))


def test_a_variance_has_its_interval_within_the_public_range(tmp_path, engine):
    frame = _truth_frame()
    for i, data in enumerate((frame, frame.drop(index=17))):
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            release = run(_variance_plan(), FrameSource(data), ledger=ledger, engine=engine)
        (q,) = release.queries
        assert q.interval_method == "variance"
        ((_, value),), ((low, high),) = q.rows, q.intervals
        assert 0.0 <= low <= value <= high <= 36.0 ** 2   # h = (90 − 18) / 2
        assert high - low < 36.0 ** 2  # the noise at ε = 1 is far below the public range
        record = release_record(release)["queries"][0]
        assert "interval arithmetic" in record["interval"]["description"]
        assert {"lower", "upper", "level"} <= set(record["values"][0])


def _choices_plan() -> Plan:
    from plan.model import Grid, Quantiles, Selection, SelectionNoise

    return Plan(Dataset("people"), (
        PlanQuery("top", "Top regions", Selection("region", cats("north", "south", "east"), k=2),
                  SelectionNoise("exponential", "pure", epsilon=1.0)),
        PlanQuery("median", "Median age",
                  Quantiles("age", (0.5,), Grid(tuple(float(v) for v in range(10, 100, 10)))),
                  SelectionNoise("exponential", "pure", epsilon=1.0)),
    ), PrivacyUnit(), Accounting(), Budget(epsilon=20.0))


def test_a_selection_and_a_quantile_give_shortfalls_that_the_data_do_not_move(tmp_path,
                                                                              engine):
    # permute-and-flip, pure DP: scale k·Δ/ε per round (counts are monotonic), 2Δ/ε for a
    # quantile's rank error (Δ = ½ for the median); union bounds over the candidates left,
    # each pair's difference of exponential noises a Laplace law: P(D > t) = e^{−t/b} / 2
    top = [2.0 * math.log(2 / (2 * 0.05)), 2.0 * math.log(1 / (2 * 0.05))]
    median = 1.0 * math.log(8 / (2 * 0.05))   # 9 candidates
    frame = _truth_frame()
    for i, data in enumerate((frame, frame.drop(index=17))):
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            release = run(_choices_plan(), FrameSource(data), ledger=ledger, engine=engine)
        by_id = {q.id: q for q in release.queries}
        assert by_id["top"].interval_method == "shortfall"
        assert by_id["median"].interval_method == "rank"
        assert [lo for lo, _ in by_id["top"].intervals] == [0.0, 0.0]
        assert [hi for _, hi in by_id["top"].intervals] == pytest.approx(top, rel=1e-9)
        ((low, high),) = by_id["median"].intervals
        assert low == 0.0 and high == pytest.approx(median, rel=1e-9)
    # issue 31 item 9: a choice's bound is never in the lower/upper of a value interval
    rows = list(csv.DictReader(io.StringIO(release_csv(release).decode("utf-8-sig"))))
    assert [r["choice error"] for r in rows] == ["shortfall from the top count"] * 2 + [
        "excess rank error over the grid's best candidate, in rows"]
    assert all(r["lower"] == r["upper"] == "" and float(r["level"]) == 0.95 for r in rows)
    assert float(rows[0]["choice error at most"]) == pytest.approx(top[0], rel=1e-9)
    assert float(rows[2]["choice error at most"]) == pytest.approx(median, rel=1e-9)
    record = {q["id"]: q for q in release_record(release)["queries"]}
    assert record["top"]["interval"]["of"] == "shortfall from the top count"
    first = record["top"]["values"][0]
    assert "lower" not in first and "upper" not in first
    assert first["choice_error"]["of"] == "shortfall from the top count"
    assert first["choice_error"]["at_most"] == pytest.approx(top[0], rel=1e-9)
    quantile = record["median"]["values"][0]
    assert "lower" not in quantile and "upper" not in quantile
    assert quantile["choice_error"]["in_words"].startswith("rank error ≤ best + ")
    assert quantile["choice_error"]["in_words"].endswith(" rows")
    assert "union bound" in record["median"]["interval"]["description"]
    card = {q["id"]: q for q in release_card(release)["queries"]}
    assert card["top"]["interval"]["of"] == "shortfall from the top count"
    assert card["median"]["interval"]["method"] == "rank"


def test_noise_kept_within_an_answer_range_is_labelled_range_not_exact(tmp_path, engine):
    from dpcore.intervals import METHODS
    from release.files import interval_description

    clamped = Noise("clamped_laplace", "pure", epsilon=1.0, lower=0.0, upper=1e6)
    plan = Plan(Dataset("people"), (
        PlanQuery("rows", "Rows", Count(), clamped),
        PlanQuery("region", "Regions", Histogram("region", cats("north", "south", "east")),
                  clamped),
        PlanQuery("plain", "Rows again", Count(), Noise("laplace", "pure", epsilon=1.0))),
        PrivacyUnit(), Accounting(), Budget(epsilon=20.0))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(_truth_frame()), ledger=ledger, engine=engine)
    methods = {q.id: q.interval_method for q in release.queries}
    assert methods == {"rows": "range", "region": "per cell, range", "plain": "exact"}
    assert interval_description("per cell, range") == (
        f"{METHODS['per cell']}; {METHODS['range']}")
    card = {q["id"]: q["interval"]["method"] for q in release_card(release)["queries"]}
    assert card == methods
