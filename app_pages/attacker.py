"""Play the attacker: guess whether one person is in the data from a noisy answer, and see
that no way of guessing gets above the trade-off curve ε-DP allows (issue 35).

Widgets pick the mechanism and ε; ``dpcore.attack_game`` draws and scores; one chart.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from dashboard import charts, controls, presenting, state, teaching
from dashboard.analysis import attacker
from dashboard.choices import fmt_number
from dashboard.text import plain
from dpcore import attack_game

st.title("Play the attacker")
st.caption("A [membership test](./glossary#membership-test), played by hand. The app holds two "
           "[neighbouring](./glossary#neighbouring-datasets) versions of the data: everyone, "
           "and everyone but one person. Each round it flips a coin for which one to use and "
           "releases a noisy answer at the [ε](./glossary#epsilon) below. You know everything "
           "else; guess whether the person is in.")
teaching.look_here("attacker")
loaded = state.dataset()
people = int(loaded.relation.shape[0])
left, right = st.columns([1, 2], gap="large")
with left:
    mechanism = controls.select("How the answer is released", list(attack_game.MECHANISMS),
                                key="attack_mechanism", format_func=attack_game.LABELS.get)
    epsilon = controls.epsilon_slider(key="attack_epsilon")
    game = attack_game.new_game(mechanism, epsilon, people=people)
    played = attacker.rounds((state.dataset_key(), mechanism, epsilon, state.seed()))
    person_in, answer = attacker.on_the_table(game, state.seed(), len(played))
    with st.container(border=True, key="attack_round"):
        st.markdown(f"**Round {len(played) + 1}.** {plain(loaded.name)}: with the person, "
                    f"{game.count_with:,} people; without, {game.count_without:,}. "
                    f"The app releases: {attacker.answer_text(game, answer)}.")
        st.markdown("Is the person in the data?")
        inside, outside = st.columns(2)
        inside.button("In", key="attack_guess_in", on_click=attacker.guess,
                      args=(game, state.seed(), True), use_container_width=True)
        outside.button("Out", key="attack_guess_out", on_click=attacker.guess,
                       args=(game, state.seed(), False), use_container_width=True)
    if played:
        last = played[-1]
        st.markdown(f"Last round the person was **{'in' if last.person_in else 'out'}**: you "
                    f"said {'in' if last.you_said_in else 'out'}, the computer said "
                    f"{'in' if last.computer_said_in else 'out'}.")
        st.caption("Your dot (and the computer's on the same rounds) appears once rounds "
                   "with and without the person have both come up.")
    if game.delta:
        st.caption(f"The Gaussian is (ε, δ)-DP with δ = {fmt_number(game.delta)}: noise σ = "
                   f"{game.scale:.2f} people.")
limit_label = (f"ε = {fmt_number(epsilon)}" if not game.delta
               else f"ε = {fmt_number(epsilon)}, δ = {fmt_number(game.delta)}")
rounds_text = f"{len(played)} round" + ("" if len(played) == 1 else "s")
with right, presenting.step("attack", (
        f"**Look at:** your dot (hits against false alarms after {rounds_text}) and the red "
        f"line: at {limit_label} no way of guessing gets above it but by luck (the dot's "
        "bars); the computer's best test lands on the dashed line.")):
    scores = attacker.scores(game, played, state.seed())
    fpr = np.linspace(0.0, 1.0, 401)
    presenting.chart(charts.attack_chart(
        fpr, attack_game.limit_curve(game, fpr), attack_game.exact_curve(game, fpr), scores,
        title=f"Hits against false alarms after {rounds_text}", limit_label=limit_label),
        key="attack_chart")
    if not presenting.on():   # in presentation mode the step's sentence says it
        st.markdown("Above the red line is out of reach: there, a guess would tell the two "
                    "datasets apart better than ε allows. The dashed line is the best anyone "
                    "can do against this mechanism — the computer's [likelihood-ratio "
                    "test](./glossary#likelihood-ratio-test) lands on it; bars show how far "
                    "luck moves a rate after few rounds.")
