"""A numeric column with a few non-numbers (issue 35 item 4): "unknown", "12,500" and "N/A"
among wages made the upload a text column, never offered for a mean. The Data page lists the
cells that are not numbers (the owner's eyes) and declares the column numeric, those cells
missing — the same reading as a schema file's role "numeric" and every release's (engine.cells
rule 4; the command line and the exported program: tests/release/test_declared_numeric.py).

Expected values are written by hand from the file below."""

from __future__ import annotations

import json

from tests.conftest import open_app
from tests.pages.test_page_data import array

#: 14 wages 10, 20, …, 140 (sum 1,050, mean 75), four "unknown", one "12,500" (a thousands
#: separator: not a number on any path), one "N/A" (missing); 14 of 19 non-missing cells are
#: numbers, too few for the upload to read the column as numbers (95 %); 14 / 19 is 74 %.
WAGES = [str(10 * i) for i in range(1, 15)] + ["unknown"] * 4 + ["12,500", "N/A"]
CSV = ("pid,wage,region\n" + "\n".join(f'{i},"{w}",{"ns"[i % 2]}' for i, w in enumerate(WAGES))
       + "\n").encode()


def uploaded():
    at = open_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    at.file_uploader(key="upload_file").set_value(("wages.csv", CSV, "text/csv")).run()
    at.switch_page("app_pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at, f"upload:{at.session_state['upload_file_id']}"


def mean_columns(at) -> list[str]:
    at.switch_page("app_pages/statistics.py")
    at.run()
    at.selectbox(key="stats_query").select("mean").run()
    assert not at.exception, [e.value for e in at.exception]
    return list(at.selectbox(key="stats_column").options)


def true_mean(at) -> str:
    at.selectbox(key="stats_column").select("wage").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return {m.label: m.value for m in at.metric}["True answer"]


def test_the_data_page_lists_the_cells_that_are_not_numbers_and_declares_the_column():
    at, key = uploaded()
    cells = next(d.value for d in at.dataframe if list(d.value.columns) == ["cell", "rows"])
    assert cells.to_dict("list") == {"cell": ["unknown", "12,500"], "rows": [4, 1]}
    said = " ".join(m.value for m in at.markdown)
    assert "74% of its cells are numbers: 5 cells are not a number" in said
    assert "wage" not in mean_columns(at)
    at.switch_page("app_pages/data.py")
    at.run()
    at.button(key=f"numbers_declare::{key}::wage").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("declared numeric" in s.value for s in at.success)
    domain = at.session_state["dataset"]   # the upload as loaded; the declaration is the
    assert "wage" not in domain.domains    # session's schema, flagged as read off the data
    profile = next(d.value for d in at.dataframe if "public domain" in d.value.columns)
    shown = dict(zip(profile["column"], profile["public domain"], strict=True))
    assert shown["wage"] == "[10, 140] (read off the data)"
    # its distribution: the 14 numbers between the bounds read off them, [10, 140]
    at.multiselect(key="data_columns").set_value(["wage"]).run()
    assert not at.exception, [e.value for e in at.exception]
    bars = json.loads(at.get("plotly_chart")[-1].proto.spec)["data"]
    assert array(bars[0]["y"]).sum() == 14
    assert "wage" in mean_columns(at)
    assert true_mean(at) == "75"          # (10 + … + 140) / 14: the five non-numbers missing


def test_a_schema_files_role_numeric_reads_the_column_by_the_same_rule():
    at, key = uploaded()
    schema = {"columns": {"wage": {"role": "numeric", "lower": 0, "upper": 200,
                                   "origin": "public"}}}
    at.file_uploader(key=f"schema_upload::{key}").set_value(
        ("wages.schema.json", json.dumps(schema).encode(), "application/json"))
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "wage" in mean_columns(at)
    assert true_mean(at) == "75"
    # a declared column is numbers: not offered as categories any more
    at.selectbox(key="stats_query").select("histogram").run()
    assert "wage" not in at.selectbox(key="stats_column").options


def test_a_data_folder_file_declared_numeric_beside_it_is_read_by_the_same_rule(
        tmp_path, monkeypatch):
    """The same file in the server's data folder, its schema beside it declaring wage
    numeric: offered for a mean, whose true answer is the 14 numbers' mean."""
    (tmp_path / "wages.csv").write_bytes(CSV)
    (tmp_path / "wages.schema.json").write_text(json.dumps({"columns": {"wage": {
        "role": "numeric", "lower": 0, "upper": 200, "origin": "public"}}}))
    monkeypatch.setenv("EPSILON_LAB_DATA", str(tmp_path))
    at = open_app(dataset="file:wages.csv")
    assert "wage" in mean_columns(at)
    assert true_mean(at) == "75"
