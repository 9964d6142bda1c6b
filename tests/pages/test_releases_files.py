"""The Releases page offers every release's kept files again (issue 32 item 4): after a release
from the plan page, a new session (a reload) finds its package and each file on the Releases
page, the very bytes the plan page offered and the ledger keeps; a release without files says
why (recorded before releases kept their files; its draw failed)."""

from __future__ import annotations

import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage

from release import Ledger
from release.ledger import NOT_KEPT_BEFORE, NOT_KEPT_FAILED
from tests.conftest import open_app
from tests.pages.test_page_release import no_problem, plan_of_two, release
from tests.release.test_kept_files import LAYOUT1


@pytest.fixture
def ledger_file(tmp_path, monkeypatch):
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(path))
    return path


@pytest.fixture
def served(monkeypatch):
    """Every file a page hands to the media storage (what the browser fetches): id → bytes."""
    files: dict[str, bytes] = {}
    original = MemoryMediaFileStorage.load_and_get_id

    def spy(self, path_or_data, mimetype, kind, filename=None):
        file_id = original(self, path_or_data, mimetype, kind, filename)
        files[file_id] = path_or_data
        return file_id

    monkeypatch.setattr(MemoryMediaFileStorage, "load_and_get_id", spy)
    return files


def offered(at, served, key: str) -> bytes:
    """The bytes behind the download button of ``key``."""
    button = at.download_button(key=key)
    return served[button.proto.url.rsplit("/", 1)[-1].split(".")[0]]


@pytest.mark.slow   # a real release of two queries on Adult
def test_the_releases_page_offers_the_kept_bytes_after_a_reload(ledger_file, served):
    at = release(plan_of_two())
    no_problem(at)
    with Ledger(ledger_file) as ledger:
        [record] = ledger.releases()
        kept = ledger.release_files(record.id)
    package = f"release-{record.id}.zip"
    right_after = offered(at, served, "plan_release_package")
    assert right_after == kept[package]
    assert offered(at, served, "plan_release_release.csv") == kept["release.csv"]

    again = open_app("releases.py")   # a new session: what a reload starts
    no_problem(again)
    assert again.selectbox(key="releases_plan_of").value == record.id
    assert offered(again, served, "releases_file_package") == right_after
    for name, data in kept.items():
        key = "releases_file_package" if name == package else f"releases_file_{name}"
        assert offered(again, served, key) == data, name
    assert {"release.csv", "release.json", "card.json", "plan.json", "report.html",
            "program.py", "program.ipynb"} <= set(kept)
    history = next(d.value for d in again.dataframe if "Files" in d.value.columns)
    assert history["Files"].tolist() == [f"kept: {len(kept)} files ({package} and each file)"]


def test_a_release_without_files_says_why(ledger_file):
    """The ledger written by main's layout-1 code (tests/release/data): a release recorded
    before releases kept their files, and one whose draw failed."""
    ledger_file.write_bytes(LAYOUT1.read_bytes())
    at = open_app("releases.py")
    no_problem(at)
    history = next(d.value for d in at.dataframe if "Files" in d.value.columns)
    assert history["Entry"].tolist() == [3, 2]
    assert history["Files"].tolist() == [NOT_KEPT_FAILED, NOT_KEPT_BEFORE]
    assert at.selectbox(key="releases_plan_of").value == 3
    assert any(NOT_KEPT_FAILED in i.value for i in at.info)
    assert not [b for b in at.get("download_button") if b.key.startswith("releases_file_")]
    at.selectbox(key="releases_plan_of").set_value(2).run()
    no_problem(at)
    assert any(NOT_KEPT_BEFORE in i.value for i in at.info)
    assert [b.key for b in at.get("download_button")] == ["releases_plan_download"]


@pytest.mark.slow   # a real release of two queries on Adult
def test_files_that_cannot_be_kept_are_still_offered_and_the_page_says_so(ledger_file, served,
                                                                          monkeypatch):
    from release import LedgerError

    def full(self, release_id, files):
        raise LedgerError("the disk is full")

    monkeypatch.setattr(Ledger, "store_files", full)
    at = release(plan_of_two())
    assert not at.exception
    [warning] = [w.value for w in at.warning if "Files not kept" in w.value]
    assert "is recorded" in warning and "the disk is full" in warning
    assert offered(at, served, "plan_release_package").startswith(b"PK")
    with Ledger(ledger_file) as ledger:
        [record] = ledger.releases()
        assert ledger.file_names() == {}
    monkeypatch.undo()
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(ledger_file))
    again = open_app("releases.py")
    no_problem(again)
    assert any("storing them failed" in i.value for i in again.info)
