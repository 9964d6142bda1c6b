"""Defaults that teach: the small dataset each teaching page opens on, and the sentence that
says what to look at there (issue 35). Adult stays one click away.

A session starts on the teaching dataset of the page it opens on (Welcome, Noisy statistics,
Choose epsilon, Selection, Play the attacker), else on Adult. A server can fix one dataset for
every new session with ``EPSILON_LAB_DEFAULT_DATASET`` (the name of a built-in dataset).
"""

from __future__ import annotations

import os

import streamlit as st

from dashboard import datasets, state
from datasets_synthetic import teaching

#: The server setting that fixes the dataset every new session opens on.
DEFAULT_ENV = "EPSILON_LAB_DEFAULT_DATASET"

#: The dataset each teaching page opens on, by the page's URL path ("" is Welcome).
DEFAULTS = {
    "": teaching.CLASS,
    "statistics": teaching.CLASS,
    "choose_epsilon": teaching.VILLAGE,
    "selection": teaching.RACE,
    "attacker": teaching.CLASS,
}

#: What to look at on each teaching page, when it shows its teaching dataset.
LOOK_AT = {
    ("", teaching.CLASS): (
        "**Look at:** the class of 30 is opened for you. On **Noisy statistics**, the bars of "
        "favourite subjects are 3 to 9 pupils high: at ε = 1 the noise of ±1 or 2 is a good "
        "part of each bar. Then play the attacker, who tries to tell whether one pupil is in "
        "the class."),
    ("statistics", teaching.CLASS): (
        "**Look at:** the black marks (the true counts: 3 to 9 pupils) against the blue noisy "
        "bars. At ε = 1 a count moves by 1 pupil on average, often 2 or 3: enough to swap "
        "Music and Art. Move ε to 0.1 and the noise is larger than the bars; to 10 and it "
        "almost goes."),
    ("choose_epsilon", teaching.VILLAGE): (
        "**Look at:** how the error of a village statistic (400 people) falls as ε grows, "
        "and the smallest ε that meets the target: on a village, ε = 1 still leaves an error "
        "you can read on the chart."),
    ("selection", teaching.RACE): (
        "**Look at:** the candidates are one vote apart (126, 125, 125, 124 of 500). At "
        "ε = 1 the private pick is the true winner only about 2 times in 3: the chart of "
        "how often each candidate is picked shows it. Raise ε until the winner is picked "
        "almost always; on Adult, HS-grad wins every time unless ε is near 0.001."),
    ("attacker", teaching.CLASS): (
        "**Look at:** your hits and false alarms (the dot) never get above the curve: at the "
        "ε on screen, no way of guessing can do better, however clever."),
}

TEACHING_NOTE = "On Adult (48,842 rows) the same noise is invisible on the bars."


def opening_dataset(page: str) -> str:
    """The dataset a new session starts on when it opens on ``page`` (a URL path)."""
    fixed = os.environ.get(DEFAULT_ENV, "").strip()
    if fixed in (*datasets.BUILTIN_DATASETS, *datasets.TEACHING_DATASETS):
        return fixed
    return DEFAULTS.get(page, state.DEFAULT_DATASET)


def _open_adult() -> None:
    st.session_state["dataset_choice"] = state.DEFAULT_DATASET


def look_here(page: str) -> None:
    """The page's sentence of what to look at, while its teaching dataset is open, and one
    click to open Adult instead."""
    sentence = LOOK_AT.get((page, st.session_state[state.DATASET].name))
    if sentence is None:
        return
    with st.container(border=True, key="teaching_note"):
        st.markdown(sentence)
        st.button("Open Adult (48,842 people) instead", key="teaching_open_adult",
                  on_click=_open_adult, icon=":material/swap_horiz:",
                  help=TEACHING_NOTE + " The teaching datasets stay in the sidebar's list.")
