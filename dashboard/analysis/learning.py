"""Private learning: DP naive Bayes accuracy against epsilon on Iris or Adult.

Plain functions (no Streamlit) pick features with declared bounds, split rows and run the sweep;
``learning_curve`` is the cached wrapper behind the page's chart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard.datasets import LoadedDataset
from dpcore.checks import check_choice, check_int
from dpcore.learning import accuracy_vs_epsilon


@dataclass(frozen=True)
class LearningTask:
    """A classification task on a built-in dataset: a label column and numeric features."""

    name: str
    dataset: str
    label: str
    features: tuple[str, ...]


#: The tasks the page offers (its own dataset choice: a classifier needs a label column).
TASKS = {
    "Iris": LearningTask("Iris", "Iris", "species",
                         ("sepal_length", "sepal_width", "petal_length", "petal_width")),
    "Adult": LearningTask("Adult", "Adult (UCI census income)", "income",
                          ("age", "education_num", "hours_per_week", "capital_gain",
                           "capital_loss")),
}
#: Noise for the released statistics, in the user's words.
NOISES = {"laplace": "Laplace", "bounded_laplace": "Bounded Laplace"}
#: 13 log-spaced epsilons from 0.01 to 10 (quarter decades, so 0.01, 0.1, 1 and 10 are on it).
EPSILONS: tuple[float, ...] = tuple(float(f"{e:.2g}") for e in np.logspace(-2, 1, 13))
REPETITION_OPTIONS = (20, 50, 100)
#: Share of rows held out to measure accuracy.
TEST_SHARE = 0.2
#: A private model is "as good as" the non-private one within this many accuracy points.
CLOSE_TO_BASELINE = 0.02
_RNG_OFFSET = 8  # this page's own random streams, apart from the other pages'


#: The column of :func:`feature_bounds` that flags a bound read off the data.
FROM_DATA = "Read off the data"


def feature_bounds(loaded: LoadedDataset, task: LearningTask) -> pd.DataFrame:
    """The declared bounds of each feature with unit and source, and whether a bound was read
    off the data (no documented bound exists: Adult's capital_loss).

    Raises ValueError naming the feature when the dataset declares no numeric domain for it.
    """
    rows = []
    for feature in task.features:
        domain = loaded.domains.get(feature)
        if domain is None or domain.kind != "numeric":
            raise ValueError(f"feature {feature!r} has no declared public range in "
                             f"{loaded.name}")
        rows.append({"Feature": feature, "Lower": float(domain.lower),
                     "Upper": float(domain.upper), "Unit": domain.unit,
                     FROM_DATA: bool(domain.from_data), "Source": domain.source})
    return pd.DataFrame(rows, columns=["Feature", "Lower", "Upper", "Unit", FROM_DATA,
                                       "Source"])


def bounds_note(bounds: pd.DataFrame) -> str:
    """What the page says about where the feature bounds come from (true for these bounds)."""
    read = bounds.loc[bounds[FROM_DATA], "Feature"].tolist()
    note = ("Feature bounds are declared, not computed by the app: values outside are clamped "
            "to them. They should be public knowledge (documented ranges): bounds taken from "
            "the data itself (its minimum and maximum) leak information about the people in "
            "it.")
    if not read:
        return note + " Every bound here is documented; the class labels are declared too."
    names = ", ".join(read)
    return (note + f" **Read off the data: {names}.** No documented bound exists for "
            f"{'this feature' if len(read) == 1 else 'these features'}, so the upper bound is "
            "the published file's own maximum; it reveals that someone has exactly that value, "
            "and the fit is ε-DP only if that maximum counts as public. The class labels are "
            "declared.")


def declared_classes(loaded: LoadedDataset, task: LearningTask) -> tuple[str, ...]:
    """The label's categories as the dataset declares them (public, not read off the rows)."""
    domain = loaded.domains.get(task.label)
    if domain is None or domain.categories is None:
        raise ValueError(f"label {task.label!r} has no declared categories in {loaded.name}")
    return domain.categories


def split_rows(n_rows: int, seed: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """A random 80/20 split of ``range(n_rows)``: (training rows, test rows), each sorted.

    The same seed gives the same split; the test part has round(0.2·n_rows) rows.
    """
    n_rows = check_int("n_rows", n_rows, minimum=2)
    seed = check_int("seed", seed, minimum=0)
    order = np.random.default_rng([seed, _RNG_OFFSET]).permutation(n_rows)
    n_test = int(round(TEST_SHARE * n_rows))
    return np.sort(order[n_test:]), np.sort(order[:n_test])


def task_arrays(frame: pd.DataFrame, task: LearningTask,
                classes: Sequence[str]) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Features as an (n, d) float array and labels as class numbers 0..k−1 into ``classes``.

    Rows with a missing feature or a label outside ``classes`` are dropped.
    """
    features = frame[list(task.features)].to_numpy(dtype=np.float64, na_value=np.nan)
    labels = pd.Categorical(frame[task.label].astype("string").to_numpy(dtype=object),
                            categories=list(classes)).codes.astype(np.int64)
    keep = np.isfinite(features).all(axis=1) & (labels >= 0)
    return features[keep], labels[keep]


@dataclass(frozen=True)
class LearningCurve:
    """Test accuracy against epsilon for one kind of noise, over repeated private fits."""

    task: str
    noise: str
    epsilon: NDArray[np.float64]
    median: NDArray[np.float64]
    p05: NDArray[np.float64]
    p95: NDArray[np.float64]
    accuracies: NDArray[np.float64]      # (epsilons, repetitions)
    baseline: float                      # the non-private model on the same split
    majority: float                      # always guessing the commonest training class
    train_rows: int
    test_rows: int

    def at(self, epsilon: float) -> tuple[float, float, float]:
        """(median, 5th, 95th percentile) of the accuracy at a grid epsilon."""
        i = int(np.argmin(np.abs(np.log(self.epsilon) - np.log(epsilon))))
        return float(self.median[i]), float(self.p05[i]), float(self.p95[i])

    def smallest_close_epsilon(self) -> float | None:
        """The smallest grid epsilon whose median is within ``CLOSE_TO_BASELINE`` of baseline."""
        close = np.flatnonzero(self.median >= self.baseline - CLOSE_TO_BASELINE)
        return float(self.epsilon[close[0]]) if close.size else None


def test_set_spread(accuracy: float, test_rows: int) -> float:
    """Half-width of the 95% normal interval of an accuracy measured on ``test_rows`` rows:
    1.96·√(p(1−p)/n), how far the same model's score moves from one test set to another."""
    p = min(max(float(accuracy), 0.0), 1.0)
    return 1.96 * math.sqrt(p * (1 - p) / check_int("test_rows", test_rows, minimum=1))


def above_baseline_note(curves: Mapping[str, LearningCurve],
                        labels: Mapping[str, str]) -> str | None:
    """Why a private median above the non-private model is chance (quoting the largest
    excess over the grid), or None when no median is above it."""
    best: tuple[float, str, float, float] | None = None
    for noise, curve in curves.items():
        for i in range(curve.epsilon.size):
            excess = float(curve.median[i]) - curve.baseline
            if excess > 0 and (best is None or excess > best[0]):
                best = (excess, noise, float(curve.epsilon[i]), float(curve.median[i]))
    if best is None:
        return None
    excess, noise, eps, median = best
    curve = curves[noise]
    spread = test_set_spread(curve.baseline, curve.test_rows)
    return (f"The private median ({labels[noise]} noise, ε = {eps:g}: {median:.1%}) is above "
            f"the non-private model ({curve.baseline:.1%}) by {100 * excess:.1f} points. That is "
            f"chance, not privacy making the model better: the test set has "
            f"{curve.test_rows:,} rows, so the same model scores within about "
            f"±{100 * spread:.1f} points of its accuracy from one test set to another (95%), "
            "and the noise only moves the model's estimates at random, which now and then "
            "happens to suit this test set.")


def accuracy_curve(features: NDArray, labels: NDArray, *, n_classes: int,
                   bounds: Sequence[tuple[float, float]], noise: str, repetitions: int,
                   seed: int, task: str = "") -> LearningCurve:
    """Split, then sweep the private classifier over ``EPSILONS`` with ``dpcore.learning``.

    Labels are class numbers 0..n_classes−1 and the classes are passed as declared, so the
    set of labels is never read off the data.
    """
    noise = check_choice("noise", noise, tuple(NOISES))
    train, test = split_rows(labels.shape[0], seed)
    # One noise stream per kind of noise, derived from the seed (never a global generator).
    noise_seed = int(np.random.SeedSequence(
        [seed, _RNG_OFFSET, list(NOISES).index(noise)]).generate_state(1)[0])
    result = accuracy_vs_epsilon(
        features[train], labels[train], features[test], labels[test], epsilons=EPSILONS,
        bounds=list(bounds), noise=noise, repetitions=repetitions, seed=noise_seed,
        classes=np.arange(n_classes))
    commonest = np.bincount(labels[train], minlength=n_classes).argmax()
    return LearningCurve(
        task=task, noise=noise, epsilon=result["epsilon"], median=result["median"],
        p05=result["p05"], p95=result["p95"], accuracies=result["accuracies"],
        baseline=float(result["baseline"]), majority=float(np.mean(labels[test] == commonest)),
        train_rows=int(train.size), test_rows=int(test.size))


@st.cache_data(show_spinner=False, max_entries=32)
def learning_curve(_loaded: LoadedDataset, dataset_key: str, task_name: str, noise: str,
                   repetitions: int, seed: int) -> LearningCurve:
    """Cached :func:`accuracy_curve` for a task of :data:`TASKS` (keyed by dataset, noise,
    repetitions and seed)."""
    task = TASKS[task_name]
    bounds = feature_bounds(_loaded, task)
    classes = declared_classes(_loaded, task)
    features, labels = task_arrays(_loaded.frame, task, classes)
    return accuracy_curve(features, labels, n_classes=len(classes),
                          bounds=list(zip(bounds["Lower"], bounds["Upper"], strict=True)),
                          noise=noise, repetitions=repetitions, seed=seed, task=task_name)


# --------------------------------------------------------------------------------------------
# Downloads: accuracy per epsilon and the settings behind it


def accuracy_values(curves: dict[str, LearningCurve]) -> pd.DataFrame:
    """Test accuracy against ε, one line per noise and ε: median, 5th and 95th percentile over
    the private fits, the non-private model and the commonest-class guess for reference, and
    the noise scale of the class counts (their sensitivity 1 over their share ε/3)."""
    frames = []
    for noise, curve in curves.items():
        epsilon = np.asarray(curve.epsilon, dtype=np.float64)
        frames.append(pd.DataFrame({
            "Noise": NOISES[noise], "epsilon": epsilon,
            "Median test accuracy": curve.median, "5th percentile": curve.p05,
            "95th percentile": curve.p95, "Non-private test accuracy": curve.baseline,
            "Always the commonest class": curve.majority,
            "Noise scale of the class counts (rows)": 3.0 / epsilon,
        }))
    return pd.concat(frames, ignore_index=True)


def describe_learning(curves: dict[str, LearningCurve], task: LearningTask, *, dataset: str,
                      bounds: pd.DataFrame, classes: Sequence[str], repetitions: int,
                      epsilon: float) -> dict:
    """The settings of the sweep: task, declared bounds and classes, budget split,
    sensitivities and (Laplace) noise scales at ``epsilon``. The seed is added by the download.
    """
    first = next(iter(curves.values()))
    d = len(task.features)
    half = {str(f): (float(u) - float(lo)) / 2
            for f, lo, u in zip(bounds["Feature"], bounds["Lower"], bounds["Upper"], strict=True)}
    return {
        "page": "Private learning", "dataset": dataset, "task": task.name,
        "model": "Gaussian naive Bayes from noisy class counts, feature sums and sums of squares",
        "label": task.label, "classes": [str(c) for c in classes],
        "features": {str(f): {"lower": float(lo), "upper": float(u), "unit": unit,
                              "bounds_from": ("the data (the file's own maximum: it leaks)"
                                              if read else "documentation (public)"),
                              "source": source}
                     for f, lo, u, unit, read, source in zip(
                         bounds["Feature"], bounds["Lower"], bounds["Upper"], bounds["Unit"],
                         bounds[FROM_DATA], bounds["Source"], strict=True)},
        "neighbouring_datasets": "add/remove one row (one row = one person)",
        "mechanisms": list(curves), "measure": "pure", "delta": None, "rho": None,
        "epsilons": [float(e) for e in first.epsilon], "epsilon": epsilon,
        "budget_split": {"class_counts": "ε/3",
                         "sums": f"ε/(3·{d}) per feature",
                         "sums_of_squares": f"ε/(3·{d}) per feature"},
        # Sums are centred at the middle of each feature's bounds: sensitivity = half-width.
        "sensitivity": {"class_counts": 1.0, "sums": half,
                        "sums_of_squares": {f: h * h for f, h in half.items()}},
        "noise_scale": {
            "meaning": "Laplace scale b = sensitivity / ε share, at the ε above; bounded "
                       "Laplace uses these for the counts and a larger calibrated b for the "
                       "sums, per class",
            "class_counts": 3.0 / epsilon,
            "sums": {f: h * 3 * d / epsilon for f, h in half.items()},
            "sums_of_squares": {f: h * h * 3 * d / epsilon for f, h in half.items()}},
        "private_fits_per_epsilon": repetitions,
        "test_share": TEST_SHARE, "train_rows": first.train_rows, "test_rows": first.test_rows,
        "split_random_stream": f"numpy.random.default_rng([seed, {_RNG_OFFSET}])",
    }


def learning_download(curves: dict[str, LearningCurve], task_name: str, *, dataset: str,
                      bounds: pd.DataFrame, classes: Sequence[str], repetitions: int,
                      epsilon: float) -> tuple[pd.DataFrame, dict]:
    """(accuracy table, parameters) for ``controls.downloads``."""
    return accuracy_values(curves), describe_learning(
        curves, TASKS[task_name], dataset=dataset, bounds=bounds, classes=classes,
        repetitions=repetitions, epsilon=epsilon)
