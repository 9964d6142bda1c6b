"""Eight browser sessions working the statistics and selection pages at once, on one server.

Each session moves its own ε (values no other session ever uses), switches to
geometric noise, then changes the selection page's noise. Every rerun is timed from the action
to the finished run; each page must show no exception, its chart, and its own settings only.
"""

from __future__ import annotations

import asyncio
import math
import re
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from google.protobuf.message import DecodeError
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from dashboard.controls import EPSILON_GRID
from tests.e2e.conftest import CHROMIUM_ARGS, ROOT, SCREENSHOTS, chromium_path

# alone: its timeouts are for eight sessions on one server, not beside another test process
pytestmark = [pytest.mark.e2e, pytest.mark.alone]

SESSIONS = 8
MOVES = 3                       # ε steps to the right per session
GRID_GAP = MOVES + 1            # session i starts at grid index 1 + GRID_GAP·i: never shared
STEP_TIMEOUT_MS = 90_000        # one interaction, however loaded the machine
CONTENT_TIMEOUT_MS = 30_000     # the page showing a run's result once it finished
TOTAL_TIMEOUT_S = 170.0         # the whole scenario
RESULTS = ROOT / "bench" / "results" / "load.txt"

SENTENCE = re.compile(r"In each category, 95% of releases are within ±([\d,.]+) of the true "
                      r"count \((Laplace|Geometric), closed form\)")
# the Selection page starts on exponential noise: each session moves to another one
NOISE_OPTIONS = {"laplace": "Report noisy max (Laplace noise)",
                 "gumbel": "Exponential mechanism (Gumbel noise)"}

IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def finished_runs(payload: bytes | str) -> int:
    """1 if a websocket frame from the server says a script run finished normally, else 0.

    Counted from the server's messages, not the page: under load the page may render
    "rerun requested" → "not running" in one go and never show the run in between.
    """
    if isinstance(payload, str):
        return 0
    try:
        msg = ForwardMsg.FromString(payload)
    except DecodeError:
        return 0
    return int(msg.WhichOneof("type") == "script_finished"
               and msg.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY)


def laplace_alpha(epsilon: float) -> float:
    """95% bound of Laplace noise for a count (sensitivity 1): ln(20)/ε."""
    return math.log(20) / epsilon


def geometric_alpha(epsilon: float) -> int:
    """Smallest integer a with P(|X| > a) ≤ 5% for two-sided geometric noise, r = e^−ε.

    P(|X| > a) = 2·r^(a+1)/(1 + r) (a geometric tail on each side).
    """
    r = math.exp(-epsilon)
    a = 0
    while 2 * r ** (a + 1) / (1 + r) > 0.05:
        a += 1
    return a


def shown_number(text: str) -> float:
    return float(text.replace(",", ""))


@dataclass
class Session:
    """One browser session's plan and what it measured."""

    index: int
    noise: str
    start: int                                    # index into EPSILON_GRID
    first_load: float = math.nan
    reruns: dict[str, float] = field(default_factory=dict)
    p_best: str = ""                              # exact P(best picked) the selection showed
    runs: int = 0                                 # finished script runs, from the websocket

    def listen(self, websocket) -> None:
        def count(payload: bytes | str) -> None:
            self.runs += finished_runs(payload)

        websocket.on("framereceived", count)

    @property
    def epsilons(self) -> list[float]:
        return [EPSILON_GRID[self.start + m] for m in range(MOVES + 1)]


def plan(count: int) -> list[Session]:
    """``count`` sessions; neighbours differ in noise, and no two ever share an ε."""
    sessions = [Session(i, noise=("laplace", "gumbel")[i % 2], start=1 + GRID_GAP * i)
                for i in range(count)]
    assert sessions[-1].start + MOVES < len(EPSILON_GRID), "too many sessions for the ε grid"
    return sessions


async def until_run_finished(page, session: Session, before: int) -> None:
    """Wait for one more finished run than ``before``, then for the page to be idle."""
    deadline = time.monotonic() + STEP_TIMEOUT_MS / 1000
    while session.runs <= before:
        if time.monotonic() > deadline:
            await page.screenshot(path=str(SCREENSHOTS / f"load_timeout_{session.index}.png"))
            raise AssertionError(f"session {session.index}: no run finished after the action "
                                 f"({before} before), url {page.url}")
        await asyncio.sleep(0.01)
    await page.wait_for_selector(IDLE, timeout=STEP_TIMEOUT_MS)


async def timed_run(page, session: Session, action) -> float:
    """Seconds from ``action`` until the script run it triggered has finished."""
    before = session.runs
    start = time.perf_counter()
    await action()
    await until_run_finished(page, session, before)
    return time.perf_counter() - start


async def check_page(page, chart_key: str, where: str) -> None:
    await page.locator(f".st-key-{chart_key} .main-svg").first.wait_for(timeout=STEP_TIMEOUT_MS)
    errors = page.locator("[data-testid='stException']")
    assert await errors.count() == 0, f"{where}: {await errors.first.inner_text()}"


async def shows_text(page, text: str, where: str) -> str:
    """The main area's text once ``text`` is in it (the DOM may trail the finished run)."""
    from playwright.async_api import TimeoutError as PlaywrightTimeout

    try:
        await page.locator("[data-testid='stMain']", has_text=text).wait_for(
            timeout=CONTENT_TIMEOUT_MS)
    except PlaywrightTimeout:
        shown = await page.locator("[data-testid='stMain']").inner_text()
        raise AssertionError(f"{where}: {text!r} is not shown; the page says:\n"
                             f"{shown[:1500]}") from None
    return await page.locator("[data-testid='stMain']").inner_text()


def statistics_shown(main: str, epsilon: float, mechanism: str) -> tuple[bool, str]:
    """Does the page's text show this session's ε and the closed-form bound that goes with it?"""
    label = f"{mechanism}, ε = {epsilon:g} (pure DP)"
    if label not in main:
        return False, f"no label {label!r}"
    found = SENTENCE.search(main)
    if found is None or found[2] != mechanism:
        return False, f"no 95% bound for {mechanism}"
    expected = laplace_alpha(epsilon) if mechanism == "Laplace" else geometric_alpha(epsilon)
    if shown_number(found[1]) != pytest.approx(expected, rel=1e-3):
        return False, f"bound ±{found[1]}, expected ±{expected:.4g} for ε = {epsilon:g}"
    return True, ""


async def check_statistics(page, epsilon: float, mechanism: str, where: str) -> None:
    """The slider, the label and the closed-form bound all belong to this session's ε."""
    await check_page(page, "stats_errors", where)
    deadline = time.monotonic() + CONTENT_TIMEOUT_MS / 1000
    while True:   # the DOM may trail the finished run by a moment
        main = await page.locator("[data-testid='stMain']").inner_text()
        ok, why = statistics_shown(main, epsilon, mechanism)
        if ok or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert ok, f"{where}: {why}; the page says:\n{main[:1500]}"
    thumb = page.locator(".st-key-stats_epsilon [data-testid='stSliderThumbValue']")
    assert shown_number(await thumb.inner_text()) == epsilon, where


async def pick_option(page, session: Session, key: str, typed: str, option: str) -> float:
    combo = page.locator(f".st-key-{key} [role='combobox']")
    await combo.click()
    await combo.fill(typed)
    choice = page.get_by_role("option", name=option, exact=True)
    return await timed_run(page, session, choice.click)


async def work(browser, url: str, session: Session) -> None:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await context.new_page()
        page.set_default_timeout(STEP_TIMEOUT_MS)
        page.on("websocket", session.listen)
        name = f"session {session.index}"
        eps = session.epsilons

        start = time.perf_counter()
        await page.goto(f"{url}/statistics?stats_epsilon={eps[0]:g}")
        await until_run_finished(page, session, 0)
        session.first_load = time.perf_counter() - start
        await check_statistics(page, eps[0], "Laplace", f"{name}, opened")

        thumb = page.locator(".st-key-stats_epsilon input[type='range']")
        for move in range(1, MOVES + 1):
            await thumb.focus()
            session.reruns[f"epsilon {move}"] = await timed_run(
                page, session, lambda: thumb.press("ArrowRight"))
            await check_statistics(page, eps[move], "Laplace", f"{name}, move {move}")

        session.reruns["mechanism"] = await pick_option(
            page, session, "stats_mechanism", "Geometric", "Geometric (discrete Laplace)")
        await check_statistics(page, eps[-1], "Geometric", f"{name}, geometric")
        assert f"stats_epsilon={eps[-1]:g}" in page.url and "geometric" in page.url, page.url

        link = page.locator("[data-testid='stSidebarNav'] a", has_text="Selection").first
        session.reruns["to selection"] = await timed_run(page, session, link.click)
        await shows_text(page, "Exponential noise", f"{name}, selection")
        await check_page(page, "sel_chart", f"{name}, selection")
        noise = session.noise.capitalize()
        session.reruns["noise"] = await pick_option(
            page, session, "sel_noise", noise, NOISE_OPTIONS[session.noise])
        main = await shows_text(page, f"{noise} noise", f"{name}, {session.noise}")
        await check_page(page, "sel_chart", f"{name}, {session.noise}")
        # (the other noise may be named: Gumbel under pure DP offers exponential noise as
        # the releasable choice; what this session chose is its URL's and its chart's)
        assert main
        assert f"sel_noise={session.noise}" in page.url, page.url
        metric = page.locator("[data-testid='stMetric']", has_text="P(best picked), exact")
        session.p_best = await metric.locator("[data-testid='stMetricValue']").inner_text()
    finally:
        await context.close()


async def scenario(url: str, sessions: list[Session]) -> None:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
        try:
            await asyncio.wait_for(
                asyncio.gather(*(work(browser, url, s) for s in sessions)), TOTAL_TIMEOUT_S)
        finally:
            await browser.close()


def run_in_thread(url: str, sessions: list[Session]) -> None:
    """Drive the async API in its own thread: the sync `browser` fixture owns the main one."""
    failure: list[BaseException] = []

    def target() -> None:
        try:
            asyncio.run(scenario(url, sessions))
        except BaseException as exc:  # noqa: BLE001 — re-raised in the test's thread
            failure.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(TOTAL_TIMEOUT_S + 30)
    assert not thread.is_alive(), "the sessions did not finish in time"
    if failure:
        raise failure[0]


def summary(sessions: list[Session], wall: float) -> str:
    reruns = [t for s in sessions for t in s.reruns.values()]
    loads = [s.first_load for s in sessions]
    worst = max((t, s.index, step) for s in sessions for step, t in s.reruns.items())
    by_step = {step: statistics.median(s.reruns[step] for s in sessions)
               for step in sessions[0].reruns}
    lines = [
        f"{len(sessions)} concurrent sessions, {len(reruns)} reruns, {wall:.1f} s wall time",
        f"rerun after an action: median {statistics.median(reruns):.2f} s, worst {worst[0]:.2f} s "
        f"(session {worst[1]}, {worst[2]})",
        f"first load of the statistics page: median {statistics.median(loads):.2f} s, "
        f"worst {max(loads):.2f} s",
        "median per step: " + ", ".join(f"{k} {v:.2f} s" for k, v in by_step.items()),
    ]
    return "\n".join(lines)


def test_eight_sessions_at_once(server_url, record_property):
    chromium_path()   # skip (or fail under CI) before starting anything without a browser
    sessions = plan(SESSIONS)
    start = time.perf_counter()
    run_in_thread(server_url, sessions)
    wall = time.perf_counter() - start

    # Every interaction of every session was timed; same settings give the same exact value.
    assert all(len(s.reruns) == MOVES + 3 for s in sessions)
    # One finished run per action (and one for opening the page): none was lost or repeated,
    # so each timing covers exactly the run its action started.
    assert [s.runs for s in sessions] == [MOVES + 4] * SESSIONS
    for noise in NOISE_OPTIONS:
        shown = {s.p_best for s in sessions if s.noise == noise}
        assert len(shown) == 1, f"{noise}: sessions with the same settings disagree: {shown}"
    text = summary(sessions, wall)
    print("\n[load] " + text.replace("\n", "\n[load] "))
    record_property("load_summary", text)
    Path(RESULTS).parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text + "\n", encoding="utf-8")
