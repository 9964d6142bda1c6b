"""The release package (release.package): its members, the published plan, a notebook that
runs top to bottom (nbclient) like the script, a report.html that asks no other host for
anything and escapes hostile names, the simulated-only variant, and ``--package`` on the
command line."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import zipfile
from dataclasses import replace

import pandas as pd
import pytest

from engine.sources import FrameSource
from plan.model import (
    Categories,
    Count,
    Dataset,
    Histogram,
    Noise,
    Plan,
    PlanQuery,
    PrivacyUnit,
)
from release import Ledger, run
from release import package as package_module
from release.cli import main
from release.files import release_json
from release.package import (
    DATA_PARAMETER,
    SIMULATION_LABEL,
    _fmt,
    notebook,
    release_package,
    report_html,
    simulation_package,
)
from release.programs import opendp_program
from tests.release_fixtures import every_kind_plan, visits

#: every_kind_plan without its partition selections (which the OpenDP program refuses).
WITH_PROGRAM = ("dx-found", "dx-cost")
MEMBERS = {"release.csv", "release.json", "card.json", "plan.json", "program.py",
           "program.ipynb", "report.html"}


def program_plan() -> Plan:
    plan = every_kind_plan()
    return replace(plan, queries=tuple(q for q in plan.queries if q.id not in WITH_PROGRAM))


def members(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    with Ledger(tmp_path_factory.mktemp("ledger") / "ledger.sqlite") as ledger:
        return run(program_plan(), FrameSource(visits()), ledger=ledger)


@pytest.fixture(scope="module")
def package(released) -> dict[str, bytes]:
    return members(release_package(released))


def test_the_package_holds_the_release_files_the_plan_the_program_and_the_report(
        released, package):
    assert set(package) == MEMBERS
    with zipfile.ZipFile(io.BytesIO(release_package(released))) as archive:
        assert {info.external_attr >> 16 for info in archive.infolist()} == {0o644}
    assert package["release.json"] == release_json(released)
    assert package["program.py"].decode() == opendp_program(released.plan.published())


def test_plan_json_is_the_published_plan(released, package):
    assert Plan.from_json(package["plan.json"]) == released.plan.published()
    assert json.loads(package["plan.json"]) == json.loads(package["release.json"])["plan"]


def test_a_plan_with_no_program_gets_a_note_instead(tmp_path):
    frame = visits(600)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(every_kind_plan(), FrameSource(frame), ledger=ledger)
    files = members(release_package(release))
    assert "program.py" not in files and "program.ipynb" not in files
    assert b"partition selection" in files["program-unavailable.txt"]


def test_the_report_asks_no_other_host_for_anything(package):
    page = package["report.html"].decode()
    assert re.search(r"\b(src|href|action|srcset)\s*=", page, re.IGNORECASE) is None
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page.lower() and "@import" not in page and "url(" not in page
    assert page.count("<svg") == len(program_plan().queries)


def test_the_report_shows_the_ledger_entry_accounting_and_attacker_sentence(released, package):
    import math

    page = package["report.html"].decode()
    assert f"#{released.record.id}" in page and released.values_hash in page
    assert "<strong>What an attacker can learn:</strong>" in page
    # from a coin flip, pure ε-DP lets the attacker reach at most e^ε / (1 + e^ε), shown
    # rounded up
    shown = float(re.search(r"ends <strong>at most ([0-9.]+)% sure", page).group(1)) / 100
    bound = math.exp(released.spent.epsilon) / (1 + math.exp(released.spent.epsilon))
    assert bound <= shown < bound + 0.001
    assert "Not covered by the guarantee" in page and "Privacy unit" in page


def test_the_report_escapes_hostile_names(tmp_path):
    hostile = '<img src="https://evil.example/x.png" onerror="alert(1)">'
    plan = Plan(Dataset(f"<script>alert('data')</script>{hostile}"),
                (PlanQuery("n", f"<b>{hostile}</b>", Count(),
                           Noise("laplace", "pure", epsilon=1.0)),
                 PlanQuery("h", "By <i>kind</i>",
                           Histogram("kind<svg onload=alert(1)>",
                                     Categories((hostile, "plain"), "public", "test")),
                           Noise("geometric", "pure", epsilon=1.0))),
                PrivacyUnit())
    frame = pd.DataFrame({"kind<svg onload=alert(1)>": [hostile, "plain"] * 50})
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        release = run(plan, FrameSource(frame), ledger=ledger)
    page = members(release_package(release))["report.html"].decode()
    assert "<script" not in page and "<img" not in page and "<svg onload" not in page
    assert "<i>kind" not in page and "<b>&lt;img" not in page
    assert "&lt;img src=&quot;https://evil.example/x.png&quot;" in page
    assert re.search(r"<[^>]*\b(src|href|on\w+)\s*=", page, re.IGNORECASE) is None


def test_the_report_draws_a_released_interval_and_says_when_there_is_none():
    record = {"dataset": {"name": "d", "origin": ""}, "privacy_unit": "one row",
              "privacy_spent": {"epsilon": 1.0, "delta": 0.0}, "accounting": {},
              "queries": [
                  {"id": "a", "label": "A", "statistic": "count",
                   "values": [{"group": [], "value": 50.0, "lower": 40.0, "upper": 60.0,
                               "level": 0.95}]},
                  {"id": "b", "label": "B", "statistic": "count",
                   "values": [{"group": [], "value": 50.0}]}]}
    page = report_html(record, {})
    first, second = page.split('<section class="query">')[1:]
    # the bar runs from 0 to 60 (the upper end) over 360 px from x = 190: the whisker from
    # x(40) = 190 + 40/60·360 = 430 to x(60) = 550
    assert 'class="interval" d="M430.0 ' in first and "H550.0" in first
    assert "[40, 60] at 95%" in first
    assert 'class="interval"' not in second
    assert "No interval was published" in second and "No interval was published" not in first


def test_the_report_gives_a_choices_bound_in_its_own_column_never_as_an_interval():
    """Issue 31 item 9: a quantile's rank error read "[0, 273.63]" in the Interval column,
    as if it bounded the value. It has a column of its own, in words."""
    record = {"dataset": {"name": "d", "origin": ""}, "privacy_unit": "one row",
              "privacy_spent": {"epsilon": 1.0, "delta": 0.0}, "accounting": {},
              "queries": [
                  {"id": "m", "label": "Median", "statistic": "quantiles",
                   "values": [{"group": ["q=0.5"], "value": 1.33, "choice_error": {
                       "at_most": 273.625, "level": 0.95, "of": "excess rank error",
                       "in_words": "rank error ≤ best + 273.7 rows"}}]},
                  {"id": "a", "label": "A", "statistic": "count",
                   "values": [{"group": [], "value": 50.0, "lower": 40.0, "upper": 60.0,
                               "level": 0.95, "of": "true value"}]},
                  {"id": "old", "label": "Written before", "statistic": "quantiles",
                   "values": [{"group": ["q=0.5"], "value": 40.0, "lower": 0.0,
                               "upper": 4.5, "level": 0.95, "of": "excess rank error"}]}]}
    page = report_html(record, {})
    first, second, old = page.split('<section class="query">')[1:]
    # a grid value's bound is of its rank error, not of the value: no whisker, no interval
    assert 'class="interval"' not in first and "[0," not in first
    assert "<th>Error of the choice</th>" in first
    assert "<th>Interval for the true value</th>" not in first
    assert "<td>rank error ≤ best + 273.7 rows at 95%</td>" in first
    assert "No interval was published" not in first
    assert 'class="interval"' in second and "[40, 60] at 95%" in second
    assert "Error of the choice" not in second
    # a record written when a choice's bound came as lower and upper reads the same way
    assert "<td>excess rank error ≤ 4.5 at 95%</td>" in old and "[0, 4.5]" not in old


def test_a_simulation_is_labelled_on_every_page_and_holds_no_release_files():
    plan = program_plan()
    values = {"n": [((), 2991.4)], "dx": [(("A",), 900.0), (("B",), 880.0)],
              "top-dx": [(("rank 1",), "A"), (("rank 2",), "B")]}
    files = members(simulation_package(plan, values))
    assert set(files) == {"plan.json", "program.py", "program.ipynb", "report.html"}
    page = files["report.html"].decode()
    assert page.count(SIMULATION_LABEL) >= 3
    # the label repeated on every printed page: a fixed element shown in print
    in_print = page[page.index("@media print"):page.index("</style>")]
    assert ".stamp{display:block;position:fixed" in in_print
    assert '<div class="stamp">simulation — not a release</div>' in page
    assert "Ledger entry" in page and "#None" not in page
    assert "choices made while looking at true answers" in page
    assert page.count("<svg") == 3
    # what a simulation's ε means is said of a real release, not of these seeded values
    assert "Accounting (what a release of this plan would spend)" in page
    assert "carry no such guarantee" in page
    assert "published with these values" not in page


def test_a_level_is_never_shown_above_the_one_given():
    # 99.5 % read "100%" with {:.0%}: more coverage than the interval gives
    table = package_module._values_table([{"group": ["A"], "value": 3.0, "lower": 1.0, "upper": 5.0,
                                     "level": 0.995}])
    assert "at 99.5%" in table and "100%" not in table


def test_the_notebook_is_the_program_split_in_cells():
    import nbformat

    program = opendp_program(program_plan().published())
    book = nbformat.reads(notebook(program, "x.csv"), as_version=4)
    code = [c.source for c in book.cells if c.cell_type == "code"]
    assert code[0] == f"{DATA_PARAMETER} = 'x.csv'\nOUT_PATH = None"
    assert book.cells[1].metadata["tags"] == ["parameters"]
    body = "\n".join(code[1:-1])
    assert "if __name__" not in body
    # every line of the program but its __main__ block is in a cell, in order
    kept = program.split('\nif __name__ == "__main__":', 1)[0]
    assert [line for line in kept.splitlines() if line.strip()] == [
        line for line in body.splitlines() if line.strip()]


def _released_ids(text: str) -> list[tuple[str, list[list[str]]]]:
    record = json.loads(text[text.index("{"):])
    return [(q["id"], [row[0] for row in q["rows"]]) for q in record["queries"]]


@pytest.mark.slow
def test_the_notebook_runs_top_to_bottom_as_the_script_does(tmp_path, package):
    import nbformat
    from nbclient import NotebookClient

    data = tmp_path / "visits.csv"
    visits(400).to_csv(data, index=False)
    (tmp_path / "program.py").write_bytes(package["program.py"])
    script = subprocess.run([sys.executable, "program.py", "--data", str(data)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert script.returncode == 0, script.stderr

    book = nbformat.reads(package["program.ipynb"].decode(), as_version=4)
    book.cells[1].source = f"{DATA_PARAMETER} = {str(data)!r}\nOUT_PATH = None"
    NotebookClient(book, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(out.get("text", "") for out in book.cells[-1].outputs
                      if out.output_type == "stream" and out.name == "stdout")
    expected = [q.id for q in program_plan().queries]
    ran = _released_ids(printed)
    assert [qid for qid, _ in ran] == expected
    # fresh noise every run: the values differ, the queries and their groups do not
    assert ran == _released_ids(script.stdout)


def test_the_command_line_writes_the_package(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text(program_plan().to_json())
    data = tmp_path / "visits.csv"
    visits(500).to_csv(data, index=False)
    out = tmp_path / "out"
    code = main(["--plan", str(plan), "--data", str(data), "--ledger",
                 str(tmp_path / "ledger.sqlite"), "--out", str(out),
                 "--package", str(tmp_path / "release.zip")])
    assert code == 0, capsys.readouterr().err
    files = members((tmp_path / "release.zip").read_bytes())
    assert set(files) == MEMBERS
    assert files["release.json"] == (out / "release.json").read_bytes()
    assert "release.zip" in capsys.readouterr().out


@pytest.mark.parametrize(("value", "rounding", "shown"), [
    (48842.3, "nearest", "48,842"), (48842.0, "nearest", "48,842"), (0.5, "nearest", "0.5"),
    (12.3456, "down", "12.34"), (12.3456, "up", "12.35"), (-12.3456, "down", "-12.35"),
    (-12.3456, "up", "-12.34"), (1234567.89, "up", "1,234,568"), (0.1, "down", "0.1"),
    (None, "nearest", "—"), (1.2346e-4, "down", "1.234e-04"), (1.2346e-4, "up", "1.235e-04"),
    (-1.2346e-4, "up", "-1.234e-04"), (1.23456e20, "down", "1.234e+20"),
    (1.23456e20, "up", "1.235e+20")])
def test_report_figures_read_without_an_exponent_and_interval_ends_round_outwards(
        value, rounding, shown):
    # The Adult count read 4.884e+04 in report.html; an interval's ends rounded to nearest
    # could show an interval narrower than the one released.
    assert _fmt(value, rounding) == shown


def test_every_later_card_and_report_list_the_datasets_budget_changes(tmp_path):
    """Issue 31 item 8: a budget raised and its δ cap removed after a release was an event no
    later card or report mentioned. Each release's card and report now list every budget
    setting recorded before it: time, change, total, δ cap, ε spent then, reason."""
    plan = Plan(Dataset("visits"), (PlanQuery("n", "Visits", Count(),
                                              Noise("laplace", "pure", epsilon=1.0)),),
                PrivacyUnit())
    source = FrameSource(pd.DataFrame({"x": range(50)}))
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        first = run(plan, source, ledger=ledger, budget=1.5, budget_delta=1e-6)
        ledger.set_budget(first.dataset, 4.0, reason="the <b>board</b> approved 4")
        second = run(plan, source, ledger=ledger)
    card = json.loads(members(release_package(second))["card.json"])
    history = card["dataset_budget"]["history"]
    assert [(h["change"], h["epsilon"], h["delta"], h["spent_epsilon_before"], h["reason"])
            for h in history] == [
        ("set (with a δ cap)", 1.5, 1e-6, 0.0, "set by the first release's --budget"),
        ("ε raised, δ cap removed", 4.0, None, 1.0, "the <b>board</b> approved 4")]
    assert card["dataset_budget"]["in_force"] == history[-1]
    assert all(h["time"] < second.record.time for h in history)
    page = members(release_package(second))["report.html"].decode()
    section = page.split("<h2>This dataset's budget</h2>")[1].split("<h2>")[0]
    assert "<td>ε raised, δ cap removed</td><td>4</td><td>no cap</td><td>1</td>" in section
    assert "the &lt;b&gt;board&lt;/b&gt; approved 4" in section and "<b>board" not in section
    assert history[0]["time"] in section and history[1]["time"] in section
    # the first release's card holds the settings before it only
    earlier = json.loads(members(release_package(first))["card.json"])["dataset_budget"]
    assert [h["change"] for h in earlier["history"]] == ["set (with a δ cap)"]


def test_a_report_with_no_budget_says_nothing_capped_it(package):
    page = package["report.html"].decode()
    assert "No total budget was set for this dataset" in page
