"""The membership game: two neighbouring datasets (with and without one person), a noisy answer
from one of them, and a guess. The exact trade-off curves and the best player (likelihood ratio).

The released answer is the number of people in the data (n with the person, n − 1 without), by
randomized response (one yes/no answer to "is this person in?"), the Laplace or the Gaussian
mechanism. Randomized response reaches the ε-DP limit exactly; the other two stay inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit, ndtr, ndtri

from dpcore import risk
from dpcore.checks import check_choice, check_int, check_positive, check_rng
from dpcore.measures import ApproxDP, PureDP
from dpcore.mechanisms.gaussian import Gaussian

__all__ = ["MECHANISMS", "GAUSSIAN_DELTA", "Game", "new_game", "release", "best_guess",
           "exact_curve", "limit_curve", "rates", "rate_interval", "best_rates",
           "laplace_tradeoff", "MAX_ROUNDS"]

#: The mechanisms the game offers, in menu order.
MECHANISMS = ("randomized response", "laplace", "gaussian")
#: How the game's page names each mechanism.
LABELS = {
    "randomized response": "Randomized response (answers “is this person in?”)",
    "laplace": "Laplace noise on the count of people",
    "gaussian": "Gaussian noise on the count of people",
}
#: The Gaussian mechanism's δ in the game: (ε, δ)-DP at the ε on screen.
GAUSSIAN_DELTA = 1e-5
#: Most rounds one call simulates (the computer's long run): bounds memory at 16 MB.
MAX_ROUNDS = 1_000_000


@dataclass(frozen=True)
class Game:
    """One game's public facts: the mechanism, its privacy and noise, and both true answers.

    ``scale`` is the probability of answering truthfully (randomized response), the Laplace
    scale b = 1/ε, or the Gaussian's σ; the count's sensitivity is 1 (add/remove one person).
    """

    mechanism: str
    epsilon: float
    delta: float
    scale: float
    count_without: int

    @property
    def count_with(self) -> int:
        return self.count_without + 1


def new_game(mechanism: str, epsilon: float, *, people: int) -> Game:
    """The game at ``epsilon`` on a dataset of ``people`` people (the person included).

    Raises ``ValueError`` naming the parameter for an unknown mechanism, an ε that is not
    positive and finite, or fewer than one person.
    """
    mechanism = check_choice("mechanism", mechanism, MECHANISMS)
    epsilon = check_positive("epsilon", epsilon)
    if not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be finite, got {epsilon!r}")
    people = check_int("people", people, minimum=1)
    if mechanism == "randomized response":
        return Game(mechanism, epsilon, 0.0, float(expit(epsilon)), people - 1)
    if mechanism == "laplace":
        return Game(mechanism, epsilon, 0.0, 1.0 / epsilon, people - 1)
    sigma = Gaussian(sensitivity=1.0, epsilon=epsilon, delta=GAUSSIAN_DELTA).scale
    return Game(mechanism, epsilon, GAUSSIAN_DELTA, float(sigma), people - 1)


def release(game: Game, person_in: ArrayLike, *, rng: np.random.Generator) -> NDArray:
    """One noisy answer per round, from the dataset with the person where ``person_in``.

    Randomized response answers 1.0 ("yes, in") or 0.0; the others the noisy count.
    """
    rng = check_rng(rng)
    inside = np.asarray(person_in, dtype=bool)
    check_int("rounds", inside.size, minimum=1, maximum=MAX_ROUNDS)
    if game.mechanism == "randomized response":
        truthful = rng.random(inside.shape) < game.scale
        return np.where(truthful, inside, ~inside).astype(np.float64)
    true_count = game.count_without + inside.astype(np.float64)
    if game.mechanism == "laplace":
        return true_count + rng.laplace(0.0, game.scale, size=inside.shape)
    return true_count + rng.normal(0.0, game.scale, size=inside.shape)


def _log_likelihood_ratio(game: Game, outputs: NDArray) -> NDArray:
    """log P(output | in) / P(output | out), per output."""
    if game.mechanism == "randomized response":
        return np.where(outputs > 0.5, game.epsilon, -game.epsilon)
    above_without = outputs - game.count_without
    above_with = outputs - game.count_with
    if game.mechanism == "laplace":
        return (np.abs(above_without) - np.abs(above_with)) / game.scale
    return (above_without**2 - above_with**2) / (2.0 * game.scale**2)


def best_guess(game: Game, outputs: ArrayLike, *, threshold: float = 1.0) -> NDArray[np.bool_]:
    """The likelihood-ratio test (Neyman–Pearson): "in" when P(out. | in) / P(out. | out) >
    ``threshold``. At threshold 1 it is the guess most often right when in and out are even."""
    threshold = check_positive("threshold", threshold)
    values = np.asarray(outputs, dtype=np.float64)
    return _log_likelihood_ratio(game, values) > math.log(threshold)


def laplace_tradeoff(epsilon: float, fpr: ArrayLike) -> NDArray[np.float64]:
    """Highest TPR of any test against the Laplace mechanism of sensitivity 1 and scale 1/ε.

    Its type-II error is (Dong, Roth & Su 2022, the Laplace trade-off function)

    .. math:: \\beta(\\alpha) = 1 - e^{\\varepsilon}\\alpha \\ (\\alpha < e^{-\\varepsilon}/2),
              \\quad e^{-\\varepsilon}/(4\\alpha) \\ (\\alpha \\le 1/2),
              \\quad e^{-\\varepsilon}(1 - \\alpha) \\ (\\alpha > 1/2).
    """
    epsilon = check_positive("epsilon", epsilon)
    alpha = np.clip(np.asarray(fpr, dtype=np.float64), 0.0, 1.0)
    low = math.exp(-epsilon) / 2.0
    with np.errstate(divide="ignore", over="ignore"):   # α → 0: e^-ε/(4α) → inf
        middle = math.exp(-epsilon) / (4.0 * alpha)
    type_two = np.where(alpha < low, 1.0 - math.exp(epsilon) * alpha,
                        np.where(alpha <= 0.5, middle, math.exp(-epsilon) * (1.0 - alpha)))
    return np.clip(1.0 - type_two, alpha, 1.0)


def exact_curve(game: Game, fpr: ArrayLike) -> NDArray[np.float64]:
    """The highest TPR any guess can reach at each FPR against this game's mechanism: where
    the likelihood-ratio test lands (randomized response: on the ε-DP limit itself)."""
    alpha = np.asarray(fpr, dtype=np.float64)
    if game.mechanism == "randomized response":
        return np.asarray(risk.tradeoff(PureDP(game.epsilon), alpha), dtype=np.float64)
    if game.mechanism == "laplace":
        return laplace_tradeoff(game.epsilon, alpha)
    return np.asarray(risk.gaussian_tradeoff(1.0 / game.scale, alpha), dtype=np.float64)


def limit_curve(game: Game, fpr: ArrayLike) -> NDArray[np.float64]:
    """The most the guarantee allows: the ε-DP curve, or the (ε, δ) one for the Gaussian."""
    guarantee = (PureDP(game.epsilon) if game.delta == 0.0
                 else ApproxDP(game.epsilon, game.delta))
    return np.asarray(risk.tradeoff(guarantee, np.asarray(fpr, dtype=np.float64)),
                      dtype=np.float64)


def rates(person_in: ArrayLike, guessed_in: ArrayLike) -> tuple[float, float, int, int]:
    """(FPR, TPR, rounds out, rounds in) of a run of guesses; a rate with no round is NaN."""
    inside = np.asarray(person_in, dtype=bool)
    guessed = np.asarray(guessed_in, dtype=bool)
    if inside.shape != guessed.shape:
        raise ValueError("person_in and guessed_in must have the same length")
    rounds_in = int(inside.sum())
    rounds_out = int(inside.size - rounds_in)
    tpr = float(guessed[inside].mean()) if rounds_in else math.nan
    fpr = float(guessed[~inside].mean()) if rounds_out else math.nan
    return fpr, tpr, rounds_out, rounds_in


def rate_interval(hits: int, rounds: int) -> tuple[float, float]:
    """A 95 % Wilson interval for a rate from ``hits`` of ``rounds``: how far luck moves it."""
    if rounds <= 0:
        return math.nan, math.nan
    z = float(-ndtri(0.025))
    share = hits / rounds
    centre = (share + z * z / (2 * rounds)) / (1 + z * z / rounds)
    half = z * math.sqrt(share * (1 - share) / rounds + z * z / (4 * rounds**2)) / (
        1 + z * z / rounds)
    # clamped to hold the estimate itself: with no hits (all hits) the lower (upper) end is
    # 0 (1) exactly, where rounding left 2e-19
    return max(0.0, min(centre - half, share)), min(1.0, max(centre + half, share))


def best_rates(game: Game) -> tuple[float, float]:
    """(FPR, TPR) of the likelihood-ratio test at threshold 1, in closed form."""
    if game.mechanism == "randomized response":
        return 1.0 - game.scale, game.scale
    if game.mechanism == "laplace":   # "in" when the answer is above n − 1/2
        fpr = 0.5 * math.exp(-0.5 / game.scale)
        return fpr, 1.0 - fpr
    fpr = float(ndtr(-0.5 / game.scale))
    return fpr, 1.0 - fpr
