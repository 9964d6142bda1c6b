"""The Welcome page's plain-words reading of ε: how much one person can change a release, and
what an attacker can learn from it, computed by ``dpcore.risk`` (never typed in).
"""

from __future__ import annotations

import math

import numpy as np

from dashboard.choices import fmt_number
from dashboard.number_text import up
from dpcore.measures import PureDP
from dpcore.risk import ATTACKER_PRIOR, OTHER_EPSILONS, attacker_in_words, max_posterior

#: The prior of the Welcome page's attacker: a coin flip on "is Alice in the data?".
COIN_FLIP = ATTACKER_PRIOR

__all__ = ["attacker_belief", "attacker_in_words", "belief_curve", "epsilon_in_words",
           "OTHER_EPSILONS"]


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


def belief_curve(epsilon: float, points: int = 99) -> tuple[np.ndarray, np.ndarray]:
    """Beliefs before (1 % to 99 %) and the most each can be after one ε-DP release."""
    prior = np.linspace(0.01, 0.99, points)
    return prior, np.asarray(max_posterior(PureDP(epsilon), prior).posterior)
