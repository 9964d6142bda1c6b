"""The command line and the dataset declarations (issue 32, item 1): a release records the
data's names under its content identity and prints one line saying which schema and unit
versions are on record for it, or none."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

from plan.identity import content_digest
from plan.model import Count, Dataset, Noise, Plan, PlanQuery, PrivacyUnit
from release.cli import main
from release.declarations import DeclarationStore


def people(tmp_path):
    data = tmp_path / "people.csv"
    data.write_text("pid,x\n" + "\n".join(f"{i // 2},{i}" for i in range(60)) + "\n")
    plan = tmp_path / "plan.json"
    plan.write_text(Plan(Dataset("people survey"), (PlanQuery(
        "n", "People", Count(), Noise("laplace", "pure", epsilon=1.0)),),
        PrivacyUnit()).to_json())
    return ["--plan", str(plan), "--data", str(data), "--ledger",
            str(tmp_path / "ledger.sqlite"), "--budget", "10"], data


def declarations_line(out: str) -> str:
    (line,) = [x for x in out.splitlines() if x.startswith("declarations:")]
    return line


def test_a_release_records_the_datas_names_and_says_none_are_on_record(tmp_path, capsys):
    args, data = people(tmp_path)
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    out = capsys.readouterr().out
    dataset = content_digest(data)
    line = declarations_line(out)
    assert line.startswith(f"declarations: none on record for this data ({dataset[:19]}…)")
    store = DeclarationStore()   # EPSILON_LAB_DECLARATIONS (each test has its own)
    assert str(store.path) in line
    assert store.find("people.csv") == [dataset] == store.find("people survey")
    assert store.latest(dataset).empty


def test_a_release_says_which_versions_are_on_record(tmp_path, capsys):
    args, data = people(tmp_path)
    dataset = content_digest(data)
    store = DeclarationStore()
    store.declare(dataset, schema=json.dumps({"columns": {"x": {"role": "numeric", "lower": 0,
                                                                  "upper": 100}}}))
    store.declare(dataset, schema=json.dumps({"columns": {"x": {"role": "numeric", "lower": 0,
                                                                  "upper": 60}}}),
                  unit=PrivacyUnit("pid", 2))
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    today = datetime.now(UTC).date().isoformat()
    line = declarations_line(capsys.readouterr().out)
    assert line.startswith(f"declarations: schema version 2 of {today} and unit version 1 of "
                           f"{today} on record for this data ({dataset[:19]}…)")


def test_without_the_variable_the_declarations_are_beside_the_ledger(tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.delenv("EPSILON_LAB_DECLARATIONS")
    args, data = people(tmp_path)
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    beside = tmp_path / "declarations.sqlite"
    assert str(beside) in declarations_line(capsys.readouterr().out)
    assert DeclarationStore(beside).find("people.csv") == [content_digest(data)]
    assert not os.environ.get("EPSILON_LAB_DECLARATIONS")
