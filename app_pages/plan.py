"""Release plan page: every query added from the pages in one plan — edited, accounted four ways,
split to meet its targets, its risk, and the dataset's budget guard. Import/export as JSON.
A plan is shown and released under the privacy unit it was built under (``plan_unit_panel``).

``dashboard.analysis.release_plan`` computes; ``dashboard.plan_store`` holds the session's plan.
"""

from __future__ import annotations

import streamlit as st

from dashboard import (
    budget_panel,
    charts,
    controls,
    number_text,
    person,
    plan_bound,
    plan_store,
    plan_unit_panel,
    plans_panel,
    presenting,
    release_panel,
    state,
)
from dashboard.analysis import release_plan as rp
from dashboard.analysis.plan_entries import plan_unit
from dashboard.choices import DELTA_OPTIONS, fmt_number
from dashboard.text import plain
from dpcore.accounting import ACCOUNTANT_LABELS, ACCOUNTANTS
from dpcore.safe_rounding import lower as round_down
from plan import model
from plan.build import build_plan
from plan.kinds import kind_of

ss = st.session_state
VERSION = "plan_editor_version"     # bumped after each applied edit: a fresh editor is drawn
PROBLEMS = "plan_edit_problems"     # what the last edit could not apply, shown once
IMPORTED = "plan_import_tried"      # file_id of the last plan file read
IMPORT_ERROR = "plan_import_error"
IMPORT_NOTES = "plan_import_notes"  # what importing changed besides the queries, shown once
IMPORTED_BUDGET = "plan_import_budget"  # the total ε an imported plan file carried
ss.setdefault(VERSION, 0)

loaded = state.dataset()
data_key = state.dataset_key()


def import_plan() -> None:
    """Read an uploaded plan: on success it replaces this dataset's plan and sets the
    accounting and budget controls; on failure the plan in the session is kept."""
    upload = state.new_upload("plan_import", tried=IMPORTED, error=IMPORT_ERROR)
    if upload is None:
        return
    try:
        imported = model.Plan.from_json(upload.getvalue())
    except model.PlanError as exc:
        ss[IMPORT_ERROR] = f"{upload.name} was not loaded: {exc}. The plan below is unchanged."
        return
    ss.pop(IMPORT_ERROR, None)
    # the plan keeps the unit it was written for: it is shown and released under it, and
    # the declarations' versions it says it was built on (on this data)
    now = plan_bound.built_on_now(loaded, data_key)
    built = imported.dataset.declarations
    plan_store.replace_all(data_key, imported.queries, imported.privacy_unit,
                           None if built is None or now is None else (now[0], built))
    settings = {"plan_method": imported.accounting.method}
    notes = []
    if imported.budget is not None:
        ss[IMPORTED_BUDGET] = float(imported.budget.epsilon)
        notes.append(f"The plan file carries a total budget ε = {imported.budget.epsilon:g}: "
                     "to hold this dataset to it, set it under 'This dataset's budget' "
                     "(the ledger keeps the budget, not the plan).")
    if imported.accounting.delta in DELTA_OPTIONS:
        settings["plan_delta"] = imported.accounting.delta
    else:
        notes.append(f"The plan's δ = {imported.accounting.delta:g} is not one this page "
                     "offers: the total is read at the δ chosen below.")
    wanted = imported.privacy_unit
    if wanted != person.current_unit(data_key) and (
            wanted.person_column is None or wanted.person_column in loaded.relation.columns):
        # the plan's unit becomes this dataset's (the Data page shows it)
        person.set_unit(data_key, wanted)
        notes.append(f"The plan's privacy unit is now this dataset's: {wanted.describe()}.")
    elif wanted != person.current_unit(data_key):
        notes.append(f"The plan's person-id column {wanted.person_column!r} is not in this "
                     "dataset: the plan keeps its own privacy unit and cannot be released "
                     "on this dataset until it is rebuilt under this dataset's unit.")
    ss[IMPORT_NOTES] = notes
    controls.set_for_another_page(settings)
    for key in settings:   # the file's settings win over the ones in the URL
        st.query_params.pop(key, None)
    ss[VERSION] += 1


def use_split(epsilons: dict[str, float]) -> None:
    """Write the split's ε into the plan's queries (a callback: before the editor is drawn)."""
    plan_store.update(data_key, rp.apply_split([e.query for e in plan_store.entries(data_key)],
                                               epsilons))
    ss[VERSION] += 1


import_plan()   # before any control is drawn: it sets their values
# the plan's own unit (the one it was built under), never the session's if they differ
checked = plan_unit_panel.plan_unit_of(plan_store.unit(data_key),
                                       person.current_unit(data_key), loaded.relation.columns)
unit = plan_unit(checked.unit, drawn_in_plan=any(
    isinstance(e.query.query, model.MaxRows) for e in plan_store.entries(data_key)))
st.title("Release plan")
st.markdown("Every statistic you publish about the same people spends one "
            "[privacy budget](./glossary#privacy-budget). "
            "Add queries here with **Add to plan** on the query pages; this page accounts "
            "for the whole plan, finds the budget split that meets every accuracy target, "
            "and says what the plan lets an attacker learn.")
st.caption(f"Dataset: **{plain(loaded.name)}** · [privacy unit](./glossary#privacy-unit): "
           f"{plain(unit.describe())} (the plan's own: the unit it was built under).")

plans_panel.saved_plans_section(data_key)
with st.expander("Import a plan (JSON)", icon=":material/upload_file:"):
    st.file_uploader("Plan file", type=["json"], key="plan_import",
                     help="A plan downloaded from this page, or written by hand.")
    st.caption("An imported plan replaces the queries below.")
if IMPORT_ERROR in ss:
    st.error(plain(ss[IMPORT_ERROR], limit=600), icon=":material/error:")
for note in ss.pop(IMPORT_NOTES, []):
    st.info(plain(note, limit=400), icon=":material/info:")

entries = plan_store.entries(data_key)
if not entries:
    st.info("The plan is empty. Open a query page, set the query as you want it released, "
            "and press **Add to plan** under its results.")
    for page, title in rp.PAGES.values():
        st.page_link(page, label=title)
    st.stop()
plan_unit_panel.unit_section(loaded, data_key, checked)
plan_unit_panel.schema_section(loaded, data_key, checked, plan_store.declared(data_key))
plan_bound.stale_section(loaded, data_key, checked.unit)

settings = st.columns(2)
method = controls.select("Accounting", list(ACCOUNTANTS), key="plan_method", default="pld",
                         format_func=rp.TITLES.get,
                         container=settings[0],
                         help="How the queries' privacy losses add up. Each is a valid "
                              "guarantee; privacy-loss distributions are the tightest.")
delta = controls.select("δ of the total", DELTA_OPTIONS, key="plan_delta", default=1e-6,
                        format_func=fmt_number, container=settings[1],
                        help="The total ε is read at this δ (the chance the guarantee fails).")

# each query built under the current unit; one that no longer builds is shown, not dropped
good, broken = [], []
for entry in entries:
    try:
        build_plan(model.Plan(model.Dataset(loaded.name), (entry.query,), unit))
        good.append(entry)
    except (model.PlanError, ValueError, TypeError) as exc:
        broken.append((entry, exc))
for entry, exc in broken:
    st.error(f"**{plain(entry.query.label, limit=120)}** cannot be built under the plan's "
             f"privacy unit: {plain(exc, limit=400)}. Rebuild the plan under another unit, "
             "or remove it.", icon=":material/error:")
    st.button("Remove it from the plan", key=f"plan_remove_{entry.query.id}",
              on_click=plan_store.remove, args=(data_key, entry.query.id))
if not good:
    st.stop()
try:
    built_on = plan_store.built_on(data_key)   # the declarations' versions, published too
    the_plan = rp.make_plan(loaded.name, data_key, [e.query for e in good], unit,
                            method=method, delta=delta, budget=None,
                            declarations=None if built_on is None else built_on[1])
    built = build_plan(the_plan)
except (model.PlanError, ValueError) as exc:
    st.error(f"The plan cannot be made: {plain(exc, limit=500)}", icon=":material/error:")
    st.stop()
contexts = {e.query.id: e.context for e in good}

st.subheader(f"The plan: {len(the_plan.queries)} " +
             ("query" if len(the_plan.queries) == 1 else "queries"))
frame = rp.plan_rows(the_plan, built, contexts)
number = st.column_config.NumberColumn
edited = st.data_editor(
    # VERSION grows with each edit made here, shown_count with each plan shown from the store
    frame, key=f"plan_editor_{ss[VERSION] + plan_store.shown_count()}", hide_index=True,
    width="stretch", column_order=rp.SHOWN_COLUMNS,   # Remove and the accuracy in view
    disabled=[c for c in rp.ROW_COLUMNS if c not in rp.EDITABLE],
    column_config={
        rp.REMOVE: st.column_config.CheckboxColumn("Remove", width=85, pinned=True,
                                                   help="Tick to take the query out of the "
                                                        "plan."),
        rp.QUERY: st.column_config.TextColumn("Query", width="medium", max_chars=200,
                                              pinned=True),
        rp.NOW: st.column_config.TextColumn("Accuracy now", width=130),
        rp.MET: st.column_config.TextColumn("Meets target", width=100),
        rp.MECH: st.column_config.TextColumn("Mechanism and budget", width="large"),
        rp.EPS: number("ε", format="%g", min_value=0.0, width=60, help="The query's ε (pure "
                       "or approximate DP, a selection, a threshold with Laplace noise)."),
        rp.DELTA: number("δ", format="%.1e", min_value=0.0, max_value=0.5, width=75,
                         help="Approximate DP's δ; a threshold's δ."),
        rp.RHO: number("ρ", format="%g", min_value=0.0, width=60, help="zCDP queries."),
        rp.ALPHA: number("Target ±α", format="%g", min_value=0.0, width=95,
                         help="Accuracy target: within ±α of the truth (ranks for a "
                              "quantile)…"),
        rp.BETA: number("Target β", format="%g", min_value=0.0, max_value=1.0, width=85,
                        help="…except with probability β (0.05: 95% of releases)."),
        rp.PROB: number("Target P(correct)", format="%g", min_value=0.0, max_value=1.0,
                        help="A selection: the true most common picked with this probability."),
    })
editable = list(rp.EDITABLE)
if not edited[editable].equals(frame[editable]):
    queries, problems = rp.apply_edits(the_plan, edited)
    plan_store.update(data_key, queries)
    if problems:
        ss[PROBLEMS] = problems
    ss[VERSION] += 1
    st.rerun()
for problem in ss.pop(PROBLEMS, []):
    st.error(plain(problem, limit=500), icon=":material/error:")
st.caption("Edit ε, δ, ρ or a target in the table; tick Remove (first column) to take a query "
           "out. 'Accuracy now' is at the query's budget (closed form); 'Meets target' "
           "compares it with the target. Queries without a closed form show —.")
if any(not kind_of(q.query).simulated for q in the_plan.queries):
    st.caption("A synthetic table is not simulated here: OpenDP measures its marginals and "
               "fits a model, which numpy's draws cannot stand in for. Its ε or ρ is the one "
               "OpenDP's map certifies (what the ledger records); its utility is on the "
               "Synthetic data page, and a release writes its rows (rows-ID.csv).")
pages = sorted({q.page for q in the_plan.queries if q.page in rp.PAGES})
for col, page in zip(st.columns(max(1, len(pages))), pages, strict=False):
    col.page_link(rp.PAGES[page][0], label=f"Back to {rp.PAGES[page][1]}",
                  icon=":material/arrow_back:")

st.subheader("What the whole plan spends")
prepared, blocked = release_panel.prepared(the_plan)
with st.spinner("Composing the plan four ways…"):   # what the ledger would record, each way
    acc = rp.accounted(built, method=method, delta=delta,
                       certified=[c for cs in prepared.certified for c in cs] if prepared
                       else None)
cols = st.columns(4)
for col, name in zip(cols, ACCOUNTANTS, strict=True):
    total = acc.totals.of(name)
    col.metric(rp.TITLES[name], f"ε = {number_text.loss(total.epsilon)}",
               delta="chosen" if name == method else None, delta_color="off",
               delta_arrow="off", help=total.note or None)
st.markdown(rp.accounting_sentence(acc))
rounded_noted = not all(number_text.is_shown_exactly(acc.totals.of(n).epsilon) for n in ACCOUNTANTS)
if rounded_noted:   # the page says once what ↑ means
    st.caption(number_text.ROUNDED_UP)
held = checked.held or plan_bound.refusal(data_key)   # nor on changed declarations
if held:   # nothing released under a unit, or declarations, the plan was not built on
    prepared, blocked = None, held
needs = prepared.spent if prepared else acc.totals.of(method)   # what the ledger would record
guard = budget_panel.budget_section(loaded, data_key, needs_epsilon=needs.epsilon,
                                    needs_delta=needs.delta if prepared else delta,
                                    suggested=ss.get(IMPORTED_BUDGET))
budget = guard.left if guard.left is not None and guard.left > 0 else None

st.subheader("The budget split that meets every target")
modes = {"least": "Meet every target with the least privacy loss",
         "budget": "Best accuracy within the total budget"}
mode = controls.select("Split", list(modes) if budget is not None else ["least"],
                       key="plan_split_mode", format_func=modes.get,
                       help="The second needs this dataset's budget (what the ledger has "
                            "left of it).")
try:
    with st.spinner("Finding the split…"):
        result = rp.split(the_plan, built, contexts, budget=budget if mode == "budget" else None)
except ValueError as exc:
    st.info(f"No split: {plain(exc, limit=500)}.", icon=":material/info:")
    result = None
if result is not None:
    sentence = rp.split_sentence(result, method)
    st.markdown(sentence)
    if number_text.UP_MARK in sentence and not rounded_noted:
        st.caption(number_text.ROUNDED_UP)
    ratio = st.column_config.TextColumn(help="Target over achieved accuracy: ≥ 1 means the "
                                        "target is met.")
    st.dataframe(result.table, hide_index=True, key="plan_split_table",
                 column_config={"target ratio": ratio, "target ratio, even": ratio,
                                "ε at the split": st.column_config.NumberColumn(format="%.4g"),
                                "ε even split": st.column_config.NumberColumn(format="%.4g")})
    for qid, why in result.kept.items():
        st.caption(f"{plain(the_plan.query(qid).label, limit=120)}: {plain(why)}.")
    over = budget is not None and result.total > budget
    if over:
        st.warning(f"Meeting every target needs ε = {number_text.loss(result.total)} under "
                   f"{ACCOUNTANT_LABELS[method]}, more than the budget "
                   f"ε = {round_down(budget, 4)}: loosen a target or raise the budget "
                   "(the split is not applied).")
    st.button("Use this split", key="plan_use_split", icon=":material/call_split:",
              disabled=over, on_click=use_split, args=(result.epsilons,))

st.subheader("What the whole plan lets an attacker learn")
with st.spinner("Reading the plan's risk…"):
    risk = rp.plan_risk(the_plan, built)
chart_col, text_col = st.columns([3, 2], gap="large")
with chart_col:
    presenting.chart(charts.tradeoff_chart(risk.fpr, risk.curves,
                                           title="Membership tests against the whole plan"),
                     key="plan_tradeoff")
    st.caption("Each line is the best any test for 'is Alice in the data?' can do, from the "
               "composed privacy-loss distribution (exact for Gaussian noise only). The "
               "diagonal is a blind guess.")
with text_col:
    st.info(risk.sentence)
    st.dataframe(risk.posteriors, hide_index=True, key="plan_posteriors")
    st.caption(f"For comparison, its riskiest query alone ({plain(risk.single_label)}), as "
               f"Choose epsilon shows one release: {risk.single_sentence}")

st.subheader("Take the plan away")
refused = not guard.fits
# A plan is public (queries, budgets, declarations): always offered, also once a release has
# spent the budget. A release of it is refused where the budget is checked: here and by
# python -m release, both against the ledger.
st.download_button("Download the plan (JSON)", the_plan.to_json().encode("utf-8"),
                   file_name="release-plan.json", mime="application/json",
                   key="plan_download", on_click="ignore",
                   help="Import it here later, or release it with python -m release"
                   + (" (which refuses it too while it does not fit the budget)."
                      if refused else "."))
release_panel.programs_section(the_plan)
saved = plan_store.current(data_key)
if checked.held:   # a simulation reads the data under the plan's unit too
    st.caption(f"Export as a simulation report: not available — {plain(checked.held)}.")
else:
    release_panel.simulation_button(the_plan, loaded, seed=state.seed(),
                                    plan_name=plan_store.DEFAULT_NAME if saved is None
                                    else saved.name)

release_panel.release_section(the_plan, loaded, data_key, prepared=prepared, blocked=blocked,
                              refused=refused)
