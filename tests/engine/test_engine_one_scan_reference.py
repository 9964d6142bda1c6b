"""The engine reference tests again, every query that reads the unit's kept rows answered
through the shared ranking (``DuckDBBackend.run_many``, issue 37 item 3) instead of its own:
test_engine_duckdb.py (random frames against the pandas reference, files, errors) and
test_engine_truncation.py (every query reads the same kept row, a CSV's text cells), each
test collected here with this module's ``duck``."""

from __future__ import annotations

import pytest

from engine.duckdb_backend import DuckDBBackend, compile_query
from tests.engine import test_engine_duckdb, test_engine_truncation
from tests.engine.test_engine_duckdb import *  # noqa: F403
from tests.engine.test_engine_truncation import *  # noqa: F403

# on Spark, not on the shared ranking; compilation counted per query, not per plan
del test_spark_keeps_the_rows_duckdb_and_the_reference_keep  # noqa: F821
del test_backend_compiles_once  # noqa: F821


class Shared(DuckDBBackend):
    """``run`` through ``run_many``: a query reading the kept rows is asked twice in one call
    (two queries under one unit: the kept rows built once into the shared table, and its
    statement's tail read from it); any other as ``run`` answers it."""

    shared = 0

    def run(self, source, query):
        columns, _ = self._columns_for(source, query)
        if compile_query(query, columns, source.describe()).kept is None:
            return super().run(source, query)
        first, second = self.run_many(source, [query, query])
        Shared.shared += 1
        return first


@pytest.fixture(scope="module")
def duck() -> DuckDBBackend:
    return Shared(threads=2)


def test_the_tests_above_went_through_the_shared_ranking() -> None:
    """Runs last in this module: the reference tests did ask queries on kept rows."""
    assert test_engine_duckdb and test_engine_truncation
    assert Shared.shared > 20
