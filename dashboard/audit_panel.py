"""The "Check the claim" panel: one click audits the page's mechanism, honest or broken.

Noisy statistics and Selection each call one function here with what they have set up; the
audits run in ``dashboard.analysis.audit`` and are cached per configuration and seed.
"""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from dashboard import controls, presenting
from dashboard.analysis import audit as aud
from dashboard.charts.audit import claim_check
from dashboard.kinds import adapter_of
from dashboard.text import plain

_INTRO = ("An empirical audit: the mechanism is run many times on two neighbouring inputs "
          "(the worst case its privacy claim must survive), and how often fixed events happen "
          "on each side gives a **lower bound** on its true ε. A bound above the claim proves, "
          "at the confidence shown, that the claim is false; a bound below it is **evidence, "
          "not proof** of privacy: only these inputs and events were tried, and the noise is "
          "simulated with numpy.")


def _progress_bar(what: str) -> Callable[[float], object]:
    """A progress bar drawn where the audit runs, and the callback that moves it."""
    bar = st.progress(0.0, text=f"Auditing {what}…")
    return lambda share: bar.progress(min(max(float(share), 0.0), 1.0),
                                      text=f"Auditing {what}… {share:.0%}")


# Cached per configuration and seed. The progress bar is drawn inside: Streamlit replays it
# (finished, then emptied) when the result comes from the cache.
@st.cache_data(show_spinner=False, max_entries=64)
def _statistics_audits(keys: tuple[str, ...], _targets: tuple[aud.AuditTarget, ...], *,
                       seed: int, broken: bool) -> list[aud.AuditOutcome]:
    outcomes = []
    slot = st.empty()
    with slot.container():
        for part, target in enumerate(_targets):
            what = ("the broken copy of " if broken else "") + target.title
            outcomes.append(aud.audit_target(target, seed=seed, broken=broken, part=part,
                                             progress=_progress_bar(plain(what))))
    slot.empty()
    return outcomes


@st.cache_data(show_spinner=False, max_entries=64)
def _selection_audit(setting: aud.SelectionSetting, *, seed: int,
                     broken: bool) -> aud.AuditOutcome:
    slot = st.empty()
    with slot.container():
        outcome = aud.audit_selection(setting, seed=seed, broken=broken, progress=_progress_bar(
            "the broken copy" if broken else "the selection"))
    slot.empty()
    return outcome


@st.cache_data(show_spinner=False, max_entries=32)
def _statistics_targets(_frame: pd.DataFrame, dataset_key: str, spec, choice, *,
                        answer_range, sum_share: float) -> tuple[aud.AuditTarget, ...]:
    return aud.statistics_targets(_frame, spec, choice, answer_range=answer_range,
                                  sum_share=sum_share)


def _controls(key: str, configuration: object, samples: int) -> tuple[bool, bool]:
    """The button and the toggle: (show the audit now, include the broken copy)."""
    st.subheader("Check the claim")
    st.caption(_INTRO)
    left, right = st.columns([1, 2])
    clicked = left.button("Check the claim", key=f"{key}_run", type="primary",
                          help=f"Draws {samples:,} samples on each side of each neighbouring "
                               "pair: a few seconds.")
    with right:
        broken = controls.toggle(
            f"Also audit a deliberately broken copy ({aud.BROKEN_FACTOR:g} × the noise, same "
            "claim)", key=f"{key}_broken",
            help="Shows that the audit can catch a bug: the copy adds too little noise.")
    asked = f"{key}_asked"   # the configuration last audited: shown until it changes
    if clicked:
        st.session_state[asked] = configuration
    shown = st.session_state.get(asked) == configuration
    if not shown:
        st.caption(f"One click samples the mechanism {samples:,} times on each side "
                   f"(a few seconds), at {aud.CONFIDENCE:.0%} confidence.")
    return shown, broken


def _show(outcomes: list[aud.AuditOutcome], notes: list[str], *, key: str) -> None:
    bounds_shown = [aud.shown_figures(o.result.epsilon_lower_bound, o.claimed_epsilon)
                    for o in outcomes]
    rows = [o.row for o in outcomes]
    presenting.chart(claim_check(
        rows, [o.result.epsilon_lower_bound for o in outcomes],
        [o.claimed_epsilon for o in outcomes], confidence=aud.CONFIDENCE,
        bound_texts=[b for b, _ in bounds_shown], claim_texts=[c for _, c in bounds_shown],
        title="The audit's lower bound on ε against the claimed ε"), key=f"{key}_chart")
    for o in outcomes:
        lead = f"{plain(o.title)}: " if len(outcomes) > 2 or not o.broken else ""
        st.markdown(lead + aud.verdict(o))
    st.dataframe(aud.details_table(outcomes), hide_index=True)
    first = outcomes[0]
    st.caption(f"Neighbours: {plain(first.neighbours)}. Events: {plain(first.events)}, fixed "
               "from the noise scale before any sample was drawn; each probability is bounded "
               f"by Clopper–Pearson, Bonferroni-corrected over every event, direction and "
               f"pair, so all bounds hold together at {aud.CONFIDENCE:.0%}. "
               f"{first.result.samples:,} samples per side; took {aud.seconds_text(outcomes)} "
               "(when first run; the result is kept for this configuration and seed).")
    for note in notes:
        st.info(note)


def statistics_audit(frame: pd.DataFrame, dataset_key: str, spec, choice, *,
                     answer_range: tuple[float, float] | None, sum_share: float, seed: int,
                     key: str = "stats_audit") -> None:
    """The panel on Noisy statistics: audits the mechanism(s) of the page's release."""
    try:
        targets = _statistics_targets(frame, dataset_key, spec, choice,
                                      answer_range=answer_range, sum_share=sum_share)
    except (ValueError, TypeError) as exc:
        st.error(f"The claim cannot be checked: {plain(exc, limit=300)}")
        return
    keys = tuple(t.key for t in targets)
    shown, broken = _controls(key, (keys, seed), aud.STATISTICS_SAMPLES)
    if not shown:
        return
    outcomes = list(_statistics_audits(keys, targets, seed=seed, broken=False))
    if broken:
        outcomes += _statistics_audits(keys, targets, seed=seed, broken=True)
    notes = []
    for target, outcome in zip(targets, outcomes, strict=False):
        notes += aud.power_notes(outcome, mechanism=target.mechanism)
    if len(targets) > 1:
        made = f"The {spec.query} is " + (adapter_of(spec.query).made_of
                                            or f"computed from {len(targets)} noisy parts")
        notes.append(f"{made}: each part is audited against its own share of the budget. That "
                     "the shares add up to the whole (sequential composition) and that "
                     "combining them costs nothing (post-processing) are theorems; the audit "
                     "does not test them.")
    _show(outcomes, list(dict.fromkeys(notes)), key=key)


def selection_audit(*, noise: str, measure: str, level: float, sensitivity: float,
                    monotonic: bool, k: int, seed: int, key: str = "sel_audit") -> None:
    """The panel on Selection: audits report noisy max (or top-k) as the page calibrates it."""
    setting = aud.SelectionSetting(noise, measure, float(level), float(sensitivity),
                                   bool(monotonic), int(k))
    shown, broken = _controls(key, (setting, seed), aud.SELECTION_SAMPLES)
    if not shown:
        return
    try:
        outcomes = [_selection_audit(setting, seed=seed, broken=False)]
        if broken:
            outcomes.append(_selection_audit(setting, seed=seed, broken=True))
    except (ValueError, TypeError) as exc:
        st.error(f"The claim cannot be checked: {plain(exc, limit=300)}")
        return
    _show(outcomes, aud.power_notes(outcomes[0], measure=measure, k=k), key=key)

