"""AppTest interaction tests of the "Data" page: preview, profile, distributions, file text.

Expected numbers come from pandas on the dataset loaded here; names from an uploaded file must
show as data (dataframes) or escaped text, never as markdown or HTML.
"""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pandas as pd
import pytest

from dashboard import charts, datasets
from dashboard.text import plain
from tests.conftest import ROOT, open_app

ADULT = "Adult (UCI census income)"
DATA = ROOT / "tests" / "data"


@pytest.fixture
def run_app():
    """The Data page, on ``dataset`` if given."""
    return lambda dataset=None: open_app("data.py", dataset=dataset)

@pytest.fixture(scope="module")
def adult():
    return datasets.load_builtin(ADULT).frame


def figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def array(data) -> np.ndarray:
    """A trace's x or y: a list, or plotly's typed-array encoding {dtype, bdata}."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=np.dtype(data["dtype"]))
    return np.asarray(data)


def test_preview_and_profile(run_app, adult):
    at = run_app()
    assert "data owner's eyes" in at.warning[0].value
    assert at.markdown[0].value.startswith(f"**{plain(ADULT)}**: 48,842 rows")
    preview, profile = at.dataframe[0].value, at.dataframe[1].value
    pd.testing.assert_frame_equal(preview.reset_index(drop=True),
                                  adult.head(10).reset_index(drop=True), check_dtype=False,
                                  check_categorical=False)
    profile = profile.set_index("column")
    assert list(profile.index) == list(adult.columns)
    for column in adult.columns:
        assert profile.loc[column, "missing"] == adult[column].isna().sum()
        assert profile.loc[column, "distinct"] == adult[column].nunique()
    assert profile.loc["age", "min"] == adult["age"].min() == 17
    assert profile.loc["age", "max"] == adult["age"].max()
    assert profile.loc["age", "type"] == "numeric" and profile.loc["sex", "type"] == "categorical"
    assert profile.loc["age", "public domain"] == "[17, 90] years"
    assert profile.loc["sex", "public domain"] == "2 categories: Female, Male"
    assert profile.loc["fnlwgt", "public domain"] == "none declared"
    assert "adult.names" in profile.loc["age", "domain source"]

    at.selectbox(key="data_preview_rows").set_value(5)
    at.run()
    assert len(at.dataframe[0].value) == 5


def test_default_charts_are_a_histogram_and_a_bar_chart(run_app, adult):
    at = run_app()
    assert at.multiselect(key="data_columns").value == ["age", "workclass"]
    age, workclass = figures(at)
    # one bar per whole year, together counting every row; dashed lines at the public bounds
    x, y = array(age["data"][0]["x"]), array(age["data"][0]["y"])
    np.testing.assert_array_equal(x, np.arange(17, 91))
    np.testing.assert_array_equal(y, adult["age"].value_counts().reindex(x, fill_value=0))
    assert sorted(shape["x0"] for shape in age["layout"]["shapes"]) == [17, 90]
    assert age["layout"]["xaxis"]["title"]["text"] == "age (years)"
    # every declared category, in the documented order
    declared = datasets.load_builtin(ADULT).domains["workclass"].categories
    assert list(workclass["data"][0]["x"]) == list(declared)
    counts = adult["workclass"].astype(str).value_counts().reindex(declared)
    np.testing.assert_array_equal(array(workclass["data"][0]["y"]), counts.to_numpy())

    at.multiselect(key="data_columns").set_value(["sex", "hours_per_week", "income"])
    at.run()
    assert [f["data"][0]["type"] for f in figures(at)] == ["bar"] * 3
    # two columns of charts: the tree lists the left column first
    assert sorted(f["layout"]["title"]["text"] for f in figures(at)) == [
        "Distribution of hours_per_week", "Rows per category of income",
        "Rows per category of sex"]
    assert len(at.caption) >= 3


@pytest.mark.parametrize("raw, expected", [
    ("['sex', 'income']", ["sex", "income"]),
    ("['sex', 'no such column']", ["sex"]),
    ("foo(", ["age", "workclass"]),                  # not a literal: the defaults
    ("__import__('os')", ["age", "workclass"]),      # never evaluated
    ("[" * 5000, ["age", "workclass"]),
])
def test_chosen_columns_come_back_from_the_url(run_app, raw, expected):
    from streamlit.testing.v1 import AppTest

    run_app(dataset=None)   # installs the fixture's page handling
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["data_columns"] = raw
    at.run()
    at.switch_page("app_pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.multiselect(key="data_columns").value == expected


def test_a_new_dataset_starts_from_its_first_two_columns(run_app):
    at = run_app()
    at.multiselect(key="data_columns").set_value(["sex"])
    at.run()
    assert len(figures(at)) == 1
    at.selectbox(key="dataset_choice").select("Iris")
    at.run()
    assert not at.exception
    assert at.multiselect(key="data_columns").value == ["sepal_length", "sepal_width"]
    assert len(figures(at)) == 2


def test_declared_categories_with_no_rows_get_an_empty_bar():
    values = pd.Series(pd.Categorical(["a", "a", "b"], categories=["a", "b", "c"]))
    fig = charts.category_bars(values, column="letter", categories=["a", "b", "c"])
    assert list(fig.data[0].x) == ["a", "b", "c"] and list(fig.data[0].y) == [2, 1, 0]


@pytest.mark.parametrize("name", ["html_columns.csv", "markdown_columns.csv"])
def test_column_names_from_a_file_are_shown_as_data(run_app, name):
    at = run_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV")
    at.run()
    at.file_uploader(key="upload_file").set_value((name, (DATA / name).read_bytes(), "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    loaded = datasets.load_upload((DATA / name).read_bytes(), name)
    names = list(loaded.frame.columns)
    assert list(at.dataframe[0].value.columns) == names                 # the preview
    assert list(at.dataframe[1].value["column"]) == names               # the profile
    assert set(at.dataframe[1].value["public domain"]) == {"none declared"}
    # load warnings are on the page, escaped
    shown = [w.value for w in at.main.warning]
    for warning in loaded.warnings:
        assert plain(warning, limit=400) in shown
    # nothing the page writes as markdown holds a raw name with markup in it
    markup = [n for n in names if n != plain(n)]
    assert markup
    texts = [e.value for e in (*at.markdown, *at.caption, *at.warning, *at.info)]
    for text in texts:
        for raw in markup:
            # an escaped name may still contain the raw one after its first backslash
            starts = [m.start() for m in re.finditer(re.escape(raw), text)]
            assert all(i > 0 and text[i - 1] == "\\" for i in starts), (raw, text)
    # chart titles show the names literally: plotly's HTML is escaped
    for fig, column in zip(figures(at), names[:2], strict=True):
        title = fig["layout"]["title"]["text"]
        assert charts.svg_text(column) in title and ("<" not in title)


def test_a_bound_read_off_the_data_is_flagged_in_the_profile(run_app):
    at = run_app()
    profile = at.dataframe[1].value.set_index("column")
    assert profile.loc["capital_loss", "public domain"] == "[0, 4356] USD (read off the data)"
    assert profile.loc["capital_gain", "public domain"] == "[0, 99999] USD"
    assert "READ OFF THE DATA" in profile.loc["capital_loss", "domain source"]


def test_a_date_column_is_described_not_a_crash(tmp_path, monkeypatch):
    """Regression: a data-folder file whose first columns hold dates raised TypeError from the
    engine's category check and the Data page showed a traceback."""
    import pandas as pd

    pd.DataFrame({"day": pd.to_datetime(["2024-01-01", "2024-01-02"]), "n": [1, 2]}).to_parquet(
        tmp_path / "days.parquet", index=False)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    from tests.conftest import open_app

    at = open_app("data.py", dataset="file:days.parquet")
    assert not at.exception, [e.value for e in at.exception]
    assert any("holds dates or times" in i.value for i in at.info)
