"""Every page on files of a temporary EPSILON_LAB_DATA folder (CSV, CSV.gz, Parquet, a
Parquet folder): the same true answers as the pandas reference (tests/queries_reference.py on
the frame the files were written from), public declarations from NAME.schema.json, a bad file that
says so and keeps the page usable, and no way out of the folder.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from tests import queries_reference as reference
from tests.conftest import PAGE_FILES, open_app
from tests.pages.test_page_statistics import figures, values

REGIONS = ("north", "south", "east", "west", "nowhere")   # "nowhere" has no rows


def people(rows: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    age = rng.integers(0, 100, size=rows).astype(float)
    age[rng.random(rows) < 0.05] = np.nan
    return pd.DataFrame({
        "age": age,
        "income": np.round(rng.lognormal(10, 1, size=rows), 2),
        "region": rng.choice(REGIONS[:4], size=rows),
        "sex": rng.choice(["F", "M"], size=rows),
    })


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    frame = people()
    frame.to_csv(root / "people.csv", index=False)
    frame.to_csv(root / "people.csv.gz", index=False, compression="gzip")
    frame.to_parquet(root / "people.parquet", index=False)
    (root / "parts").mkdir()
    frame.iloc[:150].to_parquet(root / "parts" / "a.parquet", index=False)
    frame.iloc[150:].to_parquet(root / "parts" / "b.parquet", index=False)
    (root / "people.schema.json").write_text(json.dumps({
        "source": "made up for the tests",
        "columns": {"age": {"lower": 0, "upper": 120, "unit": "years", "integer": True,
                            "source": "codebook"},
                    "region": {"categories": list(REGIONS)}}}))
    (root / "broken.parquet").write_bytes(b"PAR1 this is not a parquet file at all")
    outside = tmp_path_factory.mktemp("outside") / "secret.csv"
    outside.write_text("x\n1\n")
    os.symlink(outside, root / "escape.csv")
    return root, frame


@pytest.fixture
def data_env(folder, monkeypatch):
    root, frame = folder
    monkeypatch.setenv("EPSILON_LAB_DATA", str(root))
    return root, frame


FILES = ("file:people.csv", "file:people.csv.gz", "file:people.parquet", "file:parts")


def test_sidebar_lists_the_folder_below_the_builtins(data_env):
    at = open_app()
    options = at.selectbox(key="dataset_choice").options
    listed = [o for o in options if "data folder" in o]
    assert listed == ["broken.parquet · data folder", "parts · data folder",
                      "people.csv · data folder", "people.csv.gz · data folder",
                      "people.parquet · data folder"]
    assert options.index(listed[0]) > options.index("Synthetic census")
    assert not any("escape" in o or "secret" in o for o in options)
    assert any("outside the data folder" in c.value for c in at.sidebar.caption)


@pytest.mark.parametrize("choice", FILES)
def test_statistics_true_answers_equal_pandas(data_env, choice):
    _, frame = data_env
    at = open_app("statistics.py", dataset=choice)
    assert not at.error, [e.value for e in at.error]
    # The histogram: the declared regions (people.*) or the data's own (parts, no schema).
    at.selectbox(key="stats_query").set_value("histogram").run()
    at.selectbox(key="stats_column").set_value("region").run()
    declared = list(REGIONS) if choice.startswith("file:people") else sorted(REGIONS[:4])
    want = reference.histogram(frame, "region", categories=declared)
    bars = figures(at)["True"]
    truth = next(t for t in bars["data"] if t["name"] == "True count")
    got = dict(zip(truth["x"], values(truth["y"]), strict=True))
    assert got == dict(zip(want.labels, want.true_value, strict=True))
    # The count and the clamped sum.
    at.selectbox(key="stats_query").set_value("count").run()
    assert at.metric[0].value == f"{len(frame):,}"
    at.selectbox(key="stats_query").set_value("sum").run()
    at.selectbox(key="stats_column").set_value("income").run()
    at.number_input(key="stats_lower").set_value(0.0).run()
    at.number_input(key="stats_upper").set_value(50_000.0).run()
    want = reference.bounded_sum(frame, "income", lower=0, upper=50_000)
    shown = float(at.metric[0].value.replace(",", ""))
    assert shown == pytest.approx(float(want.true_value), rel=1e-6)
    assert not at.exception


def test_declarations_beside_the_file_are_public(data_env):
    at = open_app("statistics.py", dataset="file:people.parquet")
    at.selectbox(key="stats_query").set_value("mean").run()
    at.selectbox(key="stats_column").set_value("age").run()
    assert at.number_input(key="stats_lower").value == 0.0
    assert at.number_input(key="stats_upper").value == 120.0
    notes = " ".join(c.value for c in at.caption)
    assert "people.schema.json" in notes and "public" in notes.lower()


@pytest.mark.parametrize("choice", ["file:people.csv.gz", "file:parts"])
def test_data_page_profile_equals_pandas(data_env, choice):
    from dashboard import datasets

    _, frame = data_env
    at = open_app("data.py", dataset=choice)
    shown = at.dataframe[1].value
    want = datasets.profile(frame)
    np.testing.assert_array_equal(shown["missing"], want["missing"])
    np.testing.assert_array_equal(shown["distinct"], want["distinct"])
    np.testing.assert_allclose(shown["min"], want["min"])
    np.testing.assert_allclose(shown["max"], want["max"])
    assert len(at.dataframe[0].value) == 10   # the first rows


@pytest.mark.parametrize("page", PAGE_FILES)
def test_every_page_runs_on_a_parquet_folder(data_env, page):
    at = open_app(page, dataset="file:parts")
    assert not at.exception
    assert not at.error, [e.value for e in at.error]


def test_a_bad_file_says_so_and_keeps_the_page(data_env):
    at = open_app("statistics.py")
    at.select_slider(key="stats_epsilon").set_value(2.2).run()
    at.selectbox(key="dataset_choice").select("file:broken.parquet").run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error).replace("\\", "")  # markdown escapes
    assert "broken.parquet" in errors and "not a valid Parquet file" in errors
    assert at.select_slider(key="stats_epsilon").value == 2.2
    at.selectbox(key="dataset_choice").select("Iris").run()
    assert not at.error and not at.exception


def test_a_path_in_the_url_is_not_opened(data_env):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    for name in ("file:../secret.csv", "file:escape.csv", "file:/etc/passwd"):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
        at.query_params["dataset_choice"] = name
        at.run()
        assert at.selectbox(key="dataset_choice").value == "Adult (UCI census income)"
        assert not at.exception


def test_moving_epsilon_never_scans_again(data_env):
    """The engine counts its scans (cache misses): moving ε only reruns the noise."""
    from dashboard.data.relation import engine

    at = open_app("statistics.py", dataset="file:people.parquet")
    at.select_slider(key="stats_epsilon").set_value(0.5).run()
    before = engine().scans
    for epsilon in (1.0, 2.2, 0.1, 4.7):
        at.select_slider(key="stats_epsilon").set_value(epsilon).run()
        assert not at.exception
    assert engine().scans == before


def test_a_file_changed_mid_session_is_read_again(data_env):
    root, frame = data_env
    path = root / "changing.csv"
    frame.to_csv(path, index=False)
    at = open_app("statistics.py", dataset="file:changing.csv")
    at.selectbox(key="stats_query").set_value("count").run()
    assert at.metric[0].value == f"{len(frame):,}"
    frame.iloc[:123].to_csv(path, index=False)
    os.utime(path, ns=(1, 1))   # a new version even within one clock tick
    at.run()
    assert at.metric[0].value == "123"
    path.unlink()
    at.run()
    assert not at.exception
    assert any("changing.csv" in e.value.replace("\\", "") for e in at.sidebar.error)
    assert at.selectbox(key="stats_query").value == "count"
