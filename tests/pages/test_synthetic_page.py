"""The Synthetic data page (AppTest): generate on Adult, the rows and utility tables show, the
rows download as a simulation; a column over the category limit is refused by name."""

from __future__ import annotations

import io
import json

import numpy as np
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


def _fake_generate(fail_above: float = float("inf")):
    """generate() without OpenDP (fast): rows drawn from the given cells, the same every call;
    a budget above ``fail_above`` fails as OpenDP would."""
    def generate(cells, shape, *, budget, rows, **_):
        if budget > fail_above:
            raise sy.SynthesisError("OpenDP refused: planted failure")
        p = cells.counts / cells.counts.sum()
        return cells.codes[np.random.default_rng(0).choice(len(p), rows, p=p)]
    return generate


def _generated(monkeypatch, fail_above: float = float("inf")):
    monkeypatch.setattr(sy, "generate", _fake_generate(fail_above))
    at = open_app("synthetic.py", dataset=ADULT)
    at.multiselect(key="synthetic_columns").set_value(["sex", "race", "income"])
    at.number_input(key="synthetic_rows").set_value(200)
    at.run()
    at.button(key="synthetic_generate").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_classifier_and_the_sweep_draw_curves_against_the_budget(monkeypatch):
    at = _generated(monkeypatch)
    texts = " ".join(m.value for m in at.markdown)
    assert "A classifier predicting income" in texts and "real rows held out" in texts
    # a binomial draw per row: about 30 %, not 30 % of each cell exactly
    assert "each real row held out with probability 30%" in texts
    assert any("optimistic" in c.value for c in at.caption)
    assert at.selectbox(key="synthetic_target").value == "income"
    assert any("Not private" in w.value for w in at.warning)
    at.number_input(key="synthetic_sweep_generations").set_value(2)
    at.run()
    assert "**8.6 in all**" in " ".join(m.value for m in at.markdown)   # 2 × (0.3 + 1 + 3)
    at.button(key="synthetic_sweep_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    charts = {c.proto.id: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    specs = [s for s in charts.values() if "each generation" in json.dumps(s)]
    assert len(specs) == 3            # TV, the 3-way workload, accuracy
    for spec in specs:
        medians = [t for t in spec["data"] if t["name"].endswith("(median)")]
        assert medians and all(t["x"] == [0.3, 1.0, 3.0] for t in medians)
        points = [t for t in spec["data"] if t["name"].endswith("each generation")]
        assert all(len(t["y"]) == 6 for t in points)       # 3 budgets × 2 generations
    assert "marginals measured directly (Laplace) (median)" in [
        t["name"] for t in specs[1]["data"]]
    accuracy = specs[-1]
    names = [t["name"] for t in accuracy["data"]]
    assert "trained on the real training rows" in names and "always the commonest value" in names
    assert "log" == accuracy["layout"]["xaxis"]["type"]
    # the sweep holds out the same real rows as the single figure above
    real = next(t for t in accuracy["data"] if t["name"] == "trained on the real training rows")
    assert f"real rows **{real['y'][0]:.3f}**" in texts
    # kept in session: a rerun shows the curves without running again
    at.run()
    assert sum("each generation" in c.proto.spec for c in at.get("plotly_chart")) == 3


def test_a_failed_generation_in_the_sweep_shows_an_error_and_the_page_stays(monkeypatch):
    at = _generated(monkeypatch, fail_above=2.0)      # the Generate above uses ε = 1
    at.button(key="synthetic_sweep_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert "The sweep stopped: Generation 1 of 3 at ε \\= 3 failed" in errors
    assert "planted failure" in errors
    assert len(at.dataframe) >= 2              # the rows and the TV table are still shown
    assert not any("each generation" in c.proto.spec for c in at.get("plotly_chart"))
    at.multiselect(key="synthetic_sweep_budgets").set_value(["0.3", "1"])
    at.button(key="synthetic_sweep_run").click().run()
    assert not at.exception and not at.error
    assert sum("each generation" in c.proto.spec for c in at.get("plotly_chart")) == 3


@pytest.mark.slow     # two model fits by OpenDP
def test_the_sweep_draws_curves_from_real_fits(monkeypatch):
    monkeypatch.setattr(sy, "DEFAULT_ITERS", 20)
    monkeypatch.setattr(sy, "SWEEP_ITERS", 20)
    at = open_app("synthetic.py", dataset=ADULT, timeout=600)
    at.multiselect(key="synthetic_columns").set_value(["sex", "income"])
    at.radio(key="synthetic_algorithm").set_value("MST")
    at.number_input(key="synthetic_rows").set_value(200)
    at.run()
    at.button(key="synthetic_generate").click().run()
    at.multiselect(key="synthetic_sweep_budgets").set_value(["1"])
    at.number_input(key="synthetic_sweep_generations").set_value(1)
    at.run()
    at.button(key="synthetic_sweep_run").click().run()
    assert not at.exception and not at.error, [e.value for e in (*at.exception, *at.error)]
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")
             if "each generation" in c.proto.spec]
    assert len(specs) == 2            # TV and accuracy: no 3-way workload with two columns
    tv = next(t for t in specs[0]["data"] if t["name"] == "1-way marginals (median)")
    assert tv["x"] == [1.0] and 0 <= tv["y"][0] <= 1
    accuracy = next(t for t in specs[1]["data"] if t["name"].endswith("(median)"))
    assert 0 <= accuracy["y"][0] <= 1


def test_a_changed_declared_schema_asks_to_generate_again(monkeypatch):
    """The rows generated for a column's old categories are not shown against its new ones
    (the codes would index past the new labels): the page asks to Generate again."""
    from dataclasses import replace

    from dashboard import state
    from dashboard.data.schema import Schema

    at = _generated(monkeypatch)
    loaded = at.session_state[state.DATASET]
    race = loaded.domains["race"]
    fewer = replace(race, categories=race.categories[:2])
    at.session_state[state.SCHEMAS] = {loaded.key: Schema({**loaded.domains, "race": fewer})}
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("Generate" in i.value for i in at.info)
