"""Sign-in through AppTest (issue 33): off by default; on, a session that is not signed in
sees the sign-in page and nothing else; each role sees its pages; stewards manage roles on
the People page. ``AppTest.user`` stands for what ``st.user`` reads from the provider's ID
token (tests/e2e/test_signin_browser.py signs in through a real provider)."""

from __future__ import annotations

import pytest

from release import access
from release.access import OPERATOR, Role
from release.roles import Roles
from tests.conftest import ROOT, fresh_plans

ISSUER = "https://id.example.org"
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "x" * 32,
        "client_id": "epsilon-lab", "client_secret": "s" * 16,
        "server_metadata_url": "https://id.example.org/.well-known/openid-configuration"}
DATASET = "Adult"   # the first built-in dataset's name: on every page of a running app


def user(login: str, **claims) -> dict:
    return {"is_logged_in": True, "iss": ISSUER, "sub": f"sub-{login}",
            "email": f"{login}@example.org", "name": login.title(), "email_verified": True,
            **claims}


@pytest.fixture
def signed_in_app(tmp_path, monkeypatch):
    """Sign-in on, a roles file with a steward (ann), an analyst (bob) and a viewer (cy); an
    AppTest factory for a signed-in ``who`` (None: nobody signed in)."""
    monkeypatch.setenv(access.AUTH_ENV, "oidc")
    monkeypatch.setenv("EPSILON_LAB_ROLES", str(tmp_path / "roles.sqlite"))
    with Roles() as store:
        store.add("ann@example.org", Role.STEWARD, by=OPERATOR)
        store.add("bob@example.org", Role.ANALYST, by=OPERATOR)
        store.add("cy@example.org", Role.VIEWER, by=OPERATOR)

    def start(who: dict | None, *, secrets: dict | None = None):
        from streamlit.testing.v1 import AppTest

        fresh_plans()
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.secrets["auth"] = dict(AUTH) if secrets is None else secrets
        at.user = who if who is not None else {}
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    return start


def read(text: str) -> str:
    """Markdown as read on the page: without escapes, bold marks and word joiners."""
    return str(text).replace("\\", "").replace("**", "").replace("\u2060", "")


def shown_text(at) -> str:
    parts = [e.value for kind in ("title", "markdown", "caption", "error", "warning", "info",
                                  "subheader", "success")
             for e in getattr(at, kind)]
    parts += [str(w.label) for w in (*at.button, *at.selectbox, *at.text_input)]
    parts += [str(o) for w in at.selectbox for o in w.options]
    return read(" ".join(str(p) for p in parts))


def can_open(at, page: str) -> bool:
    """Whether ``page`` is in this session's navigation (AppTest refuses any other)."""
    try:
        at.switch_page(f"app_pages/{page}")
    except ValueError as exc:
        assert "Could not find a navigation page" in str(exc)
        return False
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return True


def test_the_readmes_example_has_every_setting_the_gate_asks_for():
    import re
    import tomllib

    from dashboard.signin import REQUIRED_SETTINGS

    readme = (ROOT / "README.md").read_text()
    [example] = [b for b in re.findall(r"```toml\n(.*?)```", readme, flags=re.S)
                 if b.startswith("[auth]")]
    assert set(REQUIRED_SETTINGS) <= set(tomllib.loads(example)["auth"])
    assert f"{access.AUTH_ENV}=oidc" in readme and "add-steward" in readme


def test_off_by_default_nothing_changes(app, monkeypatch):
    monkeypatch.delenv(access.AUTH_ENV, raising=False)
    at = app()
    assert DATASET in shown_text(at)
    assert not [b for b in at.button if b.key in ("sign_in", "sign_out")]
    assert "Signed in" not in shown_text(at)
    assert not can_open(at, "people.py")   # no one to manage: the page is not listed
    assert can_open(at, "releases.py") and can_open(at, "statistics.py")


def test_signed_out_sees_the_sign_in_page_only(signed_in_app):
    at = signed_in_app(None)
    assert [t.value for t in at.title] == ["Epsilon Lab"]
    assert [b.label for b in at.button] == ["Sign in"]
    assert not at.sidebar.children or not any(
        getattr(at.sidebar, kind) for kind in ("selectbox", "caption", "number_input"))
    text = shown_text(at)
    assert DATASET not in text and "Iris" not in text and "ε" not in text, text
    for page in ("releases.py", "statistics.py", "people.py", "glossary.py"):
        if can_open(at, page):   # no navigation at all: a page asked for runs the gate only
            assert [t.value for t in at.title] == ["Epsilon Lab"], page
            assert [b.label for b in at.button] == ["Sign in"]
            assert DATASET not in shown_text(at)


@pytest.mark.parametrize("missing", ["cookie_secret", "client_secret", "server_metadata_url"])
def test_sign_in_without_its_settings_says_which_and_shows_nothing(signed_in_app, missing):
    at = signed_in_app(user("ann"), secrets={k: v for k, v in AUTH.items() if k != missing})
    [error] = at.error
    assert f"`{missing}`" in error.value and "secrets.toml" in error.value
    assert DATASET not in shown_text(at)
    assert not at.button and not at.selectbox


def test_a_mistyped_setting_shows_nothing(signed_in_app, monkeypatch):
    monkeypatch.setenv(access.AUTH_ENV, "yes")
    at = signed_in_app(user("ann"))
    assert "must be 'oidc'" in read(at.error[0].value)
    assert DATASET not in shown_text(at) and not at.selectbox


def test_signed_in_without_a_role(signed_in_app):
    at = signed_in_app(user("zed"))
    assert "no steward has given you a role" in read(at.warning[0].value)
    assert [b.label for b in at.button] == ["Sign out"]
    assert DATASET not in shown_text(at)
    if can_open(at, "releases.py"):
        assert [t.value for t in at.title] == ["Epsilon Lab"]


def test_an_unverified_email_is_not_the_stewards(signed_in_app):
    at = signed_in_app(user("ann", email_verified=False, sub="sub-mallory"))
    assert at.warning and DATASET not in shown_text(at)


def test_a_viewer_sees_the_releases_only(signed_in_app, tmp_path, monkeypatch):
    # a ledger of its own: the session's may hold releases of the built-in dataset, which the
    # Releases page names (a release's name is public; the dataset picker is what must not be)
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    at = signed_in_app(user("cy"))
    assert [t.value for t in at.title] == ["Releases"]   # their first page
    text = shown_text(at)
    assert "Signed in as Cy (cy@example.org) (viewer)" in text, text
    assert DATASET not in text   # no dataset picker, no caption of the data
    assert not at.sidebar.selectbox and not at.sidebar.number_input
    assert can_open(at, "glossary.py")
    for page in ("home.py", "data.py", "statistics.py", "plan.py", "people.py"):
        assert not can_open(at, page), page


def test_an_analyst_sees_all_but_people(signed_in_app):
    at = signed_in_app(user("bob"))
    assert DATASET in shown_text(at)   # the sidebar's dataset, as today
    assert can_open(at, "statistics.py") and can_open(at, "releases.py")
    assert not can_open(at, "people.py")


def test_a_steward_manages_roles_on_the_people_page(signed_in_app):
    at = signed_in_app(user("ann"))
    assert can_open(at, "people.py")
    table = at.dataframe[0].value
    assert list(table["email"]) == ["ann@example.org", "bob@example.org", "cy@example.org"]
    # ann's first sign-in tied her entry to her account; the others have not signed in yet
    assert list(table["signed in"]) == ["yes", "not yet", "not yet"]
    at.selectbox(key="people_change_who").select("cy@example.org")
    at.selectbox(key="people_change_role").select("analyst")
    at.button(key="people_change").click().run()
    assert not at.exception
    assert "cy@example.org is now analyst." in read(at.success[0].value)
    at.text_input(key="people_add_email").input("Dee@Example.org")
    at.selectbox(key="people_add_role").select("viewer")
    at.button(key="people_add").click().run()
    at.selectbox(key="people_change_who").select("ann@example.org")
    at.selectbox(key="people_change_role").select("viewer")
    at.button(key="people_change").click().run()
    assert "last steward" in read(at.error[0].value)
    at.text_input(key="people_add_email").input("bob@example.org")
    at.button(key="people_add").click().run()
    assert "has a role already" in read(at.error[0].value)
    with Roles() as store:
        assert [(m.email, m.role.value) for m in store.members()] == [
            ("ann@example.org", "steward"), ("bob@example.org", "analyst"),
            ("cy@example.org", "analyst"), ("dee@example.org", "viewer")]
        assert store.members()[2].changed_by == "ann@example.org"


def test_the_people_page_refuses_one_who_lost_the_role(signed_in_app):
    """A steward demoted (from the command line) while on the People page keeps no control
    of it at their next click."""
    at = signed_in_app(user("ann"))
    assert can_open(at, "people.py")
    with Roles() as store:
        store.add("eve@example.org", Role.STEWARD, by=OPERATOR)
        store.change("ann@example.org", Role.ANALYST, by=OPERATOR)
    at.run()
    assert not at.exception
    assert "People and roles" not in [t.value for t in at.title]
    assert not [b for b in at.button if b.key and b.key.startswith("people_")]


def test_the_people_page_checks_on_its_own(signed_in_app):
    """Run without the app's gate (nobody bound), the page itself refuses."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app_pages" / "people.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["Only a steward can manage people and roles."]
    assert not at.dataframe and not at.button


def _callback_script() -> None:
    import streamlit as st

    from dashboard import signin

    def clicked() -> None:   # runs before the script, so before the gate would bind anyone
        st.session_state["acting"] = signin.acting_person()

    st.button("Do", key="do", on_click=clicked)


@pytest.mark.parametrize(("auth", "who", "expected"), [
    ("oidc", user("bob"), "bob@example.org"), ("oidc", {}, None),
    ("oidc", {"is_logged_in": True, "email": "x@example.org"}, None),   # no subject: nobody
    ("off", {}, "local")])
def test_a_callback_can_ask_who_acts(monkeypatch, auth, who, expected):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(access.AUTH_ENV, auth)
    monkeypatch.syspath_prepend(str(ROOT))
    at = AppTest.from_function(_callback_script)
    at.user = who
    at.run()
    at.button(key="do").click().run()
    acting = at.session_state["acting"]
    if expected is None:
        assert acting is None
    elif expected == "local":
        assert acting == access.LOCAL
    else:
        assert (acting.email, acting.subject, acting.issuer) == (expected, "sub-bob", ISSUER)


def _plan_page(at, *, add: bool = True):
    """A Laplace count of the data in the plan (``add``), and the plan page open."""
    at.switch_page("app_pages/statistics.py").run()
    at.selectbox(key="stats_query").select("count").run()
    if add:
        at.button(key="stats_add_to_plan").click().run()
    at.switch_page("app_pages/plan.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_budget_panel_shows_each_role_what_it_may_do(signed_in_app, tmp_path,
                                                          monkeypatch):
    """Issue 33 item 4: an analyst reads "Only a steward can change the budget." and has no
    control that sets it, nor an allotment until a steward gives one on the same panel; then
    the analyst sees it, and a plan beyond it is refused before the Release button."""
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    bob = _plan_page(signed_in_app(user("bob")))
    text = shown_text(bob)
    assert "Only a steward can change the budget." in text
    assert "You have no allotment of this dataset's budget" in text
    assert not [b for b in bob.button if b.key in ("plan_set_budget", "plan_allot")]
    assert bob.button(key="plan_release").disabled

    ann = _plan_page(signed_in_app(user("ann")))
    assert "Only a steward can change the budget." not in shown_text(ann)
    assert ann.selectbox(key="plan_allot_analyst").options == ["bob@example.org"]
    ann.number_input(key="plan_allot_epsilon").set_value(2.0).run()
    ann.button(key="plan_allot").click().run()
    assert not ann.exception, [e.value for e in ann.exception]
    assert "bob@example.org now has an allotment of ε = 2" in shown_text(ann)
    [table] = [d.value for d in ann.dataframe if "Analyst" in d.value.columns]
    assert table[["Analyst", "ε", "Set by"]].values.tolist() == [
        ["bob@example.org", 2.0, "ann@example.org"]]

    bob = _plan_page(signed_in_app(user("bob")))
    [mine] = [m for m in bob.metric if m.label == "Your allotment"]
    assert mine.value == "ε = 2"
    # beside the dataset's "Left" (its budget only), the allotment says whether the plan fits it
    assert mine.delta == "ε = 2 left: the plan fits your allotment"
    assert "You have no allotment" not in shown_text(bob)

    # the analyst releases within it: recorded as theirs, charged to their allotment
    from plan.identity import DatasetIdentity
    from release.access import Person
    from release.ledger import Ledger

    bob.checkbox(key="plan_release_confirm").check().run()
    bob.button(key="plan_release").click().run()
    assert not bob.exception, [e.value for e in bob.exception]
    with access.acting_as(Person(ISSUER, "sub-ann", "ann@example.org")), Ledger() as ledger:
        [record] = ledger.releases()
        assert record.by == "bob@example.org" and record.epsilon == 1.0
        given = ledger.allotment(DatasetIdentity("", record.dataset.content_hash),
                                 "bob@example.org")
        assert (given.spent_epsilon, given.remaining_epsilon) == (1.0, 1.0)
        assert ledger.file_names()[record.id]   # the analyst's release kept its files


UPLOADED = b"id,age,town\n" + b"".join(f"{i},{20 + i % 50},{'ab'[i % 2]}\n".encode()
                                        for i in range(60))


def test_an_uploads_plans_and_name_stay_with_its_uploader(signed_in_app, tmp_path,
                                                         monkeypatch):
    """Issue 33 item 6: with sign-in on, the plans saved for an upload (not kept on the
    server) are its uploader's: another user who uploads the same content sees none of them
    and is not told its name; the uploader, in a new session, gets theirs back."""
    from streamlit.testing.v1 import AppTest

    from dashboard.plan_library import PlanLibrary
    from tests.conftest import fresh_plans

    plans = fresh_plans()
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    saved = "release_plan_saved"

    def session(who: str, name: str):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.secrets["auth"] = dict(AUTH)
        at.user = user(who)
        at.run()
        at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
        at.file_uploader(key="upload_file").set_value((name, UPLOADED, "text/csv")).run()
        assert not at.exception, [e.value for e in at.exception]
        return at

    def open_plans(at) -> list:
        return list((at.session_state[saved] if saved in at.session_state else {}).values())

    bob = _plan_page(session("bob", "towns-bob.csv"))
    [mine] = open_plans(bob)
    assert f"|uploader:{ISSUER} sub-bob" in mine.dataset
    assert [p.name for p in PlanLibrary(plans).plans(mine.dataset)] == [mine.name]

    ann = _plan_page(session("ann", "same.csv"))
    assert all(p.dataset != mine.dataset for p in open_plans(ann))
    assert "towns-bob.csv" not in shown_text(ann)

    again = _plan_page(session("bob", "renamed.csv"), add=False)
    assert [p.id for p in open_plans(again)] == [mine.id]


def test_an_analyst_submits_a_plan_and_a_steward_opens_it_to_release(signed_in_app,
                                                                     tmp_path, monkeypatch):
    """Issue 33 item 3: "Submit for a steward to release" marks the analyst's saved plan; the
    steward sees it on the plan page, by whom, and opens it (then releases it below)."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import fresh_plans

    fresh_plans()
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))

    def session(who: str):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.secrets["auth"] = dict(AUTH)
        at.user = user(who)
        at.run()
        return at

    bob = _plan_page(session("bob"))
    bob.button(key="saved_plan_submit").click().run()
    assert not bob.exception, [e.value for e in bob.exception]
    assert "Submitted for a steward to release (" in shown_text(bob)
    assert bob.button(key="saved_plan_submit").disabled

    ann = session("ann")
    ann.switch_page("app_pages/plan.py").run()
    text = shown_text(ann)
    assert "Submitted for release (1)" in text and "by bob@example.org (sub-bob)" in text
    assert not [b for b in ann.button if b.key == "saved_plan_submit"]
    ann.button(key="saved_plan_new").click().run()   # she is on a plan of her own
    [opener] = [b for b in ann.button if b.key.startswith("submitted_plan_open_")]
    assert not opener.disabled
    opener.click().run()
    assert not ann.exception, [e.value for e in ann.exception]
    assert ann.button(key=opener.key).disabled   # open here now: the steward releases it


def test_the_releases_page_shows_a_steward_who_released_and_who_set_the_budget(
        signed_in_app, tmp_path, monkeypatch):
    """Issue 33 item 5: the ledger's who, on the Releases page for a steward (the viewer sees
    the releases, not who made them); entries from before the ledger kept who say so."""
    from plan.identity import DatasetIdentity
    from release.access import Person
    from release.ledger import Ledger

    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    ann = Person(ISSUER, "sub-ann", "ann@example.org", "Ann", True)
    data = DatasetIdentity("adult", "sha256:" + "a" * 64)
    with access.acting_as(ann), Ledger() as ledger:
        ledger.set_budget(data, 2.0, reason="agreed")
        ledger.record_release(data, epsilon=0.5, delta=0.0, accounting="basic",
                              values_hash="sha256:" + "b" * 64, plan_json="{}",
                              implementation="test")
    def tables(who: str) -> tuple:
        at = signed_in_app(user(who))
        at.switch_page("app_pages/releases.py").run()
        assert not at.exception, [e.value for e in at.exception]
        return (next(d.value for d in at.dataframe if "Values hash" in d.value.columns),
                next(d.value for d in at.dataframe if "Reason" in d.value.columns))

    releases, budgets = tables("ann")
    assert releases["Released by"].tolist() == ["ann@example.org"]
    assert budgets["Changed by"].tolist() == ["ann@example.org"]
    releases, budgets = tables("cy")
    assert len(releases) == 1 and "Released by" not in releases.columns
    assert len(budgets) == 1 and "Changed by" not in budgets.columns


def test_an_upload_a_steward_keeps_shares_its_plans(signed_in_app, tmp_path, monkeypatch):
    """Issue 33 item 6: once a steward keeps an upload on the server, the plans saved for it
    are the kept file's, which every user of the server opens."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import fresh_plans

    fresh_plans()
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("EPSILON_LAB_LEDGER", str(tmp_path / "ledger.sqlite"))
    saved = "release_plan_saved"

    def session(who: str):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.secrets["auth"] = dict(AUTH)
        at.user = user(who)
        at.run()
        return at

    ann = session("ann")
    ann.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    ann.file_uploader(key="upload_file").set_value(("towns.csv", UPLOADED, "text/csv")).run()
    ann = _plan_page(ann)
    [planned] = ann.session_state[saved].values()
    assert "|uploader:" in planned.dataset
    ann.button(key="workspace_keep").click().run()
    assert not ann.exception, [e.value for e in ann.exception]

    bob = session("bob")
    bob.selectbox(key="dataset_choice").select("file:towns.csv").run()
    bob.switch_page("app_pages/plan.py").run()
    assert not bob.exception, [e.value for e in bob.exception]
    assert [p.id for p in bob.session_state[saved].values()] == [planned.id]
