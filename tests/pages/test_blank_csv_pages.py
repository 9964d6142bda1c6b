"""A blank or header-only CSV on the Data page, uploaded or from the data folder: a plain
message saying what is wrong and how to fix it (no traceback, no parser text), the page usable.
"""

from __future__ import annotations

import pytest

from tests.conftest import open_app

BLANK = {"empty.csv": b"", "spaces.csv": b"  \n \n", "header.csv": b"age,sex\n"}


def _shown(at) -> str:
    texts = [e.value for e in (*at.error, *at.warning)]
    return " ".join(texts).replace("\\", "")   # markdown escapes


@pytest.fixture
def data_env(tmp_path, monkeypatch):
    for name, data in BLANK.items():
        (tmp_path / name).write_bytes(data)
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize("name", ["empty.csv", "spaces.csv"])
def test_a_data_folder_file_without_a_header_says_so(data_env, name):
    at = open_app("data.py")
    at.selectbox(key="dataset_choice").select(f"file:{name}").run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _shown(at)
    assert f"'{name}' holds no header row" in shown and "first row naming its columns" in shown
    assert "Parser Error" not in shown and "syntax error" not in shown
    at.selectbox(key="dataset_choice").select("Iris").run()
    assert not at.error and not at.exception


def test_a_data_folder_file_with_only_a_header_says_so(data_env):
    at = open_app("data.py")
    at.selectbox(key="dataset_choice").select("file:header.csv").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "header.csv has a header row but no data rows" in _shown(at)


@pytest.mark.parametrize("name, says", [
    ("empty.csv", "The file is empty (0 bytes)"),
    ("spaces.csv", "holds only blank lines or spaces"),
    ("header.csv", "has a header row but no data rows")])
def test_an_upload_without_rows_says_so(name, says):
    at = open_app("data.py")
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    at.file_uploader(key="upload_file").set_value((name, BLANK[name], "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _shown(at)
    assert says in shown and ("Upload" in shown or "Add one row" in shown)
    assert "Parser Error" not in shown and "Traceback" not in shown
