"""Private learning page: a naive Bayes classifier trained with differential privacy, and how
its test accuracy grows with epsilon (Iris or Adult, Laplace or bounded Laplace noise).
"""

from __future__ import annotations

import streamlit as st

from dashboard import charts, controls, presenting, state
from dashboard.analysis import learning
from dashboard.choices import fmt_number
from dashboard.number_text import ROUNDED_UP, UP_MARK, loss
from dashboard.text import plain

st.title("Private learning")
st.markdown(
    "A **Gaussian naive Bayes** classifier needs, per class, how many rows it has and the "
    "mean and variance of each feature. Here those are released with noise — a third of "
    "[ε](./glossary#epsilon) for "
    "the class counts, a third for the per-feature sums, a third for the sums of squares — so "
    "the whole fit is ε-DP for **add/remove one row** (one person), and the model is built "
    "from the noisy numbers alone.")

left, right = st.columns(2)
with left:
    task_name = controls.select("Dataset for this page", list(learning.TASKS),
                                key="learning_dataset", default="Iris")
with right:
    repetitions = controls.select("Private fits per ε", learning.REPETITION_OPTIONS,
                                  key="learning_repetitions", default=20,
                                  help="Each fit draws fresh noise; the chart shows their "
                                       "median and the range of the middle 90%.")
st.caption("This page picks its own dataset, independent of the sidebar: a classifier needs a "
           "label column and features whose ranges are publicly known, which only the "
           "built-in datasets declare. Uploads are not offered here. The sidebar's seed is used.")

task = learning.TASKS[task_name]
loaded = state.builtin(task.dataset)
try:
    bounds = learning.feature_bounds(loaded, task)
    classes = learning.declared_classes(loaded, task)
except ValueError as exc:
    st.error(f"This task cannot run: {plain(exc)}. Pick the other dataset.")
    st.stop()

st.markdown(f"**Predict** `{task.label}` ({', '.join(plain(c) for c in classes)}) **from** "
            f"{len(task.features)} numeric features of {plain(loaded.name)}, "
            f"{len(loaded.frame):,} rows, split 80/20 into training and test rows with the seed.")
st.dataframe(bounds, hide_index=True, key="learning_bounds")
st.caption(learning.bounds_note(bounds))

curves = {}
try:
    with st.spinner(f"Training {2 * repetitions * len(learning.EPSILONS):,} private "
                    "classifiers…"):
        for noise in learning.NOISES:
            curves[noise] = learning.learning_curve(
                loaded, f"builtin:{loaded.name}", task_name, noise, repetitions, state.seed())
except (ValueError, TypeError) as exc:
    st.error(f"The private classifiers could not be trained: {plain(exc, limit=400)}.")
    st.stop()
first = curves["laplace"]

marked = controls.log_slider("Look closer at ε", learning.EPSILONS, key="learning_epsilon",
                             default=1.0, help="One of the ε values the chart was computed at.")
presenting.chart(charts.accuracy_against_epsilon(
    first.epsilon,
    {learning.NOISES[n]: (c.median, c.p05, c.p95) for n, c in curves.items()},
    baseline=first.baseline, majority=first.majority, repetitions=repetitions,
    marked_epsilon=marked,
    title=f"Test accuracy of private naive Bayes on {task_name} against ε"),
    key="learning_chart")
st.caption(f"Each point is the median test accuracy of {repetitions} private classifiers "
           "trained at that ε (shaded: 90% of them); the dashed line is the same classifier "
           "without privacy, the dotted one what always guessing the commonest class scores. "
           "The accuracy axis is zoomed to the curves.")
above = learning.above_baseline_note(curves, learning.NOISES)
if above:
    st.info(above, icon=":material/casino:")
controls.downloads(*learning.learning_download(
    curves, task_name, dataset=loaded.name, bounds=bounds, classes=classes,
    repetitions=repetitions, epsilon=marked), key="learning_download", file_stem="private-learning",
    csv_label="Download accuracy against ε (CSV)")

st.markdown(f"**At ε = {fmt_number(marked)}** ({first.train_rows:,} training rows, "
            f"{first.test_rows:,} test rows):")
columns = st.columns(len(curves) + 1)
columns[0].metric("Non-private model", f"{first.baseline:.1%}")
for column, (noise, curve) in zip(columns[1:], curves.items(), strict=True):
    median, low, high = curve.at(marked)
    column.metric(f"{learning.NOISES[noise]} noise (median)", f"{median:.1%}",
                  delta=f"{100 * (median - first.baseline):+.1f} points vs non-private",
                  delta_color="normal")
    column.caption(f"90% of fits between {low:.1%} and {high:.1%}.")
d = len(task.features)
split = (f"The budget ε = {fmt_number(marked)} is split as ε/3 = {loss(marked / 3)} for "
         f"the class counts (noise scale {3 / marked:.3g} rows) and ε/(3·{d}) = "
         f"{loss(marked / (3 * d))} for each feature's sum and again for its sum of squares.")
st.markdown(split + (f" {ROUNDED_UP}" if UP_MARK in split else ""))

sentences = []
for noise, curve in curves.items():
    close = curve.smallest_close_epsilon()
    within = (f"within {100 * learning.CLOSE_TO_BASELINE:.0f} percentage points of the "
              "non-private accuracy")
    sentences.append(
        f"With {learning.NOISES[noise]} noise the median comes {within} from ε = "
        f"{fmt_number(close)} on." if close is not None else
        f"With {learning.NOISES[noise]} noise the median never comes {within} on this grid.")
st.markdown(" ".join(sentences) + " Bounded Laplace keeps each noisy sum inside its "
            "possible range, at the price of more noise for the same ε.")
