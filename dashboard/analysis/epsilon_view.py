"""What Choose epsilon's privacy–utility chart draws and says: its curves, the target's
sentences, the captions, and the sensitivity note.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from dashboard import choices
from dashboard.analysis import selection_choices as sel
from dashboard.analysis.epsilon_question import ErrorQuery, SelectionQuestion
from dashboard.analysis.epsilon_sweep import (
    GRID,
    MechanismCurves,
    QueryNumbers,
    fmt,
    mechanism_name,
)
from dashboard.analysis.epsilon_use import UseEpsilon, use_epsilon
from dashboard.charts.epsilon import Curve
from dpcore import safe_rounding, utility


def sensitivity_note(query: ErrorQuery, numbers: QueryNumbers) -> str:
    """One line: the sensitivity, the neighbour relation, and where clamping bounds come from."""
    bound = query.contribution if query.spec is None else query.spec.contribution
    who = ("a row is added or removed" if bound is None else
           f"all rows of one person (same {bound.person}, at most {bound.max_rows:,} kept) are "
           "added or removed")
    if numbers.parts is not None:
        note = (f"Sensitivities of the {query.kind}'s parts: {numbers.parts} — the most one "
                f"person can change each part when {who}.")
    else:
        note = (f"Sensitivity: L1 = {safe_rounding.upper(numbers.l1, 6)}, L2 = "
                f"{safe_rounding.upper(numbers.l2, 6)} — the most one person can change the answer "
                f"when {who}.")
    if query.spec is not None and query.spec.lower is not None:
        note += (f" Values are clamped to [{query.spec.lower:g}, {query.spec.upper:g}], the "
                 "bounds set on the Noisy statistics page (the column's public range unless "
                 "you changed them); bounds read off the data itself would leak.")
    return note


@dataclass
class CurveView:
    """Everything the privacy–utility chart and its sentences need."""

    curves: list[Curve] = field(default_factory=list)
    title: str = ""
    y_title: str = ""
    measure_label: str = ""
    band_label: str | None = None
    target: float | None = None
    smallest: list[tuple[str, float]] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    log_y: bool = True
    value_format: str = ",.3g"
    #: "up" for error bounds, "down" for success rates (how hover values are rounded)
    round_values: str = "up"
    caption: str = ""
    #: one per sentence: what its "use this ε" button does
    uses: list[UseEpsilon] = field(default_factory=list)


def look_at_curve(view: CurveView) -> str:
    """Presentation mode's one sentence over the privacy–utility chart: the first mechanism's
    smallest ε meeting the target, when there is one."""
    if view.sentences:
        return f"**Look at:** where the line crosses the target. {view.sentences[0]}"
    return ("**Look at:** how the line falls as ε grows: to the right, less privacy and "
            "less noise.")


def error_view(query: ErrorQuery, results: Mapping[str, MechanismCurves],
               answers: Mapping[str, utility.SmallestEpsilon | str], *, measure: str,
               relative: bool, beta: float, delta: float, target_value: float,
               escape: Callable[[str], str] = str) -> CurveView:
    """Curves (exact line, simulated 5–95% band and points) and the target's sentences.

    ``target_value`` is in the units shown (a percentage when ``relative``).
    """
    conf = 1 - beta
    scale = 100.0 if relative else 1.0
    unit = "% of the true value" if relative else query.unit
    measure_words = {"alpha": f"±α at {conf:.0%} confidence", "rmse": "RMSE",
                     "mae": "mean absolute error"}[measure]
    view = CurveView(
        title=f"Error of the {query.what} against ε: {measure_words}",
        y_title=f"{measure_words} ({unit}, log scale)",
        band_label="5–95% of simulated |errors|",
        measure_label={"alpha": f"error at most {{y}} in {conf:.0%} of releases",
                       "rmse": "RMSE {y}", "mae": "mean |error| {y}"}[measure]
        + (" %" if relative else ""),
        target=target_value if measure == "alpha" else None,
    )
    if query.per_cell:
        view.title += " (per cell)"

    def pick(values: Mapping[str, NDArray], name: str) -> NDArray:
        return values[f"relative_{name}" if relative else name] * scale

    for kind, res in results.items():
        name, sim = mechanism_name(kind), res.simulated
        band = {"low": pick(sim, "p05"), "high": pick(sim, "p95")}
        if res.exact is not None:
            curve = Curve(name, np.asarray(GRID), line=pick(res.exact, measure),
                          simulated=pick(sim, measure), simulated_epsilon=sim["epsilon"],
                          **band)
        else:  # the mean: only simulated
            curve = Curve(f"{name} (simulated)", sim["epsilon"], line=pick(sim, measure), **band)
        view.curves.append(curve)
        answer = answers.get(kind)
        if answer is None:
            continue
        if isinstance(answer, str):
            view.problems.append(f"{name}: {answer}")
            continue
        if measure == "alpha":
            view.smallest.append((curve.name, answer.epsilon))
        view.sentences.append(target_sentence(query, kind, answer, beta=beta, delta=delta,
                                              target_value=target_value, relative=relative,
                                              true_value=res.true_value, cells=res.cells,
                                              escape=escape))
        view.uses.append(use_epsilon(query.source, kind, answer, delta=delta,
                                     query_kind=query.kind))
    view.caption = error_caption(view, measure=measure) + off_chart_note(view)
    return view


def off_chart_note(view: CurveView) -> str:
    """A caption's last words when a target's smallest ε lies beyond the curves' ε range."""
    grids = [np.asarray(c.epsilon, dtype=np.float64) for c in view.curves]
    if not grids or not view.smallest:
        return ""
    low, high = min(g.min() for g in grids), max(g.max() for g in grids)
    if all(low <= eps <= high for _, eps in view.smallest):
        return ""
    return " A smallest ε beyond the chart's range is named at that edge instead of a diamond."


def error_caption(view: CurveView, *, measure: str) -> str:
    """What the error chart draws: only what is on it (the mean has no exact line, no dots)."""
    exact = any(c.simulated is not None for c in view.curves)
    parts = [("Lines: the exact error of each mechanism; shaded: where 90% of simulated "
              "releases' errors fall (5th to 95th percentile); dots: the same measure from the "
              "simulation.") if exact else
             ("Lines: the error of each mechanism from the simulation (a noisy mean has no "
              "closed form); shaded: where 90% of simulated releases' errors fall (5th to 95th "
              "percentile).")]
    parts.append("Diamonds: the smallest ε meeting the target; dashed: the current ε."
                 if measure == "alpha" else "Dashed: the current ε. The target is about the ±α "
                 "error bound: choose that measure to see it on the chart.")
    values = [np.asarray(part, dtype=np.float64) for c in view.curves
              for part in (c.line, c.low, c.simulated) if part is not None]
    if view.log_y and any(np.any(v <= 0) for v in values):
        parts.append("An error of 0 (discrete noise: the exact answer) sits on the line "
                     "marked 0 at the bottom, as a log axis has no 0.")
    return " ".join(parts)


def target_sentence(query: ErrorQuery, kind: str, answer: utility.SmallestEpsilon, *,
                    beta: float, delta: float, target_value: float, relative: bool,
                    true_value: float | None, cells: int = 1,
                    escape: Callable[[str], str] = str) -> str:
    """e.g. 'With Laplace noise, ε ≥ 0.3 keeps the count within ±10 of the truth in 95% of
    releases.' (may quote a column name: escape before display).

    For a histogram or table the bound holds for each cell on its own; the cells' noise is
    independent, so all ``cells`` at once hold in at least (1 − β)^cells of releases.
    """
    name = mechanism_name(kind) + " noise" + (f" (δ = {delta:g})" if choices.needs_delta(kind)
                                              else "")
    what = escape(query.what)
    if relative:
        within = f"±{target_value:g}% (±{fmt(target_value / 100 * abs(true_value))})"
    else:
        within = f"±{fmt(target_value)}"
    how = "≈ " if query.made_of_parts else ""
    tail = (f" (read off the simulated curve: a noisy {query.kind} has no closed form)"
            if query.made_of_parts else "")
    if cells > 1:
        tail = f" ({all_cells_note(1 - beta, cells)})"
    if answer.met_at_lower_end:
        return (f"With {name}, every ε down to {safe_rounding.upper(answer.epsilon)} keeps the "
                f"{what} within {within} of the truth in {1 - beta:.0%} of releases{tail}.")
    return (f"With {name}, ε ≥ {how}{safe_rounding.upper(answer.epsilon)} keeps the {what} within "
            f"{within} of the truth in {1 - beta:.0%} of releases{tail}.")


def all_cells_note(confidence: float, cells: int) -> str:
    """What a per-cell bound says about all cells at once, with independent noise per cell."""
    return (f"each one on its own; all {cells:,} at once in at least "
            f"{safe_rounding.percent_lower(confidence**cells)} of releases, the noise being "
            "independent")


def selection_view(question: SelectionQuestion,
                   results: Mapping[str, tuple[Mapping[str, NDArray],
                                               utility.SmallestEpsilon | str]], *,
                   target: float, escape: Callable[[str], str] = str) -> CurveView:
    """P(correct) against epsilon for report noisy max with each noise in ``results`` (noise →
    its sweep and smallest epsilon), and the target sentences."""
    # the sentences are markdown (escaped); the chart escapes its title itself
    top = f"a true top {question.k}" if question.k > 1 else None
    right = top or escape(question.what)
    view = CurveView(
        title=f"How often report noisy max picks {top or question.what}, against ε",
        y_title="Releases that pick the right answer (%)",
        measure_label="the right answer in {y}% of releases",
        target=100 * target, log_y=False, value_format=".3g", round_values="down",
        caption="The probability that report noisy max picks the right answer (exact for one "
                "pick, simulated for k > 1); a tie for first counts as right. Diamonds: the "
                "smallest ε meeting the target; dashed: the current ε.")
    approx = "≈ " if question.k > 1 else ""
    for kind, (sweep, answer) in results.items():
        noise = sel.NOISES[kind]
        view.curves.append(Curve(name=noise + (" (simulated)" if question.k > 1 else ""),
                                 epsilon=sweep["epsilon"], line=100 * sweep["p_correct"]))
        if isinstance(answer, str):
            view.problems.append(f"{noise}: {answer}")
            continue
        view.smallest.append((view.curves[-1].name, answer.epsilon))
        if answer.met_at_lower_end:
            view.sentences.append(f"With {noise}, every ε down to "
                                  f"{safe_rounding.upper(answer.epsilon)} picks {right} in at "
                                  f"least {target:.0%} of releases.")
        else:
            view.sentences.append(
                f"With {noise}, ε ≥ {approx}{safe_rounding.upper(answer.epsilon)} picks "
                f"{right} in at least {target:.0%} of releases.")
        view.uses.append(use_epsilon("selection", kind, answer, delta=None))
    view.caption += off_chart_note(view)
    return view
