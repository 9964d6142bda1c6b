"""Shared widgets: privacy measure, mechanism and epsilon/delta/rho pickers, trials, seed.

Every widget has a stable key, remembers its value for the session and mirrors it in the URL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import streamlit as st

from dashboard import choices, exports, state
from dashboard.analysis.statistics import MAX_RELEASE
from dashboard.choices import (
    DELTA_OPTIONS,
    EPSILON_GRID,
    MEASURES,
    MECHANISMS,
    RHO_GRID,
    TRIAL_OPTIONS,
    PrivacyChoice,
    fmt_number,
    measure_notes,
    offered,
)

__all__ = ["DELTA_OPTIONS", "EPSILON_GRID", "MEASURES", "MECHANISMS", "RHO_GRID",
           "TRIAL_OPTIONS", "PrivacyChoice", "fmt_number"]


def select(label: str, options: Sequence[Any], *, key: str, default: Any = None,
           format_func: Any = str, help: str | None = None, container: Any = st,
           in_url: bool = True) -> Any:
    """A selectbox that remembers its value and mirrors it in the URL.

    ``in_url=False`` keeps the value for the session only: an uploaded file's column names
    stay out of the URL, and so out of the browser's history and shared links.
    """
    options = list(options)
    default = options[0] if default is None or default not in options else default
    sample = options[0]
    parse = type(sample) if isinstance(sample, (int, float)) and not isinstance(sample, bool) \
        else None
    state.remembered(key, default, parse=parse, options=options)
    value = container.selectbox(label, options, key=key, format_func=format_func, help=help)
    if in_url:
        state.remember(key)
    else:
        state.remember_in_session(key)
    return value


def text(label: str, *, key: str, default: str, help: str | None = None,
         container: Any = st) -> str:
    """A text input that remembers its value and mirrors it in the URL."""
    state.remembered(key, default)
    value = container.text_input(label, key=key, help=help)
    state.remember(key)
    return value


def parse_list(raw: str) -> list[str]:
    """A list mirrored in the URL as "['laplace', 'gaussian']" (never evaluated as code)."""
    parts = (p.strip().strip("'\"") for p in raw.strip().strip("[]").split(","))
    return [p for p in parts if p]


def pick_list(value: object, options: Sequence[str], default: Sequence[str]) -> list[str]:
    """A remembered multiselect value kept to the options offered now."""
    kept = [v for v in value if v in options] if isinstance(value, (list, tuple)) else []
    return kept or [d for d in default if d in options] or list(options[:1])


def multiselect(label: str, options: Sequence[str], *, key: str, default: Sequence[str],
                format_func: Any = str, container: Any = st, in_url: bool = True,
                help: str | None = None) -> list[str]:
    """A multiselect that remembers its choices (mirrored in the URL as a list), kept to the
    options offered now. ``in_url=False`` keeps them for the session only (an upload's column
    names)."""
    state.remembered(key, list(default), parse=parse_list)
    st.session_state[key] = pick_list(st.session_state[key], options, default)
    value = container.multiselect(label, list(options), key=key, format_func=format_func,
                                  help=help)
    if in_url:
        state.remember(key)
    else:
        state.remember_in_session(key)
    return value


def radio(label: str, options: Sequence[Any], *, key: str, default: Any = None,
          format_func: Any = str, container: Any = st, horizontal: bool = False) -> Any:
    """Radio buttons that remember their choice and mirror it in the URL."""
    options = list(options)
    default = options[0] if default is None or default not in options else default
    state.remembered(key, default, options=options)
    value = container.radio(label, options, key=key, format_func=format_func,
                            horizontal=horizontal)
    state.remember(key)
    return value


def log_slider(label: str, grid: Sequence[float], *, key: str, default: float,
               help: str | None = None, container: Any = st) -> float:
    """A slider over a log-spaced grid (moves in equal ratios)."""
    state.remembered(key, default, parse=float, options=grid)
    value = container.select_slider(label, options=list(grid), key=key, format_func=fmt_number,
                                    help=help)
    state.remember(key)
    return float(value)


def toggle(label: str, *, key: str, default: bool = False, help: str | None = None,
           container: Any = st) -> bool:
    state.remembered(key, default, parse=lambda s: {"True": True, "False": False}[s],
                     options=(True, False))
    value = container.toggle(label, key=key, help=help)
    state.remember(key)
    return bool(value)


def number(label: str, *, key: str, default: float, min_value: float, max_value: float,
           step: float | None = None, help: str | None = None, container: Any = st,
           in_url: bool = True, format: str | None = None) -> float:
    """A number input with hard limits that remembers its value.

    ``in_url=False`` keeps the value for the session only: a number suggested from an
    upload's values (a bound, an answer range) stays out of the URL. ``format`` is the box's
    printf format (Streamlit shows a float with two decimals by default).
    """
    is_int = isinstance(default, int) and not isinstance(default, bool)
    cast = int if is_int else float

    def parse(raw: str) -> Any:
        value = cast(float(raw)) if is_int else float(raw)
        return value if min_value <= value <= max_value else None

    state.remembered(key, default, parse=parse)
    value = container.number_input(label, min_value=min_value, max_value=max_value, step=step,
                                   key=key, help=help, format=format)
    if in_url:
        state.remember(key)
    else:
        state.remember_in_session(key)
    return value


def _in_range(value: object, low: float, high: float) -> bool:
    """A real number (not a bool) in [low, high]; NaN fails the comparison."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and low <= value <= high)


def _typed_level(key: str, low: float, high: float, symbol: str) -> None:
    """The exact-value box changed: take its value, or keep the last valid one and say why."""
    ss = st.session_state
    typed = ss.get(f"{key}_exact")
    if not _in_range(typed, low, high):
        shown = "nothing" if typed is None else f"{typed:g}"
        ss[f"{key}_error"] = (f"{symbol} must be between {fmt_number(low)} and "
                              f"{fmt_number(high)}; {shown} is outside that range, so "
                              f"{symbol} stays {fmt_number(ss.get(key, low))}. Type a value "
                              "in the range.")
        return
    ss.pop(f"{key}_error", None)
    ss[key] = float(typed)


def _slid_level(key: str) -> None:
    st.session_state.pop(f"{key}_error", None)


def exact_slider(label: str, grid: Sequence[float], *, key: str, default: float,
                 symbol: str = "ε", help: str | None = None, container: Any = st) -> float:
    """A log slider over ``grid`` with a box beside it for an exact value in its range.

    The value lives under ``key`` (the slider's key), is remembered for the session and
    mirrored in the URL; a typed value off the grid joins the slider's stops. The box
    (``{key}_exact``) shows the value; a typed value outside [grid[0], grid[-1]] is refused
    with a message and the last valid value is kept (the box shows the refused value while
    the message stands).
    """
    ss = st.session_state
    low, high = float(grid[0]), float(grid[-1])
    default = min(max(float(default), low), high)

    def parse(raw: str) -> float | None:
        value = float(raw)
        return value if _in_range(value, low, high) else None

    state.remembered(key, default, parse=parse)
    if not _in_range(ss[key], low, high):
        ss[key] = default
    value = float(ss[key])
    if not ss.get(f"{key}_error") or f"{key}_exact" not in ss:
        # the box shows the value in force (set before it is drawn); after a refusal it keeps
        # the refused value beside the message, so typing the value in force is a change that
        # takes it and clears the message (Streamlit calls no on_change for an equal value)
        ss[f"{key}_exact"] = value
    slider, box = container.columns([3, 1], vertical_alignment="bottom")
    slider.select_slider(label, options=sorted({*map(float, grid), value}), key=key,
                         format_func=fmt_number, help=help, on_change=_slid_level, args=(key,))
    box.number_input(f"Exact {symbol}", key=f"{key}_exact", format="%g",
                     step=10.0 ** (math.floor(math.log10(value)) - 1),
                     on_change=_typed_level, args=(key, low, high, symbol),
                     help=f"Type any {symbol} from {fmt_number(low)} to {fmt_number(high)}, "
                          "e.g. the smallest ε found on the Choose epsilon page.")
    if ss.get(f"{key}_error"):
        container.error(ss[f"{key}_error"], icon=":material/error:")
    state.remember(key)
    return float(ss[key])


def set_for_another_page(values: dict[str, Any]) -> None:
    """Set controls of another page before switching to it: their remembered values, which
    ``state.remembered`` reads when that page draws them (widget state does not survive a
    page change in the browser, and any left over is dropped here, with a stale message)."""
    ss = st.session_state
    ss.setdefault(state.SAVED, {})
    for key, value in values.items():
        ss[state.SAVED][key] = value
        for stale in (key, f"{key}_exact", f"{key}_error"):
            ss.pop(stale, None)


def epsilon_slider(*, key: str, default: float = 1.0, label: str = "ε (epsilon)",
                   container: Any = st) -> float:
    return exact_slider(label, EPSILON_GRID, key=key, default=default, container=container,
                        help="Privacy loss bound: smaller is more private and noisier. The "
                             "slider is on a log scale; type an exact value in the box.")


def privacy_controls(prefix: str, *, integer_query: bool = True, bounds_declared: bool = True,
                     allowed: Sequence[str] | None = None, container: Any = st,
                     default_mechanism: str = choices.DEFAULT_KIND) -> PrivacyChoice:
    """Measure, mechanism and the parameters the measure needs; only valid pairs are offered."""
    measure = select("Privacy measure", list(MEASURES), key=f"{prefix}_measure",
                     format_func=MEASURES.get, container=container,
                     help="Pure DP: ε only. Approximate DP: ε and a small failure "
                          "probability δ. zCDP: one parameter ρ (Gaussian noise, on whole "
                          "numbers too).")
    options = offered(measure, integer_query=integer_query, bounds_declared=bounds_declared,
                      allowed=allowed)
    mechanism = select("Mechanism", options, key=f"{prefix}_mechanism",
                       default=default_mechanism, format_func=choices.label,
                       container=container)
    notes = measure_notes(measure, integer_query=integer_query)
    if notes:
        container.caption(notes)
    if measure == "zcdp":
        rho = exact_slider("ρ (rho)", RHO_GRID, key=f"{prefix}_rho", default=0.5, symbol="ρ",
                           container=container,
                           help="zCDP parameter; pure ε-DP implies ρ = ε²/2.")
        return PrivacyChoice(measure, mechanism, rho=rho)
    epsilon = epsilon_slider(key=f"{prefix}_epsilon", container=container)
    delta = None
    if measure == "approx":
        delta = select("δ (delta)", DELTA_OPTIONS, key=f"{prefix}_delta", default=1e-6,
                       format_func=fmt_number, container=container,
                       help="Probability the ε guarantee may fail; keep it far below "
                            "1 / number of people.")
    return PrivacyChoice(measure, mechanism, epsilon=epsilon, delta=delta)


def trials_picker(*, key: str, default: int = 10_000, container: Any = st) -> int:
    return select("Simulated releases", TRIAL_OPTIONS, key=key, default=default,
                  format_func=lambda n: f"{n:,}", container=container,
                  help="How many noisy releases to simulate for the error charts.")


def downloads(values: Any, parameters: dict[str, Any], *, key: str, file_stem: str,
              csv_label: str = "Download noisy values (CSV)", container: Any = st,
              unseeded: str | None = None) -> None:
    """Two download buttons: the noisy values as spreadsheet-safe CSV, the parameters as JSON.

    ``parameters`` should name the dataset, query, mechanism, measure, ε/δ/ρ, sensitivity,
    scale and seed, so a download can be reproduced. When they hold a simulated release
    (``exports.SIMULATION``), the file names start with "simulated-", the CSV ends with a
    column saying so in every row, and a warning next to the buttons says that anyone with
    the seed can remove the noise. ``unseeded`` is what to say instead when the noise does not
    come from the sidebar's seed (then the seed is not written, and each row's note says so).
    """
    simulated = exports.SIMULATION in parameters
    if simulated:
        values = exports.with_simulation_column(
            values, exports.SIMULATION_CELL if unseeded is None else exports.UNSEEDED_CELL)
        file_stem = exports.SIMULATED_PREFIX + file_stem
    seed = {} if unseeded is not None else {"seed": state.seed()}
    left, right = container.columns(2)
    left.download_button(csv_label, exports.csv_bytes(values),
                         file_name=f"{file_stem}.csv", mime="text/csv", key=f"{key}_csv",
                         on_click="ignore")
    right.download_button("Download parameters (JSON)",
                          exports.parameters_json({**parameters, **seed}),
                          file_name=f"{file_stem}-parameters.json", mime="application/json",
                          key=f"{key}_json", on_click="ignore")
    if simulated:
        container.caption(exports.SIMULATION_WARNING if unseeded is None else unseeded)


def release_picker(*, key: str, seed: int, container: Any = st) -> int:
    """Which simulated release of the seed the page shows, and a "Draw another release" button.

    Release n of a seed is always the same noisy answer (its own random stream), so it is
    mirrored in the URL like any setting; the simulation of many releases does not depend on
    it. The number is a plain session value, not a widget's, so no run can reset it.
    """
    def parse(raw: str) -> int | None:
        value = int(raw)
        return value if 1 <= value <= MAX_RELEASE else None

    def step(by: int | None) -> None:
        ss = st.session_state
        ss[key] = 1 if by is None else min(int(ss[key]) + by, MAX_RELEASE)

    state.remembered(key, 1, parse=parse)
    release = int(st.session_state[key])
    container.button("Draw another release", key=f"{key}_next", on_click=step, args=(1,),
                     icon=":material/casino:", help="A new random release at the same "
                     "settings, for teaching: the noise changes from release to release.")
    container.caption(f"Showing **release {release:,} of seed {seed}** (always the same noisy "
                      "values). The charts of many simulated releases do not change.")
    if release > 1:
        container.button("Back to release 1", key=f"{key}_first", on_click=step,
                         args=(None,), type="tertiary")
    state.remember(key)
    return release
