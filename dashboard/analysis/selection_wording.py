"""What the Selection page says: the pick and its shortfall in a sentence, ties, where the
scores come from, and the charts' captions.
"""

from __future__ import annotations

import numpy as np

from dashboard.analysis.selection_choices import LEVEL_SYMBOL, NOISE_NAMES, fmt_share
from dashboard.analysis.selection_maths import (
    CorrectnessCurves,
    SelectionSummary,
    level_reaching,
    shortfall_bounds,
    top_k_standard_error,
)
from dashboard.choices import fmt_number
from dashboard.number_text import up
from dashboard.text import plain
from dpcore.intervals import DEFAULT_ALPHA
from engine.queries import Contribution
from plan.parts import NoisyMax

#: What a pick's shortfall is about, by source: (the candidate, its score).
SHORTFALL_WORDS = {"data": ("category", "true count"), "typed": ("candidate", "true score"),
                   "pricing": ("price", "revenue")}


def shortfall_sentence(mechanism: NoisyMax, candidates: int, *, source: str,
                       alpha: float = DEFAULT_ALPHA) -> str:
    """The pick's shortfall bound in words for a newcomer, next to the simulated pick(s):
    'With 95 %, the chosen category's true count is within E of the top count …'."""
    bounds = shortfall_bounds(mechanism, candidates, alpha)
    thing, value = SHORTFALL_WORDS[source]
    top = "smallest" if mechanism.negate else "top"
    level = f"{100 * (1 - alpha):g} %"
    if bounds.size == 1:
        text = (f"With {level}, the chosen {thing}'s {value} is within {up(bounds[0])} of the "
                f"{top} {value}")
    else:
        ranks = ", ".join(f"rank {r} within {up(e)}" for r, e in enumerate(bounds, start=1))
        text = (f"With {level} for each rank on its own, the {thing} picked at each rank has a "
                f"{value} within E of the {top} {value} among the {thing}s not picked before "
                f"it: {ranks}")
    return text + (" — from the noise's law, its scale b and the number of candidates alone, "
                   "never the scores (a union bound over the other candidates: conservative, "
                   "it holds at least as often as stated). A release drawing this noise at "
                   "this scale states the same bound.")


def pick_sentence(summary: SelectionSummary, *, measure: str, level: float, negate: bool,
                  k: int) -> str:
    """e.g. 'At ε = 1, **HS-grad** (the highest score) is picked 92.3% of the time; …'.

    Labels may come from a user's file: they are escaped for markdown here.
    """
    symbol = LEVEL_SYMBOL[measure]
    which = "lowest" if negate else "highest"
    ties = int(summary.best.sum())
    at = f"At {symbol} = {fmt_number(level)}"
    if k > 1:
        at += f" split over k = {k} picks"
    if ties == 1:
        best = int(np.argmax(summary.best))
        subject = f"**{plain(summary.labels[best])}** (the {which} score)"
    else:
        subject = f"one of the {ties} candidates tied for the {which} score"
    verb = "is the first pick" if k > 1 else "is picked"
    sentence = f"{at}, {subject} {verb} {fmt_share(summary.p_correct)} of the time"
    others = np.where(summary.best, -1.0, summary.exact)
    if not summary.best.all():
        runner = int(np.argmax(others))
        sentence += (f"; the next most likely, {plain(summary.labels[runner])}, "
                     f"{fmt_share(float(others[runner]))}")
    return sentence + " (exact probabilities)."


def look_at_curve(summary: SelectionSummary, *, measure: str, level: float) -> str:
    """Presentation mode's one sentence over the curve of P(best picked) against the level."""
    symbol = LEVEL_SYMBOL[measure]
    return (f"**Look at:** the marked point — at {symbol} = {fmt_number(level)} the best is "
            f"picked {fmt_share(summary.p_correct)} of the time — and how the line climbs "
            f"towards 100% as {symbol} grows: more {symbol}, less privacy, fewer wrong picks.")


def tie_note(summary: SelectionSummary, *, negate: bool, source: str) -> str | None:
    """When the true answer is a tie, say so plainly: any of the tied counts as right, and if
    every candidate ties, P(best picked) is 100% at every privacy level. None without a tie."""
    ties = int(summary.best.sum())
    if ties < 2:
        return None
    which = "lowest" if negate else "highest"
    if ties < summary.best.size:
        return (f"The true answer is a tie: {ties} candidates share the {which} score, and "
                "picking any of them counts as right, so P(best picked) is the chance of "
                "picking any of the tied.")
    where = ("choose another column or dataset, or type scores" if source == "data"
             else "change the scores")
    return (f"The true answer is a tie: all {ties} candidates have the same score, so any "
            "pick is right and P(best picked) is 100% at every privacy level — ε changes "
            f"nothing here. To see what ε does, {where} so that one candidate is ahead.")


def categories_origin(declared: bool) -> str:
    """Where the candidates of a column's counts come from, for the parameters file."""
    return ("the column's public list" if declared else
            "the data (this reveals which values occur)")


def data_note(declared: bool, missing_rows: int = 0,
              contribution: Contribution | None = None) -> str:
    """Where the candidates and the sensitivity of a column's counts come from."""
    where = ("Categories: the column's public list, empty ones included." if declared else
             "**Categories read off the data**: that reveals which values exist; declare them "
             "from public knowledge for a real release.")
    missing = (f" {missing_rows:,} rows with no value are not counted." if missing_rows else "")
    if contribution is None:
        unit = ("Sensitivity 1 under add/remove one row: one person changes one category's "
                "count by 1")
    else:
        unit = (f"Sensitivity {contribution.max_rows:,} under add/remove one person (all rows "
                f"with the same {plain(contribution.person)}, at most "
                f"{contribution.max_rows:,} kept per person): one person changes a category's "
                f"count by at most {contribution.max_rows:,}")
    return f"{unit}, and all counts move the same way (monotonic). {where}{missing}"


def pricing_note(bids: int, highest: float) -> str:
    """Where the revenues and their sensitivity come from."""
    return (f"Revenue at price p = p × (number of bids ≥ p), for {bids:,} bids. Sensitivity = "
            f"the highest price, {highest:g}: adding or removing one bidder (one row) changes "
            "each revenue by at most its price, always in the same direction (monotonic). "
            "With a handful of bidders that is as large as the revenues themselves, so the pick "
            "is close to random; with 100 simulated bids the peak stands out.")


def chart_caption(summary: SelectionSummary, *, lines: bool) -> str:
    """How to read the per-candidate chart, and how many frequencies sit in their band."""
    capped = (f" Only {summary.trials:,} of the {summary.requested_trials:,} releases asked "
              f"for were simulated ({summary.scores.size:,} candidates)."
              if summary.trials < summary.requested_trials else "")
    return (f"{'Line' if lines else 'Bars'}: the exact probability; dots: the share of "
            f"{summary.trials:,} simulated releases, ±95% binomial band. "
            f"{summary.within_band} of {summary.scores.size} candidates fall within the 95% "
            "band around their exact probability (roughly 95% should)." + capped)


def curve_caption(curves: CorrectnessCurves, *, noise: str, measure: str) -> str:
    """Where the chosen noise starts picking the best at least 90% of the time."""
    symbol, name = LEVEL_SYMBOL[measure], NOISE_NAMES[noise]
    reach = level_reaching(curves.levels, curves.p_correct[noise], 0.9)
    where = (f"from {symbol} ≈ {up(reach, 2)} upwards" if reach is not None
             else "nowhere on this range")
    return (f"Exact, for the three noises at the same {symbol}. With {name} the best is "
            f"picked at least 90% of the time {where}.")


def top_k_caption(curves: CorrectnessCurves, summary: SelectionSummary) -> str:
    """How precise the simulated top-k curves are, and the value at the chosen setting."""
    return (f"Simulated: {curves.top_k_trials:,} releases per point (standard error at most "
            f"{top_k_standard_error(curves):.1%}); the star: {fmt_share(summary.top_k or 0.0)} "
            f"of {summary.trials:,} releases at the chosen setting. The order of the picks is "
            "ignored.")
