"""The Synthetic data page (AppTest): generate on Adult, the rows and utility tables show, the
rows download as a simulation; a column over the category limit is refused by name."""

from __future__ import annotations

import io

import pandas as pd
import pytest

from dashboard import exports
from dashboard.analysis import synthetic as sy
from tests.conftest import open_app
from tests.pages.test_downloads import downloaded, served  # noqa: F401 (a fixture)

ADULT = "Adult (UCI census income)"


@pytest.mark.slow     # a model fit: minutes on a loaded machine
def test_generate_shows_rows_utility_and_downloads(served, monkeypatch):  # noqa: F811
    monkeypatch.setattr(sy, "DEFAULT_ITERS", 50)
    at = open_app("synthetic.py", dataset=ADULT, timeout=600)
    at.multiselect(key="synthetic_columns").set_value(["age", "workclass", "sex", "income"])
    at.radio(key="synthetic_marginals").set_value("one-way")
    at.number_input(key="synthetic_rows").set_value(500)
    at.run()
    assert not at.exception
    at.button(key="synthetic_generate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    rows = at.dataframe[0].value
    assert list(rows.columns) == ["age", "workclass", "sex", "income"]
    assert len(rows) == 20
    assert set(rows["sex"]) <= {"Female", "Male", sy.OTHER}
    tv = at.dataframe[1].value
    assert len(tv) == 4 + 6 and tv["TV distance"].between(0, 1).all()
    assert any("3-way counting queries" in m.value for m in at.markdown)
    csv_data, params, (csv_name, json_name) = downloaded(at, served, "synthetic_download")
    assert csv_name.startswith("simulated-") and params["simulation"]["private_release"] is False
    frame = pd.read_csv(io.BytesIO(csv_data))
    assert len(frame) == 500 and list(frame.columns[:4]) == ["age", "workclass", "sex", "income"]
    # OpenDP draws the noise afresh: no seed is claimed to remove it, none is written
    assert "seed" not in params and "same noise" not in params["simulation"]["warning"]
    assert set(frame["Simulation"]) == {exports.UNSEEDED_CELL}
    captions = " ".join(c.value for c in at.caption)
    assert "Not a release" in captions and "sidebar's seed plays no part" in captions
    assert "anyone with the seed" not in captions


def test_a_column_with_too_many_categories_is_refused(monkeypatch):
    monkeypatch.setattr(sy, "MAX_SYNTHETIC_CATEGORIES", 10)
    at = open_app("synthetic.py", dataset=ADULT)
    at.multiselect(key="synthetic_columns").set_value(["sex", "education"])
    at.run()
    assert not at.exception
    assert any("Column 'education' has 16 categories" in e.value for e in at.error)
