"""How ``ledger_layout1.sqlite`` was written: by the ledger code of main at 1635118 (layout 1,
the last before releases kept their files), run from this worktree before the layout changed:
``PYTHONPATH=. python tests/release/data/make_ledger_layout1.py /tmp/ledger_layout1.sqlite``,
then copied here. Two releases (one whose draw failed) and a budget. Kept to show what the
file holds; the tests read the committed file, never rerun this.
"""
import sys

from plan.identity import DatasetIdentity
from release.ledger import FAILED_DRAW, Ledger

out = sys.argv[1]
adult = DatasetIdentity("adult", "sha256:" + "a" * 64)
with Ledger(out) as ledger:
    ledger.set_budget(adult, 2.0, reason="set on the Release plan page")
    ledger.record_release(adult, epsilon=0.5, delta=0.0, accounting="basic",
                          values_hash="sha256:" + "1" * 64, plan_json="{}",
                          implementation="main 1635118")
    ledger.record_release(adult, epsilon=0.25, delta=0.0, accounting="basic",
                          values_hash=FAILED_DRAW, plan_json="{}",
                          implementation="main 1635118", check_budget=False)
    print(ledger.verify(), [(s.dataset.name, s.remaining_epsilon) for s in ledger.datasets()])
