"""The Release plan page's figures: the plan as a table, its accounting four ways, the budget
split that meets every target, the plan's risk and the budget guard. No widgets here.

Every figure comes from the plan's queries as ``plan.build`` makes them — the mechanisms a
release draws from — so the page, the release and the files agree: the accounting composes
the catalogue mechanisms themselves (a Laplace count enters the privacy-loss distribution as
Laplace noise, not as a generic ε), partition selection as its noise plus its threshold's δ,
a synthetic table as the ε or ρ OpenDP's map certifies for its measurement (read from the plan
alone, as a release reads it: the figure the ledger records). A plan that can be released is
accounted by ``release.accounting.certified_spent``, the very function the ledger records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from dashboard.analysis.selection_choices import NOISES as SELECTION_NOISES
from dashboard.number_text import loss
from dpcore import allocation
from dpcore.accounting import (
    ACCOUNTANT_LABELS,
    ACCOUNTANTS,
    AccountedTotal,
    BudgetCheck,
    PlanAccounting,
    account_plan,
    check_budget,
)
from dpcore.mechanisms import CATALOGUE
from dpcore.plan_risk import describe_plan_risk, plan_max_posterior, plan_tradeoff
from dpcore.safe_rounding import lower, percent_lower, percent_upper, upper
from dpcore.selection import prob_best_selected
from plan import model
from plan.build import Built, build_plan
from plan.kinds import kind_of
from release.accounting import certified_spent, total_up
from release.errors import ReleaseRefused
from release.measurements import certified_from_plan, planned_losses

__all__ = ["PAGES", "ROW_COLUMNS", "SHOWN_COLUMNS", "budget_text", "target_text", "releases_of",
           "make_plan",
           "plan_rows", "apply_edits", "Accounted", "accounted", "Split", "split",
           "apply_split", "RISK_PRIORS", "Risk", "plan_risk", "guard"]

#: Where each page of a plan query lives, and its title (the plan page links back).
PAGES = {"statistics": ("app_pages/statistics.py", "Noisy statistics"),
         "tables": ("app_pages/tables.py", "Noisy tables"),
         "groups": ("app_pages/groups.py", "Groups"),
         "quantiles": ("app_pages/quantiles.py", "Quantiles"),
         "selection": ("app_pages/selection.py", "Selection"),
         "synthetic": ("app_pages/synthetic.py", "Synthetic data")}
#: The accountants as the page titles them.
TITLES = {"basic": "Basic composition", "advanced": "Advanced composition",
          "zcdp": "zCDP composition", "pld": "Privacy-loss distributions"}
#: What the plan page says in place of an accuracy for a query its numpy draws cannot
#: simulate (a synthetic table: OpenDP fits a model).
NOT_SIMULATED = "not simulated here (Synthetic data page)"
#: Priors the risk section reads the attacker's belief at.
RISK_PRIORS = (0.01, 0.10, 0.50)

# the editable table's columns
QUERY, PAGE, MECH, EPS, DELTA, RHO = "Query", "Page", "Mechanism", "ε", "δ", "ρ"
ALPHA, BETA, PROB, NOW, MET, REMOVE = ("Target ±α", "Target β", "Target P(correct)",
                                       "Accuracy now", "Meets target", "Remove")
ROW_COLUMNS = (QUERY, PAGE, MECH, EPS, DELTA, RHO, ALPHA, BETA, PROB, NOW, MET, REMOVE)
#: The order the page shows them in: what the caption asks the reader to tick or read first
#: (Remove, the accuracy against the target), the long texts last; at 1400 px the columns up
#: to the targets fit the page (issue 35: Remove, Accuracy now and Meets target were off to
#: the right, behind a scroll bar, below a caption saying "tick Remove").
SHOWN_COLUMNS = (REMOVE, QUERY, NOW, MET, EPS, DELTA, RHO, ALPHA, BETA, PROB, MECH, PAGE)
EDITABLE = (QUERY, EPS, DELTA, RHO, ALPHA, BETA, PROB, REMOVE)



def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:g}"


def budget_text(query: model.PlanQuery) -> str:
    """The query's mechanism and budget in words, e.g. 'Laplace, ε = 0.5'."""
    parts = []
    m = query.mechanism
    if isinstance(query.query, model.MaxRows):
        eps = query.query.epsilons
        return (f"{SELECTION_NOISES['exponential']}, {len(eps)} draw(s) "
                f"at ε = {', '.join(_num(e) for e in eps)} (drawn; not editable)")
    if isinstance(m, model.Noise):
        name = CATALOGUE[m.kind].label
        budget = ", ".join(f"{s} = {_num(getattr(m, n))}" for n, s in
                           (("epsilon", "ε"), ("delta", "δ"), ("rho", "ρ"))
                           if getattr(m, n) is not None)
        parts.append(f"{name} ({m.measure}), {budget}")
    elif isinstance(m, model.SelectionNoise):
        level = f"ε = {_num(m.epsilon)}" if m.measure == "pure" else f"ρ = {_num(m.rho)}"
        parts.append(f"{SELECTION_NOISES.get(m.noise, m.noise)}, {level}")
    if query.threshold is not None:
        t = query.threshold
        level = f"ε = {_num(t.epsilon)}" if t.epsilon is not None else f"ρ = {_num(t.rho)}"
        parts.append(f"partition selection ({t.noise} noise, {level}, δ = {_num(t.delta)})")
    if isinstance(query.query, model.Synthetic):
        spec = query.query
        level = f"ε = {_num(spec.epsilon)}" if spec.measure == "pure" else (
            f"ρ = {_num(spec.rho)}" + ("" if spec.delta is None else
                                       f" (read at δ = {_num(spec.delta)})"))
        marginals = {"one-way": "all 1-way marginals", "auto": "marginals it selects",
                     "pairs": "every 1-way marginal, then 2-way marginals of " + ", ".join(
                         f"{a} × {b}" for a, b in spec.pairs)}[spec.marginals]
        parts.append(f"OpenDP's {spec.algorithm} ({marginals}), {spec.rows:,} synthetic "
                     f"rows, {level}")
    return "; ".join(parts)


def target_text(target: model.Target) -> str:
    if target.by_probability:
        return f"the true most common picked with probability ≥ {target.probability:g}"
    unit = " ranks" if target.kind == "rank" else ""
    return f"within ±{target.alpha:g}{unit} with probability ≥ {1 - target.beta:g}"


def releases_of(built: Sequence[Built]) -> tuple[object, ...]:
    """What the accountants compose: each part's losses as planned
    (``release.measurements.planned_losses``: its mechanism's noise law where it has one, a
    selection's or quantile's guarantee, partition selection's noise and threshold δ, a
    synthetic table's certificate from the plan alone)."""
    return tuple(loss for b in built for part in b.parts for loss in planned_losses(part))


def make_plan(name: str, origin: str, queries: Sequence[model.PlanQuery],
              unit: model.PrivacyUnit, *, method: str, delta: float,
              budget: float | None, declarations: model.BuiltOn | None = None) -> model.Plan:
    """The session's plan for one dataset (PlanError naming a bad field), with the versions
    of the dataset's declarations it was built on when known."""
    return model.Plan(model.Dataset(name, origin, declarations=declarations), tuple(queries),
                      unit,
                      model.Accounting(method, float(delta)),
                      None if budget is None else model.Budget(float(budget), float(delta)))


# --------------------------------------------------------------------------------------------
# targets: what the split can judge


def allocation_target(query: model.PlanQuery, built: Built,
                      context: Mapping[str, object]) -> allocation.Target | None:
    """The ``dpcore.allocation`` target of a plan query, None when the split keeps its budget.

    Judged: a ±α target on a query with one additive part under pure or approximate DP
    (count, sum, histogram, table, a group-by count or sum over declared keys), and a
    P(correct) target on a pure-DP pick of one category (its true counts kept by the page).
    """
    t, m = query.target, query.mechanism
    if t is None:
        return None
    if (isinstance(m, model.Noise) and t.kind == "error" and query.threshold is None
            and len(built.parts) == 1 and m.measure in ("pure", "approx")
            and not CATALOGUE[m.kind].needs_range):
        options = {"delta": m.delta} if m.measure == "approx" else {}
        return allocation.AccuracyTarget(m.kind, built.parts[0].sensitivity, t.alpha, t.beta,
                                         options=options)
    scores = context.get("scores")
    if (isinstance(m, model.SelectionNoise) and t.by_probability and m.measure == "pure"
            and isinstance(query.query, model.Selection) and query.query.k == 1
            and scores is not None):
        return allocation.SelectionTarget(tuple(scores), m.noise, t.probability,
                                          sensitivity=built.parts[0].sensitivity,
                                          monotonic=True)
    return None


def _why_not_judged(query: model.PlanQuery) -> str:
    if isinstance(query.query, model.MaxRows):
        return "max rows, drawn before the release: its draws are spent"
    if query.target is None:
        return "no target: keeps its budget"
    m = query.mechanism
    if isinstance(m, model.Noise) and m.measure == "zcdp":
        return "zCDP query: keeps its ρ"
    if kind_of(query.query).splits_by_share(query.query):   # a mean, a group-by's means
        return "a mean (two noisy parts): keeps its budget"
    if query.threshold is not None:
        return "partition selection: keeps its budget"
    if isinstance(query.query, model.Quantiles):
        return "quantiles: keep their ε (accuracy exact on the Quantiles page)"
    if isinstance(query.query, model.Selection):
        return "selection: add it again from its page (true counts needed), pure DP, k = 1"
    return "keeps its budget"


def _epsilon_now(query: model.PlanQuery) -> float | None:
    if isinstance(query.query, model.MaxRows):
        return total_up(query.query.epsilons)
    if isinstance(query.query, model.Synthetic):   # it holds its own budget
        return query.query.epsilon
    return getattr(query.mechanism, "epsilon", None)


def _budget_holder(query: model.PlanQuery) -> object:
    """What holds the query's budget: a synthetic table's spec (its own ε or ρ), else its
    mechanism, else its threshold."""
    if isinstance(query.query, model.Synthetic):
        return query.query
    return query.mechanism if query.mechanism is not None else query.threshold


def _certified_text(built: Built) -> str:
    """What OpenDP's map certifies, read from the plan alone, for a part whose privacy only
    that map states (a synthetic table), in words ("" for the others)."""
    texts = []
    for part in built.parts:
        try:
            got = certified_from_plan(part)
        except ReleaseRefused:
            texts.append("OpenDP refuses it as set (see Release it for real)")
            continue
        if got is not None:
            level = (f"ε = {upper(got.epsilon, 6)}" if got.epsilon is not None
                     else f"ρ = {upper(got.rho, 6)}")
            texts.append(f"OpenDP's map certifies {level}")
    return "; ".join(texts)


def _accuracy_now(query: model.PlanQuery, built: Built, target: allocation.Target | None,
                  context: Mapping[str, object]) -> tuple[str, bool | None]:
    """The accuracy the query reaches at its budget, in words, and whether it meets the
    target (None: not judged)."""
    if not built.kind.simulated:
        return NOT_SIMULATED, None
    m = built.parts[0].mechanism
    t = query.target
    if isinstance(query.mechanism, model.Noise) and len(built.parts) == 1 and not \
            CATALOGUE[query.mechanism.kind].needs_range:
        beta = t.beta if t is not None and t.kind == "error" else 0.05
        alpha = float(np.max(m.accuracy(beta)))
        met = None if t is None or t.kind != "error" else alpha <= t.alpha * (1 + 1e-9)
        return f"±{upper(alpha, 4)} at {1 - beta:.4g}", met
    scores = context.get("scores")
    if (isinstance(query.mechanism, model.SelectionNoise)
            and isinstance(query.query, model.Selection)
            and query.query.k == 1 and scores is not None):
        p = float(prob_best_selected(np.asarray(scores, float), scale=m.scale, noise=m.noise))
        met = None if t is None or not t.by_probability else p >= t.probability
        return f"P(correct) {percent_lower(p)}", met
    return "—", None


def plan_rows(plan: model.Plan, built: Sequence[Built],
              contexts: Mapping[str, Mapping[str, object]]) -> pd.DataFrame:
    """The plan as the page's table: one row per query, its budget, target and accuracy."""
    rows = []
    for q, b in zip(plan.queries, built, strict=True):
        m, t = q.mechanism, q.target
        ctx = contexts.get(q.id, {})
        now, met = _accuracy_now(q, b, allocation_target(q, b, ctx), ctx)
        budget_source = _budget_holder(q)
        mechanism = "; ".join(t for t in (budget_text(q), _certified_text(b)) if t)
        rows.append({
            QUERY: q.label, PAGE: PAGES.get(q.page, ("", q.page))[1], MECH: mechanism,
            EPS: _epsilon_now(q) if m is None else getattr(budget_source, "epsilon", None),
            DELTA: (getattr(budget_source, "delta", None) if not isinstance(
                budget_source, model.Threshold) else budget_source.delta),
            RHO: getattr(budget_source, "rho", None),
            ALPHA: None if t is None or t.by_probability else t.alpha,
            BETA: None if t is None or t.by_probability else t.beta,
            PROB: t.probability if t is not None and t.by_probability else None,
            NOW: now, MET: "—" if met is None else ("yes" if met else "NO"),
            REMOVE: False})
    frame = pd.DataFrame(rows, columns=list(ROW_COLUMNS))
    for name in (EPS, DELTA, RHO, ALPHA, BETA, PROB):
        frame[name] = frame[name].astype("float64")
    frame.index = [q.id for q in plan.queries]
    return frame


def _value(x: object) -> float | None:
    if x is None:
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _edited_budget(query: model.PlanQuery, eps: float | None, delta: float | None,
                   rho: float | None) -> model.PlanQuery:
    if isinstance(query.query, model.MaxRows):   # drawn: what it spent is spent
        return query
    m = query.mechanism
    if m is not None:
        fields = {}
        if isinstance(m, model.Noise):
            fields = {"epsilon": eps, "delta": delta if m.measure != "pure" else m.delta,
                      "rho": rho}
        elif isinstance(m, model.SelectionNoise):
            fields = {"epsilon": eps, "rho": rho}
        return replace(query, mechanism=replace(m, **fields))
    if isinstance(query.query, model.Synthetic):   # its spec holds its budget
        # every figure as typed: one of the other measure is refused by the spec's check
        return replace(query, query=replace(query.query, epsilon=eps, rho=rho, delta=delta))
    t = query.threshold
    return replace(query, threshold=replace(t, epsilon=eps, rho=rho,
                                            delta=t.delta if delta is None else delta))


def _edited_target(query: model.PlanQuery, alpha: float | None, beta: float | None,
                   prob: float | None) -> model.Target | None:
    old = query.target
    if prob is not None:
        new = model.Target("selection", probability=prob)
    elif alpha is None and beta is None:
        return None
    else:
        kind = "rank" if isinstance(query.query, model.Quantiles) else "error"
        if old is not None and not old.by_probability:
            kind = old.kind
        new = model.Target(kind, alpha=alpha, beta=0.05 if beta is None else beta)
    # an untouched target keeps where it came from (a default read off the data stays so)
    return old if old is not None and replace(old, origin="typed") == new else new


def apply_edits(plan: model.Plan, edited: pd.DataFrame
                ) -> tuple[tuple[model.PlanQuery, ...], list[str]]:
    """The plan's queries after the table's edits, and a message per refused edit (that
    query keeps its values). Rows ticked "Remove" are dropped."""
    out, problems = [], []
    for q in plan.queries:
        if q.id not in edited.index:
            continue
        row = edited.loc[q.id]
        if bool(row[REMOVE]):
            continue
        label = str(row[QUERY]).strip() if isinstance(row[QUERY], str) else ""
        try:
            new = _edited_budget(q, _value(row[EPS]), _value(row[DELTA]), _value(row[RHO]))
            new = replace(new, label=label or q.label,
                          target=_edited_target(q, _value(row[ALPHA]), _value(row[BETA]),
                                                _value(row[PROB])))
            new.check("query")
            build_plan(replace(plan, queries=(new,)))
        except (model.PlanError, ValueError, TypeError) as exc:
            where = getattr(exc, "field", "").removeprefix("query.").replace("mechanism.", "")
            reason = getattr(exc, "reason", str(exc))
            problems.append(f"{q.label}: {where + ' ' if where else ''}{reason} — the row "
                            "keeps its previous values.")
            new = q
        out.append(new)
    return tuple(out), problems


# --------------------------------------------------------------------------------------------
# accounting and the budget guard


@dataclass(frozen=True)
class Accounted:
    """The plan accounted four ways at one δ, and the accountant the user chose."""

    totals: PlanAccounting
    method: str
    delta: float

    @property
    def chosen(self) -> float:
        return self.totals.of(self.method).epsilon

    def table(self) -> pd.DataFrame:
        rows = []
        for name in ACCOUNTANTS:
            total = self.totals.of(name)
            rows.append({"Accounting": TITLES[name],
                         "Total ε": float(total.epsilon),
                         "at δ": float(total.delta),
                         "Saved by PLD": (None if name == "pld" or not math.isfinite(
                             total.epsilon) else float(self.totals.saving(name))),
                         "Chosen": "✓" if name == self.method else ""})
        return pd.DataFrame(rows)


def accounting_sentence(acc: Accounted) -> str:
    """How much the tight accountant saves, in words."""
    pld, basic = acc.totals.pld.epsilon, acc.totals.basic.epsilon
    best = min(ACCOUNTANTS, key=lambda n: acc.totals.of(n).epsilon)
    text = (f"At δ = {acc.delta:g} the plan spends ε = {loss(acc.chosen)} under "
            f"{ACCOUNTANT_LABELS[acc.method]} (the accounting you chose). ")
    if math.isfinite(basic) and basic - pld >= 1e-3 * basic:
        text += (f"Privacy-loss distributions give ε = {loss(pld)}, "
                 f"{upper(basic - pld, 3)} less than basic composition "
                 f"({(basic - pld) / basic:.0%}). ")
    if best != acc.method and acc.totals.of(best).epsilon < acc.chosen * (1 - 1e-3):
        text += f"The tightest here is {ACCOUNTANT_LABELS[best]}."
    return text.strip()


def accounted(built: Sequence[Built], *, method: str, delta: float,
              certified: Sequence[object] | None = None) -> Accounted:
    """The plan accounted four ways at ``delta``.

    With ``certified`` (the plan's parts as OpenDP certified them: ``release.prepare``), each
    accountant's figure is ``release.accounting.certified_spent`` under it — what the ledger
    records when the plan is released under that accounting, so the figure the page shows is
    the one recorded. Without (a plan that cannot be released as it is), the plan's own
    mechanisms composed by ``dpcore.accounting``.
    """
    if certified is None:
        return Accounted(account_plan(releases_of(built), delta=delta), method, delta)
    totals = []
    for name in ACCOUNTANTS:
        try:
            spent = certified_spent(certified, model.Accounting(name, float(delta)))
            totals.append(AccountedTotal(name, spent.epsilon, spent.delta, spent.note))
        except (ReleaseRefused, model.PlanError) as exc:
            totals.append(AccountedTotal(name, math.inf, delta, str(exc)))
    return Accounted(PlanAccounting(*totals), method, delta)


def guard(built: Sequence[Built], *, budget: float, delta: float, method: str) -> BudgetCheck:
    """Does the plan fit the dataset's total budget under the chosen accounting?"""
    return check_budget(releases_of(built), epsilon=budget, delta=delta, accountant=method)


# --------------------------------------------------------------------------------------------
# the split


@dataclass(frozen=True)
class Split:
    """The budget split: ``epsilons`` per judged query id; the totals and worst target ratio
    of the split and of the even split; the ids kept at their budget, with why."""

    mode: str                       # "least" (meet every target) or "budget" (the dual)
    epsilons: dict[str, float]
    total: float
    worst: float
    even_epsilon: float
    even_total: float
    even_worst: float
    kept: dict[str, str]
    table: pd.DataFrame


def _ratio(r: float) -> str:
    """A target ratio to three digits (≥ 1: met), rounded down so a met target never shows a
    ratio above what it has; a huge one as "> 1000"."""
    if not math.isfinite(r) or r > 1000:
        return "> 1000"
    return float(lower(r, 3)).__format__("g")


def _ceil_sig(x: float, digits: int = 4) -> float:
    """x rounded up to ``digits`` significant digits (more ε: the target still met)."""
    if not (x > 0 and math.isfinite(x)):
        return x
    value = float(upper(x, digits))
    while value < x:
        value = math.nextafter(value, math.inf)
    return value


def split(plan: model.Plan, built: Sequence[Built],
          contexts: Mapping[str, Mapping[str, object]], *, budget: float | None = None
          ) -> Split:
    """The split meeting every judged target at the least total under the plan's accounting
    (``budget`` given: the split of that total maximising the worst target ratio). Queries the
    split cannot judge keep their budget and count in every total.

    Raises ValueError (in words) when no query can be judged or a target is out of reach.
    """
    method, delta = plan.accounting.method, plan.accounting.delta
    judged, targets, fixed_built, kept = [], [], [], {}
    for q, b in zip(plan.queries, built, strict=True):
        target = allocation_target(q, b, contexts.get(q.id, {}))
        if target is None:
            kept[q.id] = _why_not_judged(q)
            fixed_built.append(b)
        else:
            judged.append(q)
            targets.append(target)
    if not targets:
        raise ValueError("no query has a target the split can judge: give a count, sum, "
                         "histogram or table a ±α target (or a selection a P(correct))")
    fixed = releases_of(fixed_built)
    if budget is None:
        result = allocation.allocate(targets, accountant=method, delta=delta, fixed=fixed)
    else:
        result = allocation.allocate_budget(targets, accountant=method, epsilon=budget,
                                            delta=delta, fixed=fixed)
    epsilons = {q.id: _ceil_sig(e) for q, e in zip(judged, result.epsilons, strict=True)}
    rows = []
    for q, r, er in zip(judged, result.ratios, result.even_ratios, strict=True):
        rows.append({"Query": q.label, "ε now": _epsilon_now(q),
                     "ε at the split": epsilons[q.id], "target ratio": _ratio(r),
                     "ε even split": float(result.even_epsilon),
                     "target ratio, even": _ratio(er)})
    for q in plan.queries:
        if q.id in kept:
            rows.append({"Query": q.label, "ε now": _epsilon_now(q),
                         "ε at the split": _epsilon_now(q), "target ratio": None,
                         "ε even split": _epsilon_now(q), "target ratio, even": None})
    table = pd.DataFrame(rows)
    return Split("least" if budget is None else "budget", epsilons, float(result.total),
                 float(result.worst_ratio), float(result.even_epsilon),
                 float(result.even_total), float(result.even_worst_ratio), kept, table)


def split_sentence(result: Split, method: str) -> str:
    """The split against the even split, in words."""
    label = ACCOUNTANT_LABELS[method]
    if result.mode == "least":
        text = (f"Every target is met with ε = {loss(result.total)} in all under {label}; "
                f"an even split (every judged query at ε = {loss(result.even_epsilon)}, "
                f"what the hardest target needs) spends ε = {loss(result.even_total)}.")
    else:
        text = (f"Within the budget, the split reaches {result.worst:.3g} × every target "
                f"(≥ 1: all met), spending ε = {loss(result.total)} under {label}; an "
                f"even split reaches {result.even_worst:.3g} ×.")
    return text


def apply_split(queries: Sequence[model.PlanQuery], epsilons: Mapping[str, float]
                ) -> tuple[model.PlanQuery, ...]:
    """The queries with the split's ε written into their mechanisms."""
    out = []
    for q in queries:
        if q.id in epsilons:
            q = replace(q, mechanism=replace(q.mechanism, epsilon=float(epsilons[q.id])))
        out.append(q)
    return tuple(out)


# --------------------------------------------------------------------------------------------
# risk


@dataclass(frozen=True)
class Risk:
    """The composed plan's membership trade-off curve and the attacker's belief bounds."""

    fpr: np.ndarray
    curves: list[tuple[str, np.ndarray]]
    posteriors: pd.DataFrame
    sentence: str
    single_sentence: str
    single_label: str


def plan_risk(plan: model.Plan, built: Sequence[Built]) -> Risk:
    """Risk of the whole plan (its composed PLD; exact μ-GDP for Gaussian-only plans), and
    of its riskiest single query for comparison (what Choose epsilon shows per release)."""
    releases = releases_of(built)
    fpr = np.linspace(0.0, 1.0, 201)
    bound = plan_max_posterior(releases, np.array(RISK_PRIORS))   # one tail, every prior
    failure = upper(bound.failure_probability, 2) if bound.failure_probability > 0 else "0"
    rows = [{"Prior belief": f"{prior:.0%}",
             "Highest belief after the plan": percent_upper(float(posterior)),
             "Except with probability": failure}
            for prior, posterior in zip(RISK_PRIORS, bound.posterior, strict=True)]
    # the riskiest single query: the one whose own loss bound is largest
    single = max(range(len(built)), key=lambda i: plan_max_posterior(
        releases_of([built[i]]), 0.5).epsilon)
    alone = releases_of([built[single]])
    curves = [(f"The whole plan ({len(built)} queries)",
               np.asarray(plan_tradeoff(releases, fpr), dtype=float)),
              (f"Its riskiest query alone: {plan.queries[single].label}",
               np.asarray(plan_tradeoff(alone, fpr), dtype=float))]
    return Risk(fpr, curves, pd.DataFrame(rows), describe_plan_risk(releases, 0.5),
                describe_plan_risk(alone, 0.5, after="that query alone"),
                plan.queries[single].label)
