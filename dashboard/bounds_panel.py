"""The "What the bounds cost" section of a query page under a person-id unit: the error split
into the bounds' bias and the noise, the tuning curve over max rows (not private, and labelled
so), and the private route — max rows from a DP quantile of rows per person, charged to the
budget. One call from the page; the numbers come from ``dashboard.analysis.bounds_cost``."""

from __future__ import annotations

import streamlit as st

from dashboard import controls, person, plan_store, presenting
from dashboard.analysis import bounds_cost as bc
from dashboard.analysis.stats_query import QuerySpec
from dashboard.charts.bounds_cost import private_choice_bars, tuning_curve
from dashboard.choices import PrivacyChoice
from dashboard.data.model import LoadedDataset
from dashboard.data_source import source_of
from dashboard.kinds import adapter_of
from dashboard.text import plain
from engine import EngineError
from plan import model
from release.bounds import draw_max_rows
from release.errors import ReleaseRefused

#: Largest candidate the private choice scores (a public cap the user may lower).
MAX_CANDIDATE = 10_000
DREW = "bounds_max_rows_drawn"     # what the last real draw said, shown once


def _draw_for_release(loaded: LoadedDataset, data_key: str, person_column: str, q: float,
                      epsilon: float, largest: int) -> None:
    """The button's callback: one real draw (OpenDP, fresh entropy), into the plan as its
    max rows query (every draw seen is kept, to be charged) and into the unit (private)."""
    try:
        drawn = draw_max_rows(source_of(loaded), person_column, level=q, epsilon=epsilon,
                              largest=largest)
    except (ReleaseRefused, EngineError, ValueError) as exc:
        st.session_state[DREW] = (False, f"No draw: {exc}")
        return
    earlier = plan_store.max_rows_query(data_key)
    epsilons = (*(earlier.query.epsilons if earlier is not None else ()), float(epsilon))
    unit = person.current_unit(data_key)
    unit = person.PrivacyUnit(unit.person_column, drawn, unit.max_groups,
                              bounds_origin="private")
    # drawn for the release: the plan's unit as well as the session's
    plan_store.set_max_rows(data_key, model.PlanQuery(
        "max-rows", "Max rows per person (DP quantile of rows per person)",
        model.MaxRows(float(q), int(largest), int(drawn), epsilons), None, "statistics"), unit)
    person.set_unit(data_key, unit)
    st.session_state[DREW] = (True, (
        f"OpenDP drew max rows = {drawn:,} (fresh entropy), now this dataset's privacy unit. "
        f"It is in the release plan as its max rows query: {len(epsilons)} draw(s), ε = "
        f"{sum(epsilons):g} in all, charged when the plan is released."))


def bounds_section(loaded: LoadedDataset, data_key: str, spec: QuerySpec,
                   choice: PrivacyChoice, *, answer_range: tuple[float, float] | None,
                   seed: int, prefix: str) -> None:
    """Draw the section (nothing for one row = one person); ``prefix`` keys the widgets."""
    if spec.contribution is None:
        return
    st.subheader("What the bounds cost")
    if not bc.supported(spec):
        st.caption(adapter_of(spec.query).no_breakdown)
        return
    try:
        with st.spinner("Breaking the error down…"):
            cost = bc.bounds_cost(loaded, data_key, spec, choice, answer_range)
    except (ValueError, TypeError, EngineError) as exc:
        st.info(f"No breakdown: {plain(exc, limit=300)}")
        return
    st.warning("**Computed on the raw data: not private.** The bias and the best bound below "
               "are read off the data itself; use them to understand the trade-off in "
               "simulation. To choose the bound for a real release, use the private route "
               "further down (it spends a little budget).", icon=":material/visibility:")
    st.markdown(bc.cost_sentence(cost))
    st.dataframe(cost.table(), hide_index=True, key=f"{prefix}_cost_table")
    st.caption("Errors against the answer on all rows with unclamped values. Bias: the mean "
               "of the released value minus that answer (dropped rows and clamping); spread: "
               "how much the answer moves with the random choice of rows kept; noise: the "
               "mechanism's. Total error = √(bias² + spread² + noise²), exact (no sampling)."
               + (f" {cost.left_out:,} rows without a person id, a value or a category add "
                  "nothing; those with a person id still take one of their person's max rows."
                  if cost.left_out else ""))
    presenting.chart(tuning_curve(cost.sweep, current=cost.max_rows),
                     key=f"{prefix}_tuning_curve")
    st.caption("Larger max rows: less bias (fewer rows dropped), more noise (each person can "
               "change the answer more). The noise is assumed to grow in proportion to the "
               "sensitivity, as Laplace, Gaussian and geometric noise do. The star is the best "
               "bound on this data — which is exactly what a real release must not look at.")
    _private_route(loaded, data_key, spec, choice, seed=seed, prefix=prefix)


def _private_route(loaded: LoadedDataset, data_key: str, spec: QuerySpec,
                   choice: PrivacyChoice, *, seed: int, prefix: str) -> None:
    with st.expander("Choose max rows privately (a DP quantile of rows per person)"):
        left, middle, right = st.columns(3)
        q = controls.select("Quantile of rows per person", bc.QUANTILE_LEVELS,
                            key=f"{prefix}_rows_q", default=0.9,
                            format_func=lambda v: f"{v:.0%}", container=left)
        epsilon = controls.select("ε for this choice", bc.QUANTILE_EPSILONS,
                                  key=f"{prefix}_rows_epsilon", default=0.1, container=middle)
        largest = int(controls.number(
            "Largest candidate (public cap)", key=f"{prefix}_rows_cap", default=100.0,
            min_value=1.0, max_value=float(MAX_CANDIDATE), step=1.0, container=right))
        try:
            chosen = bc.private_max_rows(loaded, data_key, spec.contribution.person, q,
                                         epsilon, largest, seed)
        except (ValueError, TypeError, EngineError) as exc:
            st.error(f"{plain(exc, limit=300)}. Change the settings above.")
            return
        presenting.chart(private_choice_bars(chosen.candidates, chosen.probabilities,
                                             drawn=chosen.drawn, q=q, epsilon=epsilon),
                         key=f"{prefix}_private_rows")
        st.markdown(f"Each person adds one value (their number of rows), so this quantile has "
                    f"sensitivity max(q, 1 − q) whatever the bounds. Candidates the quantile "
                    "cannot tell apart (all above everyone's rows, say) would be equally "
                    "likely, so each row of the bound also costs one person's worth of score: "
                    "the draw prefers the smaller, at the same ε. "
                    f"{bc.total_privacy(choice.epsilon, epsilon)} This simulation drew "
                    f"**max rows = {chosen.drawn:,}**.")
        simulated, real = st.columns(2)
        if simulated.button(f"Use max rows = {chosen.drawn:,} (simulated)",
                            key=f"{prefix}_use_private_rows",
                            help="The simulation's draw is seeded (the seed is in the URL): a "
                                 "bound taken from it is read off the data, and the release "
                                 "card says so."):
            unit = person.current_unit(data_key)
            person.set_unit(data_key, person.PrivacyUnit(unit.person_column, chosen.drawn,
                                                         unit.max_groups, bounds_origin="data"))
            st.rerun()
        real.button("Draw max rows for the release", key=f"{prefix}_draw_max_rows",
                    type="primary", on_click=_draw_for_release,
                    args=(loaded, data_key, spec.contribution.person, q, epsilon, largest),
                    help=f"One draw with OpenDP's sampler and fresh entropy (ε = {epsilon:g}). "
                         "It enters the release plan as its max rows query: every draw you "
                         "make is charged when the plan is released.")
        said = st.session_state.pop(DREW, None)
        if said is not None:
            (st.success if said[0] else st.error)(plain(said[1], limit=500))
