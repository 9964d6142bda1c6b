"""Binned histograms of a numeric column over public bin edges, on the Groups page (issue 12,
item 5): true counts against numpy, person-level bounds, bad edges."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.analysis import groups as ga
from dashboard.person import PrivacyUnit
from datasets_synthetic.visits import PERSON_ID, clinic_visits
from tests.conftest import open_app

ADULT, VISITS = datasets.BUILTIN_DATASETS[0], datasets.BUILTIN_DATASETS[3]


def text(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info")
                    for e in getattr(at, kind)).replace("\\", "")


def table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "True count" in d.value.columns)


def binned_page(dataset: str, column: str):
    at = open_app("groups.py", dataset=dataset)
    at.selectbox(key="groups_by").select(column + ga.BINNED)
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def test_adult_age_in_its_declared_bands_matches_numpy():
    at = binned_page(ADULT, "age")
    ages = datasets.load_builtin(ADULT).frame["age"].to_numpy(float)
    edges = [17, 25, 35, 45, 55, 65, 90]
    assert at.text_input(key="groups_edges").value == ", ".join(map(str, edges))
    inside, _ = np.histogram(ages, bins=edges)   # numpy: last bin closed, like the page
    expected = [int((ages < 17).sum()), *inside.tolist(), int((ages > 90).sum())]
    got = table(at)
    assert list(got["Group"]) == ["< 17", "[17, 25)", "[25, 35)", "[35, 45)", "[45, 55)",
                                  "[55, 65)", "[65, 90]", "> 90"]
    assert got["True count"].tolist() == expected
    assert "10-year age bands" in text(at)
    # one row = one person: every row in one cell, count sensitivity 1, scale 1/ε = 1
    assert "scale 1 for ε = 1" in text(at) and "L1 = 1," in text(at)


def test_typed_edges_with_clamping_match_numpy_on_clipped_values():
    at = binned_page(ADULT, "hours_per_week")
    at.text_input(key="groups_edges").set_value("20; 40 60")
    at.selectbox(key="groups_outside").select("clamp")
    at.run()
    assert not at.error
    hours = datasets.load_builtin(ADULT).frame["hours_per_week"].to_numpy(float)
    expected, _ = np.histogram(np.clip(hours, 20, 60), bins=[20, 40, 60])
    assert table(at)["True count"].tolist() == expected.tolist()


def test_person_level_bins_use_the_units_sensitivity():
    at = open_app("groups.py", dataset=VISITS)
    key = at.session_state["dataset"].key
    # no patient has more than 365 visits: with 400 rows per person nothing is dropped
    at.session_state["privacy_unit_by_dataset"] = {key: PrivacyUnit(PERSON_ID, 400)}
    at.selectbox(key="groups_by").select("cost" + ga.BINNED)
    at.run()
    assert not at.exception and not at.error
    cost = clinic_visits(10_000, seed=0)["cost"].to_numpy(float)
    edges = [0, 50, 100, 200, 500, 1000, 5000, 50000]
    inside, _ = np.histogram(cost, bins=edges)
    assert table(at)["True count"].tolist() == [0, *inside.tolist(), 0]
    # all 400 rows of a person may fall in one bin: L1 = 400, Laplace scale 400/ε
    assert "L1 = 400" in text(at) and "scale 400 for ε = 1" in text(at)


@pytest.mark.parametrize("typed", ["10, 5", "a, b", "7", "1, inf"])
def test_bad_edges_say_so_and_keep_the_controls(typed):
    at = binned_page(ADULT, "age")
    at.text_input(key="groups_edges").set_value(typed)
    at.run()
    assert not at.exception
    assert any("bin edges must" in e.value for e in at.error)
    assert at.text_input(key="groups_edges").value == typed
    assert at.selectbox(key="groups_by").value == "age" + ga.BINNED


def test_declared_bins_are_validated():
    with pytest.raises(ValueError, match="bins"):
        datasets.ColumnDomain("numeric", 0, 1, bins=(0.5, 0.2))
    with pytest.raises(ValueError, match="bins"):
        datasets.ColumnDomain("categorical", categories=("a",), bins=(0.0, 1.0))
