"""Plans and data shared by the plan and release tests: a plan with every query kind, a
small person-level table whose true aggregates are known, and an exported program loaded."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd

from plan.model import (
    Accounting,
    Bounds,
    Categories,
    Count,
    Crosstab,
    Dataset,
    Grid,
    GroupBy,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Quantiles,
    Selection,
    SelectionNoise,
    Sum,
    Target,
    Threshold,
)

DIAGNOSES = ("A", "B", "C", "D", "E", "rare")


def cats(*values: object, origin: str = "public") -> Categories:
    return Categories(tuple(values), origin, "test declaration")  # type: ignore[arg-type]


def load_program(text: str, name: str, folder: Path) -> ModuleType:
    """An exported program's text as a module: written to ``folder/name.py`` and imported
    (its ``main`` not run)."""
    path = folder / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def every_kind_plan(*, dataset: str = "visits", content_hash: str | None = None) -> Plan:
    """One query of every kind and every mechanism family, person-level (3 rows, 2 groups)."""
    queries = (
        PlanQuery("n", "Visits", Count(), Noise("laplace", "pure", epsilon=1.0),
                  page="statistics", target=Target("error", alpha=10.0, beta=0.05)),
        PlanQuery("cost", "Total cost", Sum("cost", Bounds(0, 500, "typed", "tariff")),
                  Noise("clamped_laplace", "pure", epsilon=1.0, lower=0.0, upper=1e7)),
        PlanQuery("age", "Mean age", Mean("age", Bounds(18, 90, "public"), sum_share=0.7),
                  Noise("geometric", "pure", epsilon=1.0)),
        PlanQuery("dx", "By diagnosis", Histogram("dx", cats(*DIAGNOSES)),
                  Noise("geometric", "pure", epsilon=1.0), page="tables"),
        PlanQuery("ages", "Age bands", Histogram("age", edges=Grid((18.0, 40.0, 65.0, 90.0),
                                                                   "public")),
                  Noise("gaussian", "zcdp", rho=0.5, delta=1e-7)),
        PlanQuery("dx-sex", "Diagnosis by sex",
                  Crosstab("dx", "sex", cats(*DIAGNOSES), cats("F", "M")),
                  Noise("gaussian", "approx", epsilon=1.0, delta=1e-7), page="tables"),
        PlanQuery("dx-found", "Visits by diagnosis (found privately)", GroupBy("dx"), None,
                  page="groups", threshold=Threshold("discrete_laplace", 1e-7, epsilon=1.0)),
        PlanQuery("dx-cost", "Cost by diagnosis",
                  GroupBy("dx", "sum", "cost", Bounds(0, 500, "data", "the largest cost")),
                  Noise("laplace", "pure", epsilon=1.0), page="groups",
                  threshold=Threshold("discrete_laplace", 1e-7, epsilon=1.0)),
        PlanQuery("sex-age", "Mean age by sex",
                  GroupBy("sex", "mean", "age", Bounds(18, 90, "public"), keys=cats("F", "M")),
                  Noise("laplace", "pure", epsilon=1.0), page="groups"),
        PlanQuery("age-q", "Age quartiles",
                  Quantiles("age", (0.25, 0.5, 0.75),
                            Grid(tuple(float(v) for v in range(10, 100, 5)), "public")),
                  SelectionNoise("exponential", "pure", epsilon=1.5), page="quantiles",
                  target=Target("rank", alpha=30.0, beta=0.1)),
        PlanQuery("top-dx", "Two most frequent diagnoses",
                  Selection("dx", cats(*DIAGNOSES), k=2),
                  SelectionNoise("exponential", "pure", epsilon=1.0), page="selection",
                  target=Target("selection", probability=0.8)),
    )
    return Plan(Dataset(dataset, "test", content_hash), queries, PrivacyUnit("pid", 3, 2),
                Accounting("basic"))


def visits(rows: int = 3000, seed: int = 0) -> pd.DataFrame:
    """A small person-level table: pid, age, cost, dx, sex."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "pid": rng.integers(0, 800, rows),
        "age": rng.integers(18, 90, rows),
        "cost": rng.gamma(2.0, 50.0, rows),
        "dx": rng.choice(DIAGNOSES, rows, p=[0.3, 0.3, 0.2, 0.1, 0.099, 0.001]),
        "sex": rng.choice(["F", "M"], rows),
    })


#: The concurrency test's plan spends exactly this ε (OpenDP's Laplace map at scale 4 reads
#: 1/4 exactly), so a budget of 5 × RACE_EPSILON = 1.25 fits five releases exactly.
RACE_EPSILON = 0.25


def race_plan() -> Plan:
    return Plan(Dataset("race"), (PlanQuery("n", "Rows", Count(),
                                            Noise("laplace", "pure", epsilon=RACE_EPSILON)),),
                PrivacyUnit())


def race_worker(ledger_path: str, data_path: str, barrier, results, pause: float = 0.2
                ) -> None:
    """One process of the concurrency test: everything imported and the plan built, then all
    released at once (the barrier); puts "recorded", "refused" or the error's text.

    ``pause`` widens the window between the ledger reading what was spent and recording the
    release (a sleep before the budget check), so that a check and a record not held in one
    transaction would overlap between processes.
    """
    import time

    from release import ledger as ledger_module

    check = ledger_module._check_budget

    def slow_check(*args, **kwargs):
        time.sleep(pause)
        return check(*args, **kwargs)

    ledger_module._check_budget = slow_check
    from engine import Engine
    from engine.duckdb_backend import DuckDBBackend
    from engine.sources import FileSource
    from release import Ledger, OverBudget, run

    plan, source = race_plan(), FileSource(data_path, "csv")
    engine = Engine(DuckDBBackend(threads=1))
    with Ledger(ledger_path) as ledger:
        barrier.wait(timeout=60)
        try:
            run(plan, source, ledger=ledger, engine=engine)
            results.put("recorded")
        except OverBudget:
            results.put("refused")
        except Exception as exc:  # reported to the parent, which fails the test
            results.put(f"{type(exc).__name__}: {exc}")


def capture_draws(monkeypatch) -> list:
    """Every draw's true input, in order: ``Certified.draw`` replaced by a recorder that
    returns its input without noise (the release then publishes the true answers)."""
    from release.measurements import Certified

    drawn: list = []

    def record(self, value):  # the true input of every draw, returned without noise
        drawn.append(value)
        return value

    monkeypatch.setattr(Certified, "draw", record)
    return drawn


def release_and_cli_sums(plan, path: Path, tmp_path: Path, monkeypatch) -> list[float]:
    """The sum of every draw's true input when ``plan`` is released on the CSV ``path`` by
    ``release.run`` (DuckDB) and then by ``python -m release`` (``release.cli.main``, exit 0
    asserted), in order: the two paths' readings of the file, side by side."""
    from engine import Engine, FileSource
    from engine.duckdb_backend import DuckDBBackend
    from release import Ledger, run
    from release.cli import main

    drawn = capture_draws(monkeypatch)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        run(plan, FileSource(path, "csv"), ledger=ledger, engine=Engine(DuckDBBackend()))
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan.to_json())
    assert main(["--plan", str(plan_path), "--data", str(path), "--ledger",
                 str(tmp_path / "cli.sqlite"), "--out", str(tmp_path / "out"),
                 "--budget", "10"]) == 0
    return [float(np.asarray(v).sum()) for v in drawn]


def count_and_sum_plan(name: str) -> Plan:
    """A plan of a row count and the sum of ``amount`` clamped to [0, 100] (public bounds),
    each Laplace at ε = 1: what the one-reading tests release from a CSV of ``pid`` rows
    (their true inputs: the rows read and the amounts' total)."""
    return Plan(Dataset(name), (
        PlanQuery("n", "Rows", Count(), Noise("laplace", "pure", epsilon=1.0)),
        PlanQuery("amount", "Total amount", Sum("amount", Bounds(0, 100, "public")),
                  Noise("laplace", "pure", epsilon=1.0)),
    ))
