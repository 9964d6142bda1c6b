"""The membership game's rounds, as the "Play the attacker" page keeps them: the round on the
table (drawn from the seed and its number), the rounds played, and everyone's rates.

The maths is ``dpcore.attack_game``; this module only keeps score in the session.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import streamlit as st

from dashboard.charts.attacker import COMPUTER_NAME, LONG_RUN_NAME, PLAYER_NAME, Rates
from dpcore import attack_game

ROUNDS = "attack_rounds"          # the rounds played (non-widget key): a list of Round
ROUNDS_FOR = "attack_rounds_for"  # the game they were played in: a new game starts afresh
LONG_RUN = 10_000                 # rounds the computer plays on its own, for its long-run dot
_STREAM = 35                      # the game's own random stream beside the pages' (issue 35)


class Round(NamedTuple):
    person_in: bool
    answer: float
    you_said_in: bool
    computer_said_in: bool


def rounds(context: tuple) -> list[Round]:
    """The rounds played in the game ``context`` (dataset, mechanism, ε, seed) so far: a
    change of any of them starts a new score (rates at another ε are another game)."""
    ss = st.session_state
    if ss.get(ROUNDS_FOR) != context:
        ss[ROUNDS_FOR] = context
        ss[ROUNDS] = []
    return ss[ROUNDS]


def on_the_table(game: attack_game.Game, seed: int, number: int) -> tuple[bool, float]:
    """Round ``number``: whether the person is in (a fair coin) and the released answer, the
    same for the same seed and round."""
    rng = np.random.default_rng([seed, _STREAM, 0, number])
    person_in = bool(rng.random() < 0.5)
    answer = float(attack_game.release(game, np.array([person_in]), rng=rng)[0])
    return person_in, answer


def guess(game: attack_game.Game, seed: int, said_in: bool) -> None:
    """Callback of the two buttons: score the round on the table."""
    played = st.session_state[ROUNDS]
    person_in, answer = on_the_table(game, seed, len(played))
    computer = bool(attack_game.best_guess(game, np.array([answer]))[0])
    played.append(Round(person_in, answer, said_in, computer))


def _rates(name: str, person_in: np.ndarray, said_in: np.ndarray) -> Rates:
    fpr, tpr, out, inside = attack_game.rates(person_in, said_in)
    false_alarms = int(said_in[~person_in].sum())
    hits = int(said_in[person_in].sum())
    return Rates(name, fpr, tpr, int(person_in.size),
                 attack_game.rate_interval(false_alarms, out),
                 attack_game.rate_interval(hits, inside))


def scores(game: attack_game.Game, played: list[Round], seed: int) -> list[Rates]:
    """Your rates, the computer's on the same rounds, and the computer's over ``LONG_RUN``
    rounds of its own."""
    rng = np.random.default_rng([seed, _STREAM, 1])   # its own stream, apart from the rounds'
    person_in = rng.random(LONG_RUN) < 0.5
    answers = attack_game.release(game, person_in, rng=rng)
    long_run = _rates(f"{LONG_RUN_NAME} ({LONG_RUN:,})", person_in,
                      attack_game.best_guess(game, answers))
    if not played:
        return [long_run]
    table = np.array([tuple(r) for r in played], dtype=np.float64)
    inside = table[:, 0].astype(bool)
    return [_rates(PLAYER_NAME, inside, table[:, 2].astype(bool)),
            _rates(COMPUTER_NAME, inside, table[:, 3].astype(bool)), long_run]


def answer_text(game: attack_game.Game, answer: float) -> str:
    """The released answer in words."""
    if game.mechanism == "randomized response":
        return "**yes, in**" if answer > 0.5 else "**no, out**"
    return f"**{answer:,.2f}** people"
