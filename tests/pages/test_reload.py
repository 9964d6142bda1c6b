"""A reload loses nothing but an upload's bytes (issue 32, items 2 and 3), through AppTest.

A reload is a new session started from the old one's URL: the saved plan that was open comes
back (not the dataset's most recently saved one); an upload's identity in the URL makes every
page say which file to upload again and what waits for it, until the same content is uploaded
under any name (its open plan opened again); "Keep this file on the server" makes it a
data-folder file, "Remove from the server" takes it back into the session's memory.
"""

from __future__ import annotations

import json
import os

import pytest

from dashboard.datasets import load_upload
from dashboard.plan_library import PlanLibrary
from dpcore.contributions import PrivacyUnit
from plan.examples import adult_plan
from plan.identity import content_digest
from release.declarations import DeclarationStore
from tests.conftest import ROOT, fresh_plans

UPLOAD = "Upload your own CSV"
SAVED = "release_plan_saved"   # dashboard.plan_store: data key -> the saved plan open
MALES = b"nr,year,wage,union\n" + b"".join(
    f"{13 + i % 7},{1980 + i % 8},{(i * 37) % 11}.5,{'yes' if i % 3 else 'no'}\n".encode()
    for i in range(120))
OTHER = b"a,b\n1,2\n3,4\n5,6\n"


def words(text: str) -> str:
    """What the user reads: markdown escapes and invisible joiners out."""
    return text.replace("\\", "").replace("\u2060", "")


def new_session(params: dict[str, str] | None = None, page: str | None = None):
    """A new session (a reload, a new tab) whose URL holds ``params``; on ``page`` if given."""
    from streamlit import config
    from streamlit.testing.v1 import AppTest

    config.set_option("client.showErrorDetails", "full")
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    if page is not None:
        at.switch_page(f"app_pages/{page}").run()
    no_problem(at)
    return at


def no_problem(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def open_plan(at):
    return (at.session_state[SAVED] if SAVED in at.session_state else {}).get(data_key(at))


def data_key(at) -> str:
    ss = at.session_state
    if "uploaded_dataset" in ss and ss["dataset"] is ss["uploaded_dataset"]:
        return f"upload:{ss['upload_file_id']}"
    return ss["dataset"].key


def upload(at, name: str, data: bytes) -> None:
    at.selectbox(key="dataset_choice").select(UPLOAD).run()
    at.file_uploader(key="upload_file").set_value((name, data, "text/csv")).run()
    no_problem(at)


def notices(at) -> list[str]:
    return [words(i.value) for i in at.info
            if "again" in i.value or "kept on the server" in words(i.value)]


# -- the open plan comes back -------------------------------------------------------------------

def test_a_reload_opens_the_plan_that_was_open_not_the_latest():
    fresh_plans()
    library = PlanLibrary(os.environ["EPSILON_LAB_PLANS"])
    key = new_session().session_state["dataset"].key
    older = library.create(key, "Counts", adult_plan().queries[:1])
    later = library.create(key, "Later plan", ())
    first = new_session(page="plan.py")
    assert open_plan(first).id == later.id     # a session's first look: the latest
    first.button(key=f"saved_plan_open_{older.id}").click().run()   # the user opens "Counts"
    no_problem(first)
    assert open_plan(first).id == older.id
    assert first.query_params["plan"] == str(older.id)

    again = new_session(dict(first.query_params), page="plan.py")   # F5
    assert open_plan(again).id == older.id
    assert again.query_params["plan"] == str(older.id)


def test_a_plan_of_another_dataset_in_the_url_is_not_opened():
    fresh_plans()
    library = PlanLibrary(os.environ["EPSILON_LAB_PLANS"])
    elsewhere = library.create("builtin:Iris:150", "Iris plan", ())
    at = new_session({"plan": str(elsewhere.id)}, page="plan.py")
    assert open_plan(at) is None
    assert "plan" not in at.query_params   # the URL now names no plan


# -- an upload that was not kept: the notice ----------------------------------------------------

@pytest.fixture
def males_waiting():
    """A server that knows Males.csv (its schema, its unit, 2 saved plans), and the URL of a
    session that had it open with the older plan."""
    fresh_plans()
    identity = content_digest(load_upload(MALES, "Males.csv").cells)
    DeclarationStore().declare(identity, names=["Males.csv"],
                               schema=json.dumps({"columns": {"wage": {"lower": 0}}}),
                               unit=PrivacyUnit("nr", max_rows=8))
    library = PlanLibrary(os.environ["EPSILON_LAB_PLANS"])
    older = library.create("content:" + identity, "Wages", ())
    library.create("content:" + identity, "Unions", ())
    params = {"dataset_choice": UPLOAD, "data": identity.removeprefix("sha256:")[:16],
              "plan": str(older.id)}
    return params, older, identity


def test_every_page_says_which_file_to_upload_again_and_what_waits(males_waiting):
    params, _, _ = males_waiting
    at = new_session(params)
    expected = "Upload Males.csv again: its schema, its unit and 2 saved plans are waiting."
    assert any(n.startswith(expected) for n in notices(at)), notices(at)
    for page in ("data.py", "plan.py", "statistics.py"):
        at.switch_page(f"app_pages/{page}").run()
        no_problem(at)
        assert any(n.startswith(expected) for n in notices(at)), (page, notices(at))
    # the URL keeps what the notice needs (the pages use a stand-in meanwhile)
    assert at.query_params["data"] == params["data"]
    assert at.query_params["plan"] == params["plan"]


def test_uploading_it_again_under_any_name_opens_the_plan_that_was_open(males_waiting):
    params, older, identity = males_waiting
    at = new_session(params, page="plan.py")
    at.file_uploader(key="upload_file").set_value(("renamed.csv", MALES, "text/csv")).run()
    no_problem(at)
    assert notices(at) == []
    assert open_plan(at).id == older.id        # not "Unions", the most recently saved
    assert at.query_params["plan"] == str(older.id)
    assert at.query_params["data"] == params["data"]


def test_uploading_another_file_takes_the_notice_away(males_waiting):
    params, _, _ = males_waiting
    at = new_session(params, page="data.py")
    at.file_uploader(key="upload_file").set_value(("other.csv", OTHER, "text/csv")).run()
    no_problem(at)
    assert notices(at) == []
    assert at.query_params["data"] == content_digest(
        load_upload(OTHER, "other.csv").cells).removeprefix("sha256:")[:16]
    assert "plan" not in at.query_params   # the other file has no saved plan
    assert "a,b" not in json.dumps(dict(at.query_params))


def test_an_unknown_identity_in_the_url_says_nothing():
    fresh_plans()
    at = new_session({"dataset_choice": UPLOAD, "data": "0123456789abcdef"})
    assert notices(at) == []


def test_the_words_of_the_notice():
    from dashboard import workspace

    assert workspace.waiting_words("Males.csv", schema=True, unit=True, plans=2) == (
        "Upload Males.csv again: its schema, its unit and 2 saved plans are waiting.")
    assert workspace.waiting_words("a.csv", schema=False, unit=True, plans=0) == (
        "Upload a.csv again: its unit is waiting.")
    assert workspace.waiting_words("a.csv", schema=False, unit=False, plans=1) == (
        "Upload a.csv again: 1 saved plan is waiting.")
    assert workspace.waiting_words(None, schema=True, unit=False, plans=1) == (
        "Upload the file you uploaded again: its schema and 1 saved plan are waiting.")
    assert workspace.waiting_words("a.csv", schema=False, unit=False, plans=3,
                                   kept_as="a (2).csv") == (
        "a.csv is kept on the server as a (2).csv: choose it in the sidebar's list: 3 saved "
        "plans are waiting.")


def test_the_notice_points_to_a_copy_kept_since(males_waiting, monkeypatch, tmp_path):
    params, _, identity = males_waiting
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    from dashboard.data import kept

    kept.keep_upload(MALES, "Males.csv", identity)
    at = new_session(params)
    assert any(n.startswith("Males.csv is kept on the server as Males.csv: choose it in the "
                            "sidebar's list: its schema") for n in notices(at)), notices(at)


# -- keep on the server, remove ----------------------------------------------------------------

def test_keep_is_disabled_without_a_data_folder(monkeypatch):
    monkeypatch.delenv("EPSILON_LAB_DATA", raising=False)
    fresh_plans()
    at = new_session()
    upload(at, "Males.csv", MALES)
    button = at.button(key="workspace_keep")
    assert button.disabled
    assert any("EPSILON_LAB_DATA" in c.value for c in at.sidebar.caption)


def test_keep_then_remove(monkeypatch, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "Males.csv").write_bytes(b"x\n1\n")     # the administrator's: never replaced
    monkeypatch.setenv("EPSILON_LAB_DATA", str(folder))
    fresh_plans()
    at = new_session()
    upload(at, "Males.csv", MALES)
    identity = content_digest(load_upload(MALES, "Males.csv").cells)
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_query").set_value("count").run()
    at.button(key="stats_add_to_plan").click().run()
    no_problem(at)
    planned = open_plan(at)
    assert planned is not None and planned.dataset == "content:" + identity

    at.button(key="workspace_keep").click().run()
    no_problem(at)
    assert (folder / "Males.csv").read_bytes() == b"x\n1\n"
    assert (folder / "Males (2).csv").read_bytes() == MALES
    assert sorted(p.name for p in folder.iterdir()) == ["Males (2).csv", "Males.csv"]
    assert at.selectbox(key="dataset_choice").value == "file:Males (2).csv"
    loaded = at.session_state["dataset"]
    assert loaded.file is not None and loaded.name == "Males (2).csv"
    assert open_plan(at).id == planned.id        # its plans follow it (same content)
    assert "data" not in at.query_params
    assert any("Kept on the server" in words(s.value) for s in at.sidebar.success)

    # a reload: a data-folder file, with its plan
    again = new_session(dict(at.query_params), page="plan.py")
    assert again.session_state["dataset"].name == "Males (2).csv"
    assert open_plan(again).id == planned.id
    # the administrator's file offers no removal
    again.selectbox(key="dataset_choice").select("file:Males.csv").run()
    no_problem(again)
    assert not [b for b in again.button if b.key == "workspace_remove"]

    at.button(key="workspace_remove").click().run()
    assert (folder / "Males (2).csv").exists()          # not before the confirmation
    at.button(key="workspace_remove_yes").click().run()
    no_problem(at)
    assert sorted(p.name for p in folder.iterdir()) == ["Males.csv"]
    assert at.selectbox(key="dataset_choice").value == UPLOAD
    held = at.session_state["dataset"]
    assert held.file is None and held.name == "Males (2).csv"
    assert open_plan(at).id == planned.id
    assert at.query_params["data"] == identity.removeprefix("sha256:")[:16]
    # kept again from memory
    at.button(key="workspace_keep").click().run()
    no_problem(at)
    assert (folder / "Males (2).csv").read_bytes() == MALES
    # the same content uploaded again and kept: the copy already there, not a second one
    upload(at, "again.csv", MALES)
    at.button(key="workspace_keep").click().run()
    no_problem(at)
    assert sorted(p.name for p in folder.iterdir()) == ["Males (2).csv", "Males.csv"]
    assert at.selectbox(key="dataset_choice").value == "file:Males (2).csv"
    assert any("Already kept on the server as Males (2).csv" in words(s.value)
               for s in at.sidebar.success)
