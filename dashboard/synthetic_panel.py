"""The end of the Synthetic data page's utility report (issue 23): a classifier trained on the
synthetic rows against one trained on the real rows, and the sweep of utility against the
budget over several generations. Not private, and labelled so; the work is in
``dashboard.analysis.synthetic``, the curves in ``dashboard.charts.synthetic``."""

from __future__ import annotations

import numpy as np
import streamlit as st

from dashboard import controls, presenting
from dashboard.analysis import synthetic as sy
from dashboard.charts.synthetic import against_budget
from dashboard.text import plain
from engine import JointAggregate

SWEEP_RESULT = "synthetic_sweep_result"   # (its settings, the Sweep), like synthetic_result
#: The budgets the sweep offers: ε, and ρ = ε²/2 rounded.
BUDGET_OPTIONS = {"epsilon": (0.1, 0.3, 1.0, 3.0, 10.0), "rho": (0.005, 0.05, 0.5, 5.0, 50.0)}
NOT_PRIVATE = ("**Not private.** These figures read the real table: they are for the data "
               "steward's eyes. Never publish them.")


def _share(value: float) -> str:
    return "—" if not np.isfinite(value) else f"{value:.3f}"


def _split_seed(seed: int) -> tuple[int, int]:
    """The held-out rows: the same for the single figure and the sweep."""
    return (seed, 24)


def classifier_section(cells: JointAggregate, codes, columns: sy.Columns, *, target: int,
                       seed: int) -> None:
    """Naive Bayes trained on the generated rows and on real rows, tested on held-out rows."""
    train, test = sy.split_rows(cells, rng=np.random.default_rng(_split_seed(seed)))
    acc = sy.held_out_accuracy(train, test, codes, columns.shape, target)
    name = plain(columns.names[target])
    st.markdown(
        f"**A classifier predicting {name}** from the other chosen columns (categorical naive "
        "Bayes, add-one smoothing), tested on the same "
        f"**{acc.test_rows:,} real rows held out** (each real row held out with probability "
        f"{1 - sy.TRAIN_SHARE:.0%}, drawn once with the sidebar's seed). Share of the "
        "held-out rows predicted "
        f"right: trained on the other {acc.train_rows:,} real rows **{_share(acc.train_on_real)}**,"
        f" trained on the synthetic rows **{_share(acc.train_on_synthetic)}**, always guessing "
        f"the training rows' commonest value **{_share(acc.majority)}**.")
    st.caption("The synthetic figure is **optimistic**: the table above was generated from all "
               "the real rows, the held-out ones included. The sweep below fits each table to "
               "the training rows only.")


def sweep_section(cells: JointAggregate, columns: sy.Columns, *, target: int, measure: str,
                  max_rows: int, rows: int, settings: tuple, seed: int) -> None:
    """The sweep's controls, its button (with a progress bar) and its curves."""
    symbol = "ε" if measure == "epsilon" else "ρ"
    st.subheader("Utility against the budget")
    st.warning(NOT_PRIVATE, icon=":material/visibility:")
    options = [f"{b:g}" for b in BUDGET_OPTIONS[measure]]
    left, middle, right = st.columns(3)
    picked = controls.multiselect(f"Budgets ({symbol})", options, key="synthetic_sweep_budgets",
                                  default=[f"{b:g}" for b in sy.SWEEP_BUDGETS[measure]],
                                  container=left)
    budgets = tuple(sorted(float(b) for b in picked))
    generations = int(controls.number("Generations per budget", default=3, min_value=1,
                                      max_value=10, step=1, container=middle,
                                      key="synthetic_sweep_generations"))
    algorithm = controls.radio("Algorithm of the sweep", ["MST", "AIM"], container=right,
                               key="synthetic_sweep_algorithm")
    spent = generations * sum(budgets)
    st.markdown(
        f"Generates **{generations}** table(s) of {rows:,} rows at each budget with "
        f"{algorithm} (its own choice of marginals) and a cheaper fit than Generate above "
        f"({sy.SWEEP_ITERS} mirror-descent iterations, not {sy.DEFAULT_ITERS}), each fitted to "
        f"the **{sy.TRAIN_SHARE:.0%} training part** of the real rows; the classifier is "
        f"tested on the rest. It reads the data {generations * len(budgets)} times: "
        f"{symbol} {' + '.join(f'{b:g}' for b in budgets) or '0'} per generation, "
        f"**{spent:g} in all** (generations × budgets), and **nothing is recorded**. Each fit "
        "takes seconds to minutes.")
    key = (*settings, target, budgets, generations, algorithm, sy.SWEEP_ITERS, seed)
    if st.button("Run the sweep", key="synthetic_sweep_run", disabled=not budgets):
        bar = st.progress(0.0, text="Fitting the first table…")

        def progress(done: int, total: int) -> None:
            bar.progress(done / total, text=f"{done} of {total} tables generated")

        try:
            result = sy.sweep(cells, columns, target=target, measure=measure, budgets=budgets,
                              generations=generations, max_rows=max_rows,
                              algorithm=algorithm, rows=rows, split_seed=_split_seed(seed),
                              workload_seed=seed, progress=progress)
        except (ValueError, RuntimeError) as exc:
            st.error(f"The sweep stopped: {plain(exc, limit=400)} Try other budgets or the "
                     "other algorithm; the rest of the page is unchanged.")
            result = None
        bar.empty()
        if result is not None:
            st.session_state[SWEEP_RESULT] = (key, result)
    stored = st.session_state.get(SWEEP_RESULT)
    if stored is None or stored[0] != key:
        st.info("Choose the budgets, then **Run the sweep**.")
        return
    _curves(stored[1], columns, target, symbol)


def _curves(result: sy.Sweep, columns: sy.Columns, target: int, symbol: str) -> None:
    presenting.chart(against_budget(
        result.budgets, {"1-way marginals": result.one_way_tv,
                          "2-way marginals": result.two_way_tv},
        symbol=symbol, title="Mean TV distance of the synthetic rows' marginals",
        y_title="mean TV distance (0: same proportions)"), key="synthetic_sweep_tv")
    if np.isfinite(result.workload_synthetic).any():
        direct = ("marginals measured directly (Laplace)" if symbol == "ε"
                  else "marginals measured directly (Gaussian)")
        presenting.chart(against_budget(
            result.budgets, {"synthetic rows": result.workload_synthetic,
                              direct: result.workload_direct},
            symbol=symbol, title="Random 3-way counting queries: mean absolute error",
            y_title="mean absolute error (share of the rows)"), key="synthetic_sweep_workload")
    presenting.chart(against_budget(
        result.budgets, {"trained on synthetic rows": result.train_on_synthetic},
        references={"trained on the real training rows": result.train_on_real,
                     "always the commonest value": result.majority},
        symbol=symbol, title=f"Accuracy predicting {columns.names[target]} (naive Bayes)",
        y_title="share of the held-out real rows predicted right", percent=True),
        key="synthetic_sweep_accuracy")
    st.caption(f"Lines: the median of {result.generations} generation(s); band: lowest to "
               "highest; points: each generation. TV distances and workload errors compare "
               f"with the {result.train_rows:,} training rows each table was fitted to; "
               f"accuracy is a share of the {result.test_rows:,} held-out rows.")
