"""The Release plan page's last section: release the plan for real, and take it away as
programs.

"Release" runs ``release.run`` once on the loaded dataset: OpenDP's samplers (exact, OS
entropy, never seeded), each map checked against the plan before anything is drawn, the
release recorded in the ledger (``EPSILON_LAB_LEDGER``) in the same transaction that checks
the dataset's budget. The page then shows the released values only — no true value beside
them — and offers the release's files and card, a synthetic table's released rows as their own
CSV (``rows-<id>.csv``, as ``python -m release`` writes them), and the release package (the
files, the plan, the OpenDP program as a script and a notebook, report.html): all built once
after the commit by ``release.package.keep_files``, which keeps those very bytes with the
ledger entry (the Releases page offers them again later). A plan can also be exported as a
simulation report: the same report of one seeded numpy draw, labelled "simulation — not a
release", built on click too, with nothing recorded. A plan is released only under the
privacy unit it was built under (:func:`unit_refusal`). What a release shows is kept
in the session for that dataset until the next release, as downloaded bytes, the values
table and the release itself (released values and public facts only); a refusal is shown
only while the plan it refused is unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import streamlit as st

import release
from dashboard import plan_bound, plan_store
from dashboard.analysis.plan_simulation import simulate_plan
from dashboard.data_source import content_hash_of, source_of
from dashboard.datasets import LoadedDataset
from dashboard.text import plain
from dpcore.accounting import ACCOUNTANT_LABELS
from dpcore.safe_rounding import percent_lower, upper
from plan import model
from plan.kinds import kind_of
from release import Ledger, LedgerError, ReleaseRefused, prepare
from release.cli import fetch_command
from release.files import choice_error, is_choice
from release.ledger import ledger_path, left_in_words
from release.package import OUT_FILES, keep_files, package_name
from release.programs import ProgramUnsupported, opendp_program, spark_program

__all__ = ["release_section", "released_table", "released_columns", "interval_caption",
           "source_of", "unit_refusal", "release_downloads", "simulation_builder",
           "simulation_button", "simulation_file_name", "LAST", "RELEASED_COLUMNS"]

LAST = "last_release_by_dataset"     # what the last release (or refusal) of each dataset showed
CONFIRM = "plan_release_confirm"


#: The released values table's columns: the value; the interval for its true value (empty
#: for a released choice); a released choice's own error bound, in words ("rank error ≤ best +
#: 12 rows"), in a column of its own so that it is never read as an interval for the value.
RELEASED_COLUMNS = ["Query", "Statistic", "Group", "Released value", "True value ≥",
                    "True value ≤", "Error of the choice"]


def released_table(release: Any) -> pd.DataFrame:
    """Every released value, one row each: the query, its group, the value and its interval
    (from the released values and public parameters), or for a released choice its error
    bound. Nothing else (the run returns no true value and no count of dropped rows)."""
    rows = []
    for q in release.queries:
        choice = is_choice(q.interval_method)
        for i, (group, value) in enumerate(q.rows):
            interval = q.interval(i)
            of_value = interval is not None and not choice
            rows.append({"Query": q.label, "Statistic": q.statistic,
                         "Group": " × ".join(group), "Released value": value,
                         "True value ≥": interval[0] if of_value else None,
                         "True value ≤": interval[1] if of_value else None,
                         "Error of the choice": (choice_error(q.interval_method, interval[1])
                                                 if interval is not None and choice else "")})
    return pd.DataFrame(rows, columns=RELEASED_COLUMNS)


#: Column widths in pixels: 915 in all, so that every column is in view in the page's main
#: area at a 1400 px window (938 px beside the sidebar; auto-sized columns took 1,031 px for
#: three quartiles of hours_per_week and a selection), the choice's words whole.
_WIDTHS = {"Query": 255, "Statistic": 75, "Group": 70, "Released value": 125,
           "True value ≥": 95, "True value ≤": 95, "Error of the choice": 200}


def released_columns() -> dict[str, Any]:
    """The released values table's column settings: widths that keep every column in view
    at 1400 px, and help saying what each interval column bounds."""
    config = st.column_config
    interval = ("end of the interval for the true value behind the released number (empty "
                "for a released category or grid value: see Error of the choice)")
    return {
        "Query": config.TextColumn("Query", width=_WIDTHS["Query"]),
        "Statistic": config.TextColumn("Statistic", width=_WIDTHS["Statistic"]),
        "Group": config.TextColumn("Group", width=_WIDTHS["Group"]),
        "Released value": config.Column("Released value", width=_WIDTHS["Released value"]),
        "True value ≥": config.NumberColumn("True value ≥", width=_WIDTHS["True value ≥"],
                                            help="Lower " + interval),
        "True value ≤": config.NumberColumn("True value ≤", width=_WIDTHS["True value ≤"],
                                            help="Upper " + interval),
        "Error of the choice": config.TextColumn(
            "Error of the choice", width=_WIDTHS["Error of the choice"],
            help="A released category or grid value has no error of its own: how far its "
                 "choice may be from the best one, at the intervals' level (a selection's "
                 "true count below the top true count; a quantile's rank error in rows above "
                 "the grid's best candidate's)"),
    }


def interval_caption(level: float) -> str:
    """What the interval columns are, in words (the level rounded down: never more coverage
    than the plan's)."""
    return (f"True value ≥ and ≤: a {percent_lower(level)} interval for each true value, for "
            "the noise alone — from the mechanism's law, its scale, the released value and "
            "the declared bounds, never the data. Histograms and tables: per cell; noise kept "
            "within an answer range (clamped or bounded): conservative; a mean: conservative "
            "(its sum's and count's intervals at half the error rate each); a variance: "
            "conservative (its three parts' at a third each); a group found by partition "
            "selection: conditional on being kept. A released category or grid value has no "
            "error and no interval: \"Error of the choice\" bounds its choice instead, at the "
            "same level, from the noise's law, its scale and the number of candidates alone — "
            "a selection's shortfall (the chosen category's true count is at most that far "
            "below the top true count among those not chosen before it, each rank on its "
            "own), a quantile's excess rank error (the released value's rank error is at most "
            "that many rows more than the grid's best candidate's).")


def prepared(plan: model.Plan) -> tuple[Any, str]:
    """(``release.prepare(plan)``, "") — the plan built and every part certified by OpenDP,
    what the ledger would record — or (None, why it cannot be released as it is)."""
    try:
        return prepare(plan), ""
    except (ReleaseRefused, model.PlanError) as exc:
        return None, str(exc)


def unit_refusal(plan: model.Plan, data_key: str) -> str:
    """Why ``plan`` must not be released for ``data_key`` because of its privacy unit ("" if
    it may): a plan is released under the unit it was built under (``plan_store.unit``),
    never another — not the session's when they differ, nor any when it is not recorded;
    and not while it is stale (``plan_bound.refusal``: the dataset's declarations changed
    since it was built)."""
    built_under = plan_store.unit(data_key)
    if built_under is None:
        return ("the plan does not say which privacy unit it was built under: choose it on "
                "the Release plan page (Privacy unit) and release again")
    if plan.privacy_unit != built_under:
        return (f"the plan was built under the privacy unit {built_under.describe()}, not "
                f"{plan.privacy_unit.describe()}: a plan is released only under its own unit")
    # nor on declarations that changed since it was built, until rebuilt or confirmed
    return plan_bound.refusal(data_key)


def _do_release(plan: model.Plan, loaded: LoadedDataset, data_key: str) -> None:
    """The button's callback: release once, keep what to show (or the refusal)."""
    st.session_state[CONFIRM] = False          # one click, one release
    outcome: dict[str, Any]
    refusal = unit_refusal(plan, data_key)
    if refusal:
        st.session_state.setdefault(LAST, {})[data_key] = {
            "ok": False, "reason": refusal, "plan": plan.to_json()}
        return
    try:
        with Ledger() as ledger:
            # looked up when called (a test puts a refusal in its place)
            released = release.run(plan, source_of(loaded), ledger=ledger,
                                   content_hash=content_hash_of(loaded))
            status = ledger.status(released.dataset)
            # after the commit: built once, kept with the entry, offered below (the same bytes)
            files, not_kept = keep_files(released, ledger)
        outcome = {
            "ok": True, "id": released.record.id, "time": released.record.time,
            "epsilon": released.spent.epsilon, "delta": released.spent.delta,
            "method": released.spent.method, "note": released.spent.note,
            "values_hash": released.values_hash, "table": released_table(released),
            "level": 1 - plan.accounting.alpha,
            "files": files, "not_kept": not_kept, "release": released,
            "left": status.remaining_epsilon, "releases": status.releases,
        }
    except (ReleaseRefused, LedgerError, model.PlanError) as exc:
        outcome = {"ok": False, "reason": str(exc), "plan": plan.to_json()}
    except Exception as exc:  # noqa: BLE001 — a release must never show a traceback
        outcome = {"ok": False, "reason": f"the release failed ({type(exc).__name__}); "
                                          "nothing was recorded unless the Releases page "
                                          "lists it", "plan": plan.to_json()}
    st.session_state.setdefault(LAST, {})[data_key] = outcome


def release_section(plan: model.Plan, loaded: LoadedDataset, data_key: str, *,
                    prepared: Any, blocked: str, refused: bool) -> None:
    """Draw the release section of the plan page (``prepared``, ``blocked``: as
    :func:`prepared` gives them)."""
    st.subheader("Release it for real")
    st.markdown(
        "**Release** runs the plan once on this dataset with OpenDP's samplers — exact, "
        "floating-point safe, drawing from the operating system's entropy, never seeded — "
        "after checking each query's OpenDP privacy map against the plan. The release is "
        "recorded in the ledger, and a release that would take the dataset over its budget "
        "is refused. You see the released values only: no true value.")
    try:
        where = str(ledger_path())
    except LedgerError as exc:
        st.error(plain(exc, limit=500), icon=":material/error:")
        return
    st.caption(f"Ledger: `{where}` (set `EPSILON_LAB_LEDGER` to move it); the Releases page "
               "lists what it holds.")
    figure = "" if prepared is None else (
        f"The ledger will record ε = {upper(prepared.spent.epsilon, 6)}"
        + (f", δ = {upper(prepared.spent.delta, 3)}" if prepared.spent.delta else "")
        + f" under {ACCOUNTANT_LABELS[prepared.spent.method]}: the smaller of what OpenDP "
        "certifies for the parts composed and of the noises it draws, at its scales, composed "
        "(the figure above)."
        + (f" ({prepared.spent.note}.)" if prepared.spent.note else ""))
    if blocked:
        st.warning(f"This plan cannot be released as it is: {plain(blocked, limit=500)}",
                   icon=":material/block:")
    else:
        st.markdown(plain(figure, limit=600))
    if refused:
        st.caption("The plan does not fit what is left of this dataset's budget: it cannot "
                   "be released.")
    ready = prepared is not None and not refused
    confirm = st.checkbox("I understand that this spends the privacy budget of this dataset "
                          "for good", key=CONFIRM, disabled=not ready)
    st.button("Release", key="plan_release", type="primary", icon=":material/publish:",
              disabled=not (ready and confirm), on_click=_do_release,
              args=(plan, loaded, data_key))
    outcome = st.session_state.get(LAST, {}).get(data_key)
    if outcome is not None and not outcome["ok"] and outcome.get("plan") != plan.to_json():
        st.session_state[LAST].pop(data_key)   # the plan it refused has changed since
        outcome = None
    if outcome is None:
        return
    if not outcome["ok"]:
        st.error(f"**Not released:** {plain(outcome['reason'], limit=600)}",
                 icon=":material/block:")
        return
    left = outcome["left"]
    st.success(f"Released and recorded: entry #{outcome['id']} at {outcome['time']}, "
               f"ε = {upper(outcome['epsilon'], 6)}"
               + (f", δ = {upper(outcome['delta'], 3)}" if outcome["delta"] else "")
               + (f"; {left_in_words(left)} for this dataset"
                  if left is not None else
                  "; no budget is set for this dataset in the ledger") + ".",
               icon=":material/verified:")
    if outcome["note"]:
        st.caption(plain(outcome["note"], limit=400))
    st.dataframe(outcome["table"], hide_index=True, key="plan_released_values",
                 column_config=released_columns())
    if "level" in outcome:
        st.caption(interval_caption(outcome["level"]))
    st.caption(f"Values hash {outcome['values_hash']} (in the ledger: the files can be "
               "checked against it). Another release of the same plan draws new noise.")
    if outcome["not_kept"]:
        st.warning(f"**Files not kept:** {plain(outcome['not_kept'], limit=600)}",
                   icon=":material/warning:")
    else:
        st.caption(f"These files are kept in the ledger with entry #{outcome['id']}: the "
                   f"Releases page (or `{fetch_command(outcome['id'], ledger_path())}`) gives "
                   "them again, byte for byte.")
    release_downloads(outcome["files"], outcome["id"], key="plan_release",
                      labels={q.id: q.label for q in outcome["release"].plan.queries},
                      every_file=False)


#: The download buttons of a release's files: name → (label, mime type); ``rows-<id>.csv``
#: and anything else fall back to :func:`_file_label`.
_FILES = {"release.csv": ("Released values (CSV)", "text/csv"),
          "release.json": ("Release (JSON)", "application/json"),
          "card.json": ("Release card (JSON)", "application/json"),
          "plan.json": ("Plan as published (JSON)", "application/json"),
          "report.html": ("Report (HTML)", "text/html"),
          "program.py": ("OpenDP program (Python)", "text/x-python"),
          "program.ipynb": ("OpenDP program (notebook)", "application/x-ipynb+json"),
          "program-unavailable.txt": ("Why there is no program (text)", "text/plain")}


def _file_label(name: str, labels: dict[str, str]) -> tuple[str, str]:
    if name in _FILES:
        return _FILES[name]
    if name.startswith("rows-") and name.endswith(".csv"):
        label = labels.get(name[len("rows-"):-len(".csv")], name)
        return f"Synthetic rows of {plain(label, limit=120)} (CSV)", "text/csv"
    return name, "application/octet-stream"


def release_downloads(files: dict[str, bytes], entry: int, *, key: str,
                      labels: dict[str, str], every_file: bool = True) -> None:
    """The download buttons of release ``entry``'s files (``release.package.release_files``:
    the exact bytes given, never rebuilt): release.csv, release.json and card.json in a row,
    then the others (with ``every_file=False`` only a synthetic table's rows: the rest are in
    the package), then the package; keyed ``<key>_<file name>`` and ``<key>_package``.
    ``labels``: query id → label (to name a synthetic table's rows)."""
    package = package_name(entry)
    first = [n for n in OUT_FILES if n in files]
    for col, name in zip(st.columns(3), first, strict=False):
        label, mime = _file_label(name, labels)
        col.download_button(label, files[name], file_name=name, mime=mime, on_click="ignore",
                            key=f"{key}_{name}")
    for name, data in files.items():
        rows = name.startswith("rows-")
        if name in first or name == package or not (every_file or rows):
            continue
        label, mime = _file_label(name, labels)
        st.download_button(label, data, file_name=name, mime=mime, on_click="ignore",
                           key=f"{key}_{name}", icon=":material/table_rows:" if rows else None,
                           help="The released synthetic rows, one line per row: the file "
                                "python -m release writes (also in the package)." if rows
                           else None)
    if package in files:
        st.download_button("Download the release package", files[package],
                           file_name=package, mime="application/zip", on_click="ignore",
                           key=f"{key}_package", icon=":material/folder_zip:",
                           help="One zip: release.csv, release.json, card.json, plan.json, "
                                "the OpenDP program as a script and a Jupyter notebook, and "
                                "report.html (opens offline, prints on A4).")


def simulation_file_name(plan_name: str) -> str:
    """``simulation-<plan>.zip``: the plan's name in letters, digits, ``.``, ``_`` and ``-``
    (a user's name never reaches the file system as typed)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", plan_name).strip("-.")[:60] or "plan"
    return f"simulation-{stem}.zip"


def simulation_builder(plan: model.Plan, loaded: LoadedDataset, seed: int):
    """What the simulation button downloads: a function that builds, when it is clicked, the
    simulation package (``release.package.simulation_package``) of one draw of ``plan``
    with numpy seeded by ``seed`` (``dashboard.analysis.plan_simulation``): no OpenDP, no
    ledger, no budget."""
    def build() -> bytes:
        values = simulate_plan(plan, source_of(loaded), seed=seed)
        return release.package.simulation_package(plan, values)   # looked up when clicked
    return build


def simulation_button(plan: model.Plan, loaded: LoadedDataset, *, seed: int,
                      plan_name: str) -> None:
    """The "Export as a simulation report" button (the zip is built when it is clicked); a
    plan holding a query numpy cannot draw (a synthetic table) gets a caption saying so."""
    unsimulated = [q.label for q in plan.queries if not kind_of(q.query).simulated]
    if unsimulated:
        st.caption("Export as a simulation report: not available for this plan — "
                   f"{plain(', '.join(unsimulated), limit=300)} cannot be drawn with numpy "
                   "(OpenDP fits a synthetic table's model). Remove it to export a "
                   "simulation of the rest.")
        return
    st.download_button("Export as a simulation report", simulation_builder(plan, loaded, seed),
                       file_name=simulation_file_name(plan_name), mime="application/zip",
                       on_click="ignore", key="plan_simulation_package",
                       icon=":material/science:",
                       help="A simulation, not a release: one draw of every query with "
                            f"numpy's noise (seed {seed}), in the release package's report "
                            "labelled 'simulation — not a release' on every page, with the "
                            "plan and its OpenDP program. Nothing is recorded and no budget "
                            "is spent, and seeded noise protects no one: share it only with "
                            "those who may see the data.")


def programs_section(plan: model.Plan) -> None:
    """Download the plan as an OpenDP program (one machine) and a PipelineDP program (Spark)."""
    st.markdown("**Programs to take away** — the same release, run elsewhere: an OpenDP "
                "program for one machine, a PipelineDP program for Spark (each checks the "
                "plan's accounting before drawing).")
    cols = st.columns(2)
    for col, (label, make, name) in zip(cols, (
            ("OpenDP program (Python)", opendp_program, "release_opendp.py"),
            ("Spark program (PipelineDP)", spark_program, "release_spark.py")), strict=True):
        try:
            text = make(plan)
        except (ProgramUnsupported, ReleaseRefused, model.PlanError) as exc:
            col.caption(f"{label}: not available for this plan — {plain(exc, limit=300)}")
            continue
        col.download_button(label, text.encode("utf-8"), file_name=name, mime="text/x-python",
                            on_click="ignore", key=f"plan_program_{name}")
