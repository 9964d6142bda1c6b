"""Epsilon Lab: see what differential privacy does to your data before you publish anything.

Entry point: page config, navigation over ``pages/``, and the sidebar (dataset, seed).
"""

from __future__ import annotations

import streamlit as st

from dashboard import (
    datasets,
    declared,
    person,
    plan_conflict,
    plan_store,
    presenting,
    signin,
    state,
    teaching,
    workspace,
)
from dashboard.data import folder
from dashboard.text import plain
from engine import EngineError
from release.access import Action

PAGES = [
    st.Page("app_pages/home.py", title="Welcome", icon=":material/home:", default=True),
    st.Page("app_pages/data.py", title="Data", icon=":material/table:"),
    st.Page("app_pages/statistics.py", title="Noisy statistics", icon=":material/bar_chart:"),
    st.Page("app_pages/tables.py", title="Noisy tables", icon=":material/grid_on:"),
    st.Page("app_pages/groups.py", title="Groups", icon=":material/workspaces:"),
    st.Page("app_pages/quantiles.py", title="Quantiles", icon=":material/percent:"),
    st.Page("app_pages/selection.py", title="Selection", icon=":material/how_to_vote:"),
    st.Page("app_pages/choose_epsilon.py", title="Choose epsilon", icon=":material/tune:"),
    st.Page("app_pages/attacker.py", title="Play the attacker", icon=":material/casino:"),
    st.Page("app_pages/plan.py", title="Release plan", icon=":material/checklist:"),
    st.Page("app_pages/releases.py", title="Releases", icon=":material/history:"),
    st.Page("app_pages/learning.py", title="Private learning", icon=":material/model_training:"),
    st.Page("app_pages/synthetic.py", title="Synthetic data", icon=":material/dataset:"),
    # Listed only while sign-in is on, for stewards (dashboard.signin.visible_pages).
    st.Page("app_pages/people.py", title="People and roles", icon=":material/group:"),
    st.Page("app_pages/glossary.py", title="Glossary", icon=":material/menu_book:"),
]

UPLOAD_CHOICE = workspace.UPLOAD_CHOICE
UPLOAD_TRIED = "upload_tried_id"   # file_id of the last upload read, whether it loaded or not
UPLOAD_ERROR = "upload_error"
UPLOAD_READING = "upload_reading"  # the file being read (state.UploadReading)


def _read_upload(upload) -> tuple[datasets.LoadedDataset | None, str | None]:
    """The dataset in an uploaded file, or None and the message saying why it did not load."""
    try:
        return datasets.load_upload(upload.getvalue(), upload.name), None
    except datasets.DatasetError as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 — a bad file must never show a traceback
        # The exception's text is not shown: it may quote the file's content.
        return None, (f"The file could not be read (unexpected {type(exc).__name__}). "
                      "Check that it is a CSV file with a header row, save it again "
                      "as 'CSV UTF-8' and upload it again.")


def _load_upload() -> None:
    """Read a newly uploaded file once; on failure keep the dataset loaded before.

    ``state.UPLOAD_ID`` names the upload that loaded (it keys the caches), so it changes only
    when a file loads; a file that fails is remembered apart, so it is read only once.
    """
    ss = st.session_state
    loaded = state.read_upload("upload_file", _read_upload, tried=UPLOAD_TRIED,
                               error=UPLOAD_ERROR, reading=UPLOAD_READING)
    if loaded is None:
        return
    ss[state.UPLOAD_ID] = ss[UPLOAD_TRIED]
    ss[state.UPLOADED] = loaded
    ss[state.DATASET] = loaded


def _load_data_file(choice: str, listing: folder.Listing) -> None:
    """Make the chosen data-folder file the dataset; if it cannot be opened, say so and keep
    the dataset loaded before (the pages stay usable)."""
    ss = st.session_state
    entry = next((f for f in listing.files if folder.choice_of(f) == choice), None)
    try:
        if entry is None:
            raise EngineError(f"{choice[len(folder.CHOICE_PREFIX):]!r} is no longer in the "
                              "data folder (moved or removed): choose another dataset.")
        loaded = folder.load_data_file(entry)
        loaded.relation.shape  # noqa: B018 — read it now (spinner on the first scan)
        ss[state.DATASET] = loaded
    except EngineError as exc:
        st.error(plain(exc, limit=600), icon=":material/error:")
        if ss[state.DATASET].file is not None and ss[state.DATASET].name == choice[
                len(folder.CHOICE_PREFIX):]:   # the file in use is the one that failed
            ss[state.DATASET] = state.builtin(state.DEFAULT_DATASET)
        st.info(f"Until it can be read, the pages use {plain(ss[state.DATASET].name)}.")


def _dataset_caption(loaded: datasets.LoadedDataset) -> None:
    try:
        rows, columns = loaded.relation.shape
    except EngineError as exc:
        st.error(plain(exc, limit=600), icon=":material/error:")
        return
    st.caption(f"**{plain(loaded.name)}**: {rows:,} rows × {columns} columns. "
               f"{plain(loaded.source, limit=300)}")


def sidebar(page: str):
    """Dataset and seed pickers, shared by every page; returns the sidebar slot of the
    privacy unit's caption. A new session starts on the teaching dataset of ``page`` (its URL
    path) when it is a teaching page."""
    ss = st.session_state
    with st.sidebar:
        listing = folder.listing()
        choices = [*datasets.BUILTIN_DATASETS, *datasets.TEACHING_DATASETS,
                   *map(folder.choice_of, listing.files),
                   UPLOAD_CHOICE]
        gone = ss.get("dataset_choice")
        if folder.is_file_choice(gone) and gone not in choices:
            st.error(f"{plain(gone[len(folder.CHOICE_PREFIX):])} is no longer in the data "
                     "folder (moved, removed or unreadable): choose another dataset. The "
                     "pages now use the first built-in dataset.", icon=":material/error:")
        state.remembered("dataset_choice", teaching.opening_dataset(page), options=choices)
        choice = st.selectbox("Dataset", choices, key="dataset_choice",
                              format_func=folder.shown_name)
        state.remember("dataset_choice")
        if listing.problem:
            st.error(plain(listing.problem, limit=600), icon=":material/error:")
        if listing.left_out:
            with st.expander(f"{len(listing.left_out)} data-folder entries not offered"):
                for problem in listing.left_out:
                    st.caption(plain(problem, limit=400))
        if folder.is_file_choice(choice):
            _load_data_file(choice, listing)
        elif choice == UPLOAD_CHOICE:
            st.file_uploader(
                "CSV, TSV or .csv.gz (first row = column names)",
                type=["csv", "tsv", "gz", "txt"], key="upload_file",
                help=f"Up to {datasets.MAX_UPLOAD_MB} MB. The file stays in this session's "
                     "memory, unless you keep it on the server (below): it is not written to "
                     "disk or shared with other users. What you declare about it and the "
                     "plans you save are kept on the server.",
            )
            _load_upload()
            if ss.get(UPLOAD_ERROR):
                st.error(plain(ss[UPLOAD_ERROR], limit=1000), icon=":material/error:")
            if ss.get(state.UPLOADED) is not None:
                ss[state.DATASET] = ss[state.UPLOADED]
            else:
                st.info(f"Until a file loads, the pages use {plain(ss[state.DATASET].name)}.")
        else:
            rows = 1000
            if choice == "Synthetic census":
                state.remembered("census_rows", 1000, parse=int)
                rows = st.number_input("Rows to generate", min_value=100,
                                       max_value=datasets.MAX_SYNTHETIC_ROWS, step=1000,
                                       key="census_rows")
                state.remember("census_rows")
            elif choice in datasets.PERSON_IDS:
                state.remembered("visits_rows", 10_000, parse=int)
                rows = st.number_input(
                    "Visits to generate", min_value=100, max_value=datasets.MAX_VISITS_ROWS,
                    step=10_000, key="visits_rows",
                    help="Rows of the synthetic table (one per visit), up to 10 million.")
                state.remember("visits_rows")
            ss[state.DATASET] = state.builtin(choice, int(rows))
        loaded = ss[state.DATASET]
        declared.opened(loaded, state.dataset_key())   # the schema and unit kept on the server
        if loaded.declared_unit is not None:   # the unit the data comes with, until changed
            person.start_with(state.dataset_key(), loaded.declared_unit)
        _dataset_caption(loaded)
        declared.notices()   # saves what a callback declared; says what was restored
        for warning in loaded.warnings:
            st.warning(plain(warning, limit=400))
        workspace.file_controls("upload_file")   # keep an upload on the server, or remove it
        state.remembered("seed_input", state.DEFAULT_SEED, parse=int)
        ss[state.SEED] = st.number_input(
            "Random seed", min_value=0, max_value=2**31 - 1, step=1, key="seed_input",
            help="Simulations are reproducible: the same seed gives the same noisy results.")
        state.remember("seed_input")
        presenting.toggle()
        st.page_link(PAGES[-1], label="Glossary of terms",
                     icon=":material/menu_book:")
        state.history_per_page()
        return st.empty()   # the privacy unit, written after the page (which may change it)


def saved_plan_notices() -> None:
    """Plans are saved per dataset (an upload by its content); if another tab changed this
    session's plan since its last run, say so (the session now shows that version)."""
    key = state.dataset_key()
    workspace.prepare_plans(key)   # an upload's plans under its content; the URL's plan
    for notice in plan_store.sync(key):
        st.info(plain(notice, limit=300), icon=":material/sync:")
    plan_conflict.conflict_section(key)   # another tab saved this plan: reload or copy


def unit_caption(slot) -> None:
    """The privacy unit in the sidebar, as the page just run left it."""
    unit = person.current_unit(state.dataset_key())
    slot.caption(f"Privacy unit: **{plain(unit.describe())}**. {plain(person.neighbours(unit))}"
                 " Declare it on the Data page.")


# An emoji icon is drawn in the page itself (a data: URL); a ":material/…:" page icon would be
# fetched from a third-party font host on every page view.
st.set_page_config(page_title="Epsilon Lab", page_icon="🔒", layout="wide")
# Before anything else is drawn: with sign-in on, a session without a signed-in person with a
# role sees the sign-in page and nothing else (the run stops inside).
visitor = signin.gate()
explores = visitor.may(Action.EXPLORE)
state.init()
# Every page listed: past twelve pages Streamlit would fold the last ones under "View more".
navigation = st.navigation(signin.visible_pages(PAGES, visitor), expanded=True)
# A viewer's pages read the ledger only: no dataset is picked or shown for them.
unit_slot = sidebar(navigation.url_path) if explores else None
if explores:
    saved_plan_notices()
    workspace.waiting_notice()
    # Written now as well: a page that stops early (st.stop: nothing is sent after it) would
    # leave the URL without the dataset and the open plan, and a reload without them.
    workspace.write_url(navigation.url_path)
try:
    navigation.run()
except EngineError as exc:
    # The data could not be read (a file changed or removed, the cluster down): say so in
    # place of the results; the controls drawn above keep their values.
    st.error(plain(exc, limit=600), icon=":material/error:")
finally:
    if explores:
        declared.finish()
        unit_caption(unit_slot)
        workspace.write_url(navigation.url_path)
    else:
        state.write_url(navigation.url_path)
