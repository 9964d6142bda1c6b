"""release.run end to end on small data: every query kind released and recorded, two
releases differ (no seed), the files hold no true value, refusals record nothing, the card."""

from __future__ import annotations

import csv
import importlib
import io
import json
import math

import numpy as np
import pandas as pd
import pytest

from engine import DistinctValues, Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.model import (
    Accounting,
    Bounds,
    Budget,
    Count,
    Crosstab,
    Dataset,
    GroupBy,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Sum,
    Threshold,
)
from release import DataMismatch, Ledger, OverBudget, run
from release.card import release_card
from release.files import release_csv, release_json, release_record
from tests.release_fixtures import cats, every_kind_plan, visits


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=1))


def test_every_kind_is_released_and_recorded(tmp_path, engine):
    plan = every_kind_plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(visits()), ledger=ledger, budget=50.0, engine=engine)
        records = ledger.releases()
        assert ledger.verify() == []
    assert [q.id for q in release.queries] == [q.id for q in plan.queries]
    assert len(records) == 1 and records[0].values_hash == release.values_hash
    assert records[0].epsilon == release.spent.epsilon
    assert json.loads(records[0].plan_json) == json.loads(plan.to_json())
    by_id = {q.id: q for q in release.queries}
    assert len(by_id["dx"].rows) == 6 and len(by_id["dx-sex"].rows) == 12
    assert [g for g, _ in by_id["ages"].rows] == [("< 18",), ("[18, 40)",), ("[40, 65)",),
                                                 ("[65, 90]",), ("> 90",)]
    assert {g for g, _ in by_id["dx-found"].rows} <= {("A",), ("B",), ("C",), ("D",), ("E",),
                                                      ("rare",)}
    assert all(18 <= v <= 90 for _, v in by_id["sex-age"].rows)
    assert [g for g, _ in by_id["age-q"].rows] == [("q=0.25",), ("q=0.5",), ("q=0.75",)]
    assert all(v in plan.query("age-q").query.candidates.values for _, v in by_id["age-q"].rows)
    assert len({v for _, v in by_id["top-dx"].rows}) == 2
    # the integer mechanisms release whole numbers
    assert all(isinstance(v, int) for _, v in by_id["dx"].rows)
    assert isinstance(by_id["n"].rows[0][1], float)


def test_two_releases_of_one_plan_differ(tmp_path, engine):
    plan = every_kind_plan()
    source = FrameSource(visits())
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = run(plan, source, ledger=ledger, engine=engine)
        second = run(plan, source, ledger=ledger, engine=engine)
        assert len(ledger.releases()) == 2
    assert first.values_hash != second.values_hash
    continuous = ("n", "cost", "ages", "dx-sex", "dx-cost", "sex-age")
    for query_id in continuous:  # continuous noise: equal values have probability 0
        a = dict(next(q for q in first.queries if q.id == query_id).rows)
        b = dict(next(q for q in second.queries if q.id == query_id).rows)
        assert all(a[g] != b[g] for g in a.keys() & b.keys())


# --------------------------------------------------------------------------------------------
# no true value in the files


def _truth_frame() -> pd.DataFrame:
    """1,237 rows: one row per person; 41 missing ages, 19 incomes above the bound."""
    rng = np.random.default_rng(4)
    n = 1237
    age = rng.integers(20, 80, n).astype(float)
    age[rng.choice(n, 41, replace=False)] = np.nan
    income = rng.uniform(1000, 90_000, n).round(2)
    income[rng.choice(n, 19, replace=False)] = 250_000.0
    return pd.DataFrame({"age": age, "income": income,
                         "region": rng.choice(["north", "south", "east"], n, p=[.5, .3, .2]),
                         "sex": rng.choice(["F", "M"], n)})


def _true_numbers(frame: pd.DataFrame) -> set[float]:
    """Every true aggregate and bookkeeping number of the plan below, from pandas."""
    income = frame["income"].clip(0, 100_000)
    age = frame["age"].dropna().clip(18, 90)
    truth = {len(frame), income.sum(), age.sum(), len(age), age.mean(),
             int(frame["age"].isna().sum()), int((frame["income"] > 100_000).sum())}
    truth |= set(frame["region"].value_counts().tolist())
    truth |= set(pd.crosstab(frame["region"], frame["sex"]).to_numpy().ravel().tolist())
    by_region = frame.assign(income=income).groupby("region")["income"]
    truth |= set(by_region.sum().tolist()) | set(by_region.count().tolist())
    by_sex = frame.assign(age=frame["age"].clip(18, 90)).groupby("sex")["age"]
    truth |= set(by_sex.sum().tolist()) | set(by_sex.count().tolist())
    truth |= set(by_sex.mean().tolist())
    return {float(v) for v in truth}


def _continuous_plan() -> Plan:
    """Continuous noise only: a true value would show up by chance with probability 0 (whole-
    number noise returns the true count with probability (1 − r)/(1 + r), which is the
    mechanism, not a leak)."""
    regions = cats("north", "south", "east")
    queries = (
        PlanQuery("rows", "Rows", Count(), Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("income", "Income", Sum("income", Bounds(0, 100_000)),
                  Noise("gaussian", "zcdp", rho=0.05, delta=1e-7)),
        PlanQuery("age", "Mean age", Mean("age", Bounds(18, 90)),
                  Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("region", "Regions", Histogram("region", regions),
                  Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("table", "Region by sex", Crosstab("region", "sex", regions, cats("F", "M")),
                  Noise("gaussian", "approx", epsilon=0.5, delta=1e-7)),
        PlanQuery("by-region", "Income by region",
                  GroupBy("region", "sum", "income", Bounds(0, 100_000), keys=regions),
                  Noise("clamped_laplace", "pure", epsilon=0.5, lower=0.0, upper=1e8)),
        PlanQuery("by-sex", "Mean age by sex",
                  GroupBy("sex", "mean", "age", Bounds(18, 90), keys=cats("F", "M")),
                  Noise("gaussian", "zcdp", rho=0.05, delta=1e-7)),
    )
    return Plan(Dataset("people"), queries, PrivacyUnit(), budget=Budget(epsilon=20.0))


def _numbers(value: object) -> list[float]:
    """Every number in a JSON value (strings that are numbers too)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    if isinstance(value, str):
        try:
            return [float(value)]
        except ValueError:
            return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v)]
    if isinstance(value, list):
        return [x for v in value for x in _numbers(v)]
    return []


def test_the_release_files_hold_no_true_value(tmp_path, engine):
    frame = _truth_frame()
    truth = _true_numbers(frame)
    plan = _continuous_plan()
    declared = set(_numbers(json.loads(plan.to_json())))
    assert not truth & declared  # so that a match below could only be a true value
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(frame), ledger=ledger, engine=engine)
    record = json.loads(release_json(release))
    rows = list(csv.reader(io.StringIO(release_csv(release).decode("utf-8-sig"))))
    card = release_card(release)
    in_json = _numbers(record) + _numbers(card)
    in_csv = [x for row in rows for x in _numbers(row)]
    # 17 released values, each with its interval's lower and upper ends and level
    assert len(in_csv) == 17 * 4 and len(in_json) > 100
    found = [x for x in in_json + in_csv if x in truth]
    assert found == []
    # the check finds a true value when one is there
    leaked = dict(record, extra={"rows_kept": len(frame)})
    assert [x for x in _numbers(leaked) if x in truth] == [float(len(frame))]


# --------------------------------------------------------------------------------------------
# refusals and the card


def test_over_budget_is_refused_before_the_data_is_read(tmp_path):
    engine = Engine(DuckDBBackend(threads=1))
    plan = _continuous_plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(OverBudget, match="nothing was drawn"):
            run(plan, FrameSource(_truth_frame()), ledger=ledger, budget=1.0, engine=engine)
        assert ledger.releases() == []
    assert engine.scans == 0
    tight = Plan(plan.dataset, plan.queries, budget=Budget(epsilon=2.0))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(OverBudget, match="plan's budget"):
            run(tight, FrameSource(_truth_frame()), ledger=ledger, engine=engine)


def test_a_release_refuses_on_the_plan_and_the_columns_only(tmp_path, engine):
    """A plan pinned to other data and a column the data lacks are refused (public: the
    plan and the file's columns); nothing is recorded."""
    frame = _truth_frame()
    pinned = Plan(Dataset("people", content_hash="sha256:" + "0" * 64),
                  _continuous_plan().queries)
    missing = Plan(Dataset("people"), (
        PlanQuery("s", "Sum", Sum("salary", Bounds(0, 1)), Noise("laplace", "pure",
                                                                  epsilon=1.0)),))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(DataMismatch, match="other data"):
            run(pinned, FrameSource(frame), ledger=ledger, engine=engine)
        with pytest.raises(DataMismatch, match="salary"):
            run(missing, FrameSource(frame), ledger=ledger, engine=engine)
        assert ledger.releases() == []


def test_values_outside_the_declared_categories_go_through_the_mechanism(tmp_path, engine):
    """What the data holds never refuses a release (a refusal would tell one bit of it for
    free): rows outside the declared categories are not counted, and the card says so."""
    frame = _truth_frame()   # regions north, south and east; only two declared
    undeclared = Plan(Dataset("people"), (
        PlanQuery("r", "Regions", Histogram("region", cats("north", "south")),
                  Noise("laplace", "pure", epsilon=1e6)),
        PlanQuery("t", "Regions by sex", Crosstab("region", "sex", cats("north"), cats("F")),
                  Noise("geometric", "pure", epsilon=1e6))))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(undeclared, FrameSource(frame), ledger=ledger, engine=engine)
        assert len(ledger.releases()) == 1
    regions = dict(release.queries[0].rows)
    truth = frame["region"].value_counts()
    assert regions[("north",)] == pytest.approx(truth["north"], abs=1e-3)
    assert regions[("south",)] == pytest.approx(truth["south"], abs=1e-3)
    both = ((frame["region"] == "north") & (frame["sex"] == "F")).sum()
    assert dict(release.queries[1].rows)[("north", "F")] == both
    rules = release_card(release)["data_handling"]
    assert any("not one of the declared categories" in rule["rule"] and rule["query"] == "r"
               for rule in rules)


def test_the_card_says_what_the_release_spent_and_what_it_does_not_cover(tmp_path, engine):
    plan = every_kind_plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(visits()), ledger=ledger, engine=engine)
    card = release_card(release)
    record = release_record(release)
    assert card["privacy_loss"]["epsilon"] == record["privacy_spent"]["epsilon"]
    assert card["privacy_unit"]["unit"] == "person"
    assert card["privacy_unit"]["max_rows_per_person"] == 3
    assert card["implementation"]["library"] == "OpenDP"
    assert card["implementation"]["version"] == "0.16.0"
    assert card["flavour"] == "approximate DP"
    flagged = [item for item in card["not_covered_by_the_guarantee"] if item["query"]]
    assert flagged == [{"query": "dx-cost", "what": "bounds of 'cost'",
                        "origin": "read from the data", "source": "the largest cost"}]
    assert any("true answers" in item["source"]
               for item in card["not_covered_by_the_guarantee"])
    per_query = {q["id"]: q for q in card["queries"]}
    assert set(per_query) == {q.id for q in plan.queries}
    assert per_query["dx-found"]["mechanisms"][0]["opendp"] == "make_laplace_threshold"
    epsilons = [m["privacy"].get("epsilon") for q in card["queries"] for m in q["mechanisms"]]
    assert all(e is None or 0 < e <= 1.0 + 1e-12 for e in epsilons)
    assert math.isfinite(card["privacy_loss"]["epsilon"])


@pytest.mark.parametrize("method", ["basic", "advanced", "zcdp", "pld"])
def test_a_pure_plan_is_recorded_and_carded_as_pure_dp(tmp_path, engine, method):
    """Every part ε-DP (Laplace, geometric, exponential-noise selection): the ledger, the
    files and the card say pure DP with δ = 0 whatever the accountant (it was recorded as
    (ε, 1e-6) under the tight accountants, and carded as approximate DP)."""
    plan = Plan(Dataset("people"), (
        PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("r", "Regions", Histogram("region", cats("north", "south", "east")),
                  Noise("geometric", "pure", epsilon=0.5))),
        accounting=Accounting(method, 0.0 if method == "basic" else 1e-6))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(_truth_frame()), ledger=ledger, engine=engine)
        entry = ledger.releases()[0]
    assert (entry.epsilon, entry.delta) == (1.5, 0.0)
    assert release_record(release)["privacy_spent"] == {"epsilon": 1.5, "delta": 0.0}
    assert release_card(release)["flavour"] == "pure DP"


# --------------------------------------------------------------------------------------------
# partition selection reads every key the data holds


def _many_keys(keys: int, seed: int = 3) -> pd.DataFrame:
    """Two rows per person, in one or two of ``keys`` keys (every key held by 4 people)."""
    rng = np.random.default_rng(seed)
    people = 4 * keys
    return pd.DataFrame({"pid": np.repeat(np.arange(people), 2),
                         "key": [f"key{(p // 4 + rng.integers(0, 2)) % keys:04d}"
                                 for p in np.repeat(np.arange(people), 2)],
                         "x": rng.integers(0, 10, 2 * people)})


def _found_plan() -> Plan:
    return Plan(Dataset("keys"), (
        PlanQuery("by-key", "Sum by key", GroupBy("key", "sum", "x", Bounds(0, 10)),
                  Noise("laplace", "pure", epsilon=1.0),
                  threshold=Threshold("discrete_laplace", 1e-7, epsilon=1.0)),),
        PrivacyUnit("pid", 2, 1))


def test_partition_selection_never_refuses_on_how_many_keys_the_data_holds(
        tmp_path, monkeypatch, engine):
    """How many distinct keys the data holds is not public: a refusal above a cap would
    disclose it. With the old cap lowered to 10, 60 keys are released all the same."""
    import importlib

    build = importlib.import_module("plan.build")  # the module (plan.build is its function)
    monkeypatch.setattr(build, "MAX_GROUPS_FOUND", 10, raising=False)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(_found_plan(), FrameSource(_many_keys(60)), ledger=ledger, engine=engine)
        assert len(ledger.releases()) == 1
    assert {g for g, _ in release.queries[0].rows} <= {(f"key{i:04d}",) for i in range(60)}


def test_the_threshold_is_drawn_over_chunks_of_keys(tmp_path, monkeypatch, engine):
    """The threshold measurement is invoked on at most THRESHOLD_CHUNK keys at a time (its
    noise is independent per key: chunks change the memory of a draw, not its law), and
    every key with a count reaches it once."""
    import importlib

    from release.measurements import Certified

    kinds = importlib.import_module("plan.kinds.base")   # where a release draws thresholds
    monkeypatch.setattr(kinds, "THRESHOLD_CHUNK", 7)
    seen: list[dict] = []
    draw = Certified.draw

    def spy(self, value):
        if isinstance(value, dict):
            seen.append(value)
        return draw(self, value)

    monkeypatch.setattr(Certified, "draw", spy)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(_found_plan(), FrameSource(_many_keys(30)), ledger=ledger, engine=engine)
    assert [len(chunk) for chunk in seen] == [7, 7, 7, 7, 2]
    keys = [k for chunk in seen for k in chunk]
    assert sorted(keys) == [f"key{i:04d}" for i in range(30)]


def test_partition_selection_keys_infinite_numbers_instead_of_failing(tmp_path, engine):
    """A key column holding ±inf goes through by a rule on the value, not a failure that
    would say what the data holds: every key is its canonical key (``engine.cells`` rule 5,
    ``DistinctValues``), so ±inf are the groups "inf" and "-inf", as in the same table's
    CSV, and NaN is missing (no group)."""
    frame = pd.DataFrame({"pid": np.arange(300),
                          "key": np.tile([1.5, np.inf, -np.inf, 2.5, np.nan], 60),
                          "x": 1})
    plan = Plan(Dataset("inf"), (
        PlanQuery("g", "Count by key", GroupBy("key"), None,
                  threshold=Threshold("discrete_laplace", 1e-7, epsilon=1.0)),),
        PrivacyUnit("pid", 1, 1))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(frame), ledger=ledger, engine=engine)
    # the keys the threshold is drawn over: ±inf among them (7c28550 left them out)
    found = engine.answer(FrameSource(frame), DistinctValues("key", limit=None)).values
    assert sorted(found) == ["-inf", "1.5", "2.5", "inf"]
    # each key is 60 people's (one row each); the threshold for delta 1e-7 at epsilon 1 is
    # about 17, with noise of scale 1: every group is kept but with probability ~e^-40
    assert {g for g, _ in release.queries[0].rows} == {("1.5",), ("2.5",), ("inf",), ("-inf",)}


def test_a_draw_that_fails_after_noise_was_drawn_is_charged_and_publishes_nothing(
        tmp_path, engine, monkeypatch):
    """OpenDP raising in the second query's draw (as its pure-DP AIM can, depending on what
    it drew): the first query's noise was drawn from the data, so the release's budget is
    recorded as spent, with no values; a retry then meets the budget as spent."""
    release_run = importlib.import_module("release.run")
    from release import DrawFailed
    from release.ledger import FAILED_DRAW

    real_draw = release_run._draw_query
    calls = []

    def failing(built, *args):
        calls.append(built.query.id)
        if len(calls) == 2:
            raise RuntimeError("OpenDP raised\n  MakeMeasurement(\"scale (-0.5) ...\")\n\")")
        return real_draw(built, *args)

    monkeypatch.setattr(release_run, "_draw_query", failing)
    plan = _continuous_plan()
    assert len(plan.queries) >= 2
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(DrawFailed, match=r"scale \(-0\.5\).*recorded as spent.*nothing "
                                             "was published"):
            run(plan, FrameSource(_truth_frame()), ledger=ledger, budget=100.0, engine=engine)
        records = ledger.releases()
        assert [r.values_hash for r in records] == [FAILED_DRAW]
        spent = prepare_spent(plan)
        assert records[0].epsilon == spent.epsilon and records[0].delta == spent.delta
        assert ledger.verify() == []
        status = ledger.status(records[0].dataset)
        assert status.remaining_epsilon == pytest.approx(100.0 - spent.epsilon)


def test_every_read_happens_before_the_first_draw(tmp_path, engine, monkeypatch):
    """The engine failing on the last query's read (a file that does not fit the plan)
    refuses before any noise is drawn: nothing is recorded."""
    release_run = importlib.import_module("release.run")
    from engine.errors import EngineError

    real = release_run._aggregates
    drawn = []
    monkeypatch.setattr(release_run, "_draw_query", lambda *a: drawn.append(a))

    def reads(built, *args):
        if built.query.id == plan.queries[-1].id:
            raise EngineError("the file does not fit")
        return real(built, *args)

    monkeypatch.setattr(release_run, "_aggregates", reads)
    plan = _continuous_plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(EngineError, match="does not fit"):
            run(plan, FrameSource(_truth_frame()), ledger=ledger, budget=100.0, engine=engine)
        assert ledger.releases() == []
    assert drawn == []


def prepare_spent(plan):
    from release import prepare

    return prepare(plan).spent


def test_a_failure_between_the_draws_and_the_record_is_charged(tmp_path, engine, monkeypatch):
    """Anything that raises once noise was drawn and before the release is recorded (here a
    released value the canonical JSON of the values hash refuses: NaN) is a failed draw: the
    budget is recorded as spent, nothing is published."""
    from dataclasses import replace

    release_run = importlib.import_module("release.run")
    from release import DrawFailed
    from release.ledger import FAILED_DRAW

    real_draw = release_run._draw_query

    def nan_values(*args):
        drawn = real_draw(*args)
        return replace(drawn, rows=tuple((group, math.nan) for group, _ in drawn.rows))

    monkeypatch.setattr(release_run, "_draw_query", nan_values)
    plan = _continuous_plan()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(DrawFailed, match="recorded as spent"):
            run(plan, FrameSource(_truth_frame()), ledger=ledger, budget=100.0, engine=engine)
        assert [r.values_hash for r in ledger.releases()] == [FAILED_DRAW]


def test_a_failed_draw_the_ledger_cannot_record_says_what_to_count_by_hand(
        tmp_path, engine, monkeypatch):
    release_run = importlib.import_module("release.run")
    from release import LedgerError

    def failing(*args):
        raise RuntimeError("OpenDP raised")

    def unwritable(self, *args, **kwargs):
        raise LedgerError("the ledger is locked")

    monkeypatch.setattr(release_run, "_draw_query", failing)
    plan = _continuous_plan()
    spent = prepare_spent(plan)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        monkeypatch.setattr(Ledger, "record_release", unwritable)
        with pytest.raises(LedgerError, match=rf"could not record its spend \(the ledger is "
                                              rf"locked\): ε = {spent.epsilon:.6g}.*by hand"):
            run(plan, FrameSource(_truth_frame()), ledger=ledger, budget=100.0, engine=engine)
