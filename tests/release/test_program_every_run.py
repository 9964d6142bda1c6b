"""A downloaded program is a new release each time it runs (issue 21, item 16): its header
and the line it prints when it starts say so, with the ε (δ, ρ) it spends every run, and
that it is not recorded in Epsilon Lab's ledger."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pandas as pd
import pytest

from dpcore.safe_rounding import upper
from plan.model import (
    Accounting,
    Bounds,
    Count,
    Dataset,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
    Sum,
)
from release.programs import opendp_program, spark_program
from release.run import prepare

LEAD = ("This program makes a new differentially private release of these data each time it "
        "runs; it spends ")
TAIL = " every run and is not recorded in Epsilon Lab's ledger."


def pure_plan() -> Plan:
    """ε = 0.5 + 0.25 = 0.75 under basic composition, δ = 0."""
    return Plan(Dataset("tiny"), (
        PlanQuery("n", "n", Count(), Noise("laplace", "pure", epsilon=0.5)),
        PlanQuery("s", "s", Sum("x", Bounds(0, 10, "public")),
                  Noise("laplace", "pure", epsilon=0.25)),
    ), PrivacyUnit(), Accounting("basic"))


def _header(text: str) -> str:
    return " ".join(ast.get_docstring(ast.parse(text)).split())


def _every_run(text: str) -> str:
    [value] = [ast.literal_eval(node.value) for node in ast.parse(text).body
               if isinstance(node, ast.Assign) and node.targets[0].id == "EVERY_RUN"]
    return value


@pytest.mark.slow
def test_the_opendp_program_says_each_run_is_a_new_release_and_what_it_spends(tmp_path):
    text = opendp_program(pure_plan())
    said = LEAD + "ε = 0.75 (δ = 0)" + TAIL
    assert said.removesuffix(".") in _header(text)
    assert _every_run(text) == said
    (tmp_path / "program.py").write_text(text, encoding="utf-8")
    pd.DataFrame({"x": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "data.csv", index=False)
    done = subprocess.run([sys.executable, "program.py", "--data", "data.csv"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[0] == said        # the first thing it says
    assert json.loads(done.stdout)["privacy_spent"] == {"epsilon": 0.75, "delta": 0.0}


def test_a_zcdp_plans_program_names_its_rho_and_the_delta_it_is_read_at():
    plan = Plan(Dataset("tiny"), (
        PlanQuery("n", "n", Count(), Noise("gaussian", "zcdp", rho=0.125)),
    ), PrivacyUnit(), Accounting("zcdp", 1e-6))
    said = _every_run(opendp_program(plan))
    # the ε of ρ = 1/8 at δ = 1e-6 is the accountant's (tested in tests/dpcore), rounded up
    epsilon = prepare(plan).spent.epsilon
    assert 2.0 < epsilon < 2.76     # below ρ + 2√(ρ·ln(1/δ)) = 2.7533, the loose conversion
    assert said == LEAD + f"ε = {upper(epsilon, 4)} (δ = 1e-06; ρ = 0.125)" + TAIL


def test_the_spark_program_says_it_too():
    text = spark_program(pure_plan())
    said = LEAD + "ε = 0.75 (δ = 0)" + TAIL
    assert said.removesuffix(".") in _header(text)
    assert _every_run(text) == said
    main = next(node for node in ast.parse(text).body
                if isinstance(node, ast.FunctionDef) and node.name == "main")
    assert "print(EVERY_RUN, file=sys.stderr)" in ast.unparse(main)
