"""Every query page under a person-id unit (issue 12, item 2): truncation by the engine,
person-level sensitivities, the unit shown next to them, and the noise the page simulates
calibrated to them. Checked against brute force on a small file (every person removed in turn)
and against pandas on the clinic visits."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from dashboard import datasets
from dashboard.analysis import tables
from dashboard.person import PrivacyUnit, contribution
from datasets_synthetic.visits import PERSON_ID, clinic_visits
from tests.conftest import open_app
from tests.pages.test_page_statistics import figures, simulated_spread

VISITS = datasets.BUILTIN_DATASETS[3]
UNITS = "privacy_unit_by_dataset"
# pid 1 has 4 rows, pid 2 one, pid 3 two: with at most 2 rows per person a person changes the
# count by at most 2, and pid 1 or pid 3 does change it by 2
SMALL = pd.DataFrame({"pid": [1, 1, 1, 1, 2, 3, 3],
                      "kind": ["a", "a", "b", "c", "a", "b", "b"],
                      "colour": ["x", "y", "x", "y", "x", "x", "y"],
                      "value": [10.0, 20.0, 30.0, 40.0, 5.0, 1.0, 2.0]})


def text(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info", "warning")
                    for e in getattr(at, kind)).replace("\\", "")


def with_unit(at, unit: PrivacyUnit):
    at.session_state[UNITS] = {at.session_state["dataset"].key: unit}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    return at


@pytest.fixture
def small_file(tmp_path, monkeypatch):
    SMALL.to_parquet(tmp_path / "small.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return "file:small.parquet"


def brute_force_count_sensitivity(frame: pd.DataFrame, max_rows: int) -> int:
    """The largest change of the truncated count when one person is removed (any choice of
    kept rows gives the same count)."""
    kept = frame.groupby("pid").size().clip(upper=max_rows)
    total = int(kept.sum())
    return max(total - int(kept.drop(p).sum()) for p in kept.index)


def test_count_under_the_unit_matches_brute_force(small_file):
    at = open_app("statistics.py", dataset=small_file)
    at.selectbox(key="stats_query").select("count")
    at.run()
    with_unit(at, PrivacyUnit("pid", 2))
    assert brute_force_count_sensitivity(SMALL, 2) == 2
    words = text(at)
    assert "sensitivity **2**" in words and "add or remove one person" in words
    assert "at most 2 rows per person" in words
    assert at.metric[0].value == "5"   # 2 + 1 + 2 rows kept
    # the simulated noise is Laplace of scale Δ/ε = 2: sd √2·2
    spread = simulated_spread(figures(at)["Error"])
    assert spread == pytest.approx(math.sqrt(2) * 2, rel=0.05)


def test_sum_of_visit_costs_is_person_level(app):
    at = open_app("statistics.py", dataset=VISITS)
    at.selectbox(key="stats_query").select("sum")
    at.run()
    at.selectbox(key="stats_column").select("cost")
    at.run()
    # 400 rows per person: nobody has more than 365 visits, so nothing is dropped
    with_unit(at, PrivacyUnit(PERSON_ID, 400))
    frame = clinic_visits(10_000, seed=0)
    assert float(at.metric[0].value.replace(",", "")) == pytest.approx(
        frame["cost"].clip(0, 50_000).sum())
    # one person adds at most 400 rows of at most 50,000 USD
    assert "sensitivity **2e+07**" in text(at) or "sensitivity **20,000,000**" in text(at)


def test_the_one_row_unit_is_unchanged(small_file):
    at = open_app("statistics.py", dataset=small_file)
    at.selectbox(key="stats_query").select("count")
    at.run()
    assert "sensitivity **1**" in text(at) and "add or remove one row" in text(at)
    assert at.metric[0].value == "7"


def test_tables_under_the_unit(small_file):
    at = open_app("tables.py", dataset=small_file)
    with_unit(at, PrivacyUnit("pid", 2, 2))
    # at most 2 rows in each of at most 2 cells: L1 = 4, L2 = 2·√2
    assert "L1 = 4, L2 = 2.828 under add/remove one person" in text(at)
    # every person keeps ≤ 2 cells of ≤ 2 rows: pid 1 (3 cells) keeps 2 rows, pid 2 keeps 1,
    # pid 3 (2 cells of 1 row) keeps 2 — whichever cells the seed picks
    loaded = at.session_state["dataset"]
    for seed in range(5):
        answer = tables.true_table(loaded.relation, "kind", "colour",
                                   row_categories=("a", "b", "c"), column_categories=("x", "y"),
                                   contribution=contribution(PrivacyUnit("pid", 2, 2), seed=seed))
        assert answer.true_value.sum() == 5
        assert (answer.l1_sensitivity, answer.l2_sensitivity) == (4, pytest.approx(2 * 2**0.5))


def test_selection_under_the_unit(small_file):
    at = open_app("selection.py", dataset=small_file)
    with_unit(at, PrivacyUnit("pid", 3))
    assert "Sensitivity 3 under add/remove one person" in text(at)


def test_choose_epsilon_reads_the_unit(small_file):
    at = open_app("choose_epsilon.py", dataset=small_file)
    with_unit(at, PrivacyUnit("pid", 2))
    assert "all rows of one person (same pid, at most 2 kept)" in text(at)


def test_groups_and_quantiles_under_the_unit_on_visits():
    for page in ("groups.py", "quantiles.py"):
        at = open_app(page, dataset=VISITS)
        assert not at.exception and not at.error, (page, [e.value for e in at.error])
        assert f"same {PERSON_ID}" in text(at), page
