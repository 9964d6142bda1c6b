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


def test_a_dataset_over_its_budget_reads_over_by_and_its_changes_are_listed(tmp_path):
    """Issue 31 item 8: a budget of 5 with 4.36 spent, lowered to 1 (δ cap 1e-6 under 4e-6
    spent), read "Left ε = 0"; it is over by 3.36 (and δ by 3e-06). Each setting is listed
    with what changed, the ε spent then and its reason."""
    from dashboard.analysis.releases import budget_history_table, datasets_table
    from release.ledger import Ledger

    people = DatasetIdentity("people", "sha256:" + "a" * 64)
    with Ledger(tmp_path / "ledger.sqlite") as ledger:
        ledger.set_budget(people, 5.0, delta=1e-5, reason="first budget")
        ledger.record_release(people, epsilon=4.36, delta=4e-6, accounting="basic",
                              values_hash="sha256:" + "b" * 64, plan_json="{}",
                              implementation="test")
        ledger.set_budget(people, 1.0, delta=1e-6, reason="consent withdrawn")
        statuses = ledger.datasets()
    table = datasets_table(statuses)
    assert table[["Left ε", "Left δ"]].values.tolist() == [["over budget by 3.36",
                                                            "over budget by 3e-06"]]
    changes = budget_history_table(statuses)
    assert changes[["Change", "Budget ε", "δ cap", "Spent ε before", "Reason"]
                   ].values.tolist() == [
        ["set (with a δ cap)", "5", "1e-05", "0", "first budget"],
        ["ε lowered, δ cap lowered", "1", "1e-06", "4.36", "consent withdrawn"]]
