"""Budget: a plan of releases checked row by row and totalled under three composition rules.

Plain functions (no Streamlit) check a plan, compose it (basic, advanced, zCDP) and count how many
equal releases fit a budget; ``fit_curves`` is the cached wrapper behind the page's chart.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd
import streamlit as st
from numpy.typing import NDArray

from dashboard import choices
from dashboard.choices import MEASURES, MECHANISMS, fmt_number
from dashboard.shown import up
from dpcore._checks import check_delta, check_positive
from dpcore.measures import ZCDP, ApproxDP, PureDP, zcdp_epsilon
from dpcore.mechanisms import make_mechanism

#: The editor's columns, in order.
QUERY, MECHANISM, MEASURE, EPSILON, DELTA, RHO, SENSITIVITY = (
    "Query", "Mechanism", "Measure", "ε", "δ", "ρ", "Sensitivity")
PLAN_COLUMNS = (QUERY, MECHANISM, MEASURE, EPSILON, DELTA, RHO, SENSITIVITY)
#: The composition rules, in the user's words.
RULES = {
    "basic": "Basic composition",
    "advanced": "Advanced composition",
    "zcdp": "zCDP composition",
}
#: Total budgets offered (ε): round numbers from a tight to a generous budget.
BUDGET_GRID = (0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 15.0, 20.0)
#: Failure probability of the "± alpha" error shown for each release (a 95% bound).
ACCURACY_BETA = 0.05
#: Limits of the editor's number columns, checked again for every row (ε above 100 protects
#: nobody, and the limits keep every total finite).
LIMITS = {EPSILON: (0.0, 100.0), DELTA: (0.0, 1.0), RHO: (0.0, 100.0),
          SENSITIVITY: (0.0, 1e9)}
#: A shared plan (URL) keeps at most this many rows and this many characters per query name.
MAX_PLAN_ROWS = 50
MAX_QUERY_CHARS = 80
#: The chart draws every k up to this many releases, then this many points spread over k.
CHART_POINTS = 400
#: The chart stops here whatever the budget (k beyond it is not a plan anyone makes).
MAX_RELEASES = 10**7

_MECHANISM_BY_LABEL = {label: kind for kind, label in MECHANISMS.items()}
_MEASURE_BY_LABEL = {label: kind for kind, label in MEASURES.items()}




def default_plan() -> pd.DataFrame:
    """Four releases from Adult: a count, a histogram, a sum and a sum for a mean.

    The sensitivities are add/remove-one-row sensitivities: a count and each cell of a
    histogram change by 1; a sum of values clamped to [lower, upper] (lower >= 0) by upper.
    """
    rows = [
        ("Number of people", choices.DEFAULT_KIND, "pure", 0.5, None, None, 1.0),
        ("Histogram of education (16 cells)", choices.WHOLE_NUMBER_KIND, "pure", 0.5, None,
         None, 1.0),
        ("Total hours worked per week (clamped to 1–99)", choices.APPROX_KIND, "approx", 1.0,
         1e-6, None, 99.0),
        ("Sum of age (17–90), for a mean", choices.APPROX_KIND, "zcdp", None, 1e-6,
         0.125, 90.0),
    ]
    return _plan_frame(rows)


def _plan_frame(rows: Sequence[tuple]) -> pd.DataFrame:
    """A plan as the editor holds it: mechanism and measure keys, floats (NaN = empty)."""
    records = [
        {QUERY: query, MECHANISM: mechanism, MEASURE: measure,
         EPSILON: epsilon, DELTA: delta, RHO: rho, SENSITIVITY: sensitivity}
        for query, mechanism, measure, epsilon, delta, rho, sensitivity in rows
    ]
    frame = pd.DataFrame.from_records(records, columns=list(PLAN_COLUMNS))
    numbers = [EPSILON, DELTA, RHO, SENSITIVITY]
    frame[numbers] = frame[numbers].astype(np.float64)
    frame[QUERY] = frame[QUERY].astype(object)
    frame[MECHANISM] = frame[MECHANISM].astype(object)
    frame[MEASURE] = frame[MEASURE].astype(object)
    return frame


# --------------------------------------------------------------------------------------------
# One planned release


@dataclass(frozen=True)
class CheckedRelease:
    """One row of the plan, checked: its guarantee under each rule, or what is wrong with it.

    ``approx`` is the (epsilon, delta) it counts as under basic and advanced composition;
    ``zcdp`` its rho; ``accuracy`` the 95% error bound ± alpha for its sensitivity (None for
    the bounded mechanisms, whose error depends on the true value). ``error`` says what is
    wrong when the row cannot be used; ``note`` explains a conversion.
    """

    row: int
    query: str
    approx: ApproxDP | None = None
    zcdp: ZCDP | None = None
    accuracy: float | None = None
    error: str | None = None
    note: str = ""

    @property
    def valid(self) -> bool:
        return self.error is None

    def name(self) -> str:
        """'row 2 (Number of people)': for messages (escape it before markdown)."""
        return f"row {self.row} ({self.query})" if self.query else f"row {self.row}"


def _number(value: object) -> float | None:
    """A cell as a float, None when it is empty (None, NaN, blank text)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan  # not a number: caught by the range checks below
    return None if math.isnan(x) and not isinstance(value, str) else x


def _kind(value: object, labels: dict[str, str], keys: dict[str, str]) -> str | None:
    """A mechanism or measure cell as its key ("laplace"), given as a key or a label."""
    if not isinstance(value, str):
        return None
    return value if value in labels else keys.get(value)


class _RowError(ValueError):
    """What is wrong with a row, in words the user can act on."""


def _positive(name: str, value: float | None, hint: str, *, column: str) -> float:
    if value is None:
        raise _RowError(f"{name} is empty — {hint}")
    if not 0 < value < math.inf:
        raise _RowError(f"{name} must be a positive number, got {value:g} — {hint}")
    top = LIMITS[column][1]
    if value > top:
        raise _RowError(f"{name} must be at most {top:g}, got {value:g} — {hint}")
    return value


def _delta(value: float | None, *, required: bool, hint: str) -> float:
    if value is None:
        if required:
            raise _RowError(f"δ is empty — {hint}")
        return 0.0
    if not 0 <= value < 1:
        raise _RowError(f"δ must be at least 0 and below 1, got {value:g} — use a tiny "
                        "probability such as 1e-6, far below 1 / number of people")
    if required and value == 0:
        raise _RowError(f"δ must be above 0 here — {hint}")
    return value


def check_release(row: int, query: object, mechanism: object, measure: object,
                  epsilon: object, delta: object, rho: object,
                  sensitivity: object) -> CheckedRelease:
    """Check one planned release and work out what it costs under each composition rule.

    Never raises for bad input: the returned ``error`` says what is wrong and how to fix it.

    Rules: Laplace, geometric and clamped Laplace noise are pure ε-DP (a δ typed for them is
    not used); the Gaussian needs approximate DP (ε, δ > 0) or zCDP (ρ, plus the δ at which
    basic and advanced composition read it); bounded Laplace is pure ε-DP, or (ε, δ)-DP when
    δ > 0. Under zCDP, pure ε counts as ρ = ε²/2; a Gaussian calibrated to (ε, δ) counts as
    its exact ρ = Δ²/(2σ²); bounded Laplace at (ε, δ) is calibrated to be pure
    ε₀ = ε − ln(1 − δ)-DP, so it counts as ρ = ε₀²/2.
    """
    query = "" if query is None or (isinstance(query, float) and math.isnan(query)) \
        else str(query).strip()
    kind = _kind(mechanism, MECHANISMS, _MECHANISM_BY_LABEL)
    measure_kind = _kind(measure, MEASURES, _MEASURE_BY_LABEL)
    eps, dlt, rh, sens = (_number(v) for v in (epsilon, delta, rho, sensitivity))
    try:
        if kind is None:
            raise _RowError("no mechanism — pick one in the Mechanism column")
        if measure_kind is None:
            raise _RowError("no privacy measure — pick one in the Measure column")
        if kind not in choices.offered(measure_kind):
            raise _RowError(_not_offered(kind, measure_kind))
        sens = _positive("Sensitivity", sens, "type how much one person can change the "
                         "answer (1 for a count)", column=SENSITIVITY)
        if dlt is not None:  # a δ typed anywhere must be a probability, used or not
            _delta(dlt, required=False, hint="")
        if choices.spec(kind).integer_only and not float(sens).is_integer():
            raise _RowError(f"{choices.mechanism_name(kind)} noise needs a whole-number "
                            f"sensitivity, got {sens:g} — use "
                            f"{choices.mechanism_name(choices.DEFAULT_KIND)} noise for "
                            "fractional sensitivities")
        approx, zcdp, accuracy, note = _cost(kind, measure_kind, eps, dlt, rh, sens)
    except _RowError as exc:
        return CheckedRelease(row=row, query=query, error=str(exc))
    except (ValueError, TypeError) as exc:  # anything dpcore rejects that the checks missed
        return CheckedRelease(row=row, query=query, error=f"cannot build this release: {exc}")
    return CheckedRelease(row=row, query=query, approx=approx, zcdp=zcdp,
                          accuracy=accuracy, note=note)


def _not_offered(kind: str, measure: str) -> str:
    """Why ``kind`` cannot be counted under ``measure``, and what to pick instead."""
    name = choices.mechanism_name(kind)
    if measure == "pure":
        return (f"{name} noise is never pure DP — choose approximate DP (ε, δ)"
                + (" or zCDP (ρ)" if "zcdp" in choices.spec(kind).budgets else "")
                + " for this row")
    names = [choices.mechanism_name(k) for k in choices.offered(measure)]
    return (f"{MEASURES[measure]} is offered for {' and '.join(names)} only — for {name} "
            "choose pure DP (its ρ = ε²/2 is worked out for you)")


def _cost(kind: str, measure: str, eps: float | None, dlt: float | None, rh: float | None,
          sens: float) -> tuple[ApproxDP, ZCDP, float | None, str]:
    """(ε, δ) for basic/advanced, ρ for zCDP, the 95% error bound, and a note.

    Read off the kind's spec and class: its budget under the measure, its exact ρ
    (``zcdp_bound``) or the pure ε its class promises (``pure_epsilon_bound``). A kind that
    needs an answer range is not built (the plan has no range): it has no error bound here.
    """
    spec = choices.spec(kind)
    keywords = choices.budget_keywords(kind, measure)
    name = choices.mechanism_name(kind)
    build = (lambda **budget: None) if spec.needs_range else (
        lambda **budget: make_mechanism(kind, sensitivity=sens, **budget))
    if keywords == ("rho",):
        rho = _positive("ρ", rh, "type the ρ this release spends, e.g. 0.125", column=RHO)
        delta = _delta(dlt, required=True, hint="type the δ at which basic and advanced "
                       f"composition count this {name} as (ε, δ), e.g. 1e-6")
        mechanism = build(rho=rho)
        read_eps = mechanism.epsilon_for_delta(delta)
        note = (f"counted as (ε = {up(read_eps)}, δ = {fmt_number(delta)}) by basic and "
                f"advanced composition: the {name}'s privacy curve at that δ")
        return ApproxDP(read_eps, delta), ZCDP(rho), mechanism.accuracy(ACCURACY_BETA), note
    epsilon = _positive("ε", eps, "type the ε this release spends, e.g. 0.5", column=EPSILON)
    delta, note = 0.0, ""
    if "delta" in keywords:
        pure_allowed = "pure" in spec.budgets
        delta = _delta(dlt, required=not pure_allowed,
                       hint=f"{name} noise needs a δ above 0, e.g. 1e-6")
    elif measure == "approx":
        note = f"{name} noise is pure ε-DP: δ = 0"
    budget = {"epsilon": epsilon, **({"delta": delta} if delta > 0 else {})}
    mechanism = build(**budget)
    accuracy = None if spec.needs_range else mechanism.accuracy(ACCURACY_BETA)
    if delta == 0:
        return ApproxDP(epsilon, 0.0), PureDP(epsilon).to_zcdp(), accuracy, note
    pure = spec.mechanism.pure_epsilon_bound(epsilon, delta)
    if pure is not None:
        note = (f"no exact ρ: its calibration makes it pure ε₀ = {up(pure, 6)}-DP, and zCDP "
                "counts ρ = ε₀²/2")
        return ApproxDP(epsilon, delta), PureDP(pure).to_zcdp(), accuracy, note
    zcdp = None if spec.needs_range else mechanism.zcdp_bound()
    if zcdp is None:
        raise _RowError(f"{name} noise at (ε, δ) has no known ρ — choose zCDP or pure DP")
    return (ApproxDP(epsilon, delta), zcdp, accuracy,
            f"its exact ρ = {up(zcdp.rho)} (from its noise σ) under zCDP")


def check_plan(plan: pd.DataFrame) -> list[CheckedRelease]:
    """Every row of an edited plan, checked (rows numbered from 1 in table order)."""
    frame = plan.reindex(columns=list(PLAN_COLUMNS))
    return [check_release(i + 1, *row) for i, row in enumerate(
        frame.itertuples(index=False, name=None))]


#: The cells a row's privacy measure has no use for (the mechanism being valid for it).
UNUSED_CELLS = {"pure": (DELTA, RHO), "approx": (RHO,), "zcdp": (EPSILON,)}


def clear_unused_cells(plan: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The plan with the δ, ρ or ε cells its rows' measures do not use emptied, and what was
    emptied, one sentence per row (quoting the row's query name: escape it before markdown).

    A row switched to pure DP otherwise keeps its δ and ρ on screen while the totals ignore
    them. A row whose mechanism is not valid for its measure (a pure-DP Gaussian) keeps its
    cells: it is refused with a message, and switching back restores it as it was.
    """
    cleaned = plan.copy()
    cleared = []
    for position, (query, mechanism, measure, *_) in enumerate(
            plan.reindex(columns=list(PLAN_COLUMNS)).itertuples(index=False, name=None)):
        kind = _kind(mechanism, MECHANISMS, _MECHANISM_BY_LABEL)
        measure_kind = _kind(measure, MEASURES, _MEASURE_BY_LABEL)
        if kind is None or measure_kind is None or kind not in choices.offered(measure_kind):
            continue
        emptied = [column for column in UNUSED_CELLS[measure_kind]
                   if column in cleaned.columns
                   and _number(cleaned.iloc[position][column]) is not None]
        if not emptied:
            continue
        for column in emptied:
            cleaned.iloc[position, cleaned.columns.get_loc(column)] = np.nan
        name = f"Row {position + 1}" + (f" ({query})" if isinstance(query, str) and
                                        query.strip() else "")
        cells = " and ".join(emptied)
        cleared.append(f"{name}: {MEASURES[measure_kind]} has no use for {cells}, so "
                       f"{'it was' if len(emptied) == 1 else 'they were'} cleared.")
    return cleaned, cleared


def release_table(checked: Sequence[CheckedRelease]) -> pd.DataFrame:
    """What each row costs and buys, for display next to the editor.

    The status is one or two words, so the table fits a laptop screen; the notes and errors
    it points to are listed under it (:func:`release_notes`, and the page's error box).
    """
    rows = []
    for r in checked:
        if r.valid:
            eps, dlt = r.approx.epsilon, r.approx.delta
            counted = f"ε = {up(eps)}" + (f", δ = {up(dlt)}" if dlt > 0 else "")
            error = (f"± {up(r.accuracy)}" if r.accuracy is not None
                     else "depends on the true value (output kept within bounds)")
            status = "OK, see note" if r.note else "OK"
            rows.append({"Row": r.row, QUERY: r.query, "Basic / advanced count it as": counted,
                         "zCDP ρ": up(r.zcdp.rho), "Error at 95%": error,
                         "Status": status})
        else:
            rows.append({"Row": r.row, QUERY: r.query, "Basic / advanced count it as": "—",
                         "zCDP ρ": "—", "Error at 95%": "—", "Status": "Not counted, see below"})
    return pd.DataFrame(rows, columns=["Row", QUERY, "Basic / advanced count it as", "zCDP ρ",
                                       "Error at 95%", "Status"])


def release_notes(checked: Sequence[CheckedRelease]) -> list[str]:
    """The notes behind "OK, see note" in :func:`release_table`, one per row that has one."""
    return [f"Row {r.row}: {r.note}" for r in checked if r.valid and r.note]


# --------------------------------------------------------------------------------------------
# Composition


def heterogeneous_advanced_composition(epsilons: Sequence[float], deltas: Sequence[float],
                                       delta_prime: float) -> ApproxDP:
    """Advanced composition of k (ε_i, δ_i)-DP releases of possibly different sizes.

    .. math:: \\varepsilon = \\sqrt{2\\ln(1/\\delta')\\textstyle\\sum_i \\varepsilon_i^2}
              + \\sum_i \\varepsilon_i(e^{\\varepsilon_i}-1), \\qquad
              \\delta = \\delta' + \\sum_i \\delta_i

    The proof of Dwork, Rothblum & Vadhan goes through with a different bound per step: the
    privacy loss of release i lies in [−ε_i, ε_i] with mean at most ε_i(e^{ε_i} − 1), and the
    Azuma–Hoeffding inequality with step ranges 2ε_i bounds the sum's deviation by the square
    root above. With equal ε_i = ε it is the usual ε√(2k ln(1/δ')) + kε(e^ε − 1).

    References
    ----------
    C. Dwork, G. N. Rothblum, S. Vadhan. "Boosting and Differential Privacy." FOCS 2010.
    P. Kairouz, S. Oh, P. Viswanath. "The Composition Theorem for Differential Privacy."
    ICML 2015 (Theorem 3.5 states a heterogeneous version).
    """
    eps = np.array([check_positive("epsilons", e, allow_zero=True) for e in epsilons])
    dlt = np.array([check_delta("deltas", d) for d in deltas])
    if eps.size < 1 or eps.size != dlt.size:
        raise ValueError("epsilons and deltas must be non-empty and of the same length")
    delta_prime = check_delta("delta_prime", delta_prime, allow_zero=False)
    total_delta = _sum_up([*dlt.tolist(), delta_prime])
    if not total_delta < 1:
        raise ValueError(f"composed delta must be < 1, got {total_delta:g}")
    total_eps = (math.sqrt(2 * math.log(1 / delta_prime) * math.fsum(eps**2))
                 + math.fsum(eps * np.expm1(eps)))
    return ApproxDP(total_eps, total_delta)


def _sum_up(values: Sequence[float]) -> float:
    """The exact sum of floats, rounded up to a float (a δ never reads smaller than it is)."""
    exact = sum(map(Fraction, values), Fraction(0))
    nearest = float(exact)
    return math.nextafter(nearest, math.inf) if nearest < exact else nearest


def _room_left(delta_budget: float, deltas: Sequence[float]) -> float:
    """The largest δ' with Σδᵢ + δ' <= δ_budget exactly (0 or less when there is none).

    ``delta_budget − fsum(deltas)`` can round up by an ulp, which put the composed δ an ulp
    over the budget: "over budget" for a plan that fits, and a δ shown as 1.001e-05.
    """
    used = sum(map(Fraction, deltas), Fraction(0))
    room = float(Fraction(delta_budget) - used)
    while room > 0 and used + Fraction(room) > Fraction(delta_budget):
        room = math.nextafter(room, 0.0)
    return room


@dataclass(frozen=True)
class PlanTotals:
    """The plan's total cost under each rule, for the rows that could be counted.

    ``advanced`` is None (with ``advanced_problem`` saying why) when the rows' own δ leave no
    room for the δ' advanced composition needs within the δ budget.
    """

    counted: tuple[int, ...]
    skipped: tuple[int, ...]
    delta_budget: float
    basic: ApproxDP | None = None
    advanced: ApproxDP | None = None
    advanced_problem: str = ""
    rho: float | None = None
    zcdp: ApproxDP | None = None
    notes: list[str] = field(default_factory=list)

    def fits(self, rule: str, epsilon_budget: float) -> bool | None:
        """Whether the plan fits (ε_budget, δ_budget) under ``rule`` (None if not computed)."""
        total = {"basic": self.basic, "advanced": self.advanced, "zcdp": self.zcdp}[rule]
        if total is None:
            return None
        return total.epsilon <= epsilon_budget and total.delta <= self.delta_budget


def plan_totals(checked: Sequence[CheckedRelease], delta_budget: float) -> PlanTotals:
    """Compose the valid rows: basic (sums), advanced (δ' = δ_budget − Σδ_i), zCDP (Σρ at δ).

    All three answer "what ε do these releases cost, at a total δ within the budget?".
    """
    delta_budget = check_delta("delta_budget", delta_budget, allow_zero=False)
    valid = [r for r in checked if r.valid]
    counted = tuple(r.row for r in valid)
    skipped = tuple(r.row for r in checked if not r.valid)
    if not valid:
        return PlanTotals(counted, skipped, delta_budget)
    eps = [r.approx.epsilon for r in valid]
    dlt = [r.approx.delta for r in valid]
    row_delta = _sum_up(dlt)
    notes = []
    if row_delta >= 1:
        return PlanTotals(counted, skipped, delta_budget, advanced_problem=(
            "the rows' δ add up to 1 or more: no guarantee is left"))
    basic = ApproxDP(_sum_up(eps), row_delta)
    advanced, problem = None, ""
    room = _room_left(delta_budget, dlt)
    if room > 0:
        advanced = heterogeneous_advanced_composition(eps, dlt, room)
        if advanced.epsilon > basic.epsilon:
            notes.append("Advanced composition is worse than basic composition here (it pays "
                         "off only for many releases): use the basic total.")
    else:
        problem = (f"the rows' own δ (total {up(row_delta)}) already use up the δ budget "
                   f"({fmt_number(delta_budget)}), leaving no room for the δ' advanced "
                   "composition needs — raise the δ budget or lower the rows' δ")
    rho = _sum_up([r.zcdp.rho for r in valid])
    zcdp = ZCDP(rho).to_approx(delta_budget)
    return PlanTotals(counted, skipped, delta_budget, basic, advanced, problem, rho, zcdp, notes)


# --------------------------------------------------------------------------------------------
# How many equal releases fit a budget


def total_epsilon(rule: str, epsilon: float, k: int | NDArray, delta_budget: float) -> NDArray:
    """Total ε of k pure ε-DP releases under ``rule``, at total δ = ``delta_budget``.

    basic: kε (δ = 0); advanced: ε√(2k ln(1/δ)) + kε(e^ε − 1); zCDP: ρ = kε²/2 converted to
    (ε, δ) by the optimal conversion of Canonne, Kamath & Steinke (2020).
    """
    epsilon = check_positive("epsilon", epsilon)
    delta_budget = check_delta("delta_budget", delta_budget, allow_zero=False)
    ks = np.asarray(k, dtype=np.float64)
    if rule == "basic":
        return ks * epsilon
    if rule == "advanced":
        return epsilon * np.sqrt(2 * ks * math.log(1 / delta_budget)) + ks * epsilon * math.expm1(
            epsilon)
    if rule == "zcdp":
        flat = [zcdp_epsilon(float(n) * epsilon**2 / 2, delta_budget) for n in ks.ravel()]
        return np.array(flat, dtype=np.float64).reshape(ks.shape)
    raise ValueError(f"rule must be one of {', '.join(RULES)}, got {rule!r}")


def most_releases(rule: str, epsilon: float, epsilon_budget: float, delta_budget: float) -> int:
    """The largest k whose total ε under ``rule`` is at most ``epsilon_budget`` (0 if none).

    Each total grows with k, so k is found by doubling and then bisection on whole numbers,
    evaluating the same formula as :func:`total_epsilon` (capped at ``MAX_RELEASES``).
    """
    epsilon_budget = check_positive("epsilon_budget", epsilon_budget)

    def fits(k: int) -> bool:
        return float(total_epsilon(rule, epsilon, k, delta_budget)) <= epsilon_budget

    if rule == "basic":
        # kε <= budget in exact arithmetic; the tiny margin stops 10 × 0.1 = 1.0000000000000002
        # from losing the 10th release to rounding.
        k = math.floor(epsilon_budget / epsilon * (1 + 1e-12))
        return min(k, MAX_RELEASES)
    if not fits(1):
        return 0
    lo, hi = 1, 2
    while hi < MAX_RELEASES and fits(hi):
        lo, hi = hi, min(2 * hi, MAX_RELEASES)
    if fits(hi):
        return hi
    while hi - lo > 1:  # fits(lo) and not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class FitCurves:
    """Total ε against the number of releases k, per rule, and the most releases that fit."""

    epsilon: float
    epsilon_budget: float
    delta_budget: float
    releases: NDArray[np.int64]
    totals: dict[str, NDArray[np.float64]]
    most: dict[str, int]


def chart_releases(most: dict[str, int]) -> NDArray[np.int64]:
    """The k values the chart draws: every k up to a bit past the last fit, or
    ``CHART_POINTS`` of them spread evenly, always including each rule's most releases."""
    top = int(min(MAX_RELEASES, max(10, math.ceil(1.3 * max(most.values()) + 1))))
    if top <= CHART_POINTS:
        return np.arange(1, top + 1, dtype=np.int64)
    spread = np.round(np.linspace(1, top, CHART_POINTS)).astype(np.int64)
    marked = np.array([k for k in most.values() if k >= 1], dtype=np.int64)
    return np.unique(np.concatenate([spread, marked]))


def releases_that_fit(epsilon: float, epsilon_budget: float, delta_budget: float) -> FitCurves:
    """Curves and most-releases counts for releases of ``epsilon`` each (pure DP)."""
    most = {rule: most_releases(rule, epsilon, epsilon_budget, delta_budget) for rule in RULES}
    ks = chart_releases(most)
    totals = {rule: total_epsilon(rule, epsilon, ks, delta_budget) for rule in RULES}
    return FitCurves(epsilon, epsilon_budget, delta_budget, ks, totals, most)


@st.cache_data(show_spinner=False, max_entries=64)
def fit_curves(epsilon: float, epsilon_budget: float, delta_budget: float) -> FitCurves:
    """Cached :func:`releases_that_fit` (the zCDP curve converts once per point)."""
    return releases_that_fit(epsilon, epsilon_budget, delta_budget)


def most_releases_sentence(fit: FitCurves) -> str:
    """The most releases that fit under each rule, in one sentence, e.g.

    'With ε = 0.1 per release and a budget of ε = 5, δ = 1e-05, basic composition allows at
    most 50 releases, advanced composition 73 and zCDP composition 102.'
    """
    def count(n: int) -> str:
        return "no release at all" if n == 0 else (
            "at most 1 release" if n == 1 else f"at most {n:,} releases")

    basic, advanced, zcdp = (fit.most[rule] for rule in RULES)
    sentence = (f"With ε = {fmt_number(fit.epsilon)} per release and a budget of "
                f"ε = {fmt_number(fit.epsilon_budget)}, δ = {fmt_number(fit.delta_budget)}, "
                f"basic composition allows {count(basic)}, advanced composition "
                f"{count(advanced).removeprefix('at most ')} and zCDP composition "
                f"{count(zcdp).removeprefix('at most ')}.")
    best = max(RULES, key=lambda rule: fit.most[rule])
    if fit.most[best] > min(fit.most.values()):
        sentence += f" {RULES[best]} fits the most."
    return sentence


# --------------------------------------------------------------------------------------------
# The plan in the URL


def plan_to_param(plan: pd.DataFrame) -> str:
    """The plan as compact JSON for ``st.query_params`` (mechanism and measure as short keys)."""
    rows = []
    for query, mechanism, measure, *numbers in plan.reindex(
            columns=list(PLAN_COLUMNS)).itertuples(index=False, name=None):
        cells = [_number(v) for v in numbers]
        rows.append([
            "" if not isinstance(query, str) else query[:MAX_QUERY_CHARS],
            _kind(mechanism, MECHANISMS, _MECHANISM_BY_LABEL),
            _kind(measure, MEASURES, _MEASURE_BY_LABEL),
            *[None if c is None or not math.isfinite(c) else c for c in cells],
        ])
    return json.dumps(rows[:MAX_PLAN_ROWS], separators=(",", ":"), ensure_ascii=False)


def plan_from_param(text: str | None) -> pd.DataFrame | None:
    """The plan encoded by :func:`plan_to_param`, or None when ``text`` is not one."""
    if not text or len(text) > 20_000:
        return None
    try:
        rows = json.loads(text)
    except ValueError:
        return None
    if not isinstance(rows, list) or not rows or len(rows) > MAX_PLAN_ROWS:
        return None
    parsed = []
    for row in rows:
        if not isinstance(row, list) or len(row) != len(PLAN_COLUMNS):
            return None
        query, mechanism, measure, *numbers = row
        if not isinstance(query, str) or mechanism not in (*MECHANISMS, None) or (
                measure not in (*MEASURES, None)):
            return None
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)))
               for v in numbers):
            return None
        parsed.append((query[:MAX_QUERY_CHARS], mechanism, measure, *numbers))
    return _plan_frame(parsed)

