"""How ``ledger_layout2.sqlite`` was written: by the ledger code at edd6a09 (layout 2, the last
before entries recorded who made them), loaded from ``git show edd6a09:release/ledger.py`` and
run from this worktree: ``PYTHONPATH=. python tests/release/data/make_ledger_layout2.py
/tmp/ledger_layout2.sqlite``, then copied here. A budget, a release with its files kept. Kept
to show what the file holds; the tests read the committed file, never rerun this.
"""
import hashlib
import json
import subprocess
import sys
import types

from plan.identity import DatasetIdentity

source = subprocess.run(["git", "show", "edd6a09:release/ledger.py"], capture_output=True,
                        text=True, check=True).stdout
main_ledger = types.ModuleType("main_ledger")
main_ledger.__file__ = "release/ledger.py"
sys.modules["main_ledger"] = main_ledger
exec(compile(source, "edd6a09:release/ledger.py", "exec"), main_ledger.__dict__)
assert main_ledger.SCHEMA_VERSION == 2

values = [{"id": "n", "rows": [[[], 41.5]]}]
digest = "sha256:" + hashlib.sha256(json.dumps(
    values, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()
adult = DatasetIdentity("adult", "sha256:" + "a" * 64)
with main_ledger.Ledger(sys.argv[1]) as ledger:
    ledger.set_budget(adult, 2.0, reason="set on the Release plan page")
    entry = ledger.record_release(adult, epsilon=0.5, delta=0.0, accounting="basic",
                                  values_hash=digest, plan_json="{}",
                                  implementation="main layout 2").id
    record = {"format": "epsilon-lab-release", "ledger_entry": entry, "values_sha256": digest,
              "queries": [{"id": "n", "values": [{"group": [], "value": 41.5}]}]}
    ledger.store_files(entry, {"release.json": json.dumps(record).encode()})
    print(ledger.verify(), [(s.dataset.name, s.remaining_epsilon) for s in ledger.datasets()])
