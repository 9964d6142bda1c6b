"""python -m release: the example plan, a release on Adult with its three files and its ledger
entry, the total ε equal to dpcore.accounting's for the plan (and to a closed form), two runs
that differ, refusals that exit non-zero with a message, and files with no true value."""

from __future__ import annotations

import csv
import io
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from dpcore.accounting import account
from dpcore.measures import ZCDP, PureDP
from plan.examples import ADULT_PATH
from plan.identity import file_hash
from plan.model import Plan
from release import Ledger, prepare
from release.cli import BAD_DATA, BAD_PLAN, DRAW_FAILED, REFUSED, main
from tests.dpcore.test_accounting import gaussian_epsilon
from tests.release.test_release_accounting import cks_epsilon
from tests.release.test_release_run import _numbers

REPO = Path(__file__).resolve().parents[2]
DATA = str(ADULT_PATH)


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "release", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def example_plan(tmp_path_factory) -> Path:
    done = cli("--example-plan")
    assert done.returncode == 0, done.stderr
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(done.stdout)
    return path


def release_values(out: Path) -> list[list[str]]:
    rows = list(csv.reader(io.StringIO((out / "release.csv").read_text("utf-8-sig"))))
    return [row[:5] for row in rows[1:]]


@pytest.mark.slow
def test_the_example_plan_is_a_valid_plan_for_adult(example_plan):
    plan = Plan.from_json(example_plan.read_bytes())
    assert plan.dataset.name == "adult"
    assert plan.dataset.content_hash == file_hash(ADULT_PATH)
    assert [q.id for q in plan.queries] == ["people", "education", "mean-age", "hours",
                                            "top-occupation"]
    prepared = prepare(plan)  # built and every OpenDP map checked
    assert prepared.spent.epsilon <= plan.budget.epsilon


@pytest.mark.slow
def test_a_release_on_adult_writes_its_files_and_is_recorded(example_plan, tmp_path):
    ledger, out = tmp_path / "ledger.sqlite", tmp_path / "out"
    done = cli("--plan", str(example_plan), "--data", DATA, "--ledger", str(ledger),
               "--out", str(out), "--budget", "10")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("released 'adult': 5 queries")
    record = json.loads((out / "release.json").read_text())
    card = json.loads((out / "card.json").read_text())
    spent = record["privacy_spent"]
    assert set(spent) == {"epsilon", "delta"} and spent["delta"] == 1e-6
    assert record["accounting"]["method"] == "basic"
    # never above dpcore.accounting's figure from the guarantees OpenDP certified (four pure
    # ε = 0.5, the mean's two halves, plus the Gaussian's ρ = Δ²/(2σ²), Δ = 99, converted at
    # δ = 1e-6 by Canonne, Kamath & Steinke) ...
    parts = [p for q in record["queries"] for p in q["parts"]]
    losses = [ZCDP(p["certified"]["rho"]) if "rho" in p["certified"]
              else PureDP(p["certified"]["epsilon"]) for p in parts]
    certificates = account(losses, delta=1e-6, accountant="basic").epsilon
    sigma = next(p["scale"] for p in parts if p["mechanism"] == "gaussian")
    assert certificates == pytest.approx(2.0 + cks_epsilon(99.0**2 / (2 * sigma**2), 1e-6),
                                         rel=1e-9)
    # ... and recorded as the closed form of the noises drawn: the pure 2.0 plus the Gaussian's
    # exact ε at δ = 1e-6 at OpenDP's scale (Balle & Wang), the 0.5 it was planned at
    closed = 2.0 + gaussian_epsilon(99.0 / sigma, 1e-6)
    assert closed <= spent["epsilon"] <= closed * (1 + 1e-9) < certificates
    assert spent["epsilon"] == pytest.approx(2.5, abs=1e-9)
    assert card["privacy_loss"]["epsilon"] == spent["epsilon"]
    assert len(release_values(out)) == 1 + 16 + 1 + 1 + 1
    with Ledger(ledger) as book:
        (entry,) = book.releases()
        status = book.status(entry.dataset)
    assert entry.epsilon == spent["epsilon"] and entry.delta == 1e-6
    assert status.budget.epsilon == 10.0 and record["values_sha256"] == entry.values_hash


@pytest.mark.slow
def test_two_runs_differ_and_a_run_over_budget_is_refused(example_plan, tmp_path, capsys):
    ledger = str(tmp_path / "ledger.sqlite")
    args = ["--plan", str(example_plan), "--data", DATA, "--ledger", ledger]
    assert main([*args, "--out", str(tmp_path / "a"), "--budget", "6"]) == 0
    assert main([*args, "--out", str(tmp_path / "b"), "--budget", "100"]) == 0  # set once
    first, second = release_values(tmp_path / "a"), release_values(tmp_path / "b")
    assert [r[:4] for r in first] == [r[:4] for r in second] and first != second
    # the mean (Laplace noise on floats) cannot repeat by chance
    assert first[17][4] != second[17][4]
    capsys.readouterr()
    assert main([*args, "--out", str(tmp_path / "c")]) == REFUSED
    err = capsys.readouterr().err
    assert err.startswith("refused: over budget:") and "left of 6" in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c").exists()
    with Ledger(ledger) as book:
        assert len(book.releases()) == 2 and book.verify() == []


def test_refusals_exit_non_zero_with_a_message(example_plan, tmp_path, capsys):
    ledger = str(tmp_path / "ledger.sqlite")
    out = str(tmp_path / "out")

    def refused(code: int, args: list[str], *words: str) -> None:
        assert main(args) == code
        err = capsys.readouterr().err
        assert all(w in err for w in words), err

    bad = json.loads(example_plan.read_text())
    bad["queries"][1]["mechanism"]["epsilon"] = -1
    bad_plan = tmp_path / "bad.json"
    bad_plan.write_text(json.dumps(bad))
    refused(BAD_PLAN, ["--plan", str(bad_plan), "--data", DATA, "--ledger", ledger,
                       "--out", out], "bad plan", "queries[1].mechanism.epsilon")
    refused(BAD_PLAN, ["--plan", str(tmp_path / "none.json"), "--data", DATA, "--ledger",
                       ledger, "--out", out], "bad plan", "cannot read")
    refused(BAD_DATA, ["--plan", str(example_plan), "--data", str(tmp_path / "none.csv"),
                       "--ledger", ledger, "--out", out], "unreadable data", "does not exist")
    refused(BAD_PLAN, ["--plan", str(example_plan)], "usage", "--data", "--out")
    other = tmp_path / "other.csv"
    pd.read_csv(ADULT_PATH, nrows=500).to_csv(other, index=False)
    refused(REFUSED, ["--plan", str(example_plan), "--data", str(other), "--ledger", ledger,
                      "--out", out], "refused", "content hash")
    refused(REFUSED, ["--plan", str(example_plan), "--data", DATA, "--ledger", ledger,
                      "--out", out, "--budget", "1"], "refused: over budget")
    assert not Path(out).exists()
    with Ledger(ledger) as book:
        assert book.releases() == [] and book.verify() == []


def adult_truth() -> set[float]:
    frame = pd.read_csv(ADULT_PATH)
    age, hours = frame["age"].clip(17, 90), frame["hours_per_week"].clip(1, 99)
    truth = {len(frame), age.sum(), age.count(), age.mean(), hours.sum(), hours.count()}
    truth |= set(frame["education"].value_counts().tolist())
    truth |= set(frame["occupation"].value_counts().tolist())
    return {float(v) for v in truth}


@pytest.mark.slow
def test_the_files_hold_no_true_value(example_plan, tmp_path, capsys):
    """The example plan with continuous noise everywhere (whole-number noise returns a true
    count with probability tanh(ε/4) at ε = 0.5, about 0.12: that is the mechanism, not a
    leak), checked against every true aggregate pandas computes."""
    plan = json.loads(example_plan.read_text())
    for query in plan["queries"]:
        if query["mechanism"].get("kind") == "geometric":
            query["mechanism"]["kind"] = "laplace"
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    truth = adult_truth()
    assert not truth & set(_numbers(plan))
    out = tmp_path / "out"
    assert main(["--plan", str(path), "--data", DATA, "--ledger",
                 str(tmp_path / "l.sqlite"), "--out", str(out)]) == 0
    found = []
    for name in ("release.json", "card.json"):
        found += [x for x in _numbers(json.loads((out / name).read_text())) if x in truth]
    in_csv = [x for row in release_values(out) for x in _numbers(row)]
    assert len(in_csv) == 19 and all(math.isfinite(x) for x in in_csv)
    assert found + [x for x in in_csv if x in truth] == []
    # the check would see one
    assert float(48842) in truth and float(pd.read_csv(ADULT_PATH)["age"].sum()) in truth


def test_a_failed_draw_exits_5_writes_nothing_and_is_charged(example_plan, tmp_path, capsys,
                                                              monkeypatch):
    """A draw that raises once noise was drawn (OpenDP failing inside a query): exit 5, one
    line saying the budget is spent, no files, the spend in the ledger."""
    import importlib

    from release.ledger import FAILED_DRAW

    release_run = importlib.import_module("release.run")

    def failing(*args):
        raise RuntimeError("OpenDP raised")

    monkeypatch.setattr(release_run, "_draw_query", failing)
    ledger = str(tmp_path / "ledger.sqlite")
    out = tmp_path / "out"
    assert main(["--plan", str(example_plan), "--data", DATA, "--ledger", ledger,
                 "--out", str(out), "--budget", "100"]) == DRAW_FAILED
    err = capsys.readouterr().err
    assert err.startswith("failed: the release failed while drawing its noise (RuntimeError: "
                          "OpenDP raised)") and "recorded as spent" in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()
    with Ledger(ledger) as book:
        (record,) = book.releases()
        assert record.values_hash == FAILED_DRAW and book.verify() == []
        assert record.epsilon == prepare(Plan.from_json(example_plan.read_text())).spent.epsilon
        assert book.file_names() == {}   # no files kept either (issue 32 item 4)
    assert main(["fetch", str(record.id), "--ledger", ledger, "--out", str(out)]) == BAD_PLAN
    assert "the draw failed" in capsys.readouterr().err and not out.exists()


def test_a_budget_lowered_below_what_was_spent_is_refused_as_over_budget_by(tmp_path, capsys):
    """Issue 31 item 8: after a release of ε = 1, a budget lowered to 0.5 made the command
    line say "has ε = 0 left of 0.5"; it is over budget by 1 − 0.5 = 0.5."""
    from plan.model import Count, Dataset, Noise, PlanQuery, PrivacyUnit

    data = tmp_path / "people.csv"
    data.write_text("x\n" + "\n".join(str(i) for i in range(50)) + "\n")
    plan = tmp_path / "plan.json"
    plan.write_text(Plan(Dataset("people"), (PlanQuery("n", "People", Count(),
                                                       Noise("laplace", "pure", epsilon=1.0)),),
                         PrivacyUnit()).to_json())
    ledger = tmp_path / "ledger.sqlite"
    args = ["--plan", str(plan), "--data", str(data), "--ledger", str(ledger)]
    assert main([*args, "--out", str(tmp_path / "a"), "--budget", "5"]) == 0
    assert "ε = 4 left of 5" in capsys.readouterr().out
    with Ledger(ledger) as book:
        [status] = book.datasets()
        book.set_budget(status.dataset, 0.5, reason="the owner asked to stop")
    assert main([*args, "--out", str(tmp_path / "b")]) == REFUSED
    err = capsys.readouterr().err
    assert "is over budget by ε = 0.5 (its budget is 0.5)" in err and "0 left" not in err
