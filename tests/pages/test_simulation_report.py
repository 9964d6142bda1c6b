"""Export as a simulation report (issue 22): the plan page offers the release package's report
of one seeded numpy draw of the plan, labelled "simulation — not a release", built when it is
downloaded; nothing is recorded in the ledger and the values are simulated, never the true
ones."""

from __future__ import annotations

import io
import re
import zipfile

import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from release import Ledger
from release.package import SIMULATION_LABEL
from tests.conftest import open_app

IRIS_ROWS = 150


@pytest.fixture
def ledger_file(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(path))
    return path


@pytest.fixture
def deferred(monkeypatch):
    """What each deferred download button would build: its callable and file name, by the
    file id the button carries."""
    made: dict[str, tuple] = {}
    add = MediaFileManager.add_deferred

    def recording(self, data, mimetype, coordinates, file_name=None, **kwargs):
        file_id = add(self, data, mimetype, coordinates, file_name=file_name, **kwargs)
        made[file_id] = (data, file_name)
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording)
    return made


@pytest.fixture
def packed(monkeypatch):
    """The values each simulation package was built from (the real function still builds it)."""
    import release.package as package

    seen: list[dict] = []
    real = package.simulation_package

    def recording(plan, values):
        seen.append(values)
        return real(plan, values)

    monkeypatch.setattr(package, "simulation_package", recording)
    return seen


def iris_count_plan():
    """A Laplace count of Iris (ε = 1, the Statistics page's default) in the plan."""
    at = open_app("statistics.py", dataset="Iris")
    at.selectbox(key="stats_query").select("count").run()
    at.button(key="stats_add_to_plan").click().run()
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def download(at, deferred) -> tuple[dict[str, bytes], str]:
    button = at.download_button(key="plan_simulation_package")
    build, name = deferred[button.proto.deferred_file_id]
    with zipfile.ZipFile(io.BytesIO(build())) as archive:
        return {n: archive.read(n) for n in archive.namelist()}, name


def test_the_plan_page_exports_a_simulation_report_and_records_nothing(
        ledger_file, deferred, packed):
    at = iris_count_plan()
    button = at.download_button(key="plan_simulation_package")
    assert button.label == "Export as a simulation report"
    assert "A simulation, not a release" in button.help
    assert not packed   # built only when the button is clicked
    files, name = download(at, deferred)
    assert name == "simulation-Untitled-plan.zip"
    assert set(files) == {"plan.json", "program.py", "program.ipynb", "report.html"}
    page = files["report.html"].decode()
    assert page.count(SIMULATION_LABEL) >= 3
    assert "Simulated release plan: Iris" in page
    # nothing was released: the ledger holds no release (and no dataset)
    with Ledger(ledger_file) as ledger:
        assert ledger.releases() == [] and ledger.datasets() == []

    # the value is a draw of the Laplace count (ε = 1), never the true 150
    [values] = packed
    [(group, count)] = next(iter(values.values()))
    assert group == ()
    assert count != IRIS_ROWS   # continuous noise: never exactly the truth
    assert abs(count - IRIS_ROWS) < 30   # |Laplace(1)| > 30 has probability e^-30
    cells = re.findall(r'<table class="values"><tr><th>Group</th><th>Released value</th></tr>'
                       r"<tr><td>—</td><td>([^<]*)</td></tr>", page)
    # the report shows the draw (at this seed, 150.1…): not the true count's "150"
    assert cells == [f"{count:,.4g}"] and cells != [str(IRIS_ROWS)]


def test_the_simulation_is_seeded(ledger_file, deferred, packed):
    at = iris_count_plan()
    first, _ = download(at, deferred)
    again, _ = download(at, deferred)
    assert first["report.html"] == again["report.html"]   # the same seed, the same draw
    seed = at.number_input(key="seed_input")
    seed.set_value(seed.value + 1).run()   # the sidebar's seed
    other, _ = download(at, deferred)
    assert other["report.html"] != first["report.html"]
    counts = [next(iter(v.values()))[0][1] for v in packed]
    assert counts[0] == counts[1] != counts[2]
