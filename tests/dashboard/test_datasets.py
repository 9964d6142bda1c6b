"""Tests for dashboard.datasets: built-in data and their domains, upload validation, profiles.

Expected figures come from the datasets' documentation (adult.names, the dataset READMEs) and
from the corpus in tests/data, never from the code under test. Pure pandas: no streamlit.
"""

from __future__ import annotations

import builtins
import gzip
import importlib.util
import io
import logging
import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dashboard import datasets
from dashboard.datasets import (
    BUILTIN_DATASETS,
    ColumnDomain,
    DatasetError,
    LoadedDataset,
    categorical_columns,
    load_builtin,
    load_upload,
    numeric_columns,
    profile,
    synthetic_census,
)

CORPUS = Path(__file__).resolve().parents[1] / "data"
ADULT, IRIS, CENSUS, VISITS = BUILTIN_DATASETS


@pytest.fixture(scope="module")
def adult() -> LoadedDataset:
    return load_builtin(ADULT)


@pytest.fixture(scope="module")
def big_census() -> pd.DataFrame:
    return synthetic_census(100_000, seed=7)


def _same(actual: list, expected: list) -> bool:
    """Element-wise equality where NaN equals NaN."""
    if len(actual) != len(expected):
        return False
    for a, e in zip(actual, expected, strict=True):
        a_nan = isinstance(a, float) and math.isnan(a)
        e_nan = isinstance(e, float) and math.isnan(e)
        if a_nan != e_nan or (not a_nan and a != e):
            return False
    return True


# ------------------------------------------------------------------------------------------
# Adult: figures from the dataset README and adult.names


def test_adult_size_and_columns(adult):
    assert adult.frame.shape == (48_842, 15)
    assert list(adult.frame.columns) == [
        "age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
        "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
        "hours_per_week", "native_country", "income"]
    assert adult.warnings == []
    assert "CC BY 4.0" in adult.source and "10.24432/C5XW20" in adult.source


def test_adult_known_counts(adult):
    income = adult.frame["income"].value_counts()
    assert income["<=50K"] == 37_155 and income[">50K"] == 11_687
    education = adult.frame["education"].value_counts()
    assert education["HS-grad"] == 15_784
    assert education["Some-college"] == 10_878
    assert education["Bachelors"] == 8_025


def test_adult_missing_values_match_adult_names(adult):
    # adult.names: 48,842 instances, 45,222 once instances with unknown values are removed.
    assert len(adult.frame.dropna()) == 45_222


def test_adult_category_lists_have_the_documented_sizes(adult):
    sizes = {"workclass": 8, "education": 16, "marital_status": 7, "occupation": 14,
             "relationship": 6, "race": 5, "sex": 2, "native_country": 41, "income": 2}
    for column, size in sizes.items():
        assert len(adult.domains[column].categories) == size, column
        assert adult.frame[column].dtype == "category"
        assert list(adult.frame[column].cat.categories) == list(adult.domains[column].categories)


def test_adult_education_levels_are_numbered_1_to_16(adult):
    pairs = adult.frame[["education", "education_num"]].drop_duplicates()
    assert len(pairs) == 16  # one number per level
    number = dict(zip(pairs["education"].astype(str), pairs["education_num"], strict=True))
    assert number["Preschool"] == 1 and number["Doctorate"] == 16


def test_adult_fnlwgt_has_no_domain(adult):
    assert "fnlwgt" not in adult.domains
    assert set(adult.domains) == set(adult.frame.columns) - {"fnlwgt"}


# ------------------------------------------------------------------------------------------
# Iris


def test_iris():
    iris = load_builtin(IRIS)
    assert iris.frame.shape == (150, 5)
    assert list(iris.frame.columns) == ["sepal_length", "sepal_width", "petal_length",
                                        "petal_width", "species"]
    assert iris.frame["species"].value_counts().to_dict() == {
        "setosa": 50, "versicolor": 50, "virginica": 50}
    assert not iris.frame.isna().any().any()
    assert "Fisher" in iris.source and "CC BY 4.0" in iris.source


# ------------------------------------------------------------------------------------------
# Every built-in column lies in its declared domain (this checks the domains)


@pytest.mark.parametrize("name", BUILTIN_DATASETS)
def test_values_lie_in_declared_domains(name):
    kwargs = {"census_rows": 20_000, "seed": 11} if name == CENSUS else {}
    ds = load_builtin(name, **kwargs)
    assert ds.domains, "every built-in declares domains"
    for column, domain in ds.domains.items():
        values = ds.frame[column]
        if domain.kind == "numeric":
            observed = values.dropna().to_numpy(dtype=float)
            assert domain.lower <= observed.min() and observed.max() <= domain.upper, column
            if domain.integer:
                assert np.all(observed == np.rint(observed)), column
            assert domain.unit and domain.source, column
        else:
            assert isinstance(values.dtype, pd.CategoricalDtype), column
            assert tuple(values.cat.categories) == domain.categories, column
            assert set(values.dropna().astype(str)) <= set(domain.categories), column


def test_column_domain_validates_itself():
    with pytest.raises(ValueError, match="bounds"):
        ColumnDomain("numeric", 5, 1)
    with pytest.raises(ValueError, match="bounds"):
        ColumnDomain("numeric", 0, float("nan"))
    with pytest.raises(ValueError, match="bounds"):
        ColumnDomain("numeric", 0, None)
    with pytest.raises(ValueError, match="distinct"):
        ColumnDomain("categorical", categories=("a", "a"))
    with pytest.raises(ValueError, match="distinct"):
        ColumnDomain("categorical", categories=())
    with pytest.raises(ValueError, match="kind"):
        ColumnDomain("ordinal", 0, 1)  # type: ignore[arg-type]


def test_load_builtin_rejects_unknown_names_and_bad_sizes():
    with pytest.raises(ValueError, match="name must be one of"):
        load_builtin("Titanic")
    with pytest.raises(ValueError, match="census_rows"):
        load_builtin(CENSUS, census_rows=0)
    with pytest.raises(ValueError, match="seed"):
        load_builtin(CENSUS, seed=-1)
    with pytest.raises(TypeError):
        load_builtin(3)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------
# Synthetic census

DECLARED_SHARES = {
    "Sex": {"M": 0.5, "F": 0.5},
    "Married": {"M": 0.478, "W": 0.057, "S": 0.109, "D": 0.019, "N": 0.337},
    "Occupation": {"Statistician": 0.3, "Economist": 0.3, "Geographer": 0.2,
                   "IT Specialist": 0.19, "Unicorn Wrangler": 0.01},
}


def _worst_share_deviation(frame: pd.DataFrame) -> float:
    """Largest |observed share - declared share| over all categories, in binomial SEs."""
    n = len(frame)
    worst = 0.0
    for column, shares in DECLARED_SHARES.items():
        counts = frame[column].value_counts()
        for category, p in shares.items():
            se = math.sqrt(p * (1 - p) / n)
            worst = max(worst, abs(counts.get(category, 0) / n - p) / se)
    return worst


def test_census_is_deterministic_for_a_seed():
    pd.testing.assert_frame_equal(synthetic_census(500, seed=3), synthetic_census(500, seed=3))
    assert not synthetic_census(500, seed=3).equals(synthetic_census(500, seed=4))
    via_loader = load_builtin(CENSUS, census_rows=500, seed=3)
    pd.testing.assert_frame_equal(via_loader.frame, synthetic_census(500, seed=3))
    assert "500 rows" in via_loader.source and "seed 3" in via_loader.source


@pytest.mark.parametrize("rows", [1, 7, 1000])
def test_census_size_is_honoured(rows):
    frame = synthetic_census(rows, seed=0)
    assert len(frame) == rows
    assert list(frame.columns) == ["Sex", "Age", "Married", "Earnings", "Occupation"]
    assert frame["Age"].dtype == np.int64 and frame["Earnings"].dtype == np.int64


@pytest.mark.parametrize("rows", [0, -1, 1_000_001])
def test_census_rejects_bad_sizes(rows):
    with pytest.raises(ValueError, match="rows"):
        synthetic_census(rows)


@pytest.mark.parametrize("rows", [1.5, True, "10"])
def test_census_rejects_non_integer_sizes(rows):
    with pytest.raises(TypeError, match="rows"):
        synthetic_census(rows)


def test_census_shares_match_the_declared_ones(big_census):
    # 5 SE per category: a false alarm has probability ~6e-7 per category (13 categories).
    assert _worst_share_deviation(big_census) <= 5


def test_share_check_catches_swapped_shares(big_census, monkeypatch):
    # Planted bug: married and never-married shares swapped (0.478 <-> 0.337), a 90-SE shift.
    from dashboard.data import builtins

    names, shares = builtins._CENSUS_MARRIED
    swapped = (shares[4], shares[1], shares[2], shares[3], shares[0])
    monkeypatch.setattr(builtins, "_CENSUS_MARRIED", (names, swapped))
    assert _worst_share_deviation(synthetic_census(100_000, seed=7)) > 5


def test_census_declares_every_category_even_without_rows():
    frame = synthetic_census(1, seed=0)
    for column, shares in DECLARED_SHARES.items():
        assert list(frame[column].cat.categories) == list(shares), column


def test_census_age_and_earnings_distributions(big_census):
    n = len(big_census)
    age = big_census["Age"].to_numpy(dtype=float)
    assert abs(age.mean() - 45) <= 5 * 10 / math.sqrt(n)
    assert abs(age.std() - 10) <= 0.1  # rounding adds variance 1/12: sd 10.004
    log_earnings = np.log10(big_census["Earnings"].to_numpy(dtype=float))
    # Truncation at -4.6 and +4 SD moves the mean by ~4e-5, rounding to dollars by less.
    assert abs(log_earnings.mean() - 4.6) <= 5 * 0.35 / math.sqrt(n)
    assert big_census["Earnings"].between(1_000, 1_000_000).all()


# ------------------------------------------------------------------------------------------
# Upload corpus: bad files raise DatasetError, odd files load with a warning

# A fix starts with an imperative verb.
FIX = re.compile(r"\b(upload|save|add|check|export|convert|compress|download|unzip|fill|"
                 r"decompress|extract|open)\b", re.IGNORECASE)

ERRORS = {
    "empty.csv": "empty",
    "whitespace_only.csv": "only blank lines",
    "binary.bin": "NUL bytes",
    "png_named.csv": "PNG image",
    "zip_named.csv": "ZIP archive",
    "pdf_named.csv": "PDF",
    "header_only.csv": "no data rows",
    "no_header.csv": "no header row",
    "utf16_no_bom.csv": "UTF-16",
    "control_garbage.csv": "control characters",
    "gzip_bomb.csv.gz": "decompresses to more than",
    "gzip_corrupt.csv.gz": "cannot be decompressed",
    "double_gzip.csv.gz": "gzip file inside a gzip file",
    "json_named.csv": "JSON",
    "html_page.csv": "web page",
    "only_missing.csv": "nothing to analyse",
    # Issue 31 (engine.cells' malformed-record rule): a row holding bytes that are not UTF-8
    # is left out on every path; these files' every row holds one (Latin-1 accents), and no
    # reader of the command line or Spark could read them as Latin-1 alike.
    "latin1.csv": "No row of the file is valid UTF-8",
    "cp1252.csv": "No row of the file is valid UTF-8",
}
MAX_BYTES = {"gzip_bomb.csv.gz": 2**20}  # 1 MiB upload limit, so 4 MiB decompressed


@dataclass(frozen=True)
class Loads:
    shape: tuple[int, int]
    warning: str | None            # a phrase one warning must contain; None: no warnings
    values: dict[str, list] | None = None


CLEAN = {"name": ["Ana", "Ben", "Cai"], "age": [34, 29, 41], "city": ["Oslo", "Rome", "Lima"]}
NAN = float("nan")

LOADS = {
    "utf8_bom.csv": Loads((3, 3), None, CLEAN),
    "utf16.csv": Loads((3, 3), "UTF-16", CLEAN),
    # engine.cells rule 4: a decimal comma is no number on any path (2 of 3 cells: text)
    "semicolon.csv": Loads((3, 3), "decimal comma (like 1,234 or 1,5) are not read",
                           {"temp": ["3,5", "15,25", "19"], "rain": [120, 80, 5]}),
    "tab.tsv": Loads((2, 3), None, {"note": ["likes tea, coffee", "no, thanks"]}),
    "pipe.csv": Loads((2, 3), None, {"age": [34, 29]}),
    "gzipped.csv.gz": Loads((3, 3), None, CLEAN),
    "plain_named_gz.csv.gz": Loads((3, 3), None, CLEAN),
    "ragged_rows.csv": Loads((6, 3), "1 row has more fields than the 3 columns; the fields past",
                             {"a": [1, 4, 6, 9, 13, 16], "c": [3, NAN, 8, 11, 15, NAN]}),
    # issue 31: the rest of the file is one cell, as DuckDB, Spark and engine.cells read it
    "unclosed_quote.csv": Loads((1, 2), "never closed",
                                {"note": ["never closed\nBen,fine\nCai,fine"]}),
    "trailing_delimiter.csv": Loads((3, 2), None, {"a": [1, 3, 5], "b": [2, 4, 6]}),
    "harmless_extra_comma.csv": Loads((3, 2), None, {"a": [1, 3, 5], "b": [2, 4, 6]}),
    "short_header.csv": Loads((3, 3), "'column 3'", {"column 3": [2, 4, 6]}),
    "inf_nan.csv": Loads((6, 2), "2 infinite values (inf) in 'y': they are a number",
                         {"x": [1, 2, 3, 4, 5, 6],
                          "y": [float("inf"), -float("inf"), NAN, 5, NAN, 7.5]}),
    "duplicate_columns.csv": Loads((2, 4), "Duplicate column names",
                                   {"a": [1, 5], "a (2)": [2, 6], "b": [3, 7], "a (3)": [4, 8]}),
    "html_columns.csv": Loads((1, 4), "HTML", {"<script>alert(1)</script>": [2]}),
    "markdown_columns.csv": Loads((1, 4), "Markdown", {"[link](http://example.com)": [2],
                                                        ":red[colour]": [4]}),
    "formula_cells.csv": Loads((5, 2), "4 cells in column 'cmd' start with =, +, - or @",
                               {"cmd": ["=1+2", "@SUM(A1)", "+cmd", "-2+3", "plain"]}),
    "formula_names.csv": Loads((1, 3), "2 column names start with =, +, - or @",
                               {'=HYPERLINK("http://x")': [1], "@cmd": [2]}),
    "very_wide.csv": Loads((3, 500), "100 dropped", {"c500": [1, 1, 1]}),
    "one_column.csv": Loads((3, 1), None, {"value": [1, 2, 3]}),
    "all_empty_column.csv": Loads((3, 2), "dropped: 'b'", {"a": [1, 2, 3]}),
    # rule 4: no thousands separator is read on any path (1 number of 4 cells: text)
    "thousands_separators.csv": Loads((4, 2), "thousands separators or a decimal comma",
                                      {"income": ["1,234", "12,345,678", "999",
                                                  "1,000.50"]}),
    "mixed_types.csv": Loads((40, 2), "1 cell is not a number: set to missing",
                             {"mostly_numbers": [*map(float, range(39)), NAN]}),
    "quoted_newlines.csv": Loads((2, 2), None,
                                 {"address": ["1 Main St\nSpringfield", '2 "Quoted" Rd']}),
    "crlf.csv": Loads((2, 2), None, {"a": [1, 2], "b": ["x", "y"]}),
    "cr_only.csv": Loads((2, 2), None, {"a": [1, 2], "b": ["x", "y"]}),
    "empty_column_names.csv": Loads((2, 3), "named by position", {"column 2": [2, 5]}),
    "whitespace_names.csv": Loads((1, 3), None, {"a": [1], "b": [2], "c": [3]}),
    "control_chars_names.csv": Loads((1, 2), "Control characters", {"ab": [1], "cd": [2]}),
    "long_name.csv": Loads((1, 2), "longer than 200 characters", {"short": [2]}),
    "high_cardinality.csv": Loads((1200, 2), "more than 1,000 different values"),
    # a record of empty cells is a row on every path (engine.cells): kept, and said
    "blank_rows.csv": Loads((3, 2), "1 row has every cell empty or missing: kept",
                            {"a": [1, NAN, 3], "b": [2, NAN, 4]}),
    "sep_line.csv": Loads((2, 2), None, {"a": [1, 3], "b": [2, 4]}),
    "unicode_names.csv": Loads((2, 3), None, {"名前": ["x", "y"], "😀": [2, 4]}),
    "spaces_in_cells.csv": Loads((2, 2), "Spaces around 2 text cells",
                                 {"a": ["x", "y"], "b": [1, 2]}),
    "leading_blank_lines.csv": Loads((1, 2), None, {"name": ["Ana"], "age": [34]}),
}


def _load(name: str) -> LoadedDataset:
    kwargs = {"max_bytes": MAX_BYTES[name]} if name in MAX_BYTES else {}
    return load_upload((CORPUS / name).read_bytes(), name, **kwargs)


def _corpus_files() -> set[str]:
    return {p.name for p in CORPUS.iterdir()
            if p.is_file() and p.name not in {"README.md", "make_corpus.py"}}


def test_corpus_is_complete_and_documented():
    files = _corpus_files()
    assert len(files) >= 25
    assert files == set(ERRORS) | set(LOADS), "every corpus file has an expected outcome"
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    missing = [name for name in files if f"| {name} |" not in readme]
    assert not missing, f"not listed in tests/data/README.md: {missing}"


def test_corpus_matches_its_generator():
    spec = importlib.util.spec_from_file_location("make_corpus", CORPUS / "make_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, data in module.FILES.items():
        assert (CORPUS / name).read_bytes() == data, name
    assert (CORPUS / "gzip_bomb.csv.gz").stat().st_size < 100_000


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_bad_files_raise_a_clear_error(name):
    with pytest.raises(DatasetError) as caught:
        _load(name)
    message = str(caught.value)
    assert ERRORS[name] in message
    assert FIX.search(message), f"no fix suggested: {message}"


@pytest.mark.parametrize("name", sorted(LOADS))
def test_odd_files_load_with_a_warning(name):
    expected = LOADS[name]
    ds = _load(name)
    assert ds.frame.shape == expected.shape
    if expected.warning is None:
        assert ds.warnings == []
    else:
        assert any(expected.warning in w for w in ds.warnings), ds.warnings
    for column, values in (expected.values or {}).items():
        assert _same(ds.frame[column].tolist(), values), (column, ds.frame[column].tolist())
    assert ds.domains == {} and ds.source == f"Uploaded file {name}" and ds.name == name
    assert all(len(w) <= 400 for w in ds.warnings)  # the sidebar shows up to 400 characters
    for column in ds.frame.columns:  # no stray carriage returns or byte-order marks anywhere
        assert "\r" not in column and "\ufeff" not in column
        if not numeric_columns(ds.frame[[column]]):
            assert not ds.frame[column].astype(str).str.contains("[\r\ufeff]").any()


def test_dtypes_of_an_upload():
    ds = _load("high_cardinality.csv")
    assert categorical_columns(ds) == ["group"]  # 'id' has 1,200 distinct values: text only
    assert list(ds.frame["group"].cat.categories) == ["g0", "g1", "g2"]
    assert numeric_columns(ds) == []
    mixed = _load("mixed_types.csv")
    assert numeric_columns(mixed) == ["mostly_numbers"]
    assert categorical_columns(mixed) == ["half_numbers"]
    assert mixed.frame["mostly_numbers"].dtype == np.float64
    clean = _load("utf8_bom.csv")
    assert clean.frame["age"].dtype == np.int64


def test_too_big_upload_is_rejected_before_parsing():
    data = b"a\n" + b"1\n" * 1000
    with pytest.raises(DatasetError, match="too big") as caught:
        load_upload(data, "big.csv", max_bytes=1000)
    assert "Upload a sample" in str(caught.value)
    assert load_upload(data, "big.csv", max_bytes=len(data)).frame.shape == (1000, 1)


def test_gzip_expansion_limit_is_exact():
    plain = b"a,b\n" + b"1,2\n" * 500           # 2,004 bytes decompressed
    packed = gzip.compress(plain, mtime=0)
    assert len(packed) <= 500
    # The limit is 4 x max_bytes: 501 allows 2,004 bytes, 500 only 2,000.
    assert load_upload(packed, "x.csv.gz", max_bytes=501).frame.shape == (500, 2)
    with pytest.raises(DatasetError, match="decompresses to more than"):
        load_upload(packed, "x.csv.gz", max_bytes=500)


def test_very_long_file_is_capped():
    rows = datasets.MAX_UPLOAD_ROWS
    data = b"x\n\n" + b"7\n" * (rows + 5)  # a blank line must not count towards the cap
    ds = load_upload(data, "long.csv")
    assert ds.frame.shape == (rows, 1)
    assert any(f"only the first {rows:,}" in w for w in ds.warnings)


def test_exactly_max_rows_is_not_capped():
    rows = datasets.MAX_UPLOAD_ROWS
    ds = load_upload(b"x\n" + b"7\n" * rows, "long.csv")
    assert ds.frame.shape == (rows, 1) and ds.warnings == []


@pytest.mark.parametrize(("data", "filename", "error"), [
    ("a,b\n1,2\n", "x.csv", TypeError),
    (b"a,b\n1,2\n", None, TypeError),
])
def test_upload_argument_types(data, filename, error):
    with pytest.raises(error):
        load_upload(data, filename)


@pytest.mark.parametrize(("max_bytes", "error"), [(0, ValueError), (-5, ValueError),
                                                  (1.5, TypeError)])
def test_upload_max_bytes_is_validated(max_bytes, error):
    with pytest.raises(error, match="max_bytes"):
        load_upload(b"a\n1\n", "x.csv", max_bytes=max_bytes)


_CELLS = st.one_of(
    st.sampled_from(["", "1", "-2.5", "1,234", "3,5", "inf", "NA", "x", " y ", '"q,"',
                     '"a""b"', "=1", "@", "é", "1e999", '"', "nan", "None", "sep=;"]),
    st.text(max_size=4),
)


@st.composite
def _odd_tables(draw: st.DrawFn) -> bytes:
    delimiter = draw(st.sampled_from([",", ";", "\t", "|"]))
    newline = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    rows = draw(st.lists(st.lists(_CELLS, max_size=6), max_size=10))
    text = newline.join(delimiter.join(row) for row in rows) + draw(st.sampled_from(["", newline]))
    data = text.encode(draw(st.sampled_from(["utf-8", "utf-8-sig", "utf-16", "latin-1"])),
                       errors="replace")
    return gzip.compress(data, mtime=0) if draw(st.booleans()) else data


@pytest.mark.slow
@settings(max_examples=150)
@given(st.one_of(_odd_tables(), st.binary(max_size=80)))
def test_any_bytes_load_or_raise_dataset_error(data):
    # The UI shows a DatasetError's message; any other exception would be a traceback.
    try:
        ds = load_upload(data, "fuzz.csv")
    except DatasetError as exc:
        assert FIX.search(str(exc)), str(exc)
        return
    frame = ds.frame
    assert frame.shape[0] > 0 and frame.shape[1] > 0
    assert all(isinstance(c, str) and c for c in frame.columns)
    assert frame.columns.is_unique
    assert not frame.isna().all(axis=0).any() and not frame.isna().all(axis=1).any()
    assert set(numeric_columns(ds)) | set(categorical_columns(ds)) <= set(frame.columns)


def test_reader_disagreement_falls_back_to_the_csv_module(monkeypatch):
    # If pandas ever splits records differently from the csv module (odd quoting), the
    # loader rebuilds the cells from the csv module, which the ragged-row report is based on.
    expected = _load("ragged_rows.csv")
    read_csv = pd.read_csv
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: read_csv(*a, **k).iloc[:-1])
    fallback = _load("ragged_rows.csv")
    pd.testing.assert_frame_equal(fallback.frame, expected.frame)
    assert fallback.warnings == expected.warnings


def test_dataset_error_is_a_value_error():
    assert issubclass(DatasetError, ValueError)


def test_uploads_never_touch_the_disk_or_the_logs(monkeypatch, caplog, capsys):
    secret = "SECRET-7731-ROW"
    data = f"name,code\n{secret},1\nother,2\n".encode()
    payloads = {name: (CORPUS / name).read_bytes() for name in ("utf8_bom.csv", "gzipped.csv.gz")}
    load_upload(data, "warm-up.csv")  # lazy imports happen here, not under the patches

    def refuse(*args, **kwargs):
        raise AssertionError(f"load_upload touched the file system: {args[:1]}")

    for module, name in [(builtins, "open"), (io, "open"), (os, "open"),
                         (tempfile, "NamedTemporaryFile"), (tempfile, "TemporaryFile"),
                         (tempfile, "SpooledTemporaryFile"), (tempfile, "mkstemp")]:
        monkeypatch.setattr(module, name, refuse)
    caplog.set_level(logging.DEBUG)
    ds = load_upload(data, "secret.csv")
    for name, payload in payloads.items():
        load_upload(payload, name)
    monkeypatch.undo()
    assert secret in ds.frame["name"].tolist()
    out = capsys.readouterr()
    assert secret not in caplog.text and secret not in out.out and secret not in out.err


# ------------------------------------------------------------------------------------------
# profile and column choices


def test_profile_counts_and_ranges():
    frame = pd.DataFrame({
        "n": [3.0, np.nan, -1.5, 3.0],
        "i": np.array([1, 2, 2, 9], dtype=np.int64),
        "c": pd.Categorical(["x", None, "y", "x"], categories=["x", "y", "z"]),
        "empty": [np.nan] * 4,
        "t": pd.array(["a", "b", None, "d"], dtype="str"),
    })
    table = profile(frame).set_index("column")
    assert list(profile(frame).columns) == ["column", "type", "missing", "distinct", "min", "max"]
    assert table.loc["n"].tolist() == ["numeric", 1, 2, -1.5, 3.0]
    assert table.loc["i"].tolist() == ["numeric", 0, 3, 1.0, 9.0]
    assert table.loc["c", "type"] == "categorical"
    assert (table.loc["c", "missing"], table.loc["c", "distinct"]) == (1, 2)
    assert math.isnan(table.loc["c", "min"]) and math.isnan(table.loc["c", "max"])
    assert table.loc["empty", "type"] == "numeric" and table.loc["empty", "missing"] == 4
    assert math.isnan(table.loc["empty", "min"])
    assert (table.loc["t", "type"], table.loc["t", "missing"], table.loc["t", "distinct"]) == (
        "categorical", 1, 3)


def test_profile_of_adult(adult):
    table = profile(adult.frame).set_index("column")
    assert table.loc["workclass", "missing"] == 2_799
    assert table.loc["occupation", "missing"] == 2_809
    assert table.loc["native_country", "missing"] == 857
    assert table.loc["education", "distinct"] == 16
    assert (table.loc["age", "min"], table.loc["age", "max"]) == (17, 90)


def test_column_choices_of_the_builtins(adult):
    assert numeric_columns(adult) == ["age", "fnlwgt", "education_num", "capital_gain",
                                      "capital_loss", "hours_per_week"]
    assert categorical_columns(adult) == ["workclass", "education", "marital_status",
                                          "occupation", "relationship", "race", "sex",
                                          "native_country", "income"]
    census = load_builtin(CENSUS)
    assert numeric_columns(census) == ["Age", "Earnings"]
    assert categorical_columns(census.frame) == ["Sex", "Married", "Occupation"]
    with pytest.raises(TypeError):
        numeric_columns([1, 2])  # type: ignore[arg-type]


def test_capital_loss_upper_bound_is_flagged_as_read_off_the_data(adult):
    """adult.names documents no range for capital-loss ("continuous") and no top-code is
    documented for it: the declared 4,356 is the file's own maximum (3 rows), so the domain
    must say it was read off the data, and it is the only built-in domain that is."""
    domain = adult.domains["capital_loss"]
    losses = adult.frame["capital_loss"]
    assert domain.upper == losses.max() == 4356 and (losses == 4356).sum() == 3
    assert domain.from_data and "READ OFF THE DATA" in domain.source
    flagged = [(name, column) for name in BUILTIN_DATASETS
               for column, d in load_builtin(name).domains.items() if d.from_data]
    assert flagged == [(BUILTIN_DATASETS[0], "capital_loss")]


# --------------------------------------------------------------------------------------------
# Each cell read on its own: a column's other cells never change how one cell reads


@pytest.mark.parametrize("newcomer", ["2,5", "3,25", "x"])
def test_a_cell_reads_the_same_whatever_the_other_cells_hold(newcomer: str) -> None:
    """Tab-separated amounts "1,500": the parser used to pick one reading for the whole
    column by which parsed more cells, so one "2,5" (a decimal comma only) turned every 1500
    into 1.5. Each cell is now read by the one rule of every path (``engine.cells`` rule 4:
    no thousands separator is a number), whatever the other cells hold."""
    rows = [f"p{i}\t1,500" for i in range(10)]
    alone = load_upload(("pid\tamount\n" + "\n".join(rows) + "\n").encode(), "a.tsv")
    joined = load_upload(("pid\tamount\n" + "\n".join([*rows, f"q\t{newcomer}"])
                          + "\n").encode(), "b.tsv")
    assert alone.frame["amount"].tolist() == ["1,500"] * 10
    assert joined.frame["amount"].tolist() == ["1,500"] * 10 + [newcomer]
    assert joined.cells["amount"].tolist()[:10] == alone.cells["amount"].tolist()
    assert alone.cells["amount"].tolist() == ["1,500"] * 10   # each cell its text (issue 31)


def test_a_decimal_comma_is_no_number_on_the_page_as_in_a_release() -> None:
    """A semicolon file's "1,5" used to be 1.5 on the pages and missing in its release (and
    on the command line): now missing on both. 20 plain numbers 0 … 19 and one "1,5": the
    column is numeric (20 of 21), its page sum 0 + … + 19 = 190 over 20 values, as the
    release's."""
    from dashboard.data import true_answers

    data = ("id;v\n" + "".join(f"p{i};{i}\n" for i in range(20)) + "q;1,5\n").encode()
    loaded = load_upload(data, "eu.csv")
    assert loaded.frame["v"].tolist()[:20] == [float(i) for i in range(20)]
    assert np.isnan(loaded.frame["v"].iloc[20])
    total, count = true_answers.bounded_mean_parts(loaded.relation, "v", lower=0.0, upper=100.0)
    assert (float(total.true_value), float(count.true_value)) == (190.0, 20.0)
    assert any("decimal comma" in w and "not read as numbers" in w for w in loaded.warnings)


def test_an_uploads_cells_are_kept_for_a_release_as_each_cell_reads() -> None:
    """``LoadedDataset.cells``: every column of the file (an empty one too), each cell its
    text as written or None (issue 31: "1,500" is text, as the same file reads on the
    command line); codes keep their leading zeros (the engine's key reads "01234" as 1234)."""
    data = (b'zip,amount,empty,word\n01234,"1,500",, yes \nA-12,7,NA,no\n')
    loaded = load_upload(data, "cells.csv")
    assert "empty" not in loaded.frame.columns
    cells = loaded.cells
    assert list(cells.columns) == ["zip", "amount", "empty", "word"]
    assert cells["zip"].tolist() == ["01234", "A-12"]
    assert cells["amount"].tolist() == ['1,500', "7"]
    assert cells["empty"].tolist() == [None, None]
    assert cells["word"].tolist() == [" yes ", "no"]     # the engine removes the spaces


def test_a_separated_number_is_text_for_a_release() -> None:
    """Issue 31, rule 4: no thousands separator and no decimal comma is a number for a query,
    on any path (the same file on the command line reads "1,500" as text)."""
    data = b'k,v\n"1,500",1\n1500,2\n"2,5",3\n'
    loaded = load_upload(data, "keys.csv")
    assert loaded.cells["k"].tolist() == ["1,500", "1500", "2,5"]
    tab = load_upload(b"k\tv\n1,500\t1\n2,5\t2\n", "keys.tsv")
    assert tab.cells["k"].tolist() == ["1,500", "2,5"]
