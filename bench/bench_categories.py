"""Categories that hold a comma (issue 31, item 6): what Fill + Apply declares and what Groups
counts for a Males-like upload, and what the pages say when a list leaves rows out.

Run: ``.venv/bin/python bench/bench_categories.py`` (headless pages, about 10 s). The upload
has 4,360 rows (545 people × 8) and the nine occupations of Ecdat's Males, three of them
holding a comma, with made-up frequencies (seeded): the figures are this file's, not Males'.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import open_app  # noqa: E402

LEVELS = ["Professional, Technical_and_kindred", "Managers, Officials_and_Proprietors",
          "Sales_Workers", "Clerical_and_kindred", "Craftsmen, Foremen_and_kindred",
          "Operatives_and_kindred", "Laborers_and_farmers", "Farm_Laborers_and_foreman",
          "Service_Workers"]
SHARES = [.12, .10, .05, .11, .21, .20, .09, .02, .10]


def males() -> pd.DataFrame:
    rng = np.random.default_rng(31)
    return pd.DataFrame({"nr": np.arange(4360) // 8,
                         "occupation": rng.choice(LEVELS, 4360, p=SHARES),
                         "wage": rng.integers(0, 100, 4360)})


def said(at) -> list[str]:
    return [w.value.replace("\\", "").replace("**", "") for w in at.warning
            if "leave out" in w.value]


def groups(at) -> tuple[pd.DataFrame, list[str]]:
    at.switch_page("app_pages/groups.py")
    at.run()
    at.selectbox(key="groups_by").select("occupation").run()
    table = next(d.value for d in at.dataframe if "True count" in d.value.columns)
    return table, said(at)


def main() -> int:
    frame = males()
    at = open_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    at.file_uploader(key="upload_file").set_value(
        ("Males.csv", frame.to_csv(index=False).encode(), "text/csv")).run()
    at.switch_page("app_pages/data.py")
    at.run()
    key = f"upload:{at.session_state['upload_file_id']}"
    at.button(key=f"schema_fill::{key}").click().run()
    at.button(key=f"schema_apply::{key}").click().run()
    cats = at.session_state["schema_by_dataset"][key].domains["occupation"].categories
    table, words = groups(at)
    counted = int(table["True count"].sum())
    print(f"Fill + Apply declares {len(cats)} occupations (the data holds "
          f"{frame.occupation.nunique()}); Groups: {len(table)} groups, "
          f"{int((table['True count'] == 0).sum())} with a true count of 0, {counted:,} of "
          f"{len(frame):,} rows counted ({len(frame) - counted:,} left out); "
          f"said: {len(words)}")
    # the list split at the commas, uploaded as a schema file: what the pages say
    split = [p.strip() for c in LEVELS for p in c.split(",")]
    at.switch_page("app_pages/data.py")
    at.run()
    at.file_uploader(key=f"schema_upload::{key}").set_value((
        "Males.schema.json", json.dumps({"columns": {"occupation": {
            "role": "categorical", "categories": split}}}).encode(), "application/json")).run()
    on_data = said(at)
    _, on_groups = groups(at)
    print(f"The split list uploaded: the Data page says {on_data[:1]}; Groups says it too: "
          f"{on_groups == on_data}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
