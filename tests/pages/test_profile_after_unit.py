"""The Data page's column profile and distributions drawn in the run that changes the privacy
unit (the profile sits above the unit controls, the distributions below them).

Both were drawn from the dataset read at the top of the run, before the unit controls changed
the unit: a column just chosen as the person id still showed its declared domain in the profile
(the pages no longer use it: a person id is no query column) and was drawn as a numeric column
with its bounds; back to "One row = one person", the reverse; each until the next run. The same
run and the next one now show the same (the schema table's twin: ``test_schema_after_unit.py``).
"""

from __future__ import annotations

import json

from dashboard.unit_panel import ONE_ROW_CHOICE
from tests.conftest import open_app


def profile(at) -> dict[str, tuple[str, str]]:
    """The profile table's (public domain, domain source) per column, as drawn."""
    table = next(d.value for d in at.dataframe if "public domain" in d.value.columns)
    return {c: (d, s) for c, d, s in zip(table["column"], table["public domain"],
                                         table["domain source"], strict=True)}


def test_the_profile_shows_the_unit_chosen_in_the_same_run():
    at = open_app("data.py")
    key = next(s.key for s in at.selectbox if (s.key or "").startswith("unit_person::"))
    # the default dataset's first column with a declared domain, chosen as the person id
    person, declared = next((c, d) for c, d in profile(at).items() if d[0] != "none declared")

    at.selectbox(key=key).select(person).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    same_run = profile(at)
    assert same_run[person] == ("none declared", ""), same_run[person]
    assert same_run == profile(at.run())

    at.selectbox(key=key).select(ONE_ROW_CHOICE).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    same_run = profile(at)
    assert same_run[person] == declared
    assert same_run == profile(at.run())


def distributions(at) -> tuple[list, list[str]]:
    """What the Distributions section draws: its figures and the texts beside them."""
    figures = [json.loads(e.proto.spec)["data"] for e in at.get("plotly_chart")]
    return figures, [c.value for c in at.main.caption] + [i.value for i in at.info]


def test_the_distributions_show_the_unit_chosen_in_the_same_run():
    """A column just chosen as the person id was drawn with its declared bounds (a histogram
    with dashed lines) in that run, as the column it no longer is in the next."""
    at = open_app("data.py")
    key = next(s.key for s in at.selectbox if (s.key or "").startswith("unit_person::"))
    person = next(c for c, d in profile(at).items() if d[0].startswith("["))  # numeric domain
    at.multiselect(key="data_columns").set_value([person]).run()
    for choice in (person, ONE_ROW_CHOICE):
        at.selectbox(key=key).select(choice).run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert distributions(at) == distributions(at.run()), choice
