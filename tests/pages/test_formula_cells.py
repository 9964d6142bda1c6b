"""The formula warning (issue 35 item 4) cited a column name where a cell was expected: "4
cells start with =, +, - or @ and could run as formulas in a spreadsheet ('cmd')" read as if
'cmd' were the formula. It now says the column as a column, and the Data page lists the cells
themselves for the owner's eyes (a warning never quotes a cell)."""

from __future__ import annotations

from tests.conftest import ROOT, open_app

FILE = ROOT / "tests" / "data" / "formula_cells.csv"   # name,cmd: =1+2 @SUM(A1) +cmd -2+3 plain


def test_the_warning_names_the_column_and_the_data_page_lists_the_cells():
    at = open_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    at.file_uploader(key="upload_file").set_value(
        ("formula_cells.csv", FILE.read_bytes(), "text/csv")).run()
    at.switch_page("app_pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    # the sidebar says it too; markdown escapes and plain()'s word joiners removed
    warned = sorted({w.value.replace("\\", "").replace("\u2060", "") for w in at.warning
                     if "formula" in w.value})
    assert len(warned) == 1
    assert warned[0].startswith("4 cells in column 'cmd' start with =, +, - or @ and could run "
                                "as a formula in a spreadsheet"), warned
    for cell in ("=1+2", "@SUM(A1)", "+cmd", "-2+3"):
        assert cell not in warned[0]
    listed = [d.value for d in at.dataframe if list(d.value.columns) == ["cell", "rows"]]
    assert len(listed) == 1
    assert sorted(listed[0]["cell"]) == sorted(["=1+2", "@SUM(A1)", "+cmd", "-2+3"])
    assert listed[0]["rows"].tolist() == [1, 1, 1, 1]
