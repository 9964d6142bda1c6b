"""Every file of the upload corpus (tests/data) uploaded through the sidebar's file uploader.

Bad files must show an error and leave the dataset loaded before in place (sidebar and Data
page); odd files must load with their warnings shown. Which file is bad or odd is read from
tests/data/README.md (the corpus' specification); keywords per file are written here by hand.
"""

from __future__ import annotations

import re

import pytest

from dashboard import datasets, state
from dashboard.text import plain
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data"
UPLOAD = "Upload your own CSV"
ADULT = "Adult (UCI census income)"
BASELINE = ("people.csv", b"name,age,city\nAna,34,Oslo\nBen,29,Lima\nCai,41,Pune\n")

# The README's bad list is written for tests that load with max_bytes = 1 MiB. The app's limit
# is 50 MB (decompression limit 200 MiB), so through the UI the 32 MiB "gzip bomb" loads,
# cut to the first MAX_UPLOAD_ROWS rows, with a warning.
LOADS_IN_THE_APP = {"gzip_bomb.csv.gz": ["only the first 1,000,000"]}

# What each error must say (case-insensitive, on the unescaped message).
ERROR_WORDS = {
    "empty.csv": ["empty"],
    "whitespace_only.csv": ["blank"],
    "binary.bin": ["binary"],
    "png_named.csv": ["PNG"],
    "zip_named.csv": ["ZIP"],
    "pdf_named.csv": ["PDF"],
    "header_only.csv": ["no data rows"],
    "no_header.csv": ["no header row"],
    "utf16_no_bom.csv": ["UTF-16"],
    "control_garbage.csv": ["control characters"],
    "gzip_corrupt.csv.gz": ["cannot be decompressed"],
    "double_gzip.csv.gz": ["gzip file inside a gzip file"],
    "json_named.csv": ["JSON"],
    "html_page.csv": ["HTML"],
    "only_missing.csv": ["missing"],
    "latin1.csv": ["UTF-8"],
    "cp1252.csv": ["UTF-8"],
}
# What the warnings of odd files must say; None: the README promises no warning.
WARNING_WORDS: dict[str, list[str] | None] = {
    "utf8_bom.csv": None,
    "utf16.csv": ["UTF-16"],
    "semicolon.csv": ["decimal comma"],
    "gzipped.csv.gz": None,
    "plain_named_gz.csv.gz": None,
    "ragged_rows.csv": ["fewer fields", "more fields"],
    "unclosed_quote.csv": ["never closed"],
    "trailing_delimiter.csv": None,
    "harmless_extra_comma.csv": None,
    "short_header.csv": ["column 3"],
    "inf_nan.csv": ["infinite"],
    "duplicate_columns.csv": ["made unique"],
    "html_columns.csv": ["HTML"],
    "markdown_columns.csv": ["Markdown"],
    "formula_cells.csv": ["formula"],
    "very_wide.csv": ["only the first 500"],
    "one_column.csv": None,
    "all_empty_column.csv": ["no values"],
    "thousands_separators.csv": ["thousands separators"],
    "mixed_types.csv": ["not a number"],
    "empty_column_names.csv": ["column 2"],
    "whitespace_names.csv": None,
    "control_chars_names.csv": ["Control characters"],
    "long_name.csv": ["longer than 200"],
    "high_cardinality.csv": ["more than 1,000 different values"],
    "blank_rows.csv": ["every cell empty"],
    "unicode_names.csv": None,
    "spaces_in_cells.csv": ["Spaces around"],
    "leading_blank_lines.csv": None,
    **LOADS_IN_THE_APP,
}


def _readme_lists() -> tuple[list[str], list[str]]:
    """(bad files, odd files) from the tables of tests/data/README.md."""
    bad: list[str] = []
    odd: list[str] = []
    target = None
    for line in (DATA / "README.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            target = bad if "Bad files" in line else odd if "Odd files" in line else None
        match = re.match(r"\|\s*([^|\s]+)\s*\|", line)
        if target is not None and match and match.group(1) not in ("file", "---"):
            target.append(match.group(1))
    return bad, odd


BAD, ODD = _readme_lists()
BAD = [f for f in BAD if f not in LOADS_IN_THE_APP]
ODD = ODD + [f for f in LOADS_IN_THE_APP if f not in ODD]
# Files only: importing make_corpus.py (tests/dashboard/test_datasets.py) may leave a
# __pycache__ folder here.
CORPUS = sorted(p.name for p in DATA.iterdir()
                if p.is_file() and p.name not in ("README.md", "make_corpus.py"))


def unescaped(text: str) -> str:
    return re.sub(r"\\(.)", r"\1", text)


def test_the_corpus_is_complete_and_specified():
    assert len(CORPUS) >= 25
    unlisted = sorted(set(CORPUS) - set(BAD) - set(ODD))
    assert not unlisted, f"files not listed in tests/data/README.md: {unlisted}"
    missing = sorted((set(BAD) | set(ODD)) - set(CORPUS))
    assert not missing, f"README lists files that do not exist: {missing}"


@pytest.fixture(scope="module")
def patched_pages():
    """Show full error details in AppTest (users get the redacted ones)."""
    from streamlit import config

    config.set_option("client.showErrorDetails", "full")
    yield


def new_session():
    """A fresh session on the Welcome page with 'Upload your own CSV' chosen."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.selectbox(key="dataset_choice").select(UPLOAD)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture(scope="module")
def session(patched_pages):
    """One session shared by the tests below (each uploads what it needs first)."""
    return new_session()


def upload(at, name: str, content: bytes):
    """Choose a file in the sidebar's uploader, as the browser would send it, and run."""
    at.switch_page("app_pages/home.py")
    at.run()
    at.file_uploader(key="upload_file").set_value((name, content, "text/csv"))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def as_uploaded(name: str) -> tuple[str, bytes]:
    """The name the browser sends: the chooser only offers the uploader's types (.csv, .tsv,
    .gz, .txt), so a file with another extension has to be renamed by the user first."""
    path = DATA / name
    allowed = (".csv", ".tsv", ".gz", ".txt")
    return (name if name.endswith(allowed) else name + ".csv"), path.read_bytes()


def sidebar_caption(at) -> str:
    return at.sidebar.caption[0].value


def data_page(at):
    at.switch_page("app_pages/data.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_uploader_offers_only_table_files(session):
    allowed = session.file_uploader(key="upload_file").allowed_type
    assert set(allowed) == {".csv", ".tsv", ".gz", ".txt"}
    assert ".bin" not in allowed      # so binary.bin is uploaded as binary.bin.csv below


def test_a_bad_first_upload_keeps_the_builtin_dataset(patched_pages):
    at = upload(new_session(), "empty.csv", b"")
    assert at.sidebar.error and "empty" in unescaped(at.sidebar.error[0].value)
    assert sidebar_caption(at).startswith(f"**{plain(ADULT)}**")
    assert any("Until a file loads" in i.value for i in at.sidebar.info)
    assert data_page(at).markdown[0].value.startswith(f"**{plain(ADULT)}**")


@pytest.mark.parametrize("name", BAD)
def test_bad_file_shows_an_error_and_keeps_the_previous_dataset(session, name):
    at = upload(session, *BASELINE)                       # a dataset to keep
    assert not at.sidebar.error
    before_caption = sidebar_caption(at)
    loaded_id = at.session_state[state.UPLOAD_ID]
    assert before_caption.startswith(f"**{plain(BASELINE[0])}**")

    filename, content = as_uploaded(name)
    at = upload(at, filename, content)
    with pytest.raises(datasets.DatasetError) as raised:
        datasets.load_upload(content, filename)
    errors = [e.value for e in at.sidebar.error]
    assert errors == [plain(str(raised.value), limit=1000)]
    for word in ERROR_WORDS.get(name, []):
        assert word.lower() in unescaped(errors[0]).lower(), (word, errors[0])
    assert sidebar_caption(at) == before_caption           # still the previous dataset
    assert at.session_state[state.UPLOAD_ID] == loaded_id  # and its cache key

    page = data_page(at)
    assert page.markdown[0].value.startswith(f"**{plain(BASELINE[0])}**: 3 rows × 3 columns")
    assert list(page.dataframe[0].value.columns) == ["name", "age", "city"]
    assert errors == [e.value for e in page.sidebar.error]  # the error stays in view


@pytest.mark.parametrize("name", ODD)
def test_odd_file_loads_with_its_warnings(session, name):
    filename, content = as_uploaded(name)
    at = upload(session, filename, content)
    loaded = datasets.load_upload(content, filename)
    assert not at.sidebar.error, [e.value for e in at.sidebar.error]
    rows, cols = loaded.frame.shape
    assert sidebar_caption(at).startswith(
        f"**{plain(loaded.name)}**: {rows:,} rows × {cols} columns")
    shown = [w.value for w in at.sidebar.warning]
    assert shown == [plain(w, limit=400) for w in loaded.warnings]
    words = WARNING_WORDS.get(name, [])
    if words is None:
        assert shown == []
    for word in words or []:
        assert any(word.lower() in unescaped(w).lower() for w in shown), (word, shown)

    page = data_page(at)
    assert page.markdown[0].value.startswith(f"**{plain(loaded.name)}**")
    assert list(page.dataframe[0].value.columns) == list(loaded.frame.columns)
    assert len(page.dataframe[1].value) == cols                          # one profile row each


def test_removing_a_bad_file_clears_its_error(session):
    at = upload(session, *BASELINE)
    caption = sidebar_caption(at)
    at = upload(at, "png_named.csv", (DATA / "png_named.csv").read_bytes())
    assert at.sidebar.error
    at.file_uploader(key="upload_file").set_value(None)
    at.run()
    assert not at.exception and not at.sidebar.error
    assert sidebar_caption(at) == caption


def test_an_uploads_column_names_stay_out_of_the_url(patched_pages):
    """Statistics, Noisy tables and Selection remember an upload's columns for the session
    only: none of its column names reaches the URL (the built-ins' do, for sharing)."""
    content = ("secret_income,secret_group,secret_region\n"
               + "".join(f"{i % 90},{'ab'[i % 2]},{'xyz'[i % 3]}\n" for i in range(60)))
    at = upload(new_session(), "private.csv", content.encode())
    for page, key in (("statistics.py", "stats_column"), ("tables.py", "tables_row"),
                      ("selection.py", "sel_column")):
        at.switch_page(f"app_pages/{page}")
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert at.selectbox(key=key).value.startswith("secret_"), page
        shown = " ".join(f"{k}={v}" for k, v in at.query_params.items())
        assert "secret_" not in shown, f"{page}: {shown}"
