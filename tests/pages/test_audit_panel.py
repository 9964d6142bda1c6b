"""AppTest of "Check the claim" on Noisy statistics and Selection.

The numbers on screen are checked against audits run here directly (``audit_claim``, or
``audit_mechanism`` on the worst-case score vectors of tests/dpcore/test_selection_audit.py) on
mechanisms built here from the page's settings, with the stream the panel documents
(``[seed, 10, broken, part]``): the honest mechanism's bound stays at or below its claim, the
broken copy's (0.7 × the noise) goes above it.
"""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.state import SEED
from dpcore.audit import audit_mechanism, category_events
from dpcore.measures import PureDP
from dpcore.mechanisms import make_mechanism
from dpcore.mechanisms.catalogue import audit_claim
from dpcore.safe_rounding import lower, upper
from dpcore.selection import noisy_max_scale, noisy_top_k
from tests.conftest import open_app

STATS_SAMPLES = 4 * 10**6
SELECTION_SAMPLES = 10**6


def rng(seed: int, broken: bool, part: int = 0) -> np.random.Generator:
    return np.random.default_rng([seed, 10, int(broken), part])


def shown_rows(at) -> list[dict]:
    """The audit table's rows (the last dataframe on the page)."""
    frame = at.dataframe[-1].value
    assert "Lower bound on ε" in frame.columns
    return frame.to_dict("records")


def check(at, key: str):
    at.button(key=f"{key}_run").click().run()
    assert not at.exception, [e.value for e in at.exception]


def bound_text(x: float) -> str:
    return f"≥ {lower(x)}"


@pytest.fixture
def stats_page():
    return open_app("statistics.py")


@pytest.mark.slow
def test_histogram_laplace_bound_equals_audit_claim_and_catches_the_broken_copy(stats_page):
    at = stats_page
    assert not [df for df in at.dataframe if "Lower bound on ε" in df.value.columns]
    check(at, "stats_audit")
    seed = at.session_state[SEED]
    # The default: a histogram (sensitivity 1, add/remove one row) with Laplace, ε = 1.
    mech = make_mechanism("laplace", sensitivity=1.0, epsilon=1.0)
    honest = audit_claim(mech, rng=rng(seed, False), samples=STATS_SAMPLES)
    (row,) = shown_rows(at)
    assert row["Lower bound on ε"] == bound_text(honest.result.epsilon_lower_bound)
    assert row["Claimed ε"] == upper(1.0) and row["Caught"] == "no"
    assert row["Samples per side"] == f"{STATS_SAMPLES:,}"
    assert 0.9 < honest.result.epsilon_lower_bound <= 1.0
    assert any("evidence, not proof" in m.value for m in at.markdown)

    at.toggle(key="stats_audit_broken").set_value(True).run()
    broken = audit_claim(mech, rng=rng(seed, True), samples=STATS_SAMPLES, noise_factor=0.7)
    rows = shown_rows(at)
    assert [r["Lower bound on ε"] for r in rows] == [
        bound_text(honest.result.epsilon_lower_bound),
        bound_text(broken.result.epsilon_lower_bound)]
    assert broken.result.epsilon_lower_bound > 1.0 and rows[1]["Caught"] == "yes"
    caught = [m.value for m in at.markdown if "caught" in m.value]
    assert caught and f"ε ≥ {lower(broken.result.epsilon_lower_bound)} > claimed ε = 1" \
        in caught[0]
    chart = [c for c in at.get("plotly_chart") if "stats_audit_chart" in str(c.proto.id)]
    assert chart


def test_result_survives_reruns_until_the_configuration_changes(stats_page):
    at = stats_page
    check(at, "stats_audit")
    at.run()
    assert shown_rows(at)   # a rerun (any other widget) keeps it
    at.selectbox(key="stats_trials").select(1_000).run()   # not part of the claim: kept
    assert shown_rows(at)
    assert at.selectbox(key="stats_trials").value == 1_000
    at.selectbox(key="stats_mechanism").select("geometric").run()   # another mechanism
    assert not [df for df in at.dataframe if "Lower bound on ε" in df.value.columns]
    assert at.selectbox(key="stats_trials").value == 1_000


@pytest.mark.slow
def test_gaussian_with_tiny_delta_says_the_audit_has_little_power(stats_page):
    at = stats_page
    at.selectbox(key="stats_measure").select("approx").run()
    at.selectbox(key="stats_mechanism").select("gaussian").run()
    check(at, "stats_audit")
    seed = at.session_state[SEED]
    mech = make_mechanism("gaussian", sensitivity=1.0, epsilon=1.0, delta=1e-6)
    honest = audit_claim(mech, rng=rng(seed, False), samples=STATS_SAMPLES)
    (row,) = shown_rows(at)
    assert row["Lower bound on ε"] == bound_text(honest.result.epsilon_lower_bound)
    assert honest.result.epsilon_lower_bound <= honest.claimed_epsilon
    assert any("little power" in i.value for i in at.info)


@pytest.mark.slow
def test_mean_audits_each_part_against_its_share(stats_page):
    at = stats_page
    at.selectbox(key="stats_query").select("mean").run()
    check(at, "stats_audit")
    seed = at.session_state[SEED]
    lo, hi = at.number_input(key="stats_lower").value, at.number_input(key="stats_upper").value
    # ε = 1 split evenly: the sum (sensitivity max(|lower|, |upper|)) and the count (1) at 0.5
    parts = (make_mechanism("laplace", sensitivity=max(abs(lo), abs(hi)), epsilon=0.5),
             make_mechanism("laplace", sensitivity=1.0, epsilon=0.5))
    expected = [audit_claim(m, rng=rng(seed, False, part), samples=STATS_SAMPLES)
                for part, m in enumerate(parts)]
    rows = shown_rows(at)
    assert [r["Lower bound on ε"] for r in rows] == [
        bound_text(e.result.epsilon_lower_bound) for e in expected]
    assert [r["Claimed ε"] for r in rows] == [upper(0.5), upper(0.5)]
    assert all(e.result.epsilon_lower_bound <= 0.5 for e in expected)
    assert any("sequential composition" in i.value for i in at.info)


# --- Selection -------------------------------------------------------------------------------


def selection_bound(seed: int, *, broken: bool, monotonic: bool, k: int = 1,
                    noise: str = "laplace", epsilon: float = 1.0) -> float:
    """The audit of tests/dpcore/test_selection_audit.py on the page's setting, run here."""
    d, s = max(5, k + 1), 1.0
    scale = noisy_max_scale(PureDP(epsilon), sensitivity=s, noise=noise, monotonic=monotonic,
                            k=k) * (0.7 if broken else 1.0)
    zeros, ups = np.zeros(d), np.r_[0.0, np.full(d - 1, s)]
    pairs = ([(np.r_[s, np.zeros(d - 1)], zeros), (zeros, ups)] if monotonic else
             [(np.r_[s, np.zeros(d - 1)], ups), (zeros, np.r_[-s, np.full(d - 1, s)])])
    gen = rng(seed, broken)

    def release(scores, g, n):
        return noisy_top_k(scores, k, scale=scale, noise=noise, trials=n, rng=g)

    return max(audit_mechanism(release, x, xp, events=category_events(d),
                               samples=SELECTION_SAMPLES, confidence=1 - 0.05 / 2,
                               rng=gen).epsilon_lower_bound for x, xp in pairs)


@pytest.mark.slow
def test_selection_bound_equals_a_direct_audit_and_catches_the_broken_copy():
    at = open_app("selection.py")
    monotonic = at.toggle(key=[t.key for t in at.toggle if "monotonic" in t.key][0]).value
    check(at, "sel_audit")
    at.toggle(key="sel_audit_broken").set_value(True).run()
    assert not at.exception
    seed = at.session_state[SEED]
    noise = at.selectbox(key="sel_noise").value     # the default: exponential noise
    honest = selection_bound(seed, broken=False, monotonic=monotonic, noise=noise)
    broken = selection_bound(seed, broken=True, monotonic=monotonic, noise=noise)
    rows = shown_rows(at)
    assert [r["Lower bound on ε"] for r in rows] == [bound_text(honest), bound_text(broken)]
    assert honest <= 1.0 < broken
    assert [r["Caught"] for r in rows] == ["no", "yes"]


@pytest.mark.slow
def test_selection_with_k_above_one_says_the_audit_reads_the_first_pick():
    at = open_app("selection.py")
    at.selectbox(key="sel_k").select(2).run()
    check(at, "sel_audit")
    assert any("first pick" in i.value for i in at.info)
    (row,) = shown_rows(at)
    assert row["Caught"] == "no"
