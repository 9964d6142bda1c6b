"""Releases page: what the ledger holds — every real release with the files it published (kept
in the ledger, offered again byte for byte), and per dataset its budget, what it has spent and
what is left. Read-only: the ledger is append-only.
"""

from __future__ import annotations

import json

import streamlit as st

from dashboard import controls
from dashboard.analysis import releases as ra
from dashboard.release_panel import release_downloads
from dashboard.signin import role_now
from dashboard.text import plain
from release.access import Role
from release.cli import fetch_command
from release.ledger import Ledger, LedgerError, ledger_path

st.title("Releases")
st.markdown("Every release made for real (from the Release plan page or `python -m release`) "
            "is recorded in the ledger with the dataset it used, what it spent, its plan and "
            "the hash of its values, and the files it published are kept with it: download "
            "them again below. Releases of a dataset add up against its "
            "[privacy budget](./glossary#privacy-budget).")
try:
    path = ledger_path()
    st.caption(f"Ledger: `{path}` (set `EPSILON_LAB_LEDGER` to use another).")
    if not path.exists():
        st.info("No release has been made yet: the ledger is created by the first one.")
        st.stop()
    with Ledger(path) as ledger:
        datasets = ledger.datasets()
        history = ledger.releases()
        problems = ledger.verify()
        names = ledger.file_names()
        files_words = {r.id: ra.files_in_words(names.get(r.id, ()), ledger.why_no_files(r))
                       for r in history}
except LedgerError as exc:
    st.error(f"The ledger cannot be read: {plain(exc, limit=600)}", icon=":material/error:")
    st.stop()

if problems:
    st.error("**The ledger's chain of hashes does not check out**: an entry was changed "
             "outside this program.\n" + "\n".join(f"- {plain(p, limit=300)}"
                                                    for p in problems),
             icon=":material/gpp_bad:")
else:
    st.caption(f"{len(history):,} release(s); the chain of entry hashes checks out.")

# who released and who changed a budget: a steward's to see (issue 33), named on no file
steward = role_now() is Role.STEWARD
WHO_COLUMNS = [] if steward else ["Released by", "Changed by"]

st.subheader("Budget per dataset")
st.dataframe(ra.datasets_table(datasets), hide_index=True, key="releases_datasets")
if any(s.history for s in datasets):
    st.markdown("**Budget changes** — every setting of a dataset's budget, with its time and "
                "reason; every later release's card and report list them.")
    st.dataframe(ra.budget_history_table(datasets).drop(columns=WHO_COLUMNS,
                                                         errors="ignore"),
                 hide_index=True, key="releases_budget_history")
st.subheader("History")
st.dataframe(ra.history_table(history, files_words).drop(columns=WHO_COLUMNS, errors="ignore"),
             hide_index=True, key="releases_history")
st.caption("Each released value comes with an interval for its true value at the level shown "
           "(the plan's α; 95 % by default), computed from the noise's law and public "
           "parameters only: `lower`, `upper` and `level` in the release's `release.csv`, "
           "per value in `release.json`, and the method in its card. A released category or "
           "grid value has no interval: its choice's error bound is apart (`choice error` "
           "in `release.csv`, `choice_error` in `release.json`).")
if history:
    st.subheader("A release's files")
    chosen = controls.select("Release", [r.id for r in reversed(history)],
                             key="releases_plan_of", format_func=lambda i: f"#{i}",
                             in_url=False)
    record = next(r for r in history if r.id == chosen)
    try:
        with Ledger(path) as ledger:
            files = ledger.release_files(record.id)
    except LedgerError as exc:
        st.error(f"The files of release #{record.id} cannot be read: {plain(exc, limit=600)}",
                 icon=":material/error:")
        files = {}
    if files:
        st.caption(f"Release #{record.id} ({plain(record.dataset.name, limit=80)}, "
                   f"{record.time}): the files it published, exactly as they were offered "
                   f"then (also `{fetch_command(record.id, path)}`).")
        try:
            labels = {q["id"]: q["label"] for q in json.loads(files.get("plan.json", b"{}"))
                      .get("queries", [])}
        except (ValueError, TypeError, KeyError, AttributeError):   # not a plan: ids as names
            labels = {}
        release_downloads(files, record.id, key="releases_file", labels=labels)
    else:
        st.info(f"Release #{record.id}: {files_words[record.id]}.", icon=":material/info:")
    st.download_button(f"Plan of release #{record.id} (JSON)", record.plan_json.encode(),
                       file_name=f"plan-release-{record.id}.json", mime="application/json",
                       on_click="ignore", key="releases_plan_download")
