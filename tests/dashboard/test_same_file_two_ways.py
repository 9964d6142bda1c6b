"""The same file read two ways (issue 21 item 6): uploaded, or from the data folder (and as
Parquet), it gives the same column types, the same missing-cells warning and the same
"What the bounds cost" figures — the breakdown of a sum or a histogram computed by the
engine from per-person aggregates, so that it works for a file of any size."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dashboard import datasets
from dashboard.analysis import bounds_cost as bc
from dashboard.analysis import statistics as stats
from dashboard.choices import PrivacyChoice
from dashboard.data import column_facts
from dashboard.data.folder import load_data_file
from dashboard.person import PrivacyUnit
from dashboard.release_panel import content_hash_of, source_of
from engine import FileSource, list_data_folder
from engine.duckdb_backend import DuckDBBackend
from engine.queries import BoundedSum, CountRows
from plan.identity import content_digest

LAPLACE = PrivacyChoice("pure", "laplace", epsilon=1.0)


def csv_bytes() -> bytes:
    """Visits: up to 6 per person, a value (some missing, some outside the bounds), a
    category, a yes/no flag; a few rows without a person id."""
    rng = np.random.default_rng(21)
    rows = 500
    pid = np.char.add("p", rng.integers(0, 120, rows).astype(str)).astype(object)
    pid[::41] = None
    value = np.round(rng.normal(30, 20, rows), 1)
    value[::17] = np.nan
    kind = rng.choice(["clinic", "home", "phone"], rows).astype(object)
    kind[::23] = None
    flag = rng.choice(["yes", "no"], rows)
    frame = pd.DataFrame({"pid": pid, "value": value, "kind": kind, "smoker": flag})
    return frame.to_csv(index=False).encode()


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """(the upload, the data-folder CSV, the data-folder Parquet file) of the same bytes."""
    data = csv_bytes()
    uploaded = datasets.load_upload(data, "visits.csv")
    root = tmp_path_factory.mktemp("data")
    (root / "visits.csv").write_bytes(data)
    uploaded.frame.to_parquet(root / "visits.parquet", index=False)
    entries = {e.name: e for e in list_data_folder(root)}
    return (uploaded, load_data_file(entries["visits.csv"]),
            load_data_file(entries["visits.parquet"]))


def test_the_same_column_types(both):
    uploaded, from_csv, from_parquet = both
    kinds = [("pid", "text"), ("value", "float"), ("kind", "text"), ("smoker", "text")]
    assert [(c.name, c.kind) for c in uploaded.relation.column_info()] == kinds
    # yes/no is text from the data folder too (DuckDB guessed BOOLEAN before)
    assert [(c.name, c.kind) for c in from_csv.relation.column_info()] == kinds
    assert [(c.name, c.kind) for c in from_parquet.relation.column_info()] == kinds


#: 40 rows: whole numbers with one word (97.5 % numbers: numbers, not whole), with one
#: missing marker (numbers, not whole: the frame holds NaN there), grouped by underscores
#: (whole numbers), a quarter numbers (text), and whole numbers throughout.
MIXED = ("few_words,gaps,grouped,mostly_words,whole\n" + "".join(
    f"{'x' if i == 3 else i},{'NA' if i == 0 else i},{i}_0,{i if i % 4 == 0 else 'w'},{i}\n"
    for i in range(40)))


def test_the_same_offered_types_when_some_cells_are_not_numbers(tmp_path):
    """One rule for the types a page offers (engine.cells.column_type, over every cell's
    reading): the same bytes uploaded and from the data folder. On main the data folder
    followed DuckDB's own guess: a column with one word was text there (numbers uploaded),
    one with a missing marker integers (whole-number noise offered; decimals uploaded), and
    numbers grouped by underscores text."""
    uploaded = datasets.load_upload(MIXED.encode(), "mixed.csv")
    (tmp_path / "mixed.csv").write_text(MIXED)
    [entry] = list_data_folder(tmp_path)
    from_folder = load_data_file(entry)
    kinds = [("few_words", "float"), ("gaps", "float"), ("grouped", "integer"),
             ("mostly_words", "text"), ("whole", "integer")]
    for dataset in (uploaded, from_folder):
        assert [(c.name, c.kind) for c in dataset.relation.column_info()] == kinds
        assert datasets.numeric_columns(dataset) == ["few_words", "gaps", "grouped", "whole"]
    pd.testing.assert_frame_equal(column_facts.profile_table(uploaded.relation),
                                  column_facts.profile_table(from_folder.relation))


def test_the_same_missing_cells_warning(both):
    uploaded, from_csv, from_parquet = both
    frame = pd.read_csv(pd.io.common.BytesIO(csv_bytes()))
    missing = int(frame.isna().to_numpy().sum())
    # nothing was set to missing: no "as said above" pointing at nothing (issue 35 item 4)
    expected = (f"{missing:,} cells are missing (empty, NA, NaN or NULL); queries treat them "
                "as missing.")
    assert expected in uploaded.warnings
    assert column_facts.missing_warning(from_csv.relation) == expected
    assert column_facts.missing_warning(from_parquet.relation) == expected
    assert column_facts.missing_warning(uploaded.relation) == expected


def specs():
    unit = PrivacyUnit("pid", 3, 2)
    return {
        "count": stats.QuerySpec("count", contribution=stats.contribution_for(unit, "count", 0)),
        "sum": stats.QuerySpec("sum", "value", 0.0, 50.0,
                               contribution=stats.contribution_for(unit, "sum", 0)),
        "histogram": stats.QuerySpec(
            "histogram", "kind", categories=("clinic", "home", "phone", "video"),
            contribution=stats.contribution_for(unit, "histogram", 0)),
        "histogram of the data's categories": stats.QuerySpec(
            "histogram", "kind", contribution=stats.contribution_for(unit, "histogram", 0)),
    }


@pytest.mark.parametrize("name", list(specs()))
def test_the_same_bounds_cost(both, name):
    spec = specs()[name]
    tables = []
    for i, loaded in enumerate(both):
        cost = bc.bounds_cost(loaded, f"two-ways-{i}", spec, LAPLACE, None)
        assert cost.left_out > 0
        tables.append((cost.table(), cost.left_out, cost.sweep.rmse, cost.labels))
    upload_table, left_out, rmse, labels = tables[0]
    if name.startswith("histogram"):
        assert labels == ("clinic", "home", "phone")     # "video" has no row
        assert list(upload_table["Category"]) == list(labels)
    for table, other_left_out, other_rmse, other_labels in tables[1:]:
        pd.testing.assert_frame_equal(table, upload_table, rtol=1e-12)
        assert other_left_out == left_out and other_labels == labels
        np.testing.assert_allclose(other_rmse, rmse, rtol=1e-12)


def test_the_sum_breakdown_is_the_sum_of_the_kept_rows(both):
    """The true answer and the clamping bias, against pandas on the CSV (not the code under
    test): every row with a person id and a value."""
    frame = pd.read_csv(pd.io.common.BytesIO(csv_bytes()))
    rows = frame.dropna(subset=["pid", "value"])
    cost = bc.bounds_cost(both[1], "two-ways-1", specs()["sum"], LAPLACE, None)
    assert cost.breakdown.true_value[0] == pytest.approx(rows["value"].sum())
    assert cost.breakdown.clamping_bias[0] == pytest.approx(
        rows["value"].clip(0, 50).sum() - rows["value"].sum())
    assert cost.left_out == len(frame) - len(rows)


def test_the_missing_cells_warning_points_above_only_when_something_was_said_there():
    # 40 numbers and one "unknown": the column is read as numbers, that cell set to missing
    data = ("x,y\n" + "".join(f"{i},a\n" for i in range(40)) + "unknown,b\n").encode()
    warnings = datasets.load_upload(data, "odd.csv").warnings
    said = [w for w in warnings if "set to missing" in w and "as said above" not in w]
    assert said, warnings
    last = next(w for w in warnings if "missing (" in w)
    assert "as said above" in last and warnings.index(said[0]) < warnings.index(last)


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_one_column_file_with_blank_lines_is_one_dataset(tmp_path, newline):
    """Blank lines are no record (engine.cells rule 2) on every path, one column or many. On
    main DuckDB's reader (the data folder, the CLI, the identity) kept each blank line of a
    ONE-column file as a record with a missing cell: 7 rows instead of 3, the column offered
    as decimals instead of whole numbers, and another content identity (so another budget
    in the ledger) for the same bytes."""
    data = newline.join(["age", "", "1", "2", "", "3", "", "", ""]).encode()
    uploaded = datasets.load_upload(data, "ages.csv")
    (tmp_path / "ages.csv").write_bytes(data)
    [entry] = list_data_folder(tmp_path)
    from_folder = load_data_file(entry)
    file = FileSource(tmp_path / "ages.csv", "csv")
    duck = DuckDBBackend(threads=1)
    # three records by hand: 1, 2, 3
    for source in (uploaded.relation.source, source_of(uploaded), file):
        assert duck.run(source, CountRows()).rows == 3
    assert duck.run(file, BoundedSum("age", 0.0, 10.0)).total == 6.0
    kinds = [("age", "integer")]
    assert [(c.name, c.kind) for c in uploaded.relation.column_info()] == kinds
    assert [(c.name, c.kind) for c in from_folder.relation.column_info()] == kinds
    assert content_digest(file) == content_hash_of(uploaded)
    # the digest of the same records without blank lines: blank lines are no content
    (tmp_path / "plain.csv").write_bytes(b"age\n1\n2\n3\n")
    assert content_digest(FileSource(tmp_path / "plain.csv", "csv")) == content_digest(file)


def test_text_cells_with_white_space_around_them_read_alike(tmp_path):
    """A text column's profile and the missing-cells warning on the Data page: " na " is
    missing and "\\u00a0x" is "x" (engine.cells rules 3 and 5: white space around a cell
    removed), uploaded or from the data folder. On main the data folder's typed reading
    listed a text column raw (missing 0, distinct 4, no warning)."""
    text = "n,kind\n1,x\n2, na \n3,y\n4,\u00a0x\n"
    uploaded = datasets.load_upload(text.encode(), "k.csv")
    (tmp_path / "k.csv").write_text(text, encoding="utf-8")
    [entry] = list_data_folder(tmp_path)
    from_folder = load_data_file(entry)
    for loaded in (uploaded, from_folder):
        profile = column_facts.profile_table(loaded.relation).set_index("column")
        # by hand: " na " missing; "x", "y" and "\u00a0x" (x) are two values
        assert (profile.loc["kind", "missing"], profile.loc["kind", "distinct"]) == (1, 2)
        assert column_facts.missing_warning(loaded.relation) == (
            "1 cell is missing (empty, NA, NaN or NULL); queries treat them as missing.")
        shown = column_facts.first_rows(loaded.relation, 4)["kind"].astype(object)
        assert list(shown.fillna("(missing)")) == ["x", "(missing)", "y", "x"]
    pd.testing.assert_frame_equal(column_facts.profile_table(uploaded.relation),
                                  column_facts.profile_table(from_folder.relation))
