"""The Data page's column profile drawn in the run that changes the privacy unit (the unit
controls sit below it).

The profile table's public domains were drawn from the dataset read at the top of the run,
before the unit controls changed the unit: a column just chosen as the person id still showed
its declared domain (the pages no longer use it: a person id is no query column), and back to
"One row = one person" it showed "none declared", each until the next run. The same run and the
next one now show the same table (the schema table's twin: ``test_schema_after_unit.py``)."""

from __future__ import annotations

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
