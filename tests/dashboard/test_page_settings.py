"""The typed records of the query pages' saved settings (dashboard.page_settings) name the very
keys the pages' controls use, and Choose epsilon reads the other pages only through them."""

from __future__ import annotations

import re
from dataclasses import fields

import pytest

from dashboard.page_settings import SelectionQuery, StatisticsQuery, TablesQuery
from tests.conftest import ROOT

#: Each record, its page, and the prefix of its ``controls.privacy_controls`` keys (if any).
RECORDS = [(StatisticsQuery, "statistics.py", "stats"), (TablesQuery, "tables.py", "tables"),
           (SelectionQuery, "selection.py", None)]


@pytest.mark.parametrize(("record", "page", "prefix"), RECORDS)
def test_every_field_is_a_key_the_page_uses(record, page, prefix):
    assert set(record.KEYS) == {f.name for f in fields(record)}
    source = re.sub(r"\(\s+", "(", (ROOT / "app_pages" / page).read_text())
    for name, key in record.KEYS.items():
        drawn = (f'"{key}"' in source
                 or (prefix is not None and name in ("measure", "mechanism", "epsilon",
                                                     "delta", "rho")
                     and f'privacy_controls("{prefix}"' in source)
                 or (name.endswith("_level") and "SelectionQuery.level_key(measure)" in source)
                 or (name.startswith("monotonic") and "key=monotonic_key" in source))
        assert drawn, f"{page} draws no control with key {key!r} ({record.__name__}.{name})"


def test_records_read_and_write_the_remembered_values():
    saved = {"stats_query": "sum", "stats_epsilon": 0.5, "unrelated": 1}
    record = StatisticsQuery.from_saved(saved)
    assert (record.query, record.epsilon, record.column) == ("sum", 0.5, None)
    assert StatisticsQuery.settings(measure="pure", epsilon=2.0) == {
        "stats_measure": "pure", "stats_epsilon": 2.0}
    assert SelectionQuery.level_key("zcdp") == "sel_zcdp_level"
    assert SelectionQuery.from_saved({"sel_monotonic_typed": True}).at_key(
        "sel_monotonic_typed") is True
    with pytest.raises(KeyError):
        TablesQuery.settings(colour="red")


def test_choose_epsilon_reads_no_other_page_key_as_a_bare_string():
    text = "".join(path.read_text()   # Choose epsilon's analysis, split by job
                   for path in sorted((ROOT / "dashboard" / "analysis").glob("epsilon_*.py")))
    bare = re.findall(r"""["'](?:stats|tables|sel)_[a-z_]*["']|f["'](?:\{prefix\}|sel_\{)""", text)
    assert bare == []
