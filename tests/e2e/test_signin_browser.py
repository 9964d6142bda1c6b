"""Sign-in end to end (issue 33): the app with ``EPSILON_LAB_AUTH=oidc`` and a real OpenID
Connect provider (npm's oidc-provider, tests/e2e/oidc_provider.py) on the loopback address,
signed into through the provider's own login form in Chromium.

Signed out, a page shows the sign-in page only (no dataset name); a viewer sees the Releases
page and the Glossary only; an analyst reads that only a steward changes the budget, and cannot
spend beyond their allotment (refused on the page, nothing in the ledger file) while a release
within it is recorded and charged to it; a steward sees the People page, changes a role there
(read back from the roles file) and signs out, which ends the session.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys

import pytest

from plan.identity import DatasetIdentity, content_digest
from release.access import OPERATOR, acting_as
from release.ledger import Ledger
from release.roles import Roles
from tests.e2e.conftest import (
    _free_port,
    assert_no_exception,
    choose_count,
    choose_dataset,
    running_server,
    screenshot,
    wait_for_app,
)
from tests.e2e.oidc_provider import running_provider

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ACCOUNTS = {"ann": {"email": "ann@example.org", "name": "Ann Steward"},
            "bob": {"email": "bob@example.org", "name": "Bob Analyst"},
            "cy": {"email": "cy@example.org", "name": "Cy Viewer"}}
DATASET = "Adult"   # the first built-in dataset: named in the sidebar of every page
#: The analyst's allotment is of Iris's budget: Adult stays without one for the test that
#: shows an analyst who has none, in whatever order the two run.
ALLOTTED = DatasetIdentity("Iris", content_digest(os.path.join(ROOT, "data", "iris.csv")))
BUDGET, ALLOTMENT = 3.0, 0.5   # the allotment is below a count's ε = 1 (the page's default)


@pytest.fixture(scope="module")
def app_with_sign_in(tmp_path_factory):
    """The provider, a roles file made on the command line (a steward, an analyst and a
    viewer), a ledger of the module's own where the server's operator gave Iris a budget and
    the analyst an allotment of it, and the app with sign-in on and its ``[auth]`` settings in
    a secrets file of its own."""
    folder = tmp_path_factory.mktemp("signin")
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    client_id, client_secret = "epsilon-lab", secrets.token_urlsafe(24)
    env = {"EPSILON_LAB_AUTH": "oidc", "EPSILON_LAB_ROLES": str(folder / "roles.sqlite"),
           "EPSILON_LAB_PLANS": str(folder / "plans.sqlite"),
           "EPSILON_LAB_LEDGER": str(folder / "ledger.sqlite")}
    for command in (["add-steward", "ann@example.org"], ["add", "cy@example.org", "viewer"],
                    ["add", "bob@example.org", "analyst"]):
        done = subprocess.run([sys.executable, "-m", "release.roles", *command], cwd=ROOT,
                              env={**os.environ, **env}, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
    with running_provider(ACCOUNTS, client_id=client_id, client_secret=client_secret,
                          redirect_uri=origin + "/oauth2callback") as issuer:
        secrets_file = folder / "secrets.toml"
        secrets_file.write_text(
            "[auth]\n"
            f'redirect_uri = "{origin}/oauth2callback"\n'
            f'cookie_secret = "{secrets.token_urlsafe(32)}"\n'
            f'client_id = "{client_id}"\n'
            f'client_secret = "{client_secret}"\n'
            f'server_metadata_url = "{issuer}/.well-known/openid-configuration"\n'
            # the provider's form every time (Streamlit's default prompt, select_account,
            # is one oidc-provider refuses as unsupported)
            'client_kwargs = { prompt = "login" }\n')
        with pytest.MonkeyPatch.context() as patch:   # the server inherits them
            for key, value in env.items():
                patch.setenv(key, value)
            # before the server starts, as its operator would (no page or command gives an
            # allotment but a steward's budget panel)
            with acting_as(OPERATOR), Ledger() as ledger:
                ledger.set_budget(ALLOTTED, BUDGET, reason="agreed with the data owner")
                ledger.set_allotment(ALLOTTED, "bob@example.org", ALLOTMENT)
            with running_server(port=port, options=["--secrets.files", str(secrets_file)]):
                yield origin, folder / "roles.sqlite"


def main_text(page) -> str:
    return page.locator("[data-testid='stApp']").inner_text()


def nav_titles(page) -> list[str]:
    """The page titles in the sidebar's navigation (each link's last line: after its icon)."""
    return [t.strip().splitlines()[-1] for t in
            page.locator("[data-testid='stSidebarNavLink']").all_inner_texts()]


def sign_in(page, origin: str, login: str) -> None:
    """Press Sign in, fill the provider's own form, allow the app, land back on the app."""
    page.goto(origin + "/")
    wait_for_app(page)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_selector("input[name='login']", timeout=30_000)
    page.fill("input[name='login']", login)
    page.fill("input[name='password']", "any password")   # the development form takes any
    page.get_by_role("button", name="Sign-in").click()
    consent = page.get_by_role("button", name="Continue")
    consent.wait_for(timeout=30_000)
    consent.click()
    page.wait_for_url(origin + "/**", timeout=30_000)
    page.wait_for_selector("[data-testid='stSidebarNavLink']", timeout=60_000)
    wait_for_app(page)


def test_signed_out_a_page_shows_only_the_sign_in(app_with_sign_in, page):
    origin, _ = app_with_sign_in
    for path in ("/", "/releases", "/statistics"):
        page.goto(origin + path)
        wait_for_app(page)
        assert page.get_by_role("button", name="Sign in").is_visible()
        text = main_text(page)
        assert DATASET not in text and "Iris" not in text, text
        assert nav_titles(page) == []
        assert page.locator(".st-key-dataset_choice").count() == 0
        assert_no_exception(page)


def test_a_viewer_sees_only_the_releases(app_with_sign_in, page):
    origin, _ = app_with_sign_in
    sign_in(page, origin, "cy")
    assert_no_exception(page)
    assert nav_titles(page) == ["Releases", "Glossary"]
    assert page.get_by_role("heading", name="Releases").first.is_visible()
    text = main_text(page)
    assert "Cy Viewer" in text and "viewer" in text
    assert DATASET not in text, text
    page.goto(origin + "/statistics")   # a page not theirs, asked for by its address
    wait_for_app(page)
    assert "Noisy statistics" not in nav_titles(page)
    assert DATASET not in main_text(page)
    screenshot(page, "signin-viewer")


def test_an_analyst_cannot_set_the_budget(app_with_sign_in, page):
    """Issue 33 item 4: on the Release plan page an analyst reads that only a steward changes
    the budget, has no control that sets it, and has no allotment yet."""
    origin, _ = app_with_sign_in
    sign_in(page, origin, "bob")
    page.locator("[data-testid='stSidebarNavLink']", has_text="Noisy statistics").click()
    wait_for_app(page)
    choose_count(page)
    page.get_by_role("button", name="Add to plan").click()
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNavLink']", has_text="Release plan").click()
    wait_for_app(page)
    page.get_by_text("Only a steward can change the budget.").wait_for(timeout=60_000)
    text = main_text(page)
    assert "You have no allotment of this dataset's budget" in text
    assert page.locator(".st-key-plan_set_budget").count() == 0
    assert_no_exception(page)
    screenshot(page, "signin-analyst-budget")


def shown(page) -> str:
    """The page's text as read: without the word joiners that keep markdown literal."""
    return main_text(page).replace("\u2060", "")


def bobs_ledger(roles_file) -> tuple[list, object]:
    """What the module's ledger file holds: every release, and bob's allotment of Iris."""
    with acting_as(OPERATOR), Ledger(roles_file.with_name("ledger.sqlite")) as ledger:
        return ledger.releases(), ledger.allotment(ALLOTTED, "bob@example.org")


def release_controls_disabled(page) -> bool:
    return (page.locator(".st-key-plan_release_confirm input").is_disabled()
            and page.locator(".st-key-plan_release button").is_disabled())


def test_an_analyst_cannot_spend_beyond_the_allotment(app_with_sign_in, page):
    """Issue 33, what to show: an analyst with an allotment of ε = 0.5 of Iris's budget plans
    a count at ε = 1; the page refuses it in the budget panel's words and offers no release,
    and the ledger file records nothing. Given ε = 1.5, the same plan is released (recorded as
    theirs, charged to the allotment, which then shows ε = 0.5 left), and is refused again."""
    origin, roles_file = app_with_sign_in
    sign_in(page, origin, "bob")
    choose_dataset(page, "Iris")
    page.locator("[data-testid='stSidebarNavLink']", has_text="Noisy statistics").click()
    wait_for_app(page)
    choose_count(page)
    page.get_by_role("button", name="Add to plan").click()
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNavLink']", has_text="Release plan").click()
    wait_for_app(page)
    allotment = page.locator("[data-testid='stMetric']", has_text="Your allotment")
    allotment.wait_for(timeout=60_000)
    assert allotment.get_by_test_id("stMetricValue").inner_text().strip() == "ε = 0.5"
    # the dataset's own "Left" judges its budget only, and says so beside the allotment's
    assert allotment.get_by_test_id("stMetricDelta").inner_text().strip() == (
        "ε = 0.5 left: the plan does not fit your allotment")
    left = page.get_by_test_id("stMetric").filter(
        has=page.get_by_test_id("stMetricLabel").get_by_text("Left", exact=True))
    assert left.get_by_test_id("stMetricDelta").inner_text().strip() == (
        "the plan fits this budget")
    assert ("This plan is refused: the plan would record ε = 1 and your allotment has "
            "ε = 0.5 left. Lower the queries' budgets.") in shown(page)
    assert release_controls_disabled(page)
    assert_no_exception(page)
    screenshot(page, "signin-analyst-beyond-allotment")
    releases, given = bobs_ledger(roles_file)
    assert releases == [] and given.spent_epsilon == 0.0

    # the operator gives bob more; the page reads the ledger again when it is opened again
    with acting_as(OPERATOR), Ledger(roles_file.with_name("ledger.sqlite")) as ledger:
        ledger.set_allotment(ALLOTTED, "bob@example.org", 1.5)
    page.locator("[data-testid='stSidebarNavLink']", has_text="Noisy statistics").click()
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNavLink']", has_text="Release plan").click()
    wait_for_app(page)
    allotment.wait_for(timeout=60_000)
    assert "This plan is refused" not in shown(page)
    page.locator(".st-key-plan_release_confirm input").check(force=True)
    wait_for_app(page)
    page.locator(".st-key-plan_release button").click()
    wait_for_app(page)
    text = shown(page)
    assert "Released and recorded: entry #" in text
    assert f"ε = 1; ε = {BUDGET - 1:g} left for this dataset." in text, text
    assert (allotment.get_by_test_id("stMetricValue").inner_text().strip(),
            allotment.get_by_test_id("stMetricDelta").inner_text().strip()) == (
        "ε = 1.5", "ε = 0.5 left: the plan does not fit your allotment")
    assert ("This plan is refused: the plan would record ε = 1 and your allotment has "
            "ε = 0.5 left.") in text
    assert release_controls_disabled(page)
    assert_no_exception(page)
    [release], given = bobs_ledger(roles_file)
    assert (release.by, release.epsilon, release.dataset.content_hash) == (
        "bob@example.org", 1.0, ALLOTTED.content_hash)
    assert (given.spent_epsilon, given.remaining_epsilon) == (1.0, 0.5)


def test_a_steward_changes_a_role_and_signs_out(app_with_sign_in, page):
    origin, roles_file = app_with_sign_in
    sign_in(page, origin, "ann")
    assert_no_exception(page)
    titles = nav_titles(page)
    assert "People and roles" in titles and "Noisy statistics" in titles, titles
    page.locator("[data-testid='stSidebarNavLink']", has_text="People and roles").click()
    wait_for_app(page)
    box = page.locator(".st-key-people_change_who [role='combobox']")
    box.click()
    page.get_by_role("option", name="cy@example.org", exact=True).click()
    wait_for_app(page)
    page.locator(".st-key-people_change_role [role='combobox']").click()
    page.get_by_role("option", name="analyst", exact=True).click()
    wait_for_app(page)
    page.locator(".st-key-people_change button").click()
    wait_for_app(page)
    assert "is now analyst" in main_text(page)
    assert_no_exception(page)
    screenshot(page, "signin-steward-people")
    with Roles(roles_file) as store:
        assert {m.email: m.role.value for m in store.members()} == {
            "ann@example.org": "steward", "bob@example.org": "analyst",
            "cy@example.org": "analyst"}
    page.get_by_role("button", name="Sign out").click()
    # the provider asks to confirm its own sign-out, then sends the browser back to the app
    confirm = page.get_by_role("button", name="Yes, sign me out")
    confirm.wait_for(timeout=30_000)
    confirm.click()
    page.wait_for_url(origin + "/**", timeout=30_000)
    page.get_by_role("button", name="Sign in").wait_for(timeout=60_000)
    page.goto(origin + "/people")   # the session is gone: no page without signing in again
    wait_for_app(page)
    assert page.get_by_role("button", name="Sign in").is_visible()
    assert DATASET not in main_text(page) and nav_titles(page) == []
