"""From what a query page shows to one query of the release plan (``plan.model.PlanQuery``).

Each page builds its entry here from its own settings: the query with its declarations (and
where each comes from: public documentation, typed, or read off the data), the mechanism with
its budget, and a default accuracy target — the accuracy the page shows now, so that the plan
starts from what the user saw. No widget here: the pages and the plan panel draw them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from dashboard import person
from dashboard.analysis.stats_query import QuerySpec, default_answer_range, default_bounds
from dashboard.choices import PrivacyChoice
from dashboard.data.column_facts import plan_categories as _category_values
from dashboard.data.schema import origin_of
from dashboard.datasets import LoadedDataset
from dashboard.kinds import ADAPTERS, Declared, PageSettings
from dashboard.kinds.base import plan_noise, with_range
from dpcore.mechanisms import CATALOGUE
from dpcore.partition import PARTITION_LAWS
from dpcore.safe_rounding import upper as round_up
from plan import model
from plan.build import Built, build
from plan.kinds import KINDS

__all__ = ["plan_unit", "bounds_of", "categories_of", "default_target", "statistics_query",
           "tables_query", "groups_query", "quantiles_query", "selection_query", "NotPlannable"]


class NotPlannable(ValueError):
    """What a page shows cannot be one query of a release plan (the message says why and what
    to add instead)."""


def plan_unit(unit: person.PrivacyUnit, *, drawn_in_plan: bool = False) -> model.PrivacyUnit:
    """The plan's privacy unit for the unit declared on the Data page. Max rows drawn for
    real is "private" only in a plan that holds its max rows query (``drawn_in_plan``),
    which charges the draws; without it the value was seen uncharged: read off the data."""
    if unit.person_column is None:
        return model.PrivacyUnit()
    if unit.bounds_origin == "private" and not drawn_in_plan:
        return replace(unit, bounds_origin="data")
    return unit


def _domain(loaded: LoadedDataset, column: str):
    return loaded.domains.get(column)


def bounds_of(loaded: LoadedDataset, column: str, lower: float, upper: float) -> model.Bounds:
    """Clamping bounds with where they come from, as the page set them: the column's
    declared range (with the schema's origin: public, typed, or read off the data), the
    page's suggestion around the data's own extremes (read off the data), or typed."""
    pair = (float(lower), float(upper))
    domain = _domain(loaded, column)
    if (domain is not None and domain.kind == "numeric" and domain.lower is not None
            and pair == (float(domain.lower), float(domain.upper))):
        return model.Bounds(*pair, origin_of(domain), str(domain.source or ""))
    suggested = default_bounds(loaded, column)
    if not suggested.public and pair == (suggested.lower, suggested.upper):
        return model.Bounds(*pair, "data", "round numbers around the data's own minimum and "
                            "maximum, suggested by the page")
    return model.Bounds(*pair, "typed", "typed on the page")


def categories_of(loaded: LoadedDataset, column: str,
                  values: Sequence[object] | None) -> model.Categories:
    """Categories of ``column`` with their origin: the declared ones (with the schema's
    origin: public, typed, or read off the data), else ``values`` read off the data
    (flagged: not covered by the guarantee)."""
    domain = _domain(loaded, column)
    if domain is not None and domain.categories:
        if values is None or tuple(map(str, values)) == tuple(map(str, domain.categories)):
            return model.Categories(_category_values(domain.categories), origin_of(domain),
                                    str(domain.source or ""))
    if values is None:
        raise NotPlannable(f"{column!r} has no declared categories: declare them on the Data "
                           "page (Declared schema) to put this query in the plan")
    return model.Categories(_category_values(values), "data",
                            "read off the data on the page")


def default_target(query: model.PlanQuery, built: Built, *,
                   confidence: float = 0.95) -> model.Target | None:
    """±α at ``confidence`` for a query with one additive part, α the part's closed-form
    error (rounded up): what the page showed. None when there is no closed form (a mean, a
    bounded kind, partition selection, a selection or a quantile)."""
    if not isinstance(query.mechanism, model.Noise) or query.threshold is not None:
        return None
    if CATALOGUE[query.mechanism.kind].needs_range or len(built.parts) != 1:
        return None
    beta = 1.0 - confidence
    try:
        alpha = float(np.max(built.parts[0].mechanism.accuracy(beta)))
    except (ValueError, TypeError):
        return None
    if not alpha > 0 or not math.isfinite(alpha):
        return None
    return model.Target("error", alpha=float(round_up(alpha, 4)), beta=round(beta, 12))


#: The plan's mechanism for a page's choice, and with the page's answer range (the page
#: adapters' own, ``dashboard.kinds.base``; the tables page builds its query with them too).
_noise = plan_noise
_with_range = with_range


def _range_origin(loaded: LoadedDataset, answer_range: tuple[float, float] | None,
                  query: str, bounds: model.Bounds | None) -> str:
    """Where the answer range of a bounded kind comes from: the page's default (a round
    number above the row count, times the bounds) is public for a built-in whose size is
    published, read off the data for an upload or when the bounds are; else typed."""
    if answer_range is None:
        return "typed"
    spec = QuerySpec(query, None, None if bounds is None else bounds.lower,
                     None if bounds is None else bounds.upper, None, None)
    if tuple(map(float, answer_range)) != tuple(default_answer_range(spec,
                                                                      len(loaded.relation))):
        return "typed"
    if loaded.key.startswith("builtin:") and (bounds is None or bounds.origin != "data"):
        return "public"
    return "data"


def _finish(query: model.PlanQuery, unit: model.PrivacyUnit) -> model.PlanQuery:
    """The query checked and built once under the unit, with its default target (when it
    has none and one can be read off its mechanism)."""
    query.check("query")
    built = build(query, unit)
    target = query.target or default_target(query, built)
    return query if target is query.target else replace(query, target=target)


def statistics_query(loaded: LoadedDataset, unit: person.PrivacyUnit, *, query: str,
                     column: str | None, lower: float | None, upper: float | None,
                     categories: Sequence[object] | None, choice: PrivacyChoice,
                     sum_share: float = 0.5,
                     answer_range: tuple[float, float] | None = None) -> model.PlanQuery:
    """The Noisy statistics page's query: its page adapter's ``page_query`` (the one
    conversion, the page's simulation's too), with where each declaration comes from."""
    if query not in ADAPTERS:
        raise NotPlannable(f"unknown query {query!r}")
    adapter = ADAPTERS[query]
    bounds = bounds_of(loaded, column, lower, upper) if adapter.bounded else None
    cells = categories_of(loaded, column, categories) if adapter.kind.per_cell else None
    declared = Declared(bounds, cells, _range_origin(loaded, answer_range, query, bounds))
    settings = PageSettings(query, choice, column, lower, upper, sum_share=sum_share,
                            answer_range=answer_range, declared=declared)
    return _finish(adapter.page_query(settings), plan_unit(unit))


def tables_query(loaded: LoadedDataset, unit: person.PrivacyUnit, *, row: str, column: str,
                 row_categories: Sequence[object], column_categories: Sequence[object],
                 choice: PrivacyChoice) -> model.PlanQuery:
    """The Noisy tables page's crosstab (post-processing is free: not part of the plan)."""
    spec = model.Crosstab(row, column, categories_of(loaded, row, row_categories),
                          categories_of(loaded, column, column_categories))
    return _finish(model.PlanQuery("q", f"Table of {row} by {column}", spec, _noise(choice),
                                   "tables"), plan_unit(unit))


def uses_rho(noise: str) -> bool:
    """Whether the Groups page's noise (``dpcore.partition.PARTITION_NOISES``) is set by ρ,
    else by ε: by ρ when its law's catalogue kind has no pure DP (the Gaussian: zCDP)."""
    law = PARTITION_LAWS[noise]
    spec = next(s for s in CATALOGUE.values() if s.mechanism is law)
    return "pure" not in spec.measures


def _groups_noise(noise: str, budget: float) -> model.Noise:
    """The Groups page's noise (``dpcore.partition.PARTITION_NOISES``, named as the catalogue
    kinds): set by ρ under zCDP, or by ε under pure DP, as the page sets it."""
    if uses_rho(noise):
        return model.Noise(noise, "zcdp", rho=float(budget))
    return model.Noise(noise, "pure", epsilon=float(budget))


def groups_query(loaded: LoadedDataset, unit: person.PrivacyUnit, *, by: Sequence[str],
                 statistic: str, column: str | None, lower: float | None,
                 upper: float | None, public: bool, noise: str, budget: float, delta: float,
                 edges: Sequence[float] | None, outside: str,
                 keys: Sequence[Sequence[object] | None]) -> model.PlanQuery:
    """The Groups page's query.

    A count per bin is a binned histogram; a count by two public columns a table; one column
    with public keys a group-by over them; without public keys a group-by found by partition
    selection. Over public keys the query spends the whole budget (a mean's split evenly
    between its sum and its count); found privately, a count spends it on the threshold's
    noise, a sum or a mean half on the threshold and half on its own parts.
    """
    punit = plan_unit(unit)
    if edges is not None:
        spec: model.QuerySpec = model.Histogram(by[0], edges=model.Grid(
            tuple(float(e) for e in edges), "typed", "bin edges on the Groups page"),
            outside=outside)
        return _finish(model.PlanQuery("q", f"Counts of {by[0]} in bins", spec,
                                       _groups_noise(noise, budget), "groups"), punit)
    if len(by) == 2:
        if not public:
            raise NotPlannable("a count by two columns found privately is not a query of the "
                               "plan: declare both columns' categories (a table), or group by "
                               "one column")
        spec = model.Crosstab(by[0], by[1], categories_of(loaded, by[0], keys[0]),
                              categories_of(loaded, by[1], keys[1]))
        return _finish(model.PlanQuery("q", f"Count by {by[0]} and {by[1]}", spec,
                                       _groups_noise(noise, budget), "groups"), punit)
    key = by[0]
    declared = categories_of(loaded, key, keys[0]) if public else None
    counts = KINDS[statistic].counts_rows   # the statistic is a kind of one number
    bounds = None if counts else bounds_of(loaded, column, lower, upper)
    half = budget / 2
    label = f"{statistic.capitalize()} by {key}" + ("" if column is None else f" of {column}")
    if public:   # the whole budget (a mean's split between its sum and its count)
        spec = model.GroupBy(key, statistic, column, bounds, declared)
        return _finish(model.PlanQuery("q", label, spec, _groups_noise(noise, budget),
                                       "groups"), punit)
    if unit.person_column is not None and unit.max_groups is None:
        raise NotPlannable(
            f"groups found privately need a bound on how many groups one person can make: on "
            f"the Data page, under \"Privacy unit: who is protected\", tick \"Also bound the "
            f"groups per person\" and set \"Max groups per person\"; or declare the "
            f"categories of {key!r} in the Data page's \"Declared schema\" (then the groups "
            "are public and need no threshold)")
    count_budget = budget if counts else half
    threshold = (model.Threshold(noise, float(delta), rho=float(count_budget))
                 if uses_rho(noise)
                 else model.Threshold(noise, float(delta), epsilon=float(count_budget)))
    spec = model.GroupBy(key, statistic, column, bounds, None)
    mech = None if counts else _groups_noise(noise, half)
    return _finish(model.PlanQuery("q", label + " (groups found privately)", spec, mech,
                                   "groups", threshold), punit)


def quantiles_query(unit: person.PrivacyUnit, *, column: str, levels: Sequence[float],
                    grid: Sequence[float], noise: str, measure: str, budget: float,
                    from_data: bool) -> model.PlanQuery:
    """The Quantiles page's query: report noisy min with the page's noise, under its measure
    (``budget`` is ε under pure DP, ρ under zCDP), split over the levels as the page splits it."""
    names = ", ".join(f"{q:g}" for q in levels)
    spec = model.Quantiles(column, tuple(float(q) for q in levels), model.Grid(
        tuple(float(g) for g in grid), "data" if from_data else "typed",
        "ends read off the data" if from_data else "grid typed on the page"))
    mech = (model.SelectionNoise(noise, "pure", epsilon=float(budget)) if measure == "pure"
            else model.SelectionNoise(noise, "zcdp", rho=float(budget)))
    return _finish(model.PlanQuery("q", f"Quantiles {names} of {column}", spec, mech,
                                   "quantiles"), plan_unit(unit))


def selection_query(loaded: LoadedDataset, unit: person.PrivacyUnit, *, column: str,
                    labels: Sequence[object], declared: bool, noise: str, measure: str,
                    level: float, k: int, negate: bool, monotonic: bool,
                    probability: float | None) -> model.PlanQuery:
    """The Selection page's pick of the most common categories of ``column``."""
    if negate:
        raise NotPlannable("the plan picks the most common categories: turn off 'Pick the "
                           "smallest score instead' to add it")
    if not monotonic:
        raise NotPlannable("counts are monotonic scores: turn 'Scores are monotonic' on to add "
                           "the selection (the plan calibrates it as monotonic)")
    candidates = (categories_of(loaded, column, None) if declared
                  else categories_of(loaded, column, labels))
    mech = (model.SelectionNoise(noise, "pure", epsilon=float(level)) if measure == "pure"
            else model.SelectionNoise(noise, "zcdp", rho=float(level)))
    target = None
    if probability is not None and k == 1:
        # what the page shows now, rounded down, and at most 0.99 (a sure pick needs no more):
        # computed from the true counts, so marked as read off the data (never published)
        wanted = min(math.floor(float(probability) * 1e4) / 1e4, 0.99)
        if 0 < wanted < 1:
            target = model.Target("selection", probability=wanted, origin="data")
    return _finish(model.PlanQuery(
        "q", f"Most common {column}" + (f" (top {k})" if k > 1 else ""),
        model.Selection(column, candidates, int(k)), mech, "selection", target=target),
        plan_unit(unit))
