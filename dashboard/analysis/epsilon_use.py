""""Use this ε": the smallest ε found, rounded up into the query page's range, and the
settings it writes for that page.
"""

from __future__ import annotations

from dataclasses import dataclass

from dashboard import choices
from dashboard.analysis import selection_choices as sel
from dashboard.analysis.epsilon_sweep import mechanism_name
from dashboard.choices import EPSILON_GRID
from dashboard.page_settings import SelectionQuery, StatisticsQuery, TablesQuery
from dpcore import safe_rounding, utility

#: Where each query is set up: (page file, page title), for "use this ε".
QUERY_PAGES = {
    "statistics": ("app_pages/statistics.py", "Noisy statistics"),
    "tables": ("app_pages/tables.py", "Noisy tables"),
    "selection": ("app_pages/selection.py", "Selection"),
}


@dataclass(frozen=True)
class UseEpsilon:
    """A "use this ε" action: the smallest ε found, rounded up (so the target is still met)
    into the query page's range, and the settings it writes for that page (its remembered
    measure, mechanism, ε and δ). ``problem`` says why it cannot be used (ε beyond the
    page's range), else None."""

    kind: str
    epsilon: float
    text: str
    page: str
    page_title: str
    settings: dict
    help: str
    problem: str | None = None


def use_epsilon(source: str, kind: str, answer: utility.SmallestEpsilon, *,
                delta: float | None, query_kind: str | None = None) -> UseEpsilon:
    """What "use this ε" sets on the query's page for one mechanism (or noise) and its answer.

    The ε is the one the sentence shows, rounded up to three significant digits, never
    below the lowest ε the page offers (a larger ε only lowers the error). The Gaussian
    mechanism needs approximate DP at the δ of the curves; the others are pure ε-DP there.
    ``query_kind`` (statistics) is set too: the count shown here when that page has none.
    """
    page, title = QUERY_PAGES[source]
    grid = sel.EPSILON_GRID if source == "selection" else EPSILON_GRID
    text = safe_rounding.upper(answer.epsilon)
    value = float(text)
    if value < grid[0]:
        value, text = float(grid[0]), f"{grid[0]:g}"
    if source == "selection":
        settings = SelectionQuery.settings(measure="pure", noise=kind, pure_level=value)
        name = sel.NOISES[kind]
        how = "pure DP"
    else:
        page_query = StatisticsQuery if source == "statistics" else TablesQuery
        choice = choices.calibrated_from_epsilon(kind, value, delta)
        chosen = {"measure": choice.measure, "mechanism": kind, "epsilon": value}
        if choices.needs_delta(kind):
            chosen["delta"] = delta
        if source == "statistics" and query_kind is not None:
            chosen["query"] = query_kind
        settings = page_query.settings(**chosen)
        name = mechanism_name(kind)
        how = f"δ = {delta:g}" if choices.needs_delta(kind) else "pure DP"
    problem = None
    if value > grid[-1]:
        problem = (f"ε = {text} is above the largest ε the {title} page offers "
                   f"({grid[-1]:g}).")
    return UseEpsilon(kind, value, text, page, title, settings,
                      help=problem or f"Opens the {title} page with {name} at ε = {text} "
                                      f"({how}).", problem=problem)
