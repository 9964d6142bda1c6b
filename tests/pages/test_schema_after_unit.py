"""The schema table drawn in the run that changes the privacy unit (the Data page's unit
controls sit above it).

The page read its dataset once, at the top of the run, before the unit controls changed the
unit; the schema table was drawn from that dataset with the new unit. Back from a person id to
"One row = one person", the table showed the former person id as "ignore": Apply then hid it
from every query page (and said "nothing changed"), and the next run, seeing the table differ
from the declarations, drew a new editor, dropping the cells typed in it meanwhile."""

from __future__ import annotations

import numpy as np

from dashboard.state import SCHEMAS
from dashboard.unit_panel import ONE_ROW_CHOICE
from tests.conftest import open_app

UPLOAD = "Upload your own CSV"
# two rows per person (pid), a salary left undeclared (an upload declares nothing)
CSV = ("pid,team,salary\n" + "\n".join(f"{i // 2},{'ab'[i % 2]},{1000 * (i + 1)}"
                                       for i in range(40)) + "\n").encode()


def on_the_data_page_with_pid_then_one_row():
    """An upload whose unit is pid, then one row = one person again (one run each)."""
    at = open_app()
    at.selectbox(key="dataset_choice").select(UPLOAD).run()
    at.file_uploader(key="upload_file").set_value(("people.csv", CSV, "text/csv")).run()
    at.switch_page("app_pages/data.py").run()
    key = f"upload:{at.session_state['upload_file_id']}"
    at.selectbox(key=f"unit_person::{key}").select("pid").run()
    at.selectbox(key=f"unit_person::{key}").select(ONE_ROW_CHOICE).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at, key


def roles(at, key: str) -> dict[str, str]:
    _, base, _ = at.session_state[f"schema_base::{key}"]
    return dict(zip(base["column"], base["role"], strict=True))


def test_the_former_person_id_is_not_shown_or_applied_as_ignored():
    at, key = on_the_data_page_with_pid_then_one_row()
    assert roles(at, key)["pid"] != "ignore"
    at.button(key=f"schema_apply::{key}").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    declared = at.session_state[SCHEMAS].get(key) if SCHEMAS in at.session_state else None
    assert declared is None or "pid" not in declared.ignored, declared


def test_a_cell_typed_right_after_the_unit_changed_is_applied():
    at, key = on_the_data_page_with_pid_then_one_row()
    _, base, table_key = at.session_state[f"schema_base::{key}"]
    row = int(np.flatnonzero(base["column"].to_numpy() == "salary")[0])
    # typed in the editor as drawn: its run (the editor's own) keeps the same editor
    at.session_state[table_key] = {"edited_rows": {row: {"lower": "0", "upper": "50000"}},
                                   "added_rows": [], "deleted_rows": []}
    at.run()
    assert at.session_state[f"schema_base::{key}"][2] == table_key
    at.button(key=f"schema_apply::{key}").click().run()
    said = " ".join(s.value for s in at.success).replace("\\", "")
    assert "salary: numeric from 0 to 50000" in said, said
