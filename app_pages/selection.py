"""Selection page: how often a private mechanism picks the right answer (report noisy max).

Scores from the data, typed in, or revenues from bids; exact and simulated picks per candidate.
"""

from __future__ import annotations

import streamlit as st

from dashboard import (
    audit_panel,
    charts,
    controls,
    person,
    plan_panel,
    presenting,
    state,
    teaching,
)
from dashboard.analysis import plan_entries
from dashboard.analysis import selection_choices as options
from dashboard.analysis import selection_downloads as downloads
from dashboard.analysis import selection_maths as maths
from dashboard.analysis import selection_pricing as pricing
from dashboard.analysis import selection_privacy as privacy
from dashboard.analysis import selection_scores as scoring
from dashboard.analysis import selection_wording as wording
from dashboard.analysis.stats_query import neighbours_of
from dashboard.data.left_out import left_out_note
from dashboard.datasets import categorical_columns
from dashboard.page_settings import SelectionQuery
from dashboard.text import plain

loaded = state.dataset()
dataset_key = state.dataset_key()


def column_scores() -> tuple:
    """Counts of a categorical column of the sidebar's dataset."""
    columns = categorical_columns(loaded)
    if not columns:
        raise ValueError(f"{loaded.name} has no categorical column: choose typed "
                         "scores above, or another dataset in the sidebar")
    column = controls.select("Column (count per category)", columns, key="sel_column",
                             default="education" if "education" in columns else columns[0],
                             in_url=not dataset_key.startswith("upload:"))
    domain = loaded.domains.get(column)
    declared = domain.categories if domain is not None else None
    # the release's truncation (max rows per category, max groups), at the page's seed
    bound = person.contribution(person.current_unit(dataset_key), seed=state.seed())
    labels, scores, missing = scoring.column_scores(loaded.relation, dataset_key, column, declared,
                                                    bound)
    st.caption(wording.data_note(declared is not None, missing, bound))
    if (note := left_out_note(loaded, column)) is not None:
        st.warning(note, icon=":material/report:")
    # the sensitivity is the plan's (privacy.data_mechanism): None here
    unit = person.current_unit(dataset_key)
    counted = "people" if unit.person_column is None else "rows"   # rows under a person id
    return (labels, scores, None, None, f"Category of {column}", f"True count ({counted})",
            wording.categories_origin(declared is not None))


def typed_scores() -> tuple:
    """Scores typed in, or read from a small CSV, with a declared sensitivity."""
    text = controls.text("Scores, separated by commas", key="sel_scores_text", default="0, 2, 4, 6",
                    help=f"One score per candidate, {scoring.MIN_CANDIDATES} to "
                         f"{scoring.MAX_CANDIDATES} of them. With decimal commas, separate them "
                         "by semicolons: 1,5; 2,5; 3,5.")
    upload = st.file_uploader("…or a small CSV of scores (one per line, or label,score)",
                              type=["csv", "txt"], key="sel_scores_file")
    sensitivity = float(controls.number(
        "Sensitivity Δ", key="sel_sensitivity", default=1.0, min_value=1e-6, max_value=1e9,
        help="The most any one score can change when one person is added or removed "
             "(add/remove one row)."))
    if upload is not None:
        labels, values = scoring.parse_score_file(upload.getvalue())
        st.caption(f"Using the {values.size} scores of {plain(upload.name)}.")
    else:
        values = scoring.parse_numbers(text)
        labels = scoring.numbered_labels(values.size)
    st.caption(privacy.TEACHING_NOTE)
    return labels, tuple(values.tolist()), sensitivity, None, "Candidate", "True score", None


def pricing_scores() -> tuple:
    """Revenue at each price of a public grid, from typed or simulated bids."""
    simulated = controls.toggle(f"Use {pricing.SIMULATED_BIDS} simulated bids (from the seed)",
                                key="sel_simulated_bids")
    highest = float(controls.number(
        "Highest price (public)", key="sel_highest", default=4.0, min_value=0.01, max_value=1e6,
        help="Declared before seeing any bid: the price grid ends here, and it is the "
             "sensitivity."))
    step = controls.select("Price step", pricing.PRICE_STEPS, key="sel_step", default=0.01)
    bids = (pricing.simulated_bids(highest, state.seed()) if simulated else pricing.parse_bids(
        controls.text("Bids, separated by commas", key="sel_bids_text",
                      default=pricing.EXAMPLE_BIDS, help="The most each buyer would pay.")))
    prices = pricing.price_grid(highest, step).tolist()
    st.caption(wording.pricing_note(len(bids), prices[-1]) + " " + privacy.TEACHING_NOTE)
    return (tuple(f"price {p:g}" for p in prices),
            tuple(pricing.revenue_curve(bids, prices).tolist()),
            prices[-1], prices, "Price", "Revenue at this price", None)


st.title("Selection")
st.markdown("Which category is most common? Which price earns most? A private answer adds "
            "noise to every candidate's score and reports the best noisy one ([report noisy "
            "max](./glossary#report-noisy-max)). The question "
            "here is not how far off a number is, but **how often the right candidate is "
            "picked**.")
teaching.look_here("selection")
left, right = st.columns(2, gap="large")
with left:
    source = controls.select("Scores", list(options.SOURCES), key="sel_source",
                             format_func=options.SOURCES.get)
    read = {"data": column_scores, "typed": typed_scores, "pricing": pricing_scores}[source]
    problem = None   # what keeps the results from being computed: shown in their place
    try:
        labels, scores, sensitivity, prices, x_title, score_title, categories_from = read()
        unit = person.current_unit(dataset_key)
        neighbours = neighbours_of(person.contribution(unit, seed=state.seed())
                                   if source == "data" else None)
    except (ValueError, TypeError) as exc:
        problem = f"{plain(exc, limit=400)} — fix the input above to see the selection."
        scores = (0.0,) * options.K_MAX   # every control stays drawn; k keeps all its options
with right:
    # Pricing is the exponential mechanism's classic example (Gumbel noise is exactly it):
    # entering or leaving the pricing example resets the noise to that source's default.
    state.forget_when_changed("sel_noise_for", (source == "pricing",), ("sel_noise",))
    noise = controls.select("Noise", list(options.NOISES), key="sel_noise",
                            default="gumbel" if source == "pricing" else options.DEFAULT_NOISE,
                            format_func=options.NOISES.get, help=options.NOISE_HELP)
    measure = controls.select("Privacy measure", list(options.MEASURES), key="sel_measure",
                              format_func=options.MEASURES.get,
                              help="zCDP pairs naturally with Gumbel noise (ρ = ε²/8 per pick); "
                                   "Laplace and exponential noise only get ρ = ε²/2.")
    level = controls.exact_slider(
        options.LEVEL_LABEL[measure],
        options.EPSILON_GRID if measure == "pure" else options.RHO_GRID,
        key=SelectionQuery.level_key(measure), default=options.DEFAULT_LEVEL[measure],
        symbol=options.LEVEL_SYMBOL[measure],
        help="Smaller is more private and noisier (log scale).")
    monotonic_key, monotonic_default = options.monotonic_setting(source)
    monotonic = controls.toggle(
        "Scores are monotonic", key=monotonic_key, default=monotonic_default,
        help="On only when adding a person moves every score the same way (counts, revenues "
             "are): half the noise for the same ε. If unsure, leave it off: with scores that "
             "can move in opposite directions the ε shown would be half the true one.")
    negate = controls.toggle("Pick the smallest score instead", key="sel_negate")
    k = controls.select("Candidates to pick (k)", range(1, min(len(scores), options.K_MAX) + 1),
                        key="sel_k", default=1)
    trials = controls.select("Simulated releases", options.TRIAL_OPTIONS, key="sel_trials",
                             default=10_000, format_func=lambda n: f"{n:,}")
    release = controls.release_picker(key="sel_release", seed=state.seed())

if problem:
    st.error(problem)   # in place of the results; every control above keeps its value
    st.stop()
try:
    if source == "data":   # the very part plan.build gives the release of this pick
        picked = st.session_state["sel_column"]
        domain = loaded.domains.get(picked)
        mechanism = privacy.data_mechanism(
            loaded, person.current_unit(dataset_key), column=picked, labels=labels,
            declared=domain is not None and domain.categories is not None, noise=noise,
            measure=measure, level=level, k=k, negate=negate, monotonic=monotonic)
    else:
        mechanism = privacy.teaching_mechanism(noise=noise, measure=measure, level=level,
                                               sensitivity=sensitivity, monotonic=monotonic, k=k,
                                               negate=negate)
    sensitivity = mechanism.sensitivity
    params = {"sensitivity": sensitivity, "measure": measure, "monotonic": monotonic,
              "negate": negate, "k": k, "seed": state.seed()}
    with st.spinner("Computing selection probabilities and simulating releases…"):
        summary = maths.selection_summary(scores, labels, mechanism=mechanism, level=level,
                                          trials=trials, seed=state.seed())
        curves = maths.correctness_curves(scores, **params)
except (ValueError, TypeError) as exc:
    st.error(f"Could not compute the selection: {plain(exc, limit=400)}. Check the settings.")
    st.stop()

presenting_now = presenting.on()   # for a projector: one chart and one sentence per step
if not presenting_now:
    st.markdown(summary.map_text)
pick_sentence = wording.pick_sentence(summary, measure=measure, level=level, negate=negate, k=k)
if not presenting_now:
    st.markdown(pick_sentence)
tie = wording.tie_note(summary, negate=negate, source=source)
if tie:
    st.info(tie, icon=":material/balance:")
if tie and source == "data" and summary.best.all():   # ε changes nothing: offer a case it does
    st.button("Show a case where ε matters (scores typed in)", key="sel_show_untied",
              on_click=lambda: st.session_state.update(sel_source="typed"),
              icon=":material/swap_horiz:")
if not presenting_now:
    m1, m2, m3 = st.columns(3)
    m1.metric("P(best picked), exact", options.fmt_share(summary.p_correct))
    m2.metric(f"Expected {'revenue' if prices else 'score'} lost (best − picked)",
              options.fmt_loss(summary.expected_gap))
    m3.metric("Noise scale b", options.fmt_value(summary.scale))

first = "the first pick" if k > 1 else "picked"
with presenting.step("sel_picks", f"**Look at:** {pick_sentence}"):
    presenting.chart(charts.selection_chart(
        summary.labels, summary.scores, summary.exact, summary.empirical, summary.half_width,
        trials=summary.trials, inclusion=summary.inclusion, k=k, prices=prices,
        title=(f"Which price is {first}, and the revenue it earns" if prices else
               f"How often each candidate is {first}"),
        x_title=x_title, score_title=score_title), key="sel_chart")
    st.caption(wording.chart_caption(summary, lines=prices is not None))
release = downloads.private_release(summary, source=source, dataset=loaded.name, candidates=x_title,
                                    level=level, seed=state.seed(), categories_from=categories_from,
                                    release=release, neighbours=neighbours)
if not presenting_now:
    st.markdown(release.sentence)
    st.caption(wording.shortfall_sentence(mechanism, len(scores), source=source))
    controls.downloads(release.values, release.parameters, key="sel_download",
                       file_stem="selection")
if source == "data" and not presenting_now:   # a pick of the dataset's is a plan query
    plan_panel.add_to_plan(dataset_key, lambda: plan_entries.selection_query(
        loaded, person.current_unit(dataset_key), column=picked, labels=labels,
        declared=domain is not None and domain.categories is not None, noise=noise,
        measure=measure, level=level, k=k, negate=negate, monotonic=monotonic,
        probability=summary.p_correct), key="sel", context={"scores": tuple(scores)})

symbol = options.LEVEL_SYMBOL[measure]
common = {"noise_names": options.NOISE_NAMES, "current_noise": noise, "current_level": level,
          "level_title": options.LEVEL_AXIS[measure], "level_symbol": symbol}
with presenting.step("sel_curve", wording.look_at_curve(summary, measure=measure, level=level)):
    presenting.chart(charts.correctness_chart(
        curves.levels, curves.p_correct, current_value=summary.p_correct, chance=curves.chance,
        y_title="P(best candidate picked)" + (" first" if k > 1 else ""),
        title=f"How often the best is {first}, by privacy level", **common), key="sel_curve")
    st.caption(wording.curve_caption(curves, noise=noise, measure=measure))

if k > 1:
    if presenting.chart(charts.correctness_chart(
            curves.top_k_levels, curves.top_k, current_value=summary.top_k,
            standard_error=maths.top_k_standard_error(curves),
            y_title=f"P(true top {k} recovered)",
            title=f"How often the {k} picks are exactly a true top {k}, by privacy level",
            **common), key="sel_top_k", extra=True) is not None:
        st.caption(wording.top_k_caption(curves, summary))

if not presenting_now:   # for a projector: the results only, none of the technical panels
    audit_panel.selection_audit(noise=noise, measure=measure, level=level, seed=state.seed(), k=k,
                                sensitivity=sensitivity, monotonic=monotonic)
