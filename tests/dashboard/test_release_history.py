"""The Releases page's history table: a release whose draw failed shows as spent with nothing
published, not as a truncated values hash."""

from __future__ import annotations

from dashboard.analysis.releases import history_table
from plan.identity import DatasetIdentity
from release.ledger import FAILED_DRAW, ReleaseRecord


def record(entry: int, values_hash: str) -> ReleaseRecord:
    return ReleaseRecord(entry, DatasetIdentity("people", "sha256:" + "a" * 64),
                         "2026-11-27T00:00:00Z", 1.0, 0.0, "basic", values_hash,
                         '{"queries": [{}], "accounting": {"alpha": 0.05}}', "test", "x")


def test_a_failed_draw_is_named_as_spent_and_unpublished():
    table = history_table([record(1, "sha256:" + "b" * 64), record(2, FAILED_DRAW)])
    assert table["Entry"].tolist() == [2, 1]
    assert table["Values hash"].tolist() == [
        "none: the draw failed (spent, nothing published)", "sha256:" + "b" * 12 + "…"]
    assert table["ε"].tolist() == ["1", "1"]   # the spend is shown as for any release
