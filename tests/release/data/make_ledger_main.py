"""How ``ledger_main.sqlite`` was written: by the ledger code of main at 704547c (before budget
events were shown as changes), run from a checkout of that commit:
``PYTHONPATH=<checkout> python tests/release/data/make_ledger_main.py ledger_main.sqlite``.
Kept to show what the file holds; the tests read the committed file, never rerun this.
"""
import sys

from plan.identity import DatasetIdentity
from release.ledger import Ledger

out = sys.argv[1]
adult = DatasetIdentity("adult", "sha256:" + "a" * 64)
iris = DatasetIdentity("iris", "sha256:" + "c" * 64)
with Ledger(out) as ledger:
    ledger.set_budget(iris, 2.0, delta=1e-6, only_if_new=True,
                      reason="set by the first release's --budget")
    ledger.set_budget(adult, 1.0, reason="set on the Release plan page")
    ledger.record_release(adult, epsilon=0.75, delta=0.0, accounting="basic",
                          values_hash="sha256:" + "0" * 64, plan_json="{}",
                          implementation="main")
    ledger.set_budget(adult, 3.0, delta=1e-6, reason="set on the Release plan page")
    ledger.set_budget(adult, 3.0, reason="set on the Release plan page")
    ledger.record_release(iris, epsilon=0.5, delta=1e-7, accounting="basic",
                          values_hash="sha256:" + "1" * 64, plan_json="{}",
                          implementation="main")
    print(ledger.verify(), [ (s.dataset.name, s.remaining_epsilon) for s in ledger.datasets()])
