"""A column of 20,000 distinct values (issue 35 item 4) was not offered under Group by at all,
though partition selection exists for exactly that. The Groups page offers it, finds its
keys privately as a release does (every key read, each kept only if its noisy count clears
the threshold), and no widget lists the keys."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.conftest import open_app

#: 20,000 postcodes once each, and 10,000 more rows among the first 50 (200 each).
ZIPS = np.array([f"Z{i:05d}" for i in range(20_000)])
FRAME = pd.DataFrame({"zip": np.concatenate([ZIPS, np.repeat(ZIPS[:50], 200)]),
                      "age": np.arange(30_000) % 70 + 18})


def test_a_column_of_twenty_thousand_values_is_offered_under_group_by():
    at = open_app()
    at.selectbox(key="dataset_choice").select("Upload your own CSV").run()
    at.file_uploader(key="upload_file").set_value(
        ("zips.csv", FRAME.to_csv(index=False).encode(), "text/csv")).run()
    at.switch_page("app_pages/groups.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "zip" in at.selectbox(key="groups_by").options
    at.selectbox(key="groups_by").select("zip").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = " ".join(c.value for c in at.caption)
    assert "the groups are found privately" in said
    # the simulation's table (the owner's view) holds every group with its true count...
    table = next(d.value for d in at.dataframe if "True count" in d.value.columns)
    assert len(table) == 20_000 and table["True count"].sum() == 30_000
    expected = {**dict.fromkeys(ZIPS[:50], 201), **dict.fromkeys(ZIPS[50:], 1)}
    assert dict(zip(table["Group"], table["True count"], strict=True)) == expected
    # ... and no widget lists the keys
    widgets = [*at.selectbox, *at.multiselect, *at.radio]
    assert max(len(w.options) for w in widgets) < 100
