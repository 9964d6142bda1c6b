"""The Welcome page's plain-words reading of ε: how much one person can change a release, and
what an attacker can learn from it, computed by ``dpcore.risk`` (never typed in).
"""

from __future__ import annotations

import math

from dashboard.choices import fmt_number
from dashboard.shown import percent_up, up
from dpcore.measures import PureDP
from dpcore.risk import max_posterior

#: The prior of the Welcome page's attacker: a coin flip on "is Alice in the data?".
COIN_FLIP = 0.5
#: Other ε the page compares with ε = 1, from very private to barely private.
OTHER_EPSILONS = (0.1, 5.0)


def attacker_belief(epsilon: float, prior: float = COIN_FLIP) -> float:
    """The most an attacker's belief that one person is in the data can reach after one
    ε-DP release, from ``prior`` (``dpcore.risk.max_posterior``)."""
    return float(max_posterior(PureDP(epsilon), prior).posterior)


def epsilon_in_words(epsilon: float = 1.0) -> str:
    """Markdown: what ε means for one person, in plain words, with the numbers rounded up."""
    eps = fmt_number(epsilon)
    return (
        f"A differentially private release adds noise, so that **any one person changes what "
        f"is published only a little**. ε says how little: at ε = {eps}, every possible "
        f"result is at most {up(math.exp(epsilon), 3)} times (e^ε) as likely with you in the "
        f"data as without you, and the other way round (pure ε-DP).")


def attacker_in_words(epsilon: float = 1.0) -> str:
    """Markdown: the attacker sentence at ``epsilon``, and at :data:`OTHER_EPSILONS`."""
    others = "; ".join(f"at ε = {fmt_number(e)}, {percent_up(attacker_belief(e))}"
                       for e in OTHER_EPSILONS)
    return (
        f"**What an attacker can learn:** someone who knows everybody else's data and starts "
        f"50/50 on whether you are in it ends **at most {percent_up(attacker_belief(epsilon))} "
        f"sure** after one release at ε = {fmt_number(epsilon)}, whatever it shows ({others}). "
        "Releases about the same people add up: the Release plan page totals them.")
