"""The compiled-query cache keys a query by its text, not by equality: in Python True == 1, so
categories (True, False) and (1, 0) are equal tuples, yet they match different rows. A cache
keyed by equality answered the second with the first's SQL (found by this stop's review)."""

from __future__ import annotations

import pandas as pd
import pytest

from engine import FrameSource
from engine.duckdb_backend import DuckDBBackend
from engine.queries import CategoryCounts

FLAGS = pd.DataFrame({"flag": pd.array(["true", "false", "1", "1", "0", "true", "1"],
                                        dtype="str")})
BOOLEANS, NUMBERS = CategoryCounts("flag", (True, False)), CategoryCounts("flag", (1, 0))


@pytest.mark.parametrize("order", [(BOOLEANS, NUMBERS), (NUMBERS, BOOLEANS)])
def test_equal_queries_of_other_types_are_compiled_apart(order) -> None:
    assert BOOLEANS == NUMBERS          # why an equality-keyed cache mixed them up
    duck = DuckDBBackend(threads=1)
    answers = {repr(q): duck.run(FrameSource(FLAGS), q).counts.tolist() for q in order}
    # a text column: booleans match the texts "true" and "false" (engine.cells, rule 6);
    # numbers match each row's text read as a number
    assert answers[repr(NUMBERS)] == [3, 1]
    assert answers[repr(BOOLEANS)] == [2, 1]
