"""Noisy statistics, the words and tables on the page: the sensitivity and noise scale
explained, accuracy sentences, the metrics and release tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from dashboard import choices
from dashboard.analysis.intervals import RATIO, SPREAD, has_method, interval_text
from dashboard.analysis.stats_plan import ReleasePlan
from dashboard.choices import PrivacyChoice
from dashboard.kinds import adapter_of
from dashboard.kinds.base import Neighbours
from dashboard.number_text import count, down, percent_down, up
from dpcore.mechanisms import AdditiveMechanism
from dpcore.risk import percent
from plan.kinds import KINDS

if TYPE_CHECKING:
    from dashboard.analysis.stats_errors import MechanismRun


NEIGHBOURS = "add/remove one row (one row = one person)"
#: The two sizes of a change to several released numbers at once, in plain words.
SENSITIVITY_NORMS = {
    "L1": "L1 adds up how much each released number can change, which "
          f"{choices.norm_names('L1')} noise is calibrated to",
    "L2": "L2 is the square root of the sum of the squared changes, which "
          f"{choices.norm_names('L2')} noise is calibrated to",
}


def fmt_value(x: float) -> str:
    """A number for the page: 48,842 · 1,234.5 · 269.6 · 2.996 · 0.01234; '—' if not finite."""
    x = float(x)
    if not math.isfinite(x):
        return "—"
    if abs(x) >= 1e5 or (x.is_integer() and abs(x) >= 1):
        return f"{x:,.0f}"
    if abs(x) >= 1e3:
        return f"{x:,.1f}"
    return f"{x:.4g}"


def _sensitivity_text(plan: ReleasePlan) -> tuple[str, str]:
    """(short sensitivity, why) for the plan's neighbour relation: add/remove one row, or one
    person's rows after truncation to the unit's bounds."""
    spec = plan.spec
    norm = plan.choice.spec.sensitivity_norm
    bound = spec.contribution
    if bound is None:
        one, who = "1", "adding or removing one row"
    else:
        one = fmt_value(bound.max_rows)
        who = (f"each person keeps at most {bound.max_rows:,} rows (the rest are dropped "
               "first), so adding or removing one person")
    neighbours = Neighbours(one, who, bound, norm, SENSITIVITY_NORMS[norm], fmt_value)
    return adapter_of(spec.query).sensitivity_words(plan, neighbours)


def _scale_text(mechanism: AdditiveMechanism, choice: PrivacyChoice) -> str:
    """One line: the noise scale and where it comes from (from the kind's spec)."""
    return choices.scale_text(mechanism, choice, fmt_value).rstrip(".")


def describe_plan(plan: ReleasePlan) -> tuple[str, str, str]:
    """(sensitivity, noise scale, one-line explanation) as the page shows them.

    None of the three quotes the user's file (no column names), so they are safe as markdown.
    """
    sensitivity, why = _sensitivity_text(plan)
    if plan.closed_form:
        scale = fmt_value(plan.release.scale)
        noise = _scale_text(plan.release, plan.choice)
        return sensitivity, scale, f"Sensitivity {sensitivity}: {why}. Noise: {noise}."
    scale, explanation = adapter_of(plan.spec.query).parts_explanation(plan, sensitivity, why,
                                                                        fmt_value)
    return sensitivity, scale, explanation


# --------------------------------------------------------------------------------------------
# Sentences and tables


def accuracy_sentence(run: MechanismRun, confidence: float) -> str:
    """e.g. '95% of releases are within ±2.996 of the true count (Laplace, closed form).'"""
    alpha, exact = run.alpha_at(confidence)
    kind = KINDS[run.query]
    what = adapter_of(run.query).value_noun
    if exact and kind.per_cell:
        cells = int(run.true_value.size)
        return (f"In each category, {confidence:.0%} of releases are within ±{up(alpha)} "
                f"of the true count ({run.name}, closed form). All {cells:,} categories at "
                f"once: at least {percent_down(confidence**cells)} of releases (independent noise "
                f"per category; {percent(run.summary.all_within[confidence])} of the "
                f"{run.summary.releases:,} simulated ones).")
    if exact:
        return (f"{confidence:.0%} of releases are within ±{up(alpha)} of the true "
                f"{what} ({run.name}, closed form).")
    how = f"({run.name}, Monte Carlo quantile: the noisy {what} has no closed form)"
    reach = _bound_reached(run, alpha)
    if reach is not None:
        bound, largest = reach
        if largest:   # the quantile is the largest error there is: every release is within it
            return (f"The error is at most ±{up(alpha)} — the largest error possible given "
                    f"the bounds [{run.clamped_to[0]:g}, {run.clamped_to[1]:g}] (a release "
                    f"clamped to {bound:g}): every release of the {what} is within it, a "
                    f"figure of the bounds, not of the noise {how}.")
        return (f"{confidence:.0%} of the simulated releases were within ±{up(alpha)} of the "
                f"true {what}: ±{up(alpha)} is the distance from the true {what} to the bound "
                f"{bound:g}, where the releases clamped to it land, so the bounds, not the "
                f"noise, set this figure {how}.")
    return (f"{confidence:.0%} of the simulated releases were within ±{up(alpha)} of the "
            f"true {what} {how}.")


def _bound_reached(run: MechanismRun, alpha: float) -> tuple[float, bool] | None:
    """(bound, whether it is the farther one) when the simulated ±alpha is the distance from
    the true value to a bound the release is clamped to (the quantile fell on the releases
    clamped there); None otherwise."""
    if run.clamped_to is None:
        return None
    truth = float(run.true_value)
    lower, upper = run.clamped_to
    distances = {lower: truth - lower, upper: upper - truth}
    for bound, distance in distances.items():
        if math.isclose(alpha, distance, rel_tol=1e-9, abs_tol=1e-12):
            return bound, distance >= max(distances.values())
    return None


#: A share of simulated releases clamped to a bound from which the note under the error chart
#: says so (a spike of a thousandth of the releases shows beside bins of about a sixtieth).
CLAMPED_SHOWN = 0.001


def clamped_note(run: MechanismRun) -> str:
    """e.g. '12.3% of the Laplace releases hit a bound and are clamped to [0, 10] (0.4% to 0,
    11.9% to 10): the spikes at the ends of the chart.' Empty when fewer than
    :data:`CLAMPED_SHOWN` of them are clamped."""
    if run.clamped_to is None:
        return ""
    low, high = run.summary.share_clamped
    if low + high < CLAMPED_SHOWN:
        return ""
    lower, upper = run.clamped_to
    truth, edges = float(run.true_value), run.summary.edges
    on_chart = (low >= CLAMPED_SHOWN and lower - truth >= edges[0],
                high >= CLAMPED_SHOWN and upper - truth <= edges[-1])
    spikes = {(True, True): ": the spikes at both ends of the chart",
              (True, False): ": the spike at the left end of the chart",
              (False, True): ": the spike at the right end of the chart",
              (False, False): ""}[on_chart]
    return (f"{percent(low + high)} of the {run.name} releases hit a bound and are clamped to "
            f"[{lower:g}, {upper:g}] ({percent(low)} to {lower:g}, {percent(high)} to "
            f"{upper:g}){spikes}.")


def look_at_bars(run: MechanismRun, confidence: float) -> str:
    """Presentation mode's one sentence over the bars: where the noise shows."""
    alpha, _ = run.alpha_at(confidence)
    return (f"**Look at:** the coloured bars (one noisy release) against the black ones (the "
            f"true counts): the gap is the noise, within ±{up(alpha)} in {confidence:.0%} of "
            "releases.")


def look_at_errors(run: MechanismRun, confidence: float) -> str:
    """Presentation mode's one sentence over the error chart: how wide the noise spreads."""
    alpha, _ = run.alpha_at(confidence)
    return (f"**Look at:** the spread of the errors over {run.summary.releases:,} releases: "
            f"{confidence:.0%} land within ±{up(alpha)} of the true "
            f"{adapter_of(run.query).value_noun}, the shaded band.")


def error_chart_note(runs: Sequence[MechanismRun], confidence: float) -> str:
    """The plain-language caption under the error chart."""
    outside = max(run.summary.share_outside for run in runs)
    line = ("; line: the closed-form distribution" if any(run.density_x is not None
                                                           for run in runs) else "")
    notes = [f"Bars: the simulated errors{line}; shaded: ±α at {confidence:.0%}. "
             f"{outside:.2%} of releases fall outside the chart."]
    kind = KINDS[runs[0].query]
    if kind.per_cell:
        notes.append("Errors of every category are pooled.")
    if note := adapter_of(runs[0].query).error_note:
        notes.append(note)
    notes.extend(note for note in map(clamped_note, runs) if note)
    if any(run.name == "Clamped Laplace" for run in runs):
        notes.append("Clamped releases pile up exactly at the bounds (a spike the line omits).")
    return " ".join(notes)


def metrics_table(runs: Sequence[MechanismRun], confidence: float) -> pd.DataFrame:
    """Metrics side by side, one column per mechanism (pooled over categories)."""

    def pooled(values: NDArray | None, *, root: bool = False) -> str:
        if values is None:
            return "— (no closed form)"
        if root:
            return fmt_value(math.sqrt(float(np.mean(np.square(values)))))
        return fmt_value(float(np.mean(values)))

    level = f"{confidence:.0%}"
    rows: dict[str, list[str]] = {}
    for run in runs:
        s = run.summary
        closed = run.alpha is not None
        within = s.within_alpha.get(confidence)
        column = {
            "Sensitivity (neighbours as above)": run.sensitivity,
            "Noise scale": run.scale,
            f"±α at {level}, closed form": (up(np.max(run.alpha[confidence])) if closed
                                            else "— (no closed form)"),
            f"±α at {level}, simulated quantile of |error|":
                fmt_value(s.abs_error_quantiles[confidence]),
            "Simulated releases within the closed-form ±α": (f"{within:.2%}" if within is not None
                                                            else "—"),
            "RMSE, simulated": fmt_value(s.rmse),
            "RMSE, closed form": pooled(run.analytic_rmse, root=True),
            "Mean absolute error, simulated": fmt_value(s.mae),
            bias_row(run): fmt_value(s.bias),
            "Bias, closed form": pooled(run.analytic_bias),
        }
        for key, value in column.items():
            rows.setdefault(key, []).append(value)
    return pd.DataFrame(rows, index=[r.label for r in runs]).T


def bias_row(run: MechanismRun) -> str:
    """The name of the simulated bias's row: the bias of what is released (clamped, for a
    mean)."""
    if run.clamped_to is None:
        return "Bias of the released value, simulated"
    lower, upper = run.clamped_to
    return f"Bias of the released value (clamped to [{lower:g}, {upper:g}]), simulated"


def release_table(runs: Sequence[MechanismRun], confidence: float | None = None
                  ) -> pd.DataFrame:
    """One release per mechanism next to the true counts, per category, with its error.

    Counts read whole: the noisy count is rounded to the nearest whole number (post-processing,
    as a published count would be), and its error is that of the rounded count. The relative
    error is |noisy − true| / true in percent, empty where the true count is 0.
    """
    first = runs[0]
    table = pd.DataFrame({"Category": list(first.labels or ()),
                          "True count": np.round(first.true_value).astype(np.int64)})
    for run in runs:
        noisy = np.round(run.release)
        error = noisy - run.true_value
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(run.true_value > 0, 100 * np.abs(error) / run.true_value, np.nan)
        table[f"Noisy ({run.name})"] = noisy.astype(np.int64)
        table[f"Error ({run.name})"] = np.round(error).astype(np.int64)
        table[f"Relative error % ({run.name})"] = np.round(relative, 3)
        if confidence is not None and run.intervals is not None:
            low, high = run.intervals[confidence]
            whole = np.all(np.isfinite(low)) and np.all(np.isfinite(high))
            table[f"Lower {confidence:.0%} ({run.name})"] = low.astype(np.int64) if whole else low
            table[f"Upper {confidence:.0%} ({run.name})"] = (high.astype(np.int64) if whole
                                                              else high)
    return table


def _level(confidence: float) -> str:
    """A confidence in percent, rounded down (a guarantee): 95%, 97.5%, 98.33%."""
    return f"{down(100 * confidence)}%"


def interval_sentence(run: MechanismRun, confidence: float) -> str:
    """The release's interval for the true value at ``confidence``, in words, computed as a
    release computes it; for a mean, with the noisy sum and count it is read from; for a
    query whose kind gives no interval, a sentence saying so."""
    noun = adapter_of(run.query).value_noun
    if run.intervals is None:
        none = " (a real release gives none either)" if not run.interval_method else ""
        return (f"{run.name}: no interval for the true {noun} is given here yet{none}; the ±α "
                "above comes from the simulation.")
    low, high = (float(np.max(end)) for end in run.intervals[confidence])
    text = (f"{run.name}: {_level(confidence)} interval for the true {noun}: "
            f"{interval_text(low, high)}")
    ratio, spread = (has_method(run.interval_method, key) for key in (RATIO, SPREAD))
    if not (ratio or spread):
        return text + " (from the noise's law and the released value alone)."
    named = [f"noisy {name} {fmt_value(value)}" for name, value in run.release_parts]
    parts = ", the ".join(named[:-1]) + " and the " + named[-1]
    if ratio:
        lower, upper = run.clamped_to
        how, kept = "divides", f"the bounds [{lower:g}, {upper:g}]"
    else:
        how, kept = "combines", (
            "[0, ((upper − lower)/2)²], where every variance of the values lies")
    return text + (f" (from the {parts} this release {how}, each within its "
                   f"{_level(1 - (1 - confidence) / len(run.release_parts))} interval, a count "
                   f"below 1 read as 1, then kept within {kept}: "
                   "conservative, it holds at least as often as stated).")


def release_summary(run: MechanismRun) -> dict[str, str]:
    """One noisy release of a count, sum, mean or variance, its absolute and relative error.
    A count reads whole (rounded: post-processing), its error that of the whole count."""
    truth, noisy = float(run.true_value), float(run.release)
    whole = KINDS[run.query].counts_rows
    if whole:
        noisy = float(round(noisy))
    error = abs(noisy - truth)
    relative = f"{error / abs(truth):.3%}" if truth != 0 else "— (true answer is 0)"
    shown_value = count if whole else fmt_value
    return {f"One release ({run.name})": shown_value(noisy), "Absolute error": shown_value(error),
            "Relative error": relative}


# --------------------------------------------------------------------------------------------
# The page's captions


def categories_note(declared: bool) -> str:
    """Where a histogram's categories come from."""
    if declared:
        return "Categories from the column's public list, empty ones included."
    return ("No public category list: the categories come from the data, which reveals which "
            "values occur (a category only one person has reveals that person).")


COMPARE_NOTE = ("The second mechanism gets the same privacy level. Gaussian noise is never pure "
                "DP: to compare Laplace with Gaussian, choose approximate DP.")


def answer_range_note() -> str:
    return (f"{choices.range_names()} keep the answer in a public range. It starts from a "
            "round number at or above the number of rows: the built-in datasets publish their "
            "size; for your own file, type a range you could publish without looking at the "
            "data.")


def bars_note(confidence: float) -> str:
    return (f"Black bars: the true counts. Coloured bars: one noisy release; the whiskers show "
            f"±α, the range {confidence:.0%} of releases land in. Below, on a scale of its own, "
            f"each bar's error (noisy − true) inside its ±α band: the part of the bars above "
            f"that the eye cannot see.")


CATEGORY_ERRORS_NOTE = ("The noise has the same size in every category, so small categories "
                        "suffer most: relative to its count, their error is largest.")


def metrics_note(runs: Sequence[MechanismRun]) -> str:
    quantiles = f"Simulated quantiles use the first {runs[0].summary.quantile_from:,} errors."
    first = runs[0]
    if KINDS[first.query].made_of_parts:
        kept = (f"clamped to the bounds [{first.clamped_to[0]:g}, {first.clamped_to[1]:g}]"
                if first.clamped_to is not None else "kept within [0, h²]")
        return ("RMSE: root mean squared error. Bias: the average of released − true. The "
                f"released {first.query} is a ratio of noisy numbers {kept}, so it is biased "
                "whatever the noise: the table gives the bias of what is released, from the "
                f"simulation (no closed form). {quantiles}")
    unbiased = [choices.mechanism_name(k) for k in choices.RANGE_FREE]
    return ("RMSE: root mean squared error. Bias: the average of released − true; zero for "
            f"{', '.join(unbiased)} noise (symmetric, added without limits), not for "
            f"{choices.range_names()}. {quantiles}")
