"""Landing page: what Epsilon Lab is, what ε = 1 means in plain words, and the pages."""

import streamlit as st

from dashboard import presenting, teaching
from dashboard.analysis import welcome
from dashboard.charts.welcome import belief_chart
from dpcore import safe_rounding

st.title("Epsilon Lab")
st.markdown(
    "See what **[differential privacy](./glossary#differential-privacy)** does to your data "
    "*before* you publish anything. Load a dataset, ask a question of it, and compare the "
    "true answer with what a differentially private release would show — many times over, "
    "so you see the whole spread of the noise, not one lucky draw. Then pick "
    "[ε](./glossary#epsilon) by looking at it. Each term is explained on the "
    "[Glossary](./glossary) page."
)

teaching.look_here("")
st.page_link("app_pages/attacker.py", icon=":material/casino:",
             label="Play the attacker: guess whether one person is in the data, against the "
                   "best test there is")


@st.cache_resource
def belief_figure():
    """The same figure for every session (presenting.chart enlarges a copy): built once
    (about 50 ms)."""
    prior, posterior = welcome.belief_curve(1.0)
    return belief_chart(prior, [("ε = 1", posterior)],
                        title="How sure an attacker can be after one release at ε = 1")


st.subheader("What ε = 1 means")
with presenting.step("welcome_belief", (
        "**Look at:** the red line. An attacker 50% sure that one person is in the data is "
        f"at most {safe_rounding.percent_upper(welcome.attacker_belief(1.0))} sure after a release "
        "at ε = 1: never certain, whatever they knew before.")):
    if presenting.on():
        presenting.chart(belief_figure(), key="welcome_belief")
    else:   # the same in words: no chart, so the first page need not load plotly.js (4.7 MB)
        st.markdown(welcome.epsilon_in_words(1.0))
        st.markdown(welcome.attacker_in_words(1.0))
st.page_link("app_pages/choose_epsilon.py", icon=":material/tune:",
             label="See it for any ε, for (ε, δ) and zCDP, and the best test an attacker can "
                   "run: Choose epsilon, “What an attacker can learn”")



def the_pages() -> None:
    """What each page shows, who is protected, and what the server keeps."""
    st.subheader("The pages")
    st.markdown(
        """
| Page | What it shows |
| --- | --- |
| **Data** | the data (owner only); who is protected (privacy unit), what is public (schema) |
| **Noisy statistics** | a count, sum, mean, variance or histogram with noise: its error |
| **Noisy tables** | a cross-tabulation released with noise, and what post-processing does to it |
| **Groups** | counts, sums and means per group, binned histograms, groups found privately |
| **Quantiles** | the median and other quantiles, with their exact accuracy |
| **Selection** | picking the most common category privately: how often is the answer right? |
| **Play the attacker** | guess whether one person is in the data: no guess beats the ε-DP curve |
| **Choose epsilon** | error against ε, the smallest ε meeting an accuracy target, attacker risk |
| **Release plan** | all queries in one plan: accounted, split to meet every target, released |
| **Releases** | the ledger: every real release and each dataset's budget, spent and left |
| **Private learning** | a differentially private naive Bayes classifier: accuracy against ε |
| **Synthetic data** | synthetic rows from noisy marginals (AIM, MST), and how close they are |
| **People and roles** | with sign-in on, for stewards: who is a steward, analyst or viewer |
| **Glossary** | the words: ε, δ, ρ and zCDP, μ-GDP, PLD, sensitivity, privacy unit and more |
"""
    )
    st.info(
        "**The privacy unit: one row = one person, unless you say otherwise.** Two datasets are "
        "neighbours when they differ by adding or removing one row. When a person can have many "
        "rows (visits, purchases), declare the column that identifies them on the Data page: "
        "neighbours then differ by all of one person's rows, each person keeps at most a set "
        "number of rows, and every sensitivity follows (the sidebar shows the unit in force). "
        "Bounds used to clamp values should be public knowledge: a bound read off the "
        "data leaks, so every one that is (Adult's capital_loss maximum, an upload's starting "
        "bounds) is flagged where it is used."
    )
    st.caption("Pick a dataset in the sidebar (or upload a CSV) and a page above to begin. An "
               "upload stays in this session's memory, unless you choose to keep it on the "
               "server (the sidebar's **Keep this file on the server**: then every user of the "
               "server can open it). What is kept on the server even then: what you declare "
               "about a dataset (its column names, each column's role, bounds, categories and "
               "bins — those read off the data too — and the privacy unit), the file's name "
               "and a fingerprint of its content (to recognise it when uploaded again), the "
               "plans you save (the same column names and declarations, each query's settings) "
               "and, for a release, its published values in the ledger; never the rows. The "
               "numbers on the query pages are simulations from a seed (the seed can draw the "
               "same noise again: never publish them). A private release is made only by "
               "**Release** on the Release plan page: OpenDP draws its noise with fresh "
               "randomness, and the ledger records what it spent.")


if not presenting.on():   # for a projector: the one step above, not this reference
    the_pages()
