"""Every mechanism of the catalogue on every page that offers it: the page renders with no
exception and no error, and draws its chart.

The kinds each page must offer are read off the catalogue (``dashboard.choices``), not listed
here: a kind added to ``dpcore.mechanisms`` is tested on the pages as soon as it is registered.
The last test registers a half-built kind (its class lacks the error maths) and checks that
this machinery reports it, so a half-registered mechanism cannot pass unnoticed.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import replace
from types import MappingProxyType

import pytest

from dashboard import choices
from dpcore.mechanisms import catalogue
from dpcore.mechanisms.laplace import Laplace
from tests.conftest import open_app


def _measure(kind: str, allowed: tuple[str, ...] = tuple(choices.MEASURES)) -> str:
    """The first privacy measure under which a page offers ``kind``."""
    return next(m for m in allowed if kind in choices.offered(m))


def _problems(at, chart_key: str | None = None) -> list[str]:
    """What went wrong on a rendered page: exceptions, errors, a missing chart."""
    found = [f"exception: {e.value}" for e in at.exception]
    found += [f"error: {e.value}" for e in at.error]
    charts = at.get("plotly_chart")
    if not charts:
        found.append("no chart drawn")
    elif chart_key is not None and chart_key not in {c.key for c in charts}:
        found.append(f"chart {chart_key!r} not drawn")
    return found


def render_statistics(kind: str) -> list[str]:
    """Noisy statistics (a count, so every kind fits) with ``kind`` as the mechanism."""
    at = open_app("statistics.py")
    at.selectbox(key="stats_query").select("count").run()
    at.selectbox(key="stats_measure").select(_measure(kind)).run()
    at.selectbox(key="stats_mechanism").select(kind).run()
    problems = _problems(at)
    if not problems and at.selectbox(key="stats_mechanism").value != kind:
        problems.append(f"{kind} not selected")
    return problems


def render_tables(kind: str) -> list[str]:
    """Noisy tables with ``kind`` as the mechanism."""
    at = open_app("tables.py")
    at.selectbox(key="tables_measure").select(_measure(kind)).run()
    at.selectbox(key="tables_mechanism").select(kind).run()
    problems = _problems(at)
    if not problems and at.selectbox(key="tables_mechanism").value != kind:
        problems.append(f"{kind} not selected")
    return problems


def render_choose_epsilon(kind: str) -> list[str]:
    """Choose epsilon on the count (the statistics page not visited): the curves of ``kind``
    alone and the smallest ε meeting the target."""
    at = open_app("choose_epsilon.py")
    at.multiselect(key="choose_mechanisms_statistics").set_value([kind]).run()
    problems = _problems(at, "choose_curve")
    shown = " ".join(str(m.value) for part in ("markdown", "success", "info", "warning")
                     for m in at.get(part))
    if not problems and choices.mechanism_name(kind) not in shown:
        problems.append(f"no sentence on {kind}")
    return problems


def render_plan(kind: str) -> list[str]:
    """The Release plan with one count noised by ``kind`` under each measure the statistics
    page offers it with, added from that page: accounted four ways, no error. A kind a release
    cannot draw is not offered for the plan: the panel must say why and offer another."""
    problems = []
    for measure in (m for m in choices.MEASURES if kind in choices.offered(m)):
        at = open_app("statistics.py")
        at.selectbox(key="stats_query").select("count").run()
        at.selectbox(key="stats_measure").select(measure).run()
        at.selectbox(key="stats_mechanism").select(kind).run()
        if not [b for b in at.button if b.key == "stats_add_to_plan"]:
            said = any("Not releasable as set" in w.value for w in at.warning)
            offered = [b for b in at.button if b.key.startswith("stats_add_alternative")]
            if not (said and offered):
                problems.append(f"{measure}: not offered, and the panel does not say why or "
                                "offer another mechanism")
            continue
        at.button(key="stats_add_to_plan").click().run()
        at.switch_page("app_pages/plan.py").run()
        problems += [f"{measure}: exception: {e.value}" for e in at.exception]
        problems += [f"{measure}: error: {e.value}" for e in at.error]
        if not at.exception and "Privacy-loss distributions" not in {m.label for m in at.metric}:
            problems.append(f"{measure}: no totals")
    return problems


#: Each page, the kinds it must offer (from the catalogue) and how to render it with one.
PAGES = {
    "statistics": (lambda: list(choices.MECHANISMS), render_statistics),
    "tables": (lambda: list(choices.RANGE_FREE), render_tables),
    "choose_epsilon": (lambda: list(choices.MECHANISMS), render_choose_epsilon),
    "plan": (lambda: list(choices.MECHANISMS), render_plan),
}
CASES = [(page, kind) for page, (kinds, _) in PAGES.items() for kind in kinds()]


@pytest.mark.parametrize(("page", "kind"), CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_every_kind_renders_on_every_page_that_offers_it(page, kind):
    assert PAGES[page][1](kind) == []


def test_the_new_kinds_are_offered_where_they_suit():
    """The discrete Gaussian for counts and tables (zCDP and approximate DP), the staircase
    under pure DP; neither for a real-valued query where it does not fit."""
    whole = [k for k, s in catalogue.CATALOGUE.items() if s.integer_only and "zcdp" in s.budgets]
    stepped = [k for k, s in catalogue.CATALOGUE.items() if s.explanation.count("steps")]
    assert whole and stepped
    for kind in whole:
        assert kind in choices.offered("zcdp") and kind in choices.offered("approx")
        assert kind not in choices.offered("zcdp", integer_query=False)
        assert kind in choices.RANGE_FREE
    for kind in stepped:
        assert kind in choices.offered("pure") and kind in choices.RANGE_FREE


# --------------------------------------------------------------------------------------------
# A half-registered kind is caught


class _HalfDone(Laplace):
    """A mechanism whose author forgot its error maths: it samples, but has no accuracy."""

    def accuracy(self, beta, *, true_value=None):
        raise NotImplementedError("accuracy was never written for this mechanism")


@contextlib.contextmanager
def registered(spec):
    """``spec`` added to the catalogue for the duration, wherever the catalogue is read."""
    original = catalogue.CATALOGUE
    patched = MappingProxyType({**original, spec.kind: spec})
    with pytest.MonkeyPatch.context() as mp:
        # every module that imported the catalogue (the pages, the plan that builds their
        # queries, the choices) reads the patched one
        for module in list(sys.modules.values()):
            if getattr(module, "CATALOGUE", None) is original:
                mp.setattr(module, "CATALOGUE", patched)
        mp.setattr(choices, "MECHANISMS", {**choices.MECHANISMS, spec.kind: spec.label})
        mp.setattr(choices, "RANGE_FREE", (*choices.RANGE_FREE, spec.kind))
        yield


def test_a_half_registered_kind_fails_the_page_test():
    broken = replace(catalogue.CATALOGUE[choices.DEFAULT_KIND], kind="half_done",
                     label="Half done", mechanism=_HalfDone)
    with registered(broken):
        assert "half_done" in choices.offered("pure")
        problems = render_statistics("half_done")
    assert problems, "the page test let a mechanism without accuracy pass"
    assert any("accuracy was never written" in p for p in problems), problems
    # and the real catalogue is back
    assert "half_done" not in choices.MECHANISMS
