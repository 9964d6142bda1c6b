"""A synthetic table released for real: the privacy OpenDP certifies for its mbi measurement is
what the ledger records; the released rows hold the declared columns, only declared cells (or
the missing-or-other cell) and the requested number of rows; python -m release writes them
as a CSV (and the package holds it); refusals on the plan alone, before any data is read."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import numpy as np
import pandas as pd
import pytest

from engine import Engine, FrameSource
from engine.duckdb_backend import DuckDBBackend
from plan.kinds.synthetic import KIND, OTHER, Synthetic, SyntheticColumn, synthetic_rows
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
from plan.parts import Loss, Part
from release import DataMismatch, Ledger, prepare, run
from release.cli import main
from release.files import microdata_files

PERSON = "pid"
#: a column name a spreadsheet would run as a formula, with quotes and SQL in it
HOSTILE = '=HYPERLINK("x")\'; DROP TABLE t; --'
COLOURS = ("red", "blue")
EDGES = (0.0, 5.0, 10.0)
ROWS = 40


def people(seed: int = 0, rows: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({PERSON: rng.integers(0, rows // 2, rows),
                         HOSTILE: rng.choice(["red", "blue", "green"], rows),
                         "x": rng.uniform(-2.0, 12.0, rows)})


def synthetic_plan(*, measure: str = "pure", columns: tuple[str, str] = (HOSTILE, "x"),
                   max_rows: int = 2) -> Plan:
    budget = {"epsilon": 1.0} if measure == "pure" else {"rho": 0.5}
    spec = Synthetic((SyntheticColumn(columns[0], Categories(COLOURS, "public", "test")),
                      SyntheticColumn(columns[1], edges=Grid(EDGES, "public", "test"))),
                     "MST", ROWS, measure, marginals="one-way", iters=30, **budget)
    return Plan(Dataset("people"), (PlanQuery("syn", "Synthetic people", spec, None),),
                PrivacyUnit(PERSON, max_rows, None),
                Accounting("basic") if measure == "pure" else Accounting("zcdp", 1e-6))


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine(DuckDBBackend(threads=1))


@pytest.fixture(scope="module")
def released(tmp_path_factory, engine):
    """One release of the synthetic plan, with its ledger's record."""
    path = tmp_path_factory.mktemp("ledger") / "ledger.sqlite"
    with Ledger(path) as ledger:
        release = run(synthetic_plan(), FrameSource(people()), ledger=ledger, engine=engine)
        records = ledger.releases()
    return release, records


def test_drawn_codes_become_labelled_rows_and_records():
    spec = synthetic_plan().queries[0].query
    rows = synthetic_rows(spec, np.array([[0, 1], [2, 0], [0, 1]]))
    assert rows == ((("red", "[5, 10)"), 2), ((OTHER, "[0, 5)"), 1))
    header, records = KIND.microdata(spec, rows)
    assert header == (HOSTILE, "x")
    assert sorted(records.tolist()) == [[OTHER, "[0, 5)"], ["red", "[5, 10)"],
                                        ["red", "[5, 10)"]]
    assert KIND.microdata(spec, ())[1].shape == (0, 2)


def test_the_records_are_written_shuffled_the_same_way_each_time():
    """Issue 34: the released rows (distinct rows, sorted, with counts) are written in a
    shuffled order, not grouped (a head of the file would be one row); the order is a function
    of the released rows only, so the package's file and the CLI's are the same bytes."""
    spec = synthetic_plan().queries[0].query
    codes = np.repeat(np.array([[0, 0], [1, 1], [2, 0]]), [100, 100, 100], axis=0)
    rows = synthetic_rows(spec, codes)
    records = KIND.microdata(spec, rows)[1]
    assert records.tolist() == KIND.microdata(spec, rows)[1].tolist()
    assert sorted(map(tuple, records.tolist())) == sorted(
        g for g, n in rows for _ in range(n))
    # grouped, the 300 records change value twice; shuffled, about 200 times (each next record
    # differs with probability 2/3): at most 100 changes has probability below 10⁻²⁰
    changes = np.count_nonzero(np.any(records[1:] != records[:-1], axis=1))
    assert changes > 100


def test_the_plan_round_trips_through_json():
    plan = synthetic_plan()
    assert Plan.from_json(plan.to_json()).to_json() == plan.to_json()


@pytest.mark.slow
def test_the_ledger_records_the_privacy_opendp_certifies(released):
    release, (record,) = released
    (certified,) = prepare(release.plan).certified[0]
    # OpenDP's own map of the very measurement, read at the unit's 2 rows per person
    epsilon = float(certified.measurement.map(2))
    assert certified.d_in == 2 and 0 < epsilon <= 1.0
    assert record.epsilon == epsilon and record.delta == 0.0
    assert release.queries[0].parts[0]["certified"] == {"epsilon": epsilon, "delta": 0.0}


def test_under_zcdp_the_certified_rho_is_what_the_plan_composes():
    """Built from the plan alone (no data): OpenDP's ρ at the unit's distance, within the
    plan's, is the part's loss."""
    prepared = prepare(synthetic_plan(measure="zcdp"))
    (certified,) = prepared.certified[0]
    rho = float(certified.measurement.map(2))
    assert 0 < rho <= 0.5 and certified.certified.rho == rho
    assert prepared.spent.rho == rho


@pytest.mark.slow
def test_the_released_rows_hold_the_declared_cells_and_the_requested_count(released):
    release, _ = released
    (query,) = release.queries
    labels = [group for group, _ in query.rows]
    assert {g[0] for g in labels} <= {*COLOURS, OTHER}
    assert {g[1] for g in labels} <= {"[0, 5)", "[5, 10)", OTHER}
    assert sum(count for _, count in query.rows) == ROWS
    (name, data), = microdata_files(release).items()
    assert name == "rows-syn.csv"
    table = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    assert table[0] == ["'" + HOSTILE, "x"]   # the formula escaped, the name kept
    assert len(table) == 1 + ROWS
    assert sorted(map(tuple, table[1:])) == sorted(
        g for g, n in query.rows for _ in range(n))


@pytest.mark.slow
def test_neighbouring_datasets_do_not_change_the_accounting(tmp_path, engine):
    frame = people(1)
    without = frame[frame[PERSON] != frame[PERSON].iloc[0]]
    spent = []
    for i, data in enumerate((frame, without)):
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            run(synthetic_plan(), FrameSource(data), ledger=ledger, engine=engine)
            spent.append((ledger.releases()[0].epsilon, ledger.releases()[0].delta))
    assert spent[0] == spent[1]


@pytest.mark.slow
def test_an_empty_table_and_an_empty_column_are_released_not_refused(tmp_path, engine):
    """What the data holds never refuses a release: no rows at all, or a column with no
    value, go through the mechanism (the empty column's rows in its missing-or-other cell)."""
    empty_column = people(3)
    empty_column[HOSTILE] = None
    for i, data in enumerate((people(3).iloc[:0], empty_column)):
        with Ledger(tmp_path / f"{i}.sqlite") as ledger:
            release = run(synthetic_plan(), FrameSource(data), ledger=ledger, engine=engine)
            assert len(ledger.releases()) == 1
        assert sum(count for _, count in release.queries[0].rows) == ROWS


def test_too_many_iterations_are_refused_by_the_plan():
    spec = synthetic_plan().queries[0].query
    with pytest.raises(PlanError, match="iters: must be at most 10,000"):
        Synthetic(spec.columns, "MST", ROWS, "pure", epsilon=1.0, iters=10_001).check("q")


def test_an_unknown_column_is_refused_before_anything_is_drawn(tmp_path, engine):
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(DataMismatch, match="nope"):
            run(synthetic_plan(columns=(HOSTILE, "nope")), FrameSource(people()),
                ledger=ledger, engine=engine)
        assert ledger.releases() == []


def test_a_column_with_ten_thousand_categories_is_refused_by_name_from_the_plan():
    many = Categories(tuple(f"c{i}" for i in range(10_000)), "public", "test")
    spec = Synthetic((SyntheticColumn("wide", many), SyntheticColumn("x", edges=Grid(
        EDGES, "public"))), "MST", ROWS, "pure", epsilon=1.0)
    with pytest.raises(PlanError, match="'wide' has 10,000 categories"):
        Plan(Dataset("people"), (PlanQuery("syn", "Synthetic", spec, None),))


def test_the_person_column_is_no_column_of_the_table():
    with pytest.raises(PlanError, match="person-id column"):
        prepare(synthetic_plan(columns=(HOSTILE, PERSON)))


@pytest.mark.slow
def test_python_m_release_writes_the_rows_and_the_package_holds_them(tmp_path, capsys):
    plan, data = tmp_path / "plan.json", tmp_path / "people.csv"
    plan.write_text(synthetic_plan().to_json())
    people(2).to_csv(data, index=False)
    out, package = tmp_path / "out", tmp_path / "release.zip"
    assert main(["--plan", str(plan), "--data", str(data), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(out), "--budget", "5",
                 "--package", str(package)]) == 0
    rows = (out / "rows-syn.csv").read_bytes()
    assert len(rows.decode("utf-8-sig").strip().splitlines()) == 1 + ROWS
    card = json.loads((out / "card.json").read_text())
    (mechanism,) = card["queries"][0]["mechanisms"]
    assert mechanism["mechanism"].startswith("marginal-based synthesis (MST")
    assert card["privacy_loss"]["epsilon"] == mechanism["privacy"]["epsilon"]
    with zipfile.ZipFile(package) as zipped:
        assert zipped.read("rows-syn.csv") == rows
        assert "synthetic" in zipped.read("program-unavailable.txt").decode()


@pytest.mark.slow
def test_a_plan_of_one_synthetic_table_is_certified_in_a_fresh_interpreter():
    """OpenDP is imported lazily (its contrib features on at first use): a release whose only
    query is a synthetic table must turn them on too, not count on another part having done so
    earlier in the process (this test process has: the check runs in a fresh interpreter)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = ("from tests.release.test_synthetic_release import synthetic_plan\n"
            "from release import prepare\n"
            "(c,) = prepare(synthetic_plan(max_rows=3)).certified[0]\n"
            "assert c.d_in == 3 and 0 < c.certified.epsilon <= 1.0\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.slow   # three real fits
def test_the_measurement_is_built_once_and_draws_afresh_each_release(tmp_path, engine):
    """OpenDP's mbi measurement is cached by the plan's public spec (building it takes
    seconds, and the plan page asks on every rerun); each release invokes it again, with
    fresh noise and a fresh sample of rows."""
    from release.synthesis import _measurement

    frame = people(4)
    draws = []
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(synthetic_plan(), FrameSource(frame), ledger=ledger, engine=engine)
        hits = _measurement.cache_info().hits
        for _ in range(2):
            release = run(synthetic_plan(), FrameSource(frame), ledger=ledger, engine=engine)
            draws.append(tuple(release.queries[0].rows))
        assert len(ledger.releases()) == 3
    assert _measurement.cache_info().hits >= hits + 2
    assert len(set(draws)) > 1


def test_a_plan_opendp_refuses_is_refused_by_name_and_its_refusal_is_cached():
    """OpenDP refusing a synthetic table's measurement (from the plan alone: here a budget of
    1e-300, whose noise scale overflows) refuses the release with OpenDP's words; the refusal
    is cached like a certificate, so the plan page does not rebuild it on every rerun."""
    from plan.kinds.synthetic import MarginalSynthesis
    from release import Unsupported
    from release.synthesis import _measurement, certify_synthesis

    spec = MarginalSynthesis("MST", "auto", (3, 3), "pure", 1e-300, 1, 10, 10)
    part = Part("synthetic table", spec, 1.0, Loss(epsilon=1e-300), integer=True)
    misses = _measurement.cache_info().misses
    for _ in range(2):
        with pytest.raises(Unsupported, match=r"query 'syn' \(synthetic table\): OpenDP's mbi "
                                              r"refused it: .*not finite"):
            certify_synthesis("syn", part)
    assert _measurement.cache_info().misses == misses + 1
