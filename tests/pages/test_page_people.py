"""The number of people on the Noisy statistics page (issue 36 item 5): offered only under a
person-id unit, its true answer the number of distinct person ids (pandas' ``nunique``), its
sensitivity 1 whatever max rows, and the noise the page simulates calibrated to it."""

from __future__ import annotations

import math

import pytest

from dashboard.person import PrivacyUnit
from tests.conftest import open_app
from tests.pages.test_page_statistics import figures, simulated_spread
from tests.pages.test_person_pages import SMALL, text, with_unit


@pytest.fixture
def small_file(tmp_path, monkeypatch):
    SMALL.to_parquet(tmp_path / "small.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return "file:small.parquet"


def test_offered_only_under_a_person_id_unit(small_file):
    at = open_app("statistics.py", dataset=small_file)
    assert "people" not in at.selectbox(key="stats_query").options
    with_unit(at, PrivacyUnit("pid", 2))
    assert "Number of people" in at.selectbox(key="stats_query").options


@pytest.mark.parametrize("max_rows", [1, 3])
def test_the_number_of_people_has_sensitivity_one_whatever_max_rows(small_file, max_rows):
    at = open_app("statistics.py", dataset=small_file)
    with_unit(at, PrivacyUnit("pid", max_rows))
    at.selectbox(key="stats_query").select("people")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.metric[0].value == str(SMALL["pid"].nunique())   # 3 people, 7 rows
    words = text(at)
    assert "sensitivity **1**" in words and "number of people by at most 1" in words
    # the simulated noise is Laplace of scale Δ/ε = 1 (ε = 1): sd √2
    assert simulated_spread(figures(at)["Error"]) == pytest.approx(math.sqrt(2), rel=0.05)
    # the bounds-cost panel says why it has nothing to break down (not a mean's words)
    assert "max rows never move the number of people" in words
    assert "for a mean or a variance" not in words


def test_every_noise_the_page_offers_is_added_and_released(small_file, tmp_path):
    """Add to plan under each measure and mechanism the page offers for it (the geometric,
    Laplace, Gaussian and discrete Gaussian among them), then ``release.run`` of what was
    added on the same data under the page's unit: released, at sensitivity 1."""
    from engine import Engine, FrameSource
    from engine.duckdb_backend import DuckDBBackend
    from plan import model
    from release import Ledger, run
    from tests.release.test_releasable import mechanism_cases, page_unit, take_added

    at = open_app("statistics.py", dataset=small_file)
    with_unit(at, PrivacyUnit("pid", 2))
    at.selectbox(key="stats_query").select("people").run()
    cases = mechanism_cases(at, "stats")
    kinds = {label.split("/")[1] for label, _ in cases}
    assert {"geometric", "laplace", "gaussian", "discrete_gaussian"} <= kinds
    engine = Engine(DuckDBBackend(threads=1))
    released = set()
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        for label, settings in cases:
            for widget_kind, widget, value in settings:
                getattr(at, widget_kind)(key=widget).set_value(value).run()
            query, reason = take_added(at, "stats")
            if reason is not None:   # no safe sampler: the page said so, added another
                continue
            assert query.query.kind == "people", label
            plan = model.Plan(model.Dataset("people check"), (query,), page_unit(at),
                              model.Accounting("pld", 1e-5))
            release = run(plan, FrameSource(SMALL), ledger=ledger, engine=engine)
            (part,) = release.queries[0].parts
            assert part["sensitivity"] == 1, label
            released.add(label.split("/")[1])
    assert {"geometric", "laplace", "gaussian", "discrete_gaussian"} <= released


@pytest.mark.parametrize("page", ["plan.py", "choose_epsilon.py"])
def test_the_pages_after_it_take_it(small_file, page):
    """Added to the plan on Noisy statistics, the number of people is read by the Plan page and
    by Choose epsilon (the page's saved query) without a problem."""
    at = open_app("statistics.py", dataset=small_file)
    with_unit(at, PrivacyUnit("pid", 2))
    at.selectbox(key="stats_query").select("people").run()
    next(b for b in at.button if b.key == "stats_add_to_plan").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.switch_page(f"app_pages/{page}")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    if page == "choose_epsilon.py":
        assert "number of people" in text(at)
