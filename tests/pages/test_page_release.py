"""Releasing from the app (issue 14): the Release button on the plan page releases once with
OpenDP, records it in the ledger, shows released values only, refuses over the budget with the
reason (nothing recorded), survives a damaged ledger, and the Releases page lists the history
and what is left per dataset."""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys

import pytest

from dpcore.accounting import ACCOUNTANTS
from release import Ledger
from tests.conftest import ROOT, open_app

ADULT_ROWS = 48_842


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


@pytest.fixture
def ledger_file(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(path))
    return path


def plan_of_two(*, check: bool = True):
    """A Laplace count and a geometric table of Adult (ε = 1 each) in the plan."""
    at = open_app("statistics.py")
    at.selectbox(key="stats_query").select("count").run()
    at.button(key="stats_add_to_plan").click().run()
    at.switch_page("app_pages/tables.py").run()
    at.button(key="tables_add_to_plan").click().run()
    at.switch_page("app_pages/plan.py").run()
    if check:
        no_problem(at)
    return at


def set_budget(at, epsilon: float, delta: float = 0.0):
    """Set this dataset's total budget in the ledger with the plan page's control."""
    at.number_input(key="plan_set_budget_epsilon").set_value(epsilon).run()
    at.number_input(key="plan_set_budget_delta").set_value(delta).run()
    at.checkbox(key="plan_set_budget_confirm").check().run()
    at.button(key="plan_set_budget").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def left_metric(at) -> str:
    return next(m.value for m in at.metric if m.label == "Left")


def release(at):
    at.checkbox(key="plan_release_confirm").check().run()
    at.button(key="plan_release").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def released_frame(at):
    return next(d.value for d in at.dataframe if "Released value" in d.value.columns)


def test_release_shows_released_values_only_and_is_recorded_once(ledger_file):
    at = release(plan_of_two())
    no_problem(at)
    assert any("Released and recorded: entry #1" in s.value for s in at.success)
    frame = released_frame(at)
    assert list(frame.columns) == ["Query", "Statistic", "Group", "Released value",
                                   "True value ≥", "True value ≤", "Error of the choice"]
    assert set(frame["Error of the choice"]) == {""}   # a count's and a table's: none
    count = frame[frame["Statistic"] == "count"]["Released value"].iloc[0]
    # beside each value its 95 % interval: Laplace ε = 1, half-width ln(1/0.05) (issue 22)
    widths = (frame["True value ≤"] - frame["True value ≥"]).tolist()
    assert widths[0] == pytest.approx(2 * math.log(20), rel=1e-9)
    assert (frame["True value ≥"] <= frame["Released value"]).all()
    assert (frame["Released value"] <= frame["True value ≤"]).all()
    assert any("95% interval for each true value" in c.value for c in at.caption)
    assert count != ADULT_ROWS   # continuous Laplace noise: never exactly the truth
    assert abs(count - ADULT_ROWS) < 30   # ε = 1: |noise| > 30 has probability e^-30
    assert not at.checkbox(key="plan_release_confirm").value   # one click, one release
    with Ledger(ledger_file) as ledger:
        [record] = ledger.releases()
    assert record.dataset.name == "Adult (UCI census income)"
    assert record.epsilon == pytest.approx(2.0, abs=2e-3)
    assert [b.label for b in at.get("download_button")][-4:] == [
        "Released values (CSV)", "Release (JSON)", "Release card (JSON)",
        "Download the release package"]


@pytest.mark.slow
def test_two_releases_differ_and_the_budget_refuses_the_third(ledger_file):
    at = plan_of_two()
    set_budget(at, 4.5)
    assert any("now holds a total budget of ε = 4.5" in s.value.replace("\\", "")
               for s in at.success)
    release(at)
    first = released_frame(at)["Released value"].tolist()
    release(at)   # (the page then refuses the plan: the ledger has 0.5 left)
    assert any("Released and recorded: entry #3" in s.value.replace("\\", "")
               for s in at.success)
    second = released_frame(at)["Released value"].tolist()
    assert first != second    # no seed: new noise each time
    # the page reads what is left from the ledger: the third does not fit, and says so
    refusal = " ".join(e.value for e in at.error).replace("\\", "")
    assert "This plan is refused" in refusal and "left" in refusal
    assert float(left_metric(at).split("=")[1]) == pytest.approx(0.5, abs=2e-3)
    assert at.button(key="plan_release").disabled
    with Ledger(ledger_file) as ledger:
        records = ledger.releases()
        [status] = ledger.datasets()
    assert len(records) == 2 and records[0].values_hash != records[1].values_hash
    assert status.budget.epsilon == 4.5
    assert status.remaining_epsilon == pytest.approx(4.5 - 2 * records[0].epsilon)

    spent = next(m.value for m in at.metric if m.label.startswith("Spent by"))
    left = left_metric(at)

    at.switch_page("app_pages/releases.py").run()
    no_problem(at)
    budgets = next(d.value for d in at.dataframe if "Left ε" in d.value.columns)
    assert budgets["Releases"].tolist() == [2]
    assert float(budgets["Left ε"].iloc[0]) == pytest.approx(status.remaining_epsilon)
    # The same figures read the same on both pages (issue 21 item 7: 'Spent ε = 2 / Left ε
    # = 1.00009' beside 'ε = 1.0001 left'): the table shows the budget panel's text.
    assert f"ε = {budgets['Left ε'].iloc[0]}" == left
    assert f"ε = {budgets['Spent ε'].iloc[0]}" == spent
    assert budgets["Budget ε"].iloc[0] == "4.5"
    history = next(d.value for d in at.dataframe if "Values hash" in d.value.columns)
    assert history["Entry"].tolist() == [r.id for r in reversed(records)]
    assert history["ε"].tolist() == ["2", "2"]   # ε = 1 each, recorded as 2.0
    assert history["Interval level"].tolist() == ["95%", "95%"]


def test_a_damaged_ledger_is_named_and_left_untouched(ledger_file):
    ledger_file.write_bytes(b"not a ledger at all" * 100)
    at = plan_of_two(check=False)
    assert not at.exception
    refusal = " ".join(e.value for e in at.error).replace("\\", "")
    assert "The ledger cannot be read" in refusal and "damaged" in refusal
    assert at.button(key="plan_release").disabled     # no budget can be checked: no release
    assert ledger_file.read_bytes() == b"not a ledger at all" * 100
    at.switch_page("app_pages/releases.py").run()
    assert not at.exception
    assert any("cannot be read" in e.value for e in at.error)
    at.switch_page("app_pages/plan.py").run()   # the session keeps working, plan and all
    assert not at.exception
    assert "The plan: 2 queries" in [h.value for h in at.subheader]


def test_a_plan_over_the_datasets_budget_cannot_be_released(ledger_file):
    at = plan_of_two()
    assert any("No total budget is set" in w.value for w in at.warning)
    set_budget(at, 1.0)
    assert at.checkbox(key="plan_release_confirm").disabled
    assert at.button(key="plan_release").disabled
    with Ledger(ledger_file) as ledger:
        assert ledger.releases() == [] and ledger.datasets()[0].budget.epsilon == 1.0


def test_the_budget_panel_reads_the_ledger_and_never_carries_to_another_dataset(ledger_file):
    """After a release leaving 1 of 3, the page said 'Left ε = 1.00009' and typing 10 in its
    box said 8.00009: the panel now reads spent and left from the ledger, a typed number sets
    nothing until confirmed, and it does not follow the user to another dataset."""
    at = plan_of_two()
    set_budget(at, 3.0)
    release(at)
    assert not at.exception
    with Ledger(ledger_file) as ledger:
        [status] = ledger.datasets()
    assert status.spent_epsilon == pytest.approx(2.0, abs=2e-3)
    assert float(left_metric(at).split("=")[1]) == pytest.approx(status.remaining_epsilon,
                                                                 abs=1e-6)
    at.number_input(key="plan_set_budget_epsilon").set_value(10.0).run()
    assert float(left_metric(at).split("=")[1]) == pytest.approx(status.remaining_epsilon,
                                                                 abs=1e-6)
    at.selectbox(key="dataset_choice").select("Iris").run()
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_query").select("count").run()
    at.button(key="stats_add_to_plan").click().run()
    at.switch_page("app_pages/plan.py").run()
    no_problem(at)
    assert at.number_input(key="plan_set_budget_epsilon").value == 1.0
    assert left_metric(at) == "no limit"


def test_the_programs_are_offered_for_the_plan(ledger_file):
    at = plan_of_two()
    labels = [b.label for b in at.get("download_button")]
    assert "OpenDP program (Python)" in labels and "Spark program (PipelineDP)" not in labels
    why = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "Spark program (PipelineDP): not available for this plan" in why
    at.selectbox(key="plan_method").select("basic").run()   # PipelineDP composes basically
    no_problem(at)
    labels = [b.label for b in at.get("download_button")]
    assert "OpenDP program (Python)" in labels and "Spark program (PipelineDP)" in labels


def test_the_releases_page_before_any_release(ledger_file):
    at = open_app("releases.py")
    no_problem(at)
    assert any("No release has been made yet" in i.value for i in at.info)


@pytest.mark.slow
def test_a_plan_made_in_the_app_is_released_by_the_command_line_against_one_budget(
        ledger_file, downloads, tmp_path):
    """The plan downloaded from the page, released by `python -m release` on data/adult.csv.gz:
    the app's release and the command line's are one dataset in the ledger (the built-in's
    file hash), recorded once each, and the budget they share refuses a third."""
    import json
    import os
    import subprocess
    import sys

    from plan.examples import ADULT_PATH
    from plan.model import Plan
    from tests.conftest import ROOT

    at = plan_of_two()
    set_budget(at, 4.5)
    release(at)
    no_problem(at)
    plan_bytes = downloads["release-plan.json"]
    plan = Plan.from_json(plan_bytes)
    assert [q.label for q in plan.queries] == ["Number of rows", "Table of education by sex"]
    (tmp_path / "plan.json").write_bytes(plan_bytes)

    def cli() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "release", "--plan", str(tmp_path / "plan.json"), "--data",
             str(ADULT_PATH), "--ledger", str(ledger_file), "--out", str(tmp_path / "out")],
            cwd=ROOT, capture_output=True, text=True, env=dict(os.environ), timeout=300)

    first = cli()
    assert first.returncode == 0, first.stderr
    spent = json.loads((tmp_path / "out" / "release.json").read_text())["privacy_spent"]
    assert spent["epsilon"] == pytest.approx(2.0, abs=2e-3)
    second = cli()
    assert second.returncode != 0 and "over budget" in second.stderr
    with Ledger(ledger_file) as ledger:
        records = ledger.releases()
        [status] = ledger.datasets()
    assert len(records) == 2 and status.releases == 2
    assert records[0].dataset == records[1].dataset
    assert json.loads(downloads["release.json"])["ledger_entry"] == records[0].id


@pytest.mark.slow
def test_a_budget_of_three_with_two_spent_reads_one_left(ledger_file):
    """Issue 21 item 7: a spent ε of 2 that floats carry as 2.0000000000000004 (1 + 1 added up
    and rounded up) read 'Spent ε = 2.00001' and 'Left ε = 0.999999'; 3 − 2 is 1."""
    at = plan_of_two()
    set_budget(at, 3.0)
    with Ledger(ledger_file) as ledger:
        [status] = ledger.datasets()
        ledger.record_release(status.dataset, epsilon=2.0000000000000004, delta=0.0,
                              accounting="basic", values_hash="sha256:" + "0" * 64,
                              plan_json="{}", implementation="test")
    at.run()
    assert not at.exception   # (the plan of 2 is refused: 1 is left)
    assert next(m.value for m in at.metric if m.label.startswith("Spent by")) == "ε = 2"
    assert left_metric(at) == "ε = 1"
    at.switch_page("app_pages/releases.py").run()
    no_problem(at)
    budgets = next(d.value for d in at.dataframe if "Left ε" in d.value.columns)
    assert (budgets["Spent ε"].iloc[0], budgets["Left ε"].iloc[0]) == ("2", "1")


def test_a_refusal_is_dropped_once_the_plan_changes(ledger_file, monkeypatch):
    """Issue 21 item 4: "Not released" speaks of the plan it refused; after the plan changes
    it is gone (while the plan is unchanged it stays)."""
    import release

    def refuse(*args, **kwargs):
        raise release.ReleaseRefused("the ledger holds too little of this dataset's budget")

    at = plan_of_two()
    monkeypatch.setattr(release, "run", refuse)
    at.checkbox(key="plan_release_confirm").check().run()
    at.button(key="plan_release").click().run()
    assert any("Not released" in e.value for e in at.error)
    at.run()   # the same plan: the refusal still stands
    assert any("Not released" in e.value for e in at.error)
    other = next(m for m in ACCOUNTANTS if m != at.selectbox(key="plan_method").value)
    at.selectbox(key="plan_method").set_value(other).run()   # another plan: its accounting
    assert not at.exception, [e.value for e in at.exception]
    assert not any("Not released" in e.value for e in at.error)


def test_a_release_offers_its_package_and_keeps_it_in_the_ledger(ledger_file):
    import io
    import zipfile

    from dashboard.release_panel import LAST

    at = release(plan_of_two())
    no_problem(at)
    button = at.download_button(key="plan_release_package")
    assert button.label == "Download the release package"
    [outcome] = at.session_state[LAST].values()
    files = outcome["files"]
    with zipfile.ZipFile(io.BytesIO(files[f"release-{outcome['id']}.zip"])) as archive:
        names = set(archive.namelist())
        assert archive.read("release.json") == files["release.json"]
        assert archive.read("release.csv") == files["release.csv"]
    assert {"card.json", "plan.json", "program.py", "program.ipynb", "report.html"} <= names
    with Ledger(ledger_file) as ledger:
        assert ledger.release_files(outcome["id"]) == files


def test_a_budget_lowered_below_what_was_spent_reads_over_budget_and_its_history_shows(
        ledger_file):
    """Issue 31 item 8: a budget of 3 with 2 spent, lowered to 0.5, read "Left ε = 0" on
    both pages; it is over budget by 2 − 0.5 = 1.5. Changing a budget needs a reason, and
    every setting shows with its reason on the plan page and the Releases page."""
    at = plan_of_two()
    set_budget(at, 3.0)
    with Ledger(ledger_file) as ledger:
        [status] = ledger.datasets()
        ledger.record_release(status.dataset, epsilon=2.0, delta=0.0, accounting="basic",
                              values_hash="sha256:" + "0" * 64, plan_json="{}",
                              implementation="test")
    at.run()
    at.number_input(key="plan_set_budget_epsilon").set_value(0.5).run()
    assert any("over budget by ε = 1.5" in w.value for w in at.warning)
    # a change without a reason cannot be recorded
    assert at.checkbox(key="plan_set_budget_confirm").disabled
    assert at.button(key="plan_set_budget").disabled
    at.text_input(key="plan_set_budget_reason").input("consent withdrawn by the owner").run()
    set_budget(at, 0.5)
    assert left_metric(at) == "over budget by ε = 1.5"
    assert any("the dataset is over budget by ε = 1.5" in e.value.replace("\\", "")
               for e in at.error)
    history = next(d.value for d in at.dataframe if "Reason" in d.value.columns)
    assert history[["Change", "Budget ε", "Spent ε before", "Reason"]].values.tolist() == [
        ["set", "3", "0", "set on the Release plan page"],
        ["ε lowered", "0.5", "2", "consent withdrawn by the owner"]]
    at.switch_page("app_pages/releases.py").run()
    no_problem(at)
    budgets = next(d.value for d in at.dataframe if "Left ε" in d.value.columns)
    assert budgets["Left ε"].tolist() == ["over budget by 1.5"]
    changes = next(d.value for d in at.dataframe if "Reason" in d.value.columns)
    assert changes["Change"].tolist() == ["set", "ε lowered"]


def quoted_fetch(at) -> str:
    """The ``python -m release fetch`` command a caption of the page quotes."""
    [command] = [m for c in at.caption
                 for m in re.findall(r"`(python -m release fetch [^`]*)`", c.value)]
    return command


def run_quoted(command: str, out, tmp_path) -> subprocess.CompletedProcess:
    """``command`` as a user pastes it into a shell of their own: none of the server's
    environment (no EPSILON_LAB_LEDGER), another home (no default ledger), DIR replaced."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EPSILON_LAB_")}
    env |= {"HOME": str(tmp_path / "home"), "XDG_DATA_HOME": str(tmp_path / "home")}
    argv = shlex.split(command.replace(" DIR", " " + shlex.quote(str(out))))
    assert argv[:2] == ["python", "-m"]
    return subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
def test_the_fetch_commands_the_pages_quote_fetch_the_release(ledger_file, tmp_path):
    """Run as quoted, from another shell: the Release plan page's command lacked the required
    --out, and neither page's named the ledger, which a shell without the server's
    EPSILON_LAB_LEDGER does not find."""
    at = release(plan_of_two())
    no_problem(at)
    right_after = quoted_fetch(at)
    at.switch_page("app_pages/releases.py").run()
    no_problem(at)
    for n, command in enumerate((right_after, quoted_fetch(at))):
        out = tmp_path / f"fetched {n}"
        done = run_quoted(command, out, tmp_path)
        assert done.returncode == 0, (command, done.stderr)
        with Ledger(ledger_file) as ledger:
            kept = ledger.release_files(1)
        assert kept and {p.name: p.read_bytes() for p in out.iterdir()} == kept
