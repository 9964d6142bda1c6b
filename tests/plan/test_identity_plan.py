"""The identity digest's statement as DuckDB plans it (issue 37: a first release within 2× of
the one-pass SQL floor). Two shapes cost a Parquet file's first release most of its digest:
an ``IN`` list of the missing markers planned as a mark join (its key, a number's text, then
computed for every row), and a dictionary-encoded column's canonical text computed once per
row rather than once per dictionary entry. Neither may change the digest: the ledger and the
budgets know data by it, so each test also checks the value against the first version's SQL
(``tests/plan/test_identity_wide.py``'s reference)."""

from __future__ import annotations

import json
from collections import OrderedDict

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import plan.identity as identity
from engine import FileSource
from plan.identity import content_digest
from tests.plan.test_identity_wide import MARKERS, TEXTS, _reference_digest, mixed_table


def _nodes(node: dict) -> list[dict]:
    return [node] + [n for child in node.get("children", []) for n in _nodes(child)]


def _digest_statements(monkeypatch, data) -> list[tuple[str, list[dict]]]:
    """Each digest statement ``content_digest(data)`` runs (the in-process memory of digests
    emptied, so it computes them): its SQL and every operator of DuckDB's plan of it."""
    statements: list[tuple[str, list[dict]]] = []
    connect = duckdb.connect

    class Explaining:
        """A DuckDB connection that explains each digest statement before running it."""

        def __init__(self) -> None:
            self.connection = connect()

        def execute(self, sql, params=None):
            if sql.startswith("SELECT count(*), coalesce(sum(CAST(m &"):
                explained = self.connection.execute(f"EXPLAIN (FORMAT json) {sql}",
                                                    params or {}).fetchall()
                statements.append((sql, _nodes(json.loads(explained[0][1])[0])))
            return self.connection.execute(sql, params or {})

        def register(self, *args):
            return self.connection.register(*args)

        def close(self) -> None:
            self.connection.close()

    monkeypatch.setattr(identity, "_digest_cache", OrderedDict())
    monkeypatch.setattr(identity.duckdb, "connect", Explaining)
    content_digest(data)
    monkeypatch.undo()
    assert statements
    return statements


def dictionary_table(rows: int = 6000, seed: int = 11) -> pd.DataFrame:
    """Few distinct values per column (a Parquet writer keeps them as a dictionary): texts
    with separators, padding, numbers written as text, booleans as text and the missing
    markers; integers and doubles with their edges (NaN, infinities, -0, the extremes);
    missing cells in every column. More rows than one DuckDB vector (2,048), so that the
    reader hands dictionary vectors over."""
    rng = np.random.default_rng(seed)
    texts = rng.choice(np.concatenate([TEXTS, MARKERS, ["\t5", "+.5", "1_000", "false",
                                                        "Infinity", "-nan"]]), rows)
    texts[rng.random(rows) < 0.1] = None
    doubles = rng.choice(np.array([0.1, -0.0, np.nan, np.inf, -np.inf, 5e-324,
                                   1.7976931348623157e308, 2.0**53 + 2, 1 / 3]), rows)
    integers = pd.array(rng.choice(np.array([0, -1, 7, 2**53 + 1, 2**63 - 1, -2**63]), rows),
                        dtype="Int64")
    integers[rng.random(rows) < 0.1] = pd.NA
    return pd.DataFrame({"text": texts, "double": doubles, "int": integers,
                         "same": ["one value"] * rows})


def _write(table: pd.DataFrame, path, **options) -> FileSource:
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path,
                   row_group_size=2500, **options)
    return FileSource(path, "parquet")


@pytest.mark.parametrize("form", ["frame", "parquet"])
def test_the_missing_markers_plan_no_join(tmp_path, monkeypatch, form):
    """DuckDB plans an ``IN`` of five or more constants (the seven missing markers) as a mark
    join, whose key is computed for every row before the ``CASE`` that holds it: a number
    column's text and its lowering for every value (a quarter of the digest's CPU on the
    measured Parquet file). The digest's statement holds no join, and its value is the
    first version's."""
    table = mixed_table(6, rows=60, seed=4)
    data = table if form == "frame" else _write(table, tmp_path / "t.parquet")
    for _, nodes in _digest_statements(monkeypatch, data):
        assert not [n["name"] for n in nodes if "JOIN" in n["name"]]
    assert content_digest(data) == _reference_digest(data, monkeypatch)


def test_a_dictionary_column_is_digested_once_per_entry(tmp_path, monkeypatch):
    """A dictionary-encoded Parquet column's canonical text is one function of its value (a
    lambda), which DuckDB runs once per dictionary entry, not a ``CASE`` and casts run once
    per row (the text columns of the measured file: 0.11 s of CPU per 10^6 rows each, 0.004
    as one function). The same digest as the first version's, with missing cells, markers,
    numbers written as text and the edges of doubles and integers."""
    data = _write(dictionary_table(), tmp_path / "dictionary.parquet")
    (sql, _), = _digest_statements(monkeypatch, data)
    for i in range(4):                                      # text, double, int, same
        assert f"list_transform([t{i}], lambda v: " in sql
        assert f"TRY_CAST(t{i} AS DOUBLE)" not in sql and f"CAST(t{i} AS DOUBLE)" not in sql
    assert content_digest(data) == _reference_digest(data, monkeypatch)


def test_a_column_not_wholly_dictionary_encoded_is_digested_per_row(tmp_path, monkeypatch):
    """Only a column whose every column chunk is dictionary-encoded (its footer says so) is
    digested per dictionary entry: a file written without dictionaries, or one of whose
    row groups is plain, keeps the per-row form; both give the first version's digest."""
    table = dictionary_table(rows=5000, seed=12)
    plain = _write(table, tmp_path / "plain.parquet", use_dictionary=False)
    names = list(table.columns)
    with duckdb.connect() as connection:
        assert identity._dictionary_columns(connection, str(plain.path), names) == frozenset()
        mixed = tmp_path / "mixed"
        mixed.mkdir()
        _write(table.iloc[:2500], mixed / "part-0.parquet")
        _write(table.iloc[2500:], mixed / "part-1.parquet", use_dictionary=["text", "same"])
        parts = [str(mixed / "part-0.parquet"), str(mixed / "part-1.parquet")]
        assert identity._dictionary_columns(connection, parts, names) == frozenset({0, 3})
        assert identity._dictionary_columns(connection, str(tmp_path / "none.parquet"),
                                            names) == frozenset()      # no footer: none
    for data in (plain, FileSource(mixed, "parquet")):
        assert content_digest(data) == _reference_digest(data, monkeypatch)
